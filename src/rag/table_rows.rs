//! Table rows computed by the engine for questions that name a table's key: "what size EGC
//! for a 60 A circuit" names an overcurrent rating, so the answer leads with Table 250.122's
//! row for 60 A, looked up in the tables the calculations use, with its citation. This is what
//! answers a question when no language model is configured, and gives the model the exact row.

use std::sync::OnceLock;

use regex::Regex;

use super::search::Passage;
use crate::nec::tables;
use crate::nec::units::{ConductorSize, Edition, Material, TempRating};

/// Source named on computed rows.
pub const SOURCE: &str = "Sparky NEC tables (computed)";

fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| {
        Regex::new(pattern).unwrap_or_else(|e| panic!("table key regex is invalid: {e}"))
    })
}

/// "60 A", "60a", "60 amp", "60-amp": an ampere rating.
fn amps(q: &str) -> Option<f64> {
    static RE: OnceLock<Regex> = OnceLock::new();
    re(&RE, r"(?i)\b(\d{1,4})\s*-?\s*(?:a|amps?|amperes?)\b")
        .captures(q)
        .and_then(|c| c[1].parse::<f64>().ok())
        .filter(|a| *a > 0.0)
}

/// "#12", "12 awg", "3/0", "250 kcmil", "250 mcm": a conductor size.
fn conductor_size(q: &str) -> Option<ConductorSize> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let cap = re(
        &RE,
        r"(?i)(?:#\s*(\d{1,2}(?:/0)?)\b|\b([1-4]/0)\b|\b(\d{1,2})\s*(?:awg|ga|gauge)\b|\b(\d{3,4})\s*(?:kcmil|mcm)\b)",
    )
    .captures(q)?;
    if let Some(k) = cap.get(4) {
        return format!("{} kcmil", k.as_str()).parse().ok();
    }
    let s = cap.get(1).or(cap.get(2)).or(cap.get(3))?.as_str();
    s.parse().ok()
}

fn material(q: &str) -> Material {
    static RE: OnceLock<Regex> = OnceLock::new();
    if re(&RE, r"(?i)\b(al|alum|aluminum|aluminium)\b").is_match(q) {
        Material::Aluminum
    } else {
        Material::Copper
    }
}

/// "9 ccc", "6 current-carrying conductors", "8 conductors in a conduit".
fn conductor_count(q: &str) -> Option<u32> {
    static RE: OnceLock<Regex> = OnceLock::new();
    re(
        &RE,
        r"(?i)\b(\d{1,3})\s*(?:cccs?\b|current[- ]carrying|(?:conductors|wires)\s+in\s+(?:a|one|the)\s+(?:conduit|raceway|pipe|cable))",
    )
    .captures(q)
    .and_then(|c| c[1].parse().ok())
    .filter(|n| *n > 0)
}

fn mentions(q: &str, cell: &'static OnceLock<Regex>, pattern: &str) -> bool {
    re(cell, pattern).is_match(q)
}

fn passage(section: &str, heading: &str, text: String) -> Passage {
    Passage {
        section: Some(section.to_string()),
        edition: None,
        source: SOURCE.to_string(),
        page: None,
        heading: heading.to_string(),
        text,
        score: 2.0,
    }
}

/// Rows of the shipped tables that answer `question` directly, best first; empty when the
/// question names no table key (or the key is outside the table).
pub fn rows_for(question: &str, edition: Option<i32>) -> Vec<Passage> {
    let q = question;
    let mut out = Vec::new();
    static EGC: OnceLock<Regex> = OnceLock::new();
    static GEC: OnceLock<Regex> = OnceLock::new();
    static AMPACITY: OnceLock<Regex> = OnceLock::new();
    static STANDARD: OnceLock<Regex> = OnceLock::new();
    let is_egc = mentions(
        q,
        &EGC,
        r"(?i)\begcs?\b|equipment[- ]grounding|\bground(?:ing)?\s+(?:wire|conductor)\b",
    );
    let is_gec = mentions(
        q,
        &GEC,
        r"(?i)\bgecs?\b|grounding[- ]electrode[- ]conductor",
    );

    // Table 250.122: EGC by the rating of the overcurrent device ahead of the circuit.
    if is_egc && !is_gec {
        if let Some(a) = amps(q) {
            if let (Ok(cu), Ok(al)) = (
                tables::egc_for_ocpd(a, Material::Copper),
                tables::egc_for_ocpd(a, Material::Aluminum),
            ) {
                out.push(passage(
                    "Table 250.122",
                    "Minimum size of equipment grounding conductors (computed)",
                    format!(
                        "Table 250.122 row for an overcurrent device rated {a} A: the equipment \
                         grounding conductor must be at least {cu} copper or {al} aluminum or \
                         copper-clad aluminum. Where the circuit conductors are upsized (for \
                         voltage drop, for instance), 250.122(B) increases the EGC in proportion.",
                    ),
                ));
            }
        }
    }

    // Table 250.66: GEC by the size of the largest service-entrance conductor.
    if is_gec {
        if let Some(size) = conductor_size(q) {
            let service = material(q);
            if let (Ok(cu), Ok(al)) = (
                tables::gec_for_area(size.circular_mils(), service, Material::Copper),
                tables::gec_for_area(size.circular_mils(), service, Material::Aluminum),
            ) {
                out.push(passage(
                    "Table 250.66",
                    "Grounding electrode conductor (computed)",
                    format!(
                        "Table 250.66 row for a largest ungrounded service conductor of {size} \
                         {service}: the grounding electrode conductor must be at least {cu} \
                         copper or {al} aluminum. A conductor to a ground rod alone need not be \
                         larger than 6 AWG copper, to a concrete-encased electrode 4 AWG copper \
                         (250.66(A), (B)).",
                    ),
                ));
            }
        }
    }

    // Table 310.16: ampacity of a named conductor size.
    if !is_egc
        && !is_gec
        && mentions(
            q,
            &AMPACITY,
            r"(?i)ampacity|how many amps|amps? (?:is|can|does)|rated for|good for|carry",
        )
    {
        if let Some(size) = conductor_size(q) {
            let m = material(q);
            let cells: Vec<String> = [TempRating::C60, TempRating::C75, TempRating::C90]
                .into_iter()
                .filter_map(|t| {
                    tables::ampacity(size, m, t)
                        .ok()
                        .map(|a| format!("{a} A at {}", t))
                })
                .collect();
            if !cells.is_empty() {
                let mut text = format!(
                    "Table 310.16 row for {size} {m} (not more than three current-carrying \
                     conductors, 30 °C ambient): {}.",
                    cells.join(", ")
                );
                if let ConductorSize::Awg(g @ (10 | 12 | 14)) = size {
                    let limit = match (g, m) {
                        (14, Material::Copper) => Some(15),
                        (12, Material::Copper) => Some(20),
                        (10, Material::Copper) => Some(30),
                        (12, Material::Aluminum) => Some(15),
                        (10, Material::Aluminum) => Some(25),
                        _ => None,
                    };
                    if let Some(l) = limit {
                        text.push_str(&format!(
                            " The overcurrent device on it is limited to {l} A by 240.4(D)."
                        ));
                    }
                }
                text.push_str(
                    " The column used is limited by the terminals' rating (110.14(C)), and \
                     correction and adjustment factors apply to the chosen column.",
                );
                out.push(passage(
                    "Table 310.16",
                    "Allowable ampacity (computed)",
                    text,
                ));
            }
        }
    }

    // Table 310.15(C)(1): adjustment for the number of current-carrying conductors.
    if let Some(n) = conductor_count(q) {
        if let Ok(f) = tables::adjustment_factor(n) {
            out.push(passage(
                "Table 310.15(C)(1)",
                "Adjustment factor for more than three current-carrying conductors (computed)",
                format!(
                    "Table 310.15(C)(1) row for {n} current-carrying conductors in one raceway \
                     or cable: multiply the ampacity by {:.0} percent.{}",
                    f * 100.0,
                    if n <= 3 {
                        " Three or fewer need no adjustment."
                    } else {
                        ""
                    }
                ),
            ));
        }
    }

    // Table 240.6(A): standard ratings.
    if mentions(
        q,
        &STANDARD,
        r"(?i)standard\s+(?:size|rating|breaker|fuse|ampere)|next (?:size|standard)",
    ) {
        if let Some(a) = amps(q) {
            let ed = match edition {
                Some(2020) => Edition::Nec2020,
                _ => Edition::Nec2023,
            };
            let kind = tables::DeviceKind::CircuitBreaker;
            if let (Ok(standard), Ok(above)) = (
                tables::is_standard_rating(a, ed, kind),
                tables::standard_rating_at_or_above(a, ed, kind),
            ) {
                let text = if standard {
                    format!(
                        "Table 240.6(A): {a} A is a standard ampere rating for fuses and \
                         inverse-time circuit breakers ({} edition).",
                        ed.year()
                    )
                } else {
                    format!(
                        "Table 240.6(A): {a} A is not a standard ampere rating; the next \
                         standard rating above it is {above} A ({} edition). 240.4(B) allows \
                         the next size up only on circuits of 800 A or less under its \
                         conditions.",
                        ed.year()
                    )
                };
                out.push(passage(
                    "Table 240.6(A)",
                    "Standard ampere ratings (computed)",
                    text,
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(q: &str) -> Passage {
        rows_for(q, None)
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("no row for {q:?}"))
    }

    #[test]
    fn egc_by_ocpd_rating() {
        let p = first("What size EGC for a 60 A circuit?");
        assert_eq!(p.section.as_deref(), Some("Table 250.122"));
        // Table 250.122, 60 A: 10 AWG copper, 8 AWG aluminum.
        assert!(p.text.contains("10 AWG copper"), "{}", p.text);
        assert!(p.text.contains("8 AWG aluminum"), "{}", p.text);
        let p = first("ground wire size for a 200 amp feeder breaker");
        // 200 A: 6 AWG copper, 4 AWG aluminum.
        assert!(p.text.contains("6 AWG copper") && p.text.contains("4 AWG aluminum"));
    }

    #[test]
    fn gec_by_service_conductor() {
        let p = first("gec size for 3/0 cu service entrance");
        assert_eq!(p.section.as_deref(), Some("Table 250.66"));
        // Table 250.66, 2/0 or 3/0 copper: 4 AWG copper, 2 AWG aluminum.
        assert!(p.text.contains("4 AWG copper"), "{}", p.text);
        assert!(p.text.contains("2 AWG aluminum"), "{}", p.text);
    }

    #[test]
    fn ampacity_by_conductor_size() {
        let p = first("what is the ampacity of #12 thhn");
        assert_eq!(p.section.as_deref(), Some("Table 310.16"));
        // Table 310.16, 12 AWG copper: 20/25/30 A; 240.4(D) 20 A.
        assert!(p.text.contains("20 A at 60"), "{}", p.text);
        assert!(p.text.contains("30 A at 90"), "{}", p.text);
        assert!(p.text.contains("limited to 20 A"), "{}", p.text);
        let p = first("ampacity of 1/0 al");
        // 1/0 aluminum: 100/120/135 A.
        assert!(p.text.contains("120 A at 75"), "{}", p.text);
    }

    #[test]
    fn adjustment_by_number_of_conductors() {
        let p = first("derate for 9 ccc in one conduit");
        assert_eq!(p.section.as_deref(), Some("Table 310.15(C)(1)"));
        // 7-9 conductors: 70 percent.
        assert!(p.text.contains("70 percent"), "{}", p.text);
    }

    #[test]
    fn standard_ratings() {
        let p = first("is 45a a standard breaker size");
        assert_eq!(p.section.as_deref(), Some("Table 240.6(A)"));
        assert!(p.text.contains("45 A is a standard"), "{}", p.text);
        let p = first("next standard size above 52 amps");
        assert!(
            p.text.contains("next standard rating above it is 60 A"),
            "{}",
            p.text
        );
    }

    #[test]
    fn questions_without_a_key_get_no_row() {
        assert!(rows_for("what is an EGC", None).is_empty());
        assert!(rows_for("gfci in a garage", None).is_empty());
        assert!(rows_for("how deep for pvc under a driveway", None).is_empty());
    }
}
