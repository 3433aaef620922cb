//! The two-replica soak (`.ci/soak`; ignored by the default test command): two `sparky serve`
//! processes on one Postgres, Slack over signed HTTP and the Discord interactions endpoint
//! (Ed25519-signed), the fake Slack Web API, the fake Discord REST API and a fake
//! OpenAI-compatible model, all over real HTTP on loopback. It drives hundreds of threads
//! over both replicas, confirmation clicks delivered to both replicas at once, and a replica
//! killed with SIGKILL mid-turn and restarted; then it prints what came of it and fails if an
//! input was lost, a write ran twice or an action was left stuck.
//!
//! Sizes: `SOAK_THREADS` (default 300), `SOAK_TRIALS` (1000), `SOAK_KILL_THREADS` (100),
//! `SOAK_MODEL_MS` (2000), `SOAK_WAVE` (250 trials at once).

use crate::support;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ed25519_dalek::Signer;
use serde_json::{json, Value};
use sparky::nec::units::Edition;
use support::bot::fresh_postgres_url;
use support::fake_discord::{FakeDiscord, FakeMessage, CHANNEL_ID, GUILD_ID, USER_ID};
use support::fake_llm::{Dialect, FakeLlm, Reply};
use support::fake_slack::{
    app_mention, block_action, signature, FakeSlack, ALICE, APP_TOKEN, BOT_TOKEN, CHANNEL,
    SIGNING_SECRET, TEAM,
};

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn discord_key() -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&[7u8; 32])
}

/// The first word of `text` that starts with `prefix` (markers are letters and digits).
fn marker(text: &str, prefix: &str) -> Option<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| w.starts_with(prefix))
        .map(str::to_string)
}

/// The fake model: a question marked `soakqN` is answered "answer to soakqN" after the model's
/// latency; "add a task soaktaskN" calls the `create_task` write tool (so a confirmation card
/// appears); the turn after a tool result says "Done soaktaskN".
fn model(latency: Duration) -> support::fake_llm::Responder {
    Arc::new(move |request: &Value| {
        let messages = request["messages"].as_array().cloned().unwrap_or_default();
        let last = messages.last().cloned().unwrap_or(Value::Null);
        let whole = request["messages"].to_string();
        if last["role"] == "tool" {
            let task = marker(&whole, "soaktask").unwrap_or_default();
            return Reply::After(latency, Box::new(Reply::Text(format!("Done {task}."))));
        }
        let asked = last["content"].to_string();
        if let Some(task) = marker(&asked, "soaktask") {
            return Reply::After(
                latency,
                Box::new(Reply::ToolCalls(vec![(
                    "create_task".into(),
                    json!({ "title": task }),
                )])),
            );
        }
        let q = marker(&asked, "soakq").unwrap_or_else(|| "nothing".into());
        Reply::PacedText {
            pieces: vec!["Working".into(), format!(" - answer to {q}")],
            gap: latency,
        }
    })
}

/// One `sparky serve` process.
struct Replica {
    bin: std::path::PathBuf,
    name: &'static str,
    addr: SocketAddr,
    env: BTreeMap<String, String>,
    log: std::path::PathBuf,
    child: Option<tokio::process::Child>,
}

impl Replica {
    async fn start(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("replica log");
        let mut cmd = tokio::process::Command::new(&self.bin);
        cmd.arg("serve")
            .env_remove("DATABASE_URL")
            .env_remove("OPENAI_API_KEY")
            .envs(self.env.iter())
            .env("SPARKY_SERVER__BIND", self.addr.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true);
        self.child = Some(cmd.spawn().expect("spawn sparky serve"));
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let ready = http
                .get(format!("http://{}/readyz", self.addr))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ready {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "replica {} never became ready; see {}",
                self.name,
                self.log.display()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// SIGKILL: no drain, no lease released.
    async fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.start_kill();
            let _ = c.wait().await;
        }
    }

    fn base(&self) -> String {
        format!("http://{}", self.addr)
    }
}

fn free_addr() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

/// Posts a Slack request signed for `ts` (now when `None`; two deliveries of one body are
/// signed for different seconds, as a redelivery is); `None` when the replica is unreachable.
async fn slack_post(
    http: &reqwest::Client,
    base: &str,
    path: &str,
    content_type: &str,
    body: String,
    ts: Option<i64>,
) -> Option<u16> {
    let ts = ts.unwrap_or_else(|| chrono::Utc::now().timestamp());
    let sig = signature(SIGNING_SECRET, ts, body.as_bytes());
    let resp = http
        .post(format!("{base}{path}"))
        .header("content-type", content_type)
        .header("x-slack-request-timestamp", ts.to_string())
        .header("x-slack-signature", sig)
        .body(body)
        .send()
        .await
        .ok()?;
    Some(resp.status().as_u16())
}

async fn slack_event(http: &reqwest::Client, base: &str, payload: &Value) -> Option<u16> {
    slack_post(
        http,
        base,
        "/slack/events",
        "application/json",
        payload.to_string(),
        None,
    )
    .await
}

async fn slack_click(http: &reqwest::Client, base: &str, payload: &Value, ts: i64) -> Option<u16> {
    let body = serde_urlencoded::to_string([("payload", payload.to_string())]).ok()?;
    slack_post(
        http,
        base,
        "/slack/interactivity",
        "application/x-www-form-urlencoded",
        body,
        Some(ts),
    )
    .await
}

/// Posts an interaction to the Discord endpoint, signed as Discord signs it.
async fn discord_post(http: &reqwest::Client, base: &str, payload: &Value) -> Option<u16> {
    discord_post_at(http, base, payload, chrono::Utc::now().timestamp()).await
}

/// [`discord_post`] signed for the second `ts`.
async fn discord_post_at(
    http: &reqwest::Client,
    base: &str,
    payload: &Value,
    ts: i64,
) -> Option<u16> {
    let body = payload.to_string();
    let ts = ts.to_string();
    let sig = discord_key().sign(format!("{ts}{body}").as_bytes());
    let resp = http
        .post(format!(
            "{base}{}",
            sparky::platforms::discord::INTERACTIONS_PATH
        ))
        .header("content-type", "application/json")
        .header("x-signature-ed25519", hex::encode(sig.to_bytes()))
        .header("x-signature-timestamp", ts)
        .body(body)
        .send()
        .await
        .ok()?;
    Some(resp.status().as_u16())
}

fn ask_options(text: &str) -> Value {
    json!([{"type": 1, "name": "ask", "options": [{"type": 3, "name": "question", "value": text}]}])
}

/// Texts the fakes show: Slack sections (with the message's thread) and Discord contents.
fn visible(slack: &FakeSlack, discord: &FakeDiscord) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = slack
        .messages()
        .into_iter()
        .map(|m| {
            (
                m.thread_ts.clone().unwrap_or(m.ts.clone()),
                format!("{}\n{}", m.section_text(), m.text),
            )
        })
        .collect();
    out.extend(discord.messages().into_iter().map(|m| {
        (
            m.channel.clone(),
            format!("{}\n{}", m.content(), m.embed_text()),
        )
    }));
    out
}

/// Waits until every marker is visible (or its thread tells of an interruption); returns
/// when each was first seen, measured from its start.
async fn await_markers(
    slack: &FakeSlack,
    discord: &FakeDiscord,
    pending: &HashMap<String, (Instant, String)>,
    limit: Duration,
) -> (HashMap<String, Duration>, HashMap<String, Duration>) {
    let mut answered = HashMap::new();
    let mut interrupted = HashMap::new();
    let deadline = Instant::now() + limit;
    while answered.len() + interrupted.len() < pending.len() && Instant::now() < deadline {
        let shown = visible(slack, discord);
        let mut by_thread: HashMap<&str, Vec<&str>> = HashMap::new();
        for (thread, text) in &shown {
            by_thread.entry(thread).or_default().push(text);
        }
        for (m, (at, thread)) in pending {
            if answered.contains_key(m) || interrupted.contains_key(m) {
                continue;
            }
            let texts = by_thread.get(thread.as_str()).cloned().unwrap_or_default();
            let needle = format!("answer to {m}");
            if texts.iter().any(|t| t.contains(&needle)) {
                answered.insert(m.clone(), at.elapsed());
            } else if texts.iter().any(|t| t.contains("was interrupted")) {
                interrupted.insert(m.clone(), at.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (answered, interrupted)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The Discord thread started for the interaction `token` (the original response's id).
fn discord_thread(discord: &FakeDiscord, token: &str) -> Option<String> {
    let original = discord.interaction_messages(token).first()?.id.clone();
    discord.channel(&original).map(|_| original)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "the two-replica soak: run it with .ci/soak"]
async fn two_replicas_soak() {
    sparky::llm::tls::install_default_crypto_provider();
    let threads = setting("SOAK_THREADS", 300);
    let trials = setting("SOAK_TRIALS", 1000);
    let kill_threads = setting("SOAK_KILL_THREADS", 100);
    let wave = setting("SOAK_WAVE", 250).max(1);
    let latency = Duration::from_millis(setting("SOAK_MODEL_MS", 2000) as u64);

    let llm = FakeLlm::start(Dialect::OpenAi).await;
    llm.respond_with(model(latency));
    let slack = FakeSlack::start().await;
    let discord = FakeDiscord::start().await;
    let url = fresh_postgres_url().await;
    let logs = tempfile::tempdir().expect("log dir");

    let mut env: BTreeMap<String, String> = llm.env().into_iter().collect();
    env.extend(discord.env());
    for (k, v) in [
        ("DATABASE_URL", url.as_str()),
        ("SPARKY_LLM__MAX_RETRIES", "0"),
        ("SPARKY_LLM__REQUEST_TIMEOUT_SECS", "30"),
        ("SPARKY_RAG__EMBEDDER", "none"),
        ("SPARKY_LOG__FILTER", "warn"),
        ("SPARKY_SLACK__ENABLED", "true"),
        ("SPARKY_SLACK__TRANSPORT", "http"),
        ("SPARKY_SLACK__API_BASE_URL", &slack.api_url()),
        ("SLACK_BOT_TOKEN", BOT_TOKEN),
        ("SLACK_APP_TOKEN", APP_TOKEN),
        ("SLACK_SIGNING_SECRET", SIGNING_SECRET),
        (
            "DISCORD_PUBLIC_KEY",
            &hex::encode(discord_key().verifying_key().to_bytes()),
        ),
        ("SPARKY_DISCORD__INTERACTIONS_MAX_AGE_SECS", "60"),
        ("SPARKY_LIMITS__TURNS_PER_USER_PER_MINUTE", "100000"),
        ("SPARKY_LIMITS__TURNS_PER_CHANNEL_PER_MINUTE", "100000"),
        ("SPARKY_LIMITS__TOOL_EXECUTIONS_PER_MINUTE", "100000"),
        ("SPARKY_AGENT__LEASE_SECS", "6"),
        ("SPARKY_DATABASE__MAX_CONNECTIONS", "10"),
        ("SPARKY_SERVER__SHUTDOWN_GRACE_SECS", "5"),
    ] {
        env.insert(k.into(), v.into());
    }

    // The project both platforms' channels work on, made through the store (which migrates).
    {
        let config = sparky::config::Config::load(None, &env).expect("soak configuration");
        let store = sparky::app::connect_store(&config).await.expect("store");
        let p = store
            .create_project(
                &sparky::project::Workspace::new("slack", TEAM),
                "Shop",
                Edition::Nec2023,
            )
            .await
            .expect("project");
        store
            .bind_channel("slack", TEAM, CHANNEL, p.id)
            .await
            .expect("bind slack");
        let d = store
            .create_project(
                &sparky::project::Workspace::new("discord", GUILD_ID),
                "Shop",
                Edition::Nec2023,
            )
            .await
            .expect("project");
        store
            .bind_channel("discord", GUILD_ID, CHANNEL_ID, d.id)
            .await
            .expect("bind discord");
    }

    // A copy of the binary: a rebuild while the soak runs does not change what restarts.
    let bin = std::env::var("SOAK_SPARKY_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| {
            let copy = logs.path().join("sparky");
            std::fs::copy(env!("CARGO_BIN_EXE_sparky"), &copy).expect("copy the sparky binary");
            copy
        });
    let mut replicas = Vec::new();
    for name in ["a", "b"] {
        let mut r = Replica {
            bin: bin.clone(),
            name,
            addr: free_addr(),
            env: env.clone(),
            log: logs.path().join(format!("replica-{name}.log")),
            child: None,
        };
        r.start().await;
        replicas.push(r);
    }
    let bases: Vec<String> = replicas.iter().map(Replica::base).collect();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let started = Instant::now();

    // ----- 1. Threads over both replicas and both platforms -----
    let mut pending: HashMap<String, (Instant, String)> = HashMap::new();
    let mut sends = Vec::new();
    for i in 0..threads {
        let q = format!("soakq{i}");
        let base = bases[i % 2].clone();
        let http = http.clone();
        if i % 5 == 4 {
            let (payload, token) = discord.command_payload(
                CHANNEL_ID,
                USER_ID,
                ask_options(&format!("what size breaker? {q}")),
            );
            sends.push(tokio::spawn(async move {
                let at = Instant::now();
                let status = discord_post(&http, &base, &payload).await;
                (q, at, status, Err::<String, String>(token))
            }));
        } else {
            let ts = format!("1700{i:06}.000100");
            let payload = app_mention(
                TEAM,
                CHANNEL,
                ALICE,
                &ts,
                &format!("what size breaker? {q}"),
                &format!("EvSoakQ{i}"),
            );
            sends.push(tokio::spawn(async move {
                let at = Instant::now();
                let status = slack_event(&http, &base, &payload).await;
                (q, at, status, Ok::<String, String>(ts))
            }));
        }
    }
    let mut refused = 0usize;
    let mut discord_tokens = Vec::new();
    for s in sends {
        let (q, at, status, where_) = s.await.expect("send");
        if status != Some(200) {
            refused += 1;
            continue;
        }
        match where_ {
            Ok(ts) => {
                pending.insert(q, (at, ts));
            }
            Err(token) => discord_tokens.push((q, at, token)),
        }
    }
    // A Discord thread is known once the bot has made it.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !discord_tokens.is_empty() && Instant::now() < deadline {
        discord_tokens.retain(|(q, at, token)| match discord_thread(&discord, token) {
            Some(t) => {
                pending.insert(q.clone(), (*at, t));
                false
            }
            None => true,
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let no_thread = discord_tokens.len();
    let (answered, interrupted) =
        await_markers(&slack, &discord, &pending, Duration::from_secs(180)).await;
    let mut latencies: Vec<Duration> = answered.values().copied().collect();
    latencies.sort();
    let threads_lost = pending.len() - answered.len() - interrupted.len() + no_thread;
    let threads_wall = started.elapsed();
    eprintln!(
        "threads: {threads} sent ({refused} refused), {} answered, {} interrupted, {threads_lost} lost, \
         wall {threads_wall:.1?}, turn latency p50 {:.2?} p99 {:.2?}",
        answered.len(),
        interrupted.len(),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
    );

    // ----- 2. A replica killed with SIGKILL mid-turn, then restarted -----
    let kill_started = Instant::now();
    let mut kill_pending: HashMap<String, (Instant, String)> = HashMap::new();
    let mut sends = Vec::new();
    for i in 0..kill_threads {
        let q = format!("soakqk{i}");
        let ts = format!("1701{i:06}.000100");
        let payload = app_mention(
            TEAM,
            CHANNEL,
            ALICE,
            &ts,
            &format!("and the conductor? {q}"),
            &format!("EvSoakK{i}"),
        );
        let base = bases[i % 2].clone();
        let http = http.clone();
        sends.push(tokio::spawn(async move {
            let at = Instant::now();
            let status = slack_event(&http, &base, &payload).await;
            (q, at, status, ts)
        }));
    }
    // Mid-turn: every input is in, the model is still thinking.
    tokio::time::sleep(latency / 2).await;
    replicas[0].kill().await;
    let killed_at = Instant::now();
    let mut kill_refused = 0usize;
    for s in sends {
        let (q, at, status, ts) = s.await.expect("send");
        if status == Some(200) {
            kill_pending.insert(q, (at, ts));
        } else {
            // Slack retries what was not acknowledged; the load balancer sends it to the
            // other replica.
            kill_refused += 1;
        }
    }
    replicas[0].start().await;
    let restarted_after = killed_at.elapsed();
    let (k_answered, k_interrupted) =
        await_markers(&slack, &discord, &kill_pending, Duration::from_secs(120)).await;
    let kill_lost = kill_pending.len() - k_answered.len() - k_interrupted.len();
    eprintln!(
        "kill: {} accepted ({kill_refused} refused while down), {} answered, {} told interrupted, \
         {kill_lost} lost, restarted after {restarted_after:.1?}, settled in {:.1?}",
        kill_pending.len(),
        k_answered.len(),
        k_interrupted.len(),
        kill_started.elapsed()
    );

    // ----- 3. Confirmation trials: the same click delivered to both replicas at once -----
    let trials_started = Instant::now();
    let mut clicked = 0usize;
    let mut no_card = 0usize;
    let mut click_statuses: BTreeMap<String, usize> = BTreeMap::new();
    let mut first = 0;
    while first < trials {
        let last = (first + wave).min(trials);
        // Propose: each trial in its own thread.
        let mut slack_cards: Vec<(usize, String)> = Vec::new();
        let mut discord_cards: Vec<(usize, String)> = Vec::new();
        let mut sends = Vec::new();
        for i in first..last {
            let task = format!("soaktask{i}");
            let base = bases[i % 2].clone();
            let http = http.clone();
            if i % 5 == 4 {
                let (payload, token) = discord.command_payload(
                    CHANNEL_ID,
                    USER_ID,
                    ask_options(&format!("add a task {task}")),
                );
                discord_cards.push((i, token));
                sends.push(tokio::spawn(async move {
                    discord_post(&http, &base, &payload).await
                }));
            } else {
                let ts = format!("1702{i:06}.000100");
                let payload = app_mention(
                    TEAM,
                    CHANNEL,
                    ALICE,
                    &ts,
                    &format!("add a task {task}"),
                    &format!("EvSoakT{i}"),
                );
                slack_cards.push((i, ts));
                sends.push(tokio::spawn(async move {
                    slack_event(&http, &base, &payload).await
                }));
            }
        }
        for s in sends {
            let status = s.await.expect("send");
            assert_eq!(status, Some(200), "a proposal was refused");
        }
        // Wait for the cards, then click each on both replicas at once.
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut clicks = Vec::new();
        while (!slack_cards.is_empty() || !discord_cards.is_empty()) && Instant::now() < deadline {
            let now = chrono::Utc::now().timestamp();
            let messages = slack.messages();
            slack_cards.retain(|(i, ts)| {
                let card = messages
                    .iter()
                    .find(|m| m.thread_ts.as_deref() == Some(ts) && m.has_buttons());
                let Some(card) = card else { return true };
                let confirm = card.buttons()[0]["action_id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                // Odd trials: one click delivered twice. Even trials: a double click, two
                // clicks of the same button (each its own trigger), one to each replica.
                for (n, base) in bases.iter().enumerate() {
                    let trigger = if i % 2 == 1 {
                        format!("trig.{i}")
                    } else {
                        format!("trig.{i}.{n}")
                    };
                    let payload = block_action(TEAM, ALICE, card, &confirm, &trigger);
                    let (http, base) = (http.clone(), base.clone());
                    let ts = now - n as i64;
                    clicks.push(tokio::spawn(async move {
                        slack_click(&http, &base, &payload, ts).await
                    }));
                }
                false
            });
            discord_cards.retain(|(_, token)| {
                let Some(thread) = discord_thread(&discord, token) else {
                    return true;
                };
                let card: Option<FakeMessage> = discord
                    .messages_in(&thread)
                    .into_iter()
                    .find(|m| !m.buttons().is_empty());
                let Some(card) = card else { return true };
                let confirm = card.buttons()[0].0.clone();
                let (payload, _) = discord.click_payload(&card, &confirm, USER_ID);
                for (n, base) in bases.iter().enumerate() {
                    let (http, base, payload) = (http.clone(), base.clone(), payload.clone());
                    let ts = now - n as i64;
                    clicks.push(tokio::spawn(async move {
                        discord_post_at(&http, &base, &payload, ts).await
                    }));
                }
                false
            });
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        no_card += slack_cards.len() + discord_cards.len();
        for c in clicks {
            let status = c.await.expect("click");
            *click_statuses
                .entry(status.map_or("unreachable".into(), |s| s.to_string()))
                .or_default() += 1;
        }
        clicked += last - first - (slack_cards.len() + discord_cards.len());
        first = last;
    }

    // Every clicked action executed (or refused), and the turn after it ran.
    let admin = sqlx::PgPool::connect(&url).await.expect("soak database");
    let deadline = Instant::now() + Duration::from_secs(180);
    let executed = loop {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pending_actions WHERE state IN ('executed', 'cancelled', 'expired', 'outdated', 'superseded')",
        )
        .fetch_one(&admin)
        .await
        .expect("count actions");
        if n as usize >= clicked || Instant::now() > deadline {
            break n as usize;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // Let the turns after the clicks finish before counting what is left.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let inbox: i64 = sqlx::query_scalar("SELECT count(*) FROM session_inputs")
            .fetch_one(&admin)
            .await
            .expect("inbox");
        if inbox == 0 || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let trials_wall = trials_started.elapsed();
    let stuck: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pending_actions WHERE state IN ('pending', 'confirmed')",
    )
    .fetch_one(&admin)
    .await
    .expect("stuck");
    let twice_tasks: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT title FROM tasks GROUP BY project_id, title HAVING count(*) > 1) d",
    )
    .fetch_one(&admin)
    .await
    .expect("duplicate tasks");
    let twice_audit: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT action_id FROM tool_audit WHERE kind = 'execution' AND action_id IS NOT NULL \
         GROUP BY action_id, tool, args::text HAVING count(*) > 1) d",
    )
    .fetch_one(&admin)
    .await
    .expect("duplicate executions");
    let tasks_made: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks")
        .fetch_one(&admin)
        .await
        .expect("tasks");
    let inbox_left: i64 = sqlx::query_scalar("SELECT count(*) FROM session_inputs")
        .fetch_one(&admin)
        .await
        .expect("inbox");
    let turns: f64 =
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM messages WHERE role = 'assistant'")
            .fetch_one(&admin)
            .await
            .map(|n| n as f64)
            .unwrap_or(f64::NAN);
    eprintln!(
        "confirmations: {trials} trials, {clicked} clicked on both replicas, {no_card} without a card, \
         {executed} resolved, {tasks_made} tasks written, click answers {click_statuses:?}, wall {trials_wall:.1?}"
    );

    let inputs_lost = threads_lost + kill_lost + inbox_left as usize;
    let writes_twice = (twice_tasks + twice_audit) as usize;
    let total_turns = answered.len() + k_answered.len() + 2 * executed;
    println!("soak: two replicas, {:.1?} in all", started.elapsed());
    println!("turns completed:        {total_turns} (assistant messages stored: {turns})");
    println!("inputs lost:            {inputs_lost} (inbox rows left: {inbox_left})");
    println!("writes executed twice:  {writes_twice}");
    println!("actions left stuck:     {stuck}");
    println!(
        "turn latency:           p50 {:.2?}  p99 {:.2?}  ({} turns, model {latency:?})",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.len()
    );
    for r in &mut replicas {
        r.kill().await;
    }
    if inputs_lost + writes_twice + stuck as usize + no_card > 0 {
        for r in &replicas {
            eprintln!("--- {} ---", r.log.display());
            let log = std::fs::read_to_string(&r.log).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            for l in tail.into_iter().rev() {
                eprintln!("{l}");
            }
        }
    }
    assert_eq!(inputs_lost, 0, "inputs lost");
    assert_eq!(writes_twice, 0, "writes executed twice");
    assert_eq!(stuck, 0, "actions left stuck");
    assert_eq!(no_card, 0, "proposals without a confirmation card");
}
