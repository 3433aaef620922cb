//! The turn loop and the confirmation gate in-process, with extra tools that misbehave,
//! against the fake providers over real HTTP and a real database.

use crate::support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use serde_json::{json, Value};
use sparky::config::Config;
use sparky::core::session::SessionKey;
use sparky::core::{Agent, CollectSink, Effect, Input, InputAction, Outcome};
use sparky::nec::units::Edition;
use sparky::store::{AuditKind, ConfirmRule, NewPendingAction, Store};
use sparky::tools::{default_registry, Tool, ToolContext, ToolError};
use support::bot::{fresh_postgres_url, Db};
use support::fake_llm::{Dialect, FakeLlm, Reply};

struct Panics;
#[async_trait]
impl Tool for Panics {
    fn name(&self) -> &'static str {
        "explode"
    }
    fn description(&self) -> &'static str {
        "always panics"
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn execute(&self, _: Value, _: &ToolContext) -> Result<Value, ToolError> {
        panic!("boom")
    }
}

struct Sleeps;
#[async_trait]
impl Tool for Sleeps {
    fn name(&self) -> &'static str {
        "sleep_forever"
    }
    fn description(&self) -> &'static str {
        "never finishes"
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn execute(&self, _: Value, _: &ToolContext) -> Result<Value, ToolError> {
        tokio::time::sleep(std::time::Duration::from_secs(600)).await;
        Ok(json!({}))
    }
}

struct Counts(Arc<AtomicUsize>);
#[async_trait]
impl Tool for Counts {
    fn name(&self) -> &'static str {
        "count_me"
    }
    fn description(&self) -> &'static str {
        "counts executions"
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"x": {"type": "integer"}}})
    }
    async fn execute(&self, args: Value, _: &ToolContext) -> Result<Value, ToolError> {
        let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(json!({"x": args["x"], "executions": n}))
    }
}

struct Harness {
    agent: Agent,
    store: Arc<dyn Store>,
    counter: Arc<AtomicUsize>,
    /// The Postgres database, when the harness runs on one.
    database_url: Option<String>,
    _dir: tempfile::TempDir,
}

async fn harness(fake: &FakeLlm, db: Db) -> Harness {
    harness_with(fake, db, &[]).await
}

/// [`harness`] with settings of its own.
async fn harness_with(fake: &FakeLlm, db: Db, settings: &[(&str, &str)]) -> Harness {
    sparky::llm::tls::install_default_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let mut env: BTreeMap<String, String> = fake.env().into_iter().collect();
    env.insert("SPARKY_AGENT__TOOL_TIMEOUT_SECS".into(), "1".into());
    env.insert("SPARKY_LLM__MAX_RETRIES".into(), "0".into());
    env.extend(settings.iter().map(|(k, v)| (k.to_string(), v.to_string())));
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
    let database_url = matches!(db, Db::Postgres)
        .then(|| env.get("DATABASE_URL").cloned())
        .flatten();
    let config = Config::load(None, &env).unwrap();
    let store = sparky::app::connect_store(&config).await.unwrap();
    let provider = sparky::llm::resilient::build_provider(&config);
    let counter = Arc::new(AtomicUsize::new(0));
    let mut tools = default_registry(1000);
    tools.register(Panics);
    tools.register(Sleeps);
    tools.register(Counts(counter.clone()));
    let agent = Agent::new(
        store.clone(),
        provider,
        Arc::new(tools),
        config.agent.clone(),
        &config.limits,
    );
    let project = store
        .create_project(
            &sparky::project::Workspace::new("test", "w"),
            "p",
            Edition::Nec2023,
        )
        .await
        .unwrap();
    store
        .bind_channel("test", "w", "c", project.id)
        .await
        .unwrap();
    Harness {
        agent,
        store,
        counter,
        database_url,
        _dir: dir,
    }
}

fn key() -> SessionKey {
    SessionKey::new("test", "w", "c", "thread-1")
}

fn say(text: &str) -> Input {
    Input {
        key: key(),
        user: "alice".into(),
        event_id: None,
        action: InputAction::Message {
            text: text.into(),
            mode: None,
        },
    }
}

async fn run(h: &Harness, input: Input) -> Vec<Effect> {
    let sink = CollectSink::default();
    h.agent.handle(input, &sink).await.unwrap();
    sink.take()
}

fn final_text(effects: &[Effect]) -> Option<String> {
    effects.iter().find_map(|e| match e {
        Effect::Text { text, .. } => Some(text.clone()),
        _ => None,
    })
}

#[tokio::test]
async fn a_panicking_or_hanging_tool_becomes_an_error_result() {
    for dialect in [Dialect::OpenAi, Dialect::Gemini] {
        let fake = FakeLlm::start(dialect).await;
        let h = harness(&fake, Db::Sqlite).await;
        fake.push(Reply::ToolCalls(vec![
            ("explode".into(), json!({})),
            ("sleep_forever".into(), json!({})),
        ]));
        fake.push(Reply::Text("Both tools failed, sorry.".into()));
        let effects = run(&h, say("try the tools")).await;
        assert_eq!(
            final_text(&effects).as_deref(),
            Some("Both tools failed, sorry."),
            "{dialect:?}"
        );
        let second = fake.requests()[1].to_string();
        assert!(second.contains("crashed"), "{second}");
        assert!(second.contains("did not finish within 1 s"), "{second}");
        let session = h
            .store
            .open_session(&key(), Default::default(), None)
            .await
            .unwrap();
        let audit = h.store.audit_for_session(session.id).await.unwrap();
        let failed: Vec<_> = audit
            .iter()
            .filter(|a| a.entry.kind == AuditKind::Execution && a.entry.is_error)
            .filter_map(|a| a.entry.tool.clone())
            .collect();
        assert!(
            failed.contains(&"explode".to_string())
                && failed.contains(&"sleep_forever".to_string()),
            "{failed:?}"
        );
    }
}

#[tokio::test]
async fn identical_read_calls_in_one_turn_run_once() {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, Db::Sqlite).await;
    fake.push(Reply::ToolCalls(vec![
        ("count_me".into(), json!({"x": 1})),
        ("count_me".into(), json!({"x": 1})),
        ("count_me".into(), json!({"x": 2})),
    ]));
    fake.push(Reply::Text("done".into()));
    run(&h, say("count")).await;
    assert_eq!(h.counter.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_turn_stops_after_ten_model_calls_with_every_call_answered() {
    let fake = FakeLlm::start(Dialect::Gemini).await;
    let h = harness(&fake, Db::Sqlite).await;
    for i in 0..12 {
        fake.push(Reply::ToolCalls(vec![("count_me".into(), json!({"x": i}))]));
    }
    let effects = run(&h, say("loop forever")).await;
    assert_eq!(fake.requests().len(), 10);
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Error { message } if message.contains("10 model calls"))),
        "{effects:#?}"
    );
    // The next turn is accepted by the strict fake: the last calls got results.
    fake.push(Reply::Text("ok".into()));
    fake.push(Reply::Text("ok".into()));
    let effects = run(&h, say("and now?")).await;
    assert_eq!(final_text(&effects).as_deref(), Some("ok"), "{effects:#?}");
}

async fn mixed_read_and_write_calls(db: Db) {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, db).await;
    fake.push(Reply::ToolCalls(vec![
        ("count_me".into(), json!({"x": 7})),
        ("create_task".into(), json!({"title": "Label panel LP-1"})),
    ]));
    let effects = run(&h, say("count and add a task")).await;
    assert_eq!(
        h.counter.load(Ordering::SeqCst),
        1,
        "the read call ran at once"
    );
    let action_id = effects
        .iter()
        .find_map(|e| match e {
            Effect::Confirmation {
                action_id, items, ..
            } => {
                assert_eq!(items.len(), 1);
                assert_eq!(items[0].tool, "create_task");
                Some(action_id.clone())
            }
            _ => None,
        })
        .expect("a confirmation");
    let p = h
        .store
        .project_by_name(&sparky::project::Workspace::new("test", "w"), "p")
        .await
        .unwrap()
        .unwrap();
    assert!(h.store.load_project(p.id).await.unwrap().tasks.is_empty());

    fake.push(Reply::Text("Task added.".into()));
    let effects = run(
        &h,
        Input {
            key: key(),
            user: "alice".into(),
            event_id: Some("click-1".into()),
            action: InputAction::Confirm {
                action_id: Some(action_id.clone()),
            },
        },
    )
    .await;
    assert!(effects.iter().any(|e| matches!(
        e,
        Effect::Resolved {
            outcome: Outcome::Executed,
            ..
        }
    )));
    let req = fake.requests()[1].to_string();
    assert!(
        req.contains("\\\"executions\\\":1") || req.contains("executions"),
        "{req}"
    );
    assert!(req.contains("Label panel LP-1"), "{req}");
    assert_eq!(h.store.load_project(p.id).await.unwrap().tasks.len(), 1);

    // The same click delivered again is ignored entirely.
    let effects = run(
        &h,
        Input {
            key: key(),
            user: "alice".into(),
            event_id: Some("click-1".into()),
            action: InputAction::Confirm {
                action_id: Some(action_id.clone()),
            },
        },
    )
    .await;
    assert!(effects.is_empty(), "{effects:#?}");
    assert_eq!(fake.requests().len(), 2);

    let session = h
        .store
        .open_session(&key(), Default::default(), None)
        .await
        .unwrap();
    let kinds: Vec<AuditKind> = h
        .store
        .audit_for_session(session.id)
        .await
        .unwrap()
        .iter()
        .map(|a| a.entry.kind)
        .collect();
    assert!(
        kinds.contains(&AuditKind::Proposed) && kinds.contains(&AuditKind::Confirmed),
        "{kinds:?}"
    );
}

#[tokio::test]
async fn read_calls_run_at_once_and_writes_wait_for_confirm_sqlite() {
    mixed_read_and_write_calls(Db::Sqlite).await;
}

#[tokio::test]
async fn read_calls_run_at_once_and_writes_wait_for_confirm_postgres() {
    mixed_read_and_write_calls(Db::Postgres).await;
}

#[tokio::test]
async fn an_expired_action_says_so_and_changes_nothing() {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, Db::Sqlite).await;
    let p = h
        .store
        .project_by_name(&sparky::project::Workspace::new("test", "w"), "p")
        .await
        .unwrap()
        .unwrap();
    let session = h
        .store
        .open_session(&key(), Default::default(), Some(p.id))
        .await
        .unwrap();
    let past = Utc::now() - chrono::Duration::hours(30);
    let call = sparky::llm::ToolCall {
        id: "call_1".into(),
        name: "create_task".into(),
        arguments: "{\"title\":\"x\"}".into(),
        thought_signature: None,
    };
    h.store
        .append_message(
            session.id,
            &sparky::core::history::new_message(
                &sparky::llm::ChatMessage::Assistant {
                    text: String::new(),
                    tool_calls: vec![call.clone()],
                    thought_signature: None,
                },
                None,
                None,
            ),
        )
        .await
        .unwrap();
    h.store
        .create_pending(&NewPendingAction {
            id: "old-action".into(),
            session_id: session.id,
            rule: ConfirmRule {
                policy: sparky::config::ConfirmPolicy::Requester,
                requester: "alice".into(),
            },
            calls: vec![call.into()],
            prior_results: vec![],
            items: vec![],
            created_at: past,
            expires_at: past + chrono::Duration::hours(24),
            project_id: None,
            planned_version: None,
            origin: Default::default(),
        })
        .await
        .unwrap();
    let effects = run(
        &h,
        Input {
            key: key(),
            user: "alice".into(),
            event_id: None,
            action: InputAction::Confirm {
                action_id: Some("old-action".into()),
            },
        },
    )
    .await;
    assert!(
        effects.iter().any(|e| matches!(
            e,
            Effect::Resolved {
                outcome: Outcome::Expired,
                ..
            }
        )),
        "{effects:#?}"
    );
    assert!(h.store.load_project(p.id).await.unwrap().tasks.is_empty());
    assert_eq!(
        fake.requests().len(),
        0,
        "nobody to answer: the model is not called"
    );
}

fn errors_of(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Error { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

async fn stored_messages(h: &Harness) -> Vec<sparky::llm::ChatMessage> {
    let session = h
        .store
        .open_session(&key(), Default::default(), None)
        .await
        .unwrap();
    h.store
        .recent_messages(session.id, 0, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message.into())
        .collect()
}

fn is_empty_model_turn(m: &sparky::llm::ChatMessage) -> bool {
    matches!(m, sparky::llm::ChatMessage::Assistant { text, tool_calls, .. } if text.is_empty() && tool_calls.is_empty())
}

fn malformed_call() -> Reply {
    Reply::RawToolCall {
        name: "count_me".into(),
        arguments: "{\"x\": ".into(),
    }
}

#[tokio::test]
async fn a_malformed_function_call_is_asked_again_once_and_the_answer_arrives() {
    let fake = FakeLlm::start(Dialect::Gemini).await;
    let h = harness(&fake, Db::Sqlite).await;
    fake.push(malformed_call());
    fake.push(Reply::Text("Recovered answer.".into()));
    let effects = run(&h, say("count something")).await;
    assert_eq!(
        final_text(&effects).as_deref(),
        Some("Recovered answer."),
        "{effects:#?}"
    );
    assert!(errors_of(&effects).is_empty(), "{effects:#?}");
    assert_eq!(fake.requests().len(), 2);
    assert!(!stored_messages(&h).await.iter().any(is_empty_model_turn));
}

#[tokio::test]
async fn a_twice_malformed_function_call_says_so_and_the_thread_goes_on() {
    let fake = FakeLlm::start(Dialect::Gemini).await;
    let h = harness(&fake, Db::Sqlite).await;
    fake.push(malformed_call());
    fake.push(malformed_call());
    let effects = run(&h, say("count something")).await;
    assert_eq!(final_text(&effects), None, "{effects:#?}");
    let errors = errors_of(&effects);
    assert!(
        errors.len() == 1 && errors[0].contains("valid tool call"),
        "{effects:#?}"
    );
    assert_eq!(fake.requests().len(), 2, "retried once, not more");
    assert!(!stored_messages(&h).await.iter().any(is_empty_model_turn));
    // The strict fake refuses empty text parts, as the live API does.
    fake.push(Reply::Text("Next answer.".into()));
    let effects = run(&h, say("and now?")).await;
    assert_eq!(
        final_text(&effects).as_deref(),
        Some("Next answer."),
        "{effects:#?}"
    );
}

#[tokio::test]
async fn every_finish_reason_gets_a_clear_message_and_nothing_empty_is_stored() {
    let cases: [(Dialect, &str, &str, &str); 10] = [
        (Dialect::Gemini, "SAFETY", "", "safety filter"),
        (Dialect::Gemini, "PROHIBITED_CONTENT", "", "safety filter"),
        (
            Dialect::Gemini,
            "RECITATION",
            "NEC 210.8 reads",
            "word for word",
        ),
        (Dialect::Gemini, "BLOCKLIST", "", "blocked term"),
        (Dialect::Gemini, "SPII", "", "personal information"),
        (Dialect::Gemini, "OTHER", "", "without finishing"),
        (Dialect::Gemini, "MAX_TOKENS", "", "output limit"),
        (
            Dialect::Gemini,
            "MAX_TOKENS",
            "The first half of",
            "cut off",
        ),
        (Dialect::OpenAi, "length", "The first half of", "cut off"),
        (Dialect::OpenAi, "content_filter", "", "safety filter"),
    ];
    for (dialect, reason, text, expected) in cases {
        let fake = FakeLlm::start(dialect).await;
        let h = harness(&fake, Db::Sqlite).await;
        fake.push(Reply::Finish {
            text: text.into(),
            reason: reason.into(),
        });
        let effects = run(&h, say("question")).await;
        let errors = errors_of(&effects);
        assert!(
            errors.len() == 1 && errors[0].contains(expected),
            "{reason}: {effects:#?}"
        );
        assert_eq!(fake.requests().len(), 1, "{reason}: not retried");
        // Only an answer cut at the length limit is kept and shown as an answer.
        let kept = expected == "cut off";
        assert_eq!(
            final_text(&effects).as_deref(),
            kept.then_some(text),
            "{reason}: {effects:#?}"
        );
        let stored = stored_messages(&h).await;
        assert!(!stored.iter().any(is_empty_model_turn), "{reason}");
        assert_eq!(
            stored
                .iter()
                .any(|m| *m == sparky::llm::ChatMessage::assistant(text)),
            kept,
            "{reason}: {stored:?}"
        );
        fake.push(Reply::Text("Fine now.".into()));
        let effects = run(&h, say("again")).await;
        assert_eq!(
            final_text(&effects).as_deref(),
            Some("Fine now."),
            "{reason}: {effects:#?}"
        );
    }
}

#[tokio::test]
async fn an_empty_model_turn_stored_earlier_is_not_sent_again() {
    for dialect in [Dialect::OpenAi, Dialect::Gemini] {
        let fake = FakeLlm::start(dialect).await;
        let h = harness(&fake, Db::Sqlite).await;
        let session = h
            .store
            .open_session(&key(), Default::default(), None)
            .await
            .unwrap();
        for message in [
            sparky::llm::ChatMessage::user("old question"),
            sparky::llm::ChatMessage::assistant(""),
        ] {
            h.store
                .append_message(
                    session.id,
                    &sparky::core::history::new_message(&message, None, None),
                )
                .await
                .unwrap();
        }
        fake.push(Reply::Text("Answered.".into()));
        let effects = run(&h, say("new question")).await;
        assert_eq!(
            final_text(&effects).as_deref(),
            Some("Answered."),
            "{dialect:?}: {effects:#?}"
        );
        let sent = fake.requests()[0].to_string();
        assert!(sent.contains("old question"), "{sent}");
        assert!(!sent.contains(r#""text":"""#), "{sent}");
        assert!(!sent.contains(r#""content":"""#), "{sent}");
    }
}

#[tokio::test]
async fn an_empty_answer_is_asked_again_once_then_reported() {
    for dialect in [Dialect::OpenAi, Dialect::Gemini] {
        let stop = if dialect == Dialect::Gemini {
            "STOP"
        } else {
            "stop"
        };
        let empty = || Reply::Finish {
            text: String::new(),
            reason: stop.into(),
        };
        let fake = FakeLlm::start(dialect).await;
        let h = harness(&fake, Db::Sqlite).await;
        fake.push(empty());
        fake.push(Reply::Text("Second try.".into()));
        let effects = run(&h, say("question")).await;
        assert_eq!(
            final_text(&effects).as_deref(),
            Some("Second try."),
            "{dialect:?}: {effects:#?}"
        );
        fake.push(empty());
        fake.push(empty());
        let effects = run(&h, say("another")).await;
        assert_eq!(final_text(&effects), None, "{dialect:?}: {effects:#?}");
        let errors = errors_of(&effects);
        assert!(
            errors.len() == 1 && errors[0].contains("empty answer"),
            "{dialect:?}: {effects:#?}"
        );
        assert_eq!(fake.requests().len(), 4, "{dialect:?}");
        assert!(!stored_messages(&h).await.iter().any(is_empty_model_turn));
    }
}

/// A model that writes nothing after its call was refused leaves the person with what was
/// refused and why, not a bare "empty answer".
#[tokio::test]
async fn an_empty_answer_after_a_refused_call_names_the_refusal() {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, Db::Sqlite).await;
    let empty = || Reply::Finish {
        text: String::new(),
        reason: "stop".into(),
    };
    fake.push(Reply::ToolCalls(vec![(
        "calculate_voltage_drop".into(),
        json!({"circuit_length": 100, "amps": 16}),
    )]));
    fake.push(empty());
    fake.push(empty());
    let effects = run(&h, say("voltage drop 100 ft 12 awg 16 amps 120v")).await;
    assert_eq!(final_text(&effects), None, "{effects:#?}");
    let errors = errors_of(&effects);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].contains("calculate_voltage_drop was refused")
            && errors[0].contains("circuit_length")
            && !errors[0].contains("empty answer"),
        "{}",
        errors[0]
    );
    assert_eq!(fake.requests().len(), 3);
}

async fn another_users_message_leaves_the_proposal_pending(db: Db) {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, db).await;
    fake.push(Reply::ToolCalls(vec![(
        "create_task".into(),
        json!({"title": "Label panel LP-1"}),
    )]));
    let effects = run(&h, say("add a task to label LP-1")).await;
    let action_id = effects
        .iter()
        .find_map(|e| match e {
            Effect::Confirmation { action_id, .. } => Some(action_id.clone()),
            _ => None,
        })
        .expect("a confirmation");

    // Bob may not resolve alice's proposal: his message neither supersedes nor confirms it.
    let mut bob = say("no, make it LP-2");
    bob.user = "bob".into();
    let effects = run(&h, bob).await;
    assert!(
        effects.iter().any(|e| matches!(
            e,
            Effect::Refusal { user, message, .. } if user == "bob" && message.contains("alice")
        )),
        "{effects:#?}"
    );
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::Resolved { .. })),
        "{effects:#?}"
    );
    assert_eq!(
        fake.requests().len(),
        1,
        "the model is not called meanwhile"
    );
    let session = h
        .store
        .open_session(&key(), Default::default(), None)
        .await
        .unwrap();
    let open = h
        .store
        .open_pending_for_session(session.id)
        .await
        .unwrap()
        .expect("still pending");
    assert_eq!(open.id, action_id);

    // Alice confirms; the model then reads the result first and bob's words after it.
    fake.push(Reply::Text(
        "Added. Bob asked for LP-2; shall I change it?".into(),
    ));
    run(
        &h,
        Input {
            key: key(),
            user: "alice".into(),
            event_id: None,
            action: InputAction::Confirm {
                action_id: Some(action_id),
            },
        },
    )
    .await;
    let p = h
        .store
        .project_by_name(&sparky::project::Workspace::new("test", "w"), "p")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(h.store.load_project(p.id).await.unwrap().tasks.len(), 1);
    let req = &fake.requests()[1];
    let messages = req["messages"].as_array().expect("messages");
    let roles: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["role"].as_str())
        .filter(|r| *r != "system")
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "user"], "{req}");
    let last = messages.last().unwrap()["content"].to_string();
    assert!(last.contains("[bob] no, make it LP-2"), "{last}");
    assert!(
        messages.iter().any(|m| m["content"]
            .to_string()
            .contains("[alice] add a task to label LP-1")),
        "{req}"
    );
}

#[tokio::test]
async fn another_users_message_leaves_the_proposal_pending_sqlite() {
    another_users_message_leaves_the_proposal_pending(Db::Sqlite).await;
}

#[tokio::test]
async fn another_users_message_leaves_the_proposal_pending_postgres() {
    another_users_message_leaves_the_proposal_pending(Db::Postgres).await;
}

/// A bound thread's later inputs are queued under the session id known from its first one;
/// when its project is deleted behind the bot's back and the channel bound to another, the
/// next input still takes the channel's new project, as opening the thread would.
#[tokio::test]
async fn a_known_thread_whose_project_was_deleted_takes_the_channels_new_one() {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, Db::Postgres).await;
    let session = || async {
        h.store
            .open_session(&key(), Default::default(), None)
            .await
            .unwrap()
    };
    fake.push(Reply::Text("first".into()));
    assert_eq!(
        final_text(&run(&h, say("hello")).await).as_deref(),
        Some("first")
    );
    let first = session()
        .await
        .project_id
        .expect("bound to the channel's project");

    let url = h.database_url.clone().expect("postgres");
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    sqlx::query("DELETE FROM projects WHERE id = $1")
        .bind(first)
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(
        session().await.project_id,
        None,
        "the session lost its project"
    );
    let second = h
        .store
        .create_project(
            &sparky::project::Workspace::new("test", "w"),
            "q",
            Edition::Nec2023,
        )
        .await
        .unwrap();
    h.store
        .bind_channel("test", "w", "c", second.id)
        .await
        .unwrap();

    fake.push(Reply::Text("second".into()));
    assert_eq!(
        final_text(&run(&h, say("again")).await).as_deref(),
        Some("second")
    );
    assert_eq!(session().await.project_id, Some(second.id));
    // The turn ran with it: its request names the new project.
    let request = fake.requests().last().expect("asked").to_string();
    assert!(request.contains(r#"Project \"q\""#), "{request}");
}

#[tokio::test]
async fn a_tool_outside_the_sessions_mode_is_refused_when_called() {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, Db::Sqlite).await;
    // The load assistant is not offered create_task, but a model may name it anyway.
    fake.push(Reply::ToolCalls(vec![(
        "create_task".into(),
        json!({"title": "Label panel LP-1"}),
    )]));
    fake.push(Reply::Text("I can only add loads here.".into()));
    let mut input = say("I have a fridge; also add a task");
    input.action = InputAction::Message {
        text: "I have a fridge; also add a task".into(),
        mode: Some(sparky::core::session::Mode::Load),
    };
    let effects = run(&h, input).await;
    assert!(
        !effects
            .iter()
            .any(|e| matches!(e, Effect::Confirmation { .. })),
        "{effects:#?}"
    );
    let offered = fake.requests()[0]["tools"].to_string();
    assert!(!offered.contains("create_task"), "{offered}");
    let answered = fake.requests()[1].to_string();
    assert!(
        answered.contains("not available in load mode"),
        "{answered}"
    );
    let p = h
        .store
        .project_by_name(&sparky::project::Workspace::new("test", "w"), "p")
        .await
        .unwrap()
        .unwrap();
    assert!(h.store.load_project(p.id).await.unwrap().tasks.is_empty());
}

/// A window that rolls stores the model's summary with the last message it covers, so the
/// next turn reads the thread after it and sends that summary without asking for it again.
async fn a_rolled_window_stores_its_summary(db: Db) {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness_with(&fake, db, &[("SPARKY_AGENT__HISTORY_TOKEN_BUDGET", "1000")]).await;
    // Summary requests are the ones that ask for a summary; everything else is answered.
    fake.respond_with(Arc::new(|request: &Value| {
        if request
            .to_string()
            .contains("Summarise the earlier part of a conversation")
        {
            Reply::Text("They asked about feeders F-1 to F-3.".into())
        } else {
            Reply::Text(format!(
                "Noted. {}",
                "More detail on the feeder. ".repeat(60)
            ))
        }
    }));
    let session = h
        .store
        .open_session(&key(), Default::default(), None)
        .await
        .unwrap();
    let mut stored = None;
    for i in 1..=10 {
        run(&h, say(&format!("Tell me about feeder F-{i}, please."))).await;
        let now = h.store.session(session.id).await.unwrap().unwrap();
        if now.summarized_through > 0 {
            stored = Some(now);
            break;
        }
    }
    let stored = stored.expect("the window rolled and its summary was stored");
    assert_eq!(stored.summary, "They asked about feeders F-1 to F-3.");
    let messages = h.store.recent_messages(session.id, 0, 100).await.unwrap();
    assert!(
        messages.iter().any(|m| m.id == stored.summarized_through),
        "it covers a stored message"
    );
    // The next turn sends the stored summary.
    let asked = fake.requests().len();
    run(&h, say("And the service?")).await;
    let next = fake.requests()[asked].to_string();
    assert!(
        next.contains("They asked about feeders F-1 to F-3."),
        "{next}"
    );
}

#[tokio::test]
async fn a_rolled_window_stores_its_summary_sqlite() {
    a_rolled_window_stores_its_summary(Db::Sqlite).await;
}

#[tokio::test]
async fn a_rolled_window_stores_its_summary_postgres() {
    a_rolled_window_stores_its_summary(Db::Postgres).await;
}

/// A call refused for its arguments and sent again unchanged is not run again: the model gets
/// one instruction (what each argument takes, its call corrected), and a second repeat ends
/// the turn with one message to the person instead of the same refusal three times.
#[tokio::test]
async fn a_failed_call_sent_again_unchanged_is_instructed_once_then_ends_the_turn() {
    for dialect in [Dialect::OpenAi, Dialect::Gemini] {
        let fake = FakeLlm::start(dialect).await;
        let h = harness(&fake, Db::Sqlite).await;
        let wrong =
            json!({"panel": "LP-1", "poles": 20, "description": "break room", "load_va": 1000});
        for _ in 0..3 {
            fake.push(Reply::ToolCalls(vec![(
                "add_circuit".into(),
                wrong.clone(),
            )]));
        }
        fake.push(Reply::Text("must not be asked for".into()));
        let effects = run(&h, say("add a 20A circuit to LP-1 for the break room")).await;
        assert_eq!(fake.requests().len(), 3, "{dialect:?}");
        assert_eq!(fake.remaining(), 1, "{dialect:?}");
        // The second request answers the first repeat with the instruction.
        let third = fake.requests()[2].to_string();
        assert!(third.contains("already failed in this turn"), "{third}");
        assert!(third.contains("integer from 1 to 3"), "{third}");
        let errors = errors_of(&effects);
        let stopped: Vec<_> = errors.iter().filter(|m| m.contains("I stopped")).collect();
        assert_eq!(stopped.len(), 1, "{dialect:?}: {errors:#?}");
        assert!(stopped[0].contains("add_circuit"), "{}", stopped[0]);
        assert!(stopped[0].contains("maximum"), "{}", stopped[0]);
        let refusals = errors
            .iter()
            .filter(|m| m.contains("could not be prepared"));
        assert!(refusals.count() <= 1, "{dialect:?}: {errors:#?}");
        assert_eq!(final_text(&effects), None, "{dialect:?}");
    }
}

/// An argument a write tool does not know goes back to the model as a tool error naming it
/// and the arguments the tool takes, instead of being dropped.
#[tokio::test]
async fn an_unknown_argument_of_a_write_tool_is_refused_with_the_allowed_names() {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, Db::Sqlite).await;
    let args = json!({"name": "LP-2", "voltage": 208, "phase": "three", "bus_rating": 225,
                      "fed_from": "service", "spaces": 42, "colour": "grey"});
    fake.push(Reply::ToolCalls(vec![("add_panel".into(), args)]));
    fake.push(Reply::Text(
        "The colour is not something I can record.".into(),
    ));
    run(&h, say("add a 225A panel LP-2, grey")).await;
    let second = fake.requests()[1].to_string();
    assert!(second.contains("unknown argument 'colour'"), "{second}");
    assert!(
        second.contains("bus_rating") && second.contains("fed_from"),
        "{second}"
    );
}

/// While a model call has produced nothing, the person is told it is still awaited.
#[tokio::test]
async fn a_slow_model_is_announced_while_it_is_awaited() {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness_with(
        &fake,
        Db::Sqlite,
        &[("SPARKY_AGENT__WAITING_STATUS_SECS", "1")],
    )
    .await;
    fake.push(Reply::After(
        std::time::Duration::from_millis(2_500),
        Box::new(Reply::Text("Here it is.".into())),
    ));
    let effects = run(&h, say("slow one")).await;
    let waiting: Vec<String> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::Status { text } if text.starts_with("waiting for the model") => {
                Some(text.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        waiting,
        vec![
            "waiting for the model (1 s)…",
            "waiting for the model (2 s)…"
        ],
        "{effects:#?}"
    );
    assert_eq!(final_text(&effects).as_deref(), Some("Here it is."));
}

/// A server that sends nothing within the first-byte bound is asked twice, not four times,
/// and the person is told which bound it was and which setting raises it.
#[tokio::test]
async fn a_first_byte_timeout_tells_the_person_which_setting_raises_it() {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness_with(
        &fake,
        Db::Sqlite,
        &[
            ("SPARKY_LLM__FIRST_BYTE_TIMEOUT_SECS", "1"),
            ("SPARKY_LLM__MAX_RETRIES", "3"),
            ("SPARKY_LLM__RETRY_BASE_DELAY_MS", "10"),
        ],
    )
    .await;
    for _ in 0..4 {
        fake.push(Reply::After(
            std::time::Duration::from_secs(4),
            Box::new(Reply::Text("too late".into())),
        ));
    }
    let effects = run(&h, say("hello")).await;
    assert_eq!(fake.requests().len(), 2);
    let errors = errors_of(&effects);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].contains("llm.first_byte_timeout_secs"),
        "{}",
        errors[0]
    );
    assert!(errors[0].contains("within 1 s"), "{}", errors[0]);
}

/// A plain request to change the project is offered the write tool that does it, in full.
#[tokio::test]
async fn a_request_for_a_new_circuit_is_offered_add_circuit() {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, Db::Sqlite).await;
    for text in [
        "add a 20A circuit to panel LP-1 for the break room receptacles",
        "need a new 20a ckt in LP-1 for the breakroom recepts",
    ] {
        fake.push(Reply::Text("ok".into()));
        run(&h, say(text)).await;
        let asked = fake.requests().last().cloned().unwrap_or_default();
        let offered: Vec<&str> = asked["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        assert!(offered.contains(&"add_circuit"), "{text}: {offered:?}");
    }
}
