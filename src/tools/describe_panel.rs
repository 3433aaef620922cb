//! `describe_panel`: one panel's schedule, loading, spaces and fault current as JSON, rendered
//! from the project's analysis ([`crate::project::analysis`]); the circuit rows are shared with
//! `find_circuits` and the write previews.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::schema::schema_for;
use super::{parse_args, Tool, ToolContext, ToolError};
use crate::nec::units::Phase;
use crate::project::analysis::{
    circuit_electrical, circuit_voltage_drop, next_free_number, panel_loading, panel_or_only,
    phase_letters, round, slots, spare_spaces, FaultCalculator,
};
use crate::project::{Circuit, CircuitSpec, Panel, ProjectData};

/// A circuit with what can be calculated about it.
pub fn circuit_row(p: &ProjectData, panel: &Panel, c: &Circuit) -> Value {
    let e = circuit_electrical(&panel.spec, &c.spec).ok();
    let vd = circuit_voltage_drop(&panel.spec, &c.spec, None, None);
    json!({
        "panel": panel.spec.name,
        "number": c.spec.number,
        "poles": c.spec.poles,
        "slots": slots(&c.spec).collect::<Vec<_>>(),
        "phases": phase_letters(&panel.spec, &c.spec),
        "description": c.spec.description,
        "load_va": c.spec.load_va.0,
        "continuous": c.spec.continuous,
        "breaker_a": c.spec.breaker.0,
        "conductor": c.spec.conductor_size.map(|s| s.to_string()),
        "material": c.spec.material,
        "insulation": c.spec.insulation,
        "length_ft": c.spec.length.map(|l| l.0),
        "conduit": c.spec.conduit,
        "volts": e.map(|e| round(e.volts, 1)),
        "current_a": e.map(|e| round(e.current, 2)),
        "voltage_drop_percent": vd.as_ref().ok().map(|r| round(r.percent, 2)),
        "voltage_drop_unknown": vd.err().map(|e| e.to_string()),
        "project": p.project.name,
    })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DescribeArgs {
    /// Panel name (may be left out when the project has one panel).
    #[serde(default)]
    panel: Option<String>,
}

/// A panel's schedule, loading, capacity and spaces.
pub struct DescribePanel;

/// Everything about one panel as JSON (shared with the write previews).
pub fn describe(p: &ProjectData, panel: &Panel) -> Value {
    let circuits = p.circuits_of(panel.id);
    let specs: Vec<&CircuitSpec> = circuits.iter().map(|c| &c.spec).collect();
    let schedule: Vec<Value> = circuits.iter().map(|c| circuit_row(p, panel, c)).collect();
    let loading = panel_loading(&panel.spec, &specs);
    let mut notes = Vec::new();
    let capacity = match &loading {
        Ok(Some(r)) => json!({
            "phases": r.phases,
            "connected_va": round(r.continuous_va + r.noncontinuous_va, 0),
            "continuous_va": round(r.continuous_va, 0),
            "noncontinuous_va": round(r.noncontinuous_va, 0),
            "highest_phase_a_with_125pct_continuous": round(r.max_phase_amps, 1),
            "limiting_rating_a": r.limiting_rating.0,
            "spare_a": round(r.spare_amps, 1),
            "percent_of_rating": round(r.max_phase_amps / r.limiting_rating.0 * 100.0, 1),
            "imbalance_percent": round(r.imbalance_percent, 1),
            "pass": r.pass,
            "findings": r.findings,
            "references": r.references,
            "assumptions": r.assumptions,
        }),
        Ok(None) => {
            notes.push("no circuits yet: no load".to_string());
            Value::Null
        }
        Err(e) => {
            notes.push(e.to_string());
            Value::Null
        }
    };
    let mut fc = FaultCalculator::new(p).upper_bound_when_c_unknown();
    let fault = match fc.at(&panel.spec.name) {
        Ok(f) => {
            let bound = !f.upper_bound.is_empty();
            let check = panel.spec.interrupting_rating_ka.map(|r| {
                let pass = r + 1e-9 >= f.fault_ka;
                json!({
                    "interrupting_rating_ka": r,
                    // Below an upper bound the check is undecided, not failed.
                    "pass": if bound && !pass { Value::Null } else { json!(pass) },
                    "reference": "NEC 110.9, 110.10",
                })
            });
            json!({
                "available_fault_ka": round(f.fault_ka, 2),
                "upper_bound": f.upper_bound,
                "steps": f.steps,
                "assumptions": f.assumptions,
                "interrupting_check": check,
            })
        }
        Err(e) => json!({ "unknown": e.to_string() }),
    };
    let downstream: Vec<String> = p
        .panels
        .iter()
        .filter(|x| {
            x.spec
                .fed_from
                .as_deref()
                .is_some_and(|f| f.trim().eq_ignore_ascii_case(panel.spec.name.trim()))
        })
        .map(|x| x.spec.name.clone())
        .chain(
            p.transformers
                .iter()
                .filter(|t| {
                    t.spec
                        .fed_from
                        .as_deref()
                        .is_some_and(|f| f.trim().eq_ignore_ascii_case(panel.spec.name.trim()))
                })
                .map(|t| format!("transformer {}", t.spec.name)),
        )
        .collect();
    if panel.spec.interrupting_rating_ka.is_none() {
        notes.push("interrupting rating (kA) not recorded".into());
    }
    json!({
        "panel": panel.spec,
        "circuit_count": circuits.len(),
        "schedule": schedule,
        "loading": capacity,
        "spaces": panel.spec.spaces,
        "spare_spaces": spare_spaces(&panel.spec, &circuits),
        "next_free_circuit": next_free_number(&panel.spec, &circuits, 1),
        "next_free_2_pole": next_free_number(&panel.spec, &circuits, 2),
        "next_free_3_pole": if panel.spec.phase == Phase::Three { json!(next_free_number(&panel.spec, &circuits, 3)) } else { Value::Null },
        "fault_current": fault,
        "feeds": downstream,
        "notes": notes,
    })
}

#[async_trait]
impl Tool for DescribePanel {
    fn name(&self) -> &'static str {
        "describe_panel"
    }
    fn description(&self) -> &'static str {
        "Describe one panel: its data, the circuit schedule (slots, phases, load, breaker, conductor, \
         current, voltage drop), loads per phase with continuous loads at 125 %, capacity against the \
         bus and main, spare spaces, the next free circuit numbers (1-, 2- and 3-pole), the available \
         fault current with the interrupting-rating check, and what it feeds."
    }
    fn schema(&self) -> Value {
        schema_for::<DescribeArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: DescribeArgs = parse_args(&args)?;
        let p = ctx.project().await?;
        let panel = panel_or_only(&p, a.panel.as_deref())?;
        Ok(describe(&p, panel))
    }
}
