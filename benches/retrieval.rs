//! Query latency of hybrid search (exact reference + full text + vectors) at 10k and 100k
//! chunks, on Postgres (HNSW) and on the SQLite default. Chunks are synthetic passages built
//! from the shipped corpus's words with random unit vectors of the local model's size (384);
//! the query embedder returns a random vector too, so the figures are the store's and the
//! fusion's, not the model's (the model adds ~20 ms per query, see the README).
//!
//! Run: `bash .ci/bench retrieval` (starts Postgres) or `cargo bench --bench retrieval`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rand::{Rng, SeedableRng};
use sparky::rag::embed::{EmbedError, EmbedKind, Embedder};
use sparky::rag::search::{Retriever, SearchOptions};
use sparky::store::{NewChunk, NewDocument, Store};

const DIMS: usize = 384;
const MODEL: &str = "all-MiniLM-L6-v2";

struct RandomQuery;

#[async_trait]
impl Embedder for RandomQuery {
    fn model_name(&self) -> &str {
        MODEL
    }
    fn dimensions(&self) -> usize {
        DIMS
    }
    async fn embed(&self, texts: &[String], _: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut rng = rand::rng();
        Ok(texts.iter().map(|_| unit(&mut rng)).collect())
    }
}

fn unit(rng: &mut impl Rng) -> Vec<f32> {
    let mut v: Vec<f32> = (0..DIMS).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

async fn fill(store: &dyn Store, total: usize) {
    let words: Vec<String> = sparky::rag::corpus::summary_chunks()
        .expect("corpus")
        .iter()
        .flat_map(|c| {
            c.text
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|w| w.len() > 3)
        .collect();
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
        let chunks: Vec<NewChunk> = (0..per_doc)
            .map(|i| {
                let text: Vec<&str> = (0..60)
                    .map(|_| words[rng.random_range(0..words.len())].as_str())
                    .collect();
                let text = text.join(" ");
                NewChunk {
                    section: Some(format!("{}.{}", 100 + (d * per_doc + i) % 700, i % 90)),
                    edition: None,
                    page: None,
                    heading: String::new(),
                    content_hash: format!("{d}-{i}"),
                    text,
                }
            })
            .collect();
        let ids = store.replace_chunks(doc.id, &chunks).await.expect("chunks");
        for id in ids {
            store
                .set_embedding(id, MODEL, &unit(&mut rng))
                .await
                .expect("embedding");
        }
    }
}

async fn measure(label: &str, store: Arc<dyn Store>) {
    let retriever = Retriever::new(store, Some(Arc::new(RandomQuery)), "");
    let queries = [
        "grounding electrode conductor size for a 200 amp service",
        "gfci receptacle garage freezer",
        "table 250.122 egc for 60 amp breaker",
        "voltage drop on a long feeder to a detached garage",
        "box fill for 12 awg conductors",
    ];
    let opts = SearchOptions::default();
    for q in queries {
        retriever.search(q, &opts).await.expect("warm-up");
    }
    let mut times: Vec<Duration> = Vec::new();
    for i in 0..200 {
        let t = Instant::now();
        retriever
            .search(queries[i % queries.len()], &opts)
            .await
            .expect("search");
        times.push(t.elapsed());
    }
    times.sort();
    let p = |q: f64| times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3;
    println!(
        "{label:<28} p50={:>8.2} ms  p99={:>8.2} ms",
        p(0.5),
        p(0.99)
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let admin = std::env::var("SPARKY_TEST_DATABASE_URL").or_else(|_| std::env::var("DATABASE_URL")).ok();
        for size in [10_000usize, 100_000] {
            let dir = tempfile::tempdir().expect("temp dir");
            let sqlite: Arc<dyn Store> =
                Arc::new(sparky::store::SqliteStore::open(&dir.path().join("b.db")).await.expect("sqlite"));
            let t = Instant::now();
            fill(sqlite.as_ref(), size).await;
            eprintln!("sqlite: {size} chunks loaded in {:.0} s", t.elapsed().as_secs_f64());
            measure(&format!("sqlite {size} chunks"), sqlite).await;

            if let Some(admin) = &admin {
                let pool = sqlx::PgPool::connect(admin).await.expect("postgres");
                let name = format!("sparky_rbench_{}", uuid::Uuid::new_v4().simple());
                sqlx::query(&format!("CREATE DATABASE {name}")).execute(&pool).await.expect("create");
                let url = format!("{}/{name}", admin.rsplit_once('/').map(|x| x.0).unwrap_or(admin));
                let pg: Arc<dyn Store> =
                    Arc::new(sparky::store::PostgresStore::connect(&url, 8).await.expect("pg store"));
                let t = Instant::now();
                fill(pg.as_ref(), size).await;
                eprintln!("postgres: {size} chunks loaded in {:.0} s", t.elapsed().as_secs_f64());
                measure(&format!("postgres {size} chunks"), pg).await;
            } else {
                println!("(postgres skipped: set SPARKY_TEST_DATABASE_URL or run bash .ci/bench retrieval)");
            }
        }
    });
}
