use sparky::store::{ChunkFilter, Store};
use std::sync::Arc;
#[tokio::main]
async fn main() {
    sparky::llm::tls::install_default_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(
        sparky::store::SqliteStore::open(&dir.path().join("x.db"))
            .await
            .unwrap(),
    );
    let config = sparky::config::Config::load(None, &Default::default()).unwrap();
    let (e, _) = sparky::rag::build_embedder(&config, false).await;
    let e = e.unwrap();
    sparky::rag::ingest::sync_builtin(store.as_ref(), Some(&e))
        .await
        .unwrap();
    let set = sparky::rag::eval::load(sparky::rag::eval::EvalSet::Chat).unwrap();
    let set2 = sparky::rag::eval::load(sparky::rag::eval::EvalSet::Corpus).unwrap();
    let mut qs: Vec<(String, Vec<String>)> = set
        .questions
        .iter()
        .map(|q| (q.text.clone(), q.sections.clone()))
        .collect();
    qs.extend(
        set2.questions
            .iter()
            .map(|q| (q.text.clone(), q.sections.clone())),
    );
    qs.extend(set.out_of_scope.iter().map(|q| (q.text.clone(), vec![])));
    for (text, secs) in qs {
        let x = sparky::rag::expand::expand(&text);
        let v = e
            .embed(&[x.clone()], sparky::rag::embed::EmbedKind::Query)
            .await
            .unwrap()
            .remove(0);
        let hits = store
            .search_vector(&v, e.model_name(), &ChunkFilter::default(), 30)
            .await
            .unwrap();
        let top = hits.first().map(|h| h.score).unwrap_or(0.0);
        let right = hits
            .iter()
            .filter(|h| {
                h.chunk
                    .section
                    .as_deref()
                    .is_some_and(|s| secs.iter().any(|w| sparky::rag::sections::related(w, s)))
            })
            .map(|h| h.score)
            .next();
        let text_hits = store
            .rank_text(&x, &[], 2000, &ChunkFilter::default(), 30)
            .await
            .unwrap();
        let ttop = text_hits.first().map(|h| h.score).unwrap_or(0.0);
        let tright = text_hits
            .iter()
            .filter(|h| {
                h.chunk
                    .section
                    .as_deref()
                    .is_some_and(|s| secs.iter().any(|w| sparky::rag::sections::related(w, s)))
            })
            .map(|h| h.score)
            .next();
        println!(
            "{}\t{:.3}\t{:?}\t{:.2}\t{:?}\t{}",
            if secs.is_empty() { "OOS" } else { "IN" },
            top,
            right.map(|r| (r * 1000.0).round() / 1000.0),
            ttop,
            tright.map(|r| (r * 100.0).round() / 100.0),
            text
        );
    }
}
