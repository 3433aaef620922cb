//! NEC tables shipped as CSV under the crate's `data/` (see `data/SOURCES.md`), parsed once into
//! typed rows, plus the lookups the calculations use.
//!
//! Every lookup returns [`NecError::NotInTable`] rather than interpolating or guessing.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::error::NecError;
use super::units::{ConductorSize, Edition, Material, TempRating};

/// The embedded CSV files: (file name, contents). The bot's corpus renders them as text.
pub const FILES: &[(&str, &str)] = &[
    (F310_16, include_str!("../data/table_310_16_ampacity.csv")),
    (
        F_TC30,
        include_str!("../data/table_310_15_B1_temp_correction_30C.csv"),
    ),
    (
        F_TC40,
        include_str!("../data/table_310_15_B1_2_temp_correction_40C.csv"),
    ),
    (
        F_ADJ,
        include_str!("../data/table_310_15_C1_adjustment.csv"),
    ),
    (
        F_T8,
        include_str!("../data/ch9_table8_conductor_properties.csv"),
    ),
    (F_T9, include_str!("../data/ch9_table9_ac_impedance.csv")),
    (
        F_240,
        include_str!("../data/table_240_6A_standard_ratings.csv"),
    ),
    (F_EGC, include_str!("../data/table_250_122_egc.csv")),
    (F_GEC, include_str!("../data/table_250_66_gec.csv")),
    (
        F_UL17,
        include_str!("../data/table_220_12_unit_lighting_2017.csv"),
    ),
    (
        F_UL20,
        include_str!("../data/table_220_12_unit_lighting_2020.csv"),
    ),
    (
        F_UL23,
        include_str!("../data/table_220_42A_unit_lighting_2023.csv"),
    ),
    (
        F_LD,
        include_str!("../data/table_220_42_lighting_demand_factors.csv"),
    ),
    (
        F_DRY,
        include_str!("../data/table_220_54_dryer_demand_factors.csv"),
    ),
    (F_RNG, include_str!("../data/table_220_55_ranges.csv")),
    (
        F_MOT,
        include_str!("../data/table_430_52_motor_ocpd_pct.csv"),
    ),
    (
        F_FLC1,
        include_str!("../data/table_430_248_single_phase_flc.csv"),
    ),
    (
        F_FLC3,
        include_str!("../data/table_430_250_three_phase_flc.csv"),
    ),
    (F_FLCDC, include_str!("../data/table_430_247_dc_flc.csv")),
    (F_CVAL, include_str!("../data/ptp_c_values_600v.csv")),
    (
        F_CVAL_LOW,
        include_str!("../data/ptp_c_values_600v_disagreements.csv"),
    ),
    (
        F_PPE_AC,
        include_str!("../data/nfpa70e_130_7_C15a_ac_ppe.csv"),
    ),
    (
        F_PPE_DC,
        include_str!("../data/nfpa70e_130_7_C15b_dc_ppe.csv"),
    ),
    (
        F_MF,
        include_str!("../data/table_220_84_multifamily_demand_factors.csv"),
    ),
];

const F310_16: &str = "table_310_16_ampacity.csv";
const F_TC30: &str = "table_310_15_B1_temp_correction_30C.csv";
const F_TC40: &str = "table_310_15_B1_2_temp_correction_40C.csv";
const F_ADJ: &str = "table_310_15_C1_adjustment.csv";
const F_T8: &str = "ch9_table8_conductor_properties.csv";
const F_T9: &str = "ch9_table9_ac_impedance.csv";
const F_240: &str = "table_240_6A_standard_ratings.csv";
const F_EGC: &str = "table_250_122_egc.csv";
const F_GEC: &str = "table_250_66_gec.csv";
const F_UL17: &str = "table_220_12_unit_lighting_2017.csv";
const F_UL20: &str = "table_220_12_unit_lighting_2020.csv";
const F_UL23: &str = "table_220_42A_unit_lighting_2023.csv";
const F_LD: &str = "table_220_42_lighting_demand_factors.csv";
const F_DRY: &str = "table_220_54_dryer_demand_factors.csv";
const F_RNG: &str = "table_220_55_ranges.csv";
const F_MOT: &str = "table_430_52_motor_ocpd_pct.csv";
const F_FLC1: &str = "table_430_248_single_phase_flc.csv";
const F_FLC3: &str = "table_430_250_three_phase_flc.csv";
const F_FLCDC: &str = "table_430_247_dc_flc.csv";
const F_CVAL: &str = "ptp_c_values_600v.csv";
const F_CVAL_LOW: &str = "ptp_c_values_600v_disagreements.csv";
const F_PPE_AC: &str = "nfpa70e_130_7_C15a_ac_ppe.csv";
const F_PPE_DC: &str = "nfpa70e_130_7_C15b_dc_ppe.csv";
const F_MF: &str = "table_220_84_multifamily_demand_factors.csv";

// ---------------------------------------------------------------------------------------------
// Minimal CSV reader (RFC 4180 quoting; the data files have no embedded newlines).

/// A parsed CSV file: header and rows with their 1-based line numbers.
#[derive(Debug, Clone)]
pub struct Csv {
    /// The file name errors cite.
    pub file: &'static str,
    /// The column names of the first line.
    pub header: Vec<String>,
    /// Each data row with its 1-based line number.
    pub rows: Vec<(usize, Vec<String>)>,
}

/// Parses `text` (named `file` in errors) into a [`Csv`]; every row must have as many cells as
/// the header. Public because the bot's jurisdiction tables use the same reader.
pub fn parse_csv(file: &'static str, text: &str) -> Result<Csv, NecError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, head) = lines.next().ok_or(NecError::Data {
        file,
        line: 1,
        message: "empty file".into(),
    })?;
    let header = split_csv_line(file, 1, head)?;
    let mut rows = Vec::new();
    for (i, l) in lines {
        let cells = split_csv_line(file, i + 1, l)?;
        if cells.len() != header.len() {
            return Err(NecError::Data {
                file,
                line: i + 1,
                message: format!("{} cells, header has {}", cells.len(), header.len()),
            });
        }
        rows.push((i + 1, cells));
    }
    Ok(Csv { file, header, rows })
}

fn split_csv_line(file: &'static str, line: usize, l: &str) -> Result<Vec<String>, NecError> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = l.trim_end_matches('\r').chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', true) => quoted = false,
            ('"', false) if cur.is_empty() => quoted = true,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    if quoted {
        return Err(NecError::Data {
            file,
            line,
            message: "unterminated quote".into(),
        });
    }
    out.push(cur);
    Ok(out)
}

/// One row with typed accessors that report file and line on error.
struct Row<'a> {
    file: &'static str,
    line: usize,
    header: &'a [String],
    cells: &'a [String],
}

impl<'a> Row<'a> {
    fn err(&self, message: String) -> NecError {
        NecError::Data {
            file: self.file,
            line: self.line,
            message,
        }
    }
    fn text(&self, col: &str) -> Result<&'a str, NecError> {
        let i = self
            .header
            .iter()
            .position(|h| h == col)
            .ok_or_else(|| self.err(format!("no column {col}")))?;
        Ok(self.cells[i].trim())
    }
    fn opt_f64(&self, col: &str) -> Result<Option<f64>, NecError> {
        let t = self.text(col)?;
        if t.is_empty() {
            return Ok(None);
        }
        t.parse::<f64>()
            .map(Some)
            .map_err(|_| self.err(format!("column {col}: '{t}' is not a number")))
    }
    fn f64(&self, col: &str) -> Result<f64, NecError> {
        self.opt_f64(col)?
            .ok_or_else(|| self.err(format!("column {col} is empty")))
    }
    fn size(&self, col: &str) -> Result<ConductorSize, NecError> {
        let t = self.text(col)?;
        t.parse::<ConductorSize>()
            .map_err(|e| self.err(format!("column {col}: {e}")))
    }
    /// A size given as bare number plus a `size_unit` column (AWG or kcmil).
    fn size_with_unit(&self) -> Result<ConductorSize, NecError> {
        let t = self.text("size")?;
        let unit = self.text("size_unit")?;
        format!("{t} {unit}")
            .parse::<ConductorSize>()
            .map_err(|e| self.err(format!("size: {e}")))
    }
}

fn rows<'a>(csv: &'a Csv) -> impl Iterator<Item = Row<'a>> + 'a {
    csv.rows.iter().map(move |(line, cells)| Row {
        file: csv.file,
        line: *line,
        header: &csv.header,
        cells,
    })
}

// ---------------------------------------------------------------------------------------------
// Typed rows.

/// A row of Table 310.16 with the 240.4(D) small-conductor cap.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AmpacityRow {
    /// Conductor size.
    pub size: ConductorSize,
    /// Conductor material.
    pub material: Material,
    /// Ampacity in the 60 °C column, if the table has one.
    pub a60: Option<f64>,
    /// Ampacity in the 75 °C column.
    pub a75: Option<f64>,
    /// Ampacity in the 90 °C column.
    pub a90: Option<f64>,
    /// 240.4(D) maximum overcurrent protection for small conductors.
    pub max_ocpd_240_4d: Option<f64>,
}

impl AmpacityRow {
    /// The ampacity in the given temperature column.
    pub fn at(&self, t: TempRating) -> Option<f64> {
        match t {
            TempRating::C60 => self.a60,
            TempRating::C75 => self.a75,
            TempRating::C90 => self.a90,
        }
    }
}

/// A row of a temperature correction table; `factors[i]` pairs with the table's ratings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TempCorrectionRow {
    /// Lowest ambient of the band in °C (`None` for the first, open-ended band).
    pub ambient_min_c: Option<f64>,
    /// Highest ambient of the band in °C.
    pub ambient_max_c: f64,
    /// Factors by conductor temperature rating in °C; `None` where the table is blank.
    pub factors: Vec<(u32, Option<f64>)>,
}

/// A row of Table 310.15(C)(1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AdjustmentRow {
    /// Fewest current-carrying conductors of the band.
    pub ccc_min: u32,
    /// Most current-carrying conductors of the band (`None`: and above).
    pub ccc_max: Option<u32>,
    /// Adjustment factor.
    pub factor: f64,
}

/// Solid or stranded conductor (Chapter 9 Table 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Stranding {
    /// Solid.
    Solid,
    /// Stranded (the default for building wire).
    #[default]
    Stranded,
}

/// A row of Chapter 9 Table 8.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table8Row {
    /// Size.
    pub size: ConductorSize,
    /// Solid or stranded.
    pub stranding: Stranding,
    /// Area in circular mils.
    pub area_cmil: f64,
    /// Overall diameter in inches.
    pub overall_diameter_in: f64,
    /// DC resistance at 75 °C, uncoated copper, Ω/kft.
    pub r_cu_uncoated: f64,
    /// DC resistance at 75 °C, coated copper, Ω/kft.
    pub r_cu_coated: f64,
    /// DC resistance at 75 °C, aluminum, Ω/kft.
    pub r_al: f64,
}

/// Raceway type of Chapter 9 Table 9.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Conduit {
    /// PVC (nonmetallic) conduit.
    Pvc,
    /// Aluminum conduit.
    Aluminum,
    /// Steel conduit.
    Steel,
}

/// A row of Chapter 9 Table 9 (Ω to neutral per 1000 ft). Arrays are indexed PVC, Al, steel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table9Row {
    /// Size.
    pub size: ConductorSize,
    /// XL in PVC or aluminum conduit.
    pub xl_pvc_al: f64,
    /// XL in steel conduit.
    pub xl_steel: f64,
    /// AC resistance, uncoated copper.
    pub r_cu: [Option<f64>; 3],
    /// AC resistance, aluminum.
    pub r_al: [Option<f64>; 3],
    /// Effective Z at 0.85 PF, copper.
    pub z085_cu: [Option<f64>; 3],
    /// Effective Z at 0.85 PF, aluminum.
    pub z085_al: [Option<f64>; 3],
}

/// Kind of overcurrent device, for Table 240.6(A).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum DeviceKind {
    /// Fuse (includes the fuse-only ratings 1, 3, 6, 10 (2020), 601 A).
    Fuse,
    /// Inverse-time circuit breaker (the default).
    #[default]
    CircuitBreaker,
}

/// A row of Table 240.6(A): whether the rating is standard in each edition and for which devices.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StandardRatingRow {
    /// Rating in amperes.
    pub amps: f64,
    /// 2020: true = fuses and breakers, false = fuses only.
    pub breaker_2020: bool,
    /// 2023: true = fuses and breakers, false = fuses only.
    pub breaker_2023: bool,
}

/// A row of Table 250.122.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EgcRow {
    /// Rating of the OCPD not exceeding, amperes.
    pub ocpd_max: f64,
    /// Copper EGC.
    pub cu: ConductorSize,
    /// Aluminum or copper-clad aluminum EGC.
    pub al: ConductorSize,
}

/// A row of Table 250.66.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GecRow {
    /// Largest ungrounded copper conductor (or equivalent area) up to this cmil (`None`: over).
    pub cu_max_cmil: Option<f64>,
    /// Same for aluminum.
    pub al_max_cmil: Option<f64>,
    /// Copper GEC.
    pub gec_cu: ConductorSize,
    /// Aluminum GEC.
    pub gec_al: ConductorSize,
}

/// A non-dwelling general lighting unit load (2020 Table 220.12 / 2023 Table 220.42(A)).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnitLoadRow {
    /// Occupancy as named in the table.
    pub occupancy: String,
    /// VA per m².
    pub va_per_m2: f64,
    /// VA per ft².
    pub va_per_ft2: f64,
    /// "confirmed" or a conflict note from the reference.
    pub verification: String,
}

/// A tier of the lighting demand factors (2020 Table 220.42 / 2023 Table 220.45).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LightingDemandRow {
    /// Occupancy.
    pub occupancy: String,
    /// Tier start, VA.
    pub from_va: f64,
    /// Tier end, VA (`None`: and above).
    pub to_va: Option<f64>,
    /// Demand factor.
    pub factor: f64,
}

/// A band of Table 220.54: factor = `base - step * (n - offset)`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DryerDemandRow {
    /// Fewest dryers of the band.
    pub min: u32,
    /// Most dryers (`None`: and above).
    pub max: Option<u32>,
    /// Factor at `n = offset` (or constant when `step` is 0).
    pub base: f64,
    /// Decrease per dryer.
    pub step: f64,
    /// Dryer count where `base` applies.
    pub offset: f64,
}

/// A row of Table 220.55.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RangeDemandRow {
    /// Fewest appliances of the band.
    pub min: u32,
    /// Most appliances (`None`: and above).
    pub max: Option<u32>,
    /// Column A percent (< 3½ kW).
    pub col_a_pct: f64,
    /// Column B percent (3½–8¾ kW).
    pub col_b_pct: f64,
    /// Column C kW (fixed rows).
    pub col_c_kw: Option<f64>,
    /// Column C base kW for the formula rows.
    pub col_c_base_kw: Option<f64>,
    /// Column C kW per range for the formula rows.
    pub col_c_kw_per_range: Option<f64>,
}

/// Motor type, the row of Table 430.52.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MotorType {
    /// Single-phase motors.
    SinglePhase,
    /// AC polyphase squirrel cage other than Design B energy-efficient / premium efficiency.
    SquirrelCage,
    /// Design B energy-efficient (2023: and premium efficiency).
    DesignBEnergyEfficient,
    /// Synchronous.
    Synchronous,
    /// Wound-rotor.
    WoundRotor,
    /// DC (constant voltage).
    Dc,
}

/// Branch-circuit short-circuit and ground-fault protective device type (Table 430.52 columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MotorOcpdType {
    /// Non-time-delay fuse.
    NonTimeDelayFuse,
    /// Dual-element (time-delay) fuse.
    DualElementFuse,
    /// Instantaneous-trip breaker.
    InstantaneousTripBreaker,
    /// Inverse-time breaker.
    InverseTimeBreaker,
}

/// A row of Table 430.52: percent of FLC by device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MotorOcpdRow {
    /// Motor type.
    pub motor_type: MotorType,
    /// Non-time-delay fuse %.
    pub non_time_delay_fuse: f64,
    /// Dual-element fuse %.
    pub dual_element_fuse: f64,
    /// Instantaneous-trip breaker %.
    pub instantaneous_trip: f64,
    /// Inverse-time breaker %.
    pub inverse_time: f64,
}

/// A row of Table 430.248 or 430.250: FLC by rated motor voltage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlcRow {
    /// Horsepower as printed ("1-1/2").
    pub hp_label: String,
    /// Horsepower as a number.
    pub hp: f64,
    /// Induction motor FLC by rated voltage.
    pub induction: Vec<(u32, Option<f64>)>,
    /// Synchronous (unity PF) FLC by rated voltage (430.250 only).
    pub synchronous: Vec<(u32, Option<f64>)>,
}

/// Conduit magnetism, for point-to-point C values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConduitMagnetism {
    /// Steel (magnetic) conduit.
    Steel,
    /// PVC, aluminum or other nonmagnetic conduit.
    Nonmagnetic,
}

/// A row of the point-to-point C value table (600 V, three single conductors). Only cells
/// confirmed by two independent published sources are shipped; the others are `None`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CValueRow {
    /// Size.
    pub size: ConductorSize,
    /// Copper, steel conduit.
    pub cu_steel: Option<f64>,
    /// Copper, nonmagnetic conduit.
    pub cu_nonmagnetic: Option<f64>,
    /// Aluminum, steel conduit.
    pub al_steel: Option<f64>,
    /// Aluminum, nonmagnetic conduit.
    pub al_nonmagnetic: Option<f64>,
}

/// A C value cell whose published copies disagree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CValueDisagreement {
    /// Size.
    pub size: ConductorSize,
    /// Conductor material.
    pub material: Material,
    /// Raceway.
    pub conduit: ConduitMagnetism,
    /// The value shipped (the highest published).
    pub shipped: f64,
    /// The lowest value published for the cell.
    pub lowest_published: f64,
}

/// A row of NFPA 70E Table 130.7(C)(15)(a) (AC).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PpeAcRow {
    /// Stable key for the equipment class.
    pub key: String,
    /// Equipment description.
    pub equipment: String,
    /// Lowest nominal voltage of the class.
    pub min_voltage: f64,
    /// Highest nominal voltage of the class.
    pub max_voltage: f64,
    /// Maximum available fault current, kA.
    pub max_fault_ka: f64,
    /// Maximum fault clearing time, s.
    pub max_clearing_time_s: f64,
    /// Minimum working distance, mm.
    pub working_distance_mm: f64,
    /// PPE category.
    pub ppe_category: u8,
    /// Arc-flash boundary, mm (`None`: not confirmed by two independent sources, not shipped).
    pub arc_flash_boundary_mm: Option<f64>,
}

/// A row of NFPA 70E Table 130.7(C)(15)(b) (DC).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PpeDcRow {
    /// Voltage band low end (inclusive), V.
    pub min_voltage: f64,
    /// Voltage band high end, V.
    pub max_voltage: f64,
    /// Fault current band low end (inclusive), kA.
    pub min_fault_ka: f64,
    /// Fault current band high end (exclusive), kA.
    pub max_fault_ka: f64,
    /// Maximum arc duration, s.
    pub max_arc_duration_s: f64,
    /// Working distance, mm.
    pub working_distance_mm: f64,
    /// PPE category.
    pub ppe_category: u8,
    /// Arc-flash boundary, mm.
    pub arc_flash_boundary_mm: f64,
}

/// A band of Table 220.84: the demand factor for `min..=max` dwelling units.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MultifamilyDemandRow {
    /// Fewest dwelling units of the band.
    pub min: u32,
    /// Most dwelling units (`None`: and over).
    pub max: Option<u32>,
    /// Demand factor (0.45 for 45 %).
    pub factor: f64,
}

/// All tables, parsed.
#[derive(Debug, Clone)]
pub struct Tables {
    /// Table 310.16 (Cu then Al, ascending size).
    pub ampacity: Vec<AmpacityRow>,
    /// Table 310.15(B)(1)(1), 30 °C base; ratings 60/75/90.
    pub temp_correction_30c: Vec<TempCorrectionRow>,
    /// Table 310.15(B)(1)(2), 40 °C base; ratings 60/75/90/150/200/250.
    pub temp_correction_40c: Vec<TempCorrectionRow>,
    /// Table 310.15(C)(1).
    pub adjustment: Vec<AdjustmentRow>,
    /// Chapter 9 Table 8.
    pub table8: Vec<Table8Row>,
    /// Chapter 9 Table 9.
    pub table9: Vec<Table9Row>,
    /// Table 240.6(A).
    pub standard_ratings: Vec<StandardRatingRow>,
    /// Table 250.122.
    pub egc: Vec<EgcRow>,
    /// Table 250.66.
    pub gec: Vec<GecRow>,
    /// 2017 Table 220.12 (unit loads before the 2020 rewrite; they exclude the 125 %
    /// continuous-load factor that the 2020 and 2023 values include).
    pub unit_loads_2017: Vec<UnitLoadRow>,
    /// 2020 Table 220.12.
    pub unit_loads_2020: Vec<UnitLoadRow>,
    /// 2023 Table 220.42(A).
    pub unit_loads_2023: Vec<UnitLoadRow>,
    /// 2020 Table 220.42 / 2023 Table 220.45.
    pub lighting_demand: Vec<LightingDemandRow>,
    /// Table 220.54.
    pub dryer_demand: Vec<DryerDemandRow>,
    /// Table 220.55.
    pub range_demand: Vec<RangeDemandRow>,
    /// Table 430.52.
    pub motor_ocpd: Vec<MotorOcpdRow>,
    /// Table 430.248.
    pub flc_single_phase: Vec<FlcRow>,
    /// Table 430.250.
    pub flc_three_phase: Vec<FlcRow>,
    /// Table 430.247 (DC motors, by armature voltage).
    pub flc_dc: Vec<FlcRow>,
    /// Point-to-point C values.
    pub c_values: Vec<CValueRow>,
    /// C value cells whose published copies disagree: the lowest value published (the table
    /// ships the highest).
    pub c_value_disagreements: Vec<CValueDisagreement>,
    /// NFPA 70E AC PPE category table.
    pub ppe_ac: Vec<PpeAcRow>,
    /// NFPA 70E DC PPE category table.
    pub ppe_dc: Vec<PpeDcRow>,
    /// Table 220.84 (three or more multifamily dwelling units, optional method).
    pub multifamily_demand: Vec<MultifamilyDemandRow>,
}

/// The parsed tables (parsed once, on first use).
pub fn tables() -> Result<&'static Tables, NecError> {
    static CELL: OnceLock<Result<Tables, NecError>> = OnceLock::new();
    CELL.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn csv(name: &'static str) -> Result<Csv, NecError> {
    let text = FILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .ok_or(NecError::Data {
            file: name,
            line: 0,
            message: "file not embedded".into(),
        })?;
    parse_csv(name, text)
}

fn material(r: &Row<'_>, col: &str) -> Result<Material, NecError> {
    match r.text(col)? {
        "Cu" => Ok(Material::Copper),
        "Al" => Ok(Material::Aluminum),
        t => Err(r.err(format!("unknown material {t}"))),
    }
}

/// Column names like `factor_75C` or `flc_230V_A` carry a number; extract it.
fn number_in(col: &str, prefix: &str, suffix: &str) -> Option<u32> {
    col.strip_prefix(prefix)?.strip_suffix(suffix)?.parse().ok()
}

fn temp_rows(c: &Csv) -> Result<Vec<TempCorrectionRow>, NecError> {
    let ratings: Vec<(String, u32)> = c
        .header
        .iter()
        .filter_map(|h| number_in(h, "factor_", "C").map(|n| (h.clone(), n)))
        .collect();
    rows(c)
        .map(|r| {
            Ok(TempCorrectionRow {
                ambient_min_c: r.opt_f64("ambient_min_C")?,
                ambient_max_c: r.f64("ambient_max_C")?,
                factors: ratings
                    .iter()
                    .map(|(h, n)| Ok((*n, r.opt_f64(h)?)))
                    .collect::<Result<_, NecError>>()?,
            })
        })
        .collect()
}

fn flc_rows(c: &Csv) -> Result<Vec<FlcRow>, NecError> {
    let cols = |prefix: &str| -> Vec<(String, u32)> {
        c.header
            .iter()
            .filter_map(|h| number_in(h, prefix, "V_A").map(|n| (h.clone(), n)))
            .collect()
    };
    let mut ind = cols("flc_");
    ind.extend(cols("induction_flc_"));
    let syn = cols("sync_upf_flc_");
    rows(c)
        .map(|r| {
            let pick = |cs: &[(String, u32)]| -> Result<Vec<(u32, Option<f64>)>, NecError> {
                cs.iter().map(|(h, n)| Ok((*n, r.opt_f64(h)?))).collect()
            };
            Ok(FlcRow {
                hp_label: r.text("hp")?.to_string(),
                hp: r.f64("hp_decimal")?,
                induction: pick(&ind)?,
                synchronous: pick(&syn)?,
            })
        })
        .collect()
}

fn unit_rows(c: &Csv) -> Result<Vec<UnitLoadRow>, NecError> {
    rows(c)
        .map(|r| {
            Ok(UnitLoadRow {
                occupancy: r.text("occupancy")?.to_string(),
                va_per_m2: r.f64("unit_load_VA_per_m2")?,
                va_per_ft2: r.f64("unit_load_VA_per_ft2")?,
                verification: r.text("verification")?.to_string(),
            })
        })
        .collect()
}

fn opt_u32(r: &Row<'_>, col: &str) -> Result<Option<u32>, NecError> {
    r.opt_f64(col).map(|o| o.map(|v| v as u32))
}

fn parse_dryer_expr(r: &Row<'_>) -> Result<(f64, f64, f64), NecError> {
    // Either a constant ("0.85") or "a - b*(n-c)".
    let e: String = r
        .text("demand_factor_expr")?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    if let Ok(v) = e.parse::<f64>() {
        return Ok((v, 0.0, 0.0));
    }
    let bad = || r.err(format!("cannot read demand factor expression '{e}'"));
    let (a, rest) = e.split_once('-').ok_or_else(bad)?;
    let (b, rest) = rest.split_once("*(n-").ok_or_else(bad)?;
    let c = rest.strip_suffix(')').ok_or_else(bad)?;
    let num = |s: &str| s.parse::<f64>().map_err(|_| bad());
    Ok((num(a)?, num(b)?, num(c)?))
}

fn motor_type_of(r: &Row<'_>) -> Result<MotorType, NecError> {
    let t = r.text("motor_type")?;
    let lower = t.to_ascii_lowercase();
    Ok(if lower.starts_with("single-phase") {
        MotorType::SinglePhase
    } else if lower.contains("design b energy-efficient (") {
        MotorType::DesignBEnergyEfficient
    } else if lower.contains("squirrel cage") {
        MotorType::SquirrelCage
    } else if lower.starts_with("synchronous") {
        MotorType::Synchronous
    } else if lower.starts_with("wound-rotor") {
        MotorType::WoundRotor
    } else if lower.starts_with("dc") {
        MotorType::Dc
    } else {
        return Err(r.err(format!("unknown motor type row '{t}'")));
    })
}

fn load() -> Result<Tables, NecError> {
    let ampacity = rows(&csv(F310_16)?)
        .map(|r| {
            Ok(AmpacityRow {
                size: r.size_with_unit()?,
                material: material(&r, "material")?,
                a60: r.opt_f64("ampacity_60C_A")?,
                a75: r.opt_f64("ampacity_75C_A")?,
                a90: r.opt_f64("ampacity_90C_A")?,
                max_ocpd_240_4d: r.opt_f64("max_ocpd_240_4D_A")?,
            })
        })
        .collect::<Result<Vec<_>, NecError>>()?;

    let adjustment = rows(&csv(F_ADJ)?)
        .map(|r| {
            Ok(AdjustmentRow {
                ccc_min: r.f64("ccc_min")? as u32,
                ccc_max: opt_u32(&r, "ccc_max")?,
                factor: r.f64("adjustment_factor")?,
            })
        })
        .collect::<Result<Vec<_>, NecError>>()?;

    let table8 = rows(&csv(F_T8)?)
        .map(|r| {
            Ok(Table8Row {
                size: r.size_with_unit()?,
                stranding: match r.text("stranding")? {
                    "solid" => Stranding::Solid,
                    "stranded" => Stranding::Stranded,
                    t => return Err(r.err(format!("unknown stranding {t}"))),
                },
                area_cmil: r.f64("area_cmil")?,
                overall_diameter_in: r.f64("overall_diameter_in")?,
                r_cu_uncoated: r.f64("r_dc_75C_cu_uncoated_ohm_per_kft")?,
                r_cu_coated: r.f64("r_dc_75C_cu_coated_ohm_per_kft")?,
                r_al: r.f64("r_dc_75C_al_ohm_per_kft")?,
            })
        })
        .collect::<Result<Vec<_>, NecError>>()?;

    let table9 = rows(&csv(F_T9)?)
        .map(|r| {
            let three = |m: &str, kind: &str| -> Result<[Option<f64>; 3], NecError> {
                Ok([
                    r.opt_f64(&format!("{kind}_{m}_pvc_ohm_per_kft"))?,
                    r.opt_f64(&format!("{kind}_{m}_al_conduit_ohm_per_kft"))?,
                    r.opt_f64(&format!("{kind}_{m}_steel_ohm_per_kft"))?,
                ])
            };
            Ok(Table9Row {
                size: r.size_with_unit()?,
                xl_pvc_al: r.f64("xl_pvc_or_al_conduit_ohm_per_kft")?,
                xl_steel: r.f64("xl_steel_conduit_ohm_per_kft")?,
                r_cu: three("cu", "r_ac")?,
                r_al: three("al", "r_ac")?,
                z085_cu: three("cu", "zeff_pf085")?,
                z085_al: three("al", "zeff_pf085")?,
            })
        })
        .collect::<Result<Vec<_>, NecError>>()?;

    let breaker = |r: &Row<'_>, col: &str| -> Result<bool, NecError> {
        match r.text(col)? {
            "fuse_and_inverse_time_cb" => Ok(true),
            "fuse_only" => Ok(false),
            t => Err(r.err(format!("unknown device kind {t}"))),
        }
    };
    let mut standard_ratings = rows(&csv(F_240)?)
        .map(|r| {
            Ok(StandardRatingRow {
                amps: r.f64("rating_A")?,
                breaker_2020: breaker(&r, "nec_2020")?,
                breaker_2023: breaker(&r, "nec_2023")?,
            })
        })
        .collect::<Result<Vec<_>, NecError>>()?;
    standard_ratings.sort_by(|a, b| a.amps.total_cmp(&b.amps));

    let egc = rows(&csv(F_EGC)?)
        .map(|r| {
            Ok(EgcRow {
                ocpd_max: r.f64("ocpd_rating_not_exceeding_A")?,
                cu: r.size("egc_cu_size")?,
                al: r.size("egc_al_or_cca_size")?,
            })
        })
        .collect::<Result<Vec<_>, NecError>>()?;

    let gec = rows(&csv(F_GEC)?)
        .map(|r| {
            Ok(GecRow {
                cu_max_cmil: r.opt_f64("largest_ungrounded_cu_max_cmil")?,
                al_max_cmil: r.opt_f64("largest_ungrounded_al_or_cca_max_cmil")?,
                gec_cu: r.size("gec_cu_size")?,
                gec_al: r.size("gec_al_or_cca_size")?,
            })
        })
        .collect::<Result<Vec<_>, NecError>>()?;

    let lighting_demand = rows(&csv(F_LD)?)
        .map(|r| {
            Ok(LightingDemandRow {
                occupancy: r.text("occupancy")?.to_string(),
                from_va: r.f64("tier_from_VA")?,
                to_va: r.opt_f64("tier_to_VA")?,
                factor: r.f64("demand_factor")?,
            })
        })
        .collect::<Result<Vec<_>, NecError>>()?;

    let dryer_demand = rows(&csv(F_DRY)?)
        .map(|r| {
            let (base, step, offset) = parse_dryer_expr(&r)?;
            Ok(DryerDemandRow {
                min: r.f64("dryers_min")? as u32,
                max: opt_u32(&r, "dryers_max")?,
                base,
                step,
                offset,
            })
        })
        .collect::<Result<Vec<_>, NecError>>()?;

    let range_demand = rows(&csv(F_RNG)?)
        .map(|r| {
            Ok(RangeDemandRow {
                min: r.f64("appliances_min")? as u32,
                max: opt_u32(&r, "appliances_max")?,
                col_a_pct: r.f64("colA_demand_pct_under_3p5kW")?,
                col_b_pct: r.f64("colB_demand_pct_3p5_to_8p75kW")?,
                col_c_kw: r.opt_f64("colC_max_demand_kW_not_over_12kW")?,
                col_c_base_kw: r.opt_f64("colC_base_kW")?,
                col_c_kw_per_range: r.opt_f64("colC_kW_per_range")?,
            })
        })
        .collect::<Result<Vec<_>, NecError>>()?;

    let motor_ocpd = rows(&csv(F_MOT)?)
        .map(|r| {
            Ok(MotorOcpdRow {
                motor_type: motor_type_of(&r)?,
                non_time_delay_fuse: r.f64("nontime_delay_fuse_pct")?,
                dual_element_fuse: r.f64("dual_element_time_delay_fuse_pct")?,
                instantaneous_trip: r.f64("instantaneous_trip_breaker_pct")?,
                inverse_time: r.f64("inverse_time_breaker_pct")?,
            })
        })
        .collect::<Result<Vec<_>, NecError>>()?;

    let c_values = rows(&csv(F_CVAL)?)
        .map(|r| {
            Ok(CValueRow {
                size: r.size_with_unit()?,
                cu_steel: r.opt_f64("c_cu_steel_conduit")?,
                cu_nonmagnetic: r.opt_f64("c_cu_nonmagnetic_conduit")?,
                al_steel: r.opt_f64("c_al_steel_conduit")?,
                al_nonmagnetic: r.opt_f64("c_al_nonmagnetic_conduit")?,
            })
        })
        .collect::<Result<Vec<_>, NecError>>()?;
    let c_value_disagreements = rows(&csv(F_CVAL_LOW)?)
        .map(|r| {
            let (material, conduit) = c_column(r.text("column")?).ok_or_else(|| {
                NecError::invalid(
                    "column",
                    r.text("column").unwrap_or_default(),
                    "not a C value column",
                )
            })?;
            Ok(CValueDisagreement {
                size: r.size_with_unit()?,
                material,
                conduit,
                shipped: r.f64("shipped")?,
                lowest_published: r.f64("lowest_published")?,
            })
        })
        .collect::<Result<Vec<_>, NecError>>()?;

    let ppe_ac = rows(&csv(F_PPE_AC)?)
        .map(|r| {
            Ok(PpeAcRow {
                key: r.text("key")?.to_string(),
                equipment: r.text("equipment")?.to_string(),
                min_voltage: r.f64("min_voltage_V")?,
                max_voltage: r.f64("max_voltage_V")?,
                max_fault_ka: r.f64("max_fault_kA")?,
                max_clearing_time_s: r.f64("max_clearing_time_s")?,
                working_distance_mm: r.f64("working_distance_mm")?,
                ppe_category: r.f64("ppe_category")? as u8,
                arc_flash_boundary_mm: r.opt_f64("arc_flash_boundary_mm")?,
            })
        })
        .collect::<Result<Vec<_>, NecError>>()?;

    let ppe_dc = rows(&csv(F_PPE_DC)?)
        .map(|r| {
            Ok(PpeDcRow {
                min_voltage: r.f64("min_voltage_V")?,
                max_voltage: r.f64("max_voltage_V")?,
                min_fault_ka: r.f64("min_fault_kA")?,
                max_fault_ka: r.f64("max_fault_kA")?,
                max_arc_duration_s: r.f64("max_arc_duration_s")?,
                working_distance_mm: r.f64("working_distance_mm")?,
                ppe_category: r.f64("ppe_category")? as u8,
                arc_flash_boundary_mm: r.f64("arc_flash_boundary_mm")?,
            })
        })
        .collect::<Result<Vec<_>, NecError>>()?;

    Ok(Tables {
        ampacity,
        temp_correction_30c: temp_rows(&csv(F_TC30)?)?,
        temp_correction_40c: temp_rows(&csv(F_TC40)?)?,
        adjustment,
        table8,
        table9,
        standard_ratings,
        egc,
        gec,
        unit_loads_2017: unit_rows(&csv(F_UL17)?)?,
        unit_loads_2020: unit_rows(&csv(F_UL20)?)?,
        unit_loads_2023: unit_rows(&csv(F_UL23)?)?,
        lighting_demand,
        dryer_demand,
        range_demand,
        motor_ocpd,
        flc_single_phase: flc_rows(&csv(F_FLC1)?)?,
        flc_three_phase: flc_rows(&csv(F_FLC3)?)?,
        flc_dc: flc_rows(&csv(F_FLCDC)?)?,
        c_values,
        c_value_disagreements,
        ppe_ac,
        ppe_dc,
        multifamily_demand: rows(&csv(F_MF)?)
            .map(|r| {
                Ok(MultifamilyDemandRow {
                    min: r.f64("units_min")? as u32,
                    max: opt_u32(&r, "units_max")?,
                    factor: r.f64("demand_factor_pct")? / 100.0,
                })
            })
            .collect::<Result<_, NecError>>()?,
    })
}

// ---------------------------------------------------------------------------------------------
// Lookups.

/// Table 310.16 row for a size and material.
pub fn ampacity_row(
    size: ConductorSize,
    material: Material,
) -> Result<&'static AmpacityRow, NecError> {
    tables()?
        .ampacity
        .iter()
        .find(|r| r.size == size && r.material == material)
        .ok_or_else(|| NecError::not_in_table("NEC Table 310.16", format!("{size} {material}")))
}

/// Allowable ampacity from Table 310.16 (30 °C ambient, not more than three current-carrying
/// conductors), before any correction or adjustment.
pub fn ampacity(
    size: ConductorSize,
    material: Material,
    column: TempRating,
) -> Result<f64, NecError> {
    ampacity_row(size, material)?.at(column).ok_or_else(|| {
        NecError::not_in_table(
            "NEC Table 310.16",
            format!("{size} {material} in the {column} column"),
        )
    })
}

/// Sizes of Table 310.16 for a material, ascending, 14 AWG (Cu) / 12 AWG (Al) and up
/// (18 and 16 AWG are left out: they are not general building wire).
pub fn building_wire_sizes(material: Material) -> Result<Vec<ConductorSize>, NecError> {
    let mut v: Vec<ConductorSize> = tables()?
        .ampacity
        .iter()
        .filter(|r| r.material == material && r.a60.is_some())
        .map(|r| r.size)
        .collect();
    v.sort();
    Ok(v)
}

fn band_factor(
    table: &'static str,
    rows: &[TempCorrectionRow],
    ambient_c: f64,
    rating_c: u32,
) -> Result<f64, NecError> {
    if !ambient_c.is_finite() {
        return Err(NecError::invalid(
            "ambient_c",
            ambient_c,
            "must be a number",
        ));
    }
    // Bands are whole degrees (26–30, 31–35): a fractional ambient falls in the next band up,
    // which is the conservative reading.
    let row = rows
        .iter()
        .find(|r| ambient_c <= r.ambient_max_c)
        .ok_or_else(|| NecError::not_in_table(table, format!("ambient {ambient_c} °C")))?;
    let cell = row
        .factors
        .iter()
        .find(|(t, _)| *t == rating_c)
        .ok_or_else(|| NecError::not_in_table(table, format!("a {rating_c} °C column")))?;
    cell.1.ok_or_else(|| {
        NecError::not_in_table(
            table,
            format!("{rating_c} °C conductors at {ambient_c} °C ambient (rating exceeded)"),
        )
    })
}

/// Ambient temperature correction factor, 30 °C base (2023 Table 310.15(B)(1)(1)).
pub fn temperature_correction(ambient_c: f64, insulation: TempRating) -> Result<f64, NecError> {
    band_factor(
        "NEC Table 310.15(B)(1)(1)",
        &tables()?.temp_correction_30c,
        ambient_c,
        insulation.celsius(),
    )
}

/// Ambient temperature correction factor, 40 °C base (2023 Table 310.15(B)(1)(2)), for
/// conductors rated 60, 75, 90, 150, 200 or 250 °C.
pub fn temperature_correction_40c_base(ambient_c: f64, rating_c: u32) -> Result<f64, NecError> {
    band_factor(
        "NEC Table 310.15(B)(1)(2)",
        &tables()?.temp_correction_40c,
        ambient_c,
        rating_c,
    )
}

/// Adjustment factor for more than three current-carrying conductors (Table 310.15(C)(1)).
pub fn adjustment_factor(current_carrying_conductors: u32) -> Result<f64, NecError> {
    if current_carrying_conductors == 0 {
        return Err(NecError::invalid(
            "current_carrying_conductors",
            0,
            "must be at least 1",
        ));
    }
    tables()?
        .adjustment
        .iter()
        .find(|r| {
            current_carrying_conductors >= r.ccc_min
                && r.ccc_max.is_none_or(|m| current_carrying_conductors <= m)
        })
        .map(|r| r.factor)
        .ok_or_else(|| {
            NecError::not_in_table(
                "NEC Table 310.15(C)(1)",
                format!("{current_carrying_conductors} conductors"),
            )
        })
}

/// Chapter 9 Table 8 row.
pub fn table8(size: ConductorSize, stranding: Stranding) -> Result<&'static Table8Row, NecError> {
    tables()?
        .table8
        .iter()
        .find(|r| r.size == size && r.stranding == stranding)
        .ok_or_else(|| {
            NecError::not_in_table(
                "NEC Chapter 9 Table 8",
                format!("{size} {stranding:?}").to_lowercase(),
            )
        })
}

/// DC resistance at 75 °C in Ω per 1000 ft (Chapter 9 Table 8; uncoated copper).
pub fn dc_resistance(
    size: ConductorSize,
    material: Material,
    stranding: Stranding,
) -> Result<f64, NecError> {
    let r = table8(size, stranding)?;
    Ok(match material {
        Material::Copper => r.r_cu_uncoated,
        Material::Aluminum => r.r_al,
    })
}

/// AC resistance, reactance and 0.85 PF effective Z (Ω to neutral per 1000 ft), Chapter 9 Table 9.
pub fn ac_impedance(
    size: ConductorSize,
    material: Material,
    conduit: Conduit,
) -> Result<(f64, f64, f64), NecError> {
    let row = tables()?
        .table9
        .iter()
        .find(|r| r.size == size)
        .ok_or_else(|| NecError::not_in_table("NEC Chapter 9 Table 9", size.to_string()))?;
    let i = match conduit {
        Conduit::Pvc => 0,
        Conduit::Aluminum => 1,
        Conduit::Steel => 2,
    };
    let x = if conduit == Conduit::Steel {
        row.xl_steel
    } else {
        row.xl_pvc_al
    };
    let (r, z) = match material {
        Material::Copper => (row.r_cu[i], row.z085_cu[i]),
        Material::Aluminum => (row.r_al[i], row.z085_al[i]),
    };
    match (r, z) {
        (Some(r), Some(z)) => Ok((r, x, z)),
        _ => Err(NecError::not_in_table(
            "NEC Chapter 9 Table 9",
            format!("{size} {material}"),
        )),
    }
}

/// Sizes listed in Chapter 9 Table 9 for a material, ascending.
pub fn table9_sizes(material: Material) -> Result<Vec<ConductorSize>, NecError> {
    Ok(tables()?
        .table9
        .iter()
        .filter(|r| match material {
            Material::Copper => r.r_cu[0].is_some(),
            Material::Aluminum => r.r_al[0].is_some(),
        })
        .map(|r| r.size)
        .collect())
}

/// Standard ampere ratings of Table 240.6(A) for an edition and device kind, ascending.
pub fn standard_ratings(edition: Edition, device: DeviceKind) -> Result<Vec<f64>, NecError> {
    Ok(tables()?
        .standard_ratings
        .iter()
        .filter(|r| {
            device == DeviceKind::Fuse
                || match edition {
                    // 240.6(A) lists the same ratings in 2017 and 2020 (10 A came in 2023).
                    Edition::Nec2017 | Edition::Nec2020 => r.breaker_2020,
                    Edition::Nec2023 => r.breaker_2023,
                }
        })
        .map(|r| r.amps)
        .collect())
}

/// Whether `amps` is a standard rating (240.6(A)).
pub fn is_standard_rating(
    amps: f64,
    edition: Edition,
    device: DeviceKind,
) -> Result<bool, NecError> {
    Ok(standard_ratings(edition, device)?
        .iter()
        .any(|r| (r - amps).abs() < 1e-9))
}

/// Smallest standard rating at or above `amps` (240.6(A)).
pub fn standard_rating_at_or_above(
    amps: f64,
    edition: Edition,
    device: DeviceKind,
) -> Result<f64, NecError> {
    positive_amps(amps)?;
    standard_ratings(edition, device)?
        .into_iter()
        .find(|r| *r >= amps - 1e-9)
        .ok_or_else(|| {
            NecError::not_in_table(
                "NEC Table 240.6(A)",
                format!("a rating of {amps} A or more"),
            )
        })
}

/// Largest standard rating at or below `amps` (240.6(A)).
pub fn standard_rating_at_or_below(
    amps: f64,
    edition: Edition,
    device: DeviceKind,
) -> Result<f64, NecError> {
    positive_amps(amps)?;
    standard_ratings(edition, device)?
        .into_iter()
        .rev()
        .find(|r| *r <= amps + 1e-9)
        .ok_or_else(|| {
            NecError::not_in_table(
                "NEC Table 240.6(A)",
                format!("a rating of {amps} A or less"),
            )
        })
}

fn positive_amps(amps: f64) -> Result<f64, NecError> {
    super::error::positive("amps", amps)
}

/// Minimum EGC size from Table 250.122 for the rating of the OCPD ahead of the circuit.
pub fn egc_for_ocpd(ocpd_amps: f64, egc_material: Material) -> Result<ConductorSize, NecError> {
    super::error::positive("ocpd_rating", ocpd_amps)?;
    let row = tables()?
        .egc
        .iter()
        .find(|r| ocpd_amps <= r.ocpd_max + 1e-9)
        .ok_or_else(|| {
            NecError::not_in_table("NEC Table 250.122", format!("an OCPD of {ocpd_amps} A"))
        })?;
    Ok(match egc_material {
        Material::Copper => row.cu,
        Material::Aluminum => row.al,
    })
}

/// GEC size from Table 250.66 for the (equivalent) area of the largest ungrounded conductor.
pub fn gec_for_area(
    area_cmil: f64,
    service_material: Material,
    gec_material: Material,
) -> Result<ConductorSize, NecError> {
    super::error::positive("area_cmil", area_cmil)?;
    let row = tables()?
        .gec
        .iter()
        .find(|r| {
            let max = match service_material {
                Material::Copper => r.cu_max_cmil,
                Material::Aluminum => r.al_max_cmil,
            };
            max.is_none_or(|m| area_cmil <= m + 0.5)
        })
        .ok_or_else(|| NecError::not_in_table("NEC Table 250.66", format!("{area_cmil} cmil")))?;
    Ok(match gec_material {
        Material::Copper => row.gec_cu,
        Material::Aluminum => row.gec_al,
    })
}

/// Motor full-load current from Table 430.248 (single-phase) or 430.250 (three-phase), by rated
/// motor voltage column (115, 200, 208, 230, 460, 575, 2300). `synchronous` selects the
/// unity-power-factor synchronous columns of 430.250.
pub fn motor_flc(
    hp: f64,
    three_phase: bool,
    column_volts: u32,
    synchronous: bool,
) -> Result<f64, NecError> {
    let t = tables()?;
    let (rows, name) = if three_phase {
        (&t.flc_three_phase, "NEC Table 430.250")
    } else {
        (&t.flc_single_phase, "NEC Table 430.248")
    };
    let row = rows
        .iter()
        .find(|r| (r.hp - hp).abs() < 0.01)
        .ok_or_else(|| {
            NecError::not_in_table(name, format!("{hp} hp (no interpolation between rows)"))
        })?;
    let cols = if synchronous {
        &row.synchronous
    } else {
        &row.induction
    };
    cols.iter()
        .find(|(v, _)| *v == column_volts)
        .and_then(|(_, a)| *a)
        .ok_or_else(|| {
            // A synchronous motor below the table's synchronous rows is almost always an
            // ordinary induction motor asked for with the wrong type: say which rows exist.
            let hint = if synchronous {
                let from = rows
                    .iter()
                    .find(|r| r.synchronous.iter().any(|(_, a)| a.is_some()))
                    .map_or_else(String::new, |r| r.hp_label.clone());
                format!(
                    " (synchronous): the synchronous columns run from {from} hp, at 230, 460, \
                     575 and 2300 V; for an induction motor (the usual kind) leave motor_type out"
                )
            } else {
                String::new()
            };
            NecError::not_in_table(
                name,
                format!("{} hp at {column_volts} V{hint}", row.hp_label),
            )
        })
}

/// DC motor full-load current from Table 430.247 by armature voltage column (90, 120, 180,
/// 240, 500, 550 V).
pub fn motor_flc_dc(hp: f64, column_volts: u32) -> Result<f64, NecError> {
    let name = "NEC Table 430.247";
    let row = tables()?
        .flc_dc
        .iter()
        .find(|r| (r.hp - hp).abs() < 0.01)
        .ok_or_else(|| {
            NecError::not_in_table(name, format!("{hp} hp (no interpolation between rows)"))
        })?;
    row.induction
        .iter()
        .find(|(v, _)| *v == column_volts)
        .and_then(|(_, a)| *a)
        .ok_or_else(|| {
            NecError::not_in_table(name, format!("{} hp at {column_volts} V", row.hp_label))
        })
}

/// Table 430.52 row for a motor type.
pub fn motor_ocpd_row(motor_type: MotorType) -> Result<&'static MotorOcpdRow, NecError> {
    tables()?
        .motor_ocpd
        .iter()
        .find(|r| r.motor_type == motor_type)
        .ok_or_else(|| NecError::not_in_table("NEC Table 430.52", format!("{motor_type:?}")))
}

/// General lighting unit load: 2017 Table 220.12 (which still lists dwelling units), 2020
/// Table 220.12 or 2023 Table 220.42(A).
/// Occupancy names match case-insensitively; rows whose `verification` is not "confirmed"
/// carry an unresolved conflict note that callers should pass on.
pub fn unit_lighting_load(
    occupancy: &str,
    edition: Edition,
) -> Result<&'static UnitLoadRow, NecError> {
    let t = tables()?;
    let (rows, name) = match edition {
        Edition::Nec2017 => (&t.unit_loads_2017, "NEC 2017 Table 220.12"),
        Edition::Nec2020 => (&t.unit_loads_2020, "NEC 2020 Table 220.12"),
        Edition::Nec2023 => (&t.unit_loads_2023, "NEC 2023 Table 220.42(A)"),
    };
    let want = occupancy.trim().to_ascii_lowercase();
    rows.iter()
        .find(|r| r.occupancy.to_ascii_lowercase() == want)
        .ok_or_else(|| NecError::not_in_table(name, occupancy.to_string()))
}

/// The material and raceway of a column of the C value table (`c_cu_steel_conduit`, ...).
pub(crate) fn c_column(name: &str) -> Option<(Material, ConduitMagnetism)> {
    match name {
        "c_cu_steel_conduit" => Some((Material::Copper, ConduitMagnetism::Steel)),
        "c_cu_nonmagnetic_conduit" => Some((Material::Copper, ConduitMagnetism::Nonmagnetic)),
        "c_al_steel_conduit" => Some((Material::Aluminum, ConduitMagnetism::Steel)),
        "c_al_nonmagnetic_conduit" => Some((Material::Aluminum, ConduitMagnetism::Nonmagnetic)),
        _ => None,
    }
}

/// Table 220.84 demand factor for `units` dwelling units (three or more).
pub fn multifamily_demand_factor(units: u32) -> Result<f64, NecError> {
    if units < 3 {
        return Err(NecError::invalid(
            "units",
            units,
            "Table 220.84 starts at three dwelling units (two: 220.85; one: 220.82)",
        ));
    }
    tables()?
        .multifamily_demand
        .iter()
        .find(|r| units >= r.min && r.max.is_none_or(|m| units <= m))
        .map(|r| r.factor)
        .ok_or_else(|| NecError::not_in_table("NEC Table 220.84", format!("{units} units")))
}

/// A point-to-point C value and what the published copies say about it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CValue {
    /// The value used: where published copies disagree, the highest (the higher fault current).
    pub value: f64,
    /// The lowest published value when copies disagree; `None` when they agree.
    pub lowest_published: Option<f64>,
}

/// Point-to-point C value (600 V, three single conductors) with the disagreement of its
/// published copies, if any. Cells without two publishers are not shipped: asking for one is
/// [`NecError::NotVerified`].
pub fn c_value_cell(
    size: ConductorSize,
    material: Material,
    conduit: ConduitMagnetism,
) -> Result<CValue, NecError> {
    let t = tables()?;
    let cell = t
        .c_values
        .iter()
        .find(|r| r.size == size)
        .and_then(|r| match (material, conduit) {
            (Material::Copper, ConduitMagnetism::Steel) => r.cu_steel,
            (Material::Copper, ConduitMagnetism::Nonmagnetic) => r.cu_nonmagnetic,
            (Material::Aluminum, ConduitMagnetism::Steel) => r.al_steel,
            (Material::Aluminum, ConduitMagnetism::Nonmagnetic) => r.al_nonmagnetic,
        });
    let conduit_name = match conduit {
        ConduitMagnetism::Steel => "steel",
        ConduitMagnetism::Nonmagnetic => "nonmagnetic",
    };
    let value = cell.ok_or_else(|| NecError::NotVerified {
        table: "point-to-point C value table (600 V, three single conductors)",
        key: format!("{size} {material} in {conduit_name} conduit"),
        hint: "give c_value from the published table (Eaton Bussmann SPD handbook, C values for conductors) or the conductor's impedance",
    })?;
    let lowest_published = t
        .c_value_disagreements
        .iter()
        .find(|d| d.size == size && d.material == material && d.conduit == conduit)
        .map(|d| d.lowest_published);
    Ok(CValue {
        value,
        lowest_published,
    })
}

/// Point-to-point C value (600 V, three single conductors); see [`c_value_cell`].
pub fn c_value(
    size: ConductorSize,
    material: Material,
    conduit: ConduitMagnetism,
) -> Result<f64, NecError> {
    c_value_cell(size, material, conduit).map(|c| c.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: &str) -> ConductorSize {
        t.parse().unwrap()
    }

    #[test]
    fn all_tables_parse() {
        let t = tables().unwrap();
        assert_eq!(t.ampacity.len(), 57);
        assert_eq!(t.table8.len(), 36);
        assert_eq!(t.table9.len(), 21);
        assert_eq!(t.egc.len(), 19);
        assert_eq!(t.gec.len(), 7);
        assert_eq!(t.motor_ocpd.len(), 6);
        assert_eq!(t.flc_three_phase.len(), 27);
        assert_eq!(t.flc_single_phase.len(), 12);
        assert_eq!(t.flc_dc.len(), 23);
        assert_eq!(t.range_demand.len(), 30);
        assert_eq!(t.dryer_demand.len(), 11);
        assert_eq!(t.c_values.len(), 17);
    }

    /// Well-known values, typed here independently of the CSVs.
    #[test]
    fn well_known_values() {
        use Material::*;
        use TempRating::*;
        assert_eq!(ampacity(s("12"), Copper, C75).unwrap(), 25.0);
        assert_eq!(ampacity(s("3/0"), Copper, C75).unwrap(), 200.0);
        assert_eq!(ampacity(s("4/0"), Aluminum, C75).unwrap(), 180.0);
        assert_eq!(ampacity(s("500"), Copper, C75).unwrap(), 380.0);
        assert_eq!(ampacity(s("14"), Copper, C90).unwrap(), 25.0);
        assert_eq!(ampacity(s("6"), Copper, C60).unwrap(), 55.0);
        assert_eq!(
            ampacity_row(s("12"), Copper).unwrap().max_ocpd_240_4d,
            Some(20.0)
        );
        assert_eq!(egc_for_ocpd(200.0, Copper).unwrap(), s("6"));
        assert_eq!(egc_for_ocpd(20.0, Copper).unwrap(), s("12"));
        assert_eq!(egc_for_ocpd(400.0, Aluminum).unwrap(), s("1"));
        assert_eq!(gec_for_area(167_800.0, Copper, Copper).unwrap(), s("4"));
        assert_eq!(gec_for_area(66_360.0, Copper, Copper).unwrap(), s("8"));
        assert_eq!(temperature_correction(40.0, C90).unwrap(), 0.91);
        assert_eq!(temperature_correction(45.0, C75).unwrap(), 0.82);
        assert_eq!(adjustment_factor(9).unwrap(), 0.7);
        assert_eq!(adjustment_factor(4).unwrap(), 0.8);
        assert_eq!(adjustment_factor(50).unwrap(), 0.35);
        assert_eq!(
            dc_resistance(s("12"), Copper, Stranding::Stranded).unwrap(),
            1.98
        );
        assert_eq!(
            ac_impedance(s("6"), Copper, Conduit::Steel).unwrap(),
            (0.49, 0.064, 0.45)
        );
        assert_eq!(motor_flc(25.0, true, 460, false).unwrap(), 34.0);
        assert_eq!(motor_flc(10.0, false, 230, false).unwrap(), 50.0);
        assert_eq!(
            c_value(s("500"), Copper, ConduitMagnetism::Steel).unwrap(),
            22185.0
        );
    }

    #[test]
    fn unit_loads_per_edition() {
        let o = unit_lighting_load("office", Edition::Nec2023).unwrap();
        assert_eq!(o.va_per_ft2, 1.3);
        assert_eq!(
            unit_lighting_load("Retail", Edition::Nec2020)
                .unwrap()
                .va_per_ft2,
            1.9
        );
        let s = unit_lighting_load("School/university", Edition::Nec2023).unwrap();
        assert!(s.verification.starts_with("CONFLICT"));
        assert!(unit_lighting_load("Banks", Edition::Nec2023).is_err());
    }

    #[test]
    fn standard_ratings_per_edition() {
        use DeviceKind::*;
        assert!(is_standard_rating(10.0, Edition::Nec2023, CircuitBreaker).unwrap());
        assert!(!is_standard_rating(10.0, Edition::Nec2020, CircuitBreaker).unwrap());
        assert!(is_standard_rating(10.0, Edition::Nec2020, Fuse).unwrap());
        assert!(!is_standard_rating(601.0, Edition::Nec2023, CircuitBreaker).unwrap());
        assert_eq!(
            standard_rating_at_or_above(102.0, Edition::Nec2023, Fuse).unwrap(),
            110.0
        );
        assert_eq!(
            standard_rating_at_or_below(199.0, Edition::Nec2023, Fuse).unwrap(),
            175.0
        );
        assert_eq!(
            standard_rating_at_or_above(7.0, Edition::Nec2020, CircuitBreaker).unwrap(),
            15.0
        );
        assert!(standard_rating_at_or_above(7000.0, Edition::Nec2023, Fuse).is_err());
    }

    #[test]
    fn lookups_fail_cleanly() {
        assert!(matches!(
            ampacity(s("14"), Material::Aluminum, TempRating::C75),
            Err(NecError::NotInTable { .. })
        ));
        assert!(ampacity(s("16"), Material::Copper, TempRating::C75).is_err());
        assert!(ampacity(
            ConductorSize::Kcmil(2500),
            Material::Copper,
            TempRating::C75
        )
        .is_err());
        assert!(temperature_correction(90.0, TempRating::C90).is_err());
        assert!(temperature_correction(60.0, TempRating::C60).is_err());
        assert!(temperature_correction(f64::NAN, TempRating::C60).is_err());
        assert!(adjustment_factor(0).is_err());
        assert!(egc_for_ocpd(6001.0, Material::Copper).is_err());
        assert!(egc_for_ocpd(-5.0, Material::Copper).is_err());
        assert!(ac_impedance(s("14"), Material::Aluminum, Conduit::Pvc).is_err());
        assert!(ac_impedance(ConductorSize::Kcmil(800), Material::Copper, Conduit::Pvc).is_err());
        assert!(motor_flc(4.0, true, 460, false).is_err());
        assert!(motor_flc(3.0, true, 115, false).is_err());
    }

    /// The vetted reference kept in the repository (`tests/fixtures/nec-tables`, sources in its
    /// README); `SPARKY_NEC_REFERENCE` points the comparison at another copy.
    fn reference_dir() -> std::path::PathBuf {
        std::env::var_os("SPARKY_NEC_REFERENCE")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::PathBuf::from(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../../tests/fixtures/nec-tables"
                ))
            })
    }

    fn same_cell(a: &str, b: &str) -> bool {
        let (a, b) = (a.trim(), b.trim());
        match (a.parse::<f64>(), b.parse::<f64>()) {
            (Ok(x), Ok(y)) => x == y,
            _ => a == b,
        }
    }

    /// Compares every cell of every shipped CSV that has a counterpart in the vetted reference
    /// folder, and then the typed values the lookups return for the main tables.
    /// The C values shipped are the cells at least two publishers print (see `data/SOURCES.md`
    /// and `nec::two_source_check`, which derives every cell from the per-source copies);
    /// where they disagree the highest is shipped and the lowest is reported with it.
    #[test]
    fn c_values_ship_only_cells_two_publishers_print() {
        use ConduitMagnetism::{Nonmagnetic, Steel};
        use Material::{Aluminum, Copper};
        assert_eq!(c_value(s("500"), Copper, Steel).unwrap(), 22_185.0);
        assert_eq!(c_value(s("3/0"), Copper, Steel).unwrap(), 12_844.0);
        assert_eq!(c_value(s("12"), Copper, Steel).unwrap(), 617.0);
        assert_eq!(c_value(s("12"), Copper, Nonmagnetic).unwrap(), 617.0);
        assert_eq!(
            c_value_cell(s("3/0"), Copper, Nonmagnetic).unwrap(),
            CValue {
                value: 13_923.0,
                lowest_published: Some(13_107.0)
            }
        );
        assert_eq!(
            c_value_cell(s("3/0"), Copper, Steel)
                .unwrap()
                .lowest_published,
            None
        );
        for (size, m, c) in [
            ("3", Copper, Steel),
            ("300", Copper, Nonmagnetic),
            ("14", Aluminum, Steel),
            ("4/0", Aluminum, Nonmagnetic),
            ("600", Copper, Steel),
        ] {
            let e = c_value(s(size), m, c).unwrap_err();
            assert!(
                matches!(e, NecError::NotVerified { .. }),
                "{size} {m} {c:?}: {e}"
            );
            assert!(e.to_string().contains("give c_value"), "{e}");
        }
        // The lookups agree with the vetted reference grid cell by cell.
        let dir = reference_dir();
        let reference =
            parse_csv(F_CVAL, &std::fs::read_to_string(dir.join(F_CVAL)).unwrap()).unwrap();
        let mut seen = 0;
        for r in rows(&reference) {
            let size = r.size_with_unit().unwrap();
            for (col, m, c) in [
                ("c_cu_steel_conduit", Copper, Steel),
                ("c_cu_nonmagnetic_conduit", Copper, Nonmagnetic),
                ("c_al_steel_conduit", Aluminum, Steel),
                ("c_al_nonmagnetic_conduit", Aluminum, Nonmagnetic),
            ] {
                assert_eq!(
                    c_value(size, m, c).ok(),
                    r.opt_f64(col).unwrap(),
                    "{size} {col}"
                );
                seen += 1;
            }
        }
        assert_eq!(seen, 68);
    }

    #[test]
    fn every_shipped_cell_matches_reference() {
        let dir = reference_dir();
        assert!(
            dir.is_dir(),
            "NEC reference folder {} is missing",
            dir.display()
        );
        let mut compared = 0usize;
        let mut own = Vec::new();
        for (name, text) in FILES {
            let path = dir.join(name);
            let Ok(reference) = std::fs::read_to_string(&path) else {
                own.push(*name);
                continue;
            };
            let ours = parse_csv(name, text).unwrap();
            let theirs = parse_csv(name, &reference).unwrap();
            assert_eq!(ours.header, theirs.header, "{name}: header differs");
            assert_eq!(
                ours.rows.len(),
                theirs.rows.len(),
                "{name}: row count differs"
            );
            for ((_, a), (line, b)) in ours.rows.iter().zip(&theirs.rows) {
                for (i, (x, y)) in a.iter().zip(b).enumerate() {
                    assert!(
                        same_cell(x, y),
                        "{name} line {line} column {}: shipped '{x}', reference '{y}'",
                        ours.header[i]
                    );
                    compared += 1;
                }
            }
        }
        // Only the non-NEC tables may lack a reference counterpart.
        assert_eq!(own, vec![F_FLCDC], "unexpected unreferenced files");

        // Typed check of the lookups against the reference grid.
        let amp = parse_csv(
            F310_16,
            &std::fs::read_to_string(dir.join(F310_16)).unwrap(),
        )
        .unwrap();
        for r in rows(&amp) {
            let size = r.size_with_unit().unwrap();
            let m = material(&r, "material").unwrap();
            for (col, t) in [
                ("ampacity_60C_A", TempRating::C60),
                ("ampacity_75C_A", TempRating::C75),
                ("ampacity_90C_A", TempRating::C90),
            ] {
                assert_eq!(
                    ampacity(size, m, t).ok(),
                    r.opt_f64(col).unwrap(),
                    "{size} {m} {t}"
                );
            }
        }
        let egc = parse_csv(F_EGC, &std::fs::read_to_string(dir.join(F_EGC)).unwrap()).unwrap();
        for r in rows(&egc) {
            let a = r.f64("ocpd_rating_not_exceeding_A").unwrap();
            assert_eq!(
                egc_for_ocpd(a, Material::Copper).unwrap(),
                r.size("egc_cu_size").unwrap()
            );
            assert_eq!(
                egc_for_ocpd(a, Material::Aluminum).unwrap(),
                r.size("egc_al_or_cca_size").unwrap()
            );
        }
        assert!(compared > 2000, "only {compared} cells compared");
        eprintln!("compared {compared} cells with {}", dir.display());
    }

    /// Table 430.250 lists synchronous (unity PF) motors from 25 hp: 25 hp at 230 V is 53 A.
    /// Below it the refusal says where the rows start and that an induction motor is the usual
    /// kind, so a caller that asked for the wrong type can correct it.
    #[test]
    fn a_synchronous_motor_below_the_table_says_where_it_starts() {
        assert_eq!(motor_flc(25.0, true, 230, true).unwrap(), 53.0);
        let e = motor_flc(10.0, true, 230, true).unwrap_err().to_string();
        assert!(e.contains("10 hp at 230 V (synchronous)"), "{e}");
        assert!(e.contains("run from 25 hp"), "{e}");
        assert!(e.contains("leave motor_type out"), "{e}");
        // 10 hp induction at 230 V: 28 A.
        assert_eq!(motor_flc(10.0, true, 230, false).unwrap(), 28.0);
        let e = motor_flc(250.0, true, 208, false).unwrap_err().to_string();
        assert!(!e.contains("synchronous"), "{e}");
    }
}
