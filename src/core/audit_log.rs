//! A project's change history as people read it: every proposed change with who asked for it,
//! who confirmed or cancelled it, what it changes, when, and the thread it came from. The same
//! lines serve `audit` on every platform, `sparky audit` on the command line (text, CSV, JSON)
//! and any surface that shows the latest changes.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{json, Value};

use super::mention::UserRef;
use crate::domain::session::SessionKey;
use crate::project::MemberRole;
use crate::store::{PendingState, Store, StoreResult};

/// Actions listed when no count is given.
pub const DEFAULT_LINES: usize = 20;
/// The most actions one request lists.
pub const MAX_LINES: usize = 500;

/// One proposed change of a project and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditLine {
    /// The action's id (the card's).
    pub action_id: String,
    /// When it was proposed.
    pub proposed_at: DateTime<Utc>,
    /// Who asked for it (the person whose message or command led to the card).
    pub proposed_by: String,
    /// `model` (from a conversation) or `command` (a person's `tool` command).
    pub origin: &'static str,
    /// `pending`, `executed`, `cancelled`, `superseded` (corrected), `expired`, …
    pub outcome: &'static str,
    /// Who confirmed or cancelled it, when someone did.
    pub decided_by: Option<String>,
    /// When it was decided or ran out.
    pub decided_at: Option<DateTime<Utc>>,
    /// The write tools it calls.
    pub tools: Vec<String>,
    /// What it changes, one line per change as the card showed it.
    pub changes: Vec<String>,
    /// The thread it was proposed in.
    pub thread: SessionKey,
}

/// Whether `role` may read a project's change history: owners and editors.
pub fn may_read(role: Option<MemberRole>) -> bool {
    matches!(role, Some(MemberRole::Owner | MemberRole::Editor))
}

/// The latest `limit` changes of a project, newest first (at most [`MAX_LINES`]).
pub async fn project_history(
    store: &dyn Store,
    project_id: i64,
    limit: usize,
) -> StoreResult<Vec<AuditLine>> {
    let rows = store
        .project_actions(project_id, limit.clamp(1, MAX_LINES))
        .await?;
    Ok(rows
        .into_iter()
        .map(|(a, thread)| AuditLine {
            outcome: outcome(a.state),
            decided_by: a.resolved_by.clone(),
            decided_at: a.resolved_at,
            proposed_by: a.rule.requester.clone(),
            origin: a.origin.as_str(),
            tools: a.calls.iter().map(|c| c.name.clone()).collect(),
            changes: a.items.iter().map(|i| i.summary.clone()).collect(),
            proposed_at: a.created_at,
            action_id: a.id,
            thread,
        })
        .collect())
}

fn outcome(state: PendingState) -> &'static str {
    match state {
        PendingState::Pending => "pending",
        PendingState::Confirmed => "confirmed",
        PendingState::Executed => "applied",
        PendingState::Cancelled => "cancelled",
        PendingState::Superseded => "corrected",
        PendingState::Expired => "expired",
        PendingState::Outdated => "not applied (the project changed)",
    }
}

/// The lines for a person: one paragraph per change, newest first.
pub fn to_text(project: &str, lines: &[AuditLine]) -> String {
    if lines.is_empty() {
        return format!("No change has been proposed on project \"{project}\" yet.");
    }
    let mut out = format!(
        "Latest {} change{} of project \"{project}\", newest first:",
        lines.len(),
        if lines.len() == 1 { "" } else { "s" }
    );
    for l in lines {
        let decided = match (&l.decided_by, l.decided_at) {
            (Some(by), Some(at)) => format!(" by {} at {}", UserRef::new(by.as_str()), minute(at)),
            (None, Some(at)) => format!(" at {}", minute(at)),
            _ => String::new(),
        };
        out.push_str(&format!(
            "\n\n• {} — {}{decided}\n  asked by {} at {} in thread {} of channel {}",
            l.changes.join("; "),
            l.outcome,
            UserRef::new(l.proposed_by.as_str()),
            minute(l.proposed_at),
            l.thread.thread,
            l.thread.channel,
        ));
    }
    out
}

fn minute(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// The lines as CSV (RFC 4180, a header row, one row per change, RFC 3339 times).
pub fn to_csv(lines: &[AuditLine]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = [
        "proposed_at",
        "proposed_by",
        "origin",
        "outcome",
        "decided_by",
        "decided_at",
        "tools",
        "changes",
        "platform",
        "channel",
        "thread",
        "action_id",
    ];
    // Writing into a Vec cannot fail; a record the writer refuses is left out, not invented.
    let _ = w.write_record(header);
    for l in lines {
        let row = [
            l.proposed_at.to_rfc3339(),
            l.proposed_by.clone(),
            l.origin.to_string(),
            l.outcome.to_string(),
            l.decided_by.clone().unwrap_or_default(),
            l.decided_at.map(|t| t.to_rfc3339()).unwrap_or_default(),
            l.tools.join(" "),
            l.changes.join("; "),
            l.thread.platform.clone(),
            l.thread.channel.clone(),
            l.thread.thread.clone(),
            l.action_id.clone(),
        ];
        let _ = w.write_record(&row);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The lines as JSON (the `--json` and command output).
pub fn to_json(project: &str, lines: &[AuditLine]) -> Value {
    json!({"type": "audit", "project": project, "changes": lines})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(change: &str) -> AuditLine {
        AuditLine {
            action_id: "a1".into(),
            proposed_at: DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default(),
            proposed_by: "U1".into(),
            origin: "model",
            outcome: "applied",
            decided_by: Some("U2".into()),
            decided_at: DateTime::from_timestamp(1_700_000_060, 0),
            tools: vec!["add_circuit".into()],
            changes: vec![change.into()],
            thread: SessionKey::new("slack", "T1", "C1", "1.0"),
        }
    }

    #[test]
    fn csv_quotes_what_would_break_a_row() {
        let csv = to_csv(&[line("Add circuit 5, \"EV\"\nto LP-1")]);
        let mut r = csv::Reader::from_reader(csv.as_bytes());
        let rows: Vec<csv::StringRecord> = r.records().map(|x| x.expect("row")).collect();
        assert_eq!(rows.len(), 1);
        assert_eq!(&rows[0][7], "Add circuit 5, \"EV\"\nto LP-1");
        assert_eq!(&rows[0][4], "U2");
        assert_eq!(&rows[0][0], "2023-11-14T22:13:20+00:00");
    }

    #[test]
    fn only_owners_and_editors_read_the_history() {
        assert!(may_read(Some(MemberRole::Owner)));
        assert!(may_read(Some(MemberRole::Editor)));
        assert!(!may_read(Some(MemberRole::Viewer)));
        assert!(!may_read(None));
    }
}
