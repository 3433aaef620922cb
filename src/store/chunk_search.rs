//! Searching the chunks: full text, vectors, BM25 over candidates, and section lookups. The
//! dialect-specific SQL lives in each backend's `backend_*` methods.

use async_trait::async_trait;

use super::{Chunk, ChunkFilter, ScoredChunk};

use super::StoreResult;

/// Finding chunks for a question.
#[async_trait]
pub trait ChunkSearch: Send + Sync {
    /// Full-text search, best first.
    async fn search_text(
        &self,
        query: &str,
        filter: &ChunkFilter,
        k: usize,
    ) -> StoreResult<Vec<ScoredChunk>>;
    /// Nearest neighbours by cosine similarity for one embedding model, best first.
    async fn search_vector(
        &self,
        embedding: &[f32],
        model: &str,
        filter: &ChunkFilter,
        k: usize,
    ) -> StoreResult<Vec<ScoredChunk>>;
    /// Full text ranked with term rarity (BM25) over a bounded candidate set: the chunks in
    /// `candidates` (found by other retrievers) plus the chunks holding the query's rarer
    /// words, at most `budget` of them, so the cost does not grow with the words everyone
    /// uses. Only chunks that match some word are returned, best first, at most `k` plus
    /// the candidates' count.
    async fn rank_text(
        &self,
        query: &str,
        candidates: &[i64],
        budget: usize,
        filter: &ChunkFilter,
        k: usize,
    ) -> StoreResult<Vec<ScoredChunk>>;
    /// Cosine similarity between `embedding` and the stored vectors of `ids` for `model`;
    /// chunks without such a vector are left out.
    async fn similarities(
        &self,
        ids: &[i64],
        embedding: &[f32],
        model: &str,
    ) -> StoreResult<Vec<(i64, f64)>>;
    /// Chunks whose section reference equals `section` (canonical form).
    async fn chunks_by_section(
        &self,
        section: &str,
        filter: &ChunkFilter,
    ) -> StoreResult<Vec<Chunk>>;
}

/// Emits `impl ChunkSearch` for a backend store type.
macro_rules! impl_chunk_search {
    ($store:ty, $db:ty) => {
        const _: () = {
            use async_trait::async_trait;

            use $crate::store::common::*;
            use $crate::store::{Chunk, ChunkFilter, ScoredChunk, StoreResult, ChunkSearch};

            #[async_trait]
            impl ChunkSearch for $store {
                async fn search_text(
                    &self,
                    query: &str,
                    filter: &ChunkFilter,
                    k: usize,
                ) -> StoreResult<Vec<ScoredChunk>> {
                    if k == 0 || query.trim().is_empty() {
                        return Ok(Vec::new());
                    }
                    self.backend_search_text(query, filter, k).await
                }

                async fn search_vector(
                    &self,
                    embedding: &[f32],
                    model: &str,
                    filter: &ChunkFilter,
                    k: usize,
                ) -> StoreResult<Vec<ScoredChunk>> {
                    // A zero or non-finite query has no direction: nothing is similar to it.
                    if k == 0 || $crate::store::search::CosineQuery::new(embedding).is_none() {
                        return Ok(Vec::new());
                    }
                    self.backend_search_vector(embedding, model, filter, k).await
                }

                async fn rank_text(
                    &self,
                    query: &str,
                    candidates: &[i64],
                    budget: usize,
                    filter: &ChunkFilter,
                    k: usize,
                ) -> StoreResult<Vec<ScoredChunk>> {
                    if query.trim().is_empty() || (k == 0 && candidates.is_empty()) {
                        return Ok(Vec::new());
                    }
                    self.backend_rank_text(query, candidates, budget, filter, k).await
                }

                async fn similarities(
                    &self,
                    ids: &[i64],
                    embedding: &[f32],
                    model: &str,
                ) -> StoreResult<Vec<(i64, f64)>> {
                    if ids.is_empty() || $crate::store::search::CosineQuery::new(embedding).is_none() {
                        return Ok(Vec::new());
                    }
                    self.backend_similarities(ids, embedding, model).await
                }

                async fn chunks_by_section(
                    &self,
                    section: &str,
                    filter: &ChunkFilter,
                ) -> StoreResult<Vec<Chunk>> {
                    sqlx::query(&format!(
                        concat!(
                            "SELECT ",
                            chunk_cols!(),
                            " FROM chunks c JOIN documents d ON d.id = c.document_id \
                             WHERE c.section = $1 AND {} ORDER BY c.edition DESC, c.document_id, c.ord"
                        ),
                        filter_sql(2, 3)
                    ))
                    .bind(clean_text(section.trim()))
                    .bind(filter.edition)
                    .bind(filter.workspace_key())
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db)?
                    .iter()
                    .map(chunk_from)
                    .collect()
                }
            }
        };
    };
}
pub(crate) use impl_chunk_search;
