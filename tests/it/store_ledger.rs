//! Store: the event ledger ([`EventLedger`](sparky::store::EventLedger)), on SQLite and Postgres.

use crate::support::db;

use db::TestDb;

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

db::both_backends!(
    claim_event_deduplicates,
    claim_request_refuses_replays_within_the_window,
);
