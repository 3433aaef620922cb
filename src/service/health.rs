//! The operational endpoints: `/healthz`, `/readyz`, `/metrics`, and the flag that tells
//! `/readyz` shutdown has begun.
//!
//! Layer: the shell. Serves operational endpoints over the store and telemetry; no rule of the bot lives here.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;

use super::supervisor::{PlatformState, Platforms};
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
