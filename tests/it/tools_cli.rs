//! The real `sparky` binary: `sparky tool NAME --args JSON --project P` prints JSON (exit 0, or
//! non-zero with the error as JSON), and `sparky project import/export` round-trips a project
//! (JSON) and a panel schedule (CSV).

use crate::support;
use crate::tools_fixture;

use serde_json::Value;
use support::bot::{Bot, Db};

async fn seeded_bot() -> Bot {
    let bot = Bot::new(Db::Sqlite, None).await;
    let (_, ok) = bot.run(&["migrate"], "").await;
    assert!(ok, "migrate");
    let store = bot.store().await;
    tools_fixture::seed(&store, "Shop").await;
    bot
}

fn json_of(lines: &[String]) -> Value {
    let text = lines.join("\n");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[tokio::test]
async fn tools_print_json_and_errors_as_json_with_a_failing_exit() {
    let bot = seeded_bot().await;
    let (out, ok) = bot
        .run(
            &[
                "tool",
                "describe_panel",
                "--project",
                "Shop",
                "--args",
                r#"{"panel":"LP-1"}"#,
            ],
            "",
        )
        .await;
    assert!(ok, "{out:?}");
    let v = json_of(&out);
    assert_eq!(v["next_free_circuit"], 10);

    let (out, ok) = bot
        .run(
            &[
                "tool",
                "run_inspection",
                "--project",
                "Shop",
                "--args",
                r#"{"category":"interrupting"}"#,
            ],
            "",
        )
        .await;
    assert!(ok, "{out:?}");
    assert_eq!(json_of(&out)["counts"]["violations"], 1);

    let (out, ok) = bot
        .run(
            &[
                "tool",
                "lookup_table",
                "--args",
                r#"{"table":"310.16","row":"3/0","column":"75","material":"copper"}"#,
            ],
            "",
        )
        .await;
    assert!(ok, "{out:?}");
    assert_eq!(json_of(&out)["value"], 200.0);

    let (out, ok) = bot
        .run(
            &[
                "tool",
                "calculate_voltage_drop",
                "--project",
                "Shop",
                "--args",
                r#"{"panel":"LP-1","number":2}"#,
            ],
            "",
        )
        .await;
    assert!(!ok, "{out:?}");
    let e = json_of(&out)["error"].to_string();
    assert!(e.contains("LP-1 #2") && e.contains("no length"), "{e}");

    // A write from a script without --yes changes nothing; with --yes it applies.
    let args = r#"{"panel":"LP-1","description":"Heat pump","load_va":6000,"poles":2}"#;
    let (out, ok) = bot
        .run(
            &["tool", "add_circuit", "--project", "Shop", "--args", args],
            "",
        )
        .await;
    assert!(ok, "{out:?}");
    assert!(out.join("\n").contains("not_confirmed"));
    let (out, ok) = bot
        .run(
            &[
                "tool",
                "add_circuit",
                "--project",
                "Shop",
                "--yes",
                "--args",
                args,
            ],
            "",
        )
        .await;
    assert!(ok, "{out:?}");
    assert_eq!(json_of(&out)["added"]["number"], 10);
}

#[tokio::test]
async fn projects_round_trip_through_json_and_schedules_through_csv() {
    let bot = seeded_bot().await;
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("shop.json");
    let second = dir.path().join("shop2.json");
    let p = |x: &std::path::Path| x.display().to_string();

    let (out, ok) = bot
        .run(&["project", "export", "Shop", "--out", &p(&first)], "")
        .await;
    assert!(ok, "{out:?}");
    let (out, ok) = bot
        .run(
            &["project", "import", &p(&first), "--name", "Shop copy"],
            "",
        )
        .await;
    assert!(ok, "{out:?}");
    assert_eq!(json_of(&out)["imported"], "Shop copy");
    let (_, ok) = bot
        .run(
            &["project", "export", "Shop copy", "--out", &p(&second)],
            "",
        )
        .await;
    assert!(ok);
    let mut a: Value = serde_json::from_str(&std::fs::read_to_string(&first).unwrap()).unwrap();
    let b: Value = serde_json::from_str(&std::fs::read_to_string(&second).unwrap()).unwrap();
    assert_eq!(a["format"], "sparky-project");
    assert_eq!(a["circuits"].as_array().unwrap().len(), 7);
    a["name"] = "Shop copy".into();
    assert_eq!(a, b, "export -> import -> export must give the same data");
    // Importing again under a used name is refused and changes nothing.
    let (out, ok) = bot.run(&["project", "import", &p(&first)], "").await;
    assert!(!ok, "{out:?}");

    // The schedule as CSV, then into an empty panel of the copy.
    let (csv, ok) = bot
        .run(
            &[
                "project", "export", "Shop", "--format", "csv", "--panel", "LP-1",
            ],
            "",
        )
        .await;
    assert!(ok, "{csv:?}");
    assert_eq!(csv[0], "panel,circuit,poles,description,load_va,continuous,breaker_a,conductor,material,insulation_c,length_ft,conduit,motor_hp,motor_phase,motor_voltage,motor_device,appliance_kind,appliance_va");
    assert_eq!(csv.len(), 7, "{csv:?}");
    assert!(
        csv.iter().any(|l| l.contains("\"3/4 PVC, #12 EGC\"")),
        "{csv:?}"
    );
    let sched = dir.path().join("lp1.csv");
    let body: Vec<String> = csv
        .iter()
        .skip(1)
        .map(|l| l.replacen("LP-1", "LP-9", 1))
        .collect();
    std::fs::write(&sched, format!("{}\n{}\n", csv[0], body.join("\n"))).unwrap();
    let (out, ok) = bot
        .run(
            &[
                "tool",
                "add_panel",
                "--project",
                "Shop copy",
                "--yes",
                "--args",
                r#"{"name":"LP-9","voltage":208,"phase":3,"bus_rating":225,"fed_from":"service"}"#,
            ],
            "",
        )
        .await;
    assert!(ok, "{out:?}");
    let (out, ok) = bot
        .run(
            &[
                "project",
                "import",
                &p(&sched),
                "--project",
                "Shop copy",
                "--panel",
                "LP-9",
            ],
            "",
        )
        .await;
    assert!(ok, "{out:?}");
    assert_eq!(json_of(&out)["imported_circuits"], 6);
    let (csv9, ok) = bot
        .run(
            &[
                "project",
                "export",
                "Shop copy",
                "--format",
                "csv",
                "--panel",
                "LP-9",
            ],
            "",
        )
        .await;
    assert!(ok);
    assert_eq!(
        csv9[1..].to_vec(),
        body,
        "the schedule survives the round trip"
    );
    // The same CSV again clashes on every number and adds nothing.
    let (out, ok) = bot
        .run(
            &[
                "project",
                "import",
                &p(&sched),
                "--project",
                "Shop copy",
                "--panel",
                "LP-9",
            ],
            "",
        )
        .await;
    assert!(!ok, "{out:?}");
    let store = bot.store().await;
    let copy = store
        .project_by_name(&sparky::project::Workspace::local(), "Shop copy")
        .await
        .unwrap()
        .unwrap();
    let data = store.load_project(copy.id).await.unwrap();
    let lp9 = data.panel_by_name("LP-9").unwrap();
    assert_eq!(data.circuits_of(lp9.id).len(), 6);
}

#[tokio::test]
async fn audit_prints_a_projects_changes_as_text_csv_and_json() {
    let bot = seeded_bot().await;
    let (out, ok) = bot
        .run(
            &[
                "tool",
                "add_panel",
                "--project",
                "Shop",
                "--yes",
                "--user",
                "dana",
                "--args",
                r#"{"name": "LP-7", "voltage": 240, "phase": 1, "bus_rating": 100}"#,
            ],
            "",
        )
        .await;
    assert!(ok, "{out:?}");
    let (out, ok) = bot.run(&["audit", "Shop", "--format", "csv"], "").await;
    assert!(ok, "{out:?}");
    assert!(
        out[0].starts_with("proposed_at,proposed_by,origin,outcome"),
        "{out:?}"
    );
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(
        out[1].contains(",dana,command,applied,dana,") && out[1].contains("LP-7"),
        "{out:?}"
    );
    let (out, ok) = bot.run(&["audit", "Shop", "--format", "json"], "").await;
    assert!(ok, "{out:?}");
    let v = json_of(&out);
    assert_eq!(v["changes"][0]["tools"][0], "add_panel", "{v}");
    let (out, ok) = bot.run(&["audit", "Shop"], "").await;
    assert!(ok, "{out:?}");
    let text = out.join("\n");
    assert!(
        text.contains("asked by dana") && !text.contains('\u{FFF9}'),
        "{text}"
    );
    let (_, ok) = bot.run(&["audit", "Nowhere"], "").await;
    assert!(!ok, "an unknown project fails");
}
