//! Conversions between the provider-neutral messages and their stored records
//! ([`crate::domain::message`]). The store keeps records only; the model's types can change
//! without changing what is stored, and a stored message becomes a [`ChatMessage`] here.

use crate::domain::message::{MessageRecord, ToolCallRecord, ToolResultRecord};

use super::{ChatMessage, ToolCall, ToolResult};

impl From<&ToolCall> for ToolCallRecord {
    fn from(c: &ToolCall) -> Self {
        Self {
            id: c.id.clone(),
            name: c.name.clone(),
            arguments: c.arguments.clone(),
            thought_signature: c.thought_signature.clone(),
        }
    }
}

impl From<ToolCall> for ToolCallRecord {
    fn from(c: ToolCall) -> Self {
        Self {
            id: c.id,
            name: c.name,
            arguments: c.arguments,
            thought_signature: c.thought_signature,
        }
    }
}

impl From<ToolCallRecord> for ToolCall {
    fn from(c: ToolCallRecord) -> Self {
        Self {
            id: c.id,
            name: c.name,
            arguments: c.arguments,
            thought_signature: c.thought_signature,
        }
    }
}

impl From<&ToolResult> for ToolResultRecord {
    fn from(r: &ToolResult) -> Self {
        Self {
            call_id: r.call_id.clone(),
            name: r.name.clone(),
            content: r.content.clone(),
            is_error: r.is_error,
        }
    }
}

impl From<ToolResult> for ToolResultRecord {
    fn from(r: ToolResult) -> Self {
        Self {
            call_id: r.call_id,
            name: r.name,
            content: r.content,
            is_error: r.is_error,
        }
    }
}

impl From<ToolResultRecord> for ToolResult {
    fn from(r: ToolResultRecord) -> Self {
        Self {
            call_id: r.call_id,
            name: r.name,
            content: r.content,
            is_error: r.is_error,
        }
    }
}

/// The record of a message: everything but its pictures, which are never stored (the text
/// names each file).
impl From<&ChatMessage> for MessageRecord {
    fn from(m: &ChatMessage) -> Self {
        match m {
            ChatMessage::User { text, .. } => Self::User { text: text.clone() },
            ChatMessage::Assistant {
                text,
                tool_calls,
                thought_signature,
            } => Self::Assistant {
                text: text.clone(),
                tool_calls: tool_calls.iter().map(ToolCallRecord::from).collect(),
                thought_signature: thought_signature.clone(),
            },
            ChatMessage::Tool { results } => Self::Tool {
                results: results.iter().map(ToolResultRecord::from).collect(),
            },
        }
    }
}

impl From<ChatMessage> for MessageRecord {
    fn from(m: ChatMessage) -> Self {
        match m {
            ChatMessage::User { text, .. } => Self::User { text },
            ChatMessage::Assistant {
                text,
                tool_calls,
                thought_signature,
            } => Self::Assistant {
                text,
                tool_calls: tool_calls.into_iter().map(ToolCallRecord::from).collect(),
                thought_signature,
            },
            ChatMessage::Tool { results } => Self::Tool {
                results: results.into_iter().map(ToolResultRecord::from).collect(),
            },
        }
    }
}

impl From<MessageRecord> for ChatMessage {
    fn from(m: MessageRecord) -> Self {
        match m {
            MessageRecord::User { text } => ChatMessage::user(text),
            MessageRecord::Assistant {
                text,
                tool_calls,
                thought_signature,
            } => ChatMessage::Assistant {
                text,
                tool_calls: tool_calls.into_iter().map(ToolCall::from).collect(),
                thought_signature,
            },
            MessageRecord::Tool { results } => ChatMessage::Tool {
                results: results.into_iter().map(ToolResult::from).collect(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ImagePart;

    fn messages() -> Vec<ChatMessage> {
        vec![
            ChatMessage::user("how far?"),
            ChatMessage::Assistant {
                text: "checking".into(),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "calculate_voltage_drop".into(),
                    arguments: "{\"feet\": 120".into(),
                    thought_signature: Some("sig".into()),
                }],
                thought_signature: Some("text-sig".into()),
            },
            ChatMessage::Tool {
                results: vec![ToolResult {
                    call_id: "c1".into(),
                    name: "calculate_voltage_drop".into(),
                    content: serde_json::json!({"error": "bad arguments"}).into(),
                    is_error: true,
                }],
            },
        ]
    }

    #[test]
    fn every_message_survives_its_record() {
        for m in messages() {
            assert_eq!(ChatMessage::from(MessageRecord::from(&m)), m);
            assert_eq!(ChatMessage::from(MessageRecord::from(m.clone())), m);
        }
    }

    #[test]
    fn pictures_are_not_kept() {
        let m = ChatMessage::User {
            text: "photo [image: panel.jpg]".into(),
            images: vec![ImagePart {
                mime: "image/jpeg".into(),
                bytes: vec![1, 2, 3],
            }],
        };
        assert_eq!(
            MessageRecord::from(&m),
            MessageRecord::User {
                text: "photo [image: panel.jpg]".into()
            }
        );
        assert_eq!(
            ChatMessage::from(MessageRecord::from(m)),
            ChatMessage::user("photo [image: panel.jpg]")
        );
    }
}
