//! Configuration: `bot-config.toml` for settings, `SPARKY_*` variables for overrides and the
//! environment alone for secrets. Loading validates everything and reports every problem at once.
//!
//! Layer: foundation. Imports only `domain` (for the policies it names); every layer may read it.

mod file_host;
mod secrets;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Deserialize;

pub use file_host::FileHost;
pub use secrets::{Secret, Secrets};

/// The shipped configuration file: the documented defaults every other file is layered on.
pub const DEFAULT_CONFIG: &str = include_str!("../../bot-config.toml");

/// `[database]`. Its `Debug` shows the URL without its password.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseConfig {
    /// Postgres URL; empty selects SQLite.
    pub url: String,
    /// SQLite file; empty selects the user's data directory.
    pub sqlite_path: String,
    /// Pool size.
    pub max_connections: u32,
}

impl std::fmt::Debug for DatabaseConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseConfig")
            .field("url", &redacted_url(&self.url))
            .field("sqlite_path", &self.sqlite_path)
            .field("max_connections", &self.max_connections)
            .finish()
    }
}

/// `url` with any password replaced, for logs and messages; text that does not parse as a URL
/// is withheld whole, since it may be a connection string with a password in it.
pub fn redacted_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("redacted"));
            u.to_string()
        }
        Ok(u) => u.to_string(),
        Err(_) if url.is_empty() => String::new(),
        Err(_) => "[not a URL; withheld]".to_string(),
    }
}

/// Which model provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// No model: offline features only.
    None,
    /// OpenAI Chat Completions or a compatible server.
    Openai,
    /// Google Gemini.
    Gemini,
}

/// `[llm.openai]` / `[llm.gemini]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderEndpoint {
    /// API base URL.
    pub base_url: String,
    /// Model name.
    pub model: String,
}

/// `[llm]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// Primary provider.
    pub provider: ProviderKind,
    /// Optional fallback provider ("" for none).
    pub fallback: String,
    /// Seconds allowed to open a connection to the model server.
    pub connect_timeout_secs: u64,
    /// Seconds from sending a request to the first byte of the answer (a server on a CPU
    /// reads a long prompt for minutes before it answers).
    pub first_byte_timeout_secs: u64,
    /// Longest silence, in seconds, between two chunks of an answer that streams.
    pub idle_timeout_secs: u64,
    /// Seconds for a whole model call, its retries and its stream included.
    pub overall_timeout_secs: u64,
    /// Deprecated name of `overall_timeout_secs` (it once bounded the whole stream alone);
    /// when a configuration still sets it, it wins.
    #[serde(default)]
    pub request_timeout_secs: Option<u64>,
    /// Retries for transient failures.
    pub max_retries: u32,
    /// First backoff delay.
    pub retry_base_delay_ms: u64,
    /// Sampling temperature.
    pub temperature: f64,
    /// Sampling seed sent with every request; negative (the default, -1) sends none. With a
    /// fixed seed a server that honours it gives the same answer to the same prompt, so two
    /// eval runs differ only where their prompts do.
    pub seed: i64,
    /// Most tokens the model may write in one answer: a small model caught in a loop would
    /// otherwise write until its context is full, for many minutes on a CPU.
    pub max_output_tokens: u32,
    /// After a call refused for its arguments, the next request asks for that tool's call
    /// alone, decoded under its schema where the provider can (see `llm::ToolChoice`), so only
    /// arguments that fit can be written.
    pub constrain_repairs: bool,
    /// Whether the configured models read images (photos of a panel directory, scanned
    /// pages). Off: a photo is answered with how to type or import the circuits instead.
    #[serde(default)]
    pub vision: bool,
    /// OpenAI-compatible endpoint.
    pub openai: ProviderEndpoint,
    /// Gemini endpoint.
    pub gemini: ProviderEndpoint,
}

impl LlmConfig {
    /// Seconds for a whole model call: `overall_timeout_secs`, or the deprecated
    /// `request_timeout_secs` where a configuration still sets it.
    pub fn overall_timeout(&self) -> u64 {
        self.request_timeout_secs
            .unwrap_or(self.overall_timeout_secs)
    }

    /// The seed to send, if one is configured.
    pub fn seed(&self) -> Option<u64> {
        u64::try_from(self.seed).ok()
    }

    /// The fallback provider, if one is configured.
    pub fn fallback_kind(&self) -> Option<ProviderKind> {
        match self.fallback.trim() {
            "openai" => Some(ProviderKind::Openai),
            "gemini" => Some(ProviderKind::Gemini),
            _ => None,
        }
    }
}

/// Which embedding model retrieval uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    /// all-MiniLM-L6-v2 in-process.
    Local,
    /// OpenAI embeddings.
    Openai,
    /// Gemini embeddings.
    Gemini,
    /// Full text only.
    None,
}

/// `[rag]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RagConfig {
    /// Embedding model.
    pub embedder: EmbedderKind,
    /// Local model directory ("" = default).
    pub model_dir: String,
    /// Fetch the local model on first use.
    pub auto_fetch: bool,
    /// Recall@10 against exact search the vector index's search width is chosen for (0–1].
    pub recall_target: f64,
    /// The vector index's search width (`hnsw.ef_search`, 1–1000); 0 = chosen by measuring
    /// for `recall_target`.
    pub ef_search: usize,
}

pub use crate::domain::policy::ConfirmPolicy;

/// `[agent]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Model calls per turn.
    pub max_model_calls_per_turn: u32,
    /// Tool calls per turn.
    pub max_tool_calls_per_turn: u32,
    /// Seconds per tool execution.
    pub tool_timeout_secs: u64,
    /// Token budget for history.
    pub history_token_budget: usize,
    /// Hours before a pending confirmation expires.
    pub confirmation_ttl_hours: u64,
    /// Default confirmation policy.
    pub confirm_policy: ConfirmPolicy,
    /// Turns running at once in this process (past it, inputs wait with a "queued" status).
    pub max_concurrent_turns: usize,
    /// Seconds a thread's lease lasts without renewal: how long a turn of a process that
    /// died stays blocked before another process closes it.
    pub lease_secs: u64,
    /// Hours the ids of inputs already taken are remembered (to drop redeliveries); older
    /// ids are purged.
    pub event_retention_hours: u64,
    /// Seconds between two "waiting for the model" statuses while a model call has produced
    /// nothing yet.
    pub waiting_status_secs: u64,
    /// Which tools each model request offers.
    pub tool_offer: ToolOfferSetting,
    /// Passages searched with the person's words before a turn's first model call and sent
    /// with their message (0 = none).
    pub prefetch_passages: usize,
}

/// `agent.tool_offer`: the few tools a question is about, or every tool in every request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolOfferSetting {
    /// The tools the question and the conversation call for in full, the rest named by a
    /// discovery tool: short prompts, which a model on a CPU reads in time.
    #[default]
    Routed,
    /// Every tool in full in every request: about 20,000 prompt tokens, for a server that
    /// reads them quickly or caches them.
    All,
}

impl std::str::FromStr for ToolOfferSetting {
    type Err = String;

    /// The names the configuration file takes (`routed`, `all`), read by the same serde rule.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        use serde::de::IntoDeserializer;
        Self::deserialize(s.into_deserializer())
            .map_err(|e: serde::de::value::Error| format!("tool offer: {e}"))
    }
}

/// `[limits]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Model turns per user per minute.
    pub turns_per_user_per_minute: u32,
    /// Model turns per channel per minute.
    pub turns_per_channel_per_minute: u32,
    /// Executions of one tool per minute.
    pub tool_executions_per_minute: u32,
}

/// `[server]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Listen address.
    pub bind: String,
    /// Seconds granted to turns in flight at shutdown.
    pub shutdown_grace_secs: u64,
    /// Seconds a client has to send a request's headers (also between requests on a kept-alive
    /// connection) before the connection is closed.
    pub header_timeout_secs: u64,
    /// Seconds a request may take, its body included, before it is answered 408.
    pub request_timeout_secs: u64,
    /// Seconds a message the platform refused for a rate limit is kept for delivery; an
    /// older one is dropped (logged and counted) rather than posted late.
    pub undelivered_max_age_secs: u64,
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human on a terminal, JSON otherwise.
    Auto,
    /// Human-readable lines.
    Human,
    /// One JSON object per line.
    Json,
}

/// `[log]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    /// Output format.
    pub format: LogFormat,
    /// tracing filter.
    pub filter: String,
}

/// `[discord]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscordConfig {
    /// Whether `serve` runs the Discord adapter.
    pub enabled: bool,
    /// REST API base URL.
    pub api_base_url: String,
    /// Guild ids the bot answers in (empty: every guild).
    #[serde(deserialize_with = "id_list")]
    pub allowed_guilds: Vec<String>,
    /// Channel ids the bot answers in (a thread counts as its parent; empty: every channel).
    #[serde(deserialize_with = "id_list")]
    pub allowed_channels: Vec<String>,
    /// Outside its own threads, answer only messages that mention the bot.
    pub require_mention: bool,
    /// Answer direct messages.
    pub respond_in_dms: bool,
    /// Total shard count; 0 lets Discord recommend it.
    pub shard_count: u32,
    /// First shard this process runs (with `shard_count` > 0).
    pub shard_range_start: u32,
    /// One past the last shard this process runs; 0 means up to `shard_count`.
    pub shard_range_end: u32,
    /// Guild that `register-commands` registers in (instant, for development); empty registers
    /// globally.
    pub dev_guild_id: String,
    /// Oldest signed request timestamp the HTTP interactions endpoint accepts, in seconds.
    pub interactions_max_age_secs: u64,
    /// Minutes of inactivity before the threads the bot starts are archived.
    pub thread_auto_archive_minutes: u16,
    /// Origins attachments are downloaded from (Discord's CDN).
    #[serde(deserialize_with = "origin_list")]
    pub file_hosts: Vec<FileHost>,
}

/// Slack transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SlackTransport {
    /// Socket Mode.
    Socket,
    /// HTTP Events API.
    Http,
}

/// An allow-list of platform ids, the same on every platform: a TOML list, or one
/// comma-separated string (as an environment variable, or as older files wrote Discord's).
fn id_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        List(Vec<String>),
        Text(String),
    }
    let items = match Raw::deserialize(d)? {
        Raw::List(items) => items,
        Raw::Text(text) => text.split(',').map(str::to_string).collect(),
    };
    Ok(items
        .iter()
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .collect())
}

/// A list of file-host origins, written like every allow-list.
fn origin_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<FileHost>, D::Error> {
    id_list(d)?
        .iter()
        .map(|o| FileHost::parse(o).map_err(serde::de::Error::custom))
        .collect()
}

/// `[slack]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlackConfig {
    /// Whether `serve` runs the Slack adapter.
    pub enabled: bool,
    /// Transport.
    pub transport: SlackTransport,
    /// Web API base URL.
    pub api_base_url: String,
    /// Team ids the bot answers in (empty: all).
    #[serde(deserialize_with = "id_list")]
    pub allowed_workspaces: Vec<String>,
    /// Channel ids the bot answers in (empty: all).
    #[serde(deserialize_with = "id_list")]
    pub allowed_channels: Vec<String>,
    /// Whether direct messages are answered.
    pub allow_direct_messages: bool,
    /// Minimum milliseconds between edits of one streamed reply.
    pub edit_interval_ms: u64,
    /// Reaction shown while working ("" for none).
    pub working_reaction: String,
    /// The registered slash command, e.g. "/sparky".
    pub slash_command: String,
    /// Use Slack's chat streaming API (falls back to chat.update).
    pub streaming: bool,
    /// Origins `url_private` files are downloaded from, with the bot token.
    #[serde(deserialize_with = "origin_list")]
    pub file_hosts: Vec<FileHost>,
}

/// The whole validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// `[database]`.
    pub database: DatabaseConfig,
    /// `[llm]`.
    pub llm: LlmConfig,
    /// `[rag]`.
    pub rag: RagConfig,
    /// `[agent]`.
    pub agent: AgentConfig,
    /// `[limits]`.
    pub limits: LimitsConfig,
    /// `[server]`.
    pub server: ServerConfig,
    /// `[log]`.
    pub log: LogConfig,
    /// `[discord]`.
    pub discord: DiscordConfig,
    /// `[slack]`.
    pub slack: SlackConfig,
    /// Secrets from the environment.
    pub secrets: Secrets,
}

/// Every problem found while loading the configuration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the configuration has {} problem(s):\n{}", .0.len(), .0.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
pub struct ConfigError(pub Vec<String>);

impl Config {
    /// Loads the shipped defaults, then `path` (if given), then `SPARKY_*` overrides and
    /// secrets from `env`, and validates the result.
    pub fn load(path: Option<&Path>, env: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let mut problems = Vec::new();
        let mut root: toml::Table = DEFAULT_CONFIG
            .parse()
            .map_err(|e| ConfigError(vec![format!("built-in defaults are invalid: {e}")]))?;
        if let Some(path) = path {
            match std::fs::read_to_string(path) {
                Ok(text) => match text.parse::<toml::Table>() {
                    Ok(user) => merge(&mut root, user),
                    Err(e) => problems.push(format!("{}: not valid TOML: {e}", path.display())),
                },
                Err(e) => problems.push(format!("{}: cannot read: {e}", path.display())),
            }
        }
        apply_env_overrides(&mut root, env, &mut problems);
        for key in root.keys() {
            if !SECTIONS.contains(&key.as_str()) {
                problems.push(format!("unknown section [{key}]"));
            }
        }

        let database = section::<DatabaseConfig>(&root, "database", &mut problems);
        let llm = section::<LlmConfig>(&root, "llm", &mut problems);
        let rag = section::<RagConfig>(&root, "rag", &mut problems);
        let agent = section::<AgentConfig>(&root, "agent", &mut problems);
        let limits = section::<LimitsConfig>(&root, "limits", &mut problems);
        let server = section::<ServerConfig>(&root, "server", &mut problems);
        let log = section::<LogConfig>(&root, "log", &mut problems);
        let discord = section::<DiscordConfig>(&root, "discord", &mut problems);
        let slack = section::<SlackConfig>(&root, "slack", &mut problems);
        let secrets = Secrets::from_env(env);

        let (
            Some(mut database),
            Some(llm),
            Some(rag),
            Some(agent),
            Some(limits),
            Some(server),
            Some(log),
            Some(discord),
            Some(slack),
        ) = (
            database, llm, rag, agent, limits, server, log, discord, slack,
        )
        else {
            return Err(ConfigError(problems));
        };
        if let Some(url) = env.get("DATABASE_URL").filter(|u| !u.trim().is_empty()) {
            database.url = url.clone();
        }
        let config = Config {
            database,
            llm,
            rag,
            agent,
            limits,
            server,
            log,
            discord,
            slack,
            secrets,
        };
        config.validate(&mut problems);
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError(problems))
        }
    }

    /// Loads with the process environment.
    pub fn load_from_process(path: Option<&Path>) -> Result<Self, ConfigError> {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        Self::load(path, &env)
    }

    fn validate(&self, problems: &mut Vec<String>) {
        let url = self.database.url.trim();
        if !url.is_empty() && !url.starts_with("postgres://") && !url.starts_with("postgresql://") {
            problems
                .push("database.url must be a postgres:// URL (leave it empty for SQLite)".into());
        }
        if self.database.max_connections == 0 {
            problems.push("database.max_connections must be at least 1".into());
        }
        for (key, endpoint) in [("openai", &self.llm.openai), ("gemini", &self.llm.gemini)] {
            if !endpoint.base_url.starts_with("http://")
                && !endpoint.base_url.starts_with("https://")
            {
                problems.push(format!(
                    "llm.{key}.base_url must start with http:// or https://"
                ));
            }
            if endpoint.model.trim().is_empty() {
                problems.push(format!("llm.{key}.model must not be empty"));
            }
        }
        if !matches!(self.llm.fallback.trim(), "" | "openai" | "gemini") {
            problems.push(format!(
                "llm.fallback must be \"\", \"openai\" or \"gemini\", not \"{}\"",
                self.llm.fallback
            ));
        }
        let uses = |kind: ProviderKind| {
            self.llm.provider == kind || self.llm.fallback_kind() == Some(kind)
        };
        if uses(ProviderKind::Gemini) && self.secrets.gemini_api_key.is_none() {
            problems.push("llm uses gemini but GEMINI_API_KEY is not set".into());
        }
        if uses(ProviderKind::Openai)
            && self.secrets.openai_api_key.is_none()
            && self.llm.openai.base_url.contains("api.openai.com")
        {
            problems.push("llm uses openai at api.openai.com but OPENAI_API_KEY is not set".into());
        }
        if !(self.rag.recall_target > 0.0 && self.rag.recall_target <= 1.0) {
            problems.push("rag.recall_target must be above 0 and at most 1".into());
        }
        if self.rag.ef_search > 1000 {
            problems
                .push("rag.ef_search must be 0 (chosen for rag.recall_target) or 1 to 1000".into());
        }
        if self.rag.embedder == EmbedderKind::Openai && self.secrets.openai_api_key.is_none() {
            problems.push("rag.embedder is \"openai\" but OPENAI_API_KEY is not set".into());
        }
        if self.rag.embedder == EmbedderKind::Gemini && self.secrets.gemini_api_key.is_none() {
            problems.push("rag.embedder is \"gemini\" but GEMINI_API_KEY is not set".into());
        }
        for (key, secs) in [
            ("connect_timeout_secs", Some(self.llm.connect_timeout_secs)),
            (
                "first_byte_timeout_secs",
                Some(self.llm.first_byte_timeout_secs),
            ),
            ("idle_timeout_secs", Some(self.llm.idle_timeout_secs)),
            ("overall_timeout_secs", Some(self.llm.overall_timeout_secs)),
            ("request_timeout_secs", self.llm.request_timeout_secs),
        ] {
            if secs == Some(0) {
                problems.push(format!("llm.{key} must be at least 1"));
            }
        }
        if !(0.0..=2.0).contains(&self.llm.temperature) {
            problems.push("llm.temperature must be between 0 and 2".into());
        }
        if !(64..=65_536).contains(&self.llm.max_output_tokens) {
            problems.push("llm.max_output_tokens must be between 64 and 65536".into());
        }
        let a = &self.agent;
        if a.max_model_calls_per_turn == 0 || a.max_model_calls_per_turn > 10 {
            problems.push("agent.max_model_calls_per_turn must be between 1 and 10".into());
        }
        if a.max_tool_calls_per_turn == 0 {
            problems.push("agent.max_tool_calls_per_turn must be at least 1".into());
        }
        if a.prefetch_passages > 10 {
            problems.push("agent.prefetch_passages must be 0 to 10".into());
        }
        if a.waiting_status_secs == 0 {
            problems.push("agent.waiting_status_secs must be at least 1".into());
        }
        if a.tool_timeout_secs == 0 {
            problems.push("agent.tool_timeout_secs must be at least 1".into());
        }
        if a.history_token_budget < 1000 {
            problems.push("agent.history_token_budget must be at least 1000".into());
        }
        if a.confirmation_ttl_hours == 0 {
            problems.push("agent.confirmation_ttl_hours must be at least 1".into());
        }
        if a.max_concurrent_turns == 0 || a.max_concurrent_turns > 100_000 {
            problems.push("agent.max_concurrent_turns must be between 1 and 100000".into());
        }
        if !(3..=3600).contains(&a.lease_secs) {
            problems.push("agent.lease_secs must be between 3 and 3600".into());
        }
        if !(1..=24 * 365).contains(&a.event_retention_hours) {
            problems.push("agent.event_retention_hours must be between 1 and 8760".into());
        }
        let l = &self.limits;
        for (key, v) in [
            ("turns_per_user_per_minute", l.turns_per_user_per_minute),
            (
                "turns_per_channel_per_minute",
                l.turns_per_channel_per_minute,
            ),
            ("tool_executions_per_minute", l.tool_executions_per_minute),
        ] {
            if v == 0 {
                problems.push(format!("limits.{key} must be at least 1"));
            }
        }
        if self.server.bind.parse::<std::net::SocketAddr>().is_err() {
            problems.push(format!(
                "server.bind must be an address like 127.0.0.1:8080, not \"{}\"",
                self.server.bind
            ));
        }
        if self.discord.enabled && self.secrets.discord_token.is_none() {
            problems.push("discord.enabled is true but DISCORD_TOKEN is not set".into());
        }
        if self.slack.enabled {
            if self.secrets.slack_bot_token.is_none() {
                problems.push("slack.enabled is true but SLACK_BOT_TOKEN is not set".into());
            }
            match self.slack.transport {
                SlackTransport::Socket if self.secrets.slack_app_token.is_none() => problems
                    .push("slack.transport is \"socket\" but SLACK_APP_TOKEN is not set".into()),
                SlackTransport::Http if self.secrets.slack_signing_secret.is_none() => problems
                    .push("slack.transport is \"http\" but SLACK_SIGNING_SECRET is not set".into()),
                _ => {}
            }
        }
        if self.slack.edit_interval_ms < 1000 {
            problems.push("slack.edit_interval_ms must be at least 1000 (Slack allows about one edit per second)".into());
        }
        if !self.slack.slash_command.starts_with('/')
            || self.slack.slash_command.contains(char::is_whitespace)
        {
            problems.push("slack.slash_command must look like \"/sparky\"".into());
        }
        if self.slack.working_reaction.contains([':', ' ']) {
            problems.push(
                "slack.working_reaction must be an emoji name without colons or spaces".into(),
            );
        }
        let d = &self.discord;
        for (key, list) in [
            ("discord.allowed_guilds", d.allowed_guilds.join(",")),
            ("discord.allowed_channels", d.allowed_channels.join(",")),
            ("discord.dev_guild_id", d.dev_guild_id.clone()),
        ] {
            if list
                .split(',')
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .any(|v| v.parse::<u64>().is_err())
            {
                problems.push(format!("{key} must be comma-separated numeric Discord ids"));
            }
        }
        if d.shard_count == 0 && (d.shard_range_start != 0 || d.shard_range_end != 0) {
            problems.push("discord.shard_range_start/end need discord.shard_count > 0".into());
        }
        if d.shard_count > 0 {
            let end = if d.shard_range_end == 0 {
                d.shard_count
            } else {
                d.shard_range_end
            };
            if d.shard_range_start >= end || end > d.shard_count {
                problems.push("discord.shard_range_start must be below shard_range_end, and shard_range_end at most shard_count".into());
            }
        }
        for (key, secs) in [
            (
                "server.header_timeout_secs",
                self.server.header_timeout_secs,
            ),
            (
                "server.request_timeout_secs",
                self.server.request_timeout_secs,
            ),
            (
                "server.undelivered_max_age_secs",
                self.server.undelivered_max_age_secs,
            ),
        ] {
            if secs == 0 {
                problems.push(format!("{key} must be at least 1"));
            }
        }
        if d.interactions_max_age_secs == 0 {
            problems.push("discord.interactions_max_age_secs must be at least 1".into());
        }
        if ![60, 1440, 4320, 10080].contains(&d.thread_auto_archive_minutes) {
            problems
                .push("discord.thread_auto_archive_minutes must be 60, 1440, 4320 or 10080".into());
        }
        for (key, url) in [
            ("discord.api_base_url", &self.discord.api_base_url),
            ("slack.api_base_url", &self.slack.api_base_url),
        ] {
            if !url.starts_with("http://") && !url.starts_with("https://") {
                problems.push(format!("{key} must start with http:// or https://"));
            }
        }
    }

    /// The SQLite file used when no Postgres URL is configured.
    pub fn sqlite_file(&self) -> PathBuf {
        if !self.database.sqlite_path.trim().is_empty() {
            return PathBuf::from(self.database.sqlite_path.trim());
        }
        dirs::data_dir()
            .unwrap_or_else(|| PathBuf::from("."))
            .join("sparky")
            .join("sparky.db")
    }
}

const SECTIONS: &[&str] = &[
    "database", "llm", "rag", "agent", "limits", "server", "log", "discord", "slack",
];

/// Reads one section. When it has a type error the problem is recorded and the section is
/// read again from its defaults plus every key that is valid on its own, so that the checks
/// after it (a platform enabled without its secret, ...) still run and are reported in the
/// same pass; the configuration is refused anyway.
fn section<T: DeserializeOwned>(
    root: &toml::Table,
    name: &str,
    problems: &mut Vec<String>,
) -> Option<T> {
    let value = root
        .get(name)
        .cloned()
        .unwrap_or(toml::Value::Table(toml::Table::new()));
    match value.clone().try_into::<T>() {
        Ok(v) => Some(v),
        Err(e) => {
            problems.push(format!("[{name}]: {}", e.message().trim()));
            lenient(name, value)
        }
    }
}

/// The section's defaults with each of `given`'s keys that does not break it.
fn lenient<T: DeserializeOwned>(name: &str, given: toml::Value) -> Option<T> {
    let mut table = DEFAULT_CONFIG
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut d| d.remove(name))
        .and_then(|v| match v {
            toml::Value::Table(t) => Some(t),
            _ => None,
        })
        .unwrap_or_default();
    if let toml::Value::Table(given) = given {
        for (key, v) in given {
            let before = table.insert(key.clone(), v);
            if toml::Value::Table(table.clone()).try_into::<T>().is_err() {
                match before {
                    Some(b) => table.insert(key, b),
                    None => table.remove(&key),
                };
            }
        }
    }
    toml::Value::Table(table).try_into::<T>().ok()
}

fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Settings still read under an old name, absent from the shipped defaults.
const DEPRECATED_INTEGER_KEYS: &[&str] = &["llm.request_timeout_secs"];

/// `SPARKY_LLM__OPENAI__MODEL=x` sets `llm.openai.model`. Values are read as TOML when they
/// parse as a TOML scalar of the same type as the existing key, else as strings.
fn apply_env_overrides(
    root: &mut toml::Table,
    env: &BTreeMap<String, String>,
    problems: &mut Vec<String>,
) {
    for (name, raw) in env {
        let Some(path) = name.strip_prefix("SPARKY_") else {
            continue;
        };
        if !path.contains("__") {
            // Not a key override (e.g. SPARKY_PG_PORT used by scripts).
            continue;
        }
        let keys: Vec<String> = path.split("__").map(|k| k.to_ascii_lowercase()).collect();
        let dotted = keys.join(".");
        let Some(table) = table_at(root, &keys[..keys.len() - 1]) else {
            problems.push(format!("{name}: there is no setting {dotted}"));
            continue;
        };
        let Some(last) = keys.last() else { continue };
        // A deprecated key has no default to take its type from: it is a whole number.
        let whole_number = toml::Value::Integer(0);
        let known = table.get(last).or(DEPRECATED_INTEGER_KEYS
            .contains(&dotted.as_str())
            .then_some(&whole_number));
        let value = match known {
            Some(toml::Value::String(_)) => toml::Value::String(raw.clone()),
            Some(toml::Value::Boolean(_)) => match raw.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" => toml::Value::Boolean(true),
                "false" | "0" | "no" => toml::Value::Boolean(false),
                _ => {
                    problems.push(format!(
                        "{name}: {dotted} must be true or false, not \"{raw}\""
                    ));
                    continue;
                }
            },
            Some(toml::Value::Integer(_)) => match raw.trim().parse::<i64>() {
                Ok(v) => toml::Value::Integer(v),
                Err(_) => {
                    problems.push(format!(
                        "{name}: {dotted} must be a whole number, not \"{raw}\""
                    ));
                    continue;
                }
            },
            // Lists (allow-lists) are given comma-separated.
            Some(toml::Value::Array(_)) => toml::Value::String(raw.clone()),
            Some(toml::Value::Float(_)) => match raw.trim().parse::<f64>() {
                Ok(v) => toml::Value::Float(v),
                Err(_) => {
                    problems.push(format!("{name}: {dotted} must be a number, not \"{raw}\""));
                    continue;
                }
            },
            _ => {
                problems.push(format!("{name}: there is no setting {dotted}"));
                continue;
            }
        };
        table.insert(last.clone(), value);
    }
}

fn table_at<'a>(root: &'a mut toml::Table, keys: &[String]) -> Option<&'a mut toml::Table> {
    match keys.split_first() {
        None => Some(root),
        Some((first, rest)) => match root.get_mut(first) {
            Some(toml::Value::Table(t)) => table_at(t, rest),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_load_without_any_file_or_secret() {
        let c = Config::load(None, &env(&[])).unwrap();
        assert_eq!(c.llm.provider, ProviderKind::None);
        assert_eq!(c.agent.max_model_calls_per_turn, 10);
        assert!(c.database.url.is_empty());
    }

    #[test]
    fn allow_lists_are_one_type_on_every_platform() {
        let c = Config::load(
            None,
            &env(&[
                ("SPARKY_DISCORD__ALLOWED_GUILDS", " 1, 2 ,"),
                ("SPARKY_SLACK__ALLOWED_CHANNELS", "C1,C2"),
            ]),
        )
        .unwrap();
        assert_eq!(c.discord.allowed_guilds, ["1", "2"]);
        assert!(c.discord.allowed_channels.is_empty());
        assert_eq!(c.slack.allowed_channels, ["C1", "C2"]);
        // A file may write a list or (as Discord's used to be) a comma-separated string.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "[discord]\nallowed_channels = \"10,11\"\n[slack]\nallowed_workspaces = [\"T1\"]\n",
        )
        .unwrap();
        let c = Config::load(Some(&path), &env(&[])).unwrap();
        assert_eq!(c.discord.allowed_channels, ["10", "11"]);
        assert_eq!(c.slack.allowed_workspaces, ["T1"]);
        let bad = Config::load(None, &env(&[("SPARKY_DISCORD__ALLOWED_GUILDS", "abc")]));
        assert!(bad.is_err());
    }

    #[test]
    fn input_ids_are_kept_for_a_bounded_retention() {
        let c = Config::load(None, &env(&[])).unwrap();
        assert_eq!(c.agent.event_retention_hours, 168);
        let e =
            Config::load(None, &env(&[("SPARKY_AGENT__EVENT_RETENTION_HOURS", "0")])).unwrap_err();
        assert!(
            e.0.iter()
                .any(|p| p.contains("agent.event_retention_hours")),
            "{e:?}"
        );
    }

    #[test]
    fn env_overrides_any_key_and_database_url() {
        let c = Config::load(
            None,
            &env(&[
                ("SPARKY_LLM__OPENAI__MODEL", "gpt-4o"),
                ("SPARKY_AGENT__TOOL_TIMEOUT_SECS", "7"),
                ("SPARKY_LLM__PROVIDER", "openai"),
                ("SPARKY_LLM__OPENAI__BASE_URL", "http://127.0.0.1:9/v1"),
                ("DATABASE_URL", "postgres://u@h/db"),
            ]),
        )
        .unwrap();
        assert_eq!(c.llm.openai.model, "gpt-4o");
        assert_eq!(c.agent.tool_timeout_secs, 7);
        assert_eq!(c.llm.provider, ProviderKind::Openai);
        assert_eq!(c.database.url, "postgres://u@h/db");
    }

    #[test]
    fn a_seed_and_the_tool_offer_are_set_by_file_or_variable() {
        let c = Config::load(None, &env(&[])).unwrap();
        assert_eq!(c.llm.seed(), None);
        assert_eq!(c.agent.tool_offer, ToolOfferSetting::Routed);
        let c = Config::load(
            None,
            &env(&[
                ("SPARKY_LLM__SEED", "42"),
                ("SPARKY_AGENT__TOOL_OFFER", "all"),
            ]),
        )
        .unwrap();
        assert_eq!(c.llm.seed(), Some(42));
        assert_eq!(c.agent.tool_offer, ToolOfferSetting::All);
        let err = Config::load(None, &env(&[("SPARKY_AGENT__TOOL_OFFER", "some")]));
        assert!(err.is_err());
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.toml");
        std::fs::write(
            &path,
            "[discord]\nenabled = true\n[agent]\nmax_model_calls_per_turn = 50\n[server]\nbind = \"nowhere\"\n[llm]\nprovider = \"gemini\"\n",
        )
        .unwrap();
        let err = Config::load(
            Some(&path),
            &env(&[("SPARKY_AGENT__TOOL_TIMEOUT_SECS", "soon")]),
        )
        .unwrap_err();
        let text = err.to_string();
        for needle in [
            "discord.enabled is true but DISCORD_TOKEN is not set",
            "agent.max_model_calls_per_turn must be between 1 and 10",
            "server.bind must be an address",
            "GEMINI_API_KEY is not set",
            "agent.tool_timeout_secs must be a whole number",
        ] {
            assert!(text.contains(needle), "missing '{needle}' in:\n{text}");
        }
        assert!(err.0.len() >= 5);
    }

    #[test]
    fn a_type_error_does_not_hide_a_missing_secret() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.toml");
        // A type error in [agent], and one in [slack] beside enabled = true; no tokens at all.
        std::fs::write(
            &path,
            "[agent]\nmax_model_calls_per_turn = \"many\"\n[slack]\nenabled = true\nedit_interval_ms = \"fast\"\n[discord]\nenabled = true\n",
        )
        .unwrap();
        let err = Config::load(Some(&path), &env(&[])).unwrap_err();
        let text = err.to_string();
        for needle in [
            "[agent]:",
            "[slack]:",
            "slack.enabled is true but SLACK_BOT_TOKEN is not set",
            "discord.enabled is true but DISCORD_TOKEN is not set",
        ] {
            assert!(text.contains(needle), "missing '{needle}' in:\n{text}");
        }
        // The bad values are not also reported as range problems of the defaults.
        assert!(!text.contains("edit_interval_ms must be"), "{text}");
    }

    #[test]
    fn unknown_keys_and_sections_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, "[agent]\nmax_modle_calls = 3\n[bogus]\nx = 1\n").unwrap();
        let err = Config::load(Some(&path), &env(&[("SPARKY_NOPE__X", "1")])).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("max_modle_calls"), "{text}");
        assert!(text.contains("unknown section [bogus]"), "{text}");
        assert!(text.contains("there is no setting nope.x"), "{text}");
    }

    #[test]
    fn secrets_are_not_printed_in_debug() {
        let c = Config::load(None, &env(&[("OPENAI_API_KEY", "sk-very-secret")])).unwrap();
        let dbg = format!("{c:?}");
        assert!(!dbg.contains("sk-very-secret"));
        assert!(c.secrets.openai_api_key.is_some());
    }
}
