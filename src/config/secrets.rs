//! Secrets read from the environment only, wrapped so they never reach logs.

use std::collections::BTreeMap;

use secrecy::{ExposeSecret, SecretString};

/// A secret string; `Debug` prints a placeholder.
#[derive(Clone)]
pub struct Secret(SecretString);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(SecretString::from(value.into()))
    }

    /// The secret value, for the one place that must send it.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// Every secret the bot may use.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// `OPENAI_API_KEY`.
    pub openai_api_key: Option<Secret>,
    /// `GEMINI_API_KEY`.
    pub gemini_api_key: Option<Secret>,
    /// `DISCORD_TOKEN`.
    pub discord_token: Option<Secret>,
    /// `DISCORD_PUBLIC_KEY`.
    pub discord_public_key: Option<Secret>,
    /// `SLACK_BOT_TOKEN`.
    pub slack_bot_token: Option<Secret>,
    /// `SLACK_APP_TOKEN`.
    pub slack_app_token: Option<Secret>,
    /// `SLACK_SIGNING_SECRET`.
    pub slack_signing_secret: Option<Secret>,
}

impl Secrets {
    /// Reads the secrets from an environment map; empty values count as unset.
    pub fn from_env(env: &BTreeMap<String, String>) -> Self {
        let get = |name: &str| {
            env.get(name)
                .filter(|v| !v.trim().is_empty())
                .map(|v| Secret::new(v.trim()))
        };
        Self {
            openai_api_key: get("OPENAI_API_KEY"),
            gemini_api_key: get("GEMINI_API_KEY"),
            discord_token: get("DISCORD_TOKEN"),
            discord_public_key: get("DISCORD_PUBLIC_KEY"),
            slack_bot_token: get("SLACK_BOT_TOKEN"),
            slack_app_token: get("SLACK_APP_TOKEN"),
            slack_signing_secret: get("SLACK_SIGNING_SECRET"),
        }
    }
}
