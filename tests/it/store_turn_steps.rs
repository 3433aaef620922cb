//! Store: the merged steps of a turn (open the thread, take the lease with the next input,
//! start an input with its session, finish it with the lease's release), on SQLite and
//! Postgres, where each is one statement: they must do what the separate steps did.

use crate::support::db;

use std::sync::Arc;

use chrono::Utc;
use db::{key, TestDb};
use sparky::core::session::Mode;
use sparky::nec::units::Edition;
use sparky::project::Workspace;
use sparky::store::{LeaseTaken, NewQueuedInput, Store};

fn queued(session_id: i64, text: &str, event: Option<&str>) -> NewQueuedInput {
    NewQueuedInput {
        session_id,
        platform: "console".into(),
        user: "U1".into(),
        event_id: event.map(str::to_string),
        action: serde_json::json!({"kind": "message", "text": text}),
        waiter_until: Utc::now() + chrono::Duration::seconds(30),
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

db::both_backends!(
    lease_steps_match_the_separate_ones,
    open_thread_binds_and_switches_mode,
);
