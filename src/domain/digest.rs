//! The short form of a large tool result, sent in its place once the result is old: every
//! scalar kept, arrays cut to their first rows with a count of the rest, long strings
//! clipped, and a marker saying so. The model's own answer at the time already states what it
//! took from the whole result; a follow-up that needs all of it calls the tool again.

use serde_json::{json, Value};

/// A tool result longer than this (as JSON text) has a digest.
pub const DIGEST_OVER: usize = 800;
/// Rows of an array a digest keeps.
const DIGEST_ROWS: usize = 3;
/// Characters of a string a digest keeps.
const DIGEST_TEXT: usize = 200;

/// Marks a digest (the value of its `digest` key), so it is never digested again.
pub const DIGEST_NOTE: &str = "an earlier result, shortened; call the tool again for all of it";

/// Whether `v` is a digest already.
pub fn is_digest(v: &Value) -> bool {
    v.get("digest").and_then(Value::as_str) == Some(DIGEST_NOTE)
}

/// What is sent in place of result `v` once it is old: `None` for a result short enough to
/// send whole, or one that is a digest already (a digest keeps its marker when shortened).
pub fn digest_of(v: &Value) -> Option<Value> {
    if v.to_string().len() <= DIGEST_OVER {
        return None;
    }
    let short = shorten(v);
    (!is_digest(&short)).then(|| mark(short))
}

/// A shortened result marked as a digest.
pub fn mark(mut short: Value) -> Value {
    if let Some(obj) = short.as_object_mut() {
        obj.insert("digest".into(), json!(DIGEST_NOTE));
    }
    short
}

/// What [`digest_of`] keeps of `v`, before it is marked.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn large() -> Value {
        let rows: Vec<Value> = (1..=40)
            .map(|n| json!({"circuit": n, "load_va": 1000 + n, "description": "receptacles"}))
            .collect();
        json!({"panel": "LP-1", "circuits": rows})
    }

    #[test]
    fn a_large_result_has_one_digest_and_a_digest_has_none() {
        let d = digest_of(&large()).expect("a large result is digested");
        assert!(is_digest(&d));
        assert_eq!(d["panel"], "LP-1", "scalars are kept");
        assert_eq!(
            d["circuits"].as_array().map(Vec::len),
            Some(4),
            "3 rows and a count"
        );
        assert_eq!(d["circuits"][3], "… 37 more of 40");
        assert!(digest_of(&d).is_none(), "a digest is not digested again");
        assert!(digest_of(&json!({"ok": true})).is_none());
        let long = json!({"note": "x".repeat(DIGEST_OVER + 10)});
        let clipped = digest_of(&long).expect("a long string is digested");
        assert_eq!(
            clipped["note"].as_str().map(|t| t.chars().count()),
            Some(DIGEST_TEXT + 1),
            "clipped, with an ellipsis"
        );
    }
}
