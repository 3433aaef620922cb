//! Store: full-text, vector and BM25 search and section lookups
//! ([`ChunkSearch`](sparky::store::ChunkSearch)), on SQLite and Postgres.

use crate::support::db;

use db::TestDb;
use sparky::store::{Chunk, ChunkFilter, NewChunk};

use crate::support::corpus::*;

async fn search_text_applies_filters(db: TestDb) {
    let store = db.store();
    let c = corpus(&store).await;

    let hits = store
        .search_text(
            "equipment grounding conductors",
            &filter(Some(2023), Some("slack:T1")),
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
            .search_text("grounding", &filter(Some(2020), Some("slack:T2")), 10)
            .await
            .expect("search")),
        vec![c.egc_2020]
    );
    let mut got = ids(&store
        .search_text("grounding", &filter(None, Some("slack:T2")), 10)
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
            .search_text("grounding kitchens", &filter(None, Some("slack:T1")), 10)
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
        .search_vector(&q, m, &filter(Some(2023), Some("slack:T1")), 10)
        .await
        .expect("search");
    assert_eq!(ids(&hits), vec![c.egc_2023, c.gfci_t1, c.ampacity]);
    assert!((hits[0].score - 1.0).abs() < 1e-5, "{}", hits[0].score);
    let expected = 0.9 / (0.9f64 * 0.9 + 0.3 * 0.3).sqrt();
    assert!((hits[1].score - expected).abs() < 1e-4, "{}", hits[1].score);
    assert!(hits[2].score.abs() < 1e-5);

    let top2 = store
        .search_vector(&q, m, &filter(Some(2023), Some("slack:T1")), 2)
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
            .chunks_by_section("210.8", &filter(None, Some("slack:T1")))
            .await
            .expect("own workspace")
            .iter()
            .map(|c| c.id)
            .collect::<Vec<_>>(),
        vec![c.gfci_t1]
    );
    assert!(store
        .chunks_by_section("210.8", &filter(None, Some("slack:T2")))
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
            &filter(None, Some("slack:T1")),
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
            .upsert_document(&doc("team-notes.md", Some("slack:T2"), "t2b"))
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

/// Deterministic uniformly random unit vectors of 384 dimensions (a small linear congruential
/// generator: the test needs spread, not quality).
fn random_vectors(seed: u64, n: usize) -> Vec<Vec<f32>> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            let mut v: Vec<f32> = (0..384)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
                })
                .collect();
            sparky::rag::embed::normalize(&mut v);
            v
        })
        .collect()
}

/// The share of each query's ten nearest stored vectors (compared one by one) that the store's
/// vector search returns among its first ten.
async fn measured_recall(
    store: &std::sync::Arc<dyn sparky::store::Store>,
    stored: &[(i64, Vec<f32>)],
    queries: &[Vec<f32>],
) -> f64 {
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    let mut found = 0;
    for q in queries {
        let mut exact: Vec<(f32, i64)> = stored.iter().map(|(id, v)| (dot(q, v), *id)).collect();
        exact.sort_by(|a, b| b.0.total_cmp(&a.0));
        let truth: Vec<i64> = exact.iter().take(10).map(|x| x.1).collect();
        let hits = store
            .search_vector(q, "m", &ChunkFilter::default(), 10)
            .await
            .expect("search");
        found += hits.iter().filter(|h| truth.contains(&h.chunk.id)).count();
    }
    found as f64 / (10 * queries.len()) as f64
}

/// Postgres chooses the HNSW search width from a recall target by measuring the index against
/// exact search, and the width it keeps meets the target for the vector search itself;
/// the choice is stored and read back by another process. SQLite searches exactly: nothing
/// to choose.
async fn index_width_is_chosen_for_the_recall_target(db: TestDb) {
    let store = db.store();
    let (d, _) = store
        .upsert_document(&doc("bulk.md", None, "b"))
        .await
        .expect("doc");
    let chunks: Vec<NewChunk> = (0..2000)
        .map(|i| chunk(None, None, &format!("h{i}"), &format!("chunk number {i}")))
        .collect();
    let ids_all = store.replace_chunks(d.id, &chunks).await.expect("chunks");
    let mut stored = Vec::new();
    for (id, v) in ids_all.iter().zip(random_vectors(1, ids_all.len())) {
        store.set_embedding(*id, "m", &v).await.expect("embed");
        stored.push((*id, v));
    }
    // Uniformly random directions: a hard case for a graph index, so the width matters.
    let queries = random_vectors(2, 24);
    let tuning = store.tune_index("m", &queries, 0.9).await.expect("tune");
    if db.postgres_url().is_none() {
        assert_eq!(tuning, None);
        assert_eq!(store.ef_search(), None);
        assert_eq!(store.load_index_tuning("m").await.expect("load"), None);
        assert_eq!(measured_recall(&store, &stored, &queries).await, 1.0);
        assert!(!store.pause_vector_index(384).await.expect("no index"));
        assert!(!store.ensure_vector_index().await.expect("no index"));
        return;
    }
    let tuning = tuning.expect("a tuning on Postgres");
    assert!(tuning.reached(), "{tuning:?}");
    assert_eq!((tuning.queries, tuning.vectors), (24, 2000), "{tuning:?}");
    assert_eq!(store.ef_search(), Some(tuning.ef_search));
    let recall = measured_recall(&store, &stored, &queries).await;
    assert!(recall >= 0.9, "recall {recall} at {tuning:?}");
    // A narrower width than the chosen one misses more of the true neighbours.
    let narrow = store.tune_index("m", &queries, 0.5).await.expect("tune");
    let narrow = narrow.expect("a tuning");
    assert!(
        narrow.ef_search < tuning.ef_search,
        "{narrow:?} vs {tuning:?}"
    );
    assert!(narrow.recall < tuning.recall, "{narrow:?} vs {tuning:?}");
    // The search itself goes through the index: at the narrow width it misses neighbours too.
    let narrow_search = measured_recall(&store, &stored, &queries).await;
    assert!(
        narrow_search < recall.min(1.0),
        "{narrow_search} at {narrow:?}, {recall} at {tuning:?}"
    );
    // A bulk pass drops the index (only for vectors it holds): searches then compare every
    // vector, so even the narrow width finds all neighbours, until the index is built again.
    assert!(!store.pause_vector_index(4).await.expect("other dims"));
    assert!(store.pause_vector_index(384).await.expect("pause"));
    assert!(!store
        .pause_vector_index(384)
        .await
        .expect("already dropped"));
    assert_eq!(measured_recall(&store, &stored, &queries).await, 1.0);
    assert!(store.ensure_vector_index().await.expect("build"));
    assert!(!store.ensure_vector_index().await.expect("already there"));
    let rebuilt = measured_recall(&store, &stored, &queries).await;
    assert!(rebuilt < 1.0, "the rebuilt index is searched: {rebuilt}");
    // What was measured last is what another process reads and uses.
    let again = db.reopen().await;
    assert_eq!(again.ef_search(), Some(100), "the default before reading");
    assert_eq!(
        again.load_index_tuning("m").await.expect("load"),
        Some(narrow.clone())
    );
    assert_eq!(again.ef_search(), Some(narrow.ef_search));
    // An explicit width is used as given.
    again.use_ef_search(37);
    assert_eq!(again.ef_search(), Some(37));
    assert_eq!(again.indexed_vectors("m").await.expect("count"), Some(2000));
}

db::both_backends!(
    search_text_applies_filters,
    search_text_survives_hostile_input,
    search_vector_applies_filters,
    search_vector_ranks_many,
    chunks_by_section_applies_filters,
    rank_text_weighs_rarity_over_candidates,
    index_width_is_chosen_for_the_recall_target,
);
