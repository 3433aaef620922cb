//! The agent core over real HTTP: Sparky's own time per turn, throughput with 1,000
//! concurrent sessions and peak memory, against an OpenAI-compatible Chat Completions server
//! that answers at once. See docs/core_bench.md for the figures.
//!
//! The turn measured is a question answered with two read tool calls
//! (`calculate_voltage_drop` with free inputs and `describe_panel` on the bound project) and a
//! final answer: two model calls, history carried from turn to turn.
//!
//! ```sh
//! cargo bench --bench core_http                       # SQLite, and Postgres when
//!                                                     # SPARKY_TEST_DATABASE_URL is set
//! cargo bench --bench core_http -- --store postgres --base-url http://127.0.0.1:8000/v1
//! ```
//!
//! Options: `--store sqlite|postgres|both`, `--base-url URL` (another server; by default the
//! bench starts its own fake as a child process), `--turns N` (sequential turns timed, 300),
//! `--sessions N` (1,000), `--rounds N` (turns per session, 5), `--connections N` (database
//! pool, 10 as shipped), `--round-trips-only`, `--trace-round-trips` (the round-trip pass only,
//! printing what the client sent in each round trip), `--model-ms N` (the fake waits N ms
//! before each answer), `--realistic` (only what a person meets: a 300 ms model, 50 threads
//! asking at once, 3 questions each; first visible sign, turn time, peak memory, database
//! connections).
//!
//! The bench is an alarm: it exits with an error when Sparky's own time p50 is more than twice
//! the committed baseline (`BASELINE_P50_MS`).
//!
//! Sparky's own time is the turn's wall time minus the time the fake spent answering (it
//! reports its busy time at `GET /stats`); with another server nothing is subtracted. Database
//! round trips are counted by a TCP relay between the store and Postgres (every request the
//! client sends after the server's last answer is one round trip), in a separate pass so the
//! relay's own latency is not in the timings; on SQLite, where there is no network, the
//! statements sqlx executes are counted instead. The sequential pass also says where a turn's
//! time went: each statement's time as sqlx measures it, and the model calls' time as the core
//! measures it (its `sparky_model_seconds` metric).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use sparky::config::Config;
use sparky::core::session::SessionKey;
use sparky::core::{Agent, CollectSink, Effect, EffectSink, Input, InputAction};
use sparky::nec::units::{
    Amps, ConductorSize, Edition, Feet, Material, Phase, TempRating, VoltAmperes, Volts,
};
use sparky::project::{CircuitSpec, PanelSpec};
use sparky::store::Store;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tracing_subscriber::layer::SubscriberExt;

// The allocator of the `sparky` binary, so the figures are the binary's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// ----------------------------------------------------------------------------------------
// The fake Chat Completions server (runs in a child process: its CPU and memory are not
// Sparky's).

#[derive(Default)]
struct FakeStats {
    requests: AtomicU64,
    busy_ns: AtomicU64,
    body_bytes: AtomicU64,
}

/// The two tool calls, streamed the way OpenAI does: id and name first, arguments in pieces.
fn tool_call_stream() -> Bytes {
    let calls = [
        (
            "call_vd",
            "calculate_voltage_drop",
            r#"{"voltage":240,"phase":1,"current":24,"length":150,"size":"10"}"#,
        ),
        ("call_panel", "describe_panel", r#"{"panel":"LP-1"}"#),
    ];
    let mut out = String::new();
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        let v = serde_json::json!({
            "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0,
            "model": "bench", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
        });
        format!("data: {v}\n\n")
    };
    out.push_str(&chunk(serde_json::json!({"role": "assistant"}), None));
    for (i, (id, name, args)) in calls.iter().enumerate() {
        out.push_str(&chunk(
            serde_json::json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                "function": {"name": name, "arguments": ""}}]}),
            None,
        ));
        let (a, b) = args.split_at(args.len() / 2);
        for piece in [a, b] {
            out.push_str(&chunk(
                serde_json::json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                None,
            ));
        }
    }
    out.push_str(&chunk(serde_json::json!({}), Some("tool_calls")));
    out.push_str(&usage_chunk());
    out.push_str("data: [DONE]\n\n");
    Bytes::from(out)
}

fn answer_stream() -> Bytes {
    let mut out = String::new();
    for piece in [
        "The drop is 3.6 % ",
        "on 10 AWG copper; ",
        "LP-1 has room for the load.",
    ] {
        let v = serde_json::json!({
            "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0,
            "model": "bench", "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]
        });
        out.push_str(&format!("data: {v}\n\n"));
    }
    let v = serde_json::json!({
        "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0,
        "model": "bench", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    });
    out.push_str(&format!("data: {v}\n\n"));
    out.push_str(&usage_chunk());
    out.push_str("data: [DONE]\n\n");
    Bytes::from(out)
}

fn usage_chunk() -> String {
    let v = serde_json::json!({
        "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": "bench",
        "choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020}
    });
    format!("data: {v}\n\n")
}

struct Fake {
    stats: FakeStats,
    /// How long each answer waits before its first byte (a model's time to answer).
    model_delay: Duration,
    tools: Bytes,
    answer: Bytes,
}

/// Tool calls when the conversation ends with the person's message, the answer when it ends
/// with tool results (the last `"role"` of the request body says which).
async fn completions(State(fake): State<Arc<Fake>>, body: Bytes) -> Response {
    let t = Instant::now();
    let after_tools = last_role(&body) == Some(b"tool".as_slice());
    let reply = if after_tools {
        fake.answer.clone()
    } else {
        fake.tools.clone()
    };
    if !fake.model_delay.is_zero() {
        tokio::time::sleep(fake.model_delay).await;
    }
    fake.stats.requests.fetch_add(1, Ordering::Relaxed);
    fake.stats
        .body_bytes
        .fetch_add(body.len() as u64, Ordering::Relaxed);
    fake.stats
        .busy_ns
        .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(reply))
        .unwrap_or_default()
}

fn last_role(body: &[u8]) -> Option<&[u8]> {
    let needle = b"\"role\":\"";
    let at = body.windows(needle.len()).rposition(|w| w == needle)? + needle.len();
    let rest = &body[at..];
    let end = rest.iter().position(|b| *b == b'"')?;
    Some(&rest[..end])
}

async fn stats(State(fake): State<Arc<Fake>>) -> String {
    format!(
        "{} {} {}",
        fake.stats.requests.load(Ordering::Relaxed),
        fake.stats.busy_ns.load(Ordering::Relaxed),
        fake.stats.body_bytes.load(Ordering::Relaxed)
    )
}

fn run_fake_server(model_delay: Duration) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("fake runtime");
    rt.block_on(async {
        let fake = Arc::new(Fake {
            stats: FakeStats::default(),
            model_delay,
            tools: tool_call_stream(),
            answer: answer_stream(),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(completions))
            .route("/stats", get(stats))
            .with_state(fake);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        println!("listening http://{addr}/v1");
        axum::serve(listener, app).await.expect("serve");
    });
}

/// The fake in a child process (this same binary with `--fake-server`), killed on drop.
struct FakeProcess {
    child: Child,
    base_url: String,
}

impl FakeProcess {
    fn start(model_ms: u64) -> Self {
        let exe = std::env::current_exe().expect("own path");
        let mut child = Command::new(exe)
            .arg("--fake-server")
            .args(["--model-ms", &model_ms.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the fake server");
        let out = child.stdout.take().expect("fake stdout");
        let mut line = String::new();
        BufReader::new(out).read_line(&mut line).expect("fake line");
        let base_url = line
            .trim()
            .strip_prefix("listening ")
            .expect("fake address")
            .to_string();
        Self { child, base_url }
    }
}

impl Drop for FakeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Requests answered, nanoseconds the fake spent answering and request body bytes received,
/// if the server reports them.
async fn fake_busy(
    client: &reqwest::Client,
    stats_url: &Option<String>,
) -> Option<(u64, u64, u64)> {
    let url = stats_url.as_ref()?;
    let text = client.get(url).send().await.ok()?.text().await.ok()?;
    let mut parts = text.split_whitespace().map(str::parse::<u64>);
    Some((
        parts.next()?.ok()?,
        parts.next()?.ok()?,
        parts.next()?.ok()?,
    ))
}

// ----------------------------------------------------------------------------------------
// Counting database round trips.

/// Per statement (the start of its SQL, as sqlx summarises it): how many ran and their time
/// in nanoseconds, as sqlx measures it (from sending the statement to its last row read).
static STATEMENT_TIMES: std::sync::Mutex<BTreeMap<String, (u64, u64)>> =
    std::sync::Mutex::new(BTreeMap::new());

/// Reads sqlx's timing of a statement from its event.
#[derive(Default)]
struct StatementEvent {
    secs: f64,
    summary: String,
}

impl tracing::field::Visit for StatementEvent {
    fn record_f64(&mut self, field: &tracing::field::Field, value: f64) {
        if field.name() == "elapsed_secs" {
            self.secs = value;
        }
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "summary" {
            self.summary = value.to_string();
        }
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "summary" {
            self.summary = format!("{value:?}");
        }
    }
}

/// Counts the statements sqlx executes (its `sqlx::query` events) and keeps their times.
struct StatementCounter {
    count: Arc<AtomicU64>,
    on: Arc<AtomicBool>,
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for StatementCounter {
    fn register_callsite(
        &self,
        meta: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        if meta.target() == "sqlx::query" {
            tracing::subscriber::Interest::always()
        } else {
            tracing::subscriber::Interest::never()
        }
    }
    fn enabled(
        &self,
        meta: &tracing::Metadata<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        meta.target() == "sqlx::query"
    }
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if event.metadata().target() == "sqlx::query" && self.on.load(Ordering::Relaxed) {
            self.count.fetch_add(1, Ordering::Relaxed);
            let mut seen = StatementEvent::default();
            event.record(&mut seen);
            if let Ok(mut times) = STATEMENT_TIMES.lock() {
                let slot = times.entry(seen.summary).or_default();
                slot.0 += 1;
                slot.1 += (seen.secs * 1e9) as u64;
            }
        }
    }
}

/// What the client sent in each round trip, when the relay is asked to keep it: the message
/// types of the Postgres frontend protocol, with the SQL of a `Parse` or `Query` and, for a
/// `Bind`, the SQL of the statement it executes.
type TripLog = Arc<std::sync::Mutex<Vec<Vec<String>>>>;

/// Reads the frontend messages of one connection as they pass (best effort: a connection
/// that switches to TLS is not read).
#[derive(Default)]
struct FrontendReader {
    buf: Vec<u8>,
    started: bool,
    broken: bool,
    /// Prepared statement name -> its SQL.
    statements: std::collections::HashMap<String, String>,
}

fn cstr(b: &[u8]) -> (String, &[u8]) {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    (
        String::from_utf8_lossy(&b[..end]).into_owned(),
        b.get(end + 1..).unwrap_or(&[]),
    )
}

fn short_sql(sql: &str) -> String {
    let one: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.len() > 110 {
        format!(
            "{}...",
            &one[..one.char_indices().nth(110).map_or(one.len(), |(i, _)| i)]
        )
    } else {
        one
    }
}

impl FrontendReader {
    /// Labels of the complete messages in `bytes` (and in what was left from before).
    fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        if self.broken {
            return out;
        }
        self.buf.extend_from_slice(bytes);
        loop {
            if !self.started {
                if self.buf.len() < 8 {
                    break;
                }
                let len = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]])
                    as usize;
                let code = u32::from_be_bytes([self.buf[4], self.buf[5], self.buf[6], self.buf[7]]);
                if self.buf.len() < len {
                    break;
                }
                self.buf.drain(..len);
                if code == 80_877_103 {
                    out.push("SSLRequest".into());
                } else {
                    out.push("Startup".into());
                    self.started = true;
                }
                continue;
            }
            if self.buf.len() < 5 {
                break;
            }
            let tag = self.buf[0] as char;
            let len =
                u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]) as usize;
            if len < 4 {
                self.broken = true;
                break;
            }
            if self.buf.len() < len + 1 {
                break;
            }
            let body: Vec<u8> = self.buf[5..len + 1].to_vec();
            self.buf.drain(..len + 1);
            out.push(match tag {
                'Q' => format!("Query[{}]", short_sql(&cstr(&body).0)),
                'P' => {
                    let (name, rest) = cstr(&body);
                    let (sql, _) = cstr(rest);
                    self.statements.insert(name, sql.clone());
                    format!("Parse[{}]", short_sql(&sql))
                }
                'B' => {
                    let (_, rest) = cstr(&body);
                    let (name, _) = cstr(rest);
                    let sql = self
                        .statements
                        .get(&name)
                        .map(String::as_str)
                        .unwrap_or("unnamed");
                    format!("Bind[{}]", short_sql(sql))
                }
                'E' => "Execute".into(),
                'D' => "Describe".into(),
                'C' => "Close".into(),
                'S' => "Sync".into(),
                'H' => "Flush".into(),
                'X' => "Terminate".into(),
                'p' => "Password".into(),
                other => format!("'{other}'"),
            });
        }
        out
    }
}

/// A TCP relay to Postgres that counts round trips: a client write that follows a server
/// answer (or opens the connection) starts a new one. With `log`, what each round trip sent
/// is kept too.
async fn counting_relay(upstream: SocketAddr, trips: Arc<AtomicU64>, log: TripLog) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("relay bind");
    let addr = listener.local_addr().expect("relay addr");
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let trips = trips.clone();
            let log = log.clone();
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
                    return;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                // true while the last bytes seen went server -> client.
                let answered = Arc::new(AtomicBool::new(true));
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let a = answered.clone();
                let up = async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    let mut reader = FrontendReader::default();
                    loop {
                        let n = match cr.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        let sent = reader.feed(&buf[..n]);
                        {
                            let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
                            if a.swap(false, Ordering::AcqRel) {
                                trips.fetch_add(1, Ordering::Relaxed);
                                log.push(Vec::new());
                            }
                            if let Some(last) = log.last_mut() {
                                last.extend(sent);
                            }
                        }
                        if sw.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                };
                let down = async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        let n = match sr.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        answered.store(true, Ordering::Release);
                        if cw.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                };
                tokio::join!(up, down);
            });
        }
    });
    addr
}

// ----------------------------------------------------------------------------------------
// The bench.

struct Args {
    store: String,
    base_url: Option<String>,
    turns: usize,
    sessions: usize,
    rounds: usize,
    connections: u32,
    round_trips_only: bool,
    trace_round_trips: bool,
    /// Milliseconds the own fake waits before each answer.
    model_ms: u64,
    /// Only the realistic pass: a slow model and every session asking at once.
    realistic: bool,
}

fn parse_args() -> Args {
    let mut args = Args {
        store: "both".into(),
        base_url: None,
        turns: 300,
        sessions: 1000,
        rounds: 5,
        connections: 10,
        round_trips_only: false,
        trace_round_trips: false,
        model_ms: 0,
        realistic: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_default();
        match a.as_str() {
            "--store" => args.store = value(),
            "--base-url" => args.base_url = Some(value()),
            "--turns" => args.turns = value().parse().unwrap_or(args.turns),
            "--sessions" => args.sessions = value().parse().unwrap_or(args.sessions),
            "--rounds" => args.rounds = value().parse().unwrap_or(args.rounds),
            "--connections" => args.connections = value().parse().unwrap_or(args.connections),
            "--round-trips-only" => args.round_trips_only = true,
            "--model-ms" => args.model_ms = value().parse().unwrap_or(args.model_ms),
            "--realistic" => args.realistic = true,
            "--trace-round-trips" => {
                args.round_trips_only = true;
                args.trace_round_trips = true;
            }
            // `cargo bench` passes --bench; anything else is ignored too.
            _ => {}
        }
    }
    if args.realistic {
        // A model that takes 300 ms a call and 50 threads asking at once, unless told otherwise.
        if args.model_ms == 0 {
            args.model_ms = 300;
        }
        if !std::env::args().any(|a| a == "--sessions") {
            args.sessions = 50;
        }
        if !std::env::args().any(|a| a == "--rounds") {
            args.rounds = 3;
        }
    }
    args
}

/// Prints what the counted turns sent, round trip by round trip, with how often each kind
/// of round trip came per turn.
fn print_trips(log: &TripLog, from: usize, turns: u64) {
    let log = log.lock().unwrap_or_else(|e| e.into_inner());
    let trips = &log[from.min(log.len())..];
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    for t in trips {
        *kinds.entry(t.join(" + ")).or_default() += 1;
    }
    let mut kinds: Vec<(String, u64)> = kinds.into_iter().collect();
    kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    println!("round trips of {turns} turns by what the client sent (per turn | message):");
    for (k, n) in kinds {
        println!("{:6.1} | {k}", n as f64 / turns as f64);
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Resets the peak RSS so the throughput run's peak is its own.
fn reset_hwm() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

async fn fresh_pg(admin: &str) -> String {
    let pool = sqlx::PgPool::connect(admin)
        .await
        .expect("admin connection");
    let name = format!("sparky_core_bench_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&pool)
        .await
        .expect("create database");
    let (base, _) = admin.rsplit_once('/').expect("database url");
    format!("{base}/{name}")
}

async fn drop_pg(admin: &str, url: &str) {
    let Some((_, name)) = url.rsplit_once('/') else {
        return;
    };
    if let Ok(pool) = sqlx::PgPool::connect(admin).await {
        let dropped = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .execute(&pool)
            .await;
        if let Err(e) = dropped {
            eprintln!("could not drop the bench database {name}: {e}");
        }
        pool.close().await;
    }
}

fn input(key: &SessionKey, text: &str) -> Input {
    Input {
        key: key.clone(),
        user: "U1".into(),
        event_id: None,
        action: InputAction::Message {
            text: text.into(),
            mode: None,
        },
    }
}

const QUESTION: &str =
    "What is the voltage drop of 24 A over 150 ft of 10 AWG at 240 V, and can LP-1 take it?";

struct Setup {
    agent: Arc<Agent>,
    store: Arc<dyn Store>,
}

async fn setup(
    database_url: Option<&str>,
    dir: &std::path::Path,
    base_url: &str,
    connections: u32,
) -> Setup {
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    match database_url {
        Some(url) => {
            env.insert("DATABASE_URL".into(), url.into());
        }
        None => {
            env.insert(
                "SPARKY_DATABASE__SQLITE_PATH".into(),
                dir.join("bench.db").display().to_string(),
            );
        }
    }
    env.insert(
        "SPARKY_DATABASE__MAX_CONNECTIONS".into(),
        connections.to_string(),
    );
    env.insert("SPARKY_LLM__PROVIDER".into(), "openai".into());
    env.insert("SPARKY_LLM__OPENAI__BASE_URL".into(), base_url.into());
    env.insert("SPARKY_LLM__OPENAI__MODEL".into(), "bench".into());
    env.insert("OPENAI_API_KEY".into(), "sk-bench".into());
    // The per-person limits are for people, not for the benchmark.
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
    let store = sparky::app::connect_store(&config).await.expect("store");
    let project = store
        .create_project(
            &sparky::project::Workspace::new("bench", "w"),
            "bench",
            Edition::Nec2023,
        )
        .await
        .expect("project");
    let panel = store
        .add_panel(
            project.id,
            &PanelSpec {
                name: "LP-1".into(),
                voltage: Volts(208.0),
                phase: Phase::Three,
                bus_rating: Amps(225.0),
                main_breaker: Some(Amps(200.0)),
                interrupting_rating_ka: Some(22.0),
                fed_from: None,
                spaces: 42,
                location: String::new(),
            },
        )
        .await
        .expect("panel");
    for k in 0..12 {
        store
            .add_circuit(
                panel.id,
                &CircuitSpec {
                    number: 1 + 2 * k,
                    poles: 1,
                    description: format!("receptacles {k}"),
                    load_va: VoltAmperes(900.0 + 50.0 * f64::from(k)),
                    continuous: k % 3 == 0,
                    breaker: Amps(20.0),
                    conductor_size: "12".parse::<ConductorSize>().ok(),
                    material: Material::Copper,
                    insulation: TempRating::C75,
                    length: Some(Feet(40.0 + 5.0 * f64::from(k))),
                    conduit: "3/4 EMT".into(),
                    motor: None,
                    appliance: None,
                },
            )
            .await
            .expect("circuit");
    }
    for c in 0..50 {
        // Every session's channel is bound, as a team's project channels are.
        store
            .bind_channel("bench", "w", &format!("c{c}"), project.id)
            .await
            .expect("bind");
    }
    let provider = sparky::llm::resilient::build_provider(&config);
    assert!(provider.is_some(), "the OpenAI provider is configured");
    let tools = Arc::new(sparky::tools::default_registry(
        config.limits.tool_executions_per_minute,
    ));
    let agent = Agent::new(
        store.clone(),
        provider,
        tools,
        config.agent.clone(),
        &config.limits,
    )
    .with_model_settings(sparky::core::ModelSettings::of(&config.llm));
    Setup {
        agent: Arc::new(agent),
        store,
    }
}

/// Checks the turn did what it is measured for: both tools ran and the answer arrived.
fn check_turn(effects: &[Effect]) {
    let text = effects
        .iter()
        .any(|e| matches!(e, Effect::Text { text, .. } if text.contains("LP-1 has room")));
    let errors: Vec<&Effect> = effects
        .iter()
        .filter(|e| matches!(e, Effect::Error { .. }))
        .collect();
    assert!(text && errors.is_empty(), "unexpected turn: {effects:?}");
}

async fn one_turn(agent: &Agent, key: &SessionKey) {
    let sink = CollectSink::default();
    agent
        .handle(input(key, QUESTION), &sink)
        .await
        .expect("turn");
    check_turn(&sink.take());
}

/// Records when the first effect of a turn reached the platform side: the first thing the
/// person sees.
#[derive(Default)]
struct TimedSink {
    first: std::sync::OnceLock<Instant>,
    inner: CollectSink,
}

#[async_trait::async_trait]
impl EffectSink for TimedSink {
    async fn emit(&self, effect: Effect) {
        let _ = self.first.set(Instant::now());
        self.inner.emit(effect).await;
    }
}

/// One turn: milliseconds to its first visible sign and to its end.
async fn timed_turn(agent: &Agent, key: &SessionKey) -> (f64, f64) {
    let sink = TimedSink::default();
    let t = Instant::now();
    agent
        .handle(input(key, QUESTION), &sink)
        .await
        .expect("turn");
    let turn = t.elapsed();
    check_turn(&sink.inner.take());
    let first = sink.first.get().map_or(turn, |f| f.duration_since(t));
    (first.as_secs_f64() * 1e3, turn.as_secs_f64() * 1e3)
}

/// What a person meets: a model taking `--model-ms` per call, `--sessions` threads asking at
/// once, `--rounds` questions each.
async fn realistic_pass(label: &str, database_url: Option<String>, base_url: &str, args: &Args) {
    let dir = tempfile::tempdir().expect("temp dir");
    let s = setup(
        database_url.as_deref(),
        dir.path(),
        base_url,
        args.connections,
    )
    .await;
    reset_hwm();
    let t = Instant::now();
    let mut tasks = Vec::with_capacity(args.sessions);
    for i in 0..args.sessions {
        let agent = s.agent.clone();
        let rounds = args.rounds;
        tasks.push(tokio::spawn(async move {
            let key = SessionKey::new("bench", "w", format!("c{}", i % 50), format!("real-{i}"));
            let mut times = Vec::with_capacity(rounds);
            for _ in 0..rounds {
                times.push(timed_turn(&agent, &key).await);
            }
            times
        }));
    }
    let (mut first, mut turn) = (Vec::new(), Vec::new());
    for task in tasks {
        for (f, w) in task.await.expect("session task") {
            first.push(f);
            turn.push(w);
        }
    }
    let secs = t.elapsed().as_secs_f64();
    first.sort_by(f64::total_cmp);
    turn.sort_by(f64::total_cmp);
    let connections = match &database_url {
        Some(url) => open_connections(url).await.to_string(),
        None => "one file".into(),
    };
    println!(
        "{label}: realistic, model {} ms a call, {} threads x {} turns in {:.1} s: first visible sign p50 {:.1} ms, p99 {:.1} ms; turn p50 {:.0} ms, p99 {:.0} ms; peak RSS {:.1} MiB; database connections open after the run {connections}",
        args.model_ms,
        args.sessions,
        args.rounds,
        secs,
        percentile(&first, 0.5),
        percentile(&first, 0.99),
        percentile(&turn, 0.5),
        percentile(&turn, 0.99),
        vm_hwm_kib() as f64 / 1024.0,
    );
}

/// Connections open to the database of `url`, this query's own not counted.
async fn open_connections(url: &str) -> i64 {
    let Ok(pool) = sqlx::PgPool::connect(url).await else {
        return -1;
    };
    let n: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()",
    )
    .fetch_one(&pool)
    .await
    .unwrap_or(0);
    pool.close().await;
    n - 1
}

/// Sparky's own time p50 per store in the last measured run (docs/core_bench.md). The bench is
/// an alarm, not a goal: it fails when a run's median is more than twice its baseline.
const BASELINE_P50_MS: [(&str, f64); 2] = [("sqlite", 2.23), ("postgres", 1.93)];

/// Set when a run's median went past twice its baseline.
static ALARM: AtomicBool = AtomicBool::new(false);

async fn bench_store(
    label: &str,
    database_url: Option<String>,
    base_url: &str,
    stats_url: &Option<String>,
    args: &Args,
    statements: &Arc<AtomicU64>,
    counting: &Arc<AtomicBool>,
) {
    if args.realistic {
        realistic_pass(label, database_url, base_url, args).await;
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let client = reqwest::Client::new();

    // Round trips per turn, in a pass of its own.
    {
        let trips = Arc::new(AtomicU64::new(0));
        let trip_log: TripLog = Arc::default();
        let url = match &database_url {
            Some(url) => {
                let (head, rest) = url.split_once("://").expect("database url");
                let (user, rest) = rest.rsplit_once('@').unwrap_or(("", rest));
                let (hostport, path) = rest.split_once('/').unwrap_or((rest, ""));
                let upstream: SocketAddr = tokio::net::lookup_host(hostport)
                    .await
                    .expect("postgres address (host:port)")
                    .next()
                    .expect("postgres address");
                let relay = counting_relay(upstream, trips.clone(), trip_log.clone()).await;
                let at = if user.is_empty() { "" } else { "@" };
                Some(format!("{head}://{user}{at}{relay}/{path}"))
            }
            None => None,
        };
        // One connection: after the first turn every statement is prepared on it, which is
        // the steady state of a pool of any size.
        let s = setup(url.as_deref(), dir.path(), base_url, 1).await;
        let key = SessionKey::new("bench", "w", "c0", "round-trips");
        for _ in 0..3 {
            one_turn(&s.agent, &key).await;
        }
        let n = 10u64;
        let trips0 = trips.load(Ordering::Relaxed);
        let logged0 = trip_log.lock().map_or(0, |l| l.len());
        statements.store(0, Ordering::Relaxed);
        counting.store(true, Ordering::Relaxed);
        for _ in 0..n {
            one_turn(&s.agent, &key).await;
        }
        counting.store(false, Ordering::Relaxed);
        let stmts = statements.load(Ordering::Relaxed) as f64 / n as f64;
        if database_url.is_some() {
            let rt = (trips.load(Ordering::Relaxed) - trips0) as f64 / n as f64;
            println!("{label}: {rt:.1} database round trips per turn ({stmts:.1} statements)");
            if args.trace_round_trips {
                print_trips(&trip_log, logged0, n);
            }
        } else {
            println!("{label}: {stmts:.1} statements per turn (no network: statements counted)");
        }
        drop(s);
    }
    if args.round_trips_only {
        return;
    }

    let url = match &database_url {
        Some(admin) => Some(fresh_pg(admin).await),
        None => None,
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let s = setup(url.as_deref(), dir.path(), base_url, args.connections).await;

    // Sequential turns: Sparky's own time.
    let key = SessionKey::new("bench", "w", "c1", "latency");
    for _ in 0..20 {
        one_turn(&s.agent, &key).await;
    }
    if let Ok(mut times) = STATEMENT_TIMES.lock() {
        times.clear();
    }
    let model_before = model_seconds();
    counting.store(true, Ordering::Relaxed);
    // The loop itself runs in a task on the runtime's workers, as a platform adapter's
    // handler does: a loop on the thread that started the runtime would add two wake-ups of
    // that thread (the turn's start and end) to every turn timed.
    let sequential = {
        let (agent, client, stats_url, turns) = (
            s.agent.clone(),
            client.clone(),
            stats_url.clone(),
            args.turns,
        );
        tokio::spawn(async move {
            let mut own = Vec::with_capacity(turns);
            let mut wall = Vec::with_capacity(turns);
            let (mut requests, mut body_bytes) = (0u64, 0u64);
            for i in 0..turns {
                // A fresh thread every 25 turns keeps the history at what a real thread carries.
                let key = SessionKey::new("bench", "w", "c1", format!("latency-{}", i / 25));
                let before = fake_busy(&client, &stats_url).await;
                // A task of its own, as the platform adapters run every input.
                let agent = agent.clone();
                let t = Instant::now();
                tokio::spawn(async move { one_turn(&agent, &key).await })
                    .await
                    .expect("turn task");
                let elapsed = t.elapsed().as_secs_f64() * 1e3;
                let after = fake_busy(&client, &stats_url).await;
                let server_ms = match (before, after) {
                    (Some((n0, a, bytes0)), Some((n1, b, bytes1))) => {
                        requests += n1 - n0;
                        body_bytes += bytes1 - bytes0;
                        (b - a) as f64 / 1e6
                    }
                    _ => 0.0,
                };
                wall.push(elapsed);
                own.push(elapsed - server_ms);
            }
            (own, wall, requests, body_bytes)
        })
    };
    let (mut own, mut wall, requests, body_bytes) = sequential.await.expect("sequential turns");
    counting.store(false, Ordering::Relaxed);
    print_time_spent(label, args.turns, model_seconds() - model_before);
    own.sort_by(f64::total_cmp);
    wall.sort_by(f64::total_cmp);
    println!(
        "{label}: turn with two tool calls, n={}: Sparky's own time p50 {:.2} ms, p99 {:.2} ms (wall p50 {:.2} ms, p99 {:.2} ms)",
        args.turns,
        percentile(&own, 0.5),
        percentile(&own, 0.99),
        percentile(&wall, 0.5),
        percentile(&wall, 0.99),
    );
    let p50 = percentile(&own, 0.5);
    let baseline = BASELINE_P50_MS.iter().find(|(store, _)| *store == label);
    if let (None, Some((_, base)), 0) = (&args.base_url, baseline, args.model_ms) {
        if p50 > 2.0 * base {
            eprintln!("{label}: ALARM: own time p50 {p50:.2} ms is more than twice the baseline {base:.2} ms");
            ALARM.store(true, Ordering::Relaxed);
        }
    }
    if requests > 0 {
        println!(
            "{label}: {:.1} model requests per turn, {:.1} KB request body on average",
            requests as f64 / args.turns as f64,
            body_bytes as f64 / requests as f64 / 1000.0
        );
    }

    // Throughput: sessions x rounds, history carried.
    reset_hwm();
    let hwm_before = vm_hwm_kib();
    let t = Instant::now();
    let mut tasks = Vec::with_capacity(args.sessions);
    for i in 0..args.sessions {
        let agent = s.agent.clone();
        let rounds = args.rounds;
        tasks.push(tokio::spawn(async move {
            let key = SessionKey::new("bench", "w", format!("c{}", i % 50), format!("conc-{i}"));
            for _ in 0..rounds {
                one_turn(&agent, &key).await;
            }
        }));
    }
    for task in tasks {
        task.await.expect("session task");
    }
    let secs = t.elapsed().as_secs_f64();
    let turns = args.sessions * args.rounds;
    println!(
        "{label}: {} sessions x {} turns: {:.2} s, {:.0} turns/s; peak RSS {:.1} MiB (before the run {:.1} MiB)",
        args.sessions,
        args.rounds,
        secs,
        turns as f64 / secs,
        vm_hwm_kib() as f64 / 1024.0,
        hwm_before as f64 / 1024.0,
    );
    drop(s.store);
    drop(s.agent);
    // Left behind, each run's database would be vacuumed under the next run.
    if let (Some(admin), Some(url)) = (&database_url, &url) {
        drop_pg(admin, url).await;
    }
}

/// Seconds spent in model calls so far, as the core's metrics count them.
fn model_seconds() -> f64 {
    use prometheus::core::Collector;
    sparky::telemetry::metrics()
        .model_seconds
        .collect()
        .iter()
        .flat_map(|family| family.get_metric().iter())
        .map(|m| m.get_histogram().get_sample_sum())
        .sum()
}

/// Where the sequential turns' time went: the statements (as sqlx times them) and the model
/// calls (as the core times them, the server's answer included).
fn print_time_spent(label: &str, turns: usize, model_secs: f64) {
    let per_turn = |ns: u64| ns as f64 / 1e6 / turns as f64;
    let Ok(times) = STATEMENT_TIMES.lock() else {
        return;
    };
    let (n, ns) = times
        .values()
        .fold((0, 0), |(n, ns), (k, t)| (n + k, ns + t));
    println!(
        "{label}: per turn, database statements {:.2} ms ({:.1} statements), model calls {:.2} ms",
        per_turn(ns),
        n as f64 / turns as f64,
        model_secs * 1e3 / turns as f64
    );
    for (sql, (k, t)) in times.iter() {
        println!(
            "{label}:   {:.3} ms per turn, {:.3} ms each, {:.2} per turn: {sql}",
            per_turn(*t),
            *t as f64 / 1e6 / *k as f64,
            *k as f64 / turns as f64
        );
    }
}

fn main() {
    let args = parse_args();
    if std::env::args().any(|a| a == "--fake-server") {
        run_fake_server(Duration::from_millis(args.model_ms));
        return;
    }
    let statements = Arc::new(AtomicU64::new(0));
    let counting = Arc::new(AtomicBool::new(false));
    let subscriber = tracing_subscriber::registry().with(StatementCounter {
        count: statements.clone(),
        on: counting.clone(),
    });
    tracing::subscriber::set_global_default(subscriber).expect("subscriber");

    let fake = args
        .base_url
        .is_none()
        .then(|| FakeProcess::start(args.model_ms));
    let base_url = args
        .base_url
        .clone()
        .or_else(|| fake.as_ref().map(|f| f.base_url.clone()))
        .expect("base url");
    let stats_url = fake.as_ref().map(|f| {
        format!(
            "{}/stats",
            f.base_url.trim_end_matches('/').trim_end_matches("/v1")
        )
    });

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let admin = std::env::var("SPARKY_TEST_DATABASE_URL")
            .or_else(|_| std::env::var("DATABASE_URL"))
            .ok();
        println!(
            "core over HTTP: server {base_url}{}, pool {} connections, {} cpus",
            if fake.is_some() {
                " (own fake, child process)"
            } else {
                ""
            },
            args.connections,
            std::thread::available_parallelism().map_or(0, |n| n.get()),
        );
        if matches!(args.store.as_str(), "sqlite" | "both") {
            bench_store(
                "sqlite",
                None,
                &base_url,
                &stats_url,
                &args,
                &statements,
                &counting,
            )
            .await;
        }
        if matches!(args.store.as_str(), "postgres" | "both") {
            match &admin {
                Some(a) => {
                    let url = fresh_pg(a).await;
                    bench_store(
                        "postgres",
                        Some(url.clone()),
                        &base_url,
                        &stats_url,
                        &args,
                        &statements,
                        &counting,
                    )
                    .await;
                    drop_pg(a, &url).await;
                }
                None => println!("postgres: skipped (set SPARKY_TEST_DATABASE_URL)"),
            }
        }
    });
    if ALARM.load(Ordering::Relaxed) {
        std::process::exit(1);
    }
}
