//! The short form of a large tool result, sent in its place once the result is old: every
//! scalar kept, arrays cut to their first rows with a count of the rest, long strings
//! clipped, and a marker saying so. The model's own answer at the time already states what it
//! took from the whole result; a follow-up that needs all of it calls the tool again.

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
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

/// What [`digest`] keeps of the value written as `json`, before it is marked, read from the
/// text without building what it leaves out (every array's rows past the first few): a
/// result read back from history is digested without reading all of it. `None` when `json`
/// is not JSON text.
pub fn shorten_json(json: &str) -> Option<Value> {
    let mut de = serde_json::Deserializer::from_str(json);
    let short = Short.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(short)
}

/// Reads any JSON value as [`shorten`] would return it.
struct Short;

impl<'de> DeserializeSeed<'de> for Short {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(Short)
    }
}

impl<'de> Visitor<'de> for Short {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(short_text(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(short_text(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Short.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut kept = Vec::with_capacity(DIGEST_ROWS + 1);
        while kept.len() < DIGEST_ROWS {
            match seq.next_element_seed(Short)? {
                Some(v) => kept.push(v),
                None => return Ok(Value::Array(kept)),
            }
        }
        let mut rest = 0usize;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            rest += 1;
        }
        if rest > 0 {
            kept.push(Value::String(format!(
                "… {rest} more of {}",
                DIGEST_ROWS + rest
            )));
        }
        Ok(Value::Array(kept))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match map.next_value_seed(Short)? {
                // A later value of the same key replaces the earlier, as when read whole.
                Value::Null => out.remove(&key),
                v => out.insert(key, v),
            };
        }
        Ok(Value::Object(out))
    }
}

fn short_text(text: String) -> Value {
    if text.chars().count() > DIGEST_TEXT {
        Value::String(clip(&text, DIGEST_TEXT))
    } else {
        Value::String(text)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Read from its text, a result is shortened exactly as from its value: nulls, long texts
    /// (with line breaks), arrays of every length and nesting, numbers of every kind.
    #[test]
    fn the_text_is_shortened_as_the_value_is() {
        let long = format!("  first line\n{}  ", "é".repeat(300));
        let rows = |n: usize| {
            (0..n)
                .map(|i| json!({"n": i, "va": 180.5 * i as f64, "gone": null, "name": format!("C{i}")}))
                .collect::<Vec<_>>()
        };
        let cases = [
            json!({"panel": "LP-1", "note": null, "text": long, "circuits": rows(40)}),
            json!({"a": [1, 2, 3], "b": [1, 2, 3, 4], "c": [], "d": [[1, 2, 3, 4, 5], {"e": rows(4)}]}),
            json!({"big": u64::MAX, "neg": -7, "f": 1e-9, "t": true, "s": "x".repeat(200)}),
            json!([rows(2), rows(7), "y".repeat(201)]),
            json!("z".repeat(500)),
            json!(null),
            json!({"digest": DIGEST_NOTE, "rows": rows(9)}),
        ];
        for v in cases {
            let text = serde_json::to_string(&v).expect("text");
            assert_eq!(shorten_json(&text), Some(shorten(&v)), "{text}");
        }
        // Keys in another order than a value writes them: the same digest.
        assert_eq!(
            shorten_json(r#"{"b": [1, 2, 3, 4], "a": null, "c": {"y": 1, "x": 2}}"#),
            Some(shorten(&json!({"c": {"x": 2, "y": 1}, "b": [1, 2, 3, 4]})))
        );
        assert_eq!(shorten_json("{\"a\": 1, \"a\": null}"), Some(json!({})));
        assert_eq!(shorten_json("{\"a\": "), None);
        assert_eq!(shorten_json("[1] [2]"), None);
    }
}
