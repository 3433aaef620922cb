//! The `sparky` command line: configuration errors, tools from the CLI, serve's health
//! endpoints.

use crate::support;

use support::bot::{Bot, Db};

#[tokio::test]
async fn a_bad_configuration_lists_every_problem_at_once() {
    let bot = Bot::new(Db::Sqlite, None).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        "[slack]\nenabled = true\ntransport = \"http\"\n[llm]\nprovider = \"gemini\"\n[agent]\nconfirm_policy = \"everyone\"\n",
    )
    .unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_sparky"));
    let out = cmd
        .args(["--config", path.to_str().unwrap(), "migrate"])
        .env_remove("GEMINI_API_KEY")
        .env_remove("SLACK_BOT_TOKEN")
        .env_remove("SLACK_SIGNING_SECRET")
        .output()
        .unwrap();
    drop(bot);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[agent]") && err.contains("everyone"), "{err}");
    // Semantic checks need a parsed section; with [agent] broken the others still report.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_sparky"));
    std::fs::write(
        &path,
        "[slack]\nenabled = true\ntransport = \"http\"\n[llm]\nprovider = \"gemini\"\n",
    )
    .unwrap();
    let out = cmd
        .args(["--config", path.to_str().unwrap(), "migrate"])
        .env_remove("GEMINI_API_KEY")
        .env_remove("SLACK_BOT_TOKEN")
        .env_remove("SLACK_SIGNING_SECRET")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    for needle in [
        "3 problem(s)",
        "GEMINI_API_KEY is not set",
        "SLACK_BOT_TOKEN is not set",
        "SLACK_SIGNING_SECRET is not set",
    ] {
        assert!(err.contains(needle), "missing {needle} in {err}");
    }
}

#[tokio::test]
async fn serve_without_a_platform_says_how_to_configure_one() {
    let bot = Bot::new(Db::Sqlite, None).await;
    let (out, ok) = bot.run(&["serve"], "").await;
    assert!(!ok, "{out:?}");
}

#[tokio::test]
async fn tools_are_listed_with_schemas_and_run_from_the_cli() {
    let bot = Bot::new(Db::Sqlite, None).await;
    let (out, ok) = bot.run(&["tool", "--list", "--json"], "").await;
    assert!(ok);
    let list: serde_json::Value = serde_json::from_str(&out.join("\n")).unwrap();
    let tools = list.as_array().unwrap();
    let calc = tools.iter().find(|t| t["name"] == "calculator").unwrap();
    assert_eq!(calc["writes"], false);
    assert_eq!(calc["schema"]["type"], "object");
    let add = tools.iter().find(|t| t["name"] == "add_load_item").unwrap();
    assert_eq!(add["writes"], true);

    let (out, ok) = bot
        .run(
            &[
                "tool",
                "calculator",
                "--args",
                r#"{"expression":"sqrt(3)*480"}"#,
            ],
            "",
        )
        .await;
    assert!(ok, "{out:?}");
    let v: serde_json::Value = serde_json::from_str(&out.join("\n")).unwrap();
    assert!((v["value"].as_f64().unwrap() - 831.38).abs() < 0.01);

    let (out, ok) = bot
        .run(
            &["tool", "calculator", "--args", r#"{"expression":"1+"}"#],
            "",
        )
        .await;
    assert!(!ok);
    let v: serde_json::Value = serde_json::from_str(&out.join("\n")).unwrap();
    assert!(
        v["error"].as_str().unwrap().contains("invalid arguments"),
        "{v}"
    );

    // A write from a script without --yes changes nothing; with --yes it applies.
    let args = r#"{"name":"fridge","watts":45,"hours_per_day":24,"duty_cycle":0.3}"#;
    let (out, ok) = bot
        .run(
            &["tool", "add_load_item", "--project", "van", "--args", args],
            "",
        )
        .await;
    assert!(!ok, "unknown project: {out:?}");
    bot.run(&["chat", "--project", "van"], "").await;
    let (out, ok) = bot
        .run(
            &["tool", "add_load_item", "--project", "van", "--args", args],
            "",
        )
        .await;
    assert!(ok, "{out:?}");
    assert!(out.join("\n").contains("not_confirmed"));
    let (out, ok) = bot
        .run(
            &[
                "tool",
                "add_load_item",
                "--project",
                "van",
                "--yes",
                "--args",
                args,
            ],
            "",
        )
        .await;
    assert!(ok, "{out:?}");
    let (out, _) = bot
        .run(&["tool", "energy_budget", "--project", "van"], "")
        .await;
    let v: serde_json::Value = serde_json::from_str(&out.join("\n")).unwrap();
    assert!(
        (v["load_wh_per_day"].as_f64().unwrap() - 324.0).abs() < 1e-6,
        "{v}"
    );
}

#[tokio::test]
async fn health_ready_and_metrics_endpoints_answer() {
    let dir = tempfile::tempdir().unwrap();
    let store = sparky::store::SqliteStore::open(&dir.path().join("h.db"))
        .await
        .unwrap();
    let store: std::sync::Arc<dyn sparky::store::Store> = std::sync::Arc::new(store);
    let stopping = std::sync::Arc::new(sparky::service::health::ShuttingDown::default());
    let router = sparky::service::health::router(store, stopping.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    let client = reqwest::Client::new();
    let get = |path: &'static str| {
        let client = client.clone();
        async move {
            let r = client
                .get(format!("http://{addr}{path}"))
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    assert_eq!(get("/healthz").await, (200, "ok".to_string()));
    assert_eq!(get("/readyz").await.0, 200);
    sparky::telemetry::metrics()
        .inputs
        .with_label_values(&["console", "message"])
        .inc();
    let (code, body) = get("/metrics").await;
    assert_eq!(code, 200);
    assert!(body.contains("sparky_inputs_total"), "{body}");
    // Once shutdown begins, the replica reports not ready so no new work is routed to it.
    stopping.set();
    assert_eq!(get("/readyz").await, (503, "shutting down".to_string()));
}
