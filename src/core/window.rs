//! The part of a session's history that is sent to the model.
//!
//! History is stored whole; the model sees a running summary of older turns plus the newest
//! messages that fit a token budget. The window always starts at a user message and every
//! tool call in it has a result, whatever happened to the process in between.

use std::collections::HashSet;

use crate::domain::digest::clip;
use crate::llm::{ChatMessage, ToolResult};
use crate::store::{AskedThread, NewMessage, Store, StoreResult, StoredMessage};

use super::history::PastMessage;

use super::session::Session;

/// How many stored messages are considered at most when building a window.
pub(super) const SCAN_LIMIT: usize = 400;
/// Upper bound on the running summary's length in characters.
const SUMMARY_LIMIT: usize = 4000;
/// A window that must roll keeps only this share of its budget, so the summary (a model
/// call, and a change of the prompt's cacheable prefix) is redone every few turns of a long
/// thread rather than at every turn.
const ROLL_TO_PERCENT: usize = 60;

/// The model's view of a session.
pub struct Window {
    /// Summary of turns older than `messages`.
    pub summary: String,
    /// Newest messages, oldest first.
    pub messages: Vec<ChatMessage>,
}

/// Builds the window, folding messages that no longer fit into the session's summary (the
/// extractive one; a turn passes its model through [`TurnHistory::window`]).
pub async fn build(
    store: &dyn Store,
    session: &Session,
    token_budget: usize,
) -> StoreResult<Window> {
    let mut history = TurnHistory::load(store, session).await?;
    let window = history.window(token_budget, None).await?;
    history.save_summary(store).await?;
    Ok(window)
}

/// A thread's history as one turn sees it: read from the store once, when the turn starts,
/// then kept up to date by the turn itself. The thread's lease makes the turn the only
/// writer of its history, so every later model request of the turn is built from memory
/// instead of reading and decoding the thread again.
pub struct TurnHistory {
    session_id: i64,
    /// The running summary of what left the window.
    summary: String,
    /// Messages after the summary, oldest first.
    stored: Vec<PastMessage>,
    /// The thread's project and its revision, when the read gave them.
    project_revision: Option<(i64, i64)>,
    /// A summary the window wrote and the store does not have yet, with the last message
    /// it covers.
    unsaved_summary: Option<(String, i64)>,
}

impl TurnHistory {
    /// Reads the messages of `session` after its summary.
    pub async fn load(store: &dyn Store, session: &Session) -> StoreResult<Self> {
        let stored = store
            .recent_messages(session.id, session.summarized_through, SCAN_LIMIT)
            .await?;
        Ok(Self::of(session, stored))
    }

    /// Stores a person's `question` and reads the messages of `session` after its summary,
    /// the question last (one statement on Postgres).
    pub async fn ask(
        store: &dyn Store,
        session: &Session,
        question: &NewMessage,
    ) -> StoreResult<Self> {
        let asked = store
            .append_and_recent(session.id, question, session.summarized_through, SCAN_LIMIT)
            .await?;
        Ok(Self::asked(session, asked))
    }

    /// The thread as a statement that stored the question read it back.
    pub fn asked(session: &Session, asked: AskedThread) -> Self {
        let mut read = Self::of(session, asked.messages);
        read.project_revision = asked.project_revision;
        read
    }

    fn of(session: &Session, stored: Vec<StoredMessage>) -> Self {
        Self {
            session_id: session.id,
            summary: session.summary.clone(),
            stored: stored.into_iter().map(PastMessage::from).collect(),
            project_revision: None,
            unsaved_summary: None,
        }
    }

    /// The revision of `project_id` read with the thread, when it is the thread's project.
    pub fn project_revision(&self, project_id: i64) -> Option<i64> {
        self.project_revision
            .filter(|(id, _)| *id == project_id)
            .map(|(_, revision)| revision)
    }

    /// Keeps the large tool results older than the latest `keep_turns` user messages as
    /// digests only (what [`digest_old_results`] sends of them), so a turn does not hold
    /// whole results it will never send. Token estimates stay those of the stored messages,
    /// so the window rolls at the same points.
    pub fn digest_old_results(&mut self, keep_turns: usize) {
        let Some(boundary) = user_boundary(self.stored.iter().map(|p| &p.message), keep_turns)
        else {
            return;
        };
        for past in &mut self.stored[..boundary] {
            digest_results(&mut past.message);
        }
    }

    /// The person's message when it is the thread's last one: the question a turn answers
    /// (not a turn that follows a confirmation or a tool result).
    pub fn question(&self) -> Option<&str> {
        match self.stored.last().map(|p| &p.message) {
            Some(ChatMessage::User { text, .. }) => Some(text),
            _ => None,
        }
    }

    /// The result of the call `call_id`, if the history holds it.
    pub fn tool_result(&self, call_id: &str) -> Option<&ToolResult> {
        self.stored.iter().rev().find_map(|p| match &p.message {
            ChatMessage::Tool { results } => results.iter().find(|r| r.call_id == call_id),
            _ => None,
        })
    }

    /// Adds messages the turn has just stored.
    pub fn extend(&mut self, written: impl IntoIterator<Item = ChatMessage>) {
        self.stored
            .extend(written.into_iter().map(PastMessage::written));
    }

    /// The window for the next model request. Messages that no longer fit `token_budget`
    /// are folded into the summary (written by `summariser` when given, else extractive),
    /// which [`save_summary`](Self::save_summary) stores with the last of them.
    pub async fn window(
        &mut self,
        token_budget: usize,
        summariser: Option<&dyn crate::llm::ChatProvider>,
    ) -> StoreResult<Window> {
        let cut = roll_point(&self.stored, token_budget);
        if cut > 0 {
            let dropped: Vec<PastMessage> = self.stored.drain(..cut).collect();
            let written = match summariser {
                Some(p) => match super::summary::summarise(p, &self.summary, &dropped).await {
                    Ok(text) => Some(text),
                    Err(e) => {
                        tracing::warn!(error = %e, "model summary failed; using the extractive one");
                        None
                    }
                },
                None => None,
            };
            self.summary = written.unwrap_or_else(|| fold_summary(&self.summary, &dropped));
            // The window never drops the turn's own messages (it keeps the last user turn
            // whole), so the last dropped message has its stored id.
            if let Some(through) = dropped.iter().map(|m| m.id).max().filter(|id| *id > 0) {
                self.unsaved_summary = Some((self.summary.clone(), through));
            }
        }
        Ok(Window {
            summary: self.summary.clone(),
            messages: repair(attributed(self.stored.clone())),
        })
    }

    /// Stores the summary the last [`window`](Self::window) wrote, if it wrote one. A turn
    /// does this while the model reads the request: nothing depends on it until the next
    /// turn reads the thread, and a summary that is never stored is written again then.
    pub async fn save_summary(&mut self, store: &dyn Store) -> StoreResult<()> {
        if let Some((summary, through)) = self.unsaved_summary.take() {
            store
                .set_session_summary(self.session_id, &summary, through)
                .await?;
        }
        Ok(())
    }
}

/// The messages, with each user message prefixed by its author when more than one person
/// wrote in the thread, so the model can tell who said what.
fn attributed(stored: Vec<PastMessage>) -> Vec<ChatMessage> {
    let several = {
        let authors: HashSet<&str> = stored
            .iter()
            .filter(|m| matches!(m.message, ChatMessage::User { .. }))
            .filter_map(|m| m.author.as_deref())
            .collect();
        authors.len() > 1
    };
    stored
        .into_iter()
        .map(|m| match (m.message, m.author) {
            (ChatMessage::User { text, .. }, Some(author)) if several => {
                ChatMessage::user(format!("[{author}] {text}"))
            }
            (message, _) => message,
        })
        .collect()
}

/// Index of the first message kept when the window is built: 0 while everything fits the
/// budget; past it, the newest messages within [`ROLL_TO_PERCENT`] of the budget.
fn roll_point(stored: &[PastMessage], budget: usize) -> usize {
    match window_start(stored, budget) {
        0 => 0,
        cut => cut.max(window_start(stored, budget * ROLL_TO_PERCENT / 100)),
    }
}

/// Index of the first message kept: the newest messages within budget, starting at a user turn.
fn window_start(stored: &[PastMessage], budget: usize) -> usize {
    let mut used = 0usize;
    let mut start = stored.len();
    for (i, m) in stored.iter().enumerate().rev() {
        used += m.tokens;
        if used > budget && start < stored.len() {
            break;
        }
        start = i;
    }
    // Move forward to a user message so no tool result is separated from its call.
    while start < stored.len() && !matches!(stored[start].message, ChatMessage::User { .. }) {
        start += 1;
    }
    if start == stored.len() {
        // Nothing starts with a user message in budget: keep the last user turn whole.
        start = stored
            .iter()
            .rposition(|m| matches!(m.message, ChatMessage::User { .. }))
            .unwrap_or(0);
    }
    start
}

/// Extractive summary: what was asked and answered, kept short; oldest lines drop first.
fn fold_summary(previous: &str, dropped: &[PastMessage]) -> String {
    let mut lines: Vec<String> = previous.lines().map(str::to_string).collect();
    for m in dropped {
        match &m.message {
            ChatMessage::User { text, .. } => lines.push(format!("- user: {}", clip(text, 200))),
            ChatMessage::Assistant {
                text, tool_calls, ..
            } => {
                if !text.trim().is_empty() {
                    lines.push(format!("- assistant: {}", clip(text, 240)));
                }
                for c in tool_calls {
                    lines.push(format!("- called {}({})", c.name, clip(&c.arguments, 120)));
                }
            }
            ChatMessage::Tool { .. } => {}
        }
    }
    let mut total: usize = lines.iter().map(|l| l.len() + 1).sum();
    while total > SUMMARY_LIMIT && !lines.is_empty() {
        total -= lines[0].len() + 1;
        lines.remove(0);
    }
    lines.join("\n")
}

/// Gives every tool call a result (a process may have died between a call and its result),
/// drops empty messages (older versions stored empty model turns, which providers reject) and
/// merges consecutive user messages.
pub fn repair(messages: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::with_capacity(messages.len());
    let mut iter = messages.into_iter().peekable();
    while let Some(m) = iter.next() {
        match m {
            ChatMessage::Assistant {
                ref text,
                ref tool_calls,
                ..
            } if text.trim().is_empty() && tool_calls.is_empty() => {}
            ChatMessage::User { ref text, .. } if text.trim().is_empty() => {}
            ChatMessage::Assistant {
                text,
                tool_calls,
                thought_signature,
            } => {
                let calls = tool_calls.clone();
                out.push(ChatMessage::Assistant {
                    text,
                    tool_calls,
                    thought_signature,
                });
                if calls.is_empty() {
                    continue;
                }
                // People may write while the calls wait for a confirmation: their messages
                // are stored before the results, but every provider needs the results right
                // after the calls, so they move behind the results.
                let mut waited: Vec<ChatMessage> = Vec::new();
                while let Some(ChatMessage::User { .. }) = iter.peek() {
                    waited.extend(iter.next());
                }
                let mut results: Vec<ToolResult> = match iter.peek() {
                    Some(ChatMessage::Tool { .. }) => match iter.next() {
                        Some(ChatMessage::Tool { results }) => results,
                        _ => Vec::new(),
                    },
                    _ => Vec::new(),
                };
                let ids: HashSet<&str> = calls.iter().map(|c| c.id.as_str()).collect();
                results.retain(|r| ids.contains(r.call_id.as_str()));
                for c in &calls {
                    if !results.iter().any(|r| r.call_id == c.id) {
                        results.push(ToolResult {
                            call_id: c.id.clone(),
                            name: c.name.clone(),
                            content: serde_json::json!({"error": "this call was interrupted and did not run"}).into(),
                            is_error: true,
                        });
                    }
                }
                // Keep call order, which some providers expect.
                results.sort_by_key(|r| calls.iter().position(|c| c.id == r.call_id));
                out.push(ChatMessage::Tool { results });
                for m in waited {
                    push_user(&mut out, m);
                }
            }
            m @ ChatMessage::User { .. } => push_user(&mut out, m),
            // A result without its call (cut by the window) is dropped.
            ChatMessage::Tool { .. } => {}
        }
    }
    out
}

/// Replaces large tool results older than the latest `keep_turns` user messages by digests:
/// every scalar kept, arrays cut to their first rows with a count of the rest, long strings
/// clipped. The model's own answer at the time already states what it took from them; a
/// follow-up that needs the full rows calls the tool again.
pub fn digest_old_results(messages: &mut [ChatMessage], keep_turns: usize) {
    let Some(boundary) = user_boundary(messages.iter(), keep_turns) else {
        return;
    };
    for m in &mut messages[..boundary] {
        digest_results(m);
    }
}

/// The position of the `keep_turns`-th user message from the end.
fn user_boundary<'a>(
    messages: impl DoubleEndedIterator<Item = &'a ChatMessage> + ExactSizeIterator,
    keep_turns: usize,
) -> Option<usize> {
    messages
        .enumerate()
        .filter(|(_, m)| matches!(m, ChatMessage::User { .. }))
        .map(|(i, _)| i)
        .rev()
        .nth(keep_turns.saturating_sub(1))
}

fn digest_results(m: &mut ChatMessage) {
    let ChatMessage::Tool { results } = m else {
        return;
    };
    for r in results {
        if let Some(d) = crate::domain::digest::digest_of(&r.content) {
            r.content = d.into();
        }
    }
}

/// Appends a user message, merged into a user message just before it.
fn push_user(out: &mut Vec<ChatMessage>, m: ChatMessage) {
    match (out.last_mut(), m) {
        (Some(ChatMessage::User { text: prev, .. }), ChatMessage::User { text, .. }) => {
            prev.push_str("\n\n");
            prev.push_str(&text);
        }
        (_, m) => out.push(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::digest::DIGEST_NOTE;
    use crate::llm::ToolCall;

    fn stored(id: i64, message: ChatMessage) -> PastMessage {
        PastMessage {
            id,
            tokens: message.estimated_tokens(),
            message,
            author: None,
        }
    }

    /// `n` turns of a question and an answer, each `chars` characters long.
    fn turns(n: i64, chars: usize) -> Vec<PastMessage> {
        let long = "x".repeat(chars);
        (0..n)
            .flat_map(|i| {
                [
                    stored(2 * i + 1, ChatMessage::user(long.clone())),
                    stored(2 * i + 2, ChatMessage::assistant(long.clone())),
                ]
            })
            .collect()
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "calculator".into(),
            arguments: "{}".into(),
            thought_signature: None,
        }
    }

    #[test]
    fn messages_written_while_calls_wait_follow_their_results() {
        let result = |id: &str| ToolResult {
            call_id: id.into(),
            name: "calculator".into(),
            content: serde_json::json!({"ok": true}).into(),
            is_error: false,
        };
        let msgs = vec![
            ChatMessage::user("add a circuit"),
            ChatMessage::Assistant {
                text: String::new(),
                tool_calls: vec![call("a")],
                thought_signature: None,
            },
            ChatMessage::user("[bob] make it 30 A"),
            ChatMessage::user("[carol] and label it"),
            ChatMessage::Tool {
                results: vec![result("a")],
            },
            ChatMessage::user("[alice] thanks"),
        ];
        let out = repair(msgs);
        assert_eq!(out.len(), 4, "{out:#?}");
        match &out[2] {
            ChatMessage::Tool { results } => assert!(!results[0].is_error, "{results:?}"),
            other => panic!("expected the real results, got {other:?}"),
        }
        match &out[3] {
            ChatMessage::User { text, .. } => {
                assert_eq!(
                    text,
                    "[bob] make it 30 A\n\n[carol] and label it\n\n[alice] thanks"
                )
            }
            other => panic!("expected the waiting messages, got {other:?}"),
        }
    }

    #[test]
    fn authors_are_named_only_when_several_people_write() {
        let mut one = stored(1, ChatMessage::user("hi"));
        one.author = Some("alice".into());
        let mut two = stored(2, ChatMessage::user("hello"));
        two.author = Some("alice".into());
        let plain = attributed(vec![one.clone(), two.clone()]);
        assert_eq!(plain[1], ChatMessage::user("hello"));
        two.author = Some("bob".into());
        let named = attributed(vec![one, two]);
        assert_eq!(named[0], ChatMessage::user("[alice] hi"));
        assert_eq!(named[1], ChatMessage::user("[bob] hello"));
    }

    #[test]
    fn empty_turns_are_dropped_and_their_neighbours_merged() {
        let msgs = vec![
            ChatMessage::user("first"),
            ChatMessage::assistant(""),
            ChatMessage::user("second"),
            ChatMessage::user(" "),
            ChatMessage::assistant("answer"),
        ];
        assert_eq!(
            repair(msgs),
            vec![
                ChatMessage::user("first\n\nsecond"),
                ChatMessage::assistant("answer")
            ]
        );
    }

    #[test]
    fn unanswered_calls_get_an_interrupted_result() {
        let msgs = vec![
            ChatMessage::user("hi"),
            ChatMessage::Assistant {
                text: String::new(),
                tool_calls: vec![call("a"), call("b")],
                thought_signature: None,
            },
            ChatMessage::user("hello?"),
        ];
        let out = repair(msgs);
        assert_eq!(out.len(), 4);
        match &out[2] {
            ChatMessage::Tool { results } => {
                assert_eq!(results.len(), 2);
                assert!(results.iter().all(|r| r.is_error));
                assert_eq!(results[0].call_id, "a");
            }
            other => panic!("expected tool results, got {other:?}"),
        }
    }

    #[test]
    fn consecutive_user_messages_merge_and_orphan_results_drop() {
        let msgs = vec![
            ChatMessage::Tool { results: vec![] },
            ChatMessage::user("one"),
            ChatMessage::user("two"),
        ];
        let out = repair(msgs);
        assert_eq!(out, vec![ChatMessage::user("one\n\ntwo")]);
    }

    #[test]
    fn old_large_results_become_digests_and_recent_ones_stay_whole() {
        let rows: Vec<serde_json::Value> = (0..200)
            .map(
                |i| serde_json::json!({"panel": "LP-3", "number": i, "description": "Receptacles"}),
            )
            .collect();
        let big = serde_json::json!({"matched": 200, "circuits": rows, "worst_percent": 4.12});
        let result = |id: &str| ChatMessage::Tool {
            results: vec![ToolResult {
                call_id: id.into(),
                name: "find_circuits".into(),
                content: big.clone().into(),
                is_error: false,
            }],
        };
        let call_turn = |id: &str| ChatMessage::Assistant {
            text: String::new(),
            tool_calls: vec![call(id)],
            thought_signature: None,
        };
        let mut msgs = vec![
            ChatMessage::user("all circuits of LP-3"),
            call_turn("a"),
            result("a"),
            ChatMessage::assistant("200 circuits; the worst drop is 4.12 %"),
            ChatMessage::user("and again"),
            call_turn("b"),
            result("b"),
        ];
        digest_old_results(&mut msgs, 1);
        let ChatMessage::Tool { results } = &msgs[2] else {
            panic!("expected results")
        };
        let d = &results[0].content;
        assert_eq!(d["matched"], 200);
        assert_eq!(d["worst_percent"], 4.12);
        assert_eq!(d["circuits"].as_array().map(Vec::len), Some(4));
        assert!(d["circuits"][3]
            .as_str()
            .is_some_and(|t| t.contains("197 more of 200")));
        assert!(d.to_string().len() < 800);
        let ChatMessage::Tool { results } = &msgs[6] else {
            panic!("expected results")
        };
        assert_eq!(
            *results[0].content, big,
            "the current turn's result stays whole"
        );
    }

    #[test]
    fn a_turn_keeps_old_results_as_the_digests_its_requests_send() {
        // A result whose digest is still long (many scalars), so digesting twice would cut
        // its rows again.
        let mut big = serde_json::Map::new();
        for i in 0..60 {
            big.insert(
                format!("field_{i}"),
                serde_json::json!(format!("value {i}")),
            );
        }
        big.insert(
            "rows".into(),
            serde_json::json!((0..50)
                .map(|i| serde_json::json!({"n": i}))
                .collect::<Vec<_>>()),
        );
        let big = serde_json::Value::Object(big);
        let turn = |q: &str, id: &str| {
            vec![
                ChatMessage::user(q),
                ChatMessage::Assistant {
                    text: String::new(),
                    tool_calls: vec![call(id)],
                    thought_signature: None,
                },
                ChatMessage::Tool {
                    results: vec![ToolResult {
                        call_id: id.into(),
                        name: "calculator".into(),
                        content: big.clone().into(),
                        is_error: false,
                    }],
                },
                ChatMessage::assistant("done"),
            ]
        };
        let all: Vec<ChatMessage> = ["one", "two", "three"]
            .iter()
            .flat_map(|q| turn(q, q))
            .collect();
        let mut sent_before = all.clone();
        digest_old_results(&mut sent_before, 2);

        let mut history = TurnHistory {
            session_id: 1,
            summary: String::new(),
            project_revision: None,
            unsaved_summary: None,
            stored: all
                .iter()
                .enumerate()
                .map(|(i, m)| stored(i as i64 + 1, m.clone()))
                .collect(),
        };
        let tokens: Vec<usize> = history.stored.iter().map(|p| p.tokens).collect();
        // The next turn reads the thread again and digests it the same.
        let mut next_turn = history.stored.clone();
        history.digest_old_results(2);
        let ChatMessage::Tool { results } = &history.stored[2].message else {
            panic!("expected results")
        };
        assert_eq!(
            results[0].content["digest"], DIGEST_NOTE,
            "the oldest is kept digested"
        );
        let ChatMessage::Tool { results } = &history.stored[6].message else {
            panic!("expected results")
        };
        assert_eq!(*results[0].content, big, "the latest two turns stay whole");
        assert_eq!(
            history.stored.iter().map(|p| p.tokens).collect::<Vec<_>>(),
            tokens,
            "the window rolls where it did"
        );

        let mut sent_after: Vec<ChatMessage> =
            history.stored.iter().map(|p| p.message.clone()).collect();
        digest_old_results(&mut sent_after, 2);
        assert_eq!(
            sent_after, sent_before,
            "requests send what they sent before"
        );
        std::mem::swap(&mut history.stored, &mut next_turn);
        history.digest_old_results(2);
        assert_eq!(history.stored, next_turn, "a later turn digests the same");
    }

    #[test]
    fn window_keeps_newest_within_budget_starting_at_a_user_message() {
        let v = turns(10, 4000); // ~1000 tokens a message
        let start = window_start(&v, 3000);
        assert!(matches!(v[start].message, ChatMessage::User { .. }));
        let kept: usize = v[start..]
            .iter()
            .map(|m| m.message.estimated_tokens())
            .sum();
        assert!(kept <= 3000, "kept {kept}");
        assert!(start >= 16);
        let summary = fold_summary("", &v[..start]);
        assert!(summary.contains("- user:"));
        assert!(summary.len() <= SUMMARY_LIMIT);
    }

    #[test]
    fn a_rolled_window_leaves_room_for_the_next_turns() {
        let v = turns(10, 2000); // ~500 tokens a message
        assert_eq!(roll_point(&v[..2], 3000), 0, "what fits is not rolled");
        let cut = roll_point(&v, 3000);
        assert!(matches!(v[cut].message, ChatMessage::User { .. }));
        let kept: usize = v[cut..].iter().map(|m| m.tokens).sum();
        assert!(kept <= 1800, "kept {kept}");
        assert!(
            cut > window_start(&v, 3000),
            "rolled further than the budget alone"
        );
        // The next turn fits without another roll (and so without another summary).
        let mut next = v[cut..].to_vec();
        next.push(stored(21, ChatMessage::user("and the neutral?")));
        next.push(stored(22, ChatMessage::assistant("x".repeat(2000))));
        assert_eq!(roll_point(&next, 3000), 0);
    }
}
