//! Arc-flash incident energy: the IEEE 1584-2018 model (implemented here with its coefficient
//! tables shipped as CSV, see `data/SOURCES.md`) with the reduced-arcing-current case always
//! evaluated, and the NFPA 70E arc-flash PPE category tables as the fallback when the model's
//! inputs are not known. Clearing times are always inputs: the engine never assumes one.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::error::{in_range, positive, NecError};
use super::tables::{self, parse_csv, PpeAcRow};
use super::units::Volts;

/// J/cm² per cal/cm².
const J_PER_CAL: f64 = 4.184;
/// 1.2 cal/cm² in J/cm², the arc-flash boundary energy.
const AFB_J_CM2: f64 = 5.0208;
/// The mm-to-inch factor printed in IEEE 1584-2018 (used as printed to match its examples).
const MM_TO_IN: f64 = 0.03937;

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
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "VCB" => Self::VCB,
            "VCBB" => Self::VCBB,
            "HCB" => Self::HCB,
            "VOA" => Self::VOA,
            "HOA" => Self::HOA,
            _ => return None,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// IEEE 1584-2018 model.

/// Coefficient tables 1, 2, 3–5 and 7 of IEEE 1584-2018.
struct Coefficients {
    /// Table 1 (arcing current), by configuration and 0.6/2.7/14.3 kV level: k1..k10.
    t1: Vec<(ElectrodeConfiguration, usize, Vec<f64>)>,
    /// Table 2 (variation factor): k1..k7.
    t2: Vec<(ElectrodeConfiguration, Vec<f64>)>,
    /// Tables 3, 4, 5 (incident energy) by level: k1..k13.
    t345: Vec<(ElectrodeConfiguration, usize, Vec<f64>)>,
    /// Table 7 (enclosure size correction): (shallow, config, b1..b3).
    t7: Vec<(bool, ElectrodeConfiguration, Vec<f64>)>,
}

const F_T1: &str = "ieee1584_2018_table1_arcing_current.csv";
const F_T2: &str = "ieee1584_2018_table2_variation_factor.csv";
const F_T345: &str = "ieee1584_2018_tables3_5_incident_energy.csv";
const F_T7: &str = "ieee1584_2018_table7_enclosure.csv";

fn data_err(file: &'static str, line: usize, message: impl Into<String>) -> NecError {
    NecError::Data {
        file,
        line,
        message: message.into(),
    }
}

/// Rows of a coefficient CSV: leading text cells and the numbers after them.
type CoeffRows = Vec<(Vec<String>, Vec<f64>)>;

/// Reads a coefficient CSV: leading text columns, then numbers.
fn read_coeffs(
    file: &'static str,
    text: &str,
    text_cols: usize,
    n: usize,
) -> Result<CoeffRows, NecError> {
    let csv = parse_csv(file, text)?;
    csv.rows
        .iter()
        .map(|(line, cells)| {
            if cells.len() != text_cols + n {
                return Err(data_err(
                    file,
                    *line,
                    format!("expected {} cells", text_cols + n),
                ));
            }
            let nums = cells[text_cols..]
                .iter()
                .map(|c| {
                    c.trim()
                        .parse::<f64>()
                        .map_err(|_| data_err(file, *line, format!("'{c}' is not a number")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok((cells[..text_cols].to_vec(), nums))
        })
        .collect()
}

fn config(file: &'static str, s: &str) -> Result<ElectrodeConfiguration, NecError> {
    ElectrodeConfiguration::parse(s.trim())
        .ok_or_else(|| data_err(file, 0, format!("unknown configuration {s}")))
}

fn level(file: &'static str, s: &str) -> Result<usize, NecError> {
    match s.trim() {
        "0.6" => Ok(0),
        "2.7" => Ok(1),
        "14.3" => Ok(2),
        other => Err(data_err(file, 0, format!("unknown voltage level {other}"))),
    }
}

fn load_coefficients() -> Result<Coefficients, NecError> {
    let t1 = read_coeffs(
        F_T1,
        include_str!("../data/ieee1584_2018_table1_arcing_current.csv"),
        2,
        10,
    )?
    .into_iter()
    .map(|(t, k)| Ok((config(F_T1, &t[0])?, level(F_T1, &t[1])?, k)))
    .collect::<Result<Vec<_>, NecError>>()?;
    let t2 = read_coeffs(
        F_T2,
        include_str!("../data/ieee1584_2018_table2_variation_factor.csv"),
        1,
        7,
    )?
    .into_iter()
    .map(|(t, k)| Ok((config(F_T2, &t[0])?, k)))
    .collect::<Result<Vec<_>, NecError>>()?;
    let t345 = read_coeffs(
        F_T345,
        include_str!("../data/ieee1584_2018_tables3_5_incident_energy.csv"),
        2,
        13,
    )?
    .into_iter()
    .map(|(t, k)| Ok((config(F_T345, &t[0])?, level(F_T345, &t[1])?, k)))
    .collect::<Result<Vec<_>, NecError>>()?;
    let t7 = read_coeffs(
        F_T7,
        include_str!("../data/ieee1584_2018_table7_enclosure.csv"),
        2,
        3,
    )?
    .into_iter()
    .map(|(t, k)| {
        let shallow = match t[0].trim() {
            "typical" => false,
            "shallow" => true,
            o => return Err(data_err(F_T7, 0, format!("unknown enclosure type {o}"))),
        };
        Ok((shallow, config(F_T7, &t[1])?, k))
    })
    .collect::<Result<Vec<_>, NecError>>()?;
    Ok(Coefficients { t1, t2, t345, t7 })
}

fn coefficients() -> Result<&'static Coefficients, NecError> {
    static CELL: OnceLock<Result<Coefficients, NecError>> = OnceLock::new();
    CELL.get_or_init(load_coefficients)
        .as_ref()
        .map_err(Clone::clone)
}

fn missing(table: &'static str, ec: ElectrodeConfiguration) -> NecError {
    NecError::not_in_table(table, format!("{ec:?}"))
}

/// Intermediate arcing current at level `lvl` (Equation 1), kA.
fn i_arc_intermediate(
    c: &Coefficients,
    ec: ElectrodeConfiguration,
    lvl: usize,
    ibf: f64,
    gap: f64,
) -> Result<f64, NecError> {
    let k = &c
        .t1
        .iter()
        .find(|(e, l, _)| *e == ec && *l == lvl)
        .ok_or_else(|| missing("IEEE 1584-2018 Table 1", ec))?
        .2;
    let x1 = k[0] + k[1] * ibf.log10() + k[2] * gap.log10();
    let poly = k[3] * ibf.powi(6)
        + k[4] * ibf.powi(5)
        + k[5] * ibf.powi(4)
        + k[6] * ibf.powi(3)
        + k[7] * ibf.powi(2)
        + k[8] * ibf
        + k[9];
    Ok(10f64.powf(x1) * poly)
}

/// Arcing current variation correction factor (Equation 2's VarCf).
fn variation_factor(
    c: &Coefficients,
    ec: ElectrodeConfiguration,
    v_kv: f64,
) -> Result<f64, NecError> {
    let k = &c
        .t2
        .iter()
        .find(|(e, _)| *e == ec)
        .ok_or_else(|| missing("IEEE 1584-2018 Table 2", ec))?
        .1;
    Ok(k.iter()
        .enumerate()
        .map(|(i, ki)| ki * v_kv.powi(6 - i as i32))
        .sum())
}

/// Enclosure size correction factor (Equations 11–15, Tables 6 and 7).
fn enclosure_cf(
    c: &Coefficients,
    ec: ElectrodeConfiguration,
    v_kv: f64,
    e: EnclosureMm,
) -> Result<f64, NecError> {
    if !ec.enclosed() {
        return Ok(1.0);
    }
    let shallow = v_kv < 0.6 && e.height < 508.0 && e.width < 508.0 && e.depth <= 203.2;
    let (a, b) = match ec {
        ElectrodeConfiguration::VCB => (4.0, 20.0),
        ElectrodeConfiguration::VCBB => (10.0, 24.0),
        _ => (10.0, 22.0),
    };
    let eq11 = |dim: f64| (660.4 + (dim - 660.4) * (v_kv + a) / b) / 25.4;
    let small = |dim: f64| if shallow { MM_TO_IN * dim } else { 20.0 };
    let width = if e.width < 508.0 {
        small(e.width)
    } else if e.width <= 660.4 {
        MM_TO_IN * e.width
    } else {
        eq11(e.width.min(1244.6))
    };
    let height = if e.height < 508.0 {
        small(e.height)
    } else if e.height <= 660.4 || ec == ElectrodeConfiguration::VCB {
        MM_TO_IN * e.height.min(1244.6)
    } else {
        eq11(e.height.min(1244.6))
    };
    let ees = (height + width) / 2.0;
    let bs = &c
        .t7
        .iter()
        .find(|(s, e2, _)| *s == shallow && *e2 == ec)
        .ok_or_else(|| missing("IEEE 1584-2018 Table 7", ec))?
        .2;
    let x = bs[0] * ees * ees + bs[1] * ees + bs[2];
    Ok(if shallow { 1.0 / x } else { x })
}

fn t345(c: &Coefficients, ec: ElectrodeConfiguration, lvl: usize) -> Result<&[f64], NecError> {
    c.t345
        .iter()
        .find(|(e, l, _)| *e == ec && *l == lvl)
        .map(|(_, _, k)| k.as_slice())
        .ok_or_else(|| missing("IEEE 1584-2018 Tables 3-5", ec))
}

/// Intermediate incident energy (Equations 3–6), J/cm².
#[allow(clippy::too_many_arguments)]
fn e_intermediate(
    k: &[f64],
    i_arc: f64,
    ibf: f64,
    t_ms: f64,
    gap: f64,
    cf: f64,
    d: f64,
    i_arc_600_lv: Option<f64>,
) -> f64 {
    let x1 = 12.552 / 50.0 * t_ms;
    let x2 = k[0] + k[1] * gap.log10();
    let num = k[2] * i_arc_600_lv.unwrap_or(i_arc);
    let den = k[3] * ibf.powi(7)
        + k[4] * ibf.powi(6)
        + k[5] * ibf.powi(5)
        + k[6] * ibf.powi(4)
        + k[7] * ibf.powi(3)
        + k[8] * ibf.powi(2)
        + k[9] * ibf;
    let x4 = k[10] * ibf.log10() + k[12] * i_arc.log10() + (1.0 / cf).log10();
    let x5 = k[11] * d.log10();
    x1 * 10f64.powf(x2 + num / den + x4 + x5)
}

/// Arc-flash boundary from an incident energy at distance `d` (Equations 7–10 rearranged).
fn afb_from_e(k: &[f64], e: f64, d: f64) -> f64 {
    let f = e / d.powf(k[11]);
    (AFB_J_CM2 / f).powf(1.0 / k[11])
}

/// Interpolation between the 0.6, 2.7 and 14.3 kV values (Equations 16–24), V > 0.6 kV.
fn interpolate(v_kv: f64, x: [f64; 3]) -> f64 {
    let x1 = (x[1] - x[0]) / 2.1 * (v_kv - 2.7) + x[1];
    let x2 = (x[2] - x[1]) / 11.6 * (v_kv - 14.3) + x[2];
    if v_kv <= 2.7 {
        x1 * (2.7 - v_kv) / 2.1 + x2 * (v_kv - 0.6) / 2.1
    } else {
        x2
    }
}

/// Final arcing current below 600 V (Equation 25), kA.
fn i_arc_lv(v_kv: f64, i600: f64, ibf: f64) -> f64 {
    let x1 = (0.6 / v_kv).powi(2);
    let x2 = 1.0 / (i600 * i600);
    let x3 = (0.36 - v_kv * v_kv) / (0.36 * ibf * ibf);
    1.0 / (x1 * (x2 - x3)).sqrt()
}

/// Arcing currents per level (HV) or the 600 V intermediate and final value (LV).
enum Arcing {
    Lv { i600_full: f64, i_arc: f64 },
    Hv { levels: [f64; 3], i_arc: f64 },
}

impl Arcing {
    fn i_arc(&self) -> f64 {
        match self {
            Self::Lv { i_arc, .. } | Self::Hv { i_arc, .. } => *i_arc,
        }
    }
}

struct Model {
    coeffs: &'static Coefficients,
    ec: ElectrodeConfiguration,
    v_kv: f64,
    ibf: f64,
    gap: f64,
    d: f64,
    cf: f64,
    var_cf: f64,
}

impl Model {
    fn new(input: &Ieee1584Input) -> Result<Self, NecError> {
        let coeffs = coefficients()?;
        let v_kv = input.voltage.0 / 1000.0;
        let ec = input.electrode_configuration;
        let e = input.enclosure.unwrap_or(EnclosureMm {
            height: 508.0,
            width: 508.0,
            depth: 508.0,
        });
        Ok(Self {
            coeffs,
            ec,
            v_kv,
            ibf: input.bolted_fault_ka,
            gap: input.gap_mm,
            d: input.working_distance_mm,
            cf: enclosure_cf(coeffs, ec, v_kv, e)?,
            var_cf: variation_factor(coeffs, ec, v_kv)?,
        })
    }

    fn arcing(&self, reduced: bool) -> Result<Arcing, NecError> {
        let red = if reduced {
            1.0 - 0.5 * self.var_cf
        } else {
            1.0
        };
        if self.v_kv <= 0.6 {
            let i600 = i_arc_intermediate(self.coeffs, self.ec, 0, self.ibf, self.gap)?;
            Ok(Arcing::Lv {
                i600_full: i600,
                i_arc: i_arc_lv(self.v_kv, i600, self.ibf) * red,
            })
        } else {
            let mut levels = [0.0; 3];
            for (lvl, slot) in levels.iter_mut().enumerate() {
                *slot = i_arc_intermediate(self.coeffs, self.ec, lvl, self.ibf, self.gap)? * red;
            }
            Ok(Arcing::Hv {
                i_arc: interpolate(self.v_kv, levels),
                levels,
            })
        }
    }

    /// (incident energy J/cm², arc-flash boundary mm).
    fn energy(&self, a: &Arcing, t_ms: f64) -> Result<(f64, f64), NecError> {
        match a {
            Arcing::Lv { i600_full, i_arc } => {
                // The 600 V intermediate current of the full case is used in both cases.
                let k = t345(self.coeffs, self.ec, 0)?;
                let e = e_intermediate(
                    k,
                    *i_arc,
                    self.ibf,
                    t_ms,
                    self.gap,
                    self.cf,
                    self.d,
                    Some(*i600_full),
                );
                Ok((e, afb_from_e(k, e, self.d)))
            }
            Arcing::Hv { levels, .. } => {
                let mut es = [0.0; 3];
                let mut afbs = [0.0; 3];
                for lvl in 0..3 {
                    let k = t345(self.coeffs, self.ec, lvl)?;
                    es[lvl] = e_intermediate(
                        k,
                        levels[lvl],
                        self.ibf,
                        t_ms,
                        self.gap,
                        self.cf,
                        self.d,
                        None,
                    );
                    afbs[lvl] = afb_from_e(k, es[lvl], self.d);
                }
                Ok((interpolate(self.v_kv, es), interpolate(self.v_kv, afbs)))
            }
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
    /// Intermediate full arcing currents at the model's voltage levels (Equation 1): 600 V
    /// only up to 600 V; 600, 2700 and 14 300 V above, interpolated to the system voltage.
    pub intermediate_full: Vec<IntermediateArcingCurrent>,
}

/// One intermediate arcing current of IEEE 1584-2018 Equation 1.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IntermediateArcingCurrent {
    /// Voltage level of the coefficients, V (600, 2700 or 14 300).
    pub level_v: u32,
    /// Arcing current at that level, kA.
    pub arcing_ka: f64,
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
    let m = Model::new(input)?;
    let full = m.arcing(false)?;
    let intermediate_full = match &full {
        Arcing::Lv { i600_full, .. } => vec![IntermediateArcingCurrent {
            level_v: 600,
            arcing_ka: *i600_full,
        }],
        Arcing::Hv { levels, .. } => [600, 2700, 14_300]
            .into_iter()
            .zip(levels)
            .map(|(level_v, a)| IntermediateArcingCurrent {
                level_v,
                arcing_ka: *a,
            })
            .collect(),
    };
    Ok(ArcingCurrents {
        full_ka: check_finite("arcing current", full.i_arc())?,
        reduced_ka: check_finite("reduced arcing current", m.arcing(true)?.i_arc())?,
        variation_factor: m.var_cf,
        intermediate_full,
    })
}

/// IEEE 1584-2018 incident energy and arc-flash boundary, full and reduced arcing current.
/// `reduced_clearing_time_ms` is required: the error message gives the reduced arcing current
/// to read it from the device curve.
pub fn ieee1584(input: &Ieee1584Input) -> Result<Ieee1584Result, NecError> {
    validate(input)?;
    let m = Model::new(input)?;
    let full = m.arcing(false)?;
    let red = m.arcing(true)?;
    let t_red = match input.reduced_clearing_time_ms {
        Some(t) => positive("reduced_clearing_time_ms", t)?,
        None => {
            return Err(NecError::MissingInput {
                field: "reduced_clearing_time_ms",
                reason: format!(
                    "IEEE 1584-2018 requires the arc duration at the reduced arcing current {:.3} kA (full: {:.3} kA); read it from the protective device's time-current curve",
                    red.i_arc(),
                    full.i_arc()
                ),
            })
        }
    };
    let case = |a: &Arcing, t_ms: f64| -> Result<ArcCase, NecError> {
        let (e, afb) = m.energy(a, t_ms)?;
        let e = check_finite("incident energy", e)?;
        Ok(ArcCase {
            arcing_current_ka: check_finite("arcing current", a.i_arc())?,
            clearing_time_ms: t_ms,
            incident_energy_j_cm2: e,
            incident_energy_cal_cm2: e / J_PER_CAL,
            arc_flash_boundary_mm: check_finite("arc-flash boundary", afb)?,
        })
    };
    let f = case(&full, input.clearing_time_ms)?;
    let r = case(&red, t_red)?;
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
        enclosure_correction_factor: m.cf,
        variation_factor: m.var_cf,
        method: "IEEE 1584-2018 empirical model (arcing current, enclosure correction, incident energy, arc-flash boundary), full and reduced arcing current".into(),
        references: vec![
            "IEEE Std 1584-2018 (Equations 1–25, Tables 1–7)".into(),
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
        .ok_or_else(|| NecError::NotVerified {
            table: "NFPA 70E Table 130.7(C)(15)(a)",
            key: format!("the '{}' row", input.equipment.key()),
            hint: "use the published table for this equipment class, or give the IEEE 1584 inputs (electrode_configuration, gap_mm, working_distance_mm, reduced_clearing_time_ms) for an incident energy analysis",
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
    if row.arc_flash_boundary_mm.is_none() {
        assumptions.push(BOUNDARY_NOT_AVAILABLE.to_string());
    }
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
        arc_flash_boundary_mm: row.arc_flash_boundary_mm.filter(|_| ok),
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

/// Said when a row ships without its arc-flash boundary cell (see `data/SOURCES.md`).
const BOUNDARY_NOT_AVAILABLE: &str = "arc-flash boundary not available: that cell is not confirmed by two independent published sources, so it is not shipped; read it from the published table";

/// Said by every DC answer while no row of the DC table is confirmed by two sources.
const DC_TABLE_NOT_AVAILABLE: &str = "NFPA 70E Table 130.7(C)(15)(b) is not shipped: its cells are not yet confirmed by two independent published sources (data/SOURCES.md); use the published table or a DC incident energy analysis (NFPA 70E Annex D.5)";

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
    /// Data-quality note on the shipped table.
    pub note: String,
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
    if rows.is_empty() {
        exceeded.push(DC_TABLE_NOT_AVAILABLE.to_string());
    } else if row.is_none() {
        exceeded.push(format!(
            "no shipped row for {v} V DC at {ka} kA (the published table covers 100–600 V and limited fault currents)"
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
        note: if rows.is_empty() {
            DC_TABLE_NOT_AVAILABLE.into()
        } else {
            "shipped rows are confirmed by two independent published sources (data/SOURCES.md)"
                .into()
        },
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
            voltage: Volts(208.0),
            bolted_fault_ka: 20.0,
            clearing_time_ms: None,
            reduced_clearing_time_ms: None,
            electrode_configuration: None,
            gap_mm: None,
            working_distance_mm: None,
            enclosure: None,
            equipment: Some(AcEquipment::Panelboard240v),
        };
        assert!(matches!(
            arc_flash(&req),
            Err(NecError::MissingInput { .. })
        ));
        req.clearing_time_ms = Some(25.0);
        match arc_flash(&req).unwrap() {
            ArcFlashAssessment::PpeTable(r) => {
                assert!(r.within_parameters);
                assert_eq!(r.ppe_category, Some(1));
                assert_eq!(r.arc_flash_boundary_mm, Some(485.0));
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
    fn dc_table_is_not_available_until_confirmed() {
        let r = ppe_category_dc(&PpeDcInput {
            voltage: Volts(125.0),
            available_fault_ka: 5.0,
            arc_duration_s: 1.0,
        })
        .unwrap();
        assert!(!r.within_parameters);
        assert_eq!(r.ppe_category, None);
        assert_eq!(r.arc_flash_boundary_mm, None);
        assert!(r.note.contains("not shipped"), "{}", r.note);
        assert!(r.exceeded.iter().any(|e| e.contains("not shipped")));
        assert!(ppe_category_dc(&PpeDcInput {
            voltage: Volts(-1.0),
            available_fault_ka: 5.0,
            arc_duration_s: 1.0,
        })
        .is_err());
    }

    #[test]
    fn unshipped_ac_rows_say_not_available() {
        let e = ppe_category_ac(&PpeCategoryInput {
            equipment: AcEquipment::Other1kv15kv,
            voltage: Volts(4160.0),
            available_fault_ka: 20.0,
            clearing_time_s: 0.2,
            working_distance_mm: None,
        })
        .unwrap_err();
        assert!(matches!(e, NecError::NotVerified { .. }), "{e}");
        assert!(e.to_string().contains("no value is available"), "{e}");
    }
}
