//! The agent core's own overhead per turn, with a provider that answers instantly:
//! p50/p99 for a text turn and for a turn with two tool calls, and throughput with 1,000
//! concurrent sessions. Postgres from SPARKY_TEST_DATABASE_URL / DATABASE_URL (a fresh
//! database is created), else SQLite.
//!
//! Run: `bash .ci/bench agent` (starts Postgres) or `cargo bench --bench agent`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::stream;
use sparky::config::Config;
use sparky::core::session::SessionKey;
use sparky::core::{Agent, CollectSink, Input, InputAction};
use sparky::llm::{
    ChatMessage, ChatProvider, ChatRequest, ChatStream, FinishReason, LlmError, StreamEvent,
    ToolCall, Usage,
};
use sparky::nec::units::Edition;

/// Answers at once: tool calls when the user message asks for them, text otherwise.
struct Instant0;

#[async_trait]
impl ChatProvider for Instant0 {
    fn name(&self) -> String {
        "instant".into()
    }
    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        let wants_tools = matches!(request.messages.last(), Some(ChatMessage::User { text, .. }) if text.starts_with("tools"));
        let mut events = Vec::new();
        if wants_tools {
            for (i, expr) in ["2*12.9*16*150/6530", "sqrt(3)*480"].iter().enumerate() {
                events.push(Ok(StreamEvent::ToolCall(ToolCall {
                    id: format!("c{i}"),
                    name: "calculator".into(),
                    arguments: format!("{{\"expression\":\"{expr}\"}}"),
                    thought_signature: None,
                })));
            }
            events.push(Ok(StreamEvent::Done(FinishReason::ToolCalls)));
        } else {
            for piece in ["The answer ", "is ", "42."] {
                events.push(Ok(StreamEvent::TextDelta(piece.into())));
            }
            events.push(Ok(StreamEvent::Usage(Usage {
                input_tokens: 100,
                cached_input_tokens: 0,
                output_tokens: 3,
            })));
            events.push(Ok(StreamEvent::Done(FinishReason::Stop)));
        }
        Ok(Box::pin(stream::iter(events)))
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

async fn fresh_pg(admin: &str) -> Option<String> {
    let pool = sqlx::PgPool::connect(admin).await.ok()?;
    let name = format!("sparky_bench_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&pool)
        .await
        .ok()?;
    let (base, _) = admin.rsplit_once('/')?;
    Some(format!("{base}/{name}"))
}

fn input(key: &SessionKey, text: &str) -> Input {
    Input {
        key: key.clone(),
        user: "bench".into(),
        event_id: None,
        action: InputAction::Message {
            text: text.into(),
            mode: None,
        },
    }
}

async fn measure(agent: &Agent, label: &str, text: &str, n: usize) {
    let key = SessionKey::new(
        "bench",
        "w",
        "c",
        format!("{label}-{}", uuid::Uuid::new_v4().simple()),
    );
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let sink = CollectSink::default();
        let t = Instant::now();
        agent.handle(input(&key, text), &sink).await.expect("turn");
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "{label:<28} n={n:<5} p50={:>8.2} ms  p99={:>8.2} ms",
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.99).as_secs_f64() * 1e3
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        let admin = std::env::var("SPARKY_TEST_DATABASE_URL")
            .or_else(|_| std::env::var("DATABASE_URL"))
            .ok();
        let backend = match admin {
            Some(a) => match fresh_pg(&a).await {
                Some(url) => {
                    env.insert("DATABASE_URL".into(), url);
                    env.insert("SPARKY_DATABASE__MAX_CONNECTIONS".into(), "64".into());
                    "postgres"
                }
                None => panic!("could not create a benchmark database on {a}"),
            },
            None => {
                env.insert(
                    "SPARKY_DATABASE__SQLITE_PATH".into(),
                    dir.path().join("bench.db").display().to_string(),
                );
                "sqlite"
            }
        };
        // The limits are for people, not for the benchmark.
        for k in ["USER", "CHANNEL"] {
            env.insert(
                format!("SPARKY_LIMITS__TURNS_PER_{k}_PER_MINUTE"),
                "100000000".into(),
            );
        }
        env.insert(
            "SPARKY_LIMITS__TOOL_EXECUTIONS_PER_MINUTE".into(),
            "100000000".into(),
        );
        let config = Config::load(None, &env).expect("config");
        let store = sparky::store::connect(&config).await.expect("store");
        let project = store
            .create_project(
                &sparky::project::Workspace::new("bench", "w"),
                "bench",
                Edition::Nec2023,
            )
            .await
            .expect("project");
        store
            .bind_channel("bench", "w", "c", project.id)
            .await
            .expect("bind");
        let tools = Arc::new(sparky::tools::default_registry(100_000_000));
        let agent = Arc::new(Agent::new(
            store,
            Some(Arc::new(Instant0)),
            tools,
            config.agent.clone(),
            &config.limits,
        ));
        println!("agent core overhead per turn ({backend} store, instant provider)");
        measure(&agent, "text turn", "hello", 500).await;
        measure(&agent, "turn with two tool calls", "tools please", 300).await;

        let sessions = 1000usize;
        let t = Instant::now();
        let mut tasks = Vec::with_capacity(sessions);
        for i in 0..sessions {
            let agent = agent.clone();
            tasks.push(tokio::spawn(async move {
                let key = SessionKey::new("bench", "w", "c", format!("conc-{i}"));
                let sink = CollectSink::default();
                agent
                    .handle(input(&key, "hello"), &sink)
                    .await
                    .expect("turn");
            }));
        }
        for task in tasks {
            task.await.expect("task");
        }
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{sessions} concurrent sessions: {:.2} s, {:.0} turns/s",
            secs,
            sessions as f64 / secs
        );
    });
}
