//! A digest ([`super::digest`]) written straight from a result's JSON text, with no tree of
//! the result or of its digest: how results read back from history are digested, several
//! times a turn. Their text is what a value writes (compact, every object's keys in order);
//! any other text (keys out of order or repeated, not JSON) is left to the tree, so both ways
//! give the same bytes.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Serialize;
use serde_json::value::RawValue;

use super::digest::{clip, DIGEST_NOTE, DIGEST_ROWS, DIGEST_TEXT};

/// What [`digest_text`] made of a result.
#[derive(Debug)]
pub enum TextDigest {
    /// The digest, as compact JSON text.
    Digest(Box<RawValue>),
    /// The result is a digest already.
    Already,
}

/// The digest of the result written as `json`; `None` when the text is not as a value
/// writes it (the caller then reads the value and digests that).
pub fn digest_text(json: &str) -> Option<TextDigest> {
    let mut out = Vec::with_capacity(json.len() / 2);
    let mut de = serde_json::Deserializer::from_str(json);
    let written = Writer {
        out: &mut out,
        top: true,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    match written {
        Written::Already => Some(TextDigest::Already),
        Written::Null | Written::Value => String::from_utf8(out)
            .ok()
            .and_then(|text| RawValue::from_string(text).ok())
            .map(TextDigest::Digest),
    }
}

/// What a value came to in the digest.
enum Written {
    Null,
    Value,
    /// The top-level object carries the digest marker.
    Already,
}

/// Writes the digest of one value into `out`; `top` for the result itself, whose object gets
/// the marker.
struct Writer<'a> {
    out: &'a mut Vec<u8>,
    top: bool,
}

fn write<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    // Writing a scalar or a string into a vector cannot fail.
    let _ = v.serialize(&mut serde_json::Serializer::new(out));
}

fn write_text(out: &mut Vec<u8>, text: &str) {
    if text.chars().count() > DIGEST_TEXT {
        write(out, &clip(text, DIGEST_TEXT));
    } else {
        write(out, text);
    }
}

fn write_marker(out: &mut Vec<u8>, first: &mut bool) {
    if !std::mem::take(first) {
        out.push(b',');
    }
    write(out, "digest");
    out.push(b':');
    write(out, DIGEST_NOTE);
}

impl<'de> DeserializeSeed<'de> for Writer<'_> {
    type Value = Written;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Written, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Writer<'_> {
    type Value = Written;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Written, E> {
        write(self.out, &v);
        Ok(Written::Value)
    }

    fn visit_i64<E>(self, v: i64) -> Result<Written, E> {
        write(self.out, &v);
        Ok(Written::Value)
    }

    fn visit_u64<E>(self, v: u64) -> Result<Written, E> {
        write(self.out, &v);
        Ok(Written::Value)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Written, E> {
        // As a value keeps it (JSON text holds only finite numbers).
        match serde_json::Number::from_f64(v) {
            Some(n) => write(self.out, &n),
            None => return Err(E::custom("not a finite number")),
        }
        Ok(Written::Value)
    }

    fn visit_str<E>(self, v: &str) -> Result<Written, E> {
        write_text(self.out, v);
        Ok(Written::Value)
    }

    fn visit_unit<E>(self) -> Result<Written, E> {
        self.out.extend_from_slice(b"null");
        Ok(Written::Null)
    }

    fn visit_none<E>(self) -> Result<Written, E> {
        self.out.extend_from_slice(b"null");
        Ok(Written::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Written, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Written, A::Error> {
        let out = self.out;
        out.push(b'[');
        let mut kept = 0usize;
        while kept < DIGEST_ROWS {
            let at = out.len();
            if kept > 0 {
                out.push(b',');
            }
            let next = seq.next_element_seed(Writer {
                out: &mut *out,
                top: false,
            })?;
            if next.is_none() {
                out.truncate(at);
                out.push(b']');
                return Ok(Written::Value);
            }
            kept += 1;
        }
        let mut rest = 0usize;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            rest += 1;
        }
        if rest > 0 {
            out.push(b',');
            write(out, &format!("… {rest} more of {}", kept + rest));
        }
        out.push(b']');
        Ok(Written::Value)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Written, A::Error> {
        let out = self.out;
        out.push(b'{');
        let mut first = true;
        // Only the result's own object gets the marker, in its place among the keys.
        let mut marked = !self.top;
        let mut previous: Option<String> = None;
        while let Some(key) = map.next_key::<String>()? {
            if previous.as_deref().is_some_and(|p| key.as_str() <= p) {
                return Err(de::Error::custom("keys not as a value writes them"));
            }
            if !marked && key.as_str() >= "digest" {
                marked = true;
                if key == "digest" {
                    let own: serde_json::Value = map.next_value()?;
                    if own.as_str() == Some(DIGEST_NOTE) {
                        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                        return Ok(Written::Already);
                    }
                    write_marker(out, &mut first);
                    previous = Some(key);
                    continue;
                }
                write_marker(out, &mut first);
            }
            let at = out.len();
            if !first {
                out.push(b',');
            }
            write(out, key.as_str());
            out.push(b':');
            let written = map.next_value_seed(Writer {
                out: &mut *out,
                top: false,
            })?;
            // A digest leaves out what is null.
            match written {
                Written::Null => out.truncate(at),
                Written::Value | Written::Already => first = false,
            }
            previous = Some(key);
        }
        if !marked {
            write_marker(out, &mut first);
        }
        out.push(b'}');
        Ok(Written::Value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::digest::{digest, is_digest};
    use serde_json::json;

    /// The digest's text, or "already" for a result that is a digest.
    fn written(d: Option<TextDigest>) -> Option<String> {
        d.map(|d| match d {
            TextDigest::Digest(raw) => raw.get().to_string(),
            TextDigest::Already => "already".to_string(),
        })
    }

    /// Written from its text, a result's digest is the bytes its value's digest writes.
    #[test]
    fn the_digest_from_text_is_the_digest_from_the_value() {
        let long = format!("  first line\n{}  ", "é".repeat(300));
        let rows = |n: usize| {
            (0..n)
                .map(|i| json!({"n": i, "va": 180.5 * i as f64, "gone": null, "name": format!("C{i}\"q\"")}))
                .collect::<Vec<_>>()
        };
        let cases = [
            json!({"panel": "LP-1", "note": null, "text": long, "circuits": rows(40)}),
            json!({"a": [1, 2, 3], "b": [1, 2, 3, 4], "c": [], "d": [[1, 2, 3, 4, 5], {"e": rows(4)}]}),
            json!({"big": u64::MAX, "neg": -7, "f": 1e-9, "g": 0.1, "t": true, "s": "x".repeat(200)}),
            json!({"digest": null, "z": rows(5)}),
            json!({"digest": "mine", "a": 1}),
            json!({"aa": 1, "digest_of": 2, "digesz": 3}),
            json!({"a": 1}),
            json!({}),
            json!([rows(2), rows(7), "y".repeat(201), null]),
            json!("z".repeat(500)),
            json!(12.5),
            json!({"digest": DIGEST_NOTE, "rows": rows(9)}),
        ];
        for v in cases {
            let text = serde_json::to_string(&v).expect("text");
            let want = if is_digest(&v) {
                "already".to_string()
            } else {
                serde_json::to_string(&digest(&v)).expect("digest")
            };
            assert_eq!(written(digest_text(&text)), Some(want), "{text}");
        }
    }

    #[test]
    fn text_a_value_would_not_write_is_left_to_the_tree() {
        for text in [
            r#"{"b": 1, "a": 2}"#,
            r#"{"a": 1, "a": 2}"#,
            r#"{"x": {"b": 1, "a": 2}}"#,
            r#"{"a": "#,
            "[1] [2]",
        ] {
            assert_eq!(written(digest_text(text)), None, "{text}");
        }
        // Spaces are not a value's, but they change nothing in what is written.
        assert_eq!(
            written(digest_text(r#"{ "a" : [1, 2, 3, 4] }"#)),
            Some(format!(
                r#"{{"a":[1,2,3,"… 1 more of 4"],"digest":"{DIGEST_NOTE}"}}"#
            ))
        );
    }
}
