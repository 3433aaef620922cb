//! Store: migrations, the schema-version guard and `connect`, on SQLite and Postgres.

use crate::support::db;

use std::collections::BTreeMap;

use db::TestDb;
use sparky::config::Config;
use sparky::nec::units::Edition;
use sparky::store::{migrations, Backend, StoreError};

fn newest_shipped(backend: Backend) -> i64 {
    let migrator = match backend {
        Backend::Postgres => &migrations::POSTGRES,
        Backend::Sqlite => &migrations::SQLITE,
    };
    migrator.iter().map(|m| m.version).max().unwrap_or(0)
}

async fn schema_too_new_is_refused(db: TestDb) {
    let store = db.store();
    store
        .create_project(
            &sparky::project::Workspace::local(),
            "Kept",
            Edition::Nec2023,
        )
        .await
        .expect("data");
    let future = newest_shipped(db.backend()) + 1000;
    let sql = match db.backend() {
        Backend::Postgres => format!(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES ({future}, 'from the future', TRUE, '\\x00'::bytea, 0)"
        ),
        Backend::Sqlite => format!(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES ({future}, 'from the future', TRUE, x'00', 0)"
        ),
    };
    db.execute(&sql).await;
    match db.try_reopen().await {
        Err(StoreError::SchemaTooNew { found, supported }) => {
            assert_eq!(found, future);
            assert_eq!(supported, newest_shipped(db.backend()));
            let msg = StoreError::SchemaTooNew { found, supported }.to_string();
            assert!(msg.contains("upgrade sparky"), "{msg}");
        }
        Err(e) => panic!("expected SchemaTooNew, got {e}"),
        Ok(_) => panic!("expected SchemaTooNew, but the store opened"),
    }
    // Nothing was touched: the data is still readable through the already-open store.
    assert!(store
        .project_by_name(&sparky::project::Workspace::local(), "Kept")
        .await
        .expect("read")
        .is_some());
}

async fn reopening_is_idempotent(db: TestDb) {
    let store = db.store();
    store
        .create_project(
            &sparky::project::Workspace::local(),
            "Once",
            Edition::Nec2020,
        )
        .await
        .expect("create");
    for _ in 0..2 {
        let again = db.reopen().await;
        assert_eq!(
            again
                .list_projects(&sparky::project::Workspace::local())
                .await
                .expect("list")
                .len(),
            1
        );
    }
}

async fn connect_follows_the_configuration(db: TestDb) {
    let mut config = Config::load(None, &BTreeMap::new()).expect("default config");
    config.database.max_connections = 3;
    match db.backend() {
        Backend::Sqlite => {
            // A fresh file in a directory that does not exist yet.
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("a").join("b").join("bot.db");
            config.database.url = String::new();
            config.database.sqlite_path = path.display().to_string();
            let store = sparky::app::connect_store(&config).await.expect("connect");
            assert_eq!(store.backend(), Backend::Sqlite);
            store
                .create_project(
                    &sparky::project::Workspace::local(),
                    "Via config",
                    Edition::Nec2023,
                )
                .await
                .expect("write");
            assert!(path.exists());
        }
        Backend::Postgres => {
            config.database.url = db.postgres_url().expect("url").to_string();
            let store = sparky::app::connect_store(&config).await.expect("connect");
            assert_eq!(store.backend(), Backend::Postgres);
            store
                .create_project(
                    &sparky::project::Workspace::local(),
                    "Via config",
                    Edition::Nec2023,
                )
                .await
                .expect("write");
            // Same database as the harness's store.
            assert!(db
                .store()
                .project_by_name(&sparky::project::Workspace::local(), "via config")
                .await
                .expect("read")
                .is_some());
        }
    }
}

db::both_backends!(
    schema_too_new_is_refused,
    reopening_is_idempotent,
    connect_follows_the_configuration,
);

/// Discord DMs used to share one workspace ("dm"). Rows written that way move to the
/// workspace of the DM's own user ("dm-<id>"): sessions by who wrote in them, projects by their
/// owner, bindings with their channel's sessions; nothing of one person is left in another's.
async fn dm_rows_move_to_their_users_workspace(db: TestDb) {
    use sparky::project::{MemberRole, Workspace};
    use sparky::store::NewMessage;
    let store = db.store();
    let shared = Workspace::new("discord", "dm");
    let mut projects = Vec::new();
    for (user, channel, name) in [("U1", "DA", "Alpha"), ("U2", "DB", "Beta")] {
        let p = store
            .create_project(&shared, name, Edition::Nec2023)
            .await
            .expect("project");
        store
            .set_member_role(p.id, "discord", user, MemberRole::Owner)
            .await
            .expect("owner");
        store
            .bind_channel("discord", "dm", channel, p.id)
            .await
            .expect("bind");
        let key = sparky::core::session::SessionKey::new("discord", "dm", channel, channel);
        let session = store
            .open_session(&key, Default::default(), None)
            .await
            .expect("session");
        let said = NewMessage {
            author: Some(user.to_string()),
            ..db::user_msg(&format!("hello from {user}"))
        };
        store
            .append_message(session.id, &said)
            .await
            .expect("message");
        projects.push((user, channel, p.id, session.id));
    }
    let migration = match db.backend() {
        Backend::Sqlite => include_str!("../../migrations/sqlite/0014_dm_workspaces.sql"),
        Backend::Postgres => include_str!("../../migrations/postgres/0014_dm_workspaces.sql"),
    };
    db.execute(migration).await;
    assert!(store.list_projects(&shared).await.expect("list").is_empty());
    for (user, channel, project, session) in projects {
        let own = format!("dm-{user}");
        let listed = store
            .list_projects(&Workspace::new("discord", own.as_str()))
            .await
            .expect("list");
        assert_eq!(listed.len(), 1, "{user}: {listed:?}");
        assert_eq!(listed[0].id, project);
        assert_eq!(
            store
                .channel_project("discord", &own, channel)
                .await
                .expect("binding"),
            Some(project)
        );
        let key = sparky::core::session::SessionKey::new("discord", &own, channel, channel);
        let again = store
            .open_session(&key, Default::default(), None)
            .await
            .expect("session");
        assert_eq!(again.id, session, "the conversation continues");
    }
}

db::both_backends!(dm_rows_move_to_their_users_workspace);

/// Documents scoped by a bare workspace id move to `platform:id` (migration 0020): a Slack
/// team's document is then seen by that team and not by a Discord guild with the same id; an
/// id no platform uses is left visible to nobody.
async fn document_rows_move_to_their_platforms_workspace(db: TestDb) {
    use sparky::project::Workspace;
    use sparky::store::{ChunkFilter, NewChunk};
    let store = db.store();
    store
        .create_project(&Workspace::new("slack", "T1"), "Shop", Edition::Nec2023)
        .await
        .expect("project");
    for (source, workspace) in [("team.md", "T1"), ("local.md", "local"), ("lost.md", "T9")] {
        db.execute(&format!(
            "INSERT INTO documents (source, title, workspace, content_hash, created_at, \
             updated_at) VALUES ('{source}', '{source}', '{workspace}', 'h', \
             '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00')"
        ))
        .await;
        let id: i64 = db
            .fetch_text(&format!(
                "SELECT CAST(id AS TEXT) FROM documents WHERE source = '{source}'"
            ))
            .await[0]
            .parse()
            .expect("id");
        store
            .replace_chunks(
                id,
                &[NewChunk {
                    section: Some("210.8".into()),
                    edition: None,
                    page: None,
                    heading: "210.8".into(),
                    text: format!("GFCI notes of {source}"),
                    content_hash: format!("c-{source}"),
                }],
            )
            .await
            .expect("chunks");
    }
    let migration = match db.backend() {
        Backend::Sqlite => include_str!("../../migrations/sqlite/0020_document_workspaces.sql"),
        Backend::Postgres => include_str!("../../migrations/postgres/0020_document_workspaces.sql"),
    };
    db.execute(migration).await;
    let seen_by = |w: Workspace| {
        let store = store.clone();
        async move {
            let filter = ChunkFilter {
                edition: None,
                workspace: Some(w),
            };
            let mut sources: Vec<String> = store
                .chunks_by_section("210.8", &filter)
                .await
                .expect("search")
                .into_iter()
                .map(|c| c.source)
                .collect();
            sources.sort();
            sources
        }
    };
    assert_eq!(seen_by(Workspace::new("slack", "T1")).await, ["team.md"]);
    assert!(seen_by(Workspace::new("discord", "T1")).await.is_empty());
    assert_eq!(seen_by(Workspace::local()).await, ["local.md"]);
    assert!(seen_by(Workspace::new("slack", "T9")).await.is_empty());
    assert_eq!(
        db.fetch_text("SELECT workspace FROM documents ORDER BY source")
            .await,
        ["console:local", "T9", "slack:T1"]
    );
}

db::both_backends!(document_rows_move_to_their_platforms_workspace);

/// The migrations the binary embeds are the repository's migration files as sqlx itself reads
/// a migrations folder: same versions, descriptions, kinds and checksums, so a database migrated
/// by any earlier build is recognised and not migrated twice.
#[tokio::test]
async fn embedded_migrations_are_the_files_as_sqlx_reads_them() {
    for (dir, embedded) in [
        ("migrations/postgres", &*migrations::POSTGRES),
        ("migrations/sqlite", &*migrations::SQLITE),
    ] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let read = sqlx::migrate::Migrator::new(path).await.expect("read");
        let shape = |m: &sqlx::migrate::Migrator| -> Vec<_> {
            m.iter()
                .map(|m| {
                    let kind = format!("{:?}", m.migration_type);
                    (
                        m.version,
                        m.description.to_string(),
                        kind,
                        m.checksum.to_vec(),
                        m.no_tx,
                    )
                })
                .collect()
        };
        assert!(read.iter().count() >= 19, "{dir}");
        assert_eq!(shape(embedded), shape(&read), "{dir}");
    }
}
