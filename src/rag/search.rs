//! Hybrid search: exact section references, full text and vectors, fused by reciprocal rank.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;

use super::embed::{EmbedKind, Embedder};
use super::expand::expand;
use super::query_cache::QueryCache;
use super::scope::Evidence;
use super::sections::{find_references, strip_table};
use crate::store::{Chunk, ChunkFilter, Store, StoreError};

/// Reciprocal-rank-fusion constant (the usual 60).
const RRF_K: f64 = 60.0;
/// Candidates taken from each retriever before fusion.
pub const CANDIDATES: usize = 30;
/// Below this cosine similarity a vector hit alone is not relevant enough to show.
pub(crate) const MIN_COSINE: f64 = 0.45;
/// A full-text hit must reach this similarity when vectors are available.
const MIN_TEXT_COSINE: f64 = 0.25;
/// Chunks full text may add to the vector candidates, by the rarity of their words (see
/// [`Store::rank_text`]): with vectors on, only passages close in meaning survive anyway.
pub const HYBRID_TEXT_BUDGET: usize = 200;
/// The same bound for full text alone, which has nothing else to find passages with.
pub const TEXT_ONLY_BUDGET: usize = 2000;
/// Question vectors remembered per retriever.
const QUERY_CACHE: usize = 2048;

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
    pub workspace: Option<crate::domain::workspace::Workspace>,
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
    /// What the scope rule weighed (the nearest passage's cosine, or the full-text
    /// coverage), for the evaluation's explanations.
    #[serde(skip)]
    pub evidence: Evidence,
}

/// Searches the store's chunks.
#[derive(Clone)]
pub struct Retriever {
    store: Arc<dyn Store>,
    embedder: Option<Arc<dyn Embedder>>,
    text_only_reason: String,
    cache: Arc<QueryCache>,
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
            cache: Arc::new(QueryCache::new(QUERY_CACHE)),
        }
    }

    /// The cache of question vectors (hits and misses, for benchmarks and metrics).
    pub fn query_cache(&self) -> &QueryCache {
        &self.cache
    }

    /// The vector of a question, from the cache when it was embedded before.
    async fn query_vector(
        &self,
        embedder: &dyn Embedder,
        text: &str,
    ) -> Result<Option<Vec<f32>>, super::embed::EmbedError> {
        if let Some(v) = self.cache.get(embedder.model_name(), text) {
            return Ok(Some(v));
        }
        let mut v = embedder
            .embed(&[text.to_string()], EmbedKind::Query)
            .await?;
        if v.is_empty() {
            return Ok(None);
        }
        let q = v.swap_remove(0);
        self.cache.put(embedder.model_name(), text, q.clone());
        Ok(Some(q))
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
        fn add(
            candidates: &mut HashMap<i64, Candidate>,
            chunk: Chunk,
            rank: usize,
            exact: bool,
            text_hit: bool,
            cosine: Option<f64>,
        ) {
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
        }

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
                    add(&mut candidates, chunk, rank, true, false, None);
                }
            }
        }

        // Shop abbreviations and misspellings get the corpus's words added.
        let expanded = expand(query);

        let mut method = "hybrid (full text + vectors)".to_string();
        let mut query_vector = None;
        let mut vector_hits = 0;
        match &self.embedder {
            Some(embedder) => match self.query_vector(embedder.as_ref(), &expanded).await {
                Ok(Some(q)) => {
                    let hits = self
                        .store
                        .search_vector(&q, embedder.model_name(), &filter, CANDIDATES)
                        .await?;
                    vector_hits = hits.len();
                    for (rank, hit) in hits.into_iter().enumerate() {
                        let score = hit.score;
                        add(&mut candidates, hit.chunk, rank, false, false, Some(score));
                    }
                    query_vector = Some(q);
                }
                Ok(None) => method = "full text only (the embedder returned nothing)".into(),
                Err(e) => {
                    tracing::warn!(error = %e, "query embedding failed; full text only");
                    method = format!("full text only ({e})");
                }
            },
            None => method = format!("full text only ({})", self.text_only_reason),
        }
        // No vector found at all (none stored yet for this model: a first start before the
        // pass, or a library ingested without the embedder): the distance to the nearest
        // passage says nothing, so the words decide whether the question is about the code.
        if query_vector.is_some() && vector_hits == 0 {
            method = "full text only (no passage has a vector of this model yet)".into();
            query_vector = None;
        }
        let vectors_used = query_vector.is_some();

        // Full text ranks the passages found so far plus a bounded set holding the question's
        // rarer words: ranking every passage that shares any common word with a chat
        // question would cost time in proportion to the corpus and change nothing that
        // survives the similarity filter below.
        let known: Vec<i64> = candidates.keys().copied().collect();
        let budget = if vectors_used {
            HYBRID_TEXT_BUDGET
        } else {
            TEXT_ONLY_BUDGET
        };
        let text_hits = self
            .store
            .rank_text(&expanded, &known, budget, &filter, CANDIDATES)
            .await?;
        // Passages only full text found get their similarity too, so a rare-word match that
        // is close in meaning is kept and one that is not is dropped.
        let mut similarity: HashMap<i64, f64> = HashMap::new();
        if let (Some(q), Some(embedder)) = (&query_vector, &self.embedder) {
            let unknown: Vec<i64> = text_hits
                .iter()
                .map(|h| h.chunk.id)
                .filter(|id| !candidates.contains_key(id))
                .collect();
            similarity = self
                .store
                .similarities(&unknown, q, embedder.model_name())
                .await?
                .into_iter()
                .collect();
        }
        // Without vectors, the words the best text passages share with the question say
        // whether it is about the code at all (see `scope`).
        let text_coverage = if vectors_used {
            None
        } else {
            super::scope::coverage(
                &expanded,
                text_hits.iter().take(5).map(|h| h.chunk.text.as_str()),
            )
        };
        for (rank, hit) in text_hits.into_iter().enumerate() {
            let cosine = similarity.get(&hit.chunk.id).copied();
            add(&mut candidates, hit.chunk, rank, false, true, cosine);
        }

        // A question whose nearest passage is still far from it, or that names nothing
        // electrical and is not clearly close, is about something else (plumbing, stairs,
        // tools): only an exact reference may answer it (see `scope::in_scope`).
        let best_cosine = candidates
            .values()
            .filter_map(|c| c.cosine)
            .fold(f64::MIN, f64::max);
        let evidence = if vectors_used {
            Evidence::Vector(best_cosine)
        } else {
            Evidence::Text(text_coverage)
        };
        let in_scope = super::scope::in_scope(query, evidence);
        let mut ranked: Vec<Candidate> = candidates
            .into_values()
            .filter(|c| c.exact || in_scope)
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
        // A question naming a table's key (an OCPD rating, a conductor size, a number of
        // conductors) leads with that row, computed from the tables the calculations use.
        let computed = super::table_rows::rows_for(query, opts.edition);
        let room = opts.k.max(1).saturating_sub(computed.len());
        let passages = computed
            .into_iter()
            .take(opts.k.max(1))
            .chain(ranked.into_iter().take(room).map(|c| Passage {
                section: c.chunk.section,
                edition: c.chunk.edition,
                source: c.chunk.source,
                page: c.chunk.page,
                heading: c.chunk.heading,
                text: c.chunk.text,
                score: if c.exact { 1.0 + c.rrf } else { c.rrf },
            }))
            .collect();
        Ok(SearchOutcome {
            passages,
            method,
            evidence,
        })
    }
}
