//! The inbox and lease steps of a turn, each in one statement on Postgres: queueing an input
//! with its event claim and a first try at the lease (with a look at the oldest input, and
//! the input's start with a read of its session when the thread is free),
//! taking the lease again later, starting an input with a read of its session, and finishing
//! an input with the lease's release. Each was two to four round trips (a transaction, or two
//! statements in a row). On SQLite, where there is no network, the same steps run one after
//! the other.

use std::sync::LazyLock;

use sqlx::postgres::PgRow;
use sqlx::Row;

use super::common::{
    clean_opt, clean_text, db, db_json, limit, micros, now, queued_input_from, session_from,
    session_named, violation, RowExt,
};
use super::{
    AskedThread, Enqueued, InboxStore, LeaseTaken, NewQueuedInput, PendingStore, PostgresStore,
    QueuedInput, SessionStore, SqliteStore, StartedInput, StoreError, StoreResult, StoredMessage,
};
use chrono::{DateTime, Utc};

fn missing_session(input: &NewQueuedInput) -> Option<String> {
    Some(format!("session {} does not exist", input.session_id))
}

/// [`InboxStore::enqueue_and_start`]'s statement on Postgres, by whether the input has an
/// event id and whether it has a question (`[event][question]`), built once.
///
/// `taken` is the lease (tried only when the event is new); `oldest` the oldest input already
/// there (the statement's snapshot does not hold `queued`); `starts` whether the new input is
/// queued started; `started` the session it starts in, with the proposal check. Rows: the new
/// input, then the oldest, each with `started`'s columns (NULL unless it started). With a
/// question, it is stored when the input starts with no proposal waiting, and the thread is
/// read back with it (as `append_and_recent`) in the row's `asked` columns.
static ENQUEUE_AND_START: LazyLock<[[String; 2]; 2]> = LazyLock::new(|| {
    [false, true].map(|event| [false, true].map(|question| enqueue_and_start_sql(event, question)))
});

fn enqueue_and_start_sql(event: bool, question: bool) -> String {
    let (claim, claimed, queued_if) = if event {
        (
            "claimed AS (INSERT INTO processed_events (platform, event_id, seen_at) \
             VALUES ($11, $3, $6) ON CONFLICT (platform, event_id) DO NOTHING RETURNING 1), ",
            " AND EXISTS (SELECT 1 FROM claimed)",
            " WHERE EXISTS (SELECT 1 FROM claimed)",
        )
    } else {
        ("", "", "")
    };
    let (ask, asked, asked_join) = if question {
        (
            ", added AS (INSERT INTO messages (session_id, role, content, author, event_id, \
             tokens, created_at) SELECT $1, $12, $13, $14, $15, $16, $17 FROM started \
             WHERE NOT pending_open RETURNING *), \
             recent AS (SELECT m.* FROM messages m, started s WHERE m.session_id = $1 \
             AND NOT s.pending_open AND m.id > s.summarized_through \
             ORDER BY m.id DESC LIMIT $18), \
             thread AS (SELECT * FROM recent UNION ALL SELECT * FROM added), \
             seen AS (SELECT p.id AS seen_project, p.revision AS seen_revision \
             FROM started s JOIN projects p ON p.id = s.project_id), \
             asked AS (SELECT array_agg(id ORDER BY id) AS asked_ids, \
             json_agg(content ORDER BY id)::text AS asked_contents, \
             array_agg(author ORDER BY id) AS asked_authors, \
             array_agg(tokens ORDER BY id) AS asked_tokens, \
             array_agg(created_at ORDER BY id) AS asked_created FROM thread)",
            ", a.*, seen.*",
            " LEFT JOIN asked a ON true LEFT JOIN seen ON true",
        )
    } else {
        ("", "", "")
    };
    format!(
        "WITH {claim}\
         taken AS (UPDATE sessions SET lease_owner = $7, lease_until = $8, \
         lease_epoch = lease_epoch + CASE WHEN lease_owner = $7 THEN 0 ELSE 1 END WHERE id = $1\
         {claimed} AND (lease_owner IS NULL OR lease_owner = $7 OR lease_until < $9) \
         RETURNING *), \
         oldest AS (SELECT * FROM session_inputs WHERE session_id = $1 \
         AND EXISTS (SELECT 1 FROM taken) ORDER BY id LIMIT 1), \
         starts AS (SELECT $10::boolean AND EXISTS (SELECT 1 FROM taken) \
         AND NOT EXISTS (SELECT 1 FROM oldest) AS now), \
         queued AS (INSERT INTO session_inputs (session_id, user_id, event_id, action, state, \
         waiter_until, created_at) SELECT $1, $2, $3, $4, \
         CASE WHEN (SELECT now FROM starts) THEN 'running' ELSE 'waiting' END, $5, $6\
         {queued_if} RETURNING *), \
         started AS (SELECT t.platform, t.workspace, t.channel, t.thread, t.mode, \
         t.project_id, t.summary, t.summarized_through, t.created_at AS session_created_at, \
         t.lease_epoch, \
         EXISTS (SELECT 1 FROM pending_actions p WHERE p.session_id = t.id \
         AND p.state = 'pending') AS pending_open \
         FROM taken t WHERE (SELECT now FROM starts)){ask} \
         SELECT false AS is_oldest, EXISTS (SELECT 1 FROM taken) AS lease_taken, q.*, s.*{asked} \
         FROM queued q LEFT JOIN started s ON true{asked_join} \
         UNION ALL SELECT true, true, o.*, s.*{asked} FROM oldest o LEFT JOIN started s ON true\
         {asked_join}"
    )
}

/// The thread read back with a question stored at its input's start, from the started row's
/// arrays; `None` when nothing was stored (a proposal was waiting).
fn asked_thread(row: &PgRow, session_id: i64) -> StoreResult<Option<AskedThread>> {
    let Some(ids) = row
        .try_get::<Option<Vec<i64>>, _>("asked_ids")
        .map_err(db)?
    else {
        return Ok(None);
    };
    // One JSON array of the messages as stored, read in place (no copy of each message).
    let contents: &str = row.try_get("asked_contents").map_err(db)?;
    let contents: Vec<crate::domain::message::MessageRecord> = serde_json::from_str(contents)
        .map_err(|e| StoreError::Corrupt(format!("the thread read with a question: {e}")))?;
    let authors: Vec<Option<String>> = row.try_get("asked_authors").map_err(db)?;
    let tokens: Vec<i64> = row.try_get("asked_tokens").map_err(db)?;
    let created: Vec<DateTime<Utc>> = row.try_get("asked_created").map_err(db)?;
    let n = ids.len();
    if [contents.len(), authors.len(), tokens.len(), created.len()] != [n; 4] {
        return Err(StoreError::Corrupt(
            "the thread read with a question came back uneven".into(),
        ));
    }
    let messages = ids
        .into_iter()
        .zip(contents)
        .zip(authors.into_iter().zip(tokens.into_iter().zip(created)))
        .map(
            |((id, content), (author, (tokens, created_at)))| StoredMessage {
                id,
                session_id,
                message: content,
                author,
                tokens,
                created_at,
            },
        )
        .collect();
    let project: Option<i64> = row.try_get("seen_project").map_err(db)?;
    let revision: Option<i64> = row.try_get("seen_revision").map_err(db)?;
    Ok(Some(AskedThread {
        messages,
        project_revision: project.zip(revision),
    }))
}

impl PostgresStore {
    /// See [`InboxStore::enqueue_input`].
    pub(crate) async fn backend_enqueue_input(
        &self,
        input: &NewQueuedInput,
    ) -> StoreResult<Option<QueuedInput>> {
        let at = now();
        // With an event id, the input is inserted only when the claim inserted a row: a
        // redelivered event returns nothing and writes nothing.
        let sql = if input.event_id.is_some() {
            "WITH claimed AS (INSERT INTO processed_events (platform, event_id, seen_at) \
             VALUES ($7, $3, $6) ON CONFLICT (platform, event_id) DO NOTHING RETURNING 1) \
             INSERT INTO session_inputs (session_id, user_id, event_id, action, state, \
             waiter_until, created_at) SELECT $1, $2, $3, $4, 'waiting', $5, $6 \
             WHERE EXISTS (SELECT 1 FROM claimed) RETURNING *"
        } else {
            "INSERT INTO session_inputs (session_id, user_id, event_id, action, state, \
             waiter_until, created_at) SELECT $1, $2, $3, $4, 'waiting', $5, $6 \
             RETURNING *"
        };
        let mut query = sqlx::query(sql)
            .bind(input.session_id)
            .bind(clean_text(&input.user))
            .bind(clean_opt(&input.event_id))
            .bind(db_json(&input.action)?)
            .bind(micros(input.waiter_until))
            .bind(at);
        if input.event_id.is_some() {
            query = query.bind(&input.platform);
        }
        let row: Option<PgRow> = query
            .fetch_optional(self.pool())
            .await
            .map_err(|e| violation(e, None, missing_session(input)))?;
        row.map(|r| queued_input_from(&r)).transpose()
    }

    /// See [`InboxStore::enqueue_and_start`].
    pub(crate) async fn backend_enqueue_and_start(
        &self,
        input: &NewQueuedInput,
        owner: &str,
        until: DateTime<Utc>,
        at: DateTime<Utc>,
        start: bool,
    ) -> StoreResult<Option<Enqueued>> {
        let sql = ENQUEUE_AND_START[usize::from(input.event_id.is_some())]
            [usize::from(input.question.is_some())]
        .as_str();
        let mut query = sqlx::query(sql)
            .bind(input.session_id)
            .bind(clean_text(&input.user))
            .bind(clean_opt(&input.event_id))
            .bind(db_json(&input.action)?)
            .bind(micros(input.waiter_until))
            .bind(now())
            .bind(owner)
            .bind(micros(until))
            .bind(micros(at))
            .bind(start)
            .bind(&input.platform);
        if let Some(q) = &input.question {
            query = Self::bind_message(query, &q.message)?.bind(limit(q.limit.saturating_sub(1)));
        }
        let rows: Vec<PgRow> = query
            .fetch_all(self.pool())
            .await
            .map_err(|e| violation(e, None, missing_session(input)))?;
        let mut mine = None;
        let mut oldest = None;
        let mut taken = false;
        let mut started = None;
        for row in &rows {
            if row.try_get::<bool, _>("is_oldest").map_err(db)? {
                oldest = Some(queued_input_from(row)?);
                continue;
            }
            taken = row.try_get::<bool, _>("lease_taken").map_err(db)?;
            let queued = queued_input_from(row)?;
            if queued.running {
                let session = session_named(row, "session_id", "session_created_at")?;
                let asked = match input.question {
                    Some(_) => asked_thread(row, session.id)?,
                    None => None,
                };
                started = Some(StartedInput {
                    session,
                    pending_open: row.try_get("pending_open").map_err(db)?,
                    asked,
                    lease_epoch: row.i64("lease_epoch")?,
                });
            }
            mine = Some(queued);
        }
        let Some(mine) = mine else {
            return Ok(None);
        };
        let lease = if taken {
            LeaseTaken::Taken {
                next: Some(oldest.unwrap_or_else(|| mine.clone())),
            }
        } else {
            LeaseTaken::Busy
        };
        Ok(Some(Enqueued {
            input: mine,
            lease,
            started,
        }))
    }

    /// See [`InboxStore::take_lease_and_next`].
    pub(crate) async fn backend_take_lease_and_next(
        &self,
        session_id: i64,
        owner: &str,
        until: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> StoreResult<LeaseTaken> {
        // No row: not taken. One row: taken, with the oldest input's columns (all NULL when
        // the inbox is empty).
        let row: Option<PgRow> = sqlx::query(
            "WITH taken AS (UPDATE sessions SET lease_owner = $2, lease_until = $3, \
             lease_epoch = lease_epoch + CASE WHEN lease_owner = $2 THEN 0 ELSE 1 END WHERE id = $1 \
             AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until < $4) RETURNING id) \
             SELECT i.* FROM taken t LEFT JOIN LATERAL (SELECT * FROM session_inputs \
             WHERE session_id = t.id ORDER BY id LIMIT 1) i ON true",
        )
        .bind(session_id)
        .bind(owner)
        .bind(micros(until))
        .bind(micros(at))
        .fetch_optional(self.pool())
        .await
        .map_err(db)?;
        Ok(match row {
            None => LeaseTaken::Busy,
            Some(r) if r.opt_i64("id")?.is_none() => LeaseTaken::Taken { next: None },
            Some(r) => LeaseTaken::Taken {
                next: Some(queued_input_from(&r)?),
            },
        })
    }

    /// See [`InboxStore::start_input_with_session`].
    pub(crate) async fn backend_start_input_with_session(
        &self,
        id: i64,
    ) -> StoreResult<Option<StartedInput>> {
        let row: Option<PgRow> = sqlx::query(
            "WITH started AS (UPDATE session_inputs SET state = 'running' WHERE id = $1 \
             RETURNING session_id) \
             SELECT s.*, EXISTS (SELECT 1 FROM pending_actions p WHERE p.session_id = s.id \
             AND p.state = 'pending') AS pending_open \
             FROM sessions s JOIN started ON s.id = started.session_id",
        )
        .bind(id)
        .fetch_optional(self.pool())
        .await
        .map_err(db)?;
        row.map(|r| {
            Ok(StartedInput {
                session: session_from(&r)?,
                pending_open: r.try_get("pending_open").map_err(db)?,
                asked: None,
                lease_epoch: r.i64("lease_epoch")?,
            })
        })
        .transpose()
    }

    /// See [`InboxStore::finish_input_and_release`].
    pub(crate) async fn backend_finish_input_and_release(
        &self,
        id: i64,
        session_id: i64,
        owner: &str,
    ) -> StoreResult<bool> {
        let done = sqlx::query(
            "WITH finished AS (DELETE FROM session_inputs WHERE id = $1) \
             UPDATE sessions SET lease_owner = NULL, lease_until = NULL \
             WHERE id = $2 AND lease_owner = $3",
        )
        .bind(id)
        .bind(session_id)
        .bind(owner)
        .execute(self.pool())
        .await
        .map_err(db)?;
        Ok(done.rows_affected() == 1)
    }
}

impl SqliteStore {
    /// See [`InboxStore::enqueue_and_start`].
    pub(crate) async fn backend_enqueue_and_start(
        &self,
        input: &NewQueuedInput,
        owner: &str,
        until: DateTime<Utc>,
        at: DateTime<Utc>,
        start: bool,
    ) -> StoreResult<Option<Enqueued>> {
        let Some(mut mine) = self.enqueue_input(input).await? else {
            return Ok(None);
        };
        let lease = self
            .take_lease_and_next(input.session_id, owner, until, at)
            .await?;
        let first = matches!(&lease, LeaseTaken::Taken { next: Some(n) } if n.id == mine.id);
        let mut started = if start && first {
            self.start_input_with_session(mine.id).await?
        } else {
            None
        };
        if let (Some(s), Some(q)) = (started.as_mut(), &input.question) {
            if !s.pending_open {
                s.asked = Some(
                    self.append_and_recent(
                        s.session.id,
                        &q.message,
                        s.session.summarized_through,
                        q.limit,
                    )
                    .await?,
                );
            }
        }
        mine.running = started.is_some();
        let lease = match lease {
            LeaseTaken::Taken { next: Some(n) } if n.id == mine.id => LeaseTaken::Taken {
                next: Some(mine.clone()),
            },
            other => other,
        };
        Ok(Some(Enqueued {
            input: mine,
            lease,
            started,
        }))
    }

    /// See [`InboxStore::enqueue_input`].
    pub(crate) async fn backend_enqueue_input(
        &self,
        input: &NewQueuedInput,
    ) -> StoreResult<Option<QueuedInput>> {
        let at = now();
        let mut tx = self.begin_write().await.map_err(db)?;
        if let Some(event_id) = input.event_id.as_deref() {
            let claimed = sqlx::query(
                "INSERT INTO processed_events (platform, event_id, seen_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (platform, event_id) DO NOTHING",
            )
            .bind(&input.platform)
            .bind(event_id)
            .bind(at)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
            if claimed.rows_affected() == 0 {
                return Ok(None);
            }
        }
        let row = sqlx::query(
            "INSERT INTO session_inputs (session_id, user_id, event_id, action, state, \
             waiter_until, created_at) VALUES ($1, $2, $3, $4, 'waiting', $5, $6) RETURNING *",
        )
        .bind(input.session_id)
        .bind(clean_text(&input.user))
        .bind(clean_opt(&input.event_id))
        .bind(db_json(&input.action)?)
        .bind(micros(input.waiter_until))
        .bind(at)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| violation(e, None, missing_session(input)))?;
        tx.commit().await.map_err(db)?;
        queued_input_from(&row).map(Some)
    }

    /// See [`InboxStore::take_lease_and_next`].
    pub(crate) async fn backend_take_lease_and_next(
        &self,
        session_id: i64,
        owner: &str,
        until: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> StoreResult<LeaseTaken> {
        if !self.take_lease(session_id, owner, until, at).await? {
            return Ok(LeaseTaken::Busy);
        }
        Ok(LeaseTaken::Taken {
            next: self.next_input(session_id).await?,
        })
    }

    /// See [`InboxStore::start_input_with_session`].
    pub(crate) async fn backend_start_input_with_session(
        &self,
        id: i64,
    ) -> StoreResult<Option<StartedInput>> {
        let started: Option<i64> = sqlx::query_scalar(
            "UPDATE session_inputs SET state = 'running' WHERE id = $1 RETURNING session_id",
        )
        .bind(id)
        .fetch_optional(self.pool())
        .await
        .map_err(db)?;
        let Some(session) = (match started {
            Some(session_id) => self.session(session_id).await?,
            None => None,
        }) else {
            return Ok(None);
        };
        let pending_open = self.open_pending_for_session(session.id).await?.is_some();
        let lease_epoch: i64 = sqlx::query_scalar("SELECT lease_epoch FROM sessions WHERE id = $1")
            .bind(session.id)
            .fetch_one(self.pool())
            .await
            .map_err(db)?;
        Ok(Some(StartedInput {
            session,
            pending_open,
            asked: None,
            lease_epoch,
        }))
    }

    /// See [`InboxStore::finish_input_and_release`].
    pub(crate) async fn backend_finish_input_and_release(
        &self,
        id: i64,
        session_id: i64,
        owner: &str,
    ) -> StoreResult<bool> {
        self.finish_input(id).await?;
        self.release_lease(session_id, owner).await
    }
}
