//! Store latency: append a message, load a 50-message window, claim a pending action.
//!
//! `cargo bench --bench store`. SQLite always runs (a temporary file); Postgres runs when
//! `SPARKY_TEST_DATABASE_URL` or `DATABASE_URL` is set, in a fresh database that is dropped
//! afterwards. Prints p50/p99 per operation and backend.

use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use sparky::config::ConfirmPolicy;
use sparky::core::session::{Mode, SessionKey};
use sparky::llm::{ChatMessage, ToolCall};
use sparky::store::{
    ActionItem, ConfirmRule, NewMessage, NewPendingAction, PendingState, PostgresStore,
    SqliteStore, Store,
};
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, Executor};

const WARMUP: usize = 50;
const APPENDS: usize = 2000;
const WINDOWS: usize = 2000;
const CLAIMS: usize = 1000;
const HISTORY: usize = 200;

struct Row {
    backend: &'static str,
    operation: &'static str,
    n: usize,
    p50: Duration,
    p99: Duration,
    mean: Duration,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

async fn measure<F, Fut>(backend: &'static str, operation: &'static str, n: usize, mut f: F) -> Row
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = ()>,
{
    for i in 0..WARMUP {
        f(n + i).await;
    }
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let start = Instant::now();
        f(i).await;
        samples.push(start.elapsed());
    }
    samples.sort();
    let total: Duration = samples.iter().sum();
    Row {
        backend,
        operation,
        n,
        p50: percentile(&samples, 50.0),
        p99: percentile(&samples, 99.0),
        mean: total / u32::try_from(n.max(1)).unwrap_or(u32::MAX),
    }
}

fn message(i: usize) -> NewMessage {
    let message = if i.is_multiple_of(2) {
        ChatMessage::user(format!(
            "Message {i}: add a 20 A circuit for the garage receptacles to LP-1, 12 AWG copper \
             in 3/4 EMT, about 85 feet from the panel. What is the voltage drop?"
        ))
    } else {
        ChatMessage::Assistant {
            text: format!("Turn {i}: proposing the change below."),
            tool_calls: vec![ToolCall {
                id: format!("call_{i}"),
                name: "add_circuit".to_string(),
                arguments: r#"{"panel":"LP-1","number":12,"breaker":20,"load_va":1440}"#
                    .to_string(),
                thought_signature: None,
            }],
            thought_signature: None,
        }
    };
    sparky::core::history::new_message(&message, Some("U123".to_string()), Some(format!("Ev{i}")))
}

fn pending(id: String, session_id: i64) -> NewPendingAction {
    let now = Utc::now();
    NewPendingAction {
        id,
        session_id,
        rule: ConfirmRule {
            policy: ConfirmPolicy::Requester,
            requester: "U123".to_string(),
        },
        calls: vec![ToolCall {
            id: "call_1".to_string(),
            name: "add_circuit".to_string(),
            arguments: r#"{"panel":"LP-1","number":12}"#.to_string(),
            thought_signature: None,
        }
        .into()],
        prior_results: Vec::new(),
        items: vec![ActionItem {
            call_id: "call_1".to_string(),
            tool: "add_circuit".to_string(),
            args: serde_json::json!({"panel": "LP-1", "number": 12}),
            summary: "Add circuit 12 to LP-1".to_string(),
            details: vec!["LP-1 load after: 14.2 kVA".to_string()],
            plan: Default::default(),
        }],
        created_at: now,
        expires_at: now + chrono::Duration::hours(24),
        project_id: None,
        planned_version: None,
        origin: Default::default(),
    }
}

async fn run_backend(backend: &'static str, store: Arc<dyn Store>) -> Vec<Row> {
    let mut rows = Vec::new();
    let key = SessionKey::new("bench", "local", "general", "append");
    let session = store
        .open_session(&key, Mode::General, None)
        .await
        .expect("open session");
    let s = session.id;
    rows.push(
        measure(backend, "append message", APPENDS, |i| {
            let store = store.clone();
            async move {
                store.append_message(s, &message(i)).await.expect("append");
            }
        })
        .await,
    );

    let key = SessionKey::new("bench", "local", "general", "window");
    let session = store
        .open_session(&key, Mode::General, None)
        .await
        .expect("open session");
    let w = session.id;
    for i in 0..HISTORY {
        store.append_message(w, &message(i)).await.expect("fill");
    }
    rows.push(
        measure(backend, "load 50-message window", WINDOWS, |_| {
            let store = store.clone();
            async move {
                let got = store.recent_messages(w, 0, 50).await.expect("window");
                assert_eq!(got.len(), 50);
            }
        })
        .await,
    );

    let key = SessionKey::new("bench", "local", "general", "claim");
    let session = store
        .open_session(&key, Mode::General, None)
        .await
        .expect("open session");
    let c = session.id;
    // Each sample claims a fresh action; creating it is not timed.
    let mut ids = Vec::with_capacity(CLAIMS + WARMUP);
    for i in 0..CLAIMS + WARMUP {
        ids.push(format!("bench-{i}"));
    }
    let mut durations = Vec::with_capacity(CLAIMS);
    for (i, id) in ids.iter().enumerate() {
        store
            .create_pending(&pending(id.clone(), c))
            .await
            .expect("create pending");
        let start = Instant::now();
        let won = store
            .transition_pending(
                id,
                PendingState::Pending,
                PendingState::Confirmed,
                Some("U123"),
                Utc::now(),
            )
            .await
            .expect("transition");
        let elapsed = start.elapsed();
        assert!(won.is_some());
        if i >= WARMUP {
            durations.push(elapsed);
        }
    }
    durations.sort();
    let total: Duration = durations.iter().sum();
    rows.push(Row {
        backend,
        operation: "claim pending action",
        n: durations.len(),
        p50: percentile(&durations, 50.0),
        p99: percentile(&durations, 99.0),
        mean: total / u32::try_from(durations.len().max(1)).unwrap_or(u32::MAX),
    });
    rows
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

fn print(rows: &[Row]) {
    println!();
    println!(
        "{:<9} {:<24} {:>6} {:>11} {:>11} {:>11}",
        "backend", "operation", "n", "p50", "p99", "mean"
    );
    println!("{}", "-".repeat(77));
    for r in rows {
        println!(
            "{:<9} {:<24} {:>6} {:>11} {:>11} {:>11}",
            r.backend,
            r.operation,
            r.n,
            ms(r.p50),
            ms(r.p99),
            ms(r.mean)
        );
    }
}

/// A fresh database on the server at `url`; `None` (using `url` as is) when it cannot create one.
async fn fresh_pg_database(url: &str) -> Option<(PgConnectOptions, PgConnectOptions, String)> {
    let base = PgConnectOptions::from_str(url).ok()?;
    let admin = base.clone().database("postgres");
    let name = format!("sparky_bench_{}", uuid::Uuid::new_v4().simple());
    let mut conn = admin.connect().await.ok()?;
    conn.execute(format!("CREATE DATABASE {name}").as_str())
        .await
        .ok()?;
    let _ = conn.close().await;
    Some((base.database(&name), admin, name))
}

#[tokio::main]
async fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    let mut rows = Vec::new();

    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = SqliteStore::open(&dir.path().join("bench.db"))
        .await
        .expect("open sqlite");
    rows.extend(run_backend("sqlite", Arc::new(sqlite.clone())).await);
    sqlite.close().await;

    let url = std::env::var("SPARKY_TEST_DATABASE_URL")
        .ok()
        .or_else(|| std::env::var("DATABASE_URL").ok())
        .filter(|u| !u.trim().is_empty());
    let mut note = None;
    match url {
        Some(url) => match fresh_pg_database(&url).await {
            Some((options, admin, name)) => {
                let pg = PostgresStore::connect_with(options, 10)
                    .await
                    .expect("connect postgres");
                rows.extend(run_backend("postgres", Arc::new(pg.clone())).await);
                pg.close().await;
                if let Ok(mut conn) = admin.connect().await {
                    let _ = conn
                        .execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
                        .await;
                }
            }
            None => {
                let pg = PostgresStore::connect(&url, 10)
                    .await
                    .expect("connect postgres");
                rows.extend(run_backend("postgres", Arc::new(pg)).await);
                note = Some(
                    "postgres: could not create a scratch database; ran in the URL's database",
                );
            }
        },
        None => {
            note = Some(
                "postgres skipped: set SPARKY_TEST_DATABASE_URL or DATABASE_URL \
                 (e.g. `source .ci/pg.sh && pg_start`) to include it",
            )
        }
    }
    print(&rows);
    if let Some(note) = note {
        println!("\nnote: {note}");
    }
}
