//! Retrieval end to end: the shipped corpus in a real database, the offline default embedder,
//! hybrid search, ingestion, and the evaluation set.

use crate::support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use sparky::config::Config;
use sparky::rag::embed::{EmbedError, EmbedKind, Embedder};
use sparky::rag::search::{Retriever, SearchOptions};
use sparky::store::{ChunkFilter, Store};
use support::bot::{fresh_postgres_url, Bot, Db};

async fn store_for(db: Db, dir: &std::path::Path) -> (Config, Arc<dyn Store>) {
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    match db {
        Db::Sqlite => {
            env.insert(
                "SPARKY_DATABASE__SQLITE_PATH".into(),
                dir.join("r.db").display().to_string(),
            );
        }
        Db::Postgres => {
            env.insert("DATABASE_URL".into(), fresh_postgres_url().await);
        }
    }
    let config = Config::load(None, &env).unwrap();
    let store = sparky::app::connect_store(&config).await.unwrap();
    (config, store)
}

async fn local_embedder(config: &Config) -> Arc<dyn Embedder> {
    sparky::llm::tls::install_default_crypto_provider();
    let (e, why) = sparky::rag::build_embedder(config, false).await;
    e.unwrap_or_else(|| panic!("the offline default embedder must be available: {why}"))
}

async fn hybrid_search_and_recall(db: Db) {
    let dir = tempfile::tempdir().unwrap();
    let (config, store) = store_for(db, dir.path()).await;
    let embedder = local_embedder(&config).await;
    let report = sparky::rag::ingest::sync_builtin(store.as_ref(), Some(&embedder))
        .await
        .unwrap();
    assert!(report.chunks > 300, "{report:?}");
    assert_eq!(report.embedded, report.chunks);
    // The shipped passages took the vectors compiled into the binary: the same ones the
    // model computes now.
    let bundled = sparky::rag::bundled::bundled();
    let texts: Vec<String> = sparky::rag::corpus::summary_chunks()
        .unwrap()
        .into_iter()
        .step_by(97)
        .map(|c| c.text)
        .collect();
    let live = embedder
        .embed(&texts, sparky::rag::embed::EmbedKind::Document)
        .await
        .unwrap();
    for (text, v) in texts.iter().zip(&live) {
        let shipped = bundled
            .vector(
                embedder.model_name(),
                embedder.dimensions(),
                embedder.fingerprint(),
                text,
            )
            .expect("a bundled vector");
        let cos: f32 = shipped.iter().zip(v).map(|(a, b)| a * b).sum();
        assert!(cos > 0.9999, "cosine {cos} for {text:.60}");
    }
    let retriever = Retriever::new(store.clone(), Some(embedder), "");

    // An exact reference is looked up directly and comes first.
    let out = retriever
        .search("what does table 250.122 say", &SearchOptions::default())
        .await
        .unwrap();
    assert!(out.method.starts_with("hybrid"), "{}", out.method);
    assert_eq!(
        out.passages[0].section.as_deref(),
        Some("Table 250.122"),
        "{:?}",
        out.passages[0]
    );
    assert!(
        out.passages
            .iter()
            .any(|p| p.section.as_deref() == Some("Table 250.122")
                && p.text.contains("| 60 | 10 | 8 |")),
        "the rendered table rows are searchable: {:#?}",
        out.passages
    );

    // A question naming no section still finds it.
    let out = retriever
        .search(
            "how deep does pvc conduit need to be buried under a driveway",
            &SearchOptions::default(),
        )
        .await
        .unwrap();
    assert!(
        out.passages
            .iter()
            .any(|p| p.section.as_deref() == Some("300.5")),
        "{:#?}",
        out.passages
    );

    // Nothing relevant: nothing padded.
    let out = retriever
        .search(
            "who won the football game last night",
            &SearchOptions::default(),
        )
        .await
        .unwrap();
    assert!(out.passages.is_empty(), "{:#?}", out.passages);

    // The edition filter keeps edition-specific passages of the other edition out.
    let out = retriever
        .search(
            "GFCI protection in dwelling units 210.8(A)",
            &SearchOptions {
                k: 10,
                edition: Some(2020),
                workspace: None,
            },
        )
        .await
        .unwrap();
    assert!(
        out.passages.iter().all(|p| p.edition != Some(2023)),
        "{:#?}",
        out.passages
    );

    // The repository's evaluation set: recall@5 of at least 0.9 with the default embedder.
    let questions = sparky::rag::eval::questions().unwrap();
    assert!(questions.len() >= 60);
    let eval = sparky::rag::eval::evaluate(&retriever, &questions)
        .await
        .unwrap();
    assert!(
        eval.recall_at_5 >= 0.9,
        "recall@5 {} misses {:?}",
        eval.recall_at_5,
        eval.misses
    );
}

#[tokio::test]
async fn hybrid_search_finds_the_right_sections_on_sqlite() {
    hybrid_search_and_recall(Db::Sqlite).await;
}

#[tokio::test]
async fn hybrid_search_finds_the_right_sections_on_postgres() {
    hybrid_search_and_recall(Db::Postgres).await;
}

/// Every chat-style set, with the model and without: recall@5 of at least 0.95 and at least
/// 4 of 5 out-of-scope questions refused (the questions of other trades and small talk get
/// nothing; docs/retrieval.md).
async fn scope_goals_on_every_chat_set(db: Db) {
    use sparky::rag::eval::{evaluate_set, load, EvalSet};
    let dir = tempfile::tempdir().unwrap();
    let (config, store) = store_for(db, dir.path()).await;
    let embedder = local_embedder(&config).await;
    sparky::rag::ingest::sync_builtin(store.as_ref(), Some(&embedder))
        .await
        .unwrap();
    let retrievers = [
        Retriever::new(store.clone(), Some(embedder), ""),
        Retriever::new(store.clone(), None, "test"),
    ];
    for set in [
        EvalSet::Chat,
        EvalSet::Heldout,
        EvalSet::Heldout2,
        EvalSet::Gaps,
    ] {
        let questions = load(set).unwrap();
        for retriever in &retrievers {
            let r = evaluate_set(retriever, &questions).await.unwrap();
            assert!(
                r.recall_at_5 >= 0.95,
                "{set:?} {}: recall@5 {} misses {:?}",
                r.method,
                r.recall_at_5,
                r.misses
            );
            assert!(
                r.refused * 5 >= r.out_of_scope * 4,
                "{set:?} {}: {}/{} refused, noise {:?}",
                r.method,
                r.refused,
                r.out_of_scope,
                r.noise
            );
        }
    }
}

#[tokio::test]
async fn out_of_scope_questions_get_nothing_on_sqlite() {
    scope_goals_on_every_chat_set(Db::Sqlite).await;
}

#[tokio::test]
async fn out_of_scope_questions_get_nothing_on_postgres() {
    scope_goals_on_every_chat_set(Db::Postgres).await;
}

/// Counts the texts it is asked to embed; vectors are deterministic fakes.
struct Counting(AtomicUsize);

#[async_trait]
impl Embedder for Counting {
    fn model_name(&self) -> &str {
        "counting-test"
    }
    fn dimensions(&self) -> usize {
        4
    }
    async fn embed(&self, texts: &[String], _: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.0.fetch_add(texts.len(), Ordering::SeqCst);
        Ok(texts
            .iter()
            .map(|t| {
                let n = t.len() as f32;
                let v = [1.0, n % 7.0 + 1.0, n % 3.0 + 1.0, 1.0];
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / norm).collect()
            })
            .collect())
    }
}

/// Before any passage has a vector of the embedder's model (a first start before the pass, a
/// library stored without the embedder), a code question is answered by full text instead of
/// being taken for out of scope because no vector is near it.
#[tokio::test]
async fn a_library_without_vectors_still_answers_by_full_text() {
    let dir = tempfile::tempdir().unwrap();
    let (_, store) = store_for(Db::Sqlite, dir.path()).await;
    sparky::rag::ingest::sync_builtin(store.as_ref(), None)
        .await
        .unwrap();
    let embedder: Arc<dyn Embedder> = Arc::new(Counting(AtomicUsize::new(0)));
    let retriever = Retriever::new(store.clone(), Some(embedder), "");
    let opts = SearchOptions {
        k: 3,
        edition: Some(2023),
        workspace: None,
    };
    let out = retriever
        .search("do garage receptacles need gfci", &opts)
        .await
        .unwrap();
    assert!(out.method.starts_with("full text only"), "{}", out.method);
    let sections: Vec<_> = out
        .passages
        .iter()
        .filter_map(|p| p.section.clone())
        .collect();
    assert!(
        sections.iter().any(|s| s.starts_with("210.8")),
        "{sections:?}"
    );
    // Out of scope is still refused by its words.
    let out = retriever
        .search("write me a poem about my dog", &opts)
        .await
        .unwrap();
    assert!(out.passages.is_empty(), "{:?}", out.passages);
}

#[tokio::test]
async fn ingesting_the_same_file_twice_embeds_once_and_bad_files_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (_, store) = store_for(Db::Sqlite, dir.path()).await;
    let counting = Arc::new(Counting(AtomicUsize::new(0)));
    let embedder: Arc<dyn Embedder> = counting.clone();
    let doc = dir.path().join("spec.md");
    std::fs::write(
        &doc,
        "# Site spec\n\n210.8 GFCI at the wash bay\nAll wash bay receptacles get GFCI breakers.\n\n\
         250.66 Electrode conductor\nUse 4 AWG copper to the ground ring.\n",
    )
    .unwrap();
    let paths = vec![doc.clone()];
    let first = sparky::rag::ingest::ingest_files(
        store.as_ref(),
        Some(&embedder),
        &paths,
        Some(&sparky::project::Workspace::new("slack", "T1")),
        Some(2023),
        false,
    )
    .await
    .unwrap();
    assert_eq!(first.documents_changed, 1);
    assert!(first.embedded >= 2, "{first:?}");
    let embedded = counting.0.load(Ordering::SeqCst);
    let second = sparky::rag::ingest::ingest_files(
        store.as_ref(),
        Some(&embedder),
        &paths,
        Some(&sparky::project::Workspace::new("slack", "T1")),
        Some(2023),
        false,
    )
    .await
    .unwrap();
    assert_eq!(second.documents_unchanged, 1, "{second:?}");
    assert_eq!(
        counting.0.load(Ordering::SeqCst),
        embedded,
        "no second embedding"
    );

    // Visible to its workspace only, with its section reference detected.
    let own = ChunkFilter {
        edition: None,
        workspace: Some(sparky::project::Workspace::new("slack", "T1")),
    };
    let other = ChunkFilter {
        edition: None,
        workspace: Some(sparky::project::Workspace::new("slack", "T2")),
    };
    assert_eq!(
        store.chunks_by_section("250.66", &own).await.unwrap().len(),
        1
    );
    assert!(store
        .chunks_by_section("250.66", &other)
        .await
        .unwrap()
        .is_empty());

    // A malformed PDF and an empty file: clear errors, nothing stored.
    let bad = dir.path().join("broken.pdf");
    std::fs::write(
        &bad,
        b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer <<>>\n%%EOF",
    )
    .unwrap();
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "").unwrap();
    for (path, needle) in [
        (&bad, "not a readable PDF"),
        (&empty, "no extractable text"),
    ] {
        let err = sparky::rag::ingest::ingest_files(
            store.as_ref(),
            Some(&embedder),
            &[doc.clone(), path.clone()],
            None,
            None,
            false,
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(err.contains(needle), "{err}");
    }
    assert_eq!(
        store.chunks_by_section("250.66", &own).await.unwrap().len(),
        1
    );
    assert_eq!(counting.0.load(Ordering::SeqCst), embedded);
}

#[tokio::test]
async fn sparky_search_json_and_offline_answers_cite_sections() {
    let bot = Bot::new(Db::Sqlite, None).await;
    let (out, ok) = bot
        .run(&["search", "Table 310.16", "--json", "--k", "3"], "")
        .await;
    assert!(ok, "{out:?}");
    let rows: serde_json::Value = serde_json::from_str(&out.join("\n")).unwrap();
    let first = &rows[0];
    assert_eq!(first["section"], "Table 310.16");
    for key in ["edition", "source", "score", "text"] {
        assert!(first.get(key).is_some(), "missing {key}: {first}");
    }
    // The platform-neutral search command (what `/sparky search` runs on Discord and Slack).
    let (out, ok) = bot
        .run(
            &["chat", "--user", "carol"],
            "/search grounding electrode conductor size 250.66\n",
        )
        .await;
    assert!(ok);
    assert!(out.join("\n").contains("**250.66**"), "{out:?}");

    // A plain question without a model answers with passages and their citations.
    let effects = bot
        .chat(
            "carol",
            &[],
            "what size conductor does 240.4(D) allow on a 20 amp breaker\n",
        )
        .await;
    let text = effects
        .iter()
        .find(|e| e["type"] == "text")
        .expect("an answer");
    assert!(
        text["text"].as_str().unwrap().contains("240.4(D)"),
        "{text}"
    );
    assert!(
        text["citations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["section"] == "240.4(D)"),
        "{text}"
    );
}

/// Without a model, a question naming a table key leads with that table's row, computed by
/// the engine, and cites it.
#[tokio::test]
async fn offline_answers_lead_with_the_computed_table_row() {
    let bot = Bot::new(Db::Sqlite, None).await;
    let cases = [
        // Table 250.122, 60 A: 10 AWG copper.
        (
            "What size EGC for a 60 A circuit?",
            "Table 250.122",
            "10 AWG copper",
        ),
        // Table 310.16, 8 AWG copper, 75 °C: 50 A.
        ("ampacity of #8 copper thhn", "Table 310.16", "50 A at 75"),
        // Table 310.15(C)(1), 4-6 conductors: 80 percent.
        (
            "derating for 6 current-carrying conductors in one conduit",
            "Table 310.15(C)(1)",
            "80 percent",
        ),
        // Table 250.66, 4/0 copper service: 2 AWG copper GEC.
        (
            "gec for a 4/0 copper service",
            "Table 250.66",
            "2 AWG copper",
        ),
    ];
    for (question, section, value) in cases {
        let effects = bot.chat("carol", &[], &format!("{question}\n")).await;
        let text = effects
            .iter()
            .find(|e| e["type"] == "text")
            .expect("an answer");
        let body = text["text"].as_str().unwrap();
        let first = body
            .find("**")
            .map(|i| &body[i..])
            .unwrap_or_else(|| panic!("no passage in {body}"));
        assert!(
            first.starts_with(&format!("**{section}**")),
            "{question}: the answer does not lead with {section}: {body}"
        );
        assert!(body.contains(value), "{question}: {body}");
        assert!(
            text["citations"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["section"] == section),
            "{text}"
        );
    }
}

/// Runs one statement on the test's database (both backends speak this SQL).
async fn execute(config: &Config, sql: &str) {
    if config.database.url.starts_with("postgres") {
        let pool = sqlx::PgPool::connect(&config.database.url).await.unwrap();
        sqlx::query(sql).execute(&pool).await.unwrap();
        pool.close().await;
    } else {
        let url = format!("sqlite://{}", config.sqlite_file().display());
        let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
        sqlx::query(sql).execute(&pool).await.unwrap();
        pool.close().await;
    }
}

/// The "embed what is missing" scan runs after a change to the passages and not otherwise: a
/// vector removed behind the store's back is not looked for until the next ingest changes
/// something, which then embeds what changed and what was missing.
async fn the_missing_vector_scan_runs_only_after_a_change(db: Db) {
    use sparky::rag::ingest::{embed_if_changed, ingest_files};
    let dir = tempfile::tempdir().unwrap();
    let (config, store) = store_for(db, dir.path()).await;
    sparky::rag::ingest::sync_builtin(store.as_ref(), None)
        .await
        .unwrap();
    let counting = Arc::new(Counting(AtomicUsize::new(0)));
    let embedder: Arc<dyn Embedder> = counting.clone();
    let doc = dir.path().join("notes.md");
    std::fs::write(&doc, "210.8 Wash bay\nGFCI on every wash bay receptacle.\n").unwrap();
    let first = ingest_files(
        store.as_ref(),
        Some(&embedder),
        std::slice::from_ref(&doc),
        None,
        None,
        false,
    )
    .await
    .unwrap();
    assert!(first.embedded > 300, "the corpus and the file: {first:?}");
    let embedded = counting.0.load(Ordering::SeqCst);
    assert_eq!(
        embed_if_changed(store.as_ref(), embedder.as_ref(), false)
            .await
            .unwrap(),
        0
    );

    execute(
        &config,
        "DELETE FROM chunk_embeddings WHERE chunk_id = \
         (SELECT min(chunk_id) FROM chunk_embeddings WHERE model = 'counting-test')",
    )
    .await;
    assert_eq!(
        embed_if_changed(store.as_ref(), embedder.as_ref(), false)
            .await
            .unwrap(),
        0,
        "nothing changed through the store, so nothing is scanned"
    );
    assert_eq!(counting.0.load(Ordering::SeqCst), embedded);

    std::fs::write(
        &doc,
        "210.8 Wash bay\nGFCI and weatherproof covers in the wash bay.\n",
    )
    .unwrap();
    let second = ingest_files(
        store.as_ref(),
        Some(&embedder),
        std::slice::from_ref(&doc),
        None,
        None,
        false,
    )
    .await
    .unwrap();
    assert_eq!(second.documents_changed, 1, "{second:?}");
    assert_eq!(
        second.embedded, 2,
        "the changed passage and the one whose vector went: {second:?}"
    );
    assert_eq!(
        embed_if_changed(store.as_ref(), embedder.as_ref(), false)
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn the_missing_vector_scan_runs_only_after_a_change_sqlite() {
    the_missing_vector_scan_runs_only_after_a_change(Db::Sqlite).await;
}

#[tokio::test]
async fn the_missing_vector_scan_runs_only_after_a_change_postgres() {
    the_missing_vector_scan_runs_only_after_a_change(Db::Postgres).await;
}

/// A 384-dimension model (the indexed size) that fails every request.
struct Unreachable;

#[async_trait]
impl Embedder for Unreachable {
    fn model_name(&self) -> &str {
        "unreachable-384"
    }
    fn dimensions(&self) -> usize {
        384
    }
    async fn embed(&self, _: &[String], _: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        Err(EmbedError::Inference("the model server is down".into()))
    }
}

/// A pass that stops half-way still leaves the vector index in place: a bulk pass that dropped
/// it and then failed (or a process killed during one, whose next pass fails) builds it again.
#[tokio::test]
async fn a_failed_vector_pass_leaves_the_index_built() {
    let dir = tempfile::tempdir().unwrap();
    let (_, store) = store_for(Db::Postgres, dir.path()).await;
    sparky::rag::ingest::sync_builtin(store.as_ref(), None)
        .await
        .unwrap();
    assert!(store.pause_vector_index(384).await.unwrap(), "dropped");
    let failed = sparky::rag::ingest::embed_missing(store.as_ref(), &Unreachable, false).await;
    assert!(failed.is_err(), "{failed:?}");
    assert!(
        !store.ensure_vector_index().await.unwrap(),
        "the failed pass built the index again"
    );
}

/// Counts the texts it is asked to embed and passes them to the real model.
struct CountingModel {
    inner: Arc<dyn Embedder>,
    texts: AtomicUsize,
}

#[async_trait]
impl Embedder for CountingModel {
    fn model_name(&self) -> &str {
        self.inner.model_name()
    }
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }
    fn fingerprint(&self) -> Option<&str> {
        self.inner.fingerprint()
    }
    async fn embed(&self, texts: &[String], kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.texts.fetch_add(texts.len(), Ordering::SeqCst);
        self.inner.embed(texts, kind).await
    }
}

/// The vector index's search width is measured for the recall target once, then read back
/// without measuring (no question embedded) until the library grows by a tenth or the target
/// changes; an explicit width is used as given. SQLite searches exactly: nothing to measure.
async fn the_index_width_is_measured_only_after_a_change(db: Db) {
    use sparky::rag::index_tuning::{tune_if_changed, tuning_questions};
    let dir = tempfile::tempdir().unwrap();
    let (mut config, store) = store_for(db, dir.path()).await;
    let model = Arc::new(CountingModel {
        inner: local_embedder(&config).await,
        texts: AtomicUsize::new(0),
    });
    let embedder: Arc<dyn Embedder> = model.clone();
    sparky::rag::ingest::sync_builtin(store.as_ref(), Some(&embedder))
        .await
        .unwrap();
    let embedded = || model.texts.load(Ordering::SeqCst);
    let before = embedded();
    let first = tune_if_changed(store.as_ref(), embedder.as_ref(), &config.rag)
        .await
        .unwrap();
    if matches!(db, Db::Sqlite) {
        assert_eq!(first, None);
        assert_eq!(embedded(), before, "nothing to measure, nothing embedded");
        return;
    }
    let first = first.expect("a tuning on Postgres");
    assert_eq!(embedded() - before, tuning_questions().len());
    assert_eq!(first.recall_target, 0.95);
    assert!(first.reached(), "{first:?}");
    assert_eq!(store.ef_search(), Some(first.ef_search));

    let before = embedded();
    let again = tune_if_changed(store.as_ref(), embedder.as_ref(), &config.rag)
        .await
        .unwrap();
    assert_eq!(again, Some(first.clone()));
    assert_eq!(embedded(), before, "unchanged library: read, not measured");

    // A tenth more passages: measured again.
    let doc = dir.path().join("library.md");
    let body: String = (0..first.vectors / 8)
        .map(|i| {
            format!(
                "{}.5 Shop rule {i}\nWash bay circuit {i} gets its own disconnect.\n\n",
                100 + i
            )
        })
        .collect();
    std::fs::write(&doc, body).unwrap();
    sparky::rag::ingest::ingest_files(
        store.as_ref(),
        Some(&embedder),
        std::slice::from_ref(&doc),
        None,
        None,
        false,
    )
    .await
    .unwrap();
    let before = embedded();
    let grown = tune_if_changed(store.as_ref(), embedder.as_ref(), &config.rag)
        .await
        .unwrap()
        .expect("a tuning");
    assert!(grown.vectors > first.vectors, "{grown:?}");
    assert_eq!(embedded() - before, tuning_questions().len());

    // Another target: measured again, for that target.
    config.rag.recall_target = 0.99;
    let stricter = tune_if_changed(store.as_ref(), embedder.as_ref(), &config.rag)
        .await
        .unwrap()
        .expect("a tuning");
    assert_eq!(stricter.recall_target, 0.99);
    assert!(
        stricter.ef_search >= grown.ef_search,
        "{stricter:?} {grown:?}"
    );

    // An explicit width: used as given, nothing measured.
    config.rag.ef_search = 25;
    let before = embedded();
    assert_eq!(
        tune_if_changed(store.as_ref(), embedder.as_ref(), &config.rag)
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.ef_search(), Some(25));
    assert_eq!(embedded(), before);
}

#[tokio::test]
async fn the_index_width_is_measured_only_after_a_change_sqlite() {
    the_index_width_is_measured_only_after_a_change(Db::Sqlite).await;
}

#[tokio::test]
async fn the_index_width_is_measured_only_after_a_change_postgres() {
    the_index_width_is_measured_only_after_a_change(Db::Postgres).await;
}
