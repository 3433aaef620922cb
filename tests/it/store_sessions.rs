//! Store: sessions and their history ([`SessionStore`](sparky::store::SessionStore)), on SQLite
//! and Postgres.

use crate::support::db;

use chrono::Utc;
use db::{key, tool_call_msg, tool_result_msg, user_msg, TestDb};
use sparky::core::session::Mode;
use sparky::llm::ChatMessage;
use sparky::nec::units::Edition;
use sparky::store::StoreError;

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
            &sparky::core::history::new_message(
                &ChatMessage::assistant("Done: circuit 12 added. ✅ «ünïcode»"),
                None,
                None,
            ),
        )
        .await
        .expect("m4");
    assert!(m1.id < m2.id && m2.id < m3.id && m3.id < m4.id);
    assert_eq!(m1.session_id, s.id);
    assert_eq!(m1.author.as_deref(), Some("U1"));
    assert_eq!(m1.message, user_msg("add a 20 A circuit to LP-1").message);
    assert_eq!(
        m1.tokens,
        i64::try_from(ChatMessage::from(m1.message.clone()).estimated_tokens()).expect("fits")
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

/// A person's message stored with the read of the window it joins: the same rows as an
/// append and a read in a row, the new message last, within `after` and `limit`.
async fn a_question_is_stored_with_its_window(db: TestDb) {
    let store = db.store();
    let s = store
        .open_session(&key("asked"), Mode::General, None)
        .await
        .expect("open");
    let [m1, m2, m3] = db::append_tool_turn(store.as_ref(), s.id, "first").await;
    let asked = store
        .append_and_recent(s.id, &user_msg("and the feeders?"), m1.id, 100)
        .await
        .expect("ask");
    assert_eq!(asked.project_revision, None, "a thread without a project");
    let asked = asked.messages;
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert_eq!(asked[..2], [m2.clone(), m3.clone()]);
    let q = &asked[2];
    assert!(q.id > m3.id);
    assert_eq!(q.message, user_msg("and the feeders?").message);
    assert_eq!(q.author.as_deref(), Some("U1"));
    assert_eq!(
        store.recent_messages(s.id, m1.id, 100).await.expect("read"),
        asked,
        "the same as reading after the append"
    );
    // The newest `limit`, the question among them.
    let two = store
        .append_and_recent(s.id, &user_msg("again"), 0, 2)
        .await
        .expect("ask again")
        .messages;
    assert_eq!(two.len(), 2);
    assert_eq!(two[0], asked[2]);
    assert_eq!(two[1].message, user_msg("again").message);

    // A thread with a project: Postgres reads the project's revision in the same statement,
    // and a read of the project at that revision is the project as it is.
    let p = store
        .create_project(
            &sparky::project::Workspace::local(),
            "Seen",
            Edition::Nec2023,
        )
        .await
        .expect("project");
    let bound = store
        .open_session(&key("asked-bound"), Mode::General, Some(p.id))
        .await
        .expect("open");
    let seen = store
        .append_and_recent(bound.id, &user_msg("LP-1?"), 0, 10)
        .await
        .expect("ask")
        .project_revision;
    match db.backend() {
        sparky::store::Backend::Postgres => {
            let (project, revision) = seen.expect("the revision read with the thread");
            assert_eq!(project, p.id);
            let data = store
                .load_project_seen(p.id, Some(revision))
                .await
                .expect("read at it");
            assert_eq!(data, store.load_project(p.id).await.expect("read"));
            // A change after that read: the revision moved, and reading at the new one
            // shows the change although the old read is kept.
            store
                .add_panel(p.id, &db::panel("LP-1"))
                .await
                .expect("panel");
            let (_, moved) = store
                .append_and_recent(bound.id, &user_msg("and now?"), 0, 10)
                .await
                .expect("ask")
                .project_revision
                .expect("revision");
            assert!(moved > revision);
            let data = store
                .load_project_seen(p.id, Some(moved))
                .await
                .expect("read at it");
            assert_eq!(data.panels.len(), 1);
        }
        sparky::store::Backend::Sqlite => assert_eq!(seen, None, "no network: looked up when read"),
    }
    assert!(matches!(
        store
            .append_and_recent(s.id + 1000, &user_msg("x"), 0, 10)
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
    assert_eq!(
        ChatMessage::from(m.message.clone()),
        ChatMessage::user("bad\u{FFFD}byte")
    );
    let back = store.recent_messages(s.id, 0, 10).await.expect("read");
    assert_eq!(back, vec![m]);
}

/// On Postgres a large tool result is kept with lz4 or uncompressed, never with pglz, whose
/// compression cost more server time than the rest of a turn's writes; it reads back whole.
async fn large_results_are_not_compressed_with_pglz(db: TestDb) {
    let store = db.store();
    let s = store
        .open_session(&key("large"), Mode::General, None)
        .await
        .expect("open");
    let rows: Vec<String> = (0..200)
        .map(|i| format!("circuit {i}: 20 A, 12 AWG copper, 1,200 VA"))
        .collect();
    let msg = sparky::core::history::new_message(
        &ChatMessage::Tool {
            results: vec![sparky::llm::ToolResult {
                call_id: "call_1".into(),
                name: "describe_panel".into(),
                content: serde_json::json!({ "circuits": rows }).into(),
                is_error: false,
            }],
        },
        None,
        None,
    );
    let stored = store.append_message(s.id, &msg).await.expect("append");
    let back = store.recent_messages(s.id, 0, 10).await.expect("read");
    assert_eq!(back, [stored]);
    let Some(url) = db.postgres_url() else {
        return;
    };
    let pool = sqlx::PgPool::connect(url).await.expect("postgres");
    let (size, method): (i64, Option<String>) = sqlx::query_as(
        "SELECT octet_length(content::text)::int8, pg_column_compression(content) \
         FROM messages WHERE session_id = $1",
    )
    .bind(s.id)
    .fetch_one(&pool)
    .await
    .expect("stored row");
    assert!(
        size > 8_000,
        "a result large enough to be compressed: {size} bytes"
    );
    assert_ne!(method.as_deref(), Some("pglz"));
    pool.close().await;
}

db::both_backends!(
    open_session_is_idempotent,
    large_results_are_not_compressed_with_pglz,
    concurrent_opens_share_one_session,
    session_settings_are_saved,
    messages_round_trip_and_windows,
    a_question_is_stored_with_its_window,
    history_survives_reopening,
    nul_characters_are_stored_safely,
);
