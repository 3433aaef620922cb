//! A tool's argument schema as offered to the model: the JSON Schema value, shared, with its
//! JSON text written once.
//!
//! Every model request offers the tools again. With the schema as a plain `Value`, each
//! request copied every offered schema (a tree of maps and strings) and wrote it out again;
//! shared and kept as text, offering a tool costs a reference count and a copy of its text.

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

/// A JSON Schema (draft 2020-12 subset) of a tool's arguments object. Reads as the `Value`
/// it holds; writes as the same JSON a `Value` writes.
#[derive(Clone)]
pub struct ToolSchema(Arc<Inner>);

struct Inner {
    value: Value,
    /// The value's compact JSON text, written the first time it is needed.
    json: OnceLock<Option<Box<RawValue>>>,
}

impl ToolSchema {
    /// The schema as compact JSON text (`None` only if it cannot be written, which a
    /// `Value` always can).
    fn json(&self) -> Option<&RawValue> {
        self.0
            .json
            .get_or_init(|| serde_json::value::to_raw_value(&self.0.value).ok())
            .as_deref()
    }
}

impl From<Value> for ToolSchema {
    fn from(value: Value) -> Self {
        Self(Arc::new(Inner {
            value,
            json: OnceLock::new(),
        }))
    }
}

impl std::ops::Deref for ToolSchema {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0.value
    }
}

impl AsRef<Value> for ToolSchema {
    fn as_ref(&self) -> &Value {
        &self.0.value
    }
}

impl PartialEq for ToolSchema {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.value == other.0.value
    }
}

impl std::fmt::Debug for ToolSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.value.fmt(f)
    }
}

impl Serialize for ToolSchema {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.json() {
            Some(raw) => raw.serialize(s),
            None => self.0.value.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ToolSchema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_what_its_value_writes_and_shares_on_clone() {
        let value = json!({"type": "object", "properties": {"panel": {"type": "string",
            "description": "Panel \"name\", e.g. LP-1"}}, "required": ["panel"]});
        let schema = ToolSchema::from(value.clone());
        let copy = schema.clone();
        assert!(Arc::ptr_eq(&schema.0, &copy.0));
        assert_eq!(
            serde_json::to_string(&copy).unwrap(),
            serde_json::to_string(&value).unwrap()
        );
        // Inside another document too, and read back equal.
        let doc = json!({"parameters": value});
        let written = serde_json::to_string(&json!({"parameters": null}))
            .unwrap()
            .replace("null", &serde_json::to_string(&schema).unwrap());
        assert_eq!(written, serde_json::to_string(&doc).unwrap());
        let back: ToolSchema =
            serde_json::from_str(&serde_json::to_string(&schema).unwrap()).unwrap();
        assert_eq!(back, schema);
        assert_eq!(schema["required"][0], "panel");
    }
}
