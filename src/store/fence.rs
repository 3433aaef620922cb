//! The lease a turn's writes are fenced on. A lease holder runs a turn inside [`fenced`]; every
//! write of the store made by that turn (its messages, audit rows, turn steps, proposals,
//! summaries and applied plans) first checks, in the write's own transaction, that the
//! thread's lease is still held by the same owner at the same epoch, and fails with
//! [`StoreError::LeaseLost`](super::StoreError::LeaseLost) when another process took it over.
//!
//! A task-local rather than a parameter: the writes of a turn are made from many places
//! (the turn loop, the tool runner, the confirmation gate, the window's summary), and a write
//! that forgot to pass the fence would be a write that is not fenced.

use std::future::Future;

/// Who must still hold a thread's lease for a turn's writes to land.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseFence {
    /// The thread's session.
    pub session_id: i64,
    /// The lease's owner name.
    pub owner: String,
    /// The lease's epoch when the turn started ([`super::StartedInput::lease_epoch`]).
    pub epoch: i64,
}

tokio::task_local! {
    static FENCE: LeaseFence;
}

/// Runs `work` with every store write it makes fenced on `fence`.
pub async fn fenced<F: Future>(fence: LeaseFence, work: F) -> F::Output {
    FENCE.scope(fence, work).await
}

/// The fence of the turn running on this task, if any.
pub(crate) fn current() -> Option<LeaseFence> {
    FENCE.try_with(Clone::clone).ok()
}

/// Checks the fence inside a write transaction: Postgres locks the session row (`FOR SHARE`,
/// so a concurrent take waits for the write to commit), SQLite holds the write lock already.
pub(crate) const HOLDS_FENCE_POSTGRES: &str =
    "SELECT 1 FROM sessions WHERE id = $1 AND lease_owner = $2 AND lease_epoch = $3 FOR SHARE";
/// [`HOLDS_FENCE_POSTGRES`] for SQLite (`BEGIN IMMEDIATE` holds the database's write lock).
pub(crate) const HOLDS_FENCE_SQLITE: &str =
    "SELECT 1 FROM sessions WHERE id = $1 AND lease_owner = $2 AND lease_epoch = $3";

/// The error of a write whose fence no longer holds.
pub(crate) fn lost(fence: &LeaseFence) -> super::StoreError {
    super::StoreError::LeaseLost(format!(
        "the lease of session {} is no longer held by this turn (another process took the \
         thread over); nothing was written",
        fence.session_id
    ))
}

/// `begin_fenced` and `check_fence` of one backend's store: `$store` on database `$db`, checking
/// the fence with the query `$holds`.
macro_rules! impl_fence {
    ($store:ty, $db:ident, $holds:expr) => {
        impl $store {
            /// A write transaction whose turn's lease fence (if the write is made by a turn,
            /// see [`super::fence`]) was checked in it; `None` outside a turn. A lost lease is
            /// an error.
            pub(super) async fn begin_fenced(
                &self,
            ) -> super::StoreResult<Option<sqlx::Transaction<'static, sqlx::$db>>> {
                let Some(fence) = super::fence::current() else {
                    return Ok(None);
                };
                let mut tx = self.begin_write().await.map_err(super::common::db)?;
                Self::check_fence(&mut tx, &fence).await?;
                Ok(Some(tx))
            }

            /// Fails unless `fence` still holds, inside `tx` (which must be a write
            /// transaction).
            pub(super) async fn check_fence(
                tx: &mut sqlx::Transaction<'static, sqlx::$db>,
                fence: &super::LeaseFence,
            ) -> super::StoreResult<()> {
                let held: Option<i32> = sqlx::query_scalar($holds)
                    .bind(fence.session_id)
                    .bind(&fence.owner)
                    .bind(fence.epoch)
                    .fetch_optional(&mut **tx)
                    .await
                    .map_err(super::common::db)?;
                match held {
                    Some(_) => Ok(()),
                    None => Err(super::fence::lost(fence)),
                }
            }
        }
    };
}
pub(crate) use impl_fence;

/// Runs `$body` with `$ex` bound to an executor: a write transaction in which the running
/// turn's fence was checked (committed after `$body` succeeds), or the pool outside a turn.
/// `$body` is expanded once per executor type.
macro_rules! on_fenced {
    ($store:ident, |$ex:ident| $body:expr) => {
        match $store.begin_fenced().await? {
            Some(mut tx) => {
                let out = {
                    let $ex = &mut *tx;
                    $body
                };
                tx.commit().await.map_err(db)?;
                out
            }
            None => {
                let $ex = &$store.pool;
                $body
            }
        }
    };
}
pub(crate) use on_fenced;
