//! The outbox: messages a platform would not take yet (rate limited past what a call waits
//! out), kept until it does, oldest first per platform.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::StoreResult;

/// A message to deliver later into a platform thread.
#[derive(Debug, Clone, PartialEq)]
pub struct NewOutbound {
    /// Platform name (`slack`, `discord`).
    pub platform: String,
    /// The platform's channel id.
    pub channel: String,
    /// The thread within the channel (Slack's thread ts, Discord's thread channel id).
    pub thread: String,
    /// The text.
    pub text: String,
    /// The platform message whose text this replaces; `None` posts a new message.
    pub edit_of: Option<String>,
    /// A confirmation card to post instead of `text` (its action and view as JSON, written
    /// and read by the platforms' renderer).
    pub card: Option<String>,
    /// When it should have been shown (its age counts from here).
    pub created_at: DateTime<Utc>,
    /// Not to be sent before this (the platform's Retry-After).
    pub not_before: DateTime<Utc>,
}

/// A queued message, claimed for one delivery attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Outbound {
    /// Row id (delivery order within a platform).
    pub id: i64,
    /// What to deliver.
    pub message: NewOutbound,
}

/// Messages waiting for their platform to accept them.
#[async_trait]
pub trait OutboxStore: Send + Sync {
    /// Queues a message; returns its id.
    async fn queue_outbound(&self, message: &NewOutbound) -> StoreResult<i64>;
    /// The platform's oldest queued message, claimed until `hold_until` (so no other replica
    /// sends it meanwhile), when it is due at `now`. `None` when the queue is empty or its
    /// oldest message is not due: later messages wait behind it, so a thread reads in order.
    async fn claim_outbound(
        &self,
        platform: &str,
        now: DateTime<Utc>,
        hold_until: DateTime<Utc>,
    ) -> StoreResult<Option<Outbound>>;
    /// Sets when a queued message may be sent next.
    async fn postpone_outbound(&self, id: i64, not_before: DateTime<Utc>) -> StoreResult<()>;
    /// Removes a delivered (or dropped) message.
    async fn remove_outbound(&self, id: i64) -> StoreResult<()>;
    /// How many messages of `platform` wait.
    async fn outbound_count(&self, platform: &str) -> StoreResult<i64>;
}

/// Emits `impl OutboxStore` for a backend store type.
macro_rules! impl_outbox {
    ($store:ty, $db:ty) => {
        const _: () = {
            use async_trait::async_trait;
            use chrono::{DateTime, Utc};
            use sqlx::Row;

            use $crate::store::common::*;
            use $crate::store::outbox::{NewOutbound, Outbound, OutboxStore};
            use $crate::store::StoreResult;

            #[async_trait]
            impl OutboxStore for $store {
                async fn queue_outbound(&self, m: &NewOutbound) -> StoreResult<i64> {
                    sqlx::query_scalar::<_, i64>(
                        "INSERT INTO outbound_messages \
                         (platform, channel, thread, text, edit_of, created_at, not_before, card) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
                    )
                    .bind(&m.platform)
                    .bind(&m.channel)
                    .bind(&m.thread)
                    .bind(&m.text)
                    .bind(&m.edit_of)
                    .bind(micros(m.created_at))
                    .bind(micros(m.not_before))
                    .bind(&m.card)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db)
                }

                async fn claim_outbound(
                    &self,
                    platform: &str,
                    now: DateTime<Utc>,
                    hold_until: DateTime<Utc>,
                ) -> StoreResult<Option<Outbound>> {
                    let Some(row) = sqlx::query(
                        "SELECT * FROM outbound_messages WHERE platform = $1 ORDER BY id LIMIT 1",
                    )
                    .bind(platform)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)?
                    else {
                        return Ok(None);
                    };
                    let not_before: DateTime<Utc> = row.try_get("not_before").map_err(db)?;
                    if not_before > now {
                        return Ok(None);
                    }
                    let id: i64 = row.try_get("id").map_err(db)?;
                    // Whoever moves not_before past `now` first sends it; another replica
                    // finds it held.
                    let claimed = sqlx::query(
                        "UPDATE outbound_messages SET not_before = $3 \
                         WHERE id = $1 AND not_before <= $2",
                    )
                    .bind(id)
                    .bind(micros(now))
                    .bind(micros(hold_until))
                    .execute(&self.pool)
                    .await
                    .map_err(db)?
                    .rows_affected()
                        == 1;
                    if !claimed {
                        return Ok(None);
                    }
                    Ok(Some(Outbound {
                        id,
                        message: NewOutbound {
                            platform: row.try_get("platform").map_err(db)?,
                            channel: row.try_get("channel").map_err(db)?,
                            thread: row.try_get("thread").map_err(db)?,
                            text: row.try_get("text").map_err(db)?,
                            edit_of: row.try_get("edit_of").map_err(db)?,
                            card: row.try_get("card").map_err(db)?,
                            created_at: row.try_get("created_at").map_err(db)?,
                            not_before: micros(hold_until),
                        },
                    }))
                }

                async fn postpone_outbound(
                    &self,
                    id: i64,
                    not_before: DateTime<Utc>,
                ) -> StoreResult<()> {
                    sqlx::query("UPDATE outbound_messages SET not_before = $2 WHERE id = $1")
                        .bind(id)
                        .bind(micros(not_before))
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    Ok(())
                }

                async fn remove_outbound(&self, id: i64) -> StoreResult<()> {
                    sqlx::query("DELETE FROM outbound_messages WHERE id = $1")
                        .bind(id)
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    Ok(())
                }

                async fn outbound_count(&self, platform: &str) -> StoreResult<i64> {
                    sqlx::query_scalar::<_, i64>(
                        "SELECT COUNT(*) FROM outbound_messages WHERE platform = $1",
                    )
                    .bind(platform)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db)
                }
            }
        };
    };
}
pub(crate) use impl_outbox;
