//! Store: pending actions (the confirmation gate), on SQLite and Postgres.

use crate::support::db;

use chrono::Utc;
use db::{key, new_pending, TestDb};
use sparky::core::session::Mode;
use sparky::store::{PendingState, StoreError};

async fn pending_round_trip(db: TestDb) {
    let store = db.store();
    let s = store
        .open_session(&key("t"), Mode::General, None)
        .await
        .expect("open");
    let new = new_pending("act-1", s.id);
    let p = store.create_pending(&new).await.expect("create");
    assert_eq!(p.id, "act-1");
    assert_eq!(p.session_id, s.id);
    assert_eq!(p.state, PendingState::Pending);
    assert_eq!(p.rule, new.rule);
    assert_eq!(p.calls, new.calls);
    assert_eq!(p.prior_results, new.prior_results);
    assert_eq!(p.items, new.items);
    assert!((p.created_at - new.created_at).num_milliseconds().abs() < 1);
    assert!((p.expires_at - new.expires_at).num_milliseconds().abs() < 1);
    assert_eq!(p.resolved_by, None);
    assert_eq!(p.outcome, None);
    assert_eq!(p.message_ref, None);

    assert_eq!(store.pending("act-1").await.expect("get"), Some(p.clone()));
    assert_eq!(store.pending("nope").await.expect("none"), None);
    assert_eq!(
        store.open_pending_for_session(s.id).await.expect("open"),
        Some(p.clone())
    );

    store
        .set_pending_message_ref("act-1", "C1/1712345678.000100")
        .await
        .expect("ref");
    let outcome = serde_json::json!({"results": [{"call_id": "call_1", "ok": true}]});
    store
        .set_pending_outcome("act-1", &outcome)
        .await
        .expect("outcome");
    let back = store.pending("act-1").await.expect("get").expect("exists");
    assert_eq!(back.message_ref.as_deref(), Some("C1/1712345678.000100"));
    assert_eq!(back.outcome, Some(outcome.clone()));

    assert!(matches!(
        store.set_pending_outcome("nope", &outcome).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.set_pending_message_ref("nope", "x").await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store
            .create_pending(&new_pending("act-x", s.id + 100))
            .await,
        Err(StoreError::NotFound(_))
    ));
}

async fn transitions_follow_the_lifecycle(db: TestDb) {
    let store = db.store();
    let s = store
        .open_session(&key("t"), Mode::General, None)
        .await
        .expect("open");
    store
        .create_pending(&new_pending("act-1", s.id))
        .await
        .expect("create");
    let at = Utc::now();
    let confirmed = store
        .transition_pending(
            "act-1",
            PendingState::Pending,
            PendingState::Confirmed,
            Some("U1"),
            at,
        )
        .await
        .expect("confirm")
        .expect("was pending");
    assert_eq!(confirmed.state, PendingState::Confirmed);
    assert_eq!(confirmed.resolved_by.as_deref(), Some("U1"));
    let resolved_at = confirmed.resolved_at.expect("resolved_at");
    assert!((resolved_at - at).num_milliseconds().abs() < 1);
    assert_eq!(
        store.open_pending_for_session(s.id).await.expect("none"),
        None
    );

    // A second click finds it resolved.
    assert_eq!(
        store
            .transition_pending(
                "act-1",
                PendingState::Pending,
                PendingState::Cancelled,
                Some("U2"),
                Utc::now(),
            )
            .await
            .expect("late cancel"),
        None
    );
    // Execution keeps who confirmed and when.
    let executed = store
        .transition_pending(
            "act-1",
            PendingState::Confirmed,
            PendingState::Executed,
            None,
            at + chrono::Duration::seconds(3),
        )
        .await
        .expect("execute")
        .expect("was confirmed");
    assert_eq!(executed.state, PendingState::Executed);
    assert_eq!(executed.resolved_by.as_deref(), Some("U1"));
    assert_eq!(executed.resolved_at, Some(resolved_at));
    assert_eq!(
        store
            .transition_pending(
                "missing",
                PendingState::Pending,
                PendingState::Expired,
                None,
                Utc::now(),
            )
            .await
            .expect("missing"),
        None
    );
}

async fn pending_resolves_exactly_once_under_race(db: TestDb) {
    let first = db.store();
    // Half of the racers use a second pool (another replica on Postgres).
    let second = db.reopen().await;
    let s = first
        .open_session(&key("race"), Mode::General, None)
        .await
        .expect("open");
    first
        .create_pending(&new_pending("act-race", s.id))
        .await
        .expect("create");
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(16));
    let mut tasks = Vec::new();
    for i in 0..16 {
        let store = if i % 2 == 0 {
            first.clone()
        } else {
            second.clone()
        };
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let to = if i % 3 == 0 {
                PendingState::Cancelled
            } else {
                PendingState::Confirmed
            };
            let by = format!("U{i}");
            store
                .transition_pending("act-race", PendingState::Pending, to, Some(&by), Utc::now())
                .await
                .expect("transition")
                .map(|p| (p, by, to))
        }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        if let Some(w) = t.await.expect("task") {
            winners.push(w);
        }
    }
    assert_eq!(winners.len(), 1, "exactly one caller resolves the action");
    let (won, by, to) = winners.remove(0);
    assert_eq!(won.state, to);
    assert_eq!(won.resolved_by.as_deref(), Some(by.as_str()));
    let stored = first
        .pending("act-race")
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(stored, won);
}

async fn at_most_one_pending_per_session(db: TestDb) {
    let store = db.store();
    let s = store
        .open_session(&key("t"), Mode::General, None)
        .await
        .expect("open");
    let other = store
        .open_session(&key("u"), Mode::General, None)
        .await
        .expect("other");
    store
        .create_pending(&new_pending("act-1", s.id))
        .await
        .expect("first");
    match store.create_pending(&new_pending("act-2", s.id)).await {
        Err(StoreError::Conflict(msg)) => assert!(msg.contains("waiting"), "{msg}"),
        other => panic!("expected Conflict, got {other:?}"),
    }
    match store.create_pending(&new_pending("act-1", other.id)).await {
        Err(StoreError::Conflict(msg)) => assert!(msg.contains("act-1"), "{msg}"),
        other => panic!("expected Conflict, got {other:?}"),
    }
    // Another session is independent.
    store
        .create_pending(&new_pending("act-3", other.id))
        .await
        .expect("other session");

    // Once resolved, the session may wait on a new action.
    store
        .transition_pending(
            "act-1",
            PendingState::Pending,
            PendingState::Superseded,
            Some("U1"),
            Utc::now(),
        )
        .await
        .expect("supersede")
        .expect("was pending");
    store
        .create_pending(&new_pending("act-2", s.id))
        .await
        .expect("new action after resolution");
    assert_eq!(
        store
            .open_pending_for_session(s.id)
            .await
            .expect("open")
            .map(|p| p.id),
        Some("act-2".to_string())
    );
    // Reviving the old one would make two: refused.
    assert!(matches!(
        store
            .transition_pending(
                "act-1",
                PendingState::Superseded,
                PendingState::Pending,
                None,
                Utc::now(),
            )
            .await,
        Err(StoreError::Conflict(_))
    ));

    // Racing creations for one session: exactly one succeeds.
    let fresh = store
        .open_session(&key("race"), Mode::General, None)
        .await
        .expect("race session");
    let mut tasks = Vec::new();
    for i in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            store
                .create_pending(&new_pending(&format!("race-{i}"), fresh.id))
                .await
        }));
    }
    let mut ok = 0;
    for t in tasks {
        match t.await.expect("task") {
            Ok(_) => ok += 1,
            Err(StoreError::Conflict(_)) => {}
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert_eq!(ok, 1);
}

async fn pending_survives_reopening(db: TestDb) {
    let store = db.store();
    let s = store
        .open_session(&key("t"), Mode::General, None)
        .await
        .expect("open");
    let p = store
        .create_pending(&new_pending("act-1", s.id))
        .await
        .expect("create");
    drop(store);
    db.close_all().await;
    let reopened = db.reopen().await;
    assert_eq!(
        reopened.open_pending_for_session(s.id).await.expect("open"),
        Some(p)
    );
    assert!(reopened
        .transition_pending(
            "act-1",
            PendingState::Pending,
            PendingState::Confirmed,
            Some("U1"),
            Utc::now()
        )
        .await
        .expect("confirm after restart")
        .is_some());
}

/// A turn that no longer holds its thread's lease changes no proposal and no session: the
/// state change, outcome, message reference, mode and project are each refused as
/// `LeaseLost`, and the rows stay as they were.
async fn a_turn_without_its_lease_changes_no_proposal(db: TestDb) {
    use sparky::store::{fenced, LeaseFence};
    let store = db.store();
    let s = store
        .open_session(&key("t"), Mode::General, None)
        .await
        .expect("open");
    store
        .create_pending(&new_pending("act-1", s.id))
        .await
        .expect("create");
    // Nobody holds this lease (another process took the thread and let it go).
    let fence = LeaseFence {
        session_id: s.id,
        owner: "a stalled replica".into(),
        epoch: 7,
    };
    let outcome = serde_json::json!({"ok": true});
    let writes = async {
        let transition = store
            .transition_pending(
                "act-1",
                PendingState::Pending,
                PendingState::Confirmed,
                Some("U1"),
                Utc::now(),
            )
            .await;
        let outcome = store.set_pending_outcome("act-1", &outcome).await;
        let message_ref = store.set_pending_message_ref("act-1", "C1/1.2").await;
        let mode = store.set_session_mode(s.id, Mode::Load).await;
        let project = store.set_session_project(s.id, None).await;
        (transition.map(|_| ()), outcome, message_ref, mode, project)
    };
    let (transition, outcome, message_ref, mode, project) = fenced(fence, writes).await;
    for (what, result) in [
        ("transition", transition),
        ("outcome", outcome),
        ("message reference", message_ref),
        ("mode", mode),
        ("project", project),
    ] {
        assert!(
            matches!(result, Err(StoreError::LeaseLost(_))),
            "{what}: {result:?}"
        );
    }
    let p = store.pending("act-1").await.expect("get").expect("exists");
    assert_eq!(p.state, PendingState::Pending);
    assert_eq!((p.outcome, p.message_ref), (None, None));
    let session = store.session(s.id).await.expect("get").expect("exists");
    assert_eq!(session.mode, Mode::General);
}

db::both_backends!(
    a_turn_without_its_lease_changes_no_proposal,
    pending_round_trip,
    transitions_follow_the_lifecycle,
    pending_resolves_exactly_once_under_race,
    at_most_one_pending_per_session,
    pending_survives_reopening,
);
