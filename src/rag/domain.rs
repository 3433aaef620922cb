//! Whether a question names anything electrical at all.
//!
//! Similarity alone cannot tell a question about condensers, decks or drywall from one about
//! the code: the NEC summaries talk about condensers, decks and drywall too (their circuits,
//! their receptacles, the boxes in them), so an HVAC or carpentry question lands close to some
//! passage. What such a question lacks is the electrical half: it names no circuit, conductor,
//! device, unit or protection. Every question the code answers names at least one.
//!
//! The vocabulary below was built from the words of the shipped summaries and the shop
//! abbreviations of [`super::expand`], keeping a word when, in an electrician's chat, it
//! refers to an electrical thing: *strong* words (weight 1) almost always do ("breaker",
//! "receptacle", "ampacity", "emt", "neutral"), *weak* words (weight ½) often but not always
//! ("ground", "wire", "pool", "heater", "service": "off the ground", "wire mesh", "pool
//! table"). Numbers with an electrical unit ("20a", "240v", "12kw", "#12", "12/2") are strong.
//! A question needs a weight of 1: one strong word or two weak ones. Abbreviations count as
//! the words they stand for, misspellings as the word [`super::expand`] corrects them to (half
//! of it for words under six letters, where a near word is often just another word).

use std::collections::HashMap;
use std::sync::OnceLock;

use super::expand::{abbreviation, correction};

/// Weight a question's electrical words must reach to be about the code.
pub const MIN_ELECTRICAL: f64 = 1.0;

/// Words that in an electrician's chat almost always mean something electrical.
const STRONG: &[&str] = &[
    // quantities and units
    "amp",
    "amps",
    "ampere",
    "amperes",
    "amperage",
    "ampacity",
    "ampacities",
    "volt",
    "volts",
    "voltage",
    "voltages",
    "watt",
    "watts",
    "wattage",
    "kw",
    "kva",
    "va",
    "kcmil",
    "awg",
    "ohm",
    "ohms",
    "phase",
    "phases",
    "kwh",
    "mcm",
    // circuits and protection
    "circuit",
    "circuits",
    "breaker",
    "breakers",
    "fuse",
    "fuses",
    "fused",
    "overcurrent",
    "overload",
    "overloads",
    "ocpd",
    "gfci",
    "gfcis",
    "afci",
    "afcis",
    "gfpe",
    "rsd",
    "arc",
    "surge",
    "spd",
    "interrupting",
    "short-circuit",
    "ground-fault",
    "arc-fault",
    "multiwire",
    "derate",
    "derating",
    "energized",
    "deenergized",
    "electric",
    "electrical",
    "electrically",
    "electrician",
    "electricians",
    "electricity",
    "shock",
    "electrocution",
    "nec",
    "tripping",
    // conductors, cables and raceways
    "conductor",
    "conductors",
    "wiring",
    "cable",
    "cables",
    "conduit",
    "conduits",
    "raceway",
    "raceways",
    "emt",
    "imc",
    "rmc",
    "nm",
    "romex",
    "uf",
    "thhn",
    "thwn",
    "xhhw",
    "ser",
    "seu",
    "bx",
    "mc",
    "neutral",
    "neutrals",
    "ungrounded",
    "grounding",
    "grounded",
    "bonding",
    "bonded",
    "bond",
    "electrode",
    "electrodes",
    "ufer",
    "busbar",
    "busbars",
    "buss",
    "lug",
    "lugs",
    "splice",
    "splices",
    "pigtail",
    "pigtails",
    "feeder",
    "feeders",
    // equipment and devices
    "receptacle",
    "receptacles",
    "outlet",
    "outlets",
    "plug",
    "plugs",
    "recep",
    "switch",
    "switches",
    "dimmer",
    "dimmers",
    "panel",
    "panels",
    "panelboard",
    "panelboards",
    "subpanel",
    "subpanels",
    "switchboard",
    "switchgear",
    "disconnect",
    "disconnects",
    "disconnecting",
    "transformer",
    "transformers",
    "generator",
    "generators",
    "inverter",
    "inverters",
    "photovoltaic",
    "solar",
    "charger",
    "chargers",
    "evse",
    "luminaire",
    "luminaires",
    "lighting",
    "light",
    "lights",
    "motor",
    "motors",
    "meter",
    "box",
    "boxes",
    "cord",
    "cords",
    "photocell",
    "backfeed",
    "backfed",
    "vfd",
    "interlock",
    "weatherhead",
    "pvc",
];

/// Words that often, but not always, mean something electrical.
const WEAK: &[&str] = &[
    "ground",
    "grounds",
    "wire",
    "wires",
    "wired",
    "gauge",
    "copper",
    "aluminum",
    "service",
    "load",
    "loads",
    "power",
    "fixture",
    "fixtures",
    "lamp",
    "bulb",
    "led",
    "fan",
    "fans",
    "pump",
    "pumps",
    "heater",
    "heaters",
    "pool",
    "pools",
    "spa",
    "spas",
    "tub",
    "hydromassage",
    "dryer",
    "range",
    "oven",
    "cooktop",
    "dishwasher",
    "disposal",
    "appliance",
    "appliances",
    "battery",
    "batteries",
    "bus",
    "tap",
    "taps",
    "rod",
    "sign",
    "array",
    "trip",
    "trips",
    "horsepower",
    "hp",
    "flex",
    "calc",
    "calcs",
    "calculation",
    "pull",
    "mast",
    "sub",
    "utility",
    "detector",
    "thermostat",
    "doorbell",
    "lightning",
    "kitchen",
    "bathroom",
];

fn weights() -> &'static HashMap<&'static str, f64> {
    static W: OnceLock<HashMap<&'static str, f64>> = OnceLock::new();
    W.get_or_init(|| {
        let mut w: HashMap<&'static str, f64> = WEAK.iter().map(|t| (*t, 0.5)).collect();
        w.extend(STRONG.iter().map(|t| (*t, 1.0)));
        w
    })
}

/// Units that make a number electrical ("20a", "240v", "12kw", "3ph").
const UNITS: &[&str] = &[
    "a", "amp", "amps", "v", "volt", "volts", "w", "watt", "watts", "kw", "kva", "va", "awg",
    "kcmil", "mcm", "ph", "hp",
];

/// Whether `token` is a number with an electrical unit, a conductor size or a cable or
/// voltage designation ("20a", "4500w", "#12", "12/2", "120/240").
fn electrical_number(token: &str) -> bool {
    if let Some(size) = token.strip_prefix('#') {
        return !size.is_empty() && size.chars().all(|c| c.is_ascii_digit() || c == '/');
    }
    if let Some((a, b)) = token.split_once('/') {
        let num = |s: &str| s.parse::<u32>().ok();
        return match (num(a), num(b)) {
            // 14/2, 12/3, 6/3: a cable of an AWG size with its conductor count.
            (Some(awg), Some(n)) if [14, 12, 10, 8, 6, 4, 2].contains(&awg) => (2..=4).contains(&n),
            // 120/240, 277/480: a system's voltages.
            (Some(lo), Some(hi)) => lo >= 100 && hi > lo && hi <= 1000,
            _ => false,
        };
    }
    let digits = token
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(token.len());
    digits > 0 && UNITS.contains(&&token[digits..])
}

/// The weight of one typed word: its own, the words it abbreviates or the word it misspells.
fn word_weight(word: &str) -> f64 {
    let w = weights();
    if let Some(&own) = w.get(word) {
        return own;
    }
    if electrical_number(word) {
        return 1.0;
    }
    let via = |text: &str| {
        text.split(|c: char| c.is_whitespace() || c == ',')
            .filter_map(|t| w.get(t).copied())
            .fold(0.0, f64::max)
    };
    if let Some(full) = abbreviation(word) {
        return via(full);
    }
    // A short word one edit from a corpus word is as often another real word ("gable",
    // "cable"): its correction counts half.
    let trust = if word.len() >= TRUSTED_CORRECTION {
        1.0
    } else {
        0.5
    };
    correction(word).map(|c| trust * via(c)).unwrap_or(0.0)
}

/// Corrections of words at least this long count fully.
const TRUSTED_CORRECTION: usize = 6;

/// The electrical weight of a question as typed: 1 for each strong word or electrical
/// number, ½ for each weak word, each distinct word once; a question citing a section or
/// table has weight 1 at least.
pub fn electrical_weight(question: &str) -> f64 {
    // A section or table number is the code's own vocabulary.
    if !super::sections::find_references(question).is_empty() {
        return MIN_ELECTRICAL;
    }
    let lower = question.to_lowercase();
    let tokens: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || ",;:?!()\"'".contains(c))
        .map(|t| t.trim_matches(|c: char| c == '.' || c == '-'))
        .filter(|t| !t.is_empty())
        .collect();
    let mut seen = std::collections::HashSet::new();
    let mut total = 0.0;
    for (i, t) in tokens.iter().enumerate() {
        // "20 a", "240 volt": a bare number followed by a unit word.
        let unit_next = t.chars().all(|c| c.is_ascii_digit())
            && tokens.get(i + 1).is_some_and(|n| UNITS.contains(n));
        let weight = if unit_next { 1.0 } else { word_weight(t) };
        if weight > 0.0 && seen.insert(*t) {
            total += weight;
        }
    }
    total
}

/// Whether the question names something electrical (see the module documentation).
pub fn is_electrical(question: &str) -> bool {
    electrical_weight(question) >= MIN_ELECTRICAL
}

/// Codes and standards other than the NEC whose subject is not electrical installation, as
/// chat questions name them: OSHA (worker safety: ladders, fall protection, scaffolds), ACCA's
/// Manuals J, D, S and T (HVAC loads, ducts, equipment, air distribution), and the plumbing,
/// mechanical and fuel-gas codes. Codes with electrical chapters or that the NEC itself relies
/// on (IRC, IBC, IECC, ASHRAE design temperatures) are not listed, nor is the International
/// Mechanical Code, whose initials are the trade's name for intermediate metal conduit.
const OTHER_STANDARDS: &[&str] = &["osha", "acca", "ipc", "upc", "umc", "ifgc"];
/// ACCA's manuals, named as "manual j".
const ACCA_MANUALS: &[&str] = &["j", "d", "s", "t"];

/// Whether the question asks about another trade's standard rather than the NEC: it names
/// one of [`OTHER_STANDARDS`] or an ACCA manual and neither the NEC nor a section or table.
/// "manual j load calc for a 2400 sq ft house" lands next to the NEC's dwelling load
/// calculation on meaning and words alike, and names two electrical-looking words; only the
/// standard it names says it is an HVAC question.
pub fn names_other_standard(question: &str) -> bool {
    if !super::sections::find_references(question).is_empty() {
        return false;
    }
    let lower = question.to_lowercase();
    let tokens: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .collect();
    if tokens.iter().any(|t| *t == "nec" || *t == "nfpa") {
        return false;
    }
    tokens.iter().any(|t| OTHER_STANDARDS.contains(t))
        || tokens
            .windows(2)
            .any(|w| w[0] == "manual" && ACCA_MANUALS.contains(&w[1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_questions_name_something_electrical() {
        for q in [
            "gfi needed on garage recep",
            "20a ckt at 150 ft, whats the vd",
            "derate for 9 ccc in one conduit",
            "box fill 4x4 deep with five 12s and a device",
            "4500w water heater",
            "size for 12/2 run",
            "working clearance for a 120/240 resi panel",
            "recepticle in a bathrom",
            "range on a 40 amp",
            "what changed in 210.12 in 2023",
            "rsd initiator location",
        ] {
            assert!(is_electrical(q), "{q}: {}", electrical_weight(q));
        }
    }

    #[test]
    fn other_trades_and_small_talk_do_not() {
        for q in [
            "what seer rating do i need for a new condenser",
            "guardrail height on a deck",
            "tell me a joke",
            "wire mesh in a slab",
            "how far off the ground should a mailbox be",
            "sub floor glue",
            "pool table felt",
            "ridge vent vs gable vent",
        ] {
            assert!(!is_electrical(q), "{q}: {}", electrical_weight(q));
        }
    }

    #[test]
    fn other_standards_are_recognised_unless_the_nec_is_named() {
        for q in [
            "manual j load calc for a 2400 sq ft house",
            "osha ladder 3 points of contact",
            "Manual D duct sizing",
            "upc vent size for a toilet",
        ] {
            assert!(names_other_standard(q), "{q}");
        }
        for q in [
            "manual transfer switch for a portable generator",
            "manual motor starter overloads",
            "osha and the nec on gfci for temp power",
            "does nfpa 70 or osha require gfci on a temp pole",
            "osha question about 590.6",
            "load calc for a 2400 sq ft house",
            "imc support spacing",
        ] {
            assert!(!names_other_standard(q), "{q}");
        }
    }

    #[test]
    fn numbers_need_an_electrical_unit() {
        assert!(electrical_number("20a"));
        assert!(electrical_number("4500w"));
        assert!(electrical_number("1.5kw"));
        assert!(electrical_number("#10"));
        assert!(electrical_number("12/3"));
        assert!(electrical_number("277/480"));
        assert!(!electrical_number("2x4"));
        assert!(!electrical_number("16"));
        assert!(!electrical_number("3/4"));
        assert!(!electrical_number("30ft"));
    }
}
