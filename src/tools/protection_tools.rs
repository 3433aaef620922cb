//! Branch-circuit questions asked every day: GFCI/AFCI by location (`check_gfci_afci`), outlets
//! per circuit (`count_outlets_per_circuit`) and EV charging circuits (`size_ev_circuit`). The
//! rules live in `nec::gfci_afci`, `nec::outlet_count` and `nec::ev_charging`; a project circuit
//! gives its voltage, breaker and continuous flag, and the project's panel and service are
//! checked with the panel engine (`check_panel_capacity`'s) when an EVSE is added.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::nec_args::edition_of;
use super::schema::schema_for;
use super::{nec_err, parse_args, to_value, Tool, ToolContext, ToolError, ToolRegistry};
use crate::nec::ev_charging::{self, EvInput};
use crate::nec::gfci_afci::{self, Occupancy, ProtectionInput, Work};
use crate::nec::outlet_count::{self, CountOccupancy, OutletCountInput, OutletKind};
use crate::nec::units::{Amps, Edition, Material, Phase, Volts};
use crate::project::analysis::{
    circuit_electrical, circuit_label, panel_or_only, resolve_circuit, round, CircuitRef,
};
use crate::project::CircuitSpec;

/// Registers the three tools.
pub fn register(r: &mut ToolRegistry) {
    r.register(super::code_basis::WithCodeBasis(CheckGfciAfci));
    r.register(super::code_basis::WithCodeBasis(CountOutletsPerCircuit));
    r.register(super::code_basis::WithCodeBasis(SizeEvCircuit));
}

/// The edition: the argument, else the project's.
async fn edition(arg: Option<Edition>, ctx: &ToolContext) -> Edition {
    match arg {
        Some(e) => e,
        None => edition_of(ctx).await,
    }
}

/// Voltage, phases, breaker and continuous flag of a project circuit, when one is named.
async fn project_circuit(
    ctx: &ToolContext,
    panel: &Option<String>,
    number: Option<i32>,
) -> Result<Option<(String, f64, Phase, f64, bool)>, ToolError> {
    if panel.is_none() && number.is_none() {
        return Ok(None);
    }
    let p = ctx.project().await?;
    let (pn, c, _) = resolve_circuit(
        &p,
        &CircuitRef {
            panel: panel.clone(),
            number,
            description: None,
        },
    )?;
    let e = circuit_electrical(&pn.spec, &c.spec)?;
    Ok(Some((
        circuit_label(&pn.spec, &c.spec),
        e.volts,
        e.phase,
        c.spec.breaker.0,
        c.spec.continuous,
    )))
}

/// What Sparky cannot decide about a local code, from the project's code in force.
async fn local_note(ctx: &ToolContext) -> String {
    let base = "Many states and cities amend 210.8 and 210.12 (Massachusetts deleted 210.8(F) for 2020, North Carolina took kitchens and laundry areas out of 210.12 for 2017, Ohio did not adopt the 250 V reach of 210.8(A) for 2023): the AHJ's adopted text decides.";
    match ctx.code_in_force().await {
        Ok(Some(c)) => format!(
            "{base} Job site: {} Amendments: {}.",
            c.explanation,
            c.amendments
                .map(|a| serde_json::to_value(a)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default())
                .unwrap_or_else(|| "not recorded".into())
        ),
        _ => format!("{base} No project is bound, so no jurisdiction is known."),
    }
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum OccupancyArg {
    Dwelling,
    OtherThanDwelling,
    Dormitory,
    GuestRoom,
    PatientSleepingRoom,
}

impl From<OccupancyArg> for Occupancy {
    fn from(o: OccupancyArg) -> Self {
        match o {
            OccupancyArg::Dwelling => Self::Dwelling,
            OccupancyArg::OtherThanDwelling => Self::OtherThanDwelling,
            OccupancyArg::Dormitory => Self::Dormitory,
            OccupancyArg::GuestRoom => Self::GuestRoom,
            OccupancyArg::PatientSleepingRoom => Self::PatientSleepingRoom,
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum WorkArg {
    New,
    Replacement,
    Extension,
}

impl From<WorkArg> for Work {
    fn from(w: WorkArg) -> Self {
        match w {
            WorkArg::New => Self::New,
            WorkArg::Replacement => Self::Replacement,
            WorkArg::Extension => Self::Extension,
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum CountOccupancyArg {
    Dwelling,
    OtherThanDwelling,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GfciArgs {
    /// Where the outlet is: bathroom, garage, accessory_building, outdoors, crawl_space,
    /// basement_unfinished, basement_finished, kitchen_countertop, kitchen_other,
    /// food_prep_sink_area (wet bar), sink_6ft, boathouse, bathtub_shower_6ft, laundry,
    /// indoor_damp_wet, rooftop, locker_room_shower, aquarium, bedroom, living_room,
    /// family_room, dining_room, parlor, library, den, sunroom, recreation_room, closet,
    /// hallway, utility_room (plurals and other names such as "outdoor" or "laundry room"
    /// are read as these).
    location: String,
    /// dwelling (default), other_than_dwelling, dormitory, guest_room, patient_sleeping_room.
    #[serde(default)]
    occupancy: Option<OccupancyArg>,
    /// 2017, 2020 or 2023 (default: the project's edition in force).
    #[serde(default)]
    edition: Option<Edition>,
    /// A receptacle (default true); false for a luminaire or hard-wired equipment.
    #[serde(default)]
    receptacle: Option<bool>,
    /// Receptacle or circuit volts (default 120).
    #[serde(default)]
    voltage: Option<Volts>,
    /// Volts to ground when the system is unusual (high-leg or corner-grounded delta).
    #[serde(default)]
    volts_to_ground: Option<Volts>,
    /// 1 or 3 (default 1).
    #[serde(default)]
    phase: Option<Phase>,
    /// Receptacle or circuit amperes (default 20).
    #[serde(default)]
    amps: Option<Amps>,
    /// Within 6 ft of a sink.
    #[serde(default)]
    near_sink: bool,
    /// Within 6 ft of a bathtub or shower.
    #[serde(default)]
    near_tub_or_shower: bool,
    /// Indoor damp or wet location.
    #[serde(default)]
    damp_or_wet: bool,
    /// new (default), replacement (406.4(D)) or extension (210.12 extensions).
    #[serde(default)]
    work: Option<WorkArg>,
    /// Extension length, ft.
    #[serde(default)]
    extension_ft: Option<f64>,
    /// Whether the extension adds outlets or devices.
    #[serde(default)]
    extension_adds_outlets: Option<bool>,
    /// A project circuit: its panel (with number) gives voltage, phases and breaker.
    #[serde(default)]
    panel: Option<String>,
    /// Circuit number on that panel.
    #[serde(default)]
    number: Option<i32>,
}

/// 210.8 / 210.12 for one outlet.
pub struct CheckGfciAfci;

#[async_trait]
impl Tool for CheckGfciAfci {
    fn name(&self) -> &'static str {
        "check_gfci_afci"
    }
    fn description(&self) -> &'static str {
        "Is GFCI (210.8) and/or AFCI (210.12) protection required for an outlet: by location, occupancy \
         (dwelling, other than dwelling, dormitory, guest room), edition 2017/2020/2023, voltage/amps scope, \
         new work, receptacle replacement (406.4(D)(3)/(4)) or circuit extension (6 ft exception). Answers \
         yes/no/unknown for each with sections, the questions a reviewer would ask, and what the AHJ decides."
    }
    fn schema(&self) -> Value {
        schema_for::<GfciArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: GfciArgs = parse_args(&args)?;
        let edition = edition(a.edition, ctx).await;
        let circuit = project_circuit(ctx, &a.panel, a.number).await?;
        let mut assumptions = Vec::new();
        let (volts, phase, amps) = match &circuit {
            Some((_, v, p, b, _)) => (
                a.voltage.unwrap_or(Volts(*v)),
                a.phase.unwrap_or(*p),
                a.amps.unwrap_or(Amps(*b)),
            ),
            None => {
                if a.voltage.is_none() {
                    assumptions.push("120 V (not given)".to_string());
                }
                if a.amps.is_none() {
                    assumptions.push("20 A (not given)".to_string());
                }
                (
                    a.voltage.unwrap_or(Volts(120.0)),
                    a.phase.unwrap_or(Phase::Single),
                    a.amps.unwrap_or(Amps(20.0)),
                )
            }
        };
        if a.occupancy.is_none() {
            assumptions.push("dwelling unit (occupancy not given)".to_string());
        }
        let r = gfci_afci::protection(&ProtectionInput {
            edition,
            occupancy: a.occupancy.map_or(Occupancy::Dwelling, Occupancy::from),
            location: a.location.clone(),
            receptacle: a.receptacle.unwrap_or(true),
            volts: Some(volts),
            volts_to_ground: a.volts_to_ground,
            phase,
            amps: Some(amps),
            near_sink: a.near_sink,
            near_tub_or_shower: a.near_tub_or_shower,
            damp_or_wet: a.damp_or_wet,
            work: a.work.map(Work::from).unwrap_or_default(),
            extension_ft: a.extension_ft,
            extension_adds_outlets: a.extension_adds_outlets,
        })
        .map_err(nec_err)?;
        assumptions.extend(r.assumptions.iter().cloned());
        Ok(json!({
            "edition": edition,
            "circuit": circuit.as_ref().map(|c| c.0.clone()),
            "gfci": to_value(&r.gfci)?,
            "afci": to_value(&r.afci)?,
            "reviewer_questions": r.reviewer_questions,
            "cannot_decide": [local_note(ctx).await, "Whether a space is a 'similar room or area' (210.12), a 'laundry area' or 'damp' is the inspector's call."],
            "assumptions": assumptions,
        }))
    }
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum OutletArg {
    Receptacle,
    QuadReceptacle,
    MultioutletAssembly,
    Luminaire,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CountArgs {
    /// receptacle (single/duplex/triplex yoke, default), quad_receptacle,
    /// multioutlet_assembly or luminaire.
    #[serde(default)]
    outlet: Option<OutletArg>,
    /// Luminaire input VA each (with outlet luminaire).
    #[serde(default)]
    va_each: Option<f64>,
    /// Multioutlet assembly with appliances used at the same time (180 VA per ft).
    #[serde(default)]
    simultaneous: bool,
    /// Circuit volts (default 120, or the project circuit's).
    #[serde(default)]
    voltage: Option<Volts>,
    /// Breaker amperes (default 20, or the project circuit's).
    #[serde(default)]
    breaker: Option<Amps>,
    /// 1 or 3 (default 1).
    #[serde(default)]
    phase: Option<Phase>,
    /// Load runs 3 h or more (default: the circuit's flag; luminaires true, receptacles false).
    #[serde(default)]
    continuous: Option<bool>,
    /// dwelling or other_than_dwelling (default other_than_dwelling).
    #[serde(default)]
    occupancy: Option<CountOccupancyArg>,
    /// Dwelling floor area, ft², for the number of general-purpose circuits.
    #[serde(default)]
    floor_area_ft2: Option<f64>,
    /// 2017, 2020 or 2023 (default: the project's).
    #[serde(default)]
    edition: Option<Edition>,
    /// A project circuit: panel.
    #[serde(default)]
    panel: Option<String>,
    /// A project circuit: number.
    #[serde(default)]
    number: Option<i32>,
}

/// Outlets per branch circuit.
pub struct CountOutletsPerCircuit;

#[async_trait]
impl Tool for CountOutletsPerCircuit {
    fn name(&self) -> &'static str {
        "count_outlets_per_circuit"
    }
    fn description(&self) -> &'static str {
        "How many receptacles, feet of multioutlet assembly or luminaires a branch circuit may supply: \
         180 VA per yoke (220.14(I)), 180 VA per 5 ft or per 1 ft (220.14(H)), luminaire VA at 125 % if \
         continuous, 80 % of V × A for continuous loads. Dwellings have no NEC count: gives the 3 VA/ft² \
         circuits instead. Uses a project circuit's voltage and breaker."
    }
    fn schema(&self) -> Value {
        schema_for::<CountArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: CountArgs = parse_args(&args)?;
        let edition = edition(a.edition, ctx).await;
        let circuit = project_circuit(ctx, &a.panel, a.number).await?;
        let mut assumptions = Vec::new();
        let kind = a.outlet.unwrap_or(OutletArg::Receptacle);
        let outlet = match kind {
            OutletArg::Receptacle => OutletKind::Receptacle,
            OutletArg::QuadReceptacle => OutletKind::QuadReceptacle,
            OutletArg::MultioutletAssembly => OutletKind::MultioutletAssembly {
                simultaneous: a.simultaneous,
            },
            OutletArg::Luminaire => OutletKind::Luminaire {
                va_each: a.va_each.ok_or_else(|| {
                    ToolError::InvalidArguments(
                        "luminaire needs va_each (the luminaire's input VA)".into(),
                    )
                })?,
            },
        };
        let (volts, phase, breaker, cont) = match &circuit {
            Some((_, v, p, b, c)) => (
                a.voltage.map_or(*v, |x| x.0),
                a.phase.unwrap_or(*p),
                a.breaker.map_or(*b, |x| x.0),
                a.continuous.unwrap_or(*c),
            ),
            None => {
                if a.voltage.is_none() {
                    assumptions.push("120 V (not given)".to_string());
                }
                if a.breaker.is_none() {
                    assumptions.push("20 A breaker (not given)".to_string());
                }
                let lum = matches!(kind, OutletArg::Luminaire);
                if a.continuous.is_none() {
                    assumptions.push(if lum {
                        "luminaires continuous (3 h or more; not given)".to_string()
                    } else {
                        "not a continuous load (not given)".to_string()
                    });
                }
                (
                    a.voltage.map_or(120.0, |x| x.0),
                    a.phase.unwrap_or(Phase::Single),
                    a.breaker.map_or(20.0, |x| x.0),
                    a.continuous.unwrap_or(lum),
                )
            }
        };
        let r = outlet_count::outlet_count(&OutletCountInput {
            edition,
            occupancy: match a.occupancy {
                Some(CountOccupancyArg::Dwelling) => CountOccupancy::Dwelling,
                _ => CountOccupancy::OtherThanDwelling,
            },
            outlet,
            volts: Volts(volts),
            phase,
            breaker: Amps(breaker),
            continuous: cont,
            floor_area_ft2: a.floor_area_ft2,
        })
        .map_err(nec_err)?;
        Ok(json!({
            "edition": edition,
            "circuit": circuit.as_ref().map(|c| c.0.clone()),
            "max_count": r.max_count,
            "max_length_ft": r.max_length_ft,
            "no_nec_limit": r.max_count.is_none() && r.max_length_ft.is_none(),
            "dwelling_circuits_needed": r.dwelling_circuits_needed,
            "circuit_va": round(r.circuit_va.0, 0),
            "usable_va": round(r.usable_va.0, 0),
            "arithmetic": r.arithmetic,
            "references": r.references,
            "notes": r.notes,
            "assumptions": assumptions,
        }))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EvArgs {
    /// EVSE nameplate maximum current, A (or give kw).
    #[serde(default)]
    amps: Option<Amps>,
    /// EVSE rating, kW (with voltage gives the amps).
    #[serde(default)]
    kw: Option<f64>,
    /// Supply volts (default 240, or 208 on a 208 V panel).
    #[serde(default)]
    voltage: Option<Volts>,
    /// 1 or 3 (default 1).
    #[serde(default)]
    phase: Option<Phase>,
    /// How many EVSE (default 1).
    #[serde(default)]
    count: Option<u32>,
    /// Restricted-access adjusted current setting, A.
    #[serde(default)]
    adjusted_amps: Option<Amps>,
    /// Energy management limit for all the EVSE together, A.
    #[serde(default)]
    managed_amps: Option<Amps>,
    /// Cord-and-plug (NEMA 14-50 etc.) instead of hard-wired.
    #[serde(default)]
    receptacle: bool,
    /// Conductor material (default copper).
    #[serde(default)]
    material: Option<Material>,
    /// 2017, 2020 or 2023 (default: the project's).
    #[serde(default)]
    edition: Option<Edition>,
    /// Project panel the EVSE would be added to: its loading with the EVSE is checked.
    #[serde(default)]
    panel: Option<String>,
}

/// EV charging branch circuit and feeder/service load.
pub struct SizeEvCircuit;

#[async_trait]
impl Tool for SizeEvCircuit {
    fn name(&self) -> &'static str {
        "size_ev_circuit"
    }
    fn description(&self) -> &'static str {
        "EV charger (EVSE, Level 2, Tesla wall connector) branch circuit: individual circuit (625.40), breaker \
         at 125 % (625.41, next standard size), conductor at 60 °C and 75 °C terminations, adjustable setting or \
         energy management (625.42), GFCI for receptacles (625.54), and the load it adds to a feeder/service \
         (2023 220.57: 7200 VA or nameplate; 2017/2020 nameplate). With panel: the panel's loading with it. For \
         the dwelling service use check_service_upgrade with the load shown."
    }
    fn schema(&self) -> Value {
        schema_for::<EvArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: EvArgs = parse_args(&args)?;
        let edition = edition(a.edition, ctx).await;
        let mut assumptions = Vec::new();
        let project = match (&a.panel, ctx.project_id) {
            (Some(_), Some(_)) => Some(ctx.project().await?),
            (Some(_), None) => {
                return Err(ToolError::MissingData(
                    "panel names a project panel and no project is bound; leave panel out".into(),
                ))
            }
            _ => None,
        };
        let panel = match (&project, &a.panel) {
            (Some(p), Some(n)) => Some(panel_or_only(p, Some(n))?.clone()),
            _ => None,
        };
        let volts = match (a.voltage, &panel) {
            (Some(v), _) => v.0,
            (None, Some(p)) => p.spec.voltage.0,
            (None, None) => {
                assumptions.push("240 V (not given)".to_string());
                240.0
            }
        };
        let phase = a.phase.unwrap_or(Phase::Single);
        let amps = match (a.amps, a.kw) {
            (Some(x), _) => x.0,
            (None, Some(kw)) if kw.is_finite() && kw > 0.0 => {
                let f = if phase == Phase::Three {
                    3f64.sqrt()
                } else {
                    1.0
                };
                let x = kw * 1000.0 / (volts * f);
                assumptions.push(format!("{kw} kW at {volts} V = {:.1} A", x));
                x
            }
            _ => {
                return Err(ToolError::InvalidArguments(
                    "give amps (EVSE nameplate) or kw".into(),
                ))
            }
        };
        let r = ev_charging::ev_circuit(&EvInput {
            edition,
            amps: Amps(amps),
            volts: Volts(volts),
            phase,
            count: a.count.unwrap_or(1),
            adjusted_amps: a.adjusted_amps,
            managed_amps: a.managed_amps,
            receptacle: a.receptacle,
            material: a.material.unwrap_or(Material::Copper),
        })
        .map_err(nec_err)?;
        // The project's panel with the EVSE added, through the panel engine.
        let panel_check = match (&project, &panel) {
            (Some(p), Some(pn)) => {
                let mut specs: Vec<CircuitSpec> = p
                    .circuits_of(pn.id)
                    .iter()
                    .map(|c| c.spec.clone())
                    .collect();
                let base = specs.first().cloned();
                if let Some(mut ev) = base {
                    ev.description = "EVSE (proposed)".into();
                    ev.load_va = crate::nec::units::VoltAmperes(r.load_total_va.0);
                    ev.continuous = true;
                    ev.poles = if volts > 150.0 { 2 } else { 1 };
                    ev.number = -1;
                    specs.push(ev);
                    let refs: Vec<&CircuitSpec> = specs.iter().collect();
                    let input = crate::project::analysis::panel_input(&pn.spec, &refs);
                    let res = crate::nec::panel::panel_capacity(&input).map_err(nec_err)?;
                    json!({
                        "panel": pn.spec.name,
                        "with_evse_max_phase_a": round(res.max_phase_amps, 1),
                        "limiting_rating_a": res.limiting_rating.0,
                        "fits": res.max_phase_amps <= res.limiting_rating.0,
                        "method": "check_panel_capacity's engine with the EVSE added at 125 % continuous",
                    })
                } else {
                    json!({"panel": pn.spec.name, "note": "the panel has no circuits recorded; add them to check its loading"})
                }
            }
            _ => Value::Null,
        };
        let service = project.as_ref().and_then(|p| p.service.clone()).map(|s| {
            json!({
                "service_rating_a": s.rating.0,
                "added_load_va": round(r.load_total_va.0, 0),
                "next_step": format!("dwelling: check_service_upgrade with added_loads [{{\"description\": \"EVSE\", \"va\": {:.0}}}] and the floor area (220.83)", r.load_total_va.0),
            })
        });
        let mut calc = to_value(&r)?;
        if let Some(o) = calc.as_object_mut() {
            o.remove("edition");
        }
        Ok(json!({
            "edition": edition,
            "branch_ocpd_a": r.branch_ocpd.0,
            "min_conductor_60c": r.conductors[0].size.to_string(),
            "min_conductor_75c": r.conductors[1].size.to_string(),
            "load_each_va": round(r.load_each_va.0, 0),
            "load_total_va": round(r.load_total_va.0, 0),
            "panel_check": panel_check,
            "service": service,
            "calculation": calc,
            "cannot_decide": "Terminal temperature ratings (use 75 °C only where the EVSE and breaker are marked for it), the EVSE's installation instructions (its maximum breaker), and local EV-ready amendments are for the installer and AHJ.",
            "assumptions": assumptions,
        }))
    }
}
