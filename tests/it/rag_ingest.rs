//! `sparky ingest` of a large file: chunks are stored in committed batches with progress, and
//! a run killed half-way is taken up by the next one, which keeps the batches already stored
//! and adds the rest (the real binary, aborted by a failpoint after its first batch).

use crate::support;

use support::bot::{Bot, Db};

/// One number from the bot's database (both backends speak this SQL).
async fn scalar(bot: &Bot, db: Db, sql: &str) -> i64 {
    match db {
        Db::Sqlite => {
            let path = bot.env_value("SPARKY_DATABASE__SQLITE_PATH").unwrap();
            let pool = sqlx::SqlitePool::connect(&format!("sqlite://{path}"))
                .await
                .unwrap();
            let v: i64 = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
            pool.close().await;
            v
        }
        Db::Postgres => {
            let url = bot.env_value("DATABASE_URL").unwrap();
            let pool = sqlx::PgPool::connect(&url).await.unwrap();
            let v: i64 = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
            pool.close().await;
            v
        }
    }
}

const SECTIONS: usize = 2_500;
const CHUNKS: &str = "SELECT COUNT(*) FROM chunks c JOIN documents d ON d.id = c.document_id \
                      WHERE d.source = 'library.md'";
const COMPLETE: &str =
    "SELECT COUNT(*) FROM documents WHERE source = 'library.md' AND content_hash NOT LIKE 'incomplete:%'";

async fn an_interrupted_ingest_resumes(db: Db) {
    let mut bot = Bot::new(db, None).await;
    let (_, ok) = bot.run(&["migrate"], "").await;
    assert!(ok);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("library.md");
    let text: String = (0..SECTIONS)
        .map(|i| {
            format!(
                "{}.{} Rule {i}\nPassage {i}: the crew checks fitting {i} before energizing.\n\n",
                100 + i / 50,
                i % 50 + 1
            )
        })
        .collect();
    std::fs::write(&file, text).unwrap();
    let path = file.display().to_string();

    bot.set("SPARKY_FAILPOINT", "ingest_after_batch");
    let (out, stderr, ok) = bot.run_bytes(&["ingest", &path], b"").await;
    assert!(!ok, "the process must abort: {out:?} {stderr}");
    assert!(stderr.contains("failpoint ingest_after_batch"), "{stderr}");
    let first_batch = scalar(&bot, db, CHUNKS).await;
    assert_eq!(first_batch, 1_000, "one committed batch");
    assert_eq!(scalar(&bot, db, COMPLETE).await, 0, "marked incomplete");
    let last_of_batch = scalar(
        &bot,
        db,
        "SELECT max(c.id) FROM chunks c JOIN documents d ON d.id = c.document_id \
         WHERE d.source = 'library.md'",
    )
    .await;

    bot.set("SPARKY_FAILPOINT", "");
    let (out, stderr, ok) = bot.run_bytes(&["ingest", &path], b"").await;
    assert!(ok, "{out:?} {stderr}");
    assert!(
        stderr.contains(&format!("stored {SECTIONS}/{SECTIONS} chunks")),
        "progress: {stderr}"
    );
    assert_eq!(scalar(&bot, db, CHUNKS).await, SECTIONS as i64);
    assert_eq!(scalar(&bot, db, COMPLETE).await, 1);
    // The first run's rows were kept, in their places, not inserted again.
    let kept = format!(
        "SELECT COUNT(*) FROM chunks c JOIN documents d ON d.id = c.document_id \
         WHERE d.source = 'library.md' AND c.id <= {last_of_batch} AND c.ord < 1000"
    );
    assert_eq!(scalar(&bot, db, &kept).await, 1_000);
    assert_eq!(
        scalar(
            &bot,
            db,
            "SELECT COUNT(DISTINCT c.ord) FROM chunks c JOIN documents d ON d.id = c.document_id \
             WHERE d.source = 'library.md'"
        )
        .await,
        SECTIONS as i64
    );

    // A third run finds the document unchanged.
    let (out, ok) = bot.run(&["ingest", &path], "").await;
    assert!(ok);
    let report: serde_json::Value = serde_json::from_str(&out.join("\n")).unwrap();
    assert_eq!(report["documents_unchanged"], 1, "{report}");
}

#[tokio::test]
async fn an_interrupted_ingest_resumes_sqlite() {
    an_interrupted_ingest_resumes(Db::Sqlite).await;
}

#[tokio::test]
async fn an_interrupted_ingest_resumes_postgres() {
    an_interrupted_ingest_resumes(Db::Postgres).await;
}
