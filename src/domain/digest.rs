//! The short form of a large tool result, sent in its place once the result is old: every
//! scalar kept, arrays cut to their first rows with a count of the rest, long strings
//! clipped, and a marker saying so. The model's own answer at the time already states what it
//! took from the whole result; a follow-up that needs all of it calls the tool again.

use serde_json::{json, Value};

/// A tool result longer than this (as JSON text) has a digest.
pub const DIGEST_OVER: usize = 800;
/// Rows of an array a digest keeps.
pub(super) const DIGEST_ROWS: usize = 3;
/// Characters of a string a digest keeps.
pub(super) const DIGEST_TEXT: usize = 200;

/// Marks a digest (the value of its `digest` key), so it is never digested again.
pub const DIGEST_NOTE: &str = "an earlier result, shortened; call the tool again for all of it";

/// Whether `v` is a digest already.
pub fn is_digest(v: &Value) -> bool {
    v.get("digest").and_then(Value::as_str) == Some(DIGEST_NOTE)
}

/// The digest of a result, marked as one.
pub fn digest(v: &Value) -> Value {
    mark(shorten(v))
}

/// A shortened result marked as a digest.
pub fn mark(mut short: Value) -> Value {
    if let Some(obj) = short.as_object_mut() {
        obj.insert("digest".into(), json!(DIGEST_NOTE));
    }
    short
}

/// What [`digest`] keeps of `v`, before it is marked.
pub fn shorten(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), shorten(v)))
                .collect(),
        ),
        Value::Array(items) if items.len() > DIGEST_ROWS => {
            let mut kept: Vec<Value> = items[..DIGEST_ROWS].iter().map(shorten).collect();
            kept.push(Value::String(format!(
                "… {} more of {}",
                items.len() - DIGEST_ROWS,
                items.len()
            )));
            Value::Array(kept)
        }
        Value::Array(items) => Value::Array(items.iter().map(shorten).collect()),
        Value::String(text) if text.chars().count() > DIGEST_TEXT => {
            Value::String(clip(text, DIGEST_TEXT))
        }
        other => other.clone(),
    }
}

/// `text` on one line, cut to `max` characters with an ellipsis when longer.
pub fn clip(text: &str, max: usize) -> String {
    let t = text.trim().replace('\n', " ");
    if t.chars().count() <= max {
        t
    } else {
        format!("{}…", t.chars().take(max).collect::<String>())
    }
}
