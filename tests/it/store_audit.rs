//! Store: the audit trail ([`AuditStore`](sparky::store::AuditStore)), on SQLite and Postgres.

use crate::support::db;

use chrono::Utc;
use db::{key, TestDb};
use sparky::core::session::Mode;
use sparky::store::{AuditEntry, AuditKind};

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
            result: serde_json::json!({"percent": 2.9}).into(),
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
            result: serde_json::json!({"error": "only U1 can confirm"}).into(),
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
            result: serde_json::json!("expired").into(),
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

db::both_backends!(audit_round_trip,);
