//! Per-user and per-channel limits on model turns.

use super::session::SessionKey;
use crate::config::LimitsConfig;
use crate::tools::keyed_limit::KeyedLimit;

/// Keyed rate limiters for model turns.
pub struct TurnLimiter {
    per_user: KeyedLimit<String>,
    per_channel: KeyedLimit<String>,
}

impl TurnLimiter {
    /// Limiters from configuration.
    pub fn new(cfg: &LimitsConfig) -> Self {
        Self {
            per_user: KeyedLimit::per_minute(cfg.turns_per_user_per_minute),
            per_channel: KeyedLimit::per_minute(cfg.turns_per_channel_per_minute),
        }
    }

    /// Takes a turn for `user` in the key's channel; the error is a message with the wait.
    pub fn check(&self, key: &SessionKey, user: &str) -> Result<(), String> {
        let user_key = format!("{}:{}", key.platform, user);
        if let Err(wait) = self.per_user.check(&user_key) {
            return Err(format!(
                "You are sending requests faster than I can take them; try again in {} s.",
                wait.as_secs().max(1)
            ));
        }
        let channel_key = format!("{}:{}:{}", key.platform, key.workspace, key.channel);
        if let Err(wait) = self.per_channel.check(&channel_key) {
            return Err(format!(
                "This channel is sending requests faster than I can take them; try again in {} s.",
                wait.as_secs().max(1)
            ));
        }
        Ok(())
    }
}
