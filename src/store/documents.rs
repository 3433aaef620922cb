//! Retrieval documents: their chunks and per-model embeddings.

use async_trait::async_trait;

use super::{Chunk, Document, NewChunk, NewDocument};

use super::StoreResult;

/// Chunks per insert statement and transaction when a document's chunks are stored (eight
/// parameters a row keeps a statement far below both databases' parameter limits).
pub const CHUNK_BATCH: usize = 1000;

/// Documents ingested for retrieval, their chunks and embeddings.
#[async_trait]
pub trait DocumentStore: Send + Sync {
    /// Inserts or updates a document by (source, workspace); returns it and whether its hash changed.
    async fn upsert_document(&self, doc: &NewDocument) -> StoreResult<(Document, bool)>;
    /// Files a document under a jurisdiction's local amendments ("WA", "WA/Seattle"), or
    /// clears that with `None`.
    async fn set_document_jurisdiction(
        &self,
        document_id: i64,
        jurisdiction: Option<&str>,
    ) -> StoreResult<()>;
    /// The amendment documents `workspace` can see: (source, jurisdiction).
    async fn amendment_documents(
        &self,
        workspace: Option<&crate::domain::workspace::Workspace>,
    ) -> StoreResult<Vec<(String, String)>>;
    /// Replaces all chunks of a document; returns their ids in order.
    async fn replace_chunks(&self, document_id: i64, chunks: &[NewChunk]) -> StoreResult<Vec<i64>> {
        self.replace_chunks_in_batches(document_id, chunks, &|_| {})
            .await
    }
    /// Replaces all chunks of a document in committed batches of [`CHUNK_BATCH`] (one
    /// multi-row insert each), calling `progress` with the number stored so far. Rows whose
    /// text is unchanged are kept with their embeddings, so a replacement that stopped half-way
    /// resumes after its last committed batch. Readers may see a partly replaced document
    /// while it runs.
    async fn replace_chunks_in_batches(
        &self,
        document_id: i64,
        chunks: &[NewChunk],
        progress: &(dyn Fn(usize) + Send + Sync),
    ) -> StoreResult<Vec<i64>>;
    /// The content hash of a document, if it is stored.
    async fn document_hash(
        &self,
        source: &str,
        workspace: Option<&crate::domain::workspace::Workspace>,
    ) -> StoreResult<Option<String>>;
    /// The passages' change counter and the counter value at which every passage last had a
    /// vector of `model` (`None`: never).
    async fn embedding_generation(&self, model: &str) -> StoreResult<(i64, Option<i64>)>;
    /// Records that every passage as of change counter `generation` has a vector of `model`.
    async fn mark_embedded(&self, model: &str, generation: i64) -> StoreResult<()>;
    /// Stores embeddings of chunks under a model name (one per chunk and model; a chunk given
    /// twice keeps its last). One statement per [`CHUNK_BATCH`] rows: a pass over a large
    /// library commits once per batch, not once per vector.
    async fn set_embeddings(&self, model: &str, rows: &[(i64, &[f32])]) -> StoreResult<()>;
    /// Stores one chunk's embedding ([`DocumentStore::set_embeddings`] with one row).
    async fn set_embedding(
        &self,
        chunk_id: i64,
        model: &str,
        embedding: &[f32],
    ) -> StoreResult<()> {
        self.set_embeddings(model, &[(chunk_id, embedding)]).await
    }
    /// How many chunks lack an embedding of `model`.
    async fn count_missing_embeddings(&self, model: &str) -> StoreResult<i64>;
    /// Chunks with an id above `after_id`, in id order, that still lack an embedding of `model`.
    /// A pass gives the last id it saw, so it never reads the passages it already embedded
    /// again (reading from the start each time made a pass over a million passages quadratic).
    async fn chunks_missing_embedding(
        &self,
        model: &str,
        after_id: i64,
        limit: usize,
    ) -> StoreResult<Vec<Chunk>>;
}

/// Emits `impl DocumentStore` for a backend store type.
macro_rules! impl_documents {
    ($store:ty, $db:ty) => {
        const _: () = {
            use async_trait::async_trait;
            use sqlx::Row as _;

            use $crate::store::common::*;
            use $crate::store::{Chunk, Document, NewChunk, NewDocument, StoreError, StoreResult, DocumentStore};
            use $crate::store::documents::CHUNK_BATCH;

            /// A stored chunk of the document being replaced.
            struct ExistingChunk {
                id: i64,
                ord: i32,
                section: Option<String>,
                edition: Option<i32>,
                page: Option<i32>,
                heading: String,
            }

            /// Marks the passages changed, so the next embedding check looks for new ones.
            async fn bump_generation(tx: &mut sqlx::Transaction<'static, $db>) -> StoreResult<()> {
                sqlx::query("UPDATE corpus_generation SET generation = generation + 1")
                    .execute(&mut **tx)
                    .await
                    .map_err(db)?;
                Ok(())
            }

            #[async_trait]
            impl DocumentStore for $store {
                async fn upsert_document(&self, doc: &NewDocument) -> StoreResult<(Document, bool)> {
                    // A racing insert of the same document loses on the unique index; the retry
                    // then finds and updates the winner's row.
                    let mut attempt = 0;
                    loop {
                        attempt += 1;
                        let mut tx = self.begin_write().await.map_err(db)?;
                        let existing = sqlx::query(&format!(
                            "SELECT id, content_hash FROM documents \
                             WHERE source = $1 AND workspace IS NOT DISTINCT FROM $2{}",
                            <$store>::FOR_UPDATE
                        ))
                        .bind(&doc.source)
                        .bind(doc.workspace.as_ref().map(ToString::to_string))
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(db)?;
                        let res = match existing {
                            Some(row) => {
                                let id = row.try_get::<i64, _>("id").map_err(db)?;
                                let old_hash = row.try_get::<String, _>("content_hash").map_err(db)?;
                                sqlx::query(
                                    "UPDATE documents SET title = $2, content_hash = $3, updated_at = $4 \
                                     WHERE id = $1 RETURNING *",
                                )
                                .bind(id)
                                .bind(clean_text(&doc.title))
                                .bind(&doc.content_hash)
                                .bind(now())
                                .fetch_one(&mut *tx)
                                .await
                                .map(|r| (r, old_hash != doc.content_hash))
                            }
                            None => sqlx::query(
                                "INSERT INTO documents (source, title, workspace, content_hash, \
                                 created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5) RETURNING *",
                            )
                            .bind(&doc.source)
                            .bind(clean_text(&doc.title))
                            .bind(doc.workspace.as_ref().map(ToString::to_string))
                            .bind(&doc.content_hash)
                            .bind(now())
                            .fetch_one(&mut *tx)
                            .await
                            .map(|r| (r, true)),
                        };
                        match res {
                            Ok((row, changed)) => {
                                let document = document_from(&row)?;
                                tx.commit().await.map_err(db)?;
                                return Ok((document, changed));
                            }
                            Err(e) if is_unique(&e) && attempt < 3 => continue,
                            Err(e) => {
                                return Err(violation(
                                    e,
                                    Some(format!("document '{}' already exists", doc.source)),
                                    None,
                                ))
                            }
                        }
                    }
                }

                async fn set_document_jurisdiction(
                    &self,
                    document_id: i64,
                    jurisdiction: Option<&str>,
                ) -> StoreResult<()> {
                    let done = sqlx::query("UPDATE documents SET jurisdiction = $2 WHERE id = $1")
                        .bind(document_id)
                        .bind(jurisdiction)
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!(
                            "document {document_id} does not exist"
                        )));
                    }
                    Ok(())
                }

                async fn amendment_documents(
                    &self,
                    workspace: Option<&$crate::domain::workspace::Workspace>,
                ) -> StoreResult<Vec<(String, String)>> {
                    let rows = sqlx::query(
                        "SELECT source, jurisdiction FROM documents \
                         WHERE jurisdiction IS NOT NULL AND (workspace IS NULL OR workspace = $1) \
                         ORDER BY source",
                    )
                    .bind(workspace.map(ToString::to_string))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db)?;
                    rows.iter()
                        .map(|r| Ok((r.string("source")?, r.string("jurisdiction")?)))
                        .collect()
                }

                async fn replace_chunks_in_batches(
                    &self,
                    document_id: i64,
                    chunks: &[NewChunk],
                    progress: &(dyn Fn(usize) + Send + Sync),
                ) -> StoreResult<Vec<i64>> {
                    // First transaction: drop the rows the new version does not reuse.
                    let mut tx = self.begin_write().await.map_err(db)?;
                    let exists = sqlx::query(&format!(
                        "SELECT id FROM documents WHERE id = $1{}",
                        <$store>::FOR_UPDATE
                    ))
                    .bind(document_id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db)?;
                    if exists.is_none() {
                        return Err(StoreError::NotFound(format!(
                            "document {document_id} does not exist"
                        )));
                    }
                    // Chunks whose text is unchanged keep their row (and so their embeddings):
                    // re-ingesting a document only embeds what changed, and a run that stopped
                    // half-way finds its committed batches here and goes on after them.
                    let mut reusable: std::collections::HashMap<String, Vec<ExistingChunk>> =
                        std::collections::HashMap::new();
                    for row in sqlx::query(
                        "SELECT id, content_hash, ord, section, edition, page, heading FROM chunks \
                         WHERE document_id = $1 ORDER BY ord DESC, id DESC",
                    )
                    .bind(document_id)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db)?
                    {
                        let hash = row.try_get::<String, _>("content_hash").map_err(db)?;
                        reusable.entry(hash).or_default().push(ExistingChunk {
                            id: row.try_get("id").map_err(db)?,
                            ord: row.try_get("ord").map_err(db)?,
                            section: row.try_get("section").map_err(db)?,
                            edition: row.try_get("edition").map_err(db)?,
                            page: row.try_get("page").map_err(db)?,
                            heading: row.try_get("heading").map_err(db)?,
                        });
                    }
                    let mut plan: Vec<Option<ExistingChunk>> = Vec::with_capacity(chunks.len());
                    for chunk in chunks {
                        plan.push(reusable.get_mut(&chunk.content_hash).and_then(Vec::pop));
                    }
                    let unused: Vec<i64> = reusable.into_values().flatten().map(|c| c.id).collect();
                    for ids in unused.chunks(CHUNK_BATCH) {
                        let mut q = sqlx::QueryBuilder::<$db>::new("DELETE FROM chunks WHERE id IN (");
                        let mut list = q.separated(", ");
                        for id in ids {
                            list.push_bind(*id);
                        }
                        q.push(")");
                        q.build().execute(&mut *tx).await.map_err(db)?;
                    }
                    if !unused.is_empty() {
                        bump_generation(&mut tx).await?;
                    }
                    tx.commit().await.map_err(db)?;

                    // Then the new version, one committed batch at a time: one multi-row
                    // INSERT per batch, so the term statistics are updated once per batch.
                    let mut ids = Vec::with_capacity(chunks.len());
                    for (start, batch) in (0..chunks.len())
                        .step_by(CHUNK_BATCH)
                        .zip(chunks.chunks(CHUNK_BATCH).zip(plan.chunks(CHUNK_BATCH)))
                    {
                        let mut tx = self.begin_write().await.map_err(db)?;
                        let mut batch_ids: Vec<Option<i64>> = vec![None; batch.0.len()];
                        let mut fresh = Vec::new();
                        let mut changed = false;
                        for (i, (chunk, reuse)) in batch.0.iter().zip(batch.1).enumerate() {
                            let ord = i32::try_from(start + i).unwrap_or(i32::MAX);
                            let Some(old) = reuse else {
                                fresh.push((ord, chunk));
                                continue;
                            };
                            batch_ids[i] = Some(old.id);
                            if old.ord == ord
                                && old.section.as_deref() == chunk.section.as_deref()
                                && old.edition == chunk.edition
                                && old.page == chunk.page
                                && old.heading == chunk.heading
                            {
                                continue;
                            }
                            changed = true;
                            sqlx::query(
                                "UPDATE chunks SET ord = $2, section = $3, edition = $4, page = $5, \
                                 heading = $6, text = $7 WHERE id = $1",
                            )
                            .bind(old.id)
                            .bind(ord)
                            .bind(clean_opt(&chunk.section))
                            .bind(chunk.edition)
                            .bind(chunk.page)
                            .bind(clean_text(&chunk.heading))
                            .bind(clean_text(&chunk.text))
                            .execute(&mut *tx)
                            .await
                            .map_err(db)?;
                        }
                        if !fresh.is_empty() {
                            changed = true;
                            let mut q = sqlx::QueryBuilder::<$db>::new(
                                "INSERT INTO chunks (document_id, ord, section, edition, page, heading, \
                                 text, content_hash) ",
                            );
                            q.push_values(&fresh, |mut row, (ord, chunk)| {
                                row.push_bind(document_id)
                                    .push_bind(*ord)
                                    .push_bind(clean_opt(&chunk.section))
                                    .push_bind(chunk.edition)
                                    .push_bind(chunk.page)
                                    .push_bind(clean_text(&chunk.heading))
                                    .push_bind(clean_text(&chunk.text))
                                    .push_bind(&chunk.content_hash);
                            });
                            q.push(" RETURNING id, ord");
                            for row in q.build().fetch_all(&mut *tx).await.map_err(db)? {
                                let id: i64 = row.try_get("id").map_err(db)?;
                                let ord: i32 = row.try_get("ord").map_err(db)?;
                                let slot = usize::try_from(ord)
                                    .ok()
                                    .and_then(|o| o.checked_sub(start))
                                    .and_then(|i| batch_ids.get_mut(i))
                                    .ok_or_else(|| StoreError::Corrupt(format!("inserted chunk {id} has ord {ord}")))?;
                                *slot = Some(id);
                            }
                        }
                        if changed {
                            bump_generation(&mut tx).await?;
                        }
                        tx.commit().await.map_err(db)?;
                        for id in batch_ids {
                            ids.push(id.ok_or_else(|| StoreError::Corrupt("a chunk was not stored".into()))?);
                        }
                        $crate::store::failpoint::hit("ingest_after_batch");
                        progress(ids.len());
                    }
                    Ok(ids)
                }

                async fn document_hash(
                    &self,
                    source: &str,
                    workspace: Option<&$crate::domain::workspace::Workspace>,
                ) -> StoreResult<Option<String>> {
                    sqlx::query_scalar(
                        "SELECT content_hash FROM documents \
                         WHERE source = $1 AND workspace IS NOT DISTINCT FROM $2",
                    )
                    .bind(source)
                    .bind(workspace.map(ToString::to_string))
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)
                }

                async fn embedding_generation(&self, model: &str) -> StoreResult<(i64, Option<i64>)> {
                    let row = sqlx::query(
                        "SELECT g.generation AS corpus, \
                         (SELECT e.generation FROM embedded_generation e WHERE e.model = $1) AS embedded \
                         FROM corpus_generation g",
                    )
                    .bind(model)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db)?;
                    Ok((
                        row.try_get("corpus").map_err(db)?,
                        row.try_get("embedded").map_err(db)?,
                    ))
                }

                async fn mark_embedded(&self, model: &str, generation: i64) -> StoreResult<()> {
                    sqlx::query(
                        "INSERT INTO embedded_generation (model, generation) VALUES ($1, $2) \
                         ON CONFLICT (model) DO UPDATE SET generation = excluded.generation",
                    )
                    .bind(model)
                    .bind(generation)
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    Ok(())
                }

                async fn set_embeddings(&self, model: &str, rows: &[(i64, &[f32])]) -> StoreResult<()> {
                    // Postgres refuses a statement that updates one row twice: the last wins.
                    let mut seen = std::collections::HashSet::new();
                    let mut rows: Vec<(i64, &[f32])> =
                        rows.iter().rev().filter(|(id, _)| seen.insert(*id)).copied().collect();
                    rows.reverse();
                    for (_, v) in &rows {
                        check_embedding(v)?;
                    }
                    for batch in rows.chunks(CHUNK_BATCH) {
                        let mut q = sqlx::QueryBuilder::<$db>::new(
                            "INSERT INTO chunk_embeddings (chunk_id, model, dims, embedding) ",
                        );
                        q.push_values(batch, |mut row, (id, v)| {
                            row.push_bind(*id)
                                .push_bind(model)
                                .push_bind(i32::try_from(v.len()).unwrap_or(i32::MAX))
                                .push_bind(<$store>::embedding_param(v));
                        });
                        q.push(
                            " ON CONFLICT (chunk_id, model) \
                             DO UPDATE SET dims = excluded.dims, embedding = excluded.embedding",
                        );
                        q.build().execute(&self.pool).await.map_err(|e| {
                            let missing = match batch {
                                [(id, _)] => format!("chunk {id} does not exist"),
                                _ => "a chunk of the batch does not exist".to_string(),
                            };
                            violation(e, None, Some(missing))
                        })?;
                    }
                    Ok(())
                }

                async fn count_missing_embeddings(&self, model: &str) -> StoreResult<i64> {
                    sqlx::query_scalar(
                        "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM \
                         chunk_embeddings e WHERE e.chunk_id = c.id AND e.model = $1)",
                    )
                    .bind(model)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db)
                }

                async fn chunks_missing_embedding(
                    &self,
                    model: &str,
                    after_id: i64,
                    limit_n: usize,
                ) -> StoreResult<Vec<Chunk>> {
                    sqlx::query(concat!(
                        "SELECT ",
                        chunk_cols!(),
                        " FROM chunks c JOIN documents d ON d.id = c.document_id \
                         WHERE c.id > $2 AND NOT EXISTS (SELECT 1 FROM chunk_embeddings e \
                         WHERE e.chunk_id = c.id AND e.model = $1) ORDER BY c.id LIMIT $3"
                    ))
                    .bind(model)
                    .bind(after_id)
                    .bind(limit(limit_n))
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
pub(crate) use impl_documents;
