//! Write tools: a preview changes nothing; executing changes exactly what the preview showed.
//! The main test runs on SQLite and Postgres; the error cases on SQLite.

use crate::support::db;
use crate::tools_fixture;

use db::TestDb;
use serde_json::{json, Value};
use sparky::nec::units::{
    Amps, ConductorSize, Feet, Material, Phase, TempRating, VoltAmperes, Volts,
};
use sparky::project::{
    Circuit, CircuitSpec, Feeder, FeederSpec, Panel, PanelSpec, ProjectData, ServiceSpec,
    Transformer, TransformerSpec,
};
use sparky::store::Store;
use sparky::tools::{RegisteredTool, ToolRegistry};
use tools_fixture::{call, call_err, ctx, preview, registry, seed, sqlite};

/// Previews, checks nothing changed, executes, and returns (preview text, before, after, result).
async fn preview_then_execute(
    reg: &ToolRegistry,
    ctx: &tools_fixture::Ctx,
    store: &dyn Store,
    id: i64,
    name: &str,
    args: Value,
) -> (String, ProjectData, ProjectData, Value) {
    let before = store.load_project(id).await.unwrap();
    let p = preview(reg, ctx, name, args.clone()).await.unwrap();
    let text = format!("{}\n{}", p.summary, p.details.join("\n"));
    assert_eq!(
        store.load_project(id).await.unwrap(),
        before,
        "{name}: the preview must not change anything"
    );
    let result = call(reg, ctx, name, args).await.unwrap();
    let after = store.load_project(id).await.unwrap();
    (text, before, after, result)
}

fn sort_circuits(p: &mut ProjectData) {
    p.circuits.sort_by_key(|c| (c.panel_id, c.spec.number));
}

async fn write_tools_change_exactly_what_the_preview_showed(db: TestDb) {
    let store = db.store();
    let id = seed(&store, "Shop").await;
    let (reg, ctx) = (registry(), ctx(store.clone(), id));
    let lp1 = store
        .load_project(id)
        .await
        .unwrap()
        .panel_by_name("LP-1")
        .unwrap()
        .clone();

    // add_circuit with number, breaker and conductor left to the engine.
    let (text, before, after, result) = preview_then_execute(
        &reg,
        &ctx,
        store.as_ref(),
        id,
        "add_circuit",
        json!({"panel": "LP-1", "description": "Heat pump", "load_va": 6000, "poles": 2,
               "continuous": true, "length": 80, "conduit": "3/4 PVC, #10 EGC"}),
    )
    .await;
    for needle in [
        "Add circuit LP-1 #10 (Heat pump) (2-pole): 6000 VA continuous, 40 A breaker",
        "Breaker 40 A, conductor 8 AWG copper, 80 ft, 3/4 PVC, #10 EGC",
        "breaker 40 A suggested",
        "conductor 8 AWG copper suggested",
        "circuit number 10: the next free space",
        "Conductor check: 8 AWG copper on 40 A passes",
        "Minimum EGC (250.122): 10 AWG copper",
        "Voltage drop:",
        "Panel after: LP-1: highest phase",
        "next free circuit number after: 11",
    ] {
        assert!(
            text.contains(needle),
            "missing '{needle}' in preview:\n{text}"
        );
    }
    let new_id = result["added"]["id"].as_i64().unwrap();
    let mut expected = before.clone();
    expected.circuits.push(Circuit {
        id: new_id,
        panel_id: lp1.id,
        spec: CircuitSpec {
            number: 10,
            poles: 2,
            description: "Heat pump".into(),
            load_va: VoltAmperes(6000.0),
            continuous: true,
            breaker: Amps(40.0),
            conductor_size: Some(ConductorSize::Awg(8)),
            material: Material::Copper,
            insulation: TempRating::C75,
            length: Some(Feet(80.0)),
            conduit: "3/4 PVC, #10 EGC".into(),
            motor: None,
            appliance: None,
        },
    });
    sort_circuits(&mut expected);
    assert_eq!(after, expected);

    // update_circuit by description words: before -> after per field.
    let (text, before, after, _) = preview_then_execute(
        &reg,
        &ctx,
        store.as_ref(),
        id,
        "update_circuit",
        json!({"find": "the shop heater", "changes": {"breaker": 20, "length": 35}}),
    )
    .await;
    assert!(text.contains("Update LP-1 #3 (Shop heater)"), "{text}");
    assert!(text.contains("breaker: 30 A -> 20 A"), "{text}");
    assert!(text.contains("length: 30 ft -> 35 ft"), "{text}");
    assert!(
        !text.contains("description:"),
        "unchanged fields are not listed: {text}"
    );
    assert!(
        text.contains("Conductor check: 12 AWG copper on 20 A passes"),
        "{text}"
    );
    let mut expected = before.clone();
    let c = expected
        .circuits
        .iter_mut()
        .find(|c| c.spec.description == "Shop heater")
        .unwrap();
    c.spec.breaker = Amps(20.0);
    c.spec.length = Some(Feet(35.0));
    assert_eq!(after, expected);

    // remove_circuit by panel and number.
    let (text, before, after, _) = preview_then_execute(
        &reg,
        &ctx,
        store.as_ref(),
        id,
        "remove_circuit",
        json!({"panel": "LP-1", "number": 5}),
    )
    .await;
    assert!(
        text.contains("Remove circuit LP-1 #5 (Barn lights)"),
        "{text}"
    );
    assert!(text.contains("next free circuit number after: 5"), "{text}");
    let mut expected = before.clone();
    expected
        .circuits
        .retain(|c| c.spec.description != "Barn lights");
    assert_eq!(after, expected);

    // add_panel: the preview shows the fault current against its rating.
    let spec = PanelSpec {
        name: "LP-3".into(),
        voltage: Volts(208.0),
        phase: Phase::Three,
        bus_rating: Amps(100.0),
        main_breaker: Some(Amps(100.0)),
        interrupting_rating_ka: Some(10.0),
        fed_from: Some("LP-1".into()),
        spaces: 42,
        location: String::new(),
    };
    let (text, before, after, result) = preview_then_execute(
        &reg,
        &ctx,
        store.as_ref(),
        id,
        "add_panel",
        json!({"name": "LP-3", "voltage": 208, "phase": 3, "bus_rating": 100, "main_breaker": 100,
               "interrupting_rating_ka": 10, "fed_from": "LP-1"}),
    )
    .await;
    assert!(
        text.contains(
            "Add panel LP-3: 208 V 3-phase, 100 A bus, 100 A main, 42 spaces, 10 kA, fed from LP-1"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "WARNING: available fault current at LP-3 is 22.0 kA, above its 10 kA rating"
        ),
        "{text}"
    );
    assert!(text.contains("3 panel(s): LP-1, LP-2, LP-3"), "{text}");
    let mut expected = before.clone();
    expected.panels.push(Panel {
        id: result["added"]["id"].as_i64().unwrap(),
        project_id: id,
        spec,
    });
    assert_eq!(after, expected);

    // set_service: before -> after and the checks downstream.
    let service = ServiceSpec {
        voltage: Volts(208.0),
        phase: Phase::Three,
        rating: Amps(400.0),
        available_fault_ka: Some(9.0),
        notes: "utility letter 2024-05".into(),
    };
    let (text, before, after, _) = preview_then_execute(
        &reg,
        &ctx,
        store.as_ref(),
        id,
        "set_service",
        serde_json::to_value(&service).unwrap(),
    )
    .await;
    assert!(
        text.contains("Before: 208 V 3-phase, 400 A, 22 kA available"),
        "{text}"
    );
    assert!(
        text.contains("After: 208 V 3-phase, 400 A, 9 kA available"),
        "{text}"
    );
    assert!(
        text.contains("Available fault current at LP-1: 9.0 kA; its 10 kA rating is sufficient"),
        "{text}"
    );
    let mut expected = before.clone();
    expected.service = Some(service);
    assert_eq!(after, expected);

    // add_feeder and add_transformer.
    let feeder = FeederSpec {
        name: "F1".into(),
        from: "service".into(),
        to: "LP-1".into(),
        conductor_size: ConductorSize::Awg(-2),
        material: Material::Copper,
        insulation: TempRating::C75,
        sets: 1,
        length: Some(Feet(100.0)),
        ocpd: Amps(200.0),
        raceway: None,
        egc_size: None,
        c_value: None,
        impedance_ohms_per_1000ft: None,
    };
    let (text, before, after, result) = preview_then_execute(
        &reg,
        &ctx,
        store.as_ref(),
        id,
        "add_feeder",
        serde_json::to_value(&feeder).unwrap(),
    )
    .await;
    assert!(
        text.contains("Add feeder F1: service -> LP-1, 1 × 3/0 AWG copper, 200 A OCPD, 100 ft"),
        "{text}"
    );
    assert!(text.contains("Ampacity 200 A"), "{text}");
    assert!(text.contains("Voltage drop at the load of LP-1"), "{text}");
    let mut expected = before.clone();
    expected.feeders.push(Feeder {
        id: result["added"]["id"].as_i64().unwrap(),
        project_id: id,
        spec: feeder,
    });
    expected.feeders.sort_by_key(|f| f.id);
    assert_eq!(after, expected);

    let t = TransformerSpec {
        name: "T1".into(),
        kva: 45.0,
        primary_voltage: Volts(208.0),
        secondary_voltage: Volts(480.0),
        phase: Phase::Three,
        impedance_percent: 3.5,
        fed_from: Some("LP-1".into()),
    };
    let (text, before, after, result) = preview_then_execute(
        &reg,
        &ctx,
        store.as_ref(),
        id,
        "add_transformer",
        serde_json::to_value(&t).unwrap(),
    )
    .await;
    assert!(
        text.contains("Available fault current at the secondary: 1.5 kA"),
        "{text}"
    );
    let mut expected = before.clone();
    expected.transformers.push(Transformer {
        id: result["added"]["id"].as_i64().unwrap(),
        project_id: id,
        spec: t,
    });
    assert_eq!(after, expected);
}

db::both_backends!(write_tools_change_exactly_what_the_preview_showed);

#[tokio::test]
async fn bad_writes_are_refused_with_a_reason_and_change_nothing() {
    let (store, _dir) = sqlite().await;
    let id = seed(&store, "Shop").await;
    let (reg, ctx) = (registry(), ctx(store.clone(), id));
    let before = store.load_project(id).await.unwrap();
    let cases: Vec<(&str, Value, &[&str])> = vec![
        (
            "add_circuit",
            json!({"panel": "LP-9", "description": "x", "load_va": 100}),
            &["no panel named 'LP-9'"],
        ),
        (
            "add_circuit",
            json!({"panel": "LP-1", "number": 3, "description": "x", "load_va": 100, "breaker": 20}),
            &[
                "slot 3 of LP-1 is taken by LP-1 #3 (Shop heater)",
                "next free circuit number: 10",
            ],
        ),
        (
            "add_circuit",
            json!({"panel": "LP-1", "number": 41, "poles": 2, "description": "x", "load_va": 100, "breaker": 20}),
            &["slot 43 is outside LP-1's 42 spaces"],
        ),
        (
            "add_circuit",
            json!({"panel": "LP-1", "description": "x", "load_va": -5, "breaker": 20}),
            &["load_va"],
        ),
        (
            "add_circuit",
            json!({"panel": "LP-1", "description": "x", "load_va": 100, "breaker": 20, "conductor_size": "2500 kcmil"}),
            &["310.16", "2500"],
        ),
        (
            "add_circuit",
            json!({"panel": "LP-1", "description": "x", "load_va": 100, "poles": 4}),
            &["poles"],
        ),
        (
            "add_circuit",
            json!({"panel": "LP-1", "description": "x", "load_va": 0}),
            &["breaker"],
        ),
        (
            "add_circuit",
            json!({"panel": "LP-1", "description": "x", "load_va": 100, "breaker": 20, "colour": "red"}),
            &["colour"],
        ),
        (
            "update_circuit",
            json!({"panel": "LP-1", "number": 3}),
            &["nothing changes for LP-1 #3"],
        ),
        (
            "update_circuit",
            json!({"panel": "LP-1", "number": 3, "changes": {"number": 7}}),
            &["slot 7", "EV charger"],
        ),
        (
            "update_circuit",
            json!({"find": "heater", "changes": {"breaker": 20}}),
            &["Shop heater", "Water heater"],
        ),
        (
            "remove_circuit",
            json!({"panel": "LP-1", "number": 99}),
            &["LP-1 has no circuit 99"],
        ),
        (
            "add_panel",
            json!({"name": "lp-1", "voltage": 208, "phase": 3, "bus_rating": 100}),
            &["already has a panel named LP-1"],
        ),
        (
            "add_panel",
            json!({"name": "LP-4", "voltage": 208, "phase": 3, "bus_rating": 100, "fed_from": "MDP"}),
            &["'MDP'", "service, LP-1, LP-2"],
        ),
        (
            "add_panel",
            json!({"name": "LP-4", "voltage": -208, "phase": 3, "bus_rating": 0}),
            &["voltage", "bus_rating"],
        ),
        (
            "set_service",
            json!({"voltage": 208, "phase": 3, "rating": 400, "available_fault_ka": 0}),
            &["available_fault_ka"],
        ),
        (
            "add_feeder",
            json!({"name": "F9", "from": "service", "to": "LP-7", "conductor_size": "3/0", "ocpd": 200}),
            &["'LP-7'"],
        ),
        (
            "add_transformer",
            json!({"name": "T9", "kva": 45, "primary_voltage": 480, "secondary_voltage": 208, "phase": 3, "impedance_percent": 0}),
            &["impedance_percent"],
        ),
    ];
    for (name, args, needles) in cases {
        let p = reg.validate(name, &args.to_string());
        let e = match p {
            Err(e) => e.to_string(),
            Ok(c) => match match c.tool {
                RegisteredTool::Write(t) => t.plan(&c.args, &ctx).await.map(|p| p.preview),
                RegisteredTool::Read(_) => panic!("{name} must be a write tool"),
            } {
                Err(e) => {
                    // Running it through the fixture refuses the same way.
                    let e2 = call_err(&reg, &ctx, name, args.clone()).await;
                    assert_eq!(e.to_string(), e2);
                    e.to_string()
                }
                Ok(p) => panic!("{name} {args} should be refused, previewed {p:?}"),
            },
        };
        for n in needles {
            assert!(e.contains(n), "{name} {args}: '{n}' not in: {e}");
        }
    }
    assert_eq!(store.load_project(id).await.unwrap(), before);
}

/// An EV charger given only its breaker is the most that breaker may carry continuously
/// (625.41), marked continuous and recorded as an EVSE for the load calculations.
#[tokio::test]
async fn an_ev_charger_given_its_breaker_is_loaded_from_it() {
    let (store, _dir) = sqlite().await;
    let id = seed(&store, "Shop").await;
    let (reg, ctx) = (registry(), ctx(store.clone(), id));
    let (text, _, after, result) = preview_then_execute(
        &reg,
        &ctx,
        store.as_ref(),
        id,
        "add_circuit",
        json!({"panel": "LP-1", "description": "EV charger", "poles": 2, "breaker": 40,
               "appliance": {"kind": "evse"}}),
    )
    .await;
    // LP-1 is 208Y/120 V, a 2-pole load across 208 V: 40 A / 1.25 = 32 A, × 208 V = 6,656 VA.
    assert!(text.contains("load: 6656 VA (32 A × 208 V)"), "{text}");
    assert!(text.contains("625.41"), "{text}");
    let new_id = result["added"]["id"].as_i64().unwrap();
    let c = after.circuits.iter().find(|c| c.id == new_id).unwrap();
    assert_eq!(c.spec.load_va, VoltAmperes(6656.0));
    assert!(c.spec.continuous);
    assert_eq!(c.spec.breaker, Amps(40.0));
    let a = c.spec.appliance.unwrap();
    assert_eq!(a.kind, sparky::project::ApplianceKind::Evse);
    assert_eq!(a.va, VoltAmperes(6656.0));
    // Without a breaker or a nameplate there is nothing to size it from.
    let e = call_err(
        &reg,
        &ctx,
        "add_circuit",
        json!({"panel": "LP-1", "description": "EV charger", "poles": 2,
               "appliance": {"kind": "evse"}}),
    )
    .await;
    assert!(e.contains("EV charger needs its nameplate"), "{e}");
}
