//! The dedupe ledger: one record of every platform input already taken (messages, mentions,
//! slash commands, interactions, button clicks), so a redelivery runs nothing twice whatever
//! its kind or platform. Adapters name each input by its platform id; the core decides.
//!
//! The ledger is the store's `processed_events` table, shared by every replica; queued inputs
//! claim their id in the same transaction that queues them. Ids are kept for a retention
//! window (`agent.event_retention_hours`) and then forgotten, so the table does not grow
//! forever: a platform redelivers within minutes, never days later.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::SubsecRound;

use crate::store::{Store, StoreResult};

/// What kind of input an id names (ids of different kinds never collide).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// A message, mention, interaction or click that becomes a core input.
    Event,
    /// A slash command (`/sparky …`) answered outside a conversation.
    Command,
}

impl InputKind {
    /// The id as recorded: events bare (as they always were), commands prefixed.
    fn record(self, id: &str) -> String {
        match self {
            Self::Event => id.to_string(),
            Self::Command => format!("command:{id}"),
        }
    }
}

/// Longest time between two purges of old ids.
const PURGE_EVERY: Duration = Duration::from_secs(3600);

/// The ledger of inputs already taken.
pub struct Ledger {
    store: Arc<dyn Store>,
    retention: Duration,
    last_purge: Mutex<Option<Instant>>,
}

impl Ledger {
    /// A ledger on `store` that forgets ids after `retention`.
    pub fn new(store: Arc<dyn Store>, retention: Duration) -> Self {
        Self {
            store,
            retention,
            last_purge: Mutex::new(None),
        }
    }

    /// How long ids are remembered.
    pub fn retention(&self) -> Duration {
        self.retention
    }

    /// Records `id` of `platform`; `false` when it was taken before (a redelivery).
    pub async fn claim(&self, platform: &str, kind: InputKind, id: &str) -> StoreResult<bool> {
        self.purge_if_due().await;
        self.store.claim_event(platform, &kind.record(id)).await
    }

    /// [`claim`](Self::claim) for inputs that are better run twice than lost: a store that
    /// cannot answer lets the input through (and says so in the log).
    pub async fn first_delivery(&self, platform: &str, kind: InputKind, id: &str) -> bool {
        match self.claim(platform, kind, id).await {
            Ok(first) => first,
            Err(e) => {
                tracing::warn!(error = %e, platform, "could not record an input; handling it anyway");
                true
            }
        }
    }

    /// Records the digest of a verified signed request (a platform's HTTP endpoint) under
    /// `scope` for `window`; `false` when it was recorded less than `window` ago (a replay).
    pub async fn claim_request(
        &self,
        scope: &str,
        digest: &str,
        window: Duration,
    ) -> StoreResult<bool> {
        self.store.claim_request(scope, digest, window).await
    }

    /// Forgets ids older than the retention window, at most once per `min(retention, 1 h)`;
    /// returns how many were forgotten (0 when not due).
    pub async fn purge_if_due(&self) -> u64 {
        let every = PURGE_EVERY.min(self.retention);
        {
            let Ok(mut last) = self.last_purge.lock() else {
                return 0;
            };
            if last.is_some_and(|t| t.elapsed() < every) {
                return 0;
            }
            *last = Some(Instant::now());
        }
        match self.purge().await {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(error = %e, "could not purge old input ids");
                0
            }
        }
    }

    /// Forgets every id recorded longer than the retention window ago; returns how many.
    pub async fn purge(&self) -> StoreResult<u64> {
        let keep = chrono::Duration::from_std(self.retention)
            .unwrap_or_else(|_| chrono::Duration::days(3650));
        let before = (chrono::Utc::now() - keep).trunc_subsecs(6);
        let n = self.store.purge_events(before).await?;
        if n > 0 {
            tracing::debug!(forgotten = n, "purged old input ids");
        }
        Ok(n)
    }
}
