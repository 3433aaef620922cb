//! The few Discord REST calls the adapter makes, over the crate's own HTTP client.
//!
//! serenity's `Http` drops the body of a 429 (`retry_after`) when its ratelimiter is off, which
//! it must be behind a proxy; these calls keep it, wait exactly as long as Discord asks and
//! retry under the outbound policy, so no message is lost. Bodies are built with serenity's
//! builders.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde_json::Value;

use crate::config::Secret;
use crate::http_policy::{Failure, Replay, RetryPolicy};
use crate::platforms::surface::SurfaceError;
use crate::retry_after;

/// The official API base; any other base URL is a proxy or a test server.
pub const DISCORD_API: &str = "https://discord.com/api/v10";

/// A REST client bound to one bot token and API base URL.
#[derive(Clone)]
pub struct Rest {
    client: reqwest::Client,
    base: String,
    token: Secret,
    policy: RetryPolicy,
}

/// `path` as logs and errors may show it: the interaction or webhook token that Discord puts
/// in the path (`/interactions/{id}/{token}/callback`, `/webhooks/{app}/{token}/…`) lets
/// anyone post as the bot for 15 minutes, so it is replaced by `{token}`.
pub fn route(path: &str) -> String {
    let token = path_token(path);
    path.split('/')
        .map(|segment| match token {
            Some(t) if segment == t => "{token}",
            _ => segment,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The token segment of an interaction or webhook path.
fn path_token(path: &str) -> Option<&str> {
    let segments: Vec<&str> = path.split('/').collect();
    let at = segments
        .iter()
        .position(|s| *s == "interactions" || *s == "webhooks")?;
    segments.get(at + 2).copied().filter(|t| !t.is_empty())
}

/// `text` (an error body, which a server may echo the path into) without the path's token.
fn without_token(text: &str, path: &str) -> String {
    match path_token(path) {
        Some(token) => text.replace(token, "{token}"),
        None => text.to_string(),
    }
}

/// A failed attempt: the error to report and how the policy should read it.
/// What a request carries.
enum Body<'a> {
    Empty,
    Json(&'a Value),
    Multipart {
        content_type: &'a str,
        bytes: &'a [u8],
    },
}

struct Attempt {
    error: SurfaceError,
    failure: Failure,
}

impl std::fmt::Display for Attempt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

/// Discord's default: four retries, 60 s at most per wait.
const POLICY: RetryPolicy = RetryPolicy {
    max_retries: 4,
    base_delay: Duration::from_millis(150),
    max_delay: Duration::from_secs(60),
};

impl std::fmt::Debug for Rest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rest")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

/// A message as far as the adapter needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRef {
    /// Channel (or thread) id.
    pub channel: String,
    /// Message id.
    pub id: String,
}

/// A channel as far as the adapter needs it (thread ownership and parent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelInfo {
    /// Channel id.
    pub id: String,
    /// Channel type (11 public thread, 12 private thread, 1 DM, ...).
    pub kind: u64,
    /// Parent channel of a thread.
    pub parent_id: Option<String>,
    /// Creator of a thread.
    pub owner_id: Option<String>,
    /// Guild, when in one.
    pub guild_id: Option<String>,
}

impl ChannelInfo {
    /// Reads the fields from a channel object.
    pub fn from_json(v: &Value) -> Option<Self> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        Some(Self {
            id: s("id")?,
            kind: v.get("type").and_then(Value::as_u64).unwrap_or(0),
            parent_id: s("parent_id"),
            owner_id: s("owner_id"),
            guild_id: s("guild_id"),
        })
    }

    /// Whether this is a thread (announcement, public or private).
    pub fn is_thread(&self) -> bool {
        matches!(self.kind, 10..=12)
    }
}

impl Rest {
    /// A client for `base` (e.g. `https://discord.com/api/v10`) with the bot `token`.
    pub fn new(base: &str, token: &str) -> Result<Self, String> {
        Self::with_timeout(base, token, Duration::from_secs(20))
    }

    /// Like [`Rest::new`], giving up on one attempt after `timeout`.
    pub fn with_timeout(base: &str, token: &str, timeout: Duration) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .user_agent("DiscordBot (https://github.com/sparky, 0.1) sparky")
            .build()
            .map_err(|e| format!("cannot build the Discord HTTP client: {e}"))?;
        Ok(Self {
            client,
            base: base.trim_end_matches('/').to_string(),
            token: Secret::new(token),
            policy: POLICY,
        })
    }

    /// Sends a request under the outbound policy ([`crate::http_policy`]): a 429 is waited
    /// out as Discord asks, a connection that never opened is retried, and a POST that may
    /// have reached Discord, or a permanent 4xx, is never sent twice. A 429 still standing at
    /// the end becomes [`SurfaceError::RateLimited`].
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, SurfaceError> {
        let body = match body {
            Some(b) => Body::Json(b),
            None => Body::Empty,
        };
        self.send(method, path, &body).await
    }

    /// Posts a `multipart/form-data` body (a message with files) under the same policy.
    pub(super) async fn post_multipart(
        &self,
        path: &str,
        content_type: &str,
        bytes: &[u8],
    ) -> Result<Value, SurfaceError> {
        let body = Body::Multipart {
            content_type,
            bytes,
        };
        self.send(Method::POST, path, &body).await
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: &Body<'_>,
    ) -> Result<Value, SurfaceError> {
        let replay = match (&method, path) {
            // Showing the typing indicator twice does nothing more.
            (_, p) if p.ends_with("/typing") => Replay::Safe,
            (m, _) => Replay::of_method(m),
        };
        let route = route(path);
        self.policy
            .run_observed(
                &route,
                replay,
                |e: &Attempt| e.failure.clone(),
                crate::platforms::surface::count_rate_limit_wait(super::PLATFORM),
                || self.attempt(method.clone(), path, &route, body),
            )
            .await
            .map_err(|e| e.error)
    }

    /// Replaces the retry policy (tests use short waits).
    pub fn with_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// One attempt, its failure classified for the policy.
    async fn attempt(
        &self,
        method: Method,
        path: &str,
        route: &str,
        body: &Body<'_>,
    ) -> Result<Value, Attempt> {
        let url = format!("{}{}", self.base, path);
        let mut req = self
            .client
            .request(method.clone(), &url)
            .header("Authorization", format!("Bot {}", self.token.expose()));
        req = match body {
            Body::Json(b) => req.json(b),
            Body::Multipart {
                content_type,
                bytes,
            } => req
                .header("Content-Type", *content_type)
                .body(bytes.to_vec()),
            Body::Empty => req.header("Content-Length", "0"),
        };
        let resp = req.send().await.map_err(|e| Attempt {
            failure: Failure::of_reqwest(&e),
            error: SurfaceError::Failed(format!("{method} {route}: {}", e.without_url())),
        })?;
        let status = resp.status();
        let header_wait = resp
            .headers()
            .get("retry-after")
            .and_then(|h| h.to_str().ok())
            .and_then(retry_after::parse_retry_after);
        let text = resp.text().await.unwrap_or_default();
        if status == StatusCode::TOO_MANY_REQUESTS {
            // The body's retry_after is precise (seconds, fractional); the header is rounded up.
            let body_wait = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v.get("retry_after").and_then(Value::as_f64))
                .and_then(retry_after::from_secs);
            let wait = body_wait.or(header_wait).unwrap_or(Duration::from_secs(1));
            return Err(Attempt {
                failure: Failure::Status {
                    status: 429,
                    wait: Some(wait),
                },
                error: SurfaceError::RateLimited(wait),
            });
        }
        if !status.is_success() {
            let message = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
                .unwrap_or(text);
            let message = without_token(&message, path);
            return Err(Attempt {
                failure: Failure::Status {
                    status: status.as_u16(),
                    wait: header_wait,
                },
                error: SurfaceError::Failed(format!("{method} {route}: {status}: {message}")),
            });
        }
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|e| Attempt {
            failure: Failure::Permanent,
            error: SurfaceError::Failed(format!("{method} {route}: bad JSON: {e}")),
        })
    }

    /// Posts a message in a channel or thread.
    pub async fn post_message(
        &self,
        channel: &str,
        body: &impl Serialize,
    ) -> Result<MessageRef, SurfaceError> {
        let v = self
            .call(
                Method::POST,
                &format!("/channels/{channel}/messages"),
                Some(&to_json(body)?),
            )
            .await?;
        message_ref(&v, channel)
    }

    /// Edits a message.
    pub async fn edit_message(
        &self,
        channel: &str,
        message: &str,
        body: &impl Serialize,
    ) -> Result<(), SurfaceError> {
        self.call(
            Method::PATCH,
            &format!("/channels/{channel}/messages/{message}"),
            Some(&to_json(body)?),
        )
        .await
        .map(|_| ())
    }

    /// Shows the typing indicator in a channel (about 10 s).
    pub async fn typing(&self, channel: &str) -> Result<(), SurfaceError> {
        self.call(Method::POST, &format!("/channels/{channel}/typing"), None)
            .await
            .map(|_| ())
    }

    /// Reads a channel.
    pub async fn channel(&self, channel: &str) -> Result<ChannelInfo, SurfaceError> {
        let v = self
            .call(Method::GET, &format!("/channels/{channel}"), None)
            .await?;
        ChannelInfo::from_json(&v)
            .ok_or_else(|| SurfaceError::Failed(format!("channel {channel}: no id in the answer")))
    }

    /// Starts a public thread from a message; the thread's id is the message's id.
    pub async fn thread_from_message(
        &self,
        channel: &str,
        message: &str,
        name: &str,
        archive_minutes: u16,
    ) -> Result<ChannelInfo, SurfaceError> {
        let body = serde_json::json!({"name": thread_name(name), "auto_archive_duration": archive_minutes});
        let v = self
            .call(
                Method::POST,
                &format!("/channels/{channel}/messages/{message}/threads"),
                Some(&body),
            )
            .await?;
        ChannelInfo::from_json(&v)
            .ok_or_else(|| SurfaceError::Failed("thread creation: no id in the answer".into()))
    }

    /// Answers an interaction over REST (the gateway path; the HTTP endpoint answers in its
    /// response instead).
    pub async fn interaction_callback(
        &self,
        id: &str,
        token: &str,
        body: &Value,
    ) -> Result<(), SurfaceError> {
        self.call(
            Method::POST,
            &format!("/interactions/{id}/{token}/callback"),
            Some(body),
        )
        .await
        .map(|_| ())
    }

    /// Edits the original response of an interaction (valid for 15 minutes).
    pub async fn edit_original(
        &self,
        app: &str,
        token: &str,
        body: &impl Serialize,
    ) -> Result<MessageRef, SurfaceError> {
        let v = self
            .call(
                Method::PATCH,
                &format!("/webhooks/{app}/{token}/messages/@original"),
                Some(&to_json(body)?),
            )
            .await?;
        message_ref(&v, "")
    }

    /// Sends a follow-up message for an interaction (valid for 15 minutes).
    pub async fn followup(
        &self,
        app: &str,
        token: &str,
        body: &impl Serialize,
    ) -> Result<MessageRef, SurfaceError> {
        let v = self
            .call(
                Method::POST,
                &format!("/webhooks/{app}/{token}"),
                Some(&to_json(body)?),
            )
            .await?;
        message_ref(&v, "")
    }
}

fn to_json(body: &impl Serialize) -> Result<Value, SurfaceError> {
    serde_json::to_value(body)
        .map_err(|e| SurfaceError::Failed(format!("cannot encode the request: {e}")))
}

fn message_ref(v: &Value, channel: &str) -> Result<MessageRef, SurfaceError> {
    let id = v
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| SurfaceError::Failed("Discord answered without a message id".into()))?;
    let channel = v
        .get("channel_id")
        .and_then(Value::as_str)
        .unwrap_or(channel);
    Ok(MessageRef {
        channel: channel.to_string(),
        id: id.to_string(),
    })
}

/// A thread name from a question: one line, at most 100 characters (Discord's limit).
pub fn thread_name(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("Sparky");
    let mut name: String = line.chars().take(97).collect();
    if line.chars().count() > 97 {
        name.push('…');
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_leave_interaction_and_webhook_tokens_out() {
        assert_eq!(
            route("/interactions/123/tok.en-X/callback"),
            "/interactions/123/{token}/callback"
        );
        assert_eq!(
            route("/webhooks/1100/tok.en-X/messages/@original"),
            "/webhooks/1100/{token}/messages/@original"
        );
        assert_eq!(route("/webhooks/1100/tok.en-X"), "/webhooks/1100/{token}");
        assert_eq!(route("/channels/5/messages"), "/channels/5/messages");
        assert_eq!(
            without_token("unknown path /webhooks/1/tok.en-X", "/webhooks/1/tok.en-X"),
            "unknown path /webhooks/1/{token}"
        );
    }

    #[test]
    fn thread_names_are_short_single_lines() {
        assert_eq!(thread_name("\n  What size EGC?\nmore"), "What size EGC?");
        assert_eq!(thread_name(&"x".repeat(300)).chars().count(), 98);
        assert_eq!(thread_name(""), "Sparky");
    }

    #[test]
    fn channel_info_reads_the_recorded_thread() {
        let v: Value = serde_json::json!({"id": "1", "type": 11, "parent_id": "2", "owner_id": "3", "guild_id": "4"});
        let c = ChannelInfo::from_json(&v).unwrap();
        assert!(c.is_thread());
        assert_eq!(c.parent_id.as_deref(), Some("2"));
    }
}
