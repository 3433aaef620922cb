//! JSON Schemas for tool arguments, derived from typed argument structs.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde_json::Value;

use crate::nec::tables::{MotorOcpdType, MotorType};
use crate::nec::units::{
    Amps, ConductorSize, Edition, Feet, Material, Phase, TempRating, VoltAmperes, Volts, Watts,
};

/// The arguments schema of `T`, inlined (no `$ref`) so every provider accepts it.
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    if let Some(obj) = value.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
    }
    value
}

macro_rules! number_schema {
    ($ty:ty, $name:literal, $desc:literal) => {
        impl JsonSchema for $ty {
            fn schema_name() -> Cow<'static, str> {
                Cow::Borrowed($name)
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({ "type": "number", "description": $desc })
            }
        }
    };
}

number_schema!(Amps, "Amps", "current in amperes");
number_schema!(
    Volts,
    "Volts",
    "voltage in volts (line to line for multi-wire systems)"
);
number_schema!(VoltAmperes, "VoltAmperes", "apparent power in volt-amperes");
number_schema!(Watts, "Watts", "power in watts");
number_schema!(Feet, "Feet", "one-way length in feet");

impl JsonSchema for ConductorSize {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("ConductorSize")
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "conductor size: AWG like \"12\", \"1/0\", \"4/0\" or kcmil like \"250 kcmil\""
        })
    }
}

impl JsonSchema for Material {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Material")
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "enum": ["copper", "aluminum"] })
    }
}

impl JsonSchema for TempRating {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("TempRating")
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "integer", "enum": [60, 75, 90], "description": "insulation temperature rating, °C" })
    }
}

impl JsonSchema for Phase {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Phase")
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "integer", "enum": [1, 3], "description": "number of phases" })
    }
}

impl JsonSchema for Edition {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Edition")
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "enum": ["2020", "2023"], "description": "NEC edition" })
    }
}

impl JsonSchema for MotorType {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("MotorType")
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "enum": ["single_phase", "squirrel_cage", "design_b_energy_efficient", "synchronous", "wound_rotor", "dc"],
            "description": "Table 430.52 row"
        })
    }
}

impl JsonSchema for MotorOcpdType {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("MotorOcpdType")
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "enum": ["non_time_delay_fuse", "dual_element_fuse", "instantaneous_trip_breaker", "inverse_time_breaker"]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Example {
        /// A current.
        current: Amps,
        size: Option<ConductorSize>,
        material: Material,
    }

    /// The schema's spelling of each engine enum is the engine's serde spelling.
    #[test]
    fn motor_enum_spellings_match_the_engine() {
        for (schema, ser) in [
            (
                schema_for::<Vec<MotorType>>(),
                serde_json::to_value([
                    MotorType::SinglePhase,
                    MotorType::SquirrelCage,
                    MotorType::DesignBEnergyEfficient,
                    MotorType::Synchronous,
                    MotorType::WoundRotor,
                    MotorType::Dc,
                ])
                .unwrap(),
            ),
            (
                schema_for::<Vec<MotorOcpdType>>(),
                serde_json::to_value([
                    MotorOcpdType::NonTimeDelayFuse,
                    MotorOcpdType::DualElementFuse,
                    MotorOcpdType::InstantaneousTripBreaker,
                    MotorOcpdType::InverseTimeBreaker,
                ])
                .unwrap(),
            ),
        ] {
            assert_eq!(schema["items"]["enum"], ser);
        }
    }

    #[test]
    fn schemas_are_inline_objects_without_refs() {
        let s = schema_for::<Example>();
        assert_eq!(s["type"], "object");
        assert_eq!(s["properties"]["current"]["type"], "number");
        assert_eq!(s["properties"]["material"]["enum"][0], "copper");
        let text = s.to_string();
        assert!(!text.contains("$ref"), "{text}");
        assert!(!text.contains("$schema"), "{text}");
        let required = s["required"].as_array().unwrap();
        assert!(required.iter().any(|v| v == "current"));
        assert!(!required.iter().any(|v| v == "size"));
    }
}
