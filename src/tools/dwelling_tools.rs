//! Dwelling load calculation for a NEW dwelling unit's service or feeder: the standard method
//! (Article 220 Part III) or the optional method (220.82), with line-by-line 120/240 V loads
//! (Annex D Example D1(b)). The appliances can be given, named by circuit, or read from the
//! nameplates and motors recorded on the project's circuits (`project_circuits`, `panel`).
//! Adding load to an existing dwelling (220.83) is `check_service_upgrade`.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::nec_args::edition_of;
use super::schema::schema_for;
use super::{nec_err, parse_args, to_value, Tool, ToolContext, ToolError, ToolRegistry};
use crate::nec::dwelling::{
    self, Appliance, DwellingOptionalInput, DwellingStandardInput, HvacLoads, LineConnection,
    LineCurrentsInput, LineLoad,
};
use crate::nec::units::{Amps, Phase, Volts};
use crate::project::analysis::{
    circuit_electrical, circuit_label, resolve_circuit, resolve_panel, round, CircuitRef,
};
use crate::project::dwelling_circuits::{
    dwelling_loads_from_circuits, DwellingCircuits, DwellingLoadKind,
};
use crate::project::ProjectData;

/// Registers the dwelling tools.
pub fn register(r: &mut ToolRegistry) {
    r.register(super::code_basis::WithCodeBasis(CalculateDwellingLoad));
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum MethodArg {
    #[default]
    Standard,
    Optional,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum KindArg {
    #[default]
    Fastened,
    Dryer,
    Cooking,
    Heating,
    Cooling,
    HeatPump,
    SupplementalHeat,
    /// EV supply equipment (220.57).
    Evse,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LoadArg {
    #[serde(default)]
    description: String,
    /// Nameplate VA (W as VA); or give `circuit`.
    #[serde(default)]
    va: Option<f64>,
    /// Project circuit ("LP-1 #5", "the dryer"): its VA and voltage.
    #[serde(default)]
    circuit: Option<String>,
    /// 120 or 240 (default 240).
    #[serde(default)]
    volts: Option<f64>,
    /// Default fastened (water heater, dishwasher...); cooking = range, oven, cooktop; evse =
    /// an EV charger.
    #[serde(default)]
    kind: KindArg,
    /// Is a motor (for 25 % of the largest motor).
    #[serde(default)]
    motor: bool,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum LineArg {
    LineA,
    LineB,
    LineToLine,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LineLoadArg {
    #[serde(default)]
    description: String,
    amps: f64,
    connection: LineArg,
    #[serde(default)]
    motor: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DwellingArgs {
    /// standard (default) or optional (220.82).
    #[serde(default)]
    method: MethodArg,
    /// ft², outside dimensions, no garages or open porches.
    floor_area_ft2: f64,
    /// Default 2.
    #[serde(default)]
    small_appliance_circuits: Option<u32>,
    /// Default 1.
    #[serde(default)]
    laundry_circuits: Option<u32>,
    /// Appliances and HVAC at nameplate.
    #[serde(default)]
    loads: Vec<LoadArg>,
    /// Separately controlled space-heating units (optional method).
    #[serde(default)]
    space_heating_units: Option<u32>,
    /// Heat pump compressor cannot run with the supplemental heat.
    #[serde(default)]
    compressor_interlocked: bool,
    /// Default: the largest load marked motor.
    #[serde(default)]
    largest_motor_va: Option<f64>,
    /// Read the appliance nameplates and motors recorded on the project's circuits (every
    /// panel) as loads, besides any listed in `loads`.
    #[serde(default)]
    project_circuits: bool,
    /// Like project_circuits, for this panel and the panels it feeds (a feeder calculation).
    #[serde(default)]
    panel: Option<String>,
    /// Per-line loads added after the calculation.
    #[serde(default)]
    line_loads: Vec<LineLoadArg>,
    /// Default: the project's service, else 240.
    #[serde(default)]
    voltage: Option<Volts>,
}

struct Resolved {
    description: String,
    va: f64,
    volts: f64,
    kind: KindArg,
    /// VA counted for 25 % of the largest motor, when a motor.
    motor_va: Option<f64>,
    circuit_id: Option<i64>,
}

fn resolve_loads(p: Option<&ProjectData>, loads: &[LoadArg]) -> Result<Vec<Resolved>, ToolError> {
    let mut out = Vec::new();
    for (i, l) in loads.iter().enumerate() {
        let (description, va, volts, circuit_id) = match (&l.circuit, l.va) {
            (Some(name), va) => {
                let p = p.ok_or_else(|| {
                    ToolError::MissingData(format!(
                        "loads[{i}] names circuit '{name}' but no project is bound; give va instead"
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
                let va = va.unwrap_or(c.spec.load_va.0);
                (
                    circuit_label(&panel.spec, &c.spec),
                    va,
                    l.volts.unwrap_or(e.volts),
                    Some(c.id),
                )
            }
            (None, Some(va)) => (l.description.clone(), va, l.volts.unwrap_or(240.0), None),
            (None, None) => {
                return Err(ToolError::InvalidArguments(format!(
                    "loads[{i}] ({}) needs va or circuit",
                    l.description
                )))
            }
        };
        if !va.is_finite() || va < 0.0 {
            return Err(ToolError::InvalidArguments(format!(
                "loads[{i}] ({description}): va must be a non-negative number, got {va}"
            )));
        }
        out.push(Resolved {
            description,
            va,
            volts,
            kind: l.kind,
            motor_va: l.motor.then_some(va),
            circuit_id,
        });
    }
    Ok(out)
}

fn kind_arg(k: DwellingLoadKind) -> KindArg {
    match k {
        DwellingLoadKind::Fastened => KindArg::Fastened,
        DwellingLoadKind::Dryer => KindArg::Dryer,
        DwellingLoadKind::Cooking => KindArg::Cooking,
        DwellingLoadKind::Heating => KindArg::Heating,
        DwellingLoadKind::SupplementalHeat => KindArg::SupplementalHeat,
        DwellingLoadKind::Cooling => KindArg::Cooling,
        DwellingLoadKind::HeatPump => KindArg::HeatPump,
        DwellingLoadKind::Evse => KindArg::Evse,
    }
}

/// Adds the loads recorded on the project's circuits (those not already named in `loads`) and
/// describes which circuit fed which input.
fn add_circuit_loads(
    p: &ProjectData,
    panel: Option<&str>,
    loads: &mut Vec<Resolved>,
) -> Result<(DwellingCircuits, Value), ToolError> {
    let scope = match panel {
        Some(n) => Some(resolve_panel(p, n)?),
        None => None,
    };
    let named: Vec<i64> = loads.iter().filter_map(|l| l.circuit_id).collect();
    let read = dwelling_loads_from_circuits(p, scope, &named);
    let inputs: Vec<Value> = read
        .loads
        .iter()
        .map(|l| {
            json!({
                "circuit": l.circuit,
                "input": match l.kind {
                    DwellingLoadKind::Fastened => "fastened in place (220.53)",
                    DwellingLoadKind::Dryer => "dryer (220.54)",
                    DwellingLoadKind::Cooking => "cooking appliance (220.55)",
                    DwellingLoadKind::Heating => "space heating (220.51, 220.60)",
                    DwellingLoadKind::SupplementalHeat => "supplemental heat (220.60, 220.82(C)(3))",
                    DwellingLoadKind::Cooling => "air conditioning (220.60)",
                    DwellingLoadKind::HeatPump => "heat pump (220.60)",
                    DwellingLoadKind::Evse => "EV supply equipment (220.57)",
                },
                "va": round(l.va, 0),
                "volts": round(l.volts, 0),
                "basis": l.basis,
            })
        })
        .collect();
    loads.extend(read.loads.iter().map(|l| Resolved {
        description: l.circuit.clone(),
        va: l.va,
        volts: l.volts,
        kind: kind_arg(l.kind),
        motor_va: l.motor_va,
        circuit_id: Some(l.circuit_id),
    }));
    let v = json!({
        "panels": read.panels,
        "inputs": inputs,
        "not_counted": read.not_counted,
        "missing": read.missing,
        "assumptions": read.assumptions,
    });
    Ok((read, v))
}

fn sum(loads: &[Resolved], kind: KindArg) -> f64 {
    loads.iter().filter(|l| l.kind == kind).map(|l| l.va).sum()
}

fn appliance(l: &Resolved) -> Appliance {
    Appliance {
        description: l.description.clone(),
        va: l.va,
        volts: l.volts,
    }
}

/// Service or feeder load of a new dwelling unit.
pub struct CalculateDwellingLoad;

#[async_trait]
impl Tool for CalculateDwellingLoad {
    fn name(&self) -> &'static str {
        "calculate_dwelling_load"
    }
    fn description(&self) -> &'static str {
        "Service/feeder load of a NEW dwelling unit: standard method, Art. 220 Part III (220.42/220.45, \
         220.53, 220.54, 220.55 notes, 220.60, neutral 220.61) or optional 220.82. Not for load added \
         to an existing house: use check_service_upgrade (220.83), which would undersize a new service. \
         line_loads: 120/240 V loads added per line, 25 % of the largest motor (Annex D1(b)). \
         project_circuits (or panel): loads from the appliance nameplates and motors on the \
         project's circuits; from_circuits shows which circuit fed which input and what is missing."
    }
    fn schema(&self) -> Value {
        schema_for::<DwellingArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: DwellingArgs = parse_args(&args)?;
        let edition = edition_of(ctx).await;
        let project = match ctx.project_id {
            Some(_) => Some(ctx.project().await?),
            None => None,
        };
        let service = project.as_ref().and_then(|p| p.service.clone());
        let mut assumptions: Vec<String> = Vec::new();
        let voltage = match (a.voltage, &service) {
            (Some(v), _) => v.0,
            (None, Some(s)) => s.voltage.0,
            (None, None) => {
                assumptions.push("120/240 V single-phase service assumed".into());
                240.0
            }
        };
        if service.as_ref().is_some_and(|s| s.phase == Phase::Three) {
            assumptions.push(
                "the project's service is three-phase: these are single-phase dwelling methods; result indicative only"
                    .into(),
            );
        }
        if a.small_appliance_circuits.is_none() {
            assumptions.push("2 small-appliance circuits (not given)".into());
        }
        if a.laundry_circuits.is_none() {
            assumptions.push("1 laundry circuit (not given)".into());
        }
        let mut loads = resolve_loads(project.as_ref(), &a.loads)?;
        let mut from_circuits = Value::Null;
        let mut space_heating_circuits = 0;
        if a.project_circuits || a.panel.is_some() {
            let p = project.as_ref().ok_or_else(|| {
                ToolError::MissingData(
                    "project_circuits and panel read the bound project's circuits, and no project is bound; list the loads instead".into(),
                )
            })?;
            let (read, v) = add_circuit_loads(p, a.panel.as_deref(), &mut loads)?;
            space_heating_circuits = read.space_heating_circuits;
            from_circuits = v;
        }
        let sa = a.small_appliance_circuits.unwrap_or(2);
        let laundry = a.laundry_circuits.unwrap_or(1);
        let result = match a.method {
            MethodArg::Standard => {
                let mut fastened = Vec::new();
                let mut cooking = Vec::new();
                for l in &loads {
                    match l.kind {
                        KindArg::Fastened => fastened.push(appliance(l)),
                        KindArg::Cooking if l.va <= 1750.0 => {
                            assumptions.push(format!(
                                "{} ({} VA) is 1¾ kW or less: counted as a fastened appliance, not under Table 220.55",
                                l.description, l.va
                            ));
                            fastened.push(appliance(l));
                        }
                        KindArg::Cooking => cooking.push(l.va / 1000.0),
                        _ => {}
                    }
                }
                let hp = sum(&loads, KindArg::HeatPump);
                let supp = sum(&loads, KindArg::SupplementalHeat);
                let heating = sum(&loads, KindArg::Heating)
                    + supp
                    + if a.compressor_interlocked && supp > 0.0 {
                        0.0
                    } else {
                        hp
                    };
                let cooling = sum(&loads, KindArg::Cooling) + hp;
                // 220.60: air conditioning left out as noncoincident is not the largest motor.
                let ac_omitted = heating >= cooling;
                let largest = loads
                    .iter()
                    .filter(|l| !(ac_omitted && l.kind == KindArg::Cooling))
                    .filter_map(|l| l.motor_va.map(|m| (m, l)))
                    .max_by(|x, y| x.0.total_cmp(&y.0));
                let largest_motor = a.largest_motor_va.or(largest.map(|(m, _)| m));
                if a.largest_motor_va.is_none() {
                    if let Some((m, l)) = largest {
                        assumptions.push(format!(
                            "largest motor: {} ({} VA), the largest load that is a motor",
                            l.description,
                            round(m, 0)
                        ));
                    }
                }
                dwelling::dwelling_standard(&DwellingStandardInput {
                    evse_va: loads
                        .iter()
                        .filter(|l| l.kind == KindArg::Evse)
                        .map(|l| l.va)
                        .collect(),
                    edition,
                    floor_area_ft2: a.floor_area_ft2,
                    small_appliance_circuits: sa,
                    laundry_circuits: laundry,
                    fastened_appliances: fastened,
                    dryers_w: loads
                        .iter()
                        .filter(|l| l.kind == KindArg::Dryer)
                        .map(|l| l.va)
                        .collect(),
                    cooking_appliances_kw: cooking,
                    heating_va: heating,
                    cooling_va: cooling,
                    largest_motor_va: largest_motor,
                    voltage,
                })
                .map_err(nec_err)?
            }
            MethodArg::Optional => {
                let supp = sum(&loads, KindArg::SupplementalHeat);
                let hp = sum(&loads, KindArg::HeatPump);
                let heating = sum(&loads, KindArg::Heating);
                let units = match a.space_heating_units {
                    Some(n) => n,
                    None if heating > 0.0 && space_heating_circuits > 0 => {
                        assumptions.push(format!(
                            "{space_heating_circuits} separately controlled space-heating unit(s): one per space-heating circuit (give space_heating_units if not)"
                        ));
                        space_heating_circuits
                    }
                    None if heating > 0.0 => {
                        return Err(ToolError::MissingData(
                            "space_heating_units is required with heating loads: 220.82(C) takes 65 % for fewer than four separately controlled units, 40 % for four or more".into(),
                        ))
                    }
                    None => 0,
                };
                dwelling::dwelling_optional(&DwellingOptionalInput {
                    edition,
                    floor_area_ft2: a.floor_area_ft2,
                    small_appliance_circuits: sa,
                    laundry_circuits: laundry,
                    appliances: loads
                        .iter()
                        .filter(|l| {
                            matches!(
                                l.kind,
                                KindArg::Fastened
                                    | KindArg::Dryer
                                    | KindArg::Cooking
                                    | KindArg::Evse
                            )
                        })
                        .map(appliance)
                        .collect(),
                    hvac: HvacLoads {
                        air_conditioning_va: sum(&loads, KindArg::Cooling),
                        heat_pump_without_supplemental_va: if supp > 0.0 { 0.0 } else { hp },
                        heat_pump_compressor_va: if supp > 0.0 { hp } else { 0.0 },
                        supplemental_heat_va: supp,
                        compressor_interlocked: a.compressor_interlocked,
                        space_heating_va: heating,
                        space_heating_units: units,
                        thermal_storage_va: 0.0,
                    },
                    voltage,
                })
                .map_err(nec_err)?
            }
        };
        let line_by_line = if a.line_loads.is_empty() {
            Value::Null
        } else {
            // 220.5(B): fractions of an ampere below 0.5 may be dropped (Annex D rounds 77.5 to 78).
            let base = result.amps.0.round();
            // The neutral starts from the standard method's 220.61 neutral, rounded alike.
            let base_neutral = result.neutral_amps.map(|n| n.0.round());
            let r = dwelling::dwelling_line_currents(&LineCurrentsInput {
                edition,
                base_line_amps: base,
                base_neutral_amps: base_neutral,
                loads: a
                    .line_loads
                    .iter()
                    .map(|l| LineLoad {
                        description: l.description.clone(),
                        amps: l.amps,
                        connection: match l.connection {
                            LineArg::LineA => LineConnection::LineA,
                            LineArg::LineB => LineConnection::LineB,
                            LineArg::LineToLine => LineConnection::LineToLine,
                        },
                        motor: l.motor,
                    })
                    .collect(),
            })
            .map_err(nec_err)?;
            json!({
                "base_line_a": base,
                "line_a_a": round(r.line_a.0, 1),
                "line_b_a": round(r.line_b.0, 1),
                "base_neutral_a": base_neutral,
                "neutral_a": r.neutral.map(|n| round(n.0, 1)),
                "neutral_note": if r.neutral.is_none() { json!("no neutral: the optional method (220.82) gives none; use the standard method for the neutral") } else { Value::Null },
                "motor_25pct_a": [round(r.motor_25pct.0, 2), round(r.motor_25pct.1, 2)],
                "minimum_service_a": r.minimum_service_rating.0,
                "references": r.references,
                "assumptions": ["calculated current rounded to whole amperes (220.5(B)) as the base of each line", "added loads at 100 % of rated current"],
            })
        };
        let governing = match line_by_line["minimum_service_a"].as_f64() {
            Some(m) => m.max(result.minimum_service_rating.0),
            None => result.minimum_service_rating.0,
        };
        let service_check = service.as_ref().map(|s| {
            json!({
                "service_rating_a": s.rating.0,
                "adequate": s.rating.0 >= governing,
            })
        });
        let mut calc = to_value(&result)?;
        if let Some(o) = calc.as_object_mut() {
            o.remove("edition");
        }
        Ok(json!({
            "method": result.method,
            "edition": edition,
            "total_va": round(result.total_va, 0),
            "calculated_a": round(result.amps.0, 1),
            "neutral_a": result.neutral_amps.map(|n: Amps| round(n.0, 1)),
            "minimum_service_a": governing,
            "line_by_line": line_by_line,
            "project_service": service_check,
            "from_circuits": from_circuits,
            "calculation": calc,
            "assumptions": assumptions,
            "note": "new-dwelling methods; for load added to an existing dwelling use check_service_upgrade (220.83)",
        }))
    }
}
