//! The operational HTTP server: `/healthz`, `/readyz`, `/metrics`, plus graceful shutdown
//! bookkeeping for turns in flight.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;

use crate::store::Store;

/// Tracks turns in flight so shutdown can wait for them.
#[derive(Default)]
pub struct InFlight {
    count: AtomicUsize,
    draining: AtomicBool,
}

/// Held while a turn runs.
pub struct TurnGuard(Arc<InFlight>);

impl Drop for TurnGuard {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::SeqCst);
    }
}

impl InFlight {
    /// Starts a turn, unless shutdown has begun (then new work is refused).
    pub fn begin(self: &Arc<Self>) -> Option<TurnGuard> {
        if self.draining.load(Ordering::SeqCst) {
            return None;
        }
        self.count.fetch_add(1, Ordering::SeqCst);
        Some(TurnGuard(self.clone()))
    }

    /// Turns running now.
    pub fn running(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Stops new work and waits up to `grace` for running turns; returns how many were left.
    pub async fn drain(&self, grace: Duration) -> usize {
        self.draining.store(true, Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + grace;
        while self.running() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.running()
    }
}

#[derive(Clone)]
struct AppState {
    store: Arc<dyn Store>,
    inflight: Arc<InFlight>,
}

/// The router with the operational endpoints; platform endpoints are merged into it.
pub fn router(store: Arc<dyn Store>, inflight: Arc<InFlight>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route(
            "/metrics",
            get(|| async { crate::telemetry::render_metrics() }),
        )
        .with_state(AppState { store, inflight })
}

async fn readyz(State(s): State<AppState>) -> (StatusCode, String) {
    if s.inflight.draining.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down".into());
    }
    match s.store.ping().await {
        Ok(()) => (StatusCode::OK, "ready".into()),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("database unavailable: {e}"),
        ),
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
