//! How wide the approximate vector index searches: chosen by measuring the index against exact
//! search for a recall target, stored, and read once per process. Where vector search is exact
//! (SQLite) there is nothing to choose.

use async_trait::async_trait;

use super::{IndexTuning, StoreResult};

/// Neighbours compared per query when measuring recall (recall@10).
pub const TUNING_NEIGHBOURS: usize = 10;

/// Choosing the width of the approximate vector index's search.
#[async_trait]
pub trait VectorIndexTuning: Send + Sync {
    /// Uses `ef_search` for every later vector search of this store and its clones (an
    /// operator's explicit setting, or a tuning read elsewhere). No effect where vector search
    /// is exact.
    fn use_ef_search(&self, ef_search: usize);
    /// The `ef_search` vector searches use now; `None` where vector search is exact.
    fn ef_search(&self) -> Option<usize>;
    /// Loads the retrieval indexes into memory so the first questions after start-up do not
    /// read them from disk (Postgres: [`PostgresStore::warm`](super::PostgresStore::warm));
    /// what was done, for the log, or `None` where there is nothing to warm. For long-running
    /// processes: a one-shot command would pay for it and leave before it helps.
    async fn warm_indexes(&self) -> StoreResult<Option<String>>;
    /// The tuning last measured for `model`, which this store then uses (one read by key);
    /// `None` when none was measured or vector search is exact.
    async fn load_index_tuning(&self, model: &str) -> StoreResult<Option<IndexTuning>>;
    /// How many vectors of `model` the approximate index holds; `None` where there is no
    /// approximate index.
    async fn indexed_vectors(&self, model: &str) -> StoreResult<Option<i64>>;
    /// Drops the approximate index over vectors of `dims` dimensions before a bulk pass
    /// (building it once after loading is tens of times faster than keeping it up to date one
    /// row at a time); searches meanwhile compare every vector. Whether it dropped one:
    /// `false` where there is no approximate index or vectors of `dims` are not in it.
    /// [`VectorIndexTuning::ensure_vector_index`] builds it again.
    async fn pause_vector_index(&self, dims: usize) -> StoreResult<bool>;
    /// Builds the approximate index when it is missing (after a bulk pass, or one a crash
    /// ended); whether it built one. Nothing to do when it is there.
    async fn ensure_vector_index(&self) -> StoreResult<bool>;
    /// Measures recall@10 against exact search for `queries` at growing `ef_search`, keeps the
    /// smallest that reaches `target` (the best measured when none does), stores it for
    /// `model` and uses it. `None` where vector search is exact or no query fits the index.
    /// Costs one exact scan per query: run it after an ingest or in the background, never on
    /// a request.
    async fn tune_index(
        &self,
        model: &str,
        queries: &[Vec<f32>],
        target: f64,
    ) -> StoreResult<Option<IndexTuning>>;
}
