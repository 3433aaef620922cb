//! Scripted models for the answer eval (`sparky eval answers`), served by [`FakeLlm`] over
//! real HTTP + SSE: one answers every conversation of a set right, derived from the set's
//! expectations; the other makes known mistakes on chosen conversations, so a test can check
//! that the grader catches each one and scores exactly what the mistakes predict.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use sparky::eval::set::{Action, ConversationSet, Expect};

use super::fake_llm::{Reply, Responder};

/// A mistake the wrong-answering model makes on one conversation's first turn.
#[derive(Debug, Clone, PartialEq)]
pub enum Wrong {
    /// Calls this tool (with these arguments) instead of the expected one; the text is right.
    Tool(String, Value),
    /// Calls the expected tool with this argument changed; the text is right.
    Argument(String, Value),
    /// The right calls, but every expected number in the text is off by half again.
    Number,
    /// The right calls and numbers, but no section cited.
    NoCitation,
    /// Sends the expected tool this argument value, which the schema refuses, every time it
    /// is asked.
    RepeatInvalid(String, Value),
}

/// The answer a right model gives once its tools have run: the expected numbers, sections
/// and words.
fn right_text(e: &Expect, numbers_scale: f64, cite: bool) -> String {
    let mut out = String::from("Here is what I found.");
    for n in &e.numbers {
        let v = ((n.value * numbers_scale) * 1000.0).round() / 1000.0;
        out.push_str(&format!(" {}: {v}.", n.what));
    }
    if cite {
        for c in &e.citations {
            out.push_str(&format!(" See NEC {c}."));
        }
    }
    if let Some(w) = e.mentions_any.first() {
        out.push_str(&format!(" ({w})"));
    }
    out
}

fn message_text(m: &Value) -> String {
    match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The id of the first task a `list_tasks` result in the conversation names: a right model
/// completes the task it was shown, whatever id the store gave it.
fn listed_task_id(messages: &[Value]) -> Option<Value> {
    messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| serde_json::from_str::<Value>(&message_text(m)).ok())
        .find_map(|r| r["tasks"][0].get("id").cloned())
}

/// A right call of `t`, with ids the conversation gave filled in.
fn right_call(t: &sparky::eval::set::ToolExpect, messages: &[Value]) -> Value {
    let mut args = t.right_call();
    if t.name == "complete_task" {
        if let Some(id) = listed_task_id(messages) {
            args["task_id"] = id;
        }
    }
    args
}

/// A responder that answers the set, making the mistakes of `wrong` (by conversation id).
pub fn responder(set: &ConversationSet, wrong: HashMap<String, Wrong>) -> Responder {
    let mut turns: HashMap<String, (String, usize, Expect)> = HashMap::new();
    for c in &set.conversations {
        for (i, t) in c.turns.iter().enumerate() {
            if let Action::Say(text) = &t.action {
                turns.insert(text.trim().to_string(), (c.id.clone(), i, t.expect.clone()));
            }
        }
    }
    // What this model already called for each message. Kept here rather than read from the
    // request: the history places a superseded proposal's call after the correction that
    // replaced it.
    let issued: Mutex<HashMap<String, Vec<String>>> = Mutex::new(HashMap::new());
    Arc::new(move |request: &Value| {
        let messages = request["messages"].as_array().cloned().unwrap_or_default();
        // A correction typed while a card was pending reaches the model inside the card's
        // tool result (`user_said`), not as a user message.
        let correction = messages
            .last()
            .filter(|m| m["role"] == "tool")
            .and_then(|m| serde_json::from_str::<Value>(&message_text(m)).ok())
            .and_then(|r| r["user_said"].as_str().map(str::to_string));
        let Some(text) = correction.or_else(|| {
            messages
                .iter()
                .rev()
                .find(|m| m["role"] == "user")
                .map(message_text)
        }) else {
            return Reply::Text("Nothing to answer.".into());
        };
        // The message as typed ends the user message (the core may put context before it).
        let Some((said, (id, turn, expect))) = turns
            .iter()
            .find(|(said, _)| text.trim().ends_with(said.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
        else {
            return Reply::Text(format!("Unscripted message: {text}"));
        };
        let call = |calls: Vec<(String, Value)>| {
            issued
                .lock()
                .unwrap()
                .entry(said.clone())
                .or_default()
                .extend(calls.iter().map(|(n, _)| n.clone()));
            Reply::ToolCalls(calls)
        };
        let called = issued
            .lock()
            .unwrap()
            .get(&said)
            .cloned()
            .unwrap_or_default();
        let mistake = (turn == 0).then(|| wrong.get(&id)).flatten();
        let expected = expect.tools.clone().unwrap_or_default();
        if let Some(Wrong::RepeatInvalid(key, value)) = mistake {
            if let Some(t) = expected.first() {
                let mut args = t.right_call();
                args[key.as_str()] = value.clone();
                return call(vec![(t.name.clone(), args)]);
            }
        }
        if let (Some(Wrong::Tool(name, args)), true) = (mistake, called.is_empty()) {
            return call(vec![(name.clone(), args.clone())]);
        }
        let pending = !expected.is_empty()
            && !matches!(mistake, Some(Wrong::Tool(..)))
            && called.iter().all(|c| c == "more_tools");
        if pending {
            let offered: Vec<&str> = request["tools"]
                .as_array()
                .map(|ts| {
                    ts.iter()
                        .filter_map(|t| t["function"]["name"].as_str())
                        .collect()
                })
                .unwrap_or_default();
            let missing: Vec<String> = expected
                .iter()
                .filter(|t| !offered.contains(&t.name.as_str()))
                .map(|t| t.name.clone())
                .collect();
            if !missing.is_empty() && offered.contains(&"more_tools") && called.is_empty() {
                // As a routed model does: ask for the tools it was not offered in full.
                return call(vec![("more_tools".into(), json!({ "tools": missing }))]);
            }
            return call(
                expected
                    .iter()
                    .map(|t| {
                        let mut args = right_call(t, &messages);
                        if let Some(Wrong::Argument(key, value)) = mistake {
                            args[key.as_str()] = value.clone();
                        }
                        (t.name.clone(), args)
                    })
                    .collect(),
            );
        }
        match mistake {
            Some(Wrong::Number) => Reply::Text(right_text(&expect, 1.5, true)),
            Some(Wrong::NoCitation) => Reply::Text(right_text(&expect, 1.0, false)),
            _ => Reply::Text(right_text(&expect, 1.0, true)),
        }
    })
}
