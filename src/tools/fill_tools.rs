//! Fill tools: box fill (`calculate_box_fill`, 314.16) and raceway fill
//! (`calculate_raceway_fill`, Chapter 9 Tables 1, 4, 5, 8 with Notes 4, 7 and 9). Both take
//! free inputs; raceway fill also reads a project feeder or branch circuits
//! (`project::raceway_contents`: what the project does not record is assumed and said). The
//! edition is the `edition` argument, else the project's code in force.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::code_basis::WithCodeBasis;
use super::nec_args::edition_of;
use super::schema::schema_for;
use super::{nec_err, parse_args, to_value, Tool, ToolContext, ToolError, ToolRegistry};
use crate::nec::box_fill::{
    self, AddedVolume, Barrier, BoxConductors, BoxEgcs, BoxFillInput, BoxVolume, ConductorRun, Yoke,
};
use crate::nec::fill_tables::{self, Insulation, RacewayType, TradeSize};
use crate::nec::raceway_fill::{self, FillItem, FillItemKind, RacewayFillInput};
use crate::nec::tables::Stranding;
use crate::nec::units::{ConductorSize, Edition};
use crate::project::analysis::{resolve_circuit, resolve_feeder, CircuitRef};
use crate::project::raceway_contents::{
    circuits_contents, feeder_contents, ContentChoices, RacewayContents,
};

/// Registers the fill tools.
pub fn register(r: &mut ToolRegistry) {
    r.register(WithCodeBasis(CalculateBoxFill));
    r.register(WithCodeBasis(CalculateRacewayFill));
}

/// The edition asked for, else the one in force for the project; and why.
async fn edition(asked: Option<Edition>, ctx: &ToolContext) -> (Edition, &'static str) {
    match asked {
        Some(e) => (e, "asked for in the arguments"),
        None => (
            edition_of(ctx).await,
            "the project's code in force (or Sparky's default)",
        ),
    }
}

// ------------------------------------------------------------------------------------------
// Box fill

#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum RunArg {
    /// Comes from outside and is spliced or ends in the box (the default): 1 allowance.
    #[default]
    Terminates,
    /// Passes through unbroken: 1 allowance.
    PassesThrough,
    /// Unbroken, looped or coiled 12 in. or more: 2 allowances.
    Looped,
    /// Pigtail or jumper wholly inside the box: not counted.
    Internal,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BoxConductorArg {
    /// 18 through 6 AWG.
    size: ConductorSize,
    count: u32,
    #[serde(default)]
    run: RunArg,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FixtureWireArg {
    /// 18 or 16 AWG typically.
    size: ConductorSize,
    count: u32,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EgcArg {
    size: ConductorSize,
    count: u32,
    /// An isolated-ground set per 250.146(D) (matters under 2017).
    #[serde(default)]
    isolated: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DeviceArg {
    /// "duplex receptacle", "switch".
    #[serde(default)]
    description: String,
    /// Largest conductor connected to the device(s) on this yoke (default: largest in box).
    #[serde(default)]
    largest_conductor: Option<ConductorSize>,
    /// Gangs needed when the device is wider than a single 2 in. device box (default 1).
    #[serde(default)]
    gangs: Option<u32>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AddedArg {
    /// "plaster ring", "extension ring", "domed cover".
    #[serde(default)]
    description: String,
    /// Volume marked on it.
    volume_in3: f64,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BoxFillArgs {
    /// A standard metal box of Table 314.16(A), e.g. "square_4x2-1/8", "square_4-11/16x1-1/2",
    /// "round_octagonal_4x1-1/2", "device_3x2x3-1/2", "device_4x2-1/8x1-7/8",
    /// "masonry_3-3/4x2x3-1/2", "fs_single_1-3/4", "fd_multiple_2-3/8". Or give
    /// box_volume_in3; neither: the required volume and the smallest standard boxes.
    #[serde(default, rename = "box")]
    standard_box: Option<String>,
    /// Volume marked on the box (nonmetallic and other boxes).
    #[serde(default)]
    box_volume_in3: Option<f64>,
    /// Plaster/extension rings and domed covers marked with their volume.
    #[serde(default)]
    added_volume: Vec<AddedArg>,
    /// Insulated conductors (hots, neutrals, travelers), by size and how they run.
    #[serde(default)]
    conductors: Vec<BoxConductorArg>,
    /// Luminaire fixture wires entering the box.
    #[serde(default)]
    fixture_wires: Vec<FixtureWireArg>,
    /// The fixture wires come from a domed luminaire canopy and end in the box (up to four
    /// smaller than 14 AWG are then left out; an EGC from the canopy may be left out of egcs).
    #[serde(default)]
    fixture_wires_from_canopy: bool,
    /// Equipment grounding conductors / bonding jumpers entering the box.
    #[serde(default)]
    egcs: Vec<EgcArg>,
    /// One or more internal cable clamps.
    #[serde(default)]
    internal_clamps: bool,
    /// Types of support fitting present: luminaire stud and/or hickey (0-2).
    #[serde(default)]
    support_fittings: u32,
    /// One entry per yoke/strap (a switch, a duplex receptacle, a wide device).
    #[serde(default)]
    devices: Vec<DeviceArg>,
    /// Terminal block assemblies: the largest conductor terminated on each (2023 rule).
    #[serde(default)]
    terminal_blocks: Vec<ConductorSize>,
    /// Barriers in the box: unmarked metal ones (1/2 in³ each).
    #[serde(default)]
    metal_barriers: u32,
    /// Unmarked nonmetallic barriers (1 in³ each).
    #[serde(default)]
    nonmetallic_barriers: u32,
    /// 2017, 2020 or 2023 (default: the project's code in force).
    #[serde(default)]
    edition: Option<Edition>,
}

/// 314.16 box fill.
pub struct CalculateBoxFill;

#[async_trait]
impl Tool for CalculateBoxFill {
    fn name(&self) -> &'static str {
        "calculate_box_fill"
    }
    fn description(&self) -> &'static str {
        "Box fill per NEC 314.16: required volume from the conductors (Table 314.16(B) \
         allowances, pass-through and looped conductors, fixture-wire exception), clamps, \
         support fittings, devices per yoke (wide devices per gang), terminal blocks (2023) \
         and EGCs (2020+ quarter allowance beyond four), line by line, against a standard metal box of Table \
         314.16(A) or a marked volume plus rings; pass/fail, max conductors per size, smallest \
         standard boxes."
    }
    fn schema(&self) -> Value {
        schema_for::<BoxFillArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: BoxFillArgs = parse_args(&args)?;
        let volume = match (&a.standard_box, a.box_volume_in3) {
            (Some(_), Some(_)) => return Err(ToolError::InvalidArguments(
                "give box (a Table 314.16(A) box) or box_volume_in3 (the marked volume), not both"
                    .into(),
            )),
            (Some(key), None) => Some(BoxVolume::Standard(
                fill_tables::metal_box(key).map_err(nec_err)?,
            )),
            (None, Some(v)) => Some(BoxVolume::Marked(v)),
            (None, None) => None,
        };
        if a.conductors.is_empty() && a.fixture_wires.is_empty() && a.egcs.is_empty() {
            return Err(ToolError::InvalidArguments(
                "list what is in the box: conductors (size, count), egcs, fixture_wires".into(),
            ));
        }
        if a.metal_barriers + a.nonmetallic_barriers > 12 {
            return Err(ToolError::InvalidArguments(
                "at most 12 barriers in one box; give the marked box volume instead".into(),
            ));
        }
        let (edition, why) = edition(a.edition, ctx).await;
        let run = |r: RunArg| match r {
            RunArg::Terminates => ConductorRun::Terminates,
            RunArg::PassesThrough => ConductorRun::PassesThrough,
            RunArg::Looped => ConductorRun::Looped,
            RunArg::Internal => ConductorRun::Internal,
        };
        let input = BoxFillInput {
            edition,
            volume,
            added: a
                .added_volume
                .iter()
                .map(|x| AddedVolume {
                    description: x.description.clone(),
                    volume_in3: x.volume_in3,
                })
                .collect(),
            conductors: a
                .conductors
                .iter()
                .map(|c| BoxConductors {
                    count: c.count,
                    size: c.size,
                    run: run(c.run),
                })
                .collect(),
            fixture_wires: a
                .fixture_wires
                .iter()
                .map(|f| BoxConductors {
                    count: f.count,
                    size: f.size,
                    run: ConductorRun::Terminates,
                })
                .collect(),
            fixture_wires_from_canopy: a.fixture_wires_from_canopy,
            egcs: a
                .egcs
                .iter()
                .map(|e| BoxEgcs {
                    count: e.count,
                    size: e.size,
                    isolated: e.isolated,
                })
                .collect(),
            internal_clamps: a.internal_clamps,
            support_fitting_types: a.support_fittings,
            yokes: a
                .devices
                .iter()
                .map(|d| Yoke {
                    largest_conductor: d.largest_conductor,
                    gangs: d.gangs.unwrap_or(1),
                    description: d.description.clone(),
                })
                .collect(),
            terminal_blocks: a.terminal_blocks.clone(),
            barriers: std::iter::repeat_n(true, a.metal_barriers as usize)
                .chain(std::iter::repeat_n(false, a.nonmetallic_barriers as usize))
                .map(|metal| Barrier {
                    metal,
                    marked_in3: None,
                })
                .collect(),
        };
        let r = box_fill::box_fill(&input).map_err(nec_err)?;
        let mut out = to_value(&r)?;
        if let Some(o) = out.as_object_mut() {
            o.insert("edition".into(), json!({ "used": edition, "why": why }));
            o.insert(
                "summary".into(),
                json!(match (r.passes, r.total_volume_in3) {
                    (Some(true), Some(v)) =>
                        format!("passes: {} in³ required, {v} in³ available", r.required_in3),
                    (Some(false), Some(v)) => format!(
                        "fails: {} in³ required, only {v} in³ available",
                        r.required_in3
                    ),
                    _ => format!(
                        "{} in³ required; no box given (see smallest_standard_boxes)",
                        r.required_in3
                    ),
                }),
            );
        }
        Ok(out)
    }
}

// ------------------------------------------------------------------------------------------
// Raceway fill

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum RacewayArg {
    Emt,
    Rmc,
    Imc,
    Pvc40,
    Pvc80,
    Fmc,
    Lfmc,
}

impl RacewayArg {
    fn kind(self) -> RacewayType {
        match self {
            Self::Emt => RacewayType::Emt,
            Self::Rmc => RacewayType::Rmc,
            Self::Imc => RacewayType::Imc,
            Self::Pvc40 => RacewayType::Pvc40,
            Self::Pvc80 => RacewayType::Pvc80,
            Self::Fmc => RacewayType::Fmc,
            Self::Lfmc => RacewayType::Lfmc,
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
enum InsulationArg {
    #[serde(rename = "THHN")]
    Thhn,
    #[serde(rename = "THWN")]
    Thwn,
    #[serde(rename = "THWN-2")]
    Thwn2,
    #[serde(rename = "XHH")]
    Xhh,
    #[serde(rename = "XHHW")]
    Xhhw,
    #[serde(rename = "XHHW-2")]
    Xhhw2,
    #[serde(rename = "TW")]
    Tw,
    #[serde(rename = "THW")]
    Thw,
    #[serde(rename = "THHW")]
    Thhw,
    #[serde(rename = "THW-2")]
    Thw2,
    /// RHH/RHW/RHW-2 with outer covering.
    #[serde(rename = "RHH")]
    Rhh,
    #[serde(rename = "RHW")]
    Rhw,
    #[serde(rename = "RHW-2")]
    Rhw2,
    /// RHH/RHW/RHW-2 without outer covering.
    #[serde(rename = "RHW_no_outer_covering")]
    RhwNoCover,
    /// Bare conductor (Table 8).
    #[serde(rename = "bare")]
    Bare,
}

impl InsulationArg {
    fn insulation(self) -> Option<Insulation> {
        Some(match self {
            Self::Thhn | Self::Thwn | Self::Thwn2 => Insulation::Thhn,
            Self::Xhh | Self::Xhhw | Self::Xhhw2 => Insulation::Xhhw,
            Self::Tw | Self::Thw | Self::Thhw | Self::Thw2 => Insulation::Tw,
            Self::Rhh | Self::Rhw | Self::Rhw2 => Insulation::Rhw,
            Self::RhwNoCover => Insulation::RhwNoCover,
            Self::Bare => return None,
        })
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RacewayConductorArg {
    count: u32,
    /// Conductor size (not needed with area_in2).
    #[serde(default)]
    size: Option<ConductorSize>,
    /// Default THHN/THWN-2; "bare" for a bare EGC.
    #[serde(default)]
    insulation: Option<InsulationArg>,
    /// Bare conductors: solid (default stranded).
    #[serde(default)]
    solid: bool,
    /// Area of one conductor from manufacturer data (compact conductors, other types).
    #[serde(default)]
    area_in2: Option<f64>,
    /// "phase", "neutral", "EGC".
    #[serde(default)]
    description: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CableArg {
    count: u32,
    /// Outside (major) diameter, inches; counts as one conductor (Chapter 9 Note 9).
    diameter_in: f64,
    #[serde(default)]
    description: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RacewayFillArgs {
    /// emt, rmc, imc, pvc40, pvc80, fmc or lfmc (default: the one recorded on the circuits).
    #[serde(default)]
    raceway: Option<RacewayArg>,
    /// Trade size to check ("3/4", "1-1/4"); omit to find the smallest.
    #[serde(default)]
    trade_size: Option<String>,
    /// A nipple of 24 in. or less (60 % fill, Note 4).
    #[serde(default)]
    nipple: bool,
    /// Conductors, EGCs included.
    #[serde(default)]
    conductors: Vec<RacewayConductorArg>,
    /// Multiconductor cables or cords.
    #[serde(default)]
    cables: Vec<CableArg>,
    /// A project feeder by name: one set, its neutral and EGC per raceway.
    #[serde(default)]
    feeder: Option<String>,
    /// Project branch circuits run together in this raceway (panel + number, or description).
    #[serde(default)]
    circuits: Vec<CircuitRef>,
    /// Insulation of the feeder's or circuits' conductors (default THHN/THWN-2).
    #[serde(default)]
    insulation: Option<InsulationArg>,
    /// Feeder or multi-pole circuits: count a neutral (default: a feeder to a panel has one,
    /// a multi-pole circuit has none; a 1-pole circuit always has one).
    #[serde(default)]
    neutral: Option<bool>,
    /// Feeder or circuits: count a wire EGC (default yes, except a metal raceway recorded
    /// with no EGC, which is the EGC itself).
    #[serde(default)]
    egc: Option<bool>,
    /// 2017, 2020 or 2023 (default: the project's code in force).
    #[serde(default)]
    edition: Option<Edition>,
}

/// The conductors a project feeder or circuits put in the raceway, if any are named.
async fn project_contents(
    a: &RacewayFillArgs,
    ctx: &ToolContext,
) -> Result<Option<RacewayContents>, ToolError> {
    if a.feeder.is_none() && a.circuits.is_empty() {
        return Ok(None);
    }
    if a.feeder.is_some() && !a.circuits.is_empty() {
        return Err(ToolError::InvalidArguments(
            "name a feeder or circuits, not both (give the other's conductors in `conductors`)"
                .into(),
        ));
    }
    let insulation = match a.insulation {
        None => None,
        Some(i) => Some(i.insulation().ok_or_else(|| {
            ToolError::InvalidArguments(
                "insulation \"bare\" is for one conductor in `conductors`, not a whole feeder or circuit"
                    .into(),
            )
        })?),
    };
    let choices = ContentChoices {
        insulation,
        neutral: a.neutral,
        egc: a.egc,
        raceway: a.raceway.map(RacewayArg::kind),
    };
    let p = ctx.project().await?;
    let contents = match &a.feeder {
        Some(name) => feeder_contents(&p, resolve_feeder(&p, name)?, &choices)?,
        None => {
            let mut named = Vec::new();
            for r in &a.circuits {
                let (panel, c, _) = resolve_circuit(&p, r)?;
                named.push((panel, c));
            }
            circuits_contents(&named, &choices)?
        }
    };
    Ok(Some(contents))
}

/// Chapter 9 raceway fill.
pub struct CalculateRacewayFill;

#[async_trait]
impl Tool for CalculateRacewayFill {
    fn name(&self) -> &'static str {
        "calculate_raceway_fill"
    }
    fn description(&self) -> &'static str {
        "Conduit/raceway fill per NEC Chapter 9: conductor areas (Table 5, bare Table 8, cables \
         per Note 9, mixed sizes and types, EGCs counted) against Table 4 areas at the Table 1 \
         percentage (53/31/40 %, nipples 60 % per Note 4); total area, percent fill, pass/fail, \
         smallest trade size that passes, and for identical conductors the most that fit per \
         trade size with Note 7 rounding (Annex C style). Name a project feeder, or circuits run \
         together, to count their conductors (raceway and size as recorded on the circuits)."
    }
    fn schema(&self) -> Value {
        schema_for::<RacewayFillArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: RacewayFillArgs = parse_args(&args)?;
        let trade_size = match &a.trade_size {
            Some(t) => Some(
                t.parse::<TradeSize>()
                    .map_err(|e| ToolError::InvalidArguments(e.0))?,
            ),
            None => None,
        };
        let mut assumptions = Vec::new();
        let mut items = Vec::new();
        let mut recorded = None;
        if let Some(contents) = project_contents(&a, ctx).await? {
            items = contents.items;
            assumptions = contents.assumptions;
            recorded = contents.recorded_raceway;
        }
        let (raceway, trade_size) = match (a.raceway.map(RacewayArg::kind), recorded) {
            (Some(r), Some((rec, size))) if r == rec => (r, trade_size.or(size)),
            (Some(r), _) => (r, trade_size),
            (None, Some((rec, size))) => {
                assumptions.push(format!(
                    "raceway as recorded on the circuits: {}{}",
                    size.map(|s| format!("{s} ")).unwrap_or_default(),
                    rec.code()
                ));
                (rec, trade_size.or(size))
            }
            (None, None) => {
                return Err(ToolError::InvalidArguments(
                    "raceway is needed (emt, rmc, imc, pvc40, pvc80, fmc or lfmc): none is given or recorded on the circuits".into(),
                ))
            }
        };
        for (i, c) in a.conductors.iter().enumerate() {
            let kind = match (c.area_in2, c.size, c.insulation) {
                (Some(area), _, _) => FillItemKind::GivenArea { area_in2: area },
                (None, Some(size), ins) => {
                    let ins = ins.unwrap_or_else(|| {
                        assumptions.push(format!(
                            "conductors[{i}] ({size}): insulation not given, THHN/THWN-2 used"
                        ));
                        InsulationArg::Thhn
                    });
                    match ins.insulation() {
                        Some(insulation) => FillItemKind::Insulated { size, insulation },
                        None => FillItemKind::Bare {
                            size,
                            stranding: if c.solid {
                                Stranding::Solid
                            } else {
                                Stranding::Stranded
                            },
                        },
                    }
                }
                (None, None, _) => {
                    return Err(ToolError::InvalidArguments(format!(
                        "conductors[{i}] needs size (with insulation) or area_in2"
                    )))
                }
            };
            items.push(FillItem {
                count: c.count,
                kind,
                description: c.description.clone(),
            });
        }
        for c in &a.cables {
            items.push(FillItem {
                count: c.count,
                kind: FillItemKind::Cable {
                    diameter_in: c.diameter_in,
                },
                description: c.description.clone(),
            });
        }
        let (edition, why) = edition(a.edition, ctx).await;
        let r = raceway_fill::raceway_fill(&RacewayFillInput {
            edition,
            raceway,
            trade_size,
            nipple: a.nipple,
            items,
        })
        .map_err(nec_err)?;
        let summary = match (&r.check, &r.smallest_trade_size) {
            (Some(c), _) => format!(
                "{} in² of conductors in {} {}: {} % fill, {} % allowed ({} in²): {}",
                r.total_area_in2,
                c.trade_size,
                r.raceway.code(),
                c.percent_fill,
                c.fill_percent_allowed,
                c.allowed_area_in2,
                if c.passes { "passes" } else { "fails" }
            ),
            (None, Some(s)) => format!(
                "{} in² of conductors: smallest {} is {} ({} in² at {} %)",
                r.total_area_in2,
                r.raceway.code(),
                s.trade_size,
                s.allowed_area_in2,
                s.fill_percent_allowed
            ),
            (None, None) => format!(
                "{} in² of conductors: no shipped {} trade size holds them",
                r.total_area_in2,
                r.raceway.code()
            ),
        };
        let mut out = to_value(&r)?;
        if let Some(o) = out.as_object_mut() {
            o.insert("summary".into(), json!(summary));
            o.insert("raceway_name".into(), json!(r.raceway.name()));
            o.insert("edition".into(), json!({ "used": edition, "why": why }));
            o.insert("assumptions".into(), json!(assumptions));
        }
        Ok(out)
    }
}
