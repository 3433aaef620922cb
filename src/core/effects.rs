//! What the core asks a front end to show. Adapters render these; they decide nothing.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::mention::UserRef;
/// One item of a confirmation card: the pending action's item as stored, which adapters render.
pub use crate::store::ActionItem;

/// A source a final answer relied on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Citation {
    /// Canonical section reference ("250.122", "Table 310.16").
    pub section: String,
    /// Edition year, if known.
    pub edition: Option<i32>,
    /// Where the passage came from.
    pub source: String,
}

/// How a pending action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Confirmed and executed (results in `details`).
    Executed,
    /// Confirmed, but at least one change failed.
    Failed,
    /// Cancelled by a person.
    Cancelled,
    /// Replaced by a typed message.
    Superseded,
    /// Timed out before anyone confirmed.
    Expired,
    /// Someone else resolved it first (a second click or replica).
    AlreadyResolved,
    /// Confirmed, but the project had changed in a way that touches the plan: nothing was
    /// applied (the details say what changed).
    Outdated,
}

/// One platform-neutral effect of handling an input.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Effect {
    /// Transient status, what the bot is doing in words ("thinking", "checking Table 310.16";
    /// see [`super::activity`]).
    Status {
        /// Status text.
        text: String,
    },
    /// A short note for the thread that is not an answer: the person's message waits behind
    /// a turn already running in the thread. Shown once, as its own message.
    Notice {
        /// The note.
        text: String,
    },
    /// A piece of streamed answer text.
    Delta {
        /// The new text.
        text: String,
    },
    /// The final answer text of a model turn (the deltas joined), with its citations.
    Text {
        /// Whole answer.
        text: String,
        /// Sources used.
        citations: Vec<Citation>,
    },
    /// A proposed change waiting for Confirm or Cancel.
    Confirmation {
        /// Action id (goes into button ids).
        action_id: String,
        /// What will change.
        items: Vec<ActionItem>,
        /// Write calls of the same turn that could not be planned, each with why: they are
        /// not part of the proposal, and the person should know.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        rejected: Vec<String>,
        /// Whose message led to it.
        requested_by: String,
        /// Who may confirm, in words (people as [`UserRef`]s).
        confirmers: String,
        /// When it expires.
        expires_at: DateTime<Utc>,
    },
    /// A pending action was resolved.
    Resolved {
        /// Action id.
        action_id: String,
        /// How it ended.
        outcome: Outcome,
        /// Who resolved it.
        by: Option<UserRef>,
        /// Result lines.
        details: Vec<String>,
    },
    /// The result of a person's own tool command (or of the change it proposed, once
    /// confirmed).
    ToolOutput {
        /// Tool name.
        tool: String,
        /// The result, or `{"error": ...}`.
        result: serde_json::Value,
        /// Whether it failed.
        is_error: bool,
    },
    /// A message only `user` should see (e.g. "only alice can confirm").
    Refusal {
        /// Action concerned.
        action_id: Option<String>,
        /// The person it is for.
        user: String,
        /// Why.
        message: String,
    },
    /// A file to deliver in the thread (a rendered report).
    File {
        /// The file.
        file: super::attachment::FileAttachment,
    },
    /// A user-facing error.
    Error {
        /// What went wrong, in plain words.
        message: String,
    },
}

/// Where effects go.
#[async_trait]
pub trait EffectSink: Send + Sync {
    /// Shows one effect.
    async fn emit(&self, effect: Effect);
}

#[async_trait]
impl EffectSink for tokio::sync::mpsc::UnboundedSender<Effect> {
    async fn emit(&self, effect: Effect) {
        // A closed receiver means the front end went away; the state is already stored.
        let _ = self.send(effect);
    }
}

/// Collects effects in memory (tests, benchmarks, one-shot commands).
#[derive(Default)]
pub struct CollectSink(pub std::sync::Mutex<Vec<Effect>>);

impl CollectSink {
    /// The effects so far.
    pub fn take(&self) -> Vec<Effect> {
        match self.0.lock() {
            Ok(mut v) => std::mem::take(&mut *v),
            Err(p) => std::mem::take(&mut *p.into_inner()),
        }
    }
}

#[async_trait]
impl EffectSink for CollectSink {
    async fn emit(&self, effect: Effect) {
        match self.0.lock() {
            Ok(mut v) => v.push(effect),
            Err(p) => p.into_inner().push(effect),
        }
    }
}

impl crate::telemetry::ConfirmationOutcome for Effect {
    fn confirmation_outcome(&self) -> Option<&'static str> {
        match self {
            Effect::Resolved { outcome, .. } => Some(match outcome {
                Outcome::Executed => "executed",
                Outcome::Failed => "failed",
                Outcome::Cancelled => "cancelled",
                Outcome::Superseded => "superseded",
                Outcome::Expired => "expired",
                Outcome::Outdated => "outdated",
                Outcome::AlreadyResolved => "already_resolved",
            }),
            Effect::Refusal {
                action_id: Some(_), ..
            } => Some("refused"),
            _ => None,
        }
    }
}
