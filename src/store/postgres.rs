//! PostgreSQL backend (with pgvector): the team and production database.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Postgres, Transaction};

use super::common::{
    check_schema_version, chunk_cols, clean_text, db, filter_sql, impl_store, limit,
    newest_version, scored_chunk_from,
};
use super::{Backend, ChunkFilter, IndexTuning, ScoredChunk, StoreResult, VectorIndexTuning};

/// Dimension of the default local embedding model; vectors of this size use the HNSW index.
pub const INDEXED_DIMS: usize = 384;

/// The distance the HNSW index orders by (migration 0027): half-precision copies of the
/// vectors, half the index's size. An ORDER BY must repeat it, cast for cast, to use the index.
/// The approximate index over vectors of [`INDEXED_DIMS`] (migration 0027).
const VECTOR_INDEX: &str = "chunk_embeddings_hnsw_384";
const INDEX_DISTANCE: &str = "e.embedding::halfvec(384) <=> $1::halfvec(384)";
/// The full-precision distance of the same vectors, for scores and exact search.
const EXACT_DISTANCE: &str = "e.embedding::vector(384) <=> $1::vector(384)";

/// `m` of the HNSW index over the default model's vectors, as the migrations build it
/// (pgvector's default).
pub const HNSW_M: u32 = 16;
/// `ef_construction` of that index, as the migrations build it (pgvector's default).
pub const HNSW_EF_CONSTRUCTION: u32 = 64;

/// HNSW candidate list (`hnsw.ef_search`) of a store that has no measured tuning yet (a
/// fresh install before its first ingest or start-up tuning; see [`VectorIndexTuning`]).
const EF_SEARCH_DEFAULT: usize = 100;
/// The candidate lists tried, smallest first, when choosing one for a recall target.
const EF_LADDER: [usize; 13] = [10, 20, 40, 60, 80, 100, 150, 200, 300, 400, 600, 800, 1000];
/// Largest candidate list pgvector accepts.
const EF_SEARCH_MAX: usize = 1000;

/// A [`Store`](super::Store) on PostgreSQL with pgvector.
#[derive(Clone)]
pub struct PostgresStore {
    /// The only pool: nothing holds a connection across a model call, so turns in flight
    /// are not bounded by its size.
    pool: PgPool,
    /// `hnsw.ef_search` of a vector search, shared by the clones: set from the stored tuning,
    /// an explicit setting or a new measurement ([`VectorIndexTuning`]).
    ef_search: std::sync::Arc<std::sync::atomic::AtomicUsize>,
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
            .test_before_acquire(false)
            .before_acquire(super::pool_check::ping_if_idle)
            .after_release(super::pool_check::close_if_in_transaction)
            .connect_with(options)
            .await
            .map_err(db)?;
        let found = applied_version(&pool).await?;
        check_schema_version(found, &super::migrations::POSTGRES)?;
        super::migrations::POSTGRES.run(&pool).await?;
        tracing::debug!(
            version = newest_version(&super::migrations::POSTGRES),
            "postgres store ready"
        );
        Ok(Self {
            pool,
            ef_search: std::sync::Arc::new(EF_SEARCH_DEFAULT.into()),
        })
    }

    /// The same store with its own HNSW candidate list (`hnsw.ef_search`, capped at 1,000),
    /// not shared with the clones it came from: a longer list finds more of the true nearest
    /// neighbours and costs time, which the retrieval benchmark measures.
    pub fn with_ef_search(mut self, ef_search: usize) -> Self {
        self.ef_search = std::sync::Arc::new(ef_search.clamp(1, EF_SEARCH_MAX).into());
        self
    }

    /// Loads the retrieval indexes into memory so the first questions after start-up do not
    /// read them from disk: with `pg_prewarm` (installed by migration 0008 where the server
    /// ships it) the HNSW, full-text and term-statistics indexes go into shared buffers when
    /// together they fit in half of them; otherwise, or without the extension, a scan of the
    /// term statistics and one wide vector search bring the hot pages into the caches.
    /// Returns what was done, for the log.
    pub async fn warm(&self) -> StoreResult<String> {
        let relations = [
            VECTOR_INDEX,
            "chunks_tsv",
            "chunk_terms_pkey",
            "chunk_terms",
        ];
        let (total, buffers): (i64, i64) = sqlx::query_as(
            "SELECT coalesce(sum(pg_relation_size(to_regclass(r))), 0)::int8, \
                    (SELECT setting::int8 * 8192 FROM pg_settings WHERE name = 'shared_buffers') \
             FROM unnest($1::text[]) r",
        )
        .bind(&relations[..])
        .fetch_one(&self.pool)
        .await
        .map_err(db)?;
        let prewarm: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_prewarm')",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(db)?;
        if prewarm && total <= buffers / 2 {
            let blocks: i64 = sqlx::query_scalar(
                "SELECT coalesce(sum(pg_prewarm(r::regclass)), 0)::int8 \
                 FROM unnest($1::text[]) r WHERE to_regclass(r) IS NOT NULL",
            )
            .bind(&relations[..])
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
            return Ok(format!(
                "pg_prewarm loaded {} MB of retrieval indexes into shared buffers",
                blocks * 8192 / (1 << 20)
            ));
        }
        sqlx::query("SELECT count(*) FROM chunk_terms")
            .execute(&self.pool)
            .await
            .map_err(db)?;
        let sample: Option<pgvector::Vector> =
            sqlx::query_scalar("SELECT embedding FROM chunk_embeddings WHERE dims = 384 LIMIT 1")
                .fetch_optional(&self.pool)
                .await
                .map_err(db)?;
        if let Some(v) = sample {
            let v = v.to_vec();
            self.backend_search_vector(&v, "", &ChunkFilter::default(), 1000)
                .await?;
        }
        Ok(format!(
            "{} MB of retrieval indexes {}; scanned term statistics and the upper HNSW layers",
            total / (1 << 20),
            if prewarm {
                "exceed half of shared_buffers"
            } else {
                "(pg_prewarm is not installed)"
            }
        ))
    }

    /// The underlying pool (for tests, benchmarks and health checks).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Closes every pooled connection.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    pub(super) async fn begin_write(&self) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
        self.pool.begin().await
    }

    // The project snapshot no longer needs it on Postgres (one message, see project_read.rs);
    // kept so the shared store code can still open a read transaction on either backend.
    #[allow(dead_code)]
    pub(super) async fn begin_read(&self) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
        self.pool
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await
    }

    /// An embedding as the `embedding` column takes it.
    pub(super) fn embedding_param(v: &[f32]) -> pgvector::Vector {
        pgvector::Vector::from(v.to_vec())
    }

    /// Whether the approximate vector index is there (a bulk pass drops it for a while).
    async fn vector_index_exists(&self) -> StoreResult<bool> {
        sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
            .bind(VECTOR_INDEX)
            .fetch_one(&self.pool)
            .await
            .map_err(db)
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
        budget: usize,
        filter: &ChunkFilter,
        k: usize,
    ) -> StoreResult<Vec<ScoredChunk>> {
        // BM25 (k1 = 1.2, b = 0.75) over the candidates, with document frequencies from
        // `chunk_terms`. Text candidates are the chunks holding the rarest query words, taken
        // while their summed document frequency stays within the budget: a word half the
        // corpus uses adds nothing but cost. Section and heading words (weight A) count 3x.
        // The candidates and their rows are materialised first: left to itself the planner
        // may unnest every stored passage's terms before joining the few candidates
        // (2–3 s at 100k passages instead of a few milliseconds).
        let sql = format!(
            concat!(
                "WITH q AS ( \
                     SELECT DISTINCT u.lexeme AS term FROM unnest(to_tsvector('english', $1)) u \
                 ), s AS ( \
                     SELECT greatest(nchunks, 1)::float8 AS n, \
                            greatest(total_len::float8 / greatest(nchunks, 1), 1.0) AS avgdl \
                     FROM chunk_stats \
                 ), w AS ( \
                     SELECT q.term, greatest(coalesce(ct.ndoc, 0), 0)::float8 AS df \
                     FROM q LEFT JOIN chunk_terms ct ON ct.term = q.term \
                 ), idf AS ( \
                     SELECT w.term, w.df, ln(1.0 + (s.n - w.df + 0.5) / (w.df + 0.5)) AS idf \
                     FROM w, s \
                 ), cand AS MATERIALIZED ( \
                     SELECT unnest($2::bigint[]) AS id \
                     UNION \
                     (SELECT c.id FROM chunks c WHERE c.tsv @@ ( \
                         SELECT string_agg(quote_literal(term), ' | ')::tsquery FROM ( \
                             SELECT term, sum(df) OVER (ORDER BY df, term) AS cum FROM idf \
                             WHERE df > 0 AND strpos(term, E'\\\\') = 0 \
                         ) x WHERE cum <= $3 \
                     ) LIMIT $3) \
                 ), cc AS MATERIALIZED ( \
                     SELECT c.id, c.tsv FROM cand JOIN chunks c ON c.id = cand.id \
                 ), scored AS ( \
                     SELECT c.id, sum(idf.idf * u.tf * 2.2 \
                         / (u.tf + 1.2 * (0.25 + 0.75 * length(c.tsv) / s.avgdl))) AS score \
                     FROM cc c CROSS JOIN s \
                     CROSS JOIN LATERAL ( \
                         SELECT x.lexeme, (SELECT sum(CASE v WHEN 'A' THEN 3 ELSE 1 END) \
                                           FROM unnest(x.weights) v)::float8 AS tf \
                         FROM unnest(c.tsv) x \
                     ) u \
                     JOIN idf ON idf.term = u.lexeme \
                     GROUP BY c.id \
                 ) \
                 SELECT ",
                chunk_cols!(),
                ", sc.score FROM scored sc JOIN chunks c ON c.id = sc.id \
                 JOIN documents d ON d.id = c.document_id \
                 WHERE {} ORDER BY sc.score DESC, c.id LIMIT $4"
            ),
            filter_sql(5, 6)
        );
        sqlx::query(&sql)
            .bind(clean_text(query))
            .bind(candidates)
            .bind(limit(budget))
            .bind(limit(k.saturating_add(candidates.len())))
            .bind(filter.edition)
            .bind(filter.workspace_key())
            .fetch_all(&self.pool)
            .await
            .map_err(db)?
            .iter()
            .map(scored_chunk_from)
            .collect()
    }

    async fn backend_similarities(
        &self,
        ids: &[i64],
        embedding: &[f32],
        model: &str,
    ) -> StoreResult<Vec<(i64, f64)>> {
        let dims = i32::try_from(embedding.len()).unwrap_or(i32::MAX);
        let rows: Vec<(i64, f64)> = sqlx::query_as(
            "SELECT chunk_id, 1 - (embedding <=> $1) AS score FROM chunk_embeddings \
             WHERE chunk_id = ANY($2) AND model = $3 AND dims = $4",
        )
        .bind(pgvector::Vector::from(embedding.to_vec()))
        .bind(ids)
        .bind(model)
        .bind(dims)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        Ok(rows)
    }

    async fn backend_search_vector(
        &self,
        embedding: &[f32],
        model: &str,
        filter: &ChunkFilter,
        k: usize,
    ) -> StoreResult<Vec<ScoredChunk>> {
        let n = embedding.len();
        // The index's queries repeat its expression and its `dims = N` predicate as a
        // literal so the planner can use HNSW; `n` is a length, never user text.
        let distance = format!("e.embedding::vector({n}) <=> $1::vector({n})");
        let mut tx = self.pool.begin().await.map_err(db)?;
        if n == INDEXED_DIMS {
            // Nearest neighbours first, from the index alone, then the joins and filters on
            // those few rows: with the joins in one query the planner may misjudge the
            // filters as selective and compare the question with every stored vector
            // (0.3 s at 100k). Twice `k` neighbours are fetched so that filtered rows leave
            // enough (the iterative scan goes past `ef_search` for them); when they do not,
            // the exact query below runs instead.
            let ef = self.ef_search.load(std::sync::atomic::Ordering::Relaxed);
            let wide = k.saturating_mul(2).max(1);
            set_index_scan(&mut tx, ef).await?;
            // The index finds the neighbours by their half-precision copies; their scores and
            // their order come from the full vectors, computed for those rows alone.
            let sql = format!(
                concat!(
                    "WITH nn AS MATERIALIZED ( \
                         SELECT e.chunk_id, {exact} AS dist FROM chunk_embeddings e \
                         WHERE e.model = $2 AND e.dims = {n} ORDER BY {index} LIMIT $6 \
                     ) SELECT ",
                    chunk_cols!(),
                    ", 1 - nn.dist AS score FROM nn JOIN chunks c ON c.id = nn.chunk_id \
                     JOIN documents d ON d.id = c.document_id \
                     WHERE {filter} ORDER BY nn.dist, c.id LIMIT $5"
                ),
                exact = EXACT_DISTANCE,
                index = INDEX_DISTANCE,
                n = n,
                filter = filter_sql(3, 4)
            );
            let rows = sqlx::query(&sql)
                .bind(pgvector::Vector::from(embedding.to_vec()))
                .bind(model)
                .bind(filter.edition)
                .bind(filter.workspace_key())
                .bind(limit(k))
                .bind(limit(wide))
                .fetch_all(&mut *tx)
                .await
                .map_err(db)?;
            let fetched: i64 = if rows.len() < k {
                sqlx::query_scalar(&format!(
                    "SELECT count(*) FROM (SELECT 1 FROM chunk_embeddings e \
                     WHERE e.model = $2 AND e.dims = {n} ORDER BY {INDEX_DISTANCE} LIMIT $3) x"
                ))
                .bind(pgvector::Vector::from(embedding.to_vec()))
                .bind(model)
                .bind(limit(wide))
                .fetch_one(&mut *tx)
                .await
                .map_err(db)?
            } else {
                0
            };
            if rows.len() >= k || fetched < limit(wide) {
                tx.commit().await.map_err(db)?;
                return rows.iter().map(scored_chunk_from).collect();
            }
        }
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
        let rows = sqlx::query(&sql)
            .bind(pgvector::Vector::from(embedding.to_vec()))
            .bind(model)
            .bind(filter.edition)
            .bind(filter.workspace_key())
            .bind(limit(k))
            .fetch_all(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        rows.iter().map(scored_chunk_from).collect()
    }
}

/// Sets the HNSW candidate list of the transaction's index scans, with pgvector 0.8's
/// iterative scan so a scan asked for more rows than the list holds keeps going (the caller
/// sorts what it gets).
async fn set_index_scan(
    tx: &mut Transaction<'static, Postgres>,
    ef_search: usize,
) -> StoreResult<()> {
    sqlx::query(
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), \
         set_config('hnsw.ef_search', $1, true)",
    )
    .bind(ef_search.clamp(1, EF_SEARCH_MAX).to_string())
    .execute(&mut **tx)
    .await
    .map_err(db)?;
    Ok(())
}

/// The `TUNING_NEIGHBOURS` nearest vectors of `model` to `query`, through the HNSW index as
/// the search's first step reads it (on a transaction whose scan settings are set), or by
/// comparing every vector (`exact`).
///
/// The exact query is a different statement, not the same one with index scans turned off: a
/// connection caches a prepared statement's generic plan without regard to planner settings,
/// so after a few exact runs the "approximate" query could run as a sequential scan and
/// measure the index as better than it is.
async fn neighbours<'e>(
    conn: impl sqlx::PgExecutor<'e>,
    query: &[f32],
    model: &str,
    exact: bool,
) -> StoreResult<Vec<i64>> {
    let n = INDEXED_DIMS;
    // Without the index's `::halfvec(384)` casts the ordering cannot come from the index.
    let order = if exact {
        "e.embedding <=> $1::vector"
    } else {
        INDEX_DISTANCE
    };
    sqlx::query_scalar(&format!(
        "SELECT e.chunk_id FROM chunk_embeddings e WHERE e.model = $2 AND e.dims = {n} \
         ORDER BY {order} LIMIT $3"
    ))
    .bind(pgvector::Vector::from(query.to_vec()))
    .bind(model)
    .bind(limit(super::TUNING_NEIGHBOURS))
    .fetch_all(conn)
    .await
    .map_err(db)
}

#[async_trait::async_trait]
impl VectorIndexTuning for PostgresStore {
    fn use_ef_search(&self, ef_search: usize) {
        self.ef_search.store(
            ef_search.clamp(1, EF_SEARCH_MAX),
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    fn ef_search(&self) -> Option<usize> {
        Some(self.ef_search.load(std::sync::atomic::Ordering::Relaxed))
    }

    async fn warm_indexes(&self) -> StoreResult<Option<String>> {
        self.warm().await.map(Some)
    }

    async fn pause_vector_index(&self, dims: usize) -> StoreResult<bool> {
        if dims != INDEXED_DIMS || !self.vector_index_exists().await? {
            return Ok(false);
        }
        sqlx::query(&format!("DROP INDEX IF EXISTS {VECTOR_INDEX}"))
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(true)
    }

    async fn ensure_vector_index(&self) -> StoreResult<bool> {
        if self.vector_index_exists().await? {
            return Ok(false);
        }
        // The definition of migration 0027.
        sqlx::query(&format!(
            "CREATE INDEX IF NOT EXISTS {VECTOR_INDEX} ON chunk_embeddings \
             USING hnsw ((embedding::halfvec({INDEXED_DIMS})) halfvec_cosine_ops) \
             WHERE dims = {INDEXED_DIMS}"
        ))
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(true)
    }

    async fn load_index_tuning(&self, model: &str) -> StoreResult<Option<IndexTuning>> {
        let row: Option<(i32, f64, f64, i32, i64)> = sqlx::query_as(
            "SELECT ef_search, recall, recall_target, queries, vectors FROM hnsw_tuning \
             WHERE model = $1",
        )
        .bind(model)
        .fetch_optional(&self.pool)
        .await
        .map_err(db)?;
        Ok(row.map(|(ef, recall, recall_target, queries, vectors)| {
            let tuning = IndexTuning {
                ef_search: usize::try_from(ef).unwrap_or(EF_SEARCH_DEFAULT),
                recall,
                recall_target,
                queries: usize::try_from(queries).unwrap_or(0),
                vectors,
            };
            self.use_ef_search(tuning.ef_search);
            tuning
        }))
    }

    async fn indexed_vectors(&self, model: &str) -> StoreResult<Option<i64>> {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM chunk_embeddings WHERE model = $1 AND dims = $2",
        )
        .bind(model)
        .bind(INDEXED_DIMS as i32)
        .fetch_one(&self.pool)
        .await
        .map_err(db)?;
        Ok(Some(n))
    }

    async fn tune_index(
        &self,
        model: &str,
        queries: &[Vec<f32>],
        target: f64,
    ) -> StoreResult<Option<IndexTuning>> {
        let queries: Vec<&Vec<f32>> = queries
            .iter()
            .filter(|q| q.len() == INDEXED_DIMS && super::search::CosineQuery::new(q).is_some())
            .collect();
        let vectors = self.indexed_vectors(model).await?.unwrap_or(0);
        if queries.is_empty() || vectors == 0 {
            return Ok(None);
        }
        let mut exact = Vec::with_capacity(queries.len());
        for q in &queries {
            exact.push(neighbours(&self.pool, q, model, true).await?);
        }
        let wanted: usize = exact.iter().map(Vec::len).sum();
        let mut best: Option<IndexTuning> = None;
        for ef in EF_LADDER {
            let mut found = 0usize;
            for (q, truth) in queries.iter().zip(&exact) {
                let mut tx = self.pool.begin().await.map_err(db)?;
                set_index_scan(&mut tx, ef).await?;
                let got = neighbours(&mut *tx, q, model, false).await?;
                tx.commit().await.map_err(db)?;
                found += got.iter().filter(|id| truth.contains(id)).count();
            }
            let recall = found as f64 / wanted.max(1) as f64;
            let tuning = IndexTuning {
                ef_search: ef,
                recall,
                recall_target: target,
                queries: queries.len(),
                vectors,
            };
            let reached = tuning.reached();
            if best.as_ref().is_none_or(|b| recall > b.recall) {
                best = Some(tuning);
            }
            if reached {
                break;
            }
        }
        let Some(tuning) = best else {
            return Ok(None);
        };
        sqlx::query(
            "INSERT INTO hnsw_tuning (model, ef_search, recall, recall_target, queries, vectors) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (model) DO UPDATE SET \
             ef_search = excluded.ef_search, recall = excluded.recall, \
             recall_target = excluded.recall_target, queries = excluded.queries, \
             vectors = excluded.vectors, measured_at = now()",
        )
        .bind(model)
        .bind(tuning.ef_search as i32)
        .bind(tuning.recall)
        .bind(target)
        .bind(i32::try_from(tuning.queries).unwrap_or(i32::MAX))
        .bind(vectors)
        .execute(&self.pool)
        .await
        .map_err(db)?;
        self.use_ef_search(tuning.ef_search);
        Ok(Some(tuning))
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

impl_store!(PostgresStore, Postgres);
super::fence::impl_fence!(PostgresStore, Postgres, super::fence::HOLDS_FENCE_POSTGRES);
super::apply::impl_apply!(PostgresStore, Postgres);
