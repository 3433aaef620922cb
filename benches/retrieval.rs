//! Retrieval at scale: latency and recall of `Retriever::search` over the shipped corpus plus N
//! synthetic passages, on Postgres (BM25 over candidates + HNSW) and SQLite (FTS5 + exact scan).
//!
//! The synthetic passages are made of the corpus's own words (60 per passage). Their vectors
//! come from one of two distributions (`SPARKY_BENCH_VECTORS=near,uniform`, both by default):
//! `near`, real corpus vectors of the default model perturbed to cosine about 0.75 to the
//! vector they come from, so they crowd the real passages in both halves; `uniform`, uniformly
//! random directions, which share no structure with questions or passages. They are
//! bulk-loaded with COPY on Postgres and the HNSW index is built once after loading (its build
//! time is printed). On Postgres the index's search width is then chosen for the configured
//! recall target (`rag::index_tuning::tune_if_changed`, as after an ingest; its time and choice
//! are printed) and recall@10 of the vector search against exact search is measured for the
//! benchmark's questions at that width.
//!
//! Questions are the chat evaluation set (`src/rag/eval/chat.toml`), embedded with the real
//! local model. Figures printed per store and size:
//! * `hybrid, cached`: the whole search with the question's vector already in the query cache
//!   (expansion, cache lookup, the database part and fusion);
//! * `hybrid, database part`: the store calls of that search alone;
//! * `embed`: the model's cost for a question not seen before (added once per new question);
//! * `text only`: search without an embedder (bounded full text);
//! * recall@5 of both modes on the chat set with all the synthetic passages present.
//!
//! Run: `bash .ci/bench retrieval` or, with a server at hand,
//! `SPARKY_TEST_DATABASE_URL=postgres://... cargo bench --bench retrieval`.
//! Environment: `SPARKY_BENCH_SIZES` (default `10000,100000`), `SPARKY_BENCH_BACKENDS`
//! (default `postgres,sqlite`; SQLite is loaded row by row and skipped above 100k),
//! `SPARKY_BENCH_DATABASE=name` (keep the Postgres database `name_<size>` and reuse it when it
//! already holds that many synthetic passages with their index: loading 1M takes long),
//! `SPARKY_BENCH_HNSW=m,ef_construction` (build the index with these instead of the
//! migration's; a kept database's index is rebuilt when its parameters differ),
//! `SPARKY_BENCH_EF_SEARCH=40,120,400` (also measure the hybrid search and its recall@10 with
//! each of these `hnsw.ef_search`), `SPARKY_BENCH_IVF=5,10,20` (also the vector search
//! alone through an IVFFlat index at each of these numbers of probes, against HNSW at the
//! chosen width; the database is left as it was).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use sparky::rag::embed::Embedder;
use sparky::rag::eval::{evaluate_set, load, EvalSet};
use sparky::rag::search::{Retriever, SearchOptions};
use sparky::store::{NewChunk, NewDocument, Store};
use sqlx::postgres::PgPoolCopyExt;

const MODEL: &str = "all-MiniLM-L6-v2";
/// Half-width of the uniform noise added to each component of a real vector.
const NOISE: f32 = 0.078;

fn corpus_words() -> Vec<String> {
    sparky::rag::corpus::summary_chunks()
        .expect("corpus")
        .iter()
        .flat_map(|c| {
            c.text
                .split_whitespace()
                .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_string())
                .collect::<Vec<_>>()
        })
        .filter(|w| w.len() > 3)
        .collect()
}

fn synthetic_text(rng: &mut impl Rng, words: &[String]) -> String {
    (0..60)
        .map(|_| words[rng.random_range(0..words.len())].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// How the synthetic passages' vectors are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Vectors {
    /// Real corpus vectors perturbed to cosine ~0.75: near-copies of the real passages.
    Near,
    /// Uniformly random directions.
    Uniform,
}

impl Vectors {
    fn name(self) -> &'static str {
        match self {
            Self::Near => "near",
            Self::Uniform => "uniform",
        }
    }

    fn draw(self, rng: &mut impl Rng, bases: &[Vec<f32>]) -> Vec<f32> {
        match self {
            Self::Near => {
                let base = &bases[rng.random_range(0..bases.len())];
                perturbed(rng, base)
            }
            Self::Uniform => {
                let mut v: Vec<f32> = (0..bases[0].len())
                    .map(|_| rng.random_range(-1.0..1.0))
                    .collect();
                sparky::rag::embed::normalize(&mut v);
                v
            }
        }
    }
}

fn perturbed(rng: &mut impl Rng, base: &[f32]) -> Vec<f32> {
    let mut v: Vec<f32> = base
        .iter()
        .map(|x| x + rng.random_range(-NOISE..NOISE))
        .collect();
    sparky::rag::embed::normalize(&mut v);
    v
}

/// Real vectors of the shipped passages (the bundled ones), as noise centres.
async fn base_vectors(store: &dyn Store) -> Vec<Vec<f32>> {
    let bundled = sparky::rag::bundled::bundled();
    let mut out = Vec::new();
    let chunks = sparky::rag::corpus::summary_chunks()
        .expect("corpus")
        .into_iter()
        .chain(sparky::rag::corpus::table_chunks().expect("tables"));
    for c in chunks {
        if let Some(v) = bundled.vector(MODEL, 384, Some(bundled.weights()), &c.text) {
            out.push(v.to_vec());
        }
    }
    let _ = store;
    assert!(!out.is_empty(), "no bundled vectors");
    out
}

/// Postgres: COPY the passages, build their vectors in SQL from the real ones, then build
/// the HNSW index once.
async fn fill_postgres(pool: &sqlx::PgPool, total: usize, bases: &[Vec<f32>], vectors: Vectors) {
    let words = corpus_words();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let doc_id: i64 = sqlx::query_scalar(
        "INSERT INTO documents (source, title, workspace, content_hash, created_at, updated_at) \
         VALUES ('bench', 'bench', NULL, 'bench', now(), now()) RETURNING id",
    )
    .fetch_one(pool)
    .await
    .expect("document");
    sqlx::query("DROP INDEX IF EXISTS chunk_embeddings_hnsw_384")
        .execute(pool)
        .await
        .expect("drop index");
    let t = Instant::now();
    let per_batch = 50_000;
    for start in (0..total).step_by(per_batch) {
        let mut buf = String::new();
        for i in start..(start + per_batch).min(total) {
            let text = synthetic_text(&mut rng, &words);
            let section = format!("{}.{}", 100 + i % 700, i % 90);
            buf.push_str(&format!("{doc_id}\t{i}\t{section}\t\t{text}\tbench-{i}\n"));
        }
        let mut copy = pool
            .copy_in_raw(
                "COPY chunks (document_id, ord, section, heading, text, content_hash) FROM STDIN",
            )
            .await
            .expect("copy");
        copy.send(buf.into_bytes()).await.expect("copy send");
        copy.finish().await.expect("copy finish");
    }
    eprintln!(
        "postgres: {total} passages copied (with term statistics) in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let ids: Vec<i64> =
        sqlx::query_scalar("SELECT id FROM chunks WHERE document_id = $1 ORDER BY id")
            .bind(doc_id)
            .fetch_all(pool)
            .await
            .expect("ids");
    for part in ids.chunks(2_000) {
        let mut buf = String::new();
        for id in part {
            let v = vectors.draw(&mut rng, bases);
            let body: Vec<String> = v.iter().map(|x| format!("{x:.5}")).collect();
            buf.push_str(&format!("{id}\t{MODEL}\t384\t[{}]\n", body.join(",")));
        }
        let mut copy = pool
            .copy_in_raw("COPY chunk_embeddings (chunk_id, model, dims, embedding) FROM STDIN")
            .await
            .expect("copy");
        copy.send(buf.into_bytes()).await.expect("copy send");
        copy.finish().await.expect("copy finish");
    }
    eprintln!(
        "postgres: {total} vectors copied in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    build_hnsw(pool, total).await;
    let mut conn = pool.acquire().await.expect("connection");
    sqlx::query("VACUUM ANALYZE chunks")
        .execute(&mut *conn)
        .await
        .expect("analyze");
    sqlx::query("VACUUM ANALYZE chunk_embeddings")
        .execute(&mut *conn)
        .await
        .expect("analyze");
}

/// The HNSW parameters to build with: `SPARKY_BENCH_HNSW=m,ef_construction`, else the ones a
/// fresh install's migrations create.
fn hnsw_parameters() -> (u32, u32) {
    std::env::var("SPARKY_BENCH_HNSW")
        .ok()
        .and_then(|v| {
            let (m, ef) = v.split_once(',')?;
            Some((m.trim().parse().ok()?, ef.trim().parse().ok()?))
        })
        .unwrap_or((sparky::store::HNSW_M, sparky::store::HNSW_EF_CONSTRUCTION))
}

/// The HNSW index's `m` and `ef_construction` as built (pgvector's defaults when unset).
async fn hnsw_built_with(pool: &sqlx::PgPool) -> Option<(u32, u32)> {
    let options: Option<Vec<String>> = sqlx::query_scalar(
        "SELECT c.reloptions FROM pg_class c WHERE c.relname = 'chunk_embeddings_hnsw_384'",
    )
    .fetch_optional(pool)
    .await
    .expect("reloptions")?;
    let find = |key: &str, default: u32| {
        options
            .iter()
            .flatten()
            .find_map(|o| o.strip_prefix(&format!("{key}="))?.parse().ok())
            .unwrap_or(default)
    };
    Some((find("m", 16), find("ef_construction", 64)))
}

/// (Re)builds the HNSW index with [`hnsw_parameters`], printing time and size.
async fn build_hnsw(pool: &sqlx::PgPool, total: usize) {
    let (m, ef_construction) = hnsw_parameters();
    let t = Instant::now();
    let mut conn = pool.acquire().await.expect("connection");
    // At least 1 GB for the graph, never less than the server gives: with less memory than
    // the graph takes, pgvector builds on disk and much more slowly.
    let memory: String = sqlx::query_scalar(
        "SELECT set_config('maintenance_work_mem', (greatest( \
             pg_size_bytes(current_setting('maintenance_work_mem')), \
             pg_size_bytes('1GB')) / 1024)::text || 'kB', false)",
    )
    .fetch_one(&mut *conn)
    .await
    .expect("set");
    println!("  HNSW build with maintenance_work_mem {memory}");
    sqlx::query("DROP INDEX IF EXISTS chunk_embeddings_hnsw_384")
        .execute(&mut *conn)
        .await
        .expect("drop index");
    sqlx::query(&format!(
        "CREATE INDEX chunk_embeddings_hnsw_384 ON chunk_embeddings \
         USING hnsw ((embedding::halfvec(384)) halfvec_cosine_ops) \
         WITH (m = {m}, ef_construction = {ef_construction}) WHERE dims = 384"
    ))
    .execute(&mut *conn)
    .await
    .expect("hnsw");
    let size: String =
        sqlx::query_scalar("SELECT pg_size_pretty(pg_relation_size('chunk_embeddings_hnsw_384'))")
            .fetch_one(&mut *conn)
            .await
            .expect("size");
    eprintln!(
        "postgres: HNSW index (m {m}, ef_construction {ef_construction}) over {total} vectors built in {:.1} s ({size})",
        t.elapsed().as_secs_f64()
    );
}

async fn fill_sqlite(store: &dyn Store, total: usize, bases: &[Vec<f32>], vectors: Vectors) {
    let words = corpus_words();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let per_doc = 1000;
    for d in 0..total.div_ceil(per_doc) {
        let doc = NewDocument {
            source: format!("bench-{d}"),
            title: format!("bench {d}"),
            workspace: None,
            content_hash: format!("bench-{d}"),
        };
        let (doc, _) = store.upsert_document(&doc).await.expect("document");
        let chunks: Vec<NewChunk> = (0..per_doc.min(total - d * per_doc))
            .map(|i| NewChunk {
                section: Some(format!("{}.{}", 100 + (d * per_doc + i) % 700, i % 90)),
                edition: None,
                page: None,
                heading: String::new(),
                content_hash: format!("{d}-{i}"),
                text: synthetic_text(&mut rng, &words),
            })
            .collect();
        let ids = store.replace_chunks(doc.id, &chunks).await.expect("chunks");
        for id in ids {
            store
                .set_embedding(id, MODEL, &vectors.draw(&mut rng, bases))
                .await
                .expect("embedding");
        }
    }
}

fn percentile(times: &mut [Duration], q: f64) -> f64 {
    times.sort();
    times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3
}

async fn timed(retriever: &Retriever, questions: &[String], rounds: usize) -> (f64, f64) {
    let opts = SearchOptions::default();
    let mut times = Vec::new();
    for _ in 0..rounds {
        for q in questions {
            let t = Instant::now();
            retriever.search(q, &opts).await.expect("search");
            times.push(t.elapsed());
        }
    }
    (percentile(&mut times, 0.5), percentile(&mut times, 0.99))
}

/// The database part of a hybrid search alone: the store calls `Retriever::search` makes for a
/// question whose vector is already known (exact references, HNSW neighbours, bounded BM25,
/// similarities of text-only hits), timed without expansion, cache lookup or fusion.
async fn timed_database(
    store: &dyn Store,
    vectors: &[(String, Vec<f32>)],
    rounds: usize,
) -> (f64, f64) {
    use sparky::rag::search::{CANDIDATES, HYBRID_TEXT_BUDGET};
    let filter = sparky::store::ChunkFilter::default();
    let mut times = Vec::new();
    for _ in 0..rounds {
        for (q, v) in vectors {
            let expanded = sparky::rag::expand::expand(q);
            let t = Instant::now();
            let mut known = Vec::new();
            for reference in sparky::rag::sections::find_references(q) {
                let bare = sparky::rag::sections::strip_table(&reference).to_string();
                let mut variants = vec![reference.clone(), bare.clone(), format!("Table {bare}")];
                variants.dedup();
                for variant in variants {
                    for c in store
                        .chunks_by_section(&variant, &filter)
                        .await
                        .expect("section")
                    {
                        known.push(c.id);
                    }
                }
            }
            let hits = store
                .search_vector(v, MODEL, &filter, CANDIDATES)
                .await
                .expect("vector");
            known.extend(hits.iter().map(|h| h.chunk.id));
            let text = store
                .rank_text(&expanded, &known, HYBRID_TEXT_BUDGET, &filter, CANDIDATES)
                .await
                .expect("text");
            let unknown: Vec<i64> = text
                .iter()
                .map(|h| h.chunk.id)
                .filter(|id| !known.contains(id))
                .collect();
            store
                .similarities(&unknown, v, MODEL)
                .await
                .expect("similarities");
            times.push(t.elapsed());
        }
    }
    (percentile(&mut times, 0.5), percentile(&mut times, 0.99))
}

/// Recall@10 of the vector search against exact search on Postgres: the first ten of the
/// neighbours the retriever asks for, against the ten nearest found by comparing every vector.
async fn recall_at_10(
    store: &dyn Store,
    pool: &sqlx::PgPool,
    vectors: &[(String, Vec<f32>)],
) -> f64 {
    use sparky::rag::search::CANDIDATES;
    let filter = sparky::store::ChunkFilter::default();
    let (mut found, mut wanted) = (0usize, 0usize);
    for (_, v) in vectors {
        let approx: Vec<i64> = store
            .search_vector(v, MODEL, &filter, CANDIDATES)
            .await
            .expect("vector")
            .iter()
            .take(10)
            .map(|h| h.chunk.id)
            .collect();
        let mut tx = pool.begin().await.expect("begin");
        sqlx::query("SET LOCAL enable_indexscan = off")
            .execute(&mut *tx)
            .await
            .expect("set");
        let exact = exact_top10(&mut *tx, v).await;
        tx.commit().await.expect("commit");
        wanted += exact.len();
        found += approx.iter().filter(|id| exact.contains(id)).count();
    }
    found as f64 / wanted.max(1) as f64
}

/// The chat set's questions with their vectors, embedded as a search embeds them.
async fn chat_vectors(embedder: &dyn Embedder) -> Vec<(String, Vec<f32>)> {
    let set = load(EvalSet::Chat).expect("chat set");
    let mut vectors = Vec::new();
    for q in &set.questions {
        let v = embedder
            .embed(
                &[sparky::rag::expand::expand(&q.text)],
                sparky::rag::embed::EmbedKind::Query,
            )
            .await
            .expect("embed");
        if let Some(v) = v.into_iter().next() {
            vectors.push((q.text.clone(), v));
        }
    }
    vectors
}

/// The ten nearest vectors to `v` by comparing every one (no index orders by the full
/// vectors).
async fn exact_top10<'e>(conn: impl sqlx::PgExecutor<'e>, v: &[f32]) -> Vec<i64> {
    sqlx::query_scalar(
        "SELECT chunk_id FROM chunk_embeddings WHERE model = $2 AND dims = 384 \
         ORDER BY embedding::vector(384) <=> $1::vector(384) LIMIT 10",
    )
    .bind(pgvector::Vector::from(v.to_vec()))
    .bind(MODEL)
    .fetch_all(conn)
    .await
    .expect("exact")
}

/// The index's part of a vector search alone (the 60 neighbours the search asks for, ordered
/// by the full vectors, top 10 kept): recall@10 against exact search and p50 / p99, on a
/// transaction whose settings choose the index's width.
async fn vector_part(
    tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    vectors: &[Vec<f32>],
    truth: &[Vec<i64>],
) -> (f64, f64, f64) {
    let (mut found, mut wanted, mut times) = (0usize, 0usize, Vec::new());
    for (v, exact) in vectors.iter().zip(truth) {
        let t = Instant::now();
        let got: Vec<i64> = sqlx::query_scalar(
            "WITH nn AS MATERIALIZED (SELECT chunk_id, embedding::vector(384) <=> $1::vector(384) AS d \
             FROM chunk_embeddings WHERE model = $2 AND dims = 384 \
             ORDER BY embedding::halfvec(384) <=> $1::vector(384)::halfvec(384) LIMIT 60) \
             SELECT chunk_id FROM nn ORDER BY d LIMIT 10",
        )
        .bind(pgvector::Vector::from(v.clone()))
        .bind(MODEL)
        .fetch_all(&mut **tx)
        .await
        .expect("index search");
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        wanted += exact.len();
        found += got.iter().filter(|id| exact.contains(id)).count();
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    (found as f64 / wanted.max(1) as f64, at(0.5), at(0.99))
}

/// `SPARKY_BENCH_IVF=5,10,20`: the same vector search through an IVFFlat index (lists: one per
/// 1,000 vectors, pgvector's advice up to a million) at each number of probes, against the
/// HNSW index at the chosen width. The IVFFlat index is built in a transaction that drops the
/// HNSW index and is rolled back, so the kept database is left as it was.
async fn ivf_comparison(
    pool: &sqlx::PgPool,
    embedder: &dyn Embedder,
    ef_search: usize,
    probes: &[usize],
) {
    let vectors: Vec<Vec<f32>> = chat_vectors(embedder)
        .await
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    let mut truth = Vec::new();
    for v in &vectors {
        truth.push(exact_top10(pool, v).await);
    }
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM chunk_embeddings WHERE dims = 384")
        .fetch_one(pool)
        .await
        .expect("count");
    let mut tx = pool.begin().await.expect("begin");
    for setting in [
        format!("SET LOCAL hnsw.ef_search = {ef_search}"),
        "SET LOCAL hnsw.iterative_scan = relaxed_order".to_string(),
    ] {
        sqlx::query(&setting).execute(&mut *tx).await.expect("set");
    }
    let (recall, p50, p99) = vector_part(&mut tx, &vectors, &truth).await;
    println!(
        "  vector part, HNSW ef_search {ef_search}: recall@10 {recall:.3}  p50={p50:.2} ms  p99={p99:.2} ms"
    );
    let lists = (rows / 1000).max(1);
    sqlx::query("DROP INDEX chunk_embeddings_hnsw_384")
        .execute(&mut *tx)
        .await
        .expect("drop");
    let t = Instant::now();
    sqlx::query(&format!(
        "CREATE INDEX bench_ivfflat ON chunk_embeddings USING ivfflat \
         ((embedding::halfvec(384)) halfvec_cosine_ops) WITH (lists = {lists}) WHERE dims = 384"
    ))
    .execute(&mut *tx)
    .await
    .expect("ivfflat");
    println!(
        "  IVFFlat index, {lists} lists, built in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    for &p in probes {
        sqlx::query(&format!("SET LOCAL ivfflat.probes = {p}"))
            .execute(&mut *tx)
            .await
            .expect("set");
        let (recall, p50, p99) = vector_part(&mut tx, &vectors, &truth).await;
        println!(
            "  vector part, IVFFlat {p} probes: recall@10 {recall:.3}  p50={p50:.2} ms  p99={p99:.2} ms"
        );
    }
    tx.rollback().await.expect("rollback");
}

async fn measure(
    label: &str,
    store: Arc<dyn Store>,
    embedder: Arc<dyn Embedder>,
    with_text_only: bool,
    pool: Option<&sqlx::PgPool>,
) {
    let set = load(EvalSet::Chat).expect("chat set");
    let questions: Vec<String> = set.questions.iter().map(|q| q.text.clone()).collect();

    let hybrid = Retriever::new(store.clone(), Some(embedder.clone()), "");
    // First pass embeds every question (and warms the buffers); its search times include the
    // model, so the model's own cost is measured apart below.
    let warm = evaluate_set(&hybrid, &set).await.expect("hybrid recall");
    let (p50, p99) = timed(&hybrid, &questions, 3).await;
    println!(
        "{label:<34} hybrid, cached vector   p50={p50:>7.2} ms  p99={p99:>7.2} ms  recall@5={:.3}  out of scope refused {}/{}",
        warm.recall_at_5, warm.refused, warm.out_of_scope
    );
    let vectors = chat_vectors(embedder.as_ref()).await;
    let (p50, p99) = timed_database(store.as_ref(), &vectors, 3).await;
    let recall = match pool {
        Some(pool) => format!(
            "  vector recall@10 against exact search={:.3}",
            recall_at_10(store.as_ref(), pool, &vectors).await
        ),
        None => String::new(),
    };
    println!("{label:<34} hybrid, database part  p50={p50:>7.2} ms  p99={p99:>7.2} ms{recall}");
    if !with_text_only {
        return;
    }

    let text_only = Retriever::new(store.clone(), None, "benchmark");
    let report = evaluate_set(&text_only, &set).await.expect("text recall");
    let (p50, p99) = timed(&text_only, &questions, 2).await;
    println!(
        "{label:<34} full text only          p50={p50:>7.2} ms  p99={p99:>7.2} ms  recall@5={:.3}",
        report.recall_at_5
    );
}

async fn embed_cost(embedder: &Arc<dyn Embedder>) {
    let set = load(EvalSet::Chat).expect("chat set");
    let mut times = Vec::new();
    for q in set.questions.iter().take(60) {
        let t = Instant::now();
        embedder
            .embed(
                &[sparky::rag::expand::expand(&q.text)],
                sparky::rag::embed::EmbedKind::Query,
            )
            .await
            .expect("embed");
        times.push(t.elapsed());
    }
    println!(
        "embedding a new question (all-MiniLM-L6-v2)  p50={:>7.2} ms  p99={:>7.2} ms",
        percentile(&mut times, 0.5),
        percentile(&mut times, 0.99)
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        sparky::llm::tls::install_default_crypto_provider();
        let config = sparky::config::Config::load(None, &Default::default()).expect("config");
        let (embedder, why) = sparky::rag::build_embedder(&config, false).await;
        let Some(embedder) = embedder else {
            println!("skipped: the local embedding model is needed ({why}); run `sparky models fetch`");
            return;
        };
        embed_cost(&embedder).await;
        let admin = std::env::var("SPARKY_TEST_DATABASE_URL")
            .or_else(|_| std::env::var("DATABASE_URL"))
            .ok();
        let sizes: Vec<usize> = std::env::var("SPARKY_BENCH_SIZES")
            .unwrap_or_else(|_| "10000,100000".into())
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect();
        let backends = std::env::var("SPARKY_BENCH_BACKENDS")
            .unwrap_or_else(|_| "postgres,sqlite".into());
        let distributions: Vec<Vectors> = std::env::var("SPARKY_BENCH_VECTORS")
            .unwrap_or_else(|_| "near,uniform".into())
            .split(',')
            .filter_map(|s| match s.trim() {
                "near" => Some(Vectors::Near),
                "uniform" => Some(Vectors::Uniform),
                _ => None,
            })
            .collect();
        for size in sizes {
          for &vectors in &distributions {
            let dist = vectors.name();
            if backends.contains("postgres") {
                let Some(admin) = &admin else {
                    println!("(postgres skipped: set SPARKY_TEST_DATABASE_URL or run bash .ci/bench retrieval)");
                    continue;
                };
                let pool = sqlx::PgPool::connect(admin).await.expect("postgres");
                // A named database is kept and reused: loading and indexing 1M passages takes
                // far longer than measuring them.
                let reuse = std::env::var("SPARKY_BENCH_DATABASE")
                    .ok()
                    .filter(|n| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
                    .map(|n| format!("{n}_{dist}_{size}"));
                let name = reuse
                    .clone()
                    .unwrap_or_else(|| format!("sparky_rbench_{}", uuid::Uuid::new_v4().simple()));
                let exists: bool = sqlx::query_scalar(
                    "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)",
                )
                .bind(&name)
                .fetch_one(&pool)
                .await
                .expect("pg_database");
                if !exists {
                    sqlx::query(&format!("CREATE DATABASE {name}"))
                        .execute(&pool)
                        .await
                        .expect("create");
                }
                let url = format!(
                    "{}/{name}",
                    admin.rsplit_once('/').map(|x| x.0).unwrap_or(admin)
                );
                let pg = sparky::store::PostgresStore::connect(&url, 8)
                    .await
                    .expect("pg store");
                let store: Arc<dyn Store> = Arc::new(pg.clone());
                sparky::rag::ingest::sync_builtin(store.as_ref(), Some(&embedder))
                    .await
                    .expect("corpus");
                let loaded: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id \
                     WHERE d.source = 'bench' AND to_regclass('chunk_embeddings_hnsw_384') IS NOT NULL",
                )
                .fetch_one(pg.pool())
                .await
                .expect("count");
                if loaded == size as i64 {
                    eprintln!("postgres: reusing {name} ({loaded} synthetic passages, index built)");
                    if hnsw_built_with(pg.pool()).await != Some(hnsw_parameters()) {
                        build_hnsw(pg.pool(), size).await;
                    }
                } else {
                    sqlx::query("DELETE FROM documents WHERE source = 'bench'")
                        .execute(pg.pool())
                        .await
                        .expect("clear");
                    let bases = base_vectors(store.as_ref()).await;
                    fill_postgres(pg.pool(), size, &bases, vectors).await;
                }
                let size_of = |rel: &'static str| {
                    let pool = pg.pool().clone();
                    async move {
                        sqlx::query_scalar::<_, i64>(
                            "SELECT coalesce(pg_total_relation_size(to_regclass($1)), 0)",
                        )
                        .bind(rel)
                        .fetch_one(&pool)
                        .await
                        .expect("size")
                            / (1 << 20)
                    }
                };
                eprintln!(
                    "postgres: sizes (MB) hnsw={} chunks_tsv={} chunks(total)={} chunk_embeddings(total)={} chunk_terms(total)={}",
                    size_of("chunk_embeddings_hnsw_384").await,
                    size_of("chunks_tsv").await,
                    size_of("chunks").await,
                    size_of("chunk_embeddings").await,
                    size_of("chunk_terms").await,
                );
                let warmed = pg.warm().await.expect("warm");
                eprintln!("postgres: warmed {warmed}");
                // The width a fresh ingest would choose for the configured target, measured
                // again on every run (a kept database may hold one from an older build).
                sqlx::query("DELETE FROM hnsw_tuning")
                    .execute(pg.pool())
                    .await
                    .expect("clear tuning");
                let t = Instant::now();
                let tuning = sparky::rag::index_tuning::tune_if_changed(
                    store.as_ref(),
                    embedder.as_ref(),
                    &config.rag,
                )
                .await
                .expect("tuning")
                .expect("a tuning on Postgres");
                println!(
                    "postgres {size} {dist}: ef_search {} chosen for recall@10 {} (measured {:.3} on {} tuning questions) in {:.1} s",
                    tuning.ef_search,
                    tuning.recall_target,
                    tuning.recall,
                    tuning.queries,
                    t.elapsed().as_secs_f64()
                );
                measure(
                    &format!("postgres {size} {dist} ef {} (chosen)", tuning.ef_search),
                    store.clone(),
                    embedder.clone(),
                    true,
                    Some(pg.pool()),
                )
                .await;
                // `SPARKY_BENCH_EF_SEARCH=40,400` also measures the hybrid search with each
                // of these widths.
                let others: Vec<usize> = std::env::var("SPARKY_BENCH_EF_SEARCH")
                    .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
                    .unwrap_or_default();
                for ef in others {
                    measure(
                        &format!("postgres {size} {dist} ef {ef}"),
                        Arc::new(pg.clone().with_ef_search(ef)),
                        embedder.clone(),
                        false,
                        Some(pg.pool()),
                    )
                    .await;
                }
                if let Ok(probes) = std::env::var("SPARKY_BENCH_IVF") {
                    let probes: Vec<usize> =
                        probes.split(',').filter_map(|s| s.trim().parse().ok()).collect();
                    ivf_comparison(pg.pool(), embedder.as_ref(), tuning.ef_search, &probes)
                        .await;
                }
                pg.close().await;
                if reuse.is_none() && std::env::var_os("SPARKY_BENCH_KEEP").is_none() {
                    let _ = sqlx::query(&format!("DROP DATABASE {name} WITH (FORCE)"))
                        .execute(&pool)
                        .await;
                } else {
                    eprintln!("kept database {name}");
                }
            }
            if backends.contains("sqlite") && size <= 100_000 {
                let dir = tempfile::tempdir().expect("temp dir");
                let store: Arc<dyn Store> = Arc::new(
                    sparky::store::SqliteStore::open(&dir.path().join("b.db"))
                        .await
                        .expect("sqlite"),
                );
                sparky::rag::ingest::sync_builtin(store.as_ref(), Some(&embedder))
                    .await
                    .expect("corpus");
                let bases = base_vectors(store.as_ref()).await;
                let t = Instant::now();
                fill_sqlite(store.as_ref(), size, &bases, vectors).await;
                eprintln!(
                    "sqlite: {size} {dist} passages loaded in {:.0} s",
                    t.elapsed().as_secs_f64()
                );
                measure(&format!("sqlite {size} {dist}"), store, embedder.clone(), true, None).await;
            }
          }
        }
    });
}
