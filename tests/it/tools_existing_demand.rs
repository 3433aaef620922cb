//! `calculate_existing_dwelling_load_from_demand` (220.87) through the shipped registry, on
//! SQLite and Postgres: published examples as free inputs, then a house project whose service
//! and EV charger circuit are used, in each edition (the 2020/2023 exclusion of renewables).

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

/// r/MEPEngineering "Determining Existing Electrical Service Load" (3000 A 208 V 3-phase,
/// 440 kW peak at 0.85 PF × 1.25 + 339 kVA = 986 kVA of 1081 kVA) and Ampscale's 800 A panel
/// whose busiest 15 minutes reach 480 A (600 A at 125 %, 200 A left).
async fn published_examples(db: TestDb) {
    let reg = registry();
    let ctx = free(db.store());
    let v = call(
        &reg,
        &ctx,
        "calculate_existing_dwelling_load_from_demand",
        json!({"monthly_peaks": [440, 440, 440, 440, 440, 440, 440, 440, 440, 440, 440, 440],
               "power_factor": 0.85, "voltage": 208, "phase": 3, "service_rating": 3000,
               "new_loads": [{"description": "rooftop units", "va": 339000}]}),
    )
    .await
    .unwrap();
    let kva = f(&v["total_a"]) * 208.0 * 3f64.sqrt() / 1000.0;
    assert!((kva - 986.1).abs() < 0.2, "{kva} kVA: {v:#}");
    assert_eq!(v["adequate"], true);
    assert!(v["verdict"].as_str().unwrap().starts_with("adequate"));
    let v = call(
        &reg,
        &ctx,
        "calculate_existing_dwelling_load_from_demand",
        json!({"recorded_peak": 480, "recorded_days": 365, "demand_unit": "a",
               "voltage": 480, "phase": 3, "service_rating": 800}),
    )
    .await
    .unwrap();
    assert_eq!(f(&v["existing_125pct_a"]), 600.0, "{v:#}");
    assert_eq!(f(&v["spare_a"]), 200.0);
    assert!(v["data_basis"].as_str().unwrap().contains("365-day"));
}

/// A house on a 120/240 V 100 A service with a 40 A EV charger circuit being added.
async fn house(store: &Arc<dyn Store>, edition: Edition) -> i64 {
    let p = store
        .create_project(
            &Workspace::local(),
            &format!("Bills house {}", edition.year()),
            edition,
        )
        .await
        .expect("project");
    store
        .set_service(
            p.id,
            &ServiceSpec {
                voltage: Volts(240.0),
                phase: Phase::Single,
                rating: Amps(100.0),
                available_fault_ka: None,
                notes: String::new(),
            },
        )
        .await
        .expect("service");
    let hp = store
        .add_panel(
            p.id,
            &PanelSpec {
                name: "HP".into(),
                voltage: Volts(240.0),
                phase: Phase::Single,
                bus_rating: Amps(100.0),
                main_breaker: Some(Amps(100.0)),
                interrupting_rating_ka: Some(10.0),
                fed_from: Some("service".into()),
                spaces: 24,
                location: "garage".into(),
            },
        )
        .await
        .expect("panel");
    store
        .add_circuit(
            hp.id,
            &circuit(11, 2, "EV charger", 7680.0, 40.0, Some("8"), Some(30.0)),
        )
        .await
        .expect("circuit");
    p.id
}

/// Twelve monthly peaks (kW) from the bills: the July peak 9.6 kW = 40 A × 1.25 = 50 A, plus
/// the recorded 7680 VA charger (32 A) = 82 A on the 100 A service. With PV on the service,
/// 2020 and 2023 refuse the method; 2017 allows it.
async fn project_service_and_circuit(db: TestDb) {
    let store = db.store();
    let reg = registry();
    let peaks = json!([6.2, 5.9, 5.1, 4.8, 6.0, 8.4, 9.6, 9.1, 7.0, 5.0, 5.5, 6.3]);
    for edition in Edition::ALL {
        let id = house(&store, edition).await;
        let ctx = ctx(store.clone(), id);
        let v = call(
            &reg,
            &ctx,
            "calculate_existing_dwelling_load_from_demand",
            json!({"monthly_peaks": peaks, "new_circuits": ["EV charger"],
                   "renewable_or_peak_shaving": false}),
        )
        .await
        .unwrap();
        assert_eq!(f(&v["maximum_month"]), 7.0, "{v:#}");
        assert_eq!(f(&v["existing_a"]), 40.0);
        assert_eq!(f(&v["existing_125pct_a"]), 50.0);
        assert_eq!(f(&v["new_load_a"]), 32.0);
        assert_eq!(f(&v["total_a"]), 82.0);
        assert_eq!(f(&v["limit_a"]), 100.0);
        assert_eq!(v["adequate"], true);
        assert_eq!(
            v["new_circuits"][0], "HP #11 (EV charger) (2-pole)",
            "{v:#}"
        );
        let v = call(
            &reg,
            &ctx,
            "calculate_existing_dwelling_load_from_demand",
            json!({"monthly_peaks": peaks, "new_circuits": ["EV charger"],
                   "renewable_or_peak_shaving": true}),
        )
        .await
        .unwrap();
        let permitted = edition == Edition::Nec2017;
        assert_eq!(v["permitted"], permitted, "{edition}: {v:#}");
        if !permitted {
            assert_eq!(v["adequate"], Value::Null);
            assert!(v["verdict"].as_str().unwrap().contains("does not permit"));
        }
    }
}

/// Data that is not a year or 30 days of demand, and missing service data, are refused with
/// what to give.
async fn errors(db: TestDb) {
    let reg = registry();
    let ctx = free(db.store());
    for (args, want) in [
        (
            json!({"monthly_peaks": [5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5], "service_rating": 100}),
            "12 monthly peaks",
        ),
        (
            json!({"recorded_peak": 30, "recorded_days": 14, "service_rating": 100}),
            "30 days",
        ),
        (
            json!({"recorded_peak": 30, "service_rating": 100}),
            "recorded_days",
        ),
        (
            json!({"recorded_peak": 30, "recorded_days": 30, "interval_minutes": 60, "service_rating": 100}),
            "15-minute",
        ),
        (
            json!({"monthly_peaks": [5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5]}),
            "service_rating",
        ),
        (json!({"service_rating": 100}), "monthly_peaks"),
        (
            json!({"monthly_peaks": [5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5], "service_rating": 100, "power_factor": 1.5}),
            "power_factor",
        ),
        (
            json!({"monthly_peaks": [5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5], "service_rating": 100, "new_circuits": ["EV"]}),
            "project",
        ),
    ] {
        let e = call_err(
            &reg,
            &ctx,
            "calculate_existing_dwelling_load_from_demand",
            args.clone(),
        )
        .await;
        assert!(e.contains(want), "{args}: {e}");
    }
}

db::both_backends!(published_examples, project_service_and_circuit, errors);
