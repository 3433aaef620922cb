//! The outbound retry policy, seen from the servers: a scripted HTTP server answers Discord
//! REST, Slack Web API and embedding requests in their wire formats (errors, waits, silence)
//! and counts what it receives.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use sparky::http_policy::RetryPolicy;
use sparky::platforms::discord::rest::Rest;
use sparky::platforms::slack::SlackApi;
use sparky::platforms::surface::SurfaceError;
use sparky::rag::embed::openai::OpenAiEmbedder;
use sparky::rag::embed::{EmbedError, EmbedKind, Embedder};

/// One scripted answer.
#[derive(Clone)]
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Value,
    delay: Duration,
}

fn reply(status: u16, body: Value) -> Reply {
    Reply {
        status,
        headers: Vec::new(),
        body,
        delay: Duration::ZERO,
    }
}

impl Reply {
    fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_string()));
        self
    }

    fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

#[derive(Default)]
struct Script {
    /// Answers per "METHOD /path", used in order; the default answer when empty.
    queued: HashMap<String, VecDeque<Reply>>,
    default: HashMap<String, Reply>,
    received: Vec<String>,
}

/// A server that answers by script and counts requests.
struct Scripted {
    url: String,
    script: Arc<Mutex<Script>>,
}

impl Scripted {
    async fn start() -> Self {
        let script = Arc::new(Mutex::new(Script::default()));
        let s = script.clone();
        let app = axum::Router::new().fallback(
            move |method: Method, uri: axum::http::Uri, _h: HeaderMap, _b: Bytes| {
                let s = s.clone();
                async move {
                    let key = format!("{method} {}", uri.path());
                    let r = {
                        let mut s = s.lock().unwrap_or_else(|p| p.into_inner());
                        s.received.push(key.clone());
                        let queued = s.queued.get_mut(&key).and_then(VecDeque::pop_front);
                        queued.or_else(|| s.default.get(&key).cloned())
                    };
                    let Some(r) = r else {
                        return (StatusCode::NOT_FOUND, format!("unscripted {key}"))
                            .into_response();
                    };
                    tokio::time::sleep(r.delay).await;
                    let mut resp: Response = (
                        StatusCode::from_u16(r.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                        axum::Json(r.body),
                    )
                        .into_response();
                    for (name, value) in r.headers {
                        if let Ok(v) = value.parse() {
                            resp.headers_mut().insert(name, v);
                        }
                    }
                    resp
                }
            },
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { url, script }
    }

    fn queue(&self, key: &str, replies: Vec<Reply>) {
        let mut s = self.script.lock().unwrap_or_else(|p| p.into_inner());
        s.queued.entry(key.to_string()).or_default().extend(replies);
    }

    fn always(&self, key: &str, r: Reply) {
        let mut s = self.script.lock().unwrap_or_else(|p| p.into_inner());
        s.default.insert(key.to_string(), r);
    }

    fn count(&self, key: &str) -> usize {
        let s = self.script.lock().unwrap_or_else(|p| p.into_inner());
        s.received.iter().filter(|k| *k == key).count()
    }
}

fn quick() -> RetryPolicy {
    RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(2),
    }
}

fn discord(server: &Scripted, timeout: Duration) -> Rest {
    Rest::with_timeout(&server.url, "token", timeout)
        .expect("client")
        .with_policy(quick())
}

fn message(id: &str) -> Value {
    json!({"id": id, "channel_id": "C1", "content": "x"})
}

#[tokio::test]
async fn discord_permanent_4xx_is_sent_once() {
    let server = Scripted::start().await;
    let post = "POST /channels/C1/messages";
    server.always(
        post,
        reply(
            403,
            json!({"message": "Missing Permissions", "code": 50013}),
        ),
    );
    let get = "GET /channels/C404";
    server.always(
        get,
        reply(404, json!({"message": "Unknown Channel", "code": 10003})),
    );
    let rest = discord(&server, Duration::from_secs(5));
    let err = rest
        .post_message("C1", &json!({"content": "hi"}))
        .await
        .expect_err("403");
    assert!(err.to_string().contains("Missing Permissions"), "{err}");
    assert_eq!(server.count(post), 1);
    assert!(rest.channel("C404").await.is_err());
    assert_eq!(server.count(get), 1);
}

#[tokio::test]
async fn discord_post_that_timed_out_is_not_repeated_but_an_edit_is() {
    let server = Scripted::start().await;
    let post = "POST /channels/C1/messages";
    server.always(
        post,
        reply(200, message("M1")).after(Duration::from_millis(600)),
    );
    let patch = "PATCH /channels/C1/messages/M1";
    server.queue(
        patch,
        vec![
            reply(200, message("M1")).after(Duration::from_millis(600)),
            reply(200, message("M1")).after(Duration::from_millis(600)),
        ],
    );
    server.always(patch, reply(200, message("M1")));
    let rest = discord(&server, Duration::from_millis(200));
    assert!(rest
        .post_message("C1", &json!({"content": "hi"}))
        .await
        .is_err());
    // Let the slow answer finish so a retry would have been counted.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        server.count(post),
        1,
        "a post that may have arrived was resent"
    );
    rest.edit_message("C1", "M1", &json!({"content": "edited"}))
        .await
        .expect("the edit goes through on the third attempt");
    assert_eq!(server.count(patch), 3);
}

#[tokio::test]
async fn discord_server_errors_repeat_only_idempotent_calls_and_waits_are_honoured() {
    let server = Scripted::start().await;
    let post = "POST /channels/C1/messages";
    server.queue(
        post,
        vec![
            reply(500, json!({"message": "Internal Server Error", "code": 0})),
            reply(503, json!({"message": "busy"})).header("retry-after", "0.05"),
            reply(
                429,
                json!({"message": "You are being rate limited.", "retry_after": 0.05, "global": false}),
            ),
        ],
    );
    server.always(post, reply(200, message("M1")));
    let rest = discord(&server, Duration::from_secs(5));
    // 500 on a post: it may have been acted on.
    assert!(rest
        .post_message("C1", &json!({"content": "a"}))
        .await
        .is_err());
    assert_eq!(server.count(post), 1);
    // 503 with a wait, then 429 with a wait: refused, so sent again.
    let m = rest
        .post_message("C1", &json!({"content": "b"}))
        .await
        .expect("posted after the waits");
    assert_eq!(m.id, "M1");
    assert_eq!(server.count(post), 4);
    let get = "GET /channels/T1";
    server.queue(get, vec![reply(502, json!({"message": "Bad Gateway"})); 2]);
    server.always(get, reply(200, json!({"id": "T1", "type": 11})));
    assert_eq!(rest.channel("T1").await.expect("read").id, "T1");
    assert_eq!(server.count(get), 3);
}

#[tokio::test]
async fn discord_post_is_resent_when_the_connection_never_opened() {
    // A port with nothing listening yet: the first attempt is refused before sending.
    let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("probe");
    let addr = probe.local_addr().expect("addr");
    drop(probe);
    let rest = Rest::with_timeout(&format!("http://{addr}"), "token", Duration::from_secs(5))
        .expect("client")
        .with_policy(RetryPolicy {
            max_retries: 5,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(2),
        });
    let hits = Arc::new(Mutex::new(0usize));
    let h = hits.clone();
    let call =
        tokio::spawn(async move { rest.post_message("C1", &json!({"content": "hi"})).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let listener = tokio::net::TcpListener::bind(addr).await.expect("rebind");
    let app = axum::Router::new().fallback(move || {
        let h = h.clone();
        async move {
            *h.lock().unwrap_or_else(|p| p.into_inner()) += 1;
            axum::Json(message("M9"))
        }
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let m = call
        .await
        .expect("task")
        .expect("posted once the server is up");
    assert_eq!(m.id, "M9");
    assert_eq!(*hits.lock().unwrap_or_else(|p| p.into_inner()), 1);
}

fn slack(server: &Scripted, timeout: Duration) -> SlackApi {
    SlackApi::new(&format!("{}/api", server.url), "xoxb-test")
        .with_policy(quick())
        .with_timeout(timeout)
}

fn posted() -> Value {
    json!({"ok": true, "channel": "C1", "ts": "1700000000.000100", "message": {"text": "x", "ts": "1700000000.000100"}})
}

#[tokio::test]
async fn slack_final_errors_and_unknown_outcomes_are_not_repeated() {
    let server = Scripted::start().await;
    let post = "POST /api/chat.postMessage";
    server.queue(
        post,
        vec![
            reply(200, json!({"ok": false, "error": "channel_not_found"})),
            reply(200, posted()).after(Duration::from_millis(600)),
            reply(500, json!({"ok": false, "error": "internal_error"})),
        ],
    );
    let api = slack(&server, Duration::from_millis(200));
    let err = api
        .post("C1", None, "hi", Vec::new())
        .await
        .expect_err("not found");
    assert!(err.to_string().contains("channel_not_found"), "{err}");
    assert_eq!(server.count(post), 1);
    // Slow answer: the post may have arrived, so it is not sent again.
    assert!(api.post("C1", None, "hi", Vec::new()).await.is_err());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(server.count(post), 2);
    assert!(api.post("C1", None, "hi", Vec::new()).await.is_err());
    assert_eq!(server.count(post), 3);
}

#[tokio::test]
async fn slack_rate_limits_are_waited_out_and_updates_repeated() {
    let server = Scripted::start().await;
    let post = "POST /api/chat.postMessage";
    server.queue(
        post,
        vec![reply(429, json!({"ok": false, "error": "ratelimited"})).header("retry-after", "1")],
    );
    server.always(post, reply(200, posted()));
    let update = "POST /api/chat.update";
    server.queue(
        update,
        vec![
            reply(200, posted()).after(Duration::from_millis(600)),
            reply(502, json!({"ok": false, "error": "bad gateway"})),
        ],
    );
    server.always(update, reply(200, posted()));
    let api = slack(&server, Duration::from_millis(300));
    let started = std::time::Instant::now();
    let ts = api
        .post("C1", None, "hi", Vec::new())
        .await
        .expect("posted after the wait");
    assert_eq!(ts, "1700000000.000100");
    assert!(started.elapsed() >= Duration::from_millis(950));
    assert_eq!(server.count(post), 2);
    api.update("C1", "1700000000.000100", "edited", Vec::new())
        .await
        .expect("update retried");
    assert_eq!(server.count(update), 3);
    // A wait longer than the policy allows is reported, not sat out.
    server.queue(
        post,
        vec![reply(429, json!({"ok": false, "error": "ratelimited"})).header("retry-after", "30")],
    );
    let err = api.post("C1", None, "hi", Vec::new()).await;
    assert!(
        matches!(err, Err(SurfaceError::RateLimited(w)) if w == Duration::from_secs(30)),
        "{err:?}"
    );
    assert_eq!(server.count(post), 3);
}

#[tokio::test]
async fn embedding_requests_retry_server_errors_but_not_bad_requests() {
    let server = Scripted::start().await;
    let key = "POST /v1/embeddings";
    server.queue(
        key,
        vec![
            reply(
                500,
                json!({"error": {"message": "oops", "type": "server_error"}}),
            ),
            reply(
                503,
                json!({"error": {"message": "overloaded", "type": "server_error"}}),
            ),
        ],
    );
    server.always(
        key,
        reply(
            200,
            json!({"object": "list", "model": "m", "data": [{"object": "embedding", "index": 0, "embedding": [0.6, 0.8]}]}),
        ),
    );
    let embedder = OpenAiEmbedder::new("k")
        .expect("embedder")
        .with_base_url(format!("{}/v1", server.url))
        .with_model("m", 2);
    let v = embedder
        .embed(&["x".to_string()], EmbedKind::Query)
        .await
        .expect("third attempt answers");
    assert_eq!(v.len(), 1);
    assert_eq!(server.count(key), 3);
    server.queue(
        key,
        vec![reply(
            400,
            json!({"error": {"message": "bad input", "type": "invalid_request_error"}}),
        )],
    );
    let err = embedder
        .embed(&["y".to_string()], EmbedKind::Query)
        .await
        .expect_err("400");
    assert!(matches!(err, EmbedError::BadRequest(_)), "{err}");
    assert_eq!(server.count(key), 4);
}

/// Everything the process logs (every level) while `f` runs on this thread's runtime.
async fn logs_of<F: std::future::Future<Output = ()>>(f: F) -> String {
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let guard = tracing::subscriber::set_default(subscriber);
    f.await;
    drop(guard);
    let bytes = captured.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
    String::from_utf8_lossy(&bytes).to_string()
}

#[tokio::test]
async fn no_token_reaches_the_logs_through_429s_5xxs_and_timeouts_on_every_route() {
    const BOT: &str = "discord-bot-token-SECRET";
    const INTERACTION: &str = "aW50ZXJhY3Rpb246SECRET";
    const SLACK_BOT: &str = "xoxb-slack-SECRET";
    let server = Scripted::start().await;
    let routes = [
        (
            "POST",
            format!("/interactions/1200000000000000001/{INTERACTION}/callback"),
        ),
        (
            "PATCH",
            format!("/webhooks/1100/{INTERACTION}/messages/@original"),
        ),
        ("POST", format!("/webhooks/1100/{INTERACTION}")),
        ("POST", "/channels/C1/messages".to_string()),
    ];
    // Each route: rate limited, then a server error, then silence past the client's timeout.
    let trouble = || {
        vec![
            reply(
                429,
                json!({"message": "You are being rate limited.", "retry_after": 0.01}),
            )
            .header("retry-after", "1"),
            reply(500, json!({"message": "500: Internal Server Error"})),
            reply(200, message("1")).after(Duration::from_millis(800)),
        ]
    };
    for (method, path) in &routes {
        server.queue(&format!("{method} {path}"), trouble());
    }
    for method in ["chat.postMessage", "chat.update"] {
        server.queue(
            &format!("POST /api/{method}"),
            vec![
                reply(429, json!({"ok": false, "error": "ratelimited"})).header("retry-after", "0"),
                reply(500, json!({"ok": false, "error": "internal_error"})),
                reply(200, posted()).after(Duration::from_millis(800)),
            ],
        );
    }
    let logs = logs_of(async {
        let rest = Rest::with_timeout(&server.url, BOT, Duration::from_millis(300))
            .expect("client")
            .with_policy(quick());
        // Twice per route: a POST is not repeated after a 5xx, so its second call meets the
        // silence.
        for _ in 0..2 {
            for (method, path) in &routes {
                let method: reqwest::Method = method.parse().expect("method");
                let got = rest
                    .call(method, path, Some(&json!({"content": "x"})))
                    .await;
                tracing::debug!(outcome = ?got, "the adapter logs what a call returned");
            }
        }
        let api = SlackApi::new(&format!("{}/api", server.url), SLACK_BOT)
            .with_policy(quick())
            .with_timeout(Duration::from_millis(300));
        let posted = api.post("C1", Some("1700000000.000100"), "x", vec![]).await;
        tracing::debug!(outcome = ?posted, "posted");
        let updated = api.update("C1", "1700000000.000100", "x", vec![]).await;
        tracing::debug!(outcome = ?updated, "updated");
    })
    .await;
    assert!(
        logs.contains("retrying"),
        "the failures were logged: {logs}"
    );
    assert!(
        logs.contains("{token}"),
        "routes are named with the token left out: {logs}"
    );
    for secret in [BOT, INTERACTION, SLACK_BOT] {
        assert!(!logs.contains(secret), "{secret} in the logs:\n{logs}");
    }
    // Every scripted failure was met: each route was sent at least three times.
    for (method, path) in &routes {
        assert!(server.count(&format!("{method} {path}")) >= 3, "{path}");
    }
}

#[test]
fn secrets_print_redacted() {
    let handle = sparky::platforms::discord::surface::InteractionHandle {
        app_id: "1100".into(),
        token: "aW50ZXJhY3Rpb246SECRET".into(),
        received: std::time::Instant::now(),
    };
    assert!(!format!("{handle:?}").contains("SECRET"));
    let env = std::collections::BTreeMap::from([
        (
            "DATABASE_URL".to_string(),
            "postgres://sparky:pg-password-SECRET@db:5432/sparky".to_string(),
        ),
        (
            "SLACK_SIGNING_SECRET".to_string(),
            "signing-SECRET".to_string(),
        ),
        ("OPENAI_API_KEY".to_string(), "sk-SECRET".to_string()),
    ]);
    let config = sparky::config::Config::load(None, &env).expect("config");
    let shown = format!("{config:?}");
    assert!(!shown.contains("SECRET"), "{shown}");
    assert!(
        shown.contains("postgres://sparky:redacted@db:5432/sparky"),
        "{shown}"
    );
}
