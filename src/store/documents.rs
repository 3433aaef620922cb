//! Retrieval documents: their chunks and per-model embeddings.

use async_trait::async_trait;

use super::{Chunk, Document, NewChunk, NewDocument};

use super::StoreResult;

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
    /// Replaces all chunks of a document.
    async fn replace_chunks(&self, document_id: i64, chunks: &[NewChunk]) -> StoreResult<Vec<i64>>;
    /// Stores an embedding for a chunk under a model name (one per chunk and model).
    async fn set_embedding(&self, chunk_id: i64, model: &str, embedding: &[f32])
        -> StoreResult<()>;
    /// Chunks of a model that still lack an embedding.
    async fn chunks_missing_embedding(&self, model: &str, limit: usize) -> StoreResult<Vec<Chunk>>;
}

/// Emits `impl DocumentStore` for a backend store type.
macro_rules! impl_documents {
    ($store:ty, $db:ty) => {
        const _: () = {
            use async_trait::async_trait;
            use sqlx::Row as _;

            use $crate::store::common::*;
            use $crate::store::{Chunk, Document, NewChunk, NewDocument, StoreError, StoreResult, DocumentStore};

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

                async fn replace_chunks(&self, document_id: i64, chunks: &[NewChunk]) -> StoreResult<Vec<i64>> {
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
                    // re-ingesting a document only embeds what changed.
                    let mut reusable: std::collections::HashMap<String, Vec<i64>> =
                        std::collections::HashMap::new();
                    for row in sqlx::query(
                        "SELECT id, content_hash FROM chunks WHERE document_id = $1 ORDER BY ord DESC, id DESC",
                    )
                    .bind(document_id)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db)?
                    {
                        let id = row.try_get::<i64, _>("id").map_err(db)?;
                        let hash = row.try_get::<String, _>("content_hash").map_err(db)?;
                        reusable.entry(hash).or_default().push(id);
                    }
                    let mut plan: Vec<Option<i64>> = Vec::with_capacity(chunks.len());
                    for chunk in chunks {
                        plan.push(reusable.get_mut(&chunk.content_hash).and_then(Vec::pop));
                    }
                    for id in reusable.into_values().flatten() {
                        sqlx::query("DELETE FROM chunks WHERE id = $1")
                            .bind(id)
                            .execute(&mut *tx)
                            .await
                            .map_err(db)?;
                    }
                    let mut ids = Vec::with_capacity(chunks.len());
                    for (ord, (chunk, reuse)) in chunks.iter().zip(plan).enumerate() {
                        let ord = i32::try_from(ord).unwrap_or(i32::MAX);
                        let id = match reuse {
                            Some(id) => {
                                sqlx::query(
                                    "UPDATE chunks SET ord = $2, section = $3, edition = $4, page = $5, \
                                     heading = $6, text = $7 WHERE id = $1",
                                )
                                .bind(id)
                                .bind(ord)
                                .bind(clean_opt(&chunk.section))
                                .bind(chunk.edition)
                                .bind(chunk.page)
                                .bind(clean_text(&chunk.heading))
                                .bind(clean_text(&chunk.text))
                                .execute(&mut *tx)
                                .await
                                .map_err(db)?;
                                id
                            }
                            None => sqlx::query_scalar::<_, i64>(
                                "INSERT INTO chunks (document_id, ord, section, edition, page, heading, \
                                 text, content_hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
                            )
                            .bind(document_id)
                            .bind(ord)
                            .bind(clean_opt(&chunk.section))
                            .bind(chunk.edition)
                            .bind(chunk.page)
                            .bind(clean_text(&chunk.heading))
                            .bind(clean_text(&chunk.text))
                            .bind(&chunk.content_hash)
                            .fetch_one(&mut *tx)
                            .await
                            .map_err(db)?,
                        };
                        ids.push(id);
                    }
                    tx.commit().await.map_err(db)?;
                    Ok(ids)
                }

                async fn set_embedding(&self, chunk_id: i64, model: &str, embedding: &[f32]) -> StoreResult<()> {
                    check_embedding(embedding)?;
                    self.backend_set_embedding(chunk_id, model, embedding).await
                }

                async fn chunks_missing_embedding(&self, model: &str, limit_n: usize) -> StoreResult<Vec<Chunk>> {
                    sqlx::query(concat!(
                        "SELECT ",
                        chunk_cols!(),
                        " FROM chunks c JOIN documents d ON d.id = c.document_id \
                         WHERE NOT EXISTS (SELECT 1 FROM chunk_embeddings e \
                         WHERE e.chunk_id = c.id AND e.model = $1) ORDER BY c.id LIMIT $2"
                    ))
                    .bind(model)
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
