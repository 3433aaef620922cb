//! Grading one turn: what the model called and what the person saw, against the turn's
//! expectation. Each mistake found is named, so a report says why a turn failed.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde::Serialize;
use serde_json::Value;

use super::observe::Observed;
use super::set::{Expect, ToolExpect};
use crate::core::Effect;
use crate::tools::ToolRegistry;

/// The router's discovery tool: asking for tools is never a mistake nor a choice.
const DISCOVERY: &str = crate::tools::discovery::NAME;

/// A kind of mistake the grader names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mistake {
    /// An expected tool was not called, a tool was called where none belongs, or a write
    /// tool nobody asked for was called.
    WrongTool,
    /// The expected tool was called, but never with the expected arguments.
    WrongArgument,
    /// An expected number is missing from the answer (or off by more than its tolerance).
    WrongNumber,
    /// An expected section is cited neither in the citations nor in the text.
    MissingCitation,
    /// A confirmation card was shown where none belongs.
    UnexpectedCard,
    /// No confirmation card, where one belongs.
    MissingCard,
    /// None of the expected words is in the answer.
    MissingMention,
    /// The pending action did not end as expected.
    WrongResolution,
}

/// One mistake with what was seen.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// The kind.
    pub mistake: Mistake,
    /// What was expected and what was seen.
    pub detail: String,
}

/// The grade of one turn.
#[derive(Debug, Clone, Serialize)]
pub struct TurnGrade {
    /// Mistakes found (none: the turn is right).
    pub findings: Vec<Finding>,
    /// Whether the turn's tool choice was graded, and if so whether it was right.
    pub tool_choice: Option<bool>,
    /// Tool calls the model made (the discovery tool included).
    pub calls: u32,
    /// Calls whose arguments the registry refused (or that named no tool).
    pub invalid_calls: u32,
    /// Calls identical (tool and arguments) to an earlier call of the turn that failed.
    pub repeated_failing_calls: u32,
    /// Calls made when a request required one (re-asks after refused arguments).
    pub constrained_calls: u32,
    /// Those of them whose arguments were refused.
    pub constrained_invalid_calls: u32,
    /// The answer text the person saw.
    pub answer: String,
}

impl TurnGrade {
    /// Whether the turn is right.
    pub fn passed(&self) -> bool {
        self.findings.is_empty()
    }
}

/// Grades one turn from the effects the person saw and the calls the model made.
pub fn grade(
    expect: &Expect,
    effects: &[Effect],
    observed: &Observed,
    registry: &ToolRegistry,
) -> TurnGrade {
    let answer = answer_text(effects);
    let mut findings = Vec::new();
    let called: Vec<&crate::llm::ToolCall> = observed
        .calls
        .iter()
        .map(|c| &c.call)
        .filter(|c| c.name != DISCOVERY)
        .collect();
    let mut tool_choice = None;
    if let Some(tools) = &expect.tools {
        let names: BTreeSet<&str> = called.iter().map(|c| c.name.as_str()).collect();
        let expected: BTreeSet<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let missing: Vec<&str> = tools
            .iter()
            .filter(|t| {
                !names.contains(t.name.as_str()) && !t.or.iter().any(|o| names.contains(o.as_str()))
            })
            .map(|t| t.name.as_str())
            .collect();
        let unasked_writes: Vec<&str> = names
            .iter()
            .filter(|n| !expected.contains(*n))
            .filter(|n| registry.get(n).is_some_and(|t| t.writes()))
            .copied()
            .collect();
        let ok = missing.is_empty()
            && unasked_writes.is_empty()
            && (!expected.is_empty() || names.is_empty());
        tool_choice = Some(ok);
        if !ok {
            findings.push(Finding {
                mistake: Mistake::WrongTool,
                detail: format!(
                    "expected {:?}, called {:?}",
                    expected.iter().collect::<Vec<_>>(),
                    names.iter().collect::<Vec<_>>()
                ),
            });
        }
        for t in tools.iter().filter(|t| names.contains(t.name.as_str())) {
            if !called
                .iter()
                .any(|c| c.name == t.name && args_match(t, &c.arguments))
            {
                let seen: Vec<&str> = called
                    .iter()
                    .filter(|c| c.name == t.name)
                    .map(|c| c.arguments.as_str())
                    .collect();
                findings.push(Finding {
                    mistake: Mistake::WrongArgument,
                    detail: format!(
                        "{} expected {} , got {seen:?}",
                        t.name,
                        Value::Object(t.args.clone())
                    ),
                });
            }
        }
    }
    let numbers = numbers_in(&answer);
    for n in &expect.numbers {
        if !numbers.iter().any(|x| (x - n.value).abs() <= n.tol + 1e-9) {
            findings.push(Finding {
                mistake: Mistake::WrongNumber,
                detail: format!("{} ({}, ±{}) not in the answer", n.value, n.what, n.tol),
            });
        }
    }
    let cited = cited_text(effects, &answer);
    for c in &expect.citations {
        if !cites(&cited, c) {
            findings.push(Finding {
                mistake: Mistake::MissingCitation,
                detail: format!("{c} not cited"),
            });
        }
    }
    let card = effects
        .iter()
        .any(|e| matches!(e, Effect::Confirmation { .. }));
    match expect.card {
        Some(false) if card => findings.push(Finding {
            mistake: Mistake::UnexpectedCard,
            detail: "a confirmation card was shown".into(),
        }),
        Some(true) if !card => findings.push(Finding {
            mistake: Mistake::MissingCard,
            detail: "no confirmation card".into(),
        }),
        _ => {}
    }
    if !expect.mentions_any.is_empty() {
        let lower = answer.to_lowercase();
        if !expect
            .mentions_any
            .iter()
            .any(|w| lower.contains(&w.to_lowercase()))
        {
            findings.push(Finding {
                mistake: Mistake::MissingMention,
                detail: format!("none of {:?} in the answer", expect.mentions_any),
            });
        }
    }
    if let Some(want) = &expect.resolved {
        let ended = effects.iter().find_map(|e| match e {
            Effect::Resolved { outcome, .. } => serde_json::to_value(outcome)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string)),
            _ => None,
        });
        if ended.as_deref() != Some(want.as_str()) {
            findings.push(Finding {
                mistake: Mistake::WrongResolution,
                detail: format!("expected {want}, got {ended:?}"),
            });
        }
    }
    let quality = call_quality(observed, registry);
    TurnGrade {
        findings,
        tool_choice,
        calls: u32::try_from(observed.calls.len()).unwrap_or(u32::MAX),
        invalid_calls: quality.invalid,
        repeated_failing_calls: quality.repeated,
        constrained_calls: quality.constrained,
        constrained_invalid_calls: quality.constrained_invalid,
        answer,
    }
}

/// Counts of a turn's calls that went wrong.
#[derive(Default)]
struct CallQuality {
    invalid: u32,
    repeated: u32,
    constrained: u32,
    constrained_invalid: u32,
}

/// Invalid calls and repeats of failed calls among the turn's calls, and how the calls made
/// under a required call fared.
fn call_quality(observed: &Observed, registry: &ToolRegistry) -> CallQuality {
    let mut q = CallQuality::default();
    let mut failed: Vec<(String, Value)> = Vec::new();
    for c in &observed.calls {
        let args = parse_args(&c.call.arguments);
        let key = (c.call.name.clone(), args);
        let refused = registry.validate(&c.call.name, &c.call.arguments).is_err()
            || c.error
                .as_deref()
                .is_some_and(|e| e.starts_with("invalid arguments"));
        q.invalid += u32::from(refused);
        if c.constrained {
            q.constrained += 1;
            q.constrained_invalid += u32::from(refused);
        }
        if failed.contains(&key) {
            q.repeated += 1;
        }
        if refused || c.failed == Some(true) {
            failed.push(key);
        }
    }
    q
}

fn parse_args(text: &str) -> Value {
    let text = if text.trim().is_empty() { "{}" } else { text };
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// Whether a call's arguments hold every expected argument.
fn args_match(expect: &ToolExpect, arguments: &str) -> bool {
    let args = parse_args(arguments);
    expect
        .args
        .iter()
        .all(|(k, want)| args.get(k).is_some_and(|got| value_matches(want, got)))
}

/// Expected value against a given one: numbers by value (a number written as text counts),
/// text without case, spacing or a trailing "AWG"/"kcmil", objects by their expected keys.
pub fn value_matches(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::Number(a), _) => {
            let b = match got {
                Value::Number(b) => b.as_f64(),
                Value::String(s) => s.trim().parse::<f64>().ok(),
                _ => None,
            };
            match (a.as_f64(), b) {
                (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(1.0),
                _ => false,
            }
        }
        (Value::String(a), Value::String(b)) => norm(a) == norm(b),
        (Value::String(a), Value::Number(b)) => norm(a) == norm(&b.to_string()),
        (Value::Object(a), Value::Object(b)) => a
            .iter()
            .all(|(k, v)| b.get(k).is_some_and(|g| value_matches(v, g))),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| value_matches(x, y))
        }
        _ => want == got,
    }
}

fn norm(s: &str) -> String {
    let s = s.trim().to_lowercase().replace('#', "");
    let s = s
        .strip_suffix("awg")
        .or_else(|| s.strip_suffix("kcmil"))
        .unwrap_or(&s)
        .trim()
        .to_string();
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What the person read in the turn: answers, outcomes and errors.
fn answer_text(effects: &[Effect]) -> String {
    let mut parts = Vec::new();
    for e in effects {
        match e {
            Effect::Text { text, .. } => parts.push(text.clone()),
            Effect::Resolved { details, .. } => parts.extend(details.iter().cloned()),
            Effect::Error { message } => parts.push(message.clone()),
            _ => {}
        }
    }
    parts.join("\n")
}

fn cited_text(effects: &[Effect], answer: &str) -> String {
    let mut text = answer.to_lowercase();
    for e in effects {
        if let Effect::Text { citations, .. } = e {
            for c in citations {
                text.push('\n');
                text.push_str(&c.section.to_lowercase());
            }
        }
    }
    text
}

/// Whether `text` (lower case) cites `section`: the section's number stands on its own
/// (`210.8` is cited by "210.8(A)" but not by "210.80").
fn cites(text: &str, section: &str) -> bool {
    let s = section.trim().to_lowercase();
    let core = s
        .strip_prefix("table ")
        .or_else(|| s.strip_prefix("section "))
        .unwrap_or(&s)
        .trim();
    let bytes = text.as_bytes();
    text.match_indices(core).any(|(i, m)| {
        let before = i.checked_sub(1).map(|j| bytes[j]);
        let after = bytes.get(i + m.len()).copied();
        !before.is_some_and(|b| b.is_ascii_digit() || b == b'.')
            && !after.is_some_and(|a| a.is_ascii_digit())
    })
}

/// Every number written in `text` ("1,500", "6.3", "0.5").
pub fn numbers_in(text: &str) -> Vec<f64> {
    static NUMBER: OnceLock<regex::Regex> = OnceLock::new();
    let re = NUMBER.get_or_init(|| {
        regex::Regex::new(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+")
            .expect("a valid pattern")
    });
    re.find_iter(text)
        .filter_map(|m| m.as_str().replace(',', "").parse::<f64>().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_tool_that_answers_as_well_is_a_right_choice() {
        let expect: Expect = serde_json::from_value(serde_json::json!({
            "tools": [{"name": "search_code", "or": ["check_gfci_afci"]}],
            "citations": ["210.8"]
        }))
        .expect("an expectation");
        let observed = |name: &str| Observed {
            calls: vec![crate::eval::observe::ObservedCall {
                call: crate::llm::ToolCall {
                    id: "1".into(),
                    name: name.into(),
                    arguments: "{}".into(),
                    thought_signature: None,
                },
                failed: Some(false),
                error: None,
                constrained: false,
            }],
            ..Observed::default()
        };
        let said = [Effect::Text {
            text: "Yes: 210.8 requires GFCI for garage receptacles.".into(),
            citations: Vec::new(),
        }];
        let registry = ToolRegistry::new(0);
        for (tool, right) in [
            ("check_gfci_afci", true),
            ("search_code", true),
            ("lookup_table", false),
        ] {
            let g = grade(&expect, &said, &observed(tool), &registry);
            assert_eq!(g.tool_choice, Some(right), "{tool}: {:?}", g.findings);
            assert_eq!(g.passed(), right, "{tool}: {:?}", g.findings);
        }
    }

    #[test]
    fn numbers_are_read_with_thousands_and_decimals() {
        assert_eq!(
            numbers_in("1,500 VA at 6.32 V (5.3 %), .5 in"),
            vec![1500.0, 6.32, 5.3, 0.5]
        );
    }

    #[test]
    fn a_section_is_cited_only_on_its_own() {
        assert!(cites("see 210.8(a)(2)", "210.8"));
        assert!(cites("nec table 310.16", "Table 310.16"));
        assert!(!cites("see 210.80", "210.8"));
        assert!(!cites("see 1210.8", "210.8"));
    }

    #[test]
    fn sizes_and_numbers_match_as_people_write_them() {
        assert!(value_matches(&Value::from("12"), &Value::from("12 AWG")));
        assert!(value_matches(&Value::from("3/0"), &Value::from("#3/0")));
        assert!(value_matches(&Value::from(20), &Value::from(20.0)));
        assert!(!value_matches(&Value::from(20), &Value::from(15)));
        assert!(!value_matches(
            &Value::from("copper"),
            &Value::from("aluminum")
        ));
    }
}
