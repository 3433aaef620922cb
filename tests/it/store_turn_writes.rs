//! Store: a model step's messages and audit rows written together (`append_turn_step`), on
//! SQLite and Postgres.

use crate::support::db;

use chrono::{SubsecRound, Utc};
use db::{key, tool_call_msg, tool_result_msg, user_msg, TestDb};
use sparky::core::session::Mode;
use std::sync::Arc;

use sparky::store::{AuditEntry, AuditKind, PostgresStore, SqliteStore, Store, StoreError};
use sqlx::{Acquire, Connection};

fn audit(session_id: i64, tool: &str, is_error: bool) -> AuditEntry {
    AuditEntry {
        session_id: Some(session_id),
        actor: "U1".to_string(),
        kind: AuditKind::Execution,
        tool: Some(tool.to_string()),
        action_id: None,
        args: serde_json::json!({"panel": "LP-1", "note": "nul\0byte"}),
        result: serde_json::json!({"percent": 2.9}).into(),
        is_error,
        duration_ms: 4,
        at: Utc::now().trunc_subsecs(6),
    }
}

async fn a_step_is_stored_in_order_with_its_audit_rows(db: TestDb) {
    let store = db.store();
    let s = store
        .open_session(&key("step"), Mode::General, None)
        .await
        .expect("open");
    let question = store
        .append_message(s.id, &user_msg("how far?"))
        .await
        .expect("user");
    let audits = vec![
        audit(s.id, "calculate_voltage_drop", false),
        audit(s.id, "describe_panel", true),
    ];
    store
        .append_turn_step(s.id, &[tool_call_msg("c1"), tool_result_msg("c1")], &audits)
        .await
        .expect("step");
    // Messages only, then audit rows only.
    let answer =
        sparky::core::history::new_message(&sparky::llm::ChatMessage::assistant("3 %"), None, None);
    store
        .append_turn_step(s.id, std::slice::from_ref(&answer), &[])
        .await
        .expect("answer");
    store
        .append_turn_step(s.id, &[], &[audit(s.id, "model_turn", false)])
        .await
        .expect("turn audit");
    store
        .append_turn_step(s.id, &[], &[])
        .await
        .expect("nothing");

    let history = store.recent_messages(s.id, 0, 10).await.expect("read");
    let got: Vec<_> = history.iter().map(|m| m.message.clone()).collect();
    assert_eq!(
        got,
        vec![
            question.message,
            tool_call_msg("c1").message,
            tool_result_msg("c1").message,
            answer.message,
        ]
    );
    assert!(history.windows(2).all(|w| w[0].id < w[1].id));
    assert!(history[1..].iter().all(|m| m.author.is_none()));

    let rows = store.audit_for_session(s.id).await.expect("audit");
    let tools: Vec<_> = rows.iter().map(|r| r.entry.tool.clone()).collect();
    assert_eq!(
        tools,
        vec![
            Some("calculate_voltage_drop".to_string()),
            Some("describe_panel".to_string()),
            Some("model_turn".to_string()),
        ]
    );
    assert!(rows[1].entry.is_error && !rows[0].entry.is_error);
    assert_eq!(rows[0].entry.duration_ms, 4);
    assert_eq!(rows[0].entry.at, audits[0].at);
    // NUL is replaced on both backends, as in single appends.
    assert_eq!(rows[0].entry.args["note"], "nul\u{FFFD}byte");
}

async fn a_step_for_a_missing_session_writes_nothing(db: TestDb) {
    let store = db.store();
    let s = store
        .open_session(&key("real"), Mode::General, None)
        .await
        .expect("open");
    let missing = s.id + 1000;
    let result = store
        .append_turn_step(
            missing,
            &[tool_call_msg("c1"), tool_result_msg("c1")],
            // The audit row names a real session: only the messages can fail, and then the
            // audit row must not be kept either.
            &[audit(s.id, "calculate_voltage_drop", false)],
        )
        .await;
    assert!(
        matches!(result, Err(StoreError::NotFound(_))),
        "got {result:?}"
    );
    assert!(store
        .audit_for_session(s.id)
        .await
        .expect("audit")
        .is_empty());
    assert!(store
        .recent_messages(missing, 0, 10)
        .await
        .expect("read")
        .is_empty());
}

/// A write cancelled between its `BEGIN` and the moment sqlx hands out the transaction (a
/// turn whose lease was lost mid-write) leaves its pooled connection inside that
/// transaction; forgetting the transaction forges the same state. With one connection in the
/// pool, the next write would get that connection back: the pool closes it instead, so the
/// write goes through (not "database is locked" on SQLite) and another pool sees it.
async fn a_connection_left_inside_a_transaction_is_closed_not_reused(db: TestDb) {
    let store: Arc<dyn Store> = match (db.sqlite_path(), db.postgres_url()) {
        (Some(path), _) => {
            let store = SqliteStore::open_with(path, 1).await.expect("open");
            let mut conn = store.pool().acquire().await.expect("acquire");
            std::mem::forget(conn.begin_with("BEGIN IMMEDIATE").await.expect("begin"));
            drop(conn);
            Arc::new(store)
        }
        (None, Some(url)) => {
            let store = PostgresStore::connect(url, 1).await.expect("connect");
            let mut conn = store.pool().acquire().await.expect("acquire");
            std::mem::forget(conn.begin().await.expect("begin"));
            drop(conn);
            Arc::new(store)
        }
        (None, None) => unreachable!("a test database is SQLite or Postgres"),
    };
    let write = async {
        let s = store
            .open_session(&key("leak"), Mode::General, None)
            .await?;
        store.append_message(s.id, &user_msg("still here?")).await?;
        Ok::<_, StoreError>(s.id)
    };
    let id = tokio::time::timeout(std::time::Duration::from_secs(30), write)
        .await
        .expect("the write finished")
        .expect("the write succeeded");
    let other = db.reopen().await;
    let seen = other.recent_messages(id, 0, 10).await.expect("read");
    assert_eq!(seen.len(), 1, "{seen:?}");
}

db::both_backends!(
    a_step_is_stored_in_order_with_its_audit_rows,
    a_step_for_a_missing_session_writes_nothing,
    a_connection_left_inside_a_transaction_is_closed_not_reused,
);
