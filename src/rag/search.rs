//! Hybrid search: exact section references, full text and vectors, fused by reciprocal rank.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;

use super::embed::{EmbedKind, Embedder};
use super::sections::{find_references, strip_table};
use crate::store::{Chunk, ChunkFilter, Store, StoreError};

/// Reciprocal-rank-fusion constant (the usual 60).
const RRF_K: f64 = 60.0;
/// Candidates taken from each retriever before fusion.
const CANDIDATES: usize = 30;
/// Below this cosine similarity a vector hit alone is not relevant enough to show.
const MIN_COSINE: f64 = 0.45;
/// A full-text hit must reach this similarity when vectors are available.
const MIN_TEXT_COSINE: f64 = 0.25;

const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "can", "do", "does", "for", "from", "how", "i",
    "if", "in", "is", "it", "my", "need", "of", "on", "or", "should", "so", "the", "there", "this",
    "to", "what", "when", "where", "which", "with", "you", "we", "our", "me", "any", "have", "has",
    "its",
];

/// "how deep for pvc under a driveway" -> "deep or pvc or under or driveway".
fn any_word_query(query: &str) -> String {
    let words: Vec<String> = query
        .split(|c: char| !(c.is_alphanumeric() || c == '.' || c == '/'))
        .map(|w| w.trim_matches('.').to_lowercase())
        .filter(|w| w.len() > 1 && !STOP_WORDS.contains(&w.as_str()))
        .collect();
    if words.is_empty() {
        query.to_string()
    } else {
        words.join(" or ")
    }
}

/// Search failures.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A passage with its citation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Passage {
    /// Canonical section reference, when known.
    pub section: Option<String>,
    /// Edition year, when the passage is edition-specific.
    pub edition: Option<i32>,
    /// Where it comes from.
    pub source: String,
    /// Page in the source document.
    pub page: Option<i32>,
    /// Heading.
    pub heading: String,
    /// Text.
    pub text: String,
    /// Fused score (higher is better).
    pub score: f64,
}

/// Search parameters.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// Passages wanted.
    pub k: usize,
    /// Only this edition (plus edition-neutral passages).
    pub edition: Option<i32>,
    /// The asking workspace (sees global documents and its own).
    pub workspace: Option<String>,
}

impl Default for SearchOptions {
    fn default() -> Self {
        Self {
            k: 5,
            edition: None,
            workspace: None,
        }
    }
}

/// The ranked passages and how they were found.
#[derive(Debug, Clone, Serialize)]
pub struct SearchOutcome {
    /// Best first; empty when nothing is relevant enough.
    pub passages: Vec<Passage>,
    /// "hybrid" or "full text only (reason)".
    pub method: String,
}

/// Searches the store's chunks.
#[derive(Clone)]
pub struct Retriever {
    store: Arc<dyn Store>,
    embedder: Option<Arc<dyn Embedder>>,
    text_only_reason: String,
}

struct Candidate {
    chunk: Chunk,
    rrf: f64,
    exact: bool,
    text_hit: bool,
    cosine: Option<f64>,
}

impl Retriever {
    /// A retriever; `embedder` is `None` when no embedding model is available, and
    /// `why_not` then says why (shown with results).
    pub fn new(
        store: Arc<dyn Store>,
        embedder: Option<Arc<dyn Embedder>>,
        why_not: impl Into<String>,
    ) -> Self {
        Self {
            store,
            embedder,
            text_only_reason: why_not.into(),
        }
    }

    /// The embedding model in use.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder.as_ref()
    }

    /// The store searched.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Ranked passages for `query`.
    pub async fn search(
        &self,
        query: &str,
        opts: &SearchOptions,
    ) -> Result<SearchOutcome, SearchError> {
        let filter = ChunkFilter {
            edition: opts.edition,
            workspace: opts.workspace.clone(),
        };
        let mut candidates: HashMap<i64, Candidate> = HashMap::new();
        let mut add =
            |chunk: Chunk, rank: usize, exact: bool, text_hit: bool, cosine: Option<f64>| {
                let entry = candidates.entry(chunk.id).or_insert(Candidate {
                    chunk,
                    rrf: 0.0,
                    exact: false,
                    text_hit: false,
                    cosine: None,
                });
                entry.rrf += 1.0 / (RRF_K + rank as f64 + 1.0);
                entry.exact |= exact;
                entry.text_hit |= text_hit;
                if cosine.is_some() {
                    entry.cosine = cosine;
                }
            };

        // An exact reference in the question is looked up directly.
        for reference in find_references(query) {
            let bare = strip_table(&reference).to_string();
            let mut seen = Vec::new();
            for variant in [reference.clone(), bare.clone(), format!("Table {bare}")] {
                if seen.contains(&variant) {
                    continue;
                }
                seen.push(variant.clone());
                for (rank, chunk) in self
                    .store
                    .chunks_by_section(&variant, &filter)
                    .await?
                    .into_iter()
                    .enumerate()
                {
                    add(chunk, rank, true, false, None);
                }
            }
        }

        // Questions in chat rarely contain every word of the passage that answers them: any
        // word may match, and the ranking favours passages that match more of them.
        let loose = any_word_query(query);
        for (rank, hit) in self
            .store
            .search_text(&loose, &filter, CANDIDATES)
            .await?
            .into_iter()
            .enumerate()
        {
            add(hit.chunk, rank, false, true, None);
        }

        let mut method = "hybrid (full text + vectors)".to_string();
        let mut vectors_used = false;
        match &self.embedder {
            Some(embedder) => match embedder.embed(&[query.to_string()], EmbedKind::Query).await {
                Ok(mut v) if !v.is_empty() => {
                    let q = v.swap_remove(0);
                    vectors_used = true;
                    let hits = self
                        .store
                        .search_vector(&q, embedder.model_name(), &filter, CANDIDATES)
                        .await?;
                    for (rank, hit) in hits.into_iter().enumerate() {
                        let score = hit.score;
                        add(hit.chunk, rank, false, false, Some(score));
                    }
                }
                Ok(_) => method = "full text only (the embedder returned nothing)".into(),
                Err(e) => {
                    tracing::warn!(error = %e, "query embedding failed; full text only");
                    method = format!("full text only ({e})");
                }
            },
            None => method = format!("full text only ({})", self.text_only_reason),
        }

        let mut ranked: Vec<Candidate> = candidates
            .into_values()
            .filter(|c| {
                // With vectors available, a word match alone is not enough: the passage must
                // also be somewhat close in meaning, so unrelated questions get nothing.
                let close = c.cosine.is_some_and(|s| s >= MIN_TEXT_COSINE);
                c.exact
                    || c.cosine.is_some_and(|s| s >= MIN_COSINE)
                    || (c.text_hit && (!vectors_used || close))
            })
            .collect();
        ranked.sort_by(|a, b| {
            b.exact
                .cmp(&a.exact)
                .then(b.rrf.total_cmp(&a.rrf))
                .then(a.chunk.id.cmp(&b.chunk.id))
        });
        let passages = ranked
            .into_iter()
            .take(opts.k.max(1))
            .map(|c| Passage {
                section: c.chunk.section,
                edition: c.chunk.edition,
                source: c.chunk.source,
                page: c.chunk.page,
                heading: c.chunk.heading,
                text: c.chunk.text,
                score: if c.exact { 1.0 + c.rrf } else { c.rrf },
            })
            .collect();
        Ok(SearchOutcome { passages, method })
    }
}
