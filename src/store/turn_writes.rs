//! A turn's writes in one go: the messages of a model step and the audit rows of the tools it
//! ran, and at a turn's end the finishing of the input it answered. On Postgres this is one
//! statement (one round trip, atomic); on SQLite, where there is no network, one transaction.
//! A turn's writes are fenced on its lease ([`super::fence`]): on Postgres within the same
//! statement, on SQLite within the transaction.

use sqlx::{Postgres, QueryBuilder, Row, Sqlite};

use super::common::{
    clean_opt, db, message_role, micros, now, violation, JsonText, FINISH_INPUT, RELEASE_LEASE,
};
use super::{AuditEntry, InputFinish, NewMessage, PostgresStore, SqliteStore, StoreResult};

fn missing(session_id: i64) -> Option<String> {
    Some(format!("session {session_id} does not exist"))
}

/// Appends `INSERT INTO messages ... VALUES (..), (..)` for `messages`; `fenced`, only while
/// the statement's `fence` part found the turn's lease held.
macro_rules! push_messages {
    ($qb:expr, $session_id:expr, $messages:expr, $fenced:expr) => {{
        let at = now();
        $qb.push(
            "INSERT INTO messages (session_id, role, content, author, event_id, tokens, created_at) ",
        );
        let mut rows = Vec::with_capacity($messages.len());
        for m in $messages {
            rows.push((m, JsonText::of(&m.message)?));
        }
        if $fenced {
            $qb.push("SELECT * FROM (");
        }
        $qb.push_values(rows, |mut b, (m, content)| {
            b.push_bind($session_id)
                .push_bind(message_role(&m.message))
                .push_bind(content)
                .push_bind(clean_opt(&m.author).map(|c| c.into_owned()))
                .push_bind(clean_opt(&m.event_id).map(|c| c.into_owned()))
                .push_bind(m.tokens)
                .push_bind(at);
        });
        if $fenced {
            $qb.push(") v WHERE EXISTS (SELECT 1 FROM fence)");
        }
    }};
}

/// Appends `INSERT INTO tool_audit ... VALUES (..), (..)` for `audits`; `fenced` as in
/// [`push_messages`].
macro_rules! push_audits {
    ($qb:expr, $audits:expr, $fenced:expr) => {{
        $qb.push(
            "INSERT INTO tool_audit (session_id, actor, kind, tool, action_id, args, result, \
             is_error, duration_ms, at) ",
        );
        let mut rows = Vec::with_capacity($audits.len());
        for a in $audits {
            rows.push((a, JsonText::of(&a.args)?, JsonText::of(&a.result)?));
        }
        if $fenced {
            $qb.push("SELECT * FROM (");
        }
        $qb.push_values(rows, |mut b, (a, args, result)| {
            b.push_bind(a.session_id)
                .push_bind(a.actor.clone())
                .push_bind(a.kind.as_str())
                .push_bind(a.tool.clone())
                .push_bind(a.action_id.clone())
                .push_bind(args)
                .push_bind(result)
                .push_bind(a.is_error)
                .push_bind(a.duration_ms)
                .push_bind(micros(a.at));
        });
        if $fenced {
            $qb.push(") v WHERE EXISTS (SELECT 1 FROM fence)");
        }
    }};
}

/// Opens the next part of a `WITH` list.
fn open_cte(qb: &mut QueryBuilder<'_, Postgres>, first: &mut bool, name: &str) {
    qb.push(if *first { "WITH " } else { ", " });
    *first = false;
    qb.push(name);
    qb.push(" AS (");
}

impl PostgresStore {
    /// [`Store::append_turn_step`](super::Store::append_turn_step), and with `finish`
    /// [`Store::end_turn`](super::Store::end_turn). One statement: every write but the last
    /// is a data-modifying `WITH` part, which Postgres runs whether or not the last one reads
    /// it. The last is the lease's release when there is one, so its row count says whether
    /// it was released.
    pub(crate) async fn backend_write_turn(
        &self,
        session_id: i64,
        messages: &[NewMessage],
        audits: &[AuditEntry],
        finish: Option<InputFinish<'_>>,
    ) -> StoreResult<bool> {
        super::failpoint::stall("turn_write_stall");
        if let Some(fence) = super::fence::current() {
            return self
                .write_turn_fenced(&fence, session_id, messages, audits, finish)
                .await;
        }
        let mut qb = QueryBuilder::<Postgres>::new("");
        let mut first = true;
        let messages_last = finish.is_none() && !messages.is_empty();
        let audits_last = finish.is_none() && messages.is_empty();
        if !audits.is_empty() && !audits_last {
            open_cte(&mut qb, &mut first, "audited");
            push_audits!(qb, audits, false);
            qb.push(") ");
        }
        if !messages.is_empty() && !messages_last {
            open_cte(&mut qb, &mut first, "added");
            push_messages!(qb, session_id, messages, false);
            qb.push(") ");
        }
        let releases = match finish {
            None if messages_last => {
                push_messages!(qb, session_id, messages, false);
                false
            }
            None => {
                push_audits!(qb, audits, false);
                false
            }
            Some(InputFinish {
                id,
                release_as: None,
            }) => {
                qb.push("DELETE FROM session_inputs WHERE id = ");
                qb.push_bind(id);
                false
            }
            Some(InputFinish {
                id,
                release_as: Some(owner),
            }) => {
                open_cte(&mut qb, &mut first, "finished");
                qb.push("DELETE FROM session_inputs WHERE id = ");
                qb.push_bind(id);
                qb.push(") UPDATE sessions SET lease_owner = NULL, lease_until = NULL WHERE id = ");
                qb.push_bind(session_id);
                qb.push(" AND lease_owner = ");
                qb.push_bind(owner.to_string());
                true
            }
        };
        let done = qb
            .build()
            .execute(self.pool())
            .await
            .map_err(|e| violation(e, None, missing(session_id)))?;
        Ok(releases && done.rows_affected() == 1)
    }
}

impl PostgresStore {
    /// [`Self::backend_write_turn`] for a turn fenced on its lease, still one statement: a
    /// first `fence` part finds the session row held by the turn's owner at its epoch (and
    /// locks it `FOR SHARE`, so a take waits for this statement), every write is made only
    /// when it did, and the statement returns whether it did and whether the lease was
    /// released.
    async fn write_turn_fenced(
        &self,
        fence: &super::LeaseFence,
        session_id: i64,
        messages: &[NewMessage],
        audits: &[AuditEntry],
        finish: Option<InputFinish<'_>>,
    ) -> StoreResult<bool> {
        let mut qb =
            QueryBuilder::<Postgres>::new("WITH fence AS (SELECT id FROM sessions WHERE id = ");
        qb.push_bind(fence.session_id);
        qb.push(" AND lease_owner = ");
        qb.push_bind(fence.owner.clone());
        qb.push(" AND lease_epoch = ");
        qb.push_bind(fence.epoch);
        qb.push(" FOR SHARE)");
        let mut first = false;
        if !audits.is_empty() {
            open_cte(&mut qb, &mut first, "audited");
            push_audits!(qb, audits, true);
            qb.push(")");
        }
        if !messages.is_empty() {
            open_cte(&mut qb, &mut first, "added");
            push_messages!(qb, session_id, messages, true);
            qb.push(")");
        }
        let releases = match finish {
            None => false,
            Some(InputFinish { id, release_as }) => {
                open_cte(&mut qb, &mut first, "finished");
                qb.push("DELETE FROM session_inputs WHERE id = ");
                qb.push_bind(id);
                qb.push(" AND EXISTS (SELECT 1 FROM fence))");
                if let Some(owner) = release_as {
                    open_cte(&mut qb, &mut first, "released");
                    qb.push(
                        "UPDATE sessions SET lease_owner = NULL, lease_until = NULL WHERE id = ",
                    );
                    qb.push_bind(session_id);
                    qb.push(" AND lease_owner = ");
                    qb.push_bind(owner.to_string());
                    qb.push(" AND EXISTS (SELECT 1 FROM fence) RETURNING 1)");
                }
                release_as.is_some()
            }
        };
        qb.push(" SELECT EXISTS (SELECT 1 FROM fence) AS held, ");
        qb.push(if releases {
            "EXISTS (SELECT 1 FROM released) AS released"
        } else {
            "false AS released"
        });
        let row = qb
            .build()
            .fetch_one(self.pool())
            .await
            .map_err(|e| violation(e, None, missing(session_id)))?;
        if !row.try_get::<bool, _>("held").map_err(db)? {
            return Err(super::fence::lost(fence));
        }
        row.try_get::<bool, _>("released").map_err(db)
    }
}

impl SqliteStore {
    /// [`Store::append_turn_step`](super::Store::append_turn_step), and with `finish`
    /// [`Store::end_turn`](super::Store::end_turn), in one transaction.
    pub(crate) async fn backend_write_turn(
        &self,
        session_id: i64,
        messages: &[NewMessage],
        audits: &[AuditEntry],
        finish: Option<InputFinish<'_>>,
    ) -> StoreResult<bool> {
        super::failpoint::stall("turn_write_stall");
        let mut tx = self
            .pool()
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db)?;
        if let Some(fence) = super::fence::current() {
            Self::check_fence(&mut tx, &fence).await?;
        }
        if !audits.is_empty() {
            let mut qb = QueryBuilder::<Sqlite>::new("");
            push_audits!(qb, audits, false);
            qb.build()
                .execute(&mut *tx)
                .await
                .map_err(|e| violation(e, None, missing(session_id)))?;
        }
        if !messages.is_empty() {
            let mut qb = QueryBuilder::<Sqlite>::new("");
            push_messages!(qb, session_id, messages, false);
            qb.build()
                .execute(&mut *tx)
                .await
                .map_err(|e| violation(e, None, missing(session_id)))?;
        }
        let mut released = false;
        if let Some(input) = finish {
            sqlx::query(FINISH_INPUT)
                .bind(input.id)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
            if let Some(owner) = input.release_as {
                let done = sqlx::query(RELEASE_LEASE)
                    .bind(session_id)
                    .bind(owner)
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                released = done.rows_affected() == 1;
            }
        }
        tx.commit().await.map_err(db)?;
        Ok(released)
    }
}
