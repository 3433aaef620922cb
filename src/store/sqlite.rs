//! SQLite backend: the embedded default, one file, no server.
//!
//! Full text uses FTS5 and vector search is an exact cosine scan. Threads are serialised by
//! the same session leases as on Postgres, so several processes may share one file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::TryStreamExt;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Row, Sqlite, Transaction};

use super::common::scored_chunk_from;
use super::common::{
    check_schema_version, chunk_cols, chunk_from, db, filter_sql, impl_store, limit, newest_version,
};
use super::search::{embedding_to_bytes, fts5_any_word, fts5_query, CosineQuery};
use super::{Backend, ChunkFilter, ScoredChunk, StoreError, StoreResult};

/// Default pool size of [`SqliteStore::open`].
const DEFAULT_CONNECTIONS: u32 = 8;

/// A [`Store`](super::Store) in an SQLite file.
#[derive(Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// Canonical file path.
    path: PathBuf,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    const BACKEND: Backend = Backend::Sqlite;
    /// SQLite has no row locks; write transactions start with `BEGIN IMMEDIATE` instead.
    const FOR_UPDATE: &'static str = "";

    /// Opens (creating the file and its directory if needed) and migrates the database at
    /// `path`, refusing a schema newer than this binary.
    pub async fn open(path: &Path) -> StoreResult<Self> {
        Self::open_with(path, DEFAULT_CONNECTIONS).await
    }

    /// Like [`open`](Self::open) with a pool of at most `max_connections`.
    pub async fn open_with(path: &Path, max_connections: u32) -> StoreResult<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Database(sqlx::Error::Io(e)))?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(Duration::from_secs(30))
            .test_before_acquire(false)
            .before_acquire(super::pool_check::ping_if_idle)
            .after_release(super::pool_check::close_if_in_transaction)
            .connect_with(options)
            .await
            .map_err(db)?;
        let found = applied_version(&pool).await?;
        check_schema_version(found, &super::migrations::SQLITE)?;
        super::migrations::SQLITE.run(&pool).await?;
        tracing::debug!(
            path = %path.display(),
            version = newest_version(&super::migrations::SQLITE),
            "sqlite store ready"
        );
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        Ok(Self { pool, path })
    }

    /// The underlying pool (for tests and benchmarks).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Closes every pooled connection (checkpointing the WAL).
    pub async fn close(&self) {
        self.pool.close().await;
    }

    pub(super) async fn begin_write(&self) -> Result<Transaction<'static, Sqlite>, sqlx::Error> {
        // Taking the write lock up front avoids SQLITE_BUSY when a reader upgrades.
        self.pool.begin_with("BEGIN IMMEDIATE").await
    }

    pub(super) async fn begin_read(&self) -> Result<Transaction<'static, Sqlite>, sqlx::Error> {
        self.pool.begin().await
    }

    /// An embedding as the `embedding` column takes it.
    pub(super) fn embedding_param(v: &[f32]) -> Vec<u8> {
        embedding_to_bytes(v)
    }

    async fn backend_search_text(
        &self,
        query: &str,
        filter: &ChunkFilter,
        k: usize,
    ) -> StoreResult<Vec<ScoredChunk>> {
        let Some(fts) = fts5_query(query) else {
            return Ok(Vec::new());
        };
        // bm25 is lower-is-better; negated so higher is better like ts_rank. Section and
        // heading matches weigh more than body text.
        let sql = format!(
            concat!(
                "SELECT ",
                chunk_cols!(),
                ", -bm25(chunks_fts, 4.0, 2.0, 1.0) AS score \
                 FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid \
                 JOIN documents d ON d.id = c.document_id \
                 WHERE chunks_fts MATCH $1 AND {} ORDER BY score DESC, c.id LIMIT $4"
            ),
            filter_sql(2, 3)
        );
        sqlx::query(&sql)
            .bind(fts)
            .bind(filter.edition)
            .bind(filter.workspace_key())
            .bind(limit(k))
            .fetch_all(&self.pool)
            .await
            .map_err(db)?
            .iter()
            .map(scored_chunk_from)
            .collect()
    }

    async fn backend_rank_text(
        &self,
        query: &str,
        candidates: &[i64],
        _budget: usize,
        filter: &ChunkFilter,
        k: usize,
    ) -> StoreResult<Vec<ScoredChunk>> {
        let Some(fts) = fts5_any_word(query) else {
            return Ok(Vec::new());
        };
        // FTS5's bm25 already weighs term rarity; the candidates are ranked too, so a passage
        // another retriever found gets its text rank even outside the top k.
        let sql = format!(
            concat!(
                "SELECT ",
                chunk_cols!(),
                ", -bm25(chunks_fts, 4.0, 2.0, 1.0) AS score \
                 FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid \
                 JOIN documents d ON d.id = c.document_id \
                 WHERE chunks_fts MATCH $1 AND {} \
                 AND ($5 = 1 OR c.id IN (SELECT value FROM json_each($6))) \
                 ORDER BY score DESC, c.id LIMIT $4"
            ),
            filter_sql(2, 3)
        );
        let ids_json =
            serde_json::to_string(candidates).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let mut hits: Vec<ScoredChunk> = Vec::new();
        for (all, n) in [(1, k), (0, candidates.len())] {
            if n == 0 {
                continue;
            }
            let rows = sqlx::query(&sql)
                .bind(&fts)
                .bind(filter.edition)
                .bind(filter.workspace_key())
                .bind(limit(n))
                .bind(all)
                .bind(&ids_json)
                .fetch_all(&self.pool)
                .await
                .map_err(db)?;
            for row in &rows {
                let hit = scored_chunk_from(row)?;
                if !hits.iter().any(|h| h.chunk.id == hit.chunk.id) {
                    hits.push(hit);
                }
            }
        }
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.chunk.id.cmp(&b.chunk.id))
        });
        Ok(hits)
    }

    async fn backend_similarities(
        &self,
        ids: &[i64],
        embedding: &[f32],
        model: &str,
    ) -> StoreResult<Vec<(i64, f64)>> {
        let Some(query) = CosineQuery::new(embedding) else {
            return Ok(Vec::new());
        };
        let ids_json =
            serde_json::to_string(ids).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let rows = sqlx::query(
            "SELECT chunk_id, embedding FROM chunk_embeddings \
             WHERE model = $1 AND chunk_id IN (SELECT value FROM json_each($2))",
        )
        .bind(model)
        .bind(ids_json)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: i64 = row.try_get("chunk_id").map_err(db)?;
            let bytes: &[u8] = row.try_get("embedding").map_err(db)?;
            if let Some(score) = query.similarity_le_bytes(bytes) {
                out.push((id, score));
            }
        }
        Ok(out)
    }

    async fn backend_search_vector(
        &self,
        embedding: &[f32],
        model: &str,
        filter: &ChunkFilter,
        k: usize,
    ) -> StoreResult<Vec<ScoredChunk>> {
        let Some(query) = CosineQuery::new(embedding) else {
            return Ok(Vec::new());
        };
        let dims = i64::try_from(embedding.len()).unwrap_or(i64::MAX);
        // Exact scan: stream (id, vector) pairs, keep the best k, then load those chunks.
        let sql = format!(
            "SELECT e.chunk_id, e.embedding FROM chunk_embeddings e \
             JOIN chunks c ON c.id = e.chunk_id JOIN documents d ON d.id = c.document_id \
             WHERE e.model = $1 AND e.dims = $2 AND {}",
            filter_sql(3, 4)
        );
        let mut best: Vec<(f64, i64)> = Vec::with_capacity(k + 1);
        {
            let mut rows = sqlx::query(&sql)
                .bind(model)
                .bind(dims)
                .bind(filter.edition)
                .bind(filter.workspace_key())
                .fetch(&self.pool);
            while let Some(row) = rows.try_next().await.map_err(db)? {
                let id: i64 = row.try_get("chunk_id").map_err(db)?;
                let bytes: &[u8] = row.try_get("embedding").map_err(db)?;
                let Some(score) = query.similarity_le_bytes(bytes) else {
                    continue;
                };
                if best.len() == k {
                    match best.last() {
                        Some(&(worst, _)) if score > worst => {
                            best.pop();
                        }
                        _ => continue,
                    }
                }
                let at = best.partition_point(|&(s, i)| s > score || (s == score && i < id));
                best.insert(at, (score, id));
            }
        }
        if best.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<i64> = best.iter().map(|&(_, id)| id).collect();
        let ids_json =
            serde_json::to_string(&ids).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let rows = sqlx::query(concat!(
            "SELECT ",
            chunk_cols!(),
            " FROM chunks c JOIN documents d ON d.id = c.document_id \
             WHERE c.id IN (SELECT value FROM json_each($1))"
        ))
        .bind(ids_json)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        let mut chunks: HashMap<i64, super::Chunk> = rows
            .iter()
            .map(|r| chunk_from(r).map(|c| (c.id, c)))
            .collect::<StoreResult<_>>()?;
        Ok(best
            .into_iter()
            .filter_map(|(score, id)| chunks.remove(&id).map(|chunk| ScoredChunk { chunk, score }))
            .collect())
    }
}

/// The newest applied migration, if the database has been migrated before.
async fn applied_version(pool: &SqlitePool) -> StoreResult<Option<i64>> {
    let exists: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
    )
    .fetch_one(pool)
    .await
    .map_err(db)?;
    if exists == 0 {
        return Ok(None);
    }
    sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
        .fetch_one(pool)
        .await
        .map_err(db)
}

impl_store!(SqliteStore, Sqlite);
super::fence::impl_fence!(SqliteStore, Sqlite, super::fence::HOLDS_FENCE_SQLITE);
super::apply::impl_apply!(SqliteStore, Sqlite);

/// SQLite compares the question with every vector: exact, nothing to tune.
#[async_trait::async_trait]
impl super::VectorIndexTuning for SqliteStore {
    fn use_ef_search(&self, _ef_search: usize) {}

    fn ef_search(&self) -> Option<usize> {
        None
    }

    async fn warm_indexes(&self) -> StoreResult<Option<String>> {
        Ok(None)
    }

    async fn pause_vector_index(&self, _dims: usize) -> StoreResult<bool> {
        Ok(false)
    }

    async fn ensure_vector_index(&self) -> StoreResult<bool> {
        Ok(false)
    }

    async fn load_index_tuning(&self, _model: &str) -> StoreResult<Option<super::IndexTuning>> {
        Ok(None)
    }

    async fn indexed_vectors(&self, _model: &str) -> StoreResult<Option<i64>> {
        Ok(None)
    }

    async fn tune_index(
        &self,
        _model: &str,
        _queries: &[Vec<f32>],
        _target: f64,
    ) -> StoreResult<Option<super::IndexTuning>> {
        Ok(None)
    }
}
