//! `update_circuit`: changes fields of a circuit.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::nec_args::find_ref;
use super::plan_preview::{circuit_result_lines, plan_item};
use super::schema::schema_for;
use super::{parse_args, ActionPreview, ToolContext, ToolError, ToolPlan, WriteTool};
use crate::nec::units::{Amps, ConductorSize, Feet, Material, TempRating, VoltAmperes};
use crate::project::analysis::{circuit_label, resolve_circuit};
use crate::project::circuit_diff::field_changes;
use crate::project::invariants::check_circuit_spec;
use crate::project::plan::Change;
use crate::project::{ApplianceNameplate, Circuit, CircuitSpec, MotorLoad, Panel, ProjectData};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum ClearableField {
    /// Forget the conductor size.
    ConductorSize,
    /// Forget the length.
    Length,
    /// The circuit no longer supplies a motor.
    Motor,
    /// Forget the appliance nameplate.
    Appliance,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CircuitChanges {
    /// New circuit number (moves it in the panel).
    #[serde(default)]
    number: Option<i32>,
    /// New poles.
    #[serde(default)]
    #[schemars(range(min = 1, max = 3))]
    poles: Option<u8>,
    /// New description.
    #[serde(default)]
    description: Option<String>,
    /// New load, VA.
    #[serde(default)]
    load_va: Option<VoltAmperes>,
    /// Continuous or not.
    #[serde(default)]
    continuous: Option<bool>,
    /// New breaker.
    #[serde(default)]
    breaker: Option<Amps>,
    /// New conductor size.
    #[serde(default)]
    conductor_size: Option<ConductorSize>,
    /// New material.
    #[serde(default)]
    material: Option<Material>,
    /// New insulation rating.
    #[serde(default)]
    insulation: Option<TempRating>,
    /// New one-way length, ft.
    #[serde(default)]
    length: Option<Feet>,
    /// New raceway text.
    #[serde(default)]
    conduit: Option<String>,
    /// The motor it supplies (run_inspection then judges it by 430.22/430.52).
    #[serde(default)]
    motor: Option<MotorLoad>,
    /// The appliance nameplate (read by calculate_dwelling_load).
    #[serde(default)]
    appliance: Option<ApplianceNameplate>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UpdateCircuitArgs {
    /// Panel of the circuit.
    #[serde(default)]
    panel: Option<String>,
    /// Circuit number.
    #[serde(default)]
    number: Option<i32>,
    /// Or: the circuit by description words ("the EV charger") or "LP-1 #5".
    #[serde(default)]
    find: Option<String>,
    /// Fields to change.
    #[serde(default)]
    changes: CircuitChanges,
    /// Fields to forget: conductor_size, length, motor, appliance.
    #[serde(default)]
    clear: Vec<ClearableField>,
}

/// The circuit before and after an update.
fn plan_update<'a>(
    p: &'a ProjectData,
    a: &UpdateCircuitArgs,
) -> Result<(&'a Panel, &'a Circuit, CircuitSpec, Vec<String>), ToolError> {
    let (panel, c, notes) = resolve_circuit(p, &find_ref(&a.panel, a.number, &a.find))?;
    let ch = &a.changes;
    let mut s = c.spec.clone();
    if let Some(x) = ch.number {
        s.number = x;
    }
    if let Some(x) = ch.poles {
        s.poles = x;
    }
    if let Some(x) = &ch.description {
        s.description = x.trim().to_string();
    }
    if let Some(x) = ch.load_va {
        s.load_va = x;
    }
    if let Some(x) = ch.continuous {
        s.continuous = x;
    }
    if let Some(x) = ch.breaker {
        s.breaker = x;
    }
    if let Some(x) = ch.conductor_size {
        s.conductor_size = Some(x);
    }
    if let Some(x) = ch.material {
        s.material = x;
    }
    if let Some(x) = ch.insulation {
        s.insulation = x;
    }
    if let Some(x) = ch.length {
        s.length = Some(x);
    }
    if let Some(x) = &ch.conduit {
        s.conduit = x.trim().to_string();
    }
    if let Some(x) = ch.motor {
        s.motor = Some(x);
    }
    if let Some(x) = ch.appliance {
        s.appliance = Some(x);
    }
    for f in &a.clear {
        match f {
            ClearableField::ConductorSize => s.conductor_size = None,
            ClearableField::Length => s.length = None,
            ClearableField::Motor => s.motor = None,
            ClearableField::Appliance => s.appliance = None,
        }
    }
    if s == c.spec {
        return Err(ToolError::InvalidArguments(format!(
            "nothing changes for {}: give `changes` (or `clear`) with new values",
            circuit_label(&panel.spec, &c.spec)
        )));
    }
    check_circuit_spec(p, panel, &s, Some(c.id))?;
    Ok((panel, c, s, notes))
}

/// Changes fields of a circuit.
pub struct UpdateCircuit;

#[async_trait]
impl WriteTool for UpdateCircuit {
    fn name(&self) -> &'static str {
        "update_circuit"
    }
    fn description(&self) -> &'static str {
        "Change a circuit, named by panel + number or by `find` words (\"the EV charger\"): `changes` holds \
         the new values (number, poles, description, load_va, continuous, breaker, conductor_size, material, \
         insulation, length, conduit, motor, appliance); `clear` forgets conductor_size, length, motor or \
         appliance. The preview shows every \
         field before -> after and the result (conductor check, voltage drop, panel load). Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<UpdateCircuitArgs>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let a: UpdateCircuitArgs = parse_args(args)?;
        let p = ctx.project().await?;
        let (panel, c, after, notes) = plan_update(&p, &a)?;
        let others: Vec<&CircuitSpec> = p
            .circuits_of(panel.id)
            .into_iter()
            .filter(|x| x.id != c.id)
            .map(|x| &x.spec)
            .collect();
        let mut details = field_changes(&c.spec, &after);
        details.extend(notes);
        details.extend(circuit_result_lines(&p, panel, &after, &others));
        Ok(ToolPlan {
            item: plan_item(
                vec![Change::UpdateCircuit {
                    circuit_id: c.id,
                    panel_id: panel.id,
                    panel: panel.spec.clone(),
                    before: c.spec.clone(),
                    after: after.clone(),
                    panel_circuits: Some(
                        p.circuits_of(panel.id)
                            .into_iter()
                            .map(|c| c.spec.clone())
                            .collect(),
                    ),
                }],
                json!({ "panel": panel.spec.name, "changes": field_changes(&c.spec, &after) }),
            ),
            preview: ActionPreview {
                summary: format!("Update {}", circuit_label(&panel.spec, &c.spec)),
                details,
            },
        })
    }
}
