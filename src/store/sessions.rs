//! Sessions (one per platform thread) and their message history.

use async_trait::async_trait;

use super::{AskedThread, NewMessage, StoredMessage};
use crate::domain::session::{Mode, Session, SessionKey};

use super::StoreResult;

/// Conversations: their mode, bound project, running summary and history.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// The session for a key, created with `mode` and `project_id` when new.
    async fn open_session(
        &self,
        key: &SessionKey,
        mode: Mode,
        project_id: Option<i64>,
    ) -> StoreResult<Session>;
    /// The session of the thread `key` for an input: created when new (with `mode`, or the
    /// default), bound to the channel's project when it has none, switched to `mode` when
    /// given. One statement on Postgres (src/store/thread_open.rs).
    async fn open_thread(&self, key: &SessionKey, mode: Option<Mode>) -> StoreResult<Session>;
    /// A session by id.
    async fn session(&self, id: i64) -> StoreResult<Option<Session>>;
    /// Whether the thread `key` already is a conversation (a session with at least one
    /// message). A lookup only: unlike [`open_session`](Self::open_session) it creates nothing.
    async fn thread_has_history(&self, key: &SessionKey) -> StoreResult<bool>;
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
    /// [`append_message`](Self::append_message), then
    /// [`recent_messages`](Self::recent_messages) with the new message last: one statement on
    /// Postgres, which also reads the revision of the thread's project. For a thread only
    /// this caller writes (the lease holder's turn).
    async fn append_and_recent(
        &self,
        session_id: i64,
        message: &NewMessage,
        after_id: i64,
        limit: usize,
    ) -> StoreResult<AskedThread>;
    /// The newest `limit` messages with id > `after_id`, oldest first.
    async fn recent_messages(
        &self,
        session_id: i64,
        after_id: i64,
        limit: usize,
    ) -> StoreResult<Vec<StoredMessage>>;
}

/// Emits `impl SessionStore` for a backend store type.
macro_rules! impl_sessions {
    ($store:ty, $db:ty) => {
        const _: () = {
            use async_trait::async_trait;

            use $crate::domain::session::{Mode, Session, SessionKey};
            use $crate::store::common::*;
            use $crate::store::{AskedThread, NewMessage, StoreError, StoreResult, StoredMessage, SessionStore};

            impl $store {
                /// Appends a history message: the one statement both the store method and applied
                /// plans run, so a column added here reaches both.
                pub(crate) fn stmt_insert_message<'q>(session_id: i64, message: &'q NewMessage) -> StoreResult<Stmt<'q, $db>> {
                    Self::stmt_with_message(INSERT_MESSAGE, session_id, message)
                }

                /// `sql` with a message's columns bound as `$1` to `$7`, in the order of
                /// [`INSERT_MESSAGE`]'s columns.
                pub(crate) fn stmt_with_message<'q>(
                    sql: &'q str,
                    session_id: i64,
                    message: &'q NewMessage,
                ) -> StoreResult<Stmt<'q, $db>> {
                    Self::bind_message(sqlx::query(sql).bind(session_id), message)
                }

                /// `query` with a message's columns after the session's bound, in the order of
                /// [`INSERT_MESSAGE`]'s columns (role, content, author, event id, tokens, time).
                pub(crate) fn bind_message<'q>(
                    query: Stmt<'q, $db>,
                    message: &'q NewMessage,
                ) -> StoreResult<Stmt<'q, $db>> {
                    Ok(query
                    .bind(message_role(&message.message))
                    .bind(JsonText::of(&message.message)?)
                    .bind(clean_opt(&message.author))
                    .bind(clean_opt(&message.event_id))
                    .bind(message.tokens)
                    .bind(now()))
                }
            }

            #[async_trait]
            impl SessionStore for $store {
                async fn open_session(
                    &self,
                    key: &SessionKey,
                    mode: Mode,
                    project_id: Option<i64>,
                ) -> StoreResult<Session> {
                    let created = sqlx::query(
                        "INSERT INTO sessions (platform, workspace, channel, thread, mode, project_id, \
                         summary, summarized_through, created_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, '', 0, $7) \
                         ON CONFLICT (platform, workspace, channel, thread) DO NOTHING RETURNING *",
                    )
                    .bind(&key.platform)
                    .bind(&key.workspace)
                    .bind(&key.channel)
                    .bind(&key.thread)
                    .bind(mode.as_str())
                    .bind(project_id)
                    .bind(now())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| {
                        violation(
                            e,
                            None,
                            Some(format!(
                                "project {} does not exist",
                                project_id.unwrap_or_default()
                            )),
                        )
                    })?;
                    let row = match created {
                        Some(row) => row,
                        None => sqlx::query(
                            "SELECT * FROM sessions \
                             WHERE platform = $1 AND workspace = $2 AND channel = $3 AND thread = $4",
                        )
                        .bind(&key.platform)
                        .bind(&key.workspace)
                        .bind(&key.channel)
                        .bind(&key.thread)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db)?
                        .ok_or_else(|| {
                            StoreError::NotFound(format!("session {key} vanished while opening"))
                        })?,
                    };
                    session_from(&row)
                }

                async fn open_thread(&self, key: &SessionKey, mode: Option<Mode>) -> StoreResult<Session> {
                    self.backend_open_thread(key, mode).await
                }

                async fn session(&self, id: i64) -> StoreResult<Option<Session>> {
                    sqlx::query("SELECT * FROM sessions WHERE id = $1")
                        .bind(id)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db)?
                        .map(|r| session_from(&r))
                        .transpose()
                }

                async fn thread_has_history(&self, key: &SessionKey) -> StoreResult<bool> {
                    let found = sqlx::query(
                        "SELECT s.id FROM sessions s WHERE s.platform = $1 AND s.workspace = $2 \
                         AND s.channel = $3 AND s.thread = $4 \
                         AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)",
                    )
                    .bind(&key.platform)
                    .bind(&key.workspace)
                    .bind(&key.channel)
                    .bind(&key.thread)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)?;
                    Ok(found.is_some())
                }

                async fn set_session_mode(&self, id: i64, mode: Mode) -> StoreResult<()> {
                    let query = sqlx::query("UPDATE sessions SET mode = $2 WHERE id = $1")
                        .bind(id)
                        .bind(mode.as_str());
                    // A mode change made by a turn is one of its writes: fenced on its lease.
                    let done = $crate::store::fence::on_fenced!(self, |ex| query
                        .execute(ex)
                        .await
                        .map_err(db)?);
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!("session {id} does not exist")));
                    }
                    Ok(())
                }

                async fn set_session_project(&self, id: i64, project_id: Option<i64>) -> StoreResult<()> {
                    let query = sqlx::query("UPDATE sessions SET project_id = $2 WHERE id = $1")
                        .bind(id)
                        .bind(project_id);
                    let missing = |e| {
                        violation(
                            e,
                            None,
                            Some(format!(
                                "project {} does not exist",
                                project_id.unwrap_or_default()
                            )),
                        )
                    };
                    let done = $crate::store::fence::on_fenced!(self, |ex| query
                        .execute(ex)
                        .await
                        .map_err(missing)?);
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!("session {id} does not exist")));
                    }
                    Ok(())
                }

                async fn set_session_summary(
                    &self,
                    id: i64,
                    summary: &str,
                    through_message_id: i64,
                ) -> StoreResult<()> {
                    let done = sqlx::query(
                        "UPDATE sessions SET summary = $2, summarized_through = $3 WHERE id = $1",
                    )
                    .bind(id)
                    .bind(summary)
                    .bind(through_message_id);
                    // A turn's summary is one of its writes: fenced on its lease.
                    let done = $crate::store::fence::on_fenced!(self, |ex| done
                        .execute(ex)
                        .await
                        .map_err(db)?);
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!("session {id} does not exist")));
                    }
                    Ok(())
                }

                async fn append_message(
                    &self,
                    session_id: i64,
                    message: &NewMessage,
                ) -> StoreResult<StoredMessage> {
                    let missing = |e| {
                        violation(e, None, Some(format!("session {session_id} does not exist")))
                    };
                    let stmt = <$store>::stmt_insert_message(session_id, message)?;
                    let row = $crate::store::fence::on_fenced!(self, |ex| stmt
                        .fetch_one(ex)
                        .await
                        .map_err(missing)?);
                    message_from(&row)
                }

                async fn append_and_recent(
                    &self,
                    session_id: i64,
                    message: &NewMessage,
                    after_id: i64,
                    limit_n: usize,
                ) -> StoreResult<AskedThread> {
                    self.backend_append_and_recent(session_id, message, after_id, limit_n)
                        .await
                }

                async fn recent_messages(
                    &self,
                    session_id: i64,
                    after_id: i64,
                    limit_n: usize,
                ) -> StoreResult<Vec<StoredMessage>> {
                    sqlx::query(
                        "SELECT * FROM (SELECT * FROM messages WHERE session_id = $1 AND id > $2 \
                         ORDER BY id DESC LIMIT $3) AS w ORDER BY id",
                    )
                    .bind(session_id)
                    .bind(after_id)
                    .bind(limit(limit_n))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db)?
                    .iter()
                    .map(message_from)
                    .collect()
                }
            }
        };
    };
}
pub(crate) use impl_sessions;
