//! Typed electrical quantities and conductor descriptors shared by every calculation.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! quantity {
    ($(#[$doc:meta])* $name:ident, $unit:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub f64);

        impl $name {
            /// The raw number in this quantity's unit.
            pub fn value(self) -> f64 {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let v = self.0;
                if (v - v.round()).abs() < 1e-9 {
                    write!(f, "{} {}", v.round(), $unit)
                } else {
                    write!(f, "{:.2} {}", v, $unit)
                }
            }
        }
    };
}

quantity!(/// Current in amperes.
    Amps, "A");
quantity!(/// Potential in volts.
    Volts, "V");
quantity!(/// Apparent power in volt-amperes.
    VoltAmperes, "VA");
quantity!(/// Real power in watts.
    Watts, "W");
quantity!(/// One-way length in feet.
    Feet, "ft");
quantity!(/// Resistance or impedance in ohms.
    Ohms, "Ω");

/// Conductor material.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Material {
    /// Copper.
    #[serde(alias = "cu", alias = "Cu", alias = "Copper")]
    Copper,
    /// Aluminum or copper-clad aluminum.
    #[serde(
        alias = "al",
        alias = "Al",
        alias = "Aluminum",
        alias = "aluminium",
        alias = "cca"
    )]
    Aluminum,
}

impl FromStr for Material {
    type Err = UnitParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cu" | "copper" => Ok(Self::Copper),
            "al" | "aluminum" | "aluminium" | "cca" => Ok(Self::Aluminum),
            _ => Err(UnitParseError(format!(
                "unknown conductor material '{s}' (copper or aluminum)"
            ))),
        }
    }
}

impl fmt::Display for Material {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Copper => "copper",
            Self::Aluminum => "aluminum",
        })
    }
}

/// Insulation (or terminal) temperature rating, the column of Table 310.16.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TempRating {
    /// 60 °C column (TW, UF).
    C60,
    /// 75 °C column (THW, THWN, XHHW, USE).
    C75,
    /// 90 °C column (THHN, THWN-2, XHHW-2).
    C90,
}

impl TempRating {
    /// Degrees Celsius.
    pub fn celsius(self) -> u32 {
        match self {
            Self::C60 => 60,
            Self::C75 => 75,
            Self::C90 => 90,
        }
    }
}

impl FromStr for TempRating {
    type Err = UnitParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s
            .trim()
            .trim_end_matches(['C', 'c', '°'])
            .trim_end_matches('°')
            .trim();
        match t {
            "60" => Ok(Self::C60),
            "75" => Ok(Self::C75),
            "90" => Ok(Self::C90),
            _ => Err(UnitParseError(format!(
                "unknown temperature rating '{s}' (60, 75 or 90)"
            ))),
        }
    }
}

impl fmt::Display for TempRating {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}°C", self.celsius())
    }
}

impl Serialize for TempRating {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(self.celsius())
    }
}

impl<'de> Deserialize<'de> for TempRating {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let s = match &v {
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::String(s) => s.clone(),
            _ => {
                return Err(serde::de::Error::custom(
                    "temperature rating must be 60, 75 or 90",
                ))
            }
        };
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Number of phases of a circuit or system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Single phase (including 120/240 V split phase).
    Single,
    /// Three phase.
    Three,
}

impl Phase {
    /// 1 or 3.
    pub fn count(self) -> u8 {
        match self {
            Self::Single => 1,
            Self::Three => 3,
        }
    }
}

impl Serialize for Phase {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.count())
    }
}

impl<'de> Deserialize<'de> for Phase {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        match v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        {
            Some(1) => Ok(Self::Single),
            Some(3) => Ok(Self::Three),
            _ => Err(serde::de::Error::custom("phases must be 1 or 3")),
        }
    }
}

/// NEC edition a project is designed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum Edition {
    /// NFPA 70, 2017 edition (still in force in some states).
    Nec2017,
    /// NFPA 70, 2020 edition.
    Nec2020,
    /// NFPA 70, 2023 edition (the default).
    #[default]
    Nec2023,
}

impl Edition {
    /// Every edition whose tables Sparky ships, oldest first.
    pub const ALL: [Edition; 3] = [Self::Nec2017, Self::Nec2020, Self::Nec2023];

    /// The edition of a year, when Sparky ships its tables.
    pub fn from_year(year: u16) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.year() == year)
    }

    /// The edition year.
    pub fn year(self) -> u16 {
        match self {
            Self::Nec2017 => 2017,
            Self::Nec2020 => 2020,
            Self::Nec2023 => 2023,
        }
    }
}

impl FromStr for Edition {
    type Err = UnitParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().trim_start_matches("NEC").trim() {
            "2017" => Ok(Self::Nec2017),
            "2020" => Ok(Self::Nec2020),
            "2023" => Ok(Self::Nec2023),
            _ => Err(UnitParseError(format!(
                "unsupported NEC edition '{s}' (2017, 2020 or 2023)"
            ))),
        }
    }
}

impl fmt::Display for Edition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.year())
    }
}

impl Serialize for Edition {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.year().to_string())
    }
}

impl<'de> Deserialize<'de> for Edition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let s = match &v {
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::String(s) => s.clone(),
            _ => {
                return Err(serde::de::Error::custom(
                    "edition must be 2017, 2020 or 2023",
                ))
            }
        };
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A conductor size: AWG (18 through 4/0) or kcmil (250 and up).
///
/// AWG sizes are stored as gauge numbers where 1/0 = 0, 2/0 = -1, 3/0 = -2, 4/0 = -3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConductorSize {
    /// American Wire Gauge, 18 down to -3 (4/0).
    Awg(i8),
    /// Thousands of circular mils.
    Kcmil(u16),
}

impl ConductorSize {
    /// Cross-section in circular mils (Chapter 9 Table 8 for AWG sizes).
    pub fn circular_mils(self) -> f64 {
        match self {
            // Table 8 areas; the AWG formula differs by rounding only.
            Self::Awg(g) => match g {
                18 => 1620.0,
                16 => 2580.0,
                14 => 4110.0,
                12 => 6530.0,
                10 => 10380.0,
                8 => 16510.0,
                6 => 26240.0,
                4 => 41740.0,
                3 => 52620.0,
                2 => 66360.0,
                1 => 83690.0,
                0 => 105600.0,
                -1 => 133100.0,
                -2 => 167800.0,
                -3 => 211600.0,
                // Odd gauges not in Table 8: the AWG definition.
                g => {
                    let d_mils = 5.0 * 92f64.powf((36.0 - f64::from(g)) / 39.0);
                    d_mils * d_mils
                }
            },
            Self::Kcmil(k) => f64::from(k) * 1000.0,
        }
    }
}

impl PartialOrd for ConductorSize {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ConductorSize {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.circular_mils().total_cmp(&other.circular_mils())
    }
}

impl FromStr for ConductorSize {
    type Err = UnitParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse_alone(s).map_err(|e| {
            // "12 AWG copper 75°C", the way a project lists a circuit: name the size that
            // leads it, so whoever wrote it can send that alone.
            let words: Vec<&str> = s.split_whitespace().collect();
            (1..words.len())
                .rev()
                .filter(|&n| words[n..].iter().all(|w| describes_conductor(w)))
                .find_map(|n| Self::parse_alone(&words[..n].join(" ")).ok())
                .map_or(e, |size| {
                    UnitParseError(format!(
                        "conductor size '{s}' holds more than a size: give the size alone \
                         ('{size}'); material and insulation are given apart"
                    ))
                })
        })
    }
}

/// A word that says what a conductor is made of or rated for, beside its size: "copper",
/// "THHN", "75°C".
fn describes_conductor(word: &str) -> bool {
    const INSULATIONS: [&str; 8] = [
        "thhn", "thwn", "thwn-2", "xhhw", "xhhw-2", "thw", "use-2", "rhw",
    ];
    let w = word.trim_matches(',');
    w.parse::<Material>().is_ok()
        || w.parse::<TempRating>().is_ok()
        || INSULATIONS.contains(&w.to_ascii_lowercase().as_str())
}

impl ConductorSize {
    fn parse_alone(s: &str) -> Result<Self, UnitParseError> {
        let lower = s.trim().to_ascii_lowercase();
        let t = lower.trim_start_matches('#').trim();
        let (num, unit) = if let Some(n) = t.strip_suffix("kcmil").or_else(|| t.strip_suffix("mcm"))
        {
            (n.trim(), Some("kcmil"))
        } else if let Some(n) = t.strip_suffix("awg") {
            (n.trim(), Some("awg"))
        } else {
            (t, None)
        };
        let err = || {
            UnitParseError(format!(
                "unknown conductor size '{s}' (e.g. 12, 1/0, 250 kcmil)"
            ))
        };
        let size = match num {
            // "0 kcmil" must not read as 1/0 AWG.
            _ if unit == Some("kcmil") => {
                let v: u16 = num.parse().map_err(|_| err())?;
                Self::Kcmil(v)
            }
            "1/0" | "0" => Self::Awg(0),
            "2/0" | "00" => Self::Awg(-1),
            "3/0" | "000" => Self::Awg(-2),
            "4/0" | "0000" => Self::Awg(-3),
            n => {
                let v: u16 = n.parse().map_err(|_| err())?;
                match unit {
                    Some("kcmil") => Self::Kcmil(v),
                    Some("awg") if (1..=40).contains(&v) => Self::Awg(v as i8),
                    None if (1..=40).contains(&v) => Self::Awg(v as i8),
                    None if v >= 250 => Self::Kcmil(v),
                    _ => return Err(err()),
                }
            }
        };
        if let Self::Kcmil(k) = size {
            if k == 0 {
                return Err(err());
            }
        }
        Ok(size)
    }
}

impl fmt::Display for ConductorSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Awg(g) if *g <= 0 => write!(f, "{}/0 AWG", 1 - g),
            Self::Awg(g) => write!(f, "{g} AWG"),
            Self::Kcmil(k) => write!(f, "{k} kcmil"),
        }
    }
}

impl ConductorSize {
    /// The bare table form used in NEC tables: "12", "1/0", "250".
    pub fn table_key(self) -> String {
        match self {
            Self::Awg(g) if g <= 0 => format!("{}/0", 1 - g),
            Self::Awg(g) => g.to_string(),
            Self::Kcmil(k) => k.to_string(),
        }
    }
}

impl Serialize for ConductorSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for ConductorSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let s = match &v {
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::String(s) => s.clone(),
            _ => {
                return Err(serde::de::Error::custom(
                    "conductor size must be a string like \"12\" or \"250 kcmil\"",
                ))
            }
        };
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A value that could not be parsed into a unit type; the message says what is accepted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct UnitParseError(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conductor_sizes_parse_and_order() {
        let s: ConductorSize = "1/0".parse().unwrap();
        assert_eq!(s, ConductorSize::Awg(0));
        assert_eq!(s.to_string(), "1/0 AWG");
        assert_eq!(
            "4/0 AWG".parse::<ConductorSize>().unwrap(),
            ConductorSize::Awg(-3)
        );
        assert_eq!(
            "250 kcmil".parse::<ConductorSize>().unwrap(),
            ConductorSize::Kcmil(250)
        );
        assert_eq!(
            "#12".parse::<ConductorSize>().unwrap(),
            ConductorSize::Awg(12)
        );
        assert!(ConductorSize::Awg(12) > ConductorSize::Awg(14));
        assert!(ConductorSize::Kcmil(250) > ConductorSize::Awg(-3));
        assert!("13 kcmilx".parse::<ConductorSize>().is_err());
        assert!("0 kcmil".parse::<ConductorSize>().is_err());
        assert_eq!(ConductorSize::Awg(-1).table_key(), "2/0");
    }

    /// A size written the way a project lists a circuit is refused with the size alone to send.
    #[test]
    fn a_size_with_material_and_rating_names_the_size_to_send() {
        for (text, size) in [
            ("14 AWG copper 75°C", "14 AWG"),
            ("3/0 aluminum", "3/0 AWG"),
            ("250 kcmil Cu THHN", "250 kcmil"),
        ] {
            let e = text.parse::<ConductorSize>().unwrap_err().to_string();
            assert!(e.contains(&format!("('{size}')")), "{text}: {e}");
        }
        for text in ["copper", "13 kcmilx", "12 feet"] {
            let e = text.parse::<ConductorSize>().unwrap_err().to_string();
            assert!(e.contains("e.g. 12, 1/0"), "{text}: {e}");
        }
    }

    #[test]
    fn enums_round_trip_through_json() {
        let t: TempRating = serde_json::from_str("\"75C\"").unwrap();
        assert_eq!(t, TempRating::C75);
        assert_eq!(serde_json::to_string(&Phase::Three).unwrap(), "3");
        let e: Edition = serde_json::from_str("2020").unwrap();
        assert_eq!(e, Edition::Nec2020);
        assert!(serde_json::from_str::<Phase>("2").is_err());
    }
}
