//! Rendering core effects onto a chat thread, written once for every platform.
//!
//! An adapter implements [`ChatSurface`] (post, edit, buttons, private notes) for one thread;
//! [`SurfaceSink`] turns the effect stream into those calls: streamed text paced and split at
//! the platform's limit, confirmations with buttons (their message remembered in the store so
//! any replica can close them), calls retried by the clients as the outbound policy allows,
//! so no message is lost.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::Mutex;

use super::render::{
    citations_line, confirmation_view, outcome_line, split_message, tool_output_text,
    ConfirmationView, EditPacer,
};
use crate::core::{
    ConfirmationCards, Effect, EffectSink, FileAttachment, OutboundMessage, Outbox, Outcome,
};

/// A platform call that failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SurfaceError {
    /// 429: wait and retry.
    #[error("rate limited for {0:?}")]
    RateLimited(Duration),
    /// Anything else (logged; the turn goes on).
    #[error("{0}")]
    Failed(String),
}

/// Where a thread is, enough to write into it later from any process (a queued message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadAddress {
    /// The platform's channel id.
    pub channel: String,
    /// The thread within it (Slack's thread ts; Discord's thread channel id).
    pub thread: String,
}

/// One thread on a platform, as the renderer needs it. Message refs are the platform's ids
/// as text (they are stored to edit messages later, possibly from another process).
#[async_trait]
pub trait ChatSurface: Send + Sync {
    /// Longest message the platform accepts, in characters.
    fn max_len(&self) -> usize;
    /// Shortest interval between edits of one message.
    fn edit_interval(&self) -> Duration;
    /// Posts a new message in the thread.
    async fn post_text(&self, text: &str) -> Result<String, SurfaceError>;
    /// Replaces a message's text.
    async fn edit_text(&self, message: &str, text: &str) -> Result<(), SurfaceError>;
    /// Posts a confirmation with Confirm and Cancel buttons.
    async fn post_confirmation(&self, view: &ConfirmationView) -> Result<String, SurfaceError>;
    /// Shows the outcome on a confirmation message and disables or removes its buttons.
    async fn close_confirmation(
        &self,
        message: &str,
        outcome: &str,
        details: &[String],
    ) -> Result<(), SurfaceError>;
    /// A note only `user` sees.
    async fn private(&self, user: &str, text: &str) -> Result<(), SurfaceError>;
    /// Shows that the bot is working (typing indicator, status line); `status` says on what,
    /// in words ([`crate::core::activity`]).
    async fn working(&self, _status: &str) {}
    /// The platform's name in metrics.
    fn platform(&self) -> &'static str {
        "other"
    }
    /// Where the thread is, for a message kept to deliver later; `None` when it cannot be
    /// written to later (the console).
    fn address(&self) -> Option<ThreadAddress> {
        None
    }
    /// Uploads a file into the thread; returns its message ref.
    async fn post_file(&self, file: &FileAttachment) -> Result<String, SurfaceError> {
        Err(SurfaceError::Failed(format!(
            "this platform cannot receive files ({})",
            file.file_name
        )))
    }
}

/// A surface chosen at run time (by the platform a stored thread belongs to).
#[async_trait]
impl ChatSurface for Box<dyn ChatSurface> {
    fn max_len(&self) -> usize {
        (**self).max_len()
    }
    fn edit_interval(&self) -> Duration {
        (**self).edit_interval()
    }
    async fn post_text(&self, text: &str) -> Result<String, SurfaceError> {
        (**self).post_text(text).await
    }
    async fn edit_text(&self, message: &str, text: &str) -> Result<(), SurfaceError> {
        (**self).edit_text(message, text).await
    }
    async fn post_confirmation(&self, view: &ConfirmationView) -> Result<String, SurfaceError> {
        (**self).post_confirmation(view).await
    }
    async fn close_confirmation(
        &self,
        message: &str,
        outcome: &str,
        details: &[String],
    ) -> Result<(), SurfaceError> {
        (**self).close_confirmation(message, outcome, details).await
    }
    async fn private(&self, user: &str, text: &str) -> Result<(), SurfaceError> {
        (**self).private(user, text).await
    }
    async fn working(&self, status: &str) {
        (**self).working(status).await
    }
    fn platform(&self) -> &'static str {
        (**self).platform()
    }
    fn address(&self) -> Option<ThreadAddress> {
        (**self).address()
    }
    async fn post_file(&self, file: &FileAttachment) -> Result<String, SurfaceError> {
        (**self).post_file(file).await
    }
}

/// How one platform call ended.
enum Call<T> {
    Done(T),
    /// Rate limited past what the client waited out; the wait the platform asked for.
    Limited(Duration),
    Failed,
}

/// Makes one platform call, counting and logging a failure. The clients already retried what
/// the outbound policy ([`crate::http_policy`]) allows; retrying again here would repeat a
/// post that may have arrived, or a permanent refusal.
async fn call<T, F, Fut>(platform: &str, what: &str, f: F) -> Call<T>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<T, SurfaceError>>,
{
    match f().await {
        Ok(v) => Call::Done(v),
        Err(e) => {
            let (kind, outcome) = match &e {
                SurfaceError::RateLimited(wait) => ("rate_limited", Call::Limited(*wait)),
                SurfaceError::Failed(_) => ("error", Call::Failed),
            };
            crate::telemetry::metrics()
                .platform_errors
                .with_label_values(&[platform, kind])
                .inc();
            tracing::error!(what, error = %e, "platform call failed");
            outcome
        }
    }
}

/// [`call`] when only success matters.
async fn logged<T, F, Fut>(platform: &str, what: &str, f: F) -> Option<T>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<T, SurfaceError>>,
{
    match call(platform, what, f).await {
        Call::Done(v) => Some(v),
        _ => None,
    }
}

/// Counts a platform's 429 that is waited out before sending again (for
/// [`RetryPolicy::run_observed`](crate::http_policy::RetryPolicy::run_observed)).
pub fn count_rate_limit_wait(platform: &'static str) -> impl Fn(&crate::http_policy::Failure) {
    move |failure| {
        if failure.is_rate_limit() {
            rate_limit_waited(platform);
        }
    }
}

/// Counts one 429 of `platform` that is waited out before sending again.
pub(crate) fn rate_limit_waited(platform: &str) {
    crate::telemetry::metrics()
        .rate_limit_waits
        .with_label_values(&[platform])
        .inc();
}

/// A confirmation card kept in the outbox: posted with its buttons, and remembered as the
/// action's card, when the platform accepts it.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct KeptCard {
    /// The pending action it shows.
    pub(crate) action_id: String,
    /// What it shows.
    pub(crate) view: ConfirmationView,
}

struct StreamState {
    pacer: EditPacer,
    /// Messages of the current answer, with the text each shows.
    messages: Vec<(String, String)>,
    /// The platform refused a message for a rate limit: what follows in this thread is kept
    /// in the outbox behind it (in order) instead of being sent now. Holds the wait asked for.
    deferred: Option<Duration>,
}

/// Renders effects onto a [`ChatSurface`].
pub struct SurfaceSink<S: ChatSurface> {
    surface: S,
    cards: ConfirmationCards,
    outbox: Outbox,
    state: Mutex<StreamState>,
}

impl<S: ChatSurface> SurfaceSink<S> {
    /// A sink for one input's effects; text the platform refuses for a rate limit goes to
    /// `outbox`.
    pub fn new(surface: S, cards: ConfirmationCards, outbox: Outbox) -> Self {
        let interval = surface.edit_interval();
        Self {
            surface,
            cards,
            outbox,
            state: Mutex::new(StreamState {
                pacer: EditPacer::new(interval),
                messages: Vec::new(),
                deferred: None,
            }),
        }
    }

    /// Keeps `text` (a new message, or the new text of `edit_of`) for delivery once the
    /// platform accepts it, not before `wait` from now.
    async fn keep(&self, text: &str, edit_of: Option<&str>, wait: Duration) {
        self.queue(text, edit_of, None, wait).await;
    }

    /// Keeps the card of `action_id` for delivery with its buttons, not before `wait` from now.
    async fn keep_card(&self, action_id: &str, view: &ConfirmationView, wait: Duration) {
        let card = KeptCard {
            action_id: action_id.to_string(),
            view: view.clone(),
        };
        match serde_json::to_string(&card) {
            Ok(json) => self.queue(&view.title, None, Some(json), wait).await,
            Err(e) => tracing::error!(error = %e, "could not keep a rate-limited card"),
        }
    }

    async fn queue(&self, text: &str, edit_of: Option<&str>, card: Option<String>, wait: Duration) {
        let Some(address) = self.surface.address() else {
            tracing::error!("a rate-limited message cannot be kept on this surface");
            return;
        };
        let now = chrono::Utc::now();
        let message = OutboundMessage {
            platform: self.surface.platform().to_string(),
            channel: address.channel,
            thread: address.thread,
            text: text.to_string(),
            edit_of: edit_of.map(str::to_string),
            card,
            created_at: now,
            not_before: now + chrono::Duration::from_std(wait).unwrap_or_default(),
        };
        match self.outbox.queue(&message).await {
            Ok(()) => tracing::info!(
                platform = self.surface.platform(),
                wait_ms = wait.as_millis() as u64,
                "the platform is rate limiting; message kept for delivery"
            ),
            Err(e) => tracing::error!(error = %e, "could not keep a rate-limited message"),
        }
    }

    /// Posts `text`, or keeps it in the outbox when the thread is deferred or the post is
    /// refused for a rate limit.
    async fn post_or_keep(&self, state: &mut StreamState, what: &str, text: &str) {
        if let Some(wait) = state.deferred {
            return self.keep(text, None, wait).await;
        }
        if let Call::Limited(wait) = call(self.surface.platform(), what, || {
            self.surface.post_text(text)
        })
        .await
        {
            state.deferred = Some(wait);
            self.keep(text, None, wait).await;
        }
    }

    /// The surface.
    pub fn surface(&self) -> &S {
        &self.surface
    }

    /// Brings the thread's messages up to `text`: edits changed parts, posts new ones. A part
    /// refused for a rate limit defers the thread; the last text of an answer (`last`) is then
    /// kept in the outbox, an intermediate one is not (the last supersedes it).
    async fn show(&self, state: &mut StreamState, text: &str, last: bool) {
        let parts = split_message(text, self.surface.max_len());
        for (i, part) in parts.iter().enumerate() {
            let shown = state.messages.get(i).cloned();
            if let Some(wait) = state.deferred {
                if last && shown.as_ref().is_none_or(|(_, s)| s != part) {
                    self.keep(part, shown.as_ref().map(|(id, _)| id.as_str()), wait)
                        .await;
                }
                continue;
            }
            match shown {
                Some((_, s)) if s == *part => {}
                Some((id, _)) => {
                    match call(self.surface.platform(), "edit", || {
                        self.surface.edit_text(&id, part)
                    })
                    .await
                    {
                        Call::Done(()) => state.messages[i].1 = part.clone(),
                        Call::Limited(wait) => {
                            state.deferred = Some(wait);
                            if last {
                                self.keep(part, Some(&id), wait).await;
                            }
                        }
                        Call::Failed => {}
                    }
                }
                None => {
                    match call(self.surface.platform(), "post", || {
                        self.surface.post_text(part)
                    })
                    .await
                    {
                        Call::Done(id) => state.messages.push((id, part.clone())),
                        Call::Limited(wait) => {
                            state.deferred = Some(wait);
                            if last {
                                self.keep(part, None, wait).await;
                            }
                        }
                        Call::Failed => {}
                    }
                }
            }
        }
    }

    async fn finish_stream(&self, state: &mut StreamState, final_text: &str) {
        if !final_text.is_empty() {
            // Respect the pacing for the last edit too.
            if let Some(next) = state.pacer.next_allowed() {
                let now = Instant::now();
                if next > now && !state.messages.is_empty() {
                    tokio::time::sleep(next - now).await;
                }
            }
            self.show(state, final_text, true).await;
        }
        let interval = self.surface.edit_interval();
        state.pacer = EditPacer::new(interval);
        state.messages.clear();
    }
}

#[async_trait]
impl<S: ChatSurface> EffectSink for SurfaceSink<S> {
    async fn emit(&self, effect: Effect) {
        let mut state = self.state.lock().await;
        match effect {
            Effect::Status { text } => self.surface.working(&text).await,
            // Its own message, apart from any answer being streamed.
            Effect::Notice { text } => {
                let _ = logged(self.surface.platform(), "notice", || {
                    self.surface.post_text(&text)
                })
                .await;
            }
            Effect::Delta { text } => {
                if let Some(shown) = state.pacer.push(&text, Instant::now()) {
                    // A deferred thread shows nothing until its last text.
                    if state.deferred.is_none() {
                        self.show(&mut state, &shown, false).await;
                    }
                    state.pacer.edited(Instant::now());
                }
            }
            Effect::Text { text, citations } => {
                let mut full = if text.is_empty() {
                    state.pacer.text().to_string()
                } else {
                    text
                };
                if let Some(line) = citations_line(&citations) {
                    full.push_str("\n\n");
                    full.push_str(&line);
                }
                self.finish_stream(&mut state, &full).await;
            }
            Effect::Confirmation {
                action_id,
                items,
                rejected,
                confirmers,
                expires_at,
                ..
            } => {
                let pending = state.pacer.text().to_string();
                self.finish_stream(&mut state, &pending).await;
                let view =
                    confirmation_view(&action_id, &items, &rejected, &confirmers, expires_at);
                if let Some(wait) = state.deferred {
                    return self.keep_card(&action_id, &view, wait).await;
                }
                match call(self.surface.platform(), "confirmation", || {
                    self.surface.post_confirmation(&view)
                })
                .await
                {
                    Call::Done(msg) => {
                        if let Err(e) = self.cards.remember(&action_id, &msg).await {
                            tracing::error!(error = %e, "could not remember the confirmation message");
                        }
                    }
                    Call::Limited(wait) => {
                        state.deferred = Some(wait);
                        self.keep_card(&action_id, &view, wait).await;
                    }
                    Call::Failed => {}
                }
            }
            // A late click: the confirmation already shows how it ended, and the clicker gets
            // the accompanying private note.
            Effect::Resolved {
                outcome: Outcome::AlreadyResolved,
                ..
            } => {}
            Effect::Resolved {
                action_id,
                outcome,
                by,
                details,
            } => {
                let line = outcome_line(outcome, by.as_ref());
                match self.cards.shown_in(&action_id).await {
                    Some(m) => {
                        let _ = logged(self.surface.platform(), "close confirmation", || {
                            self.surface.close_confirmation(&m, &line, &details)
                        })
                        .await;
                    }
                    None => {
                        let text = std::iter::once(line)
                            .chain(details)
                            .collect::<Vec<_>>()
                            .join("\n");
                        self.post_or_keep(&mut state, "post outcome", &text).await;
                    }
                }
            }
            Effect::Refusal { user, message, .. } => {
                let _ = logged(self.surface.platform(), "private note", || {
                    self.surface.private(&user, &message)
                })
                .await;
            }
            Effect::File { file } => {
                let pending = state.pacer.text().to_string();
                self.finish_stream(&mut state, &pending).await;
                if logged(self.surface.platform(), "file", || {
                    self.surface.post_file(&file)
                })
                .await
                .is_none()
                {
                    let text = format!("⚠️ I could not attach {}; try again.", file.file_name);
                    self.post_or_keep(&mut state, "error", &text).await;
                }
            }
            Effect::Error { message } => {
                let pending = state.pacer.text().to_string();
                self.finish_stream(&mut state, &pending).await;
                let text = format!("⚠️ {message}");
                self.post_or_keep(&mut state, "error", &text).await;
            }
            Effect::ToolOutput {
                tool,
                result,
                is_error,
            } => {
                let pending = state.pacer.text().to_string();
                self.finish_stream(&mut state, &pending).await;
                let text = tool_output_text(&tool, &result, is_error);
                self.post_or_keep(&mut state, "tool output", &text).await;
            }
        }
    }
}
