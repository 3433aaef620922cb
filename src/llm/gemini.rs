//! Google Gemini `streamGenerateContent?alt=sse`.
//!
//! Each SSE event is a whole `GenerateContentResponse`: `candidates[0].content.parts` hold
//! text (thought summaries are marked `thought: true` and not shown), whole `functionCall`s
//! (usually without an id: we assign `call_sparky_<n>_<random>` and never send such ids back)
//! and `thoughtSignature`s, which must be echoed unchanged on the same part. `finishReason`
//! is `STOP` even when the turn called functions, so we report `ToolCalls` when calls came.
//! `usageMetadata` is cumulative; the last one is reported once at the end of the turn.

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::errors::{self, ErrorDialect};
use super::transport::{self, Endpoint, EventDecoder, LOCAL_CALL_ID_PREFIX};
use super::{
    ChatMessage, ChatProvider, ChatRequest, ChatStream, FinishReason, LlmError, StreamEvent,
    StreamTimeouts, ToolCall, ToolChoice, ToolSpec, Usage,
};
use crate::config::Secret;
use reqwest::header::HeaderName;

/// A Gemini API endpoint.
#[derive(Debug, Clone)]
pub struct GeminiProvider {
    model: String,
    api_key: Option<Secret>,
    temperature: Option<f64>,
    http: Endpoint,
}

impl GeminiProvider {
    /// A provider for `base_url` (e.g. `https://generativelanguage.googleapis.com/v1beta`) and
    /// `model` (with or without the `models/` prefix). The key goes in `x-goog-api-key`; the
    /// real service requires it. `temperature` is used when the request sets none. `timeouts`
    /// bound connecting, the first byte, every gap in the stream and the whole stream (a
    /// [`std::time::Duration`] bounds each).
    pub fn new(
        base_url: impl Into<String>,
        model: impl Into<String>,
        api_key: Option<Secret>,
        temperature: Option<f64>,
        timeouts: impl Into<StreamTimeouts>,
    ) -> Self {
        let model: String = model.into();
        let base_url = base_url.into().trim_end_matches('/').to_string();
        let model = model.trim_start_matches("models/").to_string();
        let http = Endpoint::new(
            format!("{base_url}/models/{model}:streamGenerateContent?alt=sse"),
            timeouts.into(),
        );
        Self {
            model,
            api_key,
            temperature,
            http,
        }
    }

    /// The streaming URL.
    pub fn endpoint(&self) -> String {
        self.http.url().to_string()
    }

    /// The JSON body sent for `request`.
    pub fn encode_request(&self, request: &ChatRequest) -> Value {
        let mut body = Map::new();
        body.insert(
            "contents".into(),
            Value::Array(encode_contents(&request.messages)),
        );
        if !request.system.is_empty() {
            body.insert(
                "systemInstruction".into(),
                json!({"parts": [{"text": request.system}]}),
            );
        }
        if !request.tools.is_empty() {
            let declarations: Vec<Value> = request.tools.iter().map(encode_tool).collect();
            body.insert(
                "tools".into(),
                json!([{ "functionDeclarations": declarations }]),
            );
            if request.tool_choice == ToolChoice::Required {
                body.insert(
                    "toolConfig".into(),
                    json!({"functionCallingConfig": {"mode": "ANY"}}),
                );
            }
        }
        let mut generation = Map::new();
        if let Some(t) = request.temperature.or(self.temperature) {
            generation.insert("temperature".into(), json!(t));
        }
        if let Some(seed) = request.seed {
            generation.insert("seed".into(), json!(seed));
        }
        if let Some(max) = request.max_output_tokens {
            generation.insert("maxOutputTokens".into(), json!(max));
        }
        if !generation.is_empty() {
            body.insert("generationConfig".into(), Value::Object(generation));
        }
        Value::Object(body)
    }
}

/// One function declaration, with the schema in `parametersJsonSchema`.
fn encode_tool(tool: &ToolSpec) -> Value {
    let mut decl = json!({"name": tool.name, "description": tool.description});
    if let Some(schema) = sanitize_schema(&tool.parameters) {
        decl["parametersJsonSchema"] = schema;
    }
    decl
}

/// Prepares a JSON Schema for `parametersJsonSchema`: drops the keywords Gemini rejects
/// (`$schema`, `$comment`) at every level (property names are left alone) and makes sure the
/// top level is an object schema. Returns `None` for a schema that is not a JSON object (the
/// function is then declared without parameters).
pub fn sanitize_schema(schema: &Value) -> Option<Value> {
    fn clean(value: &Value, is_property_map: bool) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(k, _)| {
                        is_property_map || !matches!(k.as_str(), "$schema" | "$comment")
                    })
                    .map(|(k, v)| {
                        let child_is_map = !is_property_map
                            && matches!(
                                k.as_str(),
                                "properties" | "$defs" | "definitions" | "patternProperties"
                            );
                        (k.clone(), clean(v, child_is_map))
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|v| clean(v, false)).collect()),
            other => other.clone(),
        }
    }
    if !schema.is_object() {
        return None;
    }
    let mut cleaned = clean(schema, false);
    if let Value::Object(map) = &mut cleaned {
        map.entry("type").or_insert_with(|| json!("object"));
    }
    Some(cleaned)
}

/// Whether an id may be sent to Gemini: ids it assigned itself. Ids we made up, and the
/// `call_…` ids of OpenAI-style providers (a conversation may move between providers), are
/// not sent; Gemini then pairs calls and responses by name and order.
fn sendable_id(id: &str) -> bool {
    !id.is_empty() && !id.starts_with(LOCAL_CALL_ID_PREFIX) && !id.starts_with("call_")
}

/// Encodes the conversation as Gemini `contents`.
pub fn encode_contents(messages: &[ChatMessage]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    for message in messages {
        match message {
            // Gemini rejects empty text parts, and a content must have a part: an empty
            // message (stored before empty turns were refused) is left out.
            ChatMessage::User { text, images } => {
                let mut parts = Vec::with_capacity(images.len() + 1);
                if !text.is_empty() {
                    parts.push(json!({ "text": text }));
                }
                parts.extend(images.iter().map(crate::llm::ImagePart::gemini_part));
                if !parts.is_empty() {
                    out.push(json!({"role": "user", "parts": parts}));
                }
            }
            ChatMessage::Assistant {
                text,
                tool_calls,
                thought_signature,
            } => {
                let mut parts = Vec::new();
                // A signature on empty text is dropped with it: text signatures are not
                // required back, unlike those of function calls.
                if !text.is_empty() {
                    let mut part = json!({"text": text});
                    if let Some(sig) = thought_signature {
                        part["thoughtSignature"] = json!(sig);
                    }
                    parts.push(part);
                }
                for call in tool_calls {
                    let mut function_call =
                        json!({"name": call.name, "args": call.arguments_object()});
                    if sendable_id(&call.id) {
                        function_call["id"] = json!(call.id);
                    }
                    let mut part = json!({ "functionCall": function_call });
                    if let Some(sig) = &call.thought_signature {
                        part["thoughtSignature"] = json!(sig);
                    }
                    parts.push(part);
                }
                if !parts.is_empty() {
                    out.push(json!({"role": "model", "parts": parts}));
                }
            }
            ChatMessage::Tool { results } => {
                let parts: Vec<Value> = results
                    .iter()
                    .map(|r| {
                        let response = match &*r.content {
                            Value::Object(_) => Value::clone(&r.content),
                            other => json!({ "result": other }),
                        };
                        let mut function_response = json!({"name": r.name, "response": response});
                        if sendable_id(&r.call_id) {
                            function_response["id"] = json!(r.call_id);
                        }
                        json!({ "functionResponse": function_response })
                    })
                    .collect();
                if !parts.is_empty() {
                    out.push(json!({"role": "user", "parts": parts}));
                }
            }
        }
    }
    out
}

#[async_trait]
impl ChatProvider for GeminiProvider {
    fn name(&self) -> String {
        format!("gemini:{}", self.model)
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        let body = self.encode_request(request);
        let body = serde_json::to_vec(&body)
            .map_err(|e| LlmError::Protocol(format!("the request could not be written: {e}")))?;
        let mut headers = Vec::new();
        if let Some(key) = &self.api_key {
            headers.push((
                HeaderName::from_static("x-goog-api-key"),
                transport::secret_header(key.expose())?,
            ));
        }
        self.http
            .stream(
                &headers,
                body,
                ErrorDialect::Gemini,
                GeminiStreamDecoder::new(),
                decode_response,
            )
            .await
    }
}

/// Decodes an `alt=sse` body (as byte chunks) into neutral events: the same code path the
/// provider uses on the network.
pub fn decode_sse<S>(bytes: S) -> ChatStream
where
    S: futures::Stream<Item = Result<bytes::Bytes, LlmError>> + Send + 'static,
{
    transport::decode_events(Box::pin(bytes), GeminiStreamDecoder::new(), None)
}

/// Decodes a whole `generateContent` response, or the JSON array `streamGenerateContent`
/// returns without `alt=sse`, into the events a stream would give.
pub fn decode_response(body: &Value) -> Result<Vec<StreamEvent>, LlmError> {
    let mut decoder = GeminiStreamDecoder::new();
    let mut out = Vec::new();
    match body {
        Value::Array(items) => {
            for item in items {
                decoder.feed_chunk(item, &mut out)?;
            }
        }
        other => decoder.feed_chunk(other, &mut out)?,
    }
    decoder.on_end(&mut out)?;
    Ok(out)
}

/// Turns `GenerateContentResponse` chunks into neutral events.
#[derive(Debug, Default)]
pub struct GeminiStreamDecoder {
    finish: Option<FinishReason>,
    calls: usize,
    usage: Option<Usage>,
    ended: bool,
}

impl GeminiStreamDecoder {
    /// A decoder at the start of a turn.
    pub fn new() -> Self {
        Self::default()
    }

    /// Handles one `GenerateContentResponse`. A field of the wrong type is a protocol error
    /// naming its path.
    pub fn feed_chunk(
        &mut self,
        chunk: &Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), LlmError> {
        let chunk = crate::json_decode::from_value::<ChunkWire>(chunk)
            .map_err(|e| LlmError::Protocol(format!("malformed response chunk {e}")))?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            return Err(errors::from_stream_error(ErrorDialect::Gemini, &error));
        }
        if let Some(reason) = chunk.prompt_feedback.and_then(|f| f.block_reason) {
            self.finish = Some(match map_finish(&reason) {
                r if r.is_normal() => FinishReason::ContentFilter,
                r => r,
            });
        }
        if let Some(candidate) = chunk.candidates.unwrap_or_default().into_iter().next() {
            let parts = candidate.content.and_then(|c| c.parts).unwrap_or_default();
            for part in parts {
                let signature = part.thought_signature;
                if let Some(call) = part.function_call {
                    let arguments = match call.args {
                        Some(v @ Value::Object(_)) => v.to_string(),
                        _ => "{}".to_string(),
                    };
                    let id = call
                        .id
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| transport::local_call_id(self.calls));
                    self.calls += 1;
                    out.push(StreamEvent::ToolCall(ToolCall {
                        id,
                        name: call.name.unwrap_or_default(),
                        arguments,
                        thought_signature: signature,
                    }));
                    continue;
                }
                if let Some(text) = part.text {
                    if !part.thought.unwrap_or(false) && !text.is_empty() {
                        out.push(StreamEvent::TextDelta(text));
                    }
                }
                if let Some(sig) = signature {
                    out.push(StreamEvent::TextSignature(sig));
                }
            }
            if let Some(reason) = candidate.finish_reason {
                self.finish = Some(map_finish(&reason));
            }
        }
        if let Some(usage) = chunk.usage_metadata {
            let get = |n: Option<u64>| n.unwrap_or(0);
            self.usage = Some(Usage {
                input_tokens: get(usage.prompt_token_count),
                cached_input_tokens: get(usage.cached_content_token_count),
                output_tokens: get(usage.candidates_token_count) + get(usage.thoughts_token_count),
            });
        }
        Ok(())
    }
}

/// A `GenerateContentResponse`, as far as it is read. Every field may be absent or null; one
/// of another type is an error naming its path.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChunkWire {
    error: Option<Value>,
    prompt_feedback: Option<PromptFeedbackWire>,
    candidates: Option<Vec<CandidateWire>>,
    usage_metadata: Option<UsageWire>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedbackWire {
    block_reason: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct CandidateWire {
    content: Option<ContentWire>,
    finish_reason: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
struct ContentWire {
    parts: Option<Vec<PartWire>>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartWire {
    text: Option<String>,
    thought: Option<bool>,
    thought_signature: Option<String>,
    function_call: Option<FunctionCallWire>,
}

#[derive(Debug, serde::Deserialize)]
struct FunctionCallWire {
    id: Option<String>,
    name: Option<String>,
    /// An object; anything else is read as no arguments.
    args: Option<Value>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageWire {
    prompt_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
}

impl EventDecoder for GeminiStreamDecoder {
    fn on_data(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let value: Value = crate::json_decode::from_str(data)
            .map_err(|e| LlmError::Protocol(format!("invalid chunk JSON {e}")))?;
        match &value {
            Value::Array(items) => items.iter().try_for_each(|i| self.feed_chunk(i, out)),
            other => self.feed_chunk(other, out),
        }
    }

    fn on_end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.ended {
            return Ok(());
        }
        let Some(reason) = self.finish else {
            return Err(LlmError::Transport(
                "the stream ended before the model finished its turn".into(),
            ));
        };
        self.ended = true;
        if let Some(usage) = self.usage {
            out.push(StreamEvent::Usage(usage));
        }
        let reason = match reason {
            FinishReason::Stop if self.calls > 0 => FinishReason::ToolCalls,
            r => r,
        };
        out.push(StreamEvent::Done(reason));
        Ok(())
    }

    fn is_complete(&self) -> bool {
        self.ended
    }
}

/// Maps a `finishReason` (or a prompt's `blockReason`, which uses the same names).
fn map_finish(reason: &str) -> FinishReason {
    match reason {
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY" | "PROHIBITED_CONTENT" | "IMAGE_SAFETY" => FinishReason::ContentFilter,
        "BLOCKLIST" => FinishReason::Blocklist,
        "SPII" => FinishReason::SensitiveData,
        "RECITATION" => FinishReason::Recitation,
        "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" => FinishReason::MalformedToolCall,
        _ => FinishReason::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolResult;
    use std::time::Duration;

    #[test]
    fn a_malformed_chunk_is_refused_naming_its_path() {
        let mut decoder = GeminiStreamDecoder::new();
        let mut out = Vec::new();
        let chunk = r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":5}}]}}]}"#;
        let err = decoder
            .on_data(chunk, &mut out)
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e
                    .contains("at candidates[0].content.parts[0].functionCall.name: invalid type")),
            "{err:?}"
        );
    }

    #[test]
    fn schema_sanitizing_keeps_property_names_and_adds_type() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$comment": "x",
            "properties": {
                "$schema": {"type": "string", "$comment": "a property really named $schema"},
                "items": {"type": "array", "items": {"$schema": "x", "type": "integer"}}
            },
            "required": ["items"],
            "additionalProperties": false
        });
        let clean = sanitize_schema(&schema).unwrap_or_default();
        assert_eq!(
            clean,
            json!({
                "type": "object",
                "properties": {
                    "$schema": {"type": "string"},
                    "items": {"type": "array", "items": {"type": "integer"}}
                },
                "required": ["items"],
                "additionalProperties": false
            })
        );
        assert_eq!(sanitize_schema(&json!("nope")), None);
        let p = GeminiProvider::new(
            "http://g/v1beta/",
            "models/m",
            None,
            None,
            Duration::from_secs(1),
        );
        let body = p.encode_request(&ChatRequest {
            tools: vec![ToolSpec {
                name: "f".into(),
                description: "d".into(),
                parameters: schema.into(),
            }],
            ..Default::default()
        });
        let decl = &body["tools"][0]["functionDeclarations"][0];
        assert!(decl.get("parameters").is_none());
        assert!(decl["parametersJsonSchema"].get("$schema").is_none());
        assert_eq!(
            p.endpoint(),
            "http://g/v1beta/models/m:streamGenerateContent?alt=sse"
        );
    }

    #[test]
    fn encodes_calls_signatures_and_grouped_responses() {
        let local = transport::local_call_id(0);
        let messages = vec![
            ChatMessage::user("q"),
            ChatMessage::Assistant {
                text: "checking".into(),
                tool_calls: vec![
                    ToolCall {
                        id: local.clone(),
                        name: "a".into(),
                        arguments: "{\"x\":1}".into(),
                        thought_signature: Some("SIG".into()),
                    },
                    ToolCall {
                        id: "gem-id-2".into(),
                        name: "b".into(),
                        arguments: "not json".into(),
                        thought_signature: None,
                    },
                ],
                thought_signature: Some("TSIG".into()),
            },
            ChatMessage::Tool {
                results: vec![
                    ToolResult {
                        call_id: local,
                        name: "a".into(),
                        content: json!({"v": 1}).into(),
                        is_error: false,
                    },
                    ToolResult {
                        call_id: "gem-id-2".into(),
                        name: "b".into(),
                        content: json!("plain").into(),
                        is_error: false,
                    },
                ],
            },
        ];
        let c = encode_contents(&messages);
        assert_eq!(c.len(), 3);
        assert_eq!(c[1]["role"], "model");
        assert_eq!(
            c[1]["parts"][0],
            json!({"text": "checking", "thoughtSignature": "TSIG"})
        );
        assert_eq!(
            c[1]["parts"][1],
            json!({"functionCall": {"name": "a", "args": {"x": 1}}, "thoughtSignature": "SIG"})
        );
        assert_eq!(
            c[1]["parts"][2],
            json!({"functionCall": {"name": "b", "args": {"raw_arguments": "not json"}, "id": "gem-id-2"}})
        );
        assert_eq!(c[2]["role"], "user");
        assert_eq!(
            c[2]["parts"],
            json!([
                {"functionResponse": {"name": "a", "response": {"v": 1}}},
                {"functionResponse": {"name": "b", "response": {"result": "plain"}, "id": "gem-id-2"}}
            ])
        );
    }

    /// A request's seed goes into `generationConfig`; none is sent without one.
    #[test]
    fn a_seed_is_sent_only_when_the_request_has_one() {
        let p = GeminiProvider::new("http://x/v1beta", "m", None, None, Duration::from_secs(5));
        let mut req = ChatRequest {
            messages: vec![ChatMessage::user("q")],
            ..ChatRequest::default()
        };
        assert!(p.encode_request(&req).get("generationConfig").is_none());
        req.seed = Some(7);
        assert_eq!(p.encode_request(&req)["generationConfig"]["seed"], json!(7));
    }

    #[test]
    fn empty_text_is_never_encoded() {
        let call = ToolCall {
            id: "c1".into(),
            name: "f".into(),
            arguments: "{}".into(),
            thought_signature: Some("SIG".into()),
        };
        let messages = vec![
            ChatMessage::user("q"),
            ChatMessage::Assistant {
                text: String::new(),
                tool_calls: Vec::new(),
                thought_signature: Some("TSIG".into()),
            },
            ChatMessage::user(""),
            ChatMessage::assistant(""),
            ChatMessage::Assistant {
                text: String::new(),
                tool_calls: vec![call],
                thought_signature: None,
            },
        ];
        let c = encode_contents(&messages);
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!(c[0], json!({"role": "user", "parts": [{"text": "q"}]}));
        assert_eq!(c[1]["parts"].as_array().map(Vec::len), Some(1));
        assert!(c[1]["parts"][0].get("functionCall").is_some());
    }

    #[test]
    fn every_finish_reason_is_told_apart() {
        let cases = [
            ("STOP", FinishReason::Stop),
            ("MAX_TOKENS", FinishReason::Length),
            ("SAFETY", FinishReason::ContentFilter),
            ("PROHIBITED_CONTENT", FinishReason::ContentFilter),
            ("BLOCKLIST", FinishReason::Blocklist),
            ("SPII", FinishReason::SensitiveData),
            ("RECITATION", FinishReason::Recitation),
            ("MALFORMED_FUNCTION_CALL", FinishReason::MalformedToolCall),
            ("OTHER", FinishReason::Other),
            ("SOMETHING_NEW", FinishReason::Other),
        ];
        for (wire, expected) in cases {
            let body = json!({"candidates": [{"finishReason": wire, "index": 0}]});
            let events = decode_response(&body).unwrap_or_default();
            assert_eq!(events.last(), Some(&StreamEvent::Done(expected)), "{wire}");
        }
        let blocked = json!({"promptFeedback": {"blockReason": "BLOCKLIST"}});
        assert_eq!(
            decode_response(&blocked).unwrap_or_default().last(),
            Some(&StreamEvent::Done(FinishReason::Blocklist))
        );
        let blocked = json!({"promptFeedback": {"blockReason": "BLOCK_REASON_UNSPECIFIED"}});
        assert_eq!(
            decode_response(&blocked).unwrap_or_default().last(),
            Some(&StreamEvent::Done(FinishReason::Other))
        );
    }

    #[test]
    fn decoder_reports_tool_calls_and_requires_finish() {
        let mut d = GeminiStreamDecoder::new();
        let mut out = Vec::new();
        d.on_data(
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi","thoughtSignature":"T"},{"functionCall":{"name":"f","args":{"a":1},"id":"x1"}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"cachedContentTokenCount":2,"candidatesTokenCount":4,"thoughtsTokenCount":5}}"#,
            &mut out,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        d.on_end(&mut out).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out[0], StreamEvent::TextDelta("Hi".into()));
        assert_eq!(out[1], StreamEvent::TextSignature("T".into()));
        assert!(
            matches!(&out[2], StreamEvent::ToolCall(c) if c.id == "x1" && c.arguments == "{\"a\":1}")
        );
        assert_eq!(
            out[3],
            StreamEvent::Usage(Usage {
                input_tokens: 3,
                cached_input_tokens: 2,
                output_tokens: 9
            })
        );
        assert_eq!(out[4], StreamEvent::Done(FinishReason::ToolCalls));
        let mut d = GeminiStreamDecoder::new();
        d.on_data(
            r#"{"candidates":[{"content":{"parts":[{"text":"par"}]}}]}"#,
            &mut out,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(d.on_end(&mut out).is_err());
    }
}
