//! Box fill and raceway fill through the shipped tools, on SQLite and Postgres: published
//! worked examples (each named where it is used), the edition a bound project is designed to
//! deciding the 314.16(B)(5) EGC rule, and refused arguments.

use crate::support::db;
use crate::tools_fixture::{call, call_err, ctx, registry, Ctx};

use db::TestDb;
use serde_json::{json, Value};
use sparky::nec::units::Edition;
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

fn max_of(v: &Value, size: &str) -> u64 {
    v["max_conductors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["size"] == size)
        .unwrap_or_else(|| panic!("no {size} in {v:#}"))["empty_box"]
        .as_u64()
        .unwrap()
}

/// Box fill worked examples.
/// - Stallcup Electrical Education, "Sizing Round or Octagonal Boxes - Different Size
///   Conductors": two 12-2 w/ground NM cables, a fixture stud, two clamps, two pigtails, two
///   18 AWG fixture wires (no canopy): 18.75 in³, a 4 x 2-1/8 in. round/octagonal box.
/// - Mike Holt for EC&M, "Outlet Box Sizing": six 12 AWG THHN and three 12 AWG THW need the
///   4 x 1-1/2 in. square box (nine 12 AWG); a 4 x 1-1/2 in. round box holds seven 14 AWG.
/// - Mike Holt forum, "box volume" (G. Stolz): a 32.0 in³ two-gang box with two 14-2 and two
///   14-3 cables (with EGCs) and two switches counts 15 allowances, 30 in³.
async fn box_fill_worked_examples(db: TestDb) {
    let (reg, ctx) = (registry(), free(db.store()));
    let v = call(
        &reg,
        &ctx,
        "calculate_box_fill",
        json!({"conductors": [{"size": "12", "count": 4}, {"size": "12", "count": 2, "run": "internal"}],
               "egcs": [{"size": "12", "count": 2}], "support_fittings": 1, "internal_clamps": true,
               "fixture_wires": [{"size": "18", "count": 2}]}),
    )
    .await
    .unwrap();
    assert_eq!(f(&v["required_in3"]), 18.75, "{v:#}");
    assert_eq!(v["passes"], Value::Null);
    let round = v["smallest_standard_boxes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["key"].as_str().unwrap().starts_with("round"))
        .unwrap();
    assert_eq!(round["key"], "round_octagonal_4x2-1/8", "{v:#}");
    assert_eq!(v["code_in_force"]["calculated_with"], 2023);

    let nine_12 = json!([{"size": "12", "count": 9}]);
    let v = call(
        &reg,
        &ctx,
        "calculate_box_fill",
        json!({"box": "square_4x1-1/2", "conductors": nine_12}),
    )
    .await
    .unwrap();
    assert_eq!(v["passes"], true, "{v:#}");
    assert_eq!(f(&v["required_in3"]), 20.25);
    assert_eq!(max_of(&v, "12 AWG"), 9);
    let v = call(
        &reg,
        &ctx,
        "calculate_box_fill",
        json!({"box": "square_4x1-1/4", "conductors": nine_12}),
    )
    .await
    .unwrap();
    assert_eq!(v["passes"], false, "{v:#}");
    assert!(v["summary"].as_str().unwrap().starts_with("fails"));
    let v = call(
        &reg,
        &ctx,
        "calculate_box_fill",
        json!({"box": "round_octagonal_4x1-1/2", "conductors": [{"size": "14", "count": 7}]}),
    )
    .await
    .unwrap();
    assert_eq!(max_of(&v, "14 AWG"), 7);
    assert_eq!(v["passes"], true);

    let v = call(
        &reg,
        &ctx,
        "calculate_box_fill",
        json!({"box_volume_in3": 32.0, "conductors": [{"size": "14", "count": 10}],
               "egcs": [{"size": "14", "count": 4}],
               "devices": [{"description": "switch"}, {"description": "switch"}],
               "edition": "2020"}),
    )
    .await
    .unwrap();
    assert_eq!(f(&v["required_in3"]), 30.0, "{v:#}");
    assert_eq!(v["passes"], true);
    assert_eq!(f(&v["spare_in3"]), 2.0);
    // The yokes did not name their conductor: the result says which size it used.
    assert!(
        v["notes"].to_string().contains("largest in the box"),
        "{v:#}"
    );
}

/// The edition decides the EGC allowance: a project designed to 2017 counts ten EGCs once; one
/// designed to 2020 adds a quarter allowance for each beyond four (Mike Holt forum "EGC
/// Fill": five 14 and five 12 AWG EGCs, 2.5 allowances of 12 AWG = 5.625 in³).
async fn box_fill_edition_from_project(db: TestDb) {
    let store = db.store();
    let reg = registry();
    let args = json!({"egcs": [{"size": "14", "count": 5}, {"size": "12", "count": 5}],
                      "box": "square_4x2-1/8"});
    for (edition, want) in [(Edition::Nec2017, 2.25), (Edition::Nec2020, 5.625)] {
        let p = store
            .create_project(
                &sparky::project::Workspace::local(),
                &format!("Fill {}", edition.year()),
                edition,
            )
            .await
            .expect("project");
        let v = call(
            &reg,
            &ctx(store.clone(), p.id),
            "calculate_box_fill",
            args.clone(),
        )
        .await
        .unwrap();
        assert_eq!(f(&v["required_in3"]), want, "{edition}: {v:#}");
        assert_eq!(v["edition"]["used"], edition.year().to_string(), "{v:#}");
        // The argument overrides the project.
        let mut asked = args.clone();
        asked["edition"] = json!("2023");
        let v = call(&reg, &ctx(store.clone(), p.id), "calculate_box_fill", asked)
            .await
            .unwrap();
        assert_eq!(f(&v["required_in3"]), 5.625);
        assert_eq!(v["edition"]["why"], "asked for in the arguments");
    }
}

/// Raceway fill worked examples.
/// - EC&M "Code Calculations" (Mike Holt) Example 1: three 500 kcmil, one 250 kcmil and one
///   3 AWG THHN, 2.6162 in², need 3 in. Schedule 40 PVC (2.907 in² at 40 %). Example 2: a
///   rigid metal nipple with three 3/0, one 1 and one 6 AWG THHN, 1.0106 in², needs 1-1/2 in.
///   (1.243 in² at 60 %, the value the IEC Year 4 exam question prints).
/// - electricianmath.com check values: 1 in. EMT with six 10 AWG THW: 0.1458 in², 16.875 %
///   of 0.864 in², 0.346 in² usable.
/// - Mike Holt forum "Nipple fill 60%": 12 AWG THHN in 3 in. EMT, 266 at 40 % (Annex C Table
///   C.1), 399 in a nipple.
async fn raceway_fill_worked_examples(db: TestDb) {
    let (reg, ctx) = (registry(), free(db.store()));
    let v = call(
        &reg,
        &ctx,
        "calculate_raceway_fill",
        json!({"raceway": "pvc40", "conductors": [
            {"count": 3, "size": "500 kcmil", "insulation": "THHN"},
            {"count": 1, "size": "250 kcmil", "insulation": "THHN"},
            {"count": 1, "size": "3", "insulation": "THHN"}]}),
    )
    .await
    .unwrap();
    assert_eq!(f(&v["total_area_in2"]), 2.6162, "{v:#}");
    assert_eq!(v["smallest_trade_size"]["trade_size"], "3");
    assert_eq!(f(&v["smallest_trade_size"]["allowed_area_in2"]), 2.907);

    let v = call(
        &reg,
        &ctx,
        "calculate_raceway_fill",
        json!({"raceway": "rmc", "nipple": true, "conductors": [
            {"count": 3, "size": "3/0", "insulation": "THHN"},
            {"count": 1, "size": "1", "insulation": "THHN"},
            {"count": 1, "size": "6", "insulation": "THHN"}]}),
    )
    .await
    .unwrap();
    assert_eq!(f(&v["total_area_in2"]), 1.0106, "{v:#}");
    assert_eq!(v["smallest_trade_size"]["trade_size"], "1-1/2");
    assert_eq!(f(&v["smallest_trade_size"]["allowed_area_in2"]), 1.243);
    assert_eq!(f(&v["smallest_trade_size"]["fill_percent_allowed"]), 60.0);

    let v = call(
        &reg,
        &ctx,
        "calculate_raceway_fill",
        json!({"raceway": "emt", "trade_size": "1",
               "conductors": [{"count": 6, "size": "10", "insulation": "THW"}]}),
    )
    .await
    .unwrap();
    assert_eq!(f(&v["total_area_in2"]), 0.1458, "{v:#}");
    assert_eq!(f(&v["check"]["percent_fill"]), 16.88);
    assert_eq!(f(&v["check"]["allowed_area_in2"]), 0.346);
    assert_eq!(v["check"]["passes"], true);

    for (nipple, want) in [(false, 266), (true, 399)] {
        let v = call(
            &reg,
            &ctx,
            "calculate_raceway_fill",
            json!({"raceway": "emt", "trade_size": "3", "nipple": nipple,
                   "conductors": [{"count": want, "size": "12", "insulation": "THHN"}]}),
        )
        .await
        .unwrap();
        assert_eq!(v["check"]["passes"], true, "{v:#}");
        let three = v["max_same_conductors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["trade_size"] == "3")
            .unwrap();
        assert_eq!(three["max_conductors"], want);
    }

    // Mixed with a bare EGC (Table 8) and a cable (Note 9): the lines name their tables, and
    // the same answer in every edition.
    let mut seen = Vec::new();
    for edition in ["2017", "2020", "2023"] {
        let v = call(
            &reg,
            &ctx,
            "calculate_raceway_fill",
            json!({"raceway": "emt", "trade_size": "3/4", "edition": edition, "conductors": [
                {"count": 3, "size": "10"},
                {"count": 1, "size": "10", "insulation": "bare"}],
                "cables": [{"count": 1, "diameter_in": 0.3}]}),
        )
        .await
        .unwrap();
        assert_eq!(v["conductor_count"], 5, "{v:#}");
        assert!(v["assumptions"][0].as_str().unwrap().contains("THHN"));
        seen.push(f(&v["total_area_in2"]));
    }
    // 3 × 0.0211 + 0.011 (bare 10 AWG stranded) + π/4 × 0.3² = 0.0633 + 0.011 + 0.0707
    assert_eq!(seen, vec![0.145; 3]);
}

/// Raceway fill of what the project records (the seeded "Shop" project), each area from the
/// Table 5 cells checked above (3 AWG THHN 0.0973, 8 AWG 0.0366, 12 AWG 0.0133 in²):
/// - feeder F2 (3 AWG Cu, 100 A, to panel LP-2, 208Y/120 V): three phases, a full-size
///   neutral and the 250.122 EGC for 100 A (8 AWG), 0.4258 in², too much for 1 in. EMT
///   (0.346 in² at 40 %), so 1-1/4 in.; without neutral and EGC 0.2919 in² fits 1 in.
/// - LP-1 #1 (1-pole 12 AWG, "1/2 EMT"): hot and neutral in the recorded 1/2 in. EMT, which
///   is its EGC: 0.0266 in², 8.75 %.
/// - LP-1 #7 (2-pole 8 AWG, "3/4 PVC, #12 EGC"): two 8 AWG and the recorded 12 AWG EGC in
///   3/4 in. PVC: 0.0865 in², 17.03 % of 0.508 in².
/// - LP-1 #1, #3, #5 together in 1/2 in. EMT: six 12 AWG, 0.0798 in²; with a wire EGC for
///   the largest breaker (30 A: 10 AWG, 0.0211 in²) 0.1009 in².
async fn raceway_fill_from_project(db: TestDb) {
    let store = db.store();
    let id = crate::tools_fixture::seed(&store, "Shop").await;
    let (reg, ctx) = (registry(), ctx(store, id));
    let v = call(
        &reg,
        &ctx,
        "calculate_raceway_fill",
        json!({"raceway": "emt", "feeder": "F2"}),
    )
    .await
    .unwrap();
    assert_eq!(f(&v["total_area_in2"]), 0.4258, "{v:#}");
    assert_eq!(v["conductor_count"], 5);
    assert_eq!(v["smallest_trade_size"]["trade_size"], "1-1/4");
    let said = v["assumptions"].to_string();
    for what in ["THHN", "neutral", "8 AWG"] {
        assert!(said.contains(what), "{what} not stated: {said}");
    }
    let v = call(
        &reg,
        &ctx,
        "calculate_raceway_fill",
        json!({"raceway": "emt", "feeder": "F2", "neutral": false, "egc": false, "insulation": "THWN-2"}),
    )
    .await
    .unwrap();
    assert_eq!(f(&v["total_area_in2"]), 0.2919, "{v:#}");
    assert_eq!(v["smallest_trade_size"]["trade_size"], "1");
    assert_eq!(v["assumptions"], json!([]));

    let v = call(
        &reg,
        &ctx,
        "calculate_raceway_fill",
        json!({"circuits": [{"panel": "LP-1", "number": 1}]}),
    )
    .await
    .unwrap();
    assert_eq!(v["raceway"], "emt", "{v:#}");
    assert_eq!(v["check"]["trade_size"], "1/2");
    assert_eq!(f(&v["total_area_in2"]), 0.0266);
    assert_eq!(f(&v["check"]["percent_fill"]), 8.75);
    assert!(v["assumptions"].to_string().contains("250.118"), "{v:#}");

    let v = call(
        &reg,
        &ctx,
        "calculate_raceway_fill",
        json!({"circuits": [{"description": "EV charger"}]}),
    )
    .await
    .unwrap();
    assert_eq!(v["raceway"], "pvc40", "{v:#}");
    assert_eq!(v["check"]["trade_size"], "3/4");
    assert_eq!(f(&v["total_area_in2"]), 0.0865);
    assert_eq!(f(&v["check"]["percent_fill"]), 17.03);
    assert!(v["assumptions"].to_string().contains("no neutral"), "{v:#}");

    let three = json!([{"panel": "LP-1", "number": 1}, {"panel": "LP-1", "number": 3},
                       {"panel": "LP-1", "number": 5}]);
    for (egc, area) in [(None, 0.0798), (Some(true), 0.1009)] {
        let mut args = json!({"raceway": "emt", "trade_size": "1/2", "circuits": three});
        if let Some(e) = egc {
            args["egc"] = json!(e);
        }
        let v = call(&reg, &ctx, "calculate_raceway_fill", args)
            .await
            .unwrap();
        assert_eq!(f(&v["total_area_in2"]), area, "{v:#}");
        assert_eq!(v["check"]["passes"], true);
    }

    let e = call_err(
        &reg,
        &ctx,
        "calculate_raceway_fill",
        json!({"raceway": "emt", "circuits": [{"panel": "LP-1", "number": 6}]}),
    )
    .await;
    assert!(e.contains("no conductor size"), "{e}");
    let e = call_err(
        &reg,
        &ctx,
        "calculate_raceway_fill",
        json!({"circuits": [{"panel": "LP-1", "number": 3}]}),
    )
    .await;
    assert!(e.contains("raceway is needed"), "{e}");
    let e = call_err(
        &reg,
        &ctx,
        "calculate_raceway_fill",
        json!({"raceway": "emt", "feeder": "F9"}),
    )
    .await;
    assert!(e.contains("F9") || e.contains("feeder"), "{e}");
}

/// What the tools refuse, and say why.
async fn fill_refusals(db: TestDb) {
    let (reg, ctx) = (registry(), free(db.store()));
    let e = call_err(
        &reg,
        &ctx,
        "calculate_box_fill",
        json!({"box": "square_4x2-1/8", "box_volume_in3": 30.3, "conductors": [{"size": "12", "count": 2}]}),
    )
    .await;
    assert!(e.contains("not both"), "{e}");
    let e = call_err(
        &reg,
        &ctx,
        "calculate_box_fill",
        json!({"box": "6x6x4", "conductors": [{"size": "12", "count": 2}]}),
    )
    .await;
    assert!(e.contains("box_volume_in3") || e.contains("marked"), "{e}");
    let e = call_err(
        &reg,
        &ctx,
        "calculate_box_fill",
        json!({"box_volume_in3": 100, "conductors": [{"size": "4", "count": 3}]}),
    )
    .await;
    assert!(e.contains("314.28"), "{e}");
    let e = call_err(
        &reg,
        &ctx,
        "calculate_box_fill",
        json!({"box_volume_in3": 18, "wires": 4}),
    )
    .await;
    assert!(e.contains("wires"), "{e}");
    let e = call_err(
        &reg,
        &ctx,
        "calculate_raceway_fill",
        json!({"raceway": "emt", "trade_size": "5", "conductors": [{"count": 3, "size": "4/0"}]}),
    )
    .await;
    assert!(e.contains("two independent published sources"), "{e}");
    let e = call_err(
        &reg,
        &ctx,
        "calculate_raceway_fill",
        json!({"raceway": "emt", "trade_size": "7/8", "conductors": [{"count": 3, "size": "12"}]}),
    )
    .await;
    assert!(e.contains("trade size"), "{e}");
    let e = call_err(
        &reg,
        &ctx,
        "calculate_raceway_fill",
        json!({"raceway": "emt", "conductors": [{"count": 3}]}),
    )
    .await;
    assert!(e.contains("area_in2"), "{e}");
}

db::both_backends!(
    box_fill_worked_examples,
    box_fill_edition_from_project,
    raceway_fill_worked_examples,
    raceway_fill_from_project,
    fill_refusals
);
