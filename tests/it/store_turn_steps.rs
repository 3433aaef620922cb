//! Store: the merged steps of a turn (open the thread, take the lease with the next input,
//! start an input with its session, finish it with the lease's release, end a turn with its
//! answer and its input finished), on SQLite and
//! Postgres, where each is one statement: they must do what the separate steps did.

use crate::support::db;

use std::sync::Arc;

use chrono::Utc;
use db::{key, tool_call_msg, tool_result_msg, TestDb};
use sparky::core::session::Mode;
use sparky::nec::units::Edition;
use sparky::project::Workspace;
use sparky::store::{AuditEntry, AuditKind, InputFinish, LeaseTaken, NewQueuedInput, Store};

fn queued(session_id: i64, text: &str, event: Option<&str>) -> NewQueuedInput {
    NewQueuedInput {
        session_id,
        platform: "console".into(),
        user: "U1".into(),
        event_id: event.map(str::to_string),
        action: serde_json::json!({"kind": "message", "text": text}),
        waiter_until: Utc::now() + chrono::Duration::seconds(30),
        question: None,
    }
}

async fn lease_steps_match_the_separate_ones(db: TestDb) {
    let store = db.store();
    let s = store
        .open_session(&key("steps"), Mode::General, None)
        .await
        .expect("open");
    let now = Utc::now();
    let until = now + chrono::Duration::seconds(30);

    // Empty inbox: the lease is taken and there is nothing to serve.
    assert_eq!(
        store
            .take_lease_and_next(s.id, "a", until, now)
            .await
            .expect("take"),
        LeaseTaken::Taken { next: None }
    );
    assert_eq!(
        store
            .take_lease_and_next(s.id, "b", until, now)
            .await
            .expect("held"),
        LeaseTaken::Busy
    );
    assert!(store.release_lease(s.id, "a").await.expect("release"));

    let one = store
        .enqueue_input(&queued(s.id, "one", Some("Ev1")))
        .await
        .expect("one")
        .expect("new");
    assert_eq!(
        store
            .enqueue_input(&queued(s.id, "one again", Some("Ev1")))
            .await
            .expect("dup"),
        None,
        "a redelivered event queues nothing"
    );
    let two = store
        .enqueue_input(&queued(s.id, "two", None))
        .await
        .expect("two")
        .expect("new");
    assert_eq!(
        store
            .take_lease_and_next(s.id, "a", until, now)
            .await
            .expect("take"),
        LeaseTaken::Taken {
            next: Some(one.clone())
        },
        "the oldest input comes with the lease"
    );

    let started = store
        .start_input_with_session(one.id)
        .await
        .expect("start")
        .expect("there");
    assert_eq!(started.session, s);
    assert!(!started.pending_open, "no proposal waits in the thread");
    assert!(
        store
            .queued_input(one.id)
            .await
            .expect("read")
            .expect("there")
            .running
    );

    // Finishing as the holder gives the lease up with it.
    assert!(store
        .finish_input_and_release(one.id, s.id, "a")
        .await
        .expect("finish"));
    assert_eq!(store.queued_input(one.id).await.expect("gone"), None);
    assert_eq!(
        store
            .start_input_with_session(one.id)
            .await
            .expect("start gone"),
        None
    );
    assert_eq!(
        store
            .take_lease_and_next(s.id, "b", until, now)
            .await
            .expect("free again"),
        LeaseTaken::Taken {
            next: Some(two.clone())
        }
    );
    // A proposal waiting in the thread is reported with the next input's start.
    store
        .create_pending(&db::new_pending("waiting-1", s.id))
        .await
        .expect("pending");
    let started = store
        .start_input_with_session(two.id)
        .await
        .expect("start two")
        .expect("there");
    assert!(started.pending_open);
    // Not the holder: the input is finished, the holder's lease stays.
    assert!(!store
        .finish_input_and_release(two.id, s.id, "a")
        .await
        .expect("finish"));
    assert_eq!(store.queued_input(two.id).await.expect("gone"), None);
    assert!(!store.take_lease(s.id, "c", until, now).await.expect("held"));
    assert!(store.release_lease(s.id, "b").await.expect("release"));

    // Concurrent takers: exactly one wins.
    let mut tasks = Vec::new();
    for i in 0..16 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            store
                .take_lease_and_next(s.id, &format!("owner-{i}"), until, now)
                .await
                .expect("take")
        }));
    }
    let mut winners = 0;
    for t in tasks {
        winners += usize::from(t.await.expect("task") != LeaseTaken::Busy);
    }
    assert_eq!(winners, 1);
}

async fn open_thread_binds_and_switches_mode(db: TestDb) {
    let store = db.store();
    let k = key("thread");
    let first = store.open_thread(&k, None).await.expect("new");
    assert_eq!(first.mode, Mode::default());
    assert_eq!(first.project_id, None);
    assert_eq!(first.key, k);

    // The same thread again: the same session, nothing changed.
    assert_eq!(store.open_thread(&k, None).await.expect("again"), first);

    // A mode asked for is applied and kept.
    let load = store.open_thread(&k, Some(Mode::Load)).await.expect("mode");
    assert_eq!((load.id, load.mode), (first.id, Mode::Load));
    let stored = store.session(first.id).await.expect("read").expect("there");
    assert_eq!(stored.mode, Mode::Load);

    // Once the channel is bound, an unbound thread takes the project; the mode stays.
    let p = store
        .create_project(&Workspace::local(), "bound", Edition::Nec2023)
        .await
        .expect("project");
    store
        .bind_channel(&k.platform, &k.workspace, &k.channel, p.id)
        .await
        .expect("bind");
    let bound = store.open_thread(&k, None).await.expect("bound");
    assert_eq!((bound.id, bound.mode), (first.id, Mode::Load));
    assert_eq!(bound.project_id, Some(p.id));
    assert_eq!(
        store
            .session(first.id)
            .await
            .expect("read")
            .expect("there")
            .project_id,
        Some(p.id)
    );

    // A new thread of the bound channel starts bound, in the mode asked for.
    let k2 = key("second");
    let second = store
        .open_thread(&k2, Some(Mode::Load))
        .await
        .expect("second");
    assert_ne!(second.id, first.id);
    assert_eq!((second.mode, second.project_id), (Mode::Load, Some(p.id)));

    // Rebinding the channel does not move a thread already bound.
    let q = store
        .create_project(&Workspace::local(), "other", Edition::Nec2023)
        .await
        .expect("project");
    store
        .bind_channel(&k.platform, &k.workspace, &k.channel, q.id)
        .await
        .expect("rebind");
    assert_eq!(
        store.open_thread(&k, None).await.expect("kept").project_id,
        Some(p.id)
    );

    // Many inputs opening one new thread at once all get the same session.
    let k3 = key("race");
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let store: Arc<dyn Store> = store.clone();
        let k3 = k3.clone();
        tasks.push(tokio::spawn(async move {
            store.open_thread(&k3, None).await.expect("open").id
        }));
    }
    let mut ids = Vec::new();
    for t in tasks {
        ids.push(t.await.expect("task"));
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "one session for the thread: {ids:?}");
}

async fn a_turn_ends_with_its_input_finished(db: TestDb) {
    let store = db.store();
    let s = store
        .open_session(&key("ending"), Mode::General, None)
        .await
        .expect("open");
    let now = Utc::now();
    let until = now + chrono::Duration::seconds(30);
    let answer = |text: &str| {
        sparky::core::history::new_message(&sparky::llm::ChatMessage::assistant(text), None, None)
    };
    let turn_audit = AuditEntry {
        session_id: Some(s.id),
        actor: "model".into(),
        kind: AuditKind::Execution,
        tool: Some("model_turn".into()),
        action_id: None,
        args: serde_json::json!({"model_calls": 2}),
        result: serde_json::json!({"output_tokens": 9}).into(),
        is_error: false,
        duration_ms: 0,
        at: Utc::now(),
    };

    // The holder's input: answer stored, input finished and lease released together.
    let (one, taken) = store
        .enqueue_and_take_lease(&queued(s.id, "one", None), "a", until, now)
        .await
        .expect("queue")
        .expect("new");
    assert!(matches!(taken, LeaseTaken::Taken { .. }));
    store.start_input(one.id).await.expect("start");
    let finish = InputFinish {
        id: one.id,
        release_as: Some("a"),
    };
    assert!(store
        .end_turn(
            s.id,
            &[tool_call_msg("c1"), tool_result_msg("c1"), answer("3 %")],
            std::slice::from_ref(&turn_audit),
            finish
        )
        .await
        .expect("end"));
    assert_eq!(store.queued_input(one.id).await.expect("read"), None);
    let history = store.recent_messages(s.id, 0, 10).await.expect("history");
    assert_eq!(history.len(), 3);
    assert_eq!(history[2].message, answer("3 %").message);
    let audits = store.audit_for_session(s.id).await.expect("audit");
    assert_eq!(audits.len(), 1);
    assert_eq!(audits[0].entry.tool.as_deref(), Some("model_turn"));
    assert!(store.take_lease(s.id, "b", until, now).await.expect("free"));

    // Not the holder's lease: the input is finished, the lease stays with "b".
    let two = store
        .enqueue_input(&queued(s.id, "two", None))
        .await
        .expect("two")
        .expect("new");
    let finish = InputFinish {
        id: two.id,
        release_as: Some("a"),
    };
    assert!(!store
        .end_turn(s.id, &[answer("two")], &[], finish)
        .await
        .expect("end two"));
    assert_eq!(store.queued_input(two.id).await.expect("read"), None);
    assert!(!store.take_lease(s.id, "c", until, now).await.expect("held"));

    // Without a release (an adopted input): finished, lease untouched.
    let three = store
        .enqueue_input(&queued(s.id, "three", None))
        .await
        .expect("three")
        .expect("new");
    let finish = InputFinish {
        id: three.id,
        release_as: None,
    };
    assert!(!store
        .end_turn(s.id, &[], std::slice::from_ref(&turn_audit), finish)
        .await
        .expect("end three"));
    assert_eq!(store.queued_input(three.id).await.expect("read"), None);
    assert!(!store
        .take_lease(s.id, "c", until, now)
        .await
        .expect("still held"));
    assert_eq!(store.audit_for_session(s.id).await.expect("audit").len(), 2);

    // All or nothing: an answer that cannot be stored leaves the input queued.
    let four = store
        .enqueue_input(&queued(s.id, "four", None))
        .await
        .expect("four")
        .expect("new");
    let finish = InputFinish {
        id: four.id,
        release_as: Some("b"),
    };
    let failed = store
        .end_turn(s.id + 1000, &[answer("lost")], &[], finish)
        .await;
    assert!(failed.is_err(), "got {failed:?}");
    assert_eq!(
        store
            .queued_input(four.id)
            .await
            .expect("read")
            .map(|q| q.id),
        Some(four.id)
    );
    assert!(!store
        .take_lease(s.id, "c", until, now)
        .await
        .expect("b keeps it"));
    assert_eq!(
        store
            .recent_messages(s.id, 0, 10)
            .await
            .expect("history")
            .len(),
        4
    );
}

db::both_backends!(
    lease_steps_match_the_separate_ones,
    open_thread_binds_and_switches_mode,
    a_turn_ends_with_its_input_finished,
);
