//! OpenAI Chat Completions (streamed), also spoken by Azure, Ollama, vLLM, llama.cpp and
//! LM Studio.
//!
//! Requests carry `stream: true` with `stream_options.include_usage`, so a turn arrives as
//! `chat.completion.chunk` objects: text in `choices[0].delta.content`, tool calls as
//! fragments keyed by `index` (id and name in the first, arguments spread over later ones),
//! a chunk with `finish_reason`, a usage chunk with empty `choices`, then `data: [DONE]`.
//! Tool calls are emitted whole once the turn finishes. Servers that send each call whole in
//! one chunk (Ollama), or that ignore `stream` and answer one JSON document, work too.

use std::collections::HashMap;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::errors::{self, ErrorDialect};
use super::text_calls::TextCalls;
use super::transport::{self, Endpoint, EventDecoder};
use super::{
    ChatMessage, ChatProvider, ChatRequest, ChatStream, FinishReason, LlmError, StreamEvent,
    StreamTimeouts, ToolCall, ToolChoice, ToolSpec, Usage,
};
use crate::config::Secret;
use reqwest::header::{HeaderValue, ACCEPT, AUTHORIZATION};

/// A Chat Completions endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    base_url: String,
    model: String,
    api_key: Option<Secret>,
    temperature: Option<f64>,
    http: Endpoint,
}

impl OpenAiProvider {
    /// A provider for `base_url` (e.g. `https://api.openai.com/v1`, or a local server's `/v1`
    /// URL) and `model`. Without a key no `Authorization` header is sent. `temperature` is
    /// used when the request sets none. `timeouts` bound connecting, the first byte, every gap
    /// between two chunks of the stream and the whole stream (a [`std::time::Duration`] bounds each).
    pub fn new(
        base_url: impl Into<String>,
        model: impl Into<String>,
        api_key: Option<Secret>,
        temperature: Option<f64>,
        timeouts: impl Into<StreamTimeouts>,
    ) -> Self {
        let base_url = base_url.into().trim_end_matches('/').to_string();
        let http = Endpoint::new(format!("{base_url}/chat/completions"), timeouts.into());
        Self {
            base_url,
            model: model.into(),
            api_key,
            temperature,
            http,
        }
    }

    /// The Chat Completions URL.
    pub fn endpoint(&self) -> String {
        self.http.url().to_string()
    }

    /// The JSON body sent for `request`.
    pub fn encode_request(&self, request: &ChatRequest) -> Value {
        let mut body = json!({
            "model": self.model,
            "messages": encode_messages(&request.system, &request.messages),
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        let required = request.tool_choice == ToolChoice::Required && !request.tools.is_empty();
        if required && !self.is_openai_service() {
            // Compatible servers (llama.cpp, vLLM, Ollama) decode a `json_schema` answer
            // under a grammar; a required `tool_choice` is not constrained by every chat
            // template, and llama.cpp refuses a grammar next to `tools`. So the answer itself
            // must be a call of one offered tool, which `TextCalls` then reads as a call.
            body["response_format"] = call_format(&request.tools);
        } else if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": parameters(t),
                        }
                    })
                })
                .collect();
            if required {
                body["tool_choice"] = json!("required");
            }
        }
        if let Some(t) = request.temperature.or(self.temperature) {
            body["temperature"] = json!(t);
        }
        if let Some(seed) = request.seed {
            // OpenAI, llama.cpp and vLLM sample the same answer to the same prompt and seed.
            body["seed"] = json!(seed);
        }
        if let Some(max) = request.max_output_tokens {
            body[self.max_key()] = json!(max);
        }
        body
    }

    /// Whether this is OpenAI's own service (or Azure's), rather than a compatible server.
    fn is_openai_service(&self) -> bool {
        self.base_url.contains("openai.com") || self.base_url.contains("azure")
    }

    /// OpenAI's own service wants the newer name of the output limit (reasoning models reject
    /// the old one); compatible servers know `max_tokens`.
    fn max_key(&self) -> &'static str {
        if self.is_openai_service() {
            "max_completion_tokens"
        } else {
            "max_tokens"
        }
    }
}

/// A tool's argument schema as sent; a tool without one takes an empty object.
fn parameters(tool: &ToolSpec) -> Value {
    if tool.parameters.is_object() {
        tool.parameters.as_ref().clone()
    } else {
        json!({"type": "object", "properties": {}})
    }
}

/// A `response_format` whose only valid answers are `{"name", "arguments"}` calls of one of
/// `tools`, each with arguments that fit its schema.
fn call_format(tools: &[ToolSpec]) -> Value {
    let mut calls: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({
                "type": "object",
                "properties": {"name": {"const": t.name}, "arguments": parameters(t)},
                "required": ["name", "arguments"],
                "additionalProperties": false,
            })
        })
        .collect();
    let schema = if calls.len() == 1 {
        calls.remove(0)
    } else {
        json!({"anyOf": calls})
    };
    json!({"type": "json_schema", "json_schema": {"name": "tool_call", "schema": schema}})
}

/// Encodes the system instruction and the conversation as Chat Completions messages.
pub fn encode_messages(system: &str, messages: &[ChatMessage]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if !system.is_empty() {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in messages {
        match message {
            // Empty text is never sent: an empty message (stored before empty turns were
            // refused) is left out.
            ChatMessage::User { text, images } if text.is_empty() && images.is_empty() => {}
            ChatMessage::User { text, images } if images.is_empty() => {
                out.push(json!({"role": "user", "content": text}))
            }
            // With pictures the content is a list of parts: the text, then each image.
            ChatMessage::User { text, images } => {
                let mut parts = Vec::with_capacity(images.len() + 1);
                if !text.is_empty() {
                    parts.push(json!({"type": "text", "text": text}));
                }
                parts.extend(images.iter().map(crate::llm::ImagePart::openai_part));
                out.push(json!({"role": "user", "content": parts}));
            }
            ChatMessage::Assistant {
                text, tool_calls, ..
            } if text.is_empty() && tool_calls.is_empty() => {}
            ChatMessage::Assistant {
                text, tool_calls, ..
            } => {
                let mut m = Map::new();
                m.insert("role".into(), json!("assistant"));
                if tool_calls.is_empty() {
                    m.insert("content".into(), json!(text));
                } else {
                    m.insert(
                        "content".into(),
                        if text.is_empty() {
                            Value::Null
                        } else {
                            json!(text)
                        },
                    );
                    let calls: Vec<Value> = tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments_text()},
                            })
                        })
                        .collect();
                    m.insert("tool_calls".into(), Value::Array(calls));
                }
                out.push(Value::Object(m));
            }
            ChatMessage::Tool { results } => {
                for r in results {
                    let content = match &*r.content {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    out.push(json!({
                        "role": "tool",
                        "tool_call_id": r.call_id,
                        "content": content,
                    }));
                }
            }
        }
    }
    out
}

#[async_trait]
impl ChatProvider for OpenAiProvider {
    fn name(&self) -> String {
        format!("openai:{}", self.model)
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        let body = serde_json::to_vec(&self.encode_request(request))
            .map_err(|e| LlmError::Protocol(format!("the request could not be encoded: {e}")))?;
        let mut headers = vec![(ACCEPT, HeaderValue::from_static("text/event-stream"))];
        if let Some(key) = &self.api_key {
            headers.push((
                AUTHORIZATION,
                transport::secret_header(&format!("Bearer {}", key.expose()))?,
            ));
        }
        self.http
            .stream(
                &headers,
                body,
                ErrorDialect::OpenAi,
                OpenAiStreamDecoder::for_request(request),
                |body| decode_completion_with(body, OpenAiStreamDecoder::for_request(request)),
            )
            .await
    }
}

/// Decodes an SSE body (as byte chunks) of a streamed Chat Completion into neutral events:
/// the same code path the provider uses on the network.
pub fn decode_sse<S>(bytes: S) -> ChatStream
where
    S: futures::Stream<Item = Result<bytes::Bytes, LlmError>> + Send + 'static,
{
    transport::decode_events(Box::pin(bytes), OpenAiStreamDecoder::new(), None)
}

/// Decodes a non-streamed `chat.completion` document into the events a stream would give.
pub fn decode_completion(body: &Value) -> Result<Vec<StreamEvent>, LlmError> {
    decode_completion_with(body, OpenAiStreamDecoder::new())
}

fn decode_completion_with(
    body: &Value,
    mut decoder: OpenAiStreamDecoder,
) -> Result<Vec<StreamEvent>, LlmError> {
    if let Some(error) = body.get("error") {
        return Err(errors::from_stream_error(ErrorDialect::OpenAi, error));
    }
    if body.get("choices").and_then(Value::as_array).is_none() {
        return Err(LlmError::Protocol("completion without choices".into()));
    }
    let mut out = Vec::new();
    decoder.feed_chunk(body, &mut out)?;
    decoder.on_data("[DONE]", &mut out)?;
    Ok(out)
}

/// A `chat.completion.chunk` (or a whole `chat.completion`), as far as it is read. Every
/// field may be absent or null; one of another type is an error naming its path.
#[derive(Debug, serde::Deserialize)]
struct ChunkWire {
    error: Option<Value>,
    choices: Option<Vec<ChoiceWire>>,
    usage: Option<UsageWire>,
}

#[derive(Debug, serde::Deserialize)]
struct ChoiceWire {
    index: Option<u64>,
    delta: Option<DeltaWire>,
    message: Option<DeltaWire>,
    finish_reason: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
struct DeltaWire {
    content: Option<String>,
    refusal: Option<String>,
    tool_calls: Option<Vec<FragmentWire>>,
}

/// A piece of a tool call: id and name in the first, arguments spread over later ones.
#[derive(Debug, serde::Deserialize)]
struct FragmentWire {
    index: Option<u64>,
    id: Option<String>,
    function: Option<FunctionWire>,
}

#[derive(Debug, serde::Deserialize)]
struct FunctionWire {
    name: Option<String>,
    /// A string of JSON, spread over fragments; some servers send an object instead.
    arguments: Option<Value>,
}

#[derive(Debug, serde::Deserialize)]
struct UsageWire {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<UsageDetailsWire>,
}

#[derive(Debug, serde::Deserialize)]
struct UsageDetailsWire {
    cached_tokens: Option<u64>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Assembles streamed `chat.completion.chunk` objects into neutral events.
#[derive(Debug, Default)]
pub struct OpenAiStreamDecoder {
    calls: Vec<PartialCall>,
    by_index: HashMap<u64, usize>,
    finish: Option<FinishReason>,
    calls_flushed: bool,
    any_calls: bool,
    done: bool,
    text: TextCalls,
}

impl OpenAiStreamDecoder {
    /// A decoder at the start of a turn.
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder for an answer to `request`: when it offers tools, a call the model writes
    /// into its text (a fenced JSON block, an unparsed `<tool_call>` tag) is read as a call.
    pub fn for_request(request: &ChatRequest) -> Self {
        Self {
            text: TextCalls::new(!request.tools.is_empty()),
            ..Self::default()
        }
    }

    /// Handles one parsed chunk (or a whole completion document, whose `message` is read like
    /// a `delta`). A field of the wrong type is a protocol error naming its path.
    pub fn feed_chunk(
        &mut self,
        chunk: &Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), LlmError> {
        let chunk = crate::json_decode::from_value::<ChunkWire>(chunk)
            .map_err(|e| LlmError::Protocol(format!("malformed chunk {e}")))?;
        self.feed(chunk, out)
    }

    fn feed(&mut self, chunk: ChunkWire, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            return Err(errors::from_stream_error(ErrorDialect::OpenAi, &error));
        }
        // Only the first choice is used (we never ask for n > 1).
        if let Some(choice) = chunk
            .choices
            .unwrap_or_default()
            .into_iter()
            .find(|ch| ch.index.unwrap_or(0) == 0)
        {
            if let Some(delta) = choice.delta.or(choice.message) {
                for text in [delta.content, delta.refusal].into_iter().flatten() {
                    if !text.is_empty() {
                        self.text.push(&text, out);
                    }
                }
                for fragment in delta.tool_calls.unwrap_or_default() {
                    self.add_fragment(fragment);
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(map_finish(&reason));
                self.flush_calls(out);
            }
        }
        if let Some(usage) = chunk.usage {
            out.push(StreamEvent::Usage(Usage {
                input_tokens: usage.prompt_tokens.unwrap_or(0),
                cached_input_tokens: usage
                    .prompt_tokens_details
                    .and_then(|d| d.cached_tokens)
                    .unwrap_or(0),
                output_tokens: usage.completion_tokens.unwrap_or(0),
            }));
        }
        Ok(())
    }

    fn add_fragment(&mut self, fragment: FragmentWire) {
        let index = fragment.index;
        let id = fragment.id.filter(|s| !s.is_empty());
        let (name, arguments) = match fragment.function {
            Some(f) => (f.name.filter(|s| !s.is_empty()), f.arguments),
            None => (None, None),
        };
        let slot = match (index, id.as_deref()) {
            (Some(i), id) => match self.by_index.get(&i).copied() {
                // Some servers (Ollama) send several whole calls all with index 0: a new id
                // under a known index is a new call.
                Some(s)
                    if id.is_some_and(|id| {
                        !self.calls[s].id.is_empty() && self.calls[s].id != id
                    }) =>
                {
                    self.new_slot(Some(i))
                }
                Some(s) => s,
                None => self.new_slot(Some(i)),
            },
            (None, Some(id)) => match self.calls.iter().position(|c| c.id == id) {
                Some(s) => s,
                None => self.new_slot(None),
            },
            (None, None) => match self.calls.len() {
                0 => self.new_slot(None),
                n => n - 1,
            },
        };
        let call = &mut self.calls[slot];
        if let Some(id) = id {
            if call.id.is_empty() {
                call.id = id;
            }
        }
        if let Some(name) = name {
            if call.name.is_empty() {
                call.name = name;
            }
        }
        match arguments {
            Some(Value::String(s)) => call.arguments.push_str(&s),
            Some(Value::Null) | None => {}
            Some(other) => {
                if call.arguments.is_empty() {
                    call.arguments = other.to_string();
                }
            }
        }
    }

    fn new_slot(&mut self, index: Option<u64>) -> usize {
        self.calls.push(PartialCall::default());
        self.any_calls = true;
        let slot = self.calls.len() - 1;
        if let Some(i) = index {
            self.by_index.insert(i, slot);
        }
        slot
    }

    fn flush_calls(&mut self, out: &mut Vec<StreamEvent>) {
        if self.calls_flushed {
            return;
        }
        self.calls_flushed = true;
        for (n, call) in std::mem::take(&mut self.calls).into_iter().enumerate() {
            let arguments = if call.arguments.trim().is_empty() {
                "{}".to_string()
            } else {
                call.arguments
            };
            let id = if call.id.is_empty() {
                transport::local_call_id(n)
            } else {
                call.id
            };
            out.push(StreamEvent::ToolCall(ToolCall {
                id,
                name: call.name,
                arguments,
                thought_signature: None,
            }));
        }
        self.by_index.clear();
    }

    fn finish_turn(&mut self, out: &mut Vec<StreamEvent>) {
        // Calls written as text join the real ones (which never come in the same turn from
        // the servers that write them).
        for call in self.text.finish(self.any_calls, out) {
            self.calls.push(PartialCall {
                id: String::new(),
                name: call.name,
                arguments: call.arguments,
            });
            self.any_calls = true;
            self.calls_flushed = false;
        }
        self.flush_calls(out);
        let reason = match self.finish {
            Some(FinishReason::Stop) | None if self.any_calls => FinishReason::ToolCalls,
            Some(r) => r,
            None => FinishReason::Stop,
        };
        out.push(StreamEvent::Done(reason));
        self.done = true;
    }
}

impl EventDecoder for OpenAiStreamDecoder {
    fn on_data(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.done {
            return Ok(());
        }
        let data = data.trim();
        if data == "[DONE]" {
            self.finish_turn(out);
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk = crate::json_decode::from_str::<ChunkWire>(data)
            .map_err(|e| LlmError::Protocol(format!("malformed chunk {e}")))?;
        self.feed(chunk, out)
    }

    fn on_end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.done {
            return Ok(());
        }
        if self.finish.is_some() {
            // Some servers close without `[DONE]`; the turn itself was complete.
            self.finish_turn(out);
            return Ok(());
        }
        Err(LlmError::Transport(
            "the stream ended before the model finished its turn".into(),
        ))
    }

    fn is_complete(&self) -> bool {
        self.done
    }
}

fn map_finish(reason: &str) -> FinishReason {
    match reason {
        "stop" | "end_turn" | "eos" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" | "max_tokens" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        _ => FinishReason::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ToolResult, ToolSpec};
    use std::time::Duration;

    fn provider() -> OpenAiProvider {
        OpenAiProvider::new("http://x/v1/", "m", None, Some(0.2), Duration::from_secs(5))
    }

    #[test]
    fn a_malformed_chunk_is_refused_naming_its_path() {
        let mut decoder = OpenAiStreamDecoder::new();
        let mut out = Vec::new();
        let chunk =
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":"zero","id":"c1"}]}}]}"#;
        let err = decoder
            .on_data(chunk, &mut out)
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(
                |e| e.contains("at choices[0].delta.tool_calls[0].index: invalid type")
            ),
            "{err:?}"
        );
        let body = json!({"choices": [{"index": 0, "message": {"content": 7}}]});
        let err = decode_completion(&body).err().map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("at choices[0].message.content")),
            "{err:?}"
        );
    }

    #[test]
    fn empty_text_messages_are_not_sent() {
        let m = encode_messages(
            "",
            &[
                ChatMessage::user("q"),
                ChatMessage::assistant(""),
                ChatMessage::user(""),
                ChatMessage::assistant("a"),
            ],
        );
        assert_eq!(
            m,
            vec![
                json!({"role": "user", "content": "q"}),
                json!({"role": "assistant", "content": "a"}),
            ]
        );
    }

    #[test]
    fn finish_reasons_are_told_apart() {
        for (wire, expected) in [
            ("stop", FinishReason::Stop),
            ("length", FinishReason::Length),
            ("content_filter", FinishReason::ContentFilter),
            ("tool_calls", FinishReason::ToolCalls),
            ("something_new", FinishReason::Other),
        ] {
            let body = json!({"choices": [{"index": 0, "message": {"content": "x"}, "finish_reason": wire}]});
            let events = decode_completion(&body).unwrap_or_default();
            assert_eq!(events.last(), Some(&StreamEvent::Done(expected)), "{wire}");
        }
    }

    #[test]
    fn encodes_history_with_tool_round_trip() {
        let req = ChatRequest {
            system: "be brief".into(),
            messages: vec![
                ChatMessage::user("hi"),
                ChatMessage::Assistant {
                    text: String::new(),
                    tool_calls: vec![
                        ToolCall {
                            id: "a".into(),
                            name: "f".into(),
                            arguments: "{\"x\":1}".into(),
                            thought_signature: None,
                        },
                        ToolCall {
                            id: "b".into(),
                            name: "g".into(),
                            arguments: "{}".into(),
                            thought_signature: None,
                        },
                    ],
                    thought_signature: None,
                },
                ChatMessage::Tool {
                    results: vec![
                        ToolResult {
                            call_id: "a".into(),
                            name: "f".into(),
                            content: json!({"ok": 1}).into(),
                            is_error: false,
                        },
                        ToolResult {
                            call_id: "b".into(),
                            name: "g".into(),
                            content: json!({"error": "no"}).into(),
                            is_error: true,
                        },
                    ],
                },
            ],
            tools: vec![ToolSpec {
                name: "f".into(),
                description: "d".into(),
                parameters: json!({"type": "object", "properties": {"x": {"type": "integer"}}})
                    .into(),
            }],
            temperature: None,
            max_output_tokens: Some(100),
            seed: None,
            tool_choice: ToolChoice::Auto,
        };
        let p = provider();
        assert_eq!(p.endpoint(), "http://x/v1/chat/completions");
        let body = p.encode_request(&req);
        let m = body["messages"].as_array().cloned().unwrap_or_default();
        assert_eq!(m.len(), 5);
        assert_eq!(m[0], json!({"role": "system", "content": "be brief"}));
        assert_eq!(m[2]["content"], Value::Null);
        assert_eq!(m[2]["tool_calls"][1]["id"], "b");
        assert_eq!(m[2]["tool_calls"][0]["function"]["arguments"], "{\"x\":1}");
        assert_eq!(
            m[3],
            json!({"role": "tool", "tool_call_id": "a", "content": "{\"ok\":1}"})
        );
        assert_eq!(m[4]["tool_call_id"], "b");
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["tools"][0]["type"], "function");
        assert_eq!(body["max_tokens"], 100);
        assert!((body["temperature"].as_f64().unwrap_or(0.0) - 0.2).abs() < 1e-6);
    }

    /// A call whose arguments are not a JSON object (a small model's broken JSON, kept for the
    /// registry's refusal) goes back wrapped, so a server that parses the history can read it;
    /// arguments that are an object go back as written.
    #[test]
    fn broken_call_arguments_go_back_as_an_object() {
        let call = |arguments: &str| ToolCall {
            id: "c1".into(),
            name: "f".into(),
            arguments: arguments.into(),
            thought_signature: None,
        };
        let messages = vec![
            ChatMessage::user("q"),
            ChatMessage::Assistant {
                text: String::new(),
                tool_calls: vec![call(r#"{"count": 1500 VA}"#), call(r#"{"a": 1}"#), call("")],
                thought_signature: None,
            },
        ];
        let m = encode_messages("", &messages);
        let sent: Vec<&str> = m[1]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["function"]["arguments"].as_str())
            .collect();
        assert_eq!(
            sent,
            [
                r#"{"raw_arguments":"{\"count\": 1500 VA}"}"#,
                r#"{"a": 1}"#,
                "{}"
            ]
        );
    }

    /// A request's seed goes out as written; none is sent without one.
    #[test]
    fn a_seed_is_sent_only_when_the_request_has_one() {
        let mut req = ChatRequest {
            messages: vec![ChatMessage::user("q")],
            ..ChatRequest::default()
        };
        assert!(provider().encode_request(&req).get("seed").is_none());
        req.seed = Some(7);
        assert_eq!(provider().encode_request(&req)["seed"], json!(7));
    }

    /// OpenAI's own service and Azure get the newer name of the output limit, compatible
    /// servers the older one; a tool whose schema is no object is sent an empty object schema.
    #[test]
    fn output_limit_name_follows_the_server() {
        let req = ChatRequest {
            system: String::new(),
            messages: vec![ChatMessage::user("q")],
            tools: vec![ToolSpec {
                name: "g".into(),
                description: String::new(),
                parameters: Value::Null.into(),
            }],
            temperature: None,
            max_output_tokens: Some(7),
            seed: None,
            tool_choice: ToolChoice::Auto,
        };
        for (url, key, other) in [
            ("http://x/v1", "max_tokens", "max_completion_tokens"),
            (
                "https://api.openai.com/v1",
                "max_completion_tokens",
                "max_tokens",
            ),
            (
                "https://x.openai.azure.com/v1",
                "max_completion_tokens",
                "max_tokens",
            ),
        ] {
            let p = OpenAiProvider::new(url, "m", None, None, Duration::from_secs(5));
            let body = p.encode_request(&req);
            assert_eq!(body[key], 7, "{url}");
            assert_eq!(body[other], Value::Null, "{url}");
            assert_eq!(
                body["tools"][0]["function"]["parameters"],
                json!({"type": "object", "properties": {}})
            );
        }
    }

    /// A required call: OpenAI's own service gets `tool_choice: "required"` with the tools; a
    /// compatible server gets no tools and a `json_schema` answer format whose only valid
    /// answers are calls of the offered tools with fitting arguments.
    #[test]
    fn a_required_call_follows_the_server() {
        let spec = |name: &str| ToolSpec {
            name: name.into(),
            description: "d".into(),
            parameters: json!({"type": "object", "properties": {"x": {"type": "integer"}},
                "required": ["x"]})
            .into(),
        };
        let mut req = ChatRequest {
            messages: vec![ChatMessage::user("q")],
            tools: vec![spec("f")],
            tool_choice: ToolChoice::Required,
            ..ChatRequest::default()
        };
        let openai = OpenAiProvider::new(
            "https://api.openai.com/v1",
            "m",
            None,
            None,
            Duration::from_secs(5),
        );
        let body = openai.encode_request(&req);
        assert_eq!(body["tool_choice"], "required");
        assert_eq!(body["tools"][0]["function"]["name"], "f");
        assert_eq!(body["response_format"], Value::Null);

        let body = provider().encode_request(&req);
        assert_eq!(
            body["tools"],
            Value::Null,
            "llama.cpp refuses a grammar next to tools"
        );
        assert_eq!(body["tool_choice"], Value::Null);
        assert_eq!(body["response_format"]["type"], "json_schema");
        let schema = &body["response_format"]["json_schema"]["schema"];
        assert_eq!(schema["properties"]["name"]["const"], "f");
        assert_eq!(
            schema["properties"]["arguments"]["properties"]["x"]["type"],
            "integer"
        );
        assert_eq!(schema["required"], json!(["name", "arguments"]));

        req.tools.push(spec("g"));
        let body = provider().encode_request(&req);
        let calls = body["response_format"]["json_schema"]["schema"]["anyOf"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let names: Vec<&Value> = calls
            .iter()
            .map(|c| &c["properties"]["name"]["const"])
            .collect();
        assert_eq!(names, [&json!("f"), &json!("g")]);

        req.tool_choice = ToolChoice::Auto;
        let body = provider().encode_request(&req);
        assert_eq!(body["tools"].as_array().map(Vec::len), Some(2));
        assert_eq!(body["response_format"], Value::Null);
    }

    fn run(chunks: &[Value]) -> Vec<StreamEvent> {
        let mut d = OpenAiStreamDecoder::new();
        let mut out = Vec::new();
        for c in chunks {
            d.on_data(&c.to_string(), &mut out)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        d.on_data("[DONE]", &mut out)
            .unwrap_or_else(|e| panic!("{e}"));
        out
    }

    #[test]
    fn ollama_whole_calls_in_one_chunk() {
        let out = run(&[
            json!({"choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[
                {"id":"call_1","index":0,"type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},
                {"id":"call_2","index":0,"type":"function","function":{"name":"g","arguments":"{}"}}
            ]},"finish_reason":null}]}),
            json!({"choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}]}),
        ]);
        let calls: Vec<_> = out
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCall(c) => {
                    Some((c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            calls,
            vec![("call_1", "f", "{\"a\":1}"), ("call_2", "g", "{}")]
        );
        assert_eq!(
            out.last(),
            Some(&StreamEvent::Done(FinishReason::ToolCalls))
        );
    }

    #[test]
    fn cached_prompt_tokens_are_read_from_the_usage_details() {
        let out = run(&[
            json!({"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,
                "prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},
                "completion_tokens_details":{"reasoning_tokens":0}}}),
        ]);
        assert!(out.contains(&StreamEvent::Usage(Usage {
            input_tokens: 2006,
            cached_input_tokens: 1920,
            output_tokens: 300,
        })));
        // Servers that report no details have nothing cached.
        let out = run(&[
            json!({"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":48,"completion_tokens":19}}),
        ]);
        assert!(out.contains(&StreamEvent::Usage(Usage {
            input_tokens: 48,
            cached_input_tokens: 0,
            output_tokens: 19,
        })));
    }

    #[test]
    fn missing_ids_and_empty_arguments_are_filled() {
        let out = run(&[json!({"choices":[{"index":0,"delta":{"tool_calls":[
            {"index":0,"function":{"name":"now","arguments":""}}]},"finish_reason":"tool_calls"}]})]);
        match &out[0] {
            StreamEvent::ToolCall(c) => {
                assert!(c.id.starts_with(transport::LOCAL_CALL_ID_PREFIX));
                assert!(c.id.len() <= 40);
                assert_eq!(c.arguments, "{}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn end_without_finish_is_an_error() {
        let mut d = OpenAiStreamDecoder::new();
        let mut out = Vec::new();
        d.on_data(
            &json!({"choices":[{"index":0,"delta":{"content":"Hel"}}]}).to_string(),
            &mut out,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(d.on_end(&mut out).is_err());
        let mut d = OpenAiStreamDecoder::new();
        let err = d
            .on_data(
                r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
                &mut out,
            )
            .unwrap_err();
        assert!(matches!(err, LlmError::Overloaded(_)));
    }
}
