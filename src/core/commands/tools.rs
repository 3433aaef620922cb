//! The tool commands: `tools`, `tool NAME {json}`, `search` and `report`, each run through the
//! core like a model's call (the one tool runner and, for writes, the gate).

use serde_json::{json, Value};

use super::{passages_text, Caller, CommandOutput};
use crate::core::session::SessionKey;
use crate::core::{Agent, CollectSink, Effect, Input, InputAction, Outcome};
use crate::report::{Format, ReportKind};
use crate::store::StoreError;

/// `tools`: every tool, and whether it changes the project.
pub(super) fn list(agent: &Agent) -> CommandOutput {
    let list: Vec<Value> = agent
        .tools()
        .all()
        .map(|t| json!({"name": t.name(), "description": t.description(), "writes": t.writes(), "schema": t.schema()}))
        .collect();
    let text = agent
        .tools()
        .all()
        .map(|t| {
            format!(
                "- {}{}: {}",
                t.name(),
                if t.writes() { " (change)" } else { "" },
                t.description()
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    CommandOutput::ok(text, json!({"type": "tools", "tools": list}))
}

/// `tool NAME {json}`: a read tool answers at once; a write tool is proposed.
pub(super) async fn tool(at: &Caller<'_>, name: &str, args: &str) -> CommandOutput {
    run_tool(at.agent, at.key, at.user, name, args)
        .await
        .into_output(name)
}

/// `search QUESTION`: the best passages of the knowledge base.
pub(super) async fn search(at: &Caller<'_>, query: &str) -> Result<CommandOutput, StoreError> {
    if at.agent.tools().get("search_code").is_none() {
        return Ok(CommandOutput::err(
            "Search is not available in this deployment.",
        ));
    }
    let args = json!({ "query": query }).to_string();
    Ok(
        match run_tool(at.agent, at.key, at.user, "search_code", &args).await {
            ToolRun::Output {
                result,
                is_error: false,
            } => {
                let passages = result
                    .get("passages")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let text = if passages.is_empty() {
                    format!("Nothing in the knowledge base answers \"{query}\".")
                } else {
                    passages_text(&passages, 5, 400)
                };
                CommandOutput::ok(
                    text,
                    json!({"type": "search", "query": query, "result": result}),
                )
            }
            other => other.into_output("search_code"),
        },
    )
}

/// `report KIND [FORMAT]`: a project document rendered and attached.
pub(super) async fn report(at: &Caller<'_>, kind: &ReportKind, format: Format) -> CommandOutput {
    let args = match kind {
        ReportKind::Panel { panel } => {
            json!({"document": "panel_schedule", "panel": panel, "format": format})
        }
        ReportKind::Inspection => json!({"document": "inspection", "format": format}),
        ReportKind::Load => json!({"document": "load_calculation", "format": format}),
        ReportKind::Energy => json!({"document": "energy_budget", "format": format}),
    };
    match run_tool(at.agent, at.key, at.user, "send_report", &args.to_string()).await {
        ToolRun::Output {
            mut result,
            is_error: false,
        } => {
            let file = crate::core::attachment::take_attachment(&mut result);
            let v = &result;
            let mut text = format!(
                "{} ({} page{}, {}): {}",
                v["document"].as_str().unwrap_or("Report"),
                v["pages"],
                if v["pages"] == 1 { "" } else { "s" },
                format.extension().to_uppercase(),
                v["summary"].as_str().unwrap_or_default()
            );
            // What the file leaves out ("showing pages 1–10 of 143; …").
            if let Some(limits) = v["limits"].as_str() {
                text.push_str(&format!(" ({limits})"));
            }
            let mut out = CommandOutput::ok(text, json!({"type": "report", "result": result}));
            out.files.extend(file);
            out
        }
        other => other.into_output("send_report"),
    }
}

/// What a tool command produced, from the effects the core emitted for it.
enum ToolRun {
    /// A result (a read tool's, or an error before anything was proposed).
    Output { result: Value, is_error: bool },
    /// A write was proposed: it waits for Confirm.
    Proposed {
        action_id: String,
        items: Vec<crate::store::ActionItem>,
    },
    /// The core refused or failed.
    Error(String),
}

impl ToolRun {
    fn into_output(self, name: &str) -> CommandOutput {
        match self {
            ToolRun::Output {
                result,
                is_error: false,
            } => CommandOutput::ok(
                serde_json::to_string_pretty(&result).unwrap_or_default(),
                json!({"type": "tool_result", "tool": name, "result": result}),
            ),
            ToolRun::Output { result, .. } => CommandOutput::err(
                result
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("the tool failed")
                    .to_string(),
            ),
            ToolRun::Proposed { action_id, items } => {
                let summaries: Vec<String> = items.into_iter().map(|i| i.summary).collect();
                CommandOutput::ok(
                format!(
                    "Proposed ({action_id}): {}. Confirm with `confirm {action_id}` or cancel with `cancel {action_id}`.",
                    summaries.join("; ")
                ),
                json!({"type": "proposal", "tool": name, "action_id": action_id, "items": summaries}),
            )
            }
            ToolRun::Error(m) => CommandOutput::err(m),
        }
    }
}

/// Runs a tool command through the core (the one tool runner and, for writes, the gate).
async fn run_tool(agent: &Agent, key: &SessionKey, user: &str, name: &str, args: &str) -> ToolRun {
    let sink = CollectSink::default();
    let input = Input {
        key: key.clone(),
        user: user.to_string(),
        event_id: None,
        action: InputAction::Tool {
            name: name.to_string(),
            args: args.to_string(),
        },
    };
    if let Err(e) = agent.handle(input, &sink).await {
        return ToolRun::Error(e.to_string());
    }
    let mut out = ToolRun::Error("the tool produced no result".into());
    for effect in sink.take() {
        match effect {
            Effect::ToolOutput {
                result, is_error, ..
            } => out = ToolRun::Output { result, is_error },
            Effect::Confirmation {
                action_id, items, ..
            } => out = ToolRun::Proposed { action_id, items },
            Effect::Error { message } => out = ToolRun::Error(message),
            _ => {}
        }
    }
    out
}

/// Runs a tool once for a script or terminal (`sparky tool`): a write is proposed like any
/// other and then confirmed as `user` when `approve` says so (`--yes`, or a person's answer at
/// the terminal), or cancelled; both are audited under `user`.
pub async fn run_tool_once(
    agent: &Agent,
    key: &SessionKey,
    user: &str,
    name: &str,
    args: &str,
    approve: impl FnOnce(&[crate::store::ActionItem]) -> bool,
) -> CommandOutput {
    let (action_id, items) = match run_tool(agent, key, user, name, args).await {
        ToolRun::Proposed { action_id, items } => (action_id, items),
        other => return other.into_output(name),
    };
    let confirm = approve(&items);
    let sink = CollectSink::default();
    let input = Input {
        key: key.clone(),
        user: user.to_string(),
        event_id: None,
        action: if confirm {
            InputAction::Confirm {
                action_id: Some(action_id.clone()),
            }
        } else {
            InputAction::Cancel {
                action_id: Some(action_id.clone()),
            }
        },
    };
    if let Err(e) = agent.handle(input, &sink).await {
        return CommandOutput::err(e.to_string());
    }
    let summary: Vec<String> = items.iter().map(|i| i.summary.clone()).collect();
    if !confirm {
        let result = json!({"status": "not_confirmed", "summary": summary.join("; ")});
        return CommandOutput::ok(
            serde_json::to_string_pretty(&result).unwrap_or_default(),
            json!({"type": "tool_result", "tool": name, "result": result}),
        );
    }
    let mut out = CommandOutput::err("the confirmed change produced no result");
    for effect in sink.take() {
        match effect {
            Effect::ToolOutput {
                result, is_error, ..
            } => out = ToolRun::Output { result, is_error }.into_output(name),
            Effect::Resolved {
                outcome: Outcome::Outdated,
                details,
                ..
            } => out = CommandOutput::err(details.join("\n")),
            Effect::Error { message } => out = CommandOutput::err(message),
            _ => {}
        }
    }
    out
}
