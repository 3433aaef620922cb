//! Store: a project's equipment ([`EquipmentStore`](sparky::store::EquipmentStore)), on SQLite and
//! Postgres.

use crate::support::db;

use db::{circuit, panel, TestDb};
use sparky::nec::tables::MotorOcpdType;
use sparky::nec::units::{
    Amps, ConductorSize, Edition, Feet, Material, Phase, TempRating, VoltAmperes, Volts, Watts,
};
use sparky::project::{
    ApplianceKind, ApplianceNameplate, ChargingSourceSpec, FeederSpec, LoadItemSpec, MotorLoad,
    RacewayMaterial, ServiceSpec, TaskSpec, TransformerSpec,
};
use sparky::store::StoreError;

async fn duplicate_panel_name_conflicts(db: TestDb) {
    let store = db.store();
    let p = store
        .create_project(&sparky::project::Workspace::local(), "P", Edition::Nec2023)
        .await
        .expect("p");
    let q = store
        .create_project(&sparky::project::Workspace::local(), "Q", Edition::Nec2023)
        .await
        .expect("q");
    let lp1 = store.add_panel(p.id, &panel("LP-1")).await.expect("add");
    assert_eq!(lp1.spec, panel("LP-1"));
    assert_eq!(lp1.project_id, p.id);

    match store.add_panel(p.id, &panel("lp-1")).await {
        Err(StoreError::Conflict(msg)) => {
            assert_eq!(msg, "panel 'lp-1' already exists in this project")
        }
        other => panic!("expected Conflict, got {other:?}"),
    }
    // Another project may use the same name.
    store
        .add_panel(q.id, &panel("LP-1"))
        .await
        .expect("same name elsewhere");
    // A panel in a missing project.
    assert!(matches!(
        store.add_panel(q.id + 100, &panel("X")).await,
        Err(StoreError::NotFound(_))
    ));

    // Renaming onto a taken name conflicts too; a real rename works.
    let lp2 = store.add_panel(p.id, &panel("LP-2")).await.expect("lp-2");
    assert!(matches!(
        store.update_panel(lp2.id, &panel("LP-1")).await,
        Err(StoreError::Conflict(_))
    ));
    let mut spec = panel("LP-2A");
    spec.main_breaker = None;
    spec.fed_from = None;
    spec.interrupting_rating_ka = None;
    spec.phase = Phase::Single;
    spec.voltage = Volts(240.0);
    let renamed = store.update_panel(lp2.id, &spec).await.expect("rename");
    assert_eq!(renamed.spec, spec);
    assert_eq!(renamed.id, lp2.id);
    assert!(matches!(
        store.update_panel(lp2.id + 100, &spec).await,
        Err(StoreError::NotFound(_))
    ));
}

async fn duplicate_circuit_number_conflicts(db: TestDb) {
    let store = db.store();
    let p = store
        .create_project(&sparky::project::Workspace::local(), "P", Edition::Nec2023)
        .await
        .expect("p");
    let lp1 = store.add_panel(p.id, &panel("LP-1")).await.expect("lp-1");
    let lp2 = store.add_panel(p.id, &panel("LP-2")).await.expect("lp-2");
    let c12 = store.add_circuit(lp1.id, &circuit(12)).await.expect("12");
    assert_eq!(c12.spec, circuit(12));
    assert_eq!(c12.panel_id, lp1.id);

    match store.add_circuit(lp1.id, &circuit(12)).await {
        Err(StoreError::Conflict(msg)) => {
            assert_eq!(msg, "circuit 12 already exists on panel LP-1")
        }
        other => panic!("expected Conflict, got {other:?}"),
    }
    store
        .add_circuit(lp2.id, &circuit(12))
        .await
        .expect("same number on another panel");

    // A circuit on a panel that does not exist.
    match store.add_circuit(lp2.id + 100, &circuit(1)).await {
        Err(StoreError::NotFound(msg)) => assert!(msg.contains("panel"), "{msg}"),
        other => panic!("expected NotFound, got {other:?}"),
    }

    // Renumbering onto a taken number conflicts; a real update works.
    let c14 = store.add_circuit(lp1.id, &circuit(14)).await.expect("14");
    match store.update_circuit(c14.id, &circuit(12)).await {
        Err(StoreError::Conflict(msg)) => {
            assert_eq!(msg, "circuit 12 already exists on panel LP-1")
        }
        other => panic!("expected Conflict, got {other:?}"),
    }
    let mut spec = circuit(16);
    spec.poles = 2;
    spec.continuous = true;
    spec.conductor_size = None;
    spec.length = None;
    let updated = store.update_circuit(c14.id, &spec).await.expect("update");
    assert_eq!(updated.spec, spec);
    assert!(matches!(
        store.update_circuit(c14.id + 100, &spec).await,
        Err(StoreError::NotFound(_))
    ));

    store.remove_circuit(c14.id).await.expect("remove");
    assert!(matches!(
        store.remove_circuit(c14.id).await,
        Err(StoreError::NotFound(_))
    ));
    let data = store.load_project(p.id).await.expect("load");
    assert_eq!(data.circuits.len(), 2);
}

async fn removing_a_panel_removes_its_circuits(db: TestDb) {
    let store = db.store();
    let p = store
        .create_project(&sparky::project::Workspace::local(), "P", Edition::Nec2023)
        .await
        .expect("p");
    let lp1 = store.add_panel(p.id, &panel("LP-1")).await.expect("lp-1");
    let lp2 = store.add_panel(p.id, &panel("LP-2")).await.expect("lp-2");
    for n in [1, 3, 5] {
        store.add_circuit(lp1.id, &circuit(n)).await.expect("c");
    }
    store.add_circuit(lp2.id, &circuit(1)).await.expect("c");
    store.remove_panel(lp1.id).await.expect("remove");
    assert!(matches!(
        store.remove_panel(lp1.id).await,
        Err(StoreError::NotFound(_))
    ));
    let data = store.load_project(p.id).await.expect("load");
    assert_eq!(data.panels.len(), 1);
    assert_eq!(data.circuits.len(), 1);
    assert_eq!(data.circuits[0].panel_id, lp2.id);
    // The freed name can be used again.
    store
        .add_panel(p.id, &panel("LP-1"))
        .await
        .expect("name reusable");
}

async fn typed_values_round_trip(db: TestDb) {
    let store = db.store();
    let p = store
        .create_project(&sparky::project::Workspace::local(), "P", Edition::Nec2020)
        .await
        .expect("p");
    let lp = store.add_panel(p.id, &panel("MDP")).await.expect("panel");
    let sizes = [
        ConductorSize::Awg(14),
        ConductorSize::Awg(1),
        ConductorSize::Awg(0),
        ConductorSize::Awg(-3),
        ConductorSize::Kcmil(250),
        ConductorSize::Kcmil(750),
    ];
    for (i, size) in sizes.iter().enumerate() {
        let mut c = circuit(i32::try_from(i).expect("small") + 1);
        c.conductor_size = Some(*size);
        c.material = if i % 2 == 0 {
            Material::Aluminum
        } else {
            Material::Copper
        };
        c.insulation = [TempRating::C60, TempRating::C75, TempRating::C90][i % 3];
        c.load_va.0 = 1234.5678 * (i as f64 + 1.0);
        // Motor and appliance nameplates on some circuits, none on others.
        if i % 3 == 1 {
            c.motor = Some(MotorLoad {
                hp: 7.5,
                phase: Phase::Three,
                voltage: Volts(460.0),
                device: Some(MotorOcpdType::DualElementFuse),
            });
        }
        if i % 3 == 2 {
            c.appliance = Some(ApplianceNameplate {
                kind: ApplianceKind::WaterHeater,
                va: VoltAmperes(4500.0),
            });
        }
        let stored = store.add_circuit(lp.id, &c).await.expect("add");
        assert_eq!(stored.spec, c);
        // Updating keeps (and can clear) them.
        let mut changed = c.clone();
        changed.motor = None;
        changed.appliance = Some(ApplianceNameplate {
            kind: ApplianceKind::Range,
            va: VoltAmperes(12_000.0),
        });
        let updated = store
            .update_circuit(stored.id, &changed)
            .await
            .expect("update");
        assert_eq!(updated.spec, changed);
        let back = store.update_circuit(stored.id, &c).await.expect("restore");
        assert_eq!(back.spec, c);
    }
    let data = store.load_project(p.id).await.expect("load");
    let back: Vec<Option<ConductorSize>> = data
        .circuits_of(lp.id)
        .iter()
        .map(|c| c.spec.conductor_size)
        .collect();
    assert_eq!(back, sizes.iter().copied().map(Some).collect::<Vec<_>>());
    assert_eq!(data.project.edition, Edition::Nec2020);
}

async fn corrupt_values_are_errors_not_panics(db: TestDb) {
    let store = db.store();
    let p = store
        .create_project(&sparky::project::Workspace::local(), "P", Edition::Nec2023)
        .await
        .expect("p");
    let lp = store.add_panel(p.id, &panel("LP-1")).await.expect("panel");
    store
        .add_circuit(lp.id, &circuit(1))
        .await
        .expect("circuit");
    db.execute("UPDATE circuits SET conductor_size = 'a lot of copper'")
        .await;
    match store.load_project(p.id).await {
        Err(StoreError::Corrupt(msg)) => assert!(msg.contains("conductor size"), "{msg}"),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

async fn equipment_round_trips(db: TestDb) {
    let store = db.store();
    let p = store
        .create_project(
            &sparky::project::Workspace::local(),
            "Van build",
            Edition::Nec2023,
        )
        .await
        .expect("p");

    let service = ServiceSpec {
        voltage: Volts(240.0),
        phase: Phase::Single,
        rating: Amps(200.0),
        available_fault_ka: Some(10.0),
        notes: "overhead drop".to_string(),
    };
    store.set_service(p.id, &service).await.expect("service");
    let service2 = ServiceSpec {
        voltage: Volts(208.0),
        phase: Phase::Three,
        rating: Amps(400.0),
        available_fault_ka: None,
        notes: String::new(),
    };
    store
        .set_service(p.id, &service2)
        .await
        .expect("replace service");
    assert!(matches!(
        store.set_service(p.id + 100, &service).await,
        Err(StoreError::NotFound(_))
    ));

    let feeder = FeederSpec {
        name: "F-1".to_string(),
        from: "MDP".to_string(),
        to: "LP-1".to_string(),
        conductor_size: ConductorSize::Kcmil(500),
        material: Material::Aluminum,
        insulation: TempRating::C90,
        sets: 2,
        length: Some(Feet(120.0)),
        ocpd: Amps(400.0),
        raceway: Some(RacewayMaterial::Aluminum),
        egc_size: Some(ConductorSize::Awg(1)),
        c_value: Some(18_756.5),
        impedance_ohms_per_1000ft: Some(0.0533),
    };
    let f = store.add_feeder(p.id, &feeder).await.expect("feeder");
    assert_eq!(f.spec, feeder);
    // Raceway, EGC, C value and impedance are optional: a feeder without them reads back
    // without them.
    let bare = FeederSpec {
        name: "F-2".to_string(),
        raceway: None,
        egc_size: None,
        c_value: None,
        impedance_ohms_per_1000ft: None,
        ..feeder.clone()
    };
    let f2 = store.add_feeder(p.id, &bare).await.expect("bare");
    assert_eq!(f2.spec, bare);
    assert!(matches!(
        store.add_feeder(p.id, &feeder).await,
        Err(StoreError::Conflict(m)) if m == "feeder 'F-1' already exists in this project"
    ));

    let xfmr = TransformerSpec {
        name: "T-1".to_string(),
        kva: 75.0,
        primary_voltage: Volts(480.0),
        secondary_voltage: Volts(208.0),
        phase: Phase::Three,
        impedance_percent: 5.75,
        fed_from: Some("MDP".to_string()),
    };
    let t = store.add_transformer(p.id, &xfmr).await.expect("xfmr");
    assert_eq!(t.spec, xfmr);
    assert!(matches!(
        store.add_transformer(p.id, &xfmr).await,
        Err(StoreError::Conflict(_))
    ));

    let fridge = LoadItemSpec {
        name: "Dometic CFX3 45 fridge".to_string(),
        watts: Watts(45.0),
        hours_per_day: 24.0,
        duty_cycle: 0.35,
        quantity: 1,
        notes: "compressor cycles".to_string(),
    };
    let l = store.add_load_item(p.id, &fridge).await.expect("load");
    assert_eq!(l.spec, fridge);
    // Identical loads are allowed (two fridges as two rows).
    store.add_load_item(p.id, &fridge).await.expect("twice");

    let solar = ChargingSourceSpec {
        name: "400 W roof solar".to_string(),
        kind: "solar".to_string(),
        watts: Watts(400.0),
        hours_per_day: 4.5,
        efficiency: 0.85,
        notes: String::new(),
    };
    let s = store
        .add_charging_source(p.id, &solar)
        .await
        .expect("source");
    assert_eq!(s.spec, solar);
    assert!(matches!(
        store.add_charging_source(p.id + 100, &solar).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.add_load_item(p.id + 100, &fridge).await,
        Err(StoreError::NotFound(_))
    ));

    let task = TaskSpec {
        title: "Torque lugs".to_string(),
        notes: "per manufacturer".to_string(),
        assignee: Some("U2".to_string()),
    };
    let created = store.create_task(p.id, &task, "U1").await.expect("task");
    assert_eq!(created.spec, task);
    assert_eq!(created.created_by, "U1");
    assert_eq!(created.completed_at, None);
    let done = store
        .complete_task(created.id, "U2")
        .await
        .expect("complete")
        .expect("was open");
    assert_eq!(done.completed_by.as_deref(), Some("U2"));
    assert!(done.completed_at.is_some());
    assert_eq!(
        store.complete_task(created.id, "U3").await.expect("again"),
        None
    );
    assert_eq!(
        store
            .complete_task(created.id + 100, "U3")
            .await
            .expect("missing"),
        None
    );
    assert!(matches!(
        store.create_task(p.id + 100, &task, "U1").await,
        Err(StoreError::NotFound(_))
    ));

    let data = store.load_project(p.id).await.expect("load");
    assert_eq!(data.service, Some(service2));
    assert_eq!(data.feeders, vec![f, f2]);
    assert_eq!(data.transformers, vec![t]);
    assert_eq!(data.loads.len(), 2);
    assert_eq!(data.loads[0], l);
    assert_eq!(data.charging_sources, vec![s]);
    assert_eq!(data.tasks, vec![done]);
}

db::both_backends!(
    duplicate_panel_name_conflicts,
    duplicate_circuit_number_conflicts,
    removing_a_panel_removes_its_circuits,
    typed_values_round_trip,
    corrupt_values_are_errors_not_panics,
    equipment_round_trips,
);
