//! A scripted fake of the OpenAI Chat Completions and Gemini `streamGenerateContent` APIs:
//! real HTTP + SSE on 127.0.0.1, streaming in the exact shapes of the recorded fixtures in
//! `tests/fixtures/llm/`, and as strict as the real services about the requests it accepts
//! (every tool call answered before the conversation goes on, thought signatures echoed,
//! object schemas for tools, model and key present).
//!
//! Self-contained: include it with `mod support;` (from a `support/mod.rs` declaring
//! `pub mod fake_llm;`) or `#[path = "support/fake_llm.rs"] mod fake_llm;`.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use futures::StreamExt;
use serde_json::{json, Value};

/// Which API the fake speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// OpenAI Chat Completions at `{base_url}/chat/completions`.
    OpenAi,
    /// Gemini at `{base_url}/models/{model}:streamGenerateContent?alt=sse`.
    Gemini,
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Text streamed as several deltas.
    Text(String),
    /// Parallel tool calls: name + arguments object. OpenAI: id + name in a first fragment,
    /// arguments split over later fragments. Gemini: whole calls, the first one carrying a
    /// `thoughtSignature`, no ids (as the real API sends them).
    ToolCalls(Vec<(String, Value)>),
    /// One tool call whose arguments text is sent as-is (may be malformed JSON). Gemini cannot
    /// carry malformed arguments: it ends the turn with `MALFORMED_FUNCTION_CALL` instead.
    RawToolCall {
        /// Tool name.
        name: String,
        /// Arguments text.
        arguments: String,
    },
    /// An error answer. `body` is sent as-is when it is an object with an `error` key, else it
    /// is taken as the message and wrapped in the dialect's error format. `retry_after_secs`
    /// becomes OpenAI's `Retry-After` header or Gemini's `RetryInfo.retryDelay` detail.
    Status {
        /// HTTP status.
        code: u16,
        /// Error body or message.
        body: Value,
        /// Suggested wait.
        retry_after_secs: Option<u64>,
    },
    /// A turn that ends with this finish reason, in the dialect's own words (`length`,
    /// `content_filter`; `MAX_TOKENS`, `SAFETY`, `MALFORMED_FUNCTION_CALL`, ...), after
    /// streaming `text` (which may be empty: Gemini then sends a candidate without content).
    Finish {
        /// Text streamed before the end.
        text: String,
        /// The finish reason as the wire spells it.
        reason: String,
    },
    /// Text streamed in these pieces, each after waiting `gap` (the first at once), as a model
    /// that writes slowly.
    PacedText {
        /// The deltas, in order.
        pieces: Vec<String>,
        /// Wait before each piece after the first.
        gap: Duration,
    },
    /// 429 with this text as the `Retry-After` header (both dialects) and, for Gemini, as the
    /// seconds of `RetryInfo.retryDelay` too: waits no honest server would ask for.
    RateLimitedFor(String),
    /// Streams the first part of the text, then drops the connection.
    CutMidStream(String),
    /// Accepts, sends the response headers, then nothing.
    Stall,
    /// Waits this long, then answers with the inner reply (a model that thinks first).
    After(Duration, Box<Reply>),
    /// `first` at once, then `filler` every `gap` until `gate` is notified, then `last`: a
    /// model that keeps writing until the test has seen what it waits for.
    TextUntil {
        /// The first delta.
        first: String,
        /// The delta repeated while the gate is closed.
        filler: String,
        /// Wait before each filler.
        gap: Duration,
        /// Opened by the test (`notify_one`).
        gate: Arc<tokio::sync::Notify>,
        /// The last delta, sent once the gate opens.
        last: String,
    },
}

/// Answers requests once the script is empty: gets each request body, returns the reply.
pub type Responder = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

/// Model name the fake reports in [`FakeLlm::env`].
pub const FAKE_MODEL: &str = "fake-model";
/// API key the fake reports in [`FakeLlm::env`].
pub const FAKE_KEY: &str = "fake-key-123";

/// Tool calls of one issued turn (name, args) and the thought signature sent with them.
type IssuedTurn = (Vec<(String, Value)>, String);

struct Inner {
    dialect: Dialect,
    script: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Value>>,
    /// The bodies as received, byte for byte.
    raw: Mutex<Vec<Vec<u8>>>,
    headers: Mutex<Vec<HashMap<String, String>>>,
    /// Gemini: thought signature issued with each tool-call turn, keyed by the calls.
    issued: Mutex<Vec<IssuedTurn>>,
    counter: Mutex<u64>,
    responder: Mutex<Option<Responder>>,
}

/// A running fake provider; stops when dropped.
pub struct FakeLlm {
    addr: SocketAddr,
    inner: Arc<Inner>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeLlm {
    /// Starts a fake on a free port of 127.0.0.1.
    pub async fn start(dialect: Dialect) -> FakeLlm {
        let inner = Arc::new(Inner {
            dialect,
            script: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            raw: Mutex::new(Vec::new()),
            headers: Mutex::new(Vec::new()),
            issued: Mutex::new(Vec::new()),
            counter: Mutex::new(0),
            responder: Mutex::new(None),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(openai_handler))
            .route("/v1beta/models/{*rest}", post(gemini_handler))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeLlm {
            addr,
            inner,
            server,
        }
    }

    /// Appends a reply to the FIFO script. An empty script answers 500 "script exhausted".
    pub fn push(&self, reply: Reply) {
        lock(&self.inner.script).push_back(reply);
    }

    /// Answers every request the script does not with `responder` (for loads where the
    /// reply depends on the conversation rather than on arrival order).
    pub fn respond_with(&self, responder: Responder) {
        *lock(&self.inner.responder) = Some(responder);
    }

    /// Every request body received, in order (rejected ones included).
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.inner.requests).clone()
    }

    /// Every request body as the bytes received, in order (how numbers were written shows
    /// here, not in the parsed [`Self::requests`]).
    pub fn raw_requests(&self) -> Vec<String> {
        lock(&self.inner.raw)
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect()
    }

    /// The headers (lower-case names) of every request received, in order.
    pub fn request_headers(&self) -> Vec<HashMap<String, String>> {
        lock(&self.inner.headers).clone()
    }

    /// Replies still scripted.
    pub fn remaining(&self) -> usize {
        lock(&self.inner.script).len()
    }

    /// The dialect spoken.
    pub fn dialect(&self) -> Dialect {
        self.inner.dialect
    }

    /// What goes in `llm.openai.base_url` / `llm.gemini.base_url`.
    pub fn base_url(&self) -> String {
        match self.inner.dialect {
            Dialect::OpenAi => format!("http://{}/v1", self.addr),
            Dialect::Gemini => format!("http://{}/v1beta", self.addr),
        }
    }

    /// Environment pointing a `sparky` process at this fake: provider, base URL, model, key.
    pub fn env(&self) -> Vec<(String, String)> {
        let (provider, key_var) = match self.inner.dialect {
            Dialect::OpenAi => ("openai", "OPENAI_API_KEY"),
            Dialect::Gemini => ("gemini", "GEMINI_API_KEY"),
        };
        let upper = provider.to_ascii_uppercase();
        vec![
            ("SPARKY_LLM__PROVIDER".into(), provider.into()),
            (format!("SPARKY_LLM__{upper}__BASE_URL"), self.base_url()),
            (format!("SPARKY_LLM__{upper}__MODEL"), FAKE_MODEL.into()),
            (key_var.into(), FAKE_KEY.into()),
        ]
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// An error body in the dialect's format.
pub fn error_body(dialect: Dialect, code: u16, message: &str) -> Value {
    match dialect {
        Dialect::OpenAi => {
            let kind = match code {
                400 | 404 | 422 => "invalid_request_error",
                401 | 403 => "authentication_error",
                429 => "rate_limit_error",
                _ => "server_error",
            };
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
        }
        Dialect::Gemini => {
            let status = match code {
                400 => "INVALID_ARGUMENT",
                401 => "UNAUTHENTICATED",
                403 => "PERMISSION_DENIED",
                404 => "NOT_FOUND",
                429 => "RESOURCE_EXHAUSTED",
                503 => "UNAVAILABLE",
                504 => "DEADLINE_EXCEEDED",
                _ => "INTERNAL",
            };
            json!({"error": {"code": code, "message": message, "status": status}})
        }
    }
}

fn json_response(code: u16, body: &Value, extra: &[(&str, String)]) -> Response {
    let mut builder = Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", "application/json; charset=UTF-8");
    for (k, v) in extra {
        builder = builder.header(*k, v.as_str());
    }
    builder
        .body(Body::from(body.to_string()))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

fn reject(dialect: Dialect, code: u16, message: &str) -> Response {
    json_response(code, &error_body(dialect, code, message), &[])
}

fn status_reply(dialect: Dialect, code: u16, body: Value, retry_after: Option<u64>) -> Response {
    let mut body = if body.get("error").is_some() {
        body
    } else {
        let message = match &body {
            Value::String(s) => s.clone(),
            Value::Null => format!("HTTP {code}"),
            other => other.to_string(),
        };
        error_body(dialect, code, &message)
    };
    let mut headers = Vec::new();
    if let Some(secs) = retry_after {
        match dialect {
            Dialect::OpenAi => headers.push(("retry-after", secs.to_string())),
            Dialect::Gemini => {
                let detail = json!({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": format!("{secs}s")});
                if let Some(err) = body.get_mut("error").and_then(Value::as_object_mut) {
                    match err.get_mut("details").and_then(Value::as_array_mut) {
                        Some(details) => details.push(detail),
                        None => {
                            err.insert("details".into(), json!([detail]));
                        }
                    }
                }
            }
        }
    }
    json_response(code, &body, &headers)
}

fn rate_limited_for(dialect: Dialect, wait: &str) -> Response {
    let mut body = error_body(dialect, 429, "Too many requests");
    if dialect == Dialect::Gemini {
        body["error"]["details"] = json!([{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": format!("{wait}s")}]);
    }
    json_response(429, &body, &[("retry-after", wait.to_string())])
}

/// What the SSE body does after its events.
enum Ending {
    Close,
    Cut,
    Hang,
}

fn sse_response(events: Vec<String>, ending: Ending) -> Response {
    let chunks = futures::stream::iter(
        events
            .into_iter()
            .map(|e| Ok::<Bytes, std::io::Error>(Bytes::from(e))),
    );
    let body = match ending {
        Ending::Close => Body::from_stream(chunks),
        Ending::Cut => Body::from_stream(chunks.chain(futures::stream::once(async {
            // Give the client time to read what was sent, then abort the connection.
            tokio::time::sleep(Duration::from_millis(100)).await;
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "cut by the fake",
            ))
        }))),
        Ending::Hang => Body::from_stream(chunks.chain(futures::stream::pending())),
    };
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream; charset=utf-8")
        .header("cache-control", "no-cache")
        .body(body)
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// An SSE body whose events are each sent after their wait.
fn paced_sse_response(events: Vec<(Duration, String)>) -> Response {
    let chunks = futures::stream::iter(events).then(|(wait, e)| async move {
        tokio::time::sleep(wait).await;
        Ok::<Bytes, std::io::Error>(Bytes::from(e))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream; charset=utf-8")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(chunks))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// An SSE body for [`Reply::TextUntil`]: `head`, the first piece, fillers every `gap` until
/// `gate` opens, the last piece, then `tail`. `piece` writes one delta as an event.
fn text_until_response(
    head: Vec<String>,
    until: (String, String, Duration, Arc<tokio::sync::Notify>, String),
    piece: impl Fn(&str) -> String + Send + Sync + 'static,
    tail: Vec<String>,
) -> Response {
    let (first, filler, gap, gate, last) = until;
    let filler = piece(&filler);
    let fillers = futures::stream::unfold(gate, move |gate| {
        let filler = filler.clone();
        async move {
            tokio::select! {
                _ = gate.notified() => None,
                _ = tokio::time::sleep(gap) => Some((filler, gate)),
            }
        }
    });
    let chunks = futures::stream::iter(head)
        .chain(futures::stream::iter([piece(&first)]))
        .chain(fillers)
        .chain(futures::stream::iter([piece(&last)]))
        .chain(futures::stream::iter(tail))
        .map(|e| Ok::<Bytes, std::io::Error>(Bytes::from(e)));
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream; charset=utf-8")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(chunks))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// Splits text into about `parts` pieces on character boundaries.
fn split_text(text: &str, parts: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    let size = chars.len().div_ceil(parts.max(1)).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

fn random_alnum(n: usize) -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..n)
        .map(|_| CHARS[rand::random_range(0..CHARS.len())] as char)
        .collect()
}

fn record(inner: &Inner, headers: &HeaderMap, body: &[u8]) -> Option<Value> {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    lock(&inner.raw).push(body.to_vec());
    lock(&inner.requests).push(
        parsed
            .clone()
            .unwrap_or_else(|| Value::String(String::from_utf8_lossy(body).into_owned())),
    );
    lock(&inner.headers).push(
        headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
    );
    parsed
}

fn next_reply(inner: &Inner, request: &Value) -> Option<Reply> {
    if let Some(r) = lock(&inner.script).pop_front() {
        return Some(r);
    }
    let responder = lock(&inner.responder).clone();
    responder.map(|f| f(request))
}

/// The reply after any `After` wait.
async fn settle(mut reply: Reply) -> Reply {
    while let Reply::After(wait, inner) = reply {
        tokio::time::sleep(wait).await;
        reply = *inner;
    }
    reply
}

fn next_number(inner: &Inner) -> u64 {
    let mut c = lock(&inner.counter);
    *c += 1;
    *c
}

// ---------------------------------------------------------------------------------------
// OpenAI

async fn openai_handler(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let d = Dialect::OpenAi;
    let Some(request) = record(&inner, &headers, &body) else {
        return reject(d, 400, "We could not parse the JSON body of your request.");
    };
    if let Err(message) = validate_openai(&request) {
        return reject(d, 400, &message);
    }
    // llama.cpp's llama-server parses every call's arguments in the history and answers 500
    // to the whole request when one is not JSON.
    if let Some(bad) = unparsable_call_arguments(&request) {
        return reject(
            d,
            500,
            &format!("Failed to parse tool call arguments as JSON: {bad}"),
        );
    }
    let model = request["model"].as_str().unwrap_or(FAKE_MODEL).to_string();
    let include_usage = request
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let prompt_tokens = (body.len() / 4) as u64;
    let Some(reply) = next_reply(&inner, &request) else {
        return reject(d, 500, "script exhausted");
    };
    let reply = settle(reply).await;
    let n = next_number(&inner);
    let id = format!("chatcmpl-fake{n}{}", random_alnum(12));
    let chunk = |delta: Value, finish: Value| {
        let c = json!({
            "id": id, "object": "chat.completion.chunk", "created": 1727346180, "model": model,
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
        });
        format!("data: {c}\n\n")
    };
    let usage = |completion: u64| {
        let c = json!({
            "id": id, "object": "chat.completion.chunk", "created": 1727346180, "model": model,
            "system_fingerprint": "fp_fake", "choices": [],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                      "total_tokens": prompt_tokens + completion,
                      "completion_tokens_details": {"reasoning_tokens": 0}}
        });
        format!("data: {c}\n\n")
    };
    let tail = |events: &mut Vec<String>, finish: &str, completion: u64| {
        events.push(chunk(json!({}), json!(finish)));
        if include_usage {
            events.push(usage(completion));
        }
        events.push("data: [DONE]\n\n".to_string());
    };
    match reply {
        Reply::Text(text) => {
            let mut events = vec![chunk(
                json!({"role": "assistant", "content": "", "refusal": null}),
                Value::Null,
            )];
            for piece in split_text(&text, 3) {
                events.push(chunk(json!({"content": piece}), Value::Null));
            }
            tail(&mut events, "stop", (text.len() / 4 + 1) as u64);
            sse_response(events, Ending::Close)
        }
        Reply::ToolCalls(calls) => {
            let calls: Vec<(String, String)> =
                calls.into_iter().map(|(n, a)| (n, a.to_string())).collect();
            let mut events = vec![chunk(
                json!({"role": "assistant", "content": null}),
                Value::Null,
            )];
            openai_call_fragments(&mut events, &chunk, &calls);
            tail(&mut events, "tool_calls", 20 * calls.len() as u64);
            sse_response(events, Ending::Close)
        }
        Reply::RawToolCall { name, arguments } => {
            let mut events = vec![chunk(
                json!({"role": "assistant", "content": null}),
                Value::Null,
            )];
            openai_call_fragments(&mut events, &chunk, &[(name, arguments)]);
            tail(&mut events, "tool_calls", 20);
            sse_response(events, Ending::Close)
        }
        Reply::Status {
            code,
            body,
            retry_after_secs,
        } => status_reply(d, code, body, retry_after_secs),
        Reply::RateLimitedFor(wait) => rate_limited_for(d, &wait),
        Reply::Finish { text, reason } => {
            let mut events = vec![chunk(
                json!({"role": "assistant", "content": "", "refusal": null}),
                Value::Null,
            )];
            if !text.is_empty() {
                for piece in split_text(&text, 2) {
                    events.push(chunk(json!({ "content": piece }), Value::Null));
                }
            }
            tail(&mut events, &reason, (text.len() / 4) as u64);
            sse_response(events, Ending::Close)
        }
        Reply::PacedText { pieces, gap } => {
            let text: String = pieces.concat();
            let mut events = vec![(
                Duration::ZERO,
                chunk(
                    json!({"role": "assistant", "content": "", "refusal": null}),
                    Value::Null,
                ),
            )];
            for (i, piece) in pieces.iter().enumerate() {
                let wait = if i == 0 { Duration::ZERO } else { gap };
                events.push((wait, chunk(json!({"content": piece}), Value::Null)));
            }
            let mut rest = Vec::new();
            tail(&mut rest, "stop", (text.len() / 4 + 1) as u64);
            events.extend(rest.into_iter().map(|e| (Duration::ZERO, e)));
            paced_sse_response(events)
        }
        Reply::TextUntil {
            first,
            filler,
            gap,
            gate,
            last,
        } => {
            let head = vec![chunk(
                json!({"role": "assistant", "content": "", "refusal": null}),
                Value::Null,
            )];
            let mut rest = Vec::new();
            tail(&mut rest, "stop", (first.len() / 4 + 1) as u64);
            let (id, model) = (id.clone(), model.clone());
            let piece = move |p: &str| {
                let c = json!({
                    "id": id, "object": "chat.completion.chunk", "created": 1727346180,
                    "model": model, "system_fingerprint": "fp_fake",
                    "choices": [{"index": 0, "delta": {"content": p}, "logprobs": null,
                                 "finish_reason": null}]
                });
                format!("data: {c}\n\n")
            };
            text_until_response(head, (first, filler, gap, gate, last), piece, rest)
        }
        Reply::CutMidStream(text) => {
            let pieces = split_text(&text, 2);
            let events = vec![
                chunk(
                    json!({"role": "assistant", "content": "", "refusal": null}),
                    Value::Null,
                ),
                chunk(json!({"content": pieces[0]}), Value::Null),
            ];
            sse_response(events, Ending::Cut)
        }
        Reply::Stall => sse_response(Vec::new(), Ending::Hang),
        Reply::After(..) => unreachable!("settled above"),
    }
}

fn openai_call_fragments(
    events: &mut Vec<String>,
    chunk: &dyn Fn(Value, Value) -> String,
    calls: &[(String, String)],
) {
    for (i, (name, arguments)) in calls.iter().enumerate() {
        let call_id = format!("call_{}", random_alnum(24));
        events.push(chunk(
            json!({"tool_calls": [{"index": i, "id": call_id, "type": "function",
                                   "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        ));
        let chars: Vec<char> = arguments.chars().collect();
        for piece in chars.chunks(7) {
            let piece: String = piece.iter().collect();
            events.push(chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
}

/// Content parts of a system or user message, as strictly as the API checks them: text parts
/// with text, and (for users) `image_url` parts whose URL is http(s) or a base64 `data:` URL
/// of an image type the API takes.
fn validate_openai_parts(i: usize, role: &str, parts: &[Value]) -> Result<(), String> {
    if parts.is_empty() {
        return Err(format!(
            "Invalid 'messages[{i}].content': empty array. Expected an array with minimum length 1."
        ));
    }
    for (j, part) in parts.iter().enumerate() {
        match part.get("type").and_then(Value::as_str) {
            Some("text") => {
                if !part.get("text").is_some_and(Value::is_string) {
                    return Err(format!(
                        "Missing required parameter: 'messages[{i}].content[{j}].text'."
                    ));
                }
            }
            Some("image_url") if role == "user" => {
                let url = part
                    .pointer("/image_url/url")
                    .and_then(Value::as_str)
                    .ok_or(format!(
                        "Missing required parameter: 'messages[{i}].content[{j}].image_url.url'."
                    ))?;
                if let Some(rest) = url.strip_prefix("data:") {
                    let (mime, data) = rest.split_once(";base64,").ok_or(format!(
                        "Invalid 'messages[{i}].content[{j}].image_url.url': expected a base64-encoded data URL."
                    ))?;
                    if !["image/png", "image/jpeg", "image/webp", "image/gif"].contains(&mime) {
                        return Err(format!("Invalid MIME type. Only image types are supported. (messages[{i}].content[{j}])"));
                    }
                    use base64::Engine;
                    if base64::engine::general_purpose::STANDARD
                        .decode(data)
                        .is_err()
                    {
                        return Err(format!("You uploaded an unsupported image. Please make sure your image is valid. (messages[{i}].content[{j}])"));
                    }
                } else if !url.starts_with("https://") && !url.starts_with("http://") {
                    return Err(format!(
                        "Invalid 'messages[{i}].content[{j}].image_url.url': expected a URL."
                    ));
                }
            }
            other => {
                return Err(format!(
                    "Invalid value: '{}'. Supported values are: 'text' and 'image_url'. (messages[{i}].content[{j}].type)",
                    other.unwrap_or("null")
                ))
            }
        }
    }
    Ok(())
}

/// The first call in the history whose arguments text is not JSON, as llama-server reads it.
fn unparsable_call_arguments(request: &Value) -> Option<String> {
    let messages = request.get("messages")?.as_array()?;
    messages
        .iter()
        .filter_map(|m| m.get("tool_calls")?.as_array())
        .flatten()
        .filter_map(|c| c.pointer("/function/arguments")?.as_str())
        .find_map(|a| {
            serde_json::from_str::<Value>(a)
                .err()
                .map(|e| e.to_string())
        })
}

fn validate_openai(request: &Value) -> Result<(), String> {
    if !request.is_object() {
        return Err("The request body must be a JSON object.".into());
    }
    match request.get("model").and_then(Value::as_str) {
        Some(m) if !m.trim().is_empty() => {}
        _ => return Err("you must provide a model parameter".into()),
    }
    if let Some(tools) = request.get("tools") {
        let tools = tools
            .as_array()
            .ok_or("Invalid type for 'tools': expected an array.")?;
        if tools.is_empty() {
            return Err(
                "Invalid 'tools': empty array. Expected an array with minimum length 1.".into(),
            );
        }
        for (i, tool) in tools.iter().enumerate() {
            if tool.get("type").and_then(Value::as_str) != Some("function") {
                return Err(format!("Missing required parameter: 'tools[{i}].type'."));
            }
            let name = tool
                .pointer("/function/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if name.is_empty()
                || name.len() > 64
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(format!(
                    "Invalid 'tools[{i}].function.name': string does not match pattern."
                ));
            }
            if let Some(params) = tool.pointer("/function/parameters") {
                if !is_object_schema(params) {
                    return Err(format!(
                        "Invalid schema for function '{name}': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{}\"'.",
                        params.get("type").and_then(Value::as_str).unwrap_or("None")
                    ));
                }
            }
        }
    }
    let messages = request
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("Missing required parameter: 'messages'.")?;
    if messages.is_empty() {
        return Err(
            "Invalid 'messages': empty array. Expected an array with minimum length 1.".into(),
        );
    }
    let mut pending: Vec<String> = Vec::new();
    let mut pending_at = 0;
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        if role != "tool" && !pending.is_empty() {
            return Err(unanswered(pending_at, &pending));
        }
        match role {
            "system" | "developer" | "user" => {
                if m.get("content").is_none_or(Value::is_null) {
                    return Err(format!("Missing required parameter: 'messages[{i}].content'."));
                }
                if let Some(parts) = m.get("content").and_then(Value::as_array) {
                    validate_openai_parts(i, role, parts)?;
                }
            }
            "assistant" => {
                let calls = m.get("tool_calls").and_then(Value::as_array);
                if calls.is_none() && m.get("content").is_none_or(Value::is_null) {
                    return Err(format!("Missing required parameter: 'messages[{i}].content'."));
                }
                for (j, c) in calls.into_iter().flatten().enumerate() {
                    let id = c.get("id").and_then(Value::as_str).unwrap_or_default();
                    if id.is_empty() {
                        return Err(format!("Missing required parameter: 'messages[{i}].tool_calls[{j}].id'."));
                    }
                    if c.get("type").and_then(Value::as_str) != Some("function") {
                        return Err(format!("Missing required parameter: 'messages[{i}].tool_calls[{j}].type'."));
                    }
                    if c.pointer("/function/name").and_then(Value::as_str).is_none() {
                        return Err(format!("Missing required parameter: 'messages[{i}].tool_calls[{j}].function.name'."));
                    }
                    if !c.pointer("/function/arguments").is_some_and(Value::is_string) {
                        return Err(format!(
                            "Invalid type for 'messages[{i}].tool_calls[{j}].function.arguments': expected a string."
                        ));
                    }
                    pending.push(id.to_string());
                }
                pending_at = i;
            }
            "tool" => {
                let id = m.get("tool_call_id").and_then(Value::as_str).unwrap_or_default();
                let Some(pos) = pending.iter().position(|p| p == id) else {
                    return Err(format!(
                        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages[{i}], tool_call_id '{id}')"
                    ));
                };
                pending.remove(pos);
                if !m.get("content").is_some_and(|c| c.is_string() || c.is_array()) {
                    return Err(format!("Invalid type for 'messages[{i}].content': expected a string."));
                }
            }
            other => {
                return Err(format!(
                    "Invalid value: '{other}'. Supported values are: 'system', 'assistant', 'user', 'tool', 'function', and 'developer'."
                ))
            }
        }
    }
    if !pending.is_empty() {
        return Err(unanswered(pending_at, &pending));
    }
    Ok(())
}

fn unanswered(at: usize, ids: &[String]) -> String {
    format!(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {} (messages[{at}])",
        ids.join(", ")
    )
}

fn is_object_schema(schema: &Value) -> bool {
    schema.is_object() && schema.get("type").and_then(Value::as_str) == Some("object")
}

// ---------------------------------------------------------------------------------------
// Gemini

async fn gemini_handler(
    State(inner): State<Arc<Inner>>,
    Path(rest): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let d = Dialect::Gemini;
    let request = record(&inner, &headers, &body);
    let query = query.unwrap_or_default();
    let key_in_query = query
        .split('&')
        .any(|p| p.starts_with("key=") && p.len() > 4);
    let key = headers
        .get("x-goog-api-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if key.is_empty() && !key_in_query {
        return reject(
            d,
            403,
            "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
        );
    }
    if !key.is_empty() && key != FAKE_KEY {
        let body = json!({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID", "domain": "googleapis.com",
            "metadata": {"service": "generativelanguage.googleapis.com"}}]}});
        return json_response(400, &body, &[]);
    }
    let Some((model, method)) = rest.rsplit_once(':') else {
        return reject(
            d,
            404,
            &format!("Requested entity was not found: models/{rest}"),
        );
    };
    if model.is_empty() || model.contains('/') {
        return reject(
            d,
            404,
            &format!("models/{model} is not found for API version v1beta"),
        );
    }
    if method != "streamGenerateContent" {
        return reject(
            d,
            404,
            &format!("the fake only serves streamGenerateContent, not {method}"),
        );
    }
    if !query.split('&').any(|p| p == "alt=sse") {
        return reject(d, 400, "the fake only serves alt=sse");
    }
    let Some(request) = request else {
        return reject(d, 400, "Invalid JSON payload received.");
    };
    if let Err(message) = validate_gemini(&inner, &request) {
        return reject(d, 400, &message);
    }
    let Some(reply) = next_reply(&inner, &request) else {
        return reject(d, 500, "script exhausted");
    };
    let reply = settle(reply).await;
    let n = next_number(&inner);
    let response_id = format!("fake{n}{}", random_alnum(10));
    let prompt_tokens = (body.len() / 4) as u64;
    let event = |parts: Value, finish: Option<&str>, out_tokens: u64| {
        let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
        if let Some(f) = finish {
            candidate["finishReason"] = json!(f);
        }
        let e = json!({
            "candidates": [candidate],
            "usageMetadata": {"promptTokenCount": prompt_tokens, "candidatesTokenCount": out_tokens,
                "totalTokenCount": prompt_tokens + out_tokens + 7,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt_tokens}],
                "thoughtsTokenCount": 7},
            "modelVersion": model, "responseId": response_id
        });
        format!("data: {e}\r\n\r\n")
    };
    match reply {
        Reply::Text(text) => {
            // Like Gemini 3, the last text part carries a signature.
            let signature = format!("ZmFrZS10ZXh0LXNpZy0{}", random_alnum(24));
            lock(&inner.issued).push((Vec::new(), signature.clone()));
            let pieces = split_text(&text, 3);
            let last = pieces.len() - 1;
            let events = pieces
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let out = (text.len() / 4 + 1) as u64;
                    if i == last {
                        event(
                            json!([{"text": p, "thoughtSignature": signature}]),
                            Some("STOP"),
                            out,
                        )
                    } else {
                        event(json!([{"text": p}]), None, out)
                    }
                })
                .collect();
            sse_response(events, Ending::Close)
        }
        Reply::ToolCalls(calls) => {
            let signature = format!("ZmFrZS1zaWduYXR1cmUt{}", random_alnum(24));
            let parts: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, (name, args))| {
                    let mut part = json!({"functionCall": {"name": name, "args": args}});
                    if i == 0 {
                        part["thoughtSignature"] = json!(signature);
                    }
                    part
                })
                .collect();
            lock(&inner.issued).push((calls.clone(), signature));
            let out = 10 * calls.len() as u64;
            let events = vec![
                event(Value::Array(parts), None, out),
                event(json!([{"text": ""}]), Some("STOP"), out),
            ];
            sse_response(events, Ending::Close)
        }
        Reply::RawToolCall { name, arguments } => match serde_json::from_str::<Value>(&arguments) {
            Ok(args @ Value::Object(_)) => {
                let signature = format!("ZmFrZS1zaWduYXR1cmUt{}", random_alnum(24));
                lock(&inner.issued).push((vec![(name.clone(), args.clone())], signature.clone()));
                let events = vec![
                    event(
                        json!([{"functionCall": {"name": name, "args": args}, "thoughtSignature": signature}]),
                        None,
                        10,
                    ),
                    event(json!([{"text": ""}]), Some("STOP"), 10),
                ];
                sse_response(events, Ending::Close)
            }
            _ => {
                let e = json!({
                    "candidates": [{"content": {"parts": [], "role": "model"}, "finishReason": "MALFORMED_FUNCTION_CALL",
                        "finishMessage": format!("Malformed function call: {name}({arguments})"), "index": 0}],
                    "usageMetadata": {"promptTokenCount": prompt_tokens, "totalTokenCount": prompt_tokens},
                    "modelVersion": model, "responseId": response_id
                });
                sse_response(vec![format!("data: {e}\r\n\r\n")], Ending::Close)
            }
        },
        Reply::Status {
            code,
            body,
            retry_after_secs,
        } => status_reply(d, code, body, retry_after_secs),
        Reply::RateLimitedFor(wait) => rate_limited_for(d, &wait),
        Reply::Finish { text, reason } => {
            let mut events = Vec::new();
            if !text.is_empty() {
                for piece in split_text(&text, 2) {
                    events.push(event(json!([{ "text": piece }]), None, 2));
                }
            }
            let end = json!({
                "candidates": [{"finishReason": reason, "index": 0}],
                "usageMetadata": {"promptTokenCount": prompt_tokens, "totalTokenCount": prompt_tokens},
                "modelVersion": model, "responseId": response_id
            });
            events.push(format!("data: {end}\r\n\r\n"));
            sse_response(events, Ending::Close)
        }
        Reply::PacedText { pieces, gap } => {
            let last = pieces.len().saturating_sub(1);
            let events = pieces
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let wait = if i == 0 { Duration::ZERO } else { gap };
                    let finish = (i == last).then_some("STOP");
                    (wait, event(json!([{ "text": p }]), finish, 1 + i as u64))
                })
                .collect();
            paced_sse_response(events)
        }
        Reply::TextUntil {
            first,
            filler,
            gap,
            gate,
            last,
        } => {
            let rest = vec![event(json!([{"text": ""}]), Some("STOP"), 1)];
            let (model, response_id) = (model.to_string(), response_id.clone());
            let piece = move |p: &str| {
                let e = json!({
                    "candidates": [{"content": {"parts": [{"text": p}], "role": "model"}, "index": 0}],
                    "usageMetadata": {"promptTokenCount": prompt_tokens, "totalTokenCount": prompt_tokens},
                    "modelVersion": model, "responseId": response_id
                });
                format!("data: {e}\r\n\r\n")
            };
            text_until_response(Vec::new(), (first, filler, gap, gate, last), piece, rest)
        }
        Reply::CutMidStream(text) => {
            let pieces = split_text(&text, 2);
            sse_response(
                vec![event(json!([{"text": pieces[0]}]), None, 3)],
                Ending::Cut,
            )
        }
        Reply::Stall => sse_response(Vec::new(), Ending::Hang),
        Reply::After(..) => unreachable!("settled above"),
    }
}

const GEMINI_TOP_FIELDS: &[&str] = &[
    "contents",
    "systemInstruction",
    "system_instruction",
    "tools",
    "toolConfig",
    "tool_config",
    "safetySettings",
    "safety_settings",
    "generationConfig",
    "generation_config",
    "cachedContent",
    "cached_content",
];
const GEMINI_PART_FIELDS: &[&str] = &[
    "text",
    "thought",
    "thoughtSignature",
    "thought_signature",
    "functionCall",
    "function_call",
    "functionResponse",
    "function_response",
    "inlineData",
    "inline_data",
    "fileData",
    "file_data",
    "executableCode",
    "codeExecutionResult",
    "videoMetadata",
];

fn unknown_field(path: &str, name: &str) -> String {
    format!(
        "Invalid JSON payload received. Unknown name \"{name}\" at '{path}': Cannot find field."
    )
}

fn field<'a>(v: &'a Value, camel: &str, snake: &str) -> Option<&'a Value> {
    v.get(camel).or_else(|| v.get(snake))
}

fn validate_gemini(inner: &Inner, request: &Value) -> Result<(), String> {
    let obj = request
        .as_object()
        .ok_or("Invalid JSON payload received. Expected an object.")?;
    for k in obj.keys() {
        if !GEMINI_TOP_FIELDS.contains(&k.as_str()) {
            return Err(unknown_field("", k));
        }
    }
    if let Some(tools) = request.get("tools") {
        let tools = tools
            .as_array()
            .ok_or("Invalid value at 'tools': expected a list.")?;
        for (i, tool) in tools.iter().enumerate() {
            let decls = field(tool, "functionDeclarations", "function_declarations")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            for (j, decl) in decls.iter().enumerate() {
                let path = format!("tools[{i}].function_declarations[{j}]");
                if decl
                    .get("name")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    return Err(format!("* GenerateContentRequest.{path}.name: [FIELD_INVALID] Invalid function name."));
                }
                let json_schema = field(decl, "parametersJsonSchema", "parameters_json_schema");
                if json_schema.is_some() && decl.get("parameters").is_some() {
                    return Err(format!("* GenerateContentRequest.{path}: parameters and parameters_json_schema are mutually exclusive."));
                }
                if let Some(schema) = json_schema {
                    if !is_object_schema(schema) {
                        return Err(format!("* GenerateContentRequest.{path}.parameters_json_schema: the schema must be an object schema (type: object)."));
                    }
                    if let Some(bad) = find_key(schema, "$schema") {
                        return Err(format!("* GenerateContentRequest.{path}.parameters_json_schema: unsupported keyword {bad}."));
                    }
                }
                if let Some(schema) = decl.get("parameters") {
                    // The OpenAPI-subset Schema proto: JSON-Schema-only keywords are unknown fields.
                    for bad in ["$schema", "additionalProperties", "$defs", "$ref"] {
                        if find_key(schema, bad).is_some() {
                            return Err(unknown_field(&format!("{path}.parameters"), bad));
                        }
                    }
                }
            }
        }
    }
    let contents = request
        .get("contents")
        .and_then(Value::as_array)
        .ok_or("* GenerateContentRequest.contents: contents is not specified")?;
    if contents.is_empty() {
        return Err("* GenerateContentRequest.contents: contents is not specified".into());
    }
    let issued = lock(&inner.issued).clone();
    let mut pending: Option<(usize, Vec<String>)> = None;
    for (i, content) in contents.iter().enumerate() {
        let role = content
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("user");
        if role != "user" && role != "model" {
            return Err(format!(
                "Please use a valid role: user, model. (contents[{i}].role = {role})"
            ));
        }
        let parts = content
            .get("parts")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if parts.is_empty() {
            return Err(format!(
                "* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty."
            ));
        }
        for (j, part) in parts.iter().enumerate() {
            let obj = part.as_object().ok_or("part must be an object")?;
            for k in obj.keys() {
                if !GEMINI_PART_FIELDS.contains(&k.as_str()) {
                    return Err(unknown_field(&format!("contents[{i}].parts[{j}]"), k));
                }
            }
            let data = [
                "text",
                "functionCall",
                "function_call",
                "functionResponse",
                "function_response",
                "inlineData",
                "inline_data",
                "fileData",
                "file_data",
                "executableCode",
                "codeExecutionResult",
            ]
            .iter()
            .filter(|k| obj.contains_key(**k))
            .count();
            if data != 1 {
                return Err(format!("* GenerateContentRequest.contents[{i}].parts[{j}].data: required oneof field 'data' must have one initialized field"));
            }
            for key in ["inline_data", "inlineData"] {
                if let Some(blob) = obj.get(key) {
                    let mime = field(blob, "mimeType", "mime_type").and_then(Value::as_str);
                    let data = blob.get("data").and_then(Value::as_str);
                    use base64::Engine;
                    match (mime, data) {
                        (Some(m), Some(d)) if !m.is_empty() && base64::engine::general_purpose::STANDARD.decode(d).is_ok() => {}
                        (None, _) | (Some(""), _) => return Err(format!("* GenerateContentRequest.contents[{i}].parts[{j}].inline_data.mime_type: mime_type is required")),
                        _ => return Err(format!("Invalid value at 'contents[{i}].parts[{j}].inline_data.data' (TYPE_BYTES), Base64 decoding failed")),
                    }
                }
            }
            // The live API refuses empty text, also when a signature rides on it.
            if obj
                .get("text")
                .is_some_and(|t| t.as_str().is_none_or(str::is_empty))
            {
                return Err(format!("* GenerateContentRequest.contents[{i}].parts[{j}].text: Unable to submit request because it has an empty text parameter. Add a value to the parameter and try again."));
            }
            for key in ["functionCall", "function_call"] {
                if let Some(call) = obj.get(key) {
                    if call.get("id").is_some() {
                        return Err(format!(
                            "contents[{i}].parts[{j}].function_call.id: this id was never issued by the model (the fake issues no ids)"
                        ));
                    }
                    if call
                        .get("name")
                        .and_then(Value::as_str)
                        .is_none_or(str::is_empty)
                    {
                        return Err(format!("* GenerateContentRequest.contents[{i}].parts[{j}].function_call.name: name is required"));
                    }
                    if let Some(args) = call.get("args") {
                        if !args.is_object() {
                            return Err(format!("Invalid value at 'contents[{i}].parts[{j}].function_call.args' (type.googleapis.com/google.protobuf.Struct)"));
                        }
                    }
                }
            }
            for key in ["functionResponse", "function_response"] {
                if let Some(resp) = obj.get(key) {
                    if resp.get("id").is_some() {
                        return Err(format!(
                            "contents[{i}].parts[{j}].function_response.id: no function call with this id was issued (the fake issues no ids)"
                        ));
                    }
                    if !resp.get("response").is_some_and(Value::is_object) {
                        return Err(format!("Invalid value at 'contents[{i}].parts[{j}].function_response.response' (type.googleapis.com/google.protobuf.Struct)"));
                    }
                }
            }
        }
        let calls: Vec<&Value> = parts
            .iter()
            .filter(|p| field(p, "functionCall", "function_call").is_some())
            .collect();
        let known: HashSet<&str> = issued.iter().map(|(_, s)| s.as_str()).collect();
        for p in parts
            .iter()
            .filter(|p| field(p, "functionCall", "function_call").is_none())
        {
            if let Some(sig) =
                field(p, "thoughtSignature", "thought_signature").and_then(Value::as_str)
            {
                if !known.contains(sig) {
                    return Err(format!("Corrupted thought signature. (contents[{i}])"));
                }
            }
        }
        let responses: Vec<String> = parts
            .iter()
            .filter_map(|p| field(p, "functionResponse", "function_response"))
            .map(|r| {
                r.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        if let Some((at, names)) = pending.take() {
            if role != "user" || responses.is_empty() {
                return Err(format!("Please ensure that function response turn comes immediately after a function call turn. (function call turn: contents[{at}])"));
            }
            let mut expected = names.clone();
            let mut got = responses.clone();
            expected.sort();
            got.sort();
            if expected.len() != got.len() {
                return Err("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.".into());
            }
            if expected != got {
                return Err(format!(
                    "function response names {got:?} do not match the function calls {expected:?}"
                ));
            }
        } else if !responses.is_empty() {
            return Err(format!("Please ensure that function response turn comes immediately after a function call turn. (contents[{i}])"));
        }
        if !calls.is_empty() {
            if role != "model" {
                return Err(format!(
                    "contents[{i}]: function calls must be in a model turn"
                ));
            }
            check_signature(&issued, i, &calls)?;
            let names = calls
                .iter()
                .filter_map(|p| field(p, "functionCall", "function_call"))
                .map(|c| {
                    c.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                })
                .collect();
            pending = Some((i, names));
        }
    }
    if let Some((at, _)) = pending {
        return Err(format!("Please ensure that function response turn comes immediately after a function call turn. (contents[{at}] is unanswered)"));
    }
    Ok(())
}

/// The first call part of a turn the fake issued must carry the issued signature unchanged;
/// a signature the fake never issued is corrupted.
fn check_signature(issued: &[IssuedTurn], i: usize, call_parts: &[&Value]) -> Result<(), String> {
    let sent: Vec<(String, Value)> = call_parts
        .iter()
        .filter_map(|p| field(p, "functionCall", "function_call"))
        .map(|c| {
            (
                c.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                c.get("args").cloned().unwrap_or_else(|| json!({})),
            )
        })
        .collect();
    let known: HashSet<&str> = issued.iter().map(|(_, s)| s.as_str()).collect();
    for p in call_parts {
        if let Some(sig) = field(p, "thoughtSignature", "thought_signature").and_then(Value::as_str)
        {
            if !known.contains(sig) {
                return Err(format!("Corrupted thought signature. (contents[{i}])"));
            }
        }
    }
    // The same calls may have been issued in several turns (a model repeating itself): the
    // signature of any of them is theirs.
    let issued_with: Vec<&str> = issued
        .iter()
        .filter(|(calls, _)| *calls == sent)
        .map(|(_, s)| s.as_str())
        .collect();
    if !issued_with.is_empty() {
        let first =
            field(call_parts[0], "thoughtSignature", "thought_signature").and_then(Value::as_str);
        if !first.is_some_and(|f| issued_with.contains(&f)) {
            return Err(format!(
                "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:{}` , position {}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
                sent[0].0,
                i + 1
            ));
        }
    }
    Ok(())
}

fn find_key(v: &Value, key: &str) -> Option<String> {
    match v {
        Value::Object(map) => {
            if map.contains_key(key) {
                return Some(key.to_string());
            }
            map.iter().find_map(|(k, child)| {
                // Names under `properties` are property names, not keywords.
                if k == "properties" {
                    child.as_object()?.values().find_map(|c| find_key(c, key))
                } else {
                    find_key(child, key)
                }
            })
        }
        Value::Array(items) => items.iter().find_map(|c| find_key(c, key)),
        _ => None,
    }
}
