//! An NEC edition as a year, whether or not Sparky ships its tables.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::nec::units::Edition;

/// A published NEC edition (2002, 2005, ... 2026): what a state adopts. Sparky's tables cover
/// only some of them ([`NecEdition::tables`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NecEdition(u16);

/// The newest published edition Sparky knows of.
pub const NEWEST: u16 = 2026;

impl NecEdition {
    /// The edition of `year`, when that year is an NEC edition (2002 through 2026).
    pub fn new(year: u16) -> Option<Self> {
        // Editions come every three years from 2002 on.
        (2002..=NEWEST)
            .contains(&year)
            .then_some(year)
            .filter(|y| (y - 2002) % 3 == 0)
            .map(Self)
    }

    /// The year.
    pub fn year(self) -> u16 {
        self.0
    }

    /// The edition whose tables Sparky ships, when it does.
    pub fn tables(self) -> Option<Edition> {
        Edition::from_year(self.0)
    }
}

impl From<Edition> for NecEdition {
    fn from(e: Edition) -> Self {
        Self(e.year())
    }
}

impl fmt::Display for NecEdition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for NecEdition {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let t = t
            .strip_prefix("NEC")
            .or_else(|| t.strip_prefix("nec"))
            .unwrap_or(t)
            .trim();
        t.parse::<u16>()
            .ok()
            .and_then(Self::new)
            .ok_or_else(|| format!("'{s}' is not an NEC edition (2002, 2005, ... 2023, 2026)"))
    }
}

impl Serialize for NecEdition {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u16(self.0)
    }
}

impl<'de> Deserialize<'de> for NecEdition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let y = u16::deserialize(d)?;
        Self::new(y).ok_or_else(|| serde::de::Error::custom(format!("{y} is not an NEC edition")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editions_are_every_three_years() {
        assert_eq!(NecEdition::new(2017).map(NecEdition::year), Some(2017));
        assert_eq!("NEC 2026".parse::<NecEdition>().unwrap().year(), 2026);
        assert!(NecEdition::new(2018).is_none());
        assert!(NecEdition::new(2029).is_none());
        assert!("twenty".parse::<NecEdition>().is_err());
        assert_eq!(
            NecEdition::new(2017).and_then(NecEdition::tables),
            Some(Edition::Nec2017)
        );
        assert_eq!(NecEdition::new(2014).and_then(NecEdition::tables), None);
        assert_eq!(NecEdition::new(2026).and_then(NecEdition::tables), None);
    }
}
