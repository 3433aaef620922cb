//! Where and when a project is built: its location, permit date and the team's edition override.

use std::fmt;
use std::str::FromStr;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use super::edition::NecEdition;

/// The 50 states and the District of Columbia: (USPS code, name).
pub const STATES: &[(&str, &str)] = &[
    ("AL", "Alabama"),
    ("AK", "Alaska"),
    ("AZ", "Arizona"),
    ("AR", "Arkansas"),
    ("CA", "California"),
    ("CO", "Colorado"),
    ("CT", "Connecticut"),
    ("DE", "Delaware"),
    ("DC", "District of Columbia"),
    ("FL", "Florida"),
    ("GA", "Georgia"),
    ("HI", "Hawaii"),
    ("ID", "Idaho"),
    ("IL", "Illinois"),
    ("IN", "Indiana"),
    ("IA", "Iowa"),
    ("KS", "Kansas"),
    ("KY", "Kentucky"),
    ("LA", "Louisiana"),
    ("ME", "Maine"),
    ("MD", "Maryland"),
    ("MA", "Massachusetts"),
    ("MI", "Michigan"),
    ("MN", "Minnesota"),
    ("MS", "Mississippi"),
    ("MO", "Missouri"),
    ("MT", "Montana"),
    ("NE", "Nebraska"),
    ("NV", "Nevada"),
    ("NH", "New Hampshire"),
    ("NJ", "New Jersey"),
    ("NM", "New Mexico"),
    ("NY", "New York"),
    ("NC", "North Carolina"),
    ("ND", "North Dakota"),
    ("OH", "Ohio"),
    ("OK", "Oklahoma"),
    ("OR", "Oregon"),
    ("PA", "Pennsylvania"),
    ("RI", "Rhode Island"),
    ("SC", "South Carolina"),
    ("SD", "South Dakota"),
    ("TN", "Tennessee"),
    ("TX", "Texas"),
    ("UT", "Utah"),
    ("VT", "Vermont"),
    ("VA", "Virginia"),
    ("WA", "Washington"),
    ("WV", "West Virginia"),
    ("WI", "Wisconsin"),
    ("WY", "Wyoming"),
];

/// Why a location, date or edition could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SiteError {
    /// The state is neither a USPS code nor a state name.
    #[error("'{0}' is not a US state; use its two-letter code (WA) or its name (Washington)")]
    UnknownState(String),
    /// Nothing was given.
    #[error("name a location: STATE[, COUNTY County][, CITY], e.g. `WA, King County, Seattle`")]
    Empty,
    /// The date is not YYYY-MM-DD.
    #[error("'{0}' is not a date; use YYYY-MM-DD or `today`")]
    BadDate(String),
}

/// The USPS code of a state given by code or name (any case).
pub fn state_code(text: &str) -> Result<&'static str, SiteError> {
    let t = text.trim();
    STATES
        .iter()
        .find(|(code, name)| code.eq_ignore_ascii_case(t) || name.eq_ignore_ascii_case(t))
        .or_else(|| {
            // "Washington State", "State of Washington".
            let bare = t
                .trim_end_matches(" State")
                .trim_end_matches(" state")
                .trim_start_matches("State of ")
                .trim_start_matches("state of ");
            STATES
                .iter()
                .find(|(_, name)| name.eq_ignore_ascii_case(bare.trim()))
        })
        .map(|(code, _)| *code)
        .ok_or_else(|| SiteError::UnknownState(t.to_string()))
}

/// The name of a state code.
pub fn state_name(code: &str) -> &'static str {
    STATES
        .iter()
        .find(|(c, _)| c.eq_ignore_ascii_case(code))
        .map(|(_, n)| *n)
        .unwrap_or("unknown state")
}

/// A job site's jurisdiction: a state and optionally a county and a city.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    /// USPS code ("WA").
    pub state: String,
    /// County (or parish, borough) as people write it ("King County").
    #[serde(default)]
    pub county: Option<String>,
    /// City or town.
    #[serde(default)]
    pub city: Option<String>,
}

impl Location {
    /// A state-wide location.
    pub fn state(code: &str) -> Result<Self, SiteError> {
        Ok(Self {
            state: state_code(code)?.to_string(),
            county: None,
            city: None,
        })
    }

    /// The jurisdiction key amendment documents are filed under: `WA`, `WA/King County` or
    /// `WA/Seattle` (the most local part given).
    pub fn keys(&self) -> Vec<String> {
        let mut keys = vec![self.state.clone()];
        for part in [&self.county, &self.city].into_iter().flatten() {
            keys.push(format!("{}/{}", self.state, part));
        }
        keys
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<&str> = Vec::new();
        if let Some(c) = &self.city {
            parts.push(c);
        }
        if let Some(c) = &self.county {
            parts.push(c);
        }
        parts.push(state_name(&self.state));
        write!(f, "{}", parts.join(", "))
    }
}

impl FromStr for Location {
    type Err = SiteError;

    /// `STATE[, COUNTY County][, CITY]` in any order after the state; a part ending in
    /// County, Parish or Borough is the county, another part is the city.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.split(',').map(str::trim).filter(|p| !p.is_empty());
        let state = parts.next().ok_or(SiteError::Empty)?;
        let mut loc = Self::state(state)?;
        for p in parts {
            let lower = p.to_ascii_lowercase();
            if ["county", "parish", "borough"]
                .iter()
                .any(|w| lower.ends_with(w))
            {
                loc.county = Some(p.to_string());
            } else {
                loc.city = Some(p.to_string());
            }
        }
        Ok(loc)
    }
}

/// A jurisdiction key as typed for amendment documents (`WA`, `Washington`, `WA/Seattle`):
/// normalised so the state part is its USPS code.
pub fn jurisdiction_key(text: &str) -> Result<String, SiteError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(SiteError::Empty);
    }
    match t.split_once('/') {
        Some((state, local)) if !local.trim().is_empty() => {
            Ok(format!("{}/{}", state_code(state)?, local.trim()))
        }
        _ => Ok(state_code(t.trim_end_matches('/'))?.to_string()),
    }
}

/// A permit date as typed: `YYYY-MM-DD`, or `today` (no fixed date).
pub fn parse_permit_date(text: &str) -> Result<Option<NaiveDate>, SiteError> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("today") || t.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    NaiveDate::parse_from_str(t, "%Y-%m-%d")
        .map(Some)
        .map_err(|_| SiteError::BadDate(t.to_string()))
}

/// What a project knows about its job site.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Site {
    /// Where the work is; `None` until someone sets it.
    #[serde(default)]
    pub location: Option<Location>,
    /// Permit (application) date; `None` means "today".
    #[serde(default)]
    pub permit_date: Option<NaiveDate>,
    /// The edition the team says applies, overriding the adoption table.
    #[serde(default)]
    pub edition_override: Option<NecEdition>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse() {
        let l: Location = "wa, King County, Seattle".parse().unwrap();
        assert_eq!(l.state, "WA");
        assert_eq!(l.county.as_deref(), Some("King County"));
        assert_eq!(l.city.as_deref(), Some("Seattle"));
        assert_eq!(l.keys(), vec!["WA", "WA/King County", "WA/Seattle"]);
        assert_eq!(l.to_string(), "Seattle, King County, Washington");
        assert_eq!("Washington State".parse::<Location>().unwrap().state, "WA");
        assert_eq!(
            "district of columbia".parse::<Location>().unwrap().state,
            "DC"
        );
        assert!(matches!(
            "Narnia".parse::<Location>(),
            Err(SiteError::UnknownState(_))
        ));
        assert_eq!("".parse::<Location>(), Err(SiteError::Empty));
        assert_eq!(
            jurisdiction_key("washington/Seattle").unwrap(),
            "WA/Seattle"
        );
        assert_eq!(jurisdiction_key("or").unwrap(), "OR");
        assert!(jurisdiction_key("XX").is_err());
    }

    #[test]
    fn permit_dates_parse() {
        assert_eq!(parse_permit_date("today").unwrap(), None);
        assert_eq!(
            parse_permit_date("2024-03-01").unwrap(),
            NaiveDate::from_ymd_opt(2024, 3, 1)
        );
        assert!(parse_permit_date("03/01/2024").is_err());
    }
}
