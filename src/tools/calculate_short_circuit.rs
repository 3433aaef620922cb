//! `calculate_short_circuit`: available fault current at a panel or transformer, or from free
//! inputs.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::nec_args::missing_inputs;
use super::schema::schema_for;
use super::{nec_err, parse_args, to_value, Tool, ToolContext, ToolError};
use crate::nec::fault_current::{
    self, FaultType, PointToPointInput, TransformerFaultInput, TransformerFaultResult,
};
use crate::nec::tables::ConduitMagnetism;
use crate::nec::units::{Amps, ConductorSize, Feet, Material, Phase, Volts};
use crate::nec::NecError;
use crate::project::analysis::{resolve_panel, round, FaultCalculator};

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum MagnetismArg {
    /// Steel raceway.
    Steel,
    /// PVC, aluminum or other nonmagnetic raceway.
    Nonmagnetic,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum FaultTypeArg {
    /// Bolted three-phase fault.
    ThreePhase,
    /// Line-to-line fault.
    LineToLine,
    /// Line-to-neutral fault.
    LineToNeutral,
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
    /// Free input: the point-to-point C value of the run, from the published table or the
    /// maker (the shipped table holds the cells two publishers print).
    #[serde(default)]
    c_value: Option<f64>,
    /// Free input: the run's line-to-neutral impedance, ohms per 1000 ft (C = 1000 / Z).
    #[serde(default)]
    impedance_ohms_per_1000ft: Option<f64>,
    /// Free input: three_phase (default on 3 phases), line_to_line (default on 1 phase) or
    /// line_to_neutral (a 120 V or 277 V circuit; `voltage` stays the line-to-line voltage).
    #[serde(default)]
    fault_type: Option<FaultTypeArg>,
    /// Equipment interrupting rating to check, kA (overrides a panel's recorded rating).
    #[serde(default)]
    interrupting_rating_ka: Option<f64>,
}

/// Available fault current at a panel or transformer, or from free inputs.
pub struct CalculateShortCircuit;

/// The 110.9/110.10 check; against an upper bound a pass is a pass (the real current is lower)
/// but a fail is undecided.
fn ic_check(fault_ka: f64, rating_ka: Option<f64>, what: &str, upper_bound: bool) -> Value {
    match rating_ka {
        Some(r) => match fault_current::check_interrupting_rating(
            Amps(fault_ka * 1000.0),
            Amps(r * 1000.0),
        ) {
            Ok(c) if upper_bound && !c.pass => json!({
                "interrupting_rating_ka": r,
                "available_fault_ka_upper_bound": round(fault_ka, 2),
                "pass": Value::Null,
                "undecided": "the rating is below the upper bound; the exact fault current (with the run's impedance) may still be within it",
                "references": c.references,
            }),
            Ok(c) => json!({
                "interrupting_rating_ka": r,
                "available_fault_ka": round(fault_ka, 2),
                "pass": c.pass,
                "margin_ka": round(c.margin.0 / 1000.0, 2),
                "against_upper_bound": upper_bound,
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
         impedance_percent + voltage + phase, and/or available_fault_ka, then length + size of a run; \
         fault_type line_to_neutral for 120/277 V circuits). Without a C value for a run the answer is \
         a labelled upper bound (no conductor impedance) and says what gives the exact figure. Checks \
         the equipment interrupting rating (110.9/110.10) when one is recorded or given."
    }
    fn schema(&self) -> Value {
        schema_for::<ScArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: ScArgs = parse_args(&args)?;
        if a.all_panels {
            let p = ctx.project().await?;
            let mut fc = FaultCalculator::new(&p)
                .with_impedance_tolerance(a.apply_impedance_tolerance)
                .upper_bound_when_c_unknown();
            let rows: Vec<Value> = p
                .panels
                .iter()
                .map(|pn| match fc.at(&pn.spec.name) {
                    Ok(f) => json!({
                        "panel": pn.spec.name,
                        "available_fault_ka": round(f.fault_ka, 2),
                        "upper_bound": f.upper_bound,
                        "interrupting_check": ic_check(f.fault_ka, pn.spec.interrupting_rating_ka, &pn.spec.name, !f.upper_bound.is_empty()),
                    }),
                    Err(e) => json!({ "panel": pn.spec.name, "unknown": e.to_string() }),
                })
                .collect();
            return Ok(json!({ "panels": rows }));
        }
        if let Some(name) = &a.panel {
            let p = ctx.project().await?;
            let panel = resolve_panel(&p, name)?;
            let mut fc = FaultCalculator::new(&p)
                .with_impedance_tolerance(a.apply_impedance_tolerance)
                .upper_bound_when_c_unknown();
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
                "upper_bound": f.upper_bound,
                "interrupting_check": ic_check(f.fault_ka, rating, &format!("panel {}", panel.spec.name), !f.upper_bound.is_empty()),
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
                "available_fault_a": round(r.available_fault_current.0, 0),
                "interrupting_check": a.interrupting_rating_ka.map(|r| ic_check(ka, Some(r), "the equipment", false)),
                "calculation": transformer_step(&r),
            }));
        }
        free_inputs(&a)
    }
}

/// A transformer's fault current as the model reads it: every current carries its unit in its
/// name and is rounded (a small model reading a bare 3568.786 next to 3.57 kA has answered
/// "3568.786 kA").
fn transformer_step(t: &TransformerFaultResult) -> Value {
    let mut step = json!({
        "full_load_a": round(t.full_load_current.0, 1),
        "percent_z_used": t.percent_z_used,
        "multiplier": round(t.multiplier, 2),
        "transformer_fault_a": round(t.transformer_fault_current.0, 0),
        "method": t.method,
        "references": t.references,
        "assumptions": t.assumptions,
    });
    if t.motor_contribution.0 > 0.0 {
        step["motor_contribution_a"] = json!(round(t.motor_contribution.0, 0));
    }
    step
}

/// The fault type asked for, by default the bolted fault of the phases given.
fn fault_type(a: &ScArgs) -> FaultType {
    match (a.fault_type, a.phase) {
        (Some(FaultTypeArg::ThreePhase), _) | (None, Some(Phase::Three)) => FaultType::ThreePhase,
        (Some(FaultTypeArg::LineToNeutral), _) => FaultType::SinglePhaseLineToNeutral,
        _ => FaultType::SinglePhaseLineToLine,
    }
}

/// Free inputs: a transformer secondary, a run from a known fault current, or both in a row.
fn free_inputs(a: &ScArgs) -> Result<Value, ToolError> {
    let run_given = a.length.is_some()
        || a.size.is_some()
        || a.c_value.is_some()
        || a.impedance_ohms_per_1000ft.is_some();
    let transformer = a.kva.is_some() || a.impedance_percent.is_some();
    if !transformer && a.available_fault_ka.is_none() {
        return Err(ToolError::InvalidArguments(
            "name a panel or transformer of the project, set all_panels, or give free inputs (kva + impedance_percent + voltage + phase for a transformer secondary, available_fault_ka for a known starting current, then length + size for a run)".into(),
        ));
    }
    if a.fault_type == Some(FaultTypeArg::ThreePhase) && a.phase == Some(Phase::Single) {
        return Err(ToolError::InvalidArguments(
            "a three-phase fault needs phase 3".into(),
        ));
    }
    let kind = fault_type(a);
    let mut missing = vec![
        ("voltage (line to line)", a.voltage.is_some()),
        ("phase", a.phase.is_some()),
    ];
    if transformer {
        missing.insert(0, ("impedance_percent", a.impedance_percent.is_some()));
        missing.insert(0, ("kva", a.kva.is_some()));
    }
    if run_given || !transformer {
        missing.push(("length", a.length.is_some()));
        missing.push((
            "size (or c_value, or impedance_ohms_per_1000ft)",
            a.size.is_some() || a.c_value.is_some() || a.impedance_ohms_per_1000ft.is_some(),
        ));
    }
    let missing = missing_inputs(&missing);
    if !missing.is_empty() {
        return Err(ToolError::MissingData(format!(
            "this fault-current calculation needs {}",
            missing.join(", ")
        )));
    }
    let phase = a.phase.unwrap_or(Phase::Three);
    let e_ll = a.voltage.unwrap_or_default();
    let mut assumptions: Vec<String> = Vec::new();
    let mut steps: Vec<Value> = Vec::new();
    // Where the run starts: a transformer's secondary terminals or a given current.
    let start_a = if transformer {
        let t = fault_current::transformer_fault_current(&TransformerFaultInput {
            kva: a.kva.unwrap_or_default(),
            secondary_voltage: e_ll,
            phase,
            percent_z: a.impedance_percent.unwrap_or_default(),
            apply_impedance_tolerance: a.apply_impedance_tolerance,
            motor_full_load_current: None,
        })
        .map_err(nec_err)?;
        let at_terminals = t.available_fault_current.0;
        let start = match (kind, phase) {
            (FaultType::SinglePhaseLineToNeutral, Phase::Single) => {
                assumptions.push("line-to-neutral fault at a center-tapped single-phase secondary: 1.5 × the line-to-line fault current at the terminals (SPD handbook note; 1.33 to 1.67 in practice)".into());
                1.5 * at_terminals
            }
            (FaultType::SinglePhaseLineToNeutral, Phase::Three) => {
                assumptions.push("line-to-neutral fault at a three-phase wye secondary: taken equal to the three-phase fault current at the terminals".into());
                at_terminals
            }
            _ => at_terminals,
        };
        let mut step = transformer_step(&t);
        step["at"] = json!("transformer secondary terminals");
        step["fault_ka"] = json!(round(start / 1000.0, 2));
        step["fault_a"] = json!(round(start, 0));
        steps.push(step);
        start
    } else {
        let ka = a.available_fault_ka.unwrap_or_default();
        if kind == FaultType::SinglePhaseLineToNeutral {
            assumptions.push("the given fault current is taken as the line-to-neutral fault current at the start of the run".into());
        }
        ka * 1000.0
    };
    if !run_given {
        let ka = start_a / 1000.0;
        return Ok(json!({
            "at": "transformer secondary",
            "fault_type": kind,
            "available_fault_ka": round(ka, 2),
            "available_fault_a": round(start_a, 0),
            "interrupting_check": a.interrupting_rating_ka.map(|r| ic_check(ka, Some(r), "the equipment", false)),
            "steps": steps,
            "assumptions": assumptions,
        }));
    }
    if a.material.is_none() && a.c_value.is_none() && a.impedance_ohms_per_1000ft.is_none() {
        assumptions.push("material not given: copper".to_string());
    }
    if a.raceway.is_none() && a.c_value.is_none() && a.impedance_ohms_per_1000ft.is_none() {
        assumptions.push("raceway not given: nonmagnetic (the higher fault current)".to_string());
    }
    let voltage = match (kind, phase) {
        (FaultType::SinglePhaseLineToNeutral, Phase::Three) => Volts(e_ll.0 / 3f64.sqrt()),
        (FaultType::SinglePhaseLineToNeutral, Phase::Single) => Volts(e_ll.0 / 2.0),
        _ => e_ll,
    };
    let c_value = match (a.c_value, a.impedance_ohms_per_1000ft) {
        (Some(c), _) => Some(c),
        (None, Some(z)) => Some(fault_current::c_from_impedance(z).map_err(nec_err)?),
        (None, None) => None,
    };
    let input = PointToPointInput {
        available_fault_current: Amps(start_a),
        voltage,
        fault_type: kind,
        length: a.length.unwrap_or_default(),
        size: a.size.unwrap_or(ConductorSize::Awg(12)),
        material: a.material.unwrap_or(Material::Copper),
        conduit: match a.raceway {
            Some(MagnetismArg::Steel) => ConduitMagnetism::Steel,
            _ => ConduitMagnetism::Nonmagnetic,
        },
        parallel_sets: a.parallel_sets.unwrap_or(1),
        c_value,
        equipment_interrupting_rating: None,
    };
    match fault_current::point_to_point(&input) {
        Ok(r) => {
            let ka = r.fault_current.0 / 1000.0;
            Ok(json!({
                "at": "end of the run",
                "fault_type": kind,
                "available_fault_ka": round(ka, 2),
                "available_fault_a": round(r.fault_current.0, 0),
                "interrupting_check": a.interrupting_rating_ka.map(|r| ic_check(ka, Some(r), "the equipment", false)),
                "steps": steps,
                "calculation": to_value(&r)?,
                "assumptions": assumptions,
            }))
        }
        // 110.9/110.10: without the run's C value the source's current is an upper bound.
        Err(e @ NecError::NotVerified { .. }) => {
            let ka = start_a / 1000.0;
            Ok(json!({
                "at": "end of the run",
                "fault_type": kind,
                "available_fault_ka": round(ka, 2),
                "available_fault_a": round(start_a, 0),
                "upper_bound": true,
                "label": "UPPER BOUND: the fault current at the start of the run, with no conductor impedance; the real value at the end of the run is lower",
                "why": e.to_string(),
                "exact_figure_needs": "the run's C value (c_value, from the published point-to-point table or the cable maker) or its impedance (impedance_ohms_per_1000ft)",
                "use": "good for interrupting ratings (110.9/110.10): equipment rated at or above it is adequate; not for arc flash, where a lower current can mean more incident energy",
                "interrupting_check": a.interrupting_rating_ka.map(|r| ic_check(ka, Some(r), "the equipment", true)),
                "steps": steps,
                "assumptions": assumptions,
            }))
        }
        Err(e) => Err(nec_err(e)),
    }
}
