//! Store: session leases and the inbox of queued inputs
//! ([`InboxStore`](sparky::store::InboxStore)), on SQLite and Postgres.

use crate::support::db;

use std::sync::Arc;

use chrono::Utc;
use db::{key, user_msg, TestDb};
use sparky::core::session::Mode;
use sparky::nec::units::Edition;
use sparky::store::{LeaseTaken, NewQueuedInput, QueuedQuestion, Store};

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

fn queued(session_id: i64, text: &str, event: Option<&str>, waiter_secs: i64) -> NewQueuedInput {
    NewQueuedInput {
        session_id,
        platform: "slack".into(),
        user: "U1".into(),
        event_id: event.map(str::to_string),
        action: serde_json::json!({"kind": "message", "text": text}),
        waiter_until: Utc::now() + chrono::Duration::seconds(waiter_secs),
        question: None,
    }
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

/// Queueing an input tries the thread's lease in the same step: taken on a free thread (the
/// input itself is next, or an older one still queued), refused while another owner holds
/// it, and neither queued nor taken for a redelivered event.
async fn queueing_tries_the_lease_at_once(db: TestDb) {
    let store = db.store();
    let other = db.reopen().await;
    let s = store
        .open_session(&key("first try"), Mode::General, None)
        .await
        .expect("open");
    let now = Utc::now();
    let until = now + chrono::Duration::seconds(30);
    let (one, lease) = store
        .enqueue_and_take_lease(&queued(s.id, "one", Some("EvA"), 30), "a", until, now)
        .await
        .expect("one")
        .expect("queued");
    assert_eq!(one.action["text"], "one");
    assert_eq!(
        lease,
        LeaseTaken::Taken {
            next: Some(one.clone())
        }
    );
    // Held by "a": another replica queues behind it without the lease.
    let (two, lease) = other
        .enqueue_and_take_lease(&queued(s.id, "two", None, 30), "b", until, now)
        .await
        .expect("two")
        .expect("queued");
    assert_eq!(lease, LeaseTaken::Busy);
    assert!(two.id > one.id);
    assert!(!other.renew_lease(s.id, "b", until).await.expect("not b's"));
    // A redelivery queues nothing and takes nothing.
    assert!(other
        .enqueue_and_take_lease(&queued(s.id, "one again", Some("EvA"), 30), "c", until, now)
        .await
        .expect("dup")
        .is_none());
    assert_eq!(
        store.next_input(s.id).await.expect("next").map(|i| i.id),
        Some(one.id)
    );
    // Released with "one" still queued: the next to queue takes the lease and is told that
    // "one" comes first.
    assert!(store.release_lease(s.id, "a").await.expect("release"));
    let (three, lease) = other
        .enqueue_and_take_lease(&queued(s.id, "three", None, 30), "d", until, now)
        .await
        .expect("three")
        .expect("queued");
    assert!(three.id > two.id);
    assert_eq!(lease, LeaseTaken::Taken { next: Some(one) });
    // An input for a session that does not exist is refused, not lost silently.
    assert!(store
        .enqueue_and_take_lease(&queued(s.id + 1000, "nowhere", None, 30), "e", until, now)
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

/// On a free thread with nothing older queued, an input can be queued started, with its
/// session read; otherwise it is queued waiting, as without `start`.
async fn a_free_thread_starts_the_input_as_it_is_queued(db: TestDb) {
    let store = db.store();
    let other = db.reopen().await;
    let s = store
        .open_session(&key("started at once"), Mode::Load, None)
        .await
        .expect("open");
    let now = Utc::now();
    let until = now + chrono::Duration::seconds(30);
    let one = store
        .enqueue_and_start(&queued(s.id, "one", Some("EvS"), 30), "a", until, now, true)
        .await
        .expect("one")
        .expect("queued");
    assert!(one.input.running, "queued started");
    assert_eq!(
        store.queued_input(one.input.id).await.expect("read"),
        Some(one.input.clone())
    );
    assert_eq!(
        one.lease,
        LeaseTaken::Taken {
            next: Some(one.input.clone())
        }
    );
    let started = one.started.expect("started");
    assert_eq!(started.session, s, "the session as stored");
    assert!(!started.pending_open);

    // Held: queued waiting, not started.
    let two = other
        .enqueue_and_start(&queued(s.id, "two", None, 30), "b", until, now, true)
        .await
        .expect("two")
        .expect("queued");
    assert_eq!(two.lease, LeaseTaken::Busy);
    assert!(!two.input.running && two.started.is_none());
    // A redelivery starts nothing.
    assert!(other
        .enqueue_and_start(
            &queued(s.id, "one again", Some("EvS"), 30),
            "c",
            until,
            now,
            true
        )
        .await
        .expect("dup")
        .is_none());

    // Free again with "two" still queued: the lease is taken, "two" is next, the new input
    // waits behind it.
    store.finish_input(one.input.id).await.expect("finish");
    assert!(store.release_lease(s.id, "a").await.expect("release"));
    store
        .create_pending(&db::new_pending("waiting-s", s.id))
        .await
        .expect("pending");
    let three = other
        .enqueue_and_start(&queued(s.id, "three", None, 30), "d", until, now, true)
        .await
        .expect("three")
        .expect("queued");
    assert_eq!(
        three.lease,
        LeaseTaken::Taken {
            next: Some(two.input.clone())
        }
    );
    assert!(!three.input.running && three.started.is_none());

    // Without `start` (no turn slot free), a free thread is taken but nothing started.
    store.finish_input(two.input.id).await.expect("finish two");
    store
        .finish_input(three.input.id)
        .await
        .expect("finish three");
    assert!(other.release_lease(s.id, "d").await.expect("release d"));
    let four = store
        .enqueue_and_start(&queued(s.id, "four", None, 30), "e", until, now, false)
        .await
        .expect("four")
        .expect("queued");
    assert!(!four.input.running && four.started.is_none());
    assert_eq!(
        four.lease,
        LeaseTaken::Taken {
            next: Some(four.input.clone())
        }
    );
    // With it, the proposal waiting in the thread is reported with the start.
    store
        .finish_input(four.input.id)
        .await
        .expect("finish four");
    let five = store
        .enqueue_and_start(&queued(s.id, "five", None, 30), "e", until, now, true)
        .await
        .expect("five")
        .expect("queued");
    assert!(five.input.running);
    assert!(five.started.expect("started").pending_open);
}

/// A question queued with its input is stored when the input starts (no proposal waiting),
/// and the thread comes back with it as `append_and_recent` reads it; an input that waits,
/// or finds a proposal waiting, stores nothing.
async fn a_question_is_stored_as_its_input_starts(db: TestDb) {
    let store = db.store();
    let p = store
        .create_project(
            &sparky::project::Workspace::local(),
            "Asked",
            Edition::Nec2023,
        )
        .await
        .expect("project");
    let s = store
        .open_session(&key("asked at start"), Mode::General, Some(p.id))
        .await
        .expect("open");
    let [m1, _, _] = db::append_tool_turn(store.as_ref(), s.id, "first").await;
    store
        .set_session_summary(s.id, "earlier", m1.id)
        .await
        .expect("summary");
    let with_question = |text: &str, event: &str, limit: usize| {
        let mut q = queued(s.id, text, Some(event), 30);
        let mut message = user_msg(text);
        message.event_id = Some(event.to_string());
        q.question = Some(QueuedQuestion { message, limit });
        q
    };
    let now = Utc::now();
    let until = now + chrono::Duration::seconds(30);
    let one = store
        .enqueue_and_start(
            &with_question("and the feeders?", "EvQ1", 2),
            "a",
            until,
            now,
            true,
        )
        .await
        .expect("one")
        .expect("queued");
    let asked = one.started.expect("started").asked.expect("stored");
    let thread = store.recent_messages(s.id, m1.id, 2).await.expect("read");
    assert_eq!(asked.messages, thread, "the newest two after the summary");
    let q = thread.last().expect("question");
    assert_eq!(q.message, user_msg("and the feeders?").message);
    assert_eq!(q.author.as_deref(), Some("U1"));
    match db.backend() {
        sparky::store::Backend::Postgres => {
            let (project, revision) = asked.project_revision.expect("read with the thread");
            assert_eq!(project, p.id);
            assert_eq!(
                store
                    .load_project_seen(p.id, Some(revision))
                    .await
                    .expect("read at it"),
                store.load_project(p.id).await.expect("read")
            );
        }
        sparky::store::Backend::Sqlite => assert_eq!(asked.project_revision, None),
    }
    store.finish_input(one.input.id).await.expect("finish");
    assert!(store.release_lease(s.id, "a").await.expect("release"));

    // Without a turn slot: not started, nothing stored.
    let two = store
        .enqueue_and_start(&with_question("two", "EvQ2", 10), "b", until, now, false)
        .await
        .expect("two")
        .expect("queued");
    assert!(two.started.is_none());
    assert_eq!(
        store
            .recent_messages(s.id, 0, 100)
            .await
            .expect("all")
            .len(),
        4,
        "nothing stored"
    );
    store.finish_input(two.input.id).await.expect("finish two");
    assert!(store.release_lease(s.id, "b").await.expect("release b"));

    // A proposal waiting: started, the question left to the turn.
    store
        .create_pending(&db::new_pending("asked-pending", s.id))
        .await
        .expect("pending");
    let three = store
        .enqueue_and_start(&with_question("three", "EvQ3", 10), "c", until, now, true)
        .await
        .expect("three")
        .expect("queued");
    let started = three.started.expect("started");
    assert!(started.pending_open && started.asked.is_none());
    assert_eq!(
        store
            .recent_messages(s.id, 0, 100)
            .await
            .expect("all")
            .len(),
        4,
        "nothing stored"
    );
}

db::both_backends!(
    leases_are_exclusive_and_lapse,
    leases_hold_across_stores,
    inbox_keeps_order_and_drops_redeliveries,
    queueing_tries_the_lease_at_once,
    a_free_thread_starts_the_input_as_it_is_queued,
    a_question_is_stored_as_its_input_starts,
    orphaned_threads_are_found,
);
