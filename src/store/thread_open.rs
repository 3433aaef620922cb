//! Opening a thread's conversation for an input: the session with the channel's project bound
//! and the asked mode applied, in one statement on Postgres.
//!
//! Done step by step this is four statements (the channel's binding, an insert that does
//! nothing for an existing thread, the select that follows it, and a fix-up when the mode or
//! the binding changed). On Postgres one statement with data-modifying `WITH` parts does the
//! same; only when two inputs create the same thread at once does the loser read the winner's
//! row with the step-by-step path. On SQLite, where there is no network, the steps run as
//! before.

use sqlx::postgres::PgRow;

use super::common::{db, now, session_from};
use super::{PostgresStore, ProjectStore, SessionStore, SqliteStore, StoreResult};
use crate::domain::session::{Mode, Session, SessionKey};

/// The thread's session (created when new), bound to the channel's project when it has none,
/// with `mode` applied when given: the step-by-step path, for any store.
pub(crate) async fn open_thread_in_steps<S: SessionStore + ProjectStore + ?Sized>(
    store: &S,
    key: &SessionKey,
    mode: Option<Mode>,
) -> StoreResult<Session> {
    let bound = store
        .channel_project(&key.platform, &key.workspace, &key.channel)
        .await?;
    let mut session = store
        .open_session(key, mode.unwrap_or_default(), bound)
        .await?;
    if let Some(m) = mode {
        if m != session.mode {
            store.set_session_mode(session.id, m).await?;
            session.mode = m;
        }
    }
    if session.project_id.is_none() && bound.is_some() {
        store.set_session_project(session.id, bound).await?;
        session.project_id = bound;
    }
    Ok(session)
}

impl PostgresStore {
    /// See [`SessionStore::open_thread`].
    pub(crate) async fn backend_open_thread(
        &self,
        key: &SessionKey,
        mode: Option<Mode>,
    ) -> StoreResult<Session> {
        // `fixed` changes an existing session only when something changes (no new row
        // version for every input); `made` inserts a new one. All parts see the snapshot of
        // the statement's start, so exactly one of fixed / cur / made gives the row.
        let row: Option<PgRow> = sqlx::query(
            "WITH bound AS (SELECT project_id FROM channel_bindings \
                 WHERE platform = $1 AND workspace = $2 AND channel = $3), \
             cur AS (SELECT * FROM sessions \
                 WHERE platform = $1 AND workspace = $2 AND channel = $3 AND thread = $4), \
             fixed AS (UPDATE sessions s SET mode = coalesce($5, s.mode), \
                 project_id = coalesce(s.project_id, (SELECT project_id FROM bound)) \
                 FROM cur WHERE s.id = cur.id AND (($5 IS NOT NULL AND $5 <> cur.mode) \
                 OR (cur.project_id IS NULL AND EXISTS (SELECT 1 FROM bound))) \
                 RETURNING s.*), \
             made AS (INSERT INTO sessions (platform, workspace, channel, thread, mode, \
                 project_id, summary, summarized_through, created_at) \
                 SELECT $1, $2, $3, $4, coalesce($5, $6), (SELECT project_id FROM bound), '', 0, $7 \
                 WHERE NOT EXISTS (SELECT 1 FROM cur) \
                 ON CONFLICT (platform, workspace, channel, thread) DO NOTHING RETURNING *) \
             SELECT * FROM fixed UNION ALL SELECT * FROM made \
             UNION ALL SELECT cur.* FROM cur WHERE NOT EXISTS (SELECT 1 FROM fixed)",
        )
        .bind(&key.platform)
        .bind(&key.workspace)
        .bind(&key.channel)
        .bind(&key.thread)
        .bind(mode.map(Mode::as_str))
        .bind(Mode::default().as_str())
        .bind(now())
        .fetch_optional(self.pool())
        .await
        .map_err(db)?;
        match row {
            Some(row) => session_from(&row),
            // Another input created the thread between our snapshot and our insert.
            None => open_thread_in_steps(self, key, mode).await,
        }
    }
}

impl SqliteStore {
    /// See [`SessionStore::open_thread`].
    pub(crate) async fn backend_open_thread(
        &self,
        key: &SessionKey,
        mode: Option<Mode>,
    ) -> StoreResult<Session> {
        open_thread_in_steps(self, key, mode).await
    }
}
