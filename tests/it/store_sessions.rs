//! Store: sessions, history, session locks, event de-duplication and audit, on SQLite and
//! Postgres.

use crate::support::db;

use std::sync::Arc;

use chrono::Utc;
use db::{key, tool_call_msg, tool_result_msg, user_msg, TestDb};
use sparky::core::session::Mode;
use sparky::llm::ChatMessage;
use sparky::nec::units::Edition;
use sparky::store::{AuditEntry, AuditKind, NewQueuedInput, Store, StoreError};

async fn open_session_is_idempotent(db: TestDb) {
    let store = db.store();
    let p = store
        .create_project(&sparky::project::Workspace::local(), "P", Edition::Nec2023)
        .await
        .expect("p");
    let s = store
        .open_session(&key("t1"), Mode::Load, Some(p.id))
        .await
        .expect("open");
    assert_eq!(s.key, key("t1"));
    assert_eq!(s.mode, Mode::Load);
    assert_eq!(s.project_id, Some(p.id));
    assert_eq!(s.summary, "");
    assert_eq!(s.summarized_through, 0);

    // The same key finds the same session, unchanged by the new arguments.
    let again = store
        .open_session(&key("t1"), Mode::General, None)
        .await
        .expect("again");
    assert_eq!(again, s);
    let other = store
        .open_session(&key("t2"), Mode::General, None)
        .await
        .expect("other");
    assert_ne!(other.id, s.id);
    assert_eq!(store.session(s.id).await.expect("get"), Some(s.clone()));
    assert_eq!(store.session(other.id + 100).await.expect("none"), None);

    assert!(matches!(
        store
            .open_session(&key("t3"), Mode::General, Some(p.id + 100))
            .await,
        Err(StoreError::NotFound(_))
    ));
}

async fn concurrent_opens_share_one_session(db: TestDb) {
    let store = db.store();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            store
                .open_session(&key("race"), Mode::General, None)
                .await
                .expect("open")
                .id
        }));
    }
    let mut ids = Vec::new();
    for t in tasks {
        ids.push(t.await.expect("task"));
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "{ids:?}");
}

async fn session_settings_are_saved(db: TestDb) {
    let store = db.store();
    let p = store
        .create_project(&sparky::project::Workspace::local(), "P", Edition::Nec2023)
        .await
        .expect("p");
    let s = store
        .open_session(&key("t"), Mode::General, None)
        .await
        .expect("open");
    store
        .set_session_mode(s.id, Mode::Source)
        .await
        .expect("mode");
    store
        .set_session_project(s.id, Some(p.id))
        .await
        .expect("project");
    store
        .set_session_summary(s.id, "They added LP-1.", 42)
        .await
        .expect("summary");
    let back = store.session(s.id).await.expect("get").expect("exists");
    assert_eq!(back.mode, Mode::Source);
    assert_eq!(back.project_id, Some(p.id));
    assert_eq!(back.summary, "They added LP-1.");
    assert_eq!(back.summarized_through, 42);
    store
        .set_session_project(s.id, None)
        .await
        .expect("unset project");
    assert_eq!(
        store
            .session(s.id)
            .await
            .expect("get")
            .expect("exists")
            .project_id,
        None
    );

    let missing = s.id + 100;
    assert!(matches!(
        store.set_session_mode(missing, Mode::Load).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.set_session_project(missing, None).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.set_session_project(s.id, Some(p.id + 100)).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.set_session_summary(missing, "x", 1).await,
        Err(StoreError::NotFound(_))
    ));
}

async fn messages_round_trip_and_windows(db: TestDb) {
    let store = db.store();
    let s = store
        .open_session(&key("t"), Mode::General, None)
        .await
        .expect("open");
    let other = store
        .open_session(&key("other"), Mode::General, None)
        .await
        .expect("other");
    let before = Utc::now() - chrono::Duration::seconds(5);
    let m1 = store
        .append_message(s.id, &user_msg("add a 20 A circuit to LP-1"))
        .await
        .expect("m1");
    let m2 = store
        .append_message(s.id, &tool_call_msg("call_1"))
        .await
        .expect("m2");
    store
        .append_message(other.id, &user_msg("noise"))
        .await
        .expect("noise");
    let m3 = store
        .append_message(s.id, &tool_result_msg("call_1"))
        .await
        .expect("m3");
    let m4 = store
        .append_message(
            s.id,
            &sparky::store::NewMessage {
                message: ChatMessage::assistant("Done: circuit 12 added. ✅ «ünïcode»"),
                author: None,
                event_id: None,
            },
        )
        .await
        .expect("m4");
    assert!(m1.id < m2.id && m2.id < m3.id && m3.id < m4.id);
    assert_eq!(m1.session_id, s.id);
    assert_eq!(m1.author.as_deref(), Some("U1"));
    assert_eq!(m1.message, user_msg("add a 20 A circuit to LP-1").message);
    assert_eq!(
        m1.tokens,
        i64::try_from(m1.message.estimated_tokens()).expect("fits")
    );
    assert!(m1.created_at > before);

    let all = store.recent_messages(s.id, 0, 100).await.expect("all");
    assert_eq!(all, vec![m1.clone(), m2.clone(), m3.clone(), m4.clone()]);
    // The newest `limit`, oldest first.
    let last2 = store.recent_messages(s.id, 0, 2).await.expect("last 2");
    assert_eq!(last2, vec![m3.clone(), m4.clone()]);
    // Only messages after a summarized id.
    let after = store
        .recent_messages(s.id, m2.id, 100)
        .await
        .expect("after");
    assert_eq!(after, vec![m3.clone(), m4.clone()]);
    let after_window = store.recent_messages(s.id, m1.id, 1).await.expect("one");
    assert_eq!(after_window, vec![m4.clone()]);
    assert!(store
        .recent_messages(s.id, 0, 0)
        .await
        .expect("zero")
        .is_empty());
    assert!(store
        .recent_messages(s.id, m4.id, 10)
        .await
        .expect("none after")
        .is_empty());
    assert!(store
        .recent_messages(s.id + other.id + 100, 0, 10)
        .await
        .expect("missing session")
        .is_empty());

    assert!(matches!(
        store
            .append_message(s.id + other.id + 100, &user_msg("x"))
            .await,
        Err(StoreError::NotFound(_))
    ));
}

async fn history_survives_reopening(db: TestDb) {
    let store = db.store();
    let s = store
        .open_session(&key("durable"), Mode::Load, None)
        .await
        .expect("open");
    let mut written = Vec::new();
    for i in 0..5 {
        written.push(
            store
                .append_message(s.id, &user_msg(&format!("message {i}")))
                .await
                .expect("append"),
        );
    }
    written.push(
        store
            .append_message(s.id, &tool_call_msg("c1"))
            .await
            .expect("call"),
    );
    store
        .set_session_summary(s.id, "summary so far", written[1].id)
        .await
        .expect("summary");
    drop(store);
    // As if the process stopped: every pool closed, then the database opened afresh.
    db.close_all().await;

    let reopened = db.reopen().await;
    let back = reopened
        .open_session(&key("durable"), Mode::General, None)
        .await
        .expect("reopen session");
    assert_eq!(back.id, s.id);
    assert_eq!(back.mode, Mode::Load);
    assert_eq!(back.summary, "summary so far");
    assert_eq!(back.summarized_through, written[1].id);
    let history = reopened
        .recent_messages(s.id, 0, 50)
        .await
        .expect("history");
    assert_eq!(history, written);
    let next = reopened
        .append_message(s.id, &user_msg("after restart"))
        .await
        .expect("append after restart");
    assert!(next.id > written[5].id);
}

async fn claim_event_deduplicates(db: TestDb) {
    let store = db.store();
    assert!(store.claim_event("slack", "Ev1").await.expect("first"));
    assert!(!store.claim_event("slack", "Ev1").await.expect("retry"));
    assert!(store
        .claim_event("discord", "Ev1")
        .await
        .expect("other platform"));
    assert!(store
        .claim_event("slack", "Ev2")
        .await
        .expect("other event"));

    // Many replicas receiving the same delivery: exactly one claims it.
    let second = db.reopen().await;
    let mut tasks = Vec::new();
    for i in 0..16 {
        let store = if i % 2 == 0 {
            store.clone()
        } else {
            second.clone()
        };
        tasks.push(tokio::spawn(async move {
            store.claim_event("slack", "Ev-race").await.expect("claim")
        }));
    }
    let mut claimed = 0;
    for t in tasks {
        if t.await.expect("task") {
            claimed += 1;
        }
    }
    assert_eq!(claimed, 1);
}

async fn claim_request_refuses_replays_within_the_window(db: TestDb) {
    let store = db.store();
    let window = std::time::Duration::from_secs(600);
    let scope = "slack:signed-request";
    assert!(store
        .claim_request(scope, "d1", window)
        .await
        .expect("first"));
    assert!(!store
        .claim_request(scope, "d1", window)
        .await
        .expect("replay"));
    assert!(store
        .claim_request("discord:signed-request", "d1", window)
        .await
        .expect("other scope"));
    // Another replica on the same database agrees.
    let second = db.reopen().await;
    assert!(!second
        .claim_request(scope, "d1", window)
        .await
        .expect("elsewhere"));
    // Event ids are not forgotten with request digests.
    assert!(store.claim_event("slack", "Ev-keep").await.expect("event"));
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    // Once the window has passed the digest is forgotten (its timestamp is stale by then).
    let short = std::time::Duration::from_millis(5);
    assert!(store
        .claim_request(scope, "d1", short)
        .await
        .expect("after the window"));
    assert!(!store
        .claim_event("slack", "Ev-keep")
        .await
        .expect("event kept"));
}

/// A lease is one owner's at a time, on every store of the database, until it is released
/// or lapses.
async fn lease_exclusive(first: Arc<dyn Store>, second: Arc<dyn Store>, session_id: i64) {
    let now = Utc::now();
    let until = now + chrono::Duration::seconds(30);
    assert!(first
        .take_lease(session_id, "a", until, now)
        .await
        .expect("take"));
    // Taking it again as its owner renews it.
    assert!(first
        .take_lease(session_id, "a", until, now)
        .await
        .expect("again"));
    assert!(!second
        .take_lease(session_id, "b", until, now)
        .await
        .expect("held"));
    assert!(!second
        .renew_lease(session_id, "b", until)
        .await
        .expect("renew b"));
    assert!(!second
        .release_lease(session_id, "b")
        .await
        .expect("release b"));
    assert!(first
        .renew_lease(session_id, "a", until)
        .await
        .expect("renew a"));
    // Once lapsed, another owner takes it in one step and the old owner has nothing left.
    let later = until + chrono::Duration::seconds(1);
    assert!(second
        .take_lease(
            session_id,
            "b",
            later + chrono::Duration::seconds(30),
            later
        )
        .await
        .expect("after lapse"));
    assert!(!first
        .renew_lease(session_id, "a", until)
        .await
        .expect("lost"));
    assert!(!first
        .release_lease(session_id, "a")
        .await
        .expect("lost release"));
    assert!(second
        .release_lease(session_id, "b")
        .await
        .expect("release"));
    assert!(first
        .take_lease(session_id, "a", until, now)
        .await
        .expect("free again"));
    assert!(first
        .release_lease(session_id, "a")
        .await
        .expect("release a"));
}

async fn leases_are_exclusive_and_lapse(db: TestDb) {
    let store = db.store();
    let a = store
        .open_session(&key("a"), Mode::General, None)
        .await
        .expect("a");
    let b = store
        .open_session(&key("b"), Mode::General, None)
        .await
        .expect("b");
    lease_exclusive(store.clone(), store.clone(), a.id).await;
    // Another thread's lease is independent.
    let now = Utc::now();
    let until = now + chrono::Duration::seconds(30);
    assert!(store.take_lease(a.id, "x", until, now).await.expect("a"));
    assert!(store.take_lease(b.id, "y", until, now).await.expect("b"));
    // Concurrent takers: exactly one wins.
    let mut tasks = Vec::new();
    let c = store
        .open_session(&key("c"), Mode::General, None)
        .await
        .expect("c");
    for i in 0..16 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            store
                .take_lease(c.id, &format!("owner-{i}"), until, now)
                .await
                .expect("take")
        }));
    }
    let mut winners = 0;
    for t in tasks {
        winners += usize::from(t.await.expect("task"));
    }
    assert_eq!(winners, 1);
}

async fn leases_hold_across_stores(db: TestDb) {
    // A second pool (or a second store on the SQLite file) stands for another process.
    let first = db.store();
    let second = db.reopen().await;
    let s = first
        .open_session(&key("shared"), Mode::General, None)
        .await
        .expect("open");
    lease_exclusive(first.clone(), second.clone(), s.id).await;
    lease_exclusive(second, first, s.id).await;
}

fn queued(session_id: i64, text: &str, event: Option<&str>, waiter_secs: i64) -> NewQueuedInput {
    NewQueuedInput {
        session_id,
        platform: "slack".into(),
        user: "U1".into(),
        event_id: event.map(str::to_string),
        action: serde_json::json!({"kind": "message", "text": text}),
        waiter_until: Utc::now() + chrono::Duration::seconds(waiter_secs),
    }
}

async fn inbox_keeps_order_and_drops_redeliveries(db: TestDb) {
    let store = db.store();
    let s = store
        .open_session(&key("inbox"), Mode::General, None)
        .await
        .expect("open");
    assert_eq!(store.next_input(s.id).await.expect("empty"), None);
    let one = store
        .enqueue_input(&queued(s.id, "one", Some("Ev1"), 30))
        .await
        .expect("one")
        .expect("new");
    // The same platform event again is a redelivery: nothing is queued.
    assert_eq!(
        store
            .enqueue_input(&queued(s.id, "one again", Some("Ev1"), 30))
            .await
            .expect("dup"),
        None
    );
    assert!(!store.claim_event("slack", "Ev1").await.expect("claimed"));
    let two = store
        .enqueue_input(&queued(s.id, "two", None, 30))
        .await
        .expect("two")
        .expect("new");
    assert!(two.id > one.id);
    assert_eq!(one.action["text"], "one");
    assert!(!one.running);
    assert_eq!(
        store.next_input(s.id).await.expect("next"),
        Some(one.clone())
    );
    assert!(store.start_input(one.id).await.expect("start"));
    let started = store
        .queued_input(one.id)
        .await
        .expect("read")
        .expect("there");
    assert!(started.running);
    store.finish_input(one.id).await.expect("finish");
    assert_eq!(store.queued_input(one.id).await.expect("gone"), None);
    assert!(!store.start_input(one.id).await.expect("start gone"));
    assert!(!store
        .renew_waiter(one.id, Utc::now())
        .await
        .expect("renew gone"));
    assert_eq!(
        store.next_input(s.id).await.expect("next").map(|i| i.id),
        Some(two.id)
    );
    // An input for a session that does not exist is refused, not lost silently.
    assert!(store
        .enqueue_input(&queued(s.id + 1000, "nowhere", None, 30))
        .await
        .is_err());
}

async fn orphaned_threads_are_found(db: TestDb) {
    let store = db.store();
    let live = store
        .open_session(&key("live"), Mode::General, None)
        .await
        .expect("live");
    let dead_waiter = store
        .open_session(&key("dead-waiter"), Mode::General, None)
        .await
        .expect("dead waiter");
    let dead_turn = store
        .open_session(&key("dead-turn"), Mode::General, None)
        .await
        .expect("dead turn");
    let held = store
        .open_session(&key("held"), Mode::General, None)
        .await
        .expect("held");
    store
        .enqueue_input(&queued(live.id, "waiting", None, 30))
        .await
        .expect("live");
    store
        .enqueue_input(&queued(dead_waiter.id, "abandoned", None, -5))
        .await
        .expect("dead waiter");
    let running = store
        .enqueue_input(&queued(dead_turn.id, "mid-turn", None, 30))
        .await
        .expect("dead turn")
        .expect("new");
    store.start_input(running.id).await.expect("start");
    let now = Utc::now();
    // The process that started it held a lease that has lapsed.
    assert!(store
        .take_lease(
            dead_turn.id,
            "gone",
            now - chrono::Duration::seconds(1),
            now
        )
        .await
        .expect("lease"));
    // A running turn under a live lease is nobody else's business.
    let held_input = store
        .enqueue_input(&queued(held.id, "running", None, 30))
        .await
        .expect("held")
        .expect("new");
    store.start_input(held_input.id).await.expect("start");
    assert!(store
        .take_lease(held.id, "alive", now + chrono::Duration::seconds(30), now)
        .await
        .expect("lease"));
    let mut found = store
        .orphaned_sessions(Utc::now(), 10)
        .await
        .expect("orphans");
    found.sort_unstable();
    let mut want = vec![dead_waiter.id, dead_turn.id];
    want.sort_unstable();
    assert_eq!(found, want);
}

async fn audit_round_trip(db: TestDb) {
    let store = db.store();
    let s = store
        .open_session(&key("t"), Mode::General, None)
        .await
        .expect("open");
    let at = Utc::now();
    let entries = vec![
        AuditEntry {
            session_id: Some(s.id),
            actor: "model".to_string(),
            kind: AuditKind::Execution,
            tool: Some("calculate_voltage_drop".to_string()),
            action_id: None,
            args: serde_json::json!({"length_ft": 150, "amps": 16.0}),
            result: serde_json::json!({"percent": 2.9}),
            is_error: false,
            duration_ms: 3,
            at,
        },
        AuditEntry {
            session_id: Some(s.id),
            actor: "U9".to_string(),
            kind: AuditKind::Refused,
            tool: None,
            action_id: Some("act-1".to_string()),
            args: serde_json::json!({}),
            result: serde_json::json!({"error": "only U1 can confirm"}),
            is_error: true,
            duration_ms: 0,
            at,
        },
    ];
    for e in &entries {
        store.record_audit(e).await.expect("record");
    }
    store
        .record_audit(&AuditEntry {
            session_id: None,
            actor: "system".to_string(),
            kind: AuditKind::Expired,
            tool: None,
            action_id: Some("act-0".to_string()),
            args: serde_json::Value::Null,
            result: serde_json::json!("expired"),
            is_error: false,
            duration_ms: 0,
            at,
        })
        .await
        .expect("sessionless");
    let back = store.audit_for_session(s.id).await.expect("audit");
    assert_eq!(back.len(), 2);
    assert!(back[0].id < back[1].id);
    for (got, want) in back.iter().zip(&entries) {
        let mut want = want.clone();
        want.at = got.entry.at;
        assert_eq!(&got.entry, &want);
        assert!((got.entry.at - at).num_milliseconds().abs() < 1);
    }
    assert!(store
        .audit_for_session(s.id + 100)
        .await
        .expect("none")
        .is_empty());
}

async fn nul_characters_are_stored_safely(db: TestDb) {
    // Postgres refuses NUL in text and JSON; the store replaces it on both backends alike.
    let store = db.store();
    let s = store
        .open_session(&key("nul"), Mode::General, None)
        .await
        .expect("open");
    let m = store
        .append_message(s.id, &user_msg("bad\0byte"))
        .await
        .expect("append");
    assert_eq!(m.message, ChatMessage::user("bad\u{FFFD}byte"));
    let back = store.recent_messages(s.id, 0, 10).await.expect("read");
    assert_eq!(back, vec![m]);
}

db::both_backends!(
    open_session_is_idempotent,
    concurrent_opens_share_one_session,
    session_settings_are_saved,
    messages_round_trip_and_windows,
    history_survives_reopening,
    claim_event_deduplicates,
    claim_request_refuses_replays_within_the_window,
    leases_are_exclusive_and_lapse,
    leases_hold_across_stores,
    inbox_keeps_order_and_drops_redeliveries,
    orphaned_threads_are_found,
    audit_round_trip,
    nul_characters_are_stored_safely,
);
