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
