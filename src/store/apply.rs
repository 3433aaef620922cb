//! Applying a confirmed plan: one transaction holds the plan's rows, the project's version
//! bump, the action's state change, the results the model will see and the audit rows.
//!
//! The action row is read (and on Postgres locked) first, so of any number of racing
//! confirmations exactly one finds it pending; the project row is locked next, so two plans
//! on one project are checked and applied one after the other.

/// Emits the inherent `load_project_in` and `apply_plan` for a backend (`$db` is its sqlx
/// database type).
macro_rules! impl_apply {
    ($store:ty, $db:ty) => {
        const _: () = {
            use sqlx::Transaction;

            use $crate::project::plan::{Change, Written, FIRST_PLACEHOLDER};
            use $crate::project::ProjectData;
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
                /// Everything about a project, read through `tx`.
                pub(crate) async fn load_project_in(
                    tx: &mut Tx,
                    project_id: i64,
                ) -> StoreResult<ProjectData> {
                    let project = sqlx::query("SELECT * FROM projects WHERE id = $1")
                        .bind(project_id)
                        .fetch_optional(&mut **tx)
                        .await
                        .map_err(db)?
                        .map(|r| project_from(&r))
                        .transpose()?
                        .ok_or_else(|| {
                            StoreError::NotFound(format!("project {project_id} does not exist"))
                        })?;
                    let service = sqlx::query("SELECT * FROM services WHERE project_id = $1")
                        .bind(project_id)
                        .fetch_optional(&mut **tx)
                        .await
                        .map_err(db)?
                        .map(|r| service_from(&r))
                        .transpose()?;
                    macro_rules! rows {
                        ($sql:expr, $from:ident) => {
                            sqlx::query($sql)
                                .bind(project_id)
                                .fetch_all(&mut **tx)
                                .await
                                .map_err(db)?
                                .iter()
                                .map($from)
                                .collect::<StoreResult<Vec<_>>>()?
                        };
                    }
                    let panels = rows!("SELECT * FROM panels WHERE project_id = $1 ORDER BY id", panel_from);
                    let circuits = rows!(
                        "SELECT c.* FROM circuits c JOIN panels p ON p.id = c.panel_id \
                         WHERE p.project_id = $1 ORDER BY c.panel_id, c.number",
                        circuit_from
                    );
                    let feeders = rows!("SELECT * FROM feeders WHERE project_id = $1 ORDER BY id", feeder_from);
                    let transformers = rows!(
                        "SELECT * FROM transformers WHERE project_id = $1 ORDER BY id",
                        transformer_from
                    );
                    let loads = rows!("SELECT * FROM load_items WHERE project_id = $1 ORDER BY id", load_item_from);
                    let charging_sources = rows!(
                        "SELECT * FROM charging_sources WHERE project_id = $1 ORDER BY id",
                        charging_source_from
                    );
                    let tasks = rows!("SELECT * FROM tasks WHERE project_id = $1 ORDER BY id", task_from);
                    Ok(ProjectData {
                        project,
                        service,
                        panels,
                        circuits,
                        feeders,
                        transformers,
                        loads,
                        charging_sources,
                        tasks,
                    })
                }

                /// See [`Store::apply_pending`](crate::store::Store::apply_pending).
                pub(crate) async fn apply_plan(
                    &self,
                    req: &ApplyRequest<'_>,
                ) -> StoreResult<ApplyOutcome> {
                    let mut tx = self.begin_write().await.map_err(db)?;
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
                        sqlx::query(
                            "INSERT INTO services (project_id, voltage, phase, rating, available_fault_ka, notes) \
                             VALUES ($1, $2, $3, $4, $5, $6) \
                             ON CONFLICT (project_id) DO UPDATE SET voltage = excluded.voltage, \
                             phase = excluded.phase, rating = excluded.rating, \
                             available_fault_ka = excluded.available_fault_ka, notes = excluded.notes",
                        )
                        .bind(project_id)
                        .bind(after.voltage.0)
                        .bind(phase_to_db(after.phase))
                        .bind(after.rating.0)
                        .bind(after.available_fault_ka)
                        .bind(&after.notes)
                        .execute(&mut **tx)
                        .await
                        .map_err(db)?;
                        Written::Service(after.clone())
                    }
                    Change::AddPanel { spec } => {
                        let row = sqlx::query(
                            "INSERT INTO panels (project_id, name, voltage, phase, bus_rating, main_breaker, \
                             interrupting_rating_ka, fed_from, spaces, location) \
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING *",
                        )
                        .bind(project_id)
                        .bind(spec.name.trim())
                        .bind(spec.voltage.0)
                        .bind(phase_to_db(spec.phase))
                        .bind(spec.bus_rating.0)
                        .bind(spec.main_breaker.map(|a| a.0))
                        .bind(spec.interrupting_rating_ka)
                        .bind(&spec.fed_from)
                        .bind(i64::from(spec.spaces))
                        .bind(&spec.location)
                        .fetch_one(&mut **tx)
                        .await
                        .map_err(|e| {
                            violation(e, Some(format!("panel '{}' already exists", spec.name.trim())), None)
                        })?;
                        Written::Panel(panel_from(&row)?)
                    }
                    Change::AddCircuit { panel_id, panel, spec } => {
                        let row = sqlx::query(
                            "INSERT INTO circuits (panel_id, number, poles, description, load_va, continuous, \
                             breaker, conductor_size, material, insulation, length_ft, conduit, motor, appliance) \
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING *",
                        )
                        .bind(real(ids, *panel_id)?)
                        .bind(spec.number)
                        .bind(i32::from(spec.poles))
                        .bind(&spec.description)
                        .bind(spec.load_va.0)
                        .bind(spec.continuous)
                        .bind(spec.breaker.0)
                        .bind(spec.conductor_size.map(size_to_db))
                        .bind(material_to_db(spec.material))
                        .bind(temp_to_db(spec.insulation))
                        .bind(spec.length.map(|l| l.0))
                        .bind(&spec.conduit)
                        .bind(nameplate_to_db(&spec.motor)?)
                        .bind(nameplate_to_db(&spec.appliance)?)
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
                        let row = sqlx::query(
                            "UPDATE circuits SET number = $2, poles = $3, description = $4, load_va = $5, \
                             continuous = $6, breaker = $7, conductor_size = $8, material = $9, \
                             insulation = $10, length_ft = $11, conduit = $12, motor = $13, appliance = $14 \
                         WHERE id = $1 RETURNING *",
                        )
                        .bind(real(ids, *circuit_id)?)
                        .bind(after.number)
                        .bind(i32::from(after.poles))
                        .bind(&after.description)
                        .bind(after.load_va.0)
                        .bind(after.continuous)
                        .bind(after.breaker.0)
                        .bind(after.conductor_size.map(size_to_db))
                        .bind(material_to_db(after.material))
                        .bind(temp_to_db(after.insulation))
                        .bind(after.length.map(|l| l.0))
                        .bind(&after.conduit)
                        .bind(nameplate_to_db(&after.motor)?)
                        .bind(nameplate_to_db(&after.appliance)?)
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
                        let row = sqlx::query("DELETE FROM circuits WHERE id = $1 RETURNING *")
                            .bind(real(ids, *circuit_id)?)
                            .fetch_optional(&mut **tx)
                            .await
                            .map_err(db)?
                            .ok_or_else(|| refused(format!("circuit {circuit_id} does not exist")))?;
                        Written::RemovedCircuit(circuit_from(&row)?)
                    }
                    Change::AddFeeder { spec } => {
                        let row = sqlx::query(
                            "INSERT INTO feeders (project_id, name, from_equipment, to_equipment, \
                             conductor_size, material, insulation, sets, length_ft, ocpd, raceway, egc_size) \
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING *",
                        )
                        .bind(project_id)
                        .bind(spec.name.trim())
                        .bind(&spec.from)
                        .bind(&spec.to)
                        .bind(size_to_db(spec.conductor_size))
                        .bind(material_to_db(spec.material))
                        .bind(temp_to_db(spec.insulation))
                        .bind(i32::from(spec.sets))
                        .bind(spec.length.map(|l| l.0))
                        .bind(spec.ocpd.0)
                        .bind(spec.raceway.map(|r| r.as_str()))
                        .bind(spec.egc_size.map(size_to_db))
                        .fetch_one(&mut **tx)
                        .await
                        .map_err(|e| {
                            violation(e, Some(format!("feeder '{}' already exists", spec.name.trim())), None)
                        })?;
                        Written::Feeder(feeder_from(&row)?)
                    }
                    Change::AddTransformer { spec } => {
                        let row = sqlx::query(
                            "INSERT INTO transformers (project_id, name, kva, primary_voltage, \
                             secondary_voltage, phase, impedance_percent, fed_from) \
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *",
                        )
                        .bind(project_id)
                        .bind(spec.name.trim())
                        .bind(spec.kva)
                        .bind(spec.primary_voltage.0)
                        .bind(spec.secondary_voltage.0)
                        .bind(phase_to_db(spec.phase))
                        .bind(spec.impedance_percent)
                        .bind(&spec.fed_from)
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
                        let row = sqlx::query(
                            "INSERT INTO load_items (project_id, name, watts, hours_per_day, duty_cycle, \
                             quantity, notes) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *",
                        )
                        .bind(project_id)
                        .bind(&spec.name)
                        .bind(spec.watts.0)
                        .bind(spec.hours_per_day)
                        .bind(spec.duty_cycle)
                        .bind(i64::from(spec.quantity))
                        .bind(&spec.notes)
                        .fetch_one(&mut **tx)
                        .await
                        .map_err(db)?;
                        Written::LoadItem(load_item_from(&row)?)
                    }
                    Change::AddChargingSource { spec } => {
                        let row = sqlx::query(
                            "INSERT INTO charging_sources (project_id, name, kind, watts, hours_per_day, \
                             efficiency, notes) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *",
                        )
                        .bind(project_id)
                        .bind(&spec.name)
                        .bind(&spec.kind)
                        .bind(spec.watts.0)
                        .bind(spec.hours_per_day)
                        .bind(spec.efficiency)
                        .bind(&spec.notes)
                        .fetch_one(&mut **tx)
                        .await
                        .map_err(db)?;
                        Written::ChargingSource(charging_source_from(&row)?)
                    }
                    Change::CreateTask { spec, created_by } => {
                        let row = sqlx::query(
                            "INSERT INTO tasks (project_id, title, notes, assignee, created_by, created_at) \
                             VALUES ($1, $2, $3, $4, $5, $6) RETURNING *",
                        )
                        .bind(project_id)
                        .bind(&spec.title)
                        .bind(&spec.notes)
                        .bind(&spec.assignee)
                        .bind(created_by)
                        .bind(now())
                        .fetch_one(&mut **tx)
                        .await
                        .map_err(db)?;
                        Written::CreatedTask(task_from(&row)?)
                    }
                    Change::CompleteTask { task_id, .. } => {
                        let row = sqlx::query(
                            "UPDATE tasks SET completed_at = $2, completed_by = $3 \
                             WHERE id = $1 AND completed_at IS NULL RETURNING *",
                        )
                        .bind(real(ids, *task_id)?)
                        .bind(now())
                        .bind(by)
                        .fetch_optional(&mut **tx)
                        .await
                        .map_err(db)?
                        .ok_or_else(|| refused(format!("task {task_id} is not open")))?;
                        Written::CompletedTask(task_from(&row)?)
                    }
                })
            }

            async fn insert_message(tx: &mut Tx, session_id: i64, message: &NewMessage) -> StoreResult<()> {
                let tokens = i64::try_from(message.message.estimated_tokens()).unwrap_or(i64::MAX);
                sqlx::query(
                    "INSERT INTO messages (session_id, role, content, author, event_id, tokens, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .bind(session_id)
                .bind(message_role(&message.message))
                .bind(db_json(&message.message)?)
                .bind(clean_opt(&message.author))
                .bind(clean_opt(&message.event_id))
                .bind(tokens)
                .bind(now())
                .execute(&mut **tx)
                .await
                .map_err(db)?;
                Ok(())
            }

            async fn insert_audit(tx: &mut Tx, entry: &AuditEntry) -> StoreResult<()> {
                sqlx::query(
                    "INSERT INTO tool_audit (session_id, actor, kind, tool, action_id, args, result, \
                     is_error, duration_ms, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                )
                .bind(entry.session_id)
                .bind(&entry.actor)
                .bind(entry.kind.as_str())
                .bind(&entry.tool)
                .bind(&entry.action_id)
                .bind(db_json(&entry.args)?)
                .bind(db_json(&entry.result)?)
                .bind(entry.is_error)
                .bind(entry.duration_ms)
                .bind(micros(entry.at))
                .execute(&mut **tx)
                .await
                .map_err(db)?;
                Ok(())
            }
        };
    };
}
pub(crate) use impl_apply;
