//! GFCI (210.8) and AFCI (210.12) protection by location, occupancy, edition and kind of work.
//!
//! The rules are data: one CSV per edition (`data/gfci_afci_{2017,2020,2023}.csv`), each row a
//! rule (`210.8(A)` dwelling receptacles, `210.8(B)` other than dwellings, `210.8(F)` dwelling
//! outdoor outlets, `210.12:dwelling` / `:dormitory` / `:guest`), a key (a location, a scope
//! limit such as `scope:volts_to_ground_max`, `present`, or `complete`) and its value with the
//! section. A row ships only when two publishers state it (`two_source_check` derives every row
//! from the per-source copies in `tests/fixtures/nec-tables/gfci_afci_sources.csv`); a location
//! with no row is answered "unknown", never guessed. A `no` comes from a list two publishers
//! show to be complete (their item count and numbering) or from two explicit statements.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::error::NecError;
use super::tables::parse_csv;
use super::units::{Amps, Edition, Phase, Volts};

const FILES: [(Edition, &str, &str); 3] = [
    (
        Edition::Nec2017,
        "gfci_afci_2017.csv",
        include_str!("../data/gfci_afci_2017.csv"),
    ),
    (
        Edition::Nec2020,
        "gfci_afci_2020.csv",
        include_str!("../data/gfci_afci_2020.csv"),
    ),
    (
        Edition::Nec2023,
        "gfci_afci_2023.csv",
        include_str!("../data/gfci_afci_2023.csv"),
    ),
];

/// The locations Sparky knows, as their keys in the data (`kitchen` is the room 210.12 lists;
/// 210.8 splits it into countertop and other receptacles).
pub const LOCATIONS: [&str; 33] = [
    "bathroom",
    "garage",
    "accessory_building",
    "outdoors",
    "crawl_space",
    "basement_unfinished",
    "basement_finished",
    "kitchen_countertop",
    "kitchen_other",
    "food_prep_sink_area",
    "sink_6ft",
    "boathouse",
    "bathtub_shower_6ft",
    "laundry",
    "indoor_damp_wet",
    "rooftop",
    "locker_room_shower",
    "aquarium",
    "bedroom",
    "living_room",
    "family_room",
    "dining_room",
    "parlor",
    "library",
    "den",
    "sunroom",
    "recreation_room",
    "closet",
    "hallway",
    "utility_room",
    "guest_room",
    "patient_sleeping_room",
    "kitchen",
];

/// The [`LOCATIONS`] key for a location as people (and models) write it: any case, spaces or
/// hyphens, plurals and common other names ("Outdoor", "unfinished basement", "crawlspace",
/// "laundry room"). `None` when it names none of them.
pub fn location_key(text: &str) -> Option<&'static str> {
    let t = text
        .trim()
        .to_ascii_lowercase()
        .replace([' ', '-', '/'], "_");
    let t = t.trim_matches('_');
    let find = |k: &str| LOCATIONS.iter().copied().find(|l| *l == k);
    if let Some(k) = find(t) {
        return Some(k);
    }
    let key = match t {
        "outdoor" | "outside" | "exterior" | "outdoor_receptacle" | "yard" | "patio" | "porch"
        | "deck" => "outdoors",
        "bath" | "restroom" | "washroom" => "bathroom",
        "unfinished_basement" => "basement_unfinished",
        "finished_basement" => "basement_finished",
        "crawlspace" => "crawl_space",
        "laundry_room" | "laundry_area" => "laundry",
        "kitchen_counter" | "countertop" | "counter" => "kitchen_countertop",
        "hall" => "hallway",
        "detached_garage" | "attached_garage" => "garage",
        "shed" | "outbuilding" | "accessory_structure" => "accessory_building",
        "roof" => "rooftop",
        // Plurals: "bedrooms", "garages", "sheds" (one trailing s, so "outdoors" stays whole).
        _ => match t.strip_suffix('s') {
            Some(singular) if !singular.is_empty() && !singular.ends_with('s') => {
                return location_key(singular)
            }
            _ => return None,
        },
    };
    Some(key)
}

/// One shipped cell: its value and the section it cites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cell {
    pub(crate) value: String,
    pub(crate) section: String,
}

/// Every shipped cell of one edition: (rule, key) → cell.
pub(crate) type EditionRules = BTreeMap<(String, String), Cell>;

/// The shipped rules of every edition, by edition year.
pub(crate) fn rules() -> Result<&'static BTreeMap<u16, EditionRules>, NecError> {
    static RULES: OnceLock<Result<BTreeMap<u16, EditionRules>, NecError>> = OnceLock::new();
    RULES
        .get_or_init(|| {
            let mut all = BTreeMap::new();
            for (edition, file, text) in FILES {
                let csv = parse_csv(file, text)?;
                let mut m = EditionRules::new();
                for (line, c) in &csv.rows {
                    let key = c[1].trim().to_string();
                    let known = key.starts_with("scope:")
                        || key == "present"
                        || key == "complete"
                        || LOCATIONS.contains(&key.as_str());
                    if !known {
                        return Err(NecError::Data {
                            file,
                            line: *line,
                            message: format!("unknown key '{key}'"),
                        });
                    }
                    m.insert(
                        (c[0].trim().to_string(), key),
                        Cell {
                            value: c[2].trim().to_string(),
                            section: c[3].trim().to_string(),
                        },
                    );
                }
                all.insert(edition.year(), m);
            }
            Ok(all)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Who occupies the space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Occupancy {
    /// A dwelling unit (house, apartment).
    Dwelling,
    /// Anything other than a dwelling unit (commercial, industrial, institutional).
    OtherThanDwelling,
    /// A dormitory unit.
    Dormitory,
    /// A hotel or motel guest room or suite.
    GuestRoom,
    /// A patient sleeping room in a nursing home or limited-care facility.
    PatientSleepingRoom,
}

/// New work, a like-for-like receptacle replacement, or an extension of an existing circuit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Work {
    /// New outlets or circuits.
    #[default]
    New,
    /// A receptacle replaced at an existing outlet (406.4(D)).
    Replacement,
    /// Existing branch-circuit wiring modified, replaced or extended.
    Extension,
}

/// What is asked about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProtectionInput {
    /// Edition.
    pub edition: Edition,
    /// Occupancy.
    pub occupancy: Occupancy,
    /// A key of [`LOCATIONS`].
    pub location: String,
    /// A receptacle (true) or another outlet: a luminaire or hard-wired equipment.
    pub receptacle: bool,
    /// Receptacle or circuit voltage (line to line for a two-pole circuit).
    pub volts: Option<Volts>,
    /// Voltage to ground, when known; else worked out from `volts` and `phase` where the
    /// system is clear.
    pub volts_to_ground: Option<Volts>,
    /// Phases of the branch circuit.
    pub phase: Phase,
    /// Receptacle or branch-circuit rating.
    pub amps: Option<Amps>,
    /// The receptacle is within 6 ft of a sink bowl.
    pub near_sink: bool,
    /// The receptacle is within 6 ft of a bathtub or shower stall.
    pub near_tub_or_shower: bool,
    /// An indoor damp or wet location.
    pub damp_or_wet: bool,
    /// Kind of work.
    pub work: Work,
    /// For an extension: length of the new branch-circuit conductors, ft.
    pub extension_ft: Option<f64>,
    /// For an extension: whether it adds outlets or devices (other than splices).
    pub extension_adds_outlets: Option<bool>,
}

/// Required, not required, or not decidable from the shipped data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Required {
    /// Required.
    Yes,
    /// Not required.
    No,
    /// Sparky cannot say (the reason is given).
    Unknown,
}

/// The answer for one kind of protection.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// The answer.
    pub required: Required,
    /// Sections relied on.
    pub sections: Vec<String>,
    /// Why, one line each.
    pub basis: Vec<String>,
    /// What kept the answer from yes or no.
    pub unknown_why: Vec<String>,
}

/// The GFCI and AFCI answers with what a reviewer would ask about.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProtectionResult {
    /// Edition used.
    pub edition: Edition,
    /// GFCI (210.8).
    pub gfci: Finding,
    /// AFCI (210.12).
    pub afci: Finding,
    /// Conditions and exceptions to check, as a reviewer would ask them.
    pub reviewer_questions: Vec<String>,
    /// Assumptions made.
    pub assumptions: Vec<String>,
}

fn cell<'a>(r: &'a EditionRules, rule: &str, key: &str) -> Option<&'a Cell> {
    r.get(&(rule.to_string(), key.to_string()))
}

fn limit(r: &EditionRules, rule: &str, key: &str) -> Option<f64> {
    cell(r, rule, &format!("scope:{key}")).and_then(|c| c.value.parse().ok())
}

fn edition_rules(edition: Edition) -> Result<&'static EditionRules, NecError> {
    rules()?
        .get(&edition.year())
        .ok_or_else(|| NecError::not_in_table("GFCI/AFCI rules", edition.to_string()))
}

/// Voltage to ground: given, or clear from the circuit voltage and phases.
fn to_ground(input: &ProtectionInput, assumptions: &mut Vec<String>) -> Option<f64> {
    if let Some(v) = input.volts_to_ground {
        return Some(v.0);
    }
    let v = input.volts?.0;
    let g = match (input.phase, v.round() as i64) {
        (_, 120) | (_, 115) | (_, 125) => 120.0,
        (Phase::Single, 240) | (Phase::Single, 250) => {
            assumptions
                .push("240 V single-phase taken as a 120/240 V system: 120 V to ground".into());
            120.0
        }
        (_, 208) => {
            assumptions.push("208 V taken as a 208Y/120 V system: 120 V to ground".into());
            120.0
        }
        (_, 277) => 277.0,
        (_, 480) => {
            assumptions.push("480 V taken as a 480Y/277 V system: 277 V to ground (a 480 V delta is higher still)".into());
            277.0
        }
        _ => return None,
    };
    Some(g)
}

/// The narrowest receptacle every edition's 210.8 scope has covered since 2017: 125 V,
/// single-phase, 15 or 20 A. A receptacle within it is in scope even where an edition's
/// limits are not confirmed in the data.
fn baseline(input: &ProtectionInput) -> bool {
    input.phase == Phase::Single
        && input.volts.is_none_or(|v| v.0 <= 125.0)
        && input.amps.is_none_or(|a| a.0 <= 20.0)
}

/// Whether a receptacle is inside a 210.8 rule's voltage and current scope.
fn gfci_scope(
    r: &EditionRules,
    rule: &str,
    input: &ProtectionInput,
    assumptions: &mut Vec<String>,
) -> (Required, Vec<String>) {
    let mut notes = Vec::new();
    let mut out = Required::Yes;
    let mut unconfirmed: Vec<String> = Vec::new();
    let edition_note = |k: &str| {
        format!(
            "the {rule} {k} limit of this edition is not confirmed by two sources in Sparky's data"
        )
    };
    if let Some(v) = input.volts {
        match limit(r, rule, "receptacle_volts_max") {
            Some(max) if v.0 > max + 0.5 => {
                notes.push(format!("{} receptacle is above the {max} V receptacle rating {rule} covers in this edition", v));
                out = Required::No;
            }
            Some(_) => {}
            None if rule == "210.8(B)" => {}
            None => unconfirmed.push(edition_note("receptacle voltage")),
        }
    }
    if out == Required::No {
        return (out, notes);
    }
    match (
        limit(r, rule, "volts_to_ground_max"),
        to_ground(input, assumptions),
    ) {
        (Some(max), Some(g)) if g > max + 0.5 => {
            notes.push(format!(
                "{g} V to ground is above the {max} V to ground {rule} covers"
            ));
            return (Required::No, notes);
        }
        (Some(_), Some(_)) => {}
        (Some(max), None) if input.volts.is_some_and(|v| v.0 > 150.0) => {
            notes.push(format!("voltage to ground not given and not clear from the system: {rule} covers {max} V to ground or less; give volts_to_ground"));
            out = Required::Unknown;
        }
        (None, _)
            if rule == "210.8(A)"
                && r.contains_key(&(rule.to_string(), "scope:receptacle_volts_max".into()))
                && limit(r, rule, "receptacle_volts_max").is_some_and(|m| m <= 125.0) => {}
        (None, _) => unconfirmed.push(edition_note("voltage-to-ground")),
        _ => {}
    }
    if let Some(a) = input.amps {
        let key = if input.phase == Phase::Three && rule == "210.8(B)" {
            "amps_max_3ph"
        } else {
            "amps_max"
        };
        match limit(r, rule, key) {
            Some(max) if a.0 > max + 1e-9 => {
                notes.push(format!("{a} is above the {max} A {rule} covers"));
                return (Required::No, notes);
            }
            Some(_) => {}
            None if rule == "210.8(A)"
                && limit(r, rule, "receptacle_volts_max").is_some_and(|m| m > 125.0) => {}
            None => unconfirmed.push(edition_note("ampere")),
        }
    }
    if baseline(input) {
        for u in unconfirmed {
            assumptions.push(format!(
                "{u}; a 125 V single-phase 15/20 A receptacle is inside every edition's scope since 2017, so it is treated as covered"
            ));
        }
    } else if !unconfirmed.is_empty() {
        notes.extend(unconfirmed);
        out = Required::Unknown;
    }
    (out, notes)
}

fn gfci(r: &EditionRules, input: &ProtectionInput, assumptions: &mut Vec<String>) -> Finding {
    let dwelling = input.occupancy == Occupancy::Dwelling;
    let rule = if dwelling { "210.8(A)" } else { "210.8(B)" };
    let mut f = Finding {
        required: Required::No,
        sections: Vec::new(),
        basis: Vec::new(),
        unknown_why: Vec::new(),
    };
    // 210.8(F): every outdoor outlet of a dwelling (2020 on), receptacle or not.
    if dwelling && input.location == "outdoors" && !input.receptacle {
        match cell(r, "210.8(F)", "present").map(|c| c.value.as_str()) {
            Some("no") => {
                f.basis.push(format!("{}: no outdoor-outlet rule (210.8(F) arrived in 2020); 210.8(A)(3) covers receptacles only", input.edition));
            }
            Some("yes") => {
                f.sections.push("210.8(F)".into());
                let g = to_ground(input, assumptions);
                let (vmax, amax) = (
                    limit(r, "210.8(F)", "volts_to_ground_max"),
                    limit(r, "210.8(F)", "amps_max"),
                );
                let over_v = matches!((vmax, g), (Some(m), Some(g)) if g > m + 0.5);
                let over_a = matches!((amax, input.amps), (Some(m), Some(a)) if a.0 > m);
                if input.phase == Phase::Three || over_v || over_a {
                    f.basis.push("outside the 210.8(F) scope (single-phase, voltage to ground and ampere limits)".into());
                } else if vmax.is_none() || amax.is_none() || g.is_none() || input.amps.is_none() {
                    f.required = Required::Unknown;
                    f.unknown_why.push(format!(
                        "210.8(F) covers single-phase outlets up to {} V to ground and {} A; give the circuit voltage and rating (limits not confirmed by two sources are shown as ?)",
                        vmax.map_or("?".into(), |v| v.to_string()),
                        amax.map_or("?".into(), |v| v.to_string())
                    ));
                } else {
                    f.required = Required::Yes;
                    f.basis.push(format!(
                        "outdoor outlet of a dwelling, single-phase, {} V to ground or less and {} A or less",
                        vmax.unwrap_or_default(),
                        amax.unwrap_or_default()
                    ));
                }
            }
            _ => {
                f.required = Required::Unknown;
                f.unknown_why.push(
                    "whether 210.8(F) exists in this edition is not confirmed by two sources"
                        .into(),
                );
            }
        }
        return f;
    }
    if !input.receptacle {
        f.basis.push(format!(
            "{rule} covers receptacles; a luminaire or hard-wired outlet here needs GFCI only under another rule (see the questions)"
        ));
        return f;
    }
    // The location itself, plus the conditions that apply anywhere in the building.
    let mut triggers: Vec<(&str, String)> = vec![(input.location.as_str(), input.location.clone())];
    if input.near_sink {
        triggers.push(("sink_6ft", "within 6 ft of a sink".into()));
    }
    if input.near_tub_or_shower {
        triggers.push((
            "bathtub_shower_6ft",
            "within 6 ft of a bathtub or shower".into(),
        ));
    }
    if input.damp_or_wet && input.location != "outdoors" {
        triggers.push(("indoor_damp_wet", "indoor damp or wet location".into()));
    }
    let mut yes = Vec::new();
    let mut unknown = Vec::new();
    for (key, what) in &triggers {
        match cell(r, rule, key) {
            Some(c) if c.value == "yes" => yes.push((c.section.clone(), what.clone())),
            Some(_) => {}
            None => unknown.push(what.clone()),
        }
    }
    if yes.is_empty() && unknown.is_empty() {
        f.sections.push(rule.into());
        f.basis.push(format!(
            "{} is not among the {rule} locations of {} (the list two sources give in full)",
            triggers
                .iter()
                .map(|(_, w)| w.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            input.edition
        ));
        return f;
    }
    if yes.is_empty() {
        f.required = Required::Unknown;
        f.sections.push(rule.into());
        for w in unknown {
            f.unknown_why.push(format!(
                "{w}: Sparky's {} data has no two-source confirmation for this location under {rule}; check the adopted code text",
                input.edition
            ));
        }
        return f;
    }
    let (scope, notes) = gfci_scope(r, rule, input, assumptions);
    for (s, w) in &yes {
        if !f.sections.contains(s) {
            f.sections.push(s.clone());
        }
        f.basis
            .push(format!("{w}: listed in {s} ({})", input.edition));
    }
    match scope {
        Required::No => {
            f.basis.extend(notes);
            f.basis
                .push("so the listed location does not bring this receptacle under 210.8".into());
        }
        Required::Unknown => {
            f.required = Required::Unknown;
            f.unknown_why.extend(notes);
        }
        Required::Yes => f.required = Required::Yes,
    }
    if input.work == Work::Replacement && f.required == Required::Yes {
        f.sections.push("406.4(D)(3)".into());
        f.basis.push(
            "a replacement receptacle at an outlet that needs GFCI today must be GFCI protected"
                .into(),
        );
    }
    f
}

fn afci_rule(input: &ProtectionInput) -> Option<(&'static str, String)> {
    let room = match input.location.as_str() {
        "kitchen_countertop" | "kitchen_other" => "kitchen".to_string(),
        other => other.to_string(),
    };
    match input.occupancy {
        Occupancy::Dwelling => Some(("210.12:dwelling", room)),
        Occupancy::Dormitory => Some(("210.12:dormitory", room)),
        Occupancy::GuestRoom => Some(("210.12:guest", "guest_room".into())),
        Occupancy::PatientSleepingRoom => Some(("210.12:guest", "patient_sleeping_room".into())),
        Occupancy::OtherThanDwelling => None,
    }
}

fn afci(r: &EditionRules, input: &ProtectionInput, assumptions: &mut Vec<String>) -> Finding {
    let mut f = Finding {
        required: Required::No,
        sections: Vec::new(),
        basis: Vec::new(),
        unknown_why: Vec::new(),
    };
    let Some((rule, key)) = afci_rule(input) else {
        f.basis.push("210.12 covers dwelling units, dormitory units, guest rooms and suites (and, 2020 on, patient sleeping rooms of nursing homes and limited-care facilities); not this occupancy".into());
        return f;
    };
    let listed = r.keys().any(|(ru, _)| ru == rule);
    match cell(r, rule, &key) {
        Some(c) if c.value == "yes" => {
            f.required = Required::Yes;
            f.sections.push(c.section.clone());
            f.basis.push(format!(
                "{key}: listed in {} ({})",
                c.section, input.edition
            ));
        }
        Some(c) => {
            f.sections.push(c.section.clone());
            f.basis.push(format!(
                "{key}: two sources state 210.12 does not cover it ({})",
                input.edition
            ));
            return f;
        }
        None if listed
            && matches!(input.occupancy, Occupancy::Dwelling | Occupancy::Dormitory)
            && r.iter().any(|((ru, _), c)| ru == rule && c.value == "yes") =>
        {
            f.sections.push("210.12".into());
            f.basis.push(format!(
                "{key} is not among the rooms 210.12 lists for this occupancy in {}; the list ends with 'similar rooms or areas', so the AHJ may still treat a similar room as covered",
                input.edition
            ));
            return f;
        }
        None => {
            f.required = Required::Unknown;
            f.sections.push("210.12".into());
            f.unknown_why.push(format!(
                "Sparky's {} data has no two-source confirmation of the 210.12 list for this occupancy and location; check the adopted code text",
                input.edition
            ));
            return f;
        }
    }
    // Scope: 120 V single-phase branch circuits within the edition's ampere ratings.
    let (vol, lo, hi) = (
        limit(r, rule, "branch_volts").or(limit(r, "210.12:dwelling", "branch_volts")),
        limit(r, rule, "amps_min").or(limit(r, "210.12:dwelling", "amps_min")),
        limit(r, rule, "amps_max").or(limit(r, "210.12:dwelling", "amps_max")),
    );
    let volts_over = input.phase == Phase::Three
        || match (vol, input.volts) {
            (Some(v), Some(x)) => x.0 > v + 5.5,
            _ => false,
        };
    if volts_over {
        f.required = Required::No;
        f.basis
            .push("210.12 covers 120 V single-phase branch circuits only".into());
        return f;
    }
    if let Some(a) = input.amps {
        match (lo, hi) {
            (Some(lo), Some(hi)) if a.0 < lo - 1e-9 || a.0 > hi + 1e-9 => {
                f.required = Required::No;
                f.basis.push(format!("a {a} branch circuit is outside the {lo}–{hi} A ratings 210.12 covers in {}", input.edition));
                return f;
            }
            (Some(_), Some(_)) => {}
            _ if (15.0..=20.0).contains(&a.0) => assumptions.push(
                "210.12 ampere range of this edition not confirmed by two sources; 15 and 20 A circuits are covered in every edition since 2017".into(),
            ),
            _ => {
                f.required = Required::Unknown;
                f.unknown_why.push("the 210.12 ampere range of this edition is not confirmed by two sources".into());
                return f;
            }
        }
    }
    match input.work {
        Work::Replacement if input.receptacle => {
            f.sections.push("406.4(D)(4)".into());
            f.basis.push("a replaced receptacle in an AFCI area gets AFCI protection (an outlet branch-circuit AFCI receptacle, a receptacle downstream of one, or a combination AFCI breaker)".into());
        }
        Work::Extension => {
            let ext = if input.edition == Edition::Nec2023 {
                "210.12(E)"
            } else {
                "210.12(D)"
            };
            f.sections.push(ext.into());
            match (input.extension_ft, input.extension_adds_outlets) {
                (Some(ft), Some(false)) if ft <= 6.0 => {
                    f.required = Required::No;
                    f.basis.push(format!("extension of {ft} ft adding no outlets or devices: the 6 ft exception of {ext} applies"));
                }
                (Some(ft), _) if ft > 6.0 => {
                    f.basis.push(format!("extension of {ft} ft (over 6 ft): the existing circuit gets AFCI protection at its origin or at its first receptacle outlet ({ext})"));
                }
                (_, Some(true)) => {
                    f.basis.push(format!(
                        "the extension adds outlets or devices: AFCI protection per {ext}"
                    ));
                }
                _ => {
                    f.basis.push(format!("AFCI per {ext} unless the extension is 6 ft or less and adds no outlets or devices (give extension_ft and extension_adds_outlets)"));
                }
            }
        }
        _ => {}
    }
    f
}

fn questions(input: &ProtectionInput) -> Vec<String> {
    let e = input.edition;
    let mut q = Vec::new();
    let dwelling = input.occupancy == Occupancy::Dwelling;
    match input.location.as_str() {
        "outdoors" if dwelling => {
            q.push("Receptacle not readily accessible on a circuit dedicated to snow-melting, deicing or pipeline heating? See 426.28 / 427.22.".into());
            if e != Edition::Nec2017 {
                q.push(format!("Hard-wired outdoor equipment (AC condenser, heat pump, pump) falls under 210.8(F){}; lighting outlets are excepted.", if e == Edition::Nec2023 { ", with the listed-HVAC exception of 2023" } else { " (2020; see TIA 20-13 for HVAC with power-conversion equipment)" }));
            }
        }
        "basement_unfinished" | "basement_finished" if dwelling => {
            q.push("A receptacle serving only a permanently installed fire alarm or security system: see the alarm exception in 210.8(A) with 760.41(B) / 760.121(B).".into());
        }
        "crawl_space" => {
            let s = if e == Edition::Nec2017 {
                "210.8(E)"
            } else {
                "210.8(C)"
            };
            q.push(format!("Lighting outlets in a crawl space: {s}."));
        }
        "kitchen_countertop" | "kitchen_other" | "laundry" if dwelling => {
            q.push("Kitchen and laundry circuits often need both GFCI and AFCI: a dual-function device or breaker covers both (210.8 and 210.12).".into());
            if e == Edition::Nec2017 {
                q.push("Dishwasher outlet in a dwelling: 210.8(D) (2017).".into());
            } else {
                q.push("Appliances listed in 422.5(A) (dishwashers, sump pumps, vending machines...) need GFCI wherever they are: 210.8(D).".into());
            }
        }
        _ => {}
    }
    if e != Edition::Nec2017 && input.receptacle {
        q.push(format!(
            "Is it a ceiling receptacle for a luminaire or fan ({})? Those are excepted unless a general-purpose receptacle is integral.",
            if e == Edition::Nec2023 { "listed weight-supporting ceiling receptacle" } else { "listed locking support and mounting receptacle" }
        ));
    }
    if matches!(
        input.occupancy,
        Occupancy::Dwelling
            | Occupancy::Dormitory
            | Occupancy::GuestRoom
            | Occupancy::PatientSleepingRoom
    ) {
        q.push("An individual branch circuit for a fire alarm system may omit AFCI only as 760.41(B) / 760.121(B) allow (metal raceway or armored cable, metal boxes).".into());
    }
    if input.receptacle {
        q.push("Distance to a sink, tub or shower is the shortest path the cord would follow, not through a door, wall or window (210.8).".into());
    }
    q.push("EV charging receptacles: 625.54; pools, spas and fountains: Article 680; both have their own GFCI rules.".into());
    q
}

/// Whether GFCI and AFCI protection are required, per the edition's shipped data.
pub fn protection(input: &ProtectionInput) -> Result<ProtectionResult, NecError> {
    let Some(location) = location_key(&input.location) else {
        return Err(NecError::invalid(
            "location",
            &input.location,
            format!("use one of: {}", LOCATIONS.join(", ")),
        ));
    };
    let input = &ProtectionInput {
        location: location.to_string(),
        ..input.clone()
    };
    if let Some(v) = input.volts {
        super::error::positive("volts", v.0)?;
    }
    if let Some(a) = input.amps {
        super::error::positive("amps", a.0)?;
    }
    if let Some(ft) = input.extension_ft {
        super::error::non_negative("extension_ft", ft)?;
    }
    let r = edition_rules(input.edition)?;
    let mut assumptions = Vec::new();
    let gfci = gfci(r, input, &mut assumptions);
    let afci = afci(r, input, &mut assumptions);
    Ok(ProtectionResult {
        edition: input.edition,
        gfci,
        afci,
        reviewer_questions: questions(input),
        assumptions,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn locations_are_read_as_people_write_them() {
        use super::location_key;
        for (written, key) in [
            ("Outdoor", "outdoors"),
            ("outdoors", "outdoors"),
            ("unfinished basement", "basement_unfinished"),
            ("Crawlspace", "crawl_space"),
            ("laundry room", "laundry"),
            ("bedrooms", "bedroom"),
            ("Garages", "garage"),
            ("kitchen-countertop", "kitchen_countertop"),
            ("sheds", "accessory_building"),
            ("living room", "living_room"),
        ] {
            assert_eq!(location_key(written), Some(key), "{written}");
        }
        for unknown in ["", "s", "moon", "kitchens_stuff"] {
            assert_eq!(location_key(unknown), None, "{unknown}");
        }
    }

    use super::*;

    fn ask(edition: Edition, occupancy: Occupancy, location: &str) -> ProtectionInput {
        ProtectionInput {
            edition,
            occupancy,
            location: location.into(),
            receptacle: true,
            volts: Some(Volts(120.0)),
            volts_to_ground: None,
            phase: Phase::Single,
            amps: Some(Amps(20.0)),
            near_sink: false,
            near_tub_or_shower: false,
            damp_or_wet: false,
            work: Work::New,
            extension_ft: None,
            extension_adds_outlets: None,
        }
    }

    fn run(i: &ProtectionInput) -> ProtectionResult {
        protection(i).unwrap()
    }

    #[test]
    fn kitchen_receptacles_changed_in_2023() {
        // A refrigerator receptacle (not serving the countertop): 2020 no, 2023 yes.
        let mut i = ask(Edition::Nec2020, Occupancy::Dwelling, "kitchen_other");
        assert_eq!(run(&i).gfci.required, Required::No);
        i.edition = Edition::Nec2023;
        let r = run(&i);
        assert_eq!(r.gfci.required, Required::Yes);
        assert_eq!(r.gfci.sections, vec!["210.8(A)(6)"]);
        assert_eq!(r.afci.required, Required::Yes);
        assert_eq!(r.afci.sections, vec!["210.12(B)"]);
    }

    #[test]
    fn sinks_2017_name_their_item() {
        // 2017 dwelling receptacle within 6 ft of a laundry sink: item (7), which IAEI and
        // Leviton both number.
        let r = run(&ask(Edition::Nec2017, Occupancy::Dwelling, "sink_6ft"));
        assert_eq!(r.gfci.required, Required::Yes, "{r:#?}");
        assert_eq!(r.gfci.sections, vec!["210.8(A)(7)"]);
    }

    #[test]
    fn finished_basements_from_2020() {
        let mut i = ask(Edition::Nec2017, Occupancy::Dwelling, "basement_finished");
        assert_eq!(run(&i).gfci.required, Required::No);
        i.edition = Edition::Nec2020;
        assert_eq!(run(&i).gfci.required, Required::Yes);
        i.edition = Edition::Nec2023;
        assert_eq!(run(&i).gfci.required, Required::Yes);
    }

    #[test]
    fn dryer_receptacle_in_laundry_by_voltage_scope() {
        // 240 V 30 A dryer receptacle in a dwelling laundry area: 2020 and 2023 cover 125-250 V.
        let mut i = ask(Edition::Nec2020, Occupancy::Dwelling, "laundry");
        i.volts = Some(Volts(240.0));
        i.amps = Some(Amps(30.0));
        let r = run(&i);
        assert_eq!(r.gfci.required, Required::Yes, "{r:#?}");
        assert_eq!(r.gfci.sections, vec!["210.8(A)(10)"]);
        // 240 V is outside AFCI's 120 V scope.
        assert_eq!(r.afci.required, Required::No);
    }

    #[test]
    fn bedroom_afci_yes_gfci_no_and_near_sink_makes_gfci() {
        let mut i = ask(Edition::Nec2023, Occupancy::Dwelling, "bedroom");
        let r = run(&i);
        assert_eq!(r.gfci.required, Required::No);
        assert_eq!(r.afci.required, Required::Yes);
        i.near_sink = true;
        assert_eq!(run(&i).gfci.required, Required::Yes);
        // A 10 A circuit: AFCI in 2023, not in 2020.
        i.amps = Some(Amps(10.0));
        assert_eq!(run(&i).afci.required, Required::Yes);
        i.edition = Edition::Nec2020;
        assert_eq!(run(&i).afci.required, Required::No);
    }

    #[test]
    fn outdoor_outlets_2020_on() {
        let mut i = ask(Edition::Nec2017, Occupancy::Dwelling, "outdoors");
        i.receptacle = false;
        i.volts = Some(Volts(240.0));
        i.amps = Some(Amps(30.0));
        assert_eq!(run(&i).gfci.required, Required::No);
        i.edition = Edition::Nec2020;
        let r = run(&i);
        assert_eq!(r.gfci.required, Required::Yes);
        assert_eq!(r.gfci.sections, vec!["210.8(F)"]);
        i.amps = Some(Amps(60.0));
        assert_eq!(run(&i).gfci.required, Required::No);
    }

    #[test]
    fn non_dwelling_scope_and_unknowns_are_said() {
        // 2017 other than dwelling: three-phase 208 V 60 A receptacle in an unfinished basement.
        let mut i = ask(
            Edition::Nec2017,
            Occupancy::OtherThanDwelling,
            "basement_unfinished",
        );
        i.phase = Phase::Three;
        i.volts = Some(Volts(208.0));
        i.amps = Some(Amps(60.0));
        let r = run(&i);
        assert_eq!(r.gfci.required, Required::Yes, "{r:#?}");
        assert_eq!(r.gfci.sections, vec!["210.8(B)(10)"]);
        i.amps = Some(Amps(125.0));
        assert_eq!(run(&i).gfci.required, Required::No);
        // 2017 dwelling bathroom: one published copy only, so unknown with the reason.
        let r = run(&ask(Edition::Nec2017, Occupancy::Dwelling, "bathroom"));
        assert_eq!(r.gfci.required, Required::Unknown);
        assert!(r.gfci.unknown_why[0].contains("two-source"), "{r:#?}");
        // Offices are outside 210.12.
        let r = run(&ask(
            Edition::Nec2023,
            Occupancy::OtherThanDwelling,
            "bathroom",
        ));
        assert_eq!(r.afci.required, Required::No);
    }

    #[test]
    fn replacement_and_extension() {
        let mut i = ask(Edition::Nec2020, Occupancy::Dwelling, "bedroom");
        i.work = Work::Replacement;
        let r = run(&i);
        assert!(
            r.afci.sections.contains(&"406.4(D)(4)".to_string()),
            "{r:#?}"
        );
        i.work = Work::Extension;
        i.extension_ft = Some(4.0);
        i.extension_adds_outlets = Some(false);
        let r = run(&i);
        assert_eq!(r.afci.required, Required::No);
        assert_eq!(r.afci.sections.last().unwrap(), "210.12(D)");
        i.edition = Edition::Nec2023;
        i.extension_ft = Some(10.0);
        let r = run(&i);
        assert_eq!(r.afci.required, Required::Yes);
        assert_eq!(r.afci.sections.last().unwrap(), "210.12(E)");
    }

    #[test]
    fn guest_rooms_and_bad_input() {
        let r = run(&ask(
            Edition::Nec2020,
            Occupancy::PatientSleepingRoom,
            "bedroom",
        ));
        assert_eq!(r.afci.required, Required::Yes);
        assert_eq!(r.afci.sections, vec!["210.12(C)"]);
        assert!(protection(&ask(Edition::Nec2023, Occupancy::Dwelling, "moon")).is_err());
        let mut i = ask(Edition::Nec2023, Occupancy::Dwelling, "garage");
        i.amps = Some(Amps(-1.0));
        assert!(protection(&i).is_err());
    }
}
