//! The conversation set: what each conversation says and what a right answer must contain.
//!
//! The set is a JSON file (`eval/answers.json` is compiled in); every expected number in it
//! was worked out by hand from the NEC method named in the turn's `method` note, never by
//! running the tools it grades.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The set shipped in the repository.
pub const BUILT_IN: &str = include_str!("../../eval/answers.json");
/// The project every conversation starts from (a copy per conversation).
pub const SEED_PROJECT: &str = include_str!("../../eval/seed-project.json");

/// A conversation set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConversationSet {
    /// The conversations, in the order they run.
    pub conversations: Vec<Conversation>,
}

/// One conversation: turns in one thread, on a fresh copy of the seed project.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Conversation {
    /// Unique id (`vd-03`).
    pub id: String,
    /// Category the report groups by (calculation, code, write, follow-up, refusal, ...).
    pub category: String,
    /// The turns, in order.
    pub turns: Vec<Turn>,
}

/// What a person does in one turn.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// A typed message.
    Say(String),
    /// Presses Confirm on the open card.
    Confirm,
    /// Presses Cancel on the open card.
    Cancel,
}

/// One turn and its expectation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Turn {
    /// What the person does.
    #[serde(flatten)]
    pub action: Action,
    /// What a right answer contains.
    #[serde(default)]
    pub expect: Expect,
    /// How the expected figures were worked out (for people reading the set).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub method: String,
}

/// What a right answer to one turn contains. Absent parts are not graded.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Expect {
    /// Tools that must be called, each with the arguments that matter. `Some(vec![])`: no
    /// tool may be called. `more_tools` (the router's discovery tool) never counts.
    #[serde(default)]
    pub tools: Option<Vec<ToolExpect>>,
    /// Numbers the final text must contain.
    #[serde(default)]
    pub numbers: Vec<NumberExpect>,
    /// Sections the answer must cite (in its citations or its text): `210.8`, `Table 310.16`.
    #[serde(default)]
    pub citations: Vec<String>,
    /// Whether a confirmation card is shown.
    #[serde(default)]
    pub card: Option<bool>,
    /// Words (any one of them, case-insensitive) the final text must contain.
    #[serde(default)]
    pub mentions_any: Vec<String>,
    /// How a pending action must end in this turn (`executed`, `cancelled`).
    #[serde(default)]
    pub resolved: Option<String>,
}

/// A tool the answer must call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolExpect {
    /// Tool name.
    pub name: String,
    /// Arguments that must be present with these values (others are free).
    #[serde(default)]
    pub args: serde_json::Map<String, Value>,
    /// The rest of a complete call a right answer could make: what the scripted
    /// right-answering model sends besides `args`. Never graded.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub call: serde_json::Map<String, Value>,
    /// Other read tools that answer the question as well (a GFCI question through
    /// `check_gfci_afci` rather than a code search): calling one of them counts as calling
    /// this tool; `args` are checked only on a call of `name`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub or: Vec<String>,
}

impl ToolExpect {
    /// A complete right call: `call` with `args` over it.
    pub fn right_call(&self) -> Value {
        let mut all = self.call.clone();
        all.extend(self.args.clone());
        Value::Object(all)
    }
}

/// A number the final text must contain.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NumberExpect {
    /// The value.
    pub value: f64,
    /// Allowed absolute difference.
    #[serde(default)]
    pub tol: f64,
    /// What it is ("volts dropped"), for reports.
    #[serde(default)]
    pub what: String,
}

/// A set that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SetError {
    /// Not JSON of the expected shape.
    #[error("the conversation set is not valid: {0}")]
    Parse(#[from] serde_json::Error),
    /// Readable, but inconsistent.
    #[error("the conversation set is not valid: {0}")]
    Invalid(String),
}

impl ConversationSet {
    /// Parses and checks a set: ids unique, every conversation with a turn, every typed
    /// message unique across the set (so a scripted model can tell turns apart), tolerances
    /// not negative.
    pub fn parse(text: &str) -> Result<Self, SetError> {
        let set: ConversationSet = serde_json::from_str(text)?;
        let mut ids = BTreeSet::new();
        let mut said = BTreeSet::new();
        for c in &set.conversations {
            if !ids.insert(c.id.as_str()) {
                return Err(SetError::Invalid(format!(
                    "conversation id {} repeats",
                    c.id
                )));
            }
            if c.turns.is_empty() {
                return Err(SetError::Invalid(format!(
                    "conversation {} has no turn",
                    c.id
                )));
            }
            for t in &c.turns {
                if let Action::Say(text) = &t.action {
                    if !said.insert(text.trim()) {
                        return Err(SetError::Invalid(format!(
                            "message {text:?} ({}) appears twice",
                            c.id
                        )));
                    }
                }
                if t.expect
                    .numbers
                    .iter()
                    .any(|n| n.tol.is_nan() || n.tol < 0.0)
                {
                    return Err(SetError::Invalid(format!("{}: a negative tolerance", c.id)));
                }
            }
        }
        Ok(set)
    }

    /// The shipped set.
    pub fn built_in() -> Result<Self, SetError> {
        Self::parse(BUILT_IN)
    }

    /// The conversations whose id starts with one of `prefixes` (all when empty), at most
    /// `limit` of them.
    pub fn select(mut self, prefixes: &[String], limit: Option<usize>) -> Self {
        if !prefixes.is_empty() {
            self.conversations
                .retain(|c| prefixes.iter().any(|p| c.id.starts_with(p.as_str())));
        }
        if let Some(n) = limit {
            self.conversations.truncate(n);
        }
        self
    }

    /// Names of the tools some turn expects to be called.
    pub fn tools_covered(&self) -> BTreeSet<String> {
        self.conversations
            .iter()
            .flat_map(|c| &c.turns)
            .filter_map(|t| t.expect.tools.as_ref())
            .flatten()
            .map(|t| t.name.clone())
            .collect()
    }
}
