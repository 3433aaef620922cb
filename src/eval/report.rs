//! The report of a run: accuracy per category, tool choice, invalid and repeated calls,
//! model calls and prompt tokens per conversation, turn time; as a table or as JSON.

use std::collections::BTreeMap;

use serde::Serialize;

use super::grade::Mistake;
use super::run::{ConversationResult, ToolMode};

/// Right turns of one category.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryScore {
    /// Category name.
    pub category: String,
    /// Conversations in it.
    pub conversations: usize,
    /// Conversations whose every turn is right.
    pub conversations_right: usize,
    /// Turns in it.
    pub turns: usize,
    /// Right turns.
    pub turns_right: usize,
    /// `turns_right / turns`, in percent.
    pub accuracy_pct: f64,
}

/// One wrong turn and why.
#[derive(Debug, Clone, Serialize)]
pub struct Miss {
    /// Conversation id.
    pub conversation: String,
    /// Turn index.
    pub turn: usize,
    /// The mistakes found, with details.
    pub findings: Vec<super::grade::Finding>,
    /// What the person read.
    pub answer: String,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// `provider:model`.
    pub model: String,
    /// How tools were offered.
    pub tools: ToolMode,
    /// Conversations run.
    pub conversations: usize,
    /// Turns run.
    pub turns: usize,
    /// Right turns over all turns, in percent.
    pub accuracy_pct: f64,
    /// Per category.
    pub categories: Vec<CategoryScore>,
    /// Turns with the right tools over turns whose tools are graded, in percent.
    pub tool_choice_pct: f64,
    /// Tool calls made.
    pub tool_calls: u32,
    /// Calls refused for their arguments over all calls, in percent.
    pub invalid_argument_pct: f64,
    /// Calls repeating a failed call of the same turn over all calls, in percent.
    pub repeated_call_pct: f64,
    /// Calls made in open requests (the model chose whether to call).
    pub open_calls: u32,
    /// Of those, refused for their arguments, in percent.
    pub open_invalid_pct: f64,
    /// Calls made when a call was required after refused arguments (decoded under the tool's
    /// schema where the server supports it).
    pub constrained_calls: u32,
    /// Of those, refused for their arguments, in percent.
    pub constrained_invalid_pct: f64,
    /// Mean model requests per conversation.
    pub model_calls_per_conversation: f64,
    /// Mean prompt tokens per conversation (as the provider reports them).
    pub prompt_tokens_per_conversation: f64,
    /// Median turn time, seconds.
    pub turn_seconds_p50: f64,
    /// Slowest turn, seconds.
    pub turn_seconds_max: f64,
    /// How often each mistake was found.
    pub mistakes: BTreeMap<Mistake, usize>,
    /// The wrong turns.
    pub misses: Vec<Miss>,
}

/// `n` of `d` as a percentage; nothing to get wrong counts as all right.
fn pct(n: usize, d: usize) -> f64 {
    if d == 0 {
        100.0
    } else {
        (n as f64 * 1000.0 / d as f64).round() / 10.0
    }
}

/// How often something went wrong: `n` of `d` calls, 0 when no call was made (a model that
/// never calls a tool sends no invalid arguments).
fn failure_rate(n: usize, d: usize) -> f64 {
    if d == 0 {
        0.0
    } else {
        pct(n, d)
    }
}

impl Report {
    /// Sums up the results of one run.
    pub fn new(model: String, tools: ToolMode, results: &[ConversationResult]) -> Self {
        let mut by_cat: BTreeMap<&str, CategoryScore> = BTreeMap::new();
        let (mut graded, mut chosen, mut calls, mut invalid, mut repeated) = (0, 0, 0, 0, 0);
        let (mut constrained, mut constrained_invalid) = (0, 0);
        let mut seconds = Vec::new();
        let mut mistakes = BTreeMap::new();
        let mut misses = Vec::new();
        for c in results {
            let s = by_cat.entry(&c.category).or_insert_with(|| CategoryScore {
                category: c.category.clone(),
                conversations: 0,
                conversations_right: 0,
                turns: 0,
                turns_right: 0,
                accuracy_pct: 0.0,
            });
            s.conversations += 1;
            if c.turns.iter().all(|t| t.grade.passed()) {
                s.conversations_right += 1;
            }
            for t in &c.turns {
                s.turns += 1;
                if t.grade.passed() {
                    s.turns_right += 1;
                } else {
                    misses.push(Miss {
                        conversation: c.id.clone(),
                        turn: t.turn,
                        findings: t.grade.findings.clone(),
                        answer: t.grade.answer.clone(),
                    });
                }
                for f in &t.grade.findings {
                    *mistakes.entry(f.mistake).or_insert(0) += 1;
                }
                if let Some(ok) = t.grade.tool_choice {
                    graded += 1;
                    chosen += usize::from(ok);
                }
                calls += t.grade.calls;
                invalid += t.grade.invalid_calls;
                repeated += t.grade.repeated_failing_calls;
                constrained += t.grade.constrained_calls;
                constrained_invalid += t.grade.constrained_invalid_calls;
                seconds.push(t.seconds);
            }
        }
        let mut categories: Vec<CategoryScore> = by_cat.into_values().collect();
        for c in &mut categories {
            c.accuracy_pct = pct(c.turns_right, c.turns);
        }
        let turns: usize = categories.iter().map(|c| c.turns).sum();
        let right: usize = categories.iter().map(|c| c.turns_right).sum();
        seconds.sort_by(f64::total_cmp);
        let n = results.len().max(1) as f64;
        Self {
            model,
            tools,
            conversations: results.len(),
            turns,
            accuracy_pct: pct(right, turns),
            categories,
            tool_choice_pct: pct(chosen, graded),
            tool_calls: calls,
            invalid_argument_pct: failure_rate(invalid as usize, calls as usize),
            repeated_call_pct: failure_rate(repeated as usize, calls as usize),
            open_calls: calls - constrained,
            open_invalid_pct: failure_rate(
                (invalid - constrained_invalid) as usize,
                (calls - constrained) as usize,
            ),
            constrained_calls: constrained,
            constrained_invalid_pct: failure_rate(
                constrained_invalid as usize,
                constrained as usize,
            ),
            model_calls_per_conversation: round1(
                results
                    .iter()
                    .map(|c| f64::from(c.model_calls))
                    .sum::<f64>()
                    / n,
            ),
            prompt_tokens_per_conversation: round1(
                results.iter().map(|c| c.prompt_tokens as f64).sum::<f64>() / n,
            ),
            turn_seconds_p50: round3(seconds.get(seconds.len() / 2).copied().unwrap_or(0.0)),
            turn_seconds_max: round3(seconds.last().copied().unwrap_or(0.0)),
            mistakes,
            misses,
        }
    }

    /// The report as a plain-text table, wrong turns listed after it.
    pub fn table(&self) -> String {
        let mut out = format!(
            "model {}  tools {}  conversations {}  turns {}\n\n",
            self.model,
            match self.tools {
                ToolMode::Routed => "routed",
                ToolMode::All => "all",
            },
            self.conversations,
            self.turns
        );
        out.push_str(&format!(
            "{:<14} {:>6} {:>7} {:>6} {:>7} {:>9}\n",
            "category", "convs", "right", "turns", "right", "accuracy"
        ));
        for c in &self.categories {
            out.push_str(&format!(
                "{:<14} {:>6} {:>7} {:>6} {:>7} {:>8.1}%\n",
                c.category,
                c.conversations,
                c.conversations_right,
                c.turns,
                c.turns_right,
                c.accuracy_pct
            ));
        }
        out.push_str(&format!(
            "{:<14} {:>6} {:>7} {:>6} {:>7} {:>8.1}%\n\n",
            "all", self.conversations, "", self.turns, "", self.accuracy_pct
        ));
        for (label, value) in [
            ("tool choice", format!("{:.1}%", self.tool_choice_pct)),
            ("tool calls", self.tool_calls.to_string()),
            (
                "invalid arguments",
                format!("{:.1}%", self.invalid_argument_pct),
            ),
            (
                "  in open requests",
                format!("{:.1}% of {}", self.open_invalid_pct, self.open_calls),
            ),
            (
                "  when a call was required",
                format!(
                    "{:.1}% of {}",
                    self.constrained_invalid_pct, self.constrained_calls
                ),
            ),
            (
                "repeated failing calls",
                format!("{:.1}%", self.repeated_call_pct),
            ),
            (
                "model calls / conversation",
                format!("{:.1}", self.model_calls_per_conversation),
            ),
            (
                "prompt tokens / conversation",
                format!("{:.0}", self.prompt_tokens_per_conversation),
            ),
            ("turn time p50", format!("{:.3} s", self.turn_seconds_p50)),
            ("turn time max", format!("{:.3} s", self.turn_seconds_max)),
        ] {
            out.push_str(&format!("{label:<30}{value}\n"));
        }
        if !self.misses.is_empty() {
            out.push_str("\nwrong turns:\n");
            for m in &self.misses {
                for f in &m.findings {
                    out.push_str(&format!(
                        "  {} turn {}: {:?}: {}\n",
                        m.conversation, m.turn, f.mistake, f.detail
                    ));
                }
            }
        }
        out
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod rate_tests {
    use super::*;

    #[test]
    fn no_call_is_no_failing_call() {
        assert_eq!(failure_rate(0, 0), 0.0);
        assert_eq!(failure_rate(1, 3), 33.3);
        assert_eq!(pct(0, 0), 100.0);
    }
}
