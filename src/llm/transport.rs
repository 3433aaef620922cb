//! HTTP plumbing shared by the wire formats: sending with a deadline, mapping error answers,
//! and turning a streamed body into [`StreamEvent`]s through a format-specific decoder.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};

use super::errors::{self, ErrorDialect};
use super::sse::SseDecoder;
use super::{ChatStream, LlmError, StreamEvent};

/// A wire format's decoder of SSE `data` payloads into neutral events.
pub(crate) trait EventDecoder: Send + 'static {
    /// Handles one SSE `data` payload, appending the events it completes.
    fn on_data(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), LlmError>;
    /// The body ended; appends the closing events or fails if the turn did not finish.
    fn on_end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError>;
    /// The turn is complete (e.g. `[DONE]` seen): stop reading.
    fn is_complete(&self) -> bool;
}

/// A byte stream of a response body, errors already mapped.
pub(crate) type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, LlmError>> + Send>>;

/// Builds the HTTP client for one provider. The whole-request timeout is not set here because
/// it would cut long streams; `send` and `decode_events` apply their own deadlines.
pub(crate) fn client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(timeout)
        .user_agent(concat!("sparky/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_else(|_| reqwest::Client::new())
}

/// Sends a request, waiting at most `timeout` for the response headers, and maps an error
/// status (with its body, read within the same deadline) to a typed error.
pub(crate) async fn send(
    request: reqwest::RequestBuilder,
    timeout: Duration,
    dialect: ErrorDialect,
) -> Result<reqwest::Response, LlmError> {
    let response = match tokio::time::timeout(timeout, request.send()).await {
        Err(_) => return Err(LlmError::Timeout),
        Ok(Err(e)) => return Err(errors::from_reqwest(&e)),
        Ok(Ok(r)) => r,
    };
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = match tokio::time::timeout(timeout, response.bytes()).await {
        Ok(Ok(b)) => String::from_utf8_lossy(&b).into_owned(),
        _ => String::new(),
    };
    Err(errors::from_http_status(
        dialect,
        status.as_u16(),
        retry_after.as_deref(),
        &body,
    ))
}

/// Whether the response is a plain JSON document rather than an event stream (servers that
/// ignore `stream: true`, or Gemini without `alt=sse`).
pub(crate) fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.trim_start().starts_with("application/json"))
}

/// Reads a whole JSON body within `timeout`.
pub(crate) async fn read_json(
    response: reqwest::Response,
    timeout: Duration,
) -> Result<serde_json::Value, LlmError> {
    let bytes = match tokio::time::timeout(timeout, response.bytes()).await {
        Err(_) => return Err(LlmError::Timeout),
        Ok(Err(e)) => return Err(errors::from_reqwest(&e)),
        Ok(Ok(b)) => b,
    };
    serde_json::from_slice(&bytes)
        .map_err(|e| LlmError::Protocol(format!("invalid JSON body: {e}")))
}

/// The body of a response as a byte stream with mapped errors.
pub(crate) fn body_stream(response: reqwest::Response) -> ByteStream {
    Box::pin(
        response
            .bytes_stream()
            .map(|r| r.map_err(|e| stream_error(&e))),
    )
}

/// A failure while reading a body that had started: the connection broke mid-stream.
fn stream_error(e: &reqwest::Error) -> LlmError {
    match errors::from_reqwest(e) {
        LlmError::Protocol(m) | LlmError::Transport(m) => {
            LlmError::Transport(format!("the stream was interrupted: {m}"))
        }
        other => other,
    }
}

struct DecodeState<D> {
    bytes: ByteStream,
    sse: SseDecoder,
    decoder: D,
    queue: VecDeque<Result<StreamEvent, LlmError>>,
    finished: bool,
    idle: Option<Duration>,
}

/// Decodes an SSE byte stream with `decoder`. With `idle`, a gap between two chunks longer
/// than it ends the stream with `Err(Timeout)`. After an error the stream ends.
pub(crate) fn decode_events<D: EventDecoder>(
    bytes: ByteStream,
    decoder: D,
    idle: Option<Duration>,
) -> ChatStream {
    let state = DecodeState {
        bytes,
        sse: SseDecoder::new(),
        decoder,
        queue: VecDeque::new(),
        finished: false,
        idle,
    };
    Box::pin(futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(item) = st.queue.pop_front() {
                return Some((item, st));
            }
            if st.finished {
                return None;
            }
            let next = match st.idle {
                Some(idle) => match tokio::time::timeout(idle, st.bytes.next()).await {
                    Ok(n) => n,
                    Err(_) => Some(Err(LlmError::Timeout)),
                },
                None => st.bytes.next().await,
            };
            let mut out = Vec::new();
            let result = match next {
                Some(Ok(chunk)) => {
                    let mut result = Ok(());
                    for event in st.sse.push(&chunk) {
                        result = st.decoder.on_data(&event.data, &mut out);
                        if result.is_err() || st.decoder.is_complete() {
                            break;
                        }
                    }
                    if result.is_ok() && st.decoder.is_complete() {
                        st.finished = true;
                    }
                    result
                }
                Some(Err(e)) => {
                    st.finished = true;
                    Err(e)
                }
                None => {
                    st.finished = true;
                    let mut result = Ok(());
                    if let Some(event) = st.sse.finish() {
                        result = st.decoder.on_data(&event.data, &mut out);
                    }
                    if result.is_ok() {
                        result = st.decoder.on_end(&mut out);
                    }
                    result
                }
            };
            st.queue.extend(out.into_iter().map(Ok));
            if let Err(e) = result {
                st.finished = true;
                st.queue.push_back(Err(e));
            }
        }
    }))
}

/// Events decoded from a whole (non-streamed) body, as a stream.
pub(crate) fn ready_stream(events: Vec<StreamEvent>) -> ChatStream {
    Box::pin(futures::stream::iter(events.into_iter().map(Ok)))
}

/// Prefix of tool-call ids we assign ourselves when a provider sends none. Such ids are never
/// sent to Gemini as `functionCall.id` / `functionResponse.id`.
pub(crate) const LOCAL_CALL_ID_PREFIX: &str = "call_sparky_";

/// A fresh local tool-call id: `call_sparky_<n>_<random>` (at most 40 characters, which is
/// OpenAI's limit for ids it accepts back).
pub(crate) fn local_call_id(n: usize) -> String {
    let random: u64 = rand::random();
    format!(
        "{LOCAL_CALL_ID_PREFIX}{n}_{:012x}",
        random & 0xffff_ffff_ffff
    )
}
