//! A fake Slack on loopback: the Web API over HTTP (the methods Sparky calls, with the
//! response shapes slack-morphism decodes), Socket Mode over a real WebSocket, and builders
//! of signed Events API / interactivity / slash-command requests made from the recorded
//! payloads in `tests/fixtures/platforms/slack/`.
#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::{Json, Router};
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// The bot's user id in the fake workspace.
pub const BOT_USER: &str = "U0SPARKYBOT";
/// The bot's bot id (messages it posts carry it).
pub const BOT_ID: &str = "B0SPARKYBOT";
/// The bot token the fake accepts.
pub const BOT_TOKEN: &str = "xoxb-fake-bot-token";
/// The app-level token the fake accepts for Socket Mode.
pub const APP_TOKEN: &str = "xapp-fake-app-token";
/// The signing secret of the fake app.
pub const SIGNING_SECRET: &str = "fake-signing-secret-0123456789";

/// A recorded payload from `tests/fixtures`.
pub fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/platforms/slack/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {path}: {e}"))
}

/// A recorded JSON payload from `tests/fixtures`.
pub fn fixture_json(name: &str) -> Value {
    serde_json::from_str(&fixture(name)).expect("fixture is JSON")
}

/// One Web API call the fake received.
#[derive(Debug, Clone)]
pub struct Call {
    /// Method name, e.g. `chat.update`.
    pub method: String,
    /// Arguments (JSON body, form or query).
    pub args: Value,
    /// Bearer token.
    pub token: Option<String>,
    /// When it arrived.
    pub at: Instant,
    /// Whether the fake answered 429.
    pub limited: bool,
}

/// A message as the fake channel holds it.
#[derive(Debug, Clone)]
pub struct Message {
    /// Channel id.
    pub channel: String,
    /// Its ts.
    pub ts: String,
    /// Thread root, when a reply.
    pub thread_ts: Option<String>,
    /// Fallback text.
    pub text: String,
    /// Block Kit blocks.
    pub blocks: Value,
    /// Time of posting and of every update.
    pub versions: Vec<Instant>,
    /// Streamed with chat.startStream: `Some(true)` while open, `Some(false)` once stopped.
    pub streaming: Option<bool>,
}

impl Message {
    /// The mrkdwn of every section block, joined by newlines.
    pub fn section_text(&self) -> String {
        self.sections().join("\n")
    }

    /// The mrkdwn of each section block.
    pub fn sections(&self) -> Vec<String> {
        self.blocks
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "section")
            .filter_map(|b| b["text"]["text"].as_str().map(str::to_string))
            .collect()
    }

    /// Whether it still has buttons.
    pub fn has_buttons(&self) -> bool {
        self.blocks
            .as_array()
            .into_iter()
            .flatten()
            .any(|b| b["type"] == "actions")
    }

    /// The buttons' elements.
    pub fn buttons(&self) -> Vec<Value> {
        self.blocks
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "actions")
            .flat_map(|b| b["elements"].as_array().cloned().unwrap_or_default())
            .collect()
    }
}

/// A file uploaded with the external upload flow.
#[derive(Debug, Clone)]
pub struct Upload {
    /// File id handed out by `files.getUploadURLExternal`.
    pub id: String,
    /// Name announced there.
    pub filename: String,
    /// Length announced there.
    pub length: usize,
    /// Bytes POSTed to the upload URL (empty until then).
    pub bytes: Vec<u8>,
    /// Content type of that POST.
    pub content_type: Option<String>,
    /// Channel it was shared in by `files.completeUploadExternal`.
    pub channel: Option<String>,
    /// Thread it was shared in.
    pub thread_ts: Option<String>,
    /// Title given on completion.
    pub title: Option<String>,
}

#[derive(Default)]
struct Inner {
    /// Files people shared, served at `/files-pri/...` to the bot token: (content type, bytes).
    hosted: BTreeMap<String, (String, Vec<u8>)>,
    uploads: Vec<Upload>,
    calls: Vec<Call>,
    messages: Vec<Message>,
    ephemerals: Vec<Value>,
    reactions: Vec<(bool, String, String, String)>,
    next_ts: u64,
    /// Per method: answers 429 with this Retry-After (seconds) this many more times.
    limits: BTreeMap<String, VecDeque<u64>>,
    no_streaming: bool,
    sockets: Vec<mpsc::UnboundedSender<String>>,
    frames: Vec<Value>,
    connections: usize,
    /// While set, Socket Mode connections are closed before the WebSocket handshake.
    refuse_sockets: bool,
    /// Bumped to cut every Socket Mode connection without a close frame.
    cuts: u64,
}

/// The fake Slack.
#[derive(Clone)]
pub struct FakeSlack {
    http: SocketAddr,
    ws: SocketAddr,
    inner: Arc<Mutex<Inner>>,
}

impl FakeSlack {
    /// Starts the Web API and the Socket Mode endpoint on loopback ports.
    pub async fn start() -> FakeSlack {
        let inner = Arc::new(Mutex::new(Inner {
            next_ts: 1_700_000_000_000_100,
            ..Inner::default()
        }));
        let ws_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind ws");
        let ws = ws_listener.local_addr().expect("ws addr");
        let http_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind http");
        let http = http_listener.local_addr().expect("http addr");
        let fake = FakeSlack { http, ws, inner };
        let app = Router::new()
            .route("/api/{method}", any(api))
            .route("/upload/{id}", any(upload))
            .route("/files-pri/{*path}", any(file_private))
            .with_state(fake.clone());
        tokio::spawn(async move {
            let _ = axum::serve(http_listener, app).await;
        });
        let f = fake.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = ws_listener.accept().await {
                if f.lock().refuse_sockets {
                    drop(stream);
                    continue;
                }
                let f = f.clone();
                tokio::spawn(async move { f.serve_socket(stream).await });
            }
        });
        fake
    }

    /// `slack.api_base_url` for the bot.
    pub fn api_url(&self) -> String {
        format!("http://{}/api", self.http)
    }

    /// `slack.file_hosts` for the bot: the origin `url_private` files are served from.
    pub fn file_origin(&self) -> String {
        format!("http://{}", self.http)
    }

    /// [`Self::file_origin`], parsed.
    pub fn file_host(&self) -> sparky::config::FileHost {
        sparky::config::FileHost::parse(&self.file_origin()).expect("an origin")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Every Web API call so far.
    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// Calls of one method.
    pub fn calls_of(&self, method: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.method == method)
            .collect()
    }

    /// Hosts a shared file at `/files-pri/{path}`; returns its `url_private`.
    pub fn host_file(&self, path: &str, content_type: &str, bytes: Vec<u8>) -> String {
        self.lock()
            .hosted
            .insert(path.to_string(), (content_type.to_string(), bytes));
        format!("http://{}/files-pri/{path}", self.http)
    }

    /// Files uploaded through the external upload flow.
    pub fn uploads(&self) -> Vec<Upload> {
        self.lock().uploads.clone()
    }

    /// Every message, in posting order.
    pub fn messages(&self) -> Vec<Message> {
        self.lock().messages.clone()
    }

    /// Replies in a thread (the root excluded), in posting order.
    pub fn thread(&self, channel: &str, thread_ts: &str) -> Vec<Message> {
        self.messages()
            .into_iter()
            .filter(|m| m.channel == channel && m.thread_ts.as_deref() == Some(thread_ts))
            .collect()
    }

    /// Ephemeral messages (`chat.postEphemeral` arguments).
    pub fn ephemerals(&self) -> Vec<Value> {
        self.lock().ephemerals.clone()
    }

    /// Reactions added (`true`) and removed: (add, channel, ts, name).
    pub fn reactions(&self) -> Vec<(bool, String, String, String)> {
        self.lock().reactions.clone()
    }

    /// The next `times` calls of `method` are answered 429 with `Retry-After: secs`.
    pub fn rate_limit(&self, method: &str, secs: u64, times: usize) {
        let mut g = self.lock();
        let q = g.limits.entry(method.to_string()).or_default();
        for _ in 0..times {
            q.push_back(secs);
        }
    }

    /// From now on chat.startStream answers `unknown_method` (a workspace without streaming).
    pub fn refuse_streaming(&self) {
        self.lock().no_streaming = true;
    }

    /// Socket Mode connections opened so far.
    pub fn connections(&self) -> usize {
        self.lock().connections
    }

    /// Frames the bot sent over Socket Mode (acknowledgements).
    pub fn frames(&self) -> Vec<Value> {
        self.lock().frames.clone()
    }

    /// Sends a Socket Mode envelope over the newest live connection.
    pub fn send_envelope(&self, envelope: &Value) {
        let mut g = self.lock();
        g.sockets.retain(|s| !s.is_closed());
        let sock = g.sockets.last().expect("no Socket Mode connection");
        sock.send(envelope.to_string()).expect("socket open");
    }

    /// Refuses (or accepts again) Socket Mode connections: the TCP connection is closed before
    /// the WebSocket handshake.
    pub fn refuse_sockets(&self, refuse: bool) {
        self.lock().refuse_sockets = refuse;
    }

    /// Cuts every Socket Mode connection, as a network failure does (no close frame).
    pub fn cut_sockets(&self) {
        self.lock().cuts += 1;
    }

    /// Sends the recorded `disconnect` frame on every connection.
    pub fn disconnect_all(&self) {
        let frame = fixture("socket_mode_disconnect.json");
        let mut g = self.lock();
        g.sockets.retain(|s| !s.is_closed());
        for s in &g.sockets {
            let _ = s.send(frame.clone());
        }
    }

    /// Waits until `f` returns `Some`, polling.
    pub async fn wait_for<T>(
        &self,
        what: &str,
        limit: Duration,
        mut f: impl FnMut(&FakeSlack) -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(v) = f(self) {
                return v;
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out waiting for {what}; calls: {:#?}",
                    self.calls()
                        .iter()
                        .map(|c| (&c.method, &c.args))
                        .collect::<Vec<_>>()
                );
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Waits for an acknowledgement of `envelope_id`.
    pub async fn wait_ack(&self, envelope_id: &str, limit: Duration) -> Value {
        self.wait_for("a Socket Mode ack", limit, |s| {
            s.frames()
                .into_iter()
                .find(|f| f["envelope_id"] == envelope_id)
        })
        .await
    }

    async fn serve_socket(&self, stream: tokio::net::TcpStream) {
        let Ok(ws) = tokio_tungstenite::accept_async(stream).await else {
            return;
        };
        let (mut tx, mut rx) = ws.split();
        let (out, mut out_rx) = mpsc::unbounded_channel::<String>();
        {
            let mut g = self.lock();
            g.connections += 1;
            g.sockets.push(out.clone());
        }
        let _ = out.send(fixture("socket_mode_hello.json"));
        let writer = tokio::spawn(async move {
            while let Some(text) = out_rx.recv().await {
                if tx
                    .send(tokio_tungstenite::tungstenite::Message::text(text))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        });
        let cuts = self.lock().cuts;
        loop {
            let next = tokio::time::timeout(Duration::from_millis(50), rx.next()).await;
            if self.lock().cuts != cuts {
                break;
            }
            let msg = match next {
                Err(_) => continue,
                Ok(Some(Ok(msg))) => msg,
                Ok(_) => break,
            };
            if let tokio_tungstenite::tungstenite::Message::Text(t) = msg {
                if let Ok(v) = serde_json::from_str::<Value>(t.as_str()) {
                    self.lock().frames.push(v);
                }
            }
        }
        writer.abort();
    }
}

fn ok(v: Value) -> Response {
    let mut v = v;
    v["ok"] = json!(true);
    Json(v).into_response()
}

fn fail(error: &str) -> Response {
    Json(json!({"ok": false, "error": error})).into_response()
}

async fn api(
    State(fake): State<FakeSlack>,
    Path(method): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let is_json = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("application/json"));
    let args: Value = if is_json {
        serde_json::from_slice(&body).unwrap_or(Value::Null)
    } else {
        let raw = if body.is_empty() {
            query.unwrap_or_default().into_bytes()
        } else {
            body.to_vec()
        };
        let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(&raw).unwrap_or_default();
        Value::Object(
            pairs
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect(),
        )
    };
    let mut g = fake.lock();
    let limited = g.limits.get_mut(&method).and_then(|q| q.pop_front());
    g.calls.push(Call {
        method: method.clone(),
        args: args.clone(),
        token: token.clone(),
        at: Instant::now(),
        limited: limited.is_some(),
    });
    if let Some(secs) = limited {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", secs.to_string())],
            Json(json!({"ok": false, "error": "ratelimited"})),
        )
            .into_response();
    }
    if method == "apps.connections.open" {
        if token.as_deref() != Some(APP_TOKEN) {
            return fail("invalid_auth");
        }
        return ok(json!({"url": format!("ws://{}/link/?ticket=fake-{}", fake.ws, g.connections)}));
    }
    if token.as_deref() != Some(BOT_TOKEN) {
        return fail("invalid_auth");
    }
    let s = |k: &str| args[k].as_str().map(str::to_string);
    match method.as_str() {
        "auth.test" => ok(json!({
            "url": "https://fake.slack.test/", "team": "Fake Team", "user": "sparky",
            "team_id": "T111", "user_id": BOT_USER, "bot_id": BOT_ID
        })),
        "chat.postMessage" => {
            let Some(channel) = s("channel") else {
                return fail("channel_not_found");
            };
            g.next_ts += 100;
            let ts = format!("{}.{:06}", g.next_ts / 1_000_000, g.next_ts % 1_000_000);
            let text = s("text").unwrap_or_default();
            g.messages.push(Message {
                channel: channel.clone(),
                ts: ts.clone(),
                thread_ts: s("thread_ts"),
                text: text.clone(),
                blocks: args["blocks"].clone(),
                versions: vec![Instant::now()],
                streaming: None,
            });
            ok(json!({
                "channel": channel, "ts": ts,
                "message": {"type": "message", "ts": ts, "text": text, "user": BOT_USER, "bot_id": BOT_ID}
            }))
        }
        "chat.update" => {
            let (Some(channel), Some(ts)) = (s("channel"), s("ts")) else {
                return fail("invalid_arguments");
            };
            let Some(m) = g
                .messages
                .iter_mut()
                .find(|m| m.channel == channel && m.ts == ts)
            else {
                return fail("message_not_found");
            };
            m.text = s("text").unwrap_or_default();
            m.blocks = args["blocks"].clone();
            m.versions.push(Instant::now());
            let text = m.text.clone();
            ok(
                json!({"channel": channel, "ts": ts, "text": text, "message": {"text": text, "user": BOT_USER}}),
            )
        }
        "chat.startStream" => {
            if g.no_streaming {
                return fail("unknown_method");
            }
            let (Some(channel), Some(thread_ts)) = (s("channel"), s("thread_ts")) else {
                return fail("invalid_arguments");
            };
            if s("recipient_user_id").is_none() || s("recipient_team_id").is_none() {
                return fail("missing_recipient_user_id");
            }
            g.next_ts += 100;
            let ts = format!("{}.{:06}", g.next_ts / 1_000_000, g.next_ts % 1_000_000);
            g.messages.push(Message {
                channel: channel.clone(),
                ts: ts.clone(),
                thread_ts: Some(thread_ts),
                text: s("markdown_text").unwrap_or_default(),
                blocks: Value::Null,
                versions: vec![Instant::now()],
                streaming: Some(true),
            });
            ok(json!({"channel": channel, "ts": ts}))
        }
        "chat.appendStream" | "chat.stopStream" => {
            let (Some(channel), Some(ts)) = (s("channel"), s("ts")) else {
                return fail("invalid_arguments");
            };
            let stop = method == "chat.stopStream";
            let Some(m) = g
                .messages
                .iter_mut()
                .find(|m| m.channel == channel && m.ts == ts)
            else {
                return fail("message_not_found");
            };
            if m.streaming != Some(true) {
                return fail("message_not_in_streaming_state");
            }
            if let Some(more) = s("markdown_text") {
                m.text.push_str(&more);
                m.versions.push(Instant::now());
            }
            if stop {
                m.streaming = Some(false);
            }
            ok(json!({"channel": channel, "ts": ts}))
        }
        "files.getUploadURLExternal" => {
            // Slack takes these as form or query arguments, `length` in bytes.
            let (Some(filename), Some(length)) = (
                s("filename"),
                s("length").and_then(|l| l.parse::<usize>().ok()),
            ) else {
                return fail("invalid_arguments");
            };
            if length == 0 {
                return fail("invalid_length");
            }
            let id = format!("F0FAKE{:04}", g.uploads.len() + 1);
            g.uploads.push(Upload {
                id: id.clone(),
                filename,
                length,
                bytes: Vec::new(),
                content_type: None,
                channel: None,
                thread_ts: None,
                title: None,
            });
            ok(json!({"upload_url": format!("http://{}/upload/{id}", fake.http), "file_id": id}))
        }
        "files.completeUploadExternal" => {
            let Some(files) = args["files"].as_array().cloned() else {
                return fail("invalid_arguments");
            };
            let mut shared = Vec::new();
            for f in files {
                let Some(id) = f["id"].as_str() else {
                    return fail("invalid_arguments");
                };
                let Some(u) = g.uploads.iter_mut().find(|u| u.id == id) else {
                    return fail("file_not_found");
                };
                if u.bytes.len() != u.length {
                    return fail("file_upload_size_mismatch");
                }
                u.channel = s("channel_id");
                u.thread_ts = s("thread_ts");
                u.title = f["title"].as_str().map(str::to_string);
                shared.push(
                    json!({"id": u.id, "name": u.filename, "title": u.title, "size": u.length}),
                );
            }
            ok(json!({"files": shared}))
        }
        // The assistant surface: arguments checked as Slack documents them (the request
        // examples in tests/fixtures/platforms/slack/), answered `{"ok": true}`.
        "assistant.threads.setSuggestedPrompts" => {
            let prompts = args["prompts"].as_array().cloned().unwrap_or_default();
            let well_formed = prompts
                .iter()
                .all(|p| p["title"].is_string() && p["message"].is_string());
            if s("channel_id").is_none()
                || s("thread_ts").is_none()
                || prompts.is_empty()
                || prompts.len() > 4
                || !well_formed
                || !(args["title"].is_null() || args["title"].is_string())
            {
                return fail("invalid_arguments");
            }
            ok(json!({}))
        }
        "assistant.threads.setStatus" => {
            let loading = &args["loading_messages"];
            let loading_ok = loading.is_null()
                || loading
                    .as_array()
                    .is_some_and(|l| l.len() <= 10 && l.iter().all(Value::is_string));
            if s("channel_id").is_none()
                || s("thread_ts").is_none()
                || s("status").is_none()
                || !loading_ok
            {
                return fail("invalid_arguments");
            }
            ok(json!({}))
        }
        "assistant.threads.setTitle" => {
            if s("channel_id").is_none()
                || s("thread_ts").is_none()
                || s("title").is_none_or(|t| t.is_empty())
            {
                return fail("invalid_arguments");
            }
            ok(json!({}))
        }
        "views.publish" | "views.open" => {
            let kind = if method == "views.publish" {
                "home"
            } else {
                "modal"
            };
            let who = if method == "views.publish" {
                "user_id"
            } else {
                "trigger_id"
            };
            let view = &args["view"];
            let blocks_ok = view["blocks"].as_array().is_some_and(|b| b.len() <= 100);
            if s(who).is_none() || view["type"] != kind || !blocks_ok {
                return fail("invalid_arguments");
            }
            // Slack's documented answer, with the view as published.
            let mut answer = fixture_json("views.publish.response.docs.json");
            let published = &mut answer["view"];
            published["type"] = json!(kind);
            published["blocks"] = view["blocks"].clone();
            published["team_id"] = json!(TEAM);
            for k in ["title", "close", "submit"] {
                published[k] = view[k].clone();
            }
            if let Some(o) = answer.as_object_mut() {
                o.remove("ok");
            }
            ok(answer)
        }
        "chat.getPermalink" => {
            let (Some(channel), Some(ts)) = (s("channel"), s("message_ts")) else {
                return fail("invalid_arguments");
            };
            ok(json!({
                "channel": channel,
                "permalink": format!("https://fake.slack.test/archives/{channel}/p{}", ts.replace('.', "")),
            }))
        }
        "chat.postEphemeral" => {
            g.ephemerals.push(args.clone());
            ok(json!({"message_ts": "1700000000.000001"}))
        }
        "reactions.add" | "reactions.remove" => {
            let add = method == "reactions.add";
            g.reactions.push((
                add,
                s("channel").unwrap_or_default(),
                s("timestamp").unwrap_or_default(),
                s("name").unwrap_or_default(),
            ));
            ok(json!({}))
        }
        _ => fail("unknown_method"),
    }
}

/// `url_private`: the file for the bot token; anyone else gets the sign-in page with status
/// 200, as Slack answers a request without a valid token.
async fn file_private(
    State(fake): State<FakeSlack>,
    Path(path): Path<String>,
    headers: HeaderMap,
) -> Response {
    let authorized = headers.get("authorization").and_then(|v| v.to_str().ok())
        == Some(&format!("Bearer {BOT_TOKEN}"));
    if !authorized {
        return (
            StatusCode::OK,
            [("content-type", "text/html; charset=utf-8")],
            "<!DOCTYPE html><html><body>Sign in to Slack</body></html>",
        )
            .into_response();
    }
    match fake.lock().hosted.get(&path) {
        Some((ctype, bytes)) => (
            StatusCode::OK,
            [("content-type", ctype.clone())],
            bytes.clone(),
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "Not Found").into_response(),
    }
}

/// The upload URL: takes the raw bytes and answers like Slack's file servers, in plain text.
async fn upload(
    State(fake): State<FakeSlack>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut g = fake.lock();
    let Some(u) = g.uploads.iter_mut().find(|u| u.id == id) else {
        return (StatusCode::NOT_FOUND, "Not Found").into_response();
    };
    u.bytes = body.to_vec();
    u.content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    (
        StatusCode::OK,
        [("content-type", "text/plain; charset=utf-8")],
        format!("OK - {}", body.len()),
    )
        .into_response()
}

// ----- payload builders (from the recorded fixtures) -----

/// An `event_callback` with an `app_mention`, built from the recorded Socket Mode payload.
pub fn app_mention(
    team: &str,
    channel: &str,
    user: &str,
    ts: &str,
    text: &str,
    event_id: &str,
) -> Value {
    let mut p = fixture_json("socket_mode_events_api_app_mention.json")["payload"].clone();
    p["team_id"] = json!(team);
    p["event_id"] = json!(event_id);
    p["authorizations"][0]["user_id"] = json!(BOT_USER);
    p["authorizations"][0]["team_id"] = json!(team);
    let e = &mut p["event"];
    e["user"] = json!(user);
    e["channel"] = json!(channel);
    e["team"] = json!(team);
    e["ts"] = json!(ts);
    e["event_ts"] = json!(ts);
    e["text"] = json!(format!("<@{BOT_USER}> {text}"));
    if let Some(o) = e.as_object_mut() {
        o.remove("blocks");
    }
    p
}

/// An `event_callback` with a thread reply (`message` with `thread_ts`), from the recorded
/// follow-up in the Vercel streaming replay.
pub fn thread_message(
    team: &str,
    channel: &str,
    user: &str,
    thread_ts: &str,
    ts: &str,
    text: &str,
    event_id: &str,
) -> Value {
    let mut p = fixture_json("vercel-chat-replay-slack-streaming.json")["threadFollowUp"].clone();
    p["team_id"] = json!(team);
    p["event_id"] = json!(event_id);
    p["authorizations"][0]["user_id"] = json!(BOT_USER);
    p["authorizations"][0]["team_id"] = json!(team);
    let e = &mut p["event"];
    e["user"] = json!(user);
    e["channel"] = json!(channel);
    e["team"] = json!(team);
    e["ts"] = json!(ts);
    e["event_ts"] = json!(ts);
    e["thread_ts"] = json!(thread_ts);
    e["text"] = json!(text);
    if let Some(o) = e.as_object_mut() {
        o.remove("blocks");
    }
    p
}

/// A `block_actions` click on a button of `message`, from the recorded Vercel payload.
pub fn block_action(
    team: &str,
    user: &str,
    message: &Message,
    action_id: &str,
    trigger_id: &str,
) -> Value {
    let mut p = fixture_json("vercel-chat-replay-slack-streaming.json")["buttonAction"].clone();
    p["team"]["id"] = json!(team);
    p["user"]["id"] = json!(user);
    p["user"]["team_id"] = json!(team);
    p["trigger_id"] = json!(trigger_id);
    p["channel"]["id"] = json!(message.channel);
    p["container"]["channel_id"] = json!(message.channel);
    p["container"]["message_ts"] = json!(message.ts);
    p["container"]["thread_ts"] = json!(message.thread_ts);
    p["message"]["ts"] = json!(message.ts);
    p["message"]["thread_ts"] = json!(message.thread_ts);
    p["message"]["channel"] = json!(message.channel);
    p["message"]["blocks"] = message.blocks.clone();
    p["message"]["user"] = json!(BOT_USER);
    p["message"]["bot_id"] = json!(BOT_ID);
    let value = message
        .buttons()
        .into_iter()
        .find(|b| b["action_id"] == action_id)
        .map(|b| b["value"].clone())
        .unwrap_or(Value::Null);
    p["actions"] = json!([{
        "type": "button",
        "block_id": "sparky_confirmation",
        "action_id": action_id,
        "value": value,
        "text": {"type": "plain_text", "text": "Confirm", "emoji": true},
        "action_ts": format!("{}.{}", 1_775_407_900, trigger_id.len())
    }]);
    p
}

/// A form-encoded slash command, from the recorded signing example with its fields replaced.
pub fn slash_command_form(
    team: &str,
    channel: &str,
    user: &str,
    text: &str,
    trigger_id: &str,
) -> String {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(&fixture("slash_command.docs-signing-example.form.txt"))
            .expect("form");
    let pairs: Vec<(String, String)> = pairs
        .into_iter()
        .map(|(k, v)| {
            let v = match k.as_str() {
                "team_id" => team.to_string(),
                "channel_id" => channel.to_string(),
                "user_id" => user.to_string(),
                "command" => "/sparky".to_string(),
                "text" => text.to_string(),
                "trigger_id" => trigger_id.to_string(),
                _ => v,
            };
            (k, v)
        })
        .collect();
    serde_urlencoded::to_string(pairs).expect("form")
}

/// The Socket Mode envelope around an Events API payload.
pub fn events_envelope(payload: &Value, envelope_id: &str, retry_attempt: u32) -> Value {
    let mut e = fixture_json("socket_mode_events_api_app_mention.json");
    e["envelope_id"] = json!(envelope_id);
    e["payload"] = payload.clone();
    e["retry_attempt"] = json!(retry_attempt);
    e["retry_reason"] = json!(if retry_attempt > 0 { "timeout" } else { "" });
    e
}

/// The Socket Mode envelope of an interaction.
pub fn interactive_envelope(payload: &Value, envelope_id: &str) -> Value {
    json!({"envelope_id": envelope_id, "payload": payload, "type": "interactive", "accepts_response_payload": false})
}

/// The Socket Mode envelope of a slash command, from the recorded one.
pub fn slash_envelope(
    team: &str,
    channel: &str,
    user: &str,
    text: &str,
    trigger_id: &str,
    envelope_id: &str,
) -> Value {
    let mut e = fixture_json("socket_mode_slash_commands.json");
    e["envelope_id"] = json!(envelope_id);
    let p = &mut e["payload"];
    p["team_id"] = json!(team);
    p["channel_id"] = json!(channel);
    p["user_id"] = json!(user);
    p["command"] = json!("/sparky");
    p["text"] = json!(text);
    p["trigger_id"] = json!(trigger_id);
    e
}

/// Slack's signature headers for `body` sent at `ts`.
pub fn signature(secret: &str, ts: i64, body: &[u8]) -> String {
    sparky::platforms::slack::signature::sign(secret, &ts.to_string(), body)
}

/// Posts `body` to the bot's HTTP endpoint as Slack would, signed with the fake's secret.
pub struct SignedPoster {
    /// Endpoint URL, e.g. `http://127.0.0.1:PORT/slack/events`.
    pub url: String,
    client: reqwest::Client,
}

/// What the endpoint answered.
#[derive(Debug)]
pub struct Answer {
    /// Status.
    pub status: u16,
    /// Body text.
    pub body: String,
    /// Time to the answer.
    pub took: Duration,
}

impl SignedPoster {
    /// A poster for `base` (the bot's HTTP address).
    pub fn new(base: &str) -> Self {
        Self {
            url: base.to_string(),
            client: reqwest::Client::new(),
        }
    }

    /// Posts with explicit headers: `ts` and `sig` as given, optional retry number.
    pub async fn raw(
        &self,
        path: &str,
        content_type: &str,
        body: &str,
        ts: i64,
        sig: &str,
        retry: Option<u32>,
    ) -> Answer {
        let started = Instant::now();
        let mut req = self
            .client
            .post(format!("{}{path}", self.url))
            .header("content-type", content_type)
            .header("x-slack-request-timestamp", ts.to_string())
            .header("x-slack-signature", sig)
            .body(body.to_string());
        if let Some(n) = retry {
            req = req
                .header("x-slack-retry-num", n.to_string())
                .header("x-slack-retry-reason", "http_timeout");
        }
        let resp = req.send().await.expect("bot endpoint reachable");
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap_or_default();
        Answer {
            status,
            body,
            took: started.elapsed(),
        }
    }

    /// Posts a JSON event signed now.
    pub async fn event(&self, payload: &Value, retry: Option<u32>) -> Answer {
        let body = payload.to_string();
        // Slack signs each retry when it sends it, seconds to minutes after the first try.
        let ts = chrono::Utc::now().timestamp() + i64::from(retry.unwrap_or(0)) * 3;
        let sig = signature(SIGNING_SECRET, ts, body.as_bytes());
        self.raw("/slack/events", "application/json", &body, ts, &sig, retry)
            .await
    }

    /// Posts an interaction (`payload=` form) signed now.
    pub async fn interaction(&self, payload: &Value) -> Answer {
        let body = serde_urlencoded::to_string([("payload", payload.to_string())]).expect("form");
        let ts = chrono::Utc::now().timestamp();
        let sig = signature(SIGNING_SECRET, ts, body.as_bytes());
        self.raw(
            "/slack/interactivity",
            "application/x-www-form-urlencoded",
            &body,
            ts,
            &sig,
            None,
        )
        .await
    }

    /// Posts a slash command form signed now.
    pub async fn command(&self, form: &str) -> Answer {
        let ts = chrono::Utc::now().timestamp();
        let sig = signature(SIGNING_SECRET, ts, form.as_bytes());
        self.raw(
            "/slack/commands",
            "application/x-www-form-urlencoded",
            form,
            ts,
            &sig,
            None,
        )
        .await
    }
}

// ----- a whole bot against the fakes -----

/// Team, channel and people of the fake workspace.
pub const TEAM: &str = "T111";
/// The project channel.
pub const CHANNEL: &str = "C111";
/// The person who asks.
pub const ALICE: &str = "U0ALICE";
/// Someone else in the channel.
pub const BOB: &str = "U0BOB";

/// Sparky wired to a fake LLM, a fake Slack and a real database.
pub struct SlackBot {
    /// The fake model.
    pub llm: super::fake_llm::FakeLlm,
    /// The fake Slack.
    pub slack: FakeSlack,
    /// The loaded configuration.
    pub config: sparky::config::Config,
    /// The agent.
    pub agent: Arc<sparky::core::Agent>,
    /// Its store.
    pub store: Arc<dyn sparky::store::Store>,
    env: BTreeMap<String, String>,
    _dir: tempfile::TempDir,
}

impl SlackBot {
    /// Waits until no handler or turn of the agent is in flight, so a test can check that
    /// something did not happen (a second execution, another model call) once the work it
    /// could have come from has ended, instead of sleeping a fixed time.
    pub async fn settled(&self) {
        super::settled::settled(&[&self.agent]).await;
    }

    /// A bot on `db` using `transport` ("http" or "socket"); the channel is bound to a project.
    pub async fn start(db: super::bot::Db, transport: &str) -> SlackBot {
        Self::start_with(db, transport, &[]).await
    }

    /// [`SlackBot::start`] with extra configuration variables (e.g. `SPARKY_LLM__VISION`).
    pub async fn start_with(
        db: super::bot::Db,
        transport: &str,
        extra: &[(&str, &str)],
    ) -> SlackBot {
        sparky::llm::tls::install_default_crypto_provider();
        let llm = super::fake_llm::FakeLlm::start(super::fake_llm::Dialect::OpenAi).await;
        let slack = FakeSlack::start().await;
        let dir = tempfile::tempdir().expect("temp dir");
        let mut env: BTreeMap<String, String> = llm.env().into_iter().collect();
        for (k, v) in [
            ("SPARKY_LLM__MAX_RETRIES", "0"),
            ("SPARKY_SLACK__ENABLED", "true"),
            ("SPARKY_SLACK__TRANSPORT", transport),
            ("SPARKY_SLACK__EDIT_INTERVAL_MS", "1000"),
            ("SPARKY_SERVER__SHUTDOWN_GRACE_SECS", "5"),
            ("SLACK_BOT_TOKEN", BOT_TOKEN),
            ("SLACK_APP_TOKEN", APP_TOKEN),
            ("SLACK_SIGNING_SECRET", SIGNING_SECRET),
        ] {
            env.insert(k.into(), v.into());
        }
        env.insert("SPARKY_SLACK__API_BASE_URL".into(), slack.api_url());
        env.insert("SPARKY_SLACK__FILE_HOSTS".into(), slack.file_origin());
        for (k, v) in extra {
            env.insert(k.to_string(), v.to_string());
        }
        match db {
            super::bot::Db::Sqlite => {
                env.insert(
                    "SPARKY_DATABASE__SQLITE_PATH".into(),
                    dir.path().join("slack.db").display().to_string(),
                );
            }
            super::bot::Db::Postgres => {
                env.insert(
                    "DATABASE_URL".into(),
                    super::bot::fresh_postgres_url().await,
                );
            }
        }
        let (config, store, agent) = build(&env).await;
        let project = store
            .create_project(
                &sparky::project::Workspace::new("slack", TEAM),
                "Shop",
                sparky::nec::units::Edition::Nec2023,
            )
            .await
            .expect("project");
        store
            .bind_channel("slack", TEAM, CHANNEL, project.id)
            .await
            .expect("bind");
        SlackBot {
            llm,
            slack,
            config,
            agent,
            store,
            env,
            _dir: dir,
        }
    }

    /// A new agent and store connection on the same database: what a restarted process has.
    pub async fn restart(&mut self) {
        let (config, store, agent) = build(&self.env).await;
        self.config = config;
        self.store = store;
        self.agent = agent;
    }

    /// Serves the HTTP endpoint on a loopback port; returns a poster for it.
    pub async fn serve_http(&self) -> SignedPoster {
        let router = sparky::platforms::slack::events_router(self.agent.clone(), &self.config)
            .expect("router");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        SignedPoster::new(&format!("http://{addr}"))
    }

    /// Tasks of the bound project.
    pub async fn tasks(&self) -> Vec<sparky::project::Task> {
        let id = self
            .store
            .channel_project("slack", TEAM, CHANNEL)
            .await
            .expect("binding")
            .expect("bound");
        self.store.load_project(id).await.expect("project").tasks
    }
}

async fn build(
    env: &BTreeMap<String, String>,
) -> (
    sparky::config::Config,
    Arc<dyn sparky::store::Store>,
    Arc<sparky::core::Agent>,
) {
    let config = sparky::config::Config::load(None, env).expect("config");
    let store = sparky::app::connect_store(&config).await.expect("store");
    let provider = sparky::llm::resilient::build_provider(&config);
    let tools = Arc::new(sparky::tools::default_registry(1000));
    let agent = sparky::core::Agent::new(
        store.clone(),
        provider,
        tools,
        config.agent.clone(),
        &config.limits,
    )
    .with_file_intake(sparky::app::file_intake(&config));
    (config, store, Arc::new(agent))
}

/// An `event_callback` with a top-level direct message (`message.im`).
pub fn direct_message(
    team: &str,
    channel: &str,
    user: &str,
    ts: &str,
    text: &str,
    event_id: &str,
) -> Value {
    let mut p = thread_message(team, channel, user, ts, ts, text, event_id);
    let e = &mut p["event"];
    e["channel_type"] = json!("im");
    if let Some(o) = e.as_object_mut() {
        o.remove("thread_ts");
        o.remove("parent_user_id");
    }
    p
}

// ----- the assistant surface and the App Home tab -----

/// An assistant thread's `event_callback` (`assistant_thread_started` when `started`, else
/// `assistant_thread_context_changed`), from the documented example with its ids replaced;
/// `context` `None` is a person viewing no channel (an empty context).
pub fn assistant_event(
    started: bool,
    team: &str,
    user: &str,
    thread: (&str, &str),
    context: Option<&str>,
    event_id: &str,
) -> Value {
    let mut p = fixture_json(if started {
        "assistant_thread_started.docs.json"
    } else {
        "assistant_thread_context_changed.docs.json"
    });
    p["team_id"] = json!(team);
    p["event_id"] = json!(event_id);
    p["authed_users"] = json!([user]);
    let t = &mut p["event"]["assistant_thread"];
    t["user_id"] = json!(user);
    t["channel_id"] = json!(thread.0);
    t["thread_ts"] = json!(thread.1);
    match context {
        Some(c) => {
            t["context"]["channel_id"] = json!(c);
            t["context"]["team_id"] = json!(team);
        }
        None => t["context"] = json!({}),
    }
    p
}

/// A person's message in an assistant thread (`message.im` with the thread's ts), from the
/// recorded thread follow-up.
pub fn assistant_message(
    team: &str,
    user: &str,
    thread: (&str, &str),
    ts: &str,
    text: &str,
    event_id: &str,
) -> Value {
    let mut p = thread_message(team, thread.0, user, thread.1, ts, text, event_id);
    p["event"]["channel_type"] = json!("im");
    p
}

/// An `event_callback` with `app_home_opened` (tab "home"): the documented event inside the
/// documented wrapper.
pub fn app_home_opened(team: &str, user: &str, event_id: &str) -> Value {
    let mut p = fixture_json("assistant_thread_started.docs.json");
    let mut e = fixture_json("app_home_opened.docs.json");
    e["user"] = json!(user);
    e["view"]["team_id"] = json!(team);
    e["view"]["app_installed_team_id"] = json!(team);
    p["team_id"] = json!(team);
    p["event_id"] = json!(event_id);
    p["authed_users"] = json!([user]);
    p["event"] = e;
    p
}

/// A `block_actions` click on a button of the Home tab (a view container), from the recorded
/// Vercel payload with the message parts replaced by the documented Home view.
pub fn home_click(team: &str, user: &str, action_id: &str, value: &str, trigger_id: &str) -> Value {
    let mut p = fixture_json("vercel-chat-replay-slack-streaming.json")["buttonAction"].clone();
    let view = fixture_json("app_home_opened.docs.json")["view"].clone();
    p["team"]["id"] = json!(team);
    p["user"]["id"] = json!(user);
    p["user"]["team_id"] = json!(team);
    p["trigger_id"] = json!(trigger_id);
    p["container"] = json!({"type": "view", "view_id": view["id"]});
    p["view"] = view;
    if let Some(o) = p.as_object_mut() {
        o.remove("channel");
        o.remove("message");
        o.remove("response_url");
    }
    p["actions"] = json!([{
        "type": "button",
        "block_id": "sparky_home_projects",
        "action_id": action_id,
        "value": value,
        "text": {"type": "plain_text", "text": "New project", "emoji": true},
        "action_ts": "1775407900.000100"
    }]);
    p
}

impl FakeSlack {
    /// The views published as Home tabs of `user`, oldest first.
    pub fn home_views(&self, user: &str) -> Vec<Value> {
        self.calls_of("views.publish")
            .into_iter()
            .filter(|c| c.args["user_id"] == user)
            .map(|c| c.args["view"].clone())
            .collect()
    }
}
