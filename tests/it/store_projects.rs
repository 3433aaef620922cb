//! Store: projects, channel bindings, roles and equipment, on SQLite and Postgres.

use crate::support::db;

use db::{circuit, panel, TestDb};
use sparky::config::ConfirmPolicy;
use sparky::nec::tables::MotorOcpdType;
use sparky::nec::units::{
    Amps, ConductorSize, Edition, Feet, Material, Phase, TempRating, VoltAmperes, Volts, Watts,
};
use sparky::project::{
    ApplianceKind, ApplianceNameplate, ChargingSourceSpec, FeederSpec, LoadItemSpec, MemberRole,
    MotorLoad, RacewayMaterial, ServiceSpec, TaskSpec, TransformerSpec,
};
use sparky::store::{Backend, StoreError};

async fn backend_and_ping(db: TestDb) {
    let store = db.store();
    assert_eq!(store.backend(), db.backend());
    store.ping().await.expect("ping");
    assert!(matches!(
        store.backend(),
        Backend::Sqlite | Backend::Postgres
    ));
}

async fn projects_are_unique_case_insensitively(db: TestDb) {
    let store = db.store();
    let p = store
        .create_project(
            &sparky::project::Workspace::local(),
            "Warehouse Retrofit",
            Edition::Nec2023,
        )
        .await
        .expect("create");
    assert_eq!(p.name, "Warehouse Retrofit");
    assert_eq!(p.edition, Edition::Nec2023);
    assert_eq!(p.confirm_policy, None);

    match store
        .create_project(
            &sparky::project::Workspace::local(),
            "warehouse retrofit",
            Edition::Nec2020,
        )
        .await
    {
        Err(StoreError::Conflict(msg)) => {
            assert!(msg.contains("already exists"), "{msg}");
            assert!(msg.contains("warehouse retrofit"), "{msg}");
        }
        other => panic!("expected Conflict, got {other:?}"),
    }

    let by_name = store
        .project_by_name(
            &sparky::project::Workspace::local(),
            "  WAREHOUSE retrofit ",
        )
        .await
        .expect("by name")
        .expect("found");
    assert_eq!(by_name, p);
    assert_eq!(store.project(p.id).await.expect("by id"), Some(p.clone()));
    assert_eq!(store.project(p.id + 1000).await.expect("missing"), None);
    assert_eq!(
        store
            .project_by_name(&sparky::project::Workspace::local(), "nope")
            .await
            .expect("missing"),
        None
    );

    store
        .create_project(
            &sparky::project::Workspace::local(),
            "alpha",
            Edition::Nec2020,
        )
        .await
        .expect("second");
    let names: Vec<String> = store
        .list_projects(&sparky::project::Workspace::local())
        .await
        .expect("list")
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, vec!["alpha", "Warehouse Retrofit"]);
}

async fn update_project_saves_edition_and_policy(db: TestDb) {
    let store = db.store();
    let mut p = store
        .create_project(
            &sparky::project::Workspace::local(),
            "Clinic",
            Edition::Nec2023,
        )
        .await
        .expect("create");
    p.edition = Edition::Nec2020;
    p.confirm_policy = Some(ConfirmPolicy::Editors);
    store.update_project(&p).await.expect("update");
    let back = store.project(p.id).await.expect("load").expect("exists");
    assert_eq!(back.edition, Edition::Nec2020);
    assert_eq!(back.confirm_policy, Some(ConfirmPolicy::Editors));
    assert_eq!(back.created_at, p.created_at);

    p.confirm_policy = Some(ConfirmPolicy::AnyMember);
    store.update_project(&p).await.expect("update again");
    assert_eq!(
        store
            .project(p.id)
            .await
            .expect("load")
            .expect("exists")
            .confirm_policy,
        Some(ConfirmPolicy::AnyMember)
    );

    p.id += 999;
    assert!(matches!(
        store.update_project(&p).await,
        Err(StoreError::NotFound(_))
    ));
}

async fn channel_bindings_and_roles(db: TestDb) {
    let store = db.store();
    let team = sparky::project::Workspace::new("slack", "T1");
    let a = store
        .create_project(&team, "A", Edition::Nec2023)
        .await
        .expect("a");
    let b = store
        .create_project(&team, "B", Edition::Nec2023)
        .await
        .expect("b");
    assert_eq!(
        store
            .channel_project("slack", "T1", "C1")
            .await
            .expect("none"),
        None
    );
    store
        .bind_channel("slack", "T1", "C1", a.id)
        .await
        .expect("bind");
    assert_eq!(
        store.channel_project("slack", "T1", "C1").await.expect("a"),
        Some(a.id)
    );
    // Rebinding replaces the earlier project.
    store
        .bind_channel("slack", "T1", "C1", b.id)
        .await
        .expect("rebind");
    assert_eq!(
        store.channel_project("slack", "T1", "C1").await.expect("b"),
        Some(b.id)
    );
    assert_eq!(
        store
            .channel_project("discord", "T1", "C1")
            .await
            .expect("other platform"),
        None
    );
    assert!(matches!(
        store.bind_channel("slack", "T1", "C2", b.id + 100).await,
        Err(StoreError::NotFound(_))
    ));

    assert_eq!(
        store.member_role(a.id, "slack", "U1").await.expect("none"),
        None
    );
    store
        .set_member_role(a.id, "slack", "U1", MemberRole::Editor)
        .await
        .expect("set");
    store
        .set_member_role(a.id, "slack", "U1", MemberRole::Owner)
        .await
        .expect("replace");
    store
        .set_member_role(b.id, "slack", "U1", MemberRole::Viewer)
        .await
        .expect("other project");
    assert_eq!(
        store.member_role(a.id, "slack", "U1").await.expect("a"),
        Some(MemberRole::Owner)
    );
    assert_eq!(
        store.member_role(b.id, "slack", "U1").await.expect("b"),
        Some(MemberRole::Viewer)
    );
    assert_eq!(
        store
            .member_role(a.id, "discord", "U1")
            .await
            .expect("none"),
        None
    );
    assert!(matches!(
        store
            .set_member_role(b.id + 100, "slack", "U1", MemberRole::Viewer)
            .await,
        Err(StoreError::NotFound(_))
    ));
}

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
    };
    let f = store.add_feeder(p.id, &feeder).await.expect("feeder");
    assert_eq!(f.spec, feeder);
    // Raceway and EGC are optional: a feeder without them reads back without them.
    let bare = FeederSpec {
        name: "F-2".to_string(),
        raceway: None,
        egc_size: None,
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

async fn load_project_returns_everything(db: TestDb) {
    let store = db.store();
    let p = store
        .create_project(
            &sparky::project::Workspace::local(),
            "Full",
            Edition::Nec2023,
        )
        .await
        .expect("p");
    let other = store
        .create_project(
            &sparky::project::Workspace::local(),
            "Other",
            Edition::Nec2023,
        )
        .await
        .expect("other");
    let lp1 = store.add_panel(p.id, &panel("LP-1")).await.expect("lp1");
    let lp2 = store.add_panel(p.id, &panel("LP-2")).await.expect("lp2");
    let foreign = store
        .add_panel(other.id, &panel("LP-1"))
        .await
        .expect("foreign");
    for n in [3, 1, 2] {
        store.add_circuit(lp1.id, &circuit(n)).await.expect("c");
    }
    store.add_circuit(lp2.id, &circuit(7)).await.expect("c");
    store
        .add_circuit(foreign.id, &circuit(9))
        .await
        .expect("foreign c");
    store
        .set_service(
            p.id,
            &ServiceSpec {
                voltage: Volts(480.0),
                phase: Phase::Three,
                rating: Amps(800.0),
                available_fault_ka: Some(35.0),
                notes: String::new(),
            },
        )
        .await
        .expect("service");
    store
        .create_task(
            p.id,
            &TaskSpec {
                title: "Label panels".to_string(),
                notes: String::new(),
                assignee: None,
            },
            "U1",
        )
        .await
        .expect("task");

    let data = store.load_project(p.id).await.expect("load");
    assert_eq!(data.project.name, "Full");
    assert!(data.service.is_some());
    assert_eq!(
        data.panels.iter().map(|p| p.id).collect::<Vec<_>>(),
        vec![lp1.id, lp2.id]
    );
    assert_eq!(
        data.circuits
            .iter()
            .map(|c| (c.panel_id, c.spec.number))
            .collect::<Vec<_>>(),
        vec![(lp1.id, 1), (lp1.id, 2), (lp1.id, 3), (lp2.id, 7)]
    );
    assert_eq!(data.panel_by_name("lp-2").map(|p| p.id), Some(lp2.id));
    assert_eq!(data.tasks.len(), 1);
    assert!(data.feeders.is_empty() && data.transformers.is_empty());
    assert!(data.loads.is_empty() && data.charging_sources.is_empty());

    match store.load_project(p.id + other.id + 100).await {
        Err(StoreError::NotFound(msg)) => assert!(msg.contains("project"), "{msg}"),
        other => panic!("expected NotFound, got {other:?}"),
    }
}

async fn projects_stay_in_their_workspace(db: TestDb) {
    let store = db.store();
    let team_a = sparky::project::Workspace::new("slack", "TA");
    let team_b = sparky::project::Workspace::new("slack", "TB");
    let guild = sparky::project::Workspace::new("discord", "TA");
    let a = store
        .create_project(&team_a, "Shop", Edition::Nec2023)
        .await
        .expect("a");
    assert_eq!(a.workspace, team_a);
    // The same name is free in every other workspace, on the same or another platform.
    let b = store
        .create_project(&team_b, "shop", Edition::Nec2020)
        .await
        .expect("same name in another team");
    store
        .create_project(&guild, "Shop", Edition::Nec2023)
        .await
        .expect("same workspace id on another platform");

    let found = store.project_by_name(&team_b, "SHOP").await.expect("b");
    assert_eq!(found.map(|p| p.id), Some(b.id));
    let only_a = store
        .create_project(&team_a, "Annex", Edition::Nec2023)
        .await
        .expect("annex");
    assert_eq!(
        store
            .project_by_name(&team_b, "Annex")
            .await
            .expect("lookup"),
        None,
        "another team's project is not found"
    );
    let names = |list: Vec<sparky::project::Project>| -> Vec<String> {
        list.into_iter().map(|p| p.name).collect()
    };
    assert_eq!(
        names(store.list_projects(&team_a).await.expect("list a")),
        ["Annex", "Shop"]
    );
    assert_eq!(
        names(store.list_projects(&team_b).await.expect("list b")),
        ["shop"]
    );
    assert!(store
        .list_projects(&sparky::project::Workspace::local())
        .await
        .expect("list local")
        .is_empty());

    // A channel of team B cannot be bound to team A's project, whatever the id says.
    assert!(matches!(
        store.bind_channel("slack", "TB", "C1", only_a.id).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.bind_channel("discord", "TA", "C1", only_a.id).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(
        store
            .channel_project("slack", "TB", "C1")
            .await
            .expect("none"),
        None
    );
    store
        .bind_channel("slack", "TA", "C1", only_a.id)
        .await
        .expect("own workspace");

    // Members: listed by id, removed once.
    store
        .set_member_role(a.id, "slack", "U2", MemberRole::Editor)
        .await
        .expect("editor");
    store
        .set_member_role(a.id, "slack", "U1", MemberRole::Owner)
        .await
        .expect("owner");
    assert_eq!(
        store.members(a.id).await.expect("members"),
        [
            ("U1".to_string(), MemberRole::Owner),
            ("U2".to_string(), MemberRole::Editor)
        ]
    );
    assert!(store.remove_member(a.id, "slack", "U2").await.expect("rm"));
    assert!(!store
        .remove_member(a.id, "slack", "U2")
        .await
        .expect("rm again"));
    assert_eq!(store.members(a.id).await.expect("members").len(), 1);
}

db::both_backends!(
    projects_stay_in_their_workspace,
    backend_and_ping,
    projects_are_unique_case_insensitively,
    update_project_saves_edition_and_policy,
    channel_bindings_and_roles,
    duplicate_panel_name_conflicts,
    duplicate_circuit_number_conflicts,
    removing_a_panel_removes_its_circuits,
    typed_values_round_trip,
    corrupt_values_are_errors_not_panics,
    equipment_round_trips,
    load_project_returns_everything,
);
