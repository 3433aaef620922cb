//! JSON Schemas of the engine's typed values (the `schemars` feature), so a program that
//! takes these values as JSON arguments (the bot's tools) can describe them: units as plain
//! numbers, sizes and materials as the strings and integers their serde form accepts.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde_json::Value;

use crate::tables::{MotorOcpdType, MotorType};
use crate::units::{
    Amps, ConductorSize, Edition, Feet, Material, Phase, TempRating, VoltAmperes, Volts, Watts,
};

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
        // Every edition Sparky ships, as the year a person types (number or text).
        let years: Vec<Value> = Edition::ALL
            .iter()
            .map(|e| Value::from(e.year()))
            .chain(
                Edition::ALL
                    .iter()
                    .map(|e| Value::from(e.year().to_string())),
            )
            .collect();
        json_schema!({ "type": ["integer", "string"], "enum": years, "description": "NEC edition year" })
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
