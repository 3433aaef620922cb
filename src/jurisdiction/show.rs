//! `sparky jurisdiction show STATE`: a state's adoption history, the edition in force on a
//! date, and the sources, as text and as JSON.

use chrono::NaiveDate;
use serde_json::{json, Value};

use super::adoption::{rows_for_state, Adopted};
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
        let trust = if r.verified { "verified" } else { "UNVERIFIED" };
        text.push_str(&format!(
            "- {what}, {when}, amendments {:?}, {trust}, checked {}\n",
            r.amendments, r.checked
        ));
        if !r.note.is_empty() {
            text.push_str(&format!("    {}\n", r.note));
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
        assert!(text.contains("source: NEMA Code Alerts"));
        assert_eq!(json["code_in_force"]["edition"], 2020);
        assert!(show("Atlantis", d, true).is_err());
    }
}
