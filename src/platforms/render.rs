//! What Discord and Slack both need, written once: splitting long answers, pacing message
//! edits while streaming, and the view of a confirmation (items and buttons). People named in
//! the core's text stay [`UserRef`]s here; each adapter renders them last, in its own syntax,
//! with [`crate::core::mention::render`].

use std::time::{Duration, Instant};

use crate::core::effects::ActionItem;
use crate::core::{Citation, Effect, Outcome, UserRef};

/// Button id prefix for Confirm.
pub const CONFIRM_PREFIX: &str = "sparky:confirm:";
/// Button id prefix for Cancel.
pub const CANCEL_PREFIX: &str = "sparky:cancel:";
/// Button id prefix for Edit (opens the card's form).
pub const EDIT_PREFIX: &str = "sparky:edit:";
/// Id of a submitted Edit form: the prefix and the action id.
pub const EDIT_FORM_PREFIX: &str = "sparky:editform:";

/// A button click decoded from its custom id / action id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ButtonAction {
    /// Confirm the action.
    Confirm(String),
    /// Cancel the action.
    Cancel(String),
    /// Open the action's Edit form.
    Edit(String),
}

impl ButtonAction {
    /// The core input a Confirm or Cancel click is; `None` for Edit, which opens a form first.
    pub fn input(self) -> Option<crate::core::InputAction> {
        use crate::core::InputAction;
        match self {
            Self::Confirm(id) => Some(InputAction::Confirm {
                action_id: Some(id),
            }),
            Self::Cancel(id) => Some(InputAction::Cancel {
                action_id: Some(id),
            }),
            Self::Edit(_) => None,
        }
    }
}

/// Decodes a button id; `None` for ids that are not ours.
pub fn parse_button(id: &str) -> Option<ButtonAction> {
    if let Some(a) = id.strip_prefix(CONFIRM_PREFIX) {
        return (!a.is_empty()).then(|| ButtonAction::Confirm(a.to_string()));
    }
    if let Some(a) = id.strip_prefix(CANCEL_PREFIX) {
        return (!a.is_empty()).then(|| ButtonAction::Cancel(a.to_string()));
    }
    if let Some(a) = id.strip_prefix(EDIT_PREFIX) {
        return (!a.is_empty()).then(|| ButtonAction::Edit(a.to_string()));
    }
    None
}

/// The action id of a submitted Edit form's id; `None` for ids that are not ours.
pub fn parse_edit_form(id: &str) -> Option<&str> {
    id.strip_prefix(EDIT_FORM_PREFIX).filter(|a| !a.is_empty())
}

/// At most `max` characters of `text`, ending in "…" when cut (the length limits of both
/// platforms count characters).
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// Splits `text` into pieces of at most `max` characters, preferring paragraph, then line,
/// then word boundaries, and keeping fenced code blocks valid across pieces.
pub fn split_message(text: &str, max: usize) -> Vec<String> {
    let max = max.max(16);
    let mut out = Vec::new();
    let mut rest = text.trim_end().to_string();
    let mut reopen: Option<String> = None;
    while !rest.is_empty() {
        if let Some(fence) = reopen.take() {
            rest = format!("{fence}\n{rest}");
        }
        if rest.chars().count() <= max {
            out.push(rest);
            break;
        }
        // Leave room to close a code block.
        let budget = max - 4;
        let head: String = rest.chars().take(budget).collect();
        let cut = ["\n\n", "\n", " "]
            .iter()
            .filter_map(|sep| head.rfind(sep).map(|i| i + sep.len()))
            .find(|&i| i > budget / 2)
            .unwrap_or(head.len());
        let mut piece = rest[..cut].trim_end().to_string();
        let open_fence = open_code_fence(&piece);
        if let Some(fence) = &open_fence {
            piece.push_str("\n```");
            reopen = Some(fence.clone());
        }
        out.push(piece);
        rest = rest[cut..].trim_start_matches(['\n']).to_string();
    }
    out
}

/// The opening line of a code fence left open in `text`, if any.
fn open_code_fence(text: &str) -> Option<String> {
    let mut open: Option<String> = None;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") {
            open = match open {
                Some(_) => None,
                None => Some(t.to_string()),
            };
        }
    }
    open
}

/// Paces edits of a streamed message: deltas are merged and flushed at most once per interval,
/// counted from when the previous edit finished (see [`EditPacer::edited`]).
pub struct EditPacer {
    interval: Duration,
    last: Option<Instant>,
    text: String,
    shown: usize,
}

impl EditPacer {
    /// A pacer allowing one edit per `interval`.
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            last: None,
            text: String::new(),
            shown: 0,
        }
    }

    /// Adds a delta; returns the whole text to show when an edit is due now.
    pub fn push(&mut self, delta: &str, now: Instant) -> Option<String> {
        self.text.push_str(delta);
        self.due(now)
    }

    /// The text to show if an edit is due and there is something new.
    pub fn due(&mut self, now: Instant) -> Option<String> {
        let ready = self
            .last
            .is_none_or(|t| now.duration_since(t) >= self.interval);
        if ready && self.text.len() > self.shown {
            self.last = Some(now);
            self.shown = self.text.len();
            return Some(self.text.clone());
        }
        None
    }

    /// Records that the edit last handed out finished at `at`. An edit can take long (a 429
    /// is waited out and retried), and the platform counts the spacing from the request it
    /// saw last, so the next edit waits a whole interval from here.
    pub fn edited(&mut self, at: Instant) {
        self.last = Some(at);
    }

    /// When the next edit may happen.
    pub fn next_allowed(&self) -> Option<Instant> {
        self.last.map(|t| t + self.interval)
    }

    /// Everything streamed so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether some text has not been shown yet.
    pub fn has_unshown(&self) -> bool {
        self.text.len() > self.shown
    }
}

/// A confirmation as both platforms show it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConfirmationView {
    /// Heading line.
    pub title: String,
    /// One block per item: summary and detail lines.
    pub items: Vec<(String, Vec<String>)>,
    /// Footer: who may confirm and until when.
    pub footer: String,
    /// Confirm button id.
    pub confirm_id: String,
    /// Cancel button id.
    pub cancel_id: String,
    /// Edit button id, when the proposal has a form (one change).
    #[serde(default)]
    pub edit_id: Option<String>,
}

/// `text` (a card line that carries what people wrote: a description, a name) as one line
/// that reads as written: line breaks and other control characters become spaces, and
/// direction overrides are dropped, so no text can start a line of its own on a card (a fake
/// "✅ Confirmed") or show its characters in another order than they are stored.
pub fn one_line(text: &str) -> String {
    const DIRECTION: [char; 12] = [
        '\u{200E}', '\u{200F}', '\u{061C}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}',
        '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
    ];
    const BREAKS: [char; 3] = ['\u{2028}', '\u{2029}', '\u{0085}'];
    text.chars()
        .filter(|c| !DIRECTION.contains(c))
        .map(|c| {
            if c.is_control() || BREAKS.contains(&c) {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// Builds the view of a confirmation effect's fields.
pub fn confirmation_view(
    action_id: &str,
    items: &[ActionItem],
    rejected: &[String],
    confirmers: &str,
    expires_at: chrono::DateTime<chrono::Utc>,
) -> ConfirmationView {
    // Calls of the same turn that failed are named on the card: they are not part of it.
    let not_included = if rejected.is_empty() {
        String::new()
    } else {
        format!(
            "⚠️ Not included, could not be prepared: {}\n",
            rejected.join("; ")
        )
    };
    ConfirmationView {
        title: if items.len() == 1 {
            "Proposed change".into()
        } else {
            format!("Proposed changes ({})", items.len())
        },
        items: items
            .iter()
            .map(|i| {
                let details = i.details.iter().map(|d| one_line(d)).collect();
                (one_line(&i.summary), details)
            })
            .collect(),
        footer: format!(
            "{not_included}{confirmers} can confirm. Typing a reply instead corrects the proposal. Expires {}.",
            expires_at.format("%Y-%m-%d %H:%M UTC")
        ),
        confirm_id: format!("{CONFIRM_PREFIX}{action_id}"),
        cancel_id: format!("{CANCEL_PREFIX}{action_id}"),
        edit_id: crate::core::edit_form::editable(items).then(|| format!("{EDIT_PREFIX}{action_id}")),
    }
}

/// The line that replaces the buttons once an action is resolved.
pub fn outcome_line(outcome: Outcome, by: Option<&UserRef>) -> String {
    let who = by.map(|b| format!(" by {b}")).unwrap_or_default();
    match outcome {
        Outcome::Executed => format!("✅ Confirmed{who} and applied."),
        Outcome::Failed => format!("⚠️ Confirmed{who}; some changes failed."),
        Outcome::Cancelled => format!("✖️ Cancelled{who}."),
        Outcome::Superseded => "↩️ Superseded by a newer message.".into(),
        Outcome::Expired => "⌛ Expired; nothing was changed.".into(),
        Outcome::AlreadyResolved => "This change was already resolved.".into(),
        Outcome::Outdated => {
            format!("🔄 Confirmed{who}, but the project had changed; nothing was applied.")
        }
    }
}

/// A tool command's result as chat text: readable lines ([`readable`]), fenced so the
/// platform keeps their indentation.
pub fn tool_output_text(tool: &str, result: &serde_json::Value, is_error: bool) -> String {
    let body = readable(result);
    if is_error {
        format!("{tool} failed:\n```\n{body}\n```")
    } else {
        format!("{tool}:\n```\n{body}\n```")
    }
}

/// A tool's result as a person reads it: one `key: value` line per field, nested fields
/// indented under their key, a list of plain values on one line, empty fields left out.
/// (Scripts get the JSON itself: `--json`, `sparky tool`.)
pub fn readable(value: &serde_json::Value) -> String {
    let mut out = String::new();
    write_readable(value, 0, &mut out);
    out.trim_end().to_string()
}

fn write_readable(value: &serde_json::Value, depth: usize, out: &mut String) {
    use serde_json::Value;
    let indent = "  ".repeat(depth);
    match value {
        Value::Object(fields) => {
            for (key, v) in fields {
                match v {
                    Value::Null => {}
                    Value::Array(items) if items.is_empty() => {}
                    Value::Object(_) => {
                        out.push_str(&format!("{indent}{key}:\n"));
                        write_readable(v, depth + 1, out);
                    }
                    Value::Array(items) if items.iter().any(|i| i.is_object() || i.is_array()) => {
                        out.push_str(&format!("{indent}{key}:\n"));
                        write_readable(v, depth + 1, out);
                    }
                    Value::Array(items) => {
                        let list: Vec<String> = items.iter().map(scalar_text).collect();
                        out.push_str(&format!("{indent}{key}: {}\n", list.join(", ")));
                    }
                    _ => out.push_str(&format!("{indent}{key}: {}\n", scalar_text(v))),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                if item.is_object() || item.is_array() {
                    out.push_str(&format!("{indent}-\n"));
                    write_readable(item, depth + 1, out);
                } else {
                    out.push_str(&format!("{indent}- {}\n", scalar_text(item)));
                }
            }
        }
        other => out.push_str(&format!("{indent}{}\n", scalar_text(other))),
    }
}

/// A plain value as written: text without quotes (and without the model's fences), whole
/// numbers without a trailing `.0`.
fn scalar_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => crate::llm::untrusted::undelimit(s).to_string(),
        serde_json::Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// Compact citation line: "Sources: NEC 2023 Table 310.16 · NEC 2023 250.122".
pub fn citations_line(citations: &[Citation]) -> Option<String> {
    if citations.is_empty() {
        return None;
    }
    // A section found in several sources (the table, its summary) is listed once.
    let mut refs: Vec<String> = Vec::new();
    for c in citations {
        let r = match c.edition {
            Some(e) => format!("NEC {e} {}", c.section),
            None => c.section.clone(),
        };
        if !refs.contains(&r) {
            refs.push(r);
        }
    }
    Some(format!("Sources: {}", refs.join(" · ")))
}

/// Whether an effect ends the visible part of a turn (adapters stop typing indicators).
pub fn is_terminal(effect: &Effect) -> bool {
    matches!(
        effect,
        Effect::Text { .. }
            | Effect::Confirmation { .. }
            | Effect::Error { .. }
            | Effect::Resolved { .. }
            | Effect::ToolOutput { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_result_reads_as_lines_not_json() {
        let result = serde_json::json!({
            "copper": "10 AWG",
            "ocpd_a": 60.0,
            "code_in_force": {"edition_in_force": 2023, "warnings": [], "cannot_check": null},
            "sizes": ["10 AWG", "8 AWG"],
            "rows": [{"a": 1.5}]
        });
        let text = readable(&result);
        assert_eq!(
            text,
            "code_in_force:\n  edition_in_force: 2023\ncopper: 10 AWG\nocpd_a: 60\nrows:\n  -\n    a: 1.5\nsizes: 10 AWG, 8 AWG"
        );
        assert!(!tool_output_text("t", &result, false).contains('{'));
    }

    #[test]
    fn a_section_is_listed_once_among_the_sources() {
        let cite = |section: &str, source: &str| Citation {
            section: section.into(),
            edition: Some(2023),
            source: source.into(),
        };
        let line = citations_line(&[
            cite("250.118", "a"),
            cite("Table 250.122", "tables"),
            cite("Table 250.122", "summaries"),
            cite("Table 250.122", "computed"),
        ]);
        assert_eq!(
            line.as_deref(),
            Some("Sources: NEC 2023 250.118 · NEC 2023 Table 250.122")
        );
    }

    /// A description with a line break, a Unicode line separator or a right-to-left override
    /// cannot add a line to a card or reorder what it shows.
    #[test]
    fn peoples_text_cannot_forge_a_card_line() {
        let forged = "Freezer\n✅ Confirmed by @boss and applied.\u{2028}x \u{202E}gnp.exe";
        let item = ActionItem {
            call_id: "c1".into(),
            tool: "add_circuit".into(),
            args: serde_json::json!({}),
            summary: format!("Add circuit LP-1 #11 \"{forged}\""),
            details: vec![format!("description: {forged}\r\nsecond")],
            plan: Default::default(),
        };
        let view = confirmation_view("a1", &[item], &[], "alice", chrono::Utc::now());
        let (summary, details) = &view.items[0];
        for line in std::iter::once(summary).chain(details) {
            assert!(
                !line.contains(['\n', '\r', '\u{2028}', '\u{202E}']),
                "{line:?}"
            );
        }
        assert_eq!(
            summary,
            "Add circuit LP-1 #11 \"Freezer ✅ Confirmed by @boss and applied. x gnp.exe\""
        );
        assert_eq!(one_line("tab\there"), "tab here");
    }

    #[test]
    fn split_respects_limit_and_lines() {
        let text = (0..300)
            .map(|i| format!("line {i} of the answer"))
            .collect::<Vec<_>>()
            .join("\n");
        let parts = split_message(&text, 2000);
        assert!(parts.len() >= 3);
        assert!(parts.iter().all(|p| p.chars().count() <= 2000));
        assert_eq!(parts.join("\n"), text);
        assert!(parts.iter().all(|p| p.starts_with("line ")));
    }

    #[test]
    fn split_keeps_code_blocks_closed() {
        let code = (0..200)
            .map(|i| format!("x = {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let text = format!("Here:\n```rust\n{code}\n```\nDone.");
        let parts = split_message(&text, 500);
        for p in &parts {
            assert_eq!(p.matches("```").count() % 2, 0, "unbalanced fence in:\n{p}");
            assert!(p.chars().count() <= 500);
        }
        assert!(parts[1].starts_with("```rust"));
    }

    #[test]
    fn split_of_2500_characters_gives_two_messages() {
        let text = "word ".repeat(500);
        let parts = split_message(&text, 2000);
        assert_eq!(parts.len(), 2);
    }

    #[test]
    fn pacer_merges_deltas_within_the_interval() {
        let t0 = Instant::now();
        let mut p = EditPacer::new(Duration::from_secs(1));
        assert_eq!(p.push("a", t0).as_deref(), Some("a"));
        assert_eq!(p.push("b", t0 + Duration::from_millis(200)), None);
        assert_eq!(p.push("c", t0 + Duration::from_millis(400)), None);
        assert_eq!(
            p.due(t0 + Duration::from_millis(1000)).as_deref(),
            Some("abc")
        );
        assert_eq!(p.due(t0 + Duration::from_millis(3000)), None);
    }

    #[test]
    fn pacing_counts_from_when_the_last_edit_finished() {
        let t0 = Instant::now();
        let mut p = EditPacer::new(Duration::from_secs(1));
        assert!(p.push("a", t0).is_some());
        // That edit hit a rate limit and only went through 1.5 s later.
        p.edited(t0 + Duration::from_millis(1500));
        assert_eq!(p.push("b", t0 + Duration::from_millis(1600)), None);
        assert_eq!(p.next_allowed(), Some(t0 + Duration::from_millis(2500)));
        assert_eq!(
            p.due(t0 + Duration::from_millis(2500)).as_deref(),
            Some("ab")
        );
    }

    #[test]
    fn buttons_round_trip() {
        let v = confirmation_view("abc-1", &[], &[], "alice", chrono::Utc::now());
        assert_eq!(
            parse_button(&v.confirm_id),
            Some(ButtonAction::Confirm("abc-1".into()))
        );
        assert_eq!(
            parse_button(&v.cancel_id),
            Some(ButtonAction::Cancel("abc-1".into()))
        );
        assert_eq!(parse_button("other:thing"), None);
        assert_eq!(parse_button(CONFIRM_PREFIX), None);
    }
}
