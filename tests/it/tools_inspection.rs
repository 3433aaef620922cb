//! run_inspection finds the problems seeded into a project, with the right references, on a
//! real (SQLite) database through the real registry; and the pure `inspect` agrees.

use crate::tools_fixture;

use serde_json::{json, Value};
use tools_fixture::{call, call_err, ctx, registry, seed, sqlite};

fn findings<'a>(v: &'a Value, equipment: &str, check: &str) -> Vec<&'a Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["equipment"].as_str().unwrap().contains(equipment) && f["check"] == check)
        .collect()
}

#[tokio::test]
async fn seeded_problems_are_found_with_references_and_fixes() {
    let (store, _dir) = sqlite().await;
    let id = seed(&store, "Shop").await;
    let (reg, ctx) = (registry(), ctx(store.clone(), id));
    let v = call(&reg, &ctx, "run_inspection", json!({})).await.unwrap();

    // 10 kA panel on a 22 kA service.
    let f = findings(&v, "panel LP-1", "interrupting_rating");
    assert_eq!(f.len(), 1, "{v:#}");
    assert_eq!(f[0]["severity"], "violation");
    assert!(f[0]["reference"].as_str().unwrap().contains("110.9"));
    let msg = f[0]["message"].as_str().unwrap();
    assert!(msg.contains("10 kA") && msg.contains("22.0 kA"), "{msg}");
    assert!(f[0]["fix"].as_str().unwrap().contains("22 kA"), "{f:?}");

    // 12 AWG on a 30 A breaker.
    let f = findings(&v, "LP-1 #3 (Shop heater)", "small_conductor");
    assert_eq!(f.len(), 1, "{v:#}");
    assert_eq!(f[0]["severity"], "violation");
    assert_eq!(f[0]["reference"], "NEC 240.4(D)");
    let fix = f[0]["fix"].as_str().unwrap();
    assert!(
        fix.contains("20 A breaker") && fix.contains("10 AWG"),
        "{fix}"
    );
    let f = findings(&v, "LP-1 #3 (Shop heater)", "conductor_protection");
    assert_eq!(f.len(), 1, "{v:#}");
    assert!(f[0]["reference"].as_str().unwrap().starts_with("NEC 240.4"));

    // About 6 % drop.
    let f = findings(&v, "LP-1 #5 (Barn lights)", "circuit_voltage_drop");
    assert_eq!(f.len(), 1, "{v:#}");
    assert_eq!(f[0]["severity"], "warning");
    assert!(f[0]["reference"]
        .as_str()
        .unwrap()
        .contains("210.19(A) Informational Note"));
    assert!(f[0]["message"].as_str().unwrap().contains("6.0 %"), "{f:?}");
    assert!(f[0]["fix"].as_str().unwrap().contains("8 AWG"), "{f:?}");

    // #12 EGC on a 40 A circuit.
    let f = findings(&v, "LP-1 #7 (EV charger garage)", "egc_size");
    assert_eq!(f.len(), 1, "{v:#}");
    assert_eq!(f[0]["severity"], "violation");
    assert!(f[0]["reference"].as_str().unwrap().contains("250.122"));
    assert!(f[0]["fix"].as_str().unwrap().contains("10 AWG"), "{f:?}");

    // Missing data names the circuits.
    let missing: Vec<&Value> = findings(&v, "panel LP-1", "missing_data");
    let text = serde_json::to_string(&missing).unwrap();
    assert!(
        text.contains("no conductor size") && text.contains(": 6"),
        "{text}"
    );
    assert!(text.contains("no length") && text.contains(": 2"), "{text}");

    // Nothing about the fine circuits.
    assert!(findings(&v, "Kitchen receptacles", "small_conductor").is_empty());
    assert!(findings(&v, "Well pump", "branch_conductor_ampacity").is_empty());
    assert!(findings(&v, "panel LP-2", "interrupting_rating").is_empty());

    // Violations come first; counts add up.
    let all = v["findings"].as_array().unwrap();
    assert_eq!(all[0]["severity"], "violation");
    let c = &v["counts"];
    assert_eq!(
        c["violations"].as_u64().unwrap()
            + c["warnings"].as_u64().unwrap()
            + c["info"].as_u64().unwrap(),
        all.len() as u64
    );
    assert_eq!(c["violations"], 4, "{v:#}");
    assert!(v["checks"].as_array().unwrap().len() >= 12);

    // One category, one panel, fewer findings.
    let v = call(
        &reg,
        &ctx,
        "run_inspection",
        json!({"category": "conductors"}),
    )
    .await
    .unwrap();
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["category"] == "conductors"));
    assert_eq!(v["counts"]["violations"], 2);
    let v = call(
        &reg,
        &ctx,
        "run_inspection",
        json!({"panel": "LP-2", "min_severity": "warning"}),
    )
    .await
    .unwrap();
    assert_eq!(v["counts"]["violations"], 0, "{v:#}");
    let v = call(&reg, &ctx, "run_inspection", json!({"max_findings": 1}))
        .await
        .unwrap();
    assert_eq!(v["findings"].as_array().unwrap().len(), 1);
    assert!(v["truncated"].as_str().unwrap().contains("showing 1"));
    let e = call_err(&reg, &ctx, "run_inspection", json!({"panel": "nope"})).await;
    assert!(e.contains("no panel named 'nope'"), "{e}");
    let e = call_err(
        &reg,
        &ctx,
        "run_inspection",
        json!({"category": "everything"}),
    )
    .await;
    assert!(e.contains("invalid arguments"), "{e}");

    // The pure function gives the same counts as the tool.
    let data = store.load_project(id).await.unwrap();
    let r = sparky::project::inspection::inspect(&data, &Default::default()).unwrap();
    assert_eq!(r.counts.violations, 4);
}

#[tokio::test]
async fn an_empty_project_reports_what_is_missing() {
    let (store, _dir) = sqlite().await;
    let p = store
        .create_project(
            &sparky::project::Workspace::local(),
            "Empty",
            sparky::nec::units::Edition::Nec2020,
        )
        .await
        .unwrap();
    let (reg, ctx) = (registry(), ctx(store, p.id));
    let v = call(&reg, &ctx, "run_inspection", json!({})).await.unwrap();
    assert_eq!(v["counts"]["violations"], 0);
    assert!(v["findings"].to_string().contains("no service"), "{v:#}");
}
