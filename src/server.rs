//! The operational HTTP server: `/healthz`, `/readyz`, `/metrics`, and the flag that tells
//! `/readyz` shutdown has begun.
//!
//! Layer: the shell. Serves operational endpoints over the store and telemetry; no rule of the bot lives here.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;

use crate::store::Store;

/// Set once shutdown begins: `/readyz` then answers 503 so no new work is routed to this
/// replica while each platform finishes its own turns in flight (`core::inflight`).
#[derive(Default)]
pub struct ShuttingDown(AtomicBool);

impl ShuttingDown {
    /// Marks the replica as going away.
    pub fn set(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether shutdown has begun.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Where a platform adapter stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlatformState {
    /// Connecting.
    Starting,
    /// Serving.
    Running,
    /// Stopped by an error that may pass; it is retried with backoff.
    Retrying,
    /// Stopped by an error that will not pass on its own (configuration); not retried.
    Failed,
}

impl PlatformState {
    /// Name in `/readyz` and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Running => "running",
            Self::Retrying => "retrying",
            Self::Failed => "failed",
        }
    }

    const ALL: [PlatformState; 4] = [Self::Starting, Self::Running, Self::Retrying, Self::Failed];
}

/// Each platform's state, for `/readyz` and `/metrics`: one platform failing does not take the
/// others down, and the operator sees which one is not serving and why.
#[derive(Default)]
pub struct Platforms {
    states: Mutex<BTreeMap<String, (PlatformState, String)>>,
}

impl Platforms {
    /// Records a platform's state and, when it is not serving, why.
    pub fn set(&self, platform: &str, state: PlatformState, detail: impl Into<String>) {
        let gauge = &crate::telemetry::metrics().platform_up;
        for s in PlatformState::ALL {
            gauge
                .with_label_values(&[platform, s.as_str()])
                .set(i64::from(s == state));
        }
        self.states
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(platform.to_string(), (state, detail.into()));
    }

    /// Every platform's state and detail, by name.
    pub fn snapshot(&self) -> BTreeMap<String, (PlatformState, String)> {
        self.states
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

#[derive(Clone)]
struct AppState {
    store: Arc<dyn Store>,
    stopping: Arc<ShuttingDown>,
    platforms: Arc<Platforms>,
}

/// The router with the operational endpoints; platform endpoints are merged into it.
pub fn router(store: Arc<dyn Store>, stopping: Arc<ShuttingDown>) -> Router {
    router_with(store, stopping, Arc::new(Platforms::default()))
}

/// [`router`] reporting each platform's state in `/readyz`.
pub fn router_with(
    store: Arc<dyn Store>,
    stopping: Arc<ShuttingDown>,
    platforms: Arc<Platforms>,
) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route(
            "/metrics",
            get(|| async { crate::telemetry::render_metrics() }),
        )
        .with_state(AppState {
            store,
            stopping,
            platforms,
        })
}

/// Ready when the database answers and, if platforms are configured, at least one serves;
/// the body lists each platform's state.
async fn readyz(State(s): State<AppState>) -> (StatusCode, String) {
    if s.stopping.is_set() {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down".into());
    }
    if let Err(e) = s.store.ping().await {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("database unavailable: {e}"),
        );
    }
    let platforms = s.platforms.snapshot();
    let serving = platforms.is_empty()
        || platforms
            .values()
            .any(|(state, _)| *state == PlatformState::Running);
    let mut body = String::from(if serving {
        "ready"
    } else {
        "no platform serving"
    });
    for (name, (state, detail)) in &platforms {
        body.push_str(&format!("\n{name}: {}", state.as_str()));
        if !detail.is_empty() {
            body.push_str(&format!(" ({detail})"));
        }
    }
    let code = if serving {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, body)
}

/// Runs a platform adapter until `stop` fires: a failure that may pass is retried with
/// exponential backoff (1 s up to 5 min), a permanent one is reported and not retried; the
/// other platforms and the health endpoints stay up either way.
pub async fn supervise<F, Fut>(
    name: &str,
    platforms: Arc<Platforms>,
    mut stop: tokio::sync::watch::Receiver<bool>,
    mut run: F,
) where
    F: FnMut(tokio::sync::watch::Receiver<bool>) -> Fut,
    Fut: std::future::Future<Output = Result<(), PlatformFailure>>,
{
    let mut backoff = Duration::from_secs(1);
    loop {
        // Running is reported by the adapter once it is connected (`serve` hands it a reporter).
        platforms.set(name, PlatformState::Starting, "connecting");
        let result = run(stop.clone()).await;
        if *stop.borrow() {
            return;
        }
        let wait = match result {
            Ok(()) => {
                tracing::warn!(platform = name, "platform stopped on its own; restarting");
                Duration::from_secs(1)
            }
            Err(PlatformFailure::Permanent(e)) => {
                tracing::error!(platform = name, error = %e, "platform cannot start; the others keep running");
                platforms.set(name, PlatformState::Failed, e);
                let _ = stop.changed().await;
                return;
            }
            Err(PlatformFailure::Transient(e)) => {
                tracing::warn!(platform = name, error = %e, retry_in = ?backoff, "platform failed; retrying");
                crate::telemetry::metrics()
                    .platform_errors
                    .with_label_values(&[name, "start"])
                    .inc();
                platforms.set(
                    name,
                    PlatformState::Retrying,
                    format!("{e}; retrying in {} s", backoff.as_secs()),
                );
                let w = backoff;
                backoff = (backoff * 2).min(Duration::from_secs(300));
                w
            }
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stop.changed() => return,
        }
    }
}

/// Why a platform adapter stopped.
#[derive(Debug, thiserror::Error)]
pub enum PlatformFailure {
    /// Configuration: retrying will not help.
    #[error("{0}")]
    Permanent(String),
    /// Network, rate limit, outage: retried with backoff.
    #[error("{0}")]
    Transient(String),
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
