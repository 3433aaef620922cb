//! `more_tools`: how the model reaches a tool a routed request did not offer. Its description
//! names the tools left out; calling it with some of those names makes the next request offer
//! them in full (the request builder reads the call from the window).

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::schema::schema_for;
use super::{parse_args, Tool, ToolContext, ToolError};
use crate::llm::ToolSpec;

/// The tool's name.
pub const NAME: &str = "more_tools";
/// Names one call may ask for.
const MAX_NAMES: usize = 8;

#[derive(Deserialize, JsonSchema)]
struct MoreToolsArgs {
    /// Names of the tools to offer, from this tool's description.
    tools: Vec<String>,
}

/// The discovery tool.
pub struct MoreTools;

#[async_trait]
impl Tool for MoreTools {
    fn name(&self) -> &'static str {
        NAME
    }
    fn description(&self) -> &'static str {
        "Offer more tools: name the ones you need and they are offered on your next step."
    }
    fn schema(&self) -> Value {
        schema_for::<MoreToolsArgs>()
    }
    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: MoreToolsArgs = parse_args(&args)?;
        if a.tools.is_empty() || a.tools.len() > MAX_NAMES {
            return Err(ToolError::InvalidArguments(format!(
                "name between 1 and {MAX_NAMES} tools"
            )));
        }
        Ok(json!({ "offered_next": a.tools, "note": "call them now" }))
    }
}

/// The spec offered with a routed request: the description names the `hidden` tools.
pub fn spec(hidden: &[&str]) -> ToolSpec {
    ToolSpec {
        name: NAME.into(),
        description: format!(
            "Other tools exist; call this with the names you need and they are offered next step: {}.",
            hidden.join(", ")
        ),
        parameters: json!({
            "type": "object",
            "properties": {"tools": {"type": "array", "items": {"type": "string"}}},
            "required": ["tools"],
        })
        .into(),
    }
}

/// The tool names a `more_tools` call's raw arguments ask for (none when they do not parse:
/// the call itself is rejected with a message when it runs).
pub fn requested(raw_arguments: &str) -> Vec<String> {
    serde_json::from_str::<Value>(raw_arguments)
        .ok()
        .and_then(|v| {
            v.get("tools").and_then(Value::as_array).map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .take(MAX_NAMES)
                    .map(str::to_string)
                    .collect()
            })
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requested_names_come_from_the_arguments_and_bad_input_gives_none() {
        assert_eq!(
            requested(r#"{"tools": ["size_motor_feeder", 3]}"#),
            vec!["size_motor_feeder".to_string()]
        );
        assert!(requested("not json").is_empty());
        assert!(requested(r#"{"tools": "x"}"#).is_empty());
        assert!(spec(&["a_tool", "b_tool"])
            .description
            .contains("a_tool, b_tool"));
    }
}
