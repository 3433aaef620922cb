//! Plans: the exact, fully resolved changes a write tool proposes (rows by id, every default
//! filled in). A plan is stored with its pending action, shown on the card, and applied as
//! stored once a person confirms; nothing is re-resolved at confirm time.

use serde::{Deserialize, Serialize};

use super::{
    ChargingSource, ChargingSourceSpec, Circuit, CircuitSpec, Feeder, FeederSpec, LoadItem,
    LoadItemSpec, Panel, PanelSpec, ProjectData, ServiceSpec, Task, TaskSpec, Transformer,
    TransformerSpec,
};

/// One concrete change to a project. Ids below zero name rows that an earlier change of the
/// same plan inserts (placeholders, replaced by the real ids when the plan is applied).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Change {
    /// Set the service; `before` is what the plan saw.
    SetService {
        /// The service when planned.
        before: Option<ServiceSpec>,
        /// The new service.
        after: ServiceSpec,
    },
    /// Insert a panel.
    AddPanel {
        /// The panel.
        spec: PanelSpec,
    },
    /// Insert a circuit into a panel.
    AddCircuit {
        /// The panel, by id.
        panel_id: i64,
        /// The panel as planned against (its voltage and spaces decide the circuit).
        panel: PanelSpec,
        /// The circuit, number, breaker and conductor resolved.
        spec: CircuitSpec,
        /// The panel's circuits when planned (the card's spare spaces and panel load were
        /// worked out from them); `None` in plans stored before they were kept.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        panel_circuits: Option<Vec<CircuitSpec>>,
    },
    /// Replace a circuit's data.
    UpdateCircuit {
        /// The circuit, by id.
        circuit_id: i64,
        /// Its panel.
        panel_id: i64,
        /// The panel as planned against.
        panel: PanelSpec,
        /// The circuit when planned.
        before: CircuitSpec,
        /// The circuit after.
        after: CircuitSpec,
        /// The panel's circuits when planned (the card's spare spaces and panel load were
        /// worked out from them); `None` in plans stored before they were kept.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        panel_circuits: Option<Vec<CircuitSpec>>,
    },
    /// Delete a circuit.
    RemoveCircuit {
        /// The circuit, by id.
        circuit_id: i64,
        /// Its panel.
        panel_id: i64,
        /// The panel's name when planned.
        panel: String,
        /// The circuit when planned: it is removed only while it still reads exactly so.
        before: CircuitSpec,
        /// The panel's circuits when planned (the card's spare spaces and panel load were
        /// worked out from them); `None` in plans stored before they were kept.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        panel_circuits: Option<Vec<CircuitSpec>>,
    },
    /// Insert a feeder.
    AddFeeder {
        /// The feeder.
        spec: FeederSpec,
    },
    /// Insert a transformer.
    AddTransformer {
        /// The transformer.
        spec: TransformerSpec,
    },
    /// Insert an energy-budget load.
    AddLoadItem {
        /// The load.
        spec: LoadItemSpec,
    },
    /// Insert a charging source.
    AddChargingSource {
        /// The source.
        spec: ChargingSourceSpec,
    },
    /// Insert a task.
    CreateTask {
        /// The task.
        spec: TaskSpec,
        /// Who asked for it.
        created_by: String,
    },
    /// Mark an open task done (by whoever confirms).
    CompleteTask {
        /// The task, by id.
        task_id: i64,
        /// Its title when planned.
        title: String,
    },
}

/// A row one change wrote, returned by the store's apply step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "row", rename_all = "snake_case")]
pub enum Written {
    /// The service now.
    Service(ServiceSpec),
    /// An inserted panel.
    Panel(Panel),
    /// An inserted circuit.
    AddedCircuit(Circuit),
    /// An updated circuit.
    UpdatedCircuit(Circuit),
    /// A deleted circuit, as it was.
    RemovedCircuit(Circuit),
    /// An inserted feeder.
    Feeder(Feeder),
    /// An inserted transformer.
    Transformer(Transformer),
    /// An inserted load.
    LoadItem(LoadItem),
    /// An inserted charging source.
    ChargingSource(ChargingSource),
    /// An inserted task.
    CreatedTask(Task),
    /// A completed task.
    CompletedTask(Task),
}

/// The changes of one write call with what its result adds (notes, names) besides the rows.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ItemPlan {
    /// The changes, applied in order.
    pub changes: Vec<Change>,
    /// Fields merged into the result the model sees (e.g. the panel name, notes).
    #[serde(default)]
    pub result: serde_json::Map<String, serde_json::Value>,
}

impl Change {
    /// Applies the change to an in-memory project, giving inserted rows `next_id` (negative,
    /// counting down) so later changes of the same plan see them. Used to plan several calls
    /// of one turn against each other and to check a stored plan against the current project.
    pub fn simulate(&self, p: &mut ProjectData, next_id: &mut i64) {
        let pid = p.project.id;
        let mut fresh = || {
            let id = *next_id;
            *next_id -= 1;
            id
        };
        match self {
            Change::SetService { after, .. } => p.service = Some(after.clone()),
            Change::AddPanel { spec } => p.panels.push(Panel {
                id: fresh(),
                project_id: pid,
                spec: spec.clone(),
            }),
            Change::AddCircuit { panel_id, spec, .. } => p.circuits.push(Circuit {
                id: fresh(),
                panel_id: *panel_id,
                spec: spec.clone(),
            }),
            Change::UpdateCircuit {
                circuit_id, after, ..
            } => {
                if let Some(c) = p.circuits.iter_mut().find(|c| c.id == *circuit_id) {
                    c.spec = after.clone();
                }
            }
            Change::RemoveCircuit { circuit_id, .. } => p.circuits.retain(|c| c.id != *circuit_id),
            Change::AddFeeder { spec } => p.feeders.push(Feeder {
                id: fresh(),
                project_id: pid,
                spec: spec.clone(),
            }),
            Change::AddTransformer { spec } => p.transformers.push(Transformer {
                id: fresh(),
                project_id: pid,
                spec: spec.clone(),
            }),
            Change::AddLoadItem { spec } => p.loads.push(LoadItem {
                id: fresh(),
                project_id: pid,
                spec: spec.clone(),
            }),
            Change::AddChargingSource { spec } => p.charging_sources.push(ChargingSource {
                id: fresh(),
                project_id: pid,
                spec: spec.clone(),
            }),
            Change::CreateTask { spec, created_by } => p.tasks.push(Task {
                id: fresh(),
                project_id: pid,
                spec: spec.clone(),
                created_by: created_by.clone(),
                created_at: chrono::Utc::now(),
                completed_at: None,
                completed_by: None,
            }),
            Change::CompleteTask { task_id, .. } => {
                if let Some(t) = p.tasks.iter_mut().find(|t| t.id == *task_id) {
                    t.completed_at = Some(chrono::Utc::now());
                }
            }
        }
    }
}

impl Change {
    /// Whether applying it inserts a row (and so takes the next placeholder id).
    pub fn inserts(&self) -> bool {
        !matches!(
            self,
            Change::SetService { .. }
                | Change::UpdateCircuit { .. }
                | Change::RemoveCircuit { .. }
                | Change::CompleteTask { .. }
        )
    }
}

/// Placeholder ids start here and count down, one per inserting change, in plan order.
pub const FIRST_PLACEHOLDER: i64 = -1;
