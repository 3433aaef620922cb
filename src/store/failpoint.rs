//! Crash points for recovery tests: `SPARKY_FAILPOINT=NAME` makes the process abort at the
//! point called NAME (e.g. `apply_before_commit`, after a plan's rows are written and before
//! its transaction commits), or stall there ([`stall`]). Unset, a failpoint costs one
//! environment lookup.

use std::sync::atomic::{AtomicBool, Ordering};

fn named(name: &str) -> bool {
    std::env::var("SPARKY_FAILPOINT").is_ok_and(|v| v.split(',').any(|p| p.trim() == name))
}

/// Aborts the process when `SPARKY_FAILPOINT` names `name`.
pub(crate) fn hit(name: &str) {
    if named(name) {
        eprintln!("sparky: failpoint {name} reached; aborting");
        std::process::abort();
    }
}

/// Stalls the calling thread for `SPARKY_FAILPOINT_STALL_MS` (default 5,000) when
/// `SPARKY_FAILPOINT` names `name`, the first time only: a process paused by its host, as a
/// lease holder that stops renewing while it still means to write. The thread is blocked, not
/// the task yielded, so nothing else on it (the lease's renewal) runs meanwhile.
pub(crate) fn stall(name: &str) {
    static STALLED: AtomicBool = AtomicBool::new(false);
    if named(name) && !STALLED.swap(true, Ordering::SeqCst) {
        let ms = std::env::var("SPARKY_FAILPOINT_STALL_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(5_000);
        eprintln!("sparky: failpoint {name} reached; stalling {ms} ms");
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}
