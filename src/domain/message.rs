//! Persisted conversation messages: the history rows of a session and the tool calls and
//! results kept with a pending action, in a format of their own.
//!
//! The format is versioned and independent of any model provider's types, so a change to
//! how the model is spoken to never changes what is stored (docs/message-format.md shows
//! each version):
//!
//! * v1, written before the format had a version: `{"role": "user" | "assistant" | "tool",
//!   ...}` with no `v` field;
//! * v2, written now: the same fields plus `"v": 2`.
//!
//! Both read. A row with a `v` newer than [`MESSAGE_FORMAT`] is refused with a clear error
//! rather than misread.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The version of the message format this build writes.
pub const MESSAGE_FORMAT: u32 = 2;

/// A stored message of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum MessageRecord {
    /// A person's message. Pictures sent with it are not stored: the text carries a
    /// placeholder naming each file.
    User {
        /// Text as typed (with the file placeholders).
        text: String,
    },
    /// A model turn: text and/or tool calls.
    Assistant {
        /// Text content (empty when the turn only called tools).
        text: String,
        /// Tool calls of this turn, in order.
        tool_calls: Vec<ToolCallRecord>,
        /// Opaque provider signature attached to the text, kept to send back unchanged.
        thought_signature: Option<String>,
    },
    /// Results for the tool calls of the preceding assistant message, one per call.
    Tool {
        /// Results in call order.
        results: Vec<ToolResultRecord>,
    },
}

impl MessageRecord {
    /// The stored role name: `user`, `assistant` or `tool`.
    pub fn role(&self) -> &'static str {
        match self {
            Self::User { .. } => "user",
            Self::Assistant { .. } => "assistant",
            Self::Tool { .. } => "tool",
        }
    }
}

/// A stored tool call. Its field names are the stored format (v1 and v2 alike).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// Call id, echoed by its result.
    pub id: String,
    /// Tool name as the model wrote it.
    pub name: String,
    /// Arguments as the raw JSON text the model produced (possibly invalid JSON).
    pub arguments: String,
    /// Opaque provider signature attached to the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
}

/// A stored tool result. Its field names are the stored format (v1 and v2 alike).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultRecord {
    /// The id of the call it answers.
    pub call_id: String,
    /// The tool name of that call.
    pub name: String,
    /// JSON result; errors are `{"error": "..."}` with `is_error` set (shared with the
    /// message it records).
    pub content: std::sync::Arc<serde_json::Value>,
    /// Whether the call failed.
    #[serde(default)]
    pub is_error: bool,
}

/// A message's fields borrowed, for writing (the newest version) without copying the message.
#[derive(Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum BodyRef<'a> {
    User {
        text: &'a str,
    },
    Assistant {
        text: &'a str,
        #[serde(skip_serializing_if = "no_calls")]
        tool_calls: &'a [ToolCallRecord],
        #[serde(skip_serializing_if = "Option::is_none")]
        thought_signature: Option<&'a str>,
    },
    Tool {
        results: &'a [ToolResultRecord],
    },
}

fn no_calls(calls: &&[ToolCallRecord]) -> bool {
    calls.is_empty()
}

#[derive(Serialize)]
struct VersionedRef<'a> {
    v: u32,
    #[serde(flatten)]
    body: BodyRef<'a>,
}

impl Serialize for MessageRecord {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let body = match self {
            Self::User { text } => BodyRef::User { text },
            Self::Assistant {
                text,
                tool_calls,
                thought_signature,
            } => BodyRef::Assistant {
                text,
                tool_calls,
                thought_signature: thought_signature.as_deref(),
            },
            Self::Tool { results } => BodyRef::Tool { results },
        };
        VersionedRef {
            v: MESSAGE_FORMAT,
            body,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for MessageRecord {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(RecordVisitor)
    }
}

/// Whether a stored `v` is a version this build reads.
fn known_version(v: &serde_json::value::RawValue) -> bool {
    serde_json::from_str::<u64>(v.get()).is_ok_and(|v| (1..=u64::from(MESSAGE_FORMAT)).contains(&v))
}

/// Reads a record in one pass: every field is kept as read (no buffering of the whole object,
/// as serde's tagged enums do), and only once the whole object is read are the fields
/// interpreted, the version first, so a newer format is refused by its version whatever its
/// other fields hold. Tool results that follow a version this build reads are the exception:
/// they are read in place (they are most of a thread's bytes).
struct RecordVisitor;

impl<'de> serde::de::Visitor<'de> for RecordVisitor {
    type Value = MessageRecord;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a stored message object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> Result<MessageRecord, A::Error> {
        use serde::de::Error;
        use serde_json::value::RawValue;
        // Fields are kept as their text and parsed once into their types: going through a
        // `Value` would build every tool result twice.
        let (mut v, mut role, mut text, mut calls, mut signature, mut results) =
            (None, None, None, None, None, None);
        // Results read in place, without a copy of their text first, once a version this
        // reads came before them (as it does in every row written with one).
        let mut results_read: Option<Vec<ToolResultRecord>> = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "results" && v.as_deref().is_some_and(known_version) {
                results_read = Some(map.next_value()?);
                continue;
            }
            let slot = match key.as_ref() {
                "v" => &mut v,
                "role" => &mut role,
                "text" => &mut text,
                "tool_calls" => &mut calls,
                "thought_signature" => &mut signature,
                "results" => &mut results,
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                }
            };
            *slot = Some(map.next_value::<Box<RawValue>>()?);
        }
        // The version decides how the rest reads, so it is checked first; v1 rows have none.
        let v = match v {
            None => 1,
            Some(v) => serde_json::from_str::<u64>(v.get()).map_err(|_| {
                A::Error::custom(format!(
                    "message format version {} is not a number",
                    v.get()
                ))
            })?,
        };
        if v == 0 || v > u64::from(MESSAGE_FORMAT) {
            return Err(A::Error::custom(format!(
                "message format v{v} is not one this version reads (v1 to v{MESSAGE_FORMAT})"
            )));
        }
        fn field<T: serde::de::DeserializeOwned, E: Error>(
            value: Option<Box<RawValue>>,
            name: &'static str,
        ) -> Result<Option<T>, E> {
            value
                .map(|v| {
                    serde_json::from_str(v.get()).map_err(|e| E::custom(format!("{name}: {e}")))
                })
                .transpose()
        }
        let role: String = field(role, "role")?.ok_or_else(|| A::Error::missing_field("role"))?;
        match role.as_str() {
            "user" => Ok(MessageRecord::User {
                text: field(text, "text")?.ok_or_else(|| A::Error::missing_field("text"))?,
            }),
            "assistant" => Ok(MessageRecord::Assistant {
                text: field::<Option<String>, _>(text, "text")?
                    .flatten()
                    .unwrap_or_default(),
                tool_calls: field::<Option<_>, _>(calls, "tool_calls")?
                    .flatten()
                    .unwrap_or_default(),
                thought_signature: field::<Option<String>, _>(signature, "thought_signature")?
                    .flatten(),
            }),
            "tool" => Ok(MessageRecord::Tool {
                results: match results_read {
                    Some(read) => read,
                    None => field(results, "results")?
                        .ok_or_else(|| A::Error::missing_field("results"))?,
                },
            }),
            other => Err(A::Error::unknown_variant(
                other,
                &["user", "assistant", "tool"],
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call() -> ToolCallRecord {
        ToolCallRecord {
            id: "call_1".into(),
            name: "add_circuit".into(),
            arguments: r#"{"panel":"LP-1"}"#.into(),
            thought_signature: Some("sig==".into()),
        }
    }

    #[test]
    fn writes_v2_with_the_version_and_v1_fields() {
        let m = MessageRecord::Assistant {
            text: String::new(),
            tool_calls: vec![call()],
            thought_signature: None,
        };
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            json!({"v": 2, "role": "assistant", "text": "", "tool_calls": [
                {"id": "call_1", "name": "add_circuit", "arguments": "{\"panel\":\"LP-1\"}",
                 "thought_signature": "sig=="}
            ]})
        );
        let u = MessageRecord::User { text: "hi".into() };
        assert_eq!(
            serde_json::to_value(&u).unwrap(),
            json!({"v": 2, "role": "user", "text": "hi"})
        );
    }

    #[test]
    fn reads_v1_rows_without_a_version() {
        let rows = [
            (
                json!({"role": "user", "text": "photo [image: panel.jpg]"}),
                MessageRecord::User {
                    text: "photo [image: panel.jpg]".into(),
                },
            ),
            (
                json!({"role": "assistant", "tool_calls": [{"id": "call_1", "name": "add_circuit",
                       "arguments": "{\"panel\":\"LP-1\"}", "thought_signature": "sig=="}]}),
                MessageRecord::Assistant {
                    text: String::new(),
                    tool_calls: vec![call()],
                    thought_signature: None,
                },
            ),
            (
                json!({"role": "tool", "results": [{"call_id": "call_1", "name": "add_circuit",
                       "content": {"ok": true}}]}),
                MessageRecord::Tool {
                    results: vec![ToolResultRecord {
                        call_id: "call_1".into(),
                        name: "add_circuit".into(),
                        content: json!({"ok": true}).into(),
                        is_error: false,
                    }],
                },
            ),
        ];
        for (row, want) in rows {
            let got: MessageRecord = serde_json::from_value(row).unwrap();
            assert_eq!(got, want);
            // And the same message written now reads back equal.
            let again: MessageRecord =
                serde_json::from_value(serde_json::to_value(&got).unwrap()).unwrap();
            assert_eq!(again, want);
        }
    }

    #[test]
    fn results_after_a_known_version_read_in_place_and_an_unknown_one_is_refused_first() {
        let row = r#"{"v":2,"role":"tool","results":[{"call_id":"c1","name":"describe_panel","content":{"panel":"LP-1"}}]}"#;
        let MessageRecord::Tool { results } = serde_json::from_str(row).expect("read") else {
            panic!("a tool message")
        };
        assert_eq!(results[0].content.to_string(), r#"{"panel":"LP-1"}"#);
        // A newer version is refused by its version, not by results it shapes differently.
        let e = serde_json::from_str::<MessageRecord>(r#"{"v":3,"role":"tool","results":"x"}"#)
            .expect_err("refused");
        assert!(e.to_string().contains("v3"), "{e}");
    }

    #[test]
    fn refuses_versions_it_does_not_know() {
        for v in [0, 3, 99] {
            let e = serde_json::from_value::<MessageRecord>(
                json!({"v": v, "role": "user", "body": "x"}),
            )
            .unwrap_err();
            assert!(e.to_string().contains(&format!("v{v}")), "{e}");
        }
        assert!(serde_json::from_value::<MessageRecord>(json!({"role": "system"})).is_err());
        assert!(serde_json::from_value::<MessageRecord>(json!({"text": "no role"})).is_err());
    }
}
