//! `sparky eval answers` against scripted models over real HTTP + SSE: the right-answering
//! one scores 100 % in both tool modes, and every known mistake of the wrong-answering one is
//! caught, with the scores its mistakes predict.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{json, Value};
use sparky::eval::set::ConversationSet;

use crate::support::bot::{Bot, Db};
use crate::support::eval_models::{responder, Wrong};
use crate::support::fake_llm::{Dialect, FakeLlm};

async fn eval(wrong: HashMap<String, Wrong>, tools: &str) -> Value {
    eval_with_requests(wrong, tools).await.0
}

/// The report, and every request body the model server received.
async fn eval_with_requests(wrong: HashMap<String, Wrong>, tools: &str) -> (Value, Vec<Value>) {
    let set = ConversationSet::built_in().expect("the shipped set parses");
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    fake.respond_with(responder(&set, wrong));
    let bot = Bot::new(Db::Sqlite, Some(&fake)).await;
    let (lines, ok) = bot
        .run(&["eval", "answers", "--json", "--tools", tools], "")
        .await;
    assert!(ok, "sparky eval answers failed: {lines:?}");
    let report = serde_json::from_str(&lines.join("\n")).expect("the report is JSON");
    (report, fake.requests())
}

fn misses(report: &Value) -> Vec<String> {
    report["misses"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| {
            m["findings"].as_array().unwrap().iter().map(move |f| {
                format!(
                    "{} {}: {} (answer: {})",
                    m["conversation"], f["mistake"], f["detail"], m["answer"]
                )
            })
        })
        .collect()
}

#[test]
fn the_set_is_large_varied_and_covers_every_tool() {
    let set = ConversationSet::built_in().expect("the shipped set parses");
    assert!(
        set.conversations.len() >= 100,
        "{}",
        set.conversations.len()
    );
    let categories: BTreeSet<&str> = set
        .conversations
        .iter()
        .map(|c| c.category.as_str())
        .collect();
    for c in [
        "calculation",
        "code",
        "project",
        "write",
        "correction",
        "follow-up",
        "refusal",
    ] {
        assert!(categories.contains(c), "no {c} conversation");
    }
    let registry = sparky::tools::default_registry(60);
    let covered = set.tools_covered();
    let mut shipped: Vec<&str> = registry.all().map(|t| t.name()).collect();
    shipped.push("search_code");
    let missing: Vec<&&str> = shipped
        .iter()
        .filter(|n| **n != "more_tools" && !covered.contains(**n))
        .collect();
    assert!(
        missing.is_empty(),
        "tools no conversation calls: {missing:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_right_model_scores_every_turn_routed_and_with_every_tool() {
    for tools in ["routed", "all"] {
        let (report, requests) = eval_with_requests(HashMap::new(), tools).await;
        if tools == "all" {
            // Every conversation opens with the same instructions and tools, so a server that
            // caches a prompt's prefix reads them once for the run.
            let openings: BTreeSet<String> = requests
                .iter()
                .filter(|r| r["messages"].as_array().is_some_and(|m| m.len() == 2))
                .map(|r| format!("{}{}", r["messages"][0], r["tools"]))
                .collect();
            let firsts = requests
                .iter()
                .filter(|r| r["messages"].as_array().is_some_and(|m| m.len() == 2))
                .count();
            assert!(firsts >= 100, "{firsts} first requests");
            let texts: Vec<&String> = openings.iter().collect();
            let at = |a: &str, b: &str| {
                let i = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
                format!(
                    "{} | {}",
                    &a[i.saturating_sub(80)..(i + 120).min(a.len())],
                    &b[i.saturating_sub(80)..(i + 120).min(b.len())]
                )
            };
            assert_eq!(
                openings.len(),
                1,
                "the opening prompts differ ({}): {}",
                texts.len(),
                texts
                    .windows(2)
                    .map(|w| at(w[0], w[1]))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
        assert_eq!(report["tools"], tools);
        assert_eq!(
            report["accuracy_pct"],
            100.0,
            "{tools}: {:#?}",
            misses(&report)
        );
        assert_eq!(report["tool_choice_pct"], 100.0);
        assert_eq!(report["invalid_argument_pct"], 0.0);
        assert_eq!(report["repeated_call_pct"], 0.0);
        assert!(report["conversations"].as_u64().unwrap() >= 100);
        assert!(report["model_calls_per_conversation"].as_f64().unwrap() >= 1.0);
        assert!(report["prompt_tokens_per_conversation"].as_f64().unwrap() > 0.0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_known_mistake_is_caught_and_scored() {
    let right = eval(HashMap::new(), "routed").await;
    let mistakes: Vec<(&str, Wrong, &[&str])> = vec![
        (
            "vd-01",
            Wrong::Tool(
                "lookup_table".into(),
                json!({"table": "310.16", "row": "12"}),
            ),
            &["wrong_tool"],
        ),
        (
            "amp-01",
            Wrong::Argument("row".into(), json!("4")),
            &["wrong_argument"],
        ),
        ("motor-01", Wrong::Number, &["wrong_number"]),
        ("light-01", Wrong::NoCitation, &["missing_citation"]),
        (
            "read-01",
            Wrong::Tool(
                "add_circuit".into(),
                json!({"panel": "LP-1", "description": "Spare", "breaker": 20, "load_va": 1200}),
            ),
            &["wrong_tool", "unexpected_card"],
        ),
        (
            "vd-02",
            Wrong::RepeatInvalid("phase".into(), json!(2)),
            &["wrong_argument", "wrong_number"],
        ),
    ];
    let wrong_map = mistakes
        .iter()
        .map(|(id, w, _)| (id.to_string(), w.clone()))
        .collect();
    let report = eval(wrong_map, "routed").await;

    // Exactly the mistaken turns fail, each for exactly its mistakes.
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for m in report["misses"].as_array().unwrap() {
        assert_eq!(m["turn"], 0, "{m}");
        for f in m["findings"].as_array().unwrap() {
            found
                .entry(m["conversation"].as_str().unwrap().to_string())
                .or_default()
                .insert(f["mistake"].as_str().unwrap().to_string());
        }
    }
    let predicted: BTreeMap<String, BTreeSet<String>> = mistakes
        .iter()
        .map(|(id, _, kinds)| {
            (
                id.to_string(),
                kinds.iter().map(|k| k.to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(found, predicted, "{:#?}", misses(&report));

    // Scores: one wrong turn per mistaken conversation, in its category.
    let set = ConversationSet::built_in().unwrap();
    let category: HashMap<&str, &str> = set
        .conversations
        .iter()
        .map(|c| (c.id.as_str(), c.category.as_str()))
        .collect();
    for c in report["categories"].as_array().unwrap() {
        let name = c["category"].as_str().unwrap();
        let wrong = mistakes
            .iter()
            .filter(|(id, ..)| category[id] == name)
            .count() as u64;
        let turns = c["turns"].as_u64().unwrap();
        assert_eq!(c["turns_right"].as_u64().unwrap(), turns - wrong, "{name}");
    }
    let turns = report["turns"].as_u64().unwrap() as f64;
    let pct = |n: f64, d: f64| (n * 1000.0 / d).round() / 10.0;
    assert_eq!(
        report["accuracy_pct"],
        pct(turns - mistakes.len() as f64, turns)
    );
    // Two turns chose the wrong tool: vd-01 and read-01.
    let graded = right["turns"].as_u64().unwrap() as f64
        - set
            .conversations
            .iter()
            .flat_map(|c| &c.turns)
            .filter(|t| t.expect.tools.is_none())
            .count() as f64;
    assert_eq!(report["tool_choice_pct"], pct(graded - 2.0, graded));
    // vd-02 sent its invalid call three times: refused, repeated once (told what was wrong),
    // repeated again (the turn ended). No other call was invalid or a repeat (the right model
    // made none), so the rates are exactly 3 and 2 calls of all the calls made.
    let calls = report["tool_calls"].as_f64().unwrap();
    assert!(
        calls >= right["tool_calls"].as_f64().unwrap() - 2.0,
        "{calls}"
    );
    assert_eq!(report["invalid_argument_pct"], pct(3.0, calls));
    assert_eq!(report["repeated_call_pct"], pct(2.0, calls));
    // Its first repeat answered the re-ask that required a call of that tool alone; the
    // others were open requests.
    assert_eq!(report["constrained_calls"], 1);
    assert_eq!(report["constrained_invalid_pct"], 100.0);
    assert_eq!(report["open_calls"], calls - 1.0);
    assert_eq!(report["open_invalid_pct"], pct(2.0, calls - 1.0));
    assert_eq!(right["constrained_calls"], 0);
}
