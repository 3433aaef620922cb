//! Crash points for recovery tests: `SPARKY_FAILPOINT=NAME` makes the process abort at the
//! point called NAME (e.g. `apply_before_commit`, after a plan's rows are written and before
//! its transaction commits). Unset, a failpoint costs one environment lookup.

/// Aborts the process when `SPARKY_FAILPOINT` names `name`.
pub(crate) fn hit(name: &str) {
    if std::env::var("SPARKY_FAILPOINT").is_ok_and(|v| v.split(',').any(|p| p.trim() == name)) {
        eprintln!("sparky: failpoint {name} reached; aborting");
        std::process::abort();
    }
}
