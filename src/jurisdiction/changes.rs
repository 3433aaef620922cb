//! What moved or changed in NEC 2026 for the sections Sparky's corpus and tools use, from
//! public summaries of the changes (never NFPA text). Sparky ships no 2026 tables; this list
//! is what an answer for a 2026 project points at instead of silently using 2023.

use std::sync::OnceLock;

use serde::Serialize;

use super::adoption::AdoptionError;
use crate::nec::tables::parse_csv;

const CHANGES: &str = include_str!("data/changes_2026.csv");

/// One recorded change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Where it was in NEC 2023.
    pub nec_2023: String,
    /// Where it is in NEC 2026.
    pub nec_2026: String,
    /// What changed, in our words.
    pub change: String,
    /// Public summaries that report it.
    pub sources: Vec<String>,
    /// At least two summaries report it.
    pub corroborated: bool,
}

fn load() -> Result<Vec<Change>, AdoptionError> {
    const F: &str = "changes_2026.csv";
    let t = parse_csv(F, CHANGES).map_err(|e| AdoptionError {
        file: F,
        line: 0,
        message: e.to_string(),
    })?;
    t.rows
        .iter()
        .map(|(line, c)| {
            let sources: Vec<String> = c[3]
                .split(';')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            if sources.is_empty() || sources.iter().any(|s| !s.starts_with("https://")) {
                return Err(AdoptionError {
                    file: F,
                    line: *line,
                    message: "every change needs https sources".into(),
                });
            }
            Ok(Change {
                nec_2023: c[0].clone(),
                nec_2026: c[1].clone(),
                change: c[2].clone(),
                corroborated: sources.len() >= 2,
                sources,
            })
        })
        .collect()
}

/// The recorded 2026 changes.
pub fn changes_2026() -> Result<&'static [Change], AdoptionError> {
    static T: OnceLock<Result<Vec<Change>, AdoptionError>> = OnceLock::new();
    T.get_or_init(load)
        .as_ref()
        .map(Vec::as_slice)
        .map_err(Clone::clone)
}

/// The 2026 location of a 2023 section ("220.82" -> "120.82"), when recorded or when it lies
/// in the relocated Article 220.
pub fn where_in_2026(section_2023: &str) -> Option<String> {
    let s = section_2023.trim();
    let bare = s.trim_start_matches("Table ").trim();
    let recorded = changes_2026()
        .ok()?
        .iter()
        .find(|c| c.nec_2023 == bare)
        .map(|c| c.nec_2026.clone());
    recorded.or_else(|| {
        bare.strip_prefix("220.").map(|rest| {
            format!(
                "{}120.{rest}",
                if s.starts_with("Table ") {
                    "Table "
                } else {
                    ""
                }
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_load_with_sources() {
        let c = changes_2026().unwrap();
        assert!(c.len() >= 10);
        assert!(c.iter().all(|c| !c.sources.is_empty()));
        let moved = c.iter().find(|c| c.nec_2023 == "Article 220").unwrap();
        assert!(moved.corroborated && moved.sources.len() >= 2);
        assert_eq!(where_in_2026("220.82").as_deref(), Some("120.82"));
        assert_eq!(
            where_in_2026("Table 220.55").as_deref(),
            Some("Table 120.55")
        );
        assert_eq!(where_in_2026("250.122"), None);
    }
}
