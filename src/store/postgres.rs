//! PostgreSQL backend (with pgvector): the team and production database.

use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Postgres, Transaction};

use super::common::{
    check_schema_version, chunk_cols, clean_text, db, filter_sql, impl_store, limit,
    newest_version, scored_chunk_from, violation,
};
use super::{Backend, ChunkFilter, ScoredChunk, StoreResult};

/// Migrations for Postgres, embedded at build time.
pub static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// Dimension of the default local embedding model; vectors of this size use the HNSW index.
pub const INDEXED_DIMS: usize = 384;

/// A [`Store`](super::Store) on PostgreSQL with pgvector.
#[derive(Clone)]
pub struct PostgresStore {
    /// The only pool: nothing holds a connection across a model call, so turns in flight
    /// are not bounded by its size.
    pool: PgPool,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

impl PostgresStore {
    const BACKEND: Backend = Backend::Postgres;
    /// Row lock for read-then-write transactions.
    const FOR_UPDATE: &'static str = " FOR UPDATE";

    /// Connects to `url` with a pool of at most `max_connections`, refuses a schema newer
    /// than this binary, and applies pending migrations.
    pub async fn connect(url: &str, max_connections: u32) -> StoreResult<Self> {
        let options = PgConnectOptions::from_str(url).map_err(db)?;
        Self::connect_with(options, max_connections).await
    }

    /// Like [`connect`](Self::connect) with parsed options (tests pick a database this way).
    pub async fn connect_with(
        options: PgConnectOptions,
        max_connections: u32,
    ) -> StoreResult<Self> {
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(options)
            .await
            .map_err(db)?;
        let found = applied_version(&pool).await?;
        check_schema_version(found, &MIGRATOR)?;
        MIGRATOR.run(&pool).await?;
        tracing::debug!(version = newest_version(&MIGRATOR), "postgres store ready");
        Ok(Self { pool })
    }

    /// The underlying pool (for tests, benchmarks and health checks).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Closes every pooled connection.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    async fn begin_write(&self) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
        self.pool.begin().await
    }

    async fn begin_read(&self) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
        self.pool
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await
    }

    async fn backend_set_embedding(
        &self,
        chunk_id: i64,
        model: &str,
        embedding: &[f32],
    ) -> StoreResult<()> {
        let dims = i32::try_from(embedding.len()).unwrap_or(i32::MAX);
        sqlx::query(
            "INSERT INTO chunk_embeddings (chunk_id, model, dims, embedding) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (chunk_id, model) \
             DO UPDATE SET dims = excluded.dims, embedding = excluded.embedding",
        )
        .bind(chunk_id)
        .bind(model)
        .bind(dims)
        .bind(pgvector::Vector::from(embedding.to_vec()))
        .execute(&self.pool)
        .await
        .map_err(|e| violation(e, None, Some(format!("chunk {chunk_id} does not exist"))))?;
        Ok(())
    }

    async fn backend_search_text(
        &self,
        query: &str,
        filter: &ChunkFilter,
        k: usize,
    ) -> StoreResult<Vec<ScoredChunk>> {
        let sql = format!(
            concat!(
                "SELECT ",
                chunk_cols!(),
                ", ts_rank_cd(c.tsv, q)::float8 AS score \
                 FROM chunks c JOIN documents d ON d.id = c.document_id, \
                 websearch_to_tsquery('english', $1) AS q \
                 WHERE c.tsv @@ q AND {} ORDER BY score DESC, c.id LIMIT $4"
            ),
            filter_sql(2, 3)
        );
        sqlx::query(&sql)
            .bind(clean_text(query))
            .bind(filter.edition)
            .bind(&filter.workspace)
            .bind(limit(k))
            .fetch_all(&self.pool)
            .await
            .map_err(db)?
            .iter()
            .map(scored_chunk_from)
            .collect()
    }

    async fn backend_search_vector(
        &self,
        embedding: &[f32],
        model: &str,
        filter: &ChunkFilter,
        k: usize,
    ) -> StoreResult<Vec<ScoredChunk>> {
        let n = embedding.len();
        // The ORDER BY repeats the index's expression (and its `dims = N` predicate as a
        // literal) so the planner can use HNSW; `n` is a length, never user text.
        let distance = format!("e.embedding::vector({n}) <=> $1::vector({n})");
        let sql = format!(
            concat!(
                "SELECT ",
                chunk_cols!(),
                ", 1 - ({dist}) AS score \
                 FROM chunk_embeddings e JOIN chunks c ON c.id = e.chunk_id \
                 JOIN documents d ON d.id = c.document_id \
                 WHERE e.model = $2 AND e.dims = {n} AND {filter} \
                 ORDER BY {dist} LIMIT $5"
            ),
            dist = distance,
            n = n,
            filter = filter_sql(3, 4)
        );
        let mut tx = self.pool.begin().await.map_err(db)?;
        if n == INDEXED_DIMS {
            // Filters are applied after the index scan; iterative scanning keeps reading the
            // index until `k` rows pass them.
            let ef_search = k.clamp(40, 1000).to_string();
            sqlx::query(
                "SELECT set_config('hnsw.iterative_scan', 'strict_order', true), \
                 set_config('hnsw.ef_search', $1, true)",
            )
            .bind(ef_search)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        }
        let rows = sqlx::query(&sql)
            .bind(pgvector::Vector::from(embedding.to_vec()))
            .bind(model)
            .bind(filter.edition)
            .bind(&filter.workspace)
            .bind(limit(k))
            .fetch_all(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        rows.iter().map(scored_chunk_from).collect()
    }
}

/// The newest applied migration, if the database has been migrated before.
async fn applied_version(pool: &PgPool) -> StoreResult<Option<i64>> {
    let exists: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
        .fetch_one(pool)
        .await
        .map_err(db)?;
    if !exists {
        return Ok(None);
    }
    sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
        .fetch_one(pool)
        .await
        .map_err(db)
}

impl_store!(PostgresStore);
super::apply::impl_apply!(PostgresStore, Postgres);
