//! HTTP plumbing shared by the wire formats: sending with a deadline, mapping error answers,
//! and turning a streamed body into [`StreamEvent`]s through a format-specific decoder.

use std::collections::VecDeque;
use std::pin::Pin;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};

use super::errors::{self, ErrorDialect};
use super::sse::SseDecoder;
use super::timeouts::CallClock;
use super::{ChatStream, LlmError, StreamEvent, StreamTimeouts, TimeoutStage};

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

/// Where one provider's requests go, through reqwest's pooled client (TLS, HTTP/2, proxies).
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    url: String,
    client: reqwest::Client,
    /// Bounds connecting, the first byte, every gap of a stream and the whole stream.
    timeouts: StreamTimeouts,
}

impl Endpoint {
    /// Requests to `url`, each stage bounded by `timeouts`.
    pub(crate) fn new(url: String, timeouts: StreamTimeouts) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(timeouts.connect)
            .user_agent(USER_AGENT_VALUE)
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Self {
            url,
            client,
            timeouts,
        }
    }

    /// The URL requests go to.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// POSTs the JSON `body` with `headers` and decodes the answer: an event stream through
    /// `decoder` (a late first byte, a long gap or a call past its cap ends it with
    /// `Err(Timeout)` naming the bound), or a whole JSON document (a server that ignored
    /// streaming) through `whole`.
    pub(crate) async fn stream<D: EventDecoder>(
        &self,
        headers: &[(HeaderName, HeaderValue)],
        body: Vec<u8>,
        dialect: ErrorDialect,
        decoder: D,
        whole: impl FnOnce(&serde_json::Value) -> Result<Vec<StreamEvent>, LlmError>,
    ) -> Result<ChatStream, LlmError> {
        let clock = CallClock::start(self.timeouts);
        let response = self.post_json(headers, body, dialect, &clock).await?;
        if is_json(&response) {
            let bytes = clock
                .within(response.bytes())
                .await?
                .map_err(|e| errors::from_reqwest(&e))?;
            let value = serde_json::from_slice(&bytes)
                .map_err(|e| LlmError::Protocol(format!("invalid JSON body: {e}")))?;
            return Ok(ready_stream(whole(&value)?));
        }
        let bytes: ByteStream = Box::pin(
            response
                .bytes_stream()
                .map(|r| r.map_err(|e| stream_error(&e))),
        );
        Ok(decode_events(bytes, decoder, Some(clock)))
    }

    /// POSTs the JSON `body` with `headers`, waiting for the response headers until the
    /// first-byte deadline of `clock`, and maps an error status (with its body, read within
    /// the same deadline) to a typed error.
    async fn post_json(
        &self,
        headers: &[(HeaderName, HeaderValue)],
        body: Vec<u8>,
        dialect: ErrorDialect,
        clock: &CallClock,
    ) -> Result<reqwest::Response, LlmError> {
        let mut request = self
            .client
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let response = match clock.within(request.send()).await? {
            // Connecting is the only stage reqwest itself bounds.
            Err(e) if e.is_timeout() => return Err(self.timeouts.error(TimeoutStage::Connect)),
            Err(e) => return Err(errors::from_reqwest(&e)),
            Ok(r) => r,
        };
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(response);
        }
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = match clock.within(response.bytes()).await {
            Ok(Ok(b)) => String::from_utf8_lossy(&b).into_owned(),
            _ => String::new(),
        };
        Err(errors::from_http_status(
            dialect,
            status,
            retry_after.as_deref(),
            &body,
        ))
    }
}

/// A header value carrying a credential: kept out of debug output, refused with a clear error
/// when it holds characters a header cannot.
pub(crate) fn secret_header(value: &str) -> Result<HeaderValue, LlmError> {
    let mut value = HeaderValue::from_str(value).map_err(|_| {
        LlmError::Auth("the API key holds characters an HTTP header cannot carry".into())
    })?;
    value.set_sensitive(true);
    Ok(value)
}

const USER_AGENT_VALUE: &str = concat!("sparky/", env!("CARGO_PKG_VERSION"));

/// Whether the body is a plain JSON document rather than an event stream (servers that ignore
/// `stream: true`, or Gemini without `alt=sse`).
fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.trim_start().starts_with("application/json"))
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
    clock: Option<CallClock>,
}

/// Decodes an SSE byte stream with `decoder`. With `clock`, a first chunk later than its
/// first-byte deadline, a later gap longer than its idle bound, or a stream past its cap ends
/// the stream with `Err(Timeout)` naming that bound. After an error the stream ends.
pub(crate) fn decode_events<D: EventDecoder>(
    bytes: ByteStream,
    decoder: D,
    clock: Option<CallClock>,
) -> ChatStream {
    let state = DecodeState {
        bytes,
        sse: SseDecoder::new(),
        decoder,
        queue: VecDeque::new(),
        finished: false,
        clock,
    };
    Box::pin(futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(item) = st.queue.pop_front() {
                return Some((item, st));
            }
            if st.finished {
                return None;
            }
            let next = match st.clock.as_mut() {
                Some(clock) => {
                    let next = clock
                        .within(st.bytes.next())
                        .await
                        .unwrap_or_else(|e| Some(Err(e)));
                    clock.seen();
                    next
                }
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
