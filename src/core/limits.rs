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
}

fn quota(per_minute: u32) -> Quota {
    Quota::per_minute(NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN))
}

impl TurnLimiter {
    /// Limiters from configuration.
    pub fn new(cfg: &LimitsConfig) -> Self {
        Self {
            per_user: RateLimiter::keyed(quota(cfg.turns_per_user_per_minute)),
            per_channel: RateLimiter::keyed(quota(cfg.turns_per_channel_per_minute)),
        }
    }

    /// Takes a turn for `user` in the key's channel; the error is a message with the wait.
    pub fn check(&self, key: &SessionKey, user: &str) -> Result<(), String> {
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
