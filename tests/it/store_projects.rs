//! Store: projects, channel bindings, members and roles, tasks and the project snapshot
//! ([`ProjectStore`](sparky::store::ProjectStore)), on SQLite and Postgres.

use crate::support::db;

use db::{circuit, panel, TestDb};
use sparky::config::ConfirmPolicy;
use sparky::nec::units::{Amps, Edition, Phase, Volts};
use sparky::project::{MemberRole, ServiceSpec, TaskSpec};
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

/// A project read before is kept; any change to its rows, through this store, another
/// replica's or plain SQL, is seen by the next read.
async fn a_kept_project_is_read_again_after_any_change(db: TestDb) {
    let store = db.store();
    let replica = db.reopen().await;
    let p = store
        .create_project(
            &sparky::project::Workspace::local(),
            "Kept",
            Edition::Nec2023,
        )
        .await
        .expect("p");
    let lp1 = store.add_panel(p.id, &panel("LP-1")).await.expect("lp1");
    store.add_circuit(lp1.id, &circuit(1)).await.expect("c1");
    let numbers = |d: &sparky::project::ProjectData| {
        d.circuits.iter().map(|c| c.spec.number).collect::<Vec<_>>()
    };
    assert_eq!(numbers(&store.load_project(p.id).await.expect("load")), [1]);
    assert_eq!(
        numbers(&replica.load_project(p.id).await.expect("load")),
        [1]
    );
    // Read again unchanged: the same project.
    assert_eq!(
        store.load_project(p.id).await.expect("again"),
        store.load_project(p.id).await.expect("again")
    );

    // A change through the other replica.
    replica.add_circuit(lp1.id, &circuit(2)).await.expect("c2");
    assert_eq!(
        numbers(&store.load_project(p.id).await.expect("load")),
        [1, 2]
    );

    // Changes no store method made: a circuit edited, the project renamed, in plain SQL.
    db.execute(&format!(
        "UPDATE circuits SET description = 'Edited' WHERE panel_id = {} AND number = 2",
        lp1.id
    ))
    .await;
    let data = store.load_project(p.id).await.expect("load");
    assert_eq!(data.circuits[1].spec.description, "Edited");
    db.execute(&format!(
        "UPDATE projects SET name = 'Renamed' WHERE id = {}",
        p.id
    ))
    .await;
    assert_eq!(
        replica.load_project(p.id).await.expect("load").project.name,
        "Renamed"
    );

    // A panel deleted takes its circuits with it (a cascade).
    db.execute(&format!("DELETE FROM panels WHERE id = {}", lp1.id))
        .await;
    for s in [&store, &replica] {
        let data = s.load_project(p.id).await.expect("load");
        assert!(
            data.panels.is_empty() && data.circuits.is_empty(),
            "{data:?}"
        );
    }

    // A deleted project is gone, not served from what was kept.
    db.execute(&format!("DELETE FROM projects WHERE id = {}", p.id))
        .await;
    assert!(matches!(
        store.load_project(p.id).await,
        Err(StoreError::NotFound(_))
    ));
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

/// Eight people binding an ownerless project at the same moment: exactly one becomes its
/// owner; a claim of a project that has one changes nothing.
async fn an_ownerless_project_gets_one_owner(db: TestDb) {
    let store = db.store();
    let p = store
        .create_project(
            &sparky::project::Workspace::local(),
            "Barn",
            Edition::Nec2023,
        )
        .await
        .expect("project");
    let claims = (0..8).map(|i| {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .claim_ownerless(p.id, "console", &format!("user{i}"))
                .await
                .expect("claim")
        })
    });
    let won: Vec<bool> = futures::future::join_all(claims)
        .await
        .into_iter()
        .map(|r| r.expect("join"))
        .collect();
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
    let members = store.members(p.id).await.expect("members");
    assert_eq!(members.len(), 1, "{members:?}");
    assert_eq!(members[0].1, MemberRole::Owner);
    assert!(!store
        .claim_ownerless(p.id, "console", "late")
        .await
        .expect("claim"));
    assert!(matches!(
        store.claim_ownerless(p.id + 1000, "console", "x").await,
        Err(StoreError::NotFound(_))
    ));
}

db::both_backends!(
    an_ownerless_project_gets_one_owner,
    backend_and_ping,
    projects_are_unique_case_insensitively,
    update_project_saves_edition_and_policy,
    channel_bindings_and_roles,
    load_project_returns_everything,
    a_kept_project_is_read_again_after_any_change,
    projects_stay_in_their_workspace,
);
