//! What an inspector asks about a feeder's raceway and a circuit's load: the raceway material
//! (it picks the Chapter 9 Table 9 column and the point-to-point C value column), a motor on a
//! circuit (sized from the NEC full-load current tables, never the nameplate) and an appliance
//! nameplate (used by the dwelling load calculations).

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::nec::tables::{Conduit, ConduitMagnetism, MotorOcpdType};
use crate::nec::units::{Phase, VoltAmperes, Volts};

/// Raceway material of a feeder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RacewayMaterial {
    /// Steel conduit or tubing (magnetic).
    Steel,
    /// Aluminum conduit.
    Aluminum,
    /// PVC or other nonmetallic raceway.
    Nonmetallic,
}

impl RacewayMaterial {
    /// Every value, in the spelling the schema, the store and the files use.
    pub const ALL: [RacewayMaterial; 3] = [Self::Steel, Self::Aluminum, Self::Nonmetallic];

    /// The stored and written spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Steel => "steel",
            Self::Aluminum => "aluminum",
            Self::Nonmetallic => "nonmetallic",
        }
    }

    /// The Chapter 9 Table 9 column (effective-Z voltage drop).
    pub fn table9_conduit(self) -> Conduit {
        match self {
            Self::Steel => Conduit::Steel,
            Self::Aluminum => Conduit::Aluminum,
            Self::Nonmetallic => Conduit::Pvc,
        }
    }

    /// The point-to-point C value column: aluminum and nonmetallic raceways are nonmagnetic.
    pub fn magnetism(self) -> ConduitMagnetism {
        match self {
            Self::Steel => ConduitMagnetism::Steel,
            Self::Aluminum | Self::Nonmetallic => ConduitMagnetism::Nonmagnetic,
        }
    }
}

impl fmt::Display for RacewayMaterial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RacewayMaterial {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|r| r.as_str() == t)
            .ok_or_else(|| {
                format!("unknown raceway material '{s}': use steel, aluminum or nonmetallic")
            })
    }
}

/// A motor supplied by a branch circuit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MotorLoad {
    /// Horsepower (a row of Table 430.248 or 430.250).
    pub hp: f64,
    /// 1 or 3 phases.
    pub phase: Phase,
    /// Motor nameplate voltage (115/120, 200, 208, 230/240, 460/480...).
    pub voltage: Volts,
    /// Branch short-circuit and ground-fault protective device (430.52), when chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<MotorOcpdType>,
}

/// The kind of a household appliance, as the dwelling load calculation groups them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApplianceKind {
    /// Household range (220.55).
    Range,
    /// Counter-mounted cooktop (220.55).
    Cooktop,
    /// Wall-mounted oven (220.55).
    WallOven,
    /// Household clothes dryer (220.54).
    Dryer,
    /// Water heater (fastened in place, 220.53).
    WaterHeater,
    /// Dishwasher (fastened in place, 220.53).
    Dishwasher,
    /// Food waste disposer (fastened in place, 220.53).
    Disposal,
    /// Other appliance fastened in place (220.53).
    Fastened,
    /// Fixed electric space heating (220.51).
    SpaceHeating,
    /// Air conditioning (220.60 noncoincident with heating).
    AirConditioning,
    /// Heat pump compressor.
    HeatPump,
    /// EV supply equipment, a car charger (220.57, 625.41: a continuous load).
    Evse,
}

impl ApplianceKind {
    /// Every value, in the spelling the schema, the store and the files use.
    pub const ALL: [ApplianceKind; 12] = [
        Self::Range,
        Self::Cooktop,
        Self::WallOven,
        Self::Dryer,
        Self::WaterHeater,
        Self::Dishwasher,
        Self::Disposal,
        Self::Fastened,
        Self::SpaceHeating,
        Self::AirConditioning,
        Self::HeatPump,
        Self::Evse,
    ];

    /// The stored and written spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Range => "range",
            Self::Cooktop => "cooktop",
            Self::WallOven => "wall_oven",
            Self::Dryer => "dryer",
            Self::WaterHeater => "water_heater",
            Self::Dishwasher => "dishwasher",
            Self::Disposal => "disposal",
            Self::Fastened => "fastened",
            Self::SpaceHeating => "space_heating",
            Self::AirConditioning => "air_conditioning",
            Self::HeatPump => "heat_pump",
            Self::Evse => "evse",
        }
    }

    /// Cooking appliances counted under Table 220.55.
    pub fn is_cooking(self) -> bool {
        matches!(self, Self::Range | Self::Cooktop | Self::WallOven)
    }
}

impl FromStr for ApplianceKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase().replace([' ', '-'], "_");
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == t)
            .ok_or_else(|| {
                let all: Vec<&str> = Self::ALL.iter().map(|k| k.as_str()).collect();
                format!(
                    "unknown appliance kind '{s}': use one of {}",
                    all.join(", ")
                )
            })
    }
}

/// An appliance nameplate on a circuit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplianceNameplate {
    /// What the appliance is.
    pub kind: ApplianceKind,
    /// Nameplate rating in VA (kW × 1000 for resistive appliances).
    pub va: VoltAmperes,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip_and_errors_list_the_values() {
        for r in RacewayMaterial::ALL {
            assert_eq!(r.as_str().parse::<RacewayMaterial>().unwrap(), r);
            assert_eq!(
                serde_json::to_value(r).unwrap(),
                serde_json::Value::String(r.as_str().into())
            );
        }
        let e = "pvc".parse::<RacewayMaterial>().unwrap_err();
        assert!(e.contains("steel, aluminum or nonmetallic"), "{e}");
        for k in ApplianceKind::ALL {
            assert_eq!(k.as_str().parse::<ApplianceKind>().unwrap(), k);
            assert_eq!(
                serde_json::to_value(k).unwrap(),
                serde_json::Value::String(k.as_str().into())
            );
        }
        assert_eq!(
            "Water Heater".parse::<ApplianceKind>().unwrap(),
            ApplianceKind::WaterHeater
        );
        let e = "toaster".parse::<ApplianceKind>().unwrap_err();
        assert!(e.contains("water_heater"), "{e}");
    }

    #[test]
    fn raceway_picks_the_table_columns() {
        assert_eq!(RacewayMaterial::Steel.magnetism(), ConduitMagnetism::Steel);
        assert_eq!(
            RacewayMaterial::Aluminum.magnetism(),
            ConduitMagnetism::Nonmagnetic
        );
        assert_eq!(RacewayMaterial::Nonmetallic.table9_conduit(), Conduit::Pvc);
        assert_eq!(
            RacewayMaterial::Aluminum.table9_conduit(),
            Conduit::Aluminum
        );
    }
}
