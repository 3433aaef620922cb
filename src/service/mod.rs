//! The running service (`sparky serve`): one place that owns every task of a serving process
//! and its shutdown. The configured platforms, the HTTP listener, the recovery of threads left
//! by a stopped process, and the drain of turns in flight all start and stop here, so the whole
//! of `serve` runs in process (tests bind it to an ephemeral port and end it with a future).
//!
//! Layer: the shell. `health` serves the operational endpoints, `listener` accepts HTTP
//! connections within time limits, `supervisor` keeps each platform adapter running.

pub mod health;
mod listener;
pub mod supervisor;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use crate::app::App;
use crate::config::{Config, SlackTransport};
use crate::core::inflight::InFlight;
use crate::platforms::link::GatewayLink;
use health::ShuttingDown;
use listener::{serve_http, HttpLimits};
use supervisor::{gateway_link, PlatformFailure, PlatformState, Platforms};

/// The service, bound and ready to run.
pub struct Service {
    app: App,
    listener: tokio::net::TcpListener,
    platforms: Vec<&'static str>,
}

impl Service {
    /// Checks that a platform is enabled, builds the application (store, migrations,
    /// provider, tools) and binds `server.bind` (`127.0.0.1:0` picks a free port).
    pub async fn bind(config: Config) -> anyhow::Result<Self> {
        let mut platforms = Vec::new();
        if config.discord.enabled {
            platforms.push("discord");
        }
        if config.slack.enabled {
            platforms.push("slack");
        }
        if platforms.is_empty() {
            anyhow::bail!(
                "no platform is enabled. Set discord.enabled = true (with DISCORD_TOKEN) or slack.enabled = true \
                 (with SLACK_BOT_TOKEN and SLACK_APP_TOKEN or SLACK_SIGNING_SECRET) in bot-config.toml, or the \
                 SPARKY_DISCORD__ENABLED / SPARKY_SLACK__ENABLED variables. To try Sparky without a platform, run `sparky chat`."
            );
        }
        let app = App::build(config).await?;
        app.embed_in_background();
        let listener = tokio::net::TcpListener::bind(&app.config.server.bind)
            .await
            .with_context(|| format!("cannot listen on {}", app.config.server.bind))?;
        Ok(Self {
            app,
            listener,
            platforms,
        })
    }

    /// The address the HTTP server listens on.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The assembled application (its agent and store).
    pub fn app(&self) -> &App {
        &self.app
    }

    /// Serves until `shutdown` resolves (or the HTTP server stops), then stops taking work,
    /// waits up to `server.shutdown_grace_secs` for turns in flight and stops the platforms.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> anyhow::Result<()> {
        let Service {
            app,
            listener,
            platforms,
        } = self;
        let config = &app.config;
        let stopping = Arc::new(ShuttingDown::default());
        let states = Arc::new(Platforms::default());
        let mut router = health::router_with(app.store.clone(), stopping.clone(), states.clone());
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut tasks = tokio::task::JoinSet::new();
        if config.discord.enabled {
            router = start_discord(&app, router, &states, &stop_rx, &mut tasks);
        }
        if config.slack.enabled {
            router = start_slack(&app, router, &states, &stop_rx, &mut tasks);
        }
        tracing::info!(bind = ?listener.local_addr().ok(), platforms = ?platforms, "serving");
        let http_stop = stopped(stop_rx.clone());
        let limits = HttpLimits::of(config);
        tasks.spawn(serve_http(listener, router, http_stop, limits));
        let delivery = crate::platforms::delivery::Delivery::new(
            app.agent.outbox(),
            app.agent.confirmation_cards(),
            config,
        );
        let delivery_stop = stopped(stop_rx.clone());
        tasks.spawn(async move {
            delivery.run(delivery_stop).await;
            Ok(())
        });
        tasks.spawn(recover_orphans(app.agent.clone(), config.clone(), stop_rx));
        // Run until asked to stop, or until the HTTP server stops (platforms are retried on
        // their own).
        let failure = tokio::select! {
            () = shutdown => None,
            Some(done) = tasks.join_next() => Some(done),
        };
        tracing::info!("shutting down: finishing turns in flight");
        stopping.set();
        let in_flight = InFlight::of(&app.agent);
        let grace = Duration::from_secs(config.server.shutdown_grace_secs);
        if !in_flight.wait(grace).await {
            tracing::warn!(
                left = in_flight.count(),
                "turns still running at the end of the grace period"
            );
        }
        let _ = stop_tx.send(true);
        let grace = Duration::from_secs(config.server.shutdown_grace_secs + 5);
        let _ =
            tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
        match failure {
            Some(Ok(Err(e))) => Err(e),
            Some(Err(join)) => Err(anyhow::anyhow!("a task crashed: {join}")),
            _ => Ok(()),
        }
    }
}

type Tasks = tokio::task::JoinSet<anyhow::Result<()>>;

async fn stopped(mut rx: tokio::sync::watch::Receiver<bool>) {
    let _ = rx.changed().await;
}

/// The Discord interactions endpoint (merged into the router) and the gateway (supervised).
fn start_discord(
    app: &App,
    mut router: axum::Router,
    states: &Arc<Platforms>,
    stop_rx: &tokio::sync::watch::Receiver<bool>,
    tasks: &mut Tasks,
) -> axum::Router {
    use crate::platforms::discord::{self, DiscordError};
    let config = &app.config;
    let failure = |e: DiscordError| match e {
        DiscordError::MissingSecret(_) | DiscordError::Setup(_) => {
            PlatformFailure::Permanent(e.to_string())
        }
        other => PlatformFailure::Transient(other.to_string()),
    };
    if config.secrets.discord_public_key.is_some() {
        match discord::interactions_router(app.agent.clone(), config) {
            Ok(r) => {
                router = router.merge(r);
                states.set("discord-interactions", PlatformState::Running, "");
            }
            Err(e) => {
                tracing::error!(error = %e, "the Discord interactions endpoint cannot start");
                states.set("discord-interactions", PlatformState::Failed, e.to_string());
            }
        }
    }
    let (agent, cfg, states, stop) = (
        app.agent.clone(),
        config.clone(),
        states.clone(),
        stop_rx.clone(),
    );
    tasks.spawn(async move {
        let link = gateway_link(states.clone(), "discord-gateway");
        supervisor::supervise("discord-gateway", states, stop, |stop| {
            let (agent, cfg) = (agent.clone(), cfg.clone());
            let link = GatewayLink::new(link.clone());
            async move {
                discord::run_linked(agent, &cfg, stopped(stop), link)
                    .await
                    .map_err(failure)
            }
        })
        .await;
        Ok(())
    });
    router
}

/// The Slack Events API endpoint (merged into the router) or Socket Mode (supervised).
fn start_slack(
    app: &App,
    mut router: axum::Router,
    states: &Arc<Platforms>,
    stop_rx: &tokio::sync::watch::Receiver<bool>,
    tasks: &mut Tasks,
) -> axum::Router {
    use crate::platforms::slack::{self, SlackError};
    let config = &app.config;
    match config.slack.transport {
        SlackTransport::Http => match slack::events_router(app.agent.clone(), config) {
            Ok(r) => {
                router = router.merge(r);
                states.set("slack", PlatformState::Running, "");
            }
            Err(e) => {
                tracing::error!(error = %e, "the Slack endpoint cannot start");
                states.set("slack", PlatformState::Failed, e.to_string());
            }
        },
        SlackTransport::Socket => {
            let (agent, cfg, states, stop) = (
                app.agent.clone(),
                config.clone(),
                states.clone(),
                stop_rx.clone(),
            );
            tasks.spawn(async move {
                let link = gateway_link(states.clone(), "slack");
                supervisor::supervise("slack", states, stop, |stop| {
                    let (agent, cfg) = (agent.clone(), cfg.clone());
                    let link = GatewayLink::new(link.clone());
                    async move {
                        slack::run_linked(agent, &cfg, stopped(stop), link)
                            .await
                            .map_err(|e| match e {
                                SlackError::Config(_) => PlatformFailure::Permanent(e.to_string()),
                                other => PlatformFailure::Transient(other.to_string()),
                            })
                    }
                })
                .await;
                Ok(())
            });
        }
    }
    router
}

/// Threads whose process died mid-turn, with nobody writing in them again, are closed and
/// told here, and proposals whose time ran out are expired and their cards edited (Slack and
/// Discord threads can be addressed from their session key).
async fn recover_orphans(
    agent: Arc<crate::core::Agent>,
    config: Config,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let every = Duration::from_secs(config.agent.lease_secs.max(3) / 3);
    let sinks = crate::platforms::recovery_sinks(&agent, &config);
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            _ = stop.changed() => return Ok(()),
        }
        match agent.admission().recover(&agent, sinks.as_ref()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(threads = n, "recovered threads left by a stopped process"),
            Err(e) => tracing::warn!(error = %e, "recovering orphaned threads failed"),
        }
        // Proposals nobody confirmed in time: their cards say so without waiting for a click.
        match agent
            .admission()
            .sweep_expired(&agent, sinks.as_ref())
            .await
        {
            Ok(0) => {}
            Ok(n) => tracing::info!(proposals = n, "expired proposals nobody confirmed"),
            Err(e) => tracing::warn!(error = %e, "sweeping expired proposals failed"),
        }
    }
}

/// Resolves when the process receives Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
