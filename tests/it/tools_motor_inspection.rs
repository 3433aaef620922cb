//! run_inspection judges a motor branch circuit by Article 430 (240.4(G)), not by the
//! 240.4(D) small-conductor limits, on SQLite and Postgres.
//!
//! Hand check from the NEC tables: a 2 hp, 230 V single-phase motor has a Table 430.248
//! full-load current of 12 A; 430.22 asks 125 % = 15 A, which 14 AWG copper carries in the
//! 60 °C column; Table 430.52 allows an inverse-time breaker of 250 % = 30 A (a standard
//! rating), and Exception No. 2 up to 400 % = 48 A where the motor will not start. A 3 hp
//! motor (17 A) needs 21.25 A of conductor, more than 14 AWG carries.

use crate::support::db;
use crate::tools_fixture::{call, circuit, ctx, registry};

use db::TestDb;
use serde_json::{json, Value};
use sparky::nec::tables::MotorOcpdType;
use sparky::nec::units::{Amps, Edition, Phase, Volts};
use sparky::project::{CircuitSpec, MotorLoad, PanelSpec, Workspace};

fn findings<'a>(v: &'a Value, equipment: &str) -> Vec<&'a Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["equipment"].as_str().unwrap().starts_with(equipment))
        .filter(|f| f["category"] == "conductors")
        .collect()
}

fn motor(
    number: i32,
    name: &str,
    hp: f64,
    breaker: f64,
    device: Option<MotorOcpdType>,
) -> CircuitSpec {
    let mut c = circuit(number, 2, name, 2760.0, breaker, Some("14"), None);
    c.motor = Some(MotorLoad {
        hp,
        phase: Phase::Single,
        voltage: Volts(230.0),
        device,
    });
    c
}

async fn motor_circuits_follow_article_430(db: TestDb) {
    let store = db.store();
    let p = store
        .create_project(&Workspace::local(), "Pump house", Edition::Nec2023)
        .await
        .expect("project");
    let mp = store
        .add_panel(
            p.id,
            &PanelSpec {
                name: "MP".into(),
                voltage: Volts(240.0),
                phase: Phase::Single,
                bus_rating: Amps(100.0),
                main_breaker: Some(Amps(100.0)),
                interrupting_rating_ka: Some(10.0),
                fed_from: Some("service".into()),
                spaces: 24,
                location: String::new(),
            },
        )
        .await
        .expect("panel");
    for c in [
        motor(1, "Well pump", 2.0, 25.0, None),
        motor(3, "Compressor", 2.0, 50.0, None),
        motor(5, "Sump pump", 2.0, 40.0, None),
        motor(7, "Blower", 3.0, 30.0, Some(MotorOcpdType::DualElementFuse)),
        // The same 14 AWG on 25 A without a motor: 240.4(D) applies.
        circuit(9, 2, "Heater", 2760.0, 25.0, Some("14"), None),
    ] {
        store.add_circuit(mp.id, &c).await.expect("circuit");
    }
    let reg = registry();
    let v = call(
        &reg,
        &ctx(store.clone(), p.id),
        "run_inspection",
        json!({"category": "conductors"}),
    )
    .await
    .unwrap();

    // 14 AWG on a 25 A breaker for the 2 hp motor: accepted.
    assert!(findings(&v, "MP #1 ").is_empty(), "{v:#}");

    // 50 A is above both 30 A and the 48 A Exception No. 2 ceiling.
    let f = findings(&v, "MP #3 ");
    assert_eq!(f.len(), 1, "{v:#}");
    assert_eq!(f[0]["check"], "conductor_protection");
    assert_eq!(f[0]["severity"], "violation");
    assert!(f[0]["reference"].as_str().unwrap().contains("430.52"));
    assert!(f[0]["fix"].as_str().unwrap().contains("30 A"), "{f:?}");

    // 40 A: only where the motor will not start on 30 A (Exception No. 2).
    let f = findings(&v, "MP #5 ");
    assert_eq!(f.len(), 1, "{v:#}");
    assert_eq!(f[0]["severity"], "warning");
    assert!(f[0]["message"]
        .as_str()
        .unwrap()
        .contains("Exception No. 2"));

    // 3 hp on 14 AWG: the conductor fails 430.22; the 30 A fuse is within 430.52
    // (175 % × 17 A = 29.75 A → 30 A).
    let f = findings(&v, "MP #7 ");
    assert_eq!(f.len(), 1, "{v:#}");
    assert_eq!(f[0]["check"], "branch_conductor_ampacity");
    assert_eq!(f[0]["severity"], "violation");
    assert!(f[0]["reference"].as_str().unwrap().contains("430.22"));
    assert!(f[0]["fix"].as_str().unwrap().contains("10 AWG"), "{f:?}");

    // No motor: 14 AWG on 25 A is a 240.4(D) violation.
    let f = findings(&v, "MP #9 ");
    assert!(
        f.iter()
            .any(|x| x["check"] == "small_conductor" && x["severity"] == "violation"),
        "{v:#}"
    );
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["check"] == "small_conductor")
        .all(|x| x["equipment"].as_str().unwrap().starts_with("MP #9 ")));

    // check_conductor_sizing on the same circuits answers by Article 430 too.
    let ctx = ctx(store.clone(), p.id);
    let v = call(
        &reg,
        &ctx,
        "check_conductor_sizing",
        json!({"panel": "MP", "number": 1}),
    )
    .await
    .unwrap();
    assert_eq!(v["pass"], true, "{v:#}");
    assert_eq!(v["flc_a"], 12.0);
    assert_eq!(v["max_device_a"], 30.0);
    assert!(v["rule"].as_str().unwrap().contains("240.4(G)"));
    let v = call(
        &reg,
        &ctx,
        "check_conductor_sizing",
        json!({"panel": "MP", "number": 3}),
    )
    .await
    .unwrap();
    assert_eq!(v["pass"], false, "{v:#}");
    // A breaker given in the question replaces the recorded one.
    let v = call(
        &reg,
        &ctx,
        "check_conductor_sizing",
        json!({"panel": "MP", "number": 3, "ocpd": 30}),
    )
    .await
    .unwrap();
    assert_eq!(v["pass"], true, "{v:#}");
}

db::both_backends!(motor_circuits_follow_article_430,);
