//! Read-only NEC and query tools through the real registry on a real (SQLite) database:
//! project-aware results, clear errors for bad input, never a panic.

use crate::tools_fixture;

use serde_json::json;
use tools_fixture::{call, call_err, ctx, registry, seed, sqlite};

#[tokio::test]
async fn voltage_drop_of_circuits_feeders_and_free_inputs() {
    let (store, _dir) = sqlite().await;
    let id = seed(&store, "Shop").await;
    let (reg, ctx) = (registry(), ctx(store, id));

    let v = call(
        &reg,
        &ctx,
        "calculate_voltage_drop",
        json!({"panel": "LP-1", "number": 5}),
    )
    .await
    .unwrap();
    let pct = v["percent"].as_f64().unwrap();
    assert!((pct - 6.0).abs() < 0.1, "{v:#}");
    assert!(v["for"].as_str().unwrap().contains("Barn lights"));
    assert!(v["assessment"].as_str().unwrap().contains("5 %"));

    // By description, with a target.
    let v = call(
        &reg,
        &ctx,
        "calculate_voltage_drop",
        json!({"description": "the barn lights", "target_percent": 3}),
    )
    .await
    .unwrap();
    assert_eq!(v["smallest_conductor_for_target"]["smallest_size"], "8 AWG");
    // LP-2's circuit adds the feeder F2 drop for the total.
    let v = call(
        &reg,
        &ctx,
        "calculate_voltage_drop",
        json!({"panel": "LP-2", "number": 1}),
    )
    .await
    .unwrap();
    assert!(
        v["total_from_service"]["total_percent"].as_f64().unwrap() > v["percent"].as_f64().unwrap(),
        "{v:#}"
    );
    let v = call(
        &reg,
        &ctx,
        "calculate_voltage_drop",
        json!({"feeder": "F2"}),
    )
    .await
    .unwrap();
    assert!(v["percent"].as_f64().unwrap() > 0.0);
    // Free inputs: the customary 12 AWG, 16 A, 100 ft, 120 V example.
    let v = call(
        &reg,
        &ctx,
        "calculate_voltage_drop",
        json!({"voltage": 120, "phase": 1, "current": 16, "length": 100, "size": "12"}),
    )
    .await
    .unwrap();
    assert!(
        (v["voltage_drop_v"].as_f64().unwrap() - 6.34).abs() < 0.05,
        "{v:#}"
    );
    assert!(v["assumptions"].to_string().contains("copper"));
}

#[tokio::test]
async fn bad_input_names_what_is_missing_and_never_panics() {
    let (store, _dir) = sqlite().await;
    let id = seed(&store, "Shop").await;
    let (reg, ctx) = (registry(), ctx(store, id));

    let e = call_err(
        &reg,
        &ctx,
        "calculate_voltage_drop",
        json!({"panel": "LP-1", "number": 2}),
    )
    .await;
    assert!(
        e.contains("LP-1 #2 (Water heater)") && e.contains("no length"),
        "{e}"
    );
    let e = call_err(
        &reg,
        &ctx,
        "calculate_voltage_drop",
        json!({"panel": "LP-9", "number": 1}),
    )
    .await;
    assert!(
        e.contains("no panel named 'LP-9'") && e.contains("LP-1, LP-2"),
        "{e}"
    );
    let e = call_err(
        &reg,
        &ctx,
        "calculate_voltage_drop",
        json!({"panel": "LP-1", "number": 99}),
    )
    .await;
    assert!(
        e.contains("LP-1 has no circuit 99") && e.contains("1, 2, 3"),
        "{e}"
    );
    let e = call_err(
        &reg,
        &ctx,
        "calculate_voltage_drop",
        json!({"panel": "LP-1", "numbr": 5}),
    )
    .await;
    assert!(
        e.contains("invalid arguments") && e.contains("numbr"),
        "{e}"
    );
    let e = call_err(
        &reg,
        &ctx,
        "calculate_voltage_drop",
        json!({"description": "jacuzzi"}),
    )
    .await;
    assert!(e.contains("no circuit matches 'jacuzzi'"), "{e}");
    let e = call_err(
        &reg,
        &ctx,
        "calculate_voltage_drop",
        json!({"voltage": 120, "current": 10}),
    )
    .await;
    assert!(
        e.contains("phase") && e.contains("length") && e.contains("size"),
        "{e}"
    );
    let e = call_err(
        &reg,
        &ctx,
        "calculate_voltage_drop",
        json!({"voltage": 120, "phase": 1, "current": -5, "length": 100, "size": "12"}),
    )
    .await;
    assert!(e.contains("current"), "{e}");
    let e = call_err(
        &reg,
        &ctx,
        "calculate_voltage_drop",
        json!({"voltage": 120, "phase": 2, "current": 5, "length": 100, "size": "12"}),
    )
    .await;
    assert!(e.contains("phase"), "{e}");
    let e = call_err(
        &reg,
        &ctx,
        "check_conductor_sizing",
        json!({"continuous_load": 10, "size": "2500 kcmil"}),
    )
    .await;
    assert!(e.contains("310.16") && e.contains("2500"), "{e}");
    let e = call_err(
        &reg,
        &ctx,
        "lookup_table",
        json!({"table": "310.16", "row": "13 kcmilx"}),
    )
    .await;
    assert!(e.contains("unknown conductor size"), "{e}");
    let e = call_err(&reg, &ctx, "lookup_table", json!({"table": "999.9"})).await;
    assert!(
        e.contains("no shipped table") && e.contains("250.122"),
        "{e}"
    );
    let e = call_err(&reg, &ctx, "calculate_short_circuit", json!({"kva": 500})).await;
    assert!(
        e.contains("impedance_percent") && e.contains("voltage"),
        "{e}"
    );
    let e = call_err(&reg, &ctx, "check_service_upgrade", json!({})).await;
    assert!(e.contains("floor_area_ft2"), "{e}");
    let e = call_err(&reg, &ctx, "check_panel_capacity", json!({})).await;
    assert!(e.contains("LP-1, LP-2"), "{e}");
    // "charger" alone is unique; "circuit" words that match several circuits are ambiguous.
    let e = call_err(
        &reg,
        &ctx,
        "check_conductor_sizing",
        json!({"description": "heater"}),
    )
    .await;
    assert!(
        e.contains("Shop heater") && e.contains("Water heater"),
        "{e}"
    );
    // A project-less conversation.
    let mut no_project = ctx.clone();
    no_project.project_id = None;
    let e = call_err(
        &reg,
        &no_project,
        "describe_panel",
        json!({"panel": "LP-1"}),
    )
    .await;
    assert!(e.contains("no project is bound"), "{e}");
}

#[tokio::test]
async fn short_circuit_conductors_panels_and_arc_flash() {
    let (store, _dir) = sqlite().await;
    let id = seed(&store, "Shop").await;
    let (reg, ctx) = (registry(), ctx(store, id));

    let v = call(
        &reg,
        &ctx,
        "calculate_short_circuit",
        json!({"panel": "LP-1"}),
    )
    .await
    .unwrap();
    assert_eq!(v["available_fault_ka"], 22.0);
    assert_eq!(v["interrupting_check"]["pass"], false);
    // LP-2 is fed through 3 AWG copper, whose point-to-point C value only one publisher
    // prints: for its interrupting rating the answer is LP-1's current as an upper bound, with
    // what would give the exact figure; its 65 kA rating passes against it.
    let v = call(
        &reg,
        &ctx,
        "calculate_short_circuit",
        json!({"panel": "LP-2"}),
    )
    .await
    .unwrap();
    assert_eq!(v["available_fault_ka"], 22.0, "{v:#}");
    let bound = v["upper_bound"][0].as_str().unwrap();
    assert!(
        bound.contains("no value is available for 3 AWG copper") && bound.contains("c_value"),
        "{bound}"
    );
    assert_eq!(v["interrupting_check"]["pass"], true);
    assert_eq!(v["interrupting_check"]["against_upper_bound"], true);
    let v = call(
        &reg,
        &ctx,
        "calculate_short_circuit",
        json!({"all_panels": true}),
    )
    .await
    .unwrap();
    assert_eq!(v["panels"].as_array().unwrap().len(), 2);
    // 500 kVA, 480 V, 5 %Z: FLA 601 A, 12.03 kA on an infinite bus.
    let v = call(
        &reg,
        &ctx,
        "calculate_short_circuit",
        json!({"kva": 500, "impedance_percent": 5, "voltage": 480, "phase": 3}),
    )
    .await
    .unwrap();
    assert!(
        (v["available_fault_ka"].as_f64().unwrap() - 12.03).abs() < 0.01,
        "{v:#}"
    );

    let v = call(
        &reg,
        &ctx,
        "check_conductor_sizing",
        json!({"panel": "LP-1", "number": 3}),
    )
    .await
    .unwrap();
    assert_eq!(v["pass"], false);
    let rules = v["failed_rules"].to_string();
    assert!(rules.contains("240.4(D)"), "{rules}");
    assert_eq!(v["sizing"]["smallest_passing_size"], "10 AWG");
    // Table 250.122 says 10 AWG for 30 A, but an EGC need not exceed the circuit conductors.
    assert_eq!(v["egc"]["size"], "12 AWG");
    assert_eq!(v["egc"]["table_size"], "10 AWG");
    let v = call(
        &reg,
        &ctx,
        "check_conductor_sizing",
        json!({"description": "dryer"}),
    )
    .await
    .unwrap();
    assert_eq!(v["pass"], serde_json::Value::Null);
    assert!(
        v["notes"].to_string().contains("no conductor size"),
        "{v:#}"
    );
    let v = call(
        &reg,
        &ctx,
        "check_conductor_sizing",
        json!({"feeder": "F2"}),
    )
    .await
    .unwrap();
    assert_eq!(v["pass"], true, "{v:#}");

    let v = call(&reg, &ctx, "check_panel_capacity", json!({"panel": "LP-1"}))
        .await
        .unwrap();
    assert_eq!(v["result"]["pass"], true);
    assert_eq!(v["spare_spaces"], 33);

    let e = call_err(
        &reg,
        &ctx,
        "calculate_arc_flash",
        json!({"panel": "LP-1", "electrode_configuration": "VCB", "gap_mm": 25,
               "enclosure": {"height": 508, "width": 508, "depth": 254}}),
    )
    .await;
    assert!(
        e.contains("clearing_time_ms") && e.contains("never assumed") && e.contains("kA"),
        "{e}"
    );
    let v = call(
        &reg,
        &ctx,
        "calculate_arc_flash",
        json!({"panel": "LP-1", "clearing_time_ms": 20, "equipment": "panelboard240v"}),
    )
    .await
    .unwrap();
    assert_eq!(v["method"], "nfpa70e_ppe_table");
    let v = call(
        &reg,
        &ctx,
        "calculate_arc_flash",
        json!({"voltage": 480, "bolted_fault_ka": 45, "electrode_configuration": "VCB", "gap_mm": 32,
               "working_distance_mm": 609.6, "clearing_time_ms": 61.3, "reduced_clearing_time_ms": 319,
               "enclosure": {"height": 610, "width": 610, "depth": 254}}),
    )
    .await
    .unwrap();
    assert_eq!(v["method"], "ieee1584_2018");
    assert!(v["assessment"]["incident_energy_cal_cm2"].as_f64().unwrap() > 1.0);

    let v = call(
        &reg,
        &ctx,
        "check_service_upgrade",
        json!({"floor_area_ft2": 2000, "existing_loads": [{"description": "range", "va": 12000}],
               "added_circuits": ["the EV charger"]}),
    )
    .await
    .unwrap();
    assert_eq!(
        v["added_circuits"][0],
        "LP-1 #7 (EV charger garage) (2-pole)"
    );
    assert!(v["calculated_load_a"].as_f64().unwrap() > 50.0);
    assert!(v["service_adequate"].is_boolean());
}

#[tokio::test]
async fn lookup_table_values() {
    let (store, _dir) = sqlite().await;
    let id = seed(&store, "Shop").await;
    let (reg, ctx) = (registry(), ctx(store, id));
    let look = |args: serde_json::Value| {
        let (reg, ctx) = (&reg, &ctx);
        async move { call(reg, ctx, "lookup_table", args).await.unwrap() }
    };
    let v =
        look(json!({"table": "310.16", "row": "3/0", "column": "75", "material": "copper"})).await;
    assert_eq!(v["value"], 200.0);
    let v = look(
        json!({"table": "Table 310.16", "row": "4/0", "column": "75C", "material": "aluminum"}),
    )
    .await;
    assert_eq!(v["value"], 180.0);
    let v = look(json!({"table": "310.16", "row": "12", "column": "60"})).await;
    assert_eq!(v["value"], 20.0);
    let v = look(json!({"table": "250.122", "row": "60"})).await;
    assert_eq!(v["copper"], "10 AWG");
    let v = look(json!({"table": "250.122", "row": "200", "material": "aluminum"})).await;
    assert_eq!(v["value"], "4 AWG");
    let v = look(json!({"table": "310.15(B)(1)", "row": "40", "column": "90"})).await;
    assert_eq!(v["value"], 0.91);
    let v = look(json!({"table": "310.15(C)(1)", "row": "9"})).await;
    assert_eq!(v["value"], 0.7);
    let v = look(json!({"table": "chapter 9 table 8", "row": "12"})).await;
    assert!(v["rows"].to_string().contains("1.98"), "{v}");
    let v = look(json!({"table": "240.6(A)", "row": "27"})).await;
    assert_eq!(v["standard"], false);
    assert_eq!(v["next_at_or_above"], 30.0);
    let v = look(json!({"table": "430.250", "row": "10", "column": "460"})).await;
    assert_eq!(v["value"], 14.0);
    let v = look(json!({"table": "250.66", "row": "3/0"})).await;
    assert_eq!(v["gec_copper"], "4 AWG");
    let v = look(json!({"table": "250.122"})).await;
    assert_eq!(v["rows"].as_array().unwrap().len(), 19);
    assert_eq!(v["edition"], "2023");
}

#[tokio::test]
async fn find_circuits_by_name_words_and_selector_and_describe_panel() {
    let (store, _dir) = sqlite().await;
    let id = seed(&store, "Shop").await;
    let (reg, ctx) = (registry(), ctx(store, id));

    let v = call(
        &reg,
        &ctx,
        "find_circuits",
        json!({"query": "the EV charger"}),
    )
    .await
    .unwrap();
    assert_eq!(v["circuits"][0]["number"], 7, "{v:#}");
    assert_eq!(v["circuits"][0]["panel"], "LP-1");
    assert_eq!(v["matched"], 1);
    let v = call(&reg, &ctx, "find_circuits", json!({"query": "LP-1 #3"}))
        .await
        .unwrap();
    assert_eq!(v["circuits"][0]["description"], "Shop heater");
    let v = call(
        &reg,
        &ctx,
        "find_circuits",
        json!({"query": "circuit 5 in LP-1"}),
    )
    .await
    .unwrap();
    assert_eq!(v["circuits"][0]["description"], "Barn lights");
    let v = call(
        &reg,
        &ctx,
        "find_circuits",
        json!({"query": "kitchen outlets"}),
    )
    .await
    .unwrap();
    assert_eq!(v["circuits"][0]["number"], 1);
    let v = call(
        &reg,
        &ctx,
        "find_circuits",
        json!({"selector": "longest", "limit": 2}),
    )
    .await
    .unwrap();
    assert_eq!(v["circuits"][0]["description"], "Barn lights");
    assert!(
        v["notes"].to_string().contains("no recorded length"),
        "{v:#}"
    );
    let v = call(
        &reg,
        &ctx,
        "find_circuits",
        json!({"selector": "worst_voltage_drop"}),
    )
    .await
    .unwrap();
    assert_eq!(v["circuits"][0]["description"], "Barn lights");
    let v = call(
        &reg,
        &ctx,
        "find_circuits",
        json!({"selector": "highest_load", "panel": "LP-1"}),
    )
    .await
    .unwrap();
    assert_eq!(v["circuits"][0]["description"], "EV charger garage");
    let v = call(
        &reg,
        &ctx,
        "find_circuits",
        json!({"selector": "missing_length"}),
    )
    .await
    .unwrap();
    assert_eq!(v["matched"], 1);
    assert_eq!(v["circuits"][0]["description"], "Water heater");

    let v = call(&reg, &ctx, "describe_panel", json!({"panel": "lp-1"}))
        .await
        .unwrap();
    assert_eq!(v["circuit_count"], 6);
    assert_eq!(v["next_free_circuit"], 10);
    assert_eq!(v["spare_spaces"], 33);
    assert_eq!(v["fault_current"]["available_fault_ka"], 22.0);
    assert_eq!(v["fault_current"]["interrupting_check"]["pass"], false);
    assert_eq!(v["feeds"][0], "LP-2");
    let phases = v["loading"]["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 3);
    let ev = v["schedule"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["number"] == 7)
        .unwrap();
    assert_eq!(ev["slots"], json!([7, 9]));
    assert_eq!(ev["phases"], "AB");
}
