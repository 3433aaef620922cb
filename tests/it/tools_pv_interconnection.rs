//! `check_pv_interconnection` through the shipped registry, on SQLite and Postgres: published
//! examples as free inputs in each edition, then a house project whose main panel (bus rating,
//! main breaker, circuit breakers and the recorded PV breaker) feeds every option.

use crate::support::db;
use crate::tools_fixture::{call, call_err, circuit, ctx, registry, Ctx};

use db::TestDb;
use serde_json::{json, Value};
use sparky::nec::units::{Amps, Edition, Phase, Volts};
use sparky::project::{PanelSpec, ServiceSpec, Workspace};
use sparky::store::Store;
use std::sync::Arc;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn free(store: Arc<dyn Store>) -> Ctx {
    let mut c = ctx(store, 0);
    c.project_id = None;
    c
}

/// The option whose name starts with `prefix`.
fn option<'a>(v: &'a Value, prefix: &str) -> &'a Value {
    v["options"]
        .as_array()
        .expect("options")
        .iter()
        .find(|o| o["option"].as_str().unwrap_or("").starts_with(prefix))
        .unwrap_or_else(|| panic!("no option {prefix} in {v:#}"))
}

/// NABCEP PVIP sample question 22 and Solar Design Lab (200 A busbar and main: 32 A inverter,
/// 40 A breaker), IAEI Magazine "It's Always the Basics" (7.6 kW at 240 V needs a 40 A
/// breaker) and unanswered.io (225 A busbar, 200 A main: 70 A, 56 A), as a person asks them;
/// the section follows the edition argument.
async fn published_examples_free_inputs(db: TestDb) {
    let reg = registry();
    let ctx = free(db.store());
    for (edition, section) in [
        (2017, "705.12(B)(2)(3)(b)"),
        (2020, "705.12(B)(3)(2)"),
        (2023, "705.12(B)(2)"),
    ] {
        let v = call(
            &reg,
            &ctx,
            "check_pv_interconnection",
            json!({"busbar_rating": 200, "main_breaker": 200, "inverters": [{"kw": 7.6}],
                   "pv_breaker_position": "opposite_end", "edition": edition}),
        )
        .await
        .unwrap();
        assert_eq!(v["edition"], edition.to_string(), "{v:#}");
        assert_eq!(v["edition_basis"], "the edition argument");
        assert_eq!(f(&v["pv_breakers"][0]["min_breaker_a"]), 40.0);
        let o = option(&v, "120");
        assert_eq!(o["passes"], true, "{v:#}");
        assert!(o["reference"].as_str().unwrap().ends_with(section), "{o}");
        assert_eq!(f(&o["max_pv_breaker_a"]), 40.0);
        assert_eq!(f(&o["max_inverter_output_a"]), 32.0);
        assert_eq!(option(&v, "100")["passes"], false);
        // Not stated: the sum of breakers needs the breakers, the center-fed option a center
        // feed; neither is decided.
        assert_eq!(option(&v, "sum")["passes"], Value::Null);
        assert_eq!(option(&v, "center")["applies"], false);
        assert!(v["code_in_force"].is_object());
    }
    let v = call(
        &reg,
        &ctx,
        "check_pv_interconnection",
        json!({"busbar_rating": 225, "main_breaker": 200, "inverters": [{"output_a": 56}],
               "pv_breaker_position": "opposite_end"}),
    )
    .await
    .unwrap();
    let o = option(&v, "120");
    assert_eq!(o["passes"], true);
    assert_eq!(f(&o["max_pv_breaker_a"]), 70.0);
    assert_eq!(f(&o["max_inverter_output_a"]), 56.0);
    // Without an inverter: the limits only ("biggest solar breaker on a 225 bus, 200 main").
    let v = call(
        &reg,
        &ctx,
        "check_pv_interconnection",
        json!({"busbar_rating": 225, "main_breaker": 200}),
    )
    .await
    .unwrap();
    let o = option(&v, "120");
    assert_eq!(o["passes"], Value::Null, "{v:#}");
    assert_eq!(f(&o["max_pv_breaker_a"]), 70.0);
    assert!(v["verdict"]
        .as_str()
        .unwrap()
        .starts_with("no inverter given"));
    // A PV breaker next to the main gets no 120 % allowance.
    let v = call(
        &reg,
        &ctx,
        "check_pv_interconnection",
        json!({"busbar_rating": 225, "main_breaker": 200, "inverters": [{"output_a": 56}],
               "pv_breaker_position": "other"}),
    )
    .await
    .unwrap();
    assert_eq!(option(&v, "120")["applies"], false);
    assert!(v["verdict"]
        .as_str()
        .unwrap()
        .starts_with("no load-side option"));
    // Center-fed dwelling panel: 120 % with the PV breaker at one end.
    let v = call(
        &reg,
        &ctx,
        "check_pv_interconnection",
        json!({"busbar_rating": 200, "main_breaker": 200, "inverters": [{"output_a": 30}],
               "main_position": "center", "pv_breaker_position": "opposite_end",
               "dwelling": true, "edition": 2020}),
    )
    .await
    .unwrap();
    let o = option(&v, "center");
    assert_eq!(o["passes"], true, "{v:#}");
    assert!(o["reference"]
        .as_str()
        .unwrap()
        .ends_with("705.12(B)(3)(4)"));
}

/// A 120/240 V house: 200 A service, main panel MSP (200 A bus, 200 A main) with its circuits
/// and a 40 A PV backfeed breaker; and a main-lug subpanel.
async fn house(store: &Arc<dyn Store>) -> i64 {
    let p = store
        .create_project(&Workspace::local(), "Solar house", Edition::Nec2020)
        .await
        .expect("project");
    store
        .set_service(
            p.id,
            &ServiceSpec {
                voltage: Volts(240.0),
                phase: Phase::Single,
                rating: Amps(200.0),
                available_fault_ka: Some(10.0),
                notes: String::new(),
            },
        )
        .await
        .expect("service");
    let panel = |name: &str, main: Option<f64>| PanelSpec {
        name: name.into(),
        voltage: Volts(240.0),
        phase: Phase::Single,
        bus_rating: Amps(200.0),
        main_breaker: main.map(Amps),
        interrupting_rating_ka: Some(10.0),
        fed_from: Some("service".into()),
        spaces: 40,
        location: "garage".into(),
    };
    let msp = store
        .add_panel(p.id, &panel("MSP", Some(200.0)))
        .await
        .expect("panel");
    store
        .add_panel(p.id, &panel("SUB", None))
        .await
        .expect("panel");
    for c in [
        circuit(
            1,
            1,
            "Kitchen receptacles",
            1500.0,
            20.0,
            Some("12"),
            Some(30.0),
        ),
        circuit(
            3,
            1,
            "Bath receptacles",
            1500.0,
            20.0,
            Some("12"),
            Some(30.0),
        ),
        circuit(5, 2, "Dryer", 5500.0, 30.0, Some("10"), Some(30.0)),
        circuit(7, 2, "Range", 12000.0, 50.0, Some("6"), Some(25.0)),
        circuit(9, 2, "PV backfeed", 7600.0, 40.0, Some("8"), Some(40.0)),
    ] {
        store.add_circuit(msp.id, &c).await.expect("circuit");
    }
    p.id
}

/// The project's panel supplies the bus rating, the main and the breakers for the sum rule
/// (the recorded PV breaker counted as the source, not as a load).
async fn project_panel(db: TestDb) {
    let store = db.store();
    let id = house(&store).await;
    let reg = registry();
    let ctx = ctx(store, id);
    let v = call(
        &reg,
        &ctx,
        "check_pv_interconnection",
        json!({"panel": "MSP", "pv_circuit": "PV backfeed", "inverters": [{"output_a": 32}],
               "pv_breaker_position": "opposite_end"}),
    )
    .await
    .unwrap();
    assert_eq!(f(&v["busbar_rating_a"]), 200.0, "{v:#}");
    assert_eq!(f(&v["main_breaker_a"]), 200.0);
    assert_eq!(f(&v["pv_breakers"][0]["breaker_a"]), 40.0);
    assert_eq!(v["pv_breakers"][0]["breaker_ok"], true);
    assert_eq!(v["edition"], "2020");
    assert_eq!(
        v["edition_basis"],
        "the code in force for the project (see code_in_force)"
    );
    // Loads 20 + 20 + 30 + 50 = 120 A, plus the 40 A PV breaker = 160 A ≤ 200 A.
    let s = option(&v, "sum");
    assert_eq!(f(&s["sum_a"]), 160.0, "{s}");
    assert_eq!(s["passes"], true);
    assert_eq!(f(&s["max_pv_breaker_a"]), 80.0);
    assert_eq!(option(&v, "120")["passes"], true);
    // 2017: the supply-side note compares the source breakers with the project's service.
    let v = call(
        &reg,
        &ctx,
        "check_pv_interconnection",
        json!({"panel": "MSP", "pv_circuit": "PV backfeed", "inverters": [{"output_a": 32}],
               "edition": "2017"}),
    )
    .await
    .unwrap();
    assert_eq!(v["supply_side"]["passes"], true, "{v:#}");
    assert_eq!(f(&v["supply_side"]["limit_a"]), 200.0);
    // A main-lug panel needs the OCPD protecting its busbar.
    let e = call_err(
        &reg,
        &ctx,
        "check_pv_interconnection",
        json!({"panel": "SUB", "inverters": [{"output_a": 16}]}),
    )
    .await;
    assert!(e.contains("main_breaker"), "{e}");
    let e = call_err(
        &reg,
        &ctx,
        "check_pv_interconnection",
        json!({"panel": "NOPE", "inverters": [{"output_a": 16}]}),
    )
    .await;
    assert!(e.contains("NOPE"), "{e}");
}

/// Bad input gets a clear error naming what to give.
async fn errors(db: TestDb) {
    let reg = registry();
    let ctx = free(db.store());
    for (args, want) in [
        (json!({"inverters": [{"output_a": 32}]}), "busbar_rating"),
        (
            json!({"busbar_rating": 200, "main_breaker": 200, "inverters": [{"output_a": 32, "kw": 7.6}]}),
            "not both",
        ),
        (
            json!({"busbar_rating": 200, "main_breaker": 200, "inverters": [{}]}),
            "output_a",
        ),
        (
            json!({"busbar_rating": 200, "main_breaker": 200, "inverters": [{"output_a": -3}]}),
            "output_current",
        ),
        (
            json!({"busbar_rating": 200, "main_breaker": 200, "inverters": [{"output_a": 32}], "pv_size": 3}),
            "pv_size",
        ),
        (
            json!({"busbar_rating": 200, "main_breaker": 200, "inverters": [{"output_a": 32}], "edition": 2014}),
            "2014",
        ),
        (
            json!({"panel": "MSP", "inverters": [{"output_a": 32}]}),
            "project",
        ),
    ] {
        let e = call_err(&reg, &ctx, "check_pv_interconnection", args.clone()).await;
        assert!(e.contains(want), "{args}: {e}");
    }
}

db::both_backends!(published_examples_free_inputs, project_panel, errors);
