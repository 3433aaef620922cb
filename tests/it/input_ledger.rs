//! The input ledger: platform event ids, slash commands and signed-request digests are
//! remembered for a retention window and then purged, on SQLite and Postgres; the thread rule
//! looks threads up without creating sessions.

use crate::support::db;

use std::time::Duration;

use chrono::Utc;
use db::{key, user_msg, TestDb};
use sparky::core::addressing::{belongs, Place};
use sparky::core::ledger::{InputKind, Ledger};
use sparky::core::session::Mode;

async fn old_ids_are_purged_and_recent_ones_kept(db: TestDb) {
    let store = db.store();
    assert!(store.claim_event("slack", "Ev1").await.unwrap());
    assert!(!store.claim_event("slack", "Ev1").await.unwrap());
    assert!(store
        .claim_request("slack:signed-request", "digest-1", Duration::from_secs(600))
        .await
        .unwrap());
    // Nothing is older than an hour ago: nothing goes.
    let hour_ago = Utc::now() - chrono::Duration::hours(1);
    assert_eq!(store.purge_events(hour_ago).await.unwrap(), 0);
    assert!(!store.claim_event("slack", "Ev1").await.unwrap());
    // Everything seen before a moment from now goes, whatever its platform or scope.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let cut = Utc::now();
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(store.claim_event("discord", "Ev2").await.unwrap());
    assert_eq!(store.purge_events(cut).await.unwrap(), 2);
    assert!(
        store.claim_event("slack", "Ev1").await.unwrap(),
        "Ev1 was kept"
    );
    assert!(
        !store.claim_event("discord", "Ev2").await.unwrap(),
        "Ev2 was purged"
    );
}

async fn the_ledger_forgets_ids_after_its_retention(db: TestDb) {
    let ledger = Ledger::new(db.store(), Duration::from_millis(300));
    assert!(ledger
        .claim("slack", InputKind::Event, "Ev1")
        .await
        .unwrap());
    assert!(!ledger
        .claim("slack", InputKind::Event, "Ev1")
        .await
        .unwrap());
    // A command and an event with the same id are different inputs.
    assert!(ledger
        .claim("slack", InputKind::Command, "Ev1")
        .await
        .unwrap());
    assert!(
        !ledger
            .first_delivery("slack", InputKind::Command, "Ev1")
            .await
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(ledger
        .claim("slack", InputKind::Event, "Ev2")
        .await
        .unwrap());
    // The claim above purged what was older than the retention.
    assert!(ledger
        .claim("slack", InputKind::Event, "Ev1")
        .await
        .unwrap());
    assert!(!ledger
        .claim("slack", InputKind::Event, "Ev2")
        .await
        .unwrap());
    assert_eq!(
        ledger.purge_if_due().await,
        0,
        "purged at most once per retention"
    );
}

async fn the_thread_rule_looks_up_without_creating(db: TestDb) {
    let store = db.store();
    let strangers = key("people-talking");
    let ours = key("with-sparky");
    let s = store
        .open_session(&ours, Mode::General, None)
        .await
        .unwrap();
    store.append_message(s.id, &user_msg("hi")).await.unwrap();
    let reply = Place::Thread {
        started_by_sparky: false,
    };
    assert!(!belongs(store.as_ref(), &strangers, reply, false).await);
    assert!(!store.thread_has_history(&strangers).await.unwrap());
    // Asking created no session for the strangers' thread: the one opened now is new.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let after_lookups = Utc::now();
    let created = store
        .open_session(&strangers, Mode::General, None)
        .await
        .unwrap();
    assert!(
        created.created_at >= after_lookups - chrono::Duration::milliseconds(1),
        "the lookup created a session"
    );
    assert!(belongs(store.as_ref(), &ours, reply, false).await);
    assert!(belongs(store.as_ref(), &strangers, reply, true).await);
    let own = Place::Thread {
        started_by_sparky: true,
    };
    assert!(belongs(store.as_ref(), &strangers, own, false).await);
    assert!(belongs(store.as_ref(), &strangers, Place::Direct, false).await);
    let channel = |mention_required| Place::Channel { mention_required };
    assert!(!belongs(store.as_ref(), &strangers, channel(true), false).await);
    assert!(belongs(store.as_ref(), &strangers, channel(false), false).await);
}

db::both_backends!(
    old_ids_are_purged_and_recent_ones_kept,
    the_ledger_forgets_ids_after_its_retention,
    the_thread_rule_looks_up_without_creating,
);
