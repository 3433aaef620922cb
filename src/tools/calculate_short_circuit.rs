//! `calculate_short_circuit`: available fault current at a panel or transformer, or from free
//! inputs.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::nec_args::missing_inputs;
use super::schema::schema_for;
use super::{nec_err, parse_args, to_value, Tool, ToolContext, ToolError};
use crate::nec::fault_current::{self, FaultType, PointToPointInput, TransformerFaultInput};
use crate::nec::tables::ConduitMagnetism;
use crate::nec::units::{Amps, ConductorSize, Feet, Material, Phase, Volts};
use crate::project::analysis::{resolve_panel, round, FaultCalculator};

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum MagnetismArg {
    /// Steel raceway.
    Steel,
    /// PVC, aluminum or other nonmagnetic raceway.
    Nonmagnetic,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ScArgs {
    /// A panel of the project: fault current along its fed-from chain, checked against its
    /// interrupting rating.
    #[serde(default)]
    panel: Option<String>,
    /// A transformer of the project: fault current at its secondary.
    #[serde(default)]
    transformer: Option<String>,
    /// Every panel of the project, with the interrupting-rating check of each.
    #[serde(default)]
    all_panels: bool,
    /// Free transformer input: kVA.
    #[serde(default)]
    kva: Option<f64>,
    /// Free transformer input: %Z.
    #[serde(default)]
    impedance_percent: Option<f64>,
    /// Apply the −10 % transformer impedance tolerance (worst case), to free inputs or to the
    /// project's transformers along the chain.
    #[serde(default)]
    apply_impedance_tolerance: bool,
    /// Free input: fault current at the start of a conductor run, kA.
    #[serde(default)]
    available_fault_ka: Option<f64>,
    /// Free input: line-to-line voltage (transformer secondary, or the run's system).
    #[serde(default)]
    voltage: Option<Volts>,
    /// Free input: 1 or 3 phases.
    #[serde(default)]
    phase: Option<Phase>,
    /// Free input: one-way length of the run.
    #[serde(default)]
    length: Option<Feet>,
    /// Free input: conductor size of the run.
    #[serde(default)]
    size: Option<ConductorSize>,
    /// Free input: conductor material (default copper, stated).
    #[serde(default)]
    material: Option<Material>,
    /// Free input: raceway, steel or nonmagnetic (default nonmagnetic: the higher current).
    #[serde(default)]
    raceway: Option<MagnetismArg>,
    /// Free input: parallel sets.
    #[serde(default)]
    parallel_sets: Option<u32>,
    /// Free input: the point-to-point C value of the run, from the published table (the
    /// shipped table holds only the cells confirmed by two independent sources).
    #[serde(default)]
    c_value: Option<f64>,
    /// Equipment interrupting rating to check, kA (overrides a panel's recorded rating).
    #[serde(default)]
    interrupting_rating_ka: Option<f64>,
}

/// Available fault current at a panel or transformer, or from free inputs.
pub struct CalculateShortCircuit;

fn ic_check(fault_ka: f64, rating_ka: Option<f64>, what: &str) -> Value {
    match rating_ka {
        Some(r) => match fault_current::check_interrupting_rating(
            Amps(fault_ka * 1000.0),
            Amps(r * 1000.0),
        ) {
            Ok(c) => json!({
                "interrupting_rating_ka": r,
                "available_fault_ka": round(fault_ka, 2),
                "pass": c.pass,
                "margin_ka": round(c.margin.0 / 1000.0, 2),
                "references": c.references,
            }),
            Err(e) => json!({ "error": e.to_string() }),
        },
        None => json!({
            "skipped": format!("{what} has no interrupting rating recorded; record interrupting_rating_ka to check 110.9/110.10"),
        }),
    }
}

#[async_trait]
impl Tool for CalculateShortCircuit {
    fn name(&self) -> &'static str {
        "calculate_short_circuit"
    }
    fn description(&self) -> &'static str {
        "Available (bolted) fault current: at a project panel (from the service's available fault current \
         or a transformer secondary, reduced by point-to-point over the recorded feeders), at a project \
         transformer's secondary, for every panel (all_panels), or from free inputs (transformer kva + \
         impedance_percent + voltage + phase, or available_fault_ka + voltage + phase + length + size of \
         a run). Checks the equipment interrupting rating (110.9/110.10) when one is recorded or given."
    }
    fn schema(&self) -> Value {
        schema_for::<ScArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: ScArgs = parse_args(&args)?;
        if a.all_panels {
            let p = ctx.project().await?;
            let mut fc =
                FaultCalculator::new(&p).with_impedance_tolerance(a.apply_impedance_tolerance);
            let rows: Vec<Value> = p
                .panels
                .iter()
                .map(|pn| match fc.at(&pn.spec.name) {
                    Ok(f) => json!({
                        "panel": pn.spec.name,
                        "available_fault_ka": round(f.fault_ka, 2),
                        "interrupting_check": ic_check(f.fault_ka, pn.spec.interrupting_rating_ka, &pn.spec.name),
                    }),
                    Err(e) => json!({ "panel": pn.spec.name, "unknown": e.to_string() }),
                })
                .collect();
            return Ok(json!({ "panels": rows }));
        }
        if let Some(name) = &a.panel {
            let p = ctx.project().await?;
            let panel = resolve_panel(&p, name)?;
            let mut fc =
                FaultCalculator::new(&p).with_impedance_tolerance(a.apply_impedance_tolerance);
            let f = fc.at(&panel.spec.name)?;
            let rating = a
                .interrupting_rating_ka
                .or(panel.spec.interrupting_rating_ka);
            let mut assumptions = f.assumptions.clone();
            assumptions.push("bolted three-phase (or line-to-line single-phase) symmetrical fault; no motor contribution".to_string());
            assumptions.push(
                "fully rated equipment: series-combination ratings (240.86) are not considered"
                    .to_string(),
            );
            return Ok(json!({
                "at": panel.spec.name,
                "available_fault_ka": round(f.fault_ka, 2),
                "steps": f.steps,
                "interrupting_check": ic_check(f.fault_ka, rating, &format!("panel {}", panel.spec.name)),
                "assumptions": assumptions,
                "references": ["NEC 110.9", "NEC 110.10", "NEC 110.24", "Eaton Bussmann SPD point-to-point method"],
            }));
        }
        if let Some(name) = &a.transformer {
            let p = ctx.project().await?;
            let t = p
                .transformers
                .iter()
                .find(|t| t.spec.name.eq_ignore_ascii_case(name.trim()))
                .ok_or_else(|| {
                    ToolError::NotFound(format!(
                        "there is no transformer named '{}'; transformers: {}",
                        name.trim(),
                        p.transformers
                            .iter()
                            .map(|t| t.spec.name.clone())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?;
            let r = fault_current::transformer_fault_current(&TransformerFaultInput {
                kva: t.spec.kva,
                secondary_voltage: t.spec.secondary_voltage,
                phase: t.spec.phase,
                percent_z: t.spec.impedance_percent,
                apply_impedance_tolerance: a.apply_impedance_tolerance,
                motor_full_load_current: None,
            })
            .map_err(|e| {
                ToolError::InvalidArguments(format!("transformer {}: {e}", t.spec.name))
            })?;
            let ka = r.available_fault_current.0 / 1000.0;
            return Ok(json!({
                "at": format!("{} secondary", t.spec.name),
                "available_fault_ka": round(ka, 2),
                "interrupting_check": a.interrupting_rating_ka.map(|r| ic_check(ka, Some(r), "the equipment")),
                "calculation": to_value(&r)?,
            }));
        }
        let material = a.material.unwrap_or(Material::Copper);
        if a.kva.is_some() || a.impedance_percent.is_some() {
            let missing = missing_inputs(&[
                ("kva", a.kva.is_some()),
                ("impedance_percent", a.impedance_percent.is_some()),
                ("voltage (secondary, line to line)", a.voltage.is_some()),
                ("phase", a.phase.is_some()),
            ]);
            if !missing.is_empty() {
                return Err(ToolError::MissingData(format!(
                    "a transformer fault current needs {}",
                    missing.join(", ")
                )));
            }
            let r = fault_current::transformer_fault_current(&TransformerFaultInput {
                kva: a.kva.unwrap_or_default(),
                secondary_voltage: a.voltage.unwrap_or_default(),
                phase: a.phase.unwrap_or(Phase::Three),
                percent_z: a.impedance_percent.unwrap_or_default(),
                apply_impedance_tolerance: a.apply_impedance_tolerance,
                motor_full_load_current: None,
            })
            .map_err(nec_err)?;
            let ka = r.available_fault_current.0 / 1000.0;
            return Ok(json!({
                "at": "transformer secondary",
                "available_fault_ka": round(ka, 2),
                "interrupting_check": a.interrupting_rating_ka.map(|r| ic_check(ka, Some(r), "the equipment")),
                "calculation": to_value(&r)?,
            }));
        }
        if a.available_fault_ka.is_some() {
            let missing = missing_inputs(&[
                ("voltage", a.voltage.is_some()),
                ("phase", a.phase.is_some()),
                ("length", a.length.is_some()),
                ("size (or c_value)", a.size.is_some() || a.c_value.is_some()),
            ]);
            if !missing.is_empty() {
                return Err(ToolError::MissingData(format!(
                    "a point-to-point calculation needs {}",
                    missing.join(", ")
                )));
            }
            let mut assumptions = Vec::new();
            if a.material.is_none() {
                assumptions.push("material not given: copper".to_string());
            }
            if a.raceway.is_none() {
                assumptions
                    .push("raceway not given: nonmagnetic (the higher fault current)".to_string());
            }
            let r = fault_current::point_to_point(&PointToPointInput {
                available_fault_current: Amps(a.available_fault_ka.unwrap_or_default() * 1000.0),
                voltage: a.voltage.unwrap_or_default(),
                fault_type: match a.phase {
                    Some(Phase::Three) => FaultType::ThreePhase,
                    _ => FaultType::SinglePhaseLineToLine,
                },
                length: a.length.unwrap_or_default(),
                size: a.size.unwrap_or(ConductorSize::Awg(12)),
                material,
                conduit: match a.raceway {
                    Some(MagnetismArg::Steel) => ConduitMagnetism::Steel,
                    _ => ConduitMagnetism::Nonmagnetic,
                },
                parallel_sets: a.parallel_sets.unwrap_or(1),
                c_value: a.c_value,
                equipment_interrupting_rating: a.interrupting_rating_ka.map(|k| Amps(k * 1000.0)),
            })
            .map_err(nec_err)?;
            let ka = r.fault_current.0 / 1000.0;
            return Ok(json!({
                "at": "end of the run",
                "available_fault_ka": round(ka, 2),
                "interrupting_check": a.interrupting_rating_ka.map(|r| ic_check(ka, Some(r), "the equipment")),
                "calculation": to_value(&r)?,
                "assumptions": assumptions,
            }));
        }
        Err(ToolError::InvalidArguments(
            "name a panel or transformer of the project, set all_panels, or give free inputs (kva + impedance_percent + voltage + phase, or available_fault_ka + voltage + phase + length + size)".into(),
        ))
    }
}
