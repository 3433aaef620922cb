//! Projects belong to their workspace: commands, model tool calls and the migration that
//! moved older projects, on SQLite and Postgres; roles gate binding and role changes.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;
use sparky::config::Config;
use sparky::core::commands::{self, Command, CommandOutput};
use sparky::core::session::SessionKey;
use sparky::core::{Agent, CollectSink, Effect, Input, InputAction};
use sparky::nec::units::Edition;
use sparky::project::{MemberRole, Workspace};
use sparky::store::Store;

use crate::support::bot::{fresh_postgres_url, Db};
use crate::support::fake_llm::{Dialect, FakeLlm, Reply};
use crate::tools_fixture::seed_in;

struct World {
    agent: Agent,
    store: Arc<dyn Store>,
    fake: FakeLlm,
    _dir: tempfile::TempDir,
}

async fn world(db: Db) -> World {
    sparky::llm::tls::install_default_crypto_provider();
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut env: BTreeMap<String, String> = fake.env().into_iter().collect();
    env.insert("SPARKY_LLM__MAX_RETRIES".into(), "0".into());
    match db {
        Db::Sqlite => {
            env.insert(
                "SPARKY_DATABASE__SQLITE_PATH".into(),
                dir.path().join("w.db").display().to_string(),
            );
        }
        Db::Postgres => {
            env.insert("DATABASE_URL".into(), fresh_postgres_url().await);
        }
    }
    let config = Config::load(None, &env).expect("config");
    let store = sparky::app::connect_store(&config).await.expect("store");
    let agent = Agent::new(
        store.clone(),
        sparky::llm::resilient::build_provider(&config),
        Arc::new(sparky::tools::default_registry(1000)),
        config.agent.clone(),
        &config.limits,
    );
    World {
        agent,
        store,
        fake,
        _dir: dir,
    }
}

fn team_a(channel: &str) -> SessionKey {
    SessionKey::new("slack", "TA", channel, "t")
}

fn team_b(channel: &str) -> SessionKey {
    SessionKey::new("slack", "TB", channel, "t")
}

async fn cmd(w: &World, key: &SessionKey, user: &str, text: &str) -> CommandOutput {
    let command: Command = text.parse().expect("command");
    commands::execute(&w.agent, key, user, command).await
}

/// The error a name gets in `key`'s workspace, with the name masked.
async fn use_error(w: &World, key: &SessionKey, name: &str) -> String {
    let out = cmd(w, key, "mallory", &format!("project use {name}")).await;
    assert!(out.is_error, "{out:?}");
    out.text.replace(name, "NAME")
}

async fn another_workspace_sees_nothing(db: Db) {
    let w = world(db).await;
    let shop = seed_in(&w.store, &Workspace::new("slack", "TA"), "Shop").await;
    w.store
        .bind_channel("slack", "TA", "CA", shop)
        .await
        .expect("bind");
    let unbound = cmd(&w, &team_b("CB"), "mallory", "project show").await;
    assert!(unbound.is_error);

    // `use` of team A's project fails exactly like a name that exists nowhere.
    assert_eq!(
        use_error(&w, &team_b("CB"), "Shop").await,
        use_error(&w, &team_b("CB"), "Nowhere").await
    );
    assert_eq!(
        w.store
            .channel_project("slack", "TB", "CB")
            .await
            .expect("read"),
        None
    );
    // Neither list, show nor export of team B reaches it.
    let list = cmd(&w, &team_b("CB"), "mallory", "project list").await;
    assert_eq!(list.json["projects"], json!([]), "{list:?}");
    for sub in ["show", "export", "members"] {
        let out = cmd(&w, &team_b("CB"), "mallory", &format!("project {sub}")).await;
        assert_eq!(out, unbound, "project {sub}");
    }
    // The command line's export is scoped the same way.
    let local =
        sparky::services::project_files::export(w.store.as_ref(), &Workspace::local(), "Shop")
            .await;
    assert!(local.is_err(), "{local:?}");
    let own = sparky::services::project_files::export(
        w.store.as_ref(),
        &Workspace::new("slack", "TA"),
        "Shop",
    )
    .await;
    assert_eq!(own.expect("own workspace").panels.len(), 2);

    // Team B may use the same name for its own project.
    let created = cmd(&w, &team_b("CB"), "mallory", "project create Shop").await;
    assert!(!created.is_error, "{created:?}");
    let bound_b = w
        .store
        .channel_project("slack", "TB", "CB")
        .await
        .expect("read")
        .expect("bound");
    assert_ne!(bound_b, shop);

    // A model tool call naming team A's panel, from team B's thread, gets B's data only.
    w.fake.push(Reply::ToolCalls(vec![(
        "describe_panel".into(),
        json!({"panel": "LP-1"}),
    )]));
    w.fake.push(Reply::Text("Done.".into()));
    let sink = CollectSink::default();
    w.agent
        .handle(
            Input {
                key: team_b("CB"),
                user: "mallory".into(),
                event_id: None,
                action: InputAction::Message {
                    text: "describe LP-1 of Shop".into(),
                    mode: None,
                },
            },
            &sink,
        )
        .await
        .expect("turn");
    assert!(sink
        .take()
        .iter()
        .any(|e| matches!(e, Effect::Text { text, .. } if text == "Done.")));
    let requests = w.fake.requests();
    let seen_by_model = requests.last().expect("second model request").to_string();
    assert!(
        seen_by_model.contains("not found") || seen_by_model.contains("no panel"),
        "{seen_by_model}"
    );
    for secret in ["Kitchen receptacles", "EV charger garage", "Well pump"] {
        assert!(!seen_by_model.contains(secret), "{secret} leaked");
    }
}

#[tokio::test]
async fn another_workspace_sees_nothing_sqlite() {
    another_workspace_sees_nothing(Db::Sqlite).await;
}

#[tokio::test]
async fn another_workspace_sees_nothing_postgres() {
    another_workspace_sees_nothing(Db::Postgres).await;
}

async fn roles_gate_binding_and_role_changes(db: Db) {
    let w = world(db).await;
    let created = cmd(&w, &team_a("C1"), "alice", "project create Shop 2020").await;
    assert!(!created.is_error, "{created:?}");
    let shop = w
        .store
        .project_by_name(&Workspace::new("slack", "TA"), "shop")
        .await
        .expect("read")
        .expect("created");
    assert_eq!(
        w.store
            .member_role(shop.id, "slack", "alice")
            .await
            .expect("role"),
        Some(MemberRole::Owner),
        "the creator owns it"
    );

    // Bob has no role: he can neither bind another channel nor hand out roles.
    let refused = cmd(&w, &team_a("C2"), "bob", "project use Shop").await;
    assert!(
        refused.is_error && refused.text.contains("editor"),
        "{refused:?}"
    );
    assert_eq!(
        w.store
            .channel_project("slack", "TA", "C2")
            .await
            .expect("read"),
        None
    );
    let refused = cmd(&w, &team_a("C1"), "bob", "project grant bob owner").await;
    assert!(
        refused.is_error && refused.text.contains("owner"),
        "{refused:?}"
    );
    assert_eq!(
        w.store
            .member_role(shop.id, "slack", "bob")
            .await
            .expect("role"),
        None
    );

    // The owner grants him editor by mention; then he can bind his channel.
    let granted = cmd(
        &w,
        &team_a("C1"),
        "alice",
        "project grant <@bob|Bob> editor",
    )
    .await;
    assert!(!granted.is_error, "{granted:?}");
    let used = cmd(&w, &team_a("C2"), "bob", "project use shop").await;
    assert!(!used.is_error, "{used:?}");
    assert_eq!(
        w.store
            .channel_project("slack", "TA", "C2")
            .await
            .expect("read"),
        Some(shop.id)
    );
    let members = cmd(&w, &team_a("C2"), "bob", "project members").await;
    assert_eq!(
        members.json["members"],
        json!([{"user": "alice", "role": "owner"}, {"user": "bob", "role": "editor"}])
    );
    // An editor cannot change roles; the last owner cannot be removed.
    let refused = cmd(&w, &team_a("C2"), "bob", "project revoke alice").await;
    assert!(refused.is_error, "{refused:?}");
    let refused = cmd(&w, &team_a("C1"), "alice", "project revoke alice").await;
    assert!(
        refused.is_error && refused.text.contains("owner"),
        "{refused:?}"
    );
    let revoked = cmd(&w, &team_a("C1"), "alice", "project revoke bob").await;
    assert!(!revoked.is_error, "{revoked:?}");
    assert_eq!(
        w.store
            .member_role(shop.id, "slack", "bob")
            .await
            .expect("role"),
        None
    );
    // Binding a third channel is refused again.
    let refused = cmd(&w, &team_a("C3"), "bob", "project use Shop").await;
    assert!(refused.is_error, "{refused:?}");
}

#[tokio::test]
async fn roles_gate_binding_and_role_changes_sqlite() {
    roles_gate_binding_and_role_changes(Db::Sqlite).await;
}

#[tokio::test]
async fn roles_gate_binding_and_role_changes_postgres() {
    roles_gate_binding_and_role_changes(Db::Postgres).await;
}

/// Rows written by a Sparky from before workspaces: "Shop" bound first in Slack team T1, later
/// also in Discord guild G1 (with a session there), "Van" bound in G1, "Lab" never bound.
const LEGACY_ROWS: &[&str] = &[
    "INSERT INTO projects (id, name, edition, confirm_policy, created_at) VALUES \
     (1, 'Shop', 2023, NULL, '2024-01-01T00:00:00Z'), \
     (2, 'Lab', 2020, NULL, '2024-01-02T00:00:00Z'), \
     (3, 'Van', 2023, NULL, '2024-01-03T00:00:00Z')",
    "INSERT INTO channel_bindings (platform, workspace, channel, project_id, bound_at) VALUES \
     ('slack', 'T1', 'C1', 1, '2024-01-01T00:00:01Z'), \
     ('discord', 'G1', 'C9', 1, '2024-02-01T00:00:00Z'), \
     ('discord', 'G1', 'C8', 3, '2024-01-03T00:00:01Z')",
    "INSERT INTO sessions (platform, workspace, channel, thread, mode, project_id, created_at) VALUES \
     ('slack', 'T1', 'C1', 'a', 'general', 1, '2024-01-05T00:00:00Z'), \
     ('discord', 'G1', 'C9', 'b', 'general', 1, '2024-02-02T00:00:00Z')",
];

/// The first migration alone, from the shipped files, so older databases can be built.
async fn first_migration(dir: &std::path::Path, backend: &str) -> sqlx::migrate::Migrator {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(backend)
        .join("0001_initial.sql");
    std::fs::create_dir_all(dir).expect("dir");
    std::fs::copy(&src, dir.join("0001_initial.sql")).expect("copy");
    sqlx::migrate::Migrator::new(dir).await.expect("migrator")
}

async fn legacy_projects_move_into_their_workspace(db: Db) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    match db {
        Db::Sqlite => {
            let path = dir.path().join("old.db");
            let url = format!("sqlite://{}?mode=rwc", path.display());
            let pool = sqlx::SqlitePool::connect(&url).await.expect("sqlite");
            let old = first_migration(&dir.path().join("m"), "sqlite").await;
            old.run(&pool).await.expect("old schema");
            for sql in LEGACY_ROWS {
                sqlx::query(sql).execute(&pool).await.expect("legacy rows");
            }
            pool.close().await;
            env.insert(
                "SPARKY_DATABASE__SQLITE_PATH".into(),
                path.display().to_string(),
            );
        }
        Db::Postgres => {
            let url = fresh_postgres_url().await;
            let pool = sqlx::PgPool::connect(&url).await.expect("postgres");
            let old = first_migration(&dir.path().join("m"), "postgres").await;
            old.run(&pool).await.expect("old schema");
            for sql in LEGACY_ROWS {
                sqlx::query(sql).execute(&pool).await.expect("legacy rows");
            }
            // Rows inserted with explicit ids leave the identity behind.
            sqlx::query("SELECT setval(pg_get_serial_sequence('projects', 'id'), 3)")
                .execute(&pool)
                .await
                .expect("identity");
            pool.close().await;
            env.insert("DATABASE_URL".into(), url);
        }
    }
    let config = Config::load(None, &env).expect("config");
    let store = sparky::app::connect_store(&config)
        .await
        .expect("migrated store");

    let slack = Workspace::new("slack", "T1");
    let guild = Workspace::new("discord", "G1");
    let names = |list: Vec<sparky::project::Project>| -> Vec<String> {
        list.into_iter().map(|p| p.name).collect()
    };
    assert_eq!(
        names(store.list_projects(&slack).await.expect("list")),
        ["Shop"]
    );
    assert_eq!(
        names(store.list_projects(&guild).await.expect("list")),
        ["Van"]
    );
    assert_eq!(
        names(
            store
                .list_projects(&Workspace::local())
                .await
                .expect("list")
        ),
        ["Lab"]
    );
    // The guild's later binding to the team's project is cut; its own stays.
    assert_eq!(
        store
            .channel_project("slack", "T1", "C1")
            .await
            .expect("read"),
        Some(1)
    );
    assert_eq!(
        store
            .channel_project("discord", "G1", "C9")
            .await
            .expect("read"),
        None
    );
    assert_eq!(
        store
            .channel_project("discord", "G1", "C8")
            .await
            .expect("read"),
        Some(3)
    );
    let kept = store
        .open_session(
            &SessionKey::new("slack", "T1", "C1", "a"),
            Default::default(),
            None,
        )
        .await
        .expect("session");
    assert_eq!(kept.project_id, Some(1));
    let cut = store
        .open_session(
            &SessionKey::new("discord", "G1", "C9", "b"),
            Default::default(),
            None,
        )
        .await
        .expect("session");
    assert_eq!(cut.project_id, None);
    // Names are now unique per workspace only.
    store
        .create_project(&guild, "Shop", Edition::Nec2023)
        .await
        .expect("the guild may have its own Shop");
}

#[tokio::test]
async fn legacy_projects_move_into_their_workspace_sqlite() {
    legacy_projects_move_into_their_workspace(Db::Sqlite).await;
}

#[tokio::test]
async fn legacy_projects_move_into_their_workspace_postgres() {
    legacy_projects_move_into_their_workspace(Db::Postgres).await;
}

/// Runs a tool command in thread `thread` of `key`'s channel as `user`; returns the card's
/// action id.
async fn propose(
    w: &World,
    key: &SessionKey,
    user: &str,
    name: &str,
    args: serde_json::Value,
) -> String {
    let sink = CollectSink::default();
    let input = Input {
        key: key.clone(),
        user: user.into(),
        event_id: None,
        action: InputAction::Tool {
            name: name.into(),
            args: args.to_string(),
        },
    };
    w.agent.handle(input, &sink).await.expect("turn");
    sink.take()
        .into_iter()
        .find_map(|e| match e {
            Effect::Confirmation { action_id, .. } => Some(action_id),
            _ => None,
        })
        .expect("a card")
}

async fn decide(w: &World, key: &SessionKey, user: &str, action: InputAction) {
    let sink = CollectSink::default();
    let input = Input {
        key: key.clone(),
        user: user.into(),
        event_id: None,
        action,
    };
    w.agent.handle(input, &sink).await.expect("turn");
}

async fn owners_and_editors_read_a_projects_changes(db: Db) {
    let w = world(db).await;
    let here = team_a("C1");
    assert!(
        !cmd(&w, &here, "alice", "project create Shop")
            .await
            .is_error
    );
    let empty = cmd(&w, &here, "alice", "audit").await;
    assert!(
        !empty.is_error && empty.text.contains("No change"),
        "{empty:?}"
    );

    let applied = propose(
        &w,
        &here,
        "alice",
        "add_panel",
        json!({"name": "LP-9", "bus_rating": 100, "voltage": 240, "phase": 1}),
    )
    .await;
    decide(
        &w,
        &here,
        "alice",
        InputAction::Confirm {
            action_id: Some(applied.clone()),
        },
    )
    .await;
    let cancelled = propose(
        &w,
        &here,
        "alice",
        "add_panel",
        json!({"name": "LP-10", "bus_rating": 225, "voltage": 240, "phase": 1}),
    )
    .await;
    decide(
        &w,
        &here,
        "alice",
        InputAction::Cancel {
            action_id: Some(cancelled.clone()),
        },
    )
    .await;

    // Newest first: who asked, who decided, what, where.
    let out = cmd(&w, &here, "alice", "audit").await;
    assert!(!out.is_error, "{out:?}");
    let changes = out.json["changes"].as_array().expect("changes");
    assert_eq!(changes.len(), 2, "{out:?}");
    assert_eq!(changes[0]["action_id"], json!(cancelled));
    assert_eq!(changes[0]["outcome"], json!("cancelled"));
    assert_eq!(changes[1]["action_id"], json!(applied));
    assert_eq!(changes[1]["outcome"], json!("applied"));
    for c in changes {
        assert_eq!(c["proposed_by"], json!("alice"));
        assert_eq!(c["decided_by"], json!("alice"));
        assert_eq!(c["tools"], json!(["add_panel"]));
        assert_eq!(c["thread"]["channel"], json!("C1"));
    }
    assert!(
        changes[1]["changes"][0]
            .as_str()
            .is_some_and(|s| s.contains("LP-9")),
        "{changes:?}"
    );
    assert!(
        out.text.contains("LP-10") && out.text.contains("cancelled"),
        "{}",
        out.text
    );
    let one = cmd(&w, &team_a("C7"), "alice", "audit Shop 1").await;
    assert_eq!(
        one.json["changes"].as_array().map(Vec::len),
        Some(1),
        "{one:?}"
    );

    // Nobody without a role, and no viewer, reads it; an editor does.
    let refused = cmd(&w, &here, "bob", "audit").await;
    assert!(
        refused.is_error && refused.text.contains("editors"),
        "{refused:?}"
    );
    assert!(
        !cmd(&w, &here, "alice", "project grant bob viewer")
            .await
            .is_error
    );
    assert!(cmd(&w, &here, "bob", "audit Shop").await.is_error);
    assert!(
        !cmd(&w, &here, "alice", "project grant bob editor")
            .await
            .is_error
    );
    let read = cmd(&w, &here, "bob", "audit Shop").await;
    assert_eq!(
        read.json["changes"].as_array().map(Vec::len),
        Some(2),
        "{read:?}"
    );

    // Another workspace's project is not found, as if it did not exist.
    let other = cmd(&w, &team_b("C1"), "alice", "audit Shop").await;
    assert!(
        other.is_error && other.text.contains("no project"),
        "{other:?}"
    );
}

#[tokio::test]
async fn owners_and_editors_read_a_projects_changes_sqlite() {
    owners_and_editors_read_a_projects_changes(Db::Sqlite).await;
}

#[tokio::test]
async fn owners_and_editors_read_a_projects_changes_postgres() {
    owners_and_editors_read_a_projects_changes(Db::Postgres).await;
}
