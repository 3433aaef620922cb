//! NEC pack: read-only calculations over the project and the NEC engine.
//!
//! Every tool works on a piece of equipment of the project (a circuit by panel and number or
//! description, a feeder, a panel, a transformer) or on free inputs. Values the project lacks
//! are never invented: the error names the equipment and the missing field, and every result
//! lists the assumptions it used.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::code_basis::WithCodeBasis;
use super::schema::schema_for;
use super::{nec_err, parse_args, to_value, Tool, ToolContext, ToolError, ToolRegistry};
use crate::nec::arc_flash::{self, AcEquipment, ArcFlashRequest, ElectrodeConfiguration};
use crate::nec::conductors::{self, ConductorSizingInput};
use crate::nec::dwelling::{self, Appliance, ExistingDwellingInput};
use crate::nec::fault_current::{self, FaultType, PointToPointInput, TransformerFaultInput};
use crate::nec::grounding::{self, EgcInput};
use crate::nec::tables::Stranding;
use crate::nec::tables::{self, Conduit, ConduitMagnetism, DeviceKind};
use crate::nec::units::{
    Amps, ConductorSize, Edition, Feet, Material, Phase, TempRating, UnitParseError, Volts,
};
use crate::nec::voltage_drop::{self, KSource, VoltageDropInput, VoltageDropMethod};
use crate::project::analysis::{
    circuit_conductor_input, circuit_electrical, circuit_label, circuit_vd_input,
    feeder_drops_to_panel, feeder_load_current, feeder_vd_input, panel_loading, panel_or_only,
    resolve_circuit, resolve_feeder, resolve_panel, round, spare_spaces, CircuitElectrical,
    CircuitRef, FaultCalculator,
};
use crate::project::circuit_protection::{protection_rule, MotorCircuitJudgement, ProtectionRule};
use crate::project::{CircuitSpec, ProjectData};

/// Registers the NEC tools.
pub fn register(r: &mut ToolRegistry) {
    // Every result names the edition used and why (see `code_basis`).
    r.register(WithCodeBasis(CalculateVoltageDrop));
    r.register(WithCodeBasis(CalculateShortCircuit));
    r.register(WithCodeBasis(CheckPanelCapacity));
    r.register(WithCodeBasis(CheckConductorSizing));
    r.register(WithCodeBasis(CalculateArcFlash));
    r.register(WithCodeBasis(CheckServiceUpgrade));
    r.register(WithCodeBasis(LookupTable));
}

/// The edition the project's calculations use (the code in force when Sparky ships it).
pub(crate) async fn edition_of(ctx: &ToolContext) -> Edition {
    match ctx.code_in_force().await {
        Ok(Some(code)) => code.tables,
        _ => Edition::default(),
    }
}

fn circuit_ref(
    panel: &Option<String>,
    number: Option<i32>,
    description: &Option<String>,
) -> CircuitRef {
    CircuitRef {
        panel: panel.clone(),
        number,
        description: description.clone(),
    }
}

// ---------------------------------------------------------------------------------------------
// calculate_voltage_drop

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
        let mut missing = Vec::new();
        if a.power_factor.is_none() {
            missing.push("power_factor");
        }
        if a.raceway.is_none() {
            missing.push("raceway (pvc, aluminum or steel)");
        }
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
            let mut missing = Vec::new();
            if a.voltage.is_none() {
                missing.push("voltage");
            }
            if a.phase.is_none() {
                missing.push("phase");
            }
            if a.current.is_none() {
                missing.push("current");
            }
            if a.length.is_none() {
                missing.push("length");
            }
            if a.size.is_none() {
                missing.push("size");
            }
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

// ---------------------------------------------------------------------------------------------
// calculate_short_circuit

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
            let mut missing = Vec::new();
            if a.kva.is_none() {
                missing.push("kva");
            }
            if a.impedance_percent.is_none() {
                missing.push("impedance_percent");
            }
            if a.voltage.is_none() {
                missing.push("voltage (secondary, line to line)");
            }
            if a.phase.is_none() {
                missing.push("phase");
            }
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
            let mut missing = Vec::new();
            for (name, given) in [
                ("voltage", a.voltage.is_some()),
                ("phase", a.phase.is_some()),
                ("length", a.length.is_some()),
                ("size (or c_value)", a.size.is_some() || a.c_value.is_some()),
            ] {
                if !given {
                    missing.push(name);
                }
            }
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

// ---------------------------------------------------------------------------------------------
// check_panel_capacity

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PanelCapArgs {
    /// Panel name (may be left out when the project has one panel).
    #[serde(default)]
    panel: Option<String>,
    /// The main (or feeder) OCPD is listed for 100 % continuous operation.
    #[serde(default)]
    main_100_percent_rated: bool,
}

/// Panel loading against bus and main.
pub struct CheckPanelCapacity;

#[async_trait]
impl Tool for CheckPanelCapacity {
    fn name(&self) -> &'static str {
        "check_panel_capacity"
    }
    fn description(&self) -> &'static str {
        "Check a panel's loading from its circuit schedule: per-phase load with continuous loads at 125 %, \
         against the bus and main ratings (408.30, 210.20(A)/215.3/230.42(A)), phase imbalance, spare \
         amperes and spare spaces. Set main_100_percent_rated only if the main is listed for 100 %."
    }
    fn schema(&self) -> Value {
        schema_for::<PanelCapArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: PanelCapArgs = parse_args(&args)?;
        let p = ctx.project().await?;
        let panel = panel_or_only(&p, a.panel.as_deref())?;
        let circuits = p.circuits_of(panel.id);
        if circuits.is_empty() {
            return Err(ToolError::MissingData(format!(
                "panel {} has no circuits, so it has no load to check; add circuits first",
                panel.spec.name
            )));
        }
        let specs: Vec<&CircuitSpec> = circuits.iter().map(|c| &c.spec).collect();
        let mut input = crate::project::analysis::panel_input(&panel.spec, &specs);
        input.main_100_percent_rated = a.main_100_percent_rated;
        let r = crate::nec::panel::panel_capacity(&input)
            .map_err(|e| ToolError::InvalidArguments(format!("panel {}: {e}", panel.spec.name)))?;
        let mut v = to_value(&r)?;
        if let Some(o) = v.as_object_mut() {
            // The input echoes every circuit; the schedule is what describe_panel is for.
            o.remove("input");
        }
        Ok(json!({
            "panel": panel.spec.name,
            "bus_rating_a": panel.spec.bus_rating.0,
            "main_breaker_a": panel.spec.main_breaker.map(|m| m.0),
            "circuits": circuits.len(),
            "spaces": panel.spec.spaces,
            "spare_spaces": spare_spaces(&panel.spec, &circuits),
            "percent_of_rating": round(r.max_phase_amps / r.limiting_rating.0 * 100.0, 1),
            "result": v,
        }))
    }
}

// ---------------------------------------------------------------------------------------------
// check_conductor_sizing

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum DeviceArg {
    /// Inverse-time circuit breaker.
    Breaker,
    /// Fuse.
    Fuse,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SizingArgs {
    /// Panel of the circuit.
    #[serde(default)]
    panel: Option<String>,
    /// Circuit number.
    #[serde(default)]
    number: Option<i32>,
    /// Circuit by description words or "LP-1 #5".
    #[serde(default)]
    description: Option<String>,
    /// A feeder of the project by name.
    #[serde(default)]
    feeder: Option<String>,
    /// Free input: continuous load, A.
    #[serde(default)]
    continuous_load: Option<Amps>,
    /// Free input: noncontinuous load, A.
    #[serde(default)]
    noncontinuous_load: Option<Amps>,
    /// OCPD rating (free input or override); left out on free inputs, the engine picks one.
    #[serde(default)]
    ocpd: Option<Amps>,
    /// Conductor size to check (free input or override); left out, the smallest passing size is found.
    #[serde(default)]
    size: Option<ConductorSize>,
    /// Conductor material (free input or override).
    #[serde(default)]
    material: Option<Material>,
    /// Insulation rating (free input or override).
    #[serde(default)]
    insulation: Option<TempRating>,
    /// Lowest terminal rating; left out, 110.14(C)(1) decides (60 °C up to 100 A).
    #[serde(default)]
    terminal_rating: Option<TempRating>,
    /// Ambient temperature, °C (default 30).
    #[serde(default)]
    ambient_c: Option<f64>,
    /// Current-carrying conductors in the raceway (default 3).
    #[serde(default)]
    current_carrying_conductors: Option<u32>,
    /// OCPD kind (default breaker).
    #[serde(default)]
    device: Option<DeviceArg>,
    /// Multioutlet receptacle branch circuit (forbids the 240.4(B) next size up).
    #[serde(default)]
    multioutlet_receptacle_circuit: Option<bool>,
}

/// Checks or sizes conductors of a project circuit or feeder, or of free inputs.
pub struct CheckConductorSizing;

#[async_trait]
impl Tool for CheckConductorSizing {
    fn name(&self) -> &'static str {
        "check_conductor_sizing"
    }
    fn description(&self) -> &'static str {
        "Check (or size) the conductors of a project circuit (panel + number or description), a project \
         feeder, or free inputs: 125 % continuous + noncontinuous against the terminal-column ampacity, \
         corrected ampacity (ambient, conductor count), OCPD rules 210.20(A)/215.3, 240.4(B) and 240.4(D). \
         Also gives the smallest passing size and the minimum EGC (250.122, upsized per 250.122(B)). \
         Conditions not given (ambient 30 °C, 3 conductors, terminal rating per 110.14(C)(1)) are listed \
         as assumptions. A project circuit with a recorded motor is judged by Article 430 instead \
         (430.22 conductor, Table 430.52 device; 240.4(G))."
    }
    fn schema(&self) -> Value {
        schema_for::<SizingArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: SizingArgs = parse_args(&args)?;
        let edition = edition_of(ctx).await;
        let r = circuit_ref(&a.panel, a.number, &a.description);
        let mut notes: Vec<String> = Vec::new();
        let mut assumptions: Vec<String> = Vec::new();
        let (what, mut input, size, sets) = if let Some(name) = &a.feeder {
            let p = ctx.project().await?;
            let f = resolve_feeder(&p, name)?;
            let (cont, noncont) = match (a.continuous_load, a.noncontinuous_load) {
                (None, None) => {
                    let (_, to) = feeder_load_current(&p, f)?;
                    let panel = resolve_panel(&p, &to.name)?;
                    let specs: Vec<&CircuitSpec> = p
                        .circuits_of(panel.id)
                        .into_iter()
                        .map(|c| &c.spec)
                        .collect();
                    let l = panel_loading(&panel.spec, &specs)?.ok_or_else(|| {
                        ToolError::MissingData(format!("panel {} has no circuits", to.name))
                    })?;
                    let cont = ((l.max_phase_amps - l.max_phase_amps_100pct) / 0.25).max(0.0);
                    assumptions.push(format!(
                        "feeder load = connected highest-phase load of panel {} ({:.1} A, of which {:.1} A continuous); no Article 220 demand factors applied",
                        to.name, l.max_phase_amps_100pct, cont
                    ));
                    (cont, (l.max_phase_amps_100pct - cont).max(0.0))
                }
                (c, n) => (c.map(|x| x.0).unwrap_or(0.0), n.map(|x| x.0).unwrap_or(0.0)),
            };
            let sets = u32::from(f.spec.sets.max(1));
            if sets > 1 {
                assumptions.push(format!(
                    "{sets} parallel sets: each set checked for 1/{sets} of the load and of the OCPD"
                ));
            }
            let n = f64::from(sets);
            (
                format!("feeder {} ({} -> {})", f.spec.name, f.spec.from, f.spec.to),
                ConductorSizingInput {
                    continuous_load: Amps(cont / n),
                    noncontinuous_load: Amps(noncont / n),
                    material: f.spec.material,
                    insulation: f.spec.insulation,
                    terminal_rating: None,
                    ambient_c: None,
                    current_carrying_conductors: 3,
                    ocpd_rating: Some(Amps(f.spec.ocpd.0 / n)),
                    ocpd_device: DeviceKind::CircuitBreaker,
                    multioutlet_receptacle_circuit: false,
                    edition,
                },
                Some(f.spec.conductor_size),
                sets,
            )
        } else if r.is_given() {
            let p = ctx.project().await?;
            let (panel, c, n) = resolve_circuit(&p, &r)?;
            notes.extend(n);
            let label = circuit_label(&panel.spec, &c.spec);
            // 240.4(G): a motor circuit is judged by Article 430, not by 240.4(D) and 210.20(A).
            if c.spec.motor.is_some()
                && a.continuous_load.is_none()
                && a.noncontinuous_load.is_none()
            {
                let mut spec = c.spec.clone();
                spec.conductor_size = a.size.or(spec.conductor_size);
                spec.breaker = a.ocpd.unwrap_or(spec.breaker);
                spec.material = a.material.unwrap_or(spec.material);
                spec.insulation = a.insulation.unwrap_or(spec.insulation);
                if let ProtectionRule::Motor(j) = protection_rule(&spec, edition) {
                    return Ok(motor_circuit_result(&label, &spec, &j, notes));
                }
            }
            let e = circuit_electrical(&panel.spec, &c.spec)?;
            if e.current <= 0.0 && a.continuous_load.is_none() && a.noncontinuous_load.is_none() {
                return Err(ToolError::MissingData(format!(
                    "circuit {label} has no load (0 VA); give continuous_load or noncontinuous_load"
                )));
            }
            assumptions.push(format!(
                "load {:.2} A = {} VA / {:.0} V{}",
                e.current,
                c.spec.load_va.0,
                e.volts,
                if c.spec.continuous {
                    ", continuous"
                } else {
                    ", noncontinuous"
                }
            ));
            if c.spec.conductor_size.is_none() && a.size.is_none() {
                notes.push(format!(
                    "circuit {label} has no conductor size recorded: the smallest passing size is given instead"
                ));
            }
            let mut input = circuit_conductor_input(&c.spec, &e, edition, None);
            if input.multioutlet_receptacle_circuit && a.multioutlet_receptacle_circuit.is_none() {
                assumptions.push(
                    "the description names receptacles: treated as a multioutlet receptacle circuit (no 240.4(B) next size up)".into(),
                );
            }
            if let Some(x) = a.continuous_load {
                input.continuous_load = x;
            }
            if let Some(x) = a.noncontinuous_load {
                input.noncontinuous_load = x;
            }
            (label, input, a.size.or(c.spec.conductor_size), 1)
        } else {
            if a.continuous_load.is_none() && a.noncontinuous_load.is_none() {
                return Err(ToolError::InvalidArguments(
                    "name a circuit (panel + number, or description), a feeder, or give continuous_load and/or noncontinuous_load".into(),
                ));
            }
            if a.material.is_none() {
                assumptions.push("material not given: copper".into());
            }
            if a.insulation.is_none() {
                assumptions.push("insulation not given: 75 °C".into());
            }
            (
                "free inputs".to_string(),
                ConductorSizingInput {
                    continuous_load: a.continuous_load.unwrap_or_default(),
                    noncontinuous_load: a.noncontinuous_load.unwrap_or_default(),
                    material: Material::Copper,
                    insulation: TempRating::C75,
                    terminal_rating: None,
                    ambient_c: None,
                    current_carrying_conductors: 3,
                    ocpd_rating: None,
                    ocpd_device: DeviceKind::CircuitBreaker,
                    multioutlet_receptacle_circuit: false,
                    edition,
                },
                a.size,
                1,
            )
        };
        if let Some(m) = a.material {
            input.material = m;
        }
        if let Some(i) = a.insulation {
            input.insulation = i;
        }
        if a.terminal_rating.is_some() {
            input.terminal_rating = a.terminal_rating;
        }
        if a.ambient_c.is_some() {
            input.ambient_c = a.ambient_c;
        }
        if let Some(n) = a.current_carrying_conductors {
            input.current_carrying_conductors = n;
        }
        if let Some(o) = a.ocpd {
            input.ocpd_rating = Some(Amps(o.0 / f64::from(sets)));
        }
        if let Some(d) = a.device {
            input.ocpd_device = match d {
                DeviceArg::Breaker => DeviceKind::CircuitBreaker,
                DeviceArg::Fuse => DeviceKind::Fuse,
            };
        }
        if let Some(m) = a.multioutlet_receptacle_circuit {
            input.multioutlet_receptacle_circuit = m;
        }
        let load125 = 1.25 * input.continuous_load.0 + input.noncontinuous_load.0;
        let n_sets = f64::from(sets);
        // The next standard OCPD at or above the whole load (all sets), then per set.
        let min_ocpd_total = tables::standard_rating_at_or_above(
            (load125 * n_sets).max(1.0),
            input.edition,
            input.ocpd_device,
        )
        .ok();
        let min_ocpd = min_ocpd_total.map(|m| m / n_sets);
        // 210.20(A) / 215.3: an OCPD below 125 % continuous + noncontinuous must be increased;
        // size the conductors for the increased OCPD instead.
        let ocpd_too_small =
            matches!((input.ocpd_rating, min_ocpd), (Some(o), Some(_)) if o.0 + 1e-9 < load125);
        let sized = if ocpd_too_small {
            let mut raised = input.clone();
            raised.ocpd_rating = min_ocpd.map(Amps);
            conductors::size_conductor(&raised)
        } else {
            conductors::size_conductor(&input)
        };
        let check = match size {
            Some(s) => Some(
                conductors::check_conductor(&input, s)
                    .map_err(|e| ToolError::InvalidArguments(format!("{what}: {e}")))?,
            ),
            None => None,
        };
        let minimum = sized.as_ref().ok().map(|r| r.size);
        let ocpd_for_egc = check
            .as_ref()
            .map(|c| c.ocpd_rating)
            .or_else(|| sized.as_ref().ok().map(|r| r.check.ocpd_rating))
            .map(|o| o * f64::from(sets));
        let egc = match ocpd_for_egc {
            Some(ocpd) => {
                let installed = size.or(minimum);
                grounding::egc_size(&EgcInput {
                    ocpd_rating: Amps(ocpd),
                    egc_material: input.material,
                    installed_size: installed,
                    minimum_size: match (installed, minimum) {
                        (Some(i), Some(m)) if i >= m => Some(m),
                        _ => None,
                    },
                    circuit_material: Some(input.material),
                })
                .map(|r| {
                    json!({
                        "size": r.size.to_string(),
                        "table_size": r.table_size.to_string(),
                        "upsize_ratio": r.upsize_ratio.map(|x| round(x, 3)),
                        "required_cmil": round(r.required_cmil, 0),
                        "references": r.references,
                        "assumptions": r.assumptions,
                    })
                })
                .unwrap_or_else(|e| json!({ "error": e.to_string() }))
            }
            None => Value::Null,
        };
        let sizing = match &sized {
            Ok(r) => json!({
                "smallest_passing_size": r.size.to_string(),
                "ocpd_a": r.check.ocpd_rating * f64::from(sets),
                "ocpd_chosen_by_engine": r.check.ocpd_chosen_by_engine,
                "rejected": r.rejected.iter().map(|(s, why)| json!({"size": s.to_string(), "why": why})).collect::<Vec<_>>(),
            }),
            Err(e) => json!({ "error": e.to_string() }),
        };
        if check.is_none() && sized.is_err() {
            return Err(sized
                .map(|_| ())
                .map_err(|e| ToolError::InvalidArguments(format!("{what}: {e}")))
                .err()
                .unwrap_or_else(|| ToolError::Failed(format!("{what}: no result"))));
        }
        let pass = check.as_ref().map(|c| c.pass);
        let fix = match (&check, &sized) {
            _ if ocpd_too_small => Some(format!(
                "the {} A OCPD is below 125 % of the continuous load + the noncontinuous load ({:.1} A): increase it to at least {} A (210.20(A) / 215.3){}",
                input.ocpd_rating.map(|o| o.0 * f64::from(sets)).unwrap_or_default(),
                load125 * f64::from(sets),
                min_ocpd_total.unwrap_or_default(),
                match &sized {
                    Ok(s) => format!(" with {} {} conductors or larger", s.size, input.material),
                    Err(_) => String::new(),
                }
            )),
            (Some(c), Ok(s)) if !c.pass => Some(format!(
                "use {} {} (smallest size that passes with a {} A OCPD) or reduce the OCPD",
                s.size,
                input.material,
                s.check.ocpd_rating * f64::from(sets)
            )),
            _ => None,
        };
        Ok(json!({
            "for": what,
            "size_checked": size.map(|s| s.to_string()),
            "pass": pass,
            "failed_rules": check.as_ref().map(|c| c.checks.iter().filter(|r| !r.pass).map(|r| json!({"rule": format!("NEC {}", r.rule), "detail": r.detail})).collect::<Vec<_>>()),
            "suggested_fix": fix,
            "load_125_percent_a": round(load125 * f64::from(sets), 2),
            "minimum_ocpd_a": min_ocpd_total,
            "check": check.as_ref().map(to_value).transpose()?,
            "sizing": sizing,
            "egc": egc,
            "assumptions": assumptions,
            "notes": notes,
        }))
    }
}

// ---------------------------------------------------------------------------------------------
// calculate_arc_flash

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[allow(clippy::upper_case_acronyms)]
enum ElectrodeArg {
    /// Vertical conductors in a box.
    VCB,
    /// Vertical conductors terminated in an insulating barrier, in a box.
    VCBB,
    /// Horizontal conductors in a box.
    HCB,
    /// Vertical conductors in open air.
    VOA,
    /// Horizontal conductors in open air.
    HOA,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum EquipmentArg {
    /// Panelboards or other equipment rated 240 V and below.
    Panelboard240v,
    /// Panelboards or other equipment above 240 V up to 600 V.
    Panelboard600v,
    /// 600 V class MCC, 2-cycle clearing.
    Mcc600vFast,
    /// 600 V class MCC, 20-cycle clearing.
    Mcc600vSlow,
    /// 600 V class switchgear and switchboards.
    Switchgear600v,
    /// Other 600 V class equipment.
    Other600v,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EnclosureArg {
    /// Height, mm.
    height: f64,
    /// Width, mm.
    width: f64,
    /// Depth, mm.
    depth: f64,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ArcArgs {
    /// A panel of the project: its voltage and calculated available fault current are used.
    #[serde(default)]
    panel: Option<String>,
    /// Nominal voltage (free input or override).
    #[serde(default)]
    voltage: Option<Volts>,
    /// Bolted fault current, kA (free input or override).
    #[serde(default)]
    bolted_fault_ka: Option<f64>,
    /// Upstream device clearing time at the full arcing current, ms (from its time-current
    /// curve; required, never assumed).
    #[serde(default)]
    clearing_time_ms: Option<f64>,
    /// Clearing time at the reduced arcing current, ms (IEEE 1584).
    #[serde(default)]
    reduced_clearing_time_ms: Option<f64>,
    /// Electrode configuration (IEEE 1584): VCB, VCBB, HCB, VOA, HOA.
    #[serde(default)]
    electrode_configuration: Option<ElectrodeArg>,
    /// Conductor gap, mm (IEEE 1584).
    #[serde(default)]
    gap_mm: Option<f64>,
    /// Working distance, mm.
    #[serde(default)]
    working_distance_mm: Option<f64>,
    /// Enclosure inside dimensions, mm (IEEE 1584, box configurations).
    #[serde(default)]
    enclosure: Option<EnclosureArg>,
    /// Equipment class for the NFPA 70E table method.
    #[serde(default)]
    equipment: Option<EquipmentArg>,
}

/// Arc-flash incident energy or PPE category.
pub struct CalculateArcFlash;

#[async_trait]
impl Tool for CalculateArcFlash {
    fn name(&self) -> &'static str {
        "calculate_arc_flash"
    }
    fn description(&self) -> &'static str {
        "Arc-flash assessment at a project panel (its voltage and calculated fault current) or from free \
         inputs: IEEE 1584-2018 incident energy when electrode_configuration, gap_mm, working_distance_mm \
         and both clearing times are given, otherwise the NFPA 70E PPE category table for an equipment \
         class. Clearing times come from the upstream device's time-current curve and must be given; \
         they are never assumed (the error gives the arcing currents to read the curve at)."
    }
    fn schema(&self) -> Value {
        schema_for::<ArcArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: ArcArgs = parse_args(&args)?;
        let mut assumptions: Vec<String> = Vec::new();
        let (what, voltage, ka) = match &a.panel {
            Some(name) => {
                let p = ctx.project().await?;
                let panel = resolve_panel(&p, name)?;
                let ka = match a.bolted_fault_ka {
                    Some(k) => k,
                    None => {
                        let f = FaultCalculator::new(&p).at(&panel.spec.name)?;
                        assumptions.extend(f.assumptions);
                        assumptions.push(format!(
                            "bolted fault current {:.2} kA calculated at {}",
                            f.fault_ka, panel.spec.name
                        ));
                        f.fault_ka
                    }
                };
                if panel.spec.phase == Phase::Single {
                    assumptions.push(
                        "single-phase equipment: the three-phase model is conservative for it"
                            .into(),
                    );
                }
                (
                    format!("panel {}", panel.spec.name),
                    a.voltage.unwrap_or(panel.spec.voltage),
                    ka,
                )
            }
            None => {
                let mut missing = Vec::new();
                if a.voltage.is_none() {
                    missing.push("voltage");
                }
                if a.bolted_fault_ka.is_none() {
                    missing.push("bolted_fault_ka");
                }
                if !missing.is_empty() {
                    return Err(ToolError::MissingData(format!(
                        "name a panel of the project or give {}",
                        missing.join(" and ")
                    )));
                }
                (
                    "free inputs".to_string(),
                    a.voltage.unwrap_or_default(),
                    a.bolted_fault_ka.unwrap_or_default(),
                )
            }
        };
        let electrode = a.electrode_configuration.map(|e| match e {
            ElectrodeArg::VCB => ElectrodeConfiguration::VCB,
            ElectrodeArg::VCBB => ElectrodeConfiguration::VCBB,
            ElectrodeArg::HCB => ElectrodeConfiguration::HCB,
            ElectrodeArg::VOA => ElectrodeConfiguration::VOA,
            ElectrodeArg::HOA => ElectrodeConfiguration::HOA,
        });
        let req = ArcFlashRequest {
            voltage,
            bolted_fault_ka: ka,
            clearing_time_ms: a.clearing_time_ms,
            reduced_clearing_time_ms: a.reduced_clearing_time_ms,
            electrode_configuration: electrode,
            gap_mm: a.gap_mm,
            working_distance_mm: a.working_distance_mm,
            enclosure: a.enclosure.map(|e| arc_flash::EnclosureMm {
                height: e.height,
                width: e.width,
                depth: e.depth,
            }),
            equipment: a.equipment.map(|e| match e {
                EquipmentArg::Panelboard240v => AcEquipment::Panelboard240v,
                EquipmentArg::Panelboard600v => AcEquipment::Panelboard600v,
                EquipmentArg::Mcc600vFast => AcEquipment::Mcc600vFast,
                EquipmentArg::Mcc600vSlow => AcEquipment::Mcc600vSlow,
                EquipmentArg::Switchgear600v => AcEquipment::Switchgear600v,
                EquipmentArg::Other600v => AcEquipment::Other600v,
            }),
        };
        // Arcing currents do not depend on the working distance or clearing time; those two
        // are placeholders the model needs only to validate its inputs.
        let arcing_result = match (electrode, a.gap_mm) {
            (Some(ec), Some(gap)) => Some(arc_flash::arcing_currents(&arc_flash::Ieee1584Input {
                voltage,
                bolted_fault_ka: ka,
                electrode_configuration: ec,
                gap_mm: gap,
                working_distance_mm: a.working_distance_mm.unwrap_or(457.2),
                enclosure: req.enclosure,
                clearing_time_ms: 1.0,
                reduced_clearing_time_ms: None,
            })),
            _ => None,
        };
        let arcing = arcing_result
            .as_ref()
            .and_then(|r| r.as_ref().ok())
            .cloned();
        let arcing_why = match &arcing_result {
            Some(Err(e)) => format!(" (arcing currents could not be calculated: {e})"),
            _ => String::new(),
        };
        let needs_reduced = a.clearing_time_ms.is_some()
            && a.reduced_clearing_time_ms.is_none()
            && electrode.is_some()
            && a.gap_mm.is_some()
            && a.working_distance_mm.is_some();
        if a.clearing_time_ms.is_none() || (needs_reduced && a.equipment.is_none()) {
            let at = match &arcing {
                Some(c) => format!(
                    " Read the upstream device's curve at the full arcing current {:.2} kA{}.",
                    c.full_ka,
                    if needs_reduced || a.clearing_time_ms.is_none() {
                        format!(" and at the reduced arcing current {:.2} kA", c.reduced_ka)
                    } else {
                        String::new()
                    }
                ),
                None if arcing_result.is_some() => arcing_why.clone(),
                None => " Give electrode_configuration and gap_mm to get the arcing currents to read the curve at.".into(),
            };
            let field = if a.clearing_time_ms.is_none() {
                "clearing_time_ms"
            } else {
                "reduced_clearing_time_ms"
            };
            return Err(ToolError::MissingData(format!(
                "{what}: {field} is required: the protective device clearing time comes from its time-current curve and is never assumed.{at}"
            )));
        }
        let r = arc_flash::arc_flash(&req).map_err(|e| match e {
            crate::nec::NecError::MissingInput { .. } => {
                ToolError::MissingData(format!("{what}: {e}"))
            }
            other => ToolError::InvalidArguments(format!("{what}: {other}")),
        })?;
        // The engine's enum tag and its results' own `method` field share a key; name the
        // method separately.
        let (method, assessment) = match &r {
            arc_flash::ArcFlashAssessment::Ieee1584(x) => ("ieee1584_2018", to_value(x)?),
            arc_flash::ArcFlashAssessment::PpeTable(x) => ("nfpa70e_ppe_table", to_value(x)?),
        };
        Ok(json!({
            "for": what,
            "voltage": voltage.0,
            "bolted_fault_ka": round(ka, 2),
            "arcing_currents": arcing.map(|c| json!({
                "full_ka": round(c.full_ka, 3),
                "reduced_ka": round(c.reduced_ka, 3),
                "variation_factor": round(c.variation_factor, 4),
                "intermediate_full_ka": c.intermediate_full.iter().map(|i| json!({"level_v": i.level_v, "ka": round(i.arcing_ka, 3)})).collect::<Vec<_>>(),
            })),
            "method": method,
            "assessment": assessment,
            "assumptions": assumptions,
        }))
    }
}

// ---------------------------------------------------------------------------------------------
// check_service_upgrade

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ApplianceArg {
    /// What it is.
    #[serde(default)]
    description: String,
    /// Nameplate VA (W taken as VA).
    va: f64,
    /// 120 or 240 (default 240).
    #[serde(default)]
    volts: Option<f64>,
}

impl ApplianceArg {
    fn to_engine(&self) -> Appliance {
        Appliance {
            description: self.description.clone(),
            va: self.va,
            volts: self.volts.unwrap_or(240.0),
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ServiceUpgradeArgs {
    /// Dwelling floor area, ft² (required: not part of the project data).
    floor_area_ft2: Option<f64>,
    /// Small-appliance branch circuits (default 2).
    #[serde(default)]
    small_appliance_circuits: Option<u32>,
    /// Laundry circuits (default 1).
    #[serde(default)]
    laundry_circuits: Option<u32>,
    /// Existing fastened-in-place / dedicated loads at nameplate (range, dryer, water heater, ...).
    #[serde(default)]
    existing_loads: Vec<ApplianceArg>,
    /// Loads being added (other than heating/AC).
    #[serde(default)]
    added_loads: Vec<ApplianceArg>,
    /// Project circuits being added, by name ("LP-1 #5" or "the EV charger"): their load VA is
    /// added.
    #[serde(default)]
    added_circuits: Vec<String>,
    /// Air conditioning being added, VA.
    #[serde(default)]
    added_air_conditioning_va: f64,
    /// Central electric heat being added, VA.
    #[serde(default)]
    added_central_heating_va: f64,
    /// Space heating (fewer than four separately controlled units) being added, VA.
    #[serde(default)]
    added_space_heating_va: f64,
    /// Service rating override (default: the project's service).
    #[serde(default)]
    service_rating: Option<Amps>,
}

/// 220.83: may the existing dwelling service carry the added load?
pub struct CheckServiceUpgrade;

#[async_trait]
impl Tool for CheckServiceUpgrade {
    fn name(&self) -> &'static str {
        "check_service_upgrade"
    }
    fn description(&self) -> &'static str {
        "EXISTING dwelling only: can its service carry existing plus added loads (NEC 220.83: first \
         8 kVA at 100 %, rest at 40 %; added heating/AC at 100 % under 220.83(B))? Needs the floor \
         area and the existing appliance nameplates; added loads as VA or project circuits by name \
         (\"the EV charger\"). Uses the project's service, or service_rating. Says whether an upgrade \
         is needed. For a new dwelling or new service use calculate_dwelling_load."
    }
    fn schema(&self) -> Value {
        schema_for::<ServiceUpgradeArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: ServiceUpgradeArgs = parse_args(&args)?;
        let project = match ctx.project_id {
            Some(_) => Some(ctx.project().await?),
            None => None,
        };
        let service = project.as_ref().and_then(|p| p.service.clone());
        let edition = project
            .as_ref()
            .map(|p| p.project.edition)
            .unwrap_or_default();
        let area = a.floor_area_ft2.ok_or_else(|| {
            ToolError::MissingData(
                "floor_area_ft2 is required (the dwelling's floor area is not part of the project data)".into(),
            )
        })?;
        let mut assumptions = Vec::new();
        let (rating, voltage) = match (&service, a.service_rating) {
            (Some(s), over) => {
                if s.phase == Phase::Three {
                    assumptions.push("220.83 is a single-phase dwelling method; the service is three-phase: result is indicative only".to_string());
                }
                (over.unwrap_or(s.rating), s.voltage.0)
            }
            (None, Some(r)) => {
                assumptions
                    .push("no project service recorded: 120/240 V assumed with the given rating".into());
                (r, 240.0)
            }
            (None, None) => {
                return Err(ToolError::MissingData(
                    "no service is known: give service_rating (or record the project service with set_service)"
                        .into(),
                ))
            }
        };
        let mut added: Vec<Appliance> = a.added_loads.iter().map(ApplianceArg::to_engine).collect();
        let mut circuits_used = Vec::new();
        for name in &a.added_circuits {
            let p = project.as_ref().ok_or_else(|| {
                ToolError::MissingData(format!(
                    "added circuit '{name}' needs a project bound to this conversation; give added_loads instead"
                ))
            })?;
            let (panel, c, _) = resolve_circuit(
                p,
                &CircuitRef {
                    panel: None,
                    number: None,
                    description: Some(name.clone()),
                },
            )?;
            let e = circuit_electrical(&panel.spec, &c.spec)?;
            added.push(Appliance {
                description: circuit_label(&panel.spec, &c.spec),
                va: c.spec.load_va.0,
                volts: e.volts,
            });
            circuits_used.push(circuit_label(&panel.spec, &c.spec));
        }
        if a.small_appliance_circuits.is_none() {
            assumptions.push("2 small-appliance circuits (not given)".into());
        }
        if a.laundry_circuits.is_none() {
            assumptions.push("1 laundry circuit (not given)".into());
        }
        let r = dwelling::dwelling_existing(&ExistingDwellingInput {
            edition,
            floor_area_ft2: area,
            small_appliance_circuits: a.small_appliance_circuits.unwrap_or(2),
            laundry_circuits: a.laundry_circuits.unwrap_or(1),
            existing_loads: a
                .existing_loads
                .iter()
                .map(ApplianceArg::to_engine)
                .collect(),
            added_loads: added,
            added_air_conditioning_va: a.added_air_conditioning_va,
            added_central_heating_va: a.added_central_heating_va,
            added_space_heating_va: a.added_space_heating_va,
            service_rating: rating,
            voltage,
        })
        .map_err(nec_err)?;
        Ok(json!({
            "service_rating_a": rating.0,
            "calculated_load_a": round(r.load.amps.0, 1),
            "service_adequate": r.service_adequate,
            "upgrade_needed": !r.service_adequate,
            "spare_a": round(r.spare_amps, 1),
            "minimum_service_a": r.load.minimum_service_rating.0,
            "added_circuits": circuits_used,
            "calculation": to_value(&r.load)?,
            "assumptions": assumptions,
        }))
    }
}

// ---------------------------------------------------------------------------------------------
// lookup_table

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LookupArgs {
    /// Table: "310.16", "310.15(B)(1)", "310.15(C)(1)", "250.122", "250.66", "240.6(A)",
    /// "chapter 9 table 8", "chapter 9 table 9", "220.12"/"220.42(A)" (unit loads), "220.45"
    /// (lighting demand), "220.54", "220.55", "430.52", "430.248", "430.250", "c values",
    /// "70E 130.7(C)(15)(a)" or "(b)".
    table: String,
    /// Row key: conductor size ("3/0"), OCPD amps ("60"), ambient °C, conductor count, hp,
    /// occupancy, motor type.
    #[serde(default)]
    row: Option<String>,
    /// Column: temperature ("75"), material, raceway ("steel"), voltage ("460"), device.
    #[serde(default)]
    column: Option<String>,
    /// Conductor material where the table has both.
    #[serde(default)]
    material: Option<Material>,
}

/// Looks up a shipped table.
pub struct LookupTable;

fn table_key(name: &str) -> String {
    let mut t = name.trim().to_ascii_lowercase();
    for w in ["nec", "nfpa", "table", "tbl", "chapter", "ch.", "ch", " "] {
        t = t.replace(w, "");
    }
    t.trim_start_matches(['.', ':']).to_string()
}

fn parse_column_temp(s: &str) -> Result<TempRating, ToolError> {
    let t = s
        .trim()
        .to_ascii_lowercase()
        .trim_start_matches('c')
        .trim_end_matches(['c', '°'])
        .trim_end_matches('°')
        .to_string();
    t.parse()
        .map_err(|e: UnitParseError| ToolError::InvalidArguments(format!("column: {e}")))
}

fn parse_size(s: &str) -> Result<ConductorSize, ToolError> {
    s.parse()
        .map_err(|e: UnitParseError| ToolError::InvalidArguments(format!("row: {e}")))
}

fn parse_num(s: &str, what: &str) -> Result<f64, ToolError> {
    let t = s
        .trim()
        .trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == '°' || c == ' ')
        .trim();
    t.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| ToolError::InvalidArguments(format!("row must be {what}, not '{s}'")))
}

fn material_from(a: &LookupArgs) -> Option<Material> {
    a.material
        .or_else(|| a.column.as_deref().and_then(|c| c.parse::<Material>().ok()))
}

const TABLES: &str = "310.16, 310.15(B)(1)(1), 310.15(B)(1)(2), 310.15(C)(1), chapter 9 table 8, chapter 9 table 9, 240.6(A), 250.122, 250.66, 220.12 (2020) / 220.42(A) (2023), 220.42 (2020) / 220.45 (2023) lighting demand, 220.54, 220.55, 430.52, 430.248, 430.250, c values (point-to-point), NFPA 70E 130.7(C)(15)(a) and (b)";

fn lookup(a: &LookupArgs, edition: Edition) -> Result<Value, ToolError> {
    let t = tables::tables().map_err(nec_err)?;
    let key = table_key(&a.table);
    let row = a.row.as_deref().map(str::trim).filter(|r| !r.is_empty());
    let col = a.column.as_deref().map(str::trim).filter(|c| !c.is_empty());
    let all = |v: Value, name: &str| json!({ "table": name, "rows": v });
    match key.as_str() {
        "310.16" | "310.15(b)(16)" => {
            let name = "NEC Table 310.16 (allowable ampacities, 30 °C, not more than 3 current-carrying conductors)";
            let material = material_from(a);
            match row {
                None => {
                    let rows: Vec<_> = t
                        .ampacity
                        .iter()
                        .filter(|r| material.is_none_or(|m| r.material == m))
                        .collect();
                    Ok(all(to_value(&rows)?, name))
                }
                Some(r) => {
                    let size = parse_size(r)?;
                    let material = material.unwrap_or(Material::Copper);
                    let full = tables::ampacity_row(size, material).map_err(nec_err)?;
                    let temp = col.filter(|c| c.parse::<Material>().is_err());
                    match temp {
                        Some(c) => {
                            let tr = parse_column_temp(c)?;
                            let v = tables::ampacity(size, material, tr).map_err(nec_err)?;
                            Ok(json!({
                                "table": name,
                                "row": size.to_string(),
                                "material": material,
                                "column": tr.to_string(),
                                "value": v,
                                "unit": "A",
                                "full_row": full,
                                "note": "before ambient correction (310.15(B)) and adjustment (310.15(C)); small conductors are also limited by 240.4(D)",
                            }))
                        }
                        None => Ok(json!({ "table": name, "row": full })),
                    }
                }
            }
        }
        "310.15(b)(1)" | "310.15(b)(1)(1)" | "310.15(b)(2)(a)" => {
            let name = match edition {
                Edition::Nec2017 => {
                    "NEC 2017 Table 310.15(B)(2)(a) (ambient correction, 30 °C base)"
                }
                Edition::Nec2020 => "NEC 2020 Table 310.15(B)(1) (ambient correction, 30 °C base)",
                Edition::Nec2023 => {
                    "NEC 2023 Table 310.15(B)(1)(1) (ambient correction, 30 °C base)"
                }
            };
            match (row, col) {
                (Some(r), Some(c)) => {
                    let amb = parse_num(r, "an ambient temperature in °C")?;
                    let tr = parse_column_temp(c)?;
                    let f = tables::temperature_correction(amb, tr).map_err(nec_err)?;
                    Ok(
                        json!({ "table": name, "ambient_c": amb, "column": tr.to_string(), "value": f }),
                    )
                }
                _ => Ok(all(to_value(&t.temp_correction_30c)?, name)),
            }
        }
        "310.15(b)(1)(2)" => {
            let name = "NEC 2023 Table 310.15(B)(1)(2) (ambient correction, 40 °C base)";
            match (row, col) {
                (Some(r), Some(c)) => {
                    let amb = parse_num(r, "an ambient temperature in °C")?;
                    let rating = parse_num(c, "a conductor temperature rating")? as u32;
                    let f =
                        tables::temperature_correction_40c_base(amb, rating).map_err(nec_err)?;
                    Ok(json!({ "table": name, "ambient_c": amb, "rating_c": rating, "value": f }))
                }
                _ => Ok(all(to_value(&t.temp_correction_40c)?, name)),
            }
        }
        "310.15(c)(1)" | "310.15(b)(3)(a)" => {
            let name = "NEC Table 310.15(C)(1) (adjustment for more than three current-carrying conductors)";
            match row {
                Some(r) => {
                    let n = parse_num(r, "a number of current-carrying conductors")?;
                    if n < 1.0 || n.fract() != 0.0 {
                        return Err(ToolError::InvalidArguments(format!(
                            "row must be a whole number of conductors, not '{r}'"
                        )));
                    }
                    let f = tables::adjustment_factor(n as u32).map_err(nec_err)?;
                    Ok(json!({ "table": name, "conductors": n, "value": f }))
                }
                None => Ok(all(to_value(&t.adjustment)?, name)),
            }
        }
        "98" | "8" => {
            let name =
                "NEC Chapter 9 Table 8 (conductor properties; DC resistance at 75 °C, Ω/kft)";
            match row {
                Some(r) => {
                    let size = parse_size(r)?;
                    let rows: Vec<_> = t.table8.iter().filter(|x| x.size == size).collect();
                    if rows.is_empty() {
                        return Err(nec_err(crate::nec::NecError::not_in_table(
                            "NEC Chapter 9 Table 8",
                            size.to_string(),
                        )));
                    }
                    Ok(json!({ "table": name, "rows": rows }))
                }
                None => Ok(all(to_value(&t.table8)?, name)),
            }
        }
        "99" | "9" => {
            let name =
                "NEC Chapter 9 Table 9 (AC resistance and reactance, Ω to neutral per 1000 ft)";
            match row {
                Some(r) => {
                    let size = parse_size(r)?;
                    let material = material_from(a).unwrap_or(Material::Copper);
                    match col.and_then(|c| match c.to_ascii_lowercase().as_str() {
                        "pvc" => Some(Conduit::Pvc),
                        "aluminum" | "al" if a.material.is_some() => Some(Conduit::Aluminum),
                        "steel" => Some(Conduit::Steel),
                        _ => None,
                    }) {
                        Some(conduit) => {
                            let (r, x, z) =
                                tables::ac_impedance(size, material, conduit).map_err(nec_err)?;
                            Ok(json!({
                                "table": name, "row": size.to_string(), "material": material,
                                "raceway": conduit, "r_ohm_per_kft": r, "xl_ohm_per_kft": x,
                                "effective_z_085pf_ohm_per_kft": z,
                            }))
                        }
                        None => {
                            let row =
                                t.table9.iter().find(|x| x.size == size).ok_or_else(|| {
                                    nec_err(crate::nec::NecError::not_in_table(
                                        "NEC Chapter 9 Table 9",
                                        size.to_string(),
                                    ))
                                })?;
                            Ok(
                                json!({ "table": name, "row": row, "columns": "arrays are PVC, aluminum, steel raceway" }),
                            )
                        }
                    }
                }
                None => Ok(all(to_value(&t.table9)?, name)),
            }
        }
        "240.6(a)" | "240.6" => {
            let name = "NEC Table 240.6(A) (standard ampere ratings)";
            let device = match col.map(str::to_ascii_lowercase).as_deref() {
                Some("fuse") | Some("fuses") => DeviceKind::Fuse,
                _ => DeviceKind::CircuitBreaker,
            };
            let list = tables::standard_ratings(edition, device).map_err(nec_err)?;
            match row {
                Some(r) => {
                    let amps = parse_num(r, "a current in amperes")?;
                    let standard =
                        tables::is_standard_rating(amps, edition, device).map_err(nec_err)?;
                    let above = tables::standard_rating_at_or_above(amps, edition, device).ok();
                    let below = tables::standard_rating_at_or_below(amps, edition, device).ok();
                    Ok(
                        json!({ "table": name, "edition": edition, "device": device, "amps": amps, "standard": standard, "next_at_or_above": above, "next_at_or_below": below }),
                    )
                }
                None => Ok(
                    json!({ "table": name, "edition": edition, "device": device, "ratings": list }),
                ),
            }
        }
        "250.122" => {
            let name = "NEC Table 250.122 (minimum equipment grounding conductor)";
            match row {
                Some(r) => {
                    let amps = parse_num(r, "the OCPD rating in amperes")?;
                    let cu = tables::egc_for_ocpd(amps, Material::Copper).map_err(nec_err)?;
                    let al = tables::egc_for_ocpd(amps, Material::Aluminum).map_err(nec_err)?;
                    let m = material_from(a);
                    Ok(json!({
                        "table": name, "ocpd_a": amps,
                        "value": m.map(|m| if m == Material::Copper { cu.to_string() } else { al.to_string() }),
                        "copper": cu.to_string(), "aluminum": al.to_string(),
                        "note": "increase proportionally when the ungrounded conductors are upsized (250.122(B))",
                    }))
                }
                None => Ok(all(to_value(&t.egc)?, name)),
            }
        }
        "250.66" => {
            let name = "NEC Table 250.66 (grounding electrode conductor)";
            match row {
                Some(r) => {
                    let size = parse_size(r)?;
                    let m = material_from(a).unwrap_or(Material::Copper);
                    let cu = tables::gec_for_area(size.circular_mils(), m, Material::Copper)
                        .map_err(nec_err)?;
                    let al = tables::gec_for_area(size.circular_mils(), m, Material::Aluminum)
                        .map_err(nec_err)?;
                    Ok(json!({
                        "table": name, "largest_ungrounded": size.to_string(), "service_material": m,
                        "gec_copper": cu.to_string(), "gec_aluminum": al.to_string(),
                        "note": "rod/pipe/plate and concrete-encased electrodes have smaller limits (250.66(A)/(B))",
                    }))
                }
                None => Ok(all(to_value(&t.gec)?, name)),
            }
        }
        "220.12" | "220.42(a)" => {
            let (rows, name) = if key == "220.12" && edition == Edition::Nec2017 {
                (
                    &t.unit_loads_2017,
                    "NEC 2017 Table 220.12 (general lighting unit loads; the 125 % continuous-load factor is not included)",
                )
            } else if key == "220.12" {
                (
                    &t.unit_loads_2020,
                    "NEC 2020 Table 220.12 (general lighting unit loads)",
                )
            } else {
                (
                    &t.unit_loads_2023,
                    "NEC 2023 Table 220.42(A) (general lighting unit loads)",
                )
            };
            match row {
                Some(r) => {
                    let want = r.to_ascii_lowercase();
                    let hits: Vec<_> = rows
                        .iter()
                        .filter(|x| x.occupancy.to_ascii_lowercase().contains(&want))
                        .collect();
                    if hits.is_empty() {
                        return Err(ToolError::NotFound(format!(
                            "{name} has no occupancy matching '{r}'; occupancies: {}",
                            rows.iter()
                                .map(|x| x.occupancy.clone())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )));
                    }
                    Ok(json!({ "table": name, "rows": hits }))
                }
                None => Ok(all(to_value(rows)?, name)),
            }
        }
        "220.42" | "220.45" => {
            if key == "220.42"
                && edition == Edition::Nec2023
                && row.is_some_and(|r| r.parse::<f64>().is_err())
            {
                // In 2023, 220.42 holds the unit-load table.
                return lookup(
                    &LookupArgs {
                        table: "220.42(A)".into(),
                        row: a.row.clone(),
                        column: a.column.clone(),
                        material: a.material,
                    },
                    edition,
                );
            }
            let name = "NEC 2020 Table 220.42 / 2023 Table 220.45 (lighting load demand factors)";
            let rows: Vec<_> = t
                .lighting_demand
                .iter()
                .filter(|x| {
                    row.is_none_or(|r| {
                        x.occupancy
                            .to_ascii_lowercase()
                            .contains(&r.to_ascii_lowercase())
                    })
                })
                .collect();
            Ok(all(to_value(&rows)?, name))
        }
        "220.54" => Ok(all(
            to_value(&t.dryer_demand)?,
            "NEC Table 220.54 (dryer demand factors)",
        )),
        "220.55" => Ok(all(
            to_value(&t.range_demand)?,
            "NEC Table 220.55 (ranges and cooking appliances)",
        )),
        "430.52" => Ok(all(
            to_value(&t.motor_ocpd)?,
            "NEC Table 430.52 (motor branch-circuit protective device, % of FLC)",
        )),
        "430.248" | "430.250" => {
            let three = key == "430.250";
            let (rows, name) = if three {
                (
                    &t.flc_three_phase,
                    "NEC Table 430.250 (three-phase motor FLC)",
                )
            } else {
                (
                    &t.flc_single_phase,
                    "NEC Table 430.248 (single-phase motor FLC)",
                )
            };
            match (row, col) {
                (Some(r), Some(c)) => {
                    let hp = parse_hp(r)?;
                    let v = parse_num(c, "a voltage column")? as u32;
                    let flc = tables::motor_flc(hp, three, v, false).map_err(nec_err)?;
                    Ok(
                        json!({ "table": name, "hp": hp, "column_volts": v, "value": flc, "unit": "A" }),
                    )
                }
                (Some(r), None) => {
                    let hp = parse_hp(r)?;
                    let hit = rows
                        .iter()
                        .find(|x| (x.hp - hp).abs() < 0.01)
                        .ok_or_else(|| {
                            ToolError::InvalidArguments(format!("{name} has no row for {r} hp"))
                        })?;
                    Ok(json!({ "table": name, "row": hit }))
                }
                _ => Ok(all(to_value(rows)?, name)),
            }
        }
        "cvalues" | "cvalue" | "point-to-point" | "ptp" | "point-to-pointcvalues" => {
            let name = "Point-to-point C values (600 V, three single conductors)";
            match row {
                Some(r) => {
                    let size = parse_size(r)?;
                    let hit = t.c_values.iter().find(|x| x.size == size).ok_or_else(|| {
                        nec_err(crate::nec::NecError::not_in_table(
                            "point-to-point C value table",
                            size.to_string(),
                        ))
                    })?;
                    Ok(json!({ "table": name, "row": hit }))
                }
                None => Ok(all(to_value(&t.c_values)?, name)),
            }
        }
        k if k.contains("130.7(c)(15)(a)") => Ok(all(
            to_value(&t.ppe_ac)?,
            "NFPA 70E Table 130.7(C)(15)(a) (AC arc-flash PPE categories)",
        )),
        k if k.contains("130.7(c)(15)(b)") => Ok(all(
            to_value(&t.ppe_dc)?,
            "NFPA 70E Table 130.7(C)(15)(b) (DC arc-flash PPE categories)",
        )),
        _ => Err(ToolError::NotFound(format!(
            "no shipped table named '{}'; tables: {TABLES}",
            a.table.trim()
        ))),
    }
}

fn parse_hp(s: &str) -> Result<f64, ToolError> {
    let t = s
        .trim()
        .to_ascii_lowercase()
        .trim_end_matches("hp")
        .trim()
        .to_string();
    // "1-1/2" or "1/2".
    let (whole, frac) = match t.split_once('-') {
        Some((w, f)) => (w.trim().parse::<f64>().ok(), Some(f.trim().to_string())),
        None if t.contains('/') => (Some(0.0), Some(t.clone())),
        None => (t.parse::<f64>().ok(), None),
    };
    let frac = match frac {
        Some(f) => match f.split_once('/') {
            Some((n, d)) => match (n.trim().parse::<f64>(), d.trim().parse::<f64>()) {
                (Ok(n), Ok(d)) if d > 0.0 => Some(n / d),
                _ => None,
            },
            None => None,
        },
        None => Some(0.0),
    };
    match (whole, frac) {
        (Some(w), Some(f)) => Ok(w + f),
        _ => Err(ToolError::InvalidArguments(format!(
            "row must be a horsepower like 10, 1/2 or 1-1/2, not '{s}'"
        ))),
    }
}

#[async_trait]
impl Tool for LookupTable {
    fn name(&self) -> &'static str {
        "lookup_table"
    }
    fn description(&self) -> &'static str {
        "Look up a table the code ships, by table name and optional row and column, e.g. table \"310.16\" \
         row \"3/0\" column \"75\" material copper -> 200 A; \"250.122\" row \"60\"; \"310.15(B)(1)\" row \
         \"40\" column \"90\"; \"310.15(C)(1)\" row \"9\"; \"430.250\" row \"10\" column \"460\"; \"240.6(A)\" \
         row \"27\". Without a row the whole table is returned. Uses the project's NEC edition."
    }
    fn schema(&self) -> Value {
        schema_for::<LookupArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: LookupArgs = parse_args(&args)?;
        let edition = edition_of(ctx).await;
        let mut v = lookup(&a, edition)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("edition".into(), json!(edition));
        }
        Ok(v)
    }
}

/// Sizes a circuit's conductor and breaker the way add_circuit suggests them: breaker = the
/// next standard rating at or above 125 % continuous + noncontinuous (at least 15 A), conductor
/// = the smallest passing size for that breaker.
pub fn suggest_breaker_and_conductor(
    c: &CircuitSpec,
    e: &CircuitElectrical,
    edition: Edition,
    breaker_given: bool,
    size_given: bool,
) -> Result<(Amps, Option<ConductorSize>, Vec<String>), ToolError> {
    let mut notes = Vec::new();
    let load125 = if c.continuous {
        1.25 * e.current
    } else {
        e.current
    };
    let breaker = if breaker_given {
        c.breaker
    } else {
        if load125 <= 0.0 {
            return Err(ToolError::MissingData(
                "give `breaker`: with no load there is nothing to size it from".into(),
            ));
        }
        let b = tables::standard_rating_at_or_above(
            load125.max(15.0),
            edition,
            DeviceKind::CircuitBreaker,
        )
        .map_err(nec_err)?;
        notes.push(format!(
            "breaker {b} A suggested: next standard rating (240.6(A)) at or above {:.1} A{}",
            load125,
            if c.continuous {
                " (125 % of the continuous load, 210.20(A))"
            } else {
                ""
            }
        ));
        Amps(b)
    };
    let size = if size_given {
        c.conductor_size
    } else if e.current > 0.0 {
        let mut spec = c.clone();
        spec.breaker = breaker;
        let input = circuit_conductor_input(&spec, e, edition, None);
        let r = conductors::size_conductor(&input).map_err(nec_err)?;
        notes.push(format!(
            "conductor {} {} suggested: smallest size passing 210.19(A), 240.4 with a {} A breaker (terminals per 110.14(C)(1), 30 °C, 3 conductors)",
            r.size, c.material, breaker.0
        ));
        Some(r.size)
    } else {
        notes.push("no conductor size given and no load to size it from".into());
        None
    };
    Ok((breaker, size, notes))
}

/// Convenience for previews: the conductor check of a circuit as one line, if it can be made.
pub fn conductor_check_line(
    p: &ProjectData,
    panel: &crate::project::PanelSpec,
    c: &CircuitSpec,
) -> Option<String> {
    let size = c.conductor_size?;
    let e = circuit_electrical(panel, c).ok()?;
    if e.current <= 0.0 {
        return None;
    }
    let input = circuit_conductor_input(c, &e, p.project.edition, None);
    let r = conductors::check_conductor(&input, size).ok()?;
    Some(if r.pass {
        format!(
            "Conductor check: {size} {} on {} A passes (210.19(A), 210.20(A), 240.4)",
            c.material, c.breaker.0
        )
    } else {
        let failed: Vec<String> = r
            .checks
            .iter()
            .filter(|x| !x.pass)
            .map(|x| format!("NEC {}: {}", x.rule, x.detail))
            .collect();
        format!("Conductor check FAILS: {}", failed.join("; "))
    })
}

/// The `check_conductor_sizing` answer for a motor circuit: the Article 430 judgement.
fn motor_circuit_result(
    label: &str,
    spec: &CircuitSpec,
    j: &MotorCircuitJudgement,
    notes: Vec<String>,
) -> Value {
    let z = &j.sizing;
    let pass = !j
        .findings
        .iter()
        .any(|f| f.verdict == crate::project::circuit_protection::Verdict::Violation);
    json!({
        "for": label,
        "rule": "motor branch circuit: Article 430 protects the conductors (240.4(G)); 240.4(D) and 210.20(A) do not apply",
        "size_checked": spec.conductor_size.map(|s| s.to_string()),
        "ocpd_a": spec.breaker.0,
        "pass": pass,
        "findings": j.findings,
        "flc_a": z.flc.0,
        "flc_source": z.flc_source,
        "conductor_min_ampacity_a": round(z.conductor_min_ampacity.0, 2),
        "terminal_column": z.terminal_column.to_string(),
        "smallest_conductor": z.conductor.to_string(),
        "device": z.device,
        "percent_of_flc": z.percent_of_flc,
        "max_device_a": z.max_device_rating.map(|m| m.0),
        "exception_2_max_a": z.exception_2_max.map(|m| round(m.0, 1)),
        "references": z.references,
        "assumptions": if spec.motor.is_some_and(|m| m.device.is_none()) {
            vec!["device not recorded: inverse-time breaker"]
        } else {
            vec![]
        },
        "notes": notes,
    })
}
