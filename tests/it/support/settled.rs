//! Waiting until agents have no work in flight, so a test can check that something did not
//! happen (a second execution, another model call) once the work it could have come from has
//! ended, instead of sleeping a fixed time.

use std::time::{Duration, Instant};

use sparky::core::inflight::InFlight;
use sparky::core::Agent;

/// Waits until no handler or turn of any of `agents` is in flight (at most 20 s).
pub async fn settled(agents: &[&Agent]) {
    let in_flight: Vec<InFlight> = agents.iter().map(|a| InFlight::of(a)).collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    while in_flight.iter().any(|f| f.count() > 0) {
        assert!(Instant::now() < deadline, "work in flight after 20 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
