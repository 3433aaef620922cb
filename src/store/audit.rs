//! The audit trail: one row per tool call, proposal and resolution.

use async_trait::async_trait;

use super::{AuditEntry, AuditRecord};

use super::StoreResult;

/// The append-only audit trail.
#[async_trait]
pub trait AuditStore: Send + Sync {
    /// Writes an audit row.
    async fn record_audit(&self, entry: &AuditEntry) -> StoreResult<()>;
    /// Audit rows of a session, oldest first.
    async fn audit_for_session(&self, session_id: i64) -> StoreResult<Vec<AuditRecord>>;
}

/// Emits `impl AuditStore` for a backend store type.
macro_rules! impl_audit {
    ($store:ty, $db:ty) => {
        const _: () = {
            use async_trait::async_trait;

            use $crate::store::common::*;
            use $crate::store::{AuditEntry, AuditRecord, StoreResult, AuditStore};

            impl $store {
                /// Inserts an audit row: the one statement both the store method and applied
                /// plans run, so a column added here reaches both.
                pub(crate) fn stmt_insert_audit<'q>(entry: &'q AuditEntry) -> StoreResult<Stmt<'q, $db>> {
                    Ok(sqlx::query(
                        "INSERT INTO tool_audit (session_id, actor, kind, tool, action_id, args, result, \
                        is_error, duration_ms, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                    )
                    .bind(entry.session_id)
                    .bind(&entry.actor)
                    .bind(entry.kind.as_str())
                    .bind(&entry.tool)
                    .bind(&entry.action_id)
                    .bind(JsonText::of(&entry.args)?)
                    .bind(JsonText::of(&entry.result)?)
                    .bind(entry.is_error)
                    .bind(entry.duration_ms)
                    .bind(micros(entry.at)))
                }
            }

            #[async_trait]
            impl AuditStore for $store {
                async fn record_audit(&self, entry: &AuditEntry) -> StoreResult<()> {
                    let missing = |e| {
                        violation(
                            e,
                            None,
                            Some(format!(
                                "session {} does not exist",
                                entry.session_id.unwrap_or_default()
                            )),
                        )
                    };
                    let stmt = <$store>::stmt_insert_audit(entry)?;
                    $crate::store::fence::on_fenced!(self, |ex| stmt
                        .execute(ex)
                        .await
                        .map_err(missing)?);
                    Ok(())
                }

                async fn audit_for_session(&self, session_id: i64) -> StoreResult<Vec<AuditRecord>> {
                    sqlx::query("SELECT * FROM tool_audit WHERE session_id = $1 ORDER BY id")
                        .bind(session_id)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db)?
                        .iter()
                        .map(audit_from)
                        .collect()
                }
            }
        };
    };
}
pub(crate) use impl_audit;
