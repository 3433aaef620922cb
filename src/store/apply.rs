//! Applying a confirmed plan: one transaction holds the plan's rows, the project's version
//! bump, the action's state change, the results the model will see and the audit rows.
//!
//! The action row is read (and on Postgres locked) first, so of any number of racing
//! confirmations exactly one finds it pending; the project row is locked next, so two plans
//! on one project are checked and applied one after the other.
//!
//! Every row statement a plan runs is the aggregate's own (`stmt_*` in `equipment.rs`,
//! `projects.rs`, `sessions.rs`, `audit.rs`): this file holds only the transaction around them.

/// Emits the inherent `apply_plan` for a backend (`$db` is its sqlx
/// database type).
macro_rules! impl_apply {
    ($store:ty, $db:ty) => {
        const _: () = {
            use sqlx::Transaction;

            use $crate::project::plan::{Change, Written, FIRST_PLACEHOLDER};
            use $crate::store::common::*;
            use $crate::store::{
                Applied, ApplyOutcome, ApplyRequest, AuditEntry, NewMessage, PendingState,
                StoreError, StoreResult,
            };

            type Tx = Transaction<'static, $db>;

            /// A placeholder id of the plan resolved to the row it became.
            fn real(ids: &std::collections::HashMap<i64, i64>, id: i64) -> StoreResult<i64> {
                if id >= 0 {
                    return Ok(id);
                }
                ids.get(&id).copied().ok_or_else(|| {
                    StoreError::Corrupt(format!("the plan refers to row {id}, which it never inserts"))
                })
            }

            impl $store {
                /// See [`Store::apply_pending`](crate::store::Store::apply_pending).
                pub(crate) async fn apply_plan(
                    &self,
                    req: &ApplyRequest<'_>,
                ) -> StoreResult<ApplyOutcome> {
                    let mut tx = self.begin_write().await.map_err(db)?;
                    // A confirmation applied by a turn is one of its writes: fenced on its
                    // thread's lease.
                    if let Some(fence) = $crate::store::fence::current() {
                        <$store>::check_fence(&mut tx, &fence).await?;
                    }
                    let Some(row) = sqlx::query(&format!(
                        "SELECT * FROM pending_actions WHERE id = $1{}",
                        <$store>::FOR_UPDATE
                    ))
                    .bind(req.action_id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db)?
                    else {
                        return Ok(ApplyOutcome::Missing);
                    };
                    let action = pending_from(&row)?;
                    if action.state != PendingState::Pending {
                        return Ok(ApplyOutcome::NotPending(action));
                    }

                    let applied = match Self::check_and_write(&mut tx, &action, req).await? {
                        Ok(written) => Applied::Written(written),
                        Err(problems) => Applied::Outdated(problems),
                    };
                    let finish = (req.finish)(&action, &applied);
                    let to = match applied {
                        Applied::Written(_) => PendingState::Executed,
                        Applied::Outdated(_) => PendingState::Outdated,
                    };
                    let row = sqlx::query(
                        "UPDATE pending_actions SET state = $2, resolved_by = $3, resolved_at = $4, \
                         outcome = $5 WHERE id = $1 AND state = 'pending' RETURNING *",
                    )
                    .bind(req.action_id)
                    .bind(to.as_str())
                    .bind(req.by)
                    .bind(micros(req.at))
                    .bind(db_json(&finish.outcome)?)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db)?;
                    let Some(row) = row else {
                        // Cannot happen while the row is locked; refuse rather than double-apply.
                        return Err(StoreError::Conflict(format!(
                            "pending action {} changed while it was being applied",
                            req.action_id
                        )));
                    };
                    let resolved = pending_from(&row)?;
                    if let Some(m) = &finish.message {
                        insert_message(&mut tx, action.session_id, m).await?;
                    }
                    for a in &finish.audit {
                        insert_audit(&mut tx, a).await?;
                    }
                    $crate::store::failpoint::hit("apply_before_commit");
                    tx.commit().await.map_err(db)?;
                    Ok(ApplyOutcome::Done {
                        action: resolved,
                        applied,
                        finish,
                    })
                }

                /// Checks the plan against the project as it is now and, when it still fits,
                /// writes it and bumps the version. `Err` holds why it no longer fits (then
                /// nothing was written).
                async fn check_and_write(
                    tx: &mut Tx,
                    action: &$crate::store::PendingAction,
                    req: &ApplyRequest<'_>,
                ) -> StoreResult<Result<Vec<Vec<Written>>, Vec<String>>> {
                    if action.items.iter().any(|i| i.plan.changes.is_empty()) {
                        return Ok(Err(vec![
                            "this proposal was made by an earlier version of Sparky and holds no plan to apply".into(),
                        ]));
                    }
                    let Some(project_id) = action.project_id else {
                        return Ok(Err(vec!["no project was bound when this was proposed".into()]));
                    };
                    // Locks the project row: plans on one project are applied one at a time.
                    let version = sqlx::query_scalar::<_, i64>(&format!(
                        "SELECT version FROM projects WHERE id = $1{}",
                        <$store>::FOR_UPDATE
                    ))
                    .bind(project_id)
                    .fetch_optional(&mut **tx)
                    .await
                    .map_err(db)?;
                    if version.is_none() {
                        return Ok(Err(vec!["the project was deleted".into()]));
                    }
                    let current = Self::load_project_in(tx, project_id).await?;
                    let changes: Vec<Change> = action
                        .items
                        .iter()
                        .flat_map(|i| i.plan.changes.iter().cloned())
                        .collect();
                    let problems = (req.check)(&current, &changes);
                    if !problems.is_empty() {
                        return Ok(Err(problems));
                    }
                    let mut ids = std::collections::HashMap::new();
                    let mut next = FIRST_PLACEHOLDER;
                    let mut written = Vec::with_capacity(action.items.len());
                    for item in &action.items {
                        let mut rows = Vec::with_capacity(item.plan.changes.len());
                        for change in &item.plan.changes {
                            let w = write_change(tx, project_id, change, &ids, req.by).await?;
                            if change.inserts() {
                                if let Some(id) = written_id(&w) {
                                    ids.insert(next, id);
                                }
                                next -= 1;
                            }
                            rows.push(w);
                        }
                        written.push(rows);
                    }
                    sqlx::query("UPDATE projects SET version = version + 1 WHERE id = $1")
                        .bind(project_id)
                        .execute(&mut **tx)
                        .await
                        .map_err(db)?;
                    Ok(Ok(written))
                }
            }

            fn written_id(w: &Written) -> Option<i64> {
                Some(match w {
                    Written::Panel(x) => x.id,
                    Written::AddedCircuit(x) => x.id,
                    Written::Feeder(x) => x.id,
                    Written::Transformer(x) => x.id,
                    Written::LoadItem(x) => x.id,
                    Written::ChargingSource(x) => x.id,
                    Written::CreatedTask(x) => x.id,
                    _ => return None,
                })
            }

            /// A write the checked plan expected to succeed failed: nothing is committed.
            fn refused(what: String) -> StoreError {
                StoreError::Conflict(format!("{what}; nothing was changed"))
            }

            async fn write_change(
                tx: &mut Tx,
                project_id: i64,
                change: &Change,
                ids: &std::collections::HashMap<i64, i64>,
                by: &str,
            ) -> StoreResult<Written> {
                Ok(match change {
                    Change::SetService { after, .. } => {
                        <$store>::stmt_upsert_service(project_id, after)
                            .execute(&mut **tx)
                            .await
                            .map_err(db)?;
                        Written::Service(after.clone())
                    }
                    Change::AddPanel { spec } => {
                        let row = <$store>::stmt_insert_panel(project_id, spec)
                            .fetch_one(&mut **tx)
                            .await
                            .map_err(|e| {
                            violation(e, Some(format!("panel '{}' already exists", spec.name.trim())), None)
                        })?;
                        Written::Panel(panel_from(&row)?)
                    }
                    Change::AddCircuit { panel_id, panel, spec, .. } => {
                        let row = <$store>::stmt_insert_circuit(real(ids, *panel_id)?, spec)
                            .fetch_one(&mut **tx)
                            .await
                            .map_err(|e| {
                            violation(
                                e,
                                Some(format!(
                                    "circuit {} already exists on panel {}",
                                    spec.number, panel.name
                                )),
                                Some(format!("panel {} does not exist", panel.name)),
                            )
                        })?;
                        Written::AddedCircuit(circuit_from(&row)?)
                    }
                    Change::UpdateCircuit {
                        circuit_id,
                        panel,
                        after,
                        ..
                    } => {
                        let row = <$store>::stmt_update_circuit(real(ids, *circuit_id)?, after)
                            .fetch_optional(&mut **tx)
                            .await
                            .map_err(|e| {
                            violation(
                                e,
                                Some(format!(
                                    "circuit {} already exists on panel {}",
                                    after.number, panel.name
                                )),
                                None,
                            )
                        })?
                        .ok_or_else(|| refused(format!("circuit {circuit_id} does not exist")))?;
                        Written::UpdatedCircuit(circuit_from(&row)?)
                    }
                    Change::RemoveCircuit { circuit_id, .. } => {
                        let row = <$store>::stmt_delete_circuit(real(ids, *circuit_id)?)
                            .fetch_optional(&mut **tx)
                            .await
                            .map_err(db)?
                            .ok_or_else(|| refused(format!("circuit {circuit_id} does not exist")))?;
                        Written::RemovedCircuit(circuit_from(&row)?)
                    }
                    Change::AddFeeder { spec } => {
                        let row = <$store>::stmt_insert_feeder(project_id, spec)
                            .fetch_one(&mut **tx)
                            .await
                            .map_err(|e| {
                            violation(e, Some(format!("feeder '{}' already exists", spec.name.trim())), None)
                        })?;
                        Written::Feeder(feeder_from(&row)?)
                    }
                    Change::AddTransformer { spec } => {
                        let row = <$store>::stmt_insert_transformer(project_id, spec)
                            .fetch_one(&mut **tx)
                            .await
                            .map_err(|e| {
                            violation(
                                e,
                                Some(format!("transformer '{}' already exists", spec.name.trim())),
                                None,
                            )
                        })?;
                        Written::Transformer(transformer_from(&row)?)
                    }
                    Change::AddLoadItem { spec } => {
                        let row = <$store>::stmt_insert_load_item(project_id, spec)
                            .fetch_one(&mut **tx)
                            .await
                            .map_err(db)?;
                        Written::LoadItem(load_item_from(&row)?)
                    }
                    Change::AddChargingSource { spec } => {
                        let row = <$store>::stmt_insert_charging_source(project_id, spec)
                            .fetch_one(&mut **tx)
                            .await
                            .map_err(db)?;
                        Written::ChargingSource(charging_source_from(&row)?)
                    }
                    Change::CreateTask { spec, created_by } => {
                        let row = <$store>::stmt_insert_task(project_id, spec, created_by)
                            .fetch_one(&mut **tx)
                            .await
                            .map_err(db)?;
                        Written::CreatedTask(task_from(&row)?)
                    }
                    Change::CompleteTask { task_id, .. } => {
                        let row = <$store>::stmt_complete_task(real(ids, *task_id)?, by)
                            .fetch_optional(&mut **tx)
                            .await
                            .map_err(db)?
                            .ok_or_else(|| refused(format!("task {task_id} is not open")))?;
                        Written::CompletedTask(task_from(&row)?)
                    }
                })
            }

            async fn insert_message(tx: &mut Tx, session_id: i64, message: &NewMessage) -> StoreResult<()> {
                <$store>::stmt_insert_message(session_id, message)?
                    .execute(&mut **tx)
                    .await
                    .map_err(db)?;
                Ok(())
            }

            async fn insert_audit(tx: &mut Tx, entry: &AuditEntry) -> StoreResult<()> {
                <$store>::stmt_insert_audit(entry)?
                    .execute(&mut **tx)
                    .await
                    .map_err(db)?;
                Ok(())
            }
        };
    };
}
pub(crate) use impl_apply;
