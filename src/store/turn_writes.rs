//! A turn's writes in one go: the messages of a model step and the audit rows of the tools it
//! ran. On Postgres this is one statement (one round trip, atomic); on SQLite, where there is
//! no network, one transaction.

use sqlx::{Postgres, QueryBuilder, Sqlite};

use super::common::{clean_opt, db, message_role, micros, now, violation, JsonText};
use super::{AuditEntry, NewMessage, PostgresStore, SqliteStore, StoreResult};

fn missing(session_id: i64) -> Option<String> {
    Some(format!("session {session_id} does not exist"))
}

/// Appends `INSERT INTO messages ... VALUES (..), (..)` for `messages`.
macro_rules! push_messages {
    ($qb:expr, $session_id:expr, $messages:expr) => {{
        let at = now();
        $qb.push(
            "INSERT INTO messages (session_id, role, content, author, event_id, tokens, created_at) ",
        );
        let mut rows = Vec::with_capacity($messages.len());
        for m in $messages {
            rows.push((m, JsonText::of(&m.message)?));
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
    }};
}

/// Appends `INSERT INTO tool_audit ... VALUES (..), (..)` for `audits`.
macro_rules! push_audits {
    ($qb:expr, $audits:expr) => {{
        $qb.push(
            "INSERT INTO tool_audit (session_id, actor, kind, tool, action_id, args, result, \
             is_error, duration_ms, at) ",
        );
        let mut rows = Vec::with_capacity($audits.len());
        for a in $audits {
            rows.push((a, JsonText::of(&a.args)?, JsonText::of(&a.result)?));
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
    }};
}

impl PostgresStore {
    /// See [`Store::append_turn_step`](super::Store::append_turn_step).
    pub(crate) async fn backend_append_turn_step(
        &self,
        session_id: i64,
        messages: &[NewMessage],
        audits: &[AuditEntry],
    ) -> StoreResult<()> {
        if messages.is_empty() && audits.is_empty() {
            return Ok(());
        }
        let mut qb = QueryBuilder::<Postgres>::new("");
        match (messages.is_empty(), audits.is_empty()) {
            (false, false) => {
                // Data-modifying CTE: both inserts in one statement.
                qb.push("WITH audited AS (");
                push_audits!(qb, audits);
                qb.push(") ");
                push_messages!(qb, session_id, messages);
            }
            (false, true) => push_messages!(qb, session_id, messages),
            _ => push_audits!(qb, audits),
        }
        qb.build()
            .execute(self.pool())
            .await
            .map_err(|e| violation(e, None, missing(session_id)))?;
        Ok(())
    }
}

impl SqliteStore {
    /// See [`Store::append_turn_step`](super::Store::append_turn_step).
    pub(crate) async fn backend_append_turn_step(
        &self,
        session_id: i64,
        messages: &[NewMessage],
        audits: &[AuditEntry],
    ) -> StoreResult<()> {
        if messages.is_empty() && audits.is_empty() {
            return Ok(());
        }
        let mut tx = self
            .pool()
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db)?;
        if !audits.is_empty() {
            let mut qb = QueryBuilder::<Sqlite>::new("");
            push_audits!(qb, audits);
            qb.build()
                .execute(&mut *tx)
                .await
                .map_err(|e| violation(e, None, missing(session_id)))?;
        }
        if !messages.is_empty() {
            let mut qb = QueryBuilder::<Sqlite>::new("");
            push_messages!(qb, session_id, messages);
            qb.build()
                .execute(&mut *tx)
                .await
                .map_err(|e| violation(e, None, missing(session_id)))?;
        }
        tx.commit().await.map_err(db)?;
        Ok(())
    }
}
