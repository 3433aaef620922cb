//! A lost lease stops its turn: two replicas (two agents, each with its own pool) on one
//! database, one of them stalled past `agent.lease_secs` (the `turn_write_stall` failpoint) or
//! robbed of its lease while the model thinks. The stalled or robbed turn writes nothing once
//! another holder took the thread, and is told it was stopped. Both stores.

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use sparky::config::Config;
use sparky::core::lease::LEASE_LOST;
use sparky::core::session::SessionKey;
use sparky::core::{Agent, CollectSink, Effect, Input, InputAction};
use sparky::store::Store;
use sparky::tools::default_registry;
use support::bot::{fresh_postgres_url, Db};
use support::fake_llm::{Dialect, FakeLlm, Reply};

/// One replica: its own pool on the shared database and its own agent (its own lease owner
/// names).
struct Replica {
    agent: Arc<Agent>,
    store: Arc<dyn Store>,
}

async fn replicas(fake: &FakeLlm, db: Db, dir: &tempfile::TempDir) -> (Replica, Replica) {
    sparky::llm::tls::install_default_crypto_provider();
    let mut env: BTreeMap<String, String> = fake.env().into_iter().collect();
    env.insert("SPARKY_LLM__MAX_RETRIES".into(), "0".into());
    // The shortest lease the configuration allows: renewed every second.
    env.insert("SPARKY_AGENT__LEASE_SECS".into(), "3".into());
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
    let mut made = Vec::new();
    for _ in 0..2 {
        let store = sparky::app::connect_store(&config).await.unwrap();
        let agent = Agent::new(
            store.clone(),
            sparky::llm::resilient::build_provider(&config),
            Arc::new(default_registry(1000)),
            config.agent.clone(),
            &config.limits,
        );
        made.push(Replica {
            agent: Arc::new(agent),
            store,
        });
    }
    let b = made.pop().unwrap();
    let a = made.pop().unwrap();
    (a, b)
}

fn key() -> SessionKey {
    SessionKey::new("test", "w", "c", "thread-1")
}

fn say(user: &str, text: &str) -> Input {
    Input {
        key: key(),
        user: user.into(),
        event_id: None,
        action: InputAction::Message {
            text: text.into(),
            mode: None,
        },
    }
}

/// Runs `input` on `replica` in a task of its own; its effects come back with it.
fn spawn_turn(replica: &Replica, input: Input) -> tokio::task::JoinHandle<Vec<Effect>> {
    let agent = replica.agent.clone();
    tokio::spawn(async move {
        let sink = CollectSink::default();
        agent.handle(input, &sink).await.unwrap();
        sink.take()
    })
}

fn texts(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Text { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

fn errors(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Error { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// What the thread stored: its messages as JSON text, and how many model turns were audited.
async fn stored(store: &dyn Store) -> (String, usize) {
    let session = store
        .open_session(&key(), Default::default(), None)
        .await
        .unwrap();
    let messages = store.recent_messages(session.id, 0, 100).await.unwrap();
    let text = messages
        .iter()
        .map(|m| serde_json::to_string(&m.message).unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    let turns = store
        .audit_for_session(session.id)
        .await
        .unwrap()
        .iter()
        .filter(|a| a.entry.tool.as_deref() == Some("model_turn"))
        .count();
    (text, turns)
}

/// Replica A stalls for 5 s right before its turn's write (past the 3 s lease, renewing
/// nothing); replica B takes the thread over, closes A's input as interrupted and answers its
/// own. When A wakes, its write is refused: only B's answer and B's turn are stored.
async fn a_stalled_holder_never_writes_after_another_took_over(db: Db) {
    std::env::set_var("SPARKY_FAILPOINT", "turn_write_stall");
    std::env::set_var("SPARKY_FAILPOINT_STALL_MS", "5000");
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = replicas(&fake, db, &dir).await;
    fake.push(Reply::Text("Answer from the stalled replica.".into()));
    fake.push(Reply::Text(
        "Answer from the replica that took over.".into(),
    ));
    let stalled = spawn_turn(&a, say("alice", "What size is a 20 A branch?"));
    // Past the lease (3 s) while A is still stalled (5 s).
    tokio::time::sleep(Duration::from_millis(3_600)).await;
    let taken_over = spawn_turn(&b, say("bob", "And for 30 A?")).await.unwrap();
    let stalled = stalled.await.unwrap();
    std::env::remove_var("SPARKY_FAILPOINT");

    assert_eq!(
        texts(&taken_over),
        vec!["Answer from the replica that took over.".to_string()]
    );
    assert!(
        errors(&taken_over)
            .iter()
            .any(|e| e.contains("was interrupted")),
        "{taken_over:?}"
    );
    assert!(texts(&stalled).is_empty(), "{stalled:?}");
    assert_eq!(errors(&stalled), vec![LEASE_LOST.to_string()]);
    let (messages, turns) = stored(b.store.as_ref()).await;
    assert!(
        messages.contains("Answer from the replica that took over."),
        "{messages}"
    );
    assert!(
        !messages.contains("Answer from the stalled replica."),
        "{messages}"
    );
    assert_eq!(turns, 1, "only the new holder's turn is audited");
    drop(a);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stalled_holder_never_writes_after_another_took_over_sqlite() {
    a_stalled_holder_never_writes_after_another_took_over(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stalled_holder_never_writes_after_another_took_over_postgres() {
    a_stalled_holder_never_writes_after_another_took_over(Db::Postgres).await;
}

/// While the model takes 8 s, another process takes the thread's lease: A's next renewal
/// fails and its turn is cancelled then, without waiting for the model, and stores nothing.
async fn a_turn_whose_lease_is_taken_is_cancelled(db: Db) {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = replicas(&fake, db, &dir).await;
    fake.push(Reply::After(
        Duration::from_secs(8),
        Box::new(Reply::Text("A late answer.".into())),
    ));
    let turn = spawn_turn(&a, say("alice", "What size is a 20 A branch?"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let session = b
        .store
        .open_session(&key(), Default::default(), None)
        .await
        .unwrap();
    // Another process's take, as after a lapse: `at` past A's expiry.
    let far = chrono::Utc::now() + chrono::Duration::hours(1);
    assert!(b
        .store
        .take_lease(session.id, "another-process", far, far)
        .await
        .unwrap());
    // Cancelled at A's next renewal (every second), long before the model answers.
    let effects = tokio::time::timeout(Duration::from_secs(5), turn)
        .await
        .expect("the turn was cancelled before the model answered")
        .unwrap();
    assert!(texts(&effects).is_empty(), "{effects:?}");
    assert_eq!(errors(&effects), vec![LEASE_LOST.to_string()]);
    let (messages, turns) = stored(b.store.as_ref()).await;
    assert!(!messages.contains("A late answer."), "{messages}");
    assert_eq!(turns, 0);
    // The lease is still the other process's: the cancelled turn did not release it.
    assert!(!a
        .store
        .take_lease(session.id, "a-third", far, chrono::Utc::now())
        .await
        .unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_turn_whose_lease_is_taken_is_cancelled_sqlite() {
    a_turn_whose_lease_is_taken_is_cancelled(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_turn_whose_lease_is_taken_is_cancelled_postgres() {
    a_turn_whose_lease_is_taken_is_cancelled(Db::Postgres).await;
}
