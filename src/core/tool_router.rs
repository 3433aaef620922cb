//! Which tools a request offers when tools are routed ([`super::context::ToolOffer::Routed`]).
//!
//! A two-word question does not need 35 tool definitions. The router offers, in full (compact
//! schemas), the few tools the latest question is about, the tools called in the latest two
//! turns and the tools the model asked for through [`DISCOVERY`]; in short form (name, first
//! sentence, argument names and types) the tools called earlier in the window and a small core
//! set; every other tool of the mode is named in the description of [`DISCOVERY`], through
//! which the model can reach it on its next step. No tool is out of reach, and the offer is a
//! pure function of the window, so the same conversation gives the same requests.

use std::collections::BTreeSet;

use super::modes;
use super::session::Mode;
use crate::llm::{ChatMessage, ToolSpec};
use crate::tools::ToolRegistry;

/// The discovery tool: the model names tools it was not offered and gets them next step.
pub const DISCOVERY: &str = crate::tools::discovery::NAME;

/// Tools chosen for the latest question, at most.
const ROUTED_MAX: usize = 3;
/// A mode with at most this many tools offers them all, in full.
const SMALL_MODE: usize = 6;
/// Always offered (short form unless routed): code questions are the bot's main job.
const CORE: &[&str] = &["search_code"];
/// User turns whose tool calls keep those tools in full.
const RECENT_TURNS: usize = 2;

/// Phrases people use for a tool. A question containing one (word stems in order) ranks the
/// tool first; their words also count like the description's. A phrase with a token the stems
/// drop (short, numeric: "pv", "120%", "12 months") is matched as written, token by token. A
/// tool without an entry is routed by its name, description and schema alone.
const ALIASES: &[(&str, &[&str])] = &[
    (
        "check_panel_capacity",
        &[
            "how loaded",
            "panel load",
            "spare capacity",
            "take more",
            "room for",
        ],
    ),
    ("list_tasks", &["punch list", "todo list", "open items"]),
    (
        "find_circuits",
        &[
            "which circuits",
            "find circuits",
            "list circuits",
            "worst voltage",
        ],
    ),
    (
        "check_conductor_sizing",
        &[
            "wire size",
            "conductor size",
            "big enough",
            "awg still",
            "undersized",
        ],
    ),
    (
        "calculate_short_circuit",
        &[
            "fault current",
            "short circuit",
            "available fault",
            "interrupting rating",
        ],
    ),
    (
        "calculate_arc_flash",
        &["arc flash", "incident energy", "ppe category"],
    ),
    (
        "lookup_table",
        &["look up", "table", "equipment grounding conductor"],
    ),
    ("calculate_voltage_drop", &["voltage drop"]),
    ("describe_panel", &["describe"]),
    (
        "check_gfci_afci",
        &[
            "gfci",
            "afci",
            "arc fault",
            "ground fault",
            "gfi",
            "arc fault breaker",
        ],
    ),
    (
        "count_outlets_per_circuit",
        &[
            "how many receptacles",
            "how many outlets",
            "how many plugs",
            "how many lights",
            "receptacles on a circuit",
        ],
    ),
    (
        "size_ev_circuit",
        &[
            "ev charger",
            "car charger",
            "tesla",
            "level 2",
            "evse",
            "wall connector",
        ],
    ),
    (
        "check_pv_interconnection",
        &[
            "solar",
            "pv",
            "120%",
            "120 percent",
            "backfeed",
            "back feed",
            "backfed breaker",
            "busbar",
            "bus bar",
            "inverter",
            "solar breaker",
            "line side tap",
        ],
    ),
    (
        "calculate_existing_dwelling_load_from_demand",
        &[
            "meter data",
            "utility bills",
            "utility bill",
            "12 months",
            "demand data",
            "peak demand",
            "maximum demand",
            "load study",
            "30 day",
        ],
    ),
    (
        "calculate_multifamily_load",
        &[
            "apartment",
            "multifamily",
            "multi family",
            "units",
            "apartment building",
            "dwelling units",
            "condo building",
        ],
    ),
    (
        "calculate_box_fill",
        &[
            "box fill",
            "how many wires in",
            "wires in a box",
            "what size box",
            "junction box",
            "device box",
            "4 square",
            "cubic inch",
            "mud ring",
            "plaster ring",
            "extension ring",
        ],
    ),
    (
        "calculate_raceway_fill",
        &[
            "conduit fill",
            "raceway fill",
            "pipe fill",
            "how many conductors in",
            "what size conduit",
            "what size pipe",
            "conduit size",
            "in emt",
            "in pvc",
            "nipple fill",
            "what size nipple",
            "nipple size",
        ],
    ),
];

/// What a matched phrase adds to a tool's score: more than any run of single words.
const PHRASE_BONUS: f64 = 12.0;

/// The tools of one request: in full, in short form, and reachable through discovery.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Routed {
    /// Described in full.
    pub full: Vec<&'static str>,
    /// Offered in short form.
    pub slim: Vec<&'static str>,
    /// Not offered; named in the discovery tool's description.
    pub hidden: Vec<&'static str>,
}

/// What the window tells the router.
#[derive(Debug, Default)]
pub struct History<'a> {
    /// The latest user messages, newest first.
    pub latest: Vec<&'a str>,
    /// Tools called in the latest [`RECENT_TURNS`] user turns.
    pub recent: Vec<&'a str>,
    /// Tools called earlier in the window.
    pub earlier: Vec<&'a str>,
    /// Tools the model asked for through [`DISCOVERY`].
    pub requested: Vec<String>,
}

impl<'a> History<'a> {
    /// Reads the window: user messages, and the calls of assistant messages split by age.
    pub fn of(messages: &'a [ChatMessage]) -> Self {
        let user_at: Vec<usize> = messages
            .iter()
            .enumerate()
            .filter(|(_, m)| matches!(m, ChatMessage::User { .. }))
            .map(|(i, _)| i)
            .collect();
        let recent_start = user_at
            .iter()
            .rev()
            .nth(RECENT_TURNS - 1)
            .copied()
            .unwrap_or(0);
        let mut h = History::default();
        for (i, m) in messages.iter().enumerate().rev() {
            match m {
                ChatMessage::User { text, .. } => h.latest.push(text),
                ChatMessage::Assistant { tool_calls, .. } => {
                    for c in tool_calls {
                        if c.name == DISCOVERY {
                            h.requested
                                .extend(crate::tools::discovery::requested(&c.arguments));
                        } else if i >= recent_start {
                            h.recent.push(&c.name);
                        } else {
                            h.earlier.push(&c.name);
                        }
                    }
                }
                _ => {}
            }
        }
        h
    }
}

/// Routes the tools of `mode` for a request with this history.
pub fn route(mode: Mode, registry: &ToolRegistry, h: &History<'_>) -> Routed {
    let names = modes::tool_names(mode, registry);
    if names.len() <= SMALL_MODE {
        return Routed {
            full: names,
            ..Routed::default()
        };
    }
    // The newest message that matches any tool decides: "and the one on LP-3?" keeps the
    // tools of the question before.
    let chosen = h
        .latest
        .iter()
        .map(|t| ranked(mode, registry, t))
        .find(|r| !r.is_empty())
        .unwrap_or_default();
    let requested: BTreeSet<&str> = h.requested.iter().map(String::as_str).collect();
    let mut routed = Routed::default();
    for name in names {
        if chosen.contains(&name) || h.recent.contains(&name) || requested.contains(name) {
            routed.full.push(name);
        } else if h.earlier.contains(&name) || CORE.contains(&name) {
            routed.slim.push(name);
        } else {
            routed.hidden.push(name);
        }
    }
    routed
}

/// The routing index of one mode: each tool's words and its alias phrases as stems, worked
/// out once per registry (they depend on the tools only, never on the question).
struct RouterIndex {
    lexical: modes::LexicalIndex,
    /// Per tool, its phrases of two or more words as stems, each padded with spaces.
    phrases: Vec<Vec<String>>,
    /// Per tool, its phrases the stems would lose a token of, as lowercase tokens.
    literals: Vec<Vec<Vec<String>>>,
}

/// Lowercase tokens as written: letters, digits and `%` (so "120%" and "pv" survive).
fn literal_tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '%'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn index(mode: Mode, registry: &ToolRegistry) -> std::sync::Arc<RouterIndex> {
    registry.derived(&format!("tool_router:{mode:?}"), |r| {
        let docs: Vec<(&'static str, String)> = r
            .all()
            .filter(|t| modes::allows(mode, t.name()) && t.name() != DISCOVERY)
            .map(|t| {
                let alias = phrases(t.name()).join(" ");
                (
                    t.name(),
                    format!(
                        "{} {}",
                        modes::known_text(r, t.name(), t.description()),
                        alias
                    ),
                )
            })
            .collect();
        let phrase_stems = docs
            .iter()
            .map(|(name, _)| {
                phrases(name)
                    .iter()
                    .map(|p| modes::stems(p))
                    // One word is no phrase: it counts through the description like any other.
                    .filter(|words| words.len() > 1)
                    .map(|words| format!(" {} ", words.join(" ")))
                    .collect()
            })
            .collect();
        let literals = docs
            .iter()
            .map(|(name, _)| {
                phrases(name)
                    .iter()
                    .map(|p| literal_tokens(p))
                    .filter(|tokens| modes::stems(&tokens.join(" ")).len() < tokens.len())
                    .collect()
            })
            .collect();
        RouterIndex {
            lexical: modes::LexicalIndex::new(docs),
            phrases: phrase_stems,
            literals,
        }
    })
}

/// The tools sharing the most distinctive words with `text`, best first, at most
/// [`ROUTED_MAX`].
fn ranked(mode: Mode, registry: &ToolRegistry, text: &str) -> Vec<&'static str> {
    let index = index(mode, registry);
    let docs = &index.lexical.names;
    let mut scores = index.lexical.scores(&[text]);
    let question = format!(" {} ", modes::stems(text).join(" "));
    let written = literal_tokens(text);
    for (i, score) in scores.iter_mut() {
        let literal = || {
            index.literals[*i]
                .iter()
                .any(|l| written.windows(l.len()).any(|w| w == l.as_slice()))
        };
        if index.phrases[*i]
            .iter()
            .any(|p| question.contains(p.as_str()))
            || literal()
        {
            *score += PHRASE_BONUS;
        }
    }
    let mut ranked: Vec<(usize, f64)> = scores.into_iter().filter(|(_, s)| *s >= 1.5).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    // A tool far behind the best is noise, not a second candidate.
    let best = ranked.first().map(|(_, s)| *s).unwrap_or(0.0);
    let by_words = ranked
        .into_iter()
        .filter(|(_, s)| *s >= best / 4.0)
        .map(|(i, _)| docs[i]);
    // A request to change the project always gets the write tool it names: it goes first.
    let asked = super::write_intent::tools(text)
        .into_iter()
        .filter_map(|t| docs.iter().copied().find(|d| *d == t));
    let mut chosen: Vec<&'static str> = Vec::with_capacity(ROUTED_MAX);
    for name in asked.chain(by_words) {
        if chosen.len() < ROUTED_MAX && !chosen.contains(&name) {
            chosen.push(name);
        }
    }
    chosen
}

fn phrases(tool: &str) -> &'static [&'static str] {
    ALIASES
        .iter()
        .find(|(n, _)| *n == tool)
        .map(|(_, p)| *p)
        .unwrap_or(&[])
}

/// The specs of a routed offer: full ones compacted when `compact`, then the short ones, in
/// registry order, then the discovery tool naming the hidden ones (when any are hidden).
pub fn specs(registry: &ToolRegistry, routed: &Routed, compact: bool) -> Vec<ToolSpec> {
    let mut out = Vec::new();
    for t in registry.all() {
        let one = [t.name()];
        if routed.full.contains(&t.name()) {
            out.extend(if compact {
                registry.compact_specs(&one)
            } else {
                registry.specs(&one)
            });
        } else if routed.slim.contains(&t.name()) {
            out.extend(registry.slim_specs(&one));
        }
    }
    if !routed.hidden.is_empty() && registry.get(DISCOVERY).is_some() {
        out.push(crate::tools::discovery::spec(&routed.hidden));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route_text(texts: &[&str], recent: &[&str], earlier: &[&str]) -> Routed {
        let r = crate::tools::default_registry(10);
        let h = History {
            latest: texts.to_vec(),
            recent: recent.to_vec(),
            earlier: earlier.to_vec(),
            requested: vec![],
        };
        route(Mode::General, &r, &h)
    }

    #[test]
    fn a_turns_later_request_keeps_its_questions_tools_and_adds_the_ones_used() {
        let r = crate::tools::default_registry(10);
        let history = |latest: Vec<&'static str>, recent: Vec<&'static str>| History {
            latest,
            recent,
            earlier: vec![],
            requested: vec![],
        };
        let question = "What's the voltage drop on MP circuit 12?";
        let first = route(Mode::General, &r, &history(vec![question], vec![]));
        // The turn's second request: the same question, a tool used since.
        let second = route(
            Mode::General,
            &r,
            &history(vec![question], vec!["describe_panel"]),
        );
        for name in &first.full {
            assert!(second.full.contains(name), "{name} dropped: {second:?}");
        }
        assert!(second.full.contains(&"describe_panel"), "{second:?}");
        // What the question chose is what ranking it gives.
        for name in ranked(Mode::General, &r, question) {
            assert!(first.full.contains(&name), "{name} not offered: {first:?}");
        }
        // Another question is ranked for itself.
        let other = route(
            Mode::General,
            &r,
            &history(vec!["Is the service big enough for the load?"], vec![]),
        );
        assert_ne!(other.full, first.full);
    }

    #[test]
    fn each_question_gets_its_tool_and_few_others() {
        for (q, tool) in [
            (
                "What's the voltage drop on MP circuit 12?",
                "calculate_voltage_drop",
            ),
            (
                "Which circuits on MP have the worst voltage drop? List them all.",
                "find_circuits",
            ),
            (
                "How loaded is MP? Can it take more?",
                "check_panel_capacity",
            ),
            (
                "What's the available fault current at GP, and is its 22 kA rating enough?",
                "calculate_short_circuit",
            ),
            (
                "Add a 20 A circuit for a new dishwasher to MP: 1200 VA, 12 AWG copper, 60 ft.",
                "add_circuit",
            ),
            (
                "Is 12 AWG still fine for the dishwasher circuit?",
                "check_conductor_sizing",
            ),
            ("Describe GP for me.", "describe_panel"),
            ("What's on the punch list?", "list_tasks"),
            (
                "What's the arc flash incident energy at GP?",
                "calculate_arc_flash",
            ),
            (
                "Look up the ampacity of 10 AWG copper at 75 °C.",
                "lookup_table",
            ),
            (
                "Size the motor branch circuit for a 10 hp 460 V motor",
                "size_motor_circuit",
            ),
            (
                "does the fridge outlet in the kitchen need gfci under 2023?",
                "check_gfci_afci",
            ),
            ("arc fault needed in a bedroom?", "check_gfci_afci"),
            (
                "how many receptacles can i put on a 20 amp circuit in an office",
                "count_outlets_per_circuit",
            ),
            (
                "wire and breaker for a 48 amp tesla wall connector",
                "size_ev_circuit",
            ),
            ("level 2 car charger circuit size?", "size_ev_circuit"),
            (
                "box fill on a 4 square 1 1/2 deep with 6 #12 and a receptacle",
                "calculate_box_fill",
            ),
            (
                "how many wires in a 3x2x3.5 device box",
                "calculate_box_fill",
            ),
            (
                "conduit fill for 4 #10 thhn and a #10 ground in 3/4 emt",
                "calculate_raceway_fill",
            ),
            (
                "how many conductors in a 1 inch pvc, all #12",
                "calculate_raceway_fill",
            ),
            (
                "what size nipple for 3 4/0 and a 2/0 between the meter and panel",
                "calculate_raceway_fill",
            ),
        ] {
            let r = route_text(&[q], &[], &[]);
            assert!(r.full.contains(&tool), "{q}: {r:?}");
            assert!(r.full.len() <= ROUTED_MAX, "{q}: {r:?}");
            assert!(r.hidden.len() > 20, "{q}: {r:?}");
        }
    }

    /// Requests to add, change or remove something, typed as electricians type them, are
    /// offered the write tool that does it in full.
    #[test]
    fn a_request_to_change_the_project_is_offered_its_write_tool() {
        for (q, tool) in super::super::write_intent::CHANGE_REQUESTS {
            let r = route_text(&[q], &[], &[]);
            assert!(r.full.contains(tool), "{q}: {r:?}");
            assert!(r.full.len() <= ROUTED_MAX, "{q}: {r:?}");
        }
    }

    #[test]
    fn used_tools_stay_and_a_follow_up_keeps_the_question_before() {
        let r = route_text(
            &[
                "and the one on GP?",
                "What's the voltage drop on MP circuit 12?",
            ],
            &[],
            &["describe_panel"],
        );
        assert!(r.full.contains(&"calculate_voltage_drop"), "{r:?}");
        assert!(r.slim.contains(&"describe_panel"), "{r:?}");
        let r = route_text(&["Make it 1500 VA"], &["add_circuit"], &[]);
        assert!(r.full.contains(&"add_circuit"), "{r:?}");
    }

    #[test]
    fn discovery_names_every_hidden_tool_and_requested_tools_are_offered() {
        let reg = crate::tools::default_registry(10);
        let r = route_text(&["hello"], &[], &[]);
        let specs = specs(&reg, &r, true);
        let d = specs
            .iter()
            .find(|s| s.name == DISCOVERY)
            .unwrap_or_else(|| panic!("no discovery tool in {specs:?}"));
        for h in &r.hidden {
            assert!(
                d.description.contains(h),
                "{h} missing from {}",
                d.description
            );
        }
        let messages = vec![
            ChatMessage::User {
                text: "hello".into(),
                images: Vec::new(),
            },
            ChatMessage::Assistant {
                text: String::new(),
                tool_calls: vec![crate::llm::ToolCall {
                    id: "1".into(),
                    name: DISCOVERY.into(),
                    arguments: r#"{"tools": ["size_motor_feeder", "no_such_tool"]}"#.into(),
                    thought_signature: None,
                }],
                thought_signature: None,
            },
        ];
        let routed = route(Mode::General, &reg, &History::of(&messages));
        assert!(routed.full.contains(&"size_motor_feeder"), "{routed:?}");
        // A small mode offers everything in full and no discovery.
        let load = route(Mode::Load, &reg, &History::default());
        assert_eq!(load.full, modes::tool_names(Mode::Load, &reg));
        assert!(load.hidden.is_empty());
    }

    /// PV, measured-demand and multifamily questions as people type them, including tokens the
    /// stems drop ("pv", "120%", "12 months"), reach their tools.
    #[test]
    fn supply_side_questions_reach_their_tools() {
        for (q, tool) in [
            (
                "can i put a 40a pv breaker on a 200a panel with a 200 main",
                "check_pv_interconnection",
            ),
            (
                "120% rule: 225 bus, 200 main, 7.6kw inverter",
                "check_pv_interconnection",
            ),
            (
                "backfeed breaker at the bottom of the busbar ok for solar?",
                "check_pv_interconnection",
            ),
            (
                "12 months of utility bills, peak 18 kw, can the 100a service take a heat pump",
                "calculate_existing_dwelling_load_from_demand",
            ),
            (
                "meter data shows 62 amps max demand on a 200a service, adding a 48a charger",
                "calculate_existing_dwelling_load_from_demand",
            ),
            (
                "24 unit apartment building, service size by the optional method",
                "calculate_multifamily_load",
            ),
            (
                "multifamily, 12 units 900 sqft each with electric heat and ranges",
                "calculate_multifamily_load",
            ),
        ] {
            let r = route_text(&[q], &[], &[]);
            assert!(r.full.contains(&tool), "{q}: {r:?}");
            assert!(r.full.len() <= ROUTED_MAX, "{q}: {r:?}");
        }
        // A stem-dropped token matches whole tokens only: "pv" inside a word is no match.
        assert_eq!(literal_tokens("PV, 120% rule"), vec!["pv", "120%", "rule"]);
    }
}
