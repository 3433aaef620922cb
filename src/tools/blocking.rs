//! CPU-bound tool work on tokio's blocking pool, with a time budget.
//!
//! A tool that renders a document or walks a whole project can compute for seconds without
//! an await. On the async workers that stalls every other conversation sharing the worker,
//! and a timeout around it never fires (a timer is only checked when the task yields). Here
//! the work runs on a thread of its own and the caller awaits its handle, so the budget is
//! enforced: on time-out the result is abandoned and the caller gets a clear error.
//!
//! An abandoned thread cannot be killed; it is told instead. [`abandoned`] turns true on it
//! once its caller gave up, and long loops (the report's pages) check it to stop early.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::Semaphore;

use super::ToolError;

thread_local! {
    /// The abandon flag of the work running on this thread, if any.
    static FLAG: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Whether the caller of the work on this thread has given up on it (time-out, or the turn
/// was dropped). Always false outside [`run`].
pub fn abandoned() -> bool {
    FLAG.with(|f| {
        f.borrow()
            .as_ref()
            .is_some_and(|a| a.load(Ordering::Relaxed))
    })
}

/// At most this many heavy runs compute at once: one per core. More would not finish sooner,
/// and each may hold a large image in memory; the others wait, within their own budget.
fn slots() -> Arc<Semaphore> {
    static SLOTS: OnceLock<Arc<Semaphore>> = OnceLock::new();
    SLOTS
        .get_or_init(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            Arc::new(Semaphore::new(cores))
        })
        .clone()
}

/// Sets the abandon flag when the awaiting side is dropped before the work finished (a
/// time-out, or the caller's own future dropped).
struct Abandon(Option<Arc<AtomicBool>>);

impl Abandon {
    /// The work finished in time: nothing to tell its thread.
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if let Some(flag) = self.0.take() {
            flag.store(true, Ordering::Relaxed);
        }
    }
}

/// How a budget reads in a message: whole seconds, or tenths below ten seconds.
fn seconds(d: Duration) -> String {
    if d >= Duration::from_secs(10) || d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// Runs `work` for the tool `name` on the blocking pool within `budget` (waiting for a free
/// slot included). A panic in `work` and an overrun are errors for the caller, never a crash
/// or a stalled worker.
pub async fn run<T, F>(name: &str, budget: Duration, work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    let flag = Arc::new(AtomicBool::new(false));
    let abandon = Abandon(Some(flag.clone()));
    let job = async {
        let slot = slots()
            .acquire_owned()
            .await
            .map_err(|_| ToolError::Failed("the heavy-work pool is closed".into()))?;
        let handle = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            FLAG.with(|f| *f.borrow_mut() = Some(flag));
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
            FLAG.with(|f| *f.borrow_mut() = None);
            out
        });
        match handle.await {
            Ok(Ok(r)) => r,
            Ok(Err(_panic)) => Err(ToolError::Failed(format!(
                "the tool {name} crashed (panic) while running it; nothing else was affected"
            ))),
            Err(e) => Err(ToolError::Failed(format!("the tool {name} stopped: {e}"))),
        }
    };
    match tokio::time::timeout(budget, job).await {
        Ok(r) => {
            abandon.disarm();
            r
        }
        Err(_) => Err(ToolError::Failed(format!(
            "the tool {name} took longer than {} and was stopped; nothing else was affected. \
             Ask for less at once (one panel, one category, or a PDF instead of a PNG)",
            seconds(budget)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn budgets_read_in_seconds() {
        assert_eq!(seconds(Duration::from_secs(20)), "20 s");
        assert_eq!(seconds(Duration::from_millis(300)), "0.3 s");
        assert_eq!(seconds(Duration::from_millis(12_500)), "12 s");
    }

    #[tokio::test]
    async fn an_overrun_is_an_error_and_the_thread_is_told() {
        let stopped = Arc::new(AtomicBool::new(false));
        let seen = stopped.clone();
        let started = Instant::now();
        let r = run("slow", Duration::from_millis(100), move || {
            while !abandoned() && started.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(5));
            }
            seen.store(abandoned(), Ordering::Relaxed);
            Ok(())
        })
        .await;
        let e = r.expect_err("over budget").to_string();
        assert!(e.contains("took longer than 0.1 s"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(5));
        while !stopped.load(Ordering::Relaxed) {
            assert!(started.elapsed() < Duration::from_secs(5), "never told");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn a_panic_is_an_error_and_results_come_back() {
        let e = run::<(), _>("boom", Duration::from_secs(5), || panic!("bad"))
            .await
            .expect_err("panic");
        assert!(e.to_string().contains("crashed (panic)"), "{e}");
        let v = run("ok", Duration::from_secs(5), || Ok(abandoned()))
            .await
            .expect("ran");
        assert!(!v, "a run in time is not abandoned");
        assert!(!abandoned(), "outside a run");
    }
}
