//! Store: what the assistant surface and the Home tab read and write (assistant threads,
//! proposals waiting in a workspace, changes applied lately), on SQLite and Postgres.

use crate::support::db;

use chrono::{Duration, Utc};
use db::{new_pending, TestDb};
use sparky::core::session::{Mode, SessionKey};
use sparky::nec::units::Edition;
use sparky::project::Workspace;
use sparky::store::{AuditEntry, AuditKind, PendingState};

fn slack(team: &str, channel: &str, thread: &str) -> SessionKey {
    SessionKey::new("slack", team, channel, thread)
}

async fn assistant_threads_remember_their_context_and_title_once(db: TestDb) {
    let store = db.store();
    let key = slack("T1", "D1", "1700.0001");
    assert_eq!(store.assistant_thread(&key).await.expect("read"), None);
    let t = store
        .record_assistant_thread(&key, "U1", Some("C1"))
        .await
        .expect("record");
    assert_eq!(
        (t.user.as_str(), t.context_channel.as_deref(), t.titled),
        ("U1", Some("C1"), false)
    );
    // A context without a channel keeps the one known; a new channel replaces it.
    let t = store
        .record_assistant_thread(&key, "U1", None)
        .await
        .expect("record");
    assert_eq!(t.context_channel.as_deref(), Some("C1"));
    store
        .record_assistant_thread(&key, "U1", Some("C2"))
        .await
        .expect("record");
    assert_eq!(
        store
            .assistant_thread(&key)
            .await
            .expect("read")
            .and_then(|t| t.context_channel),
        Some("C2".into())
    );
    // Another workspace's thread with the same ids is another thread.
    assert_eq!(
        store
            .assistant_thread(&slack("T2", "D1", "1700.0001"))
            .await
            .expect("read"),
        None
    );
    // The title is claimed once, by whoever asks first; an unknown thread has none to claim.
    assert!(store.claim_assistant_title(&key).await.expect("claim"));
    assert!(!store.claim_assistant_title(&key).await.expect("again"));
    assert!(store
        .assistant_thread(&key)
        .await
        .expect("read")
        .is_some_and(|t| t.titled));
    assert!(!store
        .claim_assistant_title(&slack("T1", "D1", "other"))
        .await
        .expect("unknown"));
}

async fn waiting_and_applied_stay_in_their_workspace(db: TestDb) {
    let store = db.store();
    let here = Workspace::new("slack", "T1");
    let there = Workspace::new("slack", "T2");
    let p1 = store
        .create_project(&here, "Shop", Edition::Nec2023)
        .await
        .expect("p1");
    let p2 = store
        .create_project(&there, "Elsewhere", Edition::Nec2023)
        .await
        .expect("p2");
    let mut sessions = Vec::new();
    for (i, (team, project)) in [("T1", p1.id), ("T1", p1.id), ("T1", p1.id), ("T2", p2.id)]
        .into_iter()
        .enumerate()
    {
        let s = store
            .open_session(
                &slack(team, "C1", &format!("17.{i}")),
                Mode::General,
                Some(project),
            )
            .await
            .expect("session");
        sessions.push((s.id, project));
    }
    let now = Utc::now();
    let make = |id: &str, n: usize, age_min: i64| {
        let mut a = new_pending(id, sessions[n].0);
        a.project_id = Some(sessions[n].1);
        a.created_at = now - Duration::minutes(age_min);
        a
    };
    let older = make("older", 0, 10);
    let newer = make("newer", 1, 5);
    let mut expired = make("expired", 2, 30);
    expired.expires_at = now - Duration::minutes(1);
    let elsewhere = make("elsewhere", 3, 1);
    for a in [&older, &newer, &expired, &elsewhere] {
        store.create_pending(a).await.expect("pending");
    }
    let waiting = store
        .waiting_in_workspace(&here, now, 10)
        .await
        .expect("waiting");
    let ids: Vec<&str> = waiting.iter().map(|w| w.action.id.as_str()).collect();
    assert_eq!(ids, ["newer", "older"]);
    assert_eq!(waiting[0].key, slack("T1", "C1", "17.1"));
    assert_eq!(
        store
            .waiting_in_workspace(&here, now, 1)
            .await
            .expect("one")
            .len(),
        1
    );

    // Confirmed and applied: "older" here and "elsewhere" there; "newer" confirmed but
    // outdated (nothing applied).
    for (id, state) in [
        ("older", PendingState::Executed),
        ("elsewhere", PendingState::Executed),
        ("newer", PendingState::Outdated),
    ] {
        store
            .transition_pending(id, PendingState::Pending, state, Some("U1"), Utc::now())
            .await
            .expect("transition")
            .expect("was pending");
        let session = sessions[match id {
            "older" => 0,
            "newer" => 1,
            _ => 3,
        }]
        .0;
        store
            .record_audit(&AuditEntry {
                session_id: Some(session),
                actor: "U1".into(),
                kind: AuditKind::Confirmed,
                tool: None,
                action_id: Some(id.into()),
                args: serde_json::json!({"tools": ["add_circuit"]}),
                result: serde_json::json!({"applied": state == PendingState::Executed}).into(),
                is_error: false,
                duration_ms: 0,
                at: Utc::now(),
            })
            .await
            .expect("audit");
    }
    let applied = store.recent_applied(&here, 10).await.expect("applied");
    assert_eq!(applied.len(), 1, "{applied:?}");
    let a = &applied[0];
    assert_eq!(
        (a.action_id.as_str(), a.project_id, a.by.as_str()),
        ("older", p1.id, "U1")
    );
    assert_eq!(a.items[0].summary, "Add circuit 12 to LP-1");
    assert_eq!(a.key, slack("T1", "C1", "17.0"));
    assert!(store
        .waiting_in_workspace(&here, Utc::now(), 10)
        .await
        .expect("none left")
        .is_empty());
    let there_applied = store.recent_applied(&there, 10).await.expect("there");
    assert_eq!(there_applied.len(), 1);
    assert_eq!(there_applied[0].action_id, "elsewhere");
}

db::both_backends!(
    assistant_threads_remember_their_context_and_title_once,
    waiting_and_applied_stay_in_their_workspace,
);
