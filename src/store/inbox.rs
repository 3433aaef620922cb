//! Turn ordering across replicas: the session lease (one turn at a time per thread) and the
//! session inbox of queued inputs.

use async_trait::async_trait;

use super::{NewQueuedInput, QueuedInput};
use chrono::{DateTime, Utc};

use super::StoreResult;

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
    /// Removes a finished input from the inbox.
    async fn finish_input(&self, id: i64) -> StoreResult<()>;
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
            use $crate::store::{NewQueuedInput, QueuedInput, StoreResult, InboxStore};

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
                        "UPDATE sessions SET lease_owner = $2, lease_until = $3 WHERE id = $1 \
                         AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until < $4)",
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
                    let done = sqlx::query(
                        "UPDATE sessions SET lease_owner = NULL, lease_until = NULL \
                         WHERE id = $1 AND lease_owner = $2",
                    )
                    .bind(session_id)
                    .bind(owner)
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    Ok(done.rows_affected() == 1)
                }

                async fn enqueue_input(&self, input: &NewQueuedInput) -> StoreResult<Option<QueuedInput>> {
                    let at = now();
                    let mut tx = self.begin_write().await.map_err(db)?;
                    if let Some(event_id) = input.event_id.as_deref() {
                        let claimed = sqlx::query(
                            "INSERT INTO processed_events (platform, event_id, seen_at) VALUES ($1, $2, $3) \
                             ON CONFLICT (platform, event_id) DO NOTHING",
                        )
                        .bind(&input.platform)
                        .bind(event_id)
                        .bind(at)
                        .execute(&mut *tx)
                        .await
                        .map_err(db)?;
                        if claimed.rows_affected() == 0 {
                            return Ok(None);
                        }
                    }
                    let row = sqlx::query(
                        "INSERT INTO session_inputs (session_id, user_id, event_id, action, state, \
                         waiter_until, created_at) VALUES ($1, $2, $3, $4, 'waiting', $5, $6) RETURNING *",
                    )
                    .bind(input.session_id)
                    .bind(clean_text(&input.user))
                    .bind(clean_opt(&input.event_id))
                    .bind(db_json(&input.action)?)
                    .bind(micros(input.waiter_until))
                    .bind(at)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(|e| {
                        violation(e, None, Some(format!("session {} does not exist", input.session_id)))
                    })?;
                    tx.commit().await.map_err(db)?;
                    queued_input_from(&row).map(Some)
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
                    let done = sqlx::query(
                        "UPDATE session_inputs SET state = 'running' WHERE id = $1",
                    )
                    .bind(id)
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    Ok(done.rows_affected() == 1)
                }

                async fn finish_input(&self, id: i64) -> StoreResult<()> {
                    sqlx::query("DELETE FROM session_inputs WHERE id = $1")
                        .bind(id)
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    Ok(())
                }

                async fn renew_waiter(&self, id: i64, until: DateTime<Utc>) -> StoreResult<bool> {
                    let done = sqlx::query("UPDATE session_inputs SET waiter_until = $2 WHERE id = $1")
                        .bind(id)
                        .bind(micros(until))
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    Ok(done.rows_affected() == 1)
                }

                async fn orphaned_sessions(&self, at: DateTime<Utc>, limit_n: usize) -> StoreResult<Vec<i64>> {
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
