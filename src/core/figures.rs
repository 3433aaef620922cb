//! What a person reads when the tools of a turn computed an answer but the model wrote no words
//! (a small model that copies a result out as JSON, which is never shown, even when asked once
//! more or until its output limit): the results themselves, one line per figure, instead of an
//! error that throws them away.

use serde_json::Value;

use crate::llm::ToolResult;

/// Lines shown of one tool's result; the rest is counted.
const MAX_LINES: usize = 24;

/// The successful results of a turn as text a person can read and act on.
pub fn text(results: &[ToolResult]) -> String {
    let mut out = String::from(
        "The model did not put the result into words, so here is what the tools returned:",
    );
    for r in results {
        let mut lines = Vec::new();
        flatten("", &r.content, &mut lines);
        let hidden = lines.len().saturating_sub(MAX_LINES);
        lines.truncate(MAX_LINES);
        out.push_str(&format!("\n\n{}:", r.name.replace('_', " ")));
        for line in lines {
            out.push_str("\n- ");
            out.push_str(&line);
        }
        if hidden > 0 {
            out.push_str(&format!("\n- … and {hidden} more"));
        }
    }
    out
}

/// `key: value` lines of `value`, nested keys joined (`feeder conductor: 3/0`), lists of
/// plain values on one line and lists of objects counted.
fn flatten(prefix: &str, value: &Value, lines: &mut Vec<String>) {
    let label = |key: &str| {
        let key = key.replace('_', " ");
        if prefix.is_empty() {
            key
        } else {
            format!("{prefix} {key}")
        }
    };
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                flatten(&label(key), v, lines);
            }
        }
        Value::Array(items) if items.iter().all(|v| !v.is_object() && !v.is_array()) => {
            let shown: Vec<String> = items.iter().map(plain).collect();
            lines.push(format!("{prefix}: {}", shown.join(", ")));
        }
        Value::Array(items) => lines.push(format!("{prefix}: {} entries", items.len())),
        Value::Null => {}
        other => lines.push(format!("{prefix}: {}", plain(other))),
    }
}

/// A plain JSON value as a person writes it: strings without quotes.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
