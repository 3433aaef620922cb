//! One model request, assembled from the session's window, the project and the context
//! policy. The order is chosen for prompt caches: the system prompt (mode prompt, then the
//! project's stable part) and the tool list change rarely, so they form a prefix that stays
//! byte-identical from turn to turn; what changes with every question (the project data it
//! names) travels with the latest user message, after the history.

use std::borrow::Cow;

use super::context::{self, ContextPolicy, ToolOffer};
use super::session::Session;
use super::turn_project::TurnProject;
use super::{modes, tool_router, window};
use crate::llm::{ChatMessage, ChatProvider, ChatRequest};
use crate::project::ProjectData;
use crate::store::{Store, StoreError};
use crate::tools::ToolRegistry;

/// Tool results of this many latest user turns are sent whole; older large ones as digests.
pub(super) const WHOLE_RESULT_TURNS: usize = 2;
/// User messages, newest first, that decide which tools and panels are relevant.
const RELEVANCE_MESSAGES: usize = 2;
/// Whole history means no budget: the window keeps every message it scans.
const UNBOUNDED: usize = usize::MAX / 4;

/// Builds the request for the next model call of `session` from `history`, the turn's view
/// of the thread. `model` writes the summary of turns leaving the window when the policy asks
/// for one; `history` keeps it for the caller to store
/// ([`window::TurnHistory::save_summary`]). `project`, when given, is the turn's read of the
/// bound project (read through it at most once per turn).
#[allow(clippy::too_many_arguments)]
pub async fn build(
    store: &dyn Store,
    tools: &ToolRegistry,
    session: &Session,
    history: &mut window::TurnHistory,
    history_budget: usize,
    policy: &ContextPolicy,
    temperature: Option<f64>,
    model: Option<&dyn ChatProvider>,
    project: Option<&TurnProject>,
) -> Result<ChatRequest, StoreError> {
    let budget = if policy.whole_history {
        UNBOUNDED
    } else {
        history_budget
    };
    let summariser = model.filter(|_| policy.model_summary);
    let win = history.window(budget, summariser).await?;
    let mut messages = win.messages;
    if policy.digest_old_results {
        window::digest_old_results(&mut messages, WHOLE_RESULT_TURNS);
    }
    let latest: Vec<String> = messages
        .iter()
        .rev()
        .filter_map(|m| match m {
            ChatMessage::User { text, .. } => Some(text.clone()),
            _ => None,
        })
        .take(RELEVANCE_MESSAGES)
        .collect();
    let latest: Vec<&str> = latest.iter().map(String::as_str).collect();
    // Tools called in the latest turns stay detailed, so a follow-up can call them again.
    let recent_start = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, ChatMessage::User { .. }))
        .map(|(i, _)| i)
        .rev()
        .nth(RELEVANCE_MESSAGES - 1)
        .unwrap_or(0);
    let used: Vec<&str> = messages[recent_start..]
        .iter()
        .flat_map(|m| match m {
            ChatMessage::Assistant { tool_calls, .. } => tool_calls.as_slice(),
            _ => &[],
        })
        .map(|c| c.name.as_str())
        .collect();
    let specs = if policy.tools == ToolOffer::Routed {
        let routed = tool_router::route(session.mode, tools, &tool_router::History::of(&messages));
        tool_router::specs(tools, &routed, policy.compact_schemas)
    } else {
        let names = modes::tool_names(session.mode, tools);
        let detailed = match policy.tools {
            ToolOffer::Relevant => modes::relevant_tools(session.mode, tools, &latest, &used),
            _ => names.clone(),
        };
        names
            .iter()
            .flat_map(|name| {
                let one = [*name];
                match (detailed.contains(name), policy.compact_schemas) {
                    (true, true) => tools.compact_specs(&one),
                    (true, false) => tools.specs(&one),
                    (false, _) => tools.slim_specs(&one),
                }
            })
            .collect()
    };

    let mut system = modes::system_prompt(session.mode);
    let mut attached = String::new();
    match session.project_id {
        Some(p) => match read_project(store, project, p).await {
            Ok(data) => {
                let view = context::project_view(&data, policy.project, &latest);
                system.push_str("\n\n# Project\n");
                system.push_str(&view.stable);
                attached = view.relevant;
            }
            Err(StoreError::NotFound(_)) => {
                system.push_str("\n\nThe bound project no longer exists.")
            }
            Err(e) => return Err(e),
        },
        None => system.push_str(
            "\n\nNo project is bound to this conversation; project tools will say so. \
             The user can bind one with `/sparky project use NAME`.",
        ),
    }
    if !win.summary.is_empty() {
        system.push_str("\n\n# Earlier in this conversation\n");
        system.push_str(&win.summary);
    }
    if !attached.is_empty() {
        if let Some(ChatMessage::User { text, .. }) = messages
            .iter_mut()
            .rev()
            .find(|m| matches!(m, ChatMessage::User { .. }))
        {
            text.push_str("\n\n[Project data for this question]\n");
            text.push_str(&attached);
        }
    }
    Ok(ChatRequest {
        system,
        messages,
        tools: specs,
        temperature,
        max_output_tokens: None,
        seed: None,
        tool_choice: Default::default(),
    })
}

/// The bound project: the turn's read of it when there is one, else a fresh read.
async fn read_project<'t>(
    store: &dyn Store,
    turn: Option<&'t TurnProject>,
    id: i64,
) -> Result<Cow<'t, ProjectData>, StoreError> {
    match turn.filter(|t| t.id() == id) {
        Some(t) => t
            .read(|id, seen| store.load_project_seen(id, seen))
            .await
            .map(Cow::Borrowed),
        None => store.load_project(id).await.map(Cow::Owned),
    }
}
