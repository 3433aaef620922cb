//! Test harness for the store: runs one async test body against both backends.
//!
//! ```ignore
//! #[path = "support/db.rs"]
//! mod db;
//! use db::TestDb;
//!
//! async fn panels_conflict(db: TestDb) {
//!     let store = db.store();
//!     // ...
//! }
//!
//! db::both_backends!(panels_conflict);
//! ```
//!
//! `both_backends!(name, ...)` emits a module per body with two tests, `name::sqlite` (a
//! fresh temporary file) and `name::postgres` (a fresh database `sparky_t_<random>` on the
//! server at `SPARKY_TEST_DATABASE_URL`, dropped afterwards). A failure is reported with the
//! backend's name. Without `SPARKY_TEST_DATABASE_URL` the Postgres tests fail, never skip:
//! run the suite with `bash .ci/test`, which starts a throwaway Postgres.
#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use chrono::{Duration, Utc};
use sparky::config::ConfirmPolicy;
use sparky::core::history::new_message;
use sparky::core::session::SessionKey;
use sparky::llm::{ChatMessage, ToolCall, ToolResult};
use sparky::nec::units::{
    Amps, ConductorSize, Feet, Material, Phase, TempRating, VoltAmperes, Volts,
};
use sparky::project::{CircuitSpec, PanelSpec};
use sparky::store::{
    ActionItem, Backend, ConfirmRule, NewMessage, NewPendingAction, PostgresStore, SqliteStore,
    Store, StoreResult,
};
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, Executor};

/// Environment variable naming the Postgres server for the tests.
pub const PG_ENV: &str = "SPARKY_TEST_DATABASE_URL";

/// One test's database, on one backend. Cheap to clone.
#[derive(Clone)]
pub struct TestDb {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Backend,
    location: Location,
    primary: Arc<dyn Store>,
    /// Every concrete store opened, so cleanup can close their pools.
    opened: Mutex<Vec<Opened>>,
}

enum Location {
    Sqlite {
        _dir: tempfile::TempDir,
        path: PathBuf,
    },
    Postgres(Box<PgLocation>),
}

struct PgLocation {
    admin: PgConnectOptions,
    options: PgConnectOptions,
    url: String,
    name: String,
}

#[derive(Clone)]
enum Opened {
    Sqlite(SqliteStore),
    Postgres(PostgresStore),
}

impl Opened {
    async fn close(&self) {
        match self {
            Opened::Sqlite(s) => s.close().await,
            Opened::Postgres(s) => s.close().await,
        }
    }
}

fn pg_url() -> String {
    match std::env::var(PG_ENV) {
        Ok(url) if !url.trim().is_empty() => url,
        _ => panic!(
            "{PG_ENV} is not set, so the Postgres variant of this store test cannot run. \
             Run the test suite as the README says, with `bash .ci/test` (it starts a \
             throwaway Postgres with pgvector and sets {PG_ENV})."
        ),
    }
}

/// `url` with its database name replaced by `name`.
pub fn url_with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let authority_start = base.find("://").map(|i| i + 3).unwrap_or(0);
    let path_start = base[authority_start..]
        .find('/')
        .map(|i| authority_start + i)
        .unwrap_or(base.len());
    let mut out = format!("{}/{}", &base[..path_start], name);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

impl TestDb {
    /// A fresh, migrated database on `backend`.
    pub async fn create(backend: Backend) -> TestDb {
        let (location, opened) = match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("temporary directory");
                let path = dir.path().join("nested").join("sparky.db");
                let store = SqliteStore::open(&path).await.expect("open sqlite store");
                (Location::Sqlite { _dir: dir, path }, Opened::Sqlite(store))
            }
            Backend::Postgres => {
                let url = pg_url();
                let base = PgConnectOptions::from_str(&url)
                    .unwrap_or_else(|e| panic!("{PG_ENV} is not a Postgres URL: {e}"));
                let admin = base.clone().database("postgres");
                let name = format!("sparky_t_{}", uuid::Uuid::new_v4().simple());
                let mut conn = admin
                    .connect()
                    .await
                    .unwrap_or_else(|e| panic!("cannot reach Postgres at {PG_ENV}: {e}"));
                conn.execute(format!("CREATE DATABASE {name}").as_str())
                    .await
                    .expect("create test database");
                let _ = conn.close().await;
                let options = base.database(&name);
                let store = PostgresStore::connect_with(options.clone(), 8)
                    .await
                    .expect("connect postgres store");
                (
                    Location::Postgres(Box::new(PgLocation {
                        admin,
                        options,
                        url: url_with_database(&url, &name),
                        name,
                    })),
                    Opened::Postgres(store),
                )
            }
        };
        let primary: Arc<dyn Store> = match &opened {
            Opened::Sqlite(s) => Arc::new(s.clone()),
            Opened::Postgres(s) => Arc::new(s.clone()),
        };
        TestDb {
            inner: Arc::new(Inner {
                backend,
                location,
                primary,
                opened: Mutex::new(vec![opened]),
            }),
        }
    }

    /// Which backend this is.
    pub fn backend(&self) -> Backend {
        self.inner.backend
    }

    /// The store opened for the test.
    pub fn store(&self) -> Arc<dyn Store> {
        self.inner.primary.clone()
    }

    /// The SQLite file, on SQLite.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match &self.inner.location {
            Location::Sqlite { path, .. } => Some(path),
            Location::Postgres(_) => None,
        }
    }

    /// The URL of the test database, on Postgres.
    pub fn postgres_url(&self) -> Option<&str> {
        match &self.inner.location {
            Location::Postgres(pg) => Some(&pg.url),
            Location::Sqlite { .. } => None,
        }
    }

    /// Opens another store on the same database: the file reopened, or a new pool.
    pub async fn try_reopen(&self) -> StoreResult<Arc<dyn Store>> {
        let opened = match &self.inner.location {
            Location::Sqlite { path, .. } => Opened::Sqlite(SqliteStore::open(path).await?),
            Location::Postgres(pg) => {
                Opened::Postgres(PostgresStore::connect_with(pg.options.clone(), 8).await?)
            }
        };
        let store: Arc<dyn Store> = match &opened {
            Opened::Sqlite(s) => Arc::new(s.clone()),
            Opened::Postgres(s) => Arc::new(s.clone()),
        };
        self.remember(opened);
        Ok(store)
    }

    /// [`try_reopen`](Self::try_reopen), panicking on failure.
    pub async fn reopen(&self) -> Arc<dyn Store> {
        self.try_reopen().await.expect("reopen the store")
    }

    /// Closes every store opened so far (pools drained; SQLite checkpoints its WAL), as when
    /// the process stops.
    pub async fn close_all(&self) {
        for s in self.opened() {
            s.close().await;
        }
    }

    /// Runs raw SQL on a connection of its own.
    pub async fn execute(&self, sql: &str) {
        match &self.inner.location {
            Location::Sqlite { path, .. } => {
                let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(path)
                    .connect()
                    .await
                    .expect("connect to sqlite file");
                conn.execute(sql).await.expect("raw sql");
                let _ = conn.close().await;
            }
            Location::Postgres(pg) => {
                let mut conn = pg.options.connect().await.expect("connect to postgres");
                conn.execute(sql).await.expect("raw sql");
                let _ = conn.close().await;
            }
        }
    }

    /// Runs a raw query on a connection of its own and returns its first column as text.
    pub async fn fetch_text(&self, sql: &str) -> Vec<String> {
        match &self.inner.location {
            Location::Sqlite { path, .. } => {
                let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(path)
                    .connect()
                    .await
                    .expect("connect to sqlite file");
                let rows: Vec<String> = sqlx::query_scalar(sql)
                    .fetch_all(&mut conn)
                    .await
                    .expect("raw query");
                let _ = conn.close().await;
                rows
            }
            Location::Postgres(pg) => {
                let mut conn = pg.options.connect().await.expect("connect to postgres");
                let rows: Vec<String> = sqlx::query_scalar(sql)
                    .fetch_all(&mut conn)
                    .await
                    .expect("raw query");
                let _ = conn.close().await;
                rows
            }
        }
    }

    fn remember(&self, s: Opened) {
        self.inner
            .opened
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(s);
    }

    fn opened(&self) -> Vec<Opened> {
        self.inner
            .opened
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    async fn cleanup(&self) {
        self.close_all().await;
        if let Location::Postgres(pg) = &self.inner.location {
            // Best effort: a leftover database is harmless on a throwaway server.
            if let Ok(mut conn) = pg.admin.connect().await {
                let _ = conn
                    .execute(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", pg.name).as_str())
                    .await;
                let _ = conn.close().await;
            }
        }
    }
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-text panic)".to_string()
    }
}

/// Runs `body` on a fresh database of `backend`, cleans up, and re-raises a failure with the
/// backend and test named.
pub async fn run<F, Fut>(backend: Backend, test: &str, body: F)
where
    F: FnOnce(TestDb) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let label = match backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    };
    let db = TestDb::create(backend).await;
    let outcome = tokio::spawn(body(db.clone())).await;
    db.cleanup().await;
    if let Err(e) = outcome {
        let why = if e.is_panic() {
            panic_text(&*e.into_panic())
        } else {
            e.to_string()
        };
        panic!("[{label}] {test} failed: {why}");
    }
}

/// Emits `name::sqlite` and `name::postgres` tests for each async body `name(TestDb)`.
/// The calling module must have this file in scope as `db`.
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn sqlite() {
                    super::db::run(
                        sparky::store::Backend::Sqlite,
                        stringify!($name),
                        super::$name,
                    )
                    .await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn postgres() {
                    super::db::run(
                        sparky::store::Backend::Postgres,
                        stringify!($name),
                        super::$name,
                    )
                    .await;
                }
            }
        )*
    };
}
pub(crate) use both_backends;

// ----- sample data -----

/// A session key in the console workspace.
pub fn key(thread: &str) -> SessionKey {
    SessionKey::new("console", "local", "general", thread)
}

/// A 208 V three-phase panel.
pub fn panel(name: &str) -> PanelSpec {
    PanelSpec {
        name: name.to_string(),
        voltage: Volts(208.0),
        phase: Phase::Three,
        bus_rating: Amps(225.0),
        main_breaker: Some(Amps(200.0)),
        interrupting_rating_ka: Some(22.0),
        fed_from: Some("MDP".to_string()),
        spaces: 42,
        location: "Electrical room 101".to_string(),
    }
}

/// A 20 A branch circuit.
pub fn circuit(number: i32) -> CircuitSpec {
    CircuitSpec {
        number,
        poles: 1,
        description: format!("Receptacles {number}"),
        load_va: VoltAmperes(1440.0),
        continuous: false,
        breaker: Amps(20.0),
        conductor_size: Some(ConductorSize::Awg(12)),
        material: Material::Copper,
        insulation: TempRating::C75,
        length: Some(Feet(85.5)),
        conduit: "3/4 EMT".to_string(),
        motor: None,
        appliance: None,
    }
}

/// A user message.
pub fn user_msg(text: &str) -> NewMessage {
    new_message(
        &ChatMessage::user(text),
        Some("U1".to_string()),
        Some(format!("ev-{text}")),
    )
}

/// An assistant turn that calls one tool.
pub fn tool_call_msg(call_id: &str) -> NewMessage {
    new_message(
        &ChatMessage::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: call_id.to_string(),
                name: "add_circuit".to_string(),
                arguments: r#"{"panel":"LP-1","number":12}"#.to_string(),
                thought_signature: Some("sig==".to_string()),
            }],
            thought_signature: None,
        },
        None,
        None,
    )
}

/// The results message for one call.
pub fn tool_result_msg(call_id: &str) -> NewMessage {
    new_message(
        &ChatMessage::Tool {
            results: vec![ToolResult {
                call_id: call_id.to_string(),
                name: "add_circuit".to_string(),
                content: serde_json::json!({"ok": true, "panel_load_va": 12345.5}).into(),
                is_error: false,
            }],
        },
        None,
        None,
    )
}

/// A question, a call of one tool and its result, appended to a session as a turn leaves
/// them.
pub async fn append_tool_turn(
    store: &dyn Store,
    session_id: i64,
    question: &str,
) -> [sparky::store::StoredMessage; 3] {
    let mut stored = Vec::with_capacity(3);
    for m in [
        user_msg(question),
        tool_call_msg("call_1"),
        tool_result_msg("call_1"),
    ] {
        stored.push(store.append_message(session_id, &m).await.expect("append"));
    }
    stored.try_into().expect("three messages")
}

/// A pending action for `session_id` expiring in a day.
pub fn new_pending(id: &str, session_id: i64) -> NewPendingAction {
    let now = Utc::now();
    NewPendingAction {
        id: id.to_string(),
        session_id,
        rule: ConfirmRule {
            policy: ConfirmPolicy::Requester,
            requester: "U1".to_string(),
        },
        calls: vec![ToolCall {
            id: "call_1".to_string(),
            name: "add_circuit".to_string(),
            arguments: r#"{"panel":"LP-1","number":12}"#.to_string(),
            thought_signature: None,
        }
        .into()],
        prior_results: vec![ToolResult {
            call_id: "call_0".to_string(),
            name: "describe_panel".to_string(),
            content: serde_json::json!({"panel": "LP-1"}).into(),
            is_error: false,
        }
        .into()],
        items: vec![ActionItem {
            call_id: "call_1".to_string(),
            tool: "add_circuit".to_string(),
            args: serde_json::json!({"panel": "LP-1", "number": 12}),
            summary: "Add circuit 12 to LP-1".to_string(),
            details: vec!["LP-1 load after: 14.2 kVA".to_string()],
            plan: Default::default(),
        }],
        created_at: now,
        expires_at: now + Duration::hours(24),
        project_id: None,
        planned_version: None,
        origin: Default::default(),
    }
}
