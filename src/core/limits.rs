//! Per-user and per-channel limits on model turns.

use std::num::NonZeroU32;

use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use super::session::SessionKey;
use crate::config::LimitsConfig;

/// Keyed rate limiters for model turns.
pub struct TurnLimiter {
    per_user: DefaultKeyedRateLimiter<String>,
    per_channel: DefaultKeyedRateLimiter<String>,
    /// When idle keys were last dropped.
    pruned: std::sync::Mutex<std::time::Instant>,
}

/// How often keys whose bucket is full again are dropped, so memory follows the people and
/// channels active in the last minutes, not every one ever seen.
const PRUNE_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

fn quota(per_minute: u32) -> Quota {
    Quota::per_minute(NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN))
}

impl TurnLimiter {
    /// Limiters from configuration.
    pub fn new(cfg: &LimitsConfig) -> Self {
        Self {
            per_user: RateLimiter::keyed(quota(cfg.turns_per_user_per_minute)),
            per_channel: RateLimiter::keyed(quota(cfg.turns_per_channel_per_minute)),
            pruned: std::sync::Mutex::new(std::time::Instant::now()),
        }
    }

    fn prune_idle(&self) {
        let mut last = self.pruned.lock().unwrap_or_else(|p| p.into_inner());
        if last.elapsed() >= PRUNE_EVERY {
            *last = std::time::Instant::now();
            for limiter in [&self.per_user, &self.per_channel] {
                limiter.retain_recent();
                limiter.shrink_to_fit();
            }
        }
    }

    /// Takes a turn for `user` in the key's channel; the error is a message with the wait.
    pub fn check(&self, key: &SessionKey, user: &str) -> Result<(), String> {
        self.prune_idle();
        // The limiter's own clock: a fresh default clock calibrates itself on every call.
        let now = self.per_user.clock().now();
        let user_key = format!("{}:{}", key.platform, user);
        if let Err(n) = self.per_user.check_key(&user_key) {
            return Err(format!(
                "You are sending requests faster than I can take them; try again in {} s.",
                n.wait_time_from(now).as_secs().max(1)
            ));
        }
        let channel_key = format!("{}:{}:{}", key.platform, key.workspace, key.channel);
        if let Err(n) = self.per_channel.check_key(&channel_key) {
            return Err(format!(
                "This channel is sending requests faster than I can take them; try again in {} s.",
                n.wait_time_from(now).as_secs().max(1)
            ));
        }
        Ok(())
    }
}
