//! Persistence: one interface, two backends (Postgres + pgvector for teams, SQLite embedded).
//!
//! All state lives here so any replica can continue any session after a crash.
//!
//! Layer: the bottom, with the domain engines. The store imports `domain` and the records of
//! the domain engines it stores (`project`, `nec`, `jurisdiction`); never `core`, `tools`,
//! `config` or a platform. One trait per stored aggregate, each in its own file; [`Store`] is
//! their sum. History and pending-action rows hold [`crate::domain::message`] records, in
//! their own versioned format (docs/message-format.md), never a model provider's types.

mod apply;
mod assistant_threads;
mod audit;
mod chunk_search;
mod common;
mod connect;
mod documents;
mod equipment;
mod failpoint;
mod fence;
mod inbox;
mod index_tuning;
mod json_text;
mod lease_steps;
mod ledger;
pub mod migrations;
mod outbox;
mod pending;
mod pool_check;
mod postgres;
mod project_read;
mod projects;
mod question;
mod records;
pub mod search;
mod sessions;
mod sqlite;
mod thread_open;
mod turn_writes;

use async_trait::async_trait;

pub use assistant_threads::AssistantThreadStore;
pub use audit::AuditStore;
pub use chunk_search::ChunkSearch;
pub use connect::open;
pub use documents::{DocumentStore, CHUNK_BATCH};
pub use equipment::EquipmentStore;
pub use fence::{fenced, LeaseFence};
pub use inbox::{Enqueued, InboxStore, InputFinish, LeaseTaken, StartedInput};
pub use index_tuning::{VectorIndexTuning, TUNING_NEIGHBOURS};
pub use ledger::EventLedger;
pub use outbox::{NewOutbound, Outbound, OutboxStore};
pub use pending::PendingStore;
pub use postgres::{PostgresStore, HNSW_EF_CONSTRUCTION, HNSW_M};
pub use projects::ProjectStore;
pub use records::*;
pub use sessions::SessionStore;
pub use sqlite::SqliteStore;

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
    /// The write belonged to a turn whose thread's lease another process holds now.
    #[error("{0}")]
    LeaseLost(String),
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

/// The persistence interface the rest of the bot uses: the sum of one trait per stored
/// aggregate, so a caller holding a `Store` reaches every method and a part of the code that
/// needs one aggregate can ask for just that trait.
#[async_trait]
pub trait Store:
    ProjectStore
    + EquipmentStore
    + SessionStore
    + InboxStore
    + PendingStore
    + OutboxStore
    + AuditStore
    + AssistantThreadStore
    + EventLedger
    + DocumentStore
    + ChunkSearch
    + VectorIndexTuning
    + Send
    + Sync
{
    /// Which backend this is.
    fn backend(&self) -> Backend;
    /// Checks the database answers (for `/readyz`).
    async fn ping(&self) -> StoreResult<()>;
    /// Appends `messages` to a session's history, in order, and writes `audits`, together
    /// (one round trip on Postgres): the writes of one model step of a turn, which span the
    /// sessions and audit aggregates.
    async fn append_turn_step(
        &self,
        session_id: i64,
        messages: &[NewMessage],
        audits: &[AuditEntry],
    ) -> StoreResult<()>;
    /// A turn's last write: [`append_turn_step`](Self::append_turn_step) and
    /// [`finish_input`](InboxStore::finish_input) of the input it answered, with the lease's
    /// release when `input.release_as` names its owner, atomically (one statement on
    /// Postgres). So an answer is never stored with its input left to be retold as
    /// interrupted. Returns whether the lease was released.
    async fn end_turn(
        &self,
        session_id: i64,
        messages: &[NewMessage],
        audits: &[AuditEntry],
        input: InputFinish<'_>,
    ) -> StoreResult<bool>;
}
