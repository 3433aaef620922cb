//! The tables box fill and raceway fill read: Table 314.16(A) (metal box volumes), Table
//! 314.16(B) (volume allowance per conductor), Chapter 9 Table 4 (internal area of raceways)
//! and Table 5 (approximate area of insulated conductors); bare conductors use the overall
//! area of Chapter 9 Table 8, already shipped with the other tables.
//!
//! Every shipped cell is the value that more independent publishers print than any other,
//! and at least two (see `data/SOURCES.md`, "Fill tables"); the test `fill_sources_check`
//! derives the shipped files from the per-source copies on every run. A cell the sources do
//! not confirm is absent, and its lookup answers [`NecError::NotVerified`].

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::error::NecError;
use super::tables::{self, parse_csv, Csv, Stranding};
use super::units::{ConductorSize, UnitParseError};

const F_BOXES: &str = "table_314_16A_metal_boxes.csv";
const F_ALLOWANCE: &str = "table_314_16B_volume_allowance.csv";
const F_T4: &str = "ch9_table4_raceway_areas.csv";
const F_T5: &str = "ch9_table5_insulated_conductor_areas.csv";
const F_T8: &str = "ch9_table8_conductor_properties.csv";

/// The embedded fill tables: (file name, contents).
pub(crate) const FILES: &[(&str, &str)] = &[
    (
        F_BOXES,
        include_str!("../data/table_314_16A_metal_boxes.csv"),
    ),
    (
        F_ALLOWANCE,
        include_str!("../data/table_314_16B_volume_allowance.csv"),
    ),
    (F_T4, include_str!("../data/ch9_table4_raceway_areas.csv")),
    (
        F_T5,
        include_str!("../data/ch9_table5_insulated_conductor_areas.csv"),
    ),
];

/// A raceway type of Chapter 9 Table 4 that Sparky ships.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RacewayType {
    /// Electrical metallic tubing (Article 358).
    #[serde(alias = "EMT")]
    Emt,
    /// Rigid metal conduit (Article 344).
    #[serde(alias = "RMC", alias = "grc", alias = "GRC", alias = "rigid")]
    Rmc,
    /// Intermediate metal conduit (Article 342).
    #[serde(alias = "IMC")]
    Imc,
    /// Rigid PVC conduit, Schedule 40 (Article 352).
    #[serde(
        alias = "pvc",
        alias = "PVC",
        alias = "pvc40",
        alias = "PVC40",
        alias = "pvc_schedule_40",
        alias = "sch40"
    )]
    Pvc40,
    /// Rigid PVC conduit, Schedule 80 (Article 352).
    #[serde(
        alias = "pvc80",
        alias = "PVC80",
        alias = "pvc_schedule_80",
        alias = "sch80"
    )]
    Pvc80,
    /// Flexible metal conduit (Article 348).
    #[serde(alias = "FMC", alias = "flex")]
    Fmc,
    /// Liquidtight flexible metal conduit (Article 350).
    #[serde(alias = "LFMC", alias = "sealtite")]
    Lfmc,
}

impl RacewayType {
    /// Every shipped raceway type, in the order of the data file.
    pub const ALL: [RacewayType; 7] = [
        Self::Emt,
        Self::Rmc,
        Self::Imc,
        Self::Pvc40,
        Self::Pvc80,
        Self::Fmc,
        Self::Lfmc,
    ];

    /// The code the data file uses.
    pub fn code(self) -> &'static str {
        match self {
            Self::Emt => "EMT",
            Self::Rmc => "RMC",
            Self::Imc => "IMC",
            Self::Pvc40 => "PVC40",
            Self::Pvc80 => "PVC80",
            Self::Fmc => "FMC",
            Self::Lfmc => "LFMC",
        }
    }

    /// Its name as Table 4 heads it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Emt => "electrical metallic tubing (EMT, Article 358)",
            Self::Rmc => "rigid metal conduit (RMC, Article 344)",
            Self::Imc => "intermediate metal conduit (IMC, Article 342)",
            Self::Pvc40 => "rigid PVC conduit Schedule 40 (Article 352)",
            Self::Pvc80 => "rigid PVC conduit Schedule 80 (Article 352)",
            Self::Fmc => "flexible metal conduit (FMC, Article 348)",
            Self::Lfmc => "liquidtight flexible metal conduit (LFMC, Article 350)",
        }
    }

    fn from_code(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.code() == code)
    }
}

/// Trade sizes of Table 4, smallest first.
const TRADE_SIZES: [&str; 13] = [
    "3/8", "1/2", "3/4", "1", "1-1/4", "1-1/2", "2", "2-1/2", "3", "3-1/2", "4", "5", "6",
];

/// A raceway trade size ("1/2", "1-1/4", "3"): one of the designators of Table 4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TradeSize(u8);

impl TradeSize {
    /// The designator as Table 4 prints it.
    pub fn as_str(self) -> &'static str {
        TRADE_SIZES[usize::from(self.0)]
    }
}

impl FromStr for TradeSize {
    type Err = UnitParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s
            .trim()
            .trim_end_matches(['"', '\''])
            .trim_end_matches("in.")
            .trim_end_matches("in")
            .trim()
            .replace(' ', "-");
        let decimal = match t.as_str() {
            "0.375" | ".375" => "3/8",
            "0.5" | ".5" => "1/2",
            "0.75" | ".75" => "3/4",
            "1.25" => "1-1/4",
            "1.5" => "1-1/2",
            "2.5" => "2-1/2",
            "3.5" => "3-1/2",
            other => other,
        };
        TRADE_SIZES
            .iter()
            .position(|d| *d == decimal)
            .map(|i| Self(i as u8))
            .ok_or_else(|| {
                UnitParseError(format!(
                    "unknown trade size '{s}' (one of {})",
                    TRADE_SIZES.join(", ")
                ))
            })
    }
}

impl fmt::Display for TradeSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for TradeSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TradeSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let s = match &v {
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::String(s) => s.clone(),
            _ => {
                return Err(serde::de::Error::custom(
                    "trade size must be a string like \"3/4\" or \"1-1/4\"",
                ))
            }
        };
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Insulation types of Chapter 9 Table 5, grouped as the table groups them (types printed on
/// one row share the area).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Insulation {
    /// THHN, THWN, THWN-2.
    Thhn,
    /// XHH, XHHW, XHHW-2.
    Xhhw,
    /// TW, THW, THHW, THW-2.
    Tw,
    /// RHH, RHW, RHW-2 with an outer covering.
    Rhw,
    /// RHH, RHW, RHW-2 without an outer covering.
    RhwNoCover,
}

impl Insulation {
    const ALL: [Insulation; 5] = [
        Self::Thhn,
        Self::Xhhw,
        Self::Tw,
        Self::Rhw,
        Self::RhwNoCover,
    ];

    /// The code the data file uses.
    pub fn code(self) -> &'static str {
        match self {
            Self::Thhn => "THHN",
            Self::Xhhw => "XHHW",
            Self::Tw => "TW",
            Self::Rhw => "RHW",
            Self::RhwNoCover => "RHW_NO_COVER",
        }
    }

    /// The types of the Table 5 row.
    pub fn types(self) -> &'static str {
        match self {
            Self::Thhn => "THHN/THWN/THWN-2",
            Self::Xhhw => "XHH/XHHW/XHHW-2",
            Self::Tw => "TW/THW/THHW/THW-2",
            Self::Rhw => "RHH/RHW/RHW-2 with outer covering",
            Self::RhwNoCover => "RHH/RHW/RHW-2 without outer covering",
        }
    }

    fn from_code(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|i| i.code() == code)
    }
}

impl FromStr for Insulation {
    type Err = UnitParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_uppercase().replace(['_', ' '], "-");
        Ok(match t.as_str() {
            "THHN" | "THWN" | "THWN-2" | "THHN/THWN" | "THHN/THWN-2" | "THHN-THWN-2" => Self::Thhn,
            "XHH" | "XHHW" | "XHHW-2" => Self::Xhhw,
            "TW" | "THW" | "THHW" | "THW-2" => Self::Tw,
            "RHH" | "RHW" | "RHW-2" => Self::Rhw,
            "RHH-NO-COVER"
            | "RHW-NO-COVER"
            | "RHW-2-NO-COVER"
            | "RHH-WITHOUT-OUTER-COVERING"
            | "RHW-WITHOUT-OUTER-COVERING" => Self::RhwNoCover,
            _ => {
                return Err(UnitParseError(format!(
                    "insulation '{s}' has no shipped Chapter 9 Table 5 row (THHN, THWN, THWN-2, \
                     XHH, XHHW, XHHW-2, TW, THW, THHW, THW-2, RHH, RHW, RHW-2, rhw_no_cover; \
                     or bare)"
                )))
            }
        })
    }
}

impl<'de> Deserialize<'de> for Insulation {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// A standard metal box of Table 314.16(A).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetalBox {
    /// Its key, e.g. `square_4x2-1/8` (shape, then trade size in inches).
    pub key: String,
    /// Volume in cubic inches.
    pub volume_in3: f64,
}

impl MetalBox {
    /// "4 x 2-1/8 square", "3 x 2 x 3-1/2 device", "FS single cover/gang (1-3/4 in. deep)".
    pub fn label(&self) -> String {
        let (shape, size) = self.key.split_once('_').unwrap_or((&self.key, ""));
        let size = size.replace('x', " x ");
        match shape {
            "round" => format!("{} round/octagonal", size.trim_start_matches("octagonal_")),
            "fs" | "fd" => {
                let (kind, depth) = size.split_once('_').unwrap_or((&size, ""));
                format!(
                    "{} {kind} cover/gang ({depth} in. deep)",
                    shape.to_ascii_uppercase()
                )
            }
            other => format!("{size} {other}"),
        }
    }
}

/// The parsed fill tables.
#[derive(Debug)]
pub struct FillTables {
    /// Table 314.16(B): (size, cubic inches per conductor).
    pub allowance: Vec<(ConductorSize, f64)>,
    /// Table 314.16(A), in the order of the table.
    pub boxes: Vec<MetalBox>,
    /// Table 4: (raceway, trade size, total area 100 % in²), each raceway smallest first.
    pub raceways: Vec<(RacewayType, TradeSize, f64)>,
    /// Table 5: (insulation, size, approximate area in²).
    pub insulated: Vec<(Insulation, ConductorSize, f64)>,
    /// Table 8 overall area of bare conductors: (size, stranding, in²).
    pub bare: Vec<(ConductorSize, Stranding, f64)>,
}

/// The fill tables, parsed once.
pub fn fill_tables() -> Result<&'static FillTables, NecError> {
    static CELL: OnceLock<Result<FillTables, NecError>> = OnceLock::new();
    CELL.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn csv(files: &[(&'static str, &'static str)], name: &'static str) -> Result<Csv, NecError> {
    let text = files
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

/// The cells of one row by column name, with file and line for errors.
struct Cells<'a> {
    csv: &'a Csv,
    line: usize,
    cells: &'a [String],
}

impl<'a> Cells<'a> {
    fn err(&self, message: String) -> NecError {
        NecError::Data {
            file: self.csv.file,
            line: self.line,
            message,
        }
    }
    fn text(&self, col: &str) -> Result<&'a str, NecError> {
        let i = self
            .csv
            .header
            .iter()
            .position(|h| h == col)
            .ok_or_else(|| self.err(format!("no column {col}")))?;
        Ok(self.cells[i].trim())
    }
    fn f64(&self, col: &str) -> Result<f64, NecError> {
        let t = self.text(col)?;
        t.parse()
            .map_err(|_| self.err(format!("column {col}: '{t}' is not a number")))
    }
    fn size(&self) -> Result<ConductorSize, NecError> {
        format!("{} {}", self.text("size")?, self.text("size_unit")?)
            .parse()
            .map_err(|e: UnitParseError| self.err(e.0))
    }
}

fn each<'a>(csv: &'a Csv) -> impl Iterator<Item = Cells<'a>> + 'a {
    csv.rows.iter().map(move |(line, cells)| Cells {
        csv,
        line: *line,
        cells,
    })
}

fn load() -> Result<FillTables, NecError> {
    let allowance = each(&csv(FILES, F_ALLOWANCE)?)
        .map(|r| Ok((r.size()?, r.f64("volume_in3")?)))
        .collect::<Result<_, NecError>>()?;
    let boxes = each(&csv(FILES, F_BOXES)?)
        .map(|r| {
            Ok(MetalBox {
                key: r.text("box")?.to_string(),
                volume_in3: r.f64("volume_in3")?,
            })
        })
        .collect::<Result<_, NecError>>()?;
    let raceways = each(&csv(FILES, F_T4)?)
        .map(|r| {
            let code = r.text("raceway")?;
            let kind = RacewayType::from_code(code)
                .ok_or_else(|| r.err(format!("unknown raceway {code}")))?;
            let trade: TradeSize = r
                .text("trade_size")?
                .parse()
                .map_err(|e: UnitParseError| r.err(e.0))?;
            Ok((kind, trade, r.f64("total_area_in2")?))
        })
        .collect::<Result<_, NecError>>()?;
    let insulated = each(&csv(FILES, F_T5)?)
        .map(|r| {
            let code = r.text("insulation")?;
            let ins = Insulation::from_code(code)
                .ok_or_else(|| r.err(format!("unknown insulation {code}")))?;
            Ok((ins, r.size()?, r.f64("area_in2")?))
        })
        .collect::<Result<_, NecError>>()?;
    let bare = each(&csv(tables::FILES, F_T8)?)
        .map(|r| {
            let stranding = match r.text("stranding")? {
                "solid" => Stranding::Solid,
                "stranded" => Stranding::Stranded,
                t => return Err(r.err(format!("unknown stranding {t}"))),
            };
            Ok((r.size()?, stranding, r.f64("overall_area_in2")?))
        })
        .collect::<Result<_, NecError>>()?;
    Ok(FillTables {
        allowance,
        boxes,
        raceways,
        insulated,
        bare,
    })
}

const T_314_16_B: &str = "NEC Table 314.16(B)";
const T_314_16_A: &str = "NEC Table 314.16(A)";
const T4: &str = "NEC Chapter 9 Table 4";
const T5: &str = "NEC Chapter 9 Table 5";

/// Table 314.16(B): the box volume one conductor of `size` takes (18 through 6 AWG).
pub fn volume_allowance(size: ConductorSize) -> Result<f64, NecError> {
    fill_tables()?
        .allowance
        .iter()
        .find(|(s, _)| *s == size)
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            NecError::not_in_table(
                T_314_16_B,
                format!(
                    "{size} (the table covers 18 through 6 AWG; boxes with 4 AWG and larger \
                     conductors are sized by 314.28)"
                ),
            )
        })
}

/// Table 314.16(A): a standard metal box by its key (`square_4x2-1/8`).
pub fn metal_box(key: &str) -> Result<&'static MetalBox, NecError> {
    let t = fill_tables()?;
    let wanted = normalize_box_key(key);
    t.boxes
        .iter()
        .find(|b| b.key == wanted)
        .ok_or_else(|| NecError::NotVerified {
            table: T_314_16_A,
            key: format!(
                "box '{key}' (shipped: {})",
                t.boxes
                    .iter()
                    .map(|b| b.key.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            hint: "give the box volume in cubic inches as marked on the box (314.16(A)(2))",
        })
}

/// Accepts common spellings of a box key: spaces, "×", "octagon" and "4s" style are not
/// guessed; only case, spaces around "x" and the "round"/"octagonal" words are normalised.
fn normalize_box_key(key: &str) -> String {
    let k = key.trim().to_ascii_lowercase().replace(['×', ' '], "");
    let k = k.replace("in.", "").replace('"', "");
    if k.starts_with("round_octagonal_") {
        return k;
    }
    for prefix in ["round/octagonal_", "round_", "octagonal_", "octagon_"] {
        if let Some(rest) = k.strip_prefix(prefix) {
            return format!("round_octagonal_{rest}");
        }
    }
    k
}

/// Table 4: total internal area (100 %) of a raceway, in².
pub fn raceway_area(kind: RacewayType, trade: TradeSize) -> Result<f64, NecError> {
    fill_tables()?
        .raceways
        .iter()
        .find(|(k, t, _)| *k == kind && *t == trade)
        .map(|(_, _, a)| *a)
        .ok_or_else(|| NecError::NotVerified {
            table: T4,
            key: format!("{} trade size {trade}", kind.code()),
            hint: "this trade size is not in the table or not confirmed by two sources; give \
                   the raceway's internal area",
        })
}

/// Table 4: the shipped trade sizes of a raceway type with their total areas, smallest first.
pub fn raceway_sizes(kind: RacewayType) -> Result<Vec<(TradeSize, f64)>, NecError> {
    let mut v: Vec<(TradeSize, f64)> = fill_tables()?
        .raceways
        .iter()
        .filter(|(k, _, _)| *k == kind)
        .map(|(_, t, a)| (*t, *a))
        .collect();
    v.sort_by_key(|(t, _)| *t);
    Ok(v)
}

/// Table 5: approximate area of an insulated conductor, in².
pub fn insulated_area(ins: Insulation, size: ConductorSize) -> Result<f64, NecError> {
    fill_tables()?
        .insulated
        .iter()
        .find(|(i, s, _)| *i == ins && *s == size)
        .map(|(_, _, a)| *a)
        .ok_or_else(|| NecError::NotVerified {
            table: T5,
            key: format!("{} {size}", ins.types()),
            hint: "give the conductor's area (manufacturer data) as area_in2",
        })
}

/// Table 8: overall area of a bare conductor, in².
pub fn bare_area(size: ConductorSize, stranding: Stranding) -> Result<f64, NecError> {
    fill_tables()?
        .bare
        .iter()
        .find(|(s, st, _)| *s == size && *st == stranding)
        .map(|(_, _, a)| *a)
        .ok_or_else(|| {
            NecError::not_in_table(
                "NEC Chapter 9 Table 8",
                format!("{size} {stranding:?}").to_lowercase(),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: &str) -> ConductorSize {
        t.parse().unwrap()
    }

    #[test]
    fn lookups_answer_the_shipped_cells() {
        assert_eq!(volume_allowance(s("12")).unwrap(), 2.25);
        assert_eq!(volume_allowance(s("6")).unwrap(), 5.0);
        assert!(volume_allowance(s("4")).is_err());
        assert_eq!(metal_box("square_4x2-1/8").unwrap().volume_in3, 30.3);
        assert_eq!(metal_box("Round_4x1-1/2").unwrap().volume_in3, 15.5);
        assert_eq!(
            metal_box("device_3x2x3-1/2").unwrap().label(),
            "3 x 2 x 3-1/2 device"
        );
        assert_eq!(
            metal_box("fs_single_1-3/4").unwrap().label(),
            "FS single cover/gang (1-3/4 in. deep)"
        );
        assert!(matches!(
            metal_box("6x6x4"),
            Err(NecError::NotVerified { .. })
        ));
        let emt = |t: &str| raceway_area(RacewayType::Emt, t.parse().unwrap());
        assert_eq!(emt("3/4").unwrap(), 0.533);
        assert_eq!(emt("1.25").unwrap(), 1.496);
        assert!(matches!(emt("5"), Err(NecError::NotVerified { .. })));
        assert_eq!(
            insulated_area("THWN-2".parse().unwrap(), s("12")).unwrap(),
            0.0133
        );
        assert!(matches!(
            insulated_area(Insulation::Xhhw, s("1500")),
            Err(NecError::NotVerified { .. })
        ));
        assert_eq!(bare_area(s("8"), Stranding::Stranded).unwrap(), 0.017);
        assert!("USE-2".parse::<Insulation>().is_err());
        assert!("7/8".parse::<TradeSize>().is_err());
        // FMC starts at trade size 3/8 (two publishers print 0.116 in²); EMT stops at 4.
        let sizes = raceway_sizes(RacewayType::Fmc).unwrap();
        assert_eq!(sizes.first().unwrap().0.as_str(), "3/8");
        assert_eq!(sizes.first().unwrap().1, 0.116);
        let emt = raceway_sizes(RacewayType::Emt).unwrap();
        assert_eq!(emt.last().unwrap().0.as_str(), "4");
    }
}
