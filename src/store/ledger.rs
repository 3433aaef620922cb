//! The event ledger: platform event ids and signed-request digests seen before, so a
//! redelivery or a replay is recognised on every replica.

use async_trait::async_trait;

use super::StoreResult;

/// Which platform events and signed requests were already seen.
#[async_trait]
pub trait EventLedger: Send + Sync {
    /// Records a platform event id; `false` when it was seen before (a redelivery).
    async fn claim_event(&self, platform: &str, event_id: &str) -> StoreResult<bool>;
    /// Records the digest of a verified signed request under `scope` for `window`; `false`
    /// when the same digest was recorded less than `window` ago (a replay). Every replica on
    /// this store sees the same ledger; a digest older than `window` may be claimed again.
    async fn claim_request(
        &self,
        scope: &str,
        digest: &str,
        window: std::time::Duration,
    ) -> StoreResult<bool>;
    /// Forgets every recorded event id and request digest seen before `before`; returns how
    /// many. Redeliveries come within minutes, so ids older than a retention window are no
    /// longer needed.
    async fn purge_events(&self, before: chrono::DateTime<chrono::Utc>) -> StoreResult<u64>;
}

/// Emits `impl EventLedger` for a backend store type.
macro_rules! impl_ledger {
    ($store:ty, $db:ty) => {
        const _: () = {
            use async_trait::async_trait;

            use $crate::store::common::*;
            use $crate::store::{StoreResult, EventLedger};

            #[async_trait]
            impl EventLedger for $store {
                async fn claim_event(&self, platform: &str, event_id: &str) -> StoreResult<bool> {
                    let done = sqlx::query(
                        "INSERT INTO processed_events (platform, event_id, seen_at) VALUES ($1, $2, $3) \
                         ON CONFLICT (platform, event_id) DO NOTHING",
                    )
                    .bind(platform)
                    .bind(event_id)
                    .bind(now())
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    Ok(done.rows_affected() == 1)
                }

                async fn claim_request(
                    &self,
                    scope: &str,
                    digest: &str,
                    window: std::time::Duration,
                ) -> StoreResult<bool> {
                    let at = now();
                    let window = chrono::Duration::from_std(window)
                        .unwrap_or_else(|_| chrono::Duration::days(1));
                    // One conditional upsert: a digest seen within the window is a replay and
                    // changes nothing; one seen before it is claimed again (its timestamp is
                    // stale by then). Old rows go with `purge_events`.
                    let done = sqlx::query(
                        "INSERT INTO processed_events (platform, event_id, seen_at) VALUES ($1, $2, $3) \
                         ON CONFLICT (platform, event_id) DO UPDATE SET seen_at = excluded.seen_at \
                         WHERE processed_events.seen_at < $4",
                    )
                    .bind(scope)
                    .bind(digest)
                    .bind(at)
                    .bind(at - window)
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    Ok(done.rows_affected() == 1)
                }

                async fn purge_events(
                    &self,
                    before: chrono::DateTime<chrono::Utc>,
                ) -> StoreResult<u64> {
                    let done = sqlx::query("DELETE FROM processed_events WHERE seen_at < $1")
                        .bind(before)
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    Ok(done.rows_affected())
                }
            }
        };
    };
}
pub(crate) use impl_ledger;
