//! Tool calls the model sends again, unchanged, after they failed in the same turn.
//!
//! A small model that got its arguments wrong often sends the very same call again after the
//! refusal, and again, until the turn's call cap: the refusal cannot change, and the person
//! sees it each time. So a failed call is not run again within its turn: its first repeat gets
//! one instruction (what was wrong, what each argument takes, the call corrected), its second
//! ends the turn with one message to the person saying what was tried and what failed.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::domain::digest::clip;
use crate::llm::{ToolCall, ToolResult};

/// A call's identity within a turn: the tool and its arguments as canonical JSON (keys
/// sorted, no spacing), so key order or whitespace do not make a repeat look new.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CallKey {
    tool: String,
    args: String,
}

impl CallKey {
    fn of(call: &ToolCall) -> Self {
        let text = call.arguments.trim();
        let text = if text.is_empty() { "{}" } else { text };
        let args = serde_json::from_str::<Value>(text)
            .map(|v| canonical(&v).to_string())
            .unwrap_or_else(|_| text.to_string());
        Self {
            tool: call.name.clone(),
            args,
        }
    }
}

/// `v` with every object's keys in sorted order (whatever order the map type keeps).
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// What a turn does with a call.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Verdict {
    /// Not a repeat of a failed call: run it.
    Run,
    /// Its first repeat: not run; this result tells the model what to change.
    Instruct(ToolResult),
    /// Repeated again: not run; this result answers the call, and the turn ends with the
    /// message to the person.
    Stop {
        /// The call's result, for the history.
        result: ToolResult,
        /// What the person is told.
        message: String,
    },
}

/// How a call failed, and how often it came back.
#[derive(Debug, Clone)]
struct Failed {
    error: String,
    repeats: u32,
}

/// The failed calls of one turn.
#[derive(Debug, Default)]
pub(super) struct FailedCalls {
    failed: HashMap<CallKey, Failed>,
    /// The call refused most recently, for a turn that then ends without an answer.
    last: Option<CallKey>,
}

impl FailedCalls {
    /// Notes `result` of `call`: an error is remembered (the first one of a call).
    pub(super) fn record(&mut self, call: &ToolCall, result: &ToolResult) {
        if !result.is_error {
            return;
        }
        let error = result
            .content
            .get("error")
            .and_then(Value::as_str)
            .map_or_else(|| result.content.to_string(), str::to_string);
        let key = CallKey::of(call);
        self.failed
            .entry(key.clone())
            .or_insert(Failed { error, repeats: 0 });
        self.last = Some(key);
    }

    /// What the person is told when the model wrote no answer after a call of this turn was
    /// refused: which tool and why, so they can give what it lacked. `None` when nothing was
    /// refused.
    pub(super) fn unanswered_message(&self) -> Option<String> {
        let key = self.last.as_ref()?;
        let failed = self.failed.get(key)?;
        Some(format!(
            "The model wrote no answer after {} was refused: {} Tell me the values it needs, \
             or rephrase the question.",
            key.tool,
            sentence(&clip(&failed.error, QUOTED_ERROR))
        ))
    }

    /// What to do with `call`; `schema` is its tool's arguments schema, when the tool exists.
    pub(super) fn verdict(&mut self, call: &ToolCall, schema: Option<&Value>) -> Verdict {
        let Some(failed) = self.failed.get_mut(&CallKey::of(call)) else {
            return Verdict::Run;
        };
        failed.repeats += 1;
        let given: Value = serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!({}));
        // An example that is the failed call itself (the arguments fit the schema, their
        // values did not fit the tool) would only invite the same call again.
        let example = schema
            .map(|s| crate::tools::schema::example_arguments(s, &given))
            .filter(|e| *e != given);
        if failed.repeats == 1 {
            return Verdict::Instruct(instruction(call, &failed.error, schema, example));
        }
        Verdict::Stop {
            result: result(
                call,
                json!({"error": "This call failed again with the same arguments; the turn ends here."}),
            ),
            message: person_message(call, &failed.error, example.as_ref()),
        }
    }
}

/// The result that tells the model, once, why the call was not run and what to send instead.
fn instruction(
    call: &ToolCall,
    error: &str,
    schema: Option<&Value>,
    example: Option<Value>,
) -> ToolResult {
    let mut content = json!({
        "error": format!(
            "Not run: this exact call ({} with these arguments) already failed in this turn, \
             and it would fail the same way. The error was: {error} Change the arguments \
             (see `allowed` and the corrected `example`), or ask the person for what is \
             missing. Sending it unchanged again ends the turn.",
            call.name
        ),
    });
    if let Some(schema) = schema {
        content["allowed"] = Value::Object(crate::tools::schema::allowed_arguments(schema));
    }
    if let Some(example) = example {
        content["example"] = example;
    }
    result(call, content)
}

fn result(call: &ToolCall, content: Value) -> ToolResult {
    ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: content.into(),
        is_error: true,
    }
}

/// Longest piece of the arguments quoted to the person.
const QUOTED_ARGS: usize = 300;
/// Longest piece of an error quoted to the person.
const QUOTED_ERROR: usize = 400;

/// `text` ending as a sentence: a full stop added unless it ends with one already.
fn sentence(text: &str) -> String {
    let text = text.trim_end();
    match text.chars().last() {
        Some('.' | '!' | '?' | '…') | None => text.to_string(),
        Some(_) => format!("{text}."),
    }
}

/// The one message the person gets when the model would not change a failing call.
fn person_message(call: &ToolCall, error: &str, example: Option<&Value>) -> String {
    let args = clip(&call.arguments, QUOTED_ARGS);
    let mut text = format!(
        "I stopped: the model sent {} three times with the same arguments ({args}), and it \
         failed each time: {} That call was not run again.",
        call.name,
        sentence(error)
    );
    if let Some(example) = example {
        text.push_str(&format!(
            " Arguments it would accept look like: {example}. Tell me the values you want, \
             or rephrase the request."
        ));
    } else {
        text.push_str(" Please rephrase the request.");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(args: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: "add_circuit".into(),
            arguments: args.into(),
            thought_signature: None,
        }
    }

    #[test]
    fn a_failed_call_repeated_is_instructed_once_then_stopped() {
        let schema = json!({
            "type": "object",
            "properties": {
                "panel": {"type": "string"},
                "poles": {"type": ["integer", "null"], "minimum": 1, "maximum": 3},
                "material": {"type": "string", "enum": ["copper", "aluminum"]}
            },
            "required": ["panel"]
        });
        let mut calls = FailedCalls::default();
        let first = call(r#"{"panel": "LP-1", "poles": 20}"#);
        assert_eq!(calls.verdict(&first, Some(&schema)), Verdict::Run);
        let refused = result(&first, json!({"error": "poles: 20 is greater than 3"}));
        calls.record(&first, &refused);
        // The same call with its keys in another order and other spacing is a repeat.
        let again = call(r#"{"poles":20,"panel":"LP-1"}"#);
        let Verdict::Instruct(r) = calls.verdict(&again, Some(&schema)) else {
            panic!("not instructed");
        };
        assert!(r.is_error);
        assert_eq!(r.content["example"], json!({"panel": "LP-1", "poles": 1}));
        assert_eq!(r.content["allowed"]["poles"], "integer from 1 to 3");
        assert_eq!(r.content["allowed"]["material"], "one of: copper, aluminum");
        let Verdict::Stop { message, .. } = calls.verdict(&again, Some(&schema)) else {
            panic!("not stopped");
        };
        assert!(message.contains("greater than 3"), "{message}");
        // Another call is run.
        assert_eq!(
            calls.verdict(&call(r#"{"panel": "LP-1", "poles": 2}"#), Some(&schema)),
            Verdict::Run
        );
    }

    /// Arguments that fit the schema but not the tool ("no value for 10 hp synchronous") get
    /// no example: it would be the same call.
    #[test]
    fn a_call_that_fits_its_schema_gets_no_example_of_itself() {
        let schema = json!({
            "type": "object",
            "properties": {"hp": {"type": "number"}, "motor_type": {"type": "string"}},
            "required": ["hp"]
        });
        let mut calls = FailedCalls::default();
        let first = call(r#"{"hp": 10, "motor_type": "synchronous"}"#);
        calls.record(
            &first,
            &result(&first, json!({"error": "no value for 10 hp"})),
        );
        let Verdict::Instruct(r) = calls.verdict(&first, Some(&schema)) else {
            panic!("not instructed");
        };
        assert!(r.content.get("example").is_none(), "{}", r.content);
        let Verdict::Stop { message, .. } = calls.verdict(&first, Some(&schema)) else {
            panic!("not stopped");
        };
        assert!(!message.contains("would accept"), "{message}");
        assert!(message.contains("rephrase"), "{message}");
        assert!(
            message.contains("no value for 10 hp. That call"),
            "{message}"
        );
    }
}
