//! Every tool's example in `docs/nec_engine_tools.md` runs, in the order written, through the
//! registry the bot ships, on SQLite and Postgres: a person can paste each line into
//! `sparky tool`.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::support::db;
use crate::tools_fixture::{call, ctx, registry, seed};
use db::TestDb;

/// (tool, project, args) of each `sparky tool` line of the document.
fn examples() -> Vec<(String, Option<String>, Value)> {
    let doc = include_str!("../../docs/nec_engine_tools.md");
    doc.lines()
        .filter_map(|l| l.strip_prefix("sparky tool "))
        .map(|rest| {
            let name = rest
                .split_whitespace()
                .next()
                .expect("tool name")
                .to_string();
            let project = rest
                .split_once("--project ")
                .map(|(_, p)| p.split_whitespace().next().expect("project").to_string());
            let args = rest
                .split_once("--args '")
                .and_then(|(_, a)| a.rsplit_once('\''))
                .map(|(a, _)| a)
                .unwrap_or_else(|| panic!("{name}: no --args '...'"));
            let args: Value =
                serde_json::from_str(args).unwrap_or_else(|e| panic!("{name}: {e}: {args}"));
            (name, project, args)
        })
        .collect()
}

async fn every_documented_example_runs(db: TestDb) {
    let store = db.store();
    let reg = registry();
    let examples = examples();
    // One example per shipped tool (search_code is added by the app with its corpus).
    let documented: BTreeSet<&str> = examples.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(documented.len(), examples.len(), "a tool has two examples");
    let shipped: BTreeSet<&str> = reg.all().map(|t| t.name()).collect();
    let missing: Vec<&&str> = shipped.difference(&documented).collect();
    assert!(missing.is_empty(), "tools without an example: {missing:?}");
    let unknown: Vec<&&str> = documented
        .difference(&shipped)
        .filter(|n| **n != "search_code")
        .collect();
    assert!(unknown.is_empty(), "examples of no tool: {unknown:?}");

    let demo = seed(&store, "Demo").await;
    let in_project = ctx(store.clone(), demo);
    let mut free = ctx(store.clone(), demo);
    free.project_id = None;
    for (name, project, args) in examples {
        if name == "search_code" {
            assert!(args["query"].is_string());
            continue;
        }
        let c = match project.as_deref() {
            Some("Demo") => &in_project,
            Some(other) => panic!("{name}: examples use project Demo, not {other}"),
            None => &free,
        };
        if let Err(e) = call(&reg, c, &name, args.clone()).await {
            panic!("{name} {args}: {e}");
        }
    }
}

db::both_backends!(every_documented_example_runs);
