//! Context economy: prompt tokens of a 20-turn conversation about a large and a small
//! project, under the naive policy (whole history, whole project, every tool schema in every
//! request), under each lever alone, under the economy policy and under the economy without
//! each lever. Offline: a scripted OpenAI-compatible model over real HTTP counts every
//! request with the o200k_base tokenizer (embedded in tiktoken-rs), checks that every fact a
//! turn relies on is in its request, and reports what a prefix cache would have served.
//!
//! Run: `cargo bench --bench context --profile dev` (figures in docs/context.md); add
//! `-- --quick` for naive and economy only, `-- house` or `-- tower` for one project.

#[path = "../tests/it/support/context_workload.rs"]
mod context_workload;

use std::sync::Arc;

use context_workload::{RunReport, Tokenizer, Workload};
use sparky::core::context::{ContextPolicy, ProjectScope, ToolOffer};

fn tokenizer() -> Tokenizer {
    let bpe = match tiktoken_rs::o200k_base() {
        Ok(b) => Arc::new(b),
        Err(e) => panic!("the o200k_base tokenizer did not load: {e}"),
    };
    Arc::new(move |text: &str| bpe.encode_ordinary(text))
}

/// Turns one lever on or off in a policy.
type Lever = fn(&mut ContextPolicy, bool);

fn levers() -> Vec<(&'static str, Lever)> {
    vec![
        ("relevant tools", |p, on| {
            p.tools = if on {
                ToolOffer::Relevant
            } else {
                ToolOffer::All
            }
        }),
        ("routed tools", |p, on| {
            p.tools = if on {
                ToolOffer::Routed
            } else {
                ToolOffer::All
            }
        }),
        ("compact schemas", |p, on| p.compact_schemas = on),
        ("project: fixed summary", |p, on| {
            p.project = if on {
                ProjectScope::Summary
            } else {
                ProjectScope::Whole
            }
        }),
        ("project: index + named panels", |p, on| {
            p.project = if on {
                ProjectScope::Relevant
            } else {
                ProjectScope::Whole
            }
        }),
        ("digest old results", |p, on| p.digest_old_results = on),
        ("history budget", |p, on| p.whole_history = !on),
        ("model summary", |p, on| p.model_summary = on),
    ]
}

fn line(label: &str, r: &RunReport, naive: usize, naive_outcomes: &RunReport) {
    let same = r.outcomes == naive_outcomes.outcomes;
    println!(
        "  {label:<42} {:>9} {:>7.1} % {:>9} {:>9} {:>5} {:>9}",
        r.total(),
        100.0 * (1.0 - r.total() as f64 / naive as f64),
        r.tool_tokens(),
        r.cached(),
        r.lost.len(),
        if same { "equal" } else { "DIFFERENT" },
    );
    for l in &r.lost {
        println!("      lost: {l}");
    }
}

async fn workload(w: Workload, tok: &Tokenizer, quick: bool) {
    println!(
        "\n{} — {} turns, {} circuits",
        w.label,
        context_workload::conversation(&w).len(),
        w.circuits()
    );
    let run = |p: ContextPolicy| {
        let w = &w;
        let tok = tok.clone();
        async move {
            context_workload::run(w, p, tok)
                .await
                .unwrap_or_else(|e| panic!("{}: {e}", w.label))
        }
    };
    let naive = run(ContextPolicy::naive()).await;
    let economy = run(ContextPolicy::economy()).await;
    let n = naive.total();
    println!(
        "  {:<42} {:>9} {:>9} {:>9} {:>9} {:>5} {:>9}",
        "strategy", "prompt", "saved", "tools", "cached", "lost", "outcomes"
    );
    line("naive", &naive, n, &naive);
    for (name, set) in levers().into_iter().filter(|_| !quick) {
        let mut p = ContextPolicy::naive();
        set(&mut p, true);
        line(&format!("naive + {name}"), &run(p).await, n, &naive);
    }
    line("economy (all levers)", &economy, n, &naive);
    for (name, set) in levers().into_iter().filter(|_| !quick) {
        if name == "project: fixed summary" || name == "relevant tools" {
            continue;
        }
        let mut p = ContextPolicy::economy();
        set(&mut p, false);
        line(&format!("economy without {name}"), &run(p).await, n, &naive);
    }
    if !quick {
        let mut p = ContextPolicy::economy();
        p.tools = ToolOffer::Relevant;
        line(
            "economy, relevant instead of routed tools",
            &run(p).await,
            n,
            &naive,
        );
    }
    println!("  per turn (prompt tokens, cached in brackets):");
    println!("  {:>4} {:>18} {:>18}", "turn", "naive", "economy");
    for t in 0..naive.turns {
        let cached = |r: &RunReport| -> usize {
            r.requests
                .iter()
                .filter(|q| q.turn == t)
                .map(|q| q.cached)
                .sum()
        };
        println!(
            "  {:>4} {:>9} [{:>6}] {:>9} [{:>6}]",
            t + 1,
            naive.turn_tokens(t),
            cached(&naive),
            economy.turn_tokens(t),
            cached(&economy)
        );
    }
    if quick {
        let per: Vec<String> = economy
            .requests
            .iter()
            .map(|q| format!("{}:{}/{}", q.turn + 1, q.tools, q.tool_tokens))
            .collect();
        println!(
            "  economy tools per request (turn:count/tokens): {}",
            per.join(" ")
        );
    }
    println!(
        "  summary requests: {} ({} tokens); requests carrying a model summary: {}",
        economy.summaries.len(),
        economy.summary_tokens(),
        economy.with_summary
    );
    println!(
        "  requests: {} naive, {} economy; the agent recorded {} prompt / {} cached tokens for the economy run",
        naive.requests.len(),
        economy.requests.len(),
        economy.recorded_input,
        economy.recorded_cached
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let tok = tokenizer();
    // `-- --quick` runs only naive and economy; `-- house` or `-- tower` one project.
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let only = |name: &str| {
        !args.iter().any(|a| a == "house" || a == "tower") || args.iter().any(|a| a == name)
    };
    rt.block_on(async {
        if only("tower") {
            workload(context_workload::large(), &tok, quick).await;
        }
        if only("house") {
            workload(context_workload::small(), &tok, quick).await;
        }
    });
}
