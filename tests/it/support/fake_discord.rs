//! A fake Discord on 127.0.0.1: the REST API over HTTP (axum) and the gateway over WebSocket,
//! enough for serenity's client and the Sparky adapter to run against it unchanged. Payloads
//! are built from the recorded fixtures in `tests/fixtures/platforms/discord/` (same shapes,
//! ids substituted), and every REST call is recorded with its time for assertions.
//!
//! Self-contained: include it from `support/mod.rs` (`pub mod fake_discord;`).
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post, put};
use axum::{Json, Router};
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message as WsMessage;

/// The bot's user id (and application id), from the recorded replay.
pub const BOT_ID: &str = "1457469483726668048";
/// Guild id from the recorded replay.
pub const GUILD_ID: &str = "1457468924290662599";
/// A text channel from the recorded replay.
pub const CHANNEL_ID: &str = "1457510428359004343";
/// The requesting user from the recorded replay.
pub const USER_ID: &str = "1033044521375764530";
/// Another member of the guild.
pub const OTHER_USER_ID: &str = "1033044521375769999";
/// The token the fake accepts.
pub const TOKEN: &str = "fake-discord-token";

/// Where the recorded payloads are.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/platforms/discord")
}

/// Reads one recorded fixture file as JSON.
pub fn fixture(name: &str) -> Value {
    let path = fixtures_dir().join(name);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

/// One entry of the recorded replay (`vercel-chat-replay-discord.json`).
pub fn replay(name: &str) -> Value {
    fixture("vercel-chat-replay-discord.json")[name].clone()
}

/// One REST call the fake received.
#[derive(Debug, Clone)]
pub struct Call {
    /// HTTP method.
    pub method: String,
    /// Path after `/api/v10`.
    pub path: String,
    /// JSON body (Null when none).
    pub body: Value,
    /// Authorization header.
    pub auth: Option<String>,
    /// Status answered.
    pub status: u16,
    /// When it arrived.
    pub at: Instant,
}

/// A message the fake holds, with its history.
#[derive(Debug, Clone)]
pub struct FakeMessage {
    /// Message id.
    pub id: String,
    /// Channel (or thread) id.
    pub channel: String,
    /// Author id (the bot for the adapter's posts).
    pub author: String,
    /// Current JSON object.
    pub json: Value,
    /// Creation time.
    pub created: Instant,
    /// Times of successful edits.
    pub edits: Vec<Instant>,
    /// Message flags at creation (64 = ephemeral).
    pub flags: u64,
    /// Interaction token, for responses and follow-ups.
    pub interaction_token: Option<String>,
}

impl FakeMessage {
    /// Current text.
    pub fn content(&self) -> String {
        self.json["content"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
    /// Buttons of the message: (custom_id, style, disabled).
    pub fn buttons(&self) -> Vec<(String, u64, bool)> {
        let mut out = Vec::new();
        for row in self.json["components"].as_array().into_iter().flatten() {
            for b in row["components"].as_array().into_iter().flatten() {
                out.push((
                    b["custom_id"].as_str().unwrap_or_default().to_string(),
                    b["style"].as_u64().unwrap_or(0),
                    b["disabled"].as_bool().unwrap_or(false),
                ));
            }
        }
        out
    }
    /// The first embed's description, if any.
    pub fn embed_text(&self) -> String {
        self.json["embeds"][0]["description"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

/// A file attached to a message (multipart `files[n]` part).
#[derive(Debug, Clone)]
pub struct FakeAttachment {
    /// Message it came with.
    pub message_id: String,
    /// Channel it was posted in.
    pub channel: String,
    /// Form field name (`files[0]`).
    pub field: String,
    /// File name from the part's Content-Disposition.
    pub filename: String,
    /// The part's Content-Type.
    pub content_type: String,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// One part of a multipart/form-data body: (name, filename, content type, bytes).
type Part = (String, Option<String>, Option<String>, Vec<u8>);

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Splits a multipart/form-data body; `None` when it is malformed.
fn multipart_parts(content_type: &str, body: &[u8]) -> Option<Vec<Part>> {
    let boundary = content_type
        .split(';')
        .find_map(|p| p.trim().strip_prefix("boundary="))?
        .trim_matches('"');
    let delim = format!("--{boundary}");
    let mut parts = Vec::new();
    let mut pos = find(body, delim.as_bytes(), 0)? + delim.len();
    loop {
        if body.get(pos..pos + 2)? == b"--" {
            return Some(parts);
        }
        let head_start = pos + 2; // CRLF after the delimiter
        let head_end = find(body, b"\r\n\r\n", head_start)?;
        let head = std::str::from_utf8(&body[head_start..head_end]).ok()?;
        let next = find(body, format!("\r\n{delim}").as_bytes(), head_end + 4)?;
        let data = body[head_end + 4..next].to_vec();
        let mut name = None;
        let mut filename = None;
        let mut ctype = None;
        for line in head.split("\r\n") {
            let (k, v) = line.split_once(':')?;
            if k.eq_ignore_ascii_case("content-disposition") {
                for p in v.split(';') {
                    let p = p.trim();
                    if let Some(n) = p.strip_prefix("name=") {
                        name = Some(n.trim_matches('"').to_string());
                    } else if let Some(f) = p.strip_prefix("filename=") {
                        filename = Some(f.trim_matches('"').to_string());
                    }
                }
            } else if k.eq_ignore_ascii_case("content-type") {
                ctype = Some(v.trim().to_string());
            }
        }
        parts.push((name?, filename, ctype, data));
        pos = next + 2 + delim.len();
    }
}

#[derive(Default)]
struct State_ {
    attachments: Vec<FakeAttachment>,
    calls: Vec<Call>,
    messages: BTreeMap<String, FakeMessage>,
    channels: HashMap<String, Value>,
    /// interaction token -> (interaction id, channel id, guild id)
    interactions: HashMap<String, (String, String, Option<String>)>,
    /// token -> original response message id
    originals: HashMap<String, String>,
    identifies: Vec<Value>,
    gateway_connections: usize,
    /// Scripted failures: (method, path substring, retry_after seconds).
    rate_limits: Vec<(String, String, f64)>,
    commands: Vec<(Option<String>, Value)>,
    /// Attachment files served by the fake CDN: path -> (content type, bytes).
    hosted: HashMap<String, (String, Vec<u8>)>,
}

struct Inner {
    state: Mutex<State_>,
    next_id: AtomicU64,
    seq: AtomicU64,
    conns: Mutex<Vec<mpsc::UnboundedSender<String>>>,
    ws_url: Mutex<String>,
    /// While set, gateway connections are closed before the WebSocket handshake.
    refuse_gateway: std::sync::atomic::AtomicBool,
    /// Bumped to cut every gateway connection without a close frame.
    cut: tokio::sync::watch::Sender<u64>,
}

/// The running fake.
#[derive(Clone)]
pub struct FakeDiscord {
    inner: Arc<Inner>,
    rest: SocketAddr,
}

fn now_iso() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, false)
}

/// The bot user as the API shows it (from the recorded mention).
pub fn bot_user() -> Value {
    let mut u = replay("buttonClickHello")["message"]["author"].clone();
    u["id"] = json!(BOT_ID);
    u["username"] = json!("Sparky");
    u["bot"] = json!(true);
    u
}

/// A user object in the recorded shape.
pub fn user_json(id: &str, name: &str) -> Value {
    let mut u = replay("buttonClickHello")["member"]["user"].clone();
    u["id"] = json!(id);
    u["username"] = json!(name);
    u["global_name"] = json!(name);
    u
}

/// A guild member object in the recorded shape.
pub fn member_json(id: &str, name: &str) -> Value {
    let mut m = replay("buttonClickHello")["member"].clone();
    m["user"] = user_json(id, name);
    m
}

impl FakeDiscord {
    /// Starts the REST server and the gateway on loopback ports.
    pub async fn start() -> FakeDiscord {
        let inner = Arc::new(Inner {
            state: Mutex::new(State_::default()),
            next_id: AtomicU64::new(1_457_600_000_000_000_000),
            seq: AtomicU64::new(1),
            conns: Mutex::new(Vec::new()),
            ws_url: Mutex::new(String::new()),
            refuse_gateway: std::sync::atomic::AtomicBool::new(false),
            cut: tokio::sync::watch::channel(0).0,
        });
        // The text channel of the recorded replay.
        inner.state.lock().unwrap().channels.insert(
            CHANNEL_ID.into(),
            json!({"id": CHANNEL_ID, "type": 0, "guild_id": GUILD_ID, "name": "general", "position": 0,
                   "permission_overwrites": [], "nsfw": false, "parent_id": null, "last_message_id": null,
                   "rate_limit_per_user": 0, "topic": null, "flags": 0}),
        );
        let ws = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let ws_addr = ws.local_addr().unwrap();
        *inner.ws_url.lock().unwrap() = format!("ws://{ws_addr}");
        tokio::spawn(gateway(ws, inner.clone()));

        let app = Router::new()
            .route("/api/v10/gateway", get(gateway_url))
            .route("/api/v10/gateway/bot", get(gateway_url))
            .route("/api/v10/users/@me", get(|| async { Json(bot_user()) }))
            .route("/api/v10/oauth2/applications/@me", get(app_info))
            .route("/api/v10/channels/{ch}", get(get_channel))
            .route("/api/v10/channels/{ch}/messages", post(create_message))
            .route("/api/v10/channels/{ch}/messages/{m}", patch(edit_message))
            .route(
                "/api/v10/channels/{ch}/messages/{m}/threads",
                post(create_thread),
            )
            .route("/api/v10/channels/{ch}/typing", post(typing))
            .route(
                "/api/v10/interactions/{id}/{token}/callback",
                post(callback),
            )
            .route("/api/v10/webhooks/{app}/{token}", post(followup))
            .route(
                "/api/v10/webhooks/{app}/{token}/messages/{m}",
                patch(edit_original).get(get_original),
            )
            .route("/api/v10/applications/{app}/commands", put(put_commands))
            .route(
                "/api/v10/applications/{app}/guilds/{g}/commands",
                put(put_commands),
            )
            .route("/attachments/{*path}", get(attachment_file))
            .fallback(unknown)
            .layer(axum::middleware::from_fn_with_state(inner.clone(), record))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let rest = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeDiscord { inner, rest }
    }

    /// The base URL for `discord.api_base_url`.
    pub fn api_base(&self) -> String {
        format!("http://{}/api/v10", self.rest)
    }

    /// Environment for `Config::load`.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("DISCORD_TOKEN".into(), TOKEN.into()),
            ("SPARKY_DISCORD__ENABLED".into(), "true".into()),
            ("SPARKY_DISCORD__API_BASE_URL".into(), self.api_base()),
            // Attachments the fake hosts are served from its own origin (its CDN).
            (
                "SPARKY_DISCORD__FILE_HOSTS".into(),
                format!("http://{}", self.rest),
            ),
        ]
    }

    /// Refuses (or accepts again) gateway connections: the TCP connection is closed before
    /// the WebSocket handshake.
    pub fn refuse_gateway(&self, refuse: bool) {
        self.inner.refuse_gateway.store(refuse, Ordering::SeqCst);
    }

    /// Cuts every gateway connection, as a network failure does (no close frame).
    pub fn cut_gateway(&self) {
        self.inner.cut.send_modify(|n| *n += 1);
    }

    /// Every REST call so far.
    pub fn calls(&self) -> Vec<Call> {
        self.inner.state.lock().unwrap().calls.clone()
    }

    /// REST calls whose method is `method` and path contains `part`.
    pub fn calls_to(&self, method: &str, part: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.method == method && c.path.contains(part))
            .collect()
    }

    /// IDENTIFY payloads received on the gateway.
    pub fn identifies(&self) -> Vec<Value> {
        self.inner.state.lock().unwrap().identifies.clone()
    }

    /// Open gateway connections.
    pub fn connections(&self) -> usize {
        self.inner
            .conns
            .lock()
            .unwrap()
            .iter()
            .filter(|c| !c.is_closed())
            .count()
    }

    /// Every message, oldest first.
    pub fn messages(&self) -> Vec<FakeMessage> {
        let mut v: Vec<FakeMessage> = self
            .inner
            .state
            .lock()
            .unwrap()
            .messages
            .values()
            .cloned()
            .collect();
        v.sort_by_key(|m| m.created);
        v
    }

    /// Messages in one channel or thread, oldest first.
    pub fn messages_in(&self, channel: &str) -> Vec<FakeMessage> {
        self.messages()
            .into_iter()
            .filter(|m| m.channel == channel)
            .collect()
    }

    /// Files posted with messages, in order.
    pub fn attachments(&self) -> Vec<FakeAttachment> {
        self.inner.state.lock().unwrap().attachments.clone()
    }

    /// A message by id.
    pub fn message(&self, id: &str) -> Option<FakeMessage> {
        self.inner.state.lock().unwrap().messages.get(id).cloned()
    }

    /// A channel object.
    pub fn channel(&self, id: &str) -> Option<Value> {
        self.inner.state.lock().unwrap().channels.get(id).cloned()
    }

    /// Registered commands: (guild, command list).
    pub fn registered_commands(&self) -> Vec<(Option<String>, Value)> {
        self.inner.state.lock().unwrap().commands.clone()
    }

    /// The next request matching `method` and containing `path_part` answers 429 with this
    /// `retry_after` (seconds), in the recorded rate-limit shape.
    pub fn rate_limit_next(&self, method: &str, path_part: &str, retry_after: f64) {
        self.inner.state.lock().unwrap().rate_limits.push((
            method.into(),
            path_part.into(),
            retry_after,
        ));
    }

    /// A fresh snowflake.
    pub fn next_id(&self) -> String {
        self.inner
            .next_id
            .fetch_add(1, Ordering::SeqCst)
            .to_string()
    }

    /// Sends a dispatch event to every gateway connection.
    pub fn dispatch(&self, event: &str, d: Value) {
        dispatch_to(&self.inner, event, d);
    }

    /// Closes every gateway connection (the bot process "dies").
    pub fn drop_connections(&self) {
        self.inner.conns.lock().unwrap().clear();
    }

    /// Polls until `f` holds, for at most `secs` seconds.
    pub async fn wait_until<F: FnMut(&FakeDiscord) -> bool>(
        &self,
        secs: u64,
        what: &str,
        mut f: F,
    ) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < deadline {
            if f(self) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!(
            "timed out waiting for {what}; calls:\n{}",
            self.calls()
                .iter()
                .map(|c| format!("{} {} {} {}", c.status, c.method, c.path, c.body))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }

    /// Serves a file at `/attachments/{path}` (as Discord's CDN does); returns its URL.
    pub fn host_attachment(&self, path: &str, content_type: &str, bytes: Vec<u8>) -> String {
        self.inner
            .state
            .lock()
            .unwrap()
            .hosted
            .insert(path.to_string(), (content_type.to_string(), bytes));
        format!("http://{}/attachments/{path}", self.rest)
    }

    /// Stores a user message in a channel and dispatches MESSAGE_CREATE for it, in the
    /// recorded shape. Returns the message id.
    pub fn user_message(
        &self,
        channel: &str,
        user: &str,
        content: &str,
        mention_bot: bool,
    ) -> String {
        self.user_message_with(channel, user, content, mention_bot, json!([]))
    }

    /// [`FakeDiscord::user_message`] carrying `attachments` (attachment objects).
    pub fn user_message_with(
        &self,
        channel: &str,
        user: &str,
        content: &str,
        mention_bot: bool,
        attachments: Value,
    ) -> String {
        let id = self.next_id();
        let is_thread = self
            .channel(channel)
            .map(|c| matches!(c["type"].as_u64(), Some(10..=12)))
            .unwrap_or(false);
        let mut d = replay(if mention_bot {
            "gatewayMention"
        } else {
            "gatewayThreadUserHey"
        })["data"]
            .clone();
        d["id"] = json!(id);
        d["nonce"] = json!(id);
        d["channel_id"] = json!(channel);
        d["channel_type"] = json!(if is_thread { 11 } else { 0 });
        d["guild_id"] = json!(GUILD_ID);
        d["timestamp"] = json!(now_iso());
        d["author"] = user_json(user, "person");
        d["content"] = json!(if mention_bot {
            format!("<@{BOT_ID}> {content}")
        } else {
            content.to_string()
        });
        if mention_bot {
            d["mentions"][0]["id"] = json!(BOT_ID);
        }
        d["attachments"] = attachments;
        self.inner.state.lock().unwrap().messages.insert(
            id.clone(),
            FakeMessage {
                id: id.clone(),
                channel: channel.into(),
                author: user.into(),
                json: d.clone(),
                created: Instant::now(),
                edits: vec![],
                flags: 0,
                interaction_token: None,
            },
        );
        self.dispatch("MESSAGE_CREATE", d);
        id
    }

    /// An application command interaction for `/sparky <sub> ...` in the real shape (the
    /// documented example plus the fields the recorded interactions carry). `options` is the
    /// sub-command's option list (as Discord sends it). Returns (payload, token).
    pub fn command_payload(&self, channel: &str, user: &str, options: Value) -> (Value, String) {
        let mut p = fixture("interaction_application_command.docs.json");
        let recorded = replay("buttonClickHello");
        let id = self.next_id();
        let token = format!("tok-{id}");
        for k in [
            "application_id",
            "app_permissions",
            "attachment_size_limit",
            "authorizing_integration_owners",
            "context",
            "entitlement_sku_ids",
            "entitlements",
            "guild",
            "guild_locale",
            "locale",
            "version",
        ] {
            p[k] = recorded[k].clone();
        }
        p["id"] = json!(id);
        p["token"] = json!(token);
        p["application_id"] = json!(BOT_ID);
        p["guild_id"] = json!(GUILD_ID);
        p["channel_id"] = json!(channel);
        p["channel"] = self
            .channel(channel)
            .unwrap_or_else(|| json!({"id": channel, "type": 0}));
        p["member"] = member_json(user, "person");
        p["data"] =
            json!({"id": "771825006014889984", "name": "sparky", "type": 1, "options": options});
        self.register_interaction(&id, &token, channel);
        (p, token)
    }

    /// A message context-menu command ("Ask Sparky" on `message`, a Discord message object),
    /// shaped as Discord's interaction data for message commands (`type` 3, `target_id`,
    /// `resolved.messages`).
    pub fn message_command_payload(
        &self,
        channel: &str,
        user: &str,
        message: Value,
    ) -> (Value, String) {
        let (mut p, token) = self.command_payload(channel, user, json!([]));
        let target = message["id"].clone();
        let mut messages = serde_json::Map::new();
        messages.insert(target.as_str().unwrap_or_default().to_string(), message);
        p["data"] = json!({
            "id": "866818195033292851",
            "name": "Ask Sparky",
            "type": 3,
            "target_id": target,
            "resolved": {"messages": messages},
        });
        (p, token)
    }

    /// A `/sparky` command in `user`'s direct messages (`dm_channel`): no guild, and the
    /// invoking `user` instead of a guild `member`, as Discord sends it there.
    pub fn dm_command_payload(
        &self,
        dm_channel: &str,
        user: &str,
        options: Value,
    ) -> (Value, String) {
        let (mut p, token) = self.command_payload(dm_channel, user, options);
        if let Some(o) = p.as_object_mut() {
            for k in ["guild_id", "guild", "guild_locale", "member"] {
                o.remove(k);
            }
        }
        p["user"] = user_json(user, "person");
        p["channel"] = json!({"id": dm_channel, "type": 1});
        p["context"] = json!(1);
        (p, token)
    }

    /// A button click on `message` (custom id `custom_id`) by `user`, in the recorded shape.
    /// Returns (payload, token).
    pub fn click_payload(
        &self,
        message: &FakeMessage,
        custom_id: &str,
        user: &str,
    ) -> (Value, String) {
        let mut p = replay("buttonClickHello");
        let id = self.next_id();
        let token = format!("tok-{id}");
        p["id"] = json!(id);
        p["token"] = json!(token);
        p["application_id"] = json!(BOT_ID);
        p["guild_id"] = json!(GUILD_ID);
        p["channel_id"] = json!(message.channel);
        if let Some(c) = self.channel(&message.channel) {
            let mut ch = p["channel"].clone();
            for k in ["id", "parent_id", "owner_id", "name", "type"] {
                ch[k] = c[k].clone();
            }
            p["channel"] = ch;
        }
        p["member"] = member_json(user, "person");
        p["message"] = message.json.clone();
        p["data"] = json!({"component_type": 2, "custom_id": custom_id, "id": 2});
        self.register_interaction(&id, &token, &message.channel);
        (p, token)
    }

    /// A submitted modal (interaction type 5) opened from `message`'s button: `custom_id` the
    /// modal's, `values` the text inputs' custom ids and what was typed, shaped as Discord's
    /// modal submit data (`components`: action rows of text inputs with their `value`).
    pub fn modal_submit_payload(
        &self,
        message: &FakeMessage,
        user: &str,
        custom_id: &str,
        values: &[(&str, &str)],
    ) -> (Value, String) {
        let (mut p, token) = self.click_payload(message, custom_id, user);
        p["type"] = json!(5);
        let rows: Vec<Value> = values
            .iter()
            .map(|(k, v)| json!({"type": 1, "components": [{"type": 4, "custom_id": k, "value": v}]}))
            .collect();
        p["data"] = json!({"custom_id": custom_id, "components": rows});
        (p, token)
    }

    /// A modal submission (type 5) of a form opened by a command in `channel`: the command's
    /// interaction with Discord's modal-submit data (`custom_id`, action rows of text inputs
    /// with their `value`) and no message, as Discord sends for a modal opened by a command.
    pub fn command_modal_submit_payload(
        &self,
        channel: &str,
        user: &str,
        custom_id: &str,
        values: &[(&str, &str)],
    ) -> (Value, String) {
        let (mut p, token) = self.command_payload(channel, user, json!([]));
        p["type"] = json!(5);
        let rows: Vec<Value> = values
            .iter()
            .map(|(k, v)| json!({"type": 1, "components": [{"type": 4, "custom_id": k, "value": v}]}))
            .collect();
        p["data"] = json!({"custom_id": custom_id, "components": rows});
        (p, token)
    }

    fn register_interaction(&self, id: &str, token: &str, channel: &str) {
        self.inner.state.lock().unwrap().interactions.insert(
            token.into(),
            (id.into(), channel.into(), Some(GUILD_ID.into())),
        );
    }

    /// Follow-ups and responses sent with `token`.
    pub fn interaction_messages(&self, token: &str) -> Vec<FakeMessage> {
        self.messages()
            .into_iter()
            .filter(|m| m.interaction_token.as_deref() == Some(token))
            .collect()
    }
}

fn dispatch_to(inner: &Inner, event: &str, d: Value) {
    let s = inner.seq.fetch_add(1, Ordering::SeqCst);
    let text = json!({"op": 0, "t": event, "s": s, "d": d}).to_string();
    inner
        .conns
        .lock()
        .unwrap()
        .retain(|c| c.send(text.clone()).is_ok());
}

async fn gateway(listener: tokio::net::TcpListener, inner: Arc<Inner>) {
    while let Ok((stream, _)) = listener.accept().await {
        let inner = inner.clone();
        if inner.refuse_gateway.load(Ordering::SeqCst) {
            drop(stream);
            continue;
        }
        tokio::spawn(async move {
            let mut cut = inner.cut.subscribe();
            let Ok(ws) = tokio_tungstenite::accept_async(stream).await else {
                return;
            };
            let (mut tx, mut rx) = ws.split();
            let (out, mut out_rx) = mpsc::unbounded_channel::<String>();
            inner.state.lock().unwrap().gateway_connections += 1;
            // HELLO exactly as recorded (heartbeat interval from the fixture).
            let hello = fixture("gateway_hello.docs.json");
            if tx.send(WsMessage::text(hello.to_string())).await.is_err() {
                return;
            }
            let writer = tokio::spawn(async move {
                while let Some(text) = out_rx.recv().await {
                    if tx.send(WsMessage::text(text)).await.is_err() {
                        break;
                    }
                }
                let _ = tx.close().await;
            });
            let mut registered = false;
            loop {
                let msg = tokio::select! {
                    m = rx.next() => m,
                    _ = cut.changed() => break,
                };
                let Some(Ok(msg)) = msg else { break };
                let WsMessage::Text(text) = msg else { continue };
                let Ok(v) = serde_json::from_str::<Value>(text.as_str()) else {
                    continue;
                };
                match v["op"].as_u64() {
                    Some(1) => {
                        let _ = out.send(json!({"op": 11}).to_string());
                    }
                    Some(2) => {
                        inner.state.lock().unwrap().identifies.push(v["d"].clone());
                        let shard = v["d"]["shard"].clone();
                        let ws_url = inner.ws_url.lock().unwrap().clone();
                        let ready = json!({
                            "v": 10, "user": bot_user(), "guilds": [], "session_id": "fake-session",
                            "resume_gateway_url": ws_url, "shard": shard,
                            "application": {"id": BOT_ID, "flags": 8953856}
                        });
                        let s = inner.seq.fetch_add(1, Ordering::SeqCst);
                        let _ = out
                            .send(json!({"op": 0, "t": "READY", "s": s, "d": ready}).to_string());
                        if !registered {
                            inner.conns.lock().unwrap().push(out.clone());
                            registered = true;
                        }
                    }
                    Some(6) => {
                        // No resume support: ask for a fresh IDENTIFY.
                        let _ = out.send(json!({"op": 9, "d": false}).to_string());
                    }
                    _ => {}
                }
            }
            writer.abort();
        });
    }
}

async fn record(
    State(inner): State<Arc<Inner>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let method = req.method().to_string();
    let path = req.uri().path().trim_start_matches("/api/v10").to_string();
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|h| h.to_str().ok())
        .map(str::to_string);
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 24)
        .await
        .unwrap_or_default();
    let body_json: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let limited = {
        let mut st = inner.state.lock().unwrap();
        let pos = st
            .rate_limits
            .iter()
            .position(|(m, p, _)| *m == method && path.contains(p.as_str()));
        pos.map(|i| st.rate_limits.remove(i).2)
    };
    let at = Instant::now();
    let resp = if let Some(retry_after) = limited {
        // The recorded per-route 429 (headers and body), with this retry_after.
        let mut body =
            json!({"message": "You are being rate limited.", "retry_after": 0.0, "global": false});
        body["retry_after"] = json!(retry_after);
        let mut r = (StatusCode::TOO_MANY_REQUESTS, Json(body)).into_response();
        let h = r.headers_mut();
        h.insert(
            "retry-after",
            retry_after.ceil().to_string().parse().unwrap(),
        );
        h.insert("x-ratelimit-limit", "5".parse().unwrap());
        h.insert("x-ratelimit-remaining", "0".parse().unwrap());
        h.insert(
            "x-ratelimit-reset-after",
            retry_after.to_string().parse().unwrap(),
        );
        h.insert("x-ratelimit-bucket", "abcd1234".parse().unwrap());
        h.insert("x-ratelimit-scope", "user".parse().unwrap());
        r
    } else {
        let req = axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes));
        next.run(req).await
    };
    let status = resp.status().as_u16();
    inner.state.lock().unwrap().calls.push(Call {
        method,
        path,
        body: body_json,
        auth,
        status,
        at,
    });
    resp
}

async fn gateway_url(State(inner): State<Arc<Inner>>) -> Json<Value> {
    let url = inner.ws_url.lock().unwrap().clone();
    Json(json!({"url": url, "shards": 1,
        "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 14400000, "max_concurrency": 1}}))
}

async fn app_info() -> Json<Value> {
    Json(json!({
        "id": BOT_ID, "name": "Sparky", "icon": null, "description": "", "bot_public": true,
        "bot_require_code_grant": false, "verify_key": "67c6bd767ca099e79efac9fcce4d2022a63bf7dea780e7f3d813f694c1597089",
        "flags": 8953856, "owner": {"id": USER_ID, "username": "owner", "discriminator": "0", "avatar": null},
        "team": null, "summary": "", "rpc_origins": [], "bot": bot_user()
    }))
}

fn not_found(what: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({"message": format!("Unknown {what}"), "code": 10003})),
    )
        .into_response()
}

fn bad(what: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({"message": what, "code": 50035})),
    )
        .into_response()
}

async fn get_channel(State(inner): State<Arc<Inner>>, Path(ch): Path<String>) -> Response {
    match inner.state.lock().unwrap().channels.get(&ch) {
        Some(c) => Json(c.clone()).into_response(),
        None => not_found("Channel"),
    }
}

/// A bot message in the recorded shape.
pub fn bot_message(id: &str, channel: &str, body: &Value) -> Value {
    let mut m = fixture("message.docs.json");
    m["id"] = json!(id);
    m["channel_id"] = json!(channel);
    m["author"] = bot_user();
    m["reactions"] = json!([]);
    m["timestamp"] = json!(now_iso());
    m["content"] = body.get("content").cloned().unwrap_or(json!(""));
    m["embeds"] = body.get("embeds").cloned().unwrap_or(json!([]));
    m["components"] = body.get("components").cloned().unwrap_or(json!([]));
    m["flags"] = body.get("flags").cloned().unwrap_or(json!(0));
    m
}

fn check_message_body(body: &Value) -> Result<(), String> {
    let content = body.get("content").and_then(Value::as_str).unwrap_or("");
    if content.chars().count() > 2000 {
        return Err(format!(
            "content is {} characters (max 2000)",
            content.chars().count()
        ));
    }
    let has_embeds = body
        .get("embeds")
        .and_then(Value::as_array)
        .is_some_and(|e| !e.is_empty());
    if content.is_empty() && !has_embeds && body.get("components").is_none() {
        return Err("Cannot send an empty message".into());
    }
    for e in body
        .get("embeds")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if e["description"].as_str().unwrap_or("").chars().count() > 4096 {
            return Err("embed description over 4096".into());
        }
    }
    Ok(())
}

fn insert_message(inner: &Inner, channel: &str, body: &Value, token: Option<String>) -> Value {
    let id = inner.next_id.fetch_add(1, Ordering::SeqCst).to_string();
    let m = bot_message(&id, channel, body);
    inner.state.lock().unwrap().messages.insert(
        id.clone(),
        FakeMessage {
            id,
            channel: channel.into(),
            author: BOT_ID.into(),
            json: m.clone(),
            created: Instant::now(),
            edits: vec![],
            flags: body.get("flags").and_then(Value::as_u64).unwrap_or(0),
            interaction_token: token,
        },
    );
    m
}

fn authorized(headers: &HeaderMap) -> bool {
    headers.get("authorization").and_then(|h| h.to_str().ok()) == Some(&format!("Bot {TOKEN}"))
}

async fn create_message(
    State(inner): State<Arc<Inner>>,
    Path(ch): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !authorized(&headers) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"message": "401: Unauthorized", "code": 0})),
        )
            .into_response();
    }
    let ctype = headers
        .get("content-type")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if ctype.starts_with("multipart/form-data") {
        return create_message_with_files(&inner, &ch, ctype, &body);
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return bad("Invalid JSON");
    };
    if !inner.state.lock().unwrap().channels.contains_key(&ch) {
        return not_found("Channel");
    }
    if let Err(e) = check_message_body(&body) {
        return bad(&e);
    }
    Json(insert_message(&inner, &ch, &body, None)).into_response()
}

/// `payload_json` plus `files[n]` parts, as Discord documents for uploads; every file must be
/// named in `payload_json.attachments` by its index.
fn create_message_with_files(inner: &Inner, ch: &str, ctype: &str, body: &[u8]) -> Response {
    let Some(parts) = multipart_parts(ctype, body) else {
        return bad("Invalid multipart body");
    };
    let Some(payload) = parts
        .iter()
        .find(|p| p.0 == "payload_json")
        .and_then(|p| serde_json::from_slice::<Value>(&p.3).ok())
    else {
        return bad("payload_json missing or not JSON");
    };
    if !inner.state.lock().unwrap().channels.contains_key(ch) {
        return not_found("Channel");
    }
    let files: Vec<&Part> = parts.iter().filter(|p| p.0.starts_with("files[")).collect();
    if files.is_empty() {
        return bad("no files[n] part");
    }
    let mut attachments = Vec::new();
    for (name, filename, ctype, data) in &files {
        let Some(index) = name
            .strip_prefix("files[")
            .and_then(|r| r.strip_suffix(']'))
            .and_then(|i| i.parse::<u64>().ok())
        else {
            return bad("bad files[n] name");
        };
        let Some(declared) = payload["attachments"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["id"].as_u64() == Some(index))
        else {
            return bad("attachments[].id does not name the file");
        };
        let Some(filename) = filename.clone() else {
            return bad("file part without filename");
        };
        attachments.push((
            name.clone(),
            filename,
            ctype.clone().unwrap_or_default(),
            data.clone(),
            declared.clone(),
        ));
    }
    let mut msg_body = payload.clone();
    if msg_body["content"].as_str().is_none_or(str::is_empty) {
        // A message may consist of files alone.
        msg_body["content"] = json!("");
    }
    let m = {
        let id = inner.next_id.fetch_add(1, Ordering::SeqCst).to_string();
        let mut m = bot_message(&id, ch, &msg_body);
        m["attachments"] = json!(attachments
            .iter()
            .enumerate()
            .map(|(i, (_, filename, ctype, data, declared))| json!({
                "id": format!("{id}{i}"), "filename": filename, "size": data.len(),
                "content_type": ctype, "description": declared["description"],
                "url": format!("https://cdn.discordapp.com/attachments/{ch}/{id}{i}/{filename}"),
                "proxy_url": format!("https://media.discordapp.net/attachments/{ch}/{id}{i}/{filename}"),
            }))
            .collect::<Vec<_>>());
        m
    };
    let id = m["id"].as_str().unwrap_or_default().to_string();
    let mut st = inner.state.lock().unwrap();
    for (field, filename, content_type, bytes, _) in attachments {
        st.attachments.push(FakeAttachment {
            message_id: id.clone(),
            channel: ch.to_string(),
            field,
            filename,
            content_type,
            bytes,
        });
    }
    st.messages.insert(
        id.clone(),
        FakeMessage {
            id,
            channel: ch.into(),
            author: BOT_ID.into(),
            json: m.clone(),
            created: Instant::now(),
            edits: vec![],
            flags: 0,
            interaction_token: None,
        },
    );
    Json(m).into_response()
}

fn apply_edit(inner: &Inner, id: &str, body: &Value) -> Option<Value> {
    let mut st = inner.state.lock().unwrap();
    let m = st.messages.get_mut(id)?;
    for k in ["content", "embeds", "components", "flags"] {
        if let Some(v) = body.get(k) {
            m.json[k] = v.clone();
        }
    }
    m.json["edited_timestamp"] = json!(now_iso());
    m.edits.push(Instant::now());
    Some(m.json.clone())
}

async fn edit_message(
    State(inner): State<Arc<Inner>>,
    Path((ch, id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !authorized(&headers) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"message": "401: Unauthorized", "code": 0})),
        )
            .into_response();
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return bad("Invalid JSON");
    };
    if let Err(e) =
        check_message_body(&json!({"content": body.get("content").cloned().unwrap_or(json!("x"))}))
    {
        return bad(&e);
    }
    let belongs = inner
        .state
        .lock()
        .unwrap()
        .messages
        .get(&id)
        .map(|m| m.channel == ch);
    match belongs {
        Some(true) => match apply_edit(&inner, &id, &body) {
            Some(m) => Json(m).into_response(),
            None => not_found("Message"),
        },
        _ => not_found("Message"),
    }
}

async fn create_thread(
    State(inner): State<Arc<Inner>>,
    Path((ch, m)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return bad("Invalid JSON");
    };
    let mut st = inner.state.lock().unwrap();
    if st.messages.get(&m).is_none_or(|msg| msg.channel != ch) {
        return not_found("Message");
    }
    if st.channels.contains_key(&m) {
        return bad("A thread has already been created for this message");
    }
    let name = body["name"].as_str().unwrap_or_default();
    if name.is_empty() || name.chars().count() > 100 {
        return bad("thread name must be 1-100 characters");
    }
    // The recorded THREAD_CREATE shape; a message's thread has the message's id.
    let mut t = replay("gatewayThreadCreate")["data"].clone();
    t["id"] = json!(m);
    t["parent_id"] = json!(ch);
    t["owner_id"] = json!(BOT_ID);
    t["guild_id"] = json!(GUILD_ID);
    t["name"] = json!(name);
    t["thread_metadata"]["auto_archive_duration"] = body["auto_archive_duration"].clone();
    st.channels.insert(m.clone(), t.clone());
    Json(t).into_response()
}

async fn typing() -> StatusCode {
    StatusCode::NO_CONTENT
}

async fn callback(
    State(inner): State<Arc<Inner>>,
    Path((id, token)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return bad("Invalid JSON");
    };
    let known = inner
        .state
        .lock()
        .unwrap()
        .interactions
        .get(&token)
        .cloned();
    let Some((iid, channel, _)) = known else {
        return not_found("interaction");
    };
    if iid != id {
        return not_found("interaction");
    }
    if inner.state.lock().unwrap().originals.contains_key(&token) {
        return bad("Interaction has already been acknowledged.");
    }
    match body["type"].as_u64() {
        Some(4) | Some(5) => {
            let data = body.get("data").cloned().unwrap_or(json!({}));
            let mut shown = data.clone();
            if shown.get("content").is_none() {
                shown["content"] = json!("");
            }
            let m = insert_message(&inner, &channel, &shown, Some(token.clone()));
            let mid = m["id"].as_str().unwrap_or_default().to_string();
            inner.state.lock().unwrap().originals.insert(token, mid);
        }
        Some(6) | Some(7) | Some(8) | Some(1) => {
            inner
                .state
                .lock()
                .unwrap()
                .originals
                .insert(token, String::new());
        }
        _ => return bad("unknown interaction response type"),
    }
    StatusCode::NO_CONTENT.into_response()
}

async fn followup(
    State(inner): State<Arc<Inner>>,
    Path((_app, token)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return bad("Invalid JSON");
    };
    let known = inner
        .state
        .lock()
        .unwrap()
        .interactions
        .get(&token)
        .cloned();
    let Some((_, channel, _)) = known else {
        return not_found("Webhook");
    };
    if let Err(e) = check_message_body(&body) {
        return bad(&e);
    }
    Json(insert_message(&inner, &channel, &body, Some(token))).into_response()
}

async fn edit_original(
    State(inner): State<Arc<Inner>>,
    Path((_app, token, m)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    if m != "@original" {
        return not_found("Message");
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return bad("Invalid JSON");
    };
    let (known, original) = {
        let st = inner.state.lock().unwrap();
        (
            st.interactions.get(&token).cloned(),
            st.originals.get(&token).cloned(),
        )
    };
    let Some((_, channel, _)) = known else {
        return not_found("Webhook");
    };
    match original.filter(|o| !o.is_empty()) {
        Some(id) => match apply_edit(&inner, &id, &body) {
            Some(m) => Json(m).into_response(),
            None => not_found("Message"),
        },
        // The HTTP endpoint acknowledges in its response, which the fake does not see: the
        // deferred message exists from the first edit on.
        None => {
            let m = insert_message(&inner, &channel, &body, Some(token.clone()));
            let mid = m["id"].as_str().unwrap_or_default().to_string();
            inner.state.lock().unwrap().originals.insert(token, mid);
            Json(m).into_response()
        }
    }
}

async fn get_original(
    State(inner): State<Arc<Inner>>,
    Path((_app, token, _m)): Path<(String, String, String)>,
) -> Response {
    let st = inner.state.lock().unwrap();
    match st.originals.get(&token).and_then(|id| st.messages.get(id)) {
        Some(m) => Json(m.json.clone()).into_response(),
        None => not_found("Message"),
    }
}

async fn put_commands(State(inner): State<Arc<Inner>>, uri: Uri, body: Bytes) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return bad("Invalid JSON");
    };
    let guild = uri
        .path()
        .split("/guilds/")
        .nth(1)
        .map(|s| s.trim_end_matches("/commands").to_string());
    let mut out = Vec::new();
    for c in body.as_array().into_iter().flatten() {
        let mut c = c.clone();
        c["id"] = json!(inner.next_id.fetch_add(1, Ordering::SeqCst).to_string());
        c["application_id"] = json!(BOT_ID);
        c["version"] = json!("1");
        c["default_member_permissions"] = c
            .get("default_member_permissions")
            .cloned()
            .unwrap_or(Value::Null);
        c["type"] = c.get("type").cloned().unwrap_or(json!(1));
        // Context-menu commands have no description; Discord returns an empty one.
        c["description"] = c.get("description").cloned().unwrap_or(json!(""));
        if let Some(g) = &guild {
            c["guild_id"] = json!(g);
        }
        out.push(c);
    }
    inner.state.lock().unwrap().commands.push((guild, body));
    Json(Value::Array(out)).into_response()
}

async fn attachment_file(State(inner): State<Arc<Inner>>, Path(path): Path<String>) -> Response {
    match inner.state.lock().unwrap().hosted.get(&path) {
        Some((ctype, bytes)) => (
            StatusCode::OK,
            [("content-type", ctype.clone())],
            bytes.clone(),
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "Not Found").into_response(),
    }
}

async fn unknown(method: Method, uri: Uri) -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({"message": format!("fake Discord has no {method} {uri}"), "code": 0})),
    )
        .into_response()
}
