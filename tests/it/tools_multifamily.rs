//! `calculate_multifamily_load` through the shipped registry, on SQLite and Postgres: NEC Annex
//! D Examples D4(a) and D4(b) (and the 208Y/120 V D5(a), D5(b)) in each edition as a person
//! enters them, EC&M's 220.85 two-unit example, and an apartment project whose service is
//! compared.

use crate::support::db;
use crate::tools_fixture::{call, call_err, ctx, registry, Ctx};

use db::TestDb;
use serde_json::{json, Value};
use sparky::nec::units::{Amps, Edition, Phase, Volts};
use sparky::project::{ServiceSpec, Workspace};
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

/// Annex D4(b) units (840 ft², common laundry, 8 kW range, 6 kW heat, 2.5 kW water heater).
fn d4b(count: u32) -> Value {
    json!([{"description": "840 sq ft unit", "count": count, "floor_area_ft2": 840,
            "small_appliance_circuits": 2, "laundry_circuits": 0, "cooking_kw": [8],
            "appliances": [{"description": "water heater", "va": 2500}], "heating_va": 6000}])
}

/// Annex D Example D4(b), optional method: 20 units 38 % → 167 352 VA (697 A), 40 units 28 %
/// → 246 624 VA (1028 A); Example D4(a), standard method: a 20-unit bank with 10 ranges
/// 65 590 VA (273 A), the optional method not permitted. The lighting reference follows the
/// edition (2023 Table 220.45).
async fn annex_d4_every_edition(db: TestDb) {
    let reg = registry();
    let ctx = free(db.store());
    for edition in [2017, 2020, 2023] {
        let v = call(
            &reg,
            &ctx,
            "calculate_multifamily_load",
            json!({"units": d4b(20), "voltage": 240, "phase": 1, "edition": edition,
                   "single_feeder_per_unit": true}),
        )
        .await
        .unwrap();
        assert_eq!(f(&v["demand_factor"]), 0.38, "{v:#}");
        assert_eq!(f(&v["optional"]["total_va"]), 167_352.0);
        assert_eq!(f(&v["optional"]["amps"]), 697.3);
        assert_eq!(v["governing"]["method"], v["optional"]["method"]);
        let lighting = v["references"][0].as_str().unwrap();
        assert!(
            lighting.contains(if edition == 2023 {
                "Table 220.45"
            } else {
                "Table 220.42"
            }),
            "{lighting}"
        );
        let v = call(
            &reg,
            &ctx,
            "calculate_multifamily_load",
            json!({"units": d4b(40), "edition": edition}),
        )
        .await
        .unwrap();
        assert_eq!(f(&v["optional"]["total_va"]), 246_624.0, "{v:#}");
        assert_eq!(f(&v["optional"]["amps"]), 1027.6);
        assert_eq!(v["conditions"][0]["met"], Value::Null);

        let v = call(
            &reg,
            &ctx,
            "calculate_multifamily_load",
            json!({"units": [
                      {"description": "electric range", "count": 10, "floor_area_ft2": 840,
                       "laundry_circuits": 0, "cooking_kw": [8]},
                      {"description": "gas range", "count": 10, "floor_area_ft2": 840,
                       "laundry_circuits": 0}],
                   "voltage": 240, "edition": edition}),
        )
        .await
        .unwrap();
        assert_eq!(f(&v["standard"]["total_va"]), 65_590.0, "{v:#}");
        assert_eq!(f(&v["standard"]["amps"]), 273.3);
        assert_eq!(f(&v["standard"]["neutral_a"]), 229.4);
        assert_eq!(v["optional"], Value::Null);
        assert!(v["optional_not_permitted"]
            .as_str()
            .unwrap()
            .contains("220.84(A)(3)"));
    }
}

/// EC&M Part LVIII (220.85): two units on one feeder taken as three identical units, 141 696 VA
/// × 45 % = 63 763 VA, the lesser load.
async fn ecm_two_units(db: TestDb) {
    let reg = registry();
    let ctx = free(db.store());
    let v = call(
        &reg,
        &ctx,
        "calculate_multifamily_load",
        json!({"units": [{"count": 2, "floor_area_ft2": 1800, "cooking_kw": [12],
                          "dryer_w": [5000],
                          "appliances": [{"va": 2289}, {"va": 2289}, {"va": 2289}, {"va": 2289}],
                          "heating_va": 11176, "cooling_va": 5736}],
               "voltage": 240, "edition": 2017}),
    )
    .await
    .unwrap();
    assert_eq!(f(&v["optional"]["total_va"]), 63_763.0, "{v:#}");
    assert!(v["governing_why"].as_str().unwrap().contains("220.85"));
}

/// A 40-unit apartment project on a 208Y/120 V 800 A service: the D4(b) units by the optional
/// method need 685 A (Annex D5(b)), so the project's service is adequate; at 600 A it is not.
async fn project_service(db: TestDb) {
    let store = db.store();
    let p = store
        .create_project(&Workspace::local(), "Apartments", Edition::Nec2023)
        .await
        .expect("project");
    store
        .set_service(
            p.id,
            &ServiceSpec {
                voltage: Volts(208.0),
                phase: Phase::Three,
                rating: Amps(800.0),
                available_fault_ka: Some(35.0),
                notes: String::new(),
            },
        )
        .await
        .expect("service");
    let reg = registry();
    let ctx = ctx(store, p.id);
    let v = call(
        &reg,
        &ctx,
        "calculate_multifamily_load",
        json!({"units": d4b(40), "house_load_va": 0}),
    )
    .await
    .unwrap();
    assert_eq!(f(&v["governing"]["amps"]), 684.6, "{v:#}");
    assert_eq!(f(&v["service"]["rating_a"]), 800.0);
    assert_eq!(v["service"]["adequate"], true);
    assert_eq!(v["edition"], "2023");
    assert!(v["reviewer_checks"].to_string().contains("220.57"));
    let v = call(
        &reg,
        &ctx,
        "calculate_multifamily_load",
        json!({"units": d4b(40), "service_rating": 600, "house_load_va": 20000}),
    )
    .await
    .unwrap();
    assert_eq!(v["service"]["adequate"], false, "{v:#}");
    assert_eq!(
        f(&v["optional"]["total_va"]),
        246_624.0 + 20_000.0,
        "house load added"
    );
}

/// One unit, no units, a unit with one small-appliance circuit, unknown arguments: refused
/// with what to give.
async fn errors(db: TestDb) {
    let reg = registry();
    let ctx = free(db.store());
    for (args, want) in [
        (json!({"units": d4b(1)}), "one dwelling unit"),
        (json!({"units": []}), "unit_types"),
        (
            json!({"units": [{"count": 4, "floor_area_ft2": 900, "small_appliance_circuits": 1}]}),
            "small_appliance_circuits",
        ),
        (
            json!({"units": [{"count": 4, "floor_area_ft2": 0}]}),
            "floor_area_ft2",
        ),
        (json!({"units": d4b(4), "stories": 3}), "stories"),
    ] {
        let e = call_err(&reg, &ctx, "calculate_multifamily_load", args.clone()).await;
        assert!(e.contains(want), "{args}: {e}");
    }
}

db::both_backends!(
    annex_d4_every_edition,
    ecm_two_units,
    project_service,
    errors
);
