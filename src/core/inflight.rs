//! Work in flight: every platform handler and every turn runs on the agent's task tracker, so
//! shutdown waits for all of them whatever the platform or transport. The one handle adapters
//! use to spawn, track and drain that work.

use std::future::Future;
use std::time::Duration;

use super::Agent;

/// Handlers and turns still running, on the agent's task tracker.
#[derive(Clone)]
pub struct InFlight {
    tracker: tokio_util::task::TaskTracker,
}

impl InFlight {
    /// The work in flight of `agent` (every platform's).
    pub fn of(agent: &Agent) -> Self {
        Self {
            tracker: agent.tasks().clone(),
        }
    }

    /// Runs `fut` in a task that is tracked until it ends.
    pub fn spawn<F>(&self, fut: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.tracker.spawn(fut);
    }

    /// Runs `fut` here, counted as in flight until it ends.
    pub async fn track<F: Future>(&self, fut: F) -> F::Output {
        self.tracker.track_future(fut).await
    }

    /// Tasks still running (every platform's).
    pub fn count(&self) -> usize {
        self.tracker.len()
    }

    /// Stops counting new work as a reason to wait, and waits until no task runs or `limit`
    /// passes; returns whether all finished.
    pub async fn wait(&self, limit: Duration) -> bool {
        self.tracker.close();
        tokio::time::timeout(limit, self.tracker.wait())
            .await
            .is_ok()
    }
}
