//! Reading a stored [`ChatMessage`] in one pass.
//!
//! A derived internally tagged enum reads each message twice: first into a generic buffer to
//! find its `role`, then from that buffer into the variant, tool results (JSON documents of
//! any size) included. Every model request reads its whole window from the store, so the
//! message is read here into one flat shape and checked for the fields its role requires;
//! what is accepted and refused is what the derived reader accepts and refuses.

use serde::Deserialize;

use super::{ChatMessage, ToolCall, ToolResult};

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Role {
    User,
    Assistant,
    Tool,
}

/// Every field any role has; the role says which must be there.
#[derive(Deserialize)]
pub(super) struct WireMessage {
    role: Role,
    #[serde(default, deserialize_with = "present")]
    text: Option<String>,
    #[serde(default, deserialize_with = "present")]
    tool_calls: Option<Vec<ToolCall>>,
    #[serde(default)]
    thought_signature: Option<String>,
    #[serde(default, deserialize_with = "present")]
    results: Option<Vec<ToolResult>>,
}

/// A field that, when present, must hold a value (`null` is refused, as for a plain field).
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

impl TryFrom<WireMessage> for ChatMessage {
    type Error = String;

    fn try_from(w: WireMessage) -> Result<Self, Self::Error> {
        Ok(match w.role {
            Role::User => ChatMessage::User {
                text: w.text.ok_or("missing field `text`")?,
                images: Vec::new(),
            },
            Role::Assistant => ChatMessage::Assistant {
                text: w.text.unwrap_or_default(),
                tool_calls: w.tool_calls.unwrap_or_default(),
                thought_signature: w.thought_signature,
            },
            Role::Tool => ChatMessage::Tool {
                results: w.results.ok_or("missing field `results`")?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the derived reader of the same enum made of a message.
    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(tag = "role", rename_all = "snake_case")]
    enum Derived {
        User {
            text: String,
        },
        Assistant {
            #[serde(default)]
            text: String,
            #[serde(default)]
            tool_calls: Vec<ToolCall>,
            #[serde(default)]
            thought_signature: Option<String>,
        },
        Tool {
            results: Vec<ToolResult>,
        },
    }

    fn same(derived: Derived) -> ChatMessage {
        match derived {
            Derived::User { text } => ChatMessage::user(text),
            Derived::Assistant {
                text,
                tool_calls,
                thought_signature,
            } => ChatMessage::Assistant {
                text,
                tool_calls,
                thought_signature,
            },
            Derived::Tool { results } => ChatMessage::Tool { results },
        }
    }

    #[test]
    fn reads_and_refuses_what_the_derived_reader_does() {
        for text in [
            r#"{"role":"user","text":"hi"}"#,
            r#"{"text":"hi","role":"user","images":[1]}"#,
            r#"{"role":"user"}"#,
            r#"{"role":"user","text":null}"#,
            r#"{"role":"user","text":5}"#,
            r#"{"role":"assistant"}"#,
            r#"{"role":"assistant","text":null}"#,
            r#"{"role":"assistant","tool_calls":null,"thought_signature":null}"#,
            r#"{"role":"tool","results":null}"#,
            r#"{"role":"assistant","text":"a","thought_signature":"s"}"#,
            r#"{"role":"assistant","text":"","tool_calls":[{"id":"c","name":"f","arguments":"{}"}]}"#,
            r#"{"role":"assistant","tool_calls":[{"id":"c","name":"f"}]}"#,
            r#"{"role":"tool","results":[{"call_id":"c","name":"f","content":{"a":[1,{"b":null}]},"is_error":true}]}"#,
            r#"{"role":"tool","results":[{"call_id":"c","name":"f","content":"x"}]}"#,
            r#"{"role":"tool"}"#,
            r#"{"role":"system","text":"x"}"#,
            r#"{"text":"x"}"#,
            r#"[]"#,
            r#"{"role":"user","text":"a","extra":{"deep":[1,2]}}"#,
        ] {
            let ours = serde_json::from_str::<ChatMessage>(text).ok();
            let derived = serde_json::from_str::<Derived>(text).ok().map(same);
            assert_eq!(ours, derived, "{text}");
        }
    }

    #[test]
    fn written_messages_read_back() {
        let messages = [
            ChatMessage::user("q"),
            ChatMessage::assistant("a"),
            ChatMessage::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "c".into(),
                    name: "f".into(),
                    arguments: "{\"x\":1}".into(),
                    thought_signature: Some("t".into()),
                }],
                thought_signature: Some("s".into()),
            },
            ChatMessage::Tool {
                results: vec![ToolResult {
                    call_id: "c".into(),
                    name: "f".into(),
                    content: serde_json::json!({"ok": [1, 2.5, "x"]}).into(),
                    is_error: false,
                }],
            },
        ];
        for m in messages {
            let text = serde_json::to_string(&m).unwrap_or_default();
            assert_eq!(serde_json::from_str::<ChatMessage>(&text).ok(), Some(m));
        }
    }
}
