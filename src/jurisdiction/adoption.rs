//! The adoption table shipped as data: which NEC edition each state adopted, from when, and
//! which public sources say so.

use std::collections::HashMap;
use std::sync::OnceLock;

use chrono::NaiveDate;
use serde::Serialize;

use super::edition::NecEdition;
use super::site::STATES;
use crate::nec::tables::parse_csv;

const ADOPTIONS: &str = include_str!("data/adoptions.csv");
const SOURCES: &str = include_str!("data/sources.csv");

/// The shipped data could not be read (a build with broken data files fails its tests).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("adoption data {file} line {line}: {message}")]
pub struct AdoptionError {
    /// File name.
    pub file: &'static str,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// A public page an adoption row relies on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    /// Short id used in `adoptions.csv`.
    pub id: String,
    /// Publisher and title.
    pub title: String,
    /// Address.
    pub url: String,
}

/// What a jurisdiction adopted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "edition")]
pub enum Adopted {
    /// A statewide (or county/city-wide) edition.
    Edition(NecEdition),
    /// No adoption at this level: the cities and counties adopt their own.
    Local,
}

/// Whether the jurisdiction amends the model code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Amendments {
    /// It does.
    Yes,
    /// It adopts the model code as published.
    No,
    /// The sources do not say.
    Unknown,
}

/// One row of the adoption table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Adoption {
    /// USPS code.
    pub state: String,
    /// County, for a county adoption.
    pub county: Option<String>,
    /// City, for a city adoption.
    pub city: Option<String>,
    /// The edition (or local adoption).
    pub adopted: Adopted,
    /// When it took effect; `None` when the sources do not establish it.
    pub effective: Option<NaiveDate>,
    /// Whether the jurisdiction amends it.
    pub amendments: Amendments,
    /// The sources that state this row.
    pub sources: Vec<Source>,
    /// When the row was last checked against its sources.
    pub checked: NaiveDate,
    /// At least two sources agree on the edition and the date, and none contradicts them.
    pub verified: bool,
    /// Why a row is unverified, and anything else an answer should pass on.
    pub note: String,
}

impl Adoption {
    /// The first date the row is known to be in force: its effective date, or (undated) the
    /// day it was checked.
    pub fn in_force_from(&self) -> NaiveDate {
        self.effective.unwrap_or(self.checked)
    }
}

fn err(file: &'static str, line: usize, message: impl Into<String>) -> AdoptionError {
    AdoptionError {
        file,
        line,
        message: message.into(),
    }
}

fn load() -> Result<Vec<Adoption>, AdoptionError> {
    let data_err =
        |file: &'static str| move |e: crate::nec::error::NecError| err(file, 0, e.to_string());
    let sources = parse_csv("sources.csv", SOURCES).map_err(data_err("sources.csv"))?;
    let mut by_id: HashMap<String, Source> = HashMap::new();
    for (line, cells) in &sources.rows {
        let [id, title, url] = cells.as_slice() else {
            return Err(err("sources.csv", *line, "expected id,title,url"));
        };
        if !url.starts_with("http") {
            return Err(err("sources.csv", *line, "the url is not an address"));
        }
        by_id.insert(
            id.clone(),
            Source {
                id: id.clone(),
                title: title.clone(),
                url: url.clone(),
            },
        );
    }
    const F: &str = "adoptions.csv";
    let table = parse_csv(F, ADOPTIONS).map_err(data_err(F))?;
    let want = [
        "state",
        "county",
        "city",
        "edition",
        "effective",
        "amendments",
        "sources",
        "checked",
        "verified",
        "note",
    ];
    if table.header != want {
        return Err(err(F, 1, format!("header must be {}", want.join(","))));
    }
    let opt = |s: &str| (!s.trim().is_empty()).then(|| s.trim().to_string());
    let date = |line: usize, s: &str| {
        NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d")
            .map_err(|_| err(F, line, format!("'{s}' is not a YYYY-MM-DD date")))
    };
    let mut out = Vec::new();
    for (line, c) in &table.rows {
        let line = *line;
        let state = c[0].trim().to_string();
        if !STATES.iter().any(|(code, _)| *code == state) {
            return Err(err(F, line, format!("unknown state '{state}'")));
        }
        let adopted = match c[3].trim() {
            "local" => Adopted::Local,
            y => Adopted::Edition(y.parse::<NecEdition>().map_err(|e| err(F, line, e))?),
        };
        let amendments = match c[5].trim() {
            "yes" => Amendments::Yes,
            "no" => Amendments::No,
            "unknown" | "" => Amendments::Unknown,
            other => {
                return Err(err(
                    F,
                    line,
                    format!("amendments '{other}' is not yes/no/unknown"),
                ))
            }
        };
        let sources = c[6]
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|id| {
                by_id
                    .get(id)
                    .cloned()
                    .ok_or_else(|| err(F, line, format!("unknown source '{id}'")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let verified = match c[8].trim() {
            "yes" => true,
            "no" => false,
            other => return Err(err(F, line, format!("verified '{other}' is not yes/no"))),
        };
        out.push(Adoption {
            state,
            county: opt(&c[1]),
            city: opt(&c[2]),
            adopted,
            effective: opt(&c[4]).map(|d| date(line, &d)).transpose()?,
            amendments,
            sources,
            checked: date(line, &c[7])?,
            verified,
            note: c[9].trim().to_string(),
        });
    }
    Ok(out)
}

/// Every row of the shipped adoption table, in file order.
pub fn adoptions() -> Result<&'static [Adoption], AdoptionError> {
    static TABLE: OnceLock<Result<Vec<Adoption>, AdoptionError>> = OnceLock::new();
    TABLE
        .get_or_init(load)
        .as_ref()
        .map(Vec::as_slice)
        .map_err(Clone::clone)
}

/// The rows of one state (all levels), oldest first.
pub fn rows_for_state(state: &str) -> Result<Vec<&'static Adoption>, AdoptionError> {
    let mut rows: Vec<&Adoption> = adoptions()?
        .iter()
        .filter(|r| r.state.eq_ignore_ascii_case(state))
        .collect();
    rows.sort_by_key(|r| r.in_force_from());
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_loads_and_covers_every_state_and_dc() {
        let rows = adoptions().unwrap();
        for (code, name) in STATES {
            assert!(
                rows.iter().any(|r| r.state == *code),
                "no adoption row for {name}"
            );
        }
    }

    /// The data rule: a row is verified only when at least two sources agree; every other row
    /// says why it is not; every row has a checked date and at least one source.
    #[test]
    fn every_row_has_two_sources_or_is_flagged_unverified() {
        for r in adoptions().unwrap() {
            let at = format!("{} {:?} {:?}", r.state, r.adopted, r.effective);
            assert!(!r.sources.is_empty(), "{at}: no source");
            assert!(
                r.checked <= chrono::Utc::now().date_naive(),
                "{at}: checked in the future"
            );
            if r.verified {
                assert!(r.sources.len() >= 2, "{at}: verified with one source");
                let mut ids: Vec<_> = r.sources.iter().map(|s| &s.id).collect();
                ids.dedup();
                assert!(ids.len() >= 2, "{at}: the same source twice");
            } else {
                assert!(
                    !r.note.trim().is_empty(),
                    "{at}: unverified without saying why"
                );
            }
            if let Some(e) = r.effective {
                assert!(e <= r.checked || !r.verified, "{at}: verified future date");
            }
        }
    }

    #[test]
    fn rows_of_one_state_do_not_repeat_an_edition_and_are_ordered() {
        for (code, _) in STATES {
            let rows = rows_for_state(code).unwrap();
            let mut seen = Vec::new();
            for r in &rows {
                let key = (r.county.clone(), r.city.clone(), r.adopted);
                assert!(!seen.contains(&key), "{code}: {:?} twice", r.adopted);
                seen.push(key);
            }
            assert!(rows
                .windows(2)
                .all(|w| w[0].in_force_from() <= w[1].in_force_from()));
        }
    }

    #[test]
    fn every_source_is_used_and_every_url_is_an_address() {
        let rows = adoptions().unwrap();
        let sources = parse_csv("sources.csv", SOURCES).unwrap();
        for (_, c) in &sources.rows {
            assert!(
                rows.iter().any(|r| r.sources.iter().any(|s| s.id == c[0])),
                "source {} is listed but no row uses it",
                c[0]
            );
        }
    }
}
