//! The HTTP interactions endpoint: Ed25519 signatures checked with serenity's `Verifier`,
//! replays refused, PING answered, and commands and clicks handled as over the gateway
//! (acknowledged in the HTTP response, then answered through the fake Discord's REST API).

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use ed25519_dalek::Signer;
use serde_json::{json, Value};
use sparky::config::Config;
use sparky::core::Agent;
use sparky::nec::units::Edition;
use sparky::store::Store;
use support::bot::{fresh_postgres_url, Db};
use support::fake_discord::{FakeDiscord, CHANNEL_ID, GUILD_ID, OTHER_USER_ID, USER_ID};
use support::fake_llm::{Dialect, FakeLlm, Reply};

/// A second server, whose names the first one's people must never be offered.
const OTHER_GUILD: &str = "1457468924290660000";

fn key() -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&[9u8; 32])
}

struct Endpoint {
    url: String,
    discord: FakeDiscord,
    llm: FakeLlm,
    store: Arc<dyn Store>,
    project: i64,
    http: reqwest::Client,
    config: Config,
    /// The agent of every replica serving the endpoint (the first is `url`'s).
    agents: std::sync::Mutex<Vec<Arc<Agent>>>,
    _dir: tempfile::TempDir,
}

/// Serves the interactions endpoint of `config` on a free port; returns its URL and agent.
async fn serve(config: &Config, store: Arc<dyn Store>) -> (String, Arc<Agent>) {
    let agent = Arc::new(Agent::new(
        store,
        sparky::llm::resilient::build_provider(config),
        Arc::new(sparky::tools::default_registry(1000)),
        config.agent.clone(),
        &config.limits,
    ));
    let router = sparky::platforms::discord::interactions_router(agent.clone(), config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let url = format!(
        "http://{addr}{}",
        sparky::platforms::discord::INTERACTIONS_PATH
    );
    (url, agent)
}

async fn endpoint() -> Endpoint {
    endpoint_on(Db::Sqlite).await
}

/// [`endpoint`] on the store `db`.
async fn endpoint_on(db: Db) -> Endpoint {
    sparky::llm::tls::install_default_crypto_provider();
    let discord = FakeDiscord::start().await;
    let llm = FakeLlm::start(Dialect::OpenAi).await;
    let dir = tempfile::tempdir().unwrap();
    let mut env: BTreeMap<String, String> = llm.env().into_iter().collect();
    env.extend(discord.env());
    env.insert("SPARKY_LLM__MAX_RETRIES".into(), "0".into());
    env.insert(
        "DISCORD_PUBLIC_KEY".into(),
        hex::encode(key().verifying_key().to_bytes()),
    );
    env.insert(
        "SPARKY_DISCORD__INTERACTIONS_MAX_AGE_SECS".into(),
        "60".into(),
    );
    match db {
        Db::Sqlite => {
            env.insert(
                "SPARKY_DATABASE__SQLITE_PATH".into(),
                dir.path().join("t.db").display().to_string(),
            );
        }
        Db::Postgres => {
            env.insert("DATABASE_URL".into(), fresh_postgres_url().await);
        }
    }
    let config = Config::load(None, &env).unwrap();
    let store = sparky::app::connect_store(&config).await.unwrap();
    let project = store
        .create_project(
            &sparky::project::Workspace::new("discord", GUILD_ID),
            "Shop",
            Edition::Nec2023,
        )
        .await
        .unwrap();
    store
        .bind_channel("discord", GUILD_ID, CHANNEL_ID, project.id)
        .await
        .unwrap();
    let (url, agent) = serve(&config, store.clone()).await;
    Endpoint {
        url,
        discord,
        llm,
        store,
        project: project.id,
        http: reqwest::Client::new(),
        config,
        agents: std::sync::Mutex::new(vec![agent]),
        _dir: dir,
    }
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

impl Endpoint {
    /// Another replica: its own store connection, agent and router on the same database.
    async fn replica(&self) -> String {
        let store = sparky::app::connect_store(&self.config).await.unwrap();
        let (url, agent) = serve(&self.config, store).await;
        self.agents.lock().unwrap().push(agent);
        url
    }

    /// Waits until no handler or turn of any replica is in flight, so a test can check that
    /// something did not happen once the work it could have come from has ended.
    async fn settled(&self) {
        let agents = self.agents.lock().unwrap().clone();
        let agents: Vec<&Agent> = agents.iter().map(|a| a.as_ref()).collect();
        support::settled::settled(&agents).await;
    }

    /// POSTs `body` signed for `timestamp` by `signer`.
    async fn post(
        &self,
        body: &Value,
        timestamp: i64,
        signer: &ed25519_dalek::SigningKey,
    ) -> (u16, Value) {
        let body = body.to_string();
        let ts = timestamp.to_string();
        let sig = signer.sign(format!("{ts}{body}").as_bytes());
        let resp = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("x-signature-ed25519", hex::encode(sig.to_bytes()))
            .header("x-signature-timestamp", ts)
            .body(body)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let v = resp.json::<Value>().await.unwrap_or(Value::Null);
        (status, v)
    }
}

fn ping() -> Value {
    json!({"type": 1, "id": "1457600000000000001", "application_id": support::fake_discord::BOT_ID,
           "token": "ping-token", "version": 1})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ping_is_answered_with_pong_when_signed() {
    let e = endpoint().await;
    let (status, body) = e.post(&ping(), now(), &key()).await;
    assert_eq!(status, 200);
    assert_eq!(body, json!({"type": 1}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn invalid_signatures_are_rejected_with_401() {
    let e = endpoint().await;
    // Signed by another key.
    let other = ed25519_dalek::SigningKey::from_bytes(&[1u8; 32]);
    assert_eq!(e.post(&ping(), now(), &other).await.0, 401);
    // Body changed after signing.
    let ts = now().to_string();
    let sig = key().sign(format!("{ts}{}", ping()).as_bytes());
    let resp = e
        .http
        .post(&e.url)
        .header("x-signature-ed25519", hex::encode(sig.to_bytes()))
        .header("x-signature-timestamp", &ts)
        .body(json!({"type": 2}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    // No signature at all.
    let resp = e
        .http
        .post(&e.url)
        .body(ping().to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    // Garbage signature.
    let resp = e
        .http
        .post(&e.url)
        .header("x-signature-ed25519", "zz")
        .header("x-signature-timestamp", &ts)
        .body(ping().to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replayed_requests_with_old_timestamps_are_rejected() {
    let e = endpoint().await;
    // A correctly signed request captured 10 minutes ago (max age is 60 s here).
    assert_eq!(e.post(&ping(), now() - 600, &key()).await.0, 401);
    assert_eq!(e.post(&ping(), now() + 600, &key()).await.0, 401);
    assert_eq!(e.post(&ping(), now() - 5, &key()).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_exact_replay_within_the_window_is_refused_and_runs_nothing() {
    let e = endpoint().await;
    e.llm.push(Reply::Text("Once.".into()));
    e.llm.push(Reply::Text("Twice.".into()));
    let opts = json!([{"type": 1, "name": "ask", "options": [{"type": 3, "name": "question", "value": "what is 250.122?"}]}]);
    let (cmd, _token) = e.discord.command_payload(CHANNEL_ID, USER_ID, opts);
    let body = cmd.to_string();
    let ts = now().to_string();
    let sig = key().sign(format!("{ts}{body}").as_bytes());
    let send = |url: String, sig: String| {
        let http = e.http.clone();
        let (ts, body) = (ts.clone(), body.clone());
        async move {
            http.post(url)
                .header("content-type", "application/json")
                .header("x-signature-ed25519", sig)
                .header("x-signature-timestamp", ts)
                .body(body)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(send(e.url.clone(), hex::encode(sig.to_bytes())).await, 200);
    // The captured request sent again, with its signature's hex in capitals, and to a second
    // replica of the endpoint on the same database.
    assert_eq!(send(e.url.clone(), hex::encode(sig.to_bytes())).await, 401);
    assert_eq!(
        send(e.url.clone(), hex::encode(sig.to_bytes()).to_uppercase()).await,
        401
    );
    let replica = e.replica().await;
    assert_eq!(send(replica, hex::encode(sig.to_bytes())).await, 401);
    for _ in 0..100 {
        if !e.llm.requests().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    e.settled().await;
    assert_eq!(e.llm.requests().len(), 1, "the command ran once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn commands_and_clicks_over_http_work_like_the_gateway() {
    let e = endpoint().await;
    e.llm.push(Reply::ToolCalls(vec![(
        "create_task".into(),
        json!({"title": "Bond the subpanel"}),
    )]));
    e.llm.push(Reply::Text("Added.".into()));
    let opts = json!([{"type": 1, "name": "ask", "options": [{"type": 3, "name": "question", "value": "add a task: bond the subpanel"}]}]);
    let (cmd, token) = e.discord.command_payload(CHANNEL_ID, USER_ID, opts);
    let (status, ack) = e.post(&cmd, now(), &key()).await;
    assert_eq!(
        (status, ack["type"].as_u64()),
        (200, Some(5)),
        "deferred in the HTTP response"
    );
    // The deferred response shows the question; a thread starts from it.
    e.discord
        .wait_until(10, "original response", |d| {
            !d.interaction_messages(&token).is_empty()
        })
        .await;
    let original = e.discord.interaction_messages(&token)[0].id.clone();
    e.discord
        .wait_until(10, "thread", |d| d.channel(&original).is_some())
        .await;
    let thread = original;
    e.discord
        .wait_until(15, "confirmation", |d| {
            d.messages_in(&thread)
                .iter()
                .any(|m| !m.buttons().is_empty())
        })
        .await;
    let conf = e
        .discord
        .messages_in(&thread)
        .into_iter()
        .find(|m| !m.buttons().is_empty())
        .unwrap();
    let confirm = conf.buttons()[0].0.clone();
    let (click, _) = e.discord.click_payload(&conf, &confirm, USER_ID);
    let (status, ack) = e.post(&click, now(), &key()).await;
    assert_eq!(
        (status, ack["type"].as_u64()),
        (200, Some(6)),
        "deferred update"
    );
    // The same click signed again (a new timestamp, so not a replay) is answered but
    // executes nothing more: the interaction id is de-duplicated.
    let (status, _) = e.post(&click, now() + 1, &key()).await;
    assert_eq!(status, 200);
    e.discord
        .wait_until(15, "outcome", |d| {
            d.message(&conf.id)
                .is_some_and(|m| m.content().contains("Confirmed"))
        })
        .await;
    e.discord
        .wait_until(10, "reply", |d| {
            d.messages_in(&thread)
                .iter()
                .any(|m| m.content() == "Added.")
        })
        .await;
    e.settled().await;
    assert_eq!(
        e.store.load_project(e.project).await.unwrap().tasks.len(),
        1
    );
    assert!(e
        .discord
        .message(&conf.id)
        .unwrap()
        .buttons()
        .iter()
        .all(|b| b.2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tool_command_runs_through_the_core_and_is_audited() {
    let e = endpoint().await;
    let opts = json!([{"type": 1, "name": "tool", "options": [
        {"type": 3, "name": "name", "value": "calculator"},
        {"type": 3, "name": "args", "value": "{\"expression\": \"6*7\"}"}
    ]}]);
    let (cmd, token) = e.discord.command_payload(CHANNEL_ID, USER_ID, opts);
    let (status, ack) = e.post(&cmd, now(), &key()).await;
    assert_eq!((status, ack["type"].as_u64()), (200, Some(5)));
    e.discord
        .wait_until(10, "original response", |d| {
            !d.interaction_messages(&token).is_empty()
        })
        .await;
    let thread = e.discord.interaction_messages(&token)[0].id.clone();
    e.discord
        .wait_until(15, "the result", |d| {
            d.messages_in(&thread)
                .iter()
                .any(|m| m.content().contains("42"))
        })
        .await;
    let key = sparky::core::session::SessionKey::new("discord", GUILD_ID, CHANNEL_ID, &thread);
    let session = e
        .store
        .open_session(&key, Default::default(), None)
        .await
        .unwrap();
    let audit = e.store.audit_for_session(session.id).await.unwrap();
    assert!(
        audit.iter().any(|a| a.entry.actor == USER_ID
            && a.entry.tool.as_deref() == Some("calculator")
            && a.entry.kind == sparky::store::AuditKind::Execution
            && !a.entry.is_error),
        "{audit:?}"
    );
}

/// An autocomplete interaction (type 4) with `options`, the one being typed marked `focused`
/// as in Discord's documented payload.
fn autocomplete_payload(e: &Endpoint, options: Value) -> Value {
    let (mut payload, _) = e.discord.command_payload(CHANNEL_ID, USER_ID, options);
    payload["type"] = json!(4);
    payload
}

fn choice_names(answer: &Value) -> Vec<String> {
    answer["data"]["choices"]
        .as_array()
        .map(|c| {
            c.iter()
                .map(|c| c["name"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn autocomplete_offers_only_the_callers_workspace_names_sqlite() {
    autocomplete_offers_only_the_callers_workspace_names(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn autocomplete_offers_only_the_callers_workspace_names_postgres() {
    autocomplete_offers_only_the_callers_workspace_names(Db::Postgres).await;
}

async fn autocomplete_offers_only_the_callers_workspace_names(db: Db) {
    use sparky::project::{MemberRole, Workspace};
    let e = endpoint_on(db).await;
    let ours = Workspace::new("discord", GUILD_ID);
    // The caller's own project, one only someone else holds a role in, and another server's.
    let mine = e
        .store
        .create_project(&ours, "Shopfront", Edition::Nec2023)
        .await
        .unwrap();
    e.store
        .set_member_role(mine.id, "discord", USER_ID, MemberRole::Editor)
        .await
        .unwrap();
    let theirs = e
        .store
        .create_project(&ours, "Shop annex", Edition::Nec2023)
        .await
        .unwrap();
    e.store
        .set_member_role(theirs.id, "discord", "someone-else", MemberRole::Owner)
        .await
        .unwrap();
    e.store
        .create_project(
            &Workspace::new("discord", OTHER_GUILD),
            "Shop elsewhere",
            Edition::Nec2023,
        )
        .await
        .unwrap();
    e.store
        .add_panel(e.project, &support::db::panel("LP-1"))
        .await
        .unwrap();

    let typed = |group: Option<&str>, sub: &str, option: &str, value: &str| {
        let focused = json!([{"type": 3, "name": option, "value": value, "focused": true}]);
        let sub = json!({"type": 1, "name": sub, "options": focused});
        match group {
            Some(g) => json!([{"type": 2, "name": g, "options": [sub]}]),
            None => json!([sub]),
        }
    };
    let (status, answer) = e
        .post(
            &autocomplete_payload(&e, typed(Some("project"), "use", "name", "sho")),
            now(),
            &key(),
        )
        .await;
    assert_eq!((status, answer["type"].as_u64()), (200, Some(8)));
    // "Shop" has no members yet (whoever binds it first claims it); "Shop annex" is someone
    // else's; "Shop elsewhere" belongs to another server.
    assert_eq!(choice_names(&answer), ["Shop", "Shopfront"]);

    // `audit` offers only the projects whose changes the caller may read (owner or editor):
    // not the unclaimed "Shop", not another server's "Shop elsewhere".
    let (_, answer) = e
        .post(
            &autocomplete_payload(&e, typed(None, "audit", "project", "SHOP")),
            now(),
            &key(),
        )
        .await;
    assert_eq!(choice_names(&answer), ["Shopfront"]);

    // Another server's member typing the same letters gets that server's project only.
    let (mut elsewhere, _) = e.discord.command_payload(
        CHANNEL_ID,
        USER_ID,
        typed(Some("project"), "use", "name", "shop"),
    );
    elsewhere["type"] = json!(4);
    elsewhere["guild_id"] = json!(OTHER_GUILD);
    let (_, answer) = e.post(&elsewhere, now(), &key()).await;
    assert_eq!(choice_names(&answer), ["Shop elsewhere"]);

    // At most 25 choices, as Discord requires.
    for i in 0..30 {
        e.store
            .create_project(&ours, &format!("Site {i:02}"), Edition::Nec2023)
            .await
            .unwrap();
    }
    let (_, answer) = e
        .post(
            &autocomplete_payload(&e, typed(Some("project"), "use", "name", "site")),
            now(),
            &key(),
        )
        .await;
    assert_eq!(choice_names(&answer).len(), 25);
    assert_eq!(choice_names(&answer)[0], "Site 00");

    let (_, answer) = e
        .post(
            &autocomplete_payload(&e, typed(None, "report", "panel", "lp")),
            now(),
            &key(),
        )
        .await;
    assert_eq!(choice_names(&answer), ["LP-1"]);

    let (_, answer) = e
        .post(
            &autocomplete_payload(&e, typed(None, "tool", "name", "voltage d")),
            now(),
            &key(),
        )
        .await;
    assert!(
        choice_names(&answer)
            .iter()
            .any(|n| n == "calculate_voltage_drop"),
        "{answer}"
    );

    // A state for `project set location`: shown by name, picked as its code.
    let set = json!([{"type": 2, "name": "project", "options": [{"type": 1, "name": "set", "options": [
        {"type": 3, "name": "what", "value": "location"},
        {"type": 3, "name": "value", "value": "washi", "focused": true}]}]}]);
    let (_, answer) = e.post(&autocomplete_payload(&e, set), now(), &key()).await;
    assert_eq!(answer["data"]["choices"][0]["name"], "Washington (WA)");
    assert_eq!(answer["data"]["choices"][0]["value"], "WA");
    assert_eq!(choice_names(&answer).len(), 1);

    // An option that names nothing Sparky offers gets an empty list.
    let (_, answer) = e
        .post(
            &autocomplete_payload(&e, typed(None, "ask", "question", "vol")),
            now(),
            &key(),
        )
        .await;
    assert_eq!(answer["data"]["choices"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn audit_is_answered_only_to_the_caller() {
    let e = endpoint().await;
    let audit = json!([{"type": 1, "name": "audit", "options": [{"type": 4, "name": "count", "value": 5}]}]);
    // Without a role the history is refused, privately.
    let (cmd, token) = e
        .discord
        .command_payload(CHANNEL_ID, USER_ID, audit.clone());
    let (status, ack) = e.post(&cmd, now(), &key()).await;
    assert_eq!(status, 200);
    assert_eq!(
        (ack["type"].as_u64(), ack["data"]["flags"].as_u64()),
        (Some(5), Some(64)),
        "deferred and ephemeral: {ack}"
    );
    e.discord
        .wait_until(10, "refusal", |d| {
            d.interaction_messages(&token)
                .iter()
                .any(|m| m.content().contains("owners and editors"))
        })
        .await;
    // An owner reads it; no thread is started and nothing is posted in the channel.
    e.store
        .set_member_role(
            e.project,
            "discord",
            USER_ID,
            sparky::project::MemberRole::Owner,
        )
        .await
        .unwrap();
    let (cmd, token) = e.discord.command_payload(CHANNEL_ID, USER_ID, audit);
    let (_, ack) = e.post(&cmd, now(), &key()).await;
    assert_eq!(ack["data"]["flags"].as_u64(), Some(64), "{ack}");
    e.discord
        .wait_until(10, "history", |d| {
            d.interaction_messages(&token)
                .iter()
                .any(|m| m.content().contains("No change has been proposed"))
        })
        .await;
    let original = e.discord.interaction_messages(&token)[0].id.clone();
    e.settled().await;
    assert!(e.discord.channel(&original).is_none(), "no thread");
    assert!(
        e.discord
            .messages_in(CHANNEL_ID)
            .iter()
            .all(|m| m.interaction_token.is_some()),
        "nothing posted in the channel"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ask_sparky_on_a_message_starts_a_thread_about_it() {
    let e = endpoint().await;
    e.llm
        .push(Reply::Text("A 20 A circuit needs 12 AWG copper.".into()));
    let mut message = support::fake_discord::fixture("message.docs.json");
    message["channel_id"] = json!(CHANNEL_ID);
    message["content"] = json!("what wire for the 20 amp freezer circuit?");
    let author = message["author"]["id"].as_str().unwrap().to_string();
    let (cmd, token) = e
        .discord
        .message_command_payload(CHANNEL_ID, USER_ID, message);
    let (status, ack) = e.post(&cmd, now(), &key()).await;
    assert_eq!((status, ack["type"].as_u64()), (200, Some(5)), "{ack}");
    e.discord
        .wait_until(10, "original response", |d| {
            !d.interaction_messages(&token).is_empty()
        })
        .await;
    let thread = e.discord.interaction_messages(&token)[0].id.clone();
    e.discord
        .wait_until(10, "thread", |d| d.channel(&thread).is_some())
        .await;
    e.discord
        .wait_until(15, "answer in the thread", |d| {
            d.messages_in(&thread)
                .iter()
                .any(|m| m.content().contains("12 AWG"))
        })
        .await;
    // The model was asked about the message: its text, quoted, and its author.
    let asked = e
        .llm
        .requests()
        .last()
        .cloned()
        .unwrap_or_default()
        .to_string();
    assert!(
        asked.contains("> what wire for the 20 amp freezer circuit?") && asked.contains(&author),
        "{asked}"
    );

    // A message with no text gets a private explanation and starts nothing.
    let mut empty = support::fake_discord::fixture("message.docs.json");
    empty["id"] = json!("334385199974967043");
    empty["content"] = json!("");
    let (cmd, _) = e
        .discord
        .message_command_payload(CHANNEL_ID, USER_ID, empty);
    let (_, ack) = e.post(&cmd, now(), &key()).await;
    assert_eq!(
        (ack["type"].as_u64(), ack["data"]["flags"].as_u64()),
        (Some(4), Some(64)),
        "{ack}"
    );
    assert!(ack["data"]["content"]
        .as_str()
        .unwrap_or_default()
        .contains("no text"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_edit_button_opens_a_form_and_its_submission_supersedes_the_card() {
    let e = endpoint().await;
    e.llm.push(Reply::ToolCalls(vec![(
        "create_task".into(),
        json!({"title": "Bond the subpanel"}),
    )]));
    let opts = json!([{"type": 1, "name": "ask", "options": [{"type": 3, "name": "question", "value": "add a task: bond the subpanel"}]}]);
    let (cmd, token) = e.discord.command_payload(CHANNEL_ID, USER_ID, opts);
    e.post(&cmd, now(), &key()).await;
    e.discord
        .wait_until(10, "original response", |d| {
            !d.interaction_messages(&token).is_empty()
        })
        .await;
    let thread = e.discord.interaction_messages(&token)[0].id.clone();
    e.discord
        .wait_until(15, "card", |d| {
            d.messages_in(&thread)
                .iter()
                .any(|m| !m.buttons().is_empty())
        })
        .await;
    let card = e
        .discord
        .messages_in(&thread)
        .into_iter()
        .find(|m| !m.buttons().is_empty())
        .unwrap();
    let edit = card.buttons()[2].0.clone();
    assert!(edit.starts_with("sparky:edit:"), "{edit}");

    // The click is answered with the form itself (a modal, type 9), pre-filled.
    let (click, _) = e.discord.click_payload(&card, &edit, USER_ID);
    let (status, modal) = e.post(&click, now(), &key()).await;
    assert_eq!((status, modal["type"].as_u64()), (200, Some(9)), "{modal}");
    let form_id = modal["data"]["custom_id"].as_str().unwrap().to_string();
    let input = &modal["data"]["components"][0]["components"][0];
    assert_eq!(input["custom_id"], "title");
    assert_eq!(input["value"], "Bond the subpanel");
    assert!(modal["data"]["title"].as_str().unwrap().chars().count() <= 45);

    // An emptied required field is answered privately; the card stays.
    let (bad, _) = e
        .discord
        .modal_submit_payload(&card, USER_ID, &form_id, &[("title", "")]);
    let (_, answer) = e.post(&bad, now(), &key()).await;
    assert_eq!(
        (answer["type"].as_u64(), answer["data"]["flags"].as_u64()),
        (Some(4), Some(64)),
        "{answer}"
    );
    assert!(answer["data"]["content"]
        .as_str()
        .unwrap()
        .contains("Title"));

    // Signed by anyone but Discord, a submission is refused.
    let stranger = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]);
    let (forged, _) =
        e.discord
            .modal_submit_payload(&card, USER_ID, &form_id, &[("title", "Forged")]);
    let (status, _) = e.post(&forged, now(), &stranger).await;
    assert_eq!(status, 401);

    // A valid one: the card is superseded by a corrected one, nothing applied, no model call.
    let (good, _) = e.discord.modal_submit_payload(
        &card,
        USER_ID,
        &form_id,
        &[("title", "Bond the subpanel neutral bar")],
    );
    let (_, answer) = e.post(&good, now(), &key()).await;
    assert_eq!(answer["type"].as_u64(), Some(6), "{answer}");
    e.discord
        .wait_until(15, "corrected card", |d| {
            d.messages_in(&thread).iter().any(|m| {
                m.id != card.id
                    && !m.buttons().is_empty()
                    && m.json.to_string().contains("neutral bar")
            })
        })
        .await;
    e.discord
        .wait_until(10, "first card closed", |d| {
            d.message(&card.id)
                .is_some_and(|m| m.buttons().iter().all(|b| b.2))
        })
        .await;
    assert_eq!(e.llm.requests().len(), 1, "no model call for the edit");
    assert!(e
        .store
        .load_project(e.project)
        .await
        .unwrap()
        .tasks
        .is_empty());
}

/// The text of the answers sent with `token` (the deferred response edited, follow-ups).
fn answers(e: &Endpoint, token: &str) -> String {
    e.discord
        .interaction_messages(token)
        .iter()
        .map(|m| m.json["content"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_project_form_creates_and_sets_a_project_sqlite() {
    the_project_form_creates_and_sets_a_project(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_project_form_creates_and_sets_a_project_postgres() {
    the_project_form_creates_and_sets_a_project(Db::Postgres).await;
}

async fn the_project_form_creates_and_sets_a_project(db: Db) {
    use sparky::project::{MemberRole, Workspace};
    let e = endpoint_on(db).await;
    let ours = Workspace::new("discord", GUILD_ID);
    // A channel with no project yet.
    let channel = "1457510428359009999";
    let project = |sub: &str| json!([{"type": 2, "name": "project", "options": [{"type": 1, "name": sub, "options": []}]}]);

    // `/sparky project create` without options is answered with the form itself (type 9).
    let (cmd, _) = e
        .discord
        .command_payload(channel, USER_ID, project("create"));
    let (status, modal) = e.post(&cmd, now(), &key()).await;
    assert_eq!((status, modal["type"].as_u64()), (200, Some(9)), "{modal}");
    assert_eq!(modal["data"]["custom_id"], "sparky:project:new");
    let inputs: Vec<&str> = modal["data"]["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["components"][0]["custom_id"].as_str().unwrap())
        .collect();
    assert_eq!(inputs, ["name", "edition", "location", "permit_date"]);
    assert_eq!(
        modal["data"]["components"][1]["components"][0]["value"],
        "2023"
    );

    // Invalid fields are answered privately, each named; nothing is created.
    let (bad, _) = e.discord.command_modal_submit_payload(
        channel,
        USER_ID,
        "sparky:project:new",
        &[
            ("name", "shop"),
            ("edition", "2019"),
            ("location", "Atlantis"),
            ("permit_date", "soon"),
        ],
    );
    let (_, answer) = e.post(&bad, now(), &key()).await;
    assert_eq!(
        (answer["type"].as_u64(), answer["data"]["flags"].as_u64()),
        (Some(4), Some(64)),
        "{answer}"
    );
    let text = answer["data"]["content"].as_str().unwrap();
    for field in [
        "• Name: A project named \"Shop\" already exists",
        "• Edition:",
        "• Location: 'Atlantis'",
        "• Permit date: 'soon'",
    ] {
        assert!(text.contains(field), "{field} in {text}");
    }
    assert_eq!(e.store.list_projects(&ours).await.unwrap().len(), 1);

    // Signed by anyone but Discord, a submission is refused and creates nothing.
    let good_values = [
        ("name", "Garage"),
        ("edition", "2020"),
        ("location", "WA, King County, Seattle"),
        ("permit_date", "2024-03-01"),
    ];
    let (forged, _) = e.discord.command_modal_submit_payload(
        channel,
        USER_ID,
        "sparky:project:new",
        &good_values,
    );
    let stranger = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]);
    let (status, _) = e.post(&forged, now(), &stranger).await;
    assert_eq!(status, 401);
    assert!(e
        .store
        .project_by_name(&ours, "Garage")
        .await
        .unwrap()
        .is_none());

    // A valid one: deferred, then the project exists with its site, the caller its owner,
    // the channel bound to it.
    let (good, token) = e.discord.command_modal_submit_payload(
        channel,
        USER_ID,
        "sparky:project:new",
        &good_values,
    );
    let at = now();
    let (_, answer) = e.post(&good, at, &key()).await;
    assert_eq!(answer["type"].as_u64(), Some(5), "{answer}");
    e.discord
        .wait_until(10, "the form's answer", |d| {
            d.interaction_messages(&token)
                .iter()
                .any(|m| m.json.to_string().contains("Created project"))
        })
        .await;
    // The same signed request again is a replay: refused, nothing created twice.
    let (status, _) = e.post(&good, at, &key()).await;
    assert_ne!(status, 200);
    let garage = e
        .store
        .project_by_name(&ours, "Garage")
        .await
        .unwrap()
        .expect("created");
    assert_eq!(garage.edition, Edition::Nec2020);
    let site = &garage.site;
    assert_eq!(
        site.location.as_ref().map(|l| l.to_string()).as_deref(),
        Some("Seattle, King County, Washington")
    );
    assert_eq!(
        site.permit_date.map(|d| d.to_string()).as_deref(),
        Some("2024-03-01")
    );
    assert_eq!(
        e.store
            .member_role(garage.id, "discord", USER_ID)
            .await
            .unwrap(),
        Some(MemberRole::Owner)
    );
    assert_eq!(
        e.store
            .channel_project("discord", GUILD_ID, channel)
            .await
            .unwrap(),
        Some(garage.id)
    );
    assert_eq!(e.store.list_projects(&ours).await.unwrap().len(), 2);

    // `project show` in that channel shows it.
    let (show, token) = e.discord.command_payload(channel, USER_ID, project("show"));
    e.post(&show, now(), &key()).await;
    e.discord
        .wait_until(10, "project show", |d| {
            !d.interaction_messages(&token).is_empty()
        })
        .await;
    assert!(
        answers(&e, &token).contains("Project \"Garage\" (NEC 2020"),
        "{}",
        answers(&e, &token)
    );

    // `/sparky project set` without options: the form of the channel's project, pre-filled.
    let (cmd, _) = e.discord.command_payload(channel, USER_ID, project("set"));
    let (_, modal) = e.post(&cmd, now(), &key()).await;
    assert_eq!(modal["type"].as_u64(), Some(9), "{modal}");
    let form_id = modal["data"]["custom_id"].as_str().unwrap().to_string();
    assert_eq!(form_id, format!("sparky:project:{}", garage.id));
    let prefilled: BTreeMap<String, String> = modal["data"]["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let i = &r["components"][0];
            (
                i["custom_id"].as_str().unwrap().to_string(),
                i["value"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(prefilled["edition"], "auto");
    assert_eq!(prefilled["location"], "WA, King County, Seattle");
    assert_eq!(prefilled["permit_date"], "2024-03-01");
    assert!(!prefilled.contains_key("name"), "a project keeps its name");

    // Someone who is not its owner cannot set it: refused, nothing changed.
    let (theirs, token) = e.discord.command_modal_submit_payload(
        channel,
        OTHER_USER_ID,
        &form_id,
        &[("edition", "2017"), ("location", "OR")],
    );
    let (_, answer) = e.post(&theirs, now(), &key()).await;
    assert_eq!(answer["type"].as_u64(), Some(5), "{answer}");
    e.discord
        .wait_until(10, "the refusal", |d| {
            !d.interaction_messages(&token).is_empty()
        })
        .await;
    assert!(
        answers(&e, &token).contains("Only an owner"),
        "{}",
        answers(&e, &token)
    );

    // The owner sets it.
    let (mine, token) = e.discord.command_modal_submit_payload(
        channel,
        USER_ID,
        &form_id,
        &[("edition", "2017"), ("location", "OR"), ("permit_date", "")],
    );
    e.post(&mine, now(), &key()).await;
    e.discord
        .wait_until(10, "the change", |d| {
            !d.interaction_messages(&token).is_empty()
        })
        .await;
    assert!(
        answers(&e, &token).contains("Garage: NEC 2017"),
        "{}",
        answers(&e, &token)
    );
    let site = e.store.project(garage.id).await.unwrap().unwrap().site;
    assert_eq!(site.edition_override.map(|y| y.year()), Some(2017));
    assert_eq!(site.location.map(|l| l.state).as_deref(), Some("OR"));
    assert_eq!(site.permit_date, None);

    // Another server's project cannot be set through a crafted form id.
    let foreign = e
        .store
        .create_project(
            &Workspace::new("discord", OTHER_GUILD),
            "Barn",
            Edition::Nec2023,
        )
        .await
        .unwrap();
    let (crafted, token) = e.discord.command_modal_submit_payload(
        channel,
        USER_ID,
        &format!("sparky:project:{}", foreign.id),
        &[("edition", "2017")],
    );
    e.post(&crafted, now(), &key()).await;
    e.discord
        .wait_until(10, "the refusal", |d| {
            !d.interaction_messages(&token).is_empty()
        })
        .await;
    assert!(answers(&e, &token).contains("does not exist in this workspace"));
    let barn = e.store.project(foreign.id).await.unwrap().unwrap();
    assert_eq!(barn.site.edition_override, None);
}
