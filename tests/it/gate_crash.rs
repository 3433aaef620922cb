//! A crash between applying a plan and committing it leaves all or nothing: the real binary
//! runs `sparky tool --yes` with a failpoint that aborts the process right before the apply
//! transaction commits; after the restart the action is still pending, the project and the
//! audit show nothing of it, and confirming it then applies exactly its plan once.

use crate::support;
use crate::tools_fixture;

use support::bot::{Bot, Db};

/// One number from the bot's database (both backends speak this SQL).
async fn scalar(bot: &Bot, db: Db, sql: &str) -> i64 {
    match db {
        Db::Sqlite => {
            let path = bot.env_value("SPARKY_DATABASE__SQLITE_PATH").unwrap();
            let pool = sqlx::SqlitePool::connect(&format!("sqlite://{path}"))
                .await
                .unwrap();
            let v: i64 = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
            pool.close().await;
            v
        }
        Db::Postgres => {
            let url = bot.env_value("DATABASE_URL").unwrap();
            let pool = sqlx::PgPool::connect(&url).await.unwrap();
            let v: i64 = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
            pool.close().await;
            v
        }
    }
}

async fn text(bot: &Bot, db: Db, sql: &str) -> String {
    match db {
        Db::Sqlite => {
            let path = bot.env_value("SPARKY_DATABASE__SQLITE_PATH").unwrap();
            let pool = sqlx::SqlitePool::connect(&format!("sqlite://{path}"))
                .await
                .unwrap();
            let v: String = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
            pool.close().await;
            v
        }
        Db::Postgres => {
            let url = bot.env_value("DATABASE_URL").unwrap();
            let pool = sqlx::PgPool::connect(&url).await.unwrap();
            let v: String = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
            pool.close().await;
            v
        }
    }
}

const CIRCUITS: &str = "SELECT COUNT(*) FROM circuits WHERE description = 'Heat pump'";
const VERSION: &str = "SELECT version FROM projects WHERE name = 'Shop'";

async fn a_crash_before_commit_leaves_all_or_nothing(db: Db) {
    let mut bot = Bot::new(db, None).await;
    let (_, ok) = bot.run(&["migrate"], "").await;
    assert!(ok);
    let store = bot.store().await;
    tools_fixture::seed(&store, "Shop").await;
    let args = r#"{"panel":"LP-1","description":"Heat pump","load_va":6000,"poles":2}"#;
    let tool = [
        "tool",
        "add_circuit",
        "--project",
        "Shop",
        "--yes",
        "--user",
        "cli",
        "--args",
        args,
    ];

    bot.set("SPARKY_FAILPOINT", "apply_before_commit");
    let (out, stderr, ok) = bot.run_bytes(&tool, b"").await;
    assert!(!ok, "the process must abort: {out:?} {stderr}");
    assert!(stderr.contains("failpoint apply_before_commit"), "{stderr}");

    // Restarted: the action is pending with its plan; nothing of the apply is visible.
    bot.set("SPARKY_FAILPOINT", "");
    assert_eq!(
        scalar(&bot, db, "SELECT COUNT(*) FROM pending_actions").await,
        1
    );
    assert_eq!(
        text(&bot, db, "SELECT state FROM pending_actions").await,
        "pending"
    );
    assert_eq!(scalar(&bot, db, CIRCUITS).await, 0);
    assert_eq!(scalar(&bot, db, VERSION).await, 0);
    assert_eq!(
        scalar(
            &bot,
            db,
            "SELECT COUNT(*) FROM tool_audit WHERE kind = 'proposed'"
        )
        .await,
        1
    );
    assert_eq!(
        scalar(
            &bot,
            db,
            "SELECT COUNT(*) FROM tool_audit WHERE action_id IS NOT NULL AND kind <> 'proposed'"
        )
        .await,
        0,
        "no confirmation or execution is recorded for a change that was not applied"
    );
    let action = text(&bot, db, "SELECT id FROM pending_actions").await;

    // The proposal left behind is confirmed after the restart, in its own conversation: its
    // plan applies once.
    let thread = text(
        &bot,
        db,
        "SELECT s.thread FROM sessions s JOIN pending_actions a ON a.session_id = s.id",
    )
    .await;
    let lines = bot
        .chat(
            "cli",
            &["--project", "Shop", "--thread", &thread],
            &format!("/confirm {action}\n"),
        )
        .await;
    let resolved = support::bot::one(&lines, "resolved");
    assert_eq!(resolved["outcome"], "executed", "{lines:?}");
    assert_eq!(scalar(&bot, db, CIRCUITS).await, 1);
    assert_eq!(scalar(&bot, db, VERSION).await, 1);
    assert_eq!(
        text(&bot, db, "SELECT state FROM pending_actions").await,
        "executed"
    );
    let confirmed = format!(
        "SELECT COUNT(*) FROM tool_audit WHERE action_id = '{action}' AND kind = 'confirmed'"
    );
    assert_eq!(scalar(&bot, db, &confirmed).await, 1);
    let executed = format!(
        "SELECT COUNT(*) FROM tool_audit WHERE action_id = '{action}' AND kind = 'execution' \
         AND tool = 'add_circuit' AND actor = 'cli'"
    );
    assert_eq!(scalar(&bot, db, &executed).await, 1);

    // A fresh run without the failpoint applies at once, next to it.
    let (out, ok) = bot.run(&tool, "").await;
    assert!(ok, "{out:?}");
    assert_eq!(scalar(&bot, db, CIRCUITS).await, 2);
    assert_eq!(scalar(&bot, db, VERSION).await, 2);
}

#[tokio::test]
async fn a_crash_before_commit_leaves_all_or_nothing_sqlite() {
    a_crash_before_commit_leaves_all_or_nothing(Db::Sqlite).await;
}

#[tokio::test]
async fn a_crash_before_commit_leaves_all_or_nothing_postgres() {
    a_crash_before_commit_leaves_all_or_nothing(Db::Postgres).await;
}

/// `project create` is one transaction: a crash after the project and its owner are written
/// and before the channel is bound leaves no project at all, and creating it again works.
async fn a_crash_while_creating_a_project_leaves_none(db: Db) {
    let mut bot = Bot::new(db, None).await;
    let projects = "SELECT COUNT(*) FROM projects WHERE name = 'Barn'";
    let members = "SELECT COUNT(*) FROM project_members";
    let create = [
        "chat",
        "--user",
        "ann",
        "--thread",
        "t1",
        "--project",
        "Barn",
    ];
    bot.set("SPARKY_FAILPOINT", "create_project_before_bind");
    let (out, stderr, ok) = bot.run_bytes(&create, b"").await;
    assert!(!ok, "the process must abort: {out:?} {stderr}");
    assert!(
        stderr.contains("failpoint create_project_before_bind"),
        "{stderr}"
    );
    assert_eq!(scalar(&bot, db, projects).await, 0);
    assert_eq!(scalar(&bot, db, members).await, 0);
    bot.set("SPARKY_FAILPOINT", "");
    let (out, stderr, ok) = bot.run_bytes(&create, b"").await;
    assert!(ok, "{out:?} {stderr}");
    assert_eq!(scalar(&bot, db, projects).await, 1);
    assert_eq!(
        text(
            &bot,
            db,
            "SELECT role FROM project_members WHERE user_id = 'ann'"
        )
        .await,
        "owner"
    );
    assert_eq!(
        scalar(
            &bot,
            db,
            "SELECT COUNT(*) FROM channel_bindings b JOIN projects p ON p.id = b.project_id WHERE p.name = 'Barn'"
        )
        .await,
        1
    );
}

#[tokio::test]
async fn a_crash_while_creating_a_project_leaves_none_sqlite() {
    a_crash_while_creating_a_project_leaves_none(Db::Sqlite).await;
}

#[tokio::test]
async fn a_crash_while_creating_a_project_leaves_none_postgres() {
    a_crash_while_creating_a_project_leaves_none(Db::Postgres).await;
}
