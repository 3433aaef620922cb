//! Many threads at once: `THREADS` (default 200) conversations start together against a fake
//! OpenAI-compatible model that takes `MODEL_MS` (default 2000) per call, Postgres with
//! `database.max_connections = MAX_CONNECTIONS` (default 10). Prints the wall time for all of them, when each thread's
//! model call started and when its answer was complete, the first sign's latency, and the
//! database transactions per turn (from `pg_stat_database`).
//!
//! `SPARKY_TEST_DATABASE_URL=postgres://... cargo bench --bench threads` (a fresh database,
//! dropped afterwards).

#[path = "../tests/it/support/fake_llm.rs"]
mod fake_llm;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use fake_llm::{Dialect, FakeLlm, Reply};
use sparky::config::Config;
use sparky::core::session::SessionKey;
use sparky::core::{Agent, Effect, EffectSink, Input, InputAction};

#[derive(Default)]
struct TimedSink(Mutex<Vec<(Instant, Effect)>>);

#[async_trait]
impl EffectSink for TimedSink {
    async fn emit(&self, effect: Effect) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((Instant::now(), effect));
    }
}

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn pct(v: &[Duration], p: usize) -> Duration {
    v.get((v.len() * p / 100).min(v.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default()
}

async fn commits(admin: &sqlx::PgPool, database: &str) -> i64 {
    // The statistics are sent by each backend when it goes idle; a moment lets them land.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let _ = sqlx::query("SELECT pg_stat_clear_snapshot()")
        .execute(admin)
        .await;
    sqlx::query_scalar("SELECT xact_commit FROM pg_stat_database WHERE datname = $1")
        .bind(database)
        .fetch_one(admin)
        .await
        .unwrap_or(0)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let Ok(admin_url) = std::env::var("SPARKY_TEST_DATABASE_URL") else {
        println!("threads: set SPARKY_TEST_DATABASE_URL (or run bash .ci/bench threads)");
        return;
    };
    let threads = setting("THREADS", 200) as usize;
    let model = Duration::from_millis(setting("MODEL_MS", 2000));
    let pool = setting("MAX_CONNECTIONS", 10).to_string();
    sparky::llm::tls::install_default_crypto_provider();
    let admin = sqlx::PgPool::connect(&admin_url)
        .await
        .expect("the benchmark Postgres");
    let database = format!("sparky_bench_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE DATABASE {database}"))
        .execute(&admin)
        .await
        .expect("create the benchmark database");
    let url = match admin_url.rsplit_once('/') {
        Some((base, _)) => format!("{base}/{database}"),
        None => panic!("SPARKY_TEST_DATABASE_URL has no database part"),
    };

    let fake = FakeLlm::start(Dialect::OpenAi).await;
    fake.respond_with(Arc::new(move |_| Reply::PacedText {
        pieces: vec!["Working".into(), " - done.".into()],
        gap: model,
    }));
    let mut env: BTreeMap<String, String> = fake.env().into_iter().collect();
    for (k, v) in [
        ("DATABASE_URL", url.as_str()),
        ("SPARKY_DATABASE__MAX_CONNECTIONS", pool.as_str()),
        ("SPARKY_LLM__MAX_RETRIES", "0"),
        ("SPARKY_RAG__EMBEDDER", "none"),
        ("SPARKY_LIMITS__TURNS_PER_USER_PER_MINUTE", "100000"),
        ("SPARKY_LIMITS__TURNS_PER_CHANNEL_PER_MINUTE", "100000"),
    ] {
        env.insert(k.into(), v.into());
    }
    let config = Config::load(None, &env).expect("config");
    let store = sparky::app::connect_store(&config).await.expect("store");
    let agent = Arc::new(Agent::new(
        store.clone(),
        sparky::llm::resilient::build_provider(&config),
        Arc::new(sparky::tools::default_registry(100_000)),
        config.agent.clone(),
        &config.limits,
    ));

    let before = commits(&admin, &database).await;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..threads {
        let agent = agent.clone();
        tasks.push(tokio::spawn(async move {
            let sink = TimedSink::default();
            let input = Input {
                key: SessionKey::new("bench", "w", format!("c-{i}"), format!("t{i}")),
                user: format!("U{i}"),
                event_id: None,
                action: InputAction::Message {
                    text: "what size breaker?".into(),
                    mode: None,
                },
            };
            let result = agent.handle(input, &sink).await;
            (
                result,
                sink.0.into_inner().unwrap_or_else(|p| p.into_inner()),
            )
        }));
    }
    let (mut first, mut model_started, mut answered) = (Vec::new(), Vec::new(), Vec::new());
    let mut failed = 0;
    for t in tasks {
        let Ok((result, effects)) = t.await else {
            failed += 1;
            continue;
        };
        if result.is_err() {
            failed += 1;
        }
        let since = |at: Instant| at.duration_since(started);
        if let Some((at, _)) = effects.first() {
            first.push(since(*at));
        }
        if let Some((at, _)) = effects
            .iter()
            .find(|(_, e)| matches!(e, Effect::Delta { .. }))
        {
            model_started.push(since(*at));
        }
        match effects
            .iter()
            .rfind(|(_, e)| matches!(e, Effect::Text { .. }))
        {
            Some((at, _)) => answered.push(since(*at)),
            None => failed += 1,
        }
    }
    let wall = started.elapsed();
    let after = commits(&admin, &database).await;
    for v in [&mut first, &mut model_started, &mut answered] {
        v.sort();
    }
    println!(
        "threads: {threads} at once, model {model:?}, max_connections {pool}: wall {wall:.2?}, {failed} failed"
    );
    println!(
        "  first sign        p50 {:>9.2?}  p99 {:>9.2?}",
        pct(&first, 50),
        pct(&first, 99)
    );
    println!(
        "  model call start  p50 {:>9.2?}  p99 {:>9.2?}",
        pct(&model_started, 50),
        pct(&model_started, 99)
    );
    println!(
        "  answer complete   p50 {:>9.2?}  p99 {:>9.2?}",
        pct(&answered, 50),
        pct(&answered, 99)
    );
    println!(
        "  database transactions per turn: {:.1}",
        (after - before) as f64 / threads as f64
    );
    drop(agent);
    drop(store);
    let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)"))
        .execute(&admin)
        .await;
}
