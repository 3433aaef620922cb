//! Per-mode system prompts and tool sets.

use super::session::Mode;
use crate::tools::ToolRegistry;

const BASE: &str = "You are Sparky, an NEC (NFPA 70) compliance copilot working inside a team's chat. \
Be precise and brief. Use the tools for every number: calculations, table values and project data \
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

/// Names of the tools offered in a mode (those the registry has).
pub fn tool_names(mode: Mode, registry: &ToolRegistry) -> Vec<&'static str> {
    registry
        .all()
        .map(|t| t.name())
        .filter(|n| allows(mode, n))
        .collect()
}
