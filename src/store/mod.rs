//! Persistence: one interface, two backends (Postgres + pgvector for teams, SQLite embedded).
//!
//! All state lives here so any replica can continue any session after a crash.

mod apply;
mod common;
mod connect;
mod failpoint;
mod pool_check;
mod postgres;
mod records;
pub mod search;
mod sqlite;
mod turn_writes;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::core::session::{Mode, Session, SessionKey};
use crate::nec::units::Edition;
use crate::project::{
    ChargingSource, ChargingSourceSpec, Circuit, CircuitSpec, Feeder, FeederSpec, LoadItem,
    LoadItemSpec, MemberRole, Panel, PanelSpec, Project, ProjectData, ServiceSpec, Task, TaskSpec,
    Transformer, TransformerSpec, Workspace,
};

pub use connect::connect;
pub use postgres::PostgresStore;
pub use records::*;
pub use sqlite::SqliteStore;

/// Embedded migrations of each backend (their newest version is what this binary supports).
pub mod migrations {
    pub use super::postgres::{INDEXED_DIMS, MIGRATOR as POSTGRES};
    pub use super::sqlite::MIGRATOR as SQLITE;
}

/// Store failures, typed so callers can tell a user's mistake from an outage.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A uniqueness rule was violated (e.g. a panel name already used in the project).
    #[error("{0}")]
    Conflict(String),
    /// A referenced row does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The database was written by a newer version of Sparky.
    #[error("the database schema is at version {found}, newer than this binary supports ({supported}); upgrade sparky")]
    SchemaTooNew {
        /// Version in the database.
        found: i64,
        /// Newest version this binary knows.
        supported: i64,
    },
    /// Anything else from the driver.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// A migration failed.
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A stored JSON value could not be decoded.
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
}

/// Result alias.
pub type StoreResult<T> = Result<T, StoreError>;

/// Which backend a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// PostgreSQL with pgvector.
    Postgres,
    /// Embedded SQLite file.
    Sqlite,
}

/// The persistence interface the rest of the bot uses.
#[async_trait]
pub trait Store: Send + Sync {
    /// Which backend this is.
    fn backend(&self) -> Backend;
    /// Checks the database answers (for `/readyz`).
    async fn ping(&self) -> StoreResult<()>;

    // ----- projects -----
    /// Creates a project in `workspace`; `Conflict` when the name exists there.
    async fn create_project(
        &self,
        workspace: &Workspace,
        name: &str,
        edition: Edition,
    ) -> StoreResult<Project>;
    /// A project by id.
    async fn project(&self, id: i64) -> StoreResult<Option<Project>>;
    /// A project of `workspace` by name (case-insensitive); other workspaces' projects are
    /// never found.
    async fn project_by_name(
        &self,
        workspace: &Workspace,
        name: &str,
    ) -> StoreResult<Option<Project>>;
    /// The projects of `workspace`, by name.
    async fn list_projects(&self, workspace: &Workspace) -> StoreResult<Vec<Project>>;
    /// Saves edition, confirm policy and the job site (location, permit date, override).
    async fn update_project(&self, project: &Project) -> StoreResult<()>;
    /// Binds a channel to a project of the channel's own workspace (replacing any earlier
    /// binding); `NotFound` when the project is not in that workspace.
    async fn bind_channel(
        &self,
        platform: &str,
        workspace: &str,
        channel: &str,
        project_id: i64,
    ) -> StoreResult<()>;
    /// The project a channel is bound to.
    async fn channel_project(
        &self,
        platform: &str,
        workspace: &str,
        channel: &str,
    ) -> StoreResult<Option<i64>>;
    /// Sets a member's role in a project.
    async fn set_member_role(
        &self,
        project_id: i64,
        platform: &str,
        user: &str,
        role: MemberRole,
    ) -> StoreResult<()>;
    /// Removes a member's role; whether there was one.
    async fn remove_member(&self, project_id: i64, platform: &str, user: &str)
        -> StoreResult<bool>;
    /// Every member of a project with their role, by user id.
    async fn members(&self, project_id: i64) -> StoreResult<Vec<(String, MemberRole)>>;
    /// A member's role, if any.
    async fn member_role(
        &self,
        project_id: i64,
        platform: &str,
        user: &str,
    ) -> StoreResult<Option<MemberRole>>;

    // ----- equipment -----
    /// Sets (inserts or replaces) the project's service.
    async fn set_service(&self, project_id: i64, service: &ServiceSpec) -> StoreResult<()>;
    /// Adds a panel; `Conflict` on a duplicate name.
    async fn add_panel(&self, project_id: i64, panel: &PanelSpec) -> StoreResult<Panel>;
    /// Replaces a panel's data.
    async fn update_panel(&self, id: i64, panel: &PanelSpec) -> StoreResult<Panel>;
    /// Removes a panel and its circuits.
    async fn remove_panel(&self, id: i64) -> StoreResult<()>;
    /// Adds a circuit; `Conflict` on a duplicate number in the panel.
    async fn add_circuit(&self, panel_id: i64, circuit: &CircuitSpec) -> StoreResult<Circuit>;
    /// Replaces a circuit's data.
    async fn update_circuit(&self, id: i64, circuit: &CircuitSpec) -> StoreResult<Circuit>;
    /// Removes a circuit.
    async fn remove_circuit(&self, id: i64) -> StoreResult<()>;
    /// Adds a feeder.
    async fn add_feeder(&self, project_id: i64, feeder: &FeederSpec) -> StoreResult<Feeder>;
    /// Adds a transformer.
    async fn add_transformer(
        &self,
        project_id: i64,
        transformer: &TransformerSpec,
    ) -> StoreResult<Transformer>;
    /// Adds an energy-budget load.
    async fn add_load_item(&self, project_id: i64, item: &LoadItemSpec) -> StoreResult<LoadItem>;
    /// Adds a charging source.
    async fn add_charging_source(
        &self,
        project_id: i64,
        source: &ChargingSourceSpec,
    ) -> StoreResult<ChargingSource>;
    /// Creates a task.
    async fn create_task(
        &self,
        project_id: i64,
        task: &TaskSpec,
        created_by: &str,
    ) -> StoreResult<Task>;
    /// Marks a task done; `None` when it does not exist or was already done.
    async fn complete_task(&self, id: i64, by: &str) -> StoreResult<Option<Task>>;
    /// The project's version: bumped by every applied plan.
    async fn project_version(&self, project_id: i64) -> StoreResult<i64>;
    /// Everything about a project; `NotFound` when it does not exist.
    async fn load_project(&self, project_id: i64) -> StoreResult<ProjectData>;

    // ----- sessions and history -----
    /// The session for a key, created with `mode` and `project_id` when new.
    async fn open_session(
        &self,
        key: &SessionKey,
        mode: Mode,
        project_id: Option<i64>,
    ) -> StoreResult<Session>;
    /// A session by id.
    async fn session(&self, id: i64) -> StoreResult<Option<Session>>;
    /// Changes the mode.
    async fn set_session_mode(&self, id: i64, mode: Mode) -> StoreResult<()>;
    /// Changes the project.
    async fn set_session_project(&self, id: i64, project_id: Option<i64>) -> StoreResult<()>;
    /// Stores the running summary and the last message it covers.
    async fn set_session_summary(
        &self,
        id: i64,
        summary: &str,
        through_message_id: i64,
    ) -> StoreResult<()>;
    /// Appends a message to a session's history.
    async fn append_message(
        &self,
        session_id: i64,
        message: &NewMessage,
    ) -> StoreResult<StoredMessage>;
    /// The newest `limit` messages with id > `after_id`, oldest first.
    async fn recent_messages(
        &self,
        session_id: i64,
        after_id: i64,
        limit: usize,
    ) -> StoreResult<Vec<StoredMessage>>;

    // ----- leases and inbox (one turn at a time per thread, across replicas) -----
    /// Takes the session's lease for `owner` until `until`, in one conditional update: when
    /// nobody holds it, `owner` already does, or the holder's lease lapsed before `at`.
    async fn take_lease(
        &self,
        session_id: i64,
        owner: &str,
        until: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> StoreResult<bool>;
    /// Extends `owner`'s lease; `false` when it is no longer theirs.
    async fn renew_lease(
        &self,
        session_id: i64,
        owner: &str,
        until: DateTime<Utc>,
    ) -> StoreResult<bool>;
    /// Gives the lease up; `false` when it was no longer `owner`'s.
    async fn release_lease(&self, session_id: i64, owner: &str) -> StoreResult<bool>;
    /// Queues an input in its session's inbox, claiming its platform event id in the same
    /// transaction; `None` when that event was seen before (a redelivery).
    async fn enqueue_input(&self, input: &NewQueuedInput) -> StoreResult<Option<QueuedInput>>;
    /// The oldest input of a session's inbox.
    async fn next_input(&self, session_id: i64) -> StoreResult<Option<QueuedInput>>;
    /// A queued input by id; `None` once it was finished.
    async fn queued_input(&self, id: i64) -> StoreResult<Option<QueuedInput>>;
    /// Marks an input as started by the lease holder; `false` when it is gone.
    async fn start_input(&self, id: i64) -> StoreResult<bool>;
    /// Removes a finished input from the inbox.
    async fn finish_input(&self, id: i64) -> StoreResult<()>;
    /// Tells the lease holders that the input's waiter is alive until `until`.
    async fn renew_waiter(&self, id: i64, until: DateTime<Utc>) -> StoreResult<bool>;
    /// Threads whose oldest input nobody will take on its own: started under a lease that
    /// lapsed (its process died mid-turn), or waiting with a waiter that stopped renewing.
    async fn orphaned_sessions(&self, at: DateTime<Utc>, limit: usize) -> StoreResult<Vec<i64>>;

    // ----- pending actions (the confirmation gate) -----
    /// Stores a new pending action.
    async fn create_pending(&self, action: &NewPendingAction) -> StoreResult<PendingAction>;
    /// A pending action by id.
    async fn pending(&self, id: &str) -> StoreResult<Option<PendingAction>>;
    /// The session's action still in state `pending`, if any.
    async fn open_pending_for_session(&self, session_id: i64)
        -> StoreResult<Option<PendingAction>>;
    /// Moves an action from `from` to `to` in one conditional update; `None` when it was not
    /// in `from` (already resolved by someone else). This is what makes Confirm idempotent.
    async fn transition_pending(
        &self,
        id: &str,
        from: PendingState,
        to: PendingState,
        by: Option<&str>,
        at: DateTime<Utc>,
    ) -> StoreResult<Option<PendingAction>>;
    /// Records the outcome of an executed (or failed) action.
    async fn set_pending_outcome(&self, id: &str, outcome: &serde_json::Value) -> StoreResult<()>;
    /// Applies the action's stored plan if it is still pending, in one transaction with: the
    /// project's version bump, the action's move to `executed` (or `outdated` when `check`
    /// finds the project changed under the plan; then nothing is applied), and `finish`'s
    /// outcome, history message and audit rows. A crash leaves all of it or none of it.
    async fn apply_pending(&self, req: &ApplyRequest<'_>) -> StoreResult<ApplyOutcome>;
    /// Remembers the platform message that shows the action (to edit it later).
    async fn set_pending_message_ref(&self, id: &str, message_ref: &str) -> StoreResult<()>;

    // ----- audit and events -----
    /// Writes an audit row.
    async fn record_audit(&self, entry: &AuditEntry) -> StoreResult<()>;
    /// Appends `messages` to a session's history, in order, and writes `audits`, together
    /// (one round trip on Postgres): the writes of one model step of a turn.
    async fn append_turn_step(
        &self,
        session_id: i64,
        messages: &[NewMessage],
        audits: &[AuditEntry],
    ) -> StoreResult<()>;
    /// Audit rows of a session, oldest first.
    async fn audit_for_session(&self, session_id: i64) -> StoreResult<Vec<AuditRecord>>;
    /// Records a platform event id; `false` when it was seen before (a redelivery).
    async fn claim_event(&self, platform: &str, event_id: &str) -> StoreResult<bool>;
    /// Records the digest of a verified signed request under `scope` for `window`; `false`
    /// when the same digest was recorded less than `window` ago (a replay). Every replica on
    /// this store sees the same ledger; digests of `scope` older than `window` are forgotten.
    async fn claim_request(
        &self,
        scope: &str,
        digest: &str,
        window: std::time::Duration,
    ) -> StoreResult<bool>;

    // ----- documents and chunks (retrieval) -----
    /// Inserts or updates a document by (source, workspace); returns it and whether its hash changed.
    async fn upsert_document(&self, doc: &NewDocument) -> StoreResult<(Document, bool)>;
    /// Files a document under a jurisdiction's local amendments ("WA", "WA/Seattle"), or
    /// clears that with `None`.
    async fn set_document_jurisdiction(
        &self,
        document_id: i64,
        jurisdiction: Option<&str>,
    ) -> StoreResult<()>;
    /// The amendment documents `workspace` can see: (source, jurisdiction).
    async fn amendment_documents(
        &self,
        workspace: Option<&str>,
    ) -> StoreResult<Vec<(String, String)>>;
    /// Replaces all chunks of a document.
    async fn replace_chunks(&self, document_id: i64, chunks: &[NewChunk]) -> StoreResult<Vec<i64>>;
    /// Stores an embedding for a chunk under a model name (one per chunk and model).
    async fn set_embedding(&self, chunk_id: i64, model: &str, embedding: &[f32])
        -> StoreResult<()>;
    /// Chunks of a model that still lack an embedding.
    async fn chunks_missing_embedding(&self, model: &str, limit: usize) -> StoreResult<Vec<Chunk>>;
    /// Full-text search, best first.
    async fn search_text(
        &self,
        query: &str,
        filter: &ChunkFilter,
        k: usize,
    ) -> StoreResult<Vec<ScoredChunk>>;
    /// Nearest neighbours by cosine similarity for one embedding model, best first.
    async fn search_vector(
        &self,
        embedding: &[f32],
        model: &str,
        filter: &ChunkFilter,
        k: usize,
    ) -> StoreResult<Vec<ScoredChunk>>;
    /// Full text ranked with term rarity (BM25) over a bounded candidate set: the chunks in
    /// `candidates` (found by other retrievers) plus the chunks holding the query's rarer
    /// words, at most `budget` of them, so the cost does not grow with the words everyone
    /// uses. Only chunks that match some word are returned, best first, at most `k` plus
    /// the candidates' count.
    async fn rank_text(
        &self,
        query: &str,
        candidates: &[i64],
        budget: usize,
        filter: &ChunkFilter,
        k: usize,
    ) -> StoreResult<Vec<ScoredChunk>>;
    /// Cosine similarity between `embedding` and the stored vectors of `ids` for `model`;
    /// chunks without such a vector are left out.
    async fn similarities(
        &self,
        ids: &[i64],
        embedding: &[f32],
        model: &str,
    ) -> StoreResult<Vec<(i64, f64)>>;
    /// Chunks whose section reference equals `section` (canonical form).
    async fn chunks_by_section(
        &self,
        section: &str,
        filter: &ChunkFilter,
    ) -> StoreResult<Vec<Chunk>>;
}
