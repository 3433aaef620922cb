//! The Chat Completions request body, serialised straight from the request.
//!
//! [`super::openai::OpenAiProvider::encode_request`] builds a `serde_json::Value` tree (every
//! string of the system prompt, history and tool schemas copied into it, every object a sorted
//! map) only to serialise it once; for a request of tens of kilobytes that copy cost more than
//! sending it. The types here borrow the request and write the same bytes: fields are declared
//! in sorted order, because a `Value` object serialises its keys sorted, and the tests check
//! both encodings agree byte for byte, so what the model receives and the prompt-cache prefix
//! are unchanged.

use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::Value;

use super::{ChatMessage, ChatRequest, ToolSpec};

/// The body of one request.
#[derive(Serialize)]
pub(crate) struct Body<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    pub messages: Messages<'a>,
    pub model: &'a str,
    pub stream: bool,
    pub stream_options: StreamOptions,
    /// Kept as `f64` from the configuration on, so 0.2 goes out as `0.2` (an `f32` widened
    /// on the way would print as 0.20000000298023224).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Tools::is_empty")]
    pub tools: Tools<'a>,
}

#[derive(Serialize)]
pub(crate) struct StreamOptions {
    pub include_usage: bool,
}

/// The system instruction and the conversation, as Chat Completions messages.
pub(crate) struct Messages<'a> {
    pub system: &'a str,
    pub messages: &'a [ChatMessage],
}

/// The offered tools.
pub(crate) struct Tools<'a>(pub &'a [ToolSpec]);

impl Tools<'_> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One message's content: text, `null`, or parts (text and pictures).
#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(&'a str),
    Parts(Vec<Value>),
    Null(Option<()>),
}

#[derive(Serialize)]
struct Plain<'a> {
    content: Content<'a>,
    role: &'static str,
}

#[derive(Serialize)]
struct WithCalls<'a> {
    content: Content<'a>,
    role: &'static str,
    tool_calls: Calls<'a>,
}

struct Calls<'a>(&'a [super::ToolCall]);

#[derive(Serialize)]
struct Call<'a> {
    function: CallFunction<'a>,
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct CallFunction<'a> {
    arguments: &'a str,
    name: &'a str,
}

#[derive(Serialize)]
struct ToolMessage<'a> {
    content: ToolContent<'a>,
    role: &'static str,
    tool_call_id: &'a str,
}

/// A tool result's content: its text, or its JSON written as text.
struct ToolContent<'a>(&'a super::ToolOutput);

impl Serialize for ToolContent<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // A result read back from history is sent as the text it was read as, quoted once
        // per result rather than once per request; it is parsed only when it is a string.
        if self.0.json().starts_with('"') {
            if let Value::String(text) = self.0.as_ref() {
                return s.serialize_str(text);
            }
        }
        self.0.json_quoted().serialize(s)
    }
}

#[derive(Serialize)]
struct Tool<'a> {
    function: Function<'a>,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct Function<'a> {
    description: &'a str,
    name: &'a str,
    parameters: Parameters<'a>,
}

/// The schema as given (its kept text), or an empty object schema when it is not an object.
struct Parameters<'a>(&'a super::ToolSchema);

#[derive(Serialize)]
struct EmptyObject {
    properties: Empty,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct Empty {}

impl Serialize for Parameters<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.is_object() {
            self.0.serialize(s)
        } else {
            EmptyObject {
                properties: Empty {},
                kind: "object",
            }
            .serialize(s)
        }
    }
}

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|t| Tool {
            function: Function {
                description: &t.description,
                name: &t.name,
                parameters: Parameters(&t.parameters),
            },
            kind: "function",
        }))
    }
}

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|c| Call {
            function: CallFunction {
                arguments: &c.arguments,
                name: &c.name,
            },
            id: &c.id,
            kind: "function",
        }))
    }
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        if !self.system.is_empty() {
            seq.serialize_element(&Plain {
                content: Content::Text(self.system),
                role: "system",
            })?;
        }
        for message in self.messages {
            match message {
                // Empty text is never sent (as in `encode_messages`).
                ChatMessage::User { text, images } if text.is_empty() && images.is_empty() => {}
                ChatMessage::User { text, images } if images.is_empty() => {
                    seq.serialize_element(&Plain {
                        content: Content::Text(text),
                        role: "user",
                    })?
                }
                ChatMessage::User { text, images } => {
                    let mut parts = Vec::with_capacity(images.len() + 1);
                    if !text.is_empty() {
                        parts.push(serde_json::json!({"type": "text", "text": text}));
                    }
                    parts.extend(images.iter().map(super::ImagePart::openai_part));
                    seq.serialize_element(&Plain {
                        content: Content::Parts(parts),
                        role: "user",
                    })?
                }
                ChatMessage::Assistant {
                    text, tool_calls, ..
                } if text.is_empty() && tool_calls.is_empty() => {}
                ChatMessage::Assistant {
                    text, tool_calls, ..
                } if tool_calls.is_empty() => seq.serialize_element(&Plain {
                    content: Content::Text(text),
                    role: "assistant",
                })?,
                ChatMessage::Assistant {
                    text, tool_calls, ..
                } => seq.serialize_element(&WithCalls {
                    content: if text.is_empty() {
                        Content::Null(None)
                    } else {
                        Content::Text(text)
                    },
                    role: "assistant",
                    tool_calls: Calls(tool_calls),
                })?,
                ChatMessage::Tool { results } => {
                    for r in results {
                        seq.serialize_element(&ToolMessage {
                            content: ToolContent(&r.content),
                            role: "tool",
                            tool_call_id: &r.call_id,
                        })?;
                    }
                }
            }
        }
        seq.end()
    }
}

/// Serialises `request` for `model`; `max_key` is the name the server wants for the output
/// limit (`max_completion_tokens` or `max_tokens`).
pub(crate) fn encode(
    request: &ChatRequest,
    model: &str,
    temperature: Option<f64>,
    max_key: MaxKey,
) -> Vec<u8> {
    let max = request.max_output_tokens;
    let body = Body {
        max_completion_tokens: max.filter(|_| max_key == MaxKey::Completion),
        max_tokens: max.filter(|_| max_key == MaxKey::Tokens),
        messages: Messages {
            system: &request.system,
            messages: &request.messages,
        },
        model,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        temperature: request.temperature.or(temperature),
        tools: Tools(&request.tools),
    };
    // Writing to a Vec fails only for a map key that is not a string, which these types
    // never produce; the empty body then gets the server's clear refusal.
    serde_json::to_vec(&body).unwrap_or_default()
}

/// Which name the output limit goes by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MaxKey {
    /// `max_completion_tokens` (OpenAI's own service and Azure).
    Completion,
    /// `max_tokens` (compatible servers).
    Tokens,
}
