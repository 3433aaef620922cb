//! Store: documents, chunks, embeddings, full-text and vector search, on SQLite and Postgres.

use crate::support::db;

use std::sync::Arc;

use db::TestDb;
use sparky::store::{Chunk, ChunkFilter, NewChunk, NewDocument, Store, StoreError};

const DIMS: usize = 384;

fn doc(source: &str, workspace: Option<&str>, hash: &str) -> NewDocument {
    NewDocument {
        source: source.to_string(),
        title: format!("Title of {source}"),
        workspace: workspace.map(str::to_string),
        content_hash: hash.to_string(),
    }
}

fn chunk(section: Option<&str>, edition: Option<i32>, heading: &str, text: &str) -> NewChunk {
    NewChunk {
        section: section.map(str::to_string),
        edition,
        page: Some(7),
        heading: heading.to_string(),
        text: text.to_string(),
        content_hash: format!("h:{text}"),
    }
}

/// A 384-dimension vector with the given leading components.
fn vec384(head: &[f32]) -> Vec<f32> {
    let mut v = vec![0.0; DIMS];
    v[..head.len()].copy_from_slice(head);
    v
}

fn filter(edition: Option<i32>, workspace: Option<&str>) -> ChunkFilter {
    ChunkFilter {
        edition,
        workspace: workspace.map(str::to_string),
    }
}

/// The corpus the search tests share; chunk ids in the order listed.
struct Corpus {
    /// 250.122, 2023, global.
    egc_2023: i64,
    /// 250.122, 2020, global.
    egc_2020: i64,
    /// 310.16, no edition, global.
    ampacity: i64,
    /// 210.8, 2023, workspace T1.
    gfci_t1: i64,
    /// no section, 2023, workspace T2.
    spec_t2: i64,
}

async fn corpus(store: &Arc<dyn Store>) -> Corpus {
    let (global, _) = store
        .upsert_document(&doc("sparky:summaries", None, "g1"))
        .await
        .expect("global doc");
    let (t1, _) = store
        .upsert_document(&doc("team-notes.md", Some("T1"), "t1"))
        .await
        .expect("t1 doc");
    let (t2, _) = store
        .upsert_document(&doc("team-notes.md", Some("T2"), "t2"))
        .await
        .expect("t2 doc");
    let g = store
        .replace_chunks(
            global.id,
            &[
                chunk(
                    Some("250.122"),
                    Some(2023),
                    "Size of equipment grounding conductors",
                    "The equipment grounding conductor is sized from Table 250.122 by the \
                     rating of the overcurrent device ahead of it.",
                ),
                chunk(
                    Some("250.122"),
                    Some(2020),
                    "Size of equipment grounding conductors (2020)",
                    "2020 edition: equipment grounding conductors are sized per Table 250.122.",
                ),
                chunk(
                    Some("310.16"),
                    None,
                    "Ampacities of insulated conductors",
                    "Table 310.16 lists allowable ampacities for insulated conductors rated up \
                     to 2000 volts.",
                ),
            ],
        )
        .await
        .expect("global chunks");
    let a = store
        .replace_chunks(
            t1.id,
            &[chunk(
                Some("210.8"),
                Some(2023),
                "GFCI protection",
                "Ground-fault circuit-interrupter protection in kitchens. Team note: the \
                 equipment grounding conductor must be continuous.",
            )],
        )
        .await
        .expect("t1 chunks");
    let b = store
        .replace_chunks(
            t2.id,
            &[chunk(
                None,
                Some(2023),
                "Other team's spec",
                "Equipment grounding conductor specification of team two.",
            )],
        )
        .await
        .expect("t2 chunks");
    Corpus {
        egc_2023: g[0],
        egc_2020: g[1],
        ampacity: g[2],
        gfci_t1: a[0],
        spec_t2: b[0],
    }
}

fn ids(results: &[sparky::store::ScoredChunk]) -> Vec<i64> {
    results.iter().map(|r| r.chunk.id).collect()
}

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
        .upsert_document(&doc("nec.pdf", Some("T1"), "bbb"))
        .await
        .expect("workspace copy");
    assert!(changed);
    assert_ne!(ws.id, d.id);
    assert_eq!(ws.workspace.as_deref(), Some("T1"));

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
        .chunks_missing_embedding("m", 10)
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
        .chunks_missing_embedding("m", 10)
        .await
        .expect("none")
        .is_empty());
    assert_eq!(
        store
            .chunks_missing_embedding("other-model", 1)
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
        .chunks_missing_embedding("m", 10)
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
        .chunks_missing_embedding("m", 10)
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

async fn search_text_applies_filters(db: TestDb) {
    let store = db.store();
    let c = corpus(&store).await;

    let hits = store
        .search_text(
            "equipment grounding conductors",
            &filter(Some(2023), Some("T1")),
            10,
        )
        .await
        .expect("search");
    let mut got = ids(&hits);
    got.sort();
    assert_eq!(got, vec![c.egc_2023, c.gfci_t1]);
    assert!(hits.iter().all(|h| h.score > 0.0), "{hits:?}");
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));

    // No workspace: global documents only; no edition: every edition.
    let mut got = ids(&store
        .search_text("equipment grounding conductor", &ChunkFilter::default(), 10)
        .await
        .expect("search"));
    got.sort();
    assert_eq!(got, vec![c.egc_2023, c.egc_2020]);

    assert_eq!(
        ids(&store
            .search_text("grounding", &filter(Some(2020), Some("T2")), 10)
            .await
            .expect("search")),
        vec![c.egc_2020]
    );
    let mut got = ids(&store
        .search_text("grounding", &filter(None, Some("T2")), 10)
        .await
        .expect("search"));
    got.sort();
    assert_eq!(got, vec![c.egc_2023, c.egc_2020, c.spec_t2]);

    // Chunks without an edition pass any edition filter.
    assert_eq!(
        ids(&store
            .search_text("ampacities", &filter(Some(2020), None), 10)
            .await
            .expect("search")),
        vec![c.ampacity]
    );
    // A section number finds its table; k limits the count.
    let table = store
        .search_text("Table 250.122", &ChunkFilter::default(), 1)
        .await
        .expect("search");
    assert_eq!(table.len(), 1);
    assert_eq!(table[0].chunk.section.as_deref(), Some("250.122"));
    // Words are ANDed.
    assert_eq!(
        ids(&store
            .search_text("grounding kitchens", &filter(None, Some("T1")), 10)
            .await
            .expect("search")),
        vec![c.gfci_t1]
    );
    assert!(store
        .search_text("grounding", &ChunkFilter::default(), 0)
        .await
        .expect("k = 0")
        .is_empty());
}

async fn search_text_survives_hostile_input(db: TestDb) {
    let store = db.store();
    corpus(&store).await;
    for q in [
        "",
        "   ",
        "\"",
        "\"unclosed phrase",
        "NEAR(grounding conductor)",
        "grounding AND OR NOT",
        "heading:grounding",
        "ground*",
        "^grounding",
        "'; DROP TABLE chunks; --",
        "(((",
        "-",
        "- -grounding",
        "or",
        "the of and",
        "\u{0}\u{1f}",
        "emoji ⚡ conductor",
        "!@#$%^&*()_+{}|:<>?~`",
    ] {
        store
            .search_text(q, &ChunkFilter::default(), 5)
            .await
            .unwrap_or_else(|e| panic!("query {q:?} failed: {e}"));
    }
    // The chunks are still there afterwards.
    assert!(!store
        .search_text("ampacities", &ChunkFilter::default(), 5)
        .await
        .expect("search")
        .is_empty());
}

async fn search_vector_applies_filters(db: TestDb) {
    let store = db.store();
    let c = corpus(&store).await;
    let m = "local-minilm";
    store
        .set_embedding(c.egc_2023, m, &vec384(&[1.0]))
        .await
        .expect("e");
    store
        .set_embedding(c.egc_2020, m, &vec384(&[1.0, 0.05]))
        .await
        .expect("e");
    store
        .set_embedding(c.ampacity, m, &vec384(&[0.0, 1.0]))
        .await
        .expect("e");
    store
        .set_embedding(c.gfci_t1, m, &vec384(&[0.9, 0.0, 0.3]))
        .await
        .expect("e");
    store
        .set_embedding(c.spec_t2, m, &vec384(&[1.0]))
        .await
        .expect("e");
    // Another model's vectors, of another size, coexist.
    store
        .set_embedding(c.egc_2023, "tiny", &[0.0, 0.0, 1.0])
        .await
        .expect("tiny");
    store
        .set_embedding(c.ampacity, "tiny", &[0.0, 1.0, 0.0])
        .await
        .expect("tiny");

    let q = vec384(&[1.0]);
    let hits = store
        .search_vector(&q, m, &filter(Some(2023), Some("T1")), 10)
        .await
        .expect("search");
    assert_eq!(ids(&hits), vec![c.egc_2023, c.gfci_t1, c.ampacity]);
    assert!((hits[0].score - 1.0).abs() < 1e-5, "{}", hits[0].score);
    let expected = 0.9 / (0.9f64 * 0.9 + 0.3 * 0.3).sqrt();
    assert!((hits[1].score - expected).abs() < 1e-4, "{}", hits[1].score);
    assert!(hits[2].score.abs() < 1e-5);

    let top2 = store
        .search_vector(&q, m, &filter(Some(2023), Some("T1")), 2)
        .await
        .expect("k = 2");
    assert_eq!(ids(&top2), vec![c.egc_2023, c.gfci_t1]);

    // Global only, any edition.
    let hits = store
        .search_vector(&q, m, &ChunkFilter::default(), 2)
        .await
        .expect("global");
    assert_eq!(ids(&hits), vec![c.egc_2023, c.egc_2020]);

    let tiny = store
        .search_vector(&[0.0, 1.0, 0.1], "tiny", &ChunkFilter::default(), 5)
        .await
        .expect("tiny");
    assert_eq!(ids(&tiny), vec![c.ampacity, c.egc_2023]);
    assert!(store
        .search_vector(&[1.0, 0.0], "tiny", &ChunkFilter::default(), 5)
        .await
        .expect("size mismatch")
        .is_empty());
    assert!(store
        .search_vector(&q, "unknown-model", &ChunkFilter::default(), 5)
        .await
        .expect("unknown model")
        .is_empty());
    assert!(store
        .search_vector(&vec384(&[]), m, &ChunkFilter::default(), 5)
        .await
        .expect("zero vector")
        .is_empty());
    assert!(store
        .search_vector(&q, m, &ChunkFilter::default(), 0)
        .await
        .expect("k = 0")
        .is_empty());
}

async fn search_vector_ranks_many(db: TestDb) {
    // Enough rows that Postgres may use the HNSW index; results must equal an exact ranking.
    let store = db.store();
    let (d, _) = store
        .upsert_document(&doc("bulk.md", None, "b"))
        .await
        .expect("doc");
    let chunks: Vec<NewChunk> = (0..300)
        .map(|i| chunk(None, None, &format!("h{i}"), &format!("chunk number {i}")))
        .collect();
    let ids_all = store.replace_chunks(d.id, &chunks).await.expect("chunks");
    let mut vectors = Vec::new();
    for (i, id) in ids_all.iter().enumerate() {
        let angle = i as f32 * 0.01;
        let v = vec384(&[angle.cos(), angle.sin(), (i % 7) as f32 * 0.001]);
        store.set_embedding(*id, "m", &v).await.expect("embed");
        vectors.push(v);
    }
    let hits = store
        .search_vector(&vec384(&[1.0]), "m", &ChunkFilter::default(), 10)
        .await
        .expect("search");
    assert_eq!(hits.len(), 10);
    assert_eq!(hits[0].chunk.id, ids_all[0]);
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score - 1e-9));
    let mut got = ids(&hits);
    got.sort();
    assert_eq!(got, ids_all[..10].to_vec());
}

async fn chunks_by_section_applies_filters(db: TestDb) {
    let store = db.store();
    let c = corpus(&store).await;
    let egc: Vec<Chunk> = store
        .chunks_by_section("250.122", &ChunkFilter::default())
        .await
        .expect("by section");
    assert_eq!(
        egc.iter().map(|c| c.id).collect::<Vec<_>>(),
        vec![c.egc_2023, c.egc_2020],
        "newest edition first"
    );
    assert_eq!(egc[0].source, "sparky:summaries");
    assert_eq!(egc[0].heading, "Size of equipment grounding conductors");
    assert_eq!(
        store
            .chunks_by_section("250.122", &filter(Some(2020), None))
            .await
            .expect("2020")
            .iter()
            .map(|c| c.id)
            .collect::<Vec<_>>(),
        vec![c.egc_2020]
    );
    assert_eq!(
        store
            .chunks_by_section("310.16", &filter(Some(2023), None))
            .await
            .expect("editionless")
            .iter()
            .map(|c| c.id)
            .collect::<Vec<_>>(),
        vec![c.ampacity]
    );
    assert!(store
        .chunks_by_section("210.8", &ChunkFilter::default())
        .await
        .expect("other workspace")
        .is_empty());
    assert_eq!(
        store
            .chunks_by_section("210.8", &filter(None, Some("T1")))
            .await
            .expect("own workspace")
            .iter()
            .map(|c| c.id)
            .collect::<Vec<_>>(),
        vec![c.gfci_t1]
    );
    assert!(store
        .chunks_by_section("210.8", &filter(None, Some("T2")))
        .await
        .expect("foreign workspace")
        .is_empty());
    assert!(store
        .chunks_by_section("999.9", &ChunkFilter::default())
        .await
        .expect("unknown")
        .is_empty());
}

/// Full text ranked with term rarity over candidates: a rare word outweighs a common one,
/// candidates found elsewhere are ranked when they match, filters hold, and the term
/// statistics follow inserts, re-ingestion and deletion.
async fn rank_text_weighs_rarity_over_candidates(db: TestDb) {
    let store = db.store();
    let c = corpus(&store).await;
    // "equipment grounding conductor" is in four chunks, "ampacities" in one.
    let hits = store
        .rank_text(
            "equipment grounding conductor ampacities",
            &[],
            2000,
            &ChunkFilter::default(),
            10,
        )
        .await
        .expect("rank");
    assert_eq!(
        hits.first().map(|h| h.chunk.id),
        Some(c.ampacity),
        "{hits:?}"
    );
    // Another workspace's chunk is never returned, even when named as a candidate.
    let hits = store
        .rank_text(
            "equipment grounding conductor",
            &[c.spec_t2, c.egc_2023],
            2000,
            &filter(None, Some("T1")),
            10,
        )
        .await
        .expect("rank");
    let found = ids(&hits);
    assert!(
        found.contains(&c.egc_2023) && !found.contains(&c.spec_t2),
        "{found:?}"
    );
    // With no budget, only the candidates are ranked (and only if they match a word).
    let hits = store
        .rank_text(
            "equipment grounding",
            &[c.egc_2020, c.ampacity],
            0,
            &ChunkFilter::default(),
            10,
        )
        .await
        .expect("rank");
    if db.backend() == sparky::store::Backend::Postgres {
        assert_eq!(ids(&hits), vec![c.egc_2020], "{hits:?}");
    } else {
        assert!(ids(&hits).contains(&c.egc_2020));
        assert!(!ids(&hits).contains(&c.ampacity));
    }
    for q in [
        "",
        "the of and",
        "'; DROP TABLE chunks; --",
        "\\ \' \"",
        "a | b & !c",
    ] {
        store
            .rank_text(q, &[c.egc_2023], 2000, &ChunkFilter::default(), 5)
            .await
            .unwrap_or_else(|e| panic!("query {q:?} failed: {e}"));
    }
    // Similarities of chosen chunks only, for one model.
    store
        .set_embedding(c.ampacity, "m", &vec384(&[1.0, 0.0]))
        .await
        .expect("embedding");
    let sims = store
        .similarities(&[c.ampacity, c.egc_2023], &vec384(&[1.0, 0.0]), "m")
        .await
        .expect("similarities");
    assert_eq!(sims.len(), 1);
    assert!((sims[0].1 - 1.0).abs() < 1e-6, "{sims:?}");

    if let Some(url) = db.postgres_url() {
        let pool = sqlx::PgPool::connect(url).await.expect("pool");
        let ndoc = |term: &'static str| {
            let pool = pool.clone();
            async move {
                sqlx::query_scalar::<_, i64>(
                    "SELECT coalesce((SELECT ndoc FROM chunk_terms WHERE term = $1), 0)",
                )
                .bind(term)
                .fetch_one(&pool)
                .await
                .expect("ndoc")
            }
        };
        assert_eq!(ndoc("ampac").await, 1);
        assert_eq!(ndoc("equip").await, 4);
        let (chunks, stats): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM chunks), (SELECT nchunks FROM chunk_stats)",
        )
        .fetch_one(&pool)
        .await
        .expect("stats");
        assert_eq!(chunks, stats);
        // Re-ingesting a document with other text moves the counts; deleting drops them.
        let (t2, _) = store
            .upsert_document(&doc("team-notes.md", Some("T2"), "t2b"))
            .await
            .expect("doc");
        store
            .replace_chunks(
                t2.id,
                &[chunk(None, None, "Pumps", "Ampacities of pump motors.")],
            )
            .await
            .expect("replace");
        assert_eq!(ndoc("ampac").await, 2);
        assert_eq!(ndoc("equip").await, 3);
        sqlx::query("DELETE FROM documents WHERE id = $1")
            .bind(t2.id)
            .execute(&pool)
            .await
            .expect("delete");
        assert_eq!(ndoc("ampac").await, 1);
        let stats: i64 = sqlx::query_scalar("SELECT nchunks FROM chunk_stats")
            .fetch_one(&pool)
            .await
            .expect("stats");
        assert_eq!(stats, 4);
    }
}

db::both_backends!(
    rank_text_weighs_rarity_over_candidates,
    upsert_document_reports_changes,
    replace_chunks_keeps_unchanged_embeddings,
    set_embedding_validates,
    search_text_applies_filters,
    search_text_survives_hostile_input,
    search_vector_applies_filters,
    search_vector_ranks_many,
    chunks_by_section_applies_filters,
);
