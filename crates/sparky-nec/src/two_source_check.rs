//! The tables first typed from working knowledge ship a cell only when two sources from
//! different publishers print it: NFPA 70E Table 130.7(C)(15)(a) only when they agree and no
//! source gives another value; point-to-point C values with the highest value printed (the
//! higher fault current) and the lowest reported where the copies disagree. The per-source reference copies live in
//! `tests/fixtures/nec-tables/` (`*_sources.csv`, publishers in `reference_sources.csv`); these
//! tests derive the confirmed cells from them and compare with what the engine answers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::arc_flash::AcEquipment;
use super::tables::{self, parse_csv, ConduitMagnetism, Csv};
use super::units::{ConductorSize, Material};
use super::NecError;

pub(super) fn fixture(name: &'static str) -> Csv {
    let dir = std::env::var_os("SPARKY_NEC_REFERENCE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../tests/fixtures/nec-tables"
            ))
        });
    let text = std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    parse_csv(name, &text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Rows of a fixture as column → cell maps.
pub(super) fn records(csv: &Csv) -> Vec<BTreeMap<String, String>> {
    csv.rows
        .iter()
        .map(|(_, cells)| {
            csv.header
                .iter()
                .cloned()
                .zip(cells.iter().map(|c| c.trim().to_string()))
                .collect()
        })
        .collect()
}

/// Source tag → publisher, from `reference_sources.csv`.
pub(super) fn publishers() -> BTreeMap<String, String> {
    records(&fixture("reference_sources.csv"))
        .into_iter()
        .map(|r| (r["source"].clone(), r["publisher"].clone()))
        .collect()
}

/// The value two publishers agree on when no source disagrees; `None` otherwise.
/// `same` decides agreement (exact for counts, rounding of the table's own unit pairs for
/// lengths).
fn confirmed<T: Copy>(
    given: &[(String, T)],
    publishers: &BTreeMap<String, String>,
    same: impl Fn(T, T) -> bool,
) -> Option<T> {
    let (_, first) = given.first()?;
    if given.iter().any(|(_, v)| !same(*v, *first)) {
        return None;
    }
    let distinct: BTreeSet<&String> = given
        .iter()
        .map(|(s, _)| {
            publishers
                .get(s)
                .unwrap_or_else(|| panic!("source {s} is not in reference_sources.csv"))
        })
        .collect();
    (distinct.len() >= 2).then_some(*first)
}

const C_COLUMNS: [(&str, Material, ConduitMagnetism); 4] = [
    (
        "c_cu_steel_conduit",
        Material::Copper,
        ConduitMagnetism::Steel,
    ),
    (
        "c_cu_nonmagnetic_conduit",
        Material::Copper,
        ConduitMagnetism::Nonmagnetic,
    ),
    (
        "c_al_steel_conduit",
        Material::Aluminum,
        ConduitMagnetism::Steel,
    ),
    (
        "c_al_nonmagnetic_conduit",
        Material::Aluminum,
        ConduitMagnetism::Nonmagnetic,
    ),
];

/// The rows of the published 600 V C value table (structure only, no values).
const C_SIZES: [&str; 21] = [
    "14 AWG",
    "12 AWG",
    "10 AWG",
    "8 AWG",
    "6 AWG",
    "4 AWG",
    "3 AWG",
    "2 AWG",
    "1 AWG",
    "1/0 AWG",
    "2/0 AWG",
    "3/0 AWG",
    "4/0 AWG",
    "250 kcmil",
    "300 kcmil",
    "350 kcmil",
    "400 kcmil",
    "500 kcmil",
    "600 kcmil",
    "750 kcmil",
    "1000 kcmil",
];

/// Every one of the 84 C value cells answers what the per-source copies give: a cell printed by
/// at least two publishers ships the highest value they print (the higher fault current) and
/// reports the lowest when they disagree; a cell with fewer publishers answers "not
/// available".
#[test]
fn c_values_are_the_cells_two_publishers_print() {
    let publishers = publishers();
    let mut given: BTreeMap<(String, &str), Vec<(String, f64)>> = BTreeMap::new();
    for r in records(&fixture("ptp_c_values_sources.csv")) {
        let size: ConductorSize = format!("{} {}", r["size"], r["size_unit"])
            .parse()
            .expect("size");
        let col = C_COLUMNS
            .iter()
            .find(|(c, _, _)| *c == r["column"])
            .unwrap_or_else(|| panic!("unknown column {}", r["column"]))
            .0;
        let v: f64 = r["value"].parse().expect("value");
        given
            .entry((size.to_string(), col))
            .or_default()
            .push((r["source"].clone(), v));
    }
    let mut shipped = 0;
    let mut disagree = 0;
    let mut total = 0;
    for size in C_SIZES {
        let size: ConductorSize = size.parse().expect("size");
        for (col, m, c) in C_COLUMNS {
            total += 1;
            let copies = given.get(&(size.to_string(), col));
            let want = copies.and_then(|g| printed_twice(g, &publishers));
            match (tables::c_value_cell(size, m, c), want) {
                (Ok(v), Some((hi, lo))) => {
                    assert_eq!(v.value, hi, "{size} {col}");
                    assert_eq!(v.lowest_published, (lo < hi).then_some(lo), "{size} {col}");
                    shipped += 1;
                    disagree += usize::from(lo < hi);
                }
                (Err(NecError::NotVerified { .. }), None) => {}
                (got, want) => panic!("{size} {col}: engine {got:?}, sources give {want:?}"),
            }
        }
    }
    assert_eq!(total, 84);
    assert_eq!(
        (shipped, disagree),
        (47, 29),
        "shipped C value cells changed: update data/SOURCES.md and docs/nec_engine_tools.md"
    );
}

/// (highest, lowest) of the values printed for a cell when at least two publishers print it.
fn printed_twice(
    given: &[(String, f64)],
    publishers: &BTreeMap<String, String>,
) -> Option<(f64, f64)> {
    let distinct: BTreeSet<&String> = given
        .iter()
        .map(|(s, _)| {
            publishers
                .get(s)
                .unwrap_or_else(|| panic!("source {s} is not in reference_sources.csv"))
        })
        .collect();
    let hi = given.iter().map(|(_, v)| *v).fold(f64::MIN, f64::max);
    let lo = given.iter().map(|(_, v)| *v).fold(f64::MAX, f64::min);
    (distinct.len() >= 2).then_some((hi, lo))
}

/// A length written with its unit ("455 mm", "18 in", "3 ft", "1.5 m"), in millimetres.
fn mm(cell: &str) -> f64 {
    let (n, unit) = cell
        .split_once(' ')
        .unwrap_or_else(|| panic!("'{cell}' has no unit"));
    let n: f64 = n.parse().unwrap_or_else(|_| panic!("'{cell}'"));
    match unit {
        "mm" => n,
        "m" => n * 1000.0,
        "in" => n * 25.4,
        "ft" => n * 304.8,
        u => panic!("unknown unit {u}"),
    }
}

/// The table prints each length twice, metric and inch-pound, each rounded
/// (1.5 m / 5 ft, 485 mm / 19 in): the same cell read in either unit differs by under 2 %.
fn same_length(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.02 * a.max(b)
}

const PPE_KEYS: [(&str, AcEquipment); 9] = [
    ("panelboard_240v", AcEquipment::Panelboard240v),
    ("panelboard_600v", AcEquipment::Panelboard600v),
    ("mcc_600v_fast", AcEquipment::Mcc600vFast),
    ("mcc_600v_slow", AcEquipment::Mcc600vSlow),
    ("switchgear_600v", AcEquipment::Switchgear600v),
    ("other_600v", AcEquipment::Other600v),
    ("nema_e2_starter", AcEquipment::NemaE2Starter),
    ("metal_clad_switchgear", AcEquipment::MetalCladSwitchgear),
    ("other_1kv_15kv", AcEquipment::Other1kv15kv),
];

/// Every cell of NFPA 70E Table 130.7(C)(15)(a) (9 rows × voltage class, fault current,
/// clearing time, working distance, category, boundary) is shipped exactly when two publishers
/// agree on it: 8 rows complete, the "other equipment 1–15 kV" row (one source) not shipped.
#[test]
fn ppe_ac_rows_are_the_cells_two_publishers_confirm() {
    let publishers = publishers();
    let classes: BTreeMap<String, (f64, f64)> = records(&fixture("nfpa70e_130_7_C15a_classes.csv"))
        .into_iter()
        .map(|r| {
            let v = |c: &str| r[c].parse::<f64>().expect("voltage");
            (r["class"].clone(), (v("min_voltage_V"), v("max_voltage_V")))
        })
        .collect();
    let sources = records(&fixture("nfpa70e_130_7_C15a_sources.csv"));
    let shipped = &tables::tables().expect("tables").ppe_ac;
    let mut verified = 0;
    let mut rows_shipped = Vec::new();
    for (key, equipment) in PPE_KEYS {
        let of = |col: &str| -> Vec<(String, String)> {
            sources
                .iter()
                .filter(|r| r["key"] == key && !r[col].is_empty())
                .map(|r| (r["source"].clone(), r[col].clone()))
                .collect()
        };
        let num = |col: &str| -> Vec<(String, f64)> {
            of(col)
                .into_iter()
                .map(|(s, v)| (s, v.parse::<f64>().expect("number")))
                .collect()
        };
        let len = |col: &str| -> Vec<(String, f64)> {
            of(col).into_iter().map(|(s, v)| (s, mm(&v))).collect()
        };
        let class_idx: Vec<(String, usize)> = of("class")
            .into_iter()
            .map(|(s, c)| {
                let i = classes
                    .keys()
                    .position(|k| *k == c)
                    .unwrap_or_else(|| panic!("{key}: unknown class '{c}'"));
                (s, i)
            })
            .collect();
        let class = confirmed(&class_idx, &publishers, |a, b| a == b)
            .map(|i| *classes.values().nth(i).expect("class"));
        let fault = confirmed(&num("max_fault_kA"), &publishers, |a, b| a == b);
        let time = confirmed(&num("max_clearing_time_s"), &publishers, |a, b| a == b);
        let distance = confirmed(&len("working_distance"), &publishers, same_length);
        let category = confirmed(&num("ppe_category"), &publishers, |a, b| a == b);
        let boundary = confirmed(&len("arc_flash_boundary"), &publishers, same_length);
        let cells = [
            class.is_some(),
            fault.is_some(),
            time.is_some(),
            distance.is_some(),
            category.is_some(),
            boundary.is_some(),
        ];
        let row = shipped.iter().find(|r| r.key == key);
        let required_confirmed = cells[..5].iter().all(|c| *c);
        match row {
            None => {
                assert!(
                    !required_confirmed,
                    "{key}: confirmed by two publishers but not shipped"
                );
                // The engine says so instead of answering.
                let e = super::arc_flash::ppe_category_ac(&super::arc_flash::PpeCategoryInput {
                    equipment,
                    voltage: super::units::Volts(4160.0),
                    available_fault_ka: 10.0,
                    clearing_time_s: 0.1,
                    working_distance_mm: None,
                })
                .unwrap_err();
                assert!(matches!(e, NecError::NotVerified { .. }), "{key}: {e}");
            }
            Some(r) => {
                assert!(
                    required_confirmed,
                    "{key}: shipped without two sources: {cells:?}"
                );
                let (lo, hi) = class.expect("class");
                assert_eq!(
                    (r.min_voltage, r.max_voltage),
                    (lo, hi),
                    "{key} voltage class"
                );
                assert_eq!(Some(r.max_fault_ka), fault, "{key} fault current");
                assert_eq!(Some(r.max_clearing_time_s), time, "{key} clearing time");
                assert!(
                    same_length(r.working_distance_mm, distance.expect("distance")),
                    "{key} working distance"
                );
                assert_eq!(Some(f64::from(r.ppe_category)), category, "{key} category");
                match (r.arc_flash_boundary_mm, boundary) {
                    (Some(a), Some(b)) => assert!(same_length(a, b), "{key} boundary {a} vs {b}"),
                    (None, None) => {}
                    (a, b) => panic!("{key} boundary: shipped {a:?}, sources confirm {b:?}"),
                }
                // Every source's own value of a shipped cell agrees with the shipped value.
                for (s, v) in len("arc_flash_boundary") {
                    if let Some(a) = r.arc_flash_boundary_mm {
                        assert!(same_length(a, v), "{key}: source {s} boundary {v}");
                    }
                }
                rows_shipped.push(key);
            }
        }
        verified += cells.iter().filter(|c| **c).count();
    }
    assert_eq!(
        rows_shipped.len(),
        shipped.len(),
        "a shipped row has no source copy"
    );
    assert_eq!(
        (verified, PPE_KEYS.len() * 6),
        (48, 54),
        "verified 70E cells changed: update data/SOURCES.md and docs/nec_engine_tools.md"
    );
    assert!(!rows_shipped.contains(&"other_1kv_15kv"));
}

/// The shipped metric cells are the metric values the metric source prints, exactly (the
/// inch-pound sources only confirm them within the table's rounding).
#[test]
fn ppe_ac_metric_cells_are_printed_values() {
    let sources = records(&fixture("nfpa70e_130_7_C15a_sources.csv"));
    for r in &tables::tables().expect("tables").ppe_ac {
        let a = sources
            .iter()
            .find(|s| s["key"] == r.key && s["source"] == "A")
            .unwrap_or_else(|| panic!("{}: no metric source row", r.key));
        assert_eq!(
            r.working_distance_mm,
            mm(&a["working_distance"]),
            "{}",
            r.key
        );
        assert_eq!(
            r.arc_flash_boundary_mm,
            Some(mm(&a["arc_flash_boundary"])),
            "{}",
            r.key
        );
    }
}

/// The values of `rows` that at least two publishers state.
fn agreed_values<'a>(
    rows: impl Iterator<Item = (&'a str, &'a str)>,
    publishers: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let mut by: BTreeMap<&str, BTreeSet<&String>> = BTreeMap::new();
    for (source, value) in rows {
        let p = publishers
            .get(source)
            .unwrap_or_else(|| panic!("source {source} is not in reference_sources.csv"));
        by.entry(value).or_default().insert(p);
    }
    by.into_iter()
        .filter(|(_, p)| p.len() >= 2)
        .map(|(v, _)| v.to_string())
        .collect()
}

/// The GFCI/AFCI rows every edition ships are exactly those the per-source copies give: a
/// location two publishers list (none saying otherwise), with the item number two publishers
/// agree on; a location absent from a list two publishers show complete (its item count
/// agreed and every item number 1..count listed by some source) is "no"; a scope limit is the
/// widest (most protective) value two publishers print; the section letter of a 210.12 rule
/// is the one two publishers give; a rule whose locations two publishers say are the next
/// edition's takes those.
#[test]
fn gfci_afci_rows_are_what_two_publishers_state() {
    use super::gfci_afci::{rules, LOCATIONS};
    let publishers = publishers();
    let recs = records(&fixture("gfci_afci_sources.csv"));
    let mut groups: BTreeMap<(u16, String), Vec<&BTreeMap<String, String>>> = BTreeMap::new();
    for r in &recs {
        groups
            .entry((r["edition"].parse().expect("edition"), r["rule"].clone()))
            .or_default()
            .push(r);
    }
    type Row = (String, String, String, String);
    let mut derived: BTreeMap<u16, BTreeSet<Row>> = BTreeMap::new();
    let section_of = |rs: &[&BTreeMap<String, String>], rule: &str| {
        let s = agreed_values(
            rs.iter()
                .filter(|r| r["key"] == "section")
                .map(|r| (r["source"].as_str(), r["value"].as_str())),
            &publishers,
        );
        match s.len() {
            1 => s.into_iter().next().expect("one"),
            _ => rule.split(':').next().expect("rule").to_string(),
        }
    };
    for ((edition, rule), rs) in &groups {
        let out = derived.entry(*edition).or_default();
        let base = rule.split(':').next().expect("rule");
        let rule_section = section_of(rs, rule);
        let keys: BTreeSet<&str> = rs.iter().map(|r| r["key"].as_str()).collect();
        for key in keys {
            let kr: Vec<_> = rs.iter().filter(|r| r["key"] == key).collect();
            let agreed = agreed_values(
                kr.iter()
                    .map(|r| (r["source"].as_str(), r["value"].as_str())),
                &publishers,
            );
            if let Some(scope) = key.strip_prefix("scope:") {
                let vals = agreed.iter().map(|v| v.parse::<f64>().expect("number"));
                let v = if scope.ends_with("_min") {
                    vals.fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.min(v))))
                } else {
                    vals.fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
                };
                if let Some(v) = v {
                    out.insert((rule.clone(), key.into(), format!("{v}"), String::new()));
                }
            } else if key == "present" {
                if agreed.len() == 1 {
                    let v = agreed.into_iter().next().expect("one");
                    out.insert((rule.clone(), key.into(), v, String::new()));
                }
            } else if !["count", "section", "same_locations_as_next"].contains(&key) {
                let stated: BTreeSet<&str> = kr.iter().map(|r| r["value"].as_str()).collect();
                if stated.len() == 1 && agreed.len() == 1 {
                    let items = agreed_values(
                        kr.iter()
                            .filter(|r| !r["item"].is_empty())
                            .map(|r| (r["source"].as_str(), r["item"].as_str())),
                        &publishers,
                    );
                    let section = match (items.len(), base.starts_with("210.8")) {
                        (1, true) => {
                            format!("{rule_section}({})", items.iter().next().expect("one"))
                        }
                        _ => rule_section.clone(),
                    };
                    let v = agreed.into_iter().next().expect("one");
                    out.insert((rule.clone(), key.into(), v, section));
                }
            }
        }
        // A list two publishers show complete makes every other location a "no".
        let counts = agreed_values(
            rs.iter()
                .filter(|r| r["key"] == "count")
                .map(|r| (r["source"].as_str(), r["value"].as_str())),
            &publishers,
        );
        let numbers: BTreeSet<u32> = rs
            .iter()
            .filter(|r| r["value"] == "yes" && !r["item"].is_empty())
            .map(|r| r["item"].parse().expect("item"))
            .collect();
        if let [n] = counts.iter().collect::<Vec<_>>()[..] {
            let n: u32 = n.parse().expect("count");
            if numbers == (1..=n).collect() {
                let listed: BTreeSet<&str> = rs
                    .iter()
                    .filter(|r| r["value"] == "yes")
                    .map(|r| r["key"].as_str())
                    .collect();
                // The 210.12 room names are not 210.8 locations.
                let not_210_8 = ["kitchen", "guest_room", "patient_sleeping_room"];
                for loc in LOCATIONS.iter().filter(|l| !not_210_8.contains(l)) {
                    let has = out.iter().any(|(ru, k, _, _)| ru == rule && k == loc);
                    if !listed.contains(loc) && !has {
                        out.insert((
                            rule.clone(),
                            (*loc).into(),
                            "no".into(),
                            rule_section.clone(),
                        ));
                    }
                }
                out.insert((
                    rule.clone(),
                    "complete".into(),
                    n.to_string(),
                    String::new(),
                ));
            }
        }
    }
    // Locations a rule shares with the next edition, where two publishers say so.
    for ((edition, rule), rs) in &groups {
        let same = agreed_values(
            rs.iter()
                .filter(|r| r["key"] == "same_locations_as_next")
                .map(|r| (r["source"].as_str(), r["value"].as_str())),
            &publishers,
        );
        if same.contains("yes") {
            let next = edition + 3;
            let section = section_of(rs, rule);
            let take: Vec<Row> = derived[&next]
                .iter()
                .filter(|(ru, _, v, _)| ru == rule && v == "yes")
                .cloned()
                .collect();
            let out = derived.get_mut(edition).expect("edition");
            for (ru, k, v, _) in take {
                if !out.iter().any(|(r2, k2, _, _)| *r2 == ru && *k2 == k) {
                    out.insert((ru, k, v, section.clone()));
                }
            }
        }
    }
    let shipped = rules().expect("rules");
    for (year, rows) in shipped {
        let ours: BTreeSet<Row> = rows
            .iter()
            .map(|((rule, key), c)| {
                let value = match c.value.parse::<f64>() {
                    Ok(v) if key.starts_with("scope:") => format!("{v}"),
                    _ => c.value.clone(),
                };
                (rule.clone(), key.clone(), value, c.section.clone())
            })
            .collect();
        let want = derived.remove(year).unwrap_or_default();
        let extra: Vec<_> = ours.difference(&want).collect();
        let missing: Vec<_> = want.difference(&ours).collect();
        assert!(
            extra.is_empty() && missing.is_empty(),
            "{year}: shipped without two sources {extra:#?}; confirmed but not shipped {missing:#?}"
        );
    }
    assert!(derived.is_empty(), "editions not shipped: {derived:?}");
}

/// Every dwelling-unit count of Table 220.84 (3 to 120, the last band open) answers the factor
/// that two publishers' copies agree on, and no copy gives another value for a shipped count.
#[test]
fn table_220_84_is_the_factor_two_publishers_print() {
    let publishers = publishers();
    let copies = records(&fixture("table_220_84_sources.csv"));
    let mut confirmed_counts = 0;
    for n in 3u32..=120 {
        let given: Vec<(String, f64)> = copies
            .iter()
            .filter(|r| {
                let lo: u32 = r["units_min"].parse().expect("units_min");
                let hi: Option<u32> = (!r["units_max"].is_empty())
                    .then(|| r["units_max"].parse().expect("units_max"));
                n >= lo && hi.is_none_or(|h| n <= h)
            })
            .map(|r| {
                let pct: f64 = r["demand_factor_pct"].parse().expect("factor");
                (r["source"].clone(), pct / 100.0)
            })
            .collect();
        let want = confirmed(&given, &publishers, |a, b| (a - b).abs() < 1e-12);
        let got = tables::multifamily_demand_factor(n).ok();
        assert_eq!(got, want, "{n} units: copies {given:?}");
        confirmed_counts += usize::from(want.is_some());
    }
    assert_eq!(
        confirmed_counts, 118,
        "confirmed Table 220.84 counts changed: update data/SOURCES.md"
    );
}
