//! Pending actions: the confirmation gate's rows and their state machine.

use async_trait::async_trait;

use super::{
    ApplyOutcome, ApplyRequest, NewPendingAction, PendingAction, PendingState, WaitingAction,
};
use chrono::{DateTime, Utc};

use super::StoreResult;
use crate::domain::session::SessionKey;

/// Actions waiting for a person's confirmation, and their one-way state changes.
#[async_trait]
pub trait PendingStore: Send + Sync {
    /// Stores a new pending action.
    async fn create_pending(&self, action: &NewPendingAction) -> StoreResult<PendingAction>;
    /// A pending action by id.
    async fn pending(&self, id: &str) -> StoreResult<Option<PendingAction>>;
    /// The session's action still in state `pending`, if any.
    async fn open_pending_for_session(&self, session_id: i64)
        -> StoreResult<Option<PendingAction>>;
    /// Actions still `pending` whose time ran out before `at`, oldest expiry first, at most
    /// `limit`: what the expiry sweep resolves without waiting for a click.
    async fn expired_pending(
        &self,
        at: DateTime<Utc>,
        limit: usize,
    ) -> StoreResult<Vec<PendingAction>>;
    /// Moves an action from `from` to `to` in one conditional update; `None` when it was not
    /// in `from` (already resolved by someone else). This is what makes Confirm idempotent.
    async fn transition_pending(
        &self,
        id: &str,
        from: PendingState,
        to: PendingState,
        by: Option<&str>,
        at: DateTime<Utc>,
    ) -> StoreResult<Option<PendingAction>>;
    /// Records the outcome of an executed (or failed) action.
    async fn set_pending_outcome(&self, id: &str, outcome: &serde_json::Value) -> StoreResult<()>;
    /// Applies the action's stored plan if it is still pending, in one transaction with: the
    /// project's version bump, the action's move to `executed` (or `outdated` when `check`
    /// finds the project changed under the plan; then nothing is applied), and `finish`'s
    /// outcome, history message and audit rows. A crash leaves all of it or none of it.
    async fn apply_pending(&self, req: &ApplyRequest<'_>) -> StoreResult<ApplyOutcome>;
    /// Remembers the platform message that shows the action (to edit it later).
    async fn set_pending_message_ref(&self, id: &str, message_ref: &str) -> StoreResult<()>;
    /// The latest `limit` actions proposed on a project, newest first, each with the thread
    /// it was proposed in: the project's change history people read (`audit`).
    async fn project_actions(
        &self,
        project_id: i64,
        limit: usize,
    ) -> StoreResult<Vec<(PendingAction, SessionKey)>>;
    /// Actions still `pending` and not expired at `at` in threads of `workspace`, newest
    /// first, at most `limit`, each with its thread.
    async fn waiting_in_workspace(
        &self,
        workspace: &crate::domain::workspace::Workspace,
        at: DateTime<Utc>,
        limit: usize,
    ) -> StoreResult<Vec<WaitingAction>>;
}

/// Emits `impl PendingStore` for a backend store type.
macro_rules! impl_pending {
    ($store:ty, $db:ty) => {
        const _: () = {
            use async_trait::async_trait;
            use chrono::{DateTime, Utc};

            use $crate::store::common::*;
            use $crate::domain::session::SessionKey;
            use $crate::store::{NewPendingAction, PendingAction, PendingState, StoreError, StoreResult, PendingStore, WaitingAction};

            #[async_trait]
            impl PendingStore for $store {
                async fn create_pending(&self, action: &NewPendingAction) -> StoreResult<PendingAction> {
                    let res = sqlx::query(
                        "INSERT INTO pending_actions (id, session_id, state, rule, calls, prior_results, \
                         items, created_at, expires_at, project_id, planned_version, origin) \
                         VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *",
                    )
                    .bind(&action.id)
                    .bind(action.session_id)
                    .bind(db_json(&action.rule)?)
                    .bind(db_json(&action.calls)?)
                    .bind(db_json(&action.prior_results)?)
                    .bind(db_json(&action.items)?)
                    .bind(micros(action.created_at))
                    .bind(micros(action.expires_at))
                    .bind(action.project_id)
                    .bind(action.planned_version)
                    .bind(action.origin.as_str());
                    // A proposal is one of its turn's writes: fenced on the turn's lease.
                    let res = match self.begin_fenced().await? {
                        Some(mut tx) => match res.fetch_one(&mut *tx).await {
                            Ok(row) => {
                                tx.commit().await.map_err(db)?;
                                Ok(row)
                            }
                            Err(e) => Err(e),
                        },
                        None => res.fetch_one(&self.pool).await,
                    };
                    match res {
                        Ok(row) => pending_from(&row),
                        Err(e) if is_unique(&e) => {
                            let taken = sqlx::query_scalar::<_, i64>(
                                "SELECT COUNT(*) FROM pending_actions WHERE id = $1",
                            )
                            .bind(&action.id)
                            .fetch_one(&self.pool)
                            .await
                            .map_err(db)?;
                            Err(StoreError::Conflict(if taken > 0 {
                                format!("pending action {} already exists", action.id)
                            } else {
                                "this conversation already has an action waiting for confirmation"
                                    .to_string()
                            }))
                        }
                        Err(e) => Err(violation(
                            e,
                            None,
                            Some(format!("session {} does not exist", action.session_id)),
                        )),
                    }
                }

                async fn pending(&self, id: &str) -> StoreResult<Option<PendingAction>> {
                    sqlx::query("SELECT * FROM pending_actions WHERE id = $1")
                        .bind(id)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db)?
                        .map(|r| pending_from(&r))
                        .transpose()
                }

                async fn expired_pending(
                    &self,
                    at: DateTime<Utc>,
                    limit_to: usize,
                ) -> StoreResult<Vec<PendingAction>> {
                    sqlx::query(
                        "SELECT * FROM pending_actions WHERE state = 'pending' AND expires_at < $1 \
                         ORDER BY expires_at LIMIT $2",
                    )
                    .bind(micros(at))
                    .bind(limit(limit_to))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db)?
                    .iter()
                    .map(pending_from)
                    .collect()
                }

                async fn project_actions(
                    &self,
                    project_id: i64,
                    limit_to: usize,
                ) -> StoreResult<Vec<(PendingAction, SessionKey)>> {
                    sqlx::query(
                        "SELECT p.*, s.platform AS s_platform, s.workspace AS s_workspace, \
                         s.channel AS s_channel, s.thread AS s_thread \
                         FROM pending_actions p JOIN sessions s ON s.id = p.session_id \
                         WHERE p.project_id = $1 ORDER BY p.created_at DESC, p.id DESC LIMIT $2",
                    )
                    .bind(project_id)
                    .bind(limit(limit_to))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db)?
                    .iter()
                    .map(|r| {
                        let key = SessionKey {
                            platform: r.string("s_platform")?,
                            workspace: r.string("s_workspace")?,
                            channel: r.string("s_channel")?,
                            thread: r.string("s_thread")?,
                        };
                        Ok((pending_from(r)?, key))
                    })
                    .collect()
                }

                async fn open_pending_for_session(
                    &self,
                    session_id: i64,
                ) -> StoreResult<Option<PendingAction>> {
                    sqlx::query(
                        "SELECT * FROM pending_actions WHERE session_id = $1 AND state = 'pending'",
                    )
                    .bind(session_id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)?
                    .map(|r| pending_from(&r))
                    .transpose()
                }

                async fn transition_pending(
                    &self,
                    id: &str,
                    from: PendingState,
                    to: PendingState,
                    by: Option<&str>,
                    at: DateTime<Utc>,
                ) -> StoreResult<Option<PendingAction>> {
                    // One conditional statement: of any number of racing callers exactly one
                    // matches `state = from`. The first resolution's who/when is kept.
                    let query = sqlx::query(
                        "UPDATE pending_actions SET state = $3, \
                         resolved_by = COALESCE(resolved_by, $4), \
                         resolved_at = COALESCE(resolved_at, $5) \
                         WHERE id = $1 AND state = $2 RETURNING *",
                    )
                    .bind(id)
                    .bind(from.as_str())
                    .bind(to.as_str())
                    .bind(by)
                    .bind(micros(at));
                    let conflict = |e| {
                        violation(
                            e,
                            Some("this conversation already has an action waiting for confirmation".into()),
                            None,
                        )
                    };
                    // A proposal's state change made by a turn is one of its writes.
                    let row = $crate::store::fence::on_fenced!(self, |ex| query
                        .fetch_optional(ex)
                        .await
                        .map_err(conflict)?);
                    row.map(|r| pending_from(&r)).transpose()
                }

                async fn set_pending_outcome(&self, id: &str, outcome: &serde_json::Value) -> StoreResult<()> {
                    let query = sqlx::query("UPDATE pending_actions SET outcome = $2 WHERE id = $1")
                        .bind(id)
                        .bind(db_json(outcome)?);
                    let done = $crate::store::fence::on_fenced!(self, |ex| query
                        .execute(ex)
                        .await
                        .map_err(db)?);
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!("pending action {id} does not exist")));
                    }
                    Ok(())
                }

                async fn apply_pending(
                    &self,
                    req: &$crate::store::ApplyRequest<'_>,
                ) -> StoreResult<$crate::store::ApplyOutcome> {
                    self.apply_plan(req).await
                }

                async fn set_pending_message_ref(&self, id: &str, message_ref: &str) -> StoreResult<()> {
                    let query = sqlx::query("UPDATE pending_actions SET message_ref = $2 WHERE id = $1")
                        .bind(id)
                        .bind(message_ref);
                    let done = $crate::store::fence::on_fenced!(self, |ex| query
                        .execute(ex)
                        .await
                        .map_err(db)?);
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!("pending action {id} does not exist")));
                    }
                    Ok(())
                }

                async fn waiting_in_workspace(
                    &self,
                    workspace: &$crate::domain::workspace::Workspace,
                    at: DateTime<Utc>,
                    limit_to: usize,
                ) -> StoreResult<Vec<WaitingAction>> {
                    sqlx::query(
                        "SELECT p.*, s.platform AS s_platform, s.workspace AS s_workspace, \
                         s.channel AS s_channel, s.thread AS s_thread \
                         FROM pending_actions p JOIN sessions s ON s.id = p.session_id \
                         WHERE p.state = 'pending' AND p.expires_at > $3 \
                         AND s.platform = $1 AND s.workspace = $2 \
                         ORDER BY p.created_at DESC, p.id LIMIT $4",
                    )
                    .bind(&workspace.platform)
                    .bind(&workspace.id)
                    .bind(micros(at))
                    .bind(limit(limit_to))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db)?
                    .iter()
                    .map(|r| {
                        Ok(WaitingAction {
                            action: pending_from(r)?,
                            key: $crate::domain::session::SessionKey::new(
                                r.string("s_platform")?,
                                r.string("s_workspace")?,
                                r.string("s_channel")?,
                                r.string("s_thread")?,
                            ),
                        })
                    })
                    .collect()
                }
            }
        };
    };
}
pub(crate) use impl_pending;
