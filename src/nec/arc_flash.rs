//! Arc-flash incident energy: IEEE 1584-2018 (through the `arcflash` crate, which reproduces
//! the standard's Annex D examples) with the reduced-arcing-current case always evaluated, and
//! the NFPA 70E arc-flash PPE category tables as the fallback when the model's inputs are not
//! known. Clearing times are always inputs: the engine never assumes one.

use arcflash::ElectrodeConfiguration as Ec;
use serde::{Deserialize, Serialize};
use uom::si::electric_current::kiloampere;
use uom::si::electric_potential::volt;
use uom::si::f64::{ElectricCurrent, ElectricPotential, Length, Time};
use uom::si::length::millimeter;
use uom::si::radiant_exposure::joule_per_square_centimeter;
use uom::si::time::millisecond;

use super::error::{in_range, positive, NecError};
use super::tables::{self, PpeAcRow};
use super::units::Volts;

/// J/cm² per cal/cm².
const J_PER_CAL: f64 = 4.184;

/// Electrode configuration of IEEE 1584-2018.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ElectrodeConfiguration {
    /// Vertical conductors in a box.
    #[serde(alias = "vcb")]
    VCB,
    /// Vertical conductors terminated in an insulating barrier, in a box.
    #[serde(alias = "vcbb")]
    VCBB,
    /// Horizontal conductors in a box.
    #[serde(alias = "hcb")]
    HCB,
    /// Vertical conductors in open air.
    #[serde(alias = "voa")]
    VOA,
    /// Horizontal conductors in open air.
    #[serde(alias = "hoa")]
    HOA,
}

impl ElectrodeConfiguration {
    fn enclosed(self) -> bool {
        matches!(self, Self::VCB | Self::VCBB | Self::HCB)
    }
    fn to_model(self) -> Ec {
        match self {
            Self::VCB => Ec::VCB,
            Self::VCBB => Ec::VCBB,
            Self::HCB => Ec::HCB,
            Self::VOA => Ec::VOA,
            Self::HOA => Ec::HOA,
        }
    }
}

/// Enclosure inside dimensions in millimetres.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EnclosureMm {
    /// Height.
    pub height: f64,
    /// Width.
    pub width: f64,
    /// Depth.
    pub depth: f64,
}

/// Inputs of the IEEE 1584-2018 model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ieee1584Input {
    /// Nominal three-phase system voltage (line-to-line), 208–15 000 V.
    pub voltage: Volts,
    /// Three-phase bolted fault current, kA (0.5–106 kA up to 600 V; 0.2–65 kA above).
    pub bolted_fault_ka: f64,
    /// Electrode configuration.
    pub electrode_configuration: ElectrodeConfiguration,
    /// Conductor gap, mm (6.35–76.2 up to 600 V; 19.05–254 above).
    pub gap_mm: f64,
    /// Working distance, mm (at least 305).
    pub working_distance_mm: f64,
    /// Enclosure dimensions (required for VCB, VCBB, HCB; ignored in open air).
    #[serde(default)]
    pub enclosure: Option<EnclosureMm>,
    /// Arc duration (protective device clearing time) at the full arcing current, ms.
    pub clearing_time_ms: f64,
    /// Arc duration at the reduced arcing current, ms (read the device curve at the reduced
    /// current that [`arcing_currents`] reports).
    #[serde(default)]
    pub reduced_clearing_time_ms: Option<f64>,
}

/// One arcing-current case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArcCase {
    /// Arcing current, kA.
    pub arcing_current_ka: f64,
    /// Arc duration used, ms.
    pub clearing_time_ms: f64,
    /// Incident energy at the working distance, J/cm².
    pub incident_energy_j_cm2: f64,
    /// Incident energy at the working distance, cal/cm².
    pub incident_energy_cal_cm2: f64,
    /// Arc-flash boundary (1.2 cal/cm²), mm.
    pub arc_flash_boundary_mm: f64,
}

/// Result of [`ieee1584`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ieee1584Result {
    /// The inputs used.
    pub input: Ieee1584Input,
    /// Full arcing current case.
    pub full: ArcCase,
    /// Reduced arcing current case (arcing current variation factor applied).
    pub reduced: ArcCase,
    /// Which case governs ("full" or "reduced"): the higher incident energy.
    pub governing_case: String,
    /// Incident energy of the governing case, cal/cm².
    pub incident_energy_cal_cm2: f64,
    /// Arc-flash boundary of the governing case (the larger of the two), mm.
    pub arc_flash_boundary_mm: f64,
    /// Enclosure size correction factor used.
    pub enclosure_correction_factor: f64,
    /// Arcing current variation correction factor.
    pub variation_factor: f64,
    /// Method summary.
    pub method: String,
    /// References.
    pub references: Vec<String>,
    /// Model limits the result relies on.
    pub limits_of_applicability: Vec<String>,
    /// Assumptions made.
    pub assumptions: Vec<String>,
}

/// Arcing currents only (no clearing time needed), to look up clearing times on device curves.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArcingCurrents {
    /// Full arcing current, kA.
    pub full_ka: f64,
    /// Reduced arcing current, kA.
    pub reduced_ka: f64,
    /// Variation factor.
    pub variation_factor: f64,
}

fn limits() -> Vec<String> {
    vec![
        "three-phase AC, 50/60 Hz, 208 V to 15 kV".into(),
        "bolted fault 0.5–106 kA (≤600 V) or 0.2–65 kA (>600 V)".into(),
        "gap 6.35–76.2 mm (≤600 V) or 19.05–254 mm (>600 V); working distance ≥ 305 mm".into(),
        "enclosure height and width ≤ 1244.6 mm, width ≥ 4 × gap".into(),
        "not for single-phase or DC systems".into(),
    ]
}

fn validate(input: &Ieee1584Input) -> Result<(), NecError> {
    let v = in_range("voltage", input.voltage.0, 208.0, 15_000.0)?;
    let lv = v <= 600.0;
    if lv {
        in_range("bolted_fault_ka", input.bolted_fault_ka, 0.5, 106.0)?;
        in_range("gap_mm", input.gap_mm, 6.35, 76.2)?;
    } else {
        in_range("bolted_fault_ka", input.bolted_fault_ka, 0.2, 65.0)?;
        in_range("gap_mm", input.gap_mm, 19.05, 254.0)?;
    }
    in_range(
        "working_distance_mm",
        input.working_distance_mm,
        305.0,
        100_000.0,
    )?;
    positive("clearing_time_ms", input.clearing_time_ms)?;
    if input.electrode_configuration.enclosed() {
        let e = input.enclosure.ok_or(NecError::MissingInput {
            field: "enclosure",
            reason: "VCB, VCBB and HCB need the enclosure height, width and depth (mm)".into(),
        })?;
        in_range("enclosure.height", e.height, 1.0, 1244.6)?;
        in_range("enclosure.width", e.width, 4.0 * input.gap_mm, 1244.6)?;
        positive("enclosure.depth", e.depth)?;
    }
    Ok(())
}

fn cubicle(input: &Ieee1584Input) -> Result<arcflash::Cubicle, NecError> {
    // Open-air configurations need no box; the model still takes dimensions (and checks
    // width ≥ 4 × gap), so pass a neutral cube it ignores for VOA/HOA.
    let side = (4.0 * input.gap_mm).max(508.0);
    let e = match (input.electrode_configuration.enclosed(), input.enclosure) {
        (true, Some(e)) => e,
        _ => EnclosureMm {
            height: side,
            width: side,
            depth: side,
        },
    };
    arcflash::Cubicle::new(
        ElectricPotential::new::<volt>(input.voltage.0),
        input.electrode_configuration.to_model(),
        Length::new::<millimeter>(input.gap_mm),
        Length::new::<millimeter>(input.working_distance_mm),
        Length::new::<millimeter>(e.height),
        Length::new::<millimeter>(e.width),
        Length::new::<millimeter>(e.depth),
    )
    .map_err(|e| NecError::ArcFlashModel(e.to_string()))
}

fn check_finite(what: &str, v: f64) -> Result<f64, NecError> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(NecError::ArcFlashModel(format!(
            "{what} came out as {v}; inputs are outside the model's useful range"
        )))
    }
}

/// Full and reduced arcing currents, for reading clearing times from device curves.
pub fn arcing_currents(input: &Ieee1584Input) -> Result<ArcingCurrents, NecError> {
    validate(input)?;
    let c = cubicle(input)?;
    let ibf = ElectricCurrent::new::<kiloampere>(input.bolted_fault_ka);
    let full =
        arcflash::i_arc(&c, ibf, false).map_err(|e| NecError::ArcFlashModel(e.to_string()))?;
    let red = arcflash::i_arc(&c, ibf, true).map_err(|e| NecError::ArcFlashModel(e.to_string()))?;
    Ok(ArcingCurrents {
        full_ka: check_finite("arcing current", full.i_arc().get::<kiloampere>())?,
        reduced_ka: check_finite("reduced arcing current", red.i_arc().get::<kiloampere>())?,
        variation_factor: c.var_cf,
    })
}

/// IEEE 1584-2018 incident energy and arc-flash boundary, full and reduced arcing current.
/// `reduced_clearing_time_ms` is required: the error message gives the reduced arcing current
/// to read it from the device curve.
pub fn ieee1584(input: &Ieee1584Input) -> Result<Ieee1584Result, NecError> {
    validate(input)?;
    let c = cubicle(input)?;
    let ibf = ElectricCurrent::new::<kiloampere>(input.bolted_fault_ka);
    let full =
        arcflash::i_arc(&c, ibf, false).map_err(|e| NecError::ArcFlashModel(e.to_string()))?;
    let red = arcflash::i_arc(&c, ibf, true).map_err(|e| NecError::ArcFlashModel(e.to_string()))?;
    let t_red = match input.reduced_clearing_time_ms {
        Some(t) => positive("reduced_clearing_time_ms", t)?,
        None => {
            return Err(NecError::MissingInput {
                field: "reduced_clearing_time_ms",
                reason: format!(
                    "IEEE 1584-2018 requires the arc duration at the reduced arcing current {:.3} kA (full: {:.3} kA); read it from the protective device's time-current curve",
                    red.i_arc().get::<kiloampere>(),
                    full.i_arc().get::<kiloampere>()
                ),
            })
        }
    };
    let case = |i: arcflash::IArc, t_ms: f64| -> Result<ArcCase, NecError> {
        let ka = check_finite("arcing current", i.i_arc().get::<kiloampere>())?;
        let r = arcflash::e_afb(&c, i, Time::new::<millisecond>(t_ms));
        let e = check_finite(
            "incident energy",
            r.e().get::<joule_per_square_centimeter>(),
        )?;
        Ok(ArcCase {
            arcing_current_ka: ka,
            clearing_time_ms: t_ms,
            incident_energy_j_cm2: e,
            incident_energy_cal_cm2: e / J_PER_CAL,
            arc_flash_boundary_mm: check_finite("arc-flash boundary", r.afb().get::<millimeter>())?,
        })
    };
    let f = case(full, input.clearing_time_ms)?;
    let r = case(red, t_red)?;
    let reduced_governs = r.incident_energy_j_cm2 > f.incident_energy_j_cm2;
    let mut assumptions = Vec::new();
    if !input.electrode_configuration.enclosed() {
        assumptions.push("open-air configuration: no enclosure size correction".into());
    }
    if (t_red - input.clearing_time_ms).abs() < 1e-9 {
        assumptions.push("the same clearing time was given for both cases".into());
    }
    Ok(Ieee1584Result {
        input: input.clone(),
        governing_case: if reduced_governs { "reduced" } else { "full" }.into(),
        incident_energy_cal_cm2: f.incident_energy_cal_cm2.max(r.incident_energy_cal_cm2),
        arc_flash_boundary_mm: f.arc_flash_boundary_mm.max(r.arc_flash_boundary_mm),
        full: f,
        reduced: r,
        enclosure_correction_factor: c.cf,
        variation_factor: c.var_cf,
        method: "IEEE 1584-2018 empirical model (arcing current, enclosure correction, incident energy, arc-flash boundary), full and reduced arcing current".into(),
        references: vec![
            "IEEE Std 1584-2018".into(),
            "NFPA 70E 130.5(G) (incident energy analysis)".into(),
            "NEC 110.16 (arc-flash hazard warning)".into(),
        ],
        limits_of_applicability: limits(),
        assumptions,
    })
}

/// Equipment classes of NFPA 70E Table 130.7(C)(15)(a).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AcEquipment {
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
    /// Other 600 V class (277–600 V) equipment.
    Other600v,
    /// NEMA E2 motor starters 2.3–7.2 kV.
    NemaE2Starter,
    /// Metal-clad switchgear 1–15 kV.
    MetalCladSwitchgear,
    /// Other equipment 1–15 kV.
    Other1kv15kv,
}

impl AcEquipment {
    fn key(self) -> &'static str {
        match self {
            Self::Panelboard240v => "panelboard_240v",
            Self::Panelboard600v => "panelboard_600v",
            Self::Mcc600vFast => "mcc_600v_fast",
            Self::Mcc600vSlow => "mcc_600v_slow",
            Self::Switchgear600v => "switchgear_600v",
            Self::Other600v => "other_600v",
            Self::NemaE2Starter => "nema_e2_starter",
            Self::MetalCladSwitchgear => "metal_clad_switchgear",
            Self::Other1kv15kv => "other_1kv_15kv",
        }
    }
}

/// Inputs for the NFPA 70E AC PPE category table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PpeCategoryInput {
    /// Equipment class.
    pub equipment: AcEquipment,
    /// Nominal voltage.
    pub voltage: Volts,
    /// Available fault current, kA.
    pub available_fault_ka: f64,
    /// Fault clearing time of the upstream device, seconds.
    pub clearing_time_s: f64,
    /// Working distance the worker will keep, mm (`None`: the table's minimum is assumed met).
    #[serde(default)]
    pub working_distance_mm: Option<f64>,
}

/// Result of the PPE category table method.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PpeCategoryResult {
    /// The inputs used.
    pub input: PpeCategoryInput,
    /// Whether every parameter of the table row is met (otherwise the table may not be used).
    pub within_parameters: bool,
    /// PPE category (only when within parameters).
    pub ppe_category: Option<u8>,
    /// Arc-flash boundary, mm (only when within parameters).
    pub arc_flash_boundary_mm: Option<f64>,
    /// The table row's parameters.
    pub row: PpeAcRow,
    /// Why the table cannot be used, if it cannot.
    pub exceeded: Vec<String>,
    /// Method summary.
    pub method: String,
    /// References.
    pub references: Vec<String>,
    /// Assumptions made.
    pub assumptions: Vec<String>,
}

/// NFPA 70E Table 130.7(C)(15)(a) arc-flash PPE category for AC equipment.
pub fn ppe_category_ac(input: &PpeCategoryInput) -> Result<PpeCategoryResult, NecError> {
    let v = positive("voltage", input.voltage.0)?;
    let ka = positive("available_fault_ka", input.available_fault_ka)?;
    let t = positive("clearing_time_s", input.clearing_time_s)?;
    let row = tables::tables()?
        .ppe_ac
        .iter()
        .find(|r| r.key == input.equipment.key())
        .ok_or_else(|| {
            NecError::not_in_table("NFPA 70E Table 130.7(C)(15)(a)", input.equipment.key())
        })?;
    let mut exceeded = Vec::new();
    if v < row.min_voltage || v > row.max_voltage {
        exceeded.push(format!(
            "voltage {v} V outside the class's {}–{} V",
            row.min_voltage, row.max_voltage
        ));
    }
    if ka > row.max_fault_ka {
        exceeded.push(format!(
            "available fault current {ka} kA > {} kA",
            row.max_fault_ka
        ));
    }
    if t > row.max_clearing_time_s {
        exceeded.push(format!(
            "clearing time {t} s > {} s",
            row.max_clearing_time_s
        ));
    }
    let mut assumptions = Vec::new();
    match input.working_distance_mm {
        Some(d) if d < row.working_distance_mm => exceeded.push(format!(
            "working distance {d} mm < {} mm",
            row.working_distance_mm
        )),
        Some(_) => {}
        None => assumptions.push(format!(
            "working distance assumed at least {} mm",
            row.working_distance_mm
        )),
    }
    let ok = exceeded.is_empty();
    Ok(PpeCategoryResult {
        input: input.clone(),
        within_parameters: ok,
        ppe_category: ok.then_some(row.ppe_category),
        arc_flash_boundary_mm: ok.then_some(row.arc_flash_boundary_mm),
        row: row.clone(),
        exceeded,
        method: "NFPA 70E arc-flash PPE category method: valid only inside the row's fault current, clearing time and working distance parameters; otherwise an incident energy analysis is required".into(),
        references: vec![
            "NFPA 70E-2021 Table 130.7(C)(15)(a)".into(),
            "NFPA 70E-2021 130.7(C)(15)(c) (PPE by category)".into(),
        ],
        assumptions,
    })
}

/// Inputs for the NFPA 70E DC table (storage batteries, DC switchboards, other DC sources).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PpeDcInput {
    /// DC voltage.
    pub voltage: Volts,
    /// Available short-circuit current, kA.
    pub available_fault_ka: f64,
    /// Arc duration, seconds (the table assumes at most 2 s).
    pub arc_duration_s: f64,
}

/// Result of [`ppe_category_dc`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PpeDcResult {
    /// The inputs used.
    pub input: PpeDcInput,
    /// Whether a row applies.
    pub within_parameters: bool,
    /// PPE category.
    pub ppe_category: Option<u8>,
    /// Arc-flash boundary, mm.
    pub arc_flash_boundary_mm: Option<f64>,
    /// Why the table cannot be used, if it cannot.
    pub exceeded: Vec<String>,
    /// References.
    pub references: Vec<String>,
}

/// NFPA 70E Table 130.7(C)(15)(b) for DC equipment.
pub fn ppe_category_dc(input: &PpeDcInput) -> Result<PpeDcResult, NecError> {
    let v = positive("voltage", input.voltage.0)?;
    let ka = positive("available_fault_ka", input.available_fault_ka)?;
    let t = positive("arc_duration_s", input.arc_duration_s)?;
    let rows = &tables::tables()?.ppe_dc;
    let row = rows.iter().find(|r| {
        v >= r.min_voltage
            && (v < r.max_voltage || (r.max_voltage >= 600.0 && v <= r.max_voltage))
            && ka >= r.min_fault_ka
            && ka < r.max_fault_ka
    });
    let mut exceeded = Vec::new();
    if row.is_none() {
        exceeded.push(format!(
            "no row for {v} V DC at {ka} kA (the table covers 100–600 V and limited fault currents)"
        ));
    }
    if let Some(r) = row {
        if t > r.max_arc_duration_s {
            exceeded.push(format!("arc duration {t} s > {} s", r.max_arc_duration_s));
        }
    }
    let ok = exceeded.is_empty();
    Ok(PpeDcResult {
        input: input.clone(),
        within_parameters: ok,
        ppe_category: row.filter(|_| ok).map(|r| r.ppe_category),
        arc_flash_boundary_mm: row.filter(|_| ok).map(|r| r.arc_flash_boundary_mm),
        exceeded,
        references: vec!["NFPA 70E-2021 Table 130.7(C)(15)(b)".into()],
    })
}

/// What an arc-flash request could be answered with.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum ArcFlashAssessment {
    /// IEEE 1584-2018 incident energy analysis.
    Ieee1584(Box<Ieee1584Result>),
    /// NFPA 70E PPE category table (fallback).
    PpeTable(Box<PpeCategoryResult>),
}

/// An arc-flash question with whatever is known; IEEE 1584 is used when its inputs are all
/// present, otherwise the NFPA 70E table if the equipment class and clearing time are known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArcFlashRequest {
    /// Nominal voltage.
    pub voltage: Volts,
    /// Bolted (available) fault current, kA.
    pub bolted_fault_ka: f64,
    /// Clearing time at the full arcing current, ms.
    #[serde(default)]
    pub clearing_time_ms: Option<f64>,
    /// Clearing time at the reduced arcing current, ms.
    #[serde(default)]
    pub reduced_clearing_time_ms: Option<f64>,
    /// Electrode configuration.
    #[serde(default)]
    pub electrode_configuration: Option<ElectrodeConfiguration>,
    /// Gap, mm.
    #[serde(default)]
    pub gap_mm: Option<f64>,
    /// Working distance, mm.
    #[serde(default)]
    pub working_distance_mm: Option<f64>,
    /// Enclosure dimensions.
    #[serde(default)]
    pub enclosure: Option<EnclosureMm>,
    /// Equipment class for the table fallback.
    #[serde(default)]
    pub equipment: Option<AcEquipment>,
}

/// Chooses IEEE 1584-2018 when possible, else the NFPA 70E table; errors name what is missing.
pub fn arc_flash(req: &ArcFlashRequest) -> Result<ArcFlashAssessment, NecError> {
    let t = req.clearing_time_ms.ok_or(NecError::MissingInput {
        field: "clearing_time_ms",
        reason: "the protective device clearing time is required by both IEEE 1584 and the NFPA 70E tables".into(),
    })?;
    if let (Some(ec), Some(gap), Some(wd), Some(_)) = (
        req.electrode_configuration,
        req.gap_mm,
        req.working_distance_mm,
        req.reduced_clearing_time_ms,
    ) {
        let input = Ieee1584Input {
            voltage: req.voltage,
            bolted_fault_ka: req.bolted_fault_ka,
            electrode_configuration: ec,
            gap_mm: gap,
            working_distance_mm: wd,
            enclosure: req.enclosure,
            clearing_time_ms: t,
            reduced_clearing_time_ms: req.reduced_clearing_time_ms,
        };
        return ieee1584(&input).map(|r| ArcFlashAssessment::Ieee1584(Box::new(r)));
    }
    let equipment = req.equipment.ok_or(NecError::MissingInput {
        field: "equipment",
        reason: "IEEE 1584 needs electrode_configuration, gap_mm, working_distance_mm and reduced_clearing_time_ms; without them the NFPA 70E table needs the equipment class".into(),
    })?;
    ppe_category_ac(&PpeCategoryInput {
        equipment,
        voltage: req.voltage,
        available_fault_ka: req.bolted_fault_ka,
        clearing_time_s: t / 1000.0,
        working_distance_mm: req.working_distance_mm,
    })
    .map(|r| ArcFlashAssessment::PpeTable(Box::new(r)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d2() -> Ieee1584Input {
        Ieee1584Input {
            voltage: Volts(480.0),
            bolted_fault_ka: 45.0,
            electrode_configuration: ElectrodeConfiguration::VCB,
            gap_mm: 32.0,
            working_distance_mm: 609.6,
            enclosure: Some(EnclosureMm {
                height: 610.0,
                width: 610.0,
                depth: 254.0,
            }),
            clearing_time_ms: 61.3,
            reduced_clearing_time_ms: Some(319.0),
        }
    }

    #[test]
    fn out_of_range_inputs_are_errors() {
        let mut i = d2();
        i.voltage = Volts(16_000.0);
        assert!(matches!(
            ieee1584(&i),
            Err(NecError::InvalidInput {
                field: "voltage",
                ..
            })
        ));
        let mut i = d2();
        i.bolted_fault_ka = 200.0;
        assert!(ieee1584(&i).is_err());
        let mut i = d2();
        i.gap_mm = 100.0;
        assert!(ieee1584(&i).is_err());
        let mut i = d2();
        i.enclosure = None;
        assert!(matches!(ieee1584(&i), Err(NecError::MissingInput { .. })));
        let mut i = d2();
        i.working_distance_mm = 100.0;
        assert!(ieee1584(&i).is_err());
        let mut i = d2();
        i.clearing_time_ms = 0.0;
        assert!(ieee1584(&i).is_err());
    }

    #[test]
    fn reduced_clearing_time_is_required_and_never_invented() {
        let mut i = d2();
        i.reduced_clearing_time_ms = None;
        let err = ieee1584(&i).unwrap_err();
        assert!(err.to_string().contains("25.244"), "{err}");
        let a = arcing_currents(&i).unwrap();
        assert!((a.reduced_ka - 25.244).abs() < 0.001);
    }

    #[test]
    fn dispatch_falls_back_to_table_and_requires_clearing_time() {
        let mut req = ArcFlashRequest {
            voltage: Volts(480.0),
            bolted_fault_ka: 20.0,
            clearing_time_ms: None,
            reduced_clearing_time_ms: None,
            electrode_configuration: None,
            gap_mm: None,
            working_distance_mm: None,
            enclosure: None,
            equipment: Some(AcEquipment::Panelboard600v),
        };
        assert!(matches!(
            arc_flash(&req),
            Err(NecError::MissingInput { .. })
        ));
        req.clearing_time_ms = Some(25.0);
        match arc_flash(&req).unwrap() {
            ArcFlashAssessment::PpeTable(r) => {
                assert!(r.within_parameters);
                assert_eq!(r.ppe_category, Some(2));
            }
            other => panic!("unexpected {other:?}"),
        }
        req.bolted_fault_ka = 30.0;
        match arc_flash(&req).unwrap() {
            ArcFlashAssessment::PpeTable(r) => assert!(!r.within_parameters),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn open_air_medium_voltage_with_wide_gap() {
        let r = ieee1584(&Ieee1584Input {
            voltage: Volts(13_800.0),
            bolted_fault_ka: 20.0,
            electrode_configuration: ElectrodeConfiguration::HOA,
            gap_mm: 152.0,
            working_distance_mm: 914.4,
            enclosure: None,
            clearing_time_ms: 100.0,
            reduced_clearing_time_ms: Some(120.0),
        })
        .unwrap();
        assert_eq!(r.enclosure_correction_factor, 1.0);
        assert!(r.incident_energy_cal_cm2 > 0.0);
    }

    #[test]
    fn dc_table() {
        let r = ppe_category_dc(&PpeDcInput {
            voltage: Volts(125.0),
            available_fault_ka: 5.0,
            arc_duration_s: 1.0,
        })
        .unwrap();
        assert_eq!(r.ppe_category, Some(2));
        assert_eq!(r.arc_flash_boundary_mm, Some(1200.0));
        let r = ppe_category_dc(&PpeDcInput {
            voltage: Volts(48.0),
            available_fault_ka: 5.0,
            arc_duration_s: 1.0,
        })
        .unwrap();
        assert!(!r.within_parameters);
    }
}
