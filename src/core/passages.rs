//! Passages found for the person's question before the model is first called.
//!
//! A small model often answers a code question from memory, without calling `search_code`,
//! and its memory of the NEC is wrong ("garage receptacles do not need GFCI"). So a turn
//! searches once with the person's own words and the passages travel with their message in
//! every request of the turn, fenced as data. The model still calls `search_code` for more;
//! an out-of-scope question finds nothing and adds nothing. A passage is cited under the
//! answer when the answer names its section.

use serde_json::{json, Value};

use crate::llm::{ChatMessage, ChatRequest, ToolCall};
use crate::rag::sections;

/// The tool whose search runs first.
pub(crate) const SEARCH_TOOL: &str = "search_code";
/// Longest passage text sent, in bytes (a summary passage is shorter; a long table is cut).
const PASSAGE_TEXT: usize = 900;

/// A passage's citation: section, edition, source.
pub(crate) type Cited = (String, Option<i32>, String);

/// What the first search found: the text added to the person's message, and the citations.
#[derive(Debug, Clone, Default)]
pub(crate) struct Prefetched {
    text: String,
    cited: Vec<Cited>,
}

/// The search call made on the person's behalf, with their words as the query.
pub(crate) fn search_call(question: &str, k: usize) -> (ToolCall, Value) {
    let args = json!({"query": question, "k": k});
    let call = ToolCall {
        id: "prefetch-search".into(),
        name: SEARCH_TOOL.into(),
        arguments: args.to_string(),
        thought_signature: None,
    };
    (call, args)
}

impl Prefetched {
    /// The passages of a `search_code` result; `None` when it failed or found nothing.
    pub(crate) fn from_result(content: &Value, is_error: bool) -> Option<Self> {
        if is_error {
            return None;
        }
        let passages = content.get("passages")?.as_array()?;
        if passages.is_empty() {
            return None;
        }
        let mut text = String::from(
            "[NEC passages found for this message by search_code; cite the sections you use, \
             and call search_code for anything they do not cover]\n",
        );
        let mut cited = Vec::new();
        for p in passages {
            let Some(c) = citation(p) else { continue };
            let body = p.get("text").and_then(Value::as_str).unwrap_or("");
            let edition_text = c.1.map(|e| format!("NEC {e} ")).unwrap_or_default();
            text.push_str(&format!(
                "- {edition_text}{}: {}\n",
                c.0,
                clip(body, PASSAGE_TEXT)
            ));
            cited.push(c);
        }
        if cited.is_empty() {
            return None;
        }
        text.push_str("\n[The message]\n");
        Some(Self { text, cited })
    }

    /// Puts the passages ahead of the latest user message of `request`, so the message
    /// itself still ends it.
    pub(crate) fn attach(&self, request: &mut ChatRequest) {
        if let Some(ChatMessage::User { text, .. }) = request
            .messages
            .iter_mut()
            .rev()
            .find(|m| matches!(m, ChatMessage::User { .. }))
        {
            text.insert_str(0, &self.text);
        }
    }

    /// The passages whose section `answer` names, at any level ("210.8" names a passage of
    /// 210.8(A), and "210.8(A)(2)" one of 210.8), not a longer number that starts alike
    /// ("210.80").
    pub(crate) fn cited_in<'a>(&'a self, answer: &str) -> impl Iterator<Item = &'a Cited> {
        let named = sections::find_references(answer);
        self.cited
            .iter()
            .filter(move |(section, _, _)| named.iter().any(|r| sections::related(r, section)))
    }
}

/// The citation of one passage of a `search_code` result.
pub(crate) fn citation(passage: &Value) -> Option<Cited> {
    let section = passage.get("section").and_then(Value::as_str)?;
    let edition = passage
        .get("edition")
        .and_then(Value::as_i64)
        .and_then(|e| i32::try_from(e).ok());
    let source = passage.get("source").and_then(Value::as_str).unwrap_or("");
    Some((section.to_string(), edition, source.to_string()))
}

/// `text` cut to at most `max` bytes at a character boundary, `…` where cut.
fn clip(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(sections: &[&str]) -> Value {
        json!({"passages": sections.iter().map(|s| json!({
            "section": s, "edition": 2023, "source": "nec-summaries",
            "text": format!("<<<document nec-summaries>>>about {s}<<<end of document>>>"),
        })).collect::<Vec<_>>()})
    }

    #[test]
    fn passages_join_the_latest_user_message_and_nothing_else() {
        let p = Prefetched::from_result(&result(&["210.8", "210.12"]), false).unwrap();
        let mut request = ChatRequest {
            system: "s".into(),
            messages: vec![
                ChatMessage::user("first"),
                ChatMessage::Assistant {
                    text: "a".into(),
                    tool_calls: Vec::new(),
                    thought_signature: None,
                },
                ChatMessage::user("do garage receptacles need gfci"),
            ],
            ..Default::default()
        };
        p.attach(&mut request);
        let ChatMessage::User { text, .. } = &request.messages[2] else {
            panic!("not a user message");
        };
        assert!(
            text.starts_with("[NEC passages found for this message"),
            "{text}"
        );
        assert!(
            text.ends_with("\n[The message]\ndo garage receptacles need gfci"),
            "{text}"
        );
        assert!(text.contains("- NEC 2023 210.8: <<<document nec-summaries>>>about 210.8"));
        assert!(text.contains("- NEC 2023 210.12:"));
        let ChatMessage::User { text, .. } = &request.messages[0] else {
            panic!("not a user message");
        };
        assert_eq!(text, "first");
    }

    #[test]
    fn nothing_found_or_a_failed_search_adds_nothing() {
        assert!(Prefetched::from_result(&result(&[]), false).is_none());
        assert!(Prefetched::from_result(&result(&["210.8"]), true).is_none());
        assert!(Prefetched::from_result(&json!({"error": "x"}), false).is_none());
    }

    #[test]
    fn a_passage_is_cited_when_the_answer_names_its_section() {
        let p = Prefetched::from_result(&result(&["210.8", "210.12", "220.42(A)"]), false).unwrap();
        let cited =
            |answer: &str| -> Vec<String> { p.cited_in(answer).map(|c| c.0.clone()).collect() };
        assert_eq!(cited("Yes: NEC 210.8(A)(2) requires it."), ["210.8"]);
        assert_eq!(cited("See 210.8."), ["210.8"]);
        assert_eq!(
            cited("210.80 and 210.8.1 are other sections"),
            Vec::<String>::new()
        );
        assert_eq!(cited("x210.12 is not it; 210.12 is"), ["210.12"]);
        assert_eq!(cited("No sections named."), Vec::<String>::new());
        assert_eq!(cited("Table 220.42 gives 1.3 VA"), ["220.42(A)"]);
        assert_eq!(cited("220.42(B) applies"), Vec::<String>::new());
    }
}
