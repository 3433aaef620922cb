//! Drives the real `sparky` binary (`sparky chat --json`) against a fake LLM and a real
//! database, the way scripts use it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Arc;

use serde_json::Value;
use sparky::config::Config;
use sparky::store::Store;
use tokio::io::AsyncWriteExt;

use super::fake_llm::FakeLlm;

/// Which database a bot runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Db {
    /// A temporary SQLite file.
    Sqlite,
    /// A fresh database on the test Postgres server.
    Postgres,
}

/// A bot configuration: database plus provider environment.
pub struct Bot {
    env: Vec<(String, String)>,
    _dir: tempfile::TempDir,
}

/// A fresh Postgres database URL on the server at `SPARKY_TEST_DATABASE_URL`.
pub async fn fresh_postgres_url() -> String {
    let admin = std::env::var("SPARKY_TEST_DATABASE_URL").unwrap_or_else(|_| {
        panic!("SPARKY_TEST_DATABASE_URL is not set: run the README's test command (bash .ci/test), which starts Postgres")
    });
    let name = format!("sparky_e2e_{}", uuid::Uuid::new_v4().simple());
    let pool = sqlx::PgPool::connect(&admin)
        .await
        .expect("connect to the test Postgres");
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&pool)
        .await
        .expect("create a test database");
    pool.close().await;
    match admin.rsplit_once('/') {
        Some((base, _)) => format!("{base}/{name}"),
        None => panic!("SPARKY_TEST_DATABASE_URL has no database part: {admin}"),
    }
}

impl Bot {
    /// A bot on `db`, talking to `fake` (or offline when `None`).
    pub async fn new(db: Db, fake: Option<&FakeLlm>) -> Bot {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut env = vec![
            ("SPARKY_LLM__MAX_RETRIES".to_string(), "2".to_string()),
            ("SPARKY_LLM__RETRY_BASE_DELAY_MS".into(), "20".into()),
            ("SPARKY_LLM__REQUEST_TIMEOUT_SECS".into(), "3".into()),
            ("SPARKY_LOG__FILTER".into(), "warn".into()),
            // Full-text retrieval keeps each process start fast; the embedder has its own tests.
            ("SPARKY_RAG__EMBEDDER".into(), "none".into()),
        ];
        match db {
            Db::Sqlite => env.push((
                "SPARKY_DATABASE__SQLITE_PATH".into(),
                dir.path().join("sparky.db").display().to_string(),
            )),
            Db::Postgres => env.push(("DATABASE_URL".into(), fresh_postgres_url().await)),
        }
        if let Some(f) = fake {
            env.extend(f.env());
        }
        Bot { env, _dir: dir }
    }

    /// An environment setting of the bot.
    pub fn env_value(&self, key: &str) -> Option<String> {
        self.env
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    /// Adds or replaces an environment setting.
    pub fn set(&mut self, key: &str, value: &str) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.into(), value.into()));
    }

    /// Runs `sparky chat --json` as `user` with `args`, feeding `input` (one message per line);
    /// returns every JSON line it printed.
    pub async fn chat(&self, user: &str, args: &[&str], input: &str) -> Vec<Value> {
        let (lines, status) = self
            .run(&[&["chat", "--json", "--user", user], args].concat(), input)
            .await;
        assert!(status, "sparky chat failed; output: {lines:?}");
        lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    }

    /// Runs any sparky sub-command; returns stdout lines and whether it exited successfully.
    pub async fn run(&self, args: &[&str], input: &str) -> (Vec<String>, bool) {
        let (lines, stderr, ok) = self.run_bytes(args, input.as_bytes()).await;
        if !stderr.trim().is_empty() {
            eprintln!("sparky stderr: {stderr}");
        }
        (lines, ok)
    }

    /// Runs any sparky sub-command with raw bytes on stdin; returns stdout lines, stderr and
    /// whether it exited successfully.
    pub async fn run_bytes(&self, args: &[&str], input: &[u8]) -> (Vec<String>, String, bool) {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_sparky"));
        cmd.args(args)
            .env_remove("DATABASE_URL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("GEMINI_API_KEY")
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(self._dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn sparky");
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(input).await.expect("write stdin");
        }
        let out = child.wait_with_output().await.expect("sparky output");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        (
            stdout.lines().map(str::to_string).collect(),
            stderr,
            out.status.success(),
        )
    }

    /// The bot's store, opened in-process (migrations already applied by the binary).
    pub async fn store(&self) -> Arc<dyn Store> {
        let env: BTreeMap<String, String> = self.env.iter().cloned().collect();
        let config = Config::load(None, &env).expect("test configuration is valid");
        sparky::app::connect_store(&config)
            .await
            .expect("open the bot's store")
    }
}

/// The effects of one type.
pub fn of_type<'a>(effects: &'a [Value], t: &str) -> Vec<&'a Value> {
    effects.iter().filter(|e| e["type"] == t).collect()
}

/// The single effect of one type.
pub fn one<'a>(effects: &'a [Value], t: &str) -> &'a Value {
    let v = of_type(effects, t);
    assert_eq!(
        v.len(),
        1,
        "expected exactly one '{t}' effect in {effects:#?}"
    );
    v[0]
}
