//! The console's `/tool` and `sparky tool` run through the core's one runner: each run writes
//! an audit row under the person who ran it, and a write waits for a confirmation.

use crate::support;
use crate::tools_fixture;

use support::bot::{of_type, Bot, Db};

#[tokio::test]
async fn console_and_cli_tool_commands_are_audited() {
    let bot = Bot::new(Db::Sqlite, None).await;
    let (_, ok) = bot.run(&["migrate"], "").await;
    assert!(ok);
    let store = bot.store().await;
    tools_fixture::seed(&store, "Shop").await;
    let path = bot.env_value("SPARKY_DATABASE__SQLITE_PATH").unwrap();
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{path}"))
        .await
        .unwrap();
    let count = |actor: &'static str, tool: &'static str| {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(
                "SELECT COUNT(*) FROM tool_audit WHERE actor = $1 AND tool = $2",
            )
            .bind(actor)
            .bind(tool)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };

    let (out, ok) = bot
        .run(
            &[
                "tool",
                "calculator",
                "--user",
                "dana",
                "--args",
                r#"{"expression":"6*7"}"#,
            ],
            "",
        )
        .await;
    assert!(ok, "{out:?}");
    assert_eq!(count("dana", "calculator").await, 1);

    // The console: a read runs at once; a write shows a card and waits for /confirm.
    let lines = bot
        .chat(
            "erin",
            &["--project", "Shop"],
            "/tool calculator {\"expression\": \"2+2\"}\n\
             /tool create_task {\"title\": \"Torque the lugs\"}\n",
        )
        .await;
    assert_eq!(count("erin", "calculator").await, 1);
    let card = support::bot::one(&lines, "confirmation");
    assert_eq!(card["items"][0]["tool"], "create_task");
    assert!(of_type(&lines, "resolved").is_empty());
    let id = card["action_id"].as_str().unwrap().to_string();
    let project = store
        .project_by_name(&sparky::project::Workspace::local(), "Shop")
        .await
        .unwrap()
        .unwrap();
    assert!(store
        .load_project(project.id)
        .await
        .unwrap()
        .tasks
        .is_empty());
    let lines = bot
        .chat("erin", &["--project", "Shop"], &format!("/confirm {id}\n"))
        .await;
    assert_eq!(support::bot::one(&lines, "resolved")["outcome"], "executed");
    assert_eq!(store.load_project(project.id).await.unwrap().tasks.len(), 1);
    assert_eq!(count("erin", "create_task").await, 1);
}
