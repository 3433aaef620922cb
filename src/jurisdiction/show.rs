//! `sparky jurisdiction show STATE`: a state's adoption history, the edition in force on a
//! date, and the sources, as text and as JSON.

use chrono::NaiveDate;
use serde_json::{json, Value};

use super::adoption::{rows_for_state, Adopted, Amendments};
use super::in_force::code_in_force;
use super::site::{state_name, Location, Site, SiteError};
use crate::nec::units::Edition;

/// Why a `show` failed.
#[derive(Debug, thiserror::Error)]
pub enum ShowError {
    /// The state or date was not understood.
    #[error(transparent)]
    Site(#[from] SiteError),
    /// The shipped table could not be read.
    #[error(transparent)]
    Data(#[from] super::adoption::AdoptionError),
}

/// The text and JSON for one state (`location` may name a county or city) on `as_of`.
pub fn show(location: &str, as_of: NaiveDate, permit: bool) -> Result<(String, Value), ShowError> {
    let loc: Location = location.parse()?;
    let site = Site {
        location: Some(loc.clone()),
        permit_date: permit.then_some(as_of),
        edition_override: None,
    };
    let code = code_in_force(&site, Edition::default(), as_of)?;
    let rows = rows_for_state(&loc.state)?;
    let mut text = format!(
        "{} ({}): {}\n\nIn force on {as_of}: {}\n",
        state_name(&loc.state),
        loc.state,
        code.label(),
        code.summary()
    );
    text.push_str("\nAdoption history (oldest first):\n");
    for r in &rows {
        let what = match r.adopted {
            Adopted::Edition(e) => format!("NEC {e}"),
            Adopted::Local => "local adoption".into(),
        };
        let when = r
            .effective
            .map(|d| format!("effective {d}"))
            .unwrap_or_else(|| "effective date not established".into());
        let amendments = match r.amendments {
            Amendments::Yes => "amended",
            Amendments::No => "no state amendments",
            Amendments::Unknown => "amendments not known",
        };
        text.push_str(&format!(
            "- {what}, {when}, {amendments}, last checked {}\n",
            r.checked
        ));
        // An unverified row says so on a line of its own, with why, so it is never read as
        // settled; a verified row passes on its note (scope, renumbering) as before.
        if r.verified {
            if !r.note.is_empty() {
                text.push_str(&format!("    {}\n", r.note));
            }
        } else {
            let why = if r.note.is_empty() {
                "fewer than two sources agree on it"
            } else {
                r.note.as_str()
            };
            text.push_str(&format!(
                "    UNVERIFIED (not confirmed by two agreeing sources): {why}\n"
            ));
        }
        for s in &r.sources {
            text.push_str(&format!("    source: {} <{}>\n", s.title, s.url));
        }
    }
    let json = json!({
        "state": loc.state,
        "name": state_name(&loc.state),
        "as_of": as_of,
        "code_in_force": code,
        "rows": rows,
    });
    Ok((text, json))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_history_and_sources() {
        let d = NaiveDate::from_ymd_opt(2021, 6, 1).unwrap();
        let (text, json) = show("Washington", d, true).unwrap();
        assert!(text.contains("NEC 2014, effective 2014-07-01"));
        assert!(text.contains("UNVERIFIED"));
        // Every history row carries the date it was last checked, from the data file.
        let rows = rows_for_state("WA").unwrap();
        let history: Vec<&str> = text.lines().filter(|l| l.starts_with("- NEC")).collect();
        assert_eq!(history.len(), rows.len());
        for (line, row) in history.iter().zip(&rows) {
            assert!(
                line.ends_with(&format!("last checked {}", row.checked)),
                "{line}"
            );
        }
        assert!(text.contains("source: NEMA Code Alerts"));
        assert_eq!(json["code_in_force"]["edition"], 2020);
        assert!(show("Atlantis", d, true).is_err());
    }

    /// A row that is not verified says so, with why, and a verified row does not.
    #[test]
    fn unverified_rows_say_so_and_verified_rows_do_not() {
        let d = NaiveDate::from_ymd_opt(2026, 1, 1).unwrap();
        for state in ["AL", "WA", "AZ", "NY", "TX"] {
            let rows = rows_for_state(state).unwrap();
            let (text, json) = show(state, d, false).unwrap();
            let flagged = text
                .lines()
                .filter(|l| l.trim_start().starts_with("UNVERIFIED (not confirmed"))
                .count();
            assert_eq!(
                flagged,
                rows.iter().filter(|r| !r.verified).count(),
                "{state}"
            );
            for (r, j) in rows.iter().zip(json["rows"].as_array().unwrap()) {
                assert_eq!(j["checked"], r.checked.to_string(), "{state}");
                assert_eq!(j["verified"], r.verified, "{state}");
            }
        }
        // Alabama's rows are both unverified; Arizona's (local adoption) is verified.
        let (al, _) = show("AL", d, false).unwrap();
        assert!(al.contains("UNVERIFIED (not confirmed by two agreeing sources): only one source"));
        let (az, _) = show("AZ", d, false).unwrap();
        assert!(!az.contains("UNVERIFIED (not confirmed"));
    }
}
