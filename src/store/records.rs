//! Records stored for the agent core: messages, pending actions, audit, documents.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::message::{MessageRecord, ToolCallRecord, ToolResultRecord};
use crate::domain::policy::ConfirmPolicy;
use crate::domain::workspace::Workspace;
use crate::project::plan::{Change, ItemPlan, Written};
use crate::project::ProjectData;

/// A message to append to a session.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMessage {
    /// The message as stored (docs/message-format.md).
    pub message: MessageRecord,
    /// Estimated tokens of the message as the model was sent it (pictures included).
    pub tokens: i64,
    /// Platform user id of the author, for user messages.
    pub author: Option<String>,
    /// Platform event id that produced it, if any.
    pub event_id: Option<String>,
}

/// A stored message.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    /// Database id (increasing within a session).
    pub id: i64,
    /// Owning session.
    pub session_id: i64,
    /// The message as stored.
    pub message: MessageRecord,
    /// Author of a user message.
    pub author: Option<String>,
    /// Estimated tokens.
    pub tokens: i64,
    /// When stored.
    pub created_at: DateTime<Utc>,
}

/// A thread read back with a question just stored in it
/// ([`SessionStore::append_and_recent`](super::SessionStore::append_and_recent)).
#[derive(Debug, Clone, PartialEq)]
pub struct AskedThread {
    /// The newest messages, oldest first, the question last.
    pub messages: Vec<StoredMessage>,
    /// The thread's project and that project's revision, as the same statement saw them
    /// (Postgres; `None` when not read): the turn then reads the project without looking its
    /// revision up again.
    pub project_revision: Option<(i64, i64)>,
}

/// Lifecycle of a pending action (DESIGN.md section 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PendingState {
    /// Waiting for a person.
    Pending,
    /// Confirmed and being executed (only actions stored by earlier versions; a plan is
    /// applied in the same transaction that records its confirmation).
    Confirmed,
    /// Executed; `outcome` holds the results.
    Executed,
    /// Cancelled by a person.
    Cancelled,
    /// Replaced by a typed correction.
    Superseded,
    /// Timed out.
    Expired,
    /// Confirmed, but the project had changed in a way that touches the plan: nothing was
    /// applied.
    Outdated,
}

impl PendingState {
    /// Stable name used in storage.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Confirmed => "confirmed",
            Self::Executed => "executed",
            Self::Cancelled => "cancelled",
            Self::Superseded => "superseded",
            Self::Expired => "expired",
            Self::Outdated => "outdated",
        }
    }

    /// Parses the stored name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => Self::Pending,
            "confirmed" => Self::Confirmed,
            "executed" => Self::Executed,
            "cancelled" => Self::Cancelled,
            "superseded" => Self::Superseded,
            "expired" => Self::Expired,
            "outdated" => Self::Outdated,
            _ => return None,
        })
    }
}

/// Where a pending action came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionOrigin {
    /// Write calls of a model turn: the results go back to the model.
    #[default]
    Model,
    /// A person's tool command: the result is shown to them; the model is not involved.
    Command,
}

impl ActionOrigin {
    /// Stable name used in storage.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Model => "model",
            Self::Command => "command",
        }
    }

    /// Parses the stored name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "model" => Some(Self::Model),
            "command" => Some(Self::Command),
            _ => None,
        }
    }
}

/// One item of an action plan, as shown to the person who confirms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionItem {
    /// The tool call it comes from.
    pub call_id: String,
    /// Tool name.
    pub tool: String,
    /// Validated arguments.
    pub args: serde_json::Value,
    /// One line: what will change.
    pub summary: String,
    /// Details lines: the resulting state (e.g. panel load after the change).
    #[serde(default)]
    pub details: Vec<String>,
    /// The exact changes Confirm applies (empty for items stored by earlier versions, which
    /// are refused and proposed again).
    #[serde(default)]
    pub plan: ItemPlan,
}

/// Who may confirm an action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfirmRule {
    /// The policy in force.
    pub policy: ConfirmPolicy,
    /// The requester (always allowed).
    pub requester: String,
}

/// A pending action to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewPendingAction {
    /// Action id (UUID text).
    pub id: String,
    /// Owning session.
    pub session_id: i64,
    /// Who may confirm.
    pub rule: ConfirmRule,
    /// The write calls awaiting confirmation.
    pub calls: Vec<ToolCallRecord>,
    /// Results already computed for the read-only calls of the same model turn.
    pub prior_results: Vec<ToolResultRecord>,
    /// What the person sees.
    pub items: Vec<ActionItem>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Expiry time.
    pub expires_at: DateTime<Utc>,
    /// The project the plan changes.
    pub project_id: Option<i64>,
    /// The project's version when planned.
    pub planned_version: Option<i64>,
    /// Model turn or a person's command.
    pub origin: ActionOrigin,
}

/// A stored pending action.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingAction {
    /// Action id.
    pub id: String,
    /// Owning session.
    pub session_id: i64,
    /// State.
    pub state: PendingState,
    /// Who may confirm.
    pub rule: ConfirmRule,
    /// The write calls.
    pub calls: Vec<ToolCallRecord>,
    /// Results of the read-only calls of the same turn.
    pub prior_results: Vec<ToolResultRecord>,
    /// What the person sees.
    pub items: Vec<ActionItem>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Expiry time.
    pub expires_at: DateTime<Utc>,
    /// Who resolved it.
    pub resolved_by: Option<String>,
    /// When.
    pub resolved_at: Option<DateTime<Utc>>,
    /// Execution results.
    pub outcome: Option<serde_json::Value>,
    /// Platform message showing the action.
    pub message_ref: Option<String>,
    /// The project the plan changes.
    pub project_id: Option<i64>,
    /// The project's version when planned.
    pub planned_version: Option<i64>,
    /// Model turn or a person's command.
    pub origin: ActionOrigin,
}

/// What the store is asked to do when a person confirms: apply the action's stored plan, in
/// one transaction with its state change, the results the model will see and the audit rows.
pub struct ApplyRequest<'a> {
    /// The action.
    pub action_id: &'a str,
    /// Who confirmed.
    pub by: &'a str,
    /// When.
    pub at: DateTime<Utc>,
    /// Why the plan no longer fits the project as it is now (empty: apply it).
    #[allow(clippy::type_complexity)]
    pub check: &'a (dyn Fn(&ProjectData, &[Change]) -> Vec<String> + Send + Sync),
    /// What to record with the outcome.
    pub finish: &'a (dyn Fn(&PendingAction, &Applied) -> Finish + Send + Sync),
}

/// What happened to a plan inside the apply transaction.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
    /// Applied: the rows written, per item.
    Written(Vec<Vec<Written>>),
    /// Nothing applied: why the plan no longer fits.
    Outdated(Vec<String>),
}

/// Records written in the apply transaction besides the changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Finish {
    /// Stored as the action's outcome.
    pub outcome: serde_json::Value,
    /// Appended to the session's history (the results the model will see).
    pub message: Option<NewMessage>,
    /// Audit rows.
    pub audit: Vec<AuditEntry>,
}

/// The result of [`Store::apply_pending`](super::Store::apply_pending).
// Returned once per confirmation and never stored: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ApplyOutcome {
    /// No such action.
    Missing,
    /// Already resolved (a second click, another replica): nothing was done.
    NotPending(PendingAction),
    /// Resolved now: executed or outdated.
    Done {
        /// The action as resolved.
        action: PendingAction,
        /// What happened to the plan.
        applied: Applied,
        /// What was recorded.
        finish: Finish,
    },
}

/// Kinds of audited events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditKind {
    /// A tool ran.
    Execution,
    /// A write action was proposed.
    Proposed,
    /// Confirmed by a person.
    Confirmed,
    /// Cancelled by a person.
    Cancelled,
    /// Superseded by a typed correction.
    Corrected,
    /// Expired.
    Expired,
    /// A confirm attempt by someone not allowed.
    Refused,
}

impl AuditKind {
    /// Stable name used in storage.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Execution => "execution",
            Self::Proposed => "proposed",
            Self::Confirmed => "confirmed",
            Self::Cancelled => "cancelled",
            Self::Corrected => "corrected",
            Self::Expired => "expired",
            Self::Refused => "refused",
        }
    }

    /// Parses the stored name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "execution" => Self::Execution,
            "proposed" => Self::Proposed,
            "confirmed" => Self::Confirmed,
            "cancelled" => Self::Cancelled,
            "corrected" => Self::Corrected,
            "expired" => Self::Expired,
            "refused" => Self::Refused,
            _ => return None,
        })
    }
}

/// An audit row to write.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// Session, when the event belongs to one.
    pub session_id: Option<i64>,
    /// Who: platform user id, or "model" / "system".
    pub actor: String,
    /// What happened.
    pub kind: AuditKind,
    /// Tool involved.
    pub tool: Option<String>,
    /// Pending action involved.
    pub action_id: Option<String>,
    /// Arguments.
    pub args: serde_json::Value,
    /// Result or details (shared with the tool result it records).
    pub result: std::sync::Arc<serde_json::Value>,
    /// Whether it failed.
    pub is_error: bool,
    /// How long it took.
    pub duration_ms: i64,
    /// When.
    pub at: DateTime<Utc>,
}

/// A stored audit row.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRecord {
    /// Database id.
    pub id: i64,
    /// The entry.
    pub entry: AuditEntry,
}

/// A document to ingest.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDocument {
    /// Where it came from (file name, URL, "sparky:summaries").
    pub source: String,
    /// Title.
    pub title: String,
    /// Workspace that may see it; `None` = everyone.
    pub workspace: Option<Workspace>,
    /// SHA-256 of the whole content.
    pub content_hash: String,
}

/// A stored document.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Database id.
    pub id: i64,
    /// Source.
    pub source: String,
    /// Title.
    pub title: String,
    /// Visibility: the workspace that may see it; `None` = everyone.
    pub workspace: Option<Workspace>,
    /// Content hash.
    pub content_hash: String,
}

/// A chunk to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewChunk {
    /// Canonical section reference ("250.122", "Table 310.16"), if detected.
    pub section: Option<String>,
    /// NEC edition year, if known.
    pub edition: Option<i32>,
    /// Page in the source document.
    pub page: Option<i32>,
    /// Heading or title of the chunk.
    pub heading: String,
    /// Text.
    pub text: String,
    /// SHA-256 of the text.
    pub content_hash: String,
}

/// A stored chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// Database id.
    pub id: i64,
    /// Owning document.
    pub document_id: i64,
    /// Source of the owning document.
    pub source: String,
    /// Section reference.
    pub section: Option<String>,
    /// Edition year.
    pub edition: Option<i32>,
    /// Page.
    pub page: Option<i32>,
    /// Heading.
    pub heading: String,
    /// Text.
    pub text: String,
    /// Content hash.
    pub content_hash: String,
}

/// A chunk with a relevance score (higher is better).
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredChunk {
    /// The chunk.
    pub chunk: Chunk,
    /// Score: ts_rank / bm25-derived for text, cosine similarity for vectors.
    pub score: f64,
}

/// Which chunks a search may see.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChunkFilter {
    /// Only this edition (chunks without an edition always pass).
    pub edition: Option<i32>,
    /// The asking workspace: sees global chunks plus its own.
    pub workspace: Option<Workspace>,
}

impl ChunkFilter {
    /// The workspace as stored in `documents.workspace` (`platform:id`).
    pub fn workspace_key(&self) -> Option<String> {
        self.workspace.as_ref().map(ToString::to_string)
    }
}

/// How wide the approximate vector index searches (Postgres's HNSW `ef_search`), as measured
/// against exact search for a recall target.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexTuning {
    /// Candidate list of a search (`hnsw.ef_search`).
    pub ef_search: usize,
    /// Recall@10 against exact search measured at `ef_search` (0–1).
    pub recall: f64,
    /// The recall it was chosen for.
    pub recall_target: f64,
    /// Query vectors measured.
    pub queries: usize,
    /// Vectors the index held when measured.
    pub vectors: i64,
}

impl IndexTuning {
    /// Whether the measured recall reaches the target (the widest list measured is kept when
    /// none does).
    pub fn reached(&self) -> bool {
        self.recall >= self.recall_target
    }
}

/// An input to queue in its session's inbox.
#[derive(Debug, Clone, PartialEq)]
pub struct NewQueuedInput {
    /// Session (thread) it belongs to.
    pub session_id: i64,
    /// Platform whose event id de-duplicates it.
    pub platform: String,
    /// Platform user id of the person.
    pub user: String,
    /// Platform event id, claimed in the same transaction as the insert.
    pub event_id: Option<String>,
    /// What they did, as the core encodes it.
    pub action: serde_json::Value,
    /// Until when its waiter is known to be alive.
    pub waiter_until: DateTime<Utc>,
    /// The person's message, stored when the input starts as it is queued with no proposal
    /// waiting in the thread; the thread is then read back with it
    /// ([`StartedInput::asked`](super::StartedInput::asked)).
    pub question: Option<QueuedQuestion>,
}

/// A message stored with its input's start, and how much of the thread to read back with it
/// (as [`SessionStore::append_and_recent`](super::SessionStore::append_and_recent) does).
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedQuestion {
    /// The message.
    pub message: NewMessage,
    /// Messages read back at most, the question included.
    pub limit: usize,
}

/// An input waiting (or running) in a session's inbox; the oldest is taken first.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedInput {
    /// Database id (increasing: the order of arrival).
    pub id: i64,
    /// Session it belongs to.
    pub session_id: i64,
    /// Platform user id of the person.
    pub user: String,
    /// Platform event id, if any.
    pub event_id: Option<String>,
    /// What they did, as the core encodes it.
    pub action: serde_json::Value,
    /// Whether a lease holder started it (and, if it is still here, did not finish it).
    pub running: bool,
    /// Until when its waiter is known to be alive.
    pub waiter_until: DateTime<Utc>,
    /// When it arrived.
    pub created_at: DateTime<Utc>,
}

/// Who creates a project, and the channel it is made in (bound to it at once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectOwner {
    /// The creator's platform user id; the project's first owner.
    pub user: String,
    /// The channel the project is created from.
    pub channel: String,
}

/// An assistant thread (Slack's split-view AI app) as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssistantThread {
    /// The thread (the app's direct-message channel and the thread's ts on Slack).
    pub key: crate::domain::session::SessionKey,
    /// Who opened it.
    pub user: String,
    /// The channel the person was last seen viewing, when Slack said.
    pub context_channel: Option<String>,
    /// Whether the thread was given its title (after its first question).
    pub titled: bool,
}

/// A pending action still waiting, with the thread it was proposed in.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitingAction {
    /// The action.
    pub action: PendingAction,
    /// Its thread.
    pub key: crate::domain::session::SessionKey,
}

/// A change a person confirmed and the store applied, as the audit trail records it.
#[derive(Debug, Clone, PartialEq)]
pub struct AppliedChange {
    /// The action that was applied.
    pub action_id: String,
    /// The project it changed.
    pub project_id: i64,
    /// Who confirmed it.
    pub by: String,
    /// When.
    pub at: DateTime<Utc>,
    /// What changed, item by item.
    pub items: Vec<ActionItem>,
    /// The thread it was proposed in.
    pub key: crate::domain::session::SessionKey,
}
