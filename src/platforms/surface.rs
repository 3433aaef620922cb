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
use crate::core::{ConfirmationCards, Effect, EffectSink, FileAttachment, Outcome};

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
    /// Shows that the bot is working (typing indicator, status).
    async fn working(&self) {}
    /// The platform's name in metrics.
    fn platform(&self) -> &'static str {
        "other"
    }
    /// Uploads a file into the thread; returns its message ref.
    async fn post_file(&self, file: &FileAttachment) -> Result<String, SurfaceError> {
        Err(SurfaceError::Failed(format!(
            "this platform cannot receive files ({})",
            file.file_name
        )))
    }
}

/// Makes one platform call, counting and logging a failure. The clients already retried what
/// the outbound policy ([`crate::http_policy`]) allows; retrying again here would repeat a
/// post that may have arrived, or a permanent refusal.
async fn logged<T, F, Fut>(platform: &str, what: &str, f: F) -> Option<T>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<T, SurfaceError>>,
{
    match f().await {
        Ok(v) => Some(v),
        Err(e) => {
            let kind = match &e {
                SurfaceError::RateLimited(_) => "rate_limited",
                SurfaceError::Failed(_) => "error",
            };
            crate::telemetry::metrics()
                .platform_errors
                .with_label_values(&[platform, kind])
                .inc();
            tracing::error!(what, error = %e, "platform call failed");
            None
        }
    }
}

struct StreamState {
    pacer: EditPacer,
    /// Messages of the current answer, with the text each shows.
    messages: Vec<(String, String)>,
}

/// Renders effects onto a [`ChatSurface`].
pub struct SurfaceSink<S: ChatSurface> {
    surface: S,
    cards: ConfirmationCards,
    state: Mutex<StreamState>,
}

impl<S: ChatSurface> SurfaceSink<S> {
    /// A sink for one input's effects.
    pub fn new(surface: S, cards: ConfirmationCards) -> Self {
        let interval = surface.edit_interval();
        Self {
            surface,
            cards,
            state: Mutex::new(StreamState {
                pacer: EditPacer::new(interval),
                messages: Vec::new(),
            }),
        }
    }

    /// The surface.
    pub fn surface(&self) -> &S {
        &self.surface
    }

    /// Brings the thread's messages up to `text`: edits changed parts, posts new ones.
    async fn show(&self, state: &mut StreamState, text: &str) {
        let parts = split_message(text, self.surface.max_len());
        for (i, part) in parts.iter().enumerate() {
            match state.messages.get(i) {
                Some((id, shown)) if shown == part => {
                    let _ = id;
                }
                Some((id, _)) => {
                    let id = id.clone();
                    if logged(self.surface.platform(), "edit", || {
                        self.surface.edit_text(&id, part)
                    })
                    .await
                    .is_some()
                    {
                        state.messages[i].1 = part.clone();
                    }
                }
                None => {
                    if let Some(id) = logged(self.surface.platform(), "post", || {
                        self.surface.post_text(part)
                    })
                    .await
                    {
                        state.messages.push((id, part.clone()));
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
            self.show(state, final_text).await;
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
            Effect::Status { .. } => self.surface.working().await,
            // Its own message, apart from any answer being streamed.
            Effect::Notice { text } => {
                let _ = logged(self.surface.platform(), "notice", || {
                    self.surface.post_text(&text)
                })
                .await;
            }
            Effect::Delta { text } => {
                if let Some(shown) = state.pacer.push(&text, Instant::now()) {
                    self.show(&mut state, &shown).await;
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
                if let Some(msg) = logged(self.surface.platform(), "confirmation", || {
                    self.surface.post_confirmation(&view)
                })
                .await
                {
                    if let Err(e) = self.cards.remember(&action_id, &msg).await {
                        tracing::error!(error = %e, "could not remember the confirmation message");
                    }
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
                        let _ = logged(self.surface.platform(), "post outcome", || {
                            self.surface.post_text(&text)
                        })
                        .await;
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
                    let _ = logged(self.surface.platform(), "error", || {
                        self.surface.post_text(&text)
                    })
                    .await;
                }
            }
            Effect::Error { message } => {
                let pending = state.pacer.text().to_string();
                self.finish_stream(&mut state, &pending).await;
                let text = format!("⚠️ {message}");
                let _ = logged(self.surface.platform(), "error", || {
                    self.surface.post_text(&text)
                })
                .await;
            }
            Effect::ToolOutput {
                tool,
                result,
                is_error,
            } => {
                let pending = state.pacer.text().to_string();
                self.finish_stream(&mut state, &pending).await;
                let text = tool_output_text(&tool, &result, is_error);
                let _ = logged(self.surface.platform(), "tool output", || {
                    self.surface.post_text(&text)
                })
                .await;
            }
        }
    }
}
