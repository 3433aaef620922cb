//! The Web API calls Sparky makes, and a Slack thread as a [`ChatSurface`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};
use slack_morphism::errors::{SlackClientError, SlackClientHttpProtocolError};
use slack_morphism::prelude::*;

use super::mrkdwn::{escape, sections, truncate, SECTION_MAX};
use crate::http_policy::{Failure, Replay, RetryPolicy};
use crate::platforms::render::ConfirmationView;
use crate::platforms::surface::{ChatSurface, SurfaceError};

/// The slack-morphism client over hyper and rustls (ring).
pub type SlackHyperClient = SlackClient<SlackClientHyperHttpsConnector>;

/// Slack's cap on blocks in one message.
const MAX_BLOCKS: usize = 50;

/// A Web API client bound to the bot token. Every call follows the outbound policy
/// ([`crate::http_policy`]): a rate limit is waited out, a connection that never opened is
/// retried, and a post that may have reached Slack is never sent twice.
pub struct SlackApi {
    client: Arc<SlackHyperClient>,
    token: SlackApiToken,
    policy: RetryPolicy,
    timeout: Duration,
}

/// Longest wait for one Web API answer; a silent server must not hold a turn forever.
const TIMEOUT: Duration = Duration::from_secs(20);

/// Slack's default: four retries, 60 s at most per wait.
const POLICY: RetryPolicy = RetryPolicy {
    max_retries: 4,
    base_delay: Duration::from_millis(250),
    max_delay: Duration::from_secs(60),
};

impl SlackApi {
    /// A client for `api_base_url` (e.g. `https://slack.com/api`) acting with `bot_token`.
    pub fn new(api_base_url: &str, bot_token: &str) -> Self {
        crate::llm::tls::install_default_crypto_provider();
        // http is allowed for loopback test servers and plain-HTTP proxies the operator chose.
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_webpki_roots()
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .build();
        let connector = SlackClientHyperConnector::from(https)
            .with_slack_api_url(api_base_url.trim_end_matches('/'));
        Self {
            client: Arc::new(SlackClient::new(connector)),
            token: SlackApiToken::new(SlackApiTokenValue(bot_token.to_string())),
            policy: POLICY,
            timeout: TIMEOUT,
        }
    }

    /// Gives up on one attempt after `timeout` (its outcome is then unknown).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Replaces the retry policy (tests use short waits).
    pub fn with_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Runs one Web API method under the policy.
    pub(super) async fn run<T, F, Fut>(
        &self,
        method: &str,
        replay: Replay,
        call: F,
    ) -> Result<T, SurfaceError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, SlackClientError>>,
    {
        self.run_under(self.policy, method, replay, call).await
    }

    /// Runs one cosmetic Web API method (a status line) once: a rate limit or a failure is
    /// not waited out, so it never holds up the answer it decorates.
    pub(super) async fn run_once<T, F, Fut>(&self, method: &str, call: F) -> Result<T, SurfaceError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, SlackClientError>>,
    {
        let once = RetryPolicy {
            max_retries: 0,
            ..self.policy
        };
        self.run_under(once, method, Replay::Safe, call).await
    }

    async fn run_under<T, F, Fut>(
        &self,
        policy: RetryPolicy,
        method: &str,
        replay: Replay,
        call: F,
    ) -> Result<T, SurfaceError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, SlackClientError>>,
    {
        let mut call = call;
        let timeout = self.timeout;
        policy
            .run_observed(
                method,
                replay,
                failure,
                crate::platforms::surface::count_rate_limit_wait(super::PLATFORM),
                || {
                    let attempt = call();
                    async move {
                        tokio::time::timeout(timeout, attempt)
                            .await
                            .unwrap_or_else(|_| Err(timed_out(method)))
                    }
                },
            )
            .await
            .map_err(surface_error)
    }

    /// The underlying client (Socket Mode needs it).
    pub fn client(&self) -> Arc<SlackHyperClient> {
        self.client.clone()
    }

    /// The bot token (for calls made in sibling modules, e.g. file uploads).
    pub(super) fn token(&self) -> &SlackApiToken {
        &self.token
    }

    /// `auth.test`: the bot's own user id.
    pub async fn bot_user_id(&self) -> Result<String, SlackClientError> {
        let (client, token) = (&self.client, &self.token);
        let r = self
            .policy
            .run("auth.test", Replay::Safe, failure, move || async move {
                client.open_session(token).auth_test().await
            })
            .await?;
        Ok(r.user_id.0)
    }

    /// `chat.postMessage`; returns the new message's ts.
    pub async fn post(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        text: &str,
        blocks: Vec<SlackBlock>,
    ) -> Result<String, SurfaceError> {
        let mut req = SlackApiChatPostMessageRequest::new(channel.into(), content(text, blocks));
        req.thread_ts = thread_ts.map(|t| SlackTs(t.to_string()));
        let (client, token, req) = (&self.client, &self.token, &req);
        let r = self
            .run("chat.postMessage", Replay::Unsafe, move || async move {
                client.open_session(token).chat_post_message(req).await
            })
            .await?;
        Ok(r.ts.0)
    }

    /// `chat.update`.
    pub async fn update(
        &self,
        channel: &str,
        ts: &str,
        text: &str,
        blocks: Vec<SlackBlock>,
    ) -> Result<(), SurfaceError> {
        let req = SlackApiChatUpdateRequest::new(
            channel.into(),
            content(text, blocks),
            SlackTs(ts.to_string()),
        );
        let (client, token, req) = (&self.client, &self.token, &req);
        self.run("chat.update", Replay::Safe, move || async move {
            client.open_session(token).chat_update(req).await
        })
        .await?;
        Ok(())
    }

    /// `chat.postEphemeral`: a note only `user` sees.
    pub async fn ephemeral(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        user: &str,
        text: &str,
    ) -> Result<(), SurfaceError> {
        let mut req = SlackApiChatPostEphemeralRequest::new(
            channel.into(),
            SlackUserId(user.to_string()),
            SlackMessageContent::new().with_text(text.to_string()),
        );
        req.thread_ts = thread_ts.map(|t| SlackTs(t.to_string()));
        let (client, token, req) = (&self.client, &self.token, &req);
        self.run("chat.postEphemeral", Replay::Unsafe, move || async move {
            client.open_session(token).chat_post_ephemeral(req).await
        })
        .await?;
        Ok(())
    }

    /// `chat.startStream`: a reply that grows by appends; returns its ts.
    pub async fn start_stream(
        &self,
        channel: &str,
        thread_ts: &str,
        recipient: &StreamRecipient,
        markdown: &str,
    ) -> Result<String, SurfaceError> {
        let req = SlackApiChatStartStreamRequest::new(channel.into())
            .with_thread_ts(SlackTs(thread_ts.to_string()))
            .with_recipient_team_id(SlackTeamId(recipient.team.clone()))
            .with_recipient_user_id(SlackUserId(recipient.user.clone()))
            .with_markdown_text(markdown.to_string());
        let (client, token, req) = (&self.client, &self.token, &req);
        let r = self
            .run("chat.startStream", Replay::Unsafe, move || async move {
                client.open_session(token).chat_start_stream(req).await
            })
            .await?;
        Ok(r.ts.0)
    }

    /// `chat.appendStream`.
    pub async fn append_stream(
        &self,
        channel: &str,
        ts: &str,
        markdown: &str,
    ) -> Result<(), SurfaceError> {
        let req = SlackApiChatAppendStreamRequest::new(channel.into(), SlackTs(ts.to_string()))
            .with_markdown_text(markdown.to_string());
        let (client, token, req) = (&self.client, &self.token, &req);
        self.run("chat.appendStream", Replay::Unsafe, move || async move {
            client.open_session(token).chat_append_stream(req).await
        })
        .await?;
        Ok(())
    }

    /// `chat.stopStream`, appending `markdown` last when not empty.
    pub async fn stop_stream(
        &self,
        channel: &str,
        ts: &str,
        markdown: &str,
    ) -> Result<(), SurfaceError> {
        let mut content = SlackMessageContent::new();
        if !markdown.is_empty() {
            content = content.with_markdown_text(markdown.to_string());
        }
        // Stopping with nothing to add is idempotent; with text it appends it.
        let replay = if markdown.is_empty() {
            Replay::Safe
        } else {
            Replay::Unsafe
        };
        let req =
            SlackApiChatStopStreamRequest::new(channel.into(), SlackTs(ts.to_string()), content);
        let (client, token, req) = (&self.client, &self.token, &req);
        self.run("chat.stopStream", replay, move || async move {
            client.open_session(token).chat_stop_stream(req).await
        })
        .await?;
        Ok(())
    }

    /// `reactions.add` / `reactions.remove`.
    pub async fn react(
        &self,
        channel: &str,
        ts: &str,
        name: &str,
        add: bool,
    ) -> Result<(), SurfaceError> {
        let (client, token) = (&self.client, &self.token);
        let name = SlackReactionName(name.to_string());
        let name = &name;
        // Adding a reaction that is there (or removing one that is not) changes nothing.
        self.run("reactions", Replay::Safe, move || async move {
            let session = client.open_session(token);
            if add {
                session
                    .reactions_add(&SlackApiReactionsAddRequest::new(
                        channel.into(),
                        name.clone(),
                        SlackTs(ts.to_string()),
                    ))
                    .await
                    .map(|_| ())
            } else {
                session
                    .reactions_remove(
                        &SlackApiReactionsRemoveRequest::new(name.clone())
                            .with_channel(channel.into())
                            .with_timestamp(SlackTs(ts.to_string())),
                    )
                    .await
                    .map(|_| ())
            }
        })
        .await
    }
}

fn content(text: &str, blocks: Vec<SlackBlock>) -> SlackMessageContent {
    // `text` is the notification and accessibility fallback when blocks are present.
    let c = SlackMessageContent::new().with_text(truncate(text, SECTION_MAX));
    if blocks.is_empty() {
        c
    } else {
        c.with_blocks(blocks)
    }
}

/// 429 becomes [`SurfaceError::RateLimited`] with Slack's Retry-After (1 s when absent).
pub fn surface_error(e: SlackClientError) -> SurfaceError {
    match e {
        SlackClientError::RateLimitError(r) => {
            let wait = r.retry_after.unwrap_or(Duration::from_secs(1));
            SurfaceError::RateLimited(wait.min(crate::retry_after::MAX_WAIT))
        }
        other => SurfaceError::Failed(other.to_string()),
    }
}

/// A call that got no answer in time: an I/O error, so its outcome counts as unknown.
fn timed_out(method: &str) -> SlackClientError {
    SlackClientError::HttpProtocolError(SlackClientHttpProtocolError::new().with_cause(Box::new(
        std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("{method}: no answer in time"),
        ),
    )))
}

/// How a Web API call failed, for the retry policy.
fn failure(e: &SlackClientError) -> Failure {
    match e {
        SlackClientError::RateLimitError(r) => Failure::Status {
            status: 429,
            wait: r.retry_after.map(|w| w.min(crate::retry_after::MAX_WAIT)),
        },
        SlackClientError::HttpError(h) => Failure::Status {
            status: h.status_code.as_u16(),
            wait: None,
        },
        SlackClientError::HttpProtocolError(p) => {
            let never_sent = p
                .cause
                .as_deref()
                .and_then(|c| c.downcast_ref::<hyper_util::client::legacy::Error>())
                .is_some_and(|c| c.is_connect());
            if never_sent {
                Failure::NotSent
            } else {
                Failure::Unknown
            }
        }
        // `ok: false` answers: Slack's own rate limit is a 429; its internal errors leave the
        // outcome unknown; everything else (channel_not_found, invalid_auth, ...) is final.
        SlackClientError::ApiError(a) => match a.code.as_str() {
            "ratelimited" | "rate_limited" => Failure::Status {
                status: 429,
                wait: None,
            },
            "internal_error" | "fatal_error" | "service_unavailable" | "request_timeout" => {
                Failure::Unknown
            }
            _ => Failure::Permanent,
        },
        SlackClientError::EndOfStream(_) => Failure::Unknown,
        _ => Failure::Permanent,
    }
}

/// Blocks from JSON written in Slack's own format.
fn blocks(values: Vec<Value>) -> Result<Vec<SlackBlock>, SurfaceError> {
    values
        .into_iter()
        .map(|v| {
            serde_json::from_value(v).map_err(|e| SurfaceError::Failed(format!("bad block: {e}")))
        })
        .collect()
}

fn mrkdwn_section(text: &str) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn", "text": truncate(text, SECTION_MAX)}})
}

/// The blocks of an answer: one section per at most 3,000 characters.
pub fn text_blocks(markdown: &str) -> Vec<Value> {
    let mut parts = sections(markdown);
    if parts.len() > MAX_BLOCKS {
        parts.truncate(MAX_BLOCKS);
    }
    parts.iter().map(|s| mrkdwn_section(s)).collect()
}

/// The blocks of a confirmation: a header, a section per item with its details, who may
/// confirm, and Confirm (primary) / Cancel (danger) buttons carrying the action id.
pub fn confirmation_blocks(view: &ConfirmationView, action_id: &str) -> Vec<Value> {
    let mut out = vec![json!({
        "type": "header",
        "text": {"type": "plain_text", "text": truncate(&view.title, 150), "emoji": true}
    })];
    // Room for the header, the footer, the buttons and an overflow note.
    let room = MAX_BLOCKS - 4;
    for (summary, details) in view.items.iter().take(room) {
        let mut text = format!("*{}*", escape(summary));
        for d in details {
            text.push_str("\n• ");
            text.push_str(&escape(d));
        }
        out.push(mrkdwn_section(&text));
    }
    if view.items.len() > room {
        out.push(mrkdwn_section(&format!(
            "…and {} more change(s).",
            view.items.len() - room
        )));
    }
    out.push(json!({
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": truncate(&escape(&view.footer), SECTION_MAX)}]
    }));
    out.push(json!({
        "type": "actions",
        "block_id": "sparky_confirmation",
        "elements": [
            {
                "type": "button",
                "text": {"type": "plain_text", "text": "Confirm", "emoji": true},
                "style": "primary",
                "action_id": view.confirm_id,
                "value": action_id,
            },
            {
                "type": "button",
                "text": {"type": "plain_text", "text": "Cancel", "emoji": true},
                "style": "danger",
                "action_id": view.cancel_id,
                "value": action_id,
            }
        ]
    }));
    if let Some(edit) = &view.edit_id {
        if let Some(buttons) = out.last_mut().and_then(|b| b["elements"].as_array_mut()) {
            buttons.push(json!({
                "type": "button",
                "text": {"type": "plain_text", "text": "Edit", "emoji": true},
                "action_id": edit,
                "value": action_id,
            }));
        }
    }
    out
}

/// The blocks that replace a resolved confirmation: its outcome and result lines, no buttons.
pub fn outcome_blocks(outcome: &str, details: &[String]) -> Vec<Value> {
    let mut out = vec![mrkdwn_section(&format!("*{}*", escape(outcome)))];
    if !details.is_empty() {
        let text = details
            .iter()
            .map(|d| escape(d))
            .collect::<Vec<_>>()
            .join("\n");
        out.push(mrkdwn_section(&text));
    }
    out
}

/// `"CHANNEL:ts"`, the stored reference of a message.
pub fn message_ref(channel: &str, ts: &str) -> String {
    format!("{channel}:{ts}")
}

/// Splits a stored message reference.
pub fn parse_message_ref(r: &str) -> Result<(&str, &str), SurfaceError> {
    r.split_once(':')
        .filter(|(c, t)| !c.is_empty() && !t.is_empty())
        .ok_or_else(|| SurfaceError::Failed(format!("not a Slack message reference: {r}")))
}

/// Where a turn's replies go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadTarget {
    /// Channel id.
    pub channel: String,
    /// Thread root ts.
    pub thread_ts: String,
    /// The message to mark with the working reaction, if any.
    pub react_to: Option<String>,
}

/// Who a streamed reply is for (Slack's streaming API requires it in channels).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamRecipient {
    /// Team id.
    pub team: String,
    /// User id.
    pub user: String,
}

/// Streaming state of one surface: the recipient, whether Slack accepts streaming (shared by
/// every thread, so one refusal switches all replies to chat.update), and the open streams
/// with the Markdown each shows.
struct Streaming {
    recipient: StreamRecipient,
    available: Arc<AtomicBool>,
    open: std::sync::Mutex<Vec<(String, String)>>,
}

impl Streaming {
    fn open(&self) -> std::sync::MutexGuard<'_, Vec<(String, String)>> {
        match self.open.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    fn shown(&self, message: &str) -> Option<String> {
        self.open()
            .iter()
            .find(|(m, _)| m == message)
            .map(|(_, t)| t.clone())
    }

    fn set(&self, message: &str, text: Option<&str>) {
        let mut open = self.open();
        open.retain(|(m, _)| m != message);
        if let Some(t) = text {
            open.push((message.to_string(), t.to_string()));
        }
    }
}

/// One Slack thread as the shared renderer sees it.
pub struct SlackThread {
    api: Arc<SlackApi>,
    target: ThreadTarget,
    edit_interval: Duration,
    reaction: String,
    reacted: AtomicBool,
    streaming: Option<Streaming>,
    /// In an assistant thread, the status line shown under it while the bot works (instead
    /// of the reaction): what it says now, once set.
    status_line: Option<std::sync::Mutex<Option<String>>>,
}

impl SlackThread {
    /// A surface for `target`.
    pub fn new(
        api: Arc<SlackApi>,
        target: ThreadTarget,
        edit_interval: Duration,
        reaction: &str,
    ) -> Self {
        Self {
            api,
            target,
            edit_interval,
            reaction: reaction.to_string(),
            reacted: AtomicBool::new(false),
            streaming: None,
            status_line: None,
        }
    }

    /// Shows the bot's work as the assistant thread's status line
    /// (`assistant.threads.setStatus`), cleared when the turn is over.
    pub fn in_assistant_thread(mut self) -> Self {
        self.status_line = Some(std::sync::Mutex::new(None));
        self
    }

    /// Records that the status line says `text` (`None`: nothing); whether that is a change
    /// to show (never without a status line).
    fn status_to(&self, text: Option<&str>) -> bool {
        let Some(line) = &self.status_line else {
            return false;
        };
        let mut shown = match line.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if shown.as_deref() == text {
            return false;
        }
        *shown = text.map(str::to_string);
        true
    }

    /// Streams replies for `recipient` with chat.startStream/appendStream/stopStream while
    /// `available` holds; it is cleared (for every thread sharing it) when Slack refuses.
    pub fn with_streaming(
        mut self,
        recipient: StreamRecipient,
        available: Arc<AtomicBool>,
    ) -> Self {
        self.streaming = Some(Streaming {
            recipient,
            available,
            open: std::sync::Mutex::new(Vec::new()),
        });
        self
    }

    /// Ends open streams, clears the status line and removes the working reaction once the
    /// turn is over.
    pub async fn finish(&self) {
        if let Some(s) = &self.streaming {
            let open = std::mem::take(&mut *s.open());
            for (message, _) in open {
                if let Ok((channel, ts)) = parse_message_ref(&message) {
                    if let Err(e) = self.api.stop_stream(channel, ts, "").await {
                        tracing::warn!(error = %e, "could not stop a streamed reply");
                    }
                }
            }
        }
        if self.status_to(None) {
            let t = &self.target;
            if let Err(e) = self.api.set_status(&t.channel, &t.thread_ts, "", &[]).await {
                tracing::debug!(error = %e, "could not clear the assistant status");
            }
        }
        if self.reacted.swap(false, Ordering::SeqCst) {
            if let Some(ts) = &self.target.react_to {
                if let Err(e) = self
                    .api
                    .react(&self.target.channel, ts, &self.reaction, false)
                    .await
                {
                    tracing::debug!(error = %e, "could not remove the working reaction");
                }
            }
        }
    }
}

#[async_trait]
impl ChatSurface for SlackThread {
    fn platform(&self) -> &'static str {
        "slack"
    }

    fn address(&self) -> Option<crate::platforms::surface::ThreadAddress> {
        Some(crate::platforms::surface::ThreadAddress {
            channel: self.target.channel.clone(),
            thread: self.target.thread_ts.clone(),
        })
    }

    fn max_len(&self) -> usize {
        super::mrkdwn::MESSAGE_MAX
    }

    async fn post_file(&self, file: &crate::core::FileAttachment) -> Result<String, SurfaceError> {
        let t = &self.target;
        self.api.upload_file(&t.channel, &t.thread_ts, file).await
    }

    fn edit_interval(&self) -> Duration {
        self.edit_interval
    }

    async fn post_text(&self, text: &str) -> Result<String, SurfaceError> {
        if let Some(s) = self
            .streaming
            .as_ref()
            .filter(|s| s.available.load(Ordering::SeqCst))
        {
            let t = &self.target;
            match self
                .api
                .start_stream(&t.channel, &t.thread_ts, &s.recipient, text)
                .await
            {
                Ok(ts) => {
                    let r = message_ref(&t.channel, &ts);
                    s.set(&r, Some(text));
                    return Ok(r);
                }
                Err(SurfaceError::RateLimited(d)) => return Err(SurfaceError::RateLimited(d)),
                Err(SurfaceError::Failed(e)) => {
                    tracing::warn!(error = %e, "Slack refused chat streaming; using chat.update from now on");
                    s.available.store(false, Ordering::SeqCst);
                }
            }
        }
        let ts = self
            .api
            .post(
                &self.target.channel,
                Some(&self.target.thread_ts),
                &super::mrkdwn::to_mrkdwn(text),
                blocks(text_blocks(text))?,
            )
            .await?;
        Ok(message_ref(&self.target.channel, &ts))
    }

    async fn edit_text(&self, message: &str, text: &str) -> Result<(), SurfaceError> {
        let (channel, ts) = parse_message_ref(message)?;
        if let Some(s) = &self.streaming {
            if let Some(shown) = s.shown(message) {
                return match text.strip_prefix(shown.as_str()) {
                    Some("") => Ok(()),
                    Some(more) => {
                        self.api.append_stream(channel, ts, more).await?;
                        s.set(message, Some(text));
                        Ok(())
                    }
                    None => {
                        // Not an extension: the renderer cut this message to continue in a
                        // new one. The stream is closed as it stands.
                        self.api.stop_stream(channel, ts, "").await?;
                        s.set(message, None);
                        Ok(())
                    }
                };
            }
        }
        self.api
            .update(
                channel,
                ts,
                &super::mrkdwn::to_mrkdwn(text),
                blocks(text_blocks(text))?,
            )
            .await
    }

    async fn post_confirmation(&self, view: &ConfirmationView) -> Result<String, SurfaceError> {
        let action_id = view
            .confirm_id
            .strip_prefix(crate::platforms::render::CONFIRM_PREFIX)
            .unwrap_or(&view.confirm_id);
        let fallback = format!(
            "{}: {}",
            view.title,
            view.items
                .iter()
                .map(|i| i.0.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        );
        let ts = self
            .api
            .post(
                &self.target.channel,
                Some(&self.target.thread_ts),
                &escape(&fallback),
                blocks(confirmation_blocks(view, action_id))?,
            )
            .await?;
        Ok(message_ref(&self.target.channel, &ts))
    }

    async fn close_confirmation(
        &self,
        message: &str,
        outcome: &str,
        details: &[String],
    ) -> Result<(), SurfaceError> {
        let (channel, ts) = parse_message_ref(message)?;
        self.api
            .update(
                channel,
                ts,
                &escape(outcome),
                blocks(outcome_blocks(outcome, details))?,
            )
            .await
    }

    async fn private(&self, user: &str, text: &str) -> Result<(), SurfaceError> {
        self.api
            .ephemeral(
                &self.target.channel,
                Some(&self.target.thread_ts),
                user,
                &escape(text),
            )
            .await
    }

    async fn working(&self, status: &str) {
        if self.status_line.is_some() {
            let text = format!("is {}…", status.trim().trim_end_matches('…'));
            if self.status_to(Some(&text)) {
                let loading = crate::core::activity::loading_messages(status);
                let t = &self.target;
                // A status line is cosmetic: a refusal is logged, never fatal.
                if let Err(e) = self
                    .api
                    .set_status(&t.channel, &t.thread_ts, &text, &loading)
                    .await
                {
                    tracing::debug!(error = %e, "could not set the assistant status");
                }
            }
            return;
        }
        if self.reaction.is_empty() {
            return;
        }
        let Some(ts) = &self.target.react_to else {
            return;
        };
        if self.reacted.swap(true, Ordering::SeqCst) {
            return;
        }
        // A missing reaction is cosmetic: never retried, never fatal.
        if let Err(e) = self
            .api
            .react(&self.target.channel, ts, &self.reaction, true)
            .await
        {
            tracing::debug!(error = %e, "could not add the working reaction");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confirmation_blocks_deserialize_and_carry_the_action() {
        let view = crate::platforms::render::confirmation_view(
            "act-1",
            &[crate::core::effects::ActionItem {
                call_id: "c1".into(),
                args: serde_json::json!({}),
                tool: "create_task".into(),
                summary: "Create task <Label panels>".into(),
                details: vec!["due: Friday".into()],
                plan: Default::default(),
            }],
            &[],
            "U1",
            chrono::Utc::now(),
        );
        let values = confirmation_blocks(&view, "act-1");
        let parsed = blocks(values.clone()).expect("valid Block Kit");
        assert_eq!(parsed.len(), 4);
        let actions = &values[3]["elements"];
        assert_eq!(actions[0]["action_id"], "sparky:confirm:act-1");
        assert_eq!(actions[0]["style"], "primary");
        assert_eq!(actions[1]["action_id"], "sparky:cancel:act-1");
        assert_eq!(actions[1]["style"], "danger");
        assert_eq!(actions[1]["value"], "act-1");
        assert!(values[1]["text"]["text"]
            .as_str()
            .unwrap_or("")
            .contains("&lt;Label panels&gt;"));
    }

    #[test]
    fn message_refs_round_trip() {
        let r = message_ref("C1", "171.0002");
        assert_eq!(parse_message_ref(&r).ok(), Some(("C1", "171.0002")));
        assert!(parse_message_ref("nope").is_err());
    }
}
