//! The recorded provider payloads in `tests/fixtures/llm/` decode to the expected neutral
//! events, our encoders produce the recorded request shapes, and the fake servers stream in
//! the recorded shapes and are decoded by the very same code.

use crate::support::fake_llm;

use std::collections::BTreeSet;

use bytes::Bytes;
use fake_llm::{Dialect, FakeLlm, Reply, FAKE_KEY, FAKE_MODEL};
use futures::StreamExt;
use serde_json::{json, Value};
use sparky::llm::{
    gemini, openai, ChatMessage, ChatRequest, ChatStream, FinishReason, LlmError, StreamEvent,
    ToolCall, ToolResult, ToolSpec, Usage,
};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/llm");

fn bytes(name: &str) -> Vec<u8> {
    std::fs::read(format!("{DIR}/{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn json_fixture(name: &str) -> Value {
    serde_json::from_slice(&bytes(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

async fn collect(stream: ChatStream) -> Result<Vec<StreamEvent>, LlmError> {
    let mut out = Vec::new();
    let mut stream = stream;
    while let Some(item) = stream.next().await {
        out.push(item?);
    }
    Ok(out)
}

fn chunks_of(data: &[u8], cuts: &[usize]) -> Vec<Result<Bytes, LlmError>> {
    let mut out = Vec::new();
    let mut start = 0;
    for &cut in cuts {
        out.push(Ok(Bytes::copy_from_slice(&data[start..cut])));
        start = cut;
    }
    out.push(Ok(Bytes::copy_from_slice(&data[start..])));
    out
}

async fn decode(
    dialect: Dialect,
    data: &[u8],
    cuts: &[usize],
) -> Result<Vec<StreamEvent>, LlmError> {
    let s = futures::stream::iter(chunks_of(data, cuts));
    match dialect {
        Dialect::OpenAi => collect(openai::decode_sse(s)).await,
        Dialect::Gemini => collect(gemini::decode_sse(s)).await,
    }
}

/// Decodes whole, byte by byte, and split at every single offset: all must agree.
async fn decode_every_split(dialect: Dialect, data: &[u8]) -> Vec<StreamEvent> {
    let whole = decode(dialect, data, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let all: Vec<usize> = (1..data.len()).collect();
    let bytewise = decode(dialect, data, &all)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(normalize(&bytewise), normalize(&whole), "byte by byte");
    for cut in 0..=data.len() {
        let split = decode(dialect, data, &[cut])
            .await
            .unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        assert_eq!(normalize(&split), normalize(&whole), "split at {cut}");
    }
    whole
}

/// Locally assigned call ids are random: blank them for comparisons.
fn normalize(events: &[StreamEvent]) -> Vec<StreamEvent> {
    events
        .iter()
        .map(|e| match e {
            StreamEvent::ToolCall(c) if c.id.starts_with("call_sparky_") => {
                StreamEvent::ToolCall(ToolCall {
                    id: "local".into(),
                    ..c.clone()
                })
            }
            other => other.clone(),
        })
        .collect()
}

fn call(id: &str, name: &str, arguments: &str, sig: Option<&str>) -> StreamEvent {
    StreamEvent::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
        thought_signature: sig.map(str::to_string),
    })
}

fn usage(input_tokens: u64, output_tokens: u64) -> StreamEvent {
    StreamEvent::Usage(Usage {
        input_tokens,
        cached_input_tokens: 0,
        output_tokens,
    })
}

/// The `thoughtSignature` of part `part` of the first candidate of SSE event `event`.
fn gemini_sse_signature(name: &str, event: usize, part: usize) -> String {
    let text = String::from_utf8(bytes(name)).unwrap_or_default();
    let data: Vec<&str> = text
        .split("\r\n\r\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .collect();
    let v: Value = serde_json::from_str(data[event]).unwrap_or_default();
    v["candidates"][0]["content"]["parts"][part]["thoughtSignature"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn openai_stream_single_tool_call() {
    let events = decode_every_split(
        Dialect::OpenAi,
        &bytes("openai/chat-stream.tool-call.gpt-4o.sse"),
    )
    .await;
    assert_eq!(
        events,
        vec![
            call(
                "call_CTf1nWJLqSeRgDqaCG27xZ74",
                "get_weather",
                r#"{"city":"San Francisco","state":"CA"}"#,
                None
            ),
            usage(48, 19),
            StreamEvent::Done(FinishReason::ToolCalls),
        ]
    );
}

#[tokio::test]
async fn openai_stream_parallel_tool_calls() {
    let events = decode_every_split(
        Dialect::OpenAi,
        &bytes("openai/chat-stream.parallel-tool-calls.gpt-4o.sse"),
    )
    .await;
    assert_eq!(
        events,
        vec![
            call(
                "call_JMW1whyEaYG438VE1OIflxA2",
                "GetWeatherArgs",
                r#"{"city": "Edinburgh", "country": "GB", "units": "c"}"#,
                None
            ),
            call(
                "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                "get_stock_price",
                r#"{"ticker": "AAPL", "exchange": "NASDAQ"}"#,
                None
            ),
            usage(149, 60),
            StreamEvent::Done(FinishReason::ToolCalls),
        ]
    );
}

#[tokio::test]
async fn openai_stream_with_crlf_line_endings_decodes_the_same() {
    let lf = bytes("openai/chat-stream.parallel-tool-calls.gpt-4o.sse");
    let crlf = String::from_utf8(lf.clone())
        .unwrap_or_default()
        .replace('\n', "\r\n");
    let a = decode(Dialect::OpenAi, &lf, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let b = decode(Dialect::OpenAi, crlf.as_bytes(), &[7, 500, 501])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(a, b);
}

#[tokio::test]
async fn openai_truncated_stream_is_an_error() {
    let data = bytes("openai/chat-stream.tool-call.gpt-4o.sse");
    // Cut before the finish_reason chunk: the turn never finished.
    let text = String::from_utf8(data).unwrap_or_default();
    let cut = text.find("\"finish_reason\":\"tool_calls\"").unwrap_or(0);
    let cut = text[..cut].rfind("data: ").unwrap_or(0);
    let err = decode(Dialect::OpenAi, &text.as_bytes()[..cut], &[])
        .await
        .err();
    assert!(matches!(err, Some(LlmError::Transport(_))), "{err:?}");
}

#[test]
fn openai_non_streamed_completions() {
    let events = openai::decode_completion(&json_fixture(
        "openai/chat-completion.parallel-tool-calls.gpt-4o.json",
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        events,
        vec![
            call(
                "call_fdNz3vOBKYgOIpMdWotB9MjY",
                "GetWeatherArgs",
                r#"{"city": "Edinburgh", "country": "GB", "units": "c"}"#,
                None
            ),
            call(
                "call_h1DWI1POMJLb0KwIyQHWXD4p",
                "get_stock_price",
                r#"{"ticker": "AAPL", "exchange": "NASDAQ"}"#,
                None
            ),
            usage(149, 60),
            StreamEvent::Done(FinishReason::ToolCalls),
        ]
    );
    let events = openai::decode_completion(&json_fixture(
        "openai/chat-completion.tool-call.gpt-4o.json",
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        events[0],
        call(
            "call_CUdUoJpsWWVdxXntucvnol1M",
            "get_weather",
            r#"{"city":"San Francisco","state":"CA"}"#,
            None
        )
    );
    let events = openai::decode_completion(&json_fixture(
        "openai/openapi-example.chat-tools.response.json",
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        events,
        vec![
            call(
                "call_abc123",
                "get_current_weather",
                "{\n\"location\": \"Boston, MA\"\n}",
                None
            ),
            usage(82, 17),
            StreamEvent::Done(FinishReason::ToolCalls),
        ]
    );
}

#[test]
fn openai_request_matches_the_documented_shape() {
    let example = json_fixture("openai/openapi-example.chat-tools.request.json");
    let tool = &example["tools"][0]["function"];
    let p = openai::OpenAiProvider::new(
        "https://api.openai.com/v1",
        "gpt-5.4",
        None,
        None,
        std::time::Duration::from_secs(1),
    );
    let body = p.encode_request(&ChatRequest {
        messages: vec![ChatMessage::user(
            "What is the weather like in Boston today?",
        )],
        tools: vec![ToolSpec {
            name: tool["name"].as_str().unwrap_or_default().into(),
            description: tool["description"].as_str().unwrap_or_default().into(),
            parameters: tool["parameters"].clone().into(),
        }],
        ..Default::default()
    });
    assert_eq!(body["model"], example["model"]);
    assert_eq!(body["messages"], example["messages"]);
    assert_eq!(body["tools"], example["tools"]);
}

#[tokio::test]
async fn gemini_stream_thinking_function_call() {
    let name = "gemini/stream-sse.thinking-function-call.gemini-2.5-flash.sse";
    let events = decode_every_split(Dialect::Gemini, &bytes(name)).await;
    let sig = gemini_sse_signature(name, 2, 0);
    assert!(sig.starts_with("CiIBVKhc7vB+"));
    // Thought summaries are not answer text.
    assert_eq!(
        normalize(&events),
        vec![
            call("local", "now", "{}", Some(&sig)),
            usage(38, 6 + 168),
            StreamEvent::Done(FinishReason::ToolCalls),
        ]
    );
}

#[tokio::test]
async fn gemini_stream_function_call_without_id() {
    let name = "gemini/stream-sse.function-call.gemini-3-pro-preview.sse";
    let events = decode_every_split(Dialect::Gemini, &bytes(name)).await;
    let sig = gemini_sse_signature(name, 0, 0);
    assert!(sig.starts_with("EpwICpkIAXLI"));
    assert_eq!(
        normalize(&events),
        vec![
            call("local", "get_country", "{}", Some(&sig)),
            usage(29, 10 + 202),
            StreamEvent::Done(FinishReason::ToolCalls),
        ]
    );
    // Ids we assign are unique per decode.
    let again = decode(Dialect::Gemini, &bytes(name), &[])
        .await
        .unwrap_or_default();
    assert_ne!(again[0], events[0]);
}

#[test]
fn gemini_non_streamed_responses() {
    let v = json_fixture("gemini/generate-content.thinking-function-call.gemini-2.5-pro.json");
    let sig = v["candidates"][0]["content"]["parts"][1]["thoughtSignature"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let events = gemini::decode_response(&v).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        normalize(&events),
        vec![
            call("local", "now", "{}", Some(&sig)),
            usage(38, 8 + 501),
            StreamEvent::Done(FinishReason::ToolCalls)
        ]
    );

    let events = gemini::decode_response(&json_fixture(
        "gemini/generate-content.parallel-function-calls.vertex.json",
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        normalize(&events),
        vec![
            call("local", "sum", r#"{"x":2,"y":1}"#, None),
            call("local", "sum", r#"{"x":4,"y":3}"#, None),
            call("local", "sum", r#"{"x":6,"y":5}"#, None),
            StreamEvent::Done(FinishReason::ToolCalls),
        ]
    );
    let ids: BTreeSet<String> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCall(c) => Some(c.id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ids.len(), 3);

    let events = gemini::decode_response(&json_fixture(
        "gemini/gemini-3-flash.tool-roundtrip.step2.response.json",
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        events,
        vec![
            StreamEvent::TextDelta("5 times 3".into()),
            StreamEvent::TextDelta(" is 15.".into()),
            usage(121, 9),
            StreamEvent::Done(FinishReason::Stop),
        ]
    );
}

/// The recorded round trip: decoding step 1's answer and encoding the history gives the
/// contents the recorded step 2 request sent (modulo that client's snake_case field names and
/// the empty text part it added).
#[test]
fn gemini_round_trip_reproduces_the_recorded_request() {
    let step1 = json_fixture("gemini/gemini-3-flash.tool-roundtrip.step1.response.json");
    let events = gemini::decode_response(&step1).unwrap_or_else(|e| panic!("{e}"));
    let calls: Vec<ToolCall> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Done(FinishReason::ToolCalls))
    );
    let history = vec![
        ChatMessage::user("What is 5 times 3?"),
        ChatMessage::Assistant {
            text: String::new(),
            tool_calls: calls.clone(),
            thought_signature: None,
        },
        ChatMessage::Tool {
            results: vec![ToolResult {
                call_id: calls[0].id.clone(),
                name: calls[0].name.clone(),
                content: json!({"output": "15"}).into(),
                is_error: false,
            }],
        },
    ];
    let ours = gemini::encode_contents(&history);
    let recorded = json_fixture("gemini/gemini-3-flash.tool-roundtrip.step2.request.json");
    let recorded = recorded["contents"].as_array().cloned().unwrap_or_default();
    assert_eq!(ours[0], recorded[0]);
    assert_eq!(ours[1]["role"], "model");
    let rec_call = &recorded[1]["parts"][1];
    assert_eq!(
        ours[1]["parts"][0]["functionCall"],
        rec_call["function_call"]
    );
    assert_eq!(
        ours[1]["parts"][0]["thoughtSignature"],
        rec_call["thoughtSignature"]
    );
    assert_eq!(ours[2]["role"], "user");
    assert_eq!(
        ours[2]["parts"][0]["functionResponse"],
        recorded[2]["parts"][0]["function_response"]
    );
}

// ---------------------------------------------------------------------------------------
// The fakes stream in the recorded shapes and decode through the same code.

/// Every key path of a JSON value (array elements collapsed to `[]`; tool arguments not
/// descended into, since they depend on the tool).
fn key_paths(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let path = format!("{prefix}.{k}");
                out.insert(path.clone());
                if k != "args" && k != "arguments" {
                    key_paths(child, &path, out);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                key_paths(item, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

fn sse_paths(body: &str, separator: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for event in body.split(separator) {
        if let Some(data) = event.strip_prefix("data: ") {
            if let Ok(v) = serde_json::from_str::<Value>(data) {
                key_paths(&v, "", &mut out);
            }
        }
    }
    out
}

async fn fetch_raw(fake: &FakeLlm, body: &Value) -> Vec<u8> {
    let client = reqwest::Client::new();
    let request = match fake.dialect() {
        Dialect::OpenAi => client
            .post(format!("{}/chat/completions", fake.base_url()))
            .bearer_auth(FAKE_KEY),
        Dialect::Gemini => client
            .post(format!(
                "{}/models/{FAKE_MODEL}:streamGenerateContent?alt=sse",
                fake.base_url()
            ))
            .header("x-goog-api-key", FAKE_KEY),
    };
    let response = request
        .json(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 200);
    let ct = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(ct.starts_with("text/event-stream"), "{ct}");
    response
        .bytes()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .to_vec()
}

fn sample_request() -> ChatRequest {
    ChatRequest {
        system: "sys".into(),
        messages: vec![ChatMessage::user("hi")],
        tools: vec![ToolSpec {
            name: "get_weather".into(),
            description: "weather".into(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}})
                .into(),
        }],
        temperature: Some(0.0),
        max_output_tokens: None,
        seed: None,
        tool_choice: Default::default(),
    }
}

#[tokio::test]
async fn openai_fake_streams_the_recorded_shape() {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let p = openai::OpenAiProvider::new(
        fake.base_url(),
        FAKE_MODEL,
        None,
        None,
        std::time::Duration::from_secs(5),
    );
    let body = p.encode_request(&sample_request());
    let mut recorded = sse_paths(
        &String::from_utf8(bytes("openai/chat-stream.parallel-tool-calls.gpt-4o.sse"))
            .unwrap_or_default(),
        "\n\n",
    );
    recorded.extend(sse_paths(
        &String::from_utf8(bytes("openai/chat-stream.tool-call.gpt-4o.sse")).unwrap_or_default(),
        "\n\n",
    ));

    fake.push(Reply::ToolCalls(vec![
        (
            "get_weather".into(),
            json!({"city": "Edinburgh", "country": "GB"}),
        ),
        ("get_stock_price".into(), json!({"ticker": "AAPL"})),
    ]));
    let raw = fetch_raw(&fake, &body).await;
    let text = String::from_utf8(raw.clone()).unwrap_or_default();
    assert!(text.ends_with("data: [DONE]\n\n"));
    assert!(!text.contains('\r'));
    let fake_paths = sse_paths(&text, "\n\n");
    let extra: Vec<_> = fake_paths.difference(&recorded).collect();
    assert!(
        extra.is_empty(),
        "fake uses fields the real API does not: {extra:?}"
    );
    let events = decode_every_split(Dialect::OpenAi, &raw).await;
    let calls: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolCall(_)))
        .collect();
    assert_eq!(calls.len(), 2);
    assert!(
        matches!(events[0], StreamEvent::ToolCall(ref c) if c.id.starts_with("call_") && c.id.len() == 29
        && serde_json::from_str::<Value>(&c.arguments).ok() == Some(json!({"city": "Edinburgh", "country": "GB"})))
    );
    assert!(matches!(events[2], StreamEvent::Usage(_)));
    assert_eq!(events[3], StreamEvent::Done(FinishReason::ToolCalls));

    fake.push(Reply::Text("Hello, world".into()));
    let raw = fetch_raw(&fake, &body).await;
    let events = decode_every_split(Dialect::OpenAi, &raw).await;
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Hello, world");
    assert_eq!(events.last(), Some(&StreamEvent::Done(FinishReason::Stop)));
}

#[tokio::test]
async fn gemini_fake_streams_the_recorded_shape() {
    let fake = FakeLlm::start(Dialect::Gemini).await;
    let p = gemini::GeminiProvider::new(
        fake.base_url(),
        FAKE_MODEL,
        None,
        None,
        std::time::Duration::from_secs(5),
    );
    let body = p.encode_request(&sample_request());
    let mut recorded = BTreeSet::new();
    for name in [
        "gemini/stream-sse.thinking-function-call.gemini-2.5-flash.sse",
        "gemini/stream-sse.function-call.gemini-3-pro-preview.sse",
    ] {
        recorded.extend(sse_paths(
            &String::from_utf8(bytes(name)).unwrap_or_default(),
            "\r\n\r\n",
        ));
    }

    fake.push(Reply::ToolCalls(vec![
        ("get_weather".into(), json!({"city": "Edinburgh"})),
        ("get_weather".into(), json!({"city": "Paris"})),
    ]));
    let raw = fetch_raw(&fake, &body).await;
    let text = String::from_utf8(raw.clone()).unwrap_or_default();
    assert!(text.ends_with("}\r\n\r\n"));
    assert_eq!(
        text.matches("\r\n\r\n").count(),
        text.matches("data: ").count()
    );
    let fake_paths = sse_paths(&text, "\r\n\r\n");
    let extra: Vec<_> = fake_paths.difference(&recorded).collect();
    assert!(
        extra.is_empty(),
        "fake uses fields the real API does not: {extra:?}"
    );
    let events = decode_every_split(Dialect::Gemini, &raw).await;
    let calls: Vec<ToolCall> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2);
    assert!(calls[0].thought_signature.is_some());
    assert!(calls[1].thought_signature.is_none());
    assert_eq!(calls[1].arguments, r#"{"city":"Paris"}"#);
    assert!(matches!(events[2], StreamEvent::Usage(u) if u.input_tokens > 0));
    assert_eq!(events[3], StreamEvent::Done(FinishReason::ToolCalls));

    fake.push(Reply::Text("Hello, world".into()));
    let raw = fetch_raw(&fake, &body).await;
    let events = decode_every_split(Dialect::Gemini, &raw).await;
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Hello, world");
    assert!(events
        .iter()
        .any(|e| matches!(e, StreamEvent::TextSignature(_))));
    assert_eq!(events.last(), Some(&StreamEvent::Done(FinishReason::Stop)));
}
