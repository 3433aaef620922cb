//! A tool's argument schema as offered to the model: the JSON Schema value, shared by every
//! request that offers the tool.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A JSON Schema (draft 2020-12 subset) of a tool's arguments object. Reads as the `Value`
/// it holds; writes as the same JSON a `Value` writes.
#[derive(Clone, PartialEq)]
pub struct ToolSchema(Arc<Value>);

impl From<Value> for ToolSchema {
    fn from(value: Value) -> Self {
        Self(Arc::new(value))
    }
}

impl std::ops::Deref for ToolSchema {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0
    }
}

impl AsRef<Value> for ToolSchema {
    fn as_ref(&self) -> &Value {
        &self.0
    }
}

impl std::fmt::Debug for ToolSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for ToolSchema {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
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
        assert!(std::ptr::eq::<Value>(&*schema, &*copy));
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
