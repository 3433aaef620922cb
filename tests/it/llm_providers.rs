//! Both providers through the real HTTP client (and the `Resilient` wrapper) against the
//! strict fake servers of `support/fake_llm.rs`.

use crate::support::fake_llm;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use fake_llm::{Dialect, FakeLlm, Reply, FAKE_KEY, FAKE_MODEL};
use futures::StreamExt;
use serde_json::{json, Value};
use sparky::config::{Config, Secret};
use sparky::llm::gemini::GeminiProvider;
use sparky::llm::openai::OpenAiProvider;
use sparky::llm::{
    build_provider, ChatMessage, ChatProvider, ChatRequest, ChatStream, FinishReason, LlmError,
    Resilient, RetryPolicy, StreamEvent, StreamTimeouts, TimeoutStage, ToolCall, ToolResult,
    ToolSpec,
};

const DIALECTS: [Dialect; 2] = [Dialect::OpenAi, Dialect::Gemini];

fn provider(fake: &FakeLlm, timeouts: impl Into<StreamTimeouts>) -> Arc<dyn ChatProvider> {
    let timeouts = timeouts.into();
    let key = Some(Secret::new(FAKE_KEY));
    match fake.dialect() {
        Dialect::OpenAi => Arc::new(OpenAiProvider::new(
            fake.base_url(),
            FAKE_MODEL,
            key,
            Some(0.2),
            timeouts,
        )),
        Dialect::Gemini => Arc::new(GeminiProvider::new(
            fake.base_url(),
            FAKE_MODEL,
            key,
            Some(0.2),
            timeouts,
        )),
    }
}

fn policy(max_retries: u32, timeout: Duration) -> RetryPolicy {
    RetryPolicy {
        timeouts: timeout.into(),
        max_retries,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(5),
    }
}

fn resilient(fake: &FakeLlm, max_retries: u32) -> Resilient {
    let timeout = Duration::from_secs(5);
    Resilient::new(provider(fake, timeout), policy(max_retries, timeout))
}

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "conductor_ampacity".into(),
            description: "Ampacity of a conductor per NEC 310.16".into(),
            parameters: json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {"size": {"type": "string"}, "material": {"type": "string", "enum": ["cu", "al"]}},
                "required": ["size"],
                "additionalProperties": false
            })
            .into(),
        },
        ToolSpec {
            name: "voltage_drop".into(),
            description: "Voltage drop of a circuit".into(),
            parameters: json!({"type": "object", "properties": {"amps": {"type": "number"}, "feet": {"type": "number"}}}).into(),
        },
    ]
}

fn request(messages: Vec<ChatMessage>) -> ChatRequest {
    ChatRequest {
        system: "You are Sparky.".into(),
        messages,
        tools: tools(),
        temperature: None,
        max_output_tokens: Some(512),
        seed: None,
        tool_choice: Default::default(),
    }
}

/// All events of a stream, and the error that ended it if any.
async fn collect(stream: ChatStream) -> (Vec<StreamEvent>, Option<LlmError>) {
    let mut events = Vec::new();
    let mut stream = stream;
    let run = async {
        while let Some(item) = stream.next().await {
            match item {
                Ok(e) => events.push(e),
                Err(e) => return Some(e),
            }
        }
        None
    };
    let err = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("stream did not finish in 20 s");
    (events, err)
}

fn text_of(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn calls_of(events: &[StreamEvent]) -> Vec<ToolCall> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

/// The assistant message a caller would store for these events.
fn assistant_from(events: &[StreamEvent]) -> ChatMessage {
    ChatMessage::Assistant {
        text: text_of(events),
        tool_calls: calls_of(events),
        thought_signature: events.iter().rev().find_map(|e| match e {
            StreamEvent::TextSignature(s) => Some(s.clone()),
            _ => None,
        }),
    }
}

#[tokio::test]
async fn text_streams_as_deltas_with_usage() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        let answer = "Per NEC 310.16, 4/0 AWG copper at 75 °C carries 230 A.";
        fake.push(Reply::Text(answer.into()));
        let stream = provider(&fake, Duration::from_secs(5))
            .stream(&request(vec![ChatMessage::user("ampacity of 4/0 cu?")]))
            .await
            .unwrap_or_else(|e| panic!("{dialect:?}: {e}"));
        let (events, err) = collect(stream).await;
        assert_eq!(err, None, "{dialect:?}");
        let deltas = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::TextDelta(_)))
            .count();
        assert!(deltas >= 2, "{dialect:?}: {events:?}");
        assert_eq!(text_of(&events), answer);
        assert!(events
            .iter()
            .any(|e| matches!(e, StreamEvent::Usage(u) if u.input_tokens > 0)));
        assert_eq!(events.last(), Some(&StreamEvent::Done(FinishReason::Stop)));
        let sent = fake.requests();
        assert_eq!(sent.len(), 1);
        let headers = &fake.request_headers()[0];
        match dialect {
            Dialect::OpenAi => {
                assert_eq!(sent[0]["messages"][0]["role"], "system");
                assert_eq!(sent[0]["stream"], true);
                assert_eq!(
                    headers.get("authorization").map(String::as_str),
                    Some("Bearer fake-key-123")
                );
            }
            Dialect::Gemini => {
                assert_eq!(
                    sent[0]["systemInstruction"]["parts"][0]["text"],
                    "You are Sparky."
                );
                assert_eq!(
                    headers.get("x-goog-api-key").map(String::as_str),
                    Some(FAKE_KEY)
                );
                assert!(events
                    .iter()
                    .any(|e| matches!(e, StreamEvent::TextSignature(_))));
            }
        }
    }
}

#[tokio::test]
async fn parallel_tool_calls_round_trip() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        let args_a = json!({"size": "4/0", "material": "cu"});
        let args_b = json!({"amps": 42.5, "feet": 150});
        fake.push(Reply::ToolCalls(vec![
            ("conductor_ampacity".into(), args_a.clone()),
            ("voltage_drop".into(), args_b.clone()),
        ]));
        fake.push(Reply::Text("230 A, and 2.1 % drop.".into()));
        let p = provider(&fake, Duration::from_secs(5));
        let mut messages = vec![ChatMessage::user("size a feeder")];
        let (events, err) = collect(
            p.stream(&request(messages.clone()))
                .await
                .unwrap_or_else(|e| panic!("{e}")),
        )
        .await;
        assert_eq!(err, None);
        let calls = calls_of(&events);
        assert_eq!(calls.len(), 2, "{dialect:?}: {events:?}");
        assert_eq!(calls[0].name, "conductor_ampacity");
        assert_eq!(
            serde_json::from_str::<Value>(&calls[0].arguments).ok(),
            Some(args_a)
        );
        assert_eq!(calls[1].name, "voltage_drop");
        assert_eq!(
            serde_json::from_str::<Value>(&calls[1].arguments).ok(),
            Some(args_b)
        );
        assert_ne!(calls[0].id, calls[1].id);
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Done(FinishReason::ToolCalls))
        );
        messages.push(assistant_from(&events));
        messages.push(ChatMessage::Tool {
            results: calls
                .iter()
                .map(|c| ToolResult {
                    call_id: c.id.clone(),
                    name: c.name.clone(),
                    content: json!({"ok": c.name}).into(),
                    is_error: false,
                })
                .collect(),
        });
        let (events, err) = collect(
            p.stream(&request(messages))
                .await
                .unwrap_or_else(|e| panic!("{dialect:?}: {e}")),
        )
        .await;
        assert_eq!(err, None);
        assert_eq!(text_of(&events), "230 A, and 2.1 % drop.");
        let sent = fake.requests();
        assert_eq!(sent.len(), 2);
        match dialect {
            Dialect::OpenAi => {
                let m = sent[1]["messages"].as_array().cloned().unwrap_or_default();
                assert_eq!(m.len(), 5);
                assert_eq!(m[3]["tool_call_id"].as_str(), Some(calls[0].id.as_str()));
                assert_eq!(m[4]["tool_call_id"].as_str(), Some(calls[1].id.as_str()));
            }
            Dialect::Gemini => {
                let c = sent[1]["contents"].as_array().cloned().unwrap_or_default();
                assert_eq!(c.len(), 3);
                assert_eq!(c[2]["role"], "user");
                assert_eq!(c[2]["parts"].as_array().map(Vec::len), Some(2));
                assert!(c[2]["parts"][0]["functionResponse"].get("id").is_none());
                assert_eq!(
                    c[1]["parts"][0]["thoughtSignature"].as_str(),
                    calls[0].thought_signature.as_deref()
                );
                assert!(c[1]["parts"][1].get("thoughtSignature").is_none());
            }
        }
    }
}

#[tokio::test]
async fn gemini_thought_signature_is_echoed_and_required() {
    let fake = FakeLlm::start(Dialect::Gemini).await;
    fake.push(Reply::ToolCalls(vec![(
        "voltage_drop".into(),
        json!({"amps": 10}),
    )]));
    fake.push(Reply::Text("ok".into()));
    fake.push(Reply::Text("still ok".into()));
    let p = provider(&fake, Duration::from_secs(5));
    let mut messages = vec![ChatMessage::user("vd?")];
    let (events, _) = collect(
        p.stream(&request(messages.clone()))
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    let calls = calls_of(&events);
    let signature = calls[0].thought_signature.clone().unwrap_or_default();
    assert!(!signature.is_empty());
    let results = ChatMessage::Tool {
        results: vec![ToolResult {
            call_id: calls[0].id.clone(),
            name: "voltage_drop".into(),
            content: json!({"volts": 1.2}).into(),
            is_error: false,
        }],
    };
    // Dropping the signature is rejected, as by the real service.
    let mut stripped = calls.clone();
    stripped[0].thought_signature = None;
    let bad = vec![
        messages[0].clone(),
        ChatMessage::Assistant {
            text: String::new(),
            tool_calls: stripped,
            thought_signature: None,
        },
        results.clone(),
    ];
    let err = p.stream(&request(bad)).await.err();
    assert!(
        matches!(err, Some(LlmError::InvalidRequest(ref m)) if m.contains("thought_signature")),
        "{err:?}"
    );
    // Echoed unchanged: accepted; the text signature of the answer is echoed next time.
    messages.push(assistant_from(&events));
    messages.push(results);
    let (events, err) = collect(
        p.stream(&request(messages.clone()))
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(err, None);
    messages.push(assistant_from(&events));
    messages.push(ChatMessage::user("thanks"));
    let (_, err) = collect(
        p.stream(&request(messages))
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(err, None);
    let sent = fake.requests();
    assert_eq!(
        sent[2]["contents"][1]["parts"][0]["thoughtSignature"],
        json!(signature)
    );
    let text_sig = &sent[3]["contents"][3]["parts"][0]["thoughtSignature"];
    assert!(
        text_sig.as_str().is_some_and(|s| !s.is_empty()),
        "{}",
        sent[3]
    );
}

#[tokio::test]
async fn rate_limit_with_retry_after_is_honoured_then_succeeds() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        fake.push(Reply::Status {
            code: 429,
            body: json!("Rate limit reached for requests"),
            retry_after_secs: Some(1),
        });
        fake.push(Reply::Text("ok".into()));
        let started = Instant::now();
        let stream = resilient(&fake, 2)
            .stream(&request(vec![ChatMessage::user("hi")]))
            .await
            .unwrap_or_else(|e| panic!("{dialect:?}: {e}"));
        let (events, err) = collect(stream).await;
        assert_eq!(err, None);
        assert_eq!(text_of(&events), "ok");
        assert_eq!(fake.requests().len(), 2);
        assert!(
            started.elapsed() >= Duration::from_millis(950),
            "{:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn server_error_then_success_is_retried() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        fake.push(Reply::Status {
            code: 500,
            body: json!("internal error"),
            retry_after_secs: None,
        });
        fake.push(Reply::Text("recovered".into()));
        let stream = resilient(&fake, 2)
            .stream(&request(vec![ChatMessage::user("hi")]))
            .await
            .unwrap_or_else(|e| panic!("{dialect:?}: {e}"));
        let (events, _) = collect(stream).await;
        assert_eq!(text_of(&events), "recovered");
        assert_eq!(fake.requests().len(), 2);
    }
}

#[tokio::test]
async fn overloaded_until_retries_run_out() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        for _ in 0..3 {
            fake.push(Reply::Status {
                code: 503,
                body: json!("The model is overloaded. Please try again later."),
                retry_after_secs: None,
            });
        }
        let err = resilient(&fake, 2)
            .stream(&request(vec![ChatMessage::user("hi")]))
            .await
            .err();
        assert!(
            matches!(err, Some(LlmError::Overloaded(ref m)) if m.contains("overloaded")),
            "{dialect:?}: {err:?}"
        );
        assert_eq!(fake.requests().len(), 3);
    }
}

#[tokio::test]
async fn non_transient_errors_are_not_retried() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        fake.push(Reply::Status {
            code: 401,
            body: json!("Incorrect API key provided"),
            retry_after_secs: None,
        });
        let err = resilient(&fake, 3)
            .stream(&request(vec![ChatMessage::user("hi")]))
            .await
            .err();
        assert!(
            matches!(err, Some(LlmError::Auth(_))),
            "{dialect:?}: {err:?}"
        );
        assert_eq!(fake.requests().len(), 1);
    }
}

#[tokio::test]
async fn stall_times_out_within_the_configured_timeout() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        fake.push(Reply::Stall);
        let timeout = Duration::from_millis(800);
        let r = Resilient::new(provider(&fake, Duration::from_secs(30)), policy(0, timeout));
        let started = Instant::now();
        let err = r
            .stream(&request(vec![ChatMessage::user("hi")]))
            .await
            .err();
        assert!(
            is_timeout(&err, TimeoutStage::FirstByte),
            "{dialect:?}: {err:?}"
        );
        let took = started.elapsed();
        assert!(took >= timeout && took < Duration::from_secs(3), "{took:?}");
        // The provider alone applies its own timeout too.
        fake.push(Reply::Stall);
        let p = provider(&fake, timeout);
        let result = p.stream(&request(vec![ChatMessage::user("hi")])).await;
        let err = match result {
            Err(e) => Some(e),
            Ok(s) => collect(s).await.1,
        };
        assert!(
            is_timeout(&err, TimeoutStage::FirstByte),
            "{dialect:?}: {err:?}"
        );
    }
}

/// Whether `err` is a timeout of `stage`.
fn is_timeout(err: &Option<LlmError>, stage: TimeoutStage) -> bool {
    matches!(err, Some(LlmError::Timeout(t)) if t.stage == stage)
}

/// Bounds for the tests of the stages: each small, and told apart.
fn staged(first_byte_ms: u64, idle_ms: u64, overall_ms: u64) -> StreamTimeouts {
    StreamTimeouts {
        connect: Duration::from_secs(2),
        first_byte: Duration::from_millis(first_byte_ms),
        idle: Duration::from_millis(idle_ms),
        overall: Duration::from_millis(overall_ms),
    }
}

/// A server that reads the prompt for longer than any gap of a stream may last, then streams,
/// is waited for: the first byte has its own, longer bound (a local model on a CPU thinks for
/// minutes before its first token). The provider alone and under `Resilient`.
#[tokio::test]
async fn a_slow_first_byte_is_waited_for_longer_than_a_gap() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        let answer = || {
            Reply::After(
                Duration::from_millis(900),
                Box::new(Reply::Text("230 A".into())),
            )
        };
        fake.push(answer());
        fake.push(answer());
        let timeouts = staged(3_000, 300, 10_000);
        let alone = provider(&fake, timeouts);
        let wrapped = Resilient::new(
            provider(&fake, timeouts),
            RetryPolicy {
                timeouts,
                ..policy(0, timeouts.first_byte)
            },
        );
        for p in [alone.as_ref(), &wrapped as &dyn ChatProvider] {
            let stream = p
                .stream(&request(vec![ChatMessage::user("hi")]))
                .await
                .unwrap_or_else(|e| panic!("{dialect:?}: {e}"));
            let (events, err) = collect(stream).await;
            assert_eq!(err, None, "{dialect:?}");
            assert_eq!(text_of(&events), "230 A", "{dialect:?}");
        }
    }
}

/// A server that sends nothing within the first-byte bound is tried once more, not
/// `max_retries` times, and the error names the bound and its setting.
#[tokio::test]
async fn a_first_byte_timeout_is_retried_once_and_names_its_setting() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        for _ in 0..4 {
            fake.push(Reply::After(
                Duration::from_secs(5),
                Box::new(Reply::Text("late".into())),
            ));
        }
        let timeouts = staged(400, 5_000, 20_000);
        let r = Resilient::new(
            provider(&fake, timeouts),
            RetryPolicy {
                timeouts,
                ..policy(3, timeouts.first_byte)
            },
        );
        let started = Instant::now();
        let err = r
            .stream(&request(vec![ChatMessage::user("hi")]))
            .await
            .err();
        assert!(
            is_timeout(&err, TimeoutStage::FirstByte),
            "{dialect:?}: {err:?}"
        );
        assert_eq!(fake.requests().len(), 2, "{dialect:?}");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        let text = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("llm.first_byte_timeout_secs"), "{text}");
    }
}

/// Once the answer streams, a silence longer than the idle bound ends it, and so does the
/// whole call's cap however steadily it streams.
#[tokio::test]
async fn a_stream_is_bounded_by_its_gaps_and_by_its_cap() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        let pieces = |n: usize| (0..n).map(|i| format!("{i} ")).collect::<Vec<_>>();
        fake.push(Reply::PacedText {
            pieces: pieces(3),
            gap: Duration::from_millis(900),
        });
        fake.push(Reply::PacedText {
            pieces: pieces(20),
            gap: Duration::from_millis(150),
        });
        for (timeouts, stage) in [
            (staged(3_000, 300, 10_000), TimeoutStage::Idle),
            (staged(3_000, 1_000, 1_000), TimeoutStage::Overall),
        ] {
            let r = Resilient::new(
                provider(&fake, timeouts),
                RetryPolicy {
                    timeouts,
                    ..policy(0, timeouts.first_byte)
                },
            );
            let stream = r
                .stream(&request(vec![ChatMessage::user("hi")]))
                .await
                .unwrap_or_else(|e| panic!("{dialect:?}: {e}"));
            let (events, err) = collect(stream).await;
            assert!(
                text_of(&events).starts_with("0 "),
                "{dialect:?}: {events:?}"
            );
            assert!(is_timeout(&err, stage), "{dialect:?} {stage:?}: {err:?}");
        }
    }
}

/// A provider that sends one text event and then never anything again.
struct StallsAfterOneEvent;

#[async_trait]
impl ChatProvider for StallsAfterOneEvent {
    fn name(&self) -> String {
        "test:stall".into()
    }
    async fn stream(&self, _: &ChatRequest) -> Result<ChatStream, LlmError> {
        let first = futures::stream::iter([Ok(StreamEvent::TextDelta("Hel".into()))]);
        Ok(Box::pin(first.chain(futures::stream::pending())))
    }
}

#[tokio::test]
async fn a_stream_stalling_mid_way_ends_with_timeout() {
    let r = Resilient::new(
        Arc::new(StallsAfterOneEvent),
        policy(3, Duration::from_millis(300)),
    );
    let started = Instant::now();
    let stream = r
        .stream(&request(vec![ChatMessage::user("hi")]))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (events, err) = collect(stream).await;
    assert_eq!(events, vec![StreamEvent::TextDelta("Hel".into())]);
    assert!(is_timeout(&err, TimeoutStage::Idle), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn cut_mid_stream_errors_and_is_not_retried() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        fake.push(Reply::CutMidStream("The answer is 230 amperes".into()));
        fake.push(Reply::Text("must not be used".into()));
        let stream = resilient(&fake, 3)
            .stream(&request(vec![ChatMessage::user("hi")]))
            .await
            .unwrap_or_else(|e| panic!("{dialect:?}: {e}"));
        let (events, err) = collect(stream).await;
        assert!(
            text_of(&events).starts_with("The answer"),
            "{dialect:?}: {events:?}"
        );
        assert!(
            matches!(err, Some(LlmError::Transport(_))),
            "{dialect:?}: {err:?}"
        );
        assert_eq!(fake.requests().len(), 1, "{dialect:?}");
        assert_eq!(fake.remaining(), 1);
    }
}

#[tokio::test]
async fn fallback_provider_answers_when_the_primary_keeps_failing() {
    for (primary_dialect, fallback_dialect) in [
        (Dialect::OpenAi, Dialect::Gemini),
        (Dialect::Gemini, Dialect::OpenAi),
    ] {
        let primary = FakeLlm::start(primary_dialect).await;
        let fallback = FakeLlm::start(fallback_dialect).await;
        for _ in 0..2 {
            primary.push(Reply::Status {
                code: 502,
                body: json!("bad gateway"),
                retry_after_secs: None,
            });
        }
        fallback.push(Reply::Text("from the fallback".into()));
        let timeout = Duration::from_secs(5);
        let r = Resilient::new(provider(&primary, timeout), policy(1, timeout))
            .with_fallback(provider(&fallback, timeout));
        assert!(r.name().contains("fallback"));
        let stream = r
            .stream(&request(vec![ChatMessage::user("hi")]))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let (events, err) = collect(stream).await;
        assert_eq!(err, None);
        assert_eq!(text_of(&events), "from the fallback");
        assert_eq!(primary.requests().len(), 2);
        assert_eq!(fallback.requests().len(), 1);
    }
}

#[tokio::test]
async fn fake_is_strict_about_unanswered_calls_and_bad_schemas() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        fake.push(Reply::Text("never sent".into()));
        let p = provider(&fake, Duration::from_secs(5));
        let unanswered = vec![
            ChatMessage::user("q"),
            ChatMessage::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call_abc".into(),
                    name: "voltage_drop".into(),
                    arguments: "{}".into(),
                    thought_signature: None,
                }],
                thought_signature: None,
            },
            ChatMessage::user("and?"),
        ];
        let err = p.stream(&request(unanswered)).await.err();
        assert!(
            matches!(err, Some(LlmError::InvalidRequest(_))),
            "{dialect:?}: {err:?}"
        );
        let mut bad_schema = request(vec![ChatMessage::user("q")]);
        bad_schema.tools[0].parameters = json!({"type": "string"}).into();
        let err = p.stream(&bad_schema).await.err();
        assert!(
            matches!(err, Some(LlmError::InvalidRequest(ref m)) if m.contains("object")),
            "{dialect:?}: {err:?}"
        );
        assert_eq!(fake.remaining(), 1);
    }
}

#[tokio::test]
async fn keys_are_sent_only_when_configured() {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    fake.push(Reply::Text("local model".into()));
    let p = OpenAiProvider::new(
        fake.base_url(),
        "llama3.1",
        None,
        None,
        Duration::from_secs(5),
    );
    let (events, _) = collect(
        p.stream(&request(vec![ChatMessage::user("hi")]))
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(text_of(&events), "local model");
    assert!(!fake.request_headers()[0].contains_key("authorization"));

    let fake = FakeLlm::start(Dialect::Gemini).await;
    let p = GeminiProvider::new(
        fake.base_url(),
        FAKE_MODEL,
        None,
        None,
        Duration::from_secs(5),
    );
    let err = p
        .stream(&request(vec![ChatMessage::user("hi")]))
        .await
        .err();
    assert!(matches!(err, Some(LlmError::Auth(_))), "{err:?}");
    let p = GeminiProvider::new(
        fake.base_url(),
        FAKE_MODEL,
        Some(Secret::new("wrong")),
        None,
        Duration::from_secs(5),
    );
    let err = p
        .stream(&request(vec![ChatMessage::user("hi")]))
        .await
        .err();
    assert!(
        matches!(err, Some(LlmError::Auth(ref m)) if m.contains("API key not valid")),
        "{err:?}"
    );
}

#[tokio::test]
async fn gemini_error_fixtures_over_http() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/llm/gemini");
    let load = |name: &str| -> Value {
        let text = std::fs::read_to_string(format!("{dir}/{name}")).expect("fixture");
        serde_json::from_str(&text).expect("fixture JSON")
    };
    let fake = FakeLlm::start(Dialect::Gemini).await;
    let p = provider(&fake, Duration::from_secs(5));
    type Check = fn(&LlmError) -> bool;
    let cases: [(&str, u16, Check); 4] = [
        ("error-400.api-key-invalid.json", 400, |e| {
            matches!(e, LlmError::Auth(_))
        }),
        ("error-403.service-disabled.json", 403, |e| {
            matches!(e, LlmError::Auth(_))
        }),
        ("error-404.model-not-found.json", 404, |e| {
            matches!(e, LlmError::InvalidRequest(_))
        }),
        ("error-429.quota-exceeded.json", 429, |e| {
            *e == LlmError::RateLimited { retry_after: None }
        }),
    ];
    for (name, code, check) in cases {
        fake.push(Reply::Status {
            code,
            body: load(name),
            retry_after_secs: None,
        });
        let err = p
            .stream(&request(vec![ChatMessage::user("hi")]))
            .await
            .err();
        assert!(err.as_ref().is_some_and(check), "{name}: {err:?}");
    }
    fake.push(Reply::Status {
        code: 429,
        body: load("error-429.quota-exceeded.json"),
        retry_after_secs: Some(17),
    });
    let err = p
        .stream(&request(vec![ChatMessage::user("hi")]))
        .await
        .err();
    assert_eq!(
        err,
        Some(LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(17))
        })
    );
}

#[tokio::test]
async fn raw_tool_call_arguments_are_passed_through() {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    fake.push(Reply::RawToolCall {
        name: "voltage_drop".into(),
        arguments: "{\"amps\": 12, \"feet\":".into(),
    });
    let p = provider(&fake, Duration::from_secs(5));
    let (events, _) = collect(
        p.stream(&request(vec![ChatMessage::user("hi")]))
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    let calls = calls_of(&events);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].arguments, "{\"amps\": 12, \"feet\":");

    let fake = FakeLlm::start(Dialect::Gemini).await;
    fake.push(Reply::RawToolCall {
        name: "voltage_drop".into(),
        arguments: "{\"amps\": 12, \"feet\":".into(),
    });
    let p = provider(&fake, Duration::from_secs(5));
    let (events, err) = collect(
        p.stream(&request(vec![ChatMessage::user("hi")]))
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(err, None);
    assert!(calls_of(&events).is_empty());
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Done(FinishReason::MalformedToolCall))
    );
}

#[tokio::test]
async fn build_provider_reaches_the_fake_from_env() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        fake.push(Reply::Text("configured".into()));
        let mut env: std::collections::BTreeMap<String, String> = fake.env().into_iter().collect();
        env.insert("SPARKY_LLM__MAX_RETRIES".into(), "0".into());
        let config = Config::load(None, &env).unwrap_or_else(|e| panic!("{e}"));
        let p = build_provider(&config).expect("a provider");
        assert!(p.name().contains(FAKE_MODEL));
        let (events, err) = collect(
            p.stream(&request(vec![ChatMessage::user("hi")]))
                .await
                .unwrap_or_else(|e| panic!("{e}")),
        )
        .await;
        assert_eq!(err, None);
        assert_eq!(text_of(&events), "configured");
    }
}

/// The configured temperature (0.2 in the shipped configuration) and one a request sets go
/// out as written, on both wire formats: `0.2`, not the `0.20000000298023224` of an `f32`
/// widened on the way.
#[tokio::test]
async fn temperature_goes_out_as_written() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        fake.push(Reply::Text("one".into()));
        fake.push(Reply::Text("two".into()));
        let mut env: std::collections::BTreeMap<String, String> = fake.env().into_iter().collect();
        env.insert("SPARKY_LLM__MAX_RETRIES".into(), "0".into());
        let config = Config::load(None, &env).unwrap_or_else(|e| panic!("{e}"));
        let p = build_provider(&config).expect("a provider");
        let mut asked = request(vec![ChatMessage::user("hi")]);
        for temperature in [None, Some(0.7)] {
            asked.temperature = temperature;
            let stream = p.stream(&asked).await.unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(collect(stream).await.1, None, "{dialect:?}");
        }
        let raw = fake.raw_requests();
        assert_eq!(raw.len(), 2, "{dialect:?}");
        for (body, written) in raw.iter().zip(["0.2", "0.7"]) {
            let sent = format!("\"temperature\":{written}");
            let at = body
                .find(&sent)
                .unwrap_or_else(|| panic!("{dialect:?}: no {sent} in {body}"));
            let next = body[at + sent.len()..].chars().next();
            assert!(matches!(next, Some(',' | '}')), "{dialect:?}: {body}");
        }
    }
}

#[tokio::test]
async fn empty_script_answers_500() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        let err = provider(&fake, Duration::from_secs(5))
            .stream(&request(vec![ChatMessage::user("hi")]))
            .await
            .err();
        assert!(
            matches!(err, Some(LlmError::Overloaded(ref m)) if m.contains("script exhausted")),
            "{err:?}"
        );
    }
}

#[tokio::test]
async fn connection_refused_is_a_transport_error_and_retried() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let timeout = Duration::from_secs(2);
    let p = Arc::new(OpenAiProvider::new(
        format!("http://127.0.0.1:{port}/v1"),
        FAKE_MODEL,
        None,
        None,
        timeout,
    ));
    let err = p
        .stream(&request(vec![ChatMessage::user("hi")]))
        .await
        .err();
    assert!(matches!(err, Some(LlmError::Transport(_))), "{err:?}");
    // Transient: the wrapper retries it, then falls back.
    let fallback = FakeLlm::start(Dialect::Gemini).await;
    fallback.push(Reply::Text("fallback".into()));
    let r = Resilient::new(p, policy(1, timeout)).with_fallback(provider(&fallback, timeout));
    let (events, _) = collect(
        r.stream(&request(vec![ChatMessage::user("hi")]))
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(text_of(&events), "fallback");
}

#[tokio::test]
async fn hostile_retry_after_values_are_capped_or_ignored_not_a_panic() {
    use sparky::retry_after::MAX_WAIT;
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        let p = provider(&fake, Duration::from_secs(5));
        let cases = [
            ("1e300", Some(MAX_WAIT)),
            ("inf", Some(MAX_WAIT)),
            ("NaN", None),
            ("-3", None),
            ("2", Some(Duration::from_secs(2))),
        ];
        for (wait, expected) in cases {
            fake.push(Reply::RateLimitedFor(wait.into()));
            // A panic inside the provider would abort this task and fail the test.
            let err = tokio::spawn({
                let p = p.clone();
                async move {
                    p.stream(&request(vec![ChatMessage::user("hi")]))
                        .await
                        .err()
                }
            })
            .await
            .unwrap_or_else(|e| panic!("{dialect:?} Retry-After {wait}: {e}"));
            assert_eq!(
                err,
                Some(LlmError::RateLimited {
                    retry_after: expected
                }),
                "{dialect:?} Retry-After {wait}"
            );
        }
        // Through the retrying wrapper a wait longer than the policy's cap is not sat out
        // (nor cut short: an early retry would only be refused again). The turn fails at once
        // with the wait named, and no second request is sent.
        fake.push(Reply::RateLimitedFor("1e300".into()));
        fake.push(Reply::Text("never asked for".into()));
        let before = fake.requests().len();
        let timeout = Duration::from_secs(5);
        let r = Resilient::new(
            provider(&fake, timeout),
            RetryPolicy {
                max_delay: Duration::from_millis(50),
                ..policy(3, timeout)
            },
        );
        let started = Instant::now();
        let err = r
            .stream(&request(vec![ChatMessage::user("hi")]))
            .await
            .err();
        assert_eq!(
            err,
            Some(LlmError::RateLimited {
                retry_after: Some(MAX_WAIT)
            }),
            "{dialect:?}"
        );
        assert_eq!(fake.requests().len(), before + 1, "{dialect:?}");
        assert!(started.elapsed() < Duration::from_secs(3), "{dialect:?}");
    }
}
