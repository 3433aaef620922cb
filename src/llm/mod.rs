//! Provider-neutral chat model and the streaming interface every LLM wire format implements.
//!
//! The agent core speaks only these types; `openai` and `gemini` translate them to and from
//! their wire formats, so a conversation started on one provider can continue on another.
//!
//! Layer: beside the store, under the core. Imports `config`, `domain` and the HTTP policies; never
//! the core, the store or a platform.

use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use futures::Stream;
use serde::{Deserialize, Serialize};

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Call id: the provider's, or one we assigned (Gemini may send none) and echo back.
    pub id: String,
    /// Tool name as the model wrote it (may be unknown to the registry).
    pub name: String,
    /// Arguments as the raw JSON text the model produced; parsed (and possibly rejected) later.
    pub arguments: String,
    /// Gemini `thoughtSignature` attached to this call, sent back unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
}

impl ToolCall {
    /// The arguments as the JSON object a request must carry. Text that is not an object (a
    /// small model's broken JSON, kept so the registry can say where it broke) is wrapped as
    /// `{"raw_arguments": text}`: a server that parses the history refuses the whole request
    /// over one such call (llama.cpp answers 500 to every later request of the thread).
    pub fn arguments_object(&self) -> serde_json::Value {
        match serde_json::from_str::<serde_json::Value>(&self.arguments) {
            Ok(v @ serde_json::Value::Object(_)) => v,
            _ if self.arguments.trim().is_empty() => serde_json::json!({}),
            _ => serde_json::json!({ "raw_arguments": self.arguments }),
        }
    }

    /// The arguments text a request carries: as the model wrote it when it is a JSON object,
    /// else [`Self::arguments_object`] written out.
    pub fn arguments_text(&self) -> std::borrow::Cow<'_, str> {
        match serde_json::from_str::<serde_json::Value>(&self.arguments) {
            Ok(serde_json::Value::Object(_)) => std::borrow::Cow::Borrowed(&self.arguments),
            _ => std::borrow::Cow::Owned(self.arguments_object().to_string()),
        }
    }
}

/// The result of one tool call, sent back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// The tool name of that call.
    pub name: String,
    /// JSON result (an object); errors are `{"error": "..."}` with `is_error` set. Shared:
    /// the history, the stored record, the audit entry and every later request of the turn
    /// hold this one value (a panel's result is tens of kilobytes as a tree).
    pub content: std::sync::Arc<serde_json::Value>,
    /// Whether the call failed (unknown tool, bad arguments, tool error, not confirmed).
    #[serde(default)]
    pub is_error: bool,
}

/// One message of a conversation in provider-neutral form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "role",
    rename_all = "snake_case",
    try_from = "message_wire::WireMessage"
)]
pub enum ChatMessage {
    /// A person's message.
    User {
        /// Text as typed.
        text: String,
        /// Pictures sent with the text for this turn only. Never serialised, so they are
        /// never stored: the history keeps the text (with a placeholder naming each file).
        #[serde(skip)]
        images: Vec<ImagePart>,
    },
    /// A model turn: text and/or tool calls.
    Assistant {
        /// Text content (may be empty when the turn only calls tools).
        #[serde(default)]
        text: String,
        /// Tool calls of this turn, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// Gemini signature attached to the text part, echoed back unchanged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thought_signature: Option<String>,
    },
    /// Results for the tool calls of the preceding assistant message (one per call).
    Tool {
        /// One result per call, in call order.
        results: Vec<ToolResult>,
    },
}

impl ChatMessage {
    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::User {
            text: text.into(),
            images: Vec::new(),
        }
    }

    /// An assistant message with text only.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::Assistant {
            text: text.into(),
            tool_calls: Vec::new(),
            thought_signature: None,
        }
    }

    /// Rough token estimate (4 characters per token) used for history windows.
    pub fn estimated_tokens(&self) -> usize {
        let chars = match self {
            Self::User { text, images } => text.len() + images.len() * IMAGE_TOKENS_ESTIMATE * 4,
            Self::Assistant {
                text, tool_calls, ..
            } => {
                text.len()
                    + tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.arguments.len() + 16)
                        .sum::<usize>()
            }
            Self::Tool { results } => results
                .iter()
                .map(|r| r.content.to_string().len() + 16)
                .sum(),
        };
        chars / 4 + 4
    }
}

/// Tokens a picture is assumed to cost when estimating a request (providers charge from
/// about 260 to 1,500 per image depending on its size and detail).
const IMAGE_TOKENS_ESTIMATE: usize = 1_000;

/// A picture sent to the model (a photo of a panel directory, a scanned page).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImagePart {
    /// image/jpeg, image/png, image/webp or image/gif.
    pub mime: String,
    /// The encoded image.
    pub bytes: Vec<u8>,
}

impl ImagePart {
    /// The picture as a `data:` URL.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime, self.base64())
    }

    /// The bytes in standard base64.
    pub fn base64(&self) -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(&self.bytes)
    }

    /// OpenAI Chat Completions content part: `image_url` with a data URL.
    pub fn openai_part(&self) -> serde_json::Value {
        serde_json::json!({"type": "image_url", "image_url": {"url": self.data_url()}})
    }

    /// Gemini part: `inline_data` with the MIME type and base64 data.
    pub fn gemini_part(&self) -> serde_json::Value {
        serde_json::json!({"inline_data": {"mime_type": self.mime, "data": self.base64()}})
    }
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Unique name (`[a-zA-Z0-9_]+`).
    pub name: String,
    /// What the tool does and when to use it.
    pub description: String,
    /// JSON Schema (draft 2020-12 subset) of the arguments object, shared by every request
    /// that offers the tool.
    pub parameters: ToolSchema,
}

/// One request to a chat model.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ChatRequest {
    /// System instruction.
    pub system: String,
    /// Conversation so far, oldest first.
    pub messages: Vec<ChatMessage>,
    /// Tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// Sampling temperature, if the caller wants one.
    pub temperature: Option<f64>,
    /// Upper bound on generated tokens.
    pub max_output_tokens: Option<u32>,
    /// Sampling seed, if the caller wants answers it can repeat (`llm.seed`).
    pub seed: Option<u64>,
    /// Whether the model must call one of `tools`.
    pub tool_choice: ToolChoice,
}

/// Whether the model may answer in text or must call one of the offered tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (the default).
    #[default]
    Auto,
    /// The model must call one of the offered tools, with arguments that fit its schema where
    /// the provider can enforce it: OpenAI's own service by `tool_choice: "required"`, Gemini
    /// by `mode: ANY`, an OpenAI-compatible server by a JSON-schema answer format that it
    /// decodes under a grammar (llama.cpp, vLLM, Ollama).
    Required,
}

/// Token usage reported by the provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens (cached ones included).
    pub input_tokens: u64,
    /// Prompt tokens the provider served from its prompt cache (OpenAI
    /// `usage.prompt_tokens_details.cached_tokens`, Gemini `usageMetadata.cachedContentTokenCount`);
    /// 0 when it reports none.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Adds another call's usage to this total.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.output_tokens += other.output_tokens;
    }

    /// Logs this usage and counts its cached input tokens in `sparky_model_tokens_total`
    /// (direction `cached_input`; input and output are counted per model call as they end).
    pub fn record(&self, provider: &str) {
        tracing::info!(
            provider,
            input_tokens = self.input_tokens,
            cached_input_tokens = self.cached_input_tokens,
            output_tokens = self.output_tokens,
            "model usage"
        );
        crate::telemetry::metrics()
            .tokens
            .with_label_values(&[provider, "cached_input"])
            .inc_by(self.cached_input_tokens);
    }
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// Natural end of the answer.
    Stop,
    /// The model wants tool calls answered.
    ToolCalls,
    /// Output token limit reached.
    Length,
    /// Blocked by the provider's safety filter (also used for a blocked prompt).
    ContentFilter,
    /// Stopped because the text matched a term of a blocklist.
    Blocklist,
    /// Stopped because the text may contain sensitive personal data.
    SensitiveData,
    /// Stopped because the answer would have recited source material verbatim.
    Recitation,
    /// The model produced a tool call that was not valid (no call was returned).
    MalformedToolCall,
    /// Anything else the provider reported.
    Other,
}

impl FinishReason {
    /// Whether the turn ended as the model meant it to (an answer or tool calls), rather than
    /// being cut off or blocked.
    pub fn is_normal(self) -> bool {
        matches!(self, Self::Stop | Self::ToolCalls)
    }
}

/// One event of a streamed model turn.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A piece of answer text.
    TextDelta(String),
    /// A complete tool call (fragments are assembled by the provider module).
    ToolCall(ToolCall),
    /// A signature attached to the text of this turn (Gemini), to be echoed back.
    TextSignature(String),
    /// Token usage for the turn.
    Usage(Usage),
    /// End of the turn.
    Done(FinishReason),
}

/// A streamed model turn.
pub type ChatStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send>>;

/// Typed provider failures.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// 429: too many requests; wait `retry_after` if given.
    #[error("the model provider is rate limiting us{}", .retry_after.map(|d| format!(" (retry after {}s)", d.as_secs())).unwrap_or_default())]
    RateLimited {
        /// Provider's suggested wait.
        retry_after: Option<Duration>,
    },
    /// 500/502/503/504 or an explicit overload signal.
    #[error("the model provider is overloaded or failing ({0})")]
    Overloaded(String),
    /// The provider rejected the request as malformed (400).
    #[error("the model provider rejected the request: {0}")]
    InvalidRequest(String),
    /// Missing or wrong credentials, or a disabled service (401/403, Gemini's 400 API_KEY_INVALID).
    #[error("the model provider refused our credentials: {0}")]
    Auth(String),
    /// A stage of the call (connecting, the first byte, a gap of the stream, the whole call)
    /// took longer than allowed.
    #[error("the model provider timed out: {0}")]
    Timeout(TimedOut),
    /// The prompt is longer than the model's context window.
    #[error("the conversation is too long for the model's context window")]
    ContextTooLong,
    /// Network failure before a response.
    #[error("could not reach the model provider: {0}")]
    Transport(String),
    /// The provider answered something we could not parse.
    #[error("the model provider sent a malformed response: {0}")]
    Protocol(String),
}

impl LlmError {
    /// Whether retrying the same request later may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::RateLimited { .. } | Self::Overloaded(_) | Self::Timeout(_) | Self::Transport(_)
        )
    }
}

/// A chat model that streams.
#[async_trait]
pub trait ChatProvider: Send + Sync {
    /// Human-readable `provider:model`, for logs and audit.
    fn name(&self) -> String;

    /// Starts a streamed turn. Errors before the first event are returned here.
    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError>;
}

pub mod errors;
pub mod gemini;
mod message_wire;
pub mod openai;
pub mod record;
pub mod resilient;
pub mod sse;
pub mod text_calls;
pub mod timeouts;
pub mod tls;
pub mod tool_schema;
mod transport;
pub mod untrusted;

pub use resilient::{build_provider, Resilient, RetryPolicy};
pub use timeouts::{StreamTimeouts, TimedOut, TimeoutStage};
pub use tool_schema::ToolSchema;
