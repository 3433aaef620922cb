//! The corpus shipped with the bot: the team's own section summaries (TOML under
//! `src/rag/corpus/summaries/`) and every NEC table the code ships, rendered as text.

use include_dir::{include_dir, Dir};
use serde::Deserialize;

use crate::nec;
use crate::store::NewChunk;

static SUMMARIES: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/src/rag/corpus/summaries");

/// Source name of the built-in summaries.
pub const SUMMARIES_SOURCE: &str = "Sparky summaries";
/// Source name of the built-in tables.
pub const TABLES_SOURCE: &str = "Sparky NEC tables";

#[derive(Debug, Deserialize)]
struct SummaryFile {
    #[serde(default)]
    section: Vec<Summary>,
}

/// One team-written section summary.
#[derive(Debug, Clone, Deserialize)]
pub struct Summary {
    /// Canonical reference.
    pub section: String,
    /// Article number.
    #[serde(default)]
    pub article: u32,
    /// Short title.
    pub title: String,
    /// Editions the summary holds for.
    #[serde(default)]
    pub editions: Vec<i32>,
    /// What changed between editions.
    #[serde(default)]
    pub changes: String,
    /// Words people use when asking.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// The summary.
    pub text: String,
}

/// Every built-in summary; a malformed file is a build-time bug caught by the tests.
pub fn summaries() -> Result<Vec<Summary>, String> {
    let mut out = Vec::new();
    let mut files: Vec<_> = SUMMARIES.files().collect();
    files.sort_by_key(|f| f.path().to_path_buf());
    for f in files {
        if f.path().extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let text = f
            .contents_utf8()
            .ok_or_else(|| format!("{} is not UTF-8", f.path().display()))?;
        let parsed: SummaryFile =
            toml::from_str(text).map_err(|e| format!("{}: {e}", f.path().display()))?;
        out.extend(parsed.section);
    }
    Ok(out)
}

fn edition_of(editions: &[i32]) -> Option<i32> {
    // Valid for exactly one edition -> tagged; for more -> untagged (passes any filter).
    match editions {
        [one] => Some(*one),
        _ => None,
    }
}

/// Summaries as chunks.
pub fn summary_chunks() -> Result<Vec<NewChunk>, String> {
    Ok(summaries()?
        .into_iter()
        .map(|s| {
            let mut text = format!("{} {}\n{}", s.section, s.title, s.text.trim());
            if !s.changes.trim().is_empty() {
                text.push_str(&format!("\nEdition changes: {}", s.changes.trim()));
            }
            if !s.keywords.is_empty() {
                text.push_str(&format!("\nKeywords: {}", s.keywords.join(", ")));
            }
            NewChunk {
                section: Some(s.section.clone()),
                edition: edition_of(&s.editions),
                page: None,
                heading: s.title.clone(),
                content_hash: super::hash(&text),
                text,
            }
        })
        .collect())
}

/// (file, section, title, editions) of each NEC table shipped as data.
const TABLE_INDEX: &[(&str, &str, &str, &[i32])] = &[
    ("table_310_16_ampacity.csv", "Table 310.16", "Ampacities of insulated conductors (not more than three current-carrying conductors, 30 °C ambient), copper and aluminum, 60/75/90 °C, with the 240.4(D) small-conductor overcurrent limits", &[]),
    ("table_310_15_B1_temp_correction_30C.csv", "Table 310.15(B)(1)", "Ambient temperature correction factors based on 30 °C (2023: Table 310.15(B)(1)(1))", &[]),
    ("table_310_15_B1_2_temp_correction_40C.csv", "Table 310.15(B)(2)", "Ambient temperature correction factors based on 40 °C (2023: Table 310.15(B)(1)(2))", &[]),
    ("table_310_15_C1_adjustment.csv", "Table 310.15(C)(1)", "Adjustment factors for more than three current-carrying conductors in a raceway or cable", &[]),
    ("ch9_table8_conductor_properties.csv", "Chapter 9 Table 8", "Conductor properties: area, stranding, diameter, DC resistance at 75 °C", &[]),
    ("ch9_table9_ac_impedance.csv", "Chapter 9 Table 9", "AC resistance and reactance, ohms to neutral per 1000 ft, 600 V cables, three single conductors in conduit, 60 Hz, 75 °C", &[]),
    ("table_240_6A_standard_ratings.csv", "Table 240.6(A)", "Standard ampere ratings for fuses and inverse-time circuit breakers", &[]),
    ("table_250_122_egc.csv", "Table 250.122", "Minimum size of equipment grounding conductors by overcurrent device rating", &[]),
    ("table_250_66_gec.csv", "Table 250.66", "Grounding electrode conductor for alternating-current systems by size of the largest service conductor", &[]),
    ("table_220_12_unit_lighting_2020.csv", "Table 220.12", "General lighting loads by non-dwelling occupancy (unit loads, VA per square foot)", &[2020]),
    ("table_220_42A_unit_lighting_2023.csv", "Table 220.42(A)", "General lighting loads by non-dwelling occupancy (unit loads, VA per square foot)", &[2023]),
    ("table_220_42_lighting_demand_factors.csv", "Table 220.42", "Lighting load demand factors (2023: Table 220.45)", &[]),
    ("table_220_54_dryer_demand_factors.csv", "Table 220.54", "Demand factors for household electric clothes dryers", &[]),
    ("table_220_55_ranges.csv", "Table 220.55", "Demand factors and loads for household electric ranges, wall-mounted ovens, counter-mounted cooking units", &[]),
    ("table_430_52_motor_ocpd_pct.csv", "Table 430.52", "Maximum rating or setting of motor branch-circuit short-circuit and ground-fault protective devices (2023: Table 430.52(C)(1))", &[]),
    ("table_430_248_single_phase_flc.csv", "Table 430.248", "Full-load currents of single-phase AC motors", &[]),
    ("table_430_250_three_phase_flc.csv", "Table 430.250", "Full-load current of three-phase AC motors", &[]),
];

/// Rows per table chunk (the header is repeated in each).
const ROWS_PER_CHUNK: usize = 24;

/// Every shipped NEC table rendered as Markdown chunks.
pub fn table_chunks() -> Result<Vec<NewChunk>, String> {
    let mut out = Vec::new();
    for (file, section, title, editions) in TABLE_INDEX {
        let csv = nec::tables::FILES
            .iter()
            .find(|(name, _)| name == file)
            .map(|(_, text)| *text)
            .ok_or_else(|| format!("table data {file} is missing"))?;
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(csv.as_bytes());
        let mut records = Vec::new();
        for r in reader.records() {
            let r = r.map_err(|e| format!("{file}: {e}"))?;
            // A cell's `|` would end a Markdown cell early.
            records.push(r.iter().map(|c| c.replace('|', "\\|")).collect::<Vec<_>>());
        }
        let mut records = records.into_iter();
        let head_cells = records.next().ok_or_else(|| format!("{file} is empty"))?;
        let rows: Vec<Vec<String>> = records.collect();
        let parts = rows.len().div_ceil(ROWS_PER_CHUNK).max(1);
        for (i, chunk) in rows.chunks(ROWS_PER_CHUNK).enumerate() {
            let mut text = format!("NEC {section}: {title}");
            if parts > 1 {
                text.push_str(&format!(" (part {} of {parts})", i + 1));
            }
            text.push_str(&format!(
                "\n| {} |\n|{}\n",
                head_cells.join(" | "),
                "---|".repeat(head_cells.len())
            ));
            for row in chunk {
                let cells: Vec<&str> = row
                    .iter()
                    .map(|c| if c.is_empty() { "—" } else { c.as_str() })
                    .collect();
                text.push_str(&format!("| {} |\n", cells.join(" | ")));
            }
            out.push(NewChunk {
                section: Some((*section).to_string()),
                edition: edition_of(editions),
                page: None,
                heading: format!("{section} {title}"),
                content_hash: super::hash(&text),
                text,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rag::sections::canonical;

    #[test]
    fn the_summaries_parse_and_are_numerous_and_canonical() {
        let all = summaries().unwrap();
        assert!(all.len() >= 150, "only {} summaries", all.len());
        for s in &all {
            assert!(!s.text.trim().is_empty(), "{} has no text", s.section);
            if s.section != "100" {
                assert_eq!(
                    canonical(&s.section).as_deref(),
                    Some(s.section.as_str()),
                    "non-canonical reference"
                );
            }
            assert!(
                s.editions.iter().all(|e| [2017, 2020, 2023].contains(e)),
                "{}: {:?}",
                s.section,
                s.editions
            );
        }
    }

    #[test]
    fn every_shipped_table_renders() {
        let chunks = table_chunks().unwrap();
        for (_, section, _, _) in TABLE_INDEX {
            assert!(
                chunks
                    .iter()
                    .any(|c| c.section.as_deref() == Some(*section)),
                "{section} missing"
            );
        }
        let ampacity = chunks
            .iter()
            .find(|c| c.section.as_deref() == Some("Table 310.16") && c.text.contains("| 3/0 |"))
            .expect("3/0 row");
        assert!(ampacity.text.contains("| 3/0 | AWG |"), "{}", ampacity.text);
    }

    #[test]
    fn every_table_is_well_formed_markdown() {
        for c in table_chunks().unwrap() {
            let rows: Vec<&str> = c.text.lines().skip(1).collect();
            // Cells are split at `|` not escaped as `\|`.
            let cells = |l: &str| l.trim_matches('|').replace("\\|", "").split('|').count();
            let width = cells(rows[0]);
            assert_eq!(rows[1], format!("|{}", "---|".repeat(width)), "{}", c.text);
            for r in &rows[2..] {
                assert!(r.starts_with("| ") && r.ends_with(" |"), "{r}");
                assert_eq!(cells(r), width, "{r} in {}", c.heading);
            }
        }
    }
}
