//! The edition in force for a project: the team's override, else the adoption table for its
//! location on its permit date (or today), else the edition the project was created with.

use chrono::NaiveDate;
use serde::Serialize;

use super::adoption::{rows_for_state, Adopted, Adoption, AdoptionError, Amendments, Source};
use super::edition::NecEdition;
use super::site::{state_name, Location, Site};
use crate::nec::units::Edition;

/// Why that edition.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Basis {
    /// The team set the edition for this project.
    Override {
        /// What the adoption table would give, for comparison.
        table_says: Option<String>,
    },
    /// The adoption table row for the location and date.
    Adoption {
        /// The row.
        row: Box<Adoption>,
    },
    /// The location adopts locally and no override is set.
    LocalAdoption {
        /// The row saying so.
        row: Box<Adoption>,
    },
    /// The table has no row in force on that date.
    NoRow,
    /// No location: the edition the project was created with.
    ProjectDefault,
}

/// The code that applies to a project, with the reason and what cannot be checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CodeInForce {
    /// The edition that applies, when known.
    pub edition: Option<NecEdition>,
    /// The edition Sparky calculates with: the one in force when its tables cover it,
    /// otherwise the project's own edition (and `cannot_check` says so).
    pub tables: Edition,
    /// Whether the shipped tables are the edition in force.
    pub tables_match: bool,
    /// The date the question is about.
    pub as_of: NaiveDate,
    /// Whether `as_of` is the permit date (else today).
    pub permit_date: bool,
    /// The location, when set.
    pub location: Option<Location>,
    /// Why.
    pub basis: Basis,
    /// One sentence: "2020 NEC, adopted by Washington effective 2020-11-01 (...)".
    pub explanation: String,
    /// Whether the jurisdiction amends the code (when the table says).
    pub amendments: Option<Amendments>,
    /// What Sparky cannot check for this project, when its tables are not the edition in force.
    pub cannot_check: Option<String>,
    /// Other things to know (unverified rows, newer undated adoptions).
    pub warnings: Vec<String>,
    /// The sources of the adoption row used.
    pub sources: Vec<Source>,
}

fn shipped() -> String {
    Edition::ALL
        .iter()
        .map(|e| e.year().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What cannot be checked when the edition in force is not one Sparky ships.
fn cannot_check(edition: Option<NecEdition>, used: Edition) -> Option<String> {
    match edition {
        Some(e) if e.tables().is_some() => None,
        Some(e) if e.year() > 2023 => Some(format!(
            "Sparky's tables cover NEC {} only; NEC {e} is not among them. Calculations and table \
             look-ups below use NEC {used} and are not checked against NEC {e}: in {e} load \
             calculations moved from Article 220 to Article 120 and several values changed \
             (see the recorded 2026 changes). Confirm every value against NEC {e} as adopted.",
            shipped()
        )),
        Some(e) => Some(format!(
            "Sparky's tables cover NEC {} only; NEC {e} is not among them. Calculations and table \
             look-ups below use NEC {used} and are not checked against NEC {e}; section numbers \
             and values may differ. Confirm every value against NEC {e} as adopted.",
            shipped()
        )),
        None => Some(format!(
            "The edition in force is not known, so nothing below is checked against it; \
             calculations use NEC {used}. Set the edition the authority having jurisdiction \
             enforces with `project set edition YEAR`."
        )),
    }
}

fn row_sentence(row: &Adoption, place: &str) -> String {
    let when = match row.effective {
        Some(d) => format!("effective {d}"),
        None => "effective date not established by the sources".to_string(),
    };
    let amend = match row.amendments {
        Amendments::Yes => ", with local amendments",
        _ => "",
    };
    let trust = if row.verified && !row.note.trim().is_empty() {
        // What a verified row says of its scope (a city with its own code) is passed on.
        format!("; {} sources agree; {}", row.sources.len(), row.note)
    } else if row.verified {
        format!("; {} sources agree", row.sources.len())
    } else {
        format!("; unverified: {}", row.note)
    };
    match row.adopted {
        Adopted::Edition(e) => format!("{e} NEC, adopted by {place} {when}{amend}{trust}"),
        Adopted::Local => format!("{place} has no statewide adoption ({})", row.note),
    }
}

/// The row in force at `as_of` among one state's rows (state level only), and a warning when
/// a newer row without an effective date may already apply.
fn pick(rows: &[&'static Adoption], as_of: NaiveDate) -> (Option<&'static Adoption>, Vec<String>) {
    let mut warnings = Vec::new();
    let chosen = rows
        .iter()
        .filter(|r| r.in_force_from() <= as_of)
        .max_by_key(|r| (r.in_force_from(), r.effective.is_some()))
        .copied();
    for r in rows {
        let newer_undated = r.effective.is_none() && r.checked > as_of;
        let chosen_older = chosen.is_none_or(|c| c.in_force_from() < r.in_force_from());
        if newer_undated && chosen_older {
            if let Adopted::Edition(e) = r.adopted {
                warnings.push(format!(
                    "NEC {e} was reported in force by {} but its effective date is not known; \
                     it may already apply on {as_of}.",
                    r.checked
                ));
            }
        }
    }
    (chosen, warnings)
}

/// The code in force for a project's `site`, on its permit date or `today`; `default` is the
/// edition the project was created with.
pub fn code_in_force(
    site: &Site,
    default: Edition,
    today: NaiveDate,
) -> Result<CodeInForce, AdoptionError> {
    let as_of = site.permit_date.unwrap_or(today);
    let permit_date = site.permit_date.is_some();
    let date_words = if permit_date {
        format!("on the permit date {as_of}")
    } else {
        format!("today ({as_of})")
    };

    // The table's answer for the location, if any.
    let mut warnings = Vec::new();
    let table: Option<(Option<&'static Adoption>, String)> = match &site.location {
        Some(loc) => {
            // County and city rows win over the state's when the table has them.
            let all = rows_for_state(&loc.state)?;
            let local: Vec<&Adoption> = all
                .iter()
                .copied()
                .filter(|r| {
                    (r.city.is_some() && r.city == loc.city)
                        || (r.city.is_none() && r.county.is_some() && r.county == loc.county)
                })
                .collect();
            let state_rows: Vec<&Adoption> = all
                .iter()
                .copied()
                .filter(|r| r.county.is_none() && r.city.is_none())
                .collect();
            let (row, w) = if local.is_empty() {
                pick(&state_rows, as_of)
            } else {
                pick(&local, as_of)
            };
            warnings.extend(w);
            let place = match row {
                Some(r) if r.city.is_some() || r.county.is_some() => loc.to_string(),
                _ => state_name(&loc.state).to_string(),
            };
            if row.is_some() && (loc.city.is_some() || loc.county.is_some()) && local.is_empty() {
                warnings.push(format!(
                    "The table has no county or city row for {loc}; the state's row is used. \
                     Cities and counties may adopt a different edition or amend it."
                ));
            }
            Some((row, place))
        }
        None => None,
    };

    let (edition, basis, explanation, amendments, sources) = match (site.edition_override, &table) {
        (Some(e), _) => {
            let table_says = table
                .as_ref()
                .and_then(|(row, place)| row.map(|r| row_sentence(r, place)));
            let also = table_says
                .as_ref()
                .map(|t| format!(" The adoption table gives: {t}."))
                .unwrap_or_default();
            (
                Some(e),
                Basis::Override {
                    table_says: table_says.clone(),
                },
                format!("{e} NEC, set by the team for this project (override).{also}"),
                table.as_ref().and_then(|(r, _)| r.map(|r| r.amendments)),
                Vec::new(),
            )
        }
        (None, Some((Some(row), place))) => {
            let sentence = row_sentence(row, place);
            if !row.verified {
                warnings.push(format!(
                    "The adoption row is unverified: {}. Confirm the edition with the authority \
                     having jurisdiction, or set it with `project set edition YEAR`.",
                    row.note
                ));
            }
            match row.adopted {
                Adopted::Edition(e) => (
                    Some(e),
                    Basis::Adoption {
                        row: Box::new((*row).clone()),
                    },
                    format!("{sentence} (in force {date_words})."),
                    Some(row.amendments),
                    row.sources.clone(),
                ),
                Adopted::Local => (
                    None,
                    Basis::LocalAdoption {
                        row: Box::new((*row).clone()),
                    },
                    format!(
                        "{sentence}. The city or county decides; set its edition with \
                         `project set edition YEAR`."
                    ),
                    None,
                    row.sources.clone(),
                ),
            }
        }
        (None, Some((None, place))) => (
            None,
            Basis::NoRow,
            format!(
                "The adoption table has no row for {place} in force {date_words}; set the \
                 edition with `project set edition YEAR`."
            ),
            None,
            Vec::new(),
        ),
        (None, None) => (
            Some(NecEdition::from(default)),
            Basis::ProjectDefault,
            format!(
                "{default} NEC, the edition the project was created with (no job-site location \
                 is set; `project set location STATE` derives it from the state's adoption)."
            ),
            None,
            Vec::new(),
        ),
    };
    let tables = edition.and_then(NecEdition::tables).unwrap_or(default);
    let tables_match = edition.and_then(NecEdition::tables).is_some();
    Ok(CodeInForce {
        edition,
        tables,
        tables_match,
        as_of,
        permit_date,
        location: site.location.clone(),
        basis,
        explanation,
        amendments,
        cannot_check: cannot_check(edition, tables),
        warnings,
        sources,
    })
}

/// Today's date (UTC) for projects without a permit date.
pub fn today() -> NaiveDate {
    chrono::Utc::now().date_naive()
}

/// What the code in force of a place of work depends on: its site (location, permit date,
/// override) and the edition it was created with. Projects implement it; the jurisdiction
/// does not need to know what a project is.
pub trait Sited {
    /// Location, permit date and edition override.
    fn site(&self) -> &Site;
    /// The edition it was created with (the fallback).
    fn created_edition(&self) -> Edition;
}

/// The code in force for a stored project today (or on its permit date). Falls back to the
/// project's own edition, with the reason, if the shipped table could not be read.
pub fn for_project(project: &impl Sited) -> CodeInForce {
    let site = project.site();
    let edition = project.created_edition();
    let today = today();
    code_in_force(site, edition, today).unwrap_or_else(|e| CodeInForce {
        edition: Some(NecEdition::from(edition)),
        tables: edition,
        tables_match: true,
        as_of: site.permit_date.unwrap_or(today),
        permit_date: site.permit_date.is_some(),
        location: site.location.clone(),
        basis: Basis::ProjectDefault,
        explanation: format!(
            "{} NEC, the edition the project was created with (the adoption table could not be \
             read: {e}).",
            edition
        ),
        amendments: None,
        cannot_check: None,
        warnings: Vec::new(),
        sources: Vec::new(),
    })
}

impl CodeInForce {
    /// One paragraph for people and for the model: the edition, why, and what cannot be checked.
    pub fn summary(&self) -> String {
        let mut s = self.explanation.clone();
        if let Some(c) = &self.cannot_check {
            s.push(' ');
            s.push_str(c);
        }
        for w in &self.warnings {
            s.push(' ');
            s.push_str(w);
        }
        s
    }

    /// The short label shown next to a project's name: "NEC 2020 (Washington, table)" or
    /// "NEC 2017 (override)".
    pub fn label(&self) -> String {
        let ed = self
            .edition
            .map(|e| format!("NEC {e}"))
            .unwrap_or_else(|| "NEC edition unknown".into());
        let why = match &self.basis {
            Basis::Override { .. } => "team override".to_string(),
            Basis::Adoption { row } if row.verified => {
                format!("adopted by {}", state_name(&row.state))
            }
            Basis::Adoption { row } => {
                format!("adopted by {}, unverified", state_name(&row.state))
            }
            Basis::LocalAdoption { row } => {
                format!("{} adopts locally", state_name(&row.state))
            }
            Basis::NoRow => "no adoption row".into(),
            Basis::ProjectDefault => "project default, no location".into(),
        };
        let calc = if self.tables_match {
            String::new()
        } else {
            format!("; calculations use NEC {}", self.tables)
        };
        format!("{ed} ({why}{calc})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(y: i32, m: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, day).unwrap()
    }

    fn site(loc: &str, permit: Option<NaiveDate>) -> Site {
        Site {
            location: Some(loc.parse().unwrap()),
            permit_date: permit,
            edition_override: None,
        }
    }

    #[test]
    fn washington_by_date() {
        let today = d(2026, 11, 24);
        // Before the 2017 adoption took effect: the 2014 row.
        let c = code_in_force(&site("WA", Some(d(2017, 6, 30))), Edition::Nec2023, today).unwrap();
        assert_eq!(c.edition.map(NecEdition::year), Some(2014));
        assert!(c
            .explanation
            .contains("adopted by Washington effective 2014-07-01"));
        assert!(c.cannot_check.as_deref().unwrap().contains("NEC 2014"));
        // On the day it took effect: 2017, which Sparky calculates with.
        let c = code_in_force(&site("WA", Some(d(2017, 7, 1))), Edition::Nec2023, today).unwrap();
        assert_eq!(c.edition.map(NecEdition::year), Some(2017));
        assert_eq!(c.tables, Edition::Nec2017);
        assert!(c.tables_match && c.cannot_check.is_none());
        // 2020 row is unverified (two dates): the answer says so.
        let c = code_in_force(&site("WA", Some(d(2021, 6, 1))), Edition::Nec2023, today).unwrap();
        assert_eq!(c.edition.map(NecEdition::year), Some(2020));
        assert!(c.explanation.contains("unverified"));
        assert!(c.warnings.iter().any(|w| w.contains("unverified")));
        // A 2025 permit: 2020 still by date, with the undated 2023 adoption flagged.
        let c = code_in_force(&site("WA", Some(d(2025, 1, 1))), Edition::Nec2023, today).unwrap();
        assert_eq!(c.edition.map(NecEdition::year), Some(2020));
        assert!(c
            .warnings
            .iter()
            .any(|w| w.contains("NEC 2023 was reported in force")));
        // Today: the undated 2023 row is in force by the day it was checked.
        let c = code_in_force(&site("WA", None), Edition::Nec2020, today).unwrap();
        assert_eq!(c.edition.map(NecEdition::year), Some(2023));
        assert!(!c.permit_date);
    }

    /// New York: the Uniform Code puts the NEC in force statewide outside New York City
    /// (2017 from May 12, 2020); Texas: the 2023 NEC from September 1, 2023, and no row before.
    #[test]
    fn new_york_statewide_and_texas_by_date() {
        let today = d(2026, 11, 27);
        let c = code_in_force(
            &site("NY, Albany", Some(d(2020, 5, 12))),
            Edition::Nec2023,
            today,
        )
        .unwrap();
        assert_eq!(c.edition.map(NecEdition::year), Some(2017));
        assert!(c.explanation.contains("New York City"), "{}", c.explanation);
        let c = code_in_force(
            &site("NY, Albany", Some(d(2020, 5, 11))),
            Edition::Nec2023,
            today,
        )
        .unwrap();
        assert_eq!(c.edition.map(NecEdition::year), Some(2014));
        let c = code_in_force(&site("TX", Some(d(2023, 9, 1))), Edition::Nec2023, today).unwrap();
        assert_eq!(c.edition.map(NecEdition::year), Some(2023));
        let c = code_in_force(&site("TX", Some(d(2023, 8, 31))), Edition::Nec2023, today).unwrap();
        assert_eq!(c.edition, None, "no row before the 2023 adoption");
    }

    #[test]
    fn local_adoption_and_missing_rows() {
        let today = d(2026, 11, 24);
        let c = code_in_force(&site("AZ, Phoenix", None), Edition::Nec2023, today).unwrap();
        assert_eq!(c.edition, None);
        assert!(matches!(c.basis, Basis::LocalAdoption { .. }));
        assert!(c.cannot_check.is_some());
        assert_eq!(c.tables, Edition::Nec2023);
        let c = code_in_force(&site("WA", Some(d(2010, 1, 1))), Edition::Nec2023, today).unwrap();
        assert!(matches!(c.basis, Basis::NoRow));
        assert_eq!(c.edition, None);
    }

    #[test]
    fn override_wins_and_shows_the_table() {
        let mut s = site("WA", Some(d(2021, 6, 1)));
        s.edition_override = NecEdition::new(2017);
        let c = code_in_force(&s, Edition::Nec2023, d(2026, 11, 24)).unwrap();
        assert_eq!(c.edition.map(NecEdition::year), Some(2017));
        assert_eq!(c.tables, Edition::Nec2017);
        assert!(c.explanation.contains("override"));
        assert!(c.explanation.contains("2020 NEC, adopted by Washington"));
        assert!(c.label().contains("team override"));
        // An override to an edition Sparky does not ship says what it cannot check.
        s.edition_override = NecEdition::new(2026);
        let c = code_in_force(&s, Edition::Nec2023, d(2026, 11, 24)).unwrap();
        assert!(!c.tables_match);
        assert!(c.cannot_check.unwrap().contains("Article 120"));
    }

    #[test]
    fn no_location_uses_the_project_edition() {
        let c = code_in_force(&Site::default(), Edition::Nec2020, d(2026, 11, 24)).unwrap();
        assert_eq!(c.edition.map(NecEdition::year), Some(2020));
        assert!(matches!(c.basis, Basis::ProjectDefault));
        assert!(c.cannot_check.is_none());
    }
}
