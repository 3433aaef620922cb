//! Per-mode system prompts and tool sets.

use super::session::Mode;
use crate::tools::ToolRegistry;

const BASE: &str = "You are Sparky, an NEC (NFPA 70) compliance copilot working inside a team's chat. \
Be precise and brief. You help only with electrical work: the NEC, electrical calculations and the \
team's project; decline anything else (poems, sports, general chat) in one sentence that says you are \
an electrical-code assistant. Use the tools for every number: calculations, table values and project data \
come from tools, never from memory. Cite the NEC sections and tables your answer relies on \
(e.g. \"NEC 2023 Table 310.16\"); if you state a code requirement that no tool or retrieved passage \
gave you, say it is from general knowledge and should be verified. Never invent project data: if a \
value is missing, say which one and ask for it. Changes to the project are made only through the \
write tools; they are shown to the team for confirmation, so call them directly rather than asking \
\"shall I?\". If a tool result says the user did not confirm and gives their words, follow those words.";

const LOAD: &str = "You are in spec-assistant mode for LOADS. The user describes equipment in plain words \
(\"I have a Dometic CFX3 45 fridge\"). Estimate its running watts, hours per day switched on and duty \
cycle (fraction of that time it draws power) from typical published specifications, state your \
assumptions in notes, and call add_load_item right away so the user can confirm, correct or cancel. \
If the user corrects a value, propose again with the corrected value.";

const SOURCE: &str = "You are in spec-assistant mode for CHARGING SOURCES. The user describes a solar array, \
alternator, shore power, generator or other source. Estimate its output watts, equivalent full-output \
hours per day and efficiency, state your assumptions in notes, and call add_charging_source right away \
so the user can confirm, correct or cancel.";

/// The system prompt for a mode.
pub fn system_prompt(mode: Mode) -> String {
    let base = format!("{BASE}\n\n{}", super::untrusted::RULE);
    match mode {
        Mode::General => base,
        Mode::Load => format!("{base}\n\n{LOAD}"),
        Mode::Source => format!("{base}\n\n{SOURCE}"),
    }
}

/// The tools of a mode, or `None` for every tool.
fn only(mode: Mode) -> Option<&'static [&'static str]> {
    match mode {
        Mode::General => None,
        Mode::Load => Some(&[
            "add_load_item",
            "energy_budget",
            "calculator",
            "search_code",
        ]),
        Mode::Source => Some(&[
            "add_charging_source",
            "energy_budget",
            "calculator",
            "search_code",
        ]),
    }
}

/// Whether a tool may run in a mode. The model is offered only these, and a call to any
/// other is refused when it arrives (a model can name a tool it was not offered).
pub fn allows(mode: Mode, name: &str) -> bool {
    only(mode).is_none_or(|list| list.contains(&name))
}

/// Names of the tools of a mode (those the registry has), without the discovery tool, which
/// only routed requests offer ([`super::tool_router`]).
pub fn tool_names(mode: Mode, registry: &ToolRegistry) -> Vec<&'static str> {
    registry
        .all()
        .map(|t| t.name())
        .filter(|n| allows(mode, n) && *n != crate::tools::discovery::NAME)
        .collect()
}

/// How many tools a question is offered at most when tools are chosen by relevance.
const RELEVANT_MAX: usize = 6;
/// A mode with at most this many tools always offers them all.
const SMALL_MODE: usize = 6;
/// The tools a request describes in full: in a mode with few tools all of them; otherwise
/// those sharing the most distinctive words with the latest user messages (`texts`) through
/// their name, description and argument names and descriptions, plus every tool in `used`
/// (called earlier in the window, so follow-ups keep them). The other tools of the mode are
/// still offered, in short form, so a question the words do not match loses detail, never a
/// tool. Generic over the registry: a new tool takes part by its name, description and
/// schema alone. The result keeps registry order, so the same choice gives byte-identical
/// requests.
pub fn relevant_tools(
    mode: Mode,
    registry: &ToolRegistry,
    texts: &[&str],
    used: &[&str],
) -> Vec<&'static str> {
    // A tool is known by its name, its description and its arguments' names and descriptions;
    // their stems are worked out once per registry and mode.
    let index = registry.derived(&format!("relevant_tools:{mode:?}"), |r| {
        LexicalIndex::new(
            r.all()
                .filter(|t| allows(mode, t.name()) && t.name() != crate::tools::discovery::NAME)
                .map(|t| (t.name(), known_text(r, t.name(), t.description())))
                .collect(),
        )
    });
    let tools = &index.names;
    if tools.len() <= SMALL_MODE {
        return tools.clone();
    }
    let scored = index.scores(texts);
    let mut ranked: Vec<&(usize, f64)> = scored.iter().filter(|(_, s)| *s >= 1.0).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut chosen: Vec<usize> = ranked.iter().take(RELEVANT_MAX).map(|(i, _)| *i).collect();
    for (i, name) in tools.iter().enumerate() {
        if used.contains(name) && !chosen.contains(&i) {
            chosen.push(i);
        }
    }
    chosen.sort();
    chosen.into_iter().map(|i| tools[i]).collect()
}

/// The text a registered tool is known by, from its registered schema.
pub fn known_text(registry: &ToolRegistry, name: &str, description: &str) -> String {
    match registry.schema(name) {
        Some(schema) => tool_text(description, schema),
        None => description.to_string(),
    }
}

/// The text a tool is known by: its description and its arguments' names and descriptions.
pub fn tool_text(description: &str, schema: &serde_json::Value) -> String {
    let mut text = description.to_string();
    schema_words(schema, &mut text);
    text
}

/// Scores each tool (name, text) against `texts`: a distinctive word (weighed by how few
/// tools mention it) counts double when it is in the tool's name.
pub fn lexical_scores(tools: &[(&str, String)], texts: &[&str]) -> Vec<(usize, f64)> {
    LexicalIndex::new(tools.iter().map(|(n, t)| (*n, t.clone())).collect()).scores(texts)
}

/// The stems of each tool's name and text, worked out once: scoring a question then only
/// stems the question.
#[derive(Debug, Clone)]
pub struct LexicalIndex<N = &'static str> {
    /// The tools, in the order given.
    pub names: Vec<N>,
    /// Per stem, the tools that have it: a question's score needs only its own stems'.
    postings: std::collections::HashMap<String, Posting>,
}

/// The tools that have one stem.
#[derive(Debug, Clone, Default)]
struct Posting {
    /// How many tools have it in their name.
    in_names: usize,
    /// Each tool that has it anywhere (in ascending order) and whether in its name.
    tools: Vec<(usize, bool)>,
}

impl<N: AsRef<str>> LexicalIndex<N> {
    /// Indexes tools given as (name, text).
    pub fn new(tools: Vec<(N, String)>) -> Self {
        let mut names = Vec::with_capacity(tools.len());
        let mut postings = std::collections::HashMap::<String, Posting>::new();
        for (i, (name, text)) in tools.into_iter().enumerate() {
            let mut own = stems(name.as_ref());
            let mut all = stems(&text);
            all.extend(own.iter().cloned());
            all.sort();
            all.dedup();
            own.sort();
            own.dedup();
            for stem in all {
                let in_name = own.binary_search(&stem).is_ok();
                let p = postings.entry(stem).or_default();
                p.in_names += usize::from(in_name);
                p.tools.push((i, in_name));
            }
            names.push(name);
        }
        Self { names, postings }
    }

    /// Scores each tool against `texts`, as [`lexical_scores`] does.
    pub fn scores(&self, texts: &[&str]) -> Vec<(usize, f64)> {
        let n = self.names.len() as f64;
        // Words many tools mention (panel, circuit, project) say little about which one is
        // meant.
        let idf = |df: usize| {
            if df == 0 {
                0.0
            } else {
                (n / df as f64).ln()
            }
        };
        let mut query: Vec<String> = texts.iter().flat_map(|t| stems(t)).collect();
        query.sort();
        query.dedup();
        let mut scores = vec![0.0; self.names.len()];
        // Each tool's score adds its stems' weights in the query's order.
        for q in &query {
            // Stems no tool mentions score nothing anywhere.
            let Some(p) = self.postings.get(q) else {
                continue;
            };
            let name_idf = idf(p.in_names);
            let text_idf = idf(p.tools.len());
            for &(i, in_name) in &p.tools {
                scores[i] += if in_name { 2.0 * name_idf } else { text_idf };
            }
        }
        scores.into_iter().enumerate().collect()
    }
}

/// Appends the property names and descriptions of a JSON Schema to `out`.
fn schema_words(schema: &serde_json::Value, out: &mut String) {
    match schema {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("description", serde_json::Value::String(d)) => {
                        out.push(' ');
                        out.push_str(d);
                    }
                    ("properties", serde_json::Value::Object(props)) => {
                        for (name, s) in props {
                            out.push(' ');
                            out.push_str(name);
                            schema_words(s, out);
                        }
                    }
                    _ => schema_words(v, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| schema_words(v, out)),
        _ => {}
    }
}

const STOPWORDS: &[&str] = &[
    "the", "and", "for", "with", "what", "how", "this", "that", "from", "are", "was", "were",
    "its", "into", "than", "then", "them", "they", "you", "your", "our", "can", "could", "would",
    "should", "will", "does", "did", "has", "have", "had", "not", "but", "all", "any", "one",
    "also", "per", "each", "when", "where", "which", "who", "why", "there", "here", "about",
    "give", "show", "tell", "need", "please", "let", "get", "use", "like", "just", "now", "again",
    "same",
];

/// Lower-case word stems (an inflection ending dropped, then the first five letters) of the
/// words of three or more letters, without common English words. Tool names split on `_`.
pub fn stems(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 3 && !STOPWORDS.contains(&w.as_str()))
        .filter(|w| !w.chars().all(|c| c.is_ascii_digit()))
        .map(|w| {
            let w = ["ing", "ed", "es", "s", "e"]
                .iter()
                .find_map(|end| w.strip_suffix(end).filter(|s| s.len() >= 3))
                .unwrap_or(&w);
            w.chars().take(5).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(text: &str) -> Vec<&'static str> {
        let r = crate::tools::default_registry(10);
        relevant_tools(Mode::General, &r, &[text], &[])
    }

    /// Every mode keeps the bot to electrical work: off-topic requests are declined.
    #[test]
    fn every_mode_declines_what_is_not_electrical_work() {
        for mode in [Mode::General, Mode::Load, Mode::Source] {
            let p = system_prompt(mode);
            assert!(p.contains("You help only with electrical work"), "{mode:?}");
            assert!(p.contains("decline anything else"), "{mode:?}");
        }
    }

    #[test]
    fn questions_get_the_tools_they_name() {
        assert!(pick("What is the voltage drop on LP-3 circuit 12?")
            .contains(&"calculate_voltage_drop"));
        assert!(pick("Add a 20 A circuit for the dishwasher to LP-3").contains(&"add_circuit"));
        assert!(
            pick("What's the arc flash incident energy at MDP?").contains(&"calculate_arc_flash")
        );
        assert!(pick("look up table 310.16 ampacity").contains(&"lookup_table"));
        assert!(pick(
            "Add a 20 A circuit for a new dishwasher to MP: 1200 VA, 12 AWG copper, 60 ft."
        )
        .contains(&"add_circuit"));
        assert!(pick("hello").is_empty());
        assert!(pick("Add a 20 A circuit for the dishwasher to LP-3").len() <= RELEVANT_MAX);
    }

    #[test]
    fn tools_used_earlier_stay_offered_and_small_modes_get_everything() {
        let r = crate::tools::default_registry(10);
        let picked = relevant_tools(
            Mode::General,
            &r,
            &["and the one on LP-3?"],
            &["describe_panel"],
        );
        assert!(picked.contains(&"describe_panel"), "{picked:?}");
        let load = relevant_tools(Mode::Load, &r, &["hello"], &[]);
        assert_eq!(load, tool_names(Mode::Load, &r));
    }

    #[test]
    fn stems_ignore_plurals_and_common_words() {
        assert_eq!(stems("the circuits and Panels"), vec!["circu", "panel"]);
        assert_eq!(
            stems("calculate_voltage_drop"),
            vec!["calcu", "volta", "drop"]
        );
        assert_eq!(
            stems("loaded loads sizing size"),
            vec!["load", "load", "siz", "siz"]
        );
    }
}
