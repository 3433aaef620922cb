//! Turn ordering across replicas: the session lease (one turn at a time per thread) and the
//! session inbox of queued inputs.

use async_trait::async_trait;

use super::{NewQueuedInput, QueuedInput};
use crate::domain::session::Session;
use chrono::{DateTime, Utc};

use super::StoreResult;

/// What [`InboxStore::take_lease_and_next`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum LeaseTaken {
    /// Someone else holds the thread's lease.
    Busy,
    /// The lease is the caller's now; `next` is the oldest input of the thread's inbox.
    Taken {
        /// The oldest queued input, if any.
        next: Option<QueuedInput>,
    },
}

/// What [`InboxStore::enqueue_and_start`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Enqueued {
    /// The input as queued (`running` when it was started).
    pub input: QueuedInput,
    /// Whether the lease was taken, and the oldest input then.
    pub lease: LeaseTaken,
    /// The input's start, when it was started with its queueing.
    pub started: Option<StartedInput>,
}

/// An input just started, with what its turn needs first.
#[derive(Debug, Clone, PartialEq)]
pub struct StartedInput {
    /// The input's session.
    pub session: Session,
    /// Whether the session had a proposal waiting for confirmation when the input started.
    /// While the thread's lease is held no other input of the thread adds one, so `false`
    /// stays true for the turn.
    pub pending_open: bool,
    /// The input's question stored and the thread read back with it, when the input was
    /// queued with one ([`NewQueuedInput::question`]) and no proposal was waiting.
    pub asked: Option<super::AskedThread>,
    /// The epoch of the thread's lease when the input started: with the holder's owner name,
    /// what the turn's writes are fenced on ([`super::LeaseFence`]).
    pub lease_epoch: i64,
}

/// The queued input a turn answers, finished by the turn's last write
/// ([`Store::end_turn`](super::Store::end_turn)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InputFinish<'a> {
    /// The input's id in the inbox.
    pub id: i64,
    /// The lease's owner, when the lease is given up with the input.
    pub release_as: Option<&'a str>,
}

/// Leases and queued inputs: one turn at a time per thread, across replicas.
#[async_trait]
pub trait InboxStore: Send + Sync {
    /// Takes the session's lease for `owner` until `until`, in one conditional update: when
    /// nobody holds it, `owner` already does, or the holder's lease lapsed before `at`.
    async fn take_lease(
        &self,
        session_id: i64,
        owner: &str,
        until: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> StoreResult<bool>;
    /// [`enqueue_input`](Self::enqueue_input) and, when the input was queued,
    /// [`take_lease_and_next`](Self::take_lease_and_next) for `owner`: one statement on
    /// Postgres. `None` when the event was seen before (nothing queued, no lease taken).
    ///
    /// The oldest input is the oldest of the inputs committed when the statement began and
    /// this one: an input queued by another statement in the same instant may be answered
    /// after this one although its id is lower.
    async fn enqueue_and_take_lease(
        &self,
        input: &NewQueuedInput,
        owner: &str,
        until: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> StoreResult<Option<(QueuedInput, LeaseTaken)>> {
        Ok(self
            .enqueue_and_start(input, owner, until, at, false)
            .await?
            .map(|q| (q.input, q.lease)))
    }
    /// [`enqueue_and_take_lease`](Self::enqueue_and_take_lease) and, with `start`, when the
    /// lease was taken and no older input waits, the input is queued started
    /// ([`start_input_with_session`](Self::start_input_with_session)): one statement on
    /// Postgres for a thread that is free.
    async fn enqueue_and_start(
        &self,
        input: &NewQueuedInput,
        owner: &str,
        until: DateTime<Utc>,
        at: DateTime<Utc>,
        start: bool,
    ) -> StoreResult<Option<Enqueued>>;
    /// [`take_lease`](Self::take_lease) and, when taken, [`next_input`](Self::next_input):
    /// one statement on Postgres (src/store/lease_steps.rs).
    async fn take_lease_and_next(
        &self,
        session_id: i64,
        owner: &str,
        until: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> StoreResult<LeaseTaken>;
    /// Extends `owner`'s lease; `false` when it is no longer theirs.
    async fn renew_lease(
        &self,
        session_id: i64,
        owner: &str,
        until: DateTime<Utc>,
    ) -> StoreResult<bool>;
    /// Gives the lease up; `false` when it was no longer `owner`'s.
    async fn release_lease(&self, session_id: i64, owner: &str) -> StoreResult<bool>;
    /// Queues an input in its session's inbox, claiming its platform event id in the same
    /// transaction; `None` when that event was seen before (a redelivery).
    async fn enqueue_input(&self, input: &NewQueuedInput) -> StoreResult<Option<QueuedInput>>;
    /// The oldest input of a session's inbox.
    async fn next_input(&self, session_id: i64) -> StoreResult<Option<QueuedInput>>;
    /// A queued input by id; `None` once it was finished.
    async fn queued_input(&self, id: i64) -> StoreResult<Option<QueuedInput>>;
    /// Marks an input as started by the lease holder; `false` when it is gone.
    async fn start_input(&self, id: i64) -> StoreResult<bool>;
    /// [`start_input`](Self::start_input), returning the input's session and whether a
    /// proposal waits in it; `None` when the input is gone. One statement on Postgres.
    async fn start_input_with_session(&self, id: i64) -> StoreResult<Option<StartedInput>>;
    /// Removes a finished input from the inbox.
    async fn finish_input(&self, id: i64) -> StoreResult<()>;
    /// [`finish_input`](Self::finish_input) and [`release_lease`](Self::release_lease) of the
    /// session: one statement on Postgres. Returns whether the lease was still `owner`'s.
    async fn finish_input_and_release(
        &self,
        id: i64,
        session_id: i64,
        owner: &str,
    ) -> StoreResult<bool>;
    /// Tells the lease holders that the input's waiter is alive until `until`.
    async fn renew_waiter(&self, id: i64, until: DateTime<Utc>) -> StoreResult<bool>;
    /// Threads whose oldest input nobody will take on its own: started under a lease that
    /// lapsed (its process died mid-turn), or waiting with a waiter that stopped renewing.
    async fn orphaned_sessions(&self, at: DateTime<Utc>, limit: usize) -> StoreResult<Vec<i64>>;
}

/// Emits `impl InboxStore` for a backend store type.
macro_rules! impl_inbox {
    ($store:ty, $db:ty) => {
        const _: () = {
            use async_trait::async_trait;
            use chrono::{DateTime, Utc};

            use $crate::store::common::*;
            use $crate::store::{InboxStore, LeaseTaken, NewQueuedInput, QueuedInput, StoreResult};

            #[async_trait]
            impl InboxStore for $store {
                async fn take_lease(
                    &self,
                    session_id: i64,
                    owner: &str,
                    until: DateTime<Utc>,
                    at: DateTime<Utc>,
                ) -> StoreResult<bool> {
                    let done = sqlx::query(
                        "UPDATE sessions SET lease_owner = $2, lease_until = $3, \
                         lease_epoch = lease_epoch + CASE WHEN lease_owner = $2 THEN 0 ELSE 1 END \
                         WHERE id = $1 AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until < $4)",
                    )
                    .bind(session_id)
                    .bind(owner)
                    .bind(micros(until))
                    .bind(micros(at))
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    Ok(done.rows_affected() == 1)
                }

                async fn renew_lease(
                    &self,
                    session_id: i64,
                    owner: &str,
                    until: DateTime<Utc>,
                ) -> StoreResult<bool> {
                    let done = sqlx::query(
                        "UPDATE sessions SET lease_until = $3 WHERE id = $1 AND lease_owner = $2",
                    )
                    .bind(session_id)
                    .bind(owner)
                    .bind(micros(until))
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    Ok(done.rows_affected() == 1)
                }

                async fn release_lease(&self, session_id: i64, owner: &str) -> StoreResult<bool> {
                    let done = sqlx::query(RELEASE_LEASE)
                        .bind(session_id)
                        .bind(owner)
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    Ok(done.rows_affected() == 1)
                }

                async fn enqueue_input(
                    &self,
                    input: &NewQueuedInput,
                ) -> StoreResult<Option<QueuedInput>> {
                    // One statement on Postgres (src/store/lease_steps.rs).
                    self.backend_enqueue_input(input).await
                }

                async fn enqueue_and_start(
                    &self,
                    input: &NewQueuedInput,
                    owner: &str,
                    until: DateTime<Utc>,
                    at: DateTime<Utc>,
                    start: bool,
                ) -> StoreResult<Option<$crate::store::Enqueued>> {
                    self.backend_enqueue_and_start(input, owner, until, at, start)
                        .await
                }

                async fn take_lease_and_next(
                    &self,
                    session_id: i64,
                    owner: &str,
                    until: DateTime<Utc>,
                    at: DateTime<Utc>,
                ) -> StoreResult<LeaseTaken> {
                    self.backend_take_lease_and_next(session_id, owner, until, at)
                        .await
                }

                async fn start_input_with_session(
                    &self,
                    id: i64,
                ) -> StoreResult<Option<$crate::store::StartedInput>> {
                    self.backend_start_input_with_session(id).await
                }

                async fn finish_input_and_release(
                    &self,
                    id: i64,
                    session_id: i64,
                    owner: &str,
                ) -> StoreResult<bool> {
                    self.backend_finish_input_and_release(id, session_id, owner)
                        .await
                }

                async fn next_input(&self, session_id: i64) -> StoreResult<Option<QueuedInput>> {
                    sqlx::query(
                        "SELECT * FROM session_inputs WHERE session_id = $1 ORDER BY id LIMIT 1",
                    )
                    .bind(session_id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)?
                    .map(|r| queued_input_from(&r))
                    .transpose()
                }

                async fn queued_input(&self, id: i64) -> StoreResult<Option<QueuedInput>> {
                    sqlx::query("SELECT * FROM session_inputs WHERE id = $1")
                        .bind(id)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db)?
                        .map(|r| queued_input_from(&r))
                        .transpose()
                }

                async fn start_input(&self, id: i64) -> StoreResult<bool> {
                    let done =
                        sqlx::query("UPDATE session_inputs SET state = 'running' WHERE id = $1")
                            .bind(id)
                            .execute(&self.pool)
                            .await
                            .map_err(db)?;
                    Ok(done.rows_affected() == 1)
                }

                async fn finish_input(&self, id: i64) -> StoreResult<()> {
                    sqlx::query(FINISH_INPUT)
                        .bind(id)
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    Ok(())
                }

                async fn renew_waiter(&self, id: i64, until: DateTime<Utc>) -> StoreResult<bool> {
                    let done =
                        sqlx::query("UPDATE session_inputs SET waiter_until = $2 WHERE id = $1")
                            .bind(id)
                            .bind(micros(until))
                            .execute(&self.pool)
                            .await
                            .map_err(db)?;
                    Ok(done.rows_affected() == 1)
                }

                async fn orphaned_sessions(
                    &self,
                    at: DateTime<Utc>,
                    limit_n: usize,
                ) -> StoreResult<Vec<i64>> {
                    // The oldest input of each thread decides: it is orphaned when it was
                    // started and the lease lapsed, or its waiter stopped renewing.
                    sqlx::query_scalar(
                        "SELECT s.id FROM sessions s JOIN session_inputs i ON i.id = \
                         (SELECT MIN(id) FROM session_inputs WHERE session_id = s.id) \
                         WHERE (s.lease_owner IS NULL OR s.lease_until < $1) \
                         AND (i.state = 'running' OR i.waiter_until < $1) \
                         ORDER BY i.id LIMIT $2",
                    )
                    .bind(micros(at))
                    .bind(limit(limit_n))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db)
                }
            }
        };
    };
}
pub(crate) use impl_inbox;
