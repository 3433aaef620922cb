//! Messages a platform would not take yet: kept in the store and delivered later, so an
//! answer outlives a run of 429s and a restart. The adapters queue what their calls could not
//! deliver; one delivery loop per platform sends it when the platform accepts it.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::CoreError;
use crate::store::{NewOutbound, Outbound, Store};

pub use crate::store::NewOutbound as OutboundMessage;

/// The queue of undelivered messages.
#[derive(Clone)]
pub struct Outbox {
    store: Arc<dyn Store>,
}

impl Outbox {
    /// The outbox kept in `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }

    /// Keeps `message` for later delivery.
    pub async fn queue(&self, message: &NewOutbound) -> Result<(), CoreError> {
        self.store.queue_outbound(message).await?;
        crate::telemetry::metrics()
            .outbound_messages
            .with_label_values(&[message.platform.as_str(), "queued"])
            .inc();
        Ok(())
    }

    /// The platform's oldest message when it is due at `now`, held from other senders until
    /// `hold_until`.
    pub async fn next_due(
        &self,
        platform: &str,
        now: DateTime<Utc>,
        hold_until: DateTime<Utc>,
    ) -> Result<Option<Outbound>, CoreError> {
        Ok(self.store.claim_outbound(platform, now, hold_until).await?)
    }

    /// The message may be sent again from `not_before` on.
    pub async fn postpone(&self, id: i64, not_before: DateTime<Utc>) -> Result<(), CoreError> {
        Ok(self.store.postpone_outbound(id, not_before).await?)
    }

    /// The message is delivered or dropped.
    pub async fn remove(&self, id: i64) -> Result<(), CoreError> {
        Ok(self.store.remove_outbound(id).await?)
    }
}
