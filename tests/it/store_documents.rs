//! Store: documents, chunks and embeddings ([`DocumentStore`](sparky::store::DocumentStore)), on
//! SQLite and Postgres.

use crate::support::db;

use db::TestDb;
use sparky::store::{ChunkFilter, StoreError};

use crate::support::corpus::*;

async fn upsert_document_reports_changes(db: TestDb) {
    let store = db.store();
    let (d, changed) = store
        .upsert_document(&doc("nec.pdf", None, "aaa"))
        .await
        .expect("insert");
    assert!(changed, "a new document needs ingesting");
    assert_eq!(d.source, "nec.pdf");
    assert_eq!(d.title, "Title of nec.pdf");
    assert_eq!(d.workspace, None);
    assert_eq!(d.content_hash, "aaa");

    let (same, changed) = store
        .upsert_document(&doc("nec.pdf", None, "aaa"))
        .await
        .expect("same");
    assert_eq!(same, d);
    assert!(!changed);

    let mut renamed = doc("nec.pdf", None, "bbb");
    renamed.title = "NEC 2023".to_string();
    let (updated, changed) = store.upsert_document(&renamed).await.expect("update");
    assert!(changed);
    assert_eq!(updated.id, d.id);
    assert_eq!(updated.title, "NEC 2023");
    assert_eq!(updated.content_hash, "bbb");

    // The same source in a workspace is a different document.
    let (ws, changed) = store
        .upsert_document(&doc("nec.pdf", Some("slack:T1"), "bbb"))
        .await
        .expect("workspace copy");
    assert!(changed);
    assert_ne!(ws.id, d.id);
    assert_eq!(
        ws.workspace.as_ref().map(ToString::to_string).as_deref(),
        Some("slack:T1")
    );

    // Concurrent upserts of one new document end with one row.
    let mut tasks = Vec::new();
    for i in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            store
                .upsert_document(&doc("race.md", None, &format!("h{i}")))
                .await
                .expect("upsert")
                .0
                .id
        }));
    }
    let mut race_ids = Vec::new();
    for t in tasks {
        race_ids.push(t.await.expect("task"));
    }
    race_ids.dedup();
    assert_eq!(race_ids.len(), 1, "{race_ids:?}");
}

async fn replace_chunks_keeps_unchanged_embeddings(db: TestDb) {
    let store = db.store();
    let (d, _) = store
        .upsert_document(&doc("guide.md", None, "v1"))
        .await
        .expect("doc");
    let first = store
        .replace_chunks(
            d.id,
            &[
                chunk(Some("90.1"), None, "Purpose", "alpha text"),
                chunk(Some("90.2"), None, "Scope", "beta text"),
            ],
        )
        .await
        .expect("v1 chunks");
    assert_eq!(first.len(), 2);
    let missing = store
        .chunks_missing_embedding("m", 0, 10)
        .await
        .expect("missing");
    assert_eq!(
        missing.iter().map(|c| c.id).collect::<Vec<_>>(),
        first.clone()
    );
    assert_eq!(missing[0].source, "guide.md");
    assert_eq!(missing[0].document_id, d.id);
    assert_eq!(missing[0].page, Some(7));
    for id in &first {
        store
            .set_embedding(*id, "m", &[1.0, 0.0, 0.5])
            .await
            .expect("embed");
    }
    assert!(store
        .chunks_missing_embedding("m", 0, 10)
        .await
        .expect("none")
        .is_empty());
    assert_eq!(
        store
            .chunks_missing_embedding("other-model", 0, 1)
            .await
            .expect("other model")
            .len(),
        1
    );

    // v2: "beta" unchanged (moved first, new heading), "alpha" gone, "gamma" new.
    let second = store
        .replace_chunks(
            d.id,
            &[
                chunk(Some("90.2"), Some(2023), "Scope (revised)", "beta text"),
                chunk(Some("90.3"), None, "Arrangement", "gamma text"),
            ],
        )
        .await
        .expect("v2 chunks");
    assert_eq!(second[0], first[1], "the unchanged chunk keeps its id");
    assert!(!first.contains(&second[1]));
    let missing = store
        .chunks_missing_embedding("m", 0, 10)
        .await
        .expect("missing");
    assert_eq!(
        missing.iter().map(|c| c.id).collect::<Vec<_>>(),
        vec![second[1]]
    );
    let scope = store
        .chunks_by_section("90.2", &ChunkFilter::default())
        .await
        .expect("by section");
    assert_eq!(scope.len(), 1);
    assert_eq!(scope[0].heading, "Scope (revised)");
    assert_eq!(scope[0].edition, Some(2023));
    assert!(store
        .chunks_by_section("90.1", &ChunkFilter::default())
        .await
        .expect("gone")
        .is_empty());
    // The old text is gone from the full-text index too.
    assert!(store
        .search_text("alpha", &ChunkFilter::default(), 5)
        .await
        .expect("search")
        .is_empty());
    assert_eq!(
        ids(&store
            .search_text("Arrangement", &ChunkFilter::default(), 5)
            .await
            .expect("search")),
        vec![second[1]]
    );

    store.replace_chunks(d.id, &[]).await.expect("clear");
    assert!(store
        .chunks_missing_embedding("m", 0, 10)
        .await
        .expect("empty")
        .is_empty());
    assert!(matches!(
        store.replace_chunks(d.id + 100, &[]).await,
        Err(StoreError::NotFound(_))
    ));
}

async fn set_embedding_validates(db: TestDb) {
    let store = db.store();
    let (d, _) = store
        .upsert_document(&doc("x.md", None, "x"))
        .await
        .expect("doc");
    let ids = store
        .replace_chunks(d.id, &[chunk(None, None, "h", "t")])
        .await
        .expect("chunks");
    assert!(matches!(
        store.set_embedding(ids[0] + 100, "m", &[1.0]).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(store.set_embedding(ids[0], "m", &[]).await.is_err());
    assert!(store.set_embedding(ids[0], "m", &[f32::NAN]).await.is_err());
    // Replacing an embedding (even with another size) keeps one per chunk and model.
    store
        .set_embedding(ids[0], "m", &[1.0, 2.0])
        .await
        .expect("first");
    store
        .set_embedding(ids[0], "m", &vec384(&[1.0]))
        .await
        .expect("replace");
    let hits = store
        .search_vector(&vec384(&[1.0]), "m", &ChunkFilter::default(), 5)
        .await
        .expect("search");
    assert_eq!(hits.len(), 1);
    assert!(store
        .search_vector(&[1.0, 2.0], "m", &ChunkFilter::default(), 5)
        .await
        .expect("old size")
        .is_empty());
}

async fn embeddings_are_written_and_read_in_batches(db: TestDb) {
    let store = db.store();
    let (d, _) = store
        .upsert_document(&doc("b.md", None, "b"))
        .await
        .expect("doc");
    let texts: Vec<String> = (0..5).map(|i| format!("passage {i}")).collect();
    let ids = store
        .replace_chunks(
            d.id,
            &texts
                .iter()
                .map(|t| chunk(None, None, "h", t))
                .collect::<Vec<_>>(),
        )
        .await
        .expect("chunks");
    // Reading after an id skips what comes before it, whatever its state.
    let after = store
        .chunks_missing_embedding("m", ids[1], 2)
        .await
        .expect("after");
    assert_eq!(
        after.iter().map(|c| c.id).collect::<Vec<_>>(),
        vec![ids[2], ids[3]]
    );
    // One batch: a chunk given twice keeps its last vector.
    let (a, b, c) = (
        vec384(&[1.0]),
        vec384(&[0.0, 1.0]),
        vec384(&[0.0, 0.0, 1.0]),
    );
    store
        .set_embeddings("m", &[(ids[0], &a), (ids[2], &a), (ids[0], &b)])
        .await
        .expect("batch");
    let missing: Vec<i64> = store
        .chunks_missing_embedding("m", 0, 10)
        .await
        .expect("missing")
        .iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(missing, vec![ids[1], ids[3], ids[4]]);
    let hits = store
        .search_vector(&b, "m", &ChunkFilter::default(), 1)
        .await
        .expect("search");
    assert_eq!(hits[0].chunk.id, ids[0], "the chunk's last vector was kept");
    // A batch naming a chunk that does not exist stores none of its rows.
    assert!(matches!(
        store
            .set_embeddings("m", &[(ids[1], &c), (ids[4] + 100, &c)])
            .await,
        Err(StoreError::NotFound(_))
    ));
    // A bad vector anywhere in the batch is refused before anything is written.
    assert!(store
        .set_embeddings("m", &[(ids[3], &c), (ids[4], &[f32::NAN])])
        .await
        .is_err());
    assert_eq!(
        store
            .chunks_missing_embedding("m", 0, 10)
            .await
            .expect("still missing")
            .len(),
        3
    );
}

db::both_backends!(
    upsert_document_reports_changes,
    replace_chunks_keeps_unchanged_embeddings,
    set_embedding_validates,
    embeddings_are_written_and_read_in_batches,
);
