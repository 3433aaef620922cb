//! Discord adapter (serenity): the gateway (mentions, thread messages, slash commands and
//! button clicks), an HTTP interactions endpoint as an alternative for commands and clicks, and
//! `/sparky` command registration.
//!
//! It only translates: a Discord event becomes a core [`Input`](crate::core::Input) keyed by
//! `(discord, guild or "dm-<user>", parent channel, thread)`, and the core's effects are rendered on
//! the thread by the shared [`SurfaceSink`](crate::platforms::surface::SurfaceSink) (streamed
//! edits at most once a second, 2000-character split, confirmation buttons, 429 retries).
//! Every interaction is acknowledged within Discord's 3 s (deferred), then answered through its
//! token or in its thread.

mod adapter;
pub mod commands;
mod endpoint;
mod files;
mod gateway;
pub mod inbound_files;
mod project_form;
pub mod rest;
pub mod surface;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serenity::all::{ClientBuilder, Command as DiscordCommand, GuildId, Http, HttpBuilder};

pub use adapter::{dm_workspace, strip_mention, Discord, Settings, Work, PLATFORM};
pub use endpoint::{parse_public_key, PATH as INTERACTIONS_PATH};
pub use gateway::intents;
use rest::DISCORD_API;

use crate::config::Config;
use crate::core::Agent;
use crate::platforms::link::GatewayLink;

/// How long shutdown waits for turns in flight.
const DRAIN: Duration = Duration::from_secs(30);

/// Failures that stop the Discord adapter.
#[derive(Debug, thiserror::Error)]
pub enum DiscordError {
    /// A required secret is missing.
    #[error("{0} is not set")]
    MissingSecret(&'static str),
    /// Configuration or start-up problem.
    #[error("Discord set-up: {0}")]
    Setup(String),
    /// serenity failed (gateway, HTTP).
    #[error("Discord: {0}")]
    Serenity(#[from] Box<serenity::Error>),
}

/// serenity's HTTP client for the configured API. A base URL other than Discord's own is used
/// as serenity's proxy, and then serenity's ratelimiter is off: the proxy (or test server)
/// owns rate limiting and the adapter waits out any 429 itself.
pub fn build_http(config: &Config) -> Result<Http, DiscordError> {
    let token = config
        .secrets
        .discord_token
        .as_ref()
        .ok_or(DiscordError::MissingSecret("DISCORD_TOKEN"))?;
    let base = config.discord.api_base_url.trim_end_matches('/');
    let mut builder = HttpBuilder::new(token.expose());
    if base != DISCORD_API {
        // serenity appends /api/v10 itself.
        let origin = base.strip_suffix("/api/v10").ok_or_else(|| {
            DiscordError::Setup(format!(
                "discord.api_base_url must end with /api/v10 (got {base})"
            ))
        })?;
        builder = builder.proxy(origin).ratelimiter_disabled(true);
    }
    Ok(builder.build())
}

impl From<serenity::Error> for DiscordError {
    fn from(e: serenity::Error) -> Self {
        Self::Serenity(Box::new(e))
    }
}

/// Registers `/sparky` and the "Ask Sparky" message command: in `guild` (instant, for development) or globally (for release; Discord
/// may take up to an hour to show it). Replaces any earlier definition. Returns the number of
/// commands registered.
pub async fn register_commands(http: &Http, guild: Option<GuildId>) -> Result<usize, DiscordError> {
    if http.application_id().is_none() {
        let app = http.get_current_application_info().await?;
        http.set_application_id(app.id);
    }
    let defs = commands::definitions();
    let done = match guild {
        Some(g) => g.set_commands(http, defs).await?,
        None => DiscordCommand::set_global_commands(http, defs).await?,
    };
    Ok(done.len())
}

/// [`register_commands`] with the configuration: `discord.dev_guild_id` when set, else global.
pub async fn register_commands_from_config(config: &Config) -> Result<usize, DiscordError> {
    let http = build_http(config)?;
    let guild = config
        .discord
        .dev_guild_id
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|g| *g != 0)
        .map(GuildId::new);
    register_commands(&http, guild).await
}

/// The HTTP interactions endpoint (POST [`INTERACTIONS_PATH`]) for mounting in the server.
/// Needs `DISCORD_PUBLIC_KEY` (to verify requests) and `DISCORD_TOKEN` (to post in threads).
pub fn interactions_router(
    agent: Arc<Agent>,
    config: &Config,
) -> Result<axum::Router, DiscordError> {
    let key = config
        .secrets
        .discord_public_key
        .as_ref()
        .ok_or(DiscordError::MissingSecret("DISCORD_PUBLIC_KEY"))?;
    let bytes = parse_public_key(key.expose()).ok_or_else(|| {
        DiscordError::Setup("DISCORD_PUBLIC_KEY must be 64 hexadecimal digits".into())
    })?;
    let verifier = serenity::interactions_endpoint::Verifier::try_new(bytes)
        .map_err(|e| DiscordError::Setup(e.to_string()))?;
    let discord = Arc::new(Discord::new(agent.clone(), config)?);
    Ok(endpoint::router(Arc::new(endpoint::Endpoint {
        discord,
        verifier,
        max_age: Duration::from_secs(config.discord.interactions_max_age_secs),
        agent,
    })))
}

/// How often the shards' connection stages are read for `/readyz`.
const SHARD_WATCH: Duration = Duration::from_millis(250);

/// Reports which shards are connected: serenity marks a shard `Connected` once READY (or
/// RESUMED) arrived, and removes a shard's runner while it restarts after a lost connection.
async fn watch_shards(manager: Arc<serenity::all::ShardManager>, link: GatewayLink) {
    loop {
        let live = manager
            .runners
            .lock()
            .await
            .iter()
            .filter(|(_, r)| r.stage == serenity::all::ConnectionStage::Connected)
            .count();
        link.track(live, "no shard is connected to the gateway; reconnecting");
        tokio::time::sleep(SHARD_WATCH).await;
    }
}

/// Runs the gateway client until `shutdown` completes (or the gateway fails for good), then
/// lets turns in flight finish (up to 30 s).
pub async fn run(
    agent: Arc<Agent>,
    config: &Config,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), DiscordError> {
    run_linked(agent, config, shutdown, GatewayLink::unobserved()).await
}

/// [`run`], reporting to `link` when the gateway is connected (READY or RESUMED received on a
/// shard) and when it is not.
pub async fn run_linked(
    agent: Arc<Agent>,
    config: &Config,
    shutdown: impl Future<Output = ()> + Send,
    link: GatewayLink,
) -> Result<(), DiscordError> {
    let discord = Arc::new(Discord::new(agent, config)?);
    let http = build_http(config)?;
    let mut client = ClientBuilder::new_with_http(http, intents())
        .event_handler(gateway::Handler {
            discord: discord.clone(),
        })
        .await?;
    let manager = client.shard_manager.clone();
    let watch = tokio::spawn(watch_shards(manager.clone(), link.clone()));
    let d = &config.discord;
    let result = {
        let start = async {
            if d.shard_count == 0 {
                client.start_autosharded().await
            } else {
                let end = if d.shard_range_end == 0 {
                    d.shard_count
                } else {
                    d.shard_range_end
                };
                client
                    .start_shard_range(d.shard_range_start..end, d.shard_count)
                    .await
            }
        };
        tokio::select! {
            r = start => r.map_err(DiscordError::from),
            () = shutdown => Ok(()),
        }
    };
    watch.abort();
    manager.shutdown_all().await;
    link.all_down("stopped");
    discord.drain(DRAIN).await;
    result
}
