//! Fuzz targets for the signed HTTP endpoints themselves (Slack's events, commands and
//! interactivity router; Discord's interactions endpoint), over real HTTP on loopback, with a
//! real SQLite store, the fake platform API and the fake model behind them.
//!
//! Each case sends one body three ways: with a broken signature or timestamp (must be refused
//! with 401 and change nothing stored), validly signed with the test secret (must be answered
//! 2xx or 4xx, never 5xx or a panic), then the same signed request again, with or without an
//! unsigned retry header (a replay: 401, nothing stored). "Nothing stored" is SQLite's
//! `PRAGMA data_version` on a separate connection, read after every handler the request
//! started has finished.

use std::collections::{BTreeMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ed25519_dalek::Signer;
use proptest::prelude::*;
use serde_json::json;
use sqlx::{Connection, SqliteConnection};

use super::{cases, mutated, runner, seeds, Progress};
use crate::support::bot::Db;
use crate::support::fake_discord::{FakeDiscord, CHANNEL_ID, GUILD_ID, USER_ID};
use crate::support::fake_llm::{Dialect, FakeLlm};
use crate::support::fake_slack::{
    app_mention, signature, slash_command_form, thread_message, SlackBot, ALICE, CHANNEL,
    SIGNING_SECRET, TEAM,
};

/// How a request's signature or timestamp is broken.
#[derive(Debug, Clone, Copy)]
enum Forgery {
    NoHeaders,
    OtherSecret,
    FlippedSignature(usize),
    Stale(u32),
    Future(u32),
    GarbageTimestamp,
    BodyChangedAfterSigning,
    EmptySignature,
}

fn forgery() -> impl Strategy<Value = Forgery> {
    prop_oneof![
        Just(Forgery::NoHeaders),
        Just(Forgery::OtherSecret),
        any::<usize>().prop_map(Forgery::FlippedSignature),
        (0u32..100_000).prop_map(Forgery::Stale),
        (0u32..100_000).prop_map(Forgery::Future),
        Just(Forgery::GarbageTimestamp),
        Just(Forgery::BodyChangedAfterSigning),
        Just(Forgery::EmptySignature),
    ]
}

/// A timestamp outside the 300 s window, counted from now (not from the case's own
/// timestamp, which is up to 250 s old), with room for the seconds a case takes.
fn out_of_window(f: Forgery) -> i64 {
    match f {
        Forgery::Stale(by) => now() - 301 - i64::from(by),
        Forgery::Future(by) => now() + 330 + i64::from(by),
        _ => now(),
    }
}

/// Changes one hex digit of a signature (keeping it hex), so it no longer matches.
fn flip_hex(sig: &str, at: usize) -> String {
    let mut chars: Vec<char> = sig.chars().collect();
    let start = sig.find('=').map(|i| i + 1).unwrap_or(0);
    if chars.len() <= start {
        return format!("{sig}0");
    }
    let i = start + at % (chars.len() - start);
    chars[i] = if chars[i] == '0' { '1' } else { '0' };
    chars.into_iter().collect()
}

/// Reads whether anything was committed to the database since the last call.
struct Changes {
    conn: SqliteConnection,
    last: i64,
}

impl Changes {
    async fn open(path: &std::path::Path) -> Self {
        let url = format!("sqlite://{}", path.display());
        let mut conn = SqliteConnection::connect(&url).await.unwrap();
        let last = data_version(&mut conn).await;
        Self { conn, last }
    }

    /// Whether another connection committed since the previous call.
    async fn changed(&mut self) -> bool {
        let now = data_version(&mut self.conn).await;
        let changed = now != self.last;
        self.last = now;
        changed
    }
}

async fn data_version(conn: &mut SqliteConnection) -> i64 {
    sqlx::query_scalar::<_, i64>("PRAGMA data_version")
        .fetch_one(conn)
        .await
        .unwrap()
}

/// What a target remembers between cases.
struct Seen {
    changes: Changes,
    /// Signed requests sent so far (timestamp and body).
    sent: HashSet<u64>,
}

/// Waits until every handler the agent started has finished. The tracker itself says when
/// (a closed tracker's `wait` ends with its last task) instead of a poll that slept at least
/// a millisecond; closing does not stop spawning, and the tracker is reopened at once.
async fn settle(agent: &sparky::core::Agent) {
    let tasks = agent.tasks();
    if tasks.is_empty() {
        return;
    }
    tasks.close();
    let done = tokio::time::timeout(Duration::from_secs(30), tasks.wait()).await;
    tasks.reopen();
    assert!(done.is_ok(), "a handler ran for 30 s");
}

/// Names a signed request by its headers (the timestamp) and body.
fn fingerprint(r: &Request) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    r.headers
        .iter()
        .filter(|(k, _)| k.contains("timestamp"))
        .for_each(|(_, v)| v.hash(&mut h));
    r.body.hash(&mut h);
    h.finish()
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// A request as sent: headers and body.
#[derive(Clone)]
struct Request {
    path: &'static str,
    content_type: String,
    headers: Vec<(&'static str, String)>,
    /// Shared, not copied, between the three variants and the HTTP client.
    body: bytes::Bytes,
}

async fn send(http: &reqwest::Client, base: &str, r: &Request) -> (u16, String) {
    let mut req = http
        .post(format!("{base}{}", r.path))
        .header("content-type", r.content_type.as_str())
        .body(r.body.clone());
    for (k, v) in &r.headers {
        req = req.header(*k, v.as_str());
    }
    let resp = req.send().await.expect("endpoint reachable");
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap_or_default())
}

/// Sends the three variants of one case and checks the answers and the store.
async fn three_ways(
    http: &reqwest::Client,
    base: &str,
    agent: &sparky::core::Agent,
    seen: &tokio::sync::Mutex<Seen>,
    forged: Request,
    signed: Request,
    replay: Request,
) -> Result<(), TestCaseError> {
    let mut seen = seen.lock().await;
    let Seen { changes, sent } = &mut *seen;
    settle(agent).await;
    changes.changed().await;

    let (status, text) = send(http, base, &forged).await;
    prop_assert_eq!(status, 401, "a forged request was not refused: {}", text);
    settle(agent).await;
    prop_assert!(
        !changes.changed().await,
        "a forged request changed the store"
    );

    // The same (timestamp, body) may come up twice in a long run: the second is a replay.
    let fresh = sent.insert(fingerprint(&signed));
    let (status, text) = send(http, base, &signed).await;
    if fresh {
        prop_assert!(
            (200..500).contains(&status),
            "signed request answered {}: {}",
            status,
            text
        );
    } else {
        prop_assert_eq!(status, 401, "a repeated request was accepted: {}", text);
    }
    settle(agent).await;
    changes.changed().await;

    let (status, text) = send(http, base, &replay).await;
    prop_assert_eq!(status, 401, "a replay was accepted: {}", text);
    settle(agent).await;
    prop_assert!(!changes.changed().await, "a replay changed the store");
    Ok(())
}

fn slack_seeds() -> Vec<Vec<u8>> {
    let mut s = seeds("platforms/slack");
    let mention = app_mention(TEAM, CHANNEL, ALICE, "1700000001.000100", "hi", "EvF1");
    s.push(mention.to_string().into_bytes());
    let reply = thread_message(
        TEAM,
        CHANNEL,
        ALICE,
        "1700000001.000100",
        "1700000002.000100",
        "and 240 V?",
        "EvF2",
    );
    s.push(reply.to_string().into_bytes());
    s.push(slash_command_form(TEAM, CHANNEL, ALICE, "help", "tr1").into_bytes());
    s.push(slash_command_form(TEAM, CHANNEL, ALICE, "project members", "tr2").into_bytes());
    s.push(
        serde_urlencoded::to_string([(
            "payload",
            json!({"type": "block_actions", "team": {"id": TEAM}, "user": {"id": ALICE},
                   "actions": [{"action_id": "confirm:abc", "value": "x"}]})
            .to_string(),
        )])
        .unwrap_or_default()
        .into_bytes(),
    );
    s.push(b"ssl_check=1&token=x".to_vec());
    s
}

#[test]
fn fuzz_slack_signed_endpoint() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (bot, base) = rt.block_on(async {
        let bot = SlackBot::start(Db::Sqlite, "http").await;
        let poster = bot.serve_http().await;
        (bot, poster.url)
    });
    let db = bot.config.sqlite_file();
    let seen = tokio::sync::Mutex::new(Seen {
        changes: rt.block_on(Changes::open(&db)),
        sent: HashSet::new(),
    });
    let http = reqwest::Client::new();
    let counter = AtomicI64::new(0);
    let paths = ["/slack/events", "/slack/commands", "/slack/interactivity"];
    let types = [
        "application/json",
        "application/x-www-form-urlencoded",
        "text/plain",
        "",
    ];
    let strategy = (
        mutated(slack_seeds()),
        0..paths.len(),
        0..types.len(),
        forgery(),
        any::<bool>(),
    );
    let progress = Progress::new("fuzz_slack_signed_endpoint");
    runner(cases())
        .run(&strategy, |(body, path, ty, forgery, retry)| {
            progress.tick();
            let n = counter.fetch_add(1, Ordering::Relaxed);
            let body = bytes::Bytes::from(body);
            // Spread timestamps over the window so repeated bodies are rarely replays.
            let ts_n = now() - n % 250;
            let ts = ts_n.to_string();
            let path = paths[path];
            let content_type = if body.first() == Some(&b'{') && ty == 2 {
                types[0].to_string()
            } else {
                types[ty].to_string()
            };
            let sig = signature(SIGNING_SECRET, ts_n, &body);
            let signed = Request {
                path,
                content_type: content_type.clone(),
                headers: vec![
                    ("x-slack-request-timestamp", ts.clone()),
                    ("x-slack-signature", sig.clone()),
                ],
                body: body.clone(),
            };
            let (headers, forged_body) = match forgery {
                Forgery::NoHeaders => (vec![], body.clone()),
                Forgery::OtherSecret => (
                    vec![
                        ("x-slack-request-timestamp", ts.clone()),
                        (
                            "x-slack-signature",
                            signature("not-the-secret", ts_n, &body),
                        ),
                    ],
                    body.clone(),
                ),
                Forgery::FlippedSignature(at) => (
                    vec![
                        ("x-slack-request-timestamp", ts.clone()),
                        ("x-slack-signature", flip_hex(&sig, at)),
                    ],
                    body.clone(),
                ),
                Forgery::Stale(_) | Forgery::Future(_) => {
                    let t = out_of_window(forgery);
                    (
                        vec![
                            ("x-slack-request-timestamp", t.to_string()),
                            ("x-slack-signature", signature(SIGNING_SECRET, t, &body)),
                        ],
                        body.clone(),
                    )
                }
                Forgery::GarbageTimestamp => (
                    vec![
                        ("x-slack-request-timestamp", format!("{ts}x")),
                        ("x-slack-signature", sig.clone()),
                    ],
                    body.clone(),
                ),
                Forgery::BodyChangedAfterSigning => {
                    let mut b = body.to_vec();
                    b.push(b' ');
                    let b = bytes::Bytes::from(b);
                    (
                        vec![
                            ("x-slack-request-timestamp", ts.clone()),
                            ("x-slack-signature", sig.clone()),
                        ],
                        b,
                    )
                }
                Forgery::EmptySignature => (
                    vec![
                        ("x-slack-request-timestamp", ts.clone()),
                        ("x-slack-signature", "v0=".to_string()),
                    ],
                    body.clone(),
                ),
            };
            let forged = Request {
                path,
                content_type,
                headers,
                body: forged_body,
            };
            // Slack's retry header is not signed, so it cannot excuse a second copy.
            let mut replay = signed.clone();
            if retry {
                replay.headers.push(("x-slack-retry-num", "1".to_string()));
            }
            rt.block_on(three_ways(
                &http, &base, &bot.agent, &seen, forged, signed, replay,
            ))
        })
        .unwrap();
}

/// The Discord endpoint on a loopback port, with its agent (to wait for its handlers).
struct DiscordEndpoint {
    url: String,
    agent: Arc<sparky::core::Agent>,
    db: std::path::PathBuf,
    discord: FakeDiscord,
    _llm: FakeLlm,
    _dir: tempfile::TempDir,
}

fn discord_key() -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&[9u8; 32])
}

async fn discord_endpoint() -> DiscordEndpoint {
    sparky::llm::tls::install_default_crypto_provider();
    let discord = FakeDiscord::start().await;
    let llm = FakeLlm::start(Dialect::OpenAi).await;
    let dir = tempfile::tempdir().unwrap();
    let mut env: BTreeMap<String, String> = llm.env().into_iter().collect();
    env.extend(discord.env());
    env.insert("SPARKY_LLM__MAX_RETRIES".into(), "0".into());
    env.insert(
        "DISCORD_PUBLIC_KEY".into(),
        hex::encode(discord_key().verifying_key().to_bytes()),
    );
    env.insert(
        "SPARKY_DISCORD__INTERACTIONS_MAX_AGE_SECS".into(),
        "300".into(),
    );
    let db = dir.path().join("d.db");
    env.insert(
        "SPARKY_DATABASE__SQLITE_PATH".into(),
        db.display().to_string(),
    );
    let config = sparky::config::Config::load(None, &env).unwrap();
    let store = sparky::app::connect_store(&config).await.unwrap();
    let project = store
        .create_project(
            &sparky::project::Workspace::new("discord", GUILD_ID),
            "Shop",
            sparky::nec::units::Edition::Nec2023,
        )
        .await
        .unwrap();
    store
        .bind_channel("discord", GUILD_ID, CHANNEL_ID, project.id)
        .await
        .unwrap();
    let agent = Arc::new(sparky::core::Agent::new(
        store,
        sparky::llm::resilient::build_provider(&config),
        Arc::new(sparky::tools::default_registry(1000)),
        config.agent.clone(),
        &config.limits,
    ));
    let router = sparky::platforms::discord::interactions_router(agent.clone(), &config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    DiscordEndpoint {
        url: format!("http://{addr}"),
        agent,
        db,
        discord,
        _llm: llm,
        _dir: dir,
    }
}

#[test]
fn fuzz_discord_signed_endpoint() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ep = rt.block_on(discord_endpoint());
    let seen = tokio::sync::Mutex::new(Seen {
        changes: rt.block_on(Changes::open(&ep.db)),
        sent: HashSet::new(),
    });
    let http = reqwest::Client::new();
    let counter = AtomicI64::new(0);
    let mut s = seeds("platforms/discord");
    for opts in [
        json!([{"type": 1, "name": "ask", "options": [{"type": 3, "name": "question", "value": "what is 250.122?"}]}]),
        json!([{"type": 1, "name": "help"}]),
        json!([{"type": 1, "name": "project", "options": [{"type": 3, "name": "args", "value": "members"}]}]),
    ] {
        let (cmd, _) = ep.discord.command_payload(CHANNEL_ID, USER_ID, opts);
        s.push(cmd.to_string().into_bytes());
    }
    s.push(br#"{"type":1,"id":"1","application_id":"2","token":"t","version":1}"#.to_vec());
    let key = discord_key();
    let other = ed25519_dalek::SigningKey::from_bytes(&[1u8; 32]);
    let sign = |k: &ed25519_dalek::SigningKey, ts: &str, body: &[u8]| {
        let mut msg = ts.as_bytes().to_vec();
        msg.extend_from_slice(body);
        hex::encode(k.sign(&msg).to_bytes())
    };
    let path = sparky::platforms::discord::INTERACTIONS_PATH;
    let progress = Progress::new("fuzz_discord_signed_endpoint");
    runner(cases())
        .run(
            &(mutated(s), forgery(), any::<bool>()),
            |(body, forgery, upper)| {
                progress.tick();
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let body = bytes::Bytes::from(body);
                let ts_n = now() - n % 250;
                let ts = ts_n.to_string();
                let sig = sign(&key, &ts, &body);
                let signed = Request {
                    path,
                    content_type: "application/json".into(),
                    headers: vec![
                        ("x-signature-ed25519", sig.clone()),
                        ("x-signature-timestamp", ts.clone()),
                    ],
                    body: body.clone(),
                };
                let with = |sig: String, ts: String| {
                    vec![("x-signature-ed25519", sig), ("x-signature-timestamp", ts)]
                };
                let (headers, forged_body) = match forgery {
                    Forgery::NoHeaders => (vec![], body.clone()),
                    Forgery::OtherSecret => {
                        (with(sign(&other, &ts, &body), ts.clone()), body.clone())
                    }
                    Forgery::FlippedSignature(at) => {
                        (with(flip_hex(&sig, at), ts.clone()), body.clone())
                    }
                    Forgery::Stale(_) | Forgery::Future(_) => {
                        let t = out_of_window(forgery).to_string();
                        (with(sign(&key, &t, &body), t), body.clone())
                    }
                    Forgery::GarbageTimestamp => {
                        // Signed over the garbage, so only the timestamp check can refuse it.
                        let t = format!("{ts}x");
                        (with(sign(&key, &t, &body), t), body.clone())
                    }
                    Forgery::BodyChangedAfterSigning => {
                        let mut b = body.to_vec();
                        b.push(b' ');
                        (with(sig.clone(), ts.clone()), bytes::Bytes::from(b))
                    }
                    Forgery::EmptySignature => (with(String::new(), ts.clone()), body.clone()),
                };
                let forged = Request {
                    path,
                    content_type: "application/json".into(),
                    headers,
                    body: forged_body,
                };
                // A replay with the signature's hex in capitals is the same request.
                let mut replay = signed.clone();
                if upper {
                    replay.headers[0].1 = sig.to_uppercase();
                }
                rt.block_on(three_ways(
                    &http, &ep.url, &ep.agent, &seen, forged, signed, replay,
                ))
            },
        )
        .unwrap();
}
