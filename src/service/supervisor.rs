//! Each platform adapter's state and the loop that keeps it running: a failure that may pass
//! is retried with backoff, a permanent one is reported, and the other platforms stay up.
//!
//! Layer: the shell. No rule of the bot lives here.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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

/// A reporter for a gateway adapter: `Running` while it is connected, `Starting` (with why)
/// while it is not.
pub(super) fn gateway_link(
    platforms: Arc<Platforms>,
    name: &'static str,
) -> crate::platforms::link::LinkReport {
    use crate::platforms::link::LinkChange;
    Arc::new(move |change| match change {
        LinkChange::Up => platforms.set(name, PlatformState::Running, ""),
        LinkChange::Down(why) => platforms.set(name, PlatformState::Starting, why),
    })
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
