//! A tool's JSON result as a conversation keeps it: shared by the thread's history and every
//! model request that sends it again, and written out as text at most once.

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::digest::{is_digest, mark, shorten, DIGEST_OVER};
use super::digest_text::{digest_text, TextDigest};

/// A tool's result (a JSON value). Clones share it. It is kept as the value, as its compact
/// JSON text, or both, each worked out from the other on first use: a result read back from
/// the history stays text unless something looks inside it, and a turn sends the thread's
/// results with every model request, where writing them out each time cost more than
/// building the rest of the request.
#[derive(Clone)]
pub struct ToolOutput(Arc<Inner>);

/// At least one of the two is set.
#[derive(Clone)]
struct Inner {
    value: OnceLock<Value>,
    json: OnceLock<Box<RawValue>>,
    /// The JSON text as a JSON string (how Chat Completions carries a tool result).
    quoted: OnceLock<Box<RawValue>>,
    /// The short form sent once the result is old (`None`: it is sent whole).
    digest: OnceLock<Option<ToolOutput>>,
}

impl ToolOutput {
    /// The value as compact JSON text.
    pub fn json(&self) -> &str {
        self.json_raw().get()
    }

    fn json_raw(&self) -> &RawValue {
        self.0.json.get_or_init(|| {
            // Writing a `Value` cannot fail; the fallback is never taken.
            serde_json::value::to_raw_value(self.value())
                .unwrap_or_else(|_| RawValue::NULL.to_owned())
        })
    }

    /// The value.
    pub fn value(&self) -> &Value {
        self.0.value.get_or_init(|| {
            let text = self.0.json.get().map_or("null", |raw| raw.get());
            // The text was checked as JSON when it was read.
            serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
        })
    }

    /// The JSON text written as a JSON string, ready to be sent as it is.
    pub fn json_quoted(&self) -> &RawValue {
        self.0.quoted.get_or_init(|| {
            // Writing a string cannot fail; the fallback is never taken.
            serde_json::value::to_raw_value(self.json()).unwrap_or_else(|_| {
                RawValue::from_string("\"\"".to_string()).expect("an empty JSON string")
            })
        })
    }

    /// What is sent in place of this result once it is old ([`super::digest`]): `None` for a
    /// result short enough to send whole, or one that is a digest already. Worked out once
    /// per copy of the result (a turn's requests share it).
    pub fn digest(&self) -> Option<&ToolOutput> {
        self.0
            .digest
            .get_or_init(|| {
                // The length first: it reads the kept text, where the rest needs the value.
                if self.json().len() <= DIGEST_OVER {
                    return None;
                }
                // A result kept as text only (read back from history) is digested from the
                // text, without reading it into a value; text a value would not write is read.
                if self.0.value.get().is_none() {
                    match digest_text(self.json()) {
                        Some(TextDigest::Already) => return None,
                        Some(TextDigest::Digest(raw)) => return Some(Self::digest_from(raw)),
                        None => {}
                    }
                }
                let short = shorten(self.value());
                // A digest keeps its marker, so it shows in the shortened form.
                if is_digest(&short) {
                    return None;
                }
                Some(Self::digest_of(mark(short)))
            })
            .as_ref()
    }

    /// A digest, which has none of its own, kept as its text (a third of its tree's size;
    /// requests and the store only ever write it out).
    fn digest_of(value: Value) -> Self {
        match serde_json::value::to_raw_value(&value) {
            Ok(raw) => Self::digest_from(raw),
            Err(_) => {
                let out = Self::from(value);
                let _ = out.0.digest.set(None);
                out
            }
        }
    }

    /// A digest kept as its text.
    fn digest_from(raw: Box<RawValue>) -> Self {
        let out = from_raw(raw);
        let _ = out.0.digest.set(None);
        out
    }

    /// The value, to change in place (the text is worked out again when next asked for).
    pub fn make_mut(&mut self) -> &mut Value {
        self.value();
        let inner = Arc::make_mut(&mut self.0);
        inner.json = OnceLock::new();
        inner.quoted = OnceLock::new();
        inner.digest = OnceLock::new();
        // `value()` above set it, and the copy made for a shared result carries it over.
        inner.value.get_mut().expect("the value was just read")
    }

    /// The result kept as its text only, its value dropped (read again from the text if
    /// something asks for it): what a turn keeps of a result once it has looked inside it,
    /// while it waits on the model with the result in hand.
    pub fn into_text(self) -> Self {
        self.json();
        match Arc::try_unwrap(self.0) {
            Ok(mut inner) => {
                inner.value = OnceLock::new();
                Self(Arc::new(inner))
            }
            // Shared: the others keep the value; this copy keeps the text.
            Err(shared) => {
                let out = from_raw(
                    shared
                        .json
                        .get()
                        .cloned()
                        .unwrap_or_else(|| RawValue::NULL.to_owned()),
                );
                if let Some(q) = shared.quoted.get() {
                    let _ = out.0.quoted.set(q.clone());
                }
                out
            }
        }
    }

    /// The value itself (copied only when it is shared).
    pub fn into_value(self) -> Value {
        self.value();
        match Arc::try_unwrap(self.0) {
            Ok(inner) => inner.value.into_inner().unwrap_or_default(),
            Err(shared) => shared.value.get().cloned().unwrap_or_default(),
        }
    }
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        Self(Arc::new(Inner {
            value: OnceLock::from(value),
            json: OnceLock::new(),
            quoted: OnceLock::new(),
            digest: OnceLock::new(),
        }))
    }
}

impl std::ops::Deref for ToolOutput {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.value()
    }
}

impl AsRef<Value> for ToolOutput {
    fn as_ref(&self) -> &Value {
        self.value()
    }
}

impl PartialEq for ToolOutput {
    fn eq(&self, other: &Self) -> bool {
        self.value() == other.value()
    }
}

impl std::fmt::Debug for ToolOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value().fmt(f)
    }
}

impl Serialize for ToolOutput {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Written as its text, worked out once for every copy that writes it (the history
        // and the audit row share a result): JSON serialisers only, as are all of this
        // crate's.
        if self.0.value.get().is_none() && self.0.json.get().is_none() {
            return Value::Null.serialize(s);
        }
        self.json_raw().serialize(s)
    }
}

impl<'de> Deserialize<'de> for ToolOutput {
    /// Reads the value (from any reader; see [`from_json_text`] for stored history).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(Self::from)
    }
}

/// Reads a result from a JSON text reader (`serde_json::from_str` and the like, as the store
/// reads history), keeping the text it was read from (stored results are compact JSON
/// already) and reading the value from it only when something asks for it. Readers that
/// buffer (serde's tagged enums) cannot hand over the text and are refused.
pub fn from_json_text<'de, D: Deserializer<'de>>(d: D) -> Result<ToolOutput, D::Error> {
    Box::<RawValue>::deserialize(d).map(from_raw)
}

fn from_raw(raw: Box<RawValue>) -> ToolOutput {
    ToolOutput(Arc::new(Inner {
        value: OnceLock::new(),
        json: OnceLock::from(raw),
        quoted: OnceLock::new(),
        digest: OnceLock::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_result_kept_as_text_reads_the_same() {
        let v = json!({"panel": "LP-1", "rows": [1, 2, 3]});
        let alone = ToolOutput::from(v.clone()).into_text();
        assert!(alone.0.value.get().is_none(), "the value is dropped");
        assert_eq!(alone.json(), r#"{"panel":"LP-1","rows":[1,2,3]}"#);
        assert_eq!(*alone, v, "and read again when asked for");
        let shared = ToolOutput::from(v.clone());
        let _quoted = shared.json_quoted();
        let text = shared.clone().into_text();
        assert!(
            shared.0.value.get().is_some(),
            "the other copy keeps its value"
        );
        assert_eq!(text.json_quoted().get(), shared.json_quoted().get());
        assert_eq!(*text, v);
    }

    #[test]
    fn text_follows_the_value() {
        let mut out = ToolOutput::from(json!({"panel": "LP-1", "load_va": 1200.5}));
        assert_eq!(out.json(), r#"{"load_va":1200.5,"panel":"LP-1"}"#);
        let shared = out.clone();
        out.make_mut()["panel"] = json!("LP-2");
        assert_eq!(out.json(), r#"{"load_va":1200.5,"panel":"LP-2"}"#);
        assert_eq!(
            shared.json(),
            r#"{"load_va":1200.5,"panel":"LP-1"}"#,
            "a clone keeps its own"
        );
        assert_eq!(shared.into_value()["panel"], "LP-1");
    }

    #[test]
    fn read_from_text_it_keeps_that_text_and_equals_the_value() {
        let text = |t: &str| from_json_text(&mut serde_json::Deserializer::from_str(t));
        let read = text(r#"{"a":[1,2],"b":"x\ty"}"#).expect("read");
        assert_eq!(read.json(), r#"{"a":[1,2],"b":"x\ty"}"#);
        assert_eq!(read, ToolOutput::from(json!({"a": [1, 2], "b": "x\ty"})));
        let from_value: ToolOutput =
            serde_json::from_value(json!({"ok": true})).expect("from a value");
        assert_eq!(from_value.json(), r#"{"ok":true}"#);
        assert_eq!(serde_json::to_string(&read).expect("write"), read.json());
        let text_only = text(r#"{"b":"x\"y"}"#).expect("read");
        assert_eq!(
            serde_json::to_string(&text_only).expect("write"),
            r#"{"b":"x\"y"}"#
        );
        assert_eq!(text_only.json_quoted().get(), r#""{\"b\":\"x\\\"y\"}""#);
        assert_eq!(text_only["b"], "x\"y");
    }

    fn large() -> Value {
        let rows: Vec<Value> = (1..=40)
            .map(|n| json!({"circuit": n, "load_va": 1000 + n, "description": "receptacles"}))
            .collect();
        json!({"panel": "LP-1", "circuits": rows})
    }

    #[test]
    fn a_large_result_has_one_digest_and_a_digest_has_none() {
        let out = ToolOutput::from(large());
        let d = out.digest().expect("a large result is digested");
        assert!(super::is_digest(d));
        assert_eq!(
            d["circuits"].as_array().map(Vec::len),
            Some(4),
            "3 rows and a count"
        );
        assert!(d.digest().is_none(), "a digest is not digested again");
        assert!(ToolOutput::from(json!({"ok": true})).digest().is_none());
        let mut changed = out.clone();
        changed.make_mut()["circuits"] = json!([]);
        assert!(changed.digest().is_none(), "a change drops the old digest");
    }

    #[test]
    fn a_result_kept_as_text_is_digested_once_into_text() {
        let out = ToolOutput::from(large());
        let read =
            from_json_text(&mut serde_json::Deserializer::from_str(out.json())).expect("read");
        let d = read.digest().expect("digested");
        assert!(d.0.value.get().is_none(), "a digest is kept as its text");
        assert_eq!(d, out.digest().expect("digest"));
        assert!(
            std::ptr::eq(d, read.digest().expect("digest")),
            "worked out once"
        );
    }
}
