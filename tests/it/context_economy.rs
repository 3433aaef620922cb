//! Context economy keeps what later turns need: the 20-turn conversation about a large and a
//! small project, played under the economy policy and under the naive one (everything, every
//! time), must run the same tools with the same results, and every fact the scripted model
//! relies on must be in the request it gets, while the economy sends far less.

use crate::support;

use std::sync::Arc;

use serde_json::json;
use sparky::core::context::ContextPolicy;
use support::context_workload::{self, ScriptedModel, Tokenizer, Turn, Workload};

/// Any stable tokenizer will do for comparing two runs: four bytes a token.
fn tokenizer() -> Tokenizer {
    Arc::new(|text: &str| {
        text.as_bytes()
            .chunks(4)
            .map(|c| {
                c.iter().fold(0u32, |acc, b| {
                    acc.wrapping_mul(257).wrapping_add(u32::from(*b))
                })
            })
            .collect()
    })
}

async fn compare(w: Workload, min_saving_percent: usize) {
    let naive = context_workload::run(&w, ContextPolicy::naive(), tokenizer())
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", w.label));
    let economy = context_workload::run(&w, ContextPolicy::economy(), tokenizer())
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", w.label));
    assert!(
        naive.lost.is_empty(),
        "{} naive: {:#?}",
        w.label,
        naive.lost
    );
    assert!(
        economy.lost.is_empty(),
        "{} economy: {:#?}",
        w.label,
        economy.lost
    );
    assert!(
        naive.outcomes.len() >= 15,
        "{}: {} tool results",
        w.label,
        naive.outcomes.len()
    );
    assert_eq!(naive.outcomes.len(), economy.outcomes.len(), "{}", w.label);
    for (n, e) in naive.outcomes.iter().zip(&economy.outcomes) {
        assert_eq!(n, e, "{}: a tool outcome differs", w.label);
    }
    // The savings measured with o200k_base are in docs/context.md; these floors (with a
    // byte-based count) catch a lever that stops working.
    assert!(
        economy.total() * 100 < naive.total() * (100 - min_saving_percent),
        "{}: economy {} vs naive {} tokens",
        w.label,
        economy.total(),
        naive.total()
    );
    // The agent recorded the usage the model reported, cached tokens included.
    assert_eq!(
        economy.recorded_input,
        (economy.total() - economy.summary_tokens()) as u64,
        "{}",
        w.label
    );
    assert_eq!(
        economy.recorded_cached,
        economy.cached() as u64,
        "{}",
        w.label
    );
}

#[tokio::test]
async fn economy_keeps_every_fact_and_tool_outcome_of_a_large_project() {
    compare(context_workload::large(), 60).await;
}

#[tokio::test]
async fn economy_keeps_every_fact_and_tool_outcome_of_a_small_project() {
    compare(context_workload::small(), 60).await;
}

/// With a small history budget the window rolls: the agent asks the model for a summary of
/// the turns that leave it, and later requests carry that summary; no fact a later turn
/// relies on is lost and every tool outcome equals the naive run's.
#[tokio::test]
async fn a_rolling_window_is_summarised_by_the_model() {
    let w = context_workload::small();
    let naive = context_workload::run(&w, ContextPolicy::naive(), tokenizer())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let budget = [("SPARKY_AGENT__HISTORY_TOKEN_BUDGET", "1500")];
    let rolled = context_workload::run_with(&w, ContextPolicy::economy(), tokenizer(), &budget)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(rolled.lost.is_empty(), "{:#?}", rolled.lost);
    assert!(!rolled.summaries.is_empty(), "no summary was asked for");
    assert!(
        rolled.with_summary > 0,
        "no request carried the model's summary"
    );
    assert_eq!(naive.outcomes, rolled.outcomes);
    // Without the model summary the same budget uses the extractive one: no summary call.
    let mut policy = ContextPolicy::economy();
    policy.model_summary = false;
    let extractive = context_workload::run_with(&w, policy, tokenizer(), &budget)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(extractive.summaries.is_empty());
    assert_eq!(extractive.with_summary, 0);
}

/// The check itself can fail: a request without a needed fact, or without the tool the model
/// is about to call, is reported.
#[tokio::test]
async fn a_missing_fact_or_tool_is_reported() {
    let turns = vec![Turn {
        act: context_workload::Act::Say("hi".into()),
        model: vec![context_workload::ModelStep {
            needs: vec!["the 4.12 % drop".into()],
            answer: context_workload::Answer::Calls(vec![("describe_panel".into(), json!({}))]),
            remember: vec![],
        }],
    }];
    let model = ScriptedModel::start(&turns, tokenizer()).await.unwrap();
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "calculator", "parameters": {"type": "object"}}}]});
    let response = reqwest::Client::new()
        .post(format!("{}/chat/completions", model.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    let lost = model.lost();
    assert_eq!(lost.len(), 2, "{lost:?}");
    assert!(lost[0].contains("4.12"), "{lost:?}");
    assert!(
        lost[1].contains("describe_panel was not offered"),
        "{lost:?}"
    );
}
