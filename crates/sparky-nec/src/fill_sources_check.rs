//! The fill tables (Tables 314.16(A), 314.16(B), Chapter 9 Tables 4 and 5) ship a cell when
//! more independent publishers print its value than print any other value, and at least two
//! do. The per-source copies live in `tests/fixtures/nec-tables/fill_tables_sources.csv`
//! (publishers in `reference_sources.csv`); these tests derive the shipped cells from them and
//! compare them with what the engine answers, both ways. The maximum conductor counts of Table
//! 314.16(A) are not shipped: they are computed (volume ÷ allowance, rounded down), and every
//! count a source prints is checked against that arithmetic.

use std::collections::{BTreeMap, BTreeSet};

use super::fill_tables::{self, fill_tables, Insulation, RacewayType, TradeSize};
use super::two_source_check::{fixture, publishers, records};
use super::units::ConductorSize;

/// (table, row, column) → the values printed, each with the set of publishers printing it.
type Copies = BTreeMap<(String, String, String), Vec<(f64, BTreeSet<String>)>>;

fn copies() -> Copies {
    let publishers = publishers();
    let mut out: Copies = BTreeMap::new();
    for r in records(&fixture("fill_tables_sources.csv")) {
        let publisher = publishers
            .get(&r["source"])
            .unwrap_or_else(|| panic!("source {} is not in reference_sources.csv", r["source"]))
            .clone();
        let v: f64 = r["value"].parse().expect("value");
        let cell = out
            .entry((r["table"].clone(), r["row"].clone(), r["column"].clone()))
            .or_default();
        match cell.iter_mut().find(|(x, _)| *x == v) {
            Some((_, p)) => {
                p.insert(publisher);
            }
            None => cell.push((v, BTreeSet::from([publisher]))),
        }
    }
    out
}

/// The value more publishers print than any other, when at least two print it.
fn confirmed(values: &[(f64, BTreeSet<String>)]) -> Option<f64> {
    let mut by: Vec<(usize, f64)> = values.iter().map(|(v, p)| (p.len(), *v)).collect();
    by.sort_by_key(|b| std::cmp::Reverse(b.0));
    let (best, v) = *by.first()?;
    (best >= 2 && by.get(1).is_none_or(|(n, _)| *n < best)).then_some(v)
}

/// Every cell of the four tables the sources cover answers what they confirm, and every
/// shipped cell is confirmed.
#[test]
fn shipped_fill_cells_are_the_ones_publishers_confirm() {
    let copies = copies();
    let t = fill_tables().expect("fill tables");
    let mut shipped = 0;
    let mut refused = Vec::new();
    for ((table, row, column), values) in &copies {
        if column.starts_with("max_") {
            continue;
        }
        let want = confirmed(values);
        let got = match table.as_str() {
            "314.16(B)" => fill_tables::volume_allowance(row.parse().expect("size")).ok(),
            "314.16(A)" => fill_tables::metal_box(row).ok().map(|b| b.volume_in3),
            "ch9_table4" => {
                let (kind, trade) = row.split_once(' ').expect("raceway row");
                let kind = RacewayType::ALL
                    .into_iter()
                    .find(|k| k.code() == kind)
                    .unwrap_or_else(|| panic!("raceway {kind}"));
                let trade: TradeSize = trade.parse().expect("trade size");
                fill_tables::raceway_area(kind, trade).ok()
            }
            "ch9_table5" => {
                let (ins, size) = row.split_once(' ').expect("conductor row");
                let ins = match ins {
                    "RHW_NO_COVER" => Insulation::RhwNoCover,
                    other => other.parse().expect("insulation"),
                };
                let size: ConductorSize = size.parse().expect("size");
                fill_tables::insulated_area(ins, size).ok()
            }
            other => panic!("unknown table {other}"),
        };
        assert_eq!(got, want, "{table} {row} {column}: sources {values:?}");
        match got {
            Some(_) => shipped += 1,
            None => refused.push(format!("{table} {row}")),
        }
    }
    let total = t.allowance.len() + t.boxes.len() + t.raceways.len() + t.insulated.len();
    assert_eq!(shipped, total, "a shipped cell has no source copy");
    assert_eq!(
        (
            t.allowance.len(),
            t.boxes.len(),
            t.raceways.len(),
            t.insulated.len()
        ),
        (7, 24, 78, 131),
        "shipped fill cells changed: update data/SOURCES.md"
    );
    assert_eq!(refused.len(), 7, "{refused:?}");
}

/// The maximum conductor counts a source prints for a Table 314.16(A) box are the box volume
/// divided by the Table 314.16(B) allowance, rounded down, which is what the engine answers.
#[test]
fn printed_box_counts_are_volume_over_allowance() {
    let mut checked = 0;
    for ((table, row, column), values) in copies() {
        let Some(size) = column.strip_prefix("max_") else {
            continue;
        };
        assert_eq!(table, "314.16(A)");
        let volume = fill_tables::metal_box(&row).expect("box").volume_in3;
        let each = fill_tables::volume_allowance(size.parse().expect("size")).expect("allowance");
        let computed = (volume / each + 1e-9).floor();
        for (printed, publishers) in values {
            assert_eq!(printed, computed, "{row} {size} AWG ({publishers:?})");
            checked += 1;
        }
    }
    assert_eq!(checked, 15);
}
