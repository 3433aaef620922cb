//! Delivers what the outbox keeps: per platform, the oldest message first, when the platform
//! accepts it, at the pace of its Retry-After; a message older than
//! `server.undelivered_max_age_secs` is dropped (logged and counted) instead of posted late.
//! Written once for every platform: a message names its thread, and the thread's surface
//! does the sending.

use std::future::Future;
use std::time::Duration;

use chrono::Utc;

use super::surface::KeptCard;
use super::surface::SurfaceError;
use super::ThreadSurfaces;
use crate::config::Config;
use crate::core::{ConfirmationCards, Outbox};

/// How often the outbox is looked at when it had nothing due.
const IDLE: Duration = Duration::from_millis(500);

/// How long a claimed message is held from other replicas while it is being sent (longer
/// than a client's own retries of one call).
const HOLD: Duration = Duration::from_secs(600);

/// The delivery loop of this process.
pub struct Delivery {
    outbox: Outbox,
    cards: ConfirmationCards,
    surfaces: Box<ThreadSurfaces>,
    platforms: Vec<&'static str>,
    max_age: Duration,
}

impl Delivery {
    /// Delivery of `outbox` for the platforms configured in `config`; a delivered card is
    /// remembered in `cards`.
    pub fn new(outbox: Outbox, cards: ConfirmationCards, config: &Config) -> Self {
        let mut platforms = Vec::new();
        if config.slack.enabled && config.secrets.slack_bot_token.is_some() {
            platforms.push(super::slack::PLATFORM);
        }
        if config.discord.enabled && config.secrets.discord_token.is_some() {
            platforms.push(super::discord::PLATFORM);
        }
        Self {
            outbox,
            cards,
            surfaces: super::thread_surfaces(config),
            platforms,
            max_age: Duration::from_secs(config.server.undelivered_max_age_secs),
        }
    }

    /// Delivers until `stop` resolves.
    pub async fn run(self, stop: impl Future<Output = ()>) {
        let deliver = async {
            loop {
                let mut sent = false;
                for platform in &self.platforms {
                    sent |= self.deliver_due(platform).await;
                }
                if !sent {
                    tokio::time::sleep(IDLE).await;
                }
            }
        };
        tokio::select! {
            () = deliver => {}
            () = stop => {}
        }
    }

    /// Sends the platform's due messages in order until none is due or the platform refuses
    /// again; whether any was taken.
    async fn deliver_due(&self, platform: &str) -> bool {
        let mut took = false;
        loop {
            let now = Utc::now();
            let hold = now + chrono::Duration::from_std(HOLD).unwrap_or_default();
            let next = match self.outbox.next_due(platform, now, hold).await {
                Ok(Some(next)) => next,
                Ok(None) => return took,
                Err(e) => {
                    tracing::warn!(platform, error = %e, "could not read the outbox");
                    return took;
                }
            };
            took = true;
            let m = &next.message;
            let age = (now - m.created_at).to_std().unwrap_or_default();
            let count = |outcome: &str| {
                crate::telemetry::metrics()
                    .outbound_messages
                    .with_label_values(&[platform, outcome])
                    .inc();
            };
            if age > self.max_age {
                tracing::warn!(
                    platform,
                    age_secs = age.as_secs(),
                    max_age_secs = self.max_age.as_secs(),
                    "an undelivered message is older than server.undelivered_max_age_secs; dropped"
                );
                count("expired");
                self.remove(next.id).await;
                continue;
            }
            let Some(surface) = (self.surfaces)(platform, &m.channel, &m.thread) else {
                return took;
            };
            let sent = match (&m.card, &m.edit_of) {
                (Some(card), _) => self.post_card(surface.as_ref(), card).await,
                (None, Some(id)) => surface.edit_text(id, &m.text).await,
                (None, None) => surface.post_text(&m.text).await.map(|_| ()),
            };
            match sent {
                Ok(()) => {
                    count("delivered");
                    self.remove(next.id).await;
                }
                Err(SurfaceError::RateLimited(wait)) => {
                    // Still refused after the client's own waits: this platform's queue waits
                    // as long as it asked, then tries again.
                    super::surface::rate_limit_waited(platform);
                    let at = Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default();
                    if let Err(e) = self.outbox.postpone(next.id, at).await {
                        tracing::warn!(platform, error = %e, "could not postpone a message");
                    }
                    return took;
                }
                Err(SurfaceError::Failed(e)) => {
                    tracing::error!(platform, error = %e, "a kept message was refused; dropped");
                    count("failed");
                    self.remove(next.id).await;
                }
            }
        }
    }

    /// Posts a kept card with its buttons and remembers it as its action's card.
    async fn post_card(
        &self,
        surface: &dyn super::surface::ChatSurface,
        card: &str,
    ) -> Result<(), SurfaceError> {
        let card: KeptCard = serde_json::from_str(card)
            .map_err(|e| SurfaceError::Failed(format!("a kept card cannot be read: {e}")))?;
        let message = surface.post_confirmation(&card.view).await?;
        if let Err(e) = self.cards.remember(&card.action_id, &message).await {
            tracing::warn!(error = %e, "could not remember a delivered card");
        }
        Ok(())
    }

    async fn remove(&self, id: i64) {
        if let Err(e) = self.outbox.remove(id).await {
            tracing::warn!(error = %e, "could not remove a message from the outbox");
        }
    }
}
