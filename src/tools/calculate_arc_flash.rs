//! `calculate_arc_flash`: arc-flash incident energy or PPE category.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::nec_args::missing_inputs;
use super::schema::schema_for;
use super::{parse_args, to_value, Tool, ToolContext, ToolError};
use crate::nec::arc_flash::{self, AcEquipment, ArcFlashRequest, ElectrodeConfiguration};
use crate::nec::units::{Phase, Volts};
use crate::project::analysis::{resolve_panel, round, FaultCalculator};

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
    fn cpu_bound(&self) -> bool {
        // The fault current walks the project's supply tree to the panel.
        true
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
                        // A lower fault current can mean a longer clearing time and more
                        // energy: an upper bound is never used here.
                        if !f.upper_bound.is_empty() {
                            return Err(ToolError::MissingData(format!(
                                "the fault current at {} is only known as an upper bound ({}); arc flash needs the actual bolted current, since a lower current can mean more incident energy: record the missing data or give bolted_fault_ka",
                                panel.spec.name,
                                f.upper_bound.join("; ")
                            )));
                        }
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
                let missing = missing_inputs(&[
                    ("voltage", a.voltage.is_some()),
                    ("bolted_fault_ka", a.bolted_fault_ka.is_some()),
                ]);
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
