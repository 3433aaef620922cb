//! Raceway fill (Chapter 9): the area of the conductors (Table 5 insulated, Table 8 bare, a
//! multiconductor cable as one conductor of its major diameter per Note 9) against the
//! percentage of the raceway's internal area (Table 4) that Table 1 allows: 53 % for one
//! conductor, 31 % for two, 40 % for more, 60 % for a nipple of 24 in. or less (Note 4).
//! Conductors all of the same size and insulation are counted per Note 7: a calculated number
//! whose decimal is 0.8 or more is rounded up (how Annex C is built).
//!
//! Editions: Table 1, its notes and the Table 4 and 5 cells shipped are the same in 2017, 2020
//! and 2023 (copies of 2008, 2014 and 2023 agree; see `data/SOURCES.md`).

use serde::Serialize;

use super::error::{positive, NecError};
use super::fill_tables::{self, Insulation, RacewayType, TradeSize};
use super::tables::Stranding;
use super::units::{ConductorSize, Edition};

/// What a conductor's area comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FillItemKind {
    /// An insulated conductor of Table 5.
    Insulated {
        /// Its size.
        size: ConductorSize,
        /// Its insulation row.
        insulation: Insulation,
    },
    /// A bare conductor (Table 8 overall area).
    Bare {
        /// Its size.
        size: ConductorSize,
        /// Solid or stranded.
        stranding: Stranding,
    },
    /// A multiconductor cable or flexible cord, one conductor of its major diameter (Note 9).
    Cable {
        /// Major (or only) outside diameter, inches.
        diameter_in: f64,
    },
    /// A conductor whose area is given (manufacturer data, compact conductors).
    GivenArea {
        /// Area in in².
        area_in2: f64,
    },
}

/// Identical conductors (or cables) in the raceway.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FillItem {
    /// How many.
    pub count: u32,
    /// What they are.
    pub kind: FillItemKind,
    /// "phase", "neutral", "EGC", a circuit name.
    pub description: String,
}

/// A raceway and its contents.
#[derive(Debug, Clone, PartialEq)]
pub struct RacewayFillInput {
    /// Edition (the Chapter 9 values do not change between the shipped editions).
    pub edition: Edition,
    /// Raceway type.
    pub raceway: RacewayType,
    /// Trade size to check; `None` finds the smallest only.
    pub trade_size: Option<TradeSize>,
    /// A nipple of 24 in. or less between boxes or enclosures (Note 4: 60 %).
    pub nipple: bool,
    /// The conductors, EGCs included.
    pub items: Vec<FillItem>,
}

/// One line of the area sum.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AreaLine {
    /// What.
    pub item: String,
    /// How many.
    pub count: u32,
    /// Area of one, in².
    pub each_in2: f64,
    /// count × each.
    pub area_in2: f64,
    /// Where the area comes from.
    pub reference: String,
}

/// The check of one trade size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeCheck {
    /// Trade size.
    pub trade_size: TradeSize,
    /// Table 4 total area (100 %), in².
    pub raceway_area_in2: f64,
    /// Table 1 percentage used.
    pub fill_percent_allowed: f64,
    /// That percentage of the area as Table 4 prints it (three decimals), in².
    pub allowed_area_in2: f64,
    /// Conductor area ÷ raceway area, %.
    pub percent_fill: f64,
    /// Whether the conductors fit.
    pub passes: bool,
    /// Decided by the Note 7 count (identical conductors) rather than the area alone.
    pub by_note_7: bool,
}

/// How many identical conductors fit in one trade size (Annex C style).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MaxCount {
    /// Trade size.
    pub trade_size: TradeSize,
    /// Most conductors, with Note 7 rounding.
    pub max_conductors: u32,
}

/// The raceway fill result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RacewayFillResult {
    /// Edition.
    pub edition: Edition,
    /// Raceway type.
    pub raceway: RacewayType,
    /// The conductors, line by line.
    pub lines: Vec<AreaLine>,
    /// Conductors counted (a cable counts as one).
    pub conductor_count: u32,
    /// Total conductor area, in².
    pub total_area_in2: f64,
    /// The trade size asked for.
    pub check: Option<SizeCheck>,
    /// The smallest shipped trade size that passes.
    pub smallest_trade_size: Option<SizeCheck>,
    /// Identical conductors only: the most that fit in each trade size.
    pub max_same_conductors: Vec<MaxCount>,
    /// Notes: rules applied and what the calculation cannot decide.
    pub notes: Vec<String>,
}

fn round_to(v: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (v * f).round() / f
}

/// Table 1 percentage for `n` conductors (Note 4 for nipples).
pub fn fill_percent(n: u32, nipple: bool) -> f64 {
    match (nipple, n) {
        (true, _) => 60.0,
        (false, 1) => 53.0,
        (false, 2) => 31.0,
        _ => 40.0,
    }
}

/// The allowed area as Table 4 prints its percentage columns: rounded to 0.001 in².
pub fn allowed_area(total_in2: f64, percent: f64) -> f64 {
    round_to(total_in2 * percent / 100.0 + 1e-12, 3)
}

/// Note 7: a calculated number of identical conductors rounds up when its decimal is 0.8 or
/// more, down otherwise.
pub fn note_7(calculated: f64) -> u32 {
    let whole = (calculated + 1e-9).floor();
    let n = if calculated - whole >= 0.8 - 1e-9 {
        whole + 1.0
    } else {
        whole
    };
    n.max(0.0) as u32
}

/// The most identical conductors of `each_in2` that fit in a raceway of `total_in2`: at 40 %
/// when three or more fit, else 31 % for two, else 53 % for one (60 % for any count in a
/// nipple), each with Note 7. Annex C divides the exact percentage of the Table 4 area, not
/// the rounded column (1-1/4 in. EMT: 0.5984 / 0.0507 = 11.80, 12 THHN 6 AWG), and so does
/// this.
pub fn max_identical(each_in2: f64, total_in2: f64, nipple: bool) -> u32 {
    let at = |pct: f64| note_7(total_in2 * pct / 100.0 / each_in2);
    if nipple {
        return at(60.0);
    }
    let three = at(40.0);
    if three >= 3 {
        return three;
    }
    if at(31.0) >= 2 {
        return 2;
    }
    u32::from(at(53.0) >= 1)
}

fn item_area(kind: &FillItemKind) -> Result<(f64, String, String), NecError> {
    Ok(match kind {
        FillItemKind::Insulated { size, insulation } => (
            fill_tables::insulated_area(*insulation, *size)?,
            format!("{size} {}", insulation.types()),
            "Chapter 9 Table 5".into(),
        ),
        FillItemKind::Bare { size, stranding } => (
            fill_tables::bare_area(*size, *stranding)?,
            format!("{size} bare ({stranding:?})").to_lowercase(),
            "Chapter 9 Table 8 (overall area)".into(),
        ),
        FillItemKind::Cable { diameter_in } => {
            let d = positive("cable diameter_in", *diameter_in)?;
            (
                round_to(std::f64::consts::PI / 4.0 * d * d, 4),
                format!("multiconductor cable, {d} in. major diameter"),
                "Chapter 9 Note 9: one conductor, a circle of the major diameter".into(),
            )
        }
        FillItemKind::GivenArea { area_in2 } => (
            positive("area_in2", *area_in2)?,
            format!("conductor of {area_in2} in²"),
            "area given (manufacturer data)".into(),
        ),
    })
}

fn check_size(
    trade: TradeSize,
    raceway_area: f64,
    n: u32,
    total: f64,
    nipple: bool,
    identical: Option<f64>,
) -> SizeCheck {
    let pct = fill_percent(n, nipple);
    let allowed = allowed_area(raceway_area, pct);
    let (passes, by_note_7) = match identical {
        Some(each) => {
            let max = max_identical(each, raceway_area, nipple);
            let by_area = total <= allowed + 1e-9;
            (n <= max, (n <= max) != by_area)
        }
        None => (total <= allowed + 1e-9, false),
    };
    SizeCheck {
        trade_size: trade,
        raceway_area_in2: raceway_area,
        fill_percent_allowed: pct,
        allowed_area_in2: allowed,
        percent_fill: round_to(total / raceway_area * 100.0, 2),
        passes,
        by_note_7,
    }
}

/// The raceway fill calculation of Chapter 9.
pub fn raceway_fill(input: &RacewayFillInput) -> Result<RacewayFillResult, NecError> {
    if input.items.is_empty() || input.items.iter().all(|i| i.count == 0) {
        return Err(NecError::MissingInput {
            field: "conductors",
            reason: "list the conductors (EGCs included) or cables in the raceway".into(),
        });
    }
    let mut lines = Vec::new();
    let mut areas = Vec::new();
    for it in input.items.iter().filter(|i| i.count > 0) {
        let (each, what, reference) = item_area(&it.kind)?;
        let item = if it.description.is_empty() {
            what
        } else {
            format!("{what} ({})", it.description)
        };
        lines.push(AreaLine {
            item,
            count: it.count,
            each_in2: each,
            area_in2: round_to(each * f64::from(it.count), 4),
            reference,
        });
        areas.push(each);
    }
    let n: u32 = lines.iter().map(|l| l.count).sum();
    let total = round_to(lines.iter().map(|l| l.area_in2).sum(), 4);
    let identical = areas
        .first()
        .copied()
        .filter(|a| areas.iter().all(|b| b == a));

    let sizes = fill_tables::raceway_sizes(input.raceway)?;
    let check = match input.trade_size {
        Some(t) => Some(check_size(
            t,
            fill_tables::raceway_area(input.raceway, t)?,
            n,
            total,
            input.nipple,
            identical,
        )),
        None => None,
    };
    let smallest_trade_size = sizes
        .iter()
        .map(|(t, a)| check_size(*t, *a, n, total, input.nipple, identical))
        .find(|c| c.passes);
    let max_same_conductors = match identical {
        Some(each) => sizes
            .iter()
            .map(|(t, a)| MaxCount {
                trade_size: *t,
                max_conductors: max_identical(each, *a, input.nipple),
            })
            .collect(),
        None => Vec::new(),
    };

    let mut notes = vec![format!(
        "Chapter 9 Table 1: {} % of the {} area for {n} conductor{} ({}).",
        fill_percent(n, input.nipple),
        input.raceway.code(),
        if n == 1 { "" } else { "s" },
        if input.nipple {
            "Note 4: a nipple of 24 in. or less may be filled to 60 %, and the 310.15(C)(1) adjustment factors do not apply to it"
        } else {
            "equipment grounding conductors count; a cable counts as one conductor (Note 9)"
        }
    )];
    if identical.is_some() {
        notes.push(
            "All conductors are alike: the count follows Note 7 (a calculated number with a \
             decimal of 0.8 or more rounds up), as Annex C does."
                .into(),
        );
    }
    if smallest_trade_size.is_none() {
        notes.push(format!(
            "No shipped {} trade size holds these conductors: use parallel raceways or another \
             raceway type.",
            input.raceway.code()
        ));
    }
    notes.push(
        "Fill alone: jamming of three conductors of about a third of the raceway's inside \
         diameter, bending radius, pulling tension, ampacity adjustment for more than three \
         current-carrying conductors (310.15(C)(1)) and the raceway article's own limits (e.g. \
         the number of bends) are not checked. Compact aluminum conductors (Table 5A) are not \
         shipped: give their area."
            .into(),
    );

    Ok(RacewayFillResult {
        edition: input.edition,
        raceway: input.raceway,
        lines,
        conductor_count: n,
        total_area_in2: total,
        check,
        smallest_trade_size,
        max_same_conductors,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: &str) -> ConductorSize {
        t.parse().unwrap()
    }

    fn thhn(count: u32, size: &str) -> FillItem {
        FillItem {
            count,
            kind: FillItemKind::Insulated {
                size: s(size),
                insulation: Insulation::Thhn,
            },
            description: String::new(),
        }
    }

    fn run(
        raceway: RacewayType,
        trade: Option<&str>,
        nipple: bool,
        items: Vec<FillItem>,
    ) -> RacewayFillResult {
        raceway_fill(&RacewayFillInput {
            edition: Edition::Nec2023,
            raceway,
            trade_size: trade.map(|t| t.parse().unwrap()),
            nipple,
            items,
        })
        .unwrap()
    }

    #[test]
    fn table_1_percentages_and_note_7() {
        assert_eq!(fill_percent(1, false), 53.0);
        assert_eq!(fill_percent(2, false), 31.0);
        assert_eq!(fill_percent(3, false), 40.0);
        assert_eq!(fill_percent(2, true), 60.0);
        assert_eq!(note_7(21.96), 22);
        assert_eq!(note_7(12.58), 12);
        assert_eq!(note_7(0.79), 0);
        // The printed Table 4 columns: 40 % of 0.304 is 0.1216, printed 0.122.
        assert_eq!(allowed_area(0.304, 40.0), 0.122);
        assert_eq!(allowed_area(2.071, 60.0), 1.243);
    }

    /// Annex C Table C.1 (EMT), THHN/THWN/THWN-2 rows 14 AWG-1/0 AWG, trade sizes 1/2-4, as
    /// published by Bracken Electric's reference page; voltagelab.com's copy of the 1/2-2 in.
    /// columns for 14-1 AWG prints the same numbers. Every cell is what Tables 1, 4, 5 and
    /// Note 7 compute.
    #[test]
    fn annex_c_table_c1_thhn_is_computed() {
        let trade = [
            "1/2", "3/4", "1", "1-1/4", "1-1/2", "2", "2-1/2", "3", "3-1/2", "4",
        ];
        let rows: [(&str, [u32; 10]); 10] = [
            ("14", [12, 22, 35, 61, 84, 138, 241, 364, 476, 608]),
            ("12", [9, 16, 26, 45, 61, 101, 176, 266, 347, 443]),
            ("10", [5, 10, 16, 28, 38, 63, 111, 167, 219, 279]),
            ("8", [3, 6, 9, 16, 22, 36, 64, 96, 126, 161]),
            ("6", [2, 4, 7, 12, 16, 26, 46, 69, 91, 116]),
            ("4", [1, 2, 4, 7, 10, 16, 28, 43, 56, 71]),
            ("3", [1, 1, 3, 6, 8, 13, 24, 36, 47, 60]),
            ("2", [1, 1, 3, 5, 7, 11, 20, 30, 40, 51]),
            ("1", [1, 1, 1, 4, 5, 8, 15, 22, 29, 37]),
            ("1/0", [1, 1, 1, 3, 4, 7, 12, 19, 25, 32]),
        ];
        for (size, counts) in rows {
            let each = fill_tables::insulated_area(Insulation::Thhn, s(size)).unwrap();
            for (t, want) in trade.iter().zip(counts) {
                let area = fill_tables::raceway_area(RacewayType::Emt, t.parse().unwrap()).unwrap();
                assert_eq!(
                    max_identical(each, area, false),
                    want,
                    "{size} THHN in {t} EMT"
                );
            }
        }
    }

    /// Mike Holt forum "Nipple fill 60%": 12 AWG THHN in 3 in. EMT, Annex C Table C.1 gives
    /// 266 at 40 %; a nipple at 60 % takes 399.
    #[test]
    fn annex_c_counts_and_nipples() {
        let r = run(RacewayType::Emt, Some("3"), false, vec![thhn(266, "12")]);
        assert!(r.check.as_ref().unwrap().passes);
        let max = |r: &RacewayFillResult, t: &str| {
            r.max_same_conductors
                .iter()
                .find(|m| m.trade_size.as_str() == t)
                .unwrap()
                .max_conductors
        };
        assert_eq!(max(&r, "3"), 266);
        // Annex C Table C.1, 14 AWG THHN in 3/4 EMT: 21.96 rounds up to 22 by Note 7.
        let r = run(RacewayType::Emt, Some("3/4"), false, vec![thhn(22, "14")]);
        let c = r.check.unwrap();
        assert!(c.passes && c.by_note_7, "{c:?}");
        assert_eq!(
            max(
                &run(RacewayType::Emt, None, false, vec![thhn(1, "14")]),
                "1/2"
            ),
            12
        );
        let r = run(RacewayType::Emt, Some("3"), true, vec![thhn(400, "12")]);
        assert_eq!(max(&r, "3"), 399);
        assert!(!r.check.unwrap().passes);
    }

    /// Trade size 3/8 FMC and LFMC (Table 4: 0.116 and 0.192 in², two publishers each):
    /// 40 % is 0.046 and 0.077 in²; 14 AWG THHN is 0.0097 in².
    #[test]
    fn three_eighths_flexible_conduit() {
        let max = |r: &RacewayFillResult| {
            r.max_same_conductors
                .iter()
                .find(|m| m.trade_size.as_str() == "3/8")
                .expect("3/8 is answered")
                .max_conductors
        };
        // FMC: 0.0464 / 0.0097 = 4.78, below Note 7's 0.8, so four.
        let r = run(RacewayType::Fmc, Some("3/8"), false, vec![thhn(4, "14")]);
        assert_eq!(max(&r), 4);
        assert!(r.check.unwrap().passes);
        let r = run(RacewayType::Fmc, Some("3/8"), false, vec![thhn(5, "14")]);
        assert!(!r.check.unwrap().passes);
        // LFMC: 0.0768 / 0.0097 = 7.92, rounded up to eight by Note 7.
        let r = run(RacewayType::Lfmc, Some("3/8"), false, vec![thhn(8, "14")]);
        assert_eq!(max(&r), 8);
        let c = r.check.unwrap();
        assert!(c.passes && c.by_note_7, "{c:?}");
    }
}
