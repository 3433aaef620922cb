//! Photos and PDFs attached in a thread become one plan: a Slack `file_share` message (the
//! recorded file object, `url_private` served by the fake Slack only with the bot token) is
//! translated by the real adapter, downloaded within the turn and sent to the fake model in
//! each provider's wire format (checked byte for byte); the model's write calls form one card;
//! a typed correction re-proposes the whole plan; Confirm applies every item at once. Refusals
//! (type, size), the no-vision answer and text PDFs are checked too. Real SQLite and Postgres.

use crate::support;
use crate::tools_fixture;

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use resvg::tiny_skia::{Color, Pixmap};
use serde_json::{json, Value};
use slack_morphism::prelude::SlackPushEventCallback;
use sparky::config::{Config, Secret};
use sparky::core::session::SessionKey;
use sparky::core::{Agent, CollectSink, Effect, FileIntake, Input, InputAction, Outcome};
use sparky::intake::Limits;
use sparky::llm::ChatMessage;
use sparky::platforms::slack::{self, Gate, Job};
use sparky::project::Workspace;
use sparky::store::Store;
use support::bot::{fresh_postgres_url, Db};
use support::fake_llm::{Dialect, FakeLlm, Reply};
use support::fake_slack::{
    fixture_json, thread_message, FakeSlack, ALICE, BOT_TOKEN, BOT_USER, CHANNEL, TEAM,
};

/// The thread the files are sent in.
const THREAD: &str = "1770241900.000100";

/// A real 40 x 30 PNG.
pub fn png() -> Vec<u8> {
    let mut p = Pixmap::new(40, 30).expect("pixmap");
    p.fill(Color::from_rgba8(30, 30, 200, 255));
    p.encode_png().expect("png")
}

struct Harness {
    agent: Agent,
    store: Arc<dyn Store>,
    slack: FakeSlack,
    project: i64,
    _dir: tempfile::TempDir,
}

async fn harness(fake: &FakeLlm, db: Db, intake: FileIntake) -> Harness {
    sparky::llm::tls::install_default_crypto_provider();
    let dir = tempfile::tempdir().expect("dir");
    let mut env: BTreeMap<String, String> = fake.env().into_iter().collect();
    env.insert("SPARKY_LLM__MAX_RETRIES".into(), "0".into());
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
    let config = Config::load(None, &env).expect("config");
    let store = sparky::app::connect_store(&config).await.expect("store");
    let slack = FakeSlack::start().await;
    let agent = Agent::new(
        store.clone(),
        sparky::llm::resilient::build_provider(&config),
        Arc::new(sparky::tools::default_registry(1000)),
        config.agent.clone(),
        &config.limits,
    )
    .with_file_intake(
        intake
            .with_token("slack", Secret::new(BOT_TOKEN))
            .with_hosts("slack", vec![slack.file_host()]),
    );
    let project = tools_fixture::seed_in(&store, &Workspace::new("slack", TEAM), "Shop").await;
    store
        .bind_channel("slack", TEAM, CHANNEL, project)
        .await
        .expect("bind");
    Harness {
        agent,
        store,
        slack,
        project,
        _dir: dir,
    }
}

fn vision() -> FileIntake {
    FileIntake::new(Limits::default(), true)
}

/// A `file_share` message in the thread: the recorded thread reply with the recorded file
/// object of the Slack replay, its `url_private` pointing at a file hosted by the fake Slack.
fn file_share(h: &Harness, text: &str, name: &str, mime: &str, bytes: Vec<u8>, ts: &str) -> Value {
    let url = h
        .slack
        .host_file(&format!("T111-F0{ts}/{name}"), mime, bytes);
    let mut p = thread_message(TEAM, CHANNEL, ALICE, THREAD, ts, text, &format!("Ev{ts}"));
    let mut file = fixture_json("vercel-chat-replay-slack-streaming.json")["aiMentionWithFile"]
        ["event"]["files"][0]
        .clone();
    file["name"] = json!(name);
    file["title"] = json!(name);
    file["mimetype"] = json!(mime);
    file["url_private"] = json!(url);
    p["event"]["subtype"] = json!("file_share");
    p["event"]["files"] = json!([file]);
    p
}

/// What the Slack adapter makes of an event callback.
pub fn input_of(payload: Value) -> Input {
    let cb: SlackPushEventCallback =
        serde_json::from_value(payload).expect("slack-morphism parses it");
    match slack::events::job_from_push(&cb, Some(BOT_USER), &Gate::default()) {
        Some(Job::Turn { input, .. }) => input,
        _ => panic!("no turn for the event"),
    }
}

fn key() -> SessionKey {
    SessionKey::new("slack", TEAM, CHANNEL, THREAD)
}

fn said(text: &str, ts: &str) -> Input {
    input_of(thread_message(
        TEAM,
        CHANNEL,
        ALICE,
        THREAD,
        ts,
        text,
        &format!("Ev{ts}"),
    ))
}

async fn run(h: &Harness, input: Input) -> Vec<Effect> {
    let sink = CollectSink::default();
    h.agent.handle(input, &sink).await.expect("turn");
    sink.take()
}

/// The card of `effects`: action id and item summaries.
pub fn card(effects: &[Effect]) -> (String, Vec<String>) {
    effects
        .iter()
        .find_map(|e| match e {
            Effect::Confirmation {
                action_id, items, ..
            } => Some((
                action_id.clone(),
                items.iter().map(|i| i.summary.clone()).collect(),
            )),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no confirmation in {effects:#?}"))
}

fn errors(effects: &[Effect]) -> String {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Error { message } => Some(message.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn texts(effects: &[Effect]) -> String {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every picture of a request, as (MIME type, bytes), read from the provider's wire format:
/// OpenAI `image_url` parts with a data URL, Gemini `inline_data` parts.
pub fn images_in(dialect: Dialect, request: &Value) -> Vec<(String, Vec<u8>)> {
    let b64 = |s: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(s)
            .expect("base64")
    };
    let mut out = Vec::new();
    match dialect {
        Dialect::OpenAi => {
            for m in request["messages"].as_array().into_iter().flatten() {
                for part in m["content"].as_array().into_iter().flatten() {
                    if part["type"] == "image_url" {
                        assert_eq!(m["role"], "user", "{m}");
                        let url = part["image_url"]["url"].as_str().expect("url");
                        let (mime, data) = url
                            .strip_prefix("data:")
                            .and_then(|r| r.split_once(";base64,"))
                            .unwrap_or_else(|| panic!("not a data URL: {url}"));
                        out.push((mime.to_string(), b64(data)));
                    }
                }
            }
        }
        Dialect::Gemini => {
            for c in request["contents"].as_array().into_iter().flatten() {
                for part in c["parts"].as_array().into_iter().flatten() {
                    if let Some(blob) = part.get("inline_data") {
                        assert_eq!(c["role"], "user", "{c}");
                        out.push((
                            blob["mime_type"].as_str().expect("mime").to_string(),
                            b64(blob["data"].as_str().expect("data")),
                        ));
                    }
                }
            }
        }
    }
    out
}

/// A panel and three circuits read off the directory; `microwave_breaker` is #7's breaker.
pub fn plan_calls(microwave_breaker: u32) -> Vec<(String, Value)> {
    vec![
        (
            "add_panel".into(),
            json!({"name": "LP-3", "voltage": 208, "phase": 3, "bus_rating": 100,
                   "main_breaker": 100, "interrupting_rating_ka": 22,
                   "spaces": 30, "location": "warehouse"}),
        ),
        (
            "add_circuit".into(),
            json!({"panel": "LP-3", "number": 1, "description": "Office receptacles",
                   "load_va": 1080, "breaker": 20}),
        ),
        (
            "add_circuit".into(),
            json!({"panel": "LP-3", "number": 3, "description": "Copier",
                   "load_va": 1500, "breaker": 20}),
        ),
        (
            "add_circuit".into(),
            json!({"panel": "LP-3", "number": 7, "description": "Break room microwave",
                   "load_va": 1200, "breaker": microwave_breaker}),
        ),
    ]
}

async fn history(h: &Harness) -> Vec<ChatMessage> {
    let session = h
        .store
        .open_session(&key(), Default::default(), None)
        .await
        .expect("session");
    h.store
        .recent_messages(session.id, 0, 200)
        .await
        .expect("messages")
        .into_iter()
        .map(|m| m.message.into())
        .collect()
}

async fn a_photo_becomes_one_plan_corrected_and_confirmed(dialect: Dialect, db: Db) {
    let fake = FakeLlm::start(dialect).await;
    let h = harness(&fake, db, vision()).await;
    let photo = png();
    fake.push(Reply::ToolCalls(plan_calls(15)));
    let input = input_of(file_share(
        &h,
        "add these to a new panel LP-3",
        "panel.png",
        "image/png",
        photo.clone(),
        "1770241967.000200",
    ));
    assert!(
        matches!(&input.action, InputAction::MessageWithFiles { files, .. } if files.len() == 1),
        "{input:?}"
    );
    let effects = run(&h, input).await;
    let (first, items) = card(&effects);
    assert_eq!(
        items.len(),
        4,
        "one card for the panel and its circuits: {items:?}"
    );
    assert!(items[0].contains("LP-3"), "{items:?}");
    assert!(
        items
            .iter()
            .any(|i| i.contains("Break room microwave") && i.contains("15 A")),
        "{items:?}"
    );

    // The model received the photo's exact bytes in its own wire format.
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        images_in(dialect, &requests[0]),
        vec![("image/png".to_string(), photo.clone())]
    );
    let first_request = requests[0].to_string();
    assert!(first_request.contains("add these to a new panel LP-3"));

    // The history keeps a placeholder, not the picture.
    let stored = serde_json::to_string(&history(&h).await).expect("json");
    let b64 = base64::engine::general_purpose::STANDARD.encode(&photo);
    assert!(!stored.contains(&b64), "the photo is not stored");
    assert!(
        stored.contains(&format!("[photo: panel.png, {} bytes]", photo.len())),
        "{stored}"
    );

    // A typed correction supersedes the card; the model proposes the whole plan again.
    fake.push(Reply::ToolCalls(plan_calls(20)));
    let effects = run(&h, said("#7 is 20 A, not 15", "1770241990.000300")).await;
    assert!(
        effects.iter().any(|e| matches!(
            e,
            Effect::Resolved { action_id, outcome: Outcome::Superseded, .. } if *action_id == first
        )),
        "{effects:#?}"
    );
    let (second, items) = card(&effects);
    assert_ne!(second, first);
    assert_eq!(items.len(), 4, "the whole plan again: {items:?}");
    assert!(
        items
            .iter()
            .any(|i| i.contains("Break room microwave") && i.contains("20 A")),
        "{items:?}"
    );
    let requests = fake.requests();
    let again = &requests[1];
    assert!(
        images_in(dialect, again).is_empty(),
        "the photo went with its own turn only"
    );
    let again = again.to_string();
    assert!(again.contains("#7 is 20 A, not 15"), "{again}");
    assert!(again.contains("[photo: panel.png"), "{again}");

    // Confirm applies every item, at once.
    let version = h.store.project_version(h.project).await.expect("version");
    fake.push(Reply::Text("LP-3 and its three circuits are in.".into()));
    let effects = run(
        &h,
        Input {
            key: key(),
            user: ALICE.into(),
            event_id: None,
            action: InputAction::Confirm {
                action_id: Some(second.clone()),
            },
        },
    )
    .await;
    assert!(
        effects.iter().any(|e| matches!(
            e,
            Effect::Resolved {
                outcome: Outcome::Executed,
                ..
            }
        )),
        "{effects:#?}"
    );
    let p = h.store.load_project(h.project).await.expect("project");
    let lp3 = p
        .panels
        .iter()
        .find(|x| x.spec.name == "LP-3")
        .expect("LP-3 added");
    let mut circuits: Vec<(i32, String, f64)> = p
        .circuits_of(lp3.id)
        .iter()
        .map(|c| (c.spec.number, c.spec.description.clone(), c.spec.breaker.0))
        .collect();
    circuits.sort_by_key(|c| c.0);
    assert_eq!(
        circuits,
        vec![
            (1, "Office receptacles".to_string(), 20.0),
            (3, "Copier".to_string(), 20.0),
            (7, "Break room microwave".to_string(), 20.0),
        ]
    );
    assert_eq!(
        h.store.project_version(h.project).await.expect("version"),
        version + 1,
        "one change set"
    );
    assert_eq!(fake.remaining(), 0);
}

#[tokio::test]
async fn a_photo_becomes_one_plan_openai_sqlite() {
    a_photo_becomes_one_plan_corrected_and_confirmed(Dialect::OpenAi, Db::Sqlite).await;
}

#[tokio::test]
async fn a_photo_becomes_one_plan_gemini_sqlite() {
    a_photo_becomes_one_plan_corrected_and_confirmed(Dialect::Gemini, Db::Sqlite).await;
}

#[tokio::test]
async fn a_photo_becomes_one_plan_gemini_postgres() {
    a_photo_becomes_one_plan_corrected_and_confirmed(Dialect::Gemini, Db::Postgres).await;
}

#[tokio::test]
async fn wrong_type_and_oversize_files_are_refused_with_a_message_and_nothing_is_sent() {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, Db::Sqlite, vision()).await;
    let docx = b"PK\x03\x04word/document.xml and more".to_vec();
    let effects = run(
        &h,
        input_of(file_share(
            &h,
            "add these",
            "notes.docx",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            docx,
            "1770242000.000100",
        )),
    )
    .await;
    let e = errors(&effects);
    assert!(
        e.contains("notes.docx") && e.contains("JPEG, PNG") && e.contains("PDF"),
        "{e}"
    );
    assert!(fake.requests().is_empty(), "the model is not asked");
    let stored = serde_json::to_string(&history(&h).await).expect("json");
    assert!(
        stored.contains("add these") && stored.contains("[not read: notes.docx]"),
        "the message is kept: {stored}"
    );

    // Over the limit while downloading (Slack's event carries no size here).
    let small_slack = FakeSlack::start().await;
    let small = Harness {
        agent: Agent::new(
            h.store.clone(),
            None,
            Arc::new(sparky::tools::default_registry(1000)),
            Config::load(None, &BTreeMap::new())
                .expect("config")
                .agent
                .clone(),
            &Config::load(None, &BTreeMap::new()).expect("config").limits,
        )
        .with_file_intake(
            FileIntake::new(
                Limits {
                    max_bytes: 64,
                    ..Limits::default()
                },
                true,
            )
            .with_token("slack", Secret::new(BOT_TOKEN))
            .with_hosts("slack", vec![small_slack.file_host()]),
        ),
        store: h.store.clone(),
        slack: small_slack,
        project: h.project,
        _dir: tempfile::tempdir().expect("dir"),
    };
    let effects = run(
        &small,
        input_of(file_share(
            &small,
            "",
            "big.png",
            "image/png",
            png(),
            "1770242010.000100",
        )),
    )
    .await;
    let e = errors(&effects);
    assert!(
        e.contains("big.png") && e.contains("the limit is 64 bytes"),
        "{e}"
    );
    assert!(texts(&effects).is_empty(), "{effects:#?}");

    // Discord declares the size: refused before anything is downloaded.
    let mut m = support::fake_discord::fixture("message.docs.json");
    m["attachments"] = json!([{
        "id": "1100000000000000009",
        "filename": "whole-panel.jpg",
        "size": 52_428_800u64,
        "url": "http://127.0.0.1:9/attachments/1/1100000000000000009/whole-panel.jpg",
        "proxy_url": "http://127.0.0.1:9/attachments/1/1100000000000000009/whole-panel.jpg",
        "content_type": "image/jpeg",
        "width": 4000,
        "height": 3000
    }]);
    let msg: serenity::all::Message = serde_json::from_value(m).expect("serenity parses it");
    let files = sparky::platforms::discord::inbound_files::attachment_refs(&msg.attachments);
    let effects = run(
        &h,
        Input {
            key: SessionKey::new("discord", "G1", "C1", "T1"),
            user: "u1".into(),
            event_id: None,
            action: InputAction::message("read this".into(), None, files),
        },
    )
    .await;
    let e = errors(&effects);
    assert!(
        e.contains("whole-panel.jpg is 52.4 MB; the limit is 10.5 MB"),
        "{e}"
    );
    assert!(fake.requests().is_empty());
}

/// A file object whose `url_private` names another host (here another server on the bot's own
/// machine): nothing is fetched from it, the person is told why, the message is kept.
async fn a_file_link_off_the_file_host_is_refused(db: Db) {
    let fake = FakeLlm::start(Dialect::Gemini).await;
    let h = harness(&fake, db, vision()).await;
    let elsewhere = FakeSlack::start().await;
    let mut payload = file_share(
        &h,
        "read this",
        "panel.png",
        "image/png",
        png(),
        "1770242050.000100",
    );
    let foreign = elsewhere.host_file("T111-F0X/panel.png", "image/png", png());
    payload["event"]["files"][0]["url_private"] = json!(foreign);
    let effects = run(&h, input_of(payload)).await;
    let e = errors(&effects);
    assert!(
        e.contains("panel.png was not downloaded: its link points to 127.0.0.1:"),
        "{e}"
    );
    assert!(
        e.contains(&h.slack.file_origin()),
        "names the allowed host: {e}"
    );
    assert!(
        fake.requests().is_empty(),
        "nothing was read, so no model call"
    );
    let stored = serde_json::to_string(&history(&h).await).expect("json");
    assert!(
        stored.contains("read this") && stored.contains("[not read: panel.png]"),
        "the message is kept: {stored}"
    );
}

#[tokio::test]
async fn a_file_link_off_the_file_host_is_refused_sqlite() {
    a_file_link_off_the_file_host_is_refused(Db::Sqlite).await;
}

#[tokio::test]
async fn a_file_link_off_the_file_host_is_refused_postgres() {
    a_file_link_off_the_file_host_is_refused(Db::Postgres).await;
}

#[tokio::test]
async fn without_vision_a_photo_gets_the_csv_import_and_is_not_sent() {
    let fake = FakeLlm::start(Dialect::Gemini).await;
    let h = harness(&fake, Db::Sqlite, FileIntake::new(Limits::default(), false)).await;
    let effects = run(
        &h,
        input_of(file_share(
            &h,
            "add these to LP-2",
            "panel.png",
            "image/png",
            png(),
            "1770242100.000100",
        )),
    )
    .await;
    let t = texts(&effects);
    assert!(t.contains("cannot read pictures"), "{t}");
    assert!(t.contains("gemini:fake-model"), "names the model: {t}");
    assert!(t.contains("llm.vision"), "{t}");
    assert!(
        t.contains("panel,circuit,poles,description,load_va,continuous,breaker_a"),
        "the CSV header: {t}"
    );
    assert!(
        t.contains(
            "sparky project import FILE.csv --project PROJECT --panel PANEL --workspace slack:T111"
        ),
        "{t}"
    );
    assert!(fake.requests().is_empty(), "no picture, no model call");
    let h2 = history(&h).await;
    assert_eq!(h2.len(), 2, "{h2:?}");
    assert!(
        matches!(&h2[0], ChatMessage::User { text, .. } if text.starts_with("add these to LP-2\n[photo: panel.png")),
        "{h2:?}"
    );
}

#[tokio::test]
async fn a_text_pdf_goes_as_fenced_text_for_its_turn_only_without_vision() {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, Db::Sqlite, FileIntake::new(Limits::default(), false)).await;
    let p = h.store.load_project(h.project).await.expect("project");
    let pdf = sparky::report::render(
        &p,
        &sparky::report::ReportKind::Panel {
            panel: "LP-1".into(),
        },
        sparky::report::Format::Pdf,
        "alice",
        chrono::Utc::now(),
    )
    .expect("render")
    .bytes;
    fake.push(Reply::Text("LP-1 has these circuits ...".into()));
    let effects = run(
        &h,
        input_of(file_share(
            &h,
            "what is on this schedule?",
            "LP-1.pdf",
            "application/pdf",
            pdf,
            "1770242200.000100",
        )),
    )
    .await;
    assert!(errors(&effects).is_empty(), "{effects:#?}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    assert!(images_in(Dialect::OpenAi, &requests[0]).is_empty());
    let last_user = requests[0]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .expect("user")["content"]
        .as_str()
        .expect("plain text content")
        .to_string();
    assert!(
        last_user.contains("<<<document attached PDF LP-1.pdf>>>")
            && last_user.contains("<<<end of document>>>"),
        "{last_user}"
    );
    let squeezed: String = last_user.chars().filter(|c| !c.is_whitespace()).collect();
    assert!(squeezed.contains("Kitchenreceptacles"), "{last_user}");
    let stored = serde_json::to_string(&history(&h).await).expect("json");
    assert!(!stored.contains("<<<document"), "{stored}");
    assert!(stored.contains("[PDF: LP-1.pdf, "), "{stored}");
}

/// The Slack path end to end: the signed `app_mention` carrying the recorded file object,
/// Sparky's endpoint, the download with the bot token from the production wiring, the card
/// posted in the thread, and the Confirm click applying every item.
#[tokio::test]
async fn slack_end_to_end_a_mention_with_a_photo_gets_one_card_and_confirm_applies_it() {
    use support::fake_slack::{app_mention, block_action, SlackBot};
    let bot = SlackBot::start_with(Db::Sqlite, "http", &[("SPARKY_LLM__VISION", "true")]).await;
    let poster = bot.serve_http().await;
    let photo = png();
    let url = bot
        .slack
        .host_file("T111-F0PANEL/panel.png", "image/png", photo.clone());
    let ts = "1770243000.000100";
    let mut payload = app_mention(TEAM, CHANNEL, ALICE, ts, "add these as LP-3", "EvPhoto1");
    let mut file = fixture_json("vercel-chat-replay-slack-streaming.json")["aiMentionWithFile"]
        ["event"]["files"][0]
        .clone();
    file["name"] = json!("panel.png");
    file["url_private"] = json!(url);
    payload["event"]["files"] = json!([file]);
    bot.llm.push(Reply::ToolCalls(plan_calls(20)));
    let a = poster.event(&payload, None).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let wait = std::time::Duration::from_secs(15);
    let card = bot
        .slack
        .wait_for("a confirmation with buttons", wait, |s| {
            s.thread(CHANNEL, ts).into_iter().find(|m| m.has_buttons())
        })
        .await;
    let text = card.section_text();
    for needle in [
        "LP-3",
        "Office receptacles",
        "Copier",
        "Break room microwave",
    ] {
        assert!(text.contains(needle), "{needle} on the card: {text}");
    }
    assert_eq!(
        images_in(Dialect::OpenAi, &bot.llm.requests()[0]),
        vec![("image/png".to_string(), photo)]
    );
    let confirm = card.buttons()[0]["action_id"]
        .as_str()
        .expect("confirm id")
        .to_string();
    bot.llm
        .push(Reply::Text("LP-3 is in with its circuits.".into()));
    let a = poster
        .interaction(&block_action(TEAM, ALICE, &card, &confirm, "trig.photo"))
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    bot.slack
        .wait_for("the card closed", wait, |s| {
            s.messages()
                .into_iter()
                .find(|m| m.ts == card.ts && !m.has_buttons())
        })
        .await;
    let id = bot
        .store
        .channel_project("slack", TEAM, CHANNEL)
        .await
        .expect("binding")
        .expect("bound");
    let wait_until = std::time::Instant::now() + wait;
    loop {
        let p = bot.store.load_project(id).await.expect("project");
        if let Some(lp3) = p.panels.iter().find(|x| x.spec.name == "LP-3") {
            assert_eq!(p.circuits_of(lp3.id).len(), 3);
            break;
        }
        assert!(std::time::Instant::now() < wait_until, "LP-3 never applied");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn pdfs_that_would_exhaust_the_server_are_refused_with_their_limit_and_nothing_is_sent() {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, Db::Sqlite, vision()).await;
    // A schedule whose page unpacks to 16 MB of drawing instructions (48 kB sent).
    let effects = run(
        &h,
        input_of(file_share(
            &h,
            "read this schedule",
            "LP-1.pdf",
            "application/pdf",
            support::pdf_bombs::content_bomb(16),
            "1770242500.000100",
        )),
    )
    .await;
    let e = errors(&effects);
    assert!(
        e.contains("LP-1.pdf was not read: page 1 unpacks to more than 4 MB of drawing"),
        "{e}"
    );
    // A scan holding a 12,000 x 12,000 pixel image, for a model that reads images.
    let effects = run(
        &h,
        input_of(file_share(
            &h,
            "and this scan",
            "scan.pdf",
            "application/pdf",
            support::pdf_bombs::image_bomb(12_000),
            "1770242600.000100",
        )),
    )
    .await;
    let e = errors(&effects);
    assert!(
        e.contains("scan.pdf was not read: it holds a 12000 × 12000 pixel image"),
        "{e}"
    );
    assert!(fake.requests().is_empty(), "the model is not asked");
    let stored = serde_json::to_string(&history(&h).await).expect("json");
    assert!(
        stored.contains("[not read: LP-1.pdf]") && stored.contains("[not read: scan.pdf]"),
        "{stored}"
    );
}

/// A page with a dark rectangle and no text layer, like a scanned directory.
fn scanned_pdf() -> Vec<u8> {
    sparky::report::output::to_pdf(
        &["<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"612\" height=\"792\"><rect x=\"50\" y=\"50\" width=\"500\" height=\"600\" fill=\"#202020\"/></svg>".to_string()],
        "scan",
    )
    .expect("pdf")
}

#[tokio::test]
async fn a_scanned_pdf_goes_as_page_pictures_to_a_model_that_reads_images() {
    for dialect in [Dialect::OpenAi, Dialect::Gemini] {
        let fake = FakeLlm::start(dialect).await;
        let h = harness(&fake, Db::Sqlite, vision()).await;
        fake.push(Reply::Text("The page shows one dark rectangle.".into()));
        let effects = run(
            &h,
            input_of(file_share(
                &h,
                "what does this scan say?",
                "scan.pdf",
                "application/pdf",
                scanned_pdf(),
                "1770242300.000100",
            )),
        )
        .await;
        assert!(errors(&effects).is_empty(), "{effects:#?}");
        let requests = fake.requests();
        let images = images_in(dialect, &requests[0]);
        assert_eq!(images.len(), 1, "one page");
        assert_eq!(images[0].0, "image/png");
        let page = Pixmap::decode_png(&images[0].1).expect("a PNG page");
        assert_eq!(page.height(), 2000);
        let middle = page
            .pixel(page.width() / 2, page.height() / 2)
            .expect("pixel");
        assert!(
            middle.red() < 60,
            "the scanned picture is drawn: {middle:?}"
        );
        let stored = serde_json::to_string(&history(&h).await).expect("json");
        assert!(
            stored.contains("[scanned PDF: scan.pdf, ")
                && stored.contains("its page sent as pictures]"),
            "{stored}"
        );
    }
    // Without vision the scan is a picture the model cannot see: the CSV answer, no call.
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, Db::Sqlite, FileIntake::new(Limits::default(), false)).await;
    let effects = run(
        &h,
        input_of(file_share(
            &h,
            "",
            "scan.pdf",
            "application/pdf",
            scanned_pdf(),
            "1770242400.000100",
        )),
    )
    .await;
    assert!(
        texts(&effects).contains("cannot read pictures"),
        "{effects:#?}"
    );
    assert!(fake.requests().is_empty());
}
