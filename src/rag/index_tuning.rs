//! How wide the vector index searches for this library (Postgres's HNSW `ef_search`): the
//! explicit `rag.ef_search`, else the width measured for `rag.recall_target` and stored. A
//! process reads it once at start (one row); measuring happens after an ingest and in the
//! background of a long-running process, and only when the library changed since.
//!
//! The index is measured with questions, not with stored passages: questions sit in another
//! part of the vector space than passages, and among passages that are all about equally far
//! from each other (uniformly random vectors) no index finds a passage's own neighbours, so a
//! width chosen that way would be the widest for nothing a question ever asks
//! (docs/retrieval.md).

use crate::config::RagConfig;
use crate::store::{IndexTuning, Store, StoreError};

use super::embed::{EmbedKind, Embedder};
use super::eval::{load, EvalSet};

/// Questions measured: recall@10 to about two decimals, and one exact scan each (a minute in
/// all at 1M vectors on two cores).
pub const TUNING_QUESTIONS: usize = 48;
/// Share by which the number of vectors may move before the width is measured again.
const DRIFT: f64 = 0.1;

/// Why the width could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum TuningError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The questions could not be embedded.
    #[error("embedding the tuning questions failed: {0}")]
    Embed(String),
}

/// At process start: uses `rag.ef_search` when set, else the width stored for `model` (one
/// read). Returns the stored tuning in use, if any.
pub async fn apply(
    store: &dyn Store,
    rag: &RagConfig,
    model: Option<&str>,
) -> Result<Option<IndexTuning>, StoreError> {
    if rag.ef_search > 0 {
        store.use_ef_search(rag.ef_search);
        return Ok(None);
    }
    match model {
        Some(model) => store.load_index_tuning(model).await,
        None => Ok(None),
    }
}

/// The questions the index is measured with: the in-scope questions of the held-out
/// chat-style sets (not `chat`, which the retrieval benchmark asks, nor `corpus`, written
/// with the summaries), spread evenly, expanded the way the retriever expands a question.
pub fn tuning_questions() -> Vec<String> {
    let all: Vec<String> = [EvalSet::Heldout, EvalSet::Heldout2, EvalSet::Heldout3]
        .into_iter()
        .filter_map(|set| load(set).ok())
        .flat_map(|set| set.questions)
        .map(|q| super::expand::expand(&q.text))
        .collect();
    let step = all.len().div_ceil(TUNING_QUESTIONS).max(1);
    all.into_iter().step_by(step).collect()
}

/// Measures the width again when none was measured for the embedder's model, the target
/// changed, or the number of vectors moved by more than a tenth since; otherwise uses the
/// stored one. Returns the tuning in use (`None`: an explicit `rag.ef_search`, exact vector
/// search, or no vectors yet).
pub async fn tune_if_changed(
    store: &dyn Store,
    embedder: &dyn Embedder,
    rag: &RagConfig,
) -> Result<Option<IndexTuning>, TuningError> {
    if rag.ef_search > 0 {
        store.use_ef_search(rag.ef_search);
        return Ok(None);
    }
    let model = embedder.model_name();
    let vectors = match store.indexed_vectors(model).await? {
        Some(n) if n > 0 => n,
        _ => return Ok(None),
    };
    if let Some(t) = store.load_index_tuning(model).await? {
        let moved = (vectors - t.vectors).unsigned_abs() as f64;
        if (t.recall_target - rag.recall_target).abs() < 1e-9 && moved <= DRIFT * t.vectors as f64 {
            return Ok(Some(t));
        }
    }
    let queries = embedder
        .embed(&tuning_questions(), EmbedKind::Query)
        .await
        .map_err(|e| TuningError::Embed(e.to_string()))?;
    let tuning = store.tune_index(model, &queries, rag.recall_target).await?;
    if let Some(t) = &tuning {
        tracing::info!(
            ef_search = t.ef_search,
            recall = t.recall,
            target = t.recall_target,
            vectors = t.vectors,
            "vector index search width measured"
        );
        if !t.reached() {
            tracing::warn!(
                ef_search = t.ef_search,
                recall = t.recall,
                target = t.recall_target,
                "the vector index does not reach rag.recall_target at any width; using the best measured"
            );
        }
    }
    Ok(tuning)
}
