//! Every field migration 0005 added survives the project files, on SQLite and Postgres:
//! feeder raceway material and EGC size through the project JSON (export → parse → import
//! under a new name → export), circuit motor and appliance nameplates through the JSON and
//! through the panel schedule CSV (export → import into another panel → export). Every value
//! of every enum is used, with fractional numbers, and the absent cases too.

use crate::support::db;
use crate::tools_fixture::circuit;

use db::TestDb;
use sparky::nec::tables::MotorOcpdType;
use sparky::nec::units::{Amps, ConductorSize, Edition, Feet, Material, Phase, TempRating, Volts};
use sparky::project::{
    ApplianceKind, ApplianceNameplate, CircuitSpec, FeederSpec, MotorLoad, PanelSpec,
    RacewayMaterial, Workspace,
};
use sparky::services::project_files::{export, import, import_schedule, parse_file, schedule_csv};

fn panel(name: &str, fed_from: &str) -> PanelSpec {
    PanelSpec {
        name: name.into(),
        voltage: Volts(480.0),
        phase: Phase::Three,
        bus_rating: Amps(400.0),
        main_breaker: None,
        interrupting_rating_ka: Some(35.0),
        fed_from: Some(fed_from.into()),
        spaces: 84,
        location: String::new(),
    }
}

fn feeder(name: &str, to: &str, raceway: Option<RacewayMaterial>, egc: Option<&str>) -> FeederSpec {
    FeederSpec {
        name: name.into(),
        from: "MDP".into(),
        to: to.into(),
        conductor_size: ConductorSize::Kcmil(250),
        material: Material::Aluminum,
        insulation: TempRating::C90,
        sets: 2,
        length: Some(Feet(182.5)),
        ocpd: Amps(400.0),
        raceway,
        egc_size: egc.map(|e| e.parse().expect("size")),
        c_value: None,
        impedance_ohms_per_1000ft: None,
    }
}

/// The circuits of panel LP: each motor device, a motor without device, a three-phase and a
/// fractional-horsepower motor, every appliance kind, a circuit with both and one with none.
fn circuits() -> Vec<CircuitSpec> {
    let mut out = Vec::new();
    let devices = [
        Some(MotorOcpdType::NonTimeDelayFuse),
        Some(MotorOcpdType::DualElementFuse),
        Some(MotorOcpdType::InstantaneousTripBreaker),
        Some(MotorOcpdType::InverseTimeBreaker),
        None,
    ];
    let mut n = 1;
    for (i, device) in devices.into_iter().enumerate() {
        let mut c = circuit(
            n,
            3,
            &format!("Motor {i}"),
            12_470.5,
            30.0,
            Some("10"),
            Some(40.0),
        );
        c.motor = Some(MotorLoad {
            hp: [10.0, 7.5, 0.75, 15.0, 1.5][i],
            phase: if i == 4 { Phase::Single } else { Phase::Three },
            voltage: Volts([460.0, 460.0, 208.0, 480.0, 230.0][i]),
            device,
        });
        if i == 4 {
            c.poles = 2;
        }
        out.push(c);
        n += 3;
    }
    for (i, kind) in ApplianceKind::ALL.into_iter().enumerate() {
        let mut c = circuit(
            n,
            2,
            &format!("Appliance {}", kind.as_str()),
            1000.0,
            20.0,
            None,
            None,
        );
        c.appliance = Some(ApplianceNameplate {
            kind,
            va: sparky::nec::units::VoltAmperes(1127.5 + i as f64 * 1000.0),
        });
        out.push(c);
        n += 2;
    }
    let mut both = circuit(
        n,
        1,
        "Disposer, \"under sink\"",
        1127.0,
        20.0,
        Some("12"),
        None,
    );
    both.motor = Some(MotorLoad {
        hp: 0.5,
        phase: Phase::Single,
        voltage: Volts(115.0),
        device: Some(MotorOcpdType::InverseTimeBreaker),
    });
    both.appliance = Some(ApplianceNameplate {
        kind: ApplianceKind::Disposal,
        va: sparky::nec::units::VoltAmperes(1127.0),
    });
    out.push(both);
    out.push(circuit(
        n + 1,
        1,
        "Receptacles",
        720.0,
        20.0,
        Some("12"),
        Some(55.0),
    ));
    out
}

async fn equipment_fields_round_trip(db: TestDb) {
    let store = db.store();
    let ws = Workspace::local();
    let p = store
        .create_project(&ws, "Plant", Edition::Nec2023)
        .await
        .expect("project");
    store
        .add_panel(p.id, &panel("MDP", "service"))
        .await
        .expect("MDP");
    let feeders = [
        feeder("F-steel", "LP", Some(RacewayMaterial::Steel), Some("3")),
        feeder("F-al", "LP-A", Some(RacewayMaterial::Aluminum), Some("1/0")),
        feeder("F-pvc", "LP-B", Some(RacewayMaterial::Nonmetallic), None),
        feeder("F-none", "LP-C", None, Some("250 kcmil")),
    ];
    for (name, f) in ["LP", "LP-A", "LP-B", "LP-C"].iter().zip(&feeders) {
        store
            .add_panel(p.id, &panel(name, "MDP"))
            .await
            .expect("panel");
        store.add_feeder(p.id, f).await.expect("feeder");
    }
    let lp = store.load_project(p.id).await.unwrap();
    let lp_id = lp.panel_by_name("LP").unwrap().id;
    let specs = circuits();
    for c in &specs {
        store.add_circuit(lp_id, c).await.expect("circuit");
    }

    // JSON: the file carries every field; export → import → export gives the same file.
    let file = export(store.as_ref(), &ws, "Plant").await.expect("export");
    let text = serde_json::to_string_pretty(&file).unwrap();
    assert!(text.contains("\"raceway\": \"nonmetallic\""), "{text}");
    assert!(text.contains("\"device\": \"instantaneous_trip_breaker\""));
    assert!(text.contains("\"kind\": \"wall_oven\""));
    let parsed = parse_file(&text).expect("parse");
    assert_eq!(parsed, file);
    import(store.as_ref(), &ws, &parsed, Some("Plant copy"))
        .await
        .expect("import");
    let mut again = export(store.as_ref(), &ws, "Plant copy")
        .await
        .expect("export copy");
    again.name = "Plant".into();
    assert_eq!(
        again, file,
        "export -> import -> export must give the same file"
    );
    let copy_id = store
        .project_by_name(&ws, "Plant copy")
        .await
        .unwrap()
        .unwrap()
        .id;
    let copy = store.load_project(copy_id).await.unwrap();
    for f in &feeders {
        let stored = copy
            .feeders
            .iter()
            .find(|x| x.spec.name == f.name)
            .expect("feeder copied");
        assert_eq!(&stored.spec, f);
    }
    let copy_lp = copy.panel_by_name("LP").unwrap().id;
    let got: Vec<&CircuitSpec> = copy.circuits_of(copy_lp).iter().map(|c| &c.spec).collect();
    assert_eq!(got, specs.iter().collect::<Vec<_>>());

    // CSV: LP's schedule into an empty panel of the copy, then out again.
    let csv = schedule_csv(&lp_with(&store, p.id).await, Some("LP")).expect("csv");
    let header = csv.lines().next().unwrap();
    assert!(
        header.ends_with(
            "motor_hp,motor_phase,motor_voltage,motor_device,appliance_kind,appliance_va"
        ),
        "{header}"
    );
    assert!(
        csv.contains(",0.75,3,208,instantaneous_trip_breaker,,"),
        "{csv}"
    );
    assert!(csv.contains(",heat_pump,"), "{csv}");
    store
        .add_panel(copy_id, &panel("LP-9", "MDP"))
        .await
        .expect("LP-9");
    let moved: String = csv
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                format!("{l}\n")
            } else {
                format!("{}\n", l.replacen("LP,", "LP-9,", 1))
            }
        })
        .collect();
    let n = import_schedule(store.as_ref(), &ws, "Plant copy", "LP-9", &moved)
        .await
        .expect("import schedule");
    assert_eq!(n, specs.len());
    let copy = store.load_project(copy_id).await.unwrap();
    let lp9 = copy.panel_by_name("LP-9").unwrap().id;
    let got: Vec<&CircuitSpec> = copy.circuits_of(lp9).iter().map(|c| &c.spec).collect();
    assert_eq!(got, specs.iter().collect::<Vec<_>>());
    let out = schedule_csv(&copy, Some("LP-9")).expect("csv again");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        moved.lines().collect::<Vec<_>>(),
        "the schedule survives the round trip"
    );
}

async fn lp_with(
    store: &std::sync::Arc<dyn sparky::store::Store>,
    id: i64,
) -> sparky::project::ProjectData {
    store.load_project(id).await.expect("load")
}

db::both_backends!(equipment_fields_round_trip,);
