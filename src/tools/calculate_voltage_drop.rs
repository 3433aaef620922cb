//! `calculate_voltage_drop`: voltage drop of a circuit or feeder of the project, or of free
//! inputs.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::nec_args::{circuit_ref, missing_inputs};
use super::schema::schema_for;
use super::{parse_args, to_value, Tool, ToolContext, ToolError};
use crate::nec::tables::{Conduit, Stranding};
use crate::nec::units::{Amps, ConductorSize, Feet, Material, Phase, Volts};
use crate::nec::voltage_drop::{self, KSource, VoltageDropInput, VoltageDropMethod};
use crate::project::analysis::{
    circuit_label, circuit_vd_input, feeder_drops_to_panel, feeder_vd_input, resolve_circuit,
    resolve_feeder, round,
};

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum VdMethodArg {
    /// Resistive K-factor method with Chapter 9 Table 8 resistance (the default).
    KFactor,
    /// Effective impedance with Chapter 9 Table 9 (needs power_factor and raceway).
    EffectiveZ,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum RacewayArg {
    /// PVC or other nonmetallic raceway.
    Pvc,
    /// Aluminum raceway.
    Aluminum,
    /// Steel raceway.
    Steel,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct VdArgs {
    /// Panel of the circuit.
    #[serde(default)]
    panel: Option<String>,
    /// Circuit number in the panel.
    #[serde(default)]
    number: Option<i32>,
    /// Circuit by description words ("the EV charger") or "LP-1 #5".
    #[serde(default)]
    description: Option<String>,
    /// A feeder of the project by name (its load is the connected load of the panel it feeds).
    #[serde(default)]
    feeder: Option<String>,
    /// Free input (or override for a project circuit): voltage the percentage is taken of.
    #[serde(default)]
    voltage: Option<Volts>,
    /// Free input: 1 or 3 phases.
    #[serde(default)]
    phase: Option<Phase>,
    /// Load current (free input, or override of the calculated current).
    #[serde(default)]
    current: Option<Amps>,
    /// One-way length in feet (free input, or override of the recorded length).
    #[serde(default)]
    length: Option<Feet>,
    /// Conductor size (free input, or a size to try instead of the recorded one).
    #[serde(default)]
    size: Option<ConductorSize>,
    /// Conductor material (free input; default copper, stated as an assumption).
    #[serde(default)]
    material: Option<Material>,
    /// Parallel sets (free input; default 1).
    #[serde(default)]
    parallel_sets: Option<u32>,
    /// Method: k_factor (default) or effective_z.
    #[serde(default)]
    method: Option<VdMethodArg>,
    /// Power factor for effective_z.
    #[serde(default)]
    power_factor: Option<f64>,
    /// Raceway for effective_z: pvc, aluminum or steel.
    #[serde(default)]
    raceway: Option<RacewayArg>,
    /// Also find the smallest conductor meeting this drop (percent).
    #[serde(default)]
    target_percent: Option<f64>,
    /// K for k_factor: table8 (default: Chapter 9 Table 8 R × area) or customary (12.9 Cu /
    /// 21.2 Al).
    #[serde(default)]
    k: Option<KName>,
    /// A given K, Ω·cmil/ft (instead of k).
    #[serde(default)]
    k_value: Option<f64>,
    /// Conductor temperature, °C (default 75): corrects Table 8 resistance (its Note 2).
    #[serde(default)]
    conductor_temp_c: Option<f64>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum KName {
    Table8,
    Customary,
}

/// Voltage drop of a circuit or feeder of the project, or of free inputs.
pub struct CalculateVoltageDrop;

fn apply_method(input: &mut VoltageDropInput, a: &VdArgs) -> Result<(), ToolError> {
    input.conductor_temp_c = a.conductor_temp_c;
    let k = match (a.k, a.k_value) {
        (Some(_), Some(_)) => {
            return Err(ToolError::InvalidArguments(
                "give k (table8 or customary) or k_value, not both".into(),
            ))
        }
        (Some(KName::Table8), None) => Some(KSource::Table8),
        (Some(KName::Customary), None) => Some(KSource::Constant),
        (None, Some(k)) => Some(KSource::Custom { k }),
        (None, None) => None,
    };
    if let Some(k) = k {
        if let Some(VdMethodArg::EffectiveZ) = a.method {
            return Err(ToolError::InvalidArguments(
                "k and k_value apply to the k_factor method, not effective_z".into(),
            ));
        }
        input.method = VoltageDropMethod::KFactor {
            k,
            stranding: Stranding::Stranded,
        };
    }
    if let Some(VdMethodArg::EffectiveZ) = a.method {
        let missing = missing_inputs(&[
            ("power_factor", a.power_factor.is_some()),
            ("raceway (pvc, aluminum or steel)", a.raceway.is_some()),
        ]);
        if !missing.is_empty() {
            return Err(ToolError::MissingData(format!(
                "the effective_z method needs {}",
                missing.join(" and ")
            )));
        }
        input.method = VoltageDropMethod::EffectiveZ {
            conduit: match a.raceway {
                Some(RacewayArg::Pvc) | None => Conduit::Pvc,
                Some(RacewayArg::Aluminum) => Conduit::Aluminum,
                Some(RacewayArg::Steel) => Conduit::Steel,
            },
            power_factor: a.power_factor.unwrap_or(1.0),
        };
    }
    Ok(())
}

fn assess(percent: f64) -> String {
    if percent <= 3.0 {
        "within the 3 % recommended for a branch circuit or feeder (informational notes, 210.19(A) / 215.2(A))".into()
    } else if percent <= 5.0 {
        "above 3 % for one branch circuit or feeder; within 5 % only if the rest of the path is small".into()
    } else {
        "above the 5 % total recommended in the informational notes of 210.19(A) / 215.2(A)".into()
    }
}

#[async_trait]
impl Tool for CalculateVoltageDrop {
    fn name(&self) -> &'static str {
        "calculate_voltage_drop"
    }
    fn description(&self) -> &'static str {
        "Voltage drop of a project circuit (panel + number, or description like \"the EV charger\"), \
         of a project feeder (by name, at the load of the panel it feeds), or of free inputs (voltage, \
         phase, current, one-way length, size, material). K-factor method with Chapter 9 Table 8 by \
         default (k: table8, customary 12.9/21.2, or k_value; conductor_temp_c corrects R per Table 8 \
         Note 2), or effective_z with Table 9 (needs power_factor and raceway). For a circuit it adds \
         the feeder drops on the way from the service for the total. Optional target_percent finds the \
         smallest conductor meeting it. A circuit without a length is an error naming it."
    }
    fn schema(&self) -> Value {
        schema_for::<VdArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: VdArgs = parse_args(&args)?;
        let r = circuit_ref(&a.panel, a.number, &a.description);
        let mut assumptions: Vec<String> = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        let mut total: Option<Value> = None;
        let (what, mut input) = if let Some(name) = &a.feeder {
            let p = ctx.project().await?;
            let f = resolve_feeder(&p, name)?;
            if a.current.is_none() {
                assumptions.push(format!(
                    "current = connected highest-phase load of panel {} (no demand factors, continuous loads at 100 %)",
                    f.spec.to
                ));
            }
            let mut input = feeder_vd_input(&p, f, a.length, a.current)?;
            if let Some(s) = a.size {
                input.size = s;
            }
            (
                format!("feeder {} ({} -> {})", f.spec.name, f.spec.from, f.spec.to),
                input,
            )
        } else if r.is_given() {
            let p = ctx.project().await?;
            let (panel, c, n) = resolve_circuit(&p, &r)?;
            notes.extend(n);
            if a.current.is_none() {
                assumptions.push("current = recorded load VA / circuit voltage".into());
            }
            let mut input = circuit_vd_input(&panel.spec, &c.spec, a.length, a.current, a.size)?;
            if let Some(v) = a.voltage {
                input.source_voltage = v;
            }
            match feeder_drops_to_panel(&p, &panel.spec) {
                Ok(drops) if !drops.is_empty() => {
                    total = Some(json!({ "feeders": drops.iter().map(|(n, pct)| json!({"feeder": n, "percent": round(*pct, 2)})).collect::<Vec<_>>() }));
                }
                Ok(_) => notes.push(format!(
                    "no feeder to panel {} is recorded: the total drop from the service is not known",
                    panel.spec.name
                )),
                Err(e) => notes.push(format!("feeder drop to {} unknown: {e}", panel.spec.name)),
            }
            (circuit_label(&panel.spec, &c.spec), input)
        } else {
            let missing = missing_inputs(&[
                ("voltage", a.voltage.is_some()),
                ("phase", a.phase.is_some()),
                ("current", a.current.is_some()),
                ("length", a.length.is_some()),
                ("size", a.size.is_some()),
            ]);
            if missing.len() == 5 {
                return Err(ToolError::InvalidArguments(
                    "name a circuit (panel + number, or description), a feeder, or give voltage, phase, current, length and size".into(),
                ));
            }
            if !missing.is_empty() {
                return Err(ToolError::MissingData(format!(
                    "free inputs need {}",
                    missing.join(", ")
                )));
            }
            if a.material.is_none() {
                assumptions.push("material not given: copper".into());
            }
            (
                "free inputs".to_string(),
                VoltageDropInput {
                    conductor_temp_c: None,
                    phase: a.phase.unwrap_or(Phase::Single),
                    source_voltage: a.voltage.unwrap_or_default(),
                    current: a.current.unwrap_or_default(),
                    length: a.length.unwrap_or_default(),
                    size: a.size.unwrap_or(ConductorSize::Awg(12)),
                    material: a.material.unwrap_or(Material::Copper),
                    parallel_sets: a.parallel_sets.unwrap_or(1),
                    method: crate::project::analysis::default_vd_method(),
                },
            )
        };
        if let Some(m) = a.material {
            input.material = m;
        }
        apply_method(&mut input, &a)?;
        let result = voltage_drop::voltage_drop(&input)
            .map_err(|e| ToolError::InvalidArguments(format!("{what}: {e}")))?;
        if let Some(t) = total.as_mut() {
            let feeders: f64 = t["feeders"]
                .as_array()
                .map(|v| v.iter().filter_map(|x| x["percent"].as_f64()).sum())
                .unwrap_or(0.0);
            let sum = feeders + result.percent;
            t["branch_percent"] = json!(round(result.percent, 2));
            t["total_percent"] = json!(round(sum, 2));
            t["within_5_percent"] = json!(sum <= 5.0);
        }
        let suggestion = match a.target_percent {
            Some(target) => match voltage_drop::smallest_conductor_for_drop(target, &input) {
                Ok(s) => json!({
                    "target_percent": target,
                    "smallest_size": s.size.to_string(),
                    "percent_at_that_size": round(s.drop.percent, 2),
                    "note": s.note,
                }),
                Err(e) => json!({ "target_percent": target, "error": e.to_string() }),
            },
            None => Value::Null,
        };
        Ok(json!({
            "for": what,
            "voltage_drop_v": round(result.voltage_drop.0, 2),
            "percent": round(result.percent, 2),
            "receiving_end_v": round(result.receiving_end_voltage.0, 1),
            "assessment": assess(result.percent),
            "k_used": result.k.map(|k| round(k, 3)),
            "k_basis": result.k_basis,
            "total_from_service": total,
            "smallest_conductor_for_target": suggestion,
            "calculation": to_value(&result)?,
            "assumptions": assumptions,
            "notes": notes,
        }))
    }
}
