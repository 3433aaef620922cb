//! Store: the outbox of messages a platform refused during a 429 storm
//! ([`OutboxStore`](sparky::store::OutboxStore)), on SQLite and Postgres.

use crate::support::db;

use chrono::Utc;
use db::TestDb;
use sparky::store::NewOutbound;

/// Two replicas claiming the same kept message at once: exactly one gets it, and neither gets
/// it again while it is held; a later message waits behind it.
async fn a_kept_message_is_claimed_by_one_replica(db: TestDb) {
    let (first, second) = (db.store(), db.reopen().await);
    let now = Utc::now();
    let message = |text: &str| NewOutbound {
        platform: "slack".into(),
        channel: "C1".into(),
        thread: "1.1".into(),
        text: text.into(),
        edit_of: None,
        card: Some("{\"kept\": true}".into()),
        created_at: now,
        not_before: now,
    };
    let id = first.queue_outbound(&message("one")).await.expect("queue");
    first.queue_outbound(&message("two")).await.expect("queue");
    let hold = now + chrono::Duration::minutes(10);
    let (a, b) = tokio::join!(
        first.claim_outbound("slack", now, hold),
        second.claim_outbound("slack", now, hold)
    );
    let claimed: Vec<_> = [a.expect("claim a"), b.expect("claim b")]
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(claimed.len(), 1, "{claimed:?}");
    assert_eq!(claimed[0].id, id);
    assert_eq!(claimed[0].message.text, "one");
    assert_eq!(claimed[0].message.card.as_deref(), Some("{\"kept\": true}"));
    // Held: nobody takes it (or the one behind it) before the hold ends.
    assert_eq!(
        second
            .claim_outbound("slack", now, hold)
            .await
            .expect("held"),
        None
    );
    first.remove_outbound(id).await.expect("remove");
    let next = second
        .claim_outbound("slack", now, hold)
        .await
        .expect("next")
        .expect("the second message");
    assert_eq!(next.message.text, "two");
    assert_eq!(first.outbound_count("slack").await.expect("count"), 1);
    assert_eq!(first.outbound_count("discord").await.expect("count"), 0);
}

db::both_backends!(a_kept_message_is_claimed_by_one_replica);
