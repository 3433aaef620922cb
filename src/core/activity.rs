//! What Sparky is doing while a turn runs, in words a person reads after the bot's name
//! ("Sparky is checking Table 310.16…"): the text of [`Effect::Status`](super::Effect), and the
//! lines a platform may rotate through while it waits.

use serde_json::Value;

use crate::domain::digest::clip;
use crate::rag::sections;

/// The status of an input that just arrived, before any work on it.
pub const RECEIVED: &str = "reading your message";

/// The status while the model is asked.
pub const THINKING: &str = "thinking";

/// Longest name taken from a tool's arguments into a status (they come from the model).
const MAX_NAME: usize = 40;

/// A name from the model's arguments, fit for one status line: one line without control
/// characters, at most [`MAX_NAME`] characters.
fn name(v: Option<&Value>) -> Option<String> {
    let words: Vec<&str> = v?.as_str()?.split_whitespace().collect();
    let line: String = words
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    (!line.is_empty()).then(|| clip(&line, MAX_NAME))
}

/// What running `tool` with `args` is, in words: "checking Table 310.16", "checking panel
/// LP-1", "working out the voltage drop".
pub fn of_tool(tool: &str, args: &Value) -> String {
    let arg = |k: &str| name(args.get(k));
    match tool {
        "lookup_table" => match arg("table").and_then(|t| sections::canonical(&t)) {
            Some(t) if t.starts_with("Table ") || t.starts_with("Chapter ") => {
                format!("checking {t}")
            }
            Some(t) => format!("checking Table {t}"),
            None => "checking the code's tables".into(),
        },
        "search_code" => match arg("query").and_then(|q| sections::canonical(&q)) {
            Some(r) => format!("checking {r}"),
            None => "searching the code".into(),
        },
        "check_panel_capacity" | "describe_panel" => match arg("panel") {
            Some(p) => format!("checking panel {p}"),
            None => "checking the panel".into(),
        },
        "calculate_voltage_drop" => "working out the voltage drop".into(),
        "calculate_short_circuit" => "working out the fault current".into(),
        "calculate_arc_flash" => "estimating the arc-flash energy".into(),
        "check_conductor_sizing" => "checking the conductor size".into(),
        "check_service_upgrade" => "checking the service".into(),
        "run_inspection" => "inspecting the project".into(),
        "find_circuits" => "looking through the circuits".into(),
        "code_in_force" => "checking which edition applies".into(),
        "calculate_dwelling_load" => "working out the dwelling load".into(),
        "calculate_general_lighting_load" => "working out the lighting load".into(),
        "size_motor_circuit" => "sizing the motor circuit".into(),
        "size_motor_feeder" => "sizing the motor feeder".into(),
        "size_grounding_electrode_conductor" => "sizing the grounding electrode conductor".into(),
        "energy_budget" => "working out the energy budget".into(),
        "list_tasks" => "reading the punch list".into(),
        "send_report" => "preparing the report".into(),
        "calculator" => "calculating".into(),
        other => format!("running {}", other.replace('_', " ")),
    }
}

/// Lines to rotate through while the bot is busy with `status` (at most ten, as Slack takes):
/// the status itself first, then what any turn may be doing meanwhile.
pub fn loading_messages(status: &str) -> Vec<String> {
    let status = status.trim().trim_end_matches('…').trim();
    let mut lines = Vec::new();
    let mut first = status.chars();
    if let Some(c) = first.next() {
        lines.push(format!("{}{}…", c.to_uppercase(), first.as_str()));
    }
    for line in [
        "Reading the code's tables…",
        "Checking the project's panels and circuits…",
        "Working through the numbers…",
    ] {
        if !lines.iter().any(|l| l == line) {
            lines.push(line.to_string());
        }
    }
    lines.truncate(10);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tools_read_as_what_they_do() {
        assert_eq!(
            of_tool("lookup_table", &json!({"table": "310.16", "row": "3/0"})),
            "checking Table 310.16"
        );
        assert_eq!(
            of_tool("lookup_table", &json!({"table": "Chapter 9 Table 8"})),
            "checking Chapter 9 Table 8"
        );
        assert_eq!(
            of_tool("search_code", &json!({"query": "what does 310.16 say"})),
            "checking 310.16"
        );
        assert_eq!(
            of_tool("search_code", &json!({"query": "GFCI in garages"})),
            "searching the code"
        );
        assert_eq!(
            of_tool("describe_panel", &json!({"panel": "LP-1"})),
            "checking panel LP-1"
        );
        assert_eq!(of_tool("add_circuit", &json!({})), "running add circuit");
    }

    #[test]
    fn names_from_the_model_are_one_short_line() {
        let long = format!("LP-1\n\u{7}{}", "x".repeat(200));
        let s = of_tool("describe_panel", &json!({ "panel": long }));
        assert!(!s.contains('\n') && !s.contains('\u{7}'), "{s}");
        assert!(
            s.chars().count() <= "checking panel ".len() + MAX_NAME + 1,
            "{s}"
        );
        assert_eq!(
            of_tool("describe_panel", &json!({"panel": 7})),
            "checking the panel"
        );
    }

    #[test]
    fn loading_lines_start_with_the_status() {
        let lines = loading_messages("checking Table 310.16");
        assert_eq!(lines[0], "Checking Table 310.16…");
        assert!(lines.len() > 1 && lines.len() <= 10);
        assert!(loading_messages("").iter().all(|l| !l.is_empty()));
    }
}
