//! The audit trail: one row per tool call, proposal and resolution.

use async_trait::async_trait;

use super::{AppliedChange, AuditEntry, AuditRecord};
use crate::domain::workspace::Workspace;

use super::StoreResult;

/// The append-only audit trail.
#[async_trait]
pub trait AuditStore: Send + Sync {
    /// Writes an audit row.
    async fn record_audit(&self, entry: &AuditEntry) -> StoreResult<()>;
    /// Audit rows of a session, oldest first.
    async fn audit_for_session(&self, session_id: i64) -> StoreResult<Vec<AuditRecord>>;
    /// The changes last confirmed and applied to projects of `workspace`, newest first, at
    /// most `limit`: the trail's confirmations whose action was executed.
    async fn recent_applied(
        &self,
        workspace: &Workspace,
        limit: usize,
    ) -> StoreResult<Vec<AppliedChange>>;
}

/// Emits `impl AuditStore` for a backend store type.
macro_rules! impl_audit {
    ($store:ty, $db:ty) => {
        const _: () = {
            use async_trait::async_trait;

            use $crate::store::common::*;
            use $crate::store::{AppliedChange, AuditEntry, AuditRecord, StoreResult, AuditStore};

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

                async fn recent_applied(
                    &self,
                    workspace: &$crate::domain::workspace::Workspace,
                    limit_to: usize,
                ) -> StoreResult<Vec<AppliedChange>> {
                    sqlx::query(
                        "SELECT a.actor, a.at, p.id AS action_id, p.project_id, p.items, \
                         s.platform, s.workspace, s.channel, s.thread \
                         FROM tool_audit a \
                         JOIN pending_actions p ON p.id = a.action_id \
                         JOIN projects pr ON pr.id = p.project_id \
                         JOIN sessions s ON s.id = p.session_id \
                         WHERE a.kind = 'confirmed' AND p.state = 'executed' \
                         AND pr.platform = $1 AND pr.workspace = $2 \
                         ORDER BY a.id DESC LIMIT $3",
                    )
                    .bind(&workspace.platform)
                    .bind(&workspace.id)
                    .bind(limit(limit_to))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db)?
                    .iter()
                    .map(|r| {
                        Ok(AppliedChange {
                            action_id: r.string("action_id")?,
                            project_id: r.i64("project_id")?,
                            by: r.string("actor")?,
                            at: r.ts("at")?,
                            items: r.json("items")?,
                            key: $crate::domain::session::SessionKey::new(
                                r.string("platform")?,
                                r.string("workspace")?,
                                r.string("channel")?,
                                r.string("thread")?,
                            ),
                        })
                    })
                    .collect()
                }
            }
        };
    };
}
pub(crate) use impl_audit;
