//! CPU-bound tools run on the blocking pool through the one runner: the async workers keep
//! serving other tasks while they compute, an overrun is stopped at the runner's timeout with
//! a clear error (and the work is told to stop), and a panic stays a tool error.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{json, Value};
use sparky::core::runner::{RunFor, ToolRunner};
use sparky::llm::{ToolCall, ToolResult};
use sparky::tools::{blocking, Tool, ToolContext, ToolError, ToolRegistry};

use crate::tools_fixture;

/// Holds its thread without awaiting, like a render, for `for_` or until it is abandoned;
/// `told` records that it was.
struct Grinds {
    for_: Duration,
    told: Arc<AtomicBool>,
}

#[async_trait]
impl Tool for Grinds {
    fn name(&self) -> &'static str {
        "grind"
    }
    fn description(&self) -> &'static str {
        "computes without awaiting"
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"panic": {"type": "boolean"}}})
    }
    fn cpu_bound(&self) -> bool {
        true
    }
    async fn execute(&self, args: Value, _: &ToolContext) -> Result<Value, ToolError> {
        if args["panic"] == true {
            panic!("grinding failed");
        }
        let started = Instant::now();
        // Sleeping in slices blocks the thread as a loop would, without taking a core from
        // the other tests.
        while started.elapsed() < self.for_ && !blocking::abandoned() {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.told.store(blocking::abandoned(), Ordering::Relaxed);
        Ok(json!({"ground_ms": started.elapsed().as_millis()}))
    }
}

struct Setup {
    runner: Arc<ToolRunner>,
    ctx: ToolContext,
    told: Arc<AtomicBool>,
    _dir: tempfile::TempDir,
}

async fn setup(grind: Duration, timeout: Duration) -> Setup {
    let (store, dir) = tools_fixture::sqlite().await;
    let told = Arc::new(AtomicBool::new(false));
    let mut reg = ToolRegistry::new(100_000);
    reg.register(Grinds {
        for_: grind,
        told: told.clone(),
    });
    let runner = ToolRunner::new(store.clone(), Arc::new(reg), timeout);
    Setup {
        runner: Arc::new(runner),
        ctx: ToolContext::new(store, None, "tester", None),
        told,
        _dir: dir,
    }
}

async fn grind(runner: &ToolRunner, ctx: &ToolContext, args: Value) -> ToolResult {
    let call = ToolCall {
        id: "call_1".into(),
        name: "grind".into(),
        arguments: args.to_string(),
        thought_signature: None,
    };
    let validated = runner.validate(None, &call).expect("valid");
    let sparky::tools::RegisteredTool::Read(tool) = validated.tool else {
        panic!("a read tool");
    };
    let who = RunFor {
        session_id: None,
        actor: "tester",
    };
    runner.run_read(&call, tool, validated.args, ctx, who).await
}

/// Counts ticks of a 10 ms interval on the runtime until aborted; a tick that could not run
/// is not made up later.
fn ticker() -> (Arc<AtomicU64>, tokio::task::JoinHandle<()>) {
    let ticks = Arc::new(AtomicU64::new(0));
    let counted = ticks.clone();
    let task = tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_millis(10));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            counted.fetch_add(1, Ordering::Relaxed);
        }
    });
    (ticks, task)
}

// One worker, as a loaded server has for a moment: a tool computing on it would stall every
// other task, here the ticker.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn cpu_bound_tools_leave_the_async_workers_free() {
    let s = setup(Duration::from_millis(600), Duration::from_secs(20)).await;
    let (ticks, task) = ticker();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let before = ticks.load(Ordering::Relaxed);
    let started = Instant::now();
    let (runner, ctx) = (s.runner.clone(), s.ctx.clone());
    let r = tokio::spawn(async move { grind(&runner, &ctx, json!({})).await })
        .await
        .expect("joined");
    let elapsed = started.elapsed();
    let during = ticks.load(Ordering::Relaxed) - before;
    task.abort();
    assert!(!r.is_error, "{:?}", r.content);
    assert!(elapsed >= Duration::from_millis(600), "{elapsed:?}");
    // 600 ms at 10 ms a tick is 60 ticks; a stalled worker would make none meanwhile.
    assert!(
        during >= 20,
        "the ticker ticked {during} times in {elapsed:?}"
    );
}

#[tokio::test]
async fn a_cpu_bound_tool_over_its_budget_is_stopped_with_an_error() {
    let s = setup(Duration::from_secs(30), Duration::from_millis(300)).await;
    let started = Instant::now();
    let r = grind(&s.runner, &s.ctx, json!({})).await;
    let elapsed = started.elapsed();
    assert!(r.is_error, "{:?}", r.content);
    let text = r.content["error"].as_str().unwrap_or_default().to_string();
    assert!(
        text.contains("the tool grind took longer than 0.3 s"),
        "{text}"
    );
    assert!(
        elapsed < Duration::from_secs(5),
        "returned after {elapsed:?}"
    );
    // The abandoned work is told and stops soon after, instead of grinding for 30 s.
    while !s.told.load(Ordering::Relaxed) {
        assert!(started.elapsed() < Duration::from_secs(5), "never told");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_panic_in_a_cpu_bound_tool_is_a_tool_error() {
    let s = setup(Duration::from_millis(1), Duration::from_secs(20)).await;
    let r = grind(&s.runner, &s.ctx, json!({"panic": true})).await;
    assert!(r.is_error, "{:?}", r.content);
    let text = r.content["error"].as_str().unwrap_or_default().to_string();
    assert!(text.contains("crashed (panic)"), "{text}");
    // The runner still works afterwards.
    let ok = grind(&s.runner, &s.ctx, json!({})).await;
    assert!(!ok.is_error, "{:?}", ok.content);
}
