//! A person's message stored and the thread's history read back with it: one statement on
//! Postgres (a data-modifying `WITH` and the window's select), two in a row on SQLite, where
//! there is no network.
//!
//! A turn that asks the model stores the message, then reads the history to build the
//! request; the thread's lease makes the turn the only writer, so the history read in the same
//! statement (whose snapshot does not hold the new row) plus the new row is the same list.
//! The same statement reads the revision of the thread's project, so the turn's read of the
//! project (kept per process when unchanged) needs no lookup of its own.

use std::sync::LazyLock;

use sqlx::postgres::PgRow;
use sqlx::Row;

use super::common::{db, limit, message_from, violation, INSERT_MESSAGE};
use super::{AskedThread, NewMessage, PostgresStore, SessionStore, SqliteStore, StoreResult};

/// The message inserted (`$1` to `$7`), then the newest `$9` older messages with id > `$8`,
/// each row with the thread's project and its revision (null without a project).
static APPEND_AND_RECENT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH added AS ({INSERT_MESSAGE}), \
         seen AS (SELECT p.id AS seen_project, p.revision AS seen_revision FROM sessions s \
         JOIN projects p ON p.id = s.project_id WHERE s.id = $1) \
         SELECT w.*, seen.* FROM (SELECT * FROM messages WHERE session_id = $1 AND id > $8 \
         ORDER BY id DESC LIMIT $9) AS w LEFT JOIN seen ON true \
         UNION ALL SELECT added.*, seen.* FROM added LEFT JOIN seen ON true"
    )
});

fn missing(session_id: i64) -> Option<String> {
    Some(format!("session {session_id} does not exist"))
}

impl PostgresStore {
    /// See [`SessionStore::append_and_recent`].
    pub(crate) async fn backend_append_and_recent(
        &self,
        session_id: i64,
        message: &NewMessage,
        after_id: i64,
        limit_n: usize,
    ) -> StoreResult<AskedThread> {
        let rows: Vec<PgRow> = Self::stmt_with_message(&APPEND_AND_RECENT, session_id, message)?
            .bind(after_id)
            .bind(limit(limit_n.saturating_sub(1)))
            .fetch_all(self.pool())
            .await
            .map_err(|e| violation(e, None, missing(session_id)))?;
        let project_revision = match rows.first() {
            Some(row) => {
                let project: Option<i64> = row.try_get("seen_project").map_err(db)?;
                let revision: Option<i64> = row.try_get("seen_revision").map_err(db)?;
                project.zip(revision)
            }
            None => None,
        };
        let mut messages = rows
            .iter()
            .map(message_from)
            .collect::<StoreResult<Vec<_>>>()?;
        messages.sort_by_key(|m| m.id);
        Ok(AskedThread {
            messages,
            project_revision,
        })
    }
}

impl SqliteStore {
    /// See [`SessionStore::append_and_recent`].
    pub(crate) async fn backend_append_and_recent(
        &self,
        session_id: i64,
        message: &NewMessage,
        after_id: i64,
        limit_n: usize,
    ) -> StoreResult<AskedThread> {
        self.append_message(session_id, message).await?;
        Ok(AskedThread {
            messages: self.recent_messages(session_id, after_id, limit_n).await?,
            // No network: the project's read looks the revision up itself.
            project_revision: None,
        })
    }
}
