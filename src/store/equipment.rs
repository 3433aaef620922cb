//! Equipment of a project: the service, panels and their circuits, feeders, transformers,
//! energy-budget loads and charging sources.

use async_trait::async_trait;

use crate::project::{
    ChargingSource, ChargingSourceSpec, Circuit, CircuitSpec, Feeder, FeederSpec, LoadItem,
    LoadItemSpec, Panel, PanelSpec, ServiceSpec, Transformer, TransformerSpec,
};

use super::StoreResult;

/// The electrical equipment of a project, one row per piece.
#[async_trait]
pub trait EquipmentStore: Send + Sync {
    /// Sets (inserts or replaces) the project's service.
    async fn set_service(&self, project_id: i64, service: &ServiceSpec) -> StoreResult<()>;
    /// Adds a panel; `Conflict` on a duplicate name.
    async fn add_panel(&self, project_id: i64, panel: &PanelSpec) -> StoreResult<Panel>;
    /// Replaces a panel's data.
    async fn update_panel(&self, id: i64, panel: &PanelSpec) -> StoreResult<Panel>;
    /// Removes a panel and its circuits.
    async fn remove_panel(&self, id: i64) -> StoreResult<()>;
    /// Adds a circuit; `Conflict` on a duplicate number in the panel.
    async fn add_circuit(&self, panel_id: i64, circuit: &CircuitSpec) -> StoreResult<Circuit>;
    /// Replaces a circuit's data.
    async fn update_circuit(&self, id: i64, circuit: &CircuitSpec) -> StoreResult<Circuit>;
    /// Removes a circuit.
    async fn remove_circuit(&self, id: i64) -> StoreResult<()>;
    /// Adds a feeder.
    async fn add_feeder(&self, project_id: i64, feeder: &FeederSpec) -> StoreResult<Feeder>;
    /// Adds a transformer.
    async fn add_transformer(
        &self,
        project_id: i64,
        transformer: &TransformerSpec,
    ) -> StoreResult<Transformer>;
    /// Adds an energy-budget load.
    async fn add_load_item(&self, project_id: i64, item: &LoadItemSpec) -> StoreResult<LoadItem>;
    /// Adds a charging source.
    async fn add_charging_source(
        &self,
        project_id: i64,
        source: &ChargingSourceSpec,
    ) -> StoreResult<ChargingSource>;
}

/// Emits `impl EquipmentStore` for a backend store type.
macro_rules! impl_equipment {
    ($store:ty, $db:ty) => {
        const _: () = {
            use async_trait::async_trait;

            use $crate::project::{ChargingSource, ChargingSourceSpec, Circuit, CircuitSpec, Feeder, FeederSpec, LoadItem, LoadItemSpec, Panel, PanelSpec, ServiceSpec, Transformer, TransformerSpec};
            use $crate::store::common::*;
            use $crate::store::{StoreError, StoreResult, EquipmentStore};

            impl $store {
                /// Name of a panel for messages (its id when it cannot be read).
                async fn panel_label(&self, panel_id: i64) -> String {
                    sqlx::query_scalar::<_, String>("SELECT name FROM panels WHERE id = $1")
                        .bind(panel_id)
                        .fetch_optional(&self.pool)
                        .await
                        .ok()
                        .flatten()
                        .unwrap_or_else(|| format!("#{panel_id}"))
                }
            }

            impl $store {
                /// Sets the service: the one statement both the store method and applied
                /// plans run, so a column added here reaches both.
                pub(crate) fn stmt_upsert_service<'q>(project_id: i64, spec: &'q ServiceSpec) -> Stmt<'q, $db> {
                    sqlx::query(
                        "INSERT INTO services (project_id, voltage, phase, rating, available_fault_ka, notes) \
                        VALUES ($1, $2, $3, $4, $5, $6) \
                        ON CONFLICT (project_id) DO UPDATE SET voltage = excluded.voltage, \
                        phase = excluded.phase, rating = excluded.rating, \
                        available_fault_ka = excluded.available_fault_ka, notes = excluded.notes",
                    )
                    .bind(project_id)
                    .bind(spec.voltage.0)
                    .bind(phase_to_db(spec.phase))
                    .bind(spec.rating.0)
                    .bind(spec.available_fault_ka)
                    .bind(&spec.notes)
                }

                /// Inserts a panel: the one statement both the store method and applied
                /// plans run, so a column added here reaches both.
                pub(crate) fn stmt_insert_panel<'q>(project_id: i64, spec: &'q PanelSpec) -> Stmt<'q, $db> {
                    sqlx::query(
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
                }

                /// Inserts a circuit: the one statement both the store method and applied
                /// plans run, so a column added here reaches both.
                pub(crate) fn stmt_insert_circuit<'q>(panel_id: i64, spec: &'q CircuitSpec) -> Stmt<'q, $db> {
                    sqlx::query(
                        "INSERT INTO circuits (panel_id, number, poles, description, load_va, continuous, \
                        breaker, conductor_size, material, insulation, length_ft, conduit, motor, appliance) \
                        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING *",
                    )
                    .bind(panel_id)
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
                    .bind(nameplate_json(&spec.motor))
                    .bind(nameplate_json(&spec.appliance))
                }

                /// Replaces a circuit's data: the one statement both the store method and applied
                /// plans run, so a column added here reaches both.
                pub(crate) fn stmt_update_circuit<'q>(id: i64, spec: &'q CircuitSpec) -> Stmt<'q, $db> {
                    sqlx::query(
                        "UPDATE circuits SET number = $2, poles = $3, description = $4, load_va = $5, \
                        continuous = $6, breaker = $7, conductor_size = $8, material = $9, \
                        insulation = $10, length_ft = $11, conduit = $12, motor = $13, appliance = $14 \
                        WHERE id = $1 RETURNING *",
                    )
                    .bind(id)
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
                    .bind(nameplate_json(&spec.motor))
                    .bind(nameplate_json(&spec.appliance))
                }

                /// Deletes a circuit: the one statement both the store method and applied
                /// plans run, so a column added here reaches both.
                pub(crate) fn stmt_delete_circuit<'q>(id: i64) -> Stmt<'q, $db> {
                    sqlx::query(
                        "DELETE FROM circuits WHERE id = $1 RETURNING *",
                    )
                    .bind(id)
                }

                /// Inserts a feeder: the one statement both the store method and applied
                /// plans run, so a column added here reaches both.
                pub(crate) fn stmt_insert_feeder<'q>(project_id: i64, spec: &'q FeederSpec) -> Stmt<'q, $db> {
                    sqlx::query(
                        "INSERT INTO feeders (project_id, name, from_equipment, to_equipment, \
                        conductor_size, material, insulation, sets, length_ft, ocpd, raceway, egc_size, \
                        c_value, impedance_ohms_per_1000ft) \
                        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING *",
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
                    .bind(spec.c_value)
                    .bind(spec.impedance_ohms_per_1000ft)
                }

                /// Inserts a transformer: the one statement both the store method and applied
                /// plans run, so a column added here reaches both.
                pub(crate) fn stmt_insert_transformer<'q>(project_id: i64, spec: &'q TransformerSpec) -> Stmt<'q, $db> {
                    sqlx::query(
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
                }

                /// Inserts an energy-budget load: the one statement both the store method and applied
                /// plans run, so a column added here reaches both.
                pub(crate) fn stmt_insert_load_item<'q>(project_id: i64, spec: &'q LoadItemSpec) -> Stmt<'q, $db> {
                    sqlx::query(
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
                }

                /// Inserts a charging source: the one statement both the store method and applied
                /// plans run, so a column added here reaches both.
                pub(crate) fn stmt_insert_charging_source<'q>(project_id: i64, spec: &'q ChargingSourceSpec) -> Stmt<'q, $db> {
                    sqlx::query(
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
                }
            }

            #[async_trait]
            impl EquipmentStore for $store {
                async fn set_service(&self, project_id: i64, service: &ServiceSpec) -> StoreResult<()> {
                    <$store>::stmt_upsert_service(project_id, service)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| {
                        violation(e, None, Some(format!("project {project_id} does not exist")))
                    })?;
                    Ok(())
                }

                async fn add_panel(&self, project_id: i64, panel: &PanelSpec) -> StoreResult<Panel> {
                    let row = <$store>::stmt_insert_panel(project_id, panel)
                        .fetch_one(&self.pool)
                        .await
                        .map_err(|e| {
                        violation(
                            e,
                            Some(format!(
                                "panel '{}' already exists in this project",
                                panel.name.trim()
                            )),
                            Some(format!("project {project_id} does not exist")),
                        )
                    })?;
                    panel_from(&row)
                }

                async fn update_panel(&self, id: i64, panel: &PanelSpec) -> StoreResult<Panel> {
                    let row = sqlx::query(
                        "UPDATE panels SET name = $2, voltage = $3, phase = $4, bus_rating = $5, \
                         main_breaker = $6, interrupting_rating_ka = $7, fed_from = $8, spaces = $9, \
                         location = $10 WHERE id = $1 RETURNING *",
                    )
                    .bind(id)
                    .bind(panel.name.trim())
                    .bind(panel.voltage.0)
                    .bind(phase_to_db(panel.phase))
                    .bind(panel.bus_rating.0)
                    .bind(panel.main_breaker.map(|a| a.0))
                    .bind(panel.interrupting_rating_ka)
                    .bind(&panel.fed_from)
                    .bind(i64::from(panel.spaces))
                    .bind(&panel.location)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| {
                        violation(
                            e,
                            Some(format!(
                                "panel '{}' already exists in this project",
                                panel.name.trim()
                            )),
                            None,
                        )
                    })?
                    .ok_or_else(|| StoreError::NotFound(format!("panel {id} does not exist")))?;
                    panel_from(&row)
                }

                async fn remove_panel(&self, id: i64) -> StoreResult<()> {
                    let done = sqlx::query("DELETE FROM panels WHERE id = $1")
                        .bind(id)
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!("panel {id} does not exist")));
                    }
                    Ok(())
                }

                async fn add_circuit(&self, panel_id: i64, circuit: &CircuitSpec) -> StoreResult<Circuit> {
                    let res = <$store>::stmt_insert_circuit(panel_id, circuit)
                        .fetch_one(&self.pool)
                        .await;
                    match res {
                        Ok(row) => circuit_from(&row),
                        Err(e) if is_unique(&e) => Err(StoreError::Conflict(format!(
                            "circuit {} already exists on panel {}",
                            circuit.number,
                            self.panel_label(panel_id).await
                        ))),
                        Err(e) => Err(violation(
                            e,
                            None,
                            Some(format!("panel {panel_id} does not exist")),
                        )),
                    }
                }

                async fn update_circuit(&self, id: i64, circuit: &CircuitSpec) -> StoreResult<Circuit> {
                    let res = <$store>::stmt_update_circuit(id, circuit)
                        .fetch_optional(&self.pool)
                        .await;
                    match res {
                        Ok(Some(row)) => circuit_from(&row),
                        Ok(None) => Err(StoreError::NotFound(format!("circuit {id} does not exist"))),
                        Err(e) if is_unique(&e) => {
                            let panel_id = sqlx::query_scalar::<_, i64>(
                                "SELECT panel_id FROM circuits WHERE id = $1",
                            )
                            .bind(id)
                            .fetch_one(&self.pool)
                            .await
                            .map_err(db)?;
                            Err(StoreError::Conflict(format!(
                                "circuit {} already exists on panel {}",
                                circuit.number,
                                self.panel_label(panel_id).await
                            )))
                        }
                        Err(e) => Err(db(e)),
                    }
                }

                async fn remove_circuit(&self, id: i64) -> StoreResult<()> {
                    let done = <$store>::stmt_delete_circuit(id)
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!("circuit {id} does not exist")));
                    }
                    Ok(())
                }

                async fn add_feeder(&self, project_id: i64, feeder: &FeederSpec) -> StoreResult<Feeder> {
                    let row = <$store>::stmt_insert_feeder(project_id, feeder)
                        .fetch_one(&self.pool)
                        .await
                        .map_err(|e| {
                        violation(
                            e,
                            Some(format!(
                                "feeder '{}' already exists in this project",
                                feeder.name.trim()
                            )),
                            Some(format!("project {project_id} does not exist")),
                        )
                    })?;
                    feeder_from(&row)
                }

                async fn add_transformer(
                    &self,
                    project_id: i64,
                    transformer: &TransformerSpec,
                ) -> StoreResult<Transformer> {
                    let row = <$store>::stmt_insert_transformer(project_id, transformer)
                        .fetch_one(&self.pool)
                        .await
                        .map_err(|e| {
                        violation(
                            e,
                            Some(format!(
                                "transformer '{}' already exists in this project",
                                transformer.name.trim()
                            )),
                            Some(format!("project {project_id} does not exist")),
                        )
                    })?;
                    transformer_from(&row)
                }

                async fn add_load_item(&self, project_id: i64, item: &LoadItemSpec) -> StoreResult<LoadItem> {
                    let row = <$store>::stmt_insert_load_item(project_id, item)
                        .fetch_one(&self.pool)
                        .await
                        .map_err(|e| {
                        violation(e, None, Some(format!("project {project_id} does not exist")))
                    })?;
                    load_item_from(&row)
                }

                async fn add_charging_source(
                    &self,
                    project_id: i64,
                    source: &ChargingSourceSpec,
                ) -> StoreResult<ChargingSource> {
                    let row = <$store>::stmt_insert_charging_source(project_id, source)
                        .fetch_one(&self.pool)
                        .await
                        .map_err(|e| {
                        violation(e, None, Some(format!("project {project_id} does not exist")))
                    })?;
                    charging_source_from(&row)
                }
            }
        };
    };
}
pub(crate) use impl_equipment;
