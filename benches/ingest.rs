//! `sparky ingest` of a large generated library: N sections of 60 corpus words each, written
//! to one Markdown file and ingested through `ingest_files` (reading, chunking, batched
//! inserts with the term statistics, progress), on Postgres and SQLite; then the vector pass
//! (`embed_missing`) through the OpenAI-compatible embedder over HTTP to a server in this
//! process that answers at once, so what is timed is the pass and the store (the HNSW index
//! kept up to date on Postgres), not a model.
//!
//! Run: `bash .ci/bench ingest` or, with a server at hand,
//! `SPARKY_TEST_DATABASE_URL=postgres://... cargo bench --bench ingest`.
//! Environment: `SPARKY_BENCH_SECTIONS` (default `100000`), `SPARKY_BENCH_BACKENDS` (default
//! `postgres,sqlite`), `SPARKY_BENCH_EMBED=0` to leave out the vector pass.

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use sparky::store::Store;

/// The generated library: section headings the chunker splits on, corpus words as text.
fn write_library(path: &std::path::Path, sections: usize) {
    let words: Vec<String> = sparky::rag::corpus::summary_chunks()
        .expect("corpus")
        .iter()
        .flat_map(|c| {
            c.text
                .split_whitespace()
                .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_string())
                .collect::<Vec<_>>()
        })
        .filter(|w| w.len() > 3)
        .collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("library file"));
    for i in 0..sections {
        let text: Vec<&str> = (0..60)
            .map(|_| words[rng.random_range(0..words.len())].as_str())
            .collect();
        writeln!(
            out,
            "{}.{} Generated rule {i}\n{}\n",
            100 + i % 700,
            i / 700 + 1,
            text.join(" ")
        )
        .expect("write");
    }
    out.flush().expect("flush");
}

/// Dimensions of the vectors the embedding server returns: those of the default model, so the
/// pass keeps the same HNSW index up to date as a real library's.
const DIMS: usize = 384;

/// An OpenAI-compatible `/v1/embeddings` endpoint that returns a vector derived from each
/// input's bytes; its own cost is a hash and a JSON body per request.
async fn embedding_server() -> String {
    async fn embeddings(
        axum::Json(body): axum::Json<serde_json::Value>,
    ) -> axum::Json<serde_json::Value> {
        let inputs = body["input"].as_array().cloned().unwrap_or_default();
        let data: Vec<serde_json::Value> = inputs
            .iter()
            .enumerate()
            .map(|(index, text)| {
                let seed = text
                    .as_str()
                    .unwrap_or("")
                    .bytes()
                    .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
                    });
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
                let v: Vec<f32> = (0..DIMS).map(|_| rng.random_range(-1.0..1.0)).collect();
                serde_json::json!({"object": "embedding", "index": index, "embedding": v})
            })
            .collect();
        axum::Json(serde_json::json!({"object": "list", "data": data, "model": "bench"}))
    }
    let app = axum::Router::new().route("/v1/embeddings", axum::routing::post(embeddings));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/v1")
}

/// The vector pass over every chunk the ingest stored.
async fn embed(label: &str, store: &dyn Store, base_url: &str) {
    let embedder = sparky::rag::embed::openai::OpenAiEmbedder::new("bench")
        .expect("embedder")
        .with_base_url(base_url)
        .with_model("bench-384", DIMS);
    let t = Instant::now();
    let n = sparky::rag::ingest::embed_missing(store, &embedder, false)
        .await
        .expect("embed");
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{label}: {n} vectors stored in {secs:.1} s ({:.0} vectors/s)",
        n as f64 / secs
    );
}

async fn ingest(label: &str, store: Arc<dyn Store>, file: &std::path::Path, sections: usize) {
    let t = Instant::now();
    let report = sparky::rag::ingest::ingest_files(
        store.as_ref(),
        None,
        &[file.to_path_buf()],
        None,
        Some(2023),
        true,
    )
    .await
    .expect("ingest");
    let secs = t.elapsed().as_secs_f64();
    // A long section is split in two, so there are at least as many chunks as sections.
    assert!(report.chunks >= sections, "{report:?}");
    println!(
        "{label}: {sections} sections ({} chunks) ingested in {secs:.1} s ({:.0} chunks/s)",
        report.chunks,
        report.chunks as f64 / secs
    );
    if std::env::var("SPARKY_BENCH_EMBED").as_deref() != Ok("0") {
        embed(label, store.as_ref(), &embedding_server().await).await;
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let sections: usize = std::env::var("SPARKY_BENCH_SECTIONS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(100_000);
        let backends =
            std::env::var("SPARKY_BENCH_BACKENDS").unwrap_or_else(|_| "postgres,sqlite".into());
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("library.md");
        write_library(&file, sections);
        if backends.contains("postgres") {
            match std::env::var("SPARKY_TEST_DATABASE_URL") {
                Err(_) => println!("(postgres skipped: set SPARKY_TEST_DATABASE_URL)"),
                Ok(admin) => {
                    let pool = sqlx::PgPool::connect(&admin).await.expect("postgres");
                    let name = format!("sparky_ibench_{}", uuid::Uuid::new_v4().simple());
                    sqlx::query(&format!("CREATE DATABASE {name}"))
                        .execute(&pool)
                        .await
                        .expect("create");
                    let base = admin.rsplit_once('/').map(|x| x.0).unwrap_or(&admin);
                    let pg = sparky::store::PostgresStore::connect(&format!("{base}/{name}"), 4)
                        .await
                        .expect("pg store");
                    ingest("postgres", Arc::new(pg.clone()), &file, sections).await;
                    pg.close().await;
                    let _ = sqlx::query(&format!("DROP DATABASE {name} WITH (FORCE)"))
                        .execute(&pool)
                        .await;
                }
            }
        }
        if backends.contains("sqlite") {
            let store = sparky::store::SqliteStore::open(&dir.path().join("i.db"))
                .await
                .expect("sqlite");
            ingest("sqlite", Arc::new(store), &file, sections).await;
        }
    });
}
