//! Which code applies at the job site, on SQLite and Postgres: the location, permit date and
//! override commands (stored and shown), the edition the tools calculate with and name, the
//! `code_in_force` tool, and local amendments that outrank the model code only where they
//! apply.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};
use sparky::config::Config;
use sparky::core::commands::{self, Command, CommandOutput};
use sparky::core::session::SessionKey;
use sparky::core::{Agent, CollectSink, Effect, Input, InputAction};
use sparky::rag::search::Retriever;
use sparky::store::Store;
use sparky::tools::search_tool::SearchCode;

use crate::support::bot::{fresh_postgres_url, Db};
use crate::support::fake_llm::{Dialect, FakeLlm, Reply};
use crate::tools_fixture::{call, registry, seed};

struct World {
    agent: Agent,
    store: Arc<dyn Store>,
    fake: FakeLlm,
    dir: tempfile::TempDir,
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
                dir.path().join("j.db").display().to_string(),
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
        dir,
    }
}

fn key() -> SessionKey {
    SessionKey::new("slack", "TJ", "C-site", "t")
}

async fn cmd(w: &World, user: &str, text: &str) -> CommandOutput {
    let command: Command = text.parse().expect("command");
    commands::execute(&w.agent, &key(), user, command).await
}

async fn site_commands(db: Db) {
    let w = world(db).await;
    let out = cmd(&w, "owner", "project create Depot").await;
    assert!(!out.is_error, "{out:?}");
    assert!(
        out.text.contains("project default, no location"),
        "{}",
        out.text
    );

    // A location and a permit date before Washington's 2017 adoption took effect.
    let out = cmd(
        &w,
        "owner",
        "project set location Washington, King County, Seattle",
    )
    .await;
    assert!(!out.is_error, "{out:?}");
    let out = cmd(&w, "owner", "project set permit 2017-06-30").await;
    assert_eq!(out.json["code"]["edition"], 2014, "{}", out.text);
    assert!(out
        .text
        .contains("2014 NEC, adopted by Washington effective 2014-07-01"));
    // 2014 is not among the shipped tables: the answer says what it cannot check.
    assert!(
        out.text.contains("not checked against NEC 2014"),
        "{}",
        out.text
    );
    assert!(out.text.contains("no county or city row"), "{}", out.text);

    // From the effective date on: 2017, which the tools calculate with.
    let out = cmd(&w, "owner", "project set permit 2017-07-01").await;
    assert_eq!(out.json["code"]["edition"], 2017);
    assert_eq!(out.json["code"]["tables"], "2017");
    assert!(out.json["code"]["cannot_check"].is_null());

    // Only an owner changes the site.
    let out = cmd(&w, "stranger", "project set edition 2023").await;
    assert!(
        out.is_error && out.text.contains("Only an owner"),
        "{out:?}"
    );

    // The override wins, and is shown with what the table says wherever the edition shows.
    let out = cmd(&w, "owner", "project set edition 2020").await;
    assert_eq!(out.json["code"]["edition"], 2020);
    assert!(out.text.contains("override"), "{}", out.text);
    assert!(
        out.text.contains("2017 NEC, adopted by Washington"),
        "{}",
        out.text
    );
    let list = cmd(&w, "owner", "project list").await;
    assert!(
        list.text.contains("NEC 2020 (team override)"),
        "{}",
        list.text
    );
    let show = cmd(&w, "owner", "project show").await;
    assert!(
        show.text.contains("NEC 2020 (team override)"),
        "{}",
        show.text
    );
    assert!(
        show.text
            .contains("Code in force: 2020 NEC, set by the team"),
        "{}",
        show.text
    );

    // Stored in the database: a fresh read sees the same site.
    let id = w
        .store
        .channel_project("slack", "TJ", "C-site")
        .await
        .unwrap()
        .unwrap();
    let p = w.store.project(id).await.unwrap().unwrap();
    assert_eq!(p.site.location.as_ref().unwrap().state, "WA");
    assert_eq!(
        p.site.location.as_ref().unwrap().city.as_deref(),
        Some("Seattle")
    );
    assert_eq!(p.site.permit_date.unwrap().to_string(), "2017-07-01");
    assert_eq!(p.site.edition_override.unwrap().year(), 2020);

    // Back to the table; then no location at all: the created edition, saying why.
    let out = cmd(&w, "owner", "project set edition auto").await;
    assert_eq!(out.json["code"]["edition"], 2017);
    let out = cmd(&w, "owner", "project set location none").await;
    assert_eq!(out.json["code"]["basis"]["kind"], "project_default");
    let out = cmd(&w, "owner", "project code").await;
    assert!(
        out.text.contains("no job-site location is set"),
        "{}",
        out.text
    );
    // A bad value is refused before anything is stored.
    assert!("project set location Atlantis".parse::<Command>().is_err());
    drop(w.dir);
}

#[tokio::test]
async fn site_commands_sqlite() {
    site_commands(Db::Sqlite).await;
}

#[tokio::test]
async fn site_commands_postgres() {
    site_commands(Db::Postgres).await;
}

fn ctx(store: Arc<dyn Store>, project: i64) -> crate::tools_fixture::Ctx {
    crate::tools_fixture::ctx(store, project)
}

async fn set_site(store: &Arc<dyn Store>, id: i64, location: &str, permit: &str) {
    let mut p = store.project(id).await.unwrap().unwrap();
    p.site.location = Some(location.parse().unwrap());
    p.site.permit_date = Some(permit.parse().unwrap());
    store.update_project(&p).await.unwrap();
}

/// A 2017 project's answers carry the 2017 values where they differ from 2020, and name why.
async fn edition_2017_values(db: Db) {
    let w = world(db).await;
    let store = w.store.clone();
    let id = seed(&store, "Old Office").await;
    let reg = registry();
    set_site(&store, id, "WA", "2018-03-01").await;
    let c = ctx(store.clone(), id);

    let v = call(
        &reg,
        &c,
        "lookup_table",
        json!({"table": "220.12", "row": "office"}),
    )
    .await
    .unwrap();
    let s = v.to_string();
    assert!(
        v["table"]
            .as_str()
            .unwrap()
            .starts_with("NEC 2017 Table 220.12"),
        "{v:#}"
    );
    assert_eq!(v["rows"][0]["va_per_ft2"], 3.5, "{v:#}");
    assert_eq!(v["code_in_force"]["calculated_with"], 2017);
    assert!(
        v["code_in_force"]["why"]
            .as_str()
            .unwrap()
            .contains("2017 NEC, adopted by Washington effective 2017-07-01"),
        "{s}"
    );

    // The same question for a 2021 permit gets the 2020 value and says so.
    set_site(&store, id, "WA", "2021-03-01").await;
    let v = call(
        &reg,
        &c,
        "lookup_table",
        json!({"table": "220.12", "row": "office"}),
    )
    .await
    .unwrap();
    assert!(
        v["table"]
            .as_str()
            .unwrap()
            .starts_with("NEC 2020 Table 220.12"),
        "{v:#}"
    );
    assert_eq!(v["rows"][0]["va_per_ft2"], 1.3);
    assert!(v["code_in_force"]["why"]
        .as_str()
        .unwrap()
        .contains("unverified"));

    // Calculations cite the 2017 numbering where it differs.
    set_site(&store, id, "WA", "2018-03-01").await;
    let v = call(
        &reg,
        &c,
        "check_conductor_sizing",
        json!({"panel": "LP-1", "number": 1}),
    )
    .await
    .unwrap();
    assert!(v.to_string().contains("NEC 2017"), "{v:#}");
    assert_eq!(v["code_in_force"]["edition_in_force"], 2017);

    // The read tool explains itself, for the project and for any state and date.
    let v = call(&reg, &c, "code_in_force", json!({})).await.unwrap();
    assert_eq!(v["code"]["edition"], 2017);
    assert!(v["summary"].as_str().unwrap().contains("Washington"));
    let v = call(
        &reg,
        &c,
        "code_in_force",
        json!({"state": "AZ", "city": "Phoenix"}),
    )
    .await
    .unwrap();
    assert!(v["code"]["edition"].is_null());
    assert!(v["summary"]
        .as_str()
        .unwrap()
        .contains("no statewide adoption"));
    // A 2026 override lists what moved and that nothing is checked against 2026.
    let mut p = store.project(id).await.unwrap().unwrap();
    p.site.edition_override = sparky::jurisdiction::NecEdition::new(2026);
    store.update_project(&p).await.unwrap();
    let v = call(&reg, &c, "code_in_force", json!({})).await.unwrap();
    assert!(v["code"]["cannot_check"]
        .as_str()
        .unwrap()
        .contains("NEC 2026"));
    assert!(v["changes_2026"].as_array().unwrap().len() >= 10);
    let v = call(
        &reg,
        &c,
        "lookup_table",
        json!({"table": "220.12", "row": "office"}),
    )
    .await
    .unwrap();
    assert!(v["code_in_force"]["cannot_check"]
        .as_str()
        .unwrap()
        .contains("not checked against NEC 2026"));
    // The site travels with an exported project file and comes back on import.
    let ws = sparky::project::Workspace::local();
    let file = sparky::services::project_files::export(store.as_ref(), &ws, "Old Office")
        .await
        .unwrap();
    let text = serde_json::to_string(&file).unwrap();
    assert!(text.contains("\"site\""), "{text}");
    let back: sparky::services::project_files::ProjectFile = serde_json::from_str(&text).unwrap();
    let copy = sparky::services::project_files::import(
        store.as_ref(),
        &ws,
        &back,
        Some("Old Office copy"),
    )
    .await
    .unwrap();
    let copy = store.project(copy.id).await.unwrap().unwrap();
    assert_eq!(copy.site, p.site);
    let err =
        crate::tools_fixture::call_err(&reg, &c, "code_in_force", json!({"state": "XX"})).await;
    assert!(err.contains("not a US state"), "{err}");
}

#[tokio::test]
async fn edition_2017_values_sqlite() {
    edition_2017_values(Db::Sqlite).await;
}

#[tokio::test]
async fn edition_2017_values_postgres() {
    edition_2017_values(Db::Postgres).await;
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn sources(v: &Value) -> Vec<String> {
    v["passages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["source"].as_str().unwrap().to_string())
        .collect()
}

/// Amendment documents come first for a project in their jurisdiction, and nowhere else.
async fn amendments_outrank_locally(db: Db) {
    let w = world(db).await;
    let store = w.store.clone();
    let docs = tempfile::tempdir().unwrap();
    // The model code text a team ingested, and two states' amendments to the same section.
    let model = write(
        docs.path(),
        "model-code.md",
        "210.8 Ground-fault circuit-interrupter protection for personnel\n\
         GFCI protection is required for receptacles in bathrooms, garages, outdoors, \
         crawl spaces, basements, kitchens and laundry areas of dwelling units.\n",
    );
    let wa = write(
        docs.path(),
        "wac-296-46b.md",
        "210.8 Ground-fault protection amendment\n\
         Washington amends the GFCI receptacle rule for dwelling units.\n",
    );
    let or = write(
        docs.path(),
        "oesc.md",
        "210.8 Ground-fault protection amendment\n\
         Oregon amends the GFCI receptacle rule for dwelling units.\n",
    );
    let s = store.as_ref();
    sparky::rag::ingest::ingest_files(s, None, &[model], None, None, false)
        .await
        .unwrap();
    sparky::rag::ingest::ingest_files_for(s, None, &[wa], None, None, Some("WA"), false)
        .await
        .unwrap();
    sparky::rag::ingest::ingest_files_for(s, None, &[or], None, None, Some("OR"), false)
        .await
        .unwrap();
    // Re-ingesting is idempotent and keeps the filing.
    sparky::rag::ingest::ingest_files_for(
        s,
        None,
        &[docs.path().join("wac-296-46b.md")],
        None,
        None,
        Some("WA"),
        false,
    )
    .await
    .unwrap();
    let mut listed = store.amendment_documents(None).await.unwrap();
    listed.sort();
    assert_eq!(
        listed,
        vec![
            ("OR amendment: oesc.md".to_string(), "OR".to_string()),
            ("WA amendment: wac-296-46b.md".to_string(), "WA".to_string()),
        ]
    );

    let mut reg = sparky::tools::ToolRegistry::new(1000);
    reg.register(SearchCode::new(Retriever::new(
        store.clone(),
        None,
        "no embedder in this test",
    )));
    let question = json!({"query": "GFCI receptacles in dwelling units 210.8"});

    let wa_project = store
        .create_project(
            &sparky::project::Workspace::local(),
            "Seattle job",
            Default::default(),
        )
        .await
        .unwrap();
    set_site(&store, wa_project.id, "WA, Seattle", "2026-01-05").await;
    let v = call(
        &reg,
        &ctx(store.clone(), wa_project.id),
        "search_code",
        question.clone(),
    )
    .await
    .unwrap();
    let got = sources(&v);
    assert_eq!(got[0], "WA amendment: wac-296-46b.md", "{v:#}");
    assert!(got.contains(&"model-code.md".to_string()), "{got:?}");
    assert!(!got.iter().any(|s| s.starts_with("OR ")), "{got:?}");
    assert_eq!(v["passages"][0]["amendment"]["applies"], true);
    assert!(v["passages"][0]["amendment"]["label"]
        .as_str()
        .unwrap()
        .contains("Washington local amendment"));

    let or_project = store
        .create_project(
            &sparky::project::Workspace::local(),
            "Portland job",
            Default::default(),
        )
        .await
        .unwrap();
    set_site(&store, or_project.id, "OR", "2026-01-05").await;
    let v = call(
        &reg,
        &ctx(store.clone(), or_project.id),
        "search_code",
        question.clone(),
    )
    .await
    .unwrap();
    let got = sources(&v);
    assert_eq!(got[0], "OR amendment: oesc.md", "{v:#}");
    assert!(!got.iter().any(|s| s.starts_with("WA ")), "{got:?}");

    // Texas has no amendment filed: the model code leads, no amendment is offered.
    let tx_project = store
        .create_project(
            &sparky::project::Workspace::local(),
            "Austin job",
            Default::default(),
        )
        .await
        .unwrap();
    set_site(&store, tx_project.id, "TX", "2026-01-05").await;
    let v = call(
        &reg,
        &ctx(store.clone(), tx_project.id),
        "search_code",
        question.clone(),
    )
    .await
    .unwrap();
    assert_eq!(sources(&v), vec!["model-code.md".to_string()], "{v:#}");

    // Without a location amendments are shown but never put first, and say where they apply.
    let plain = store
        .create_project(
            &sparky::project::Workspace::local(),
            "Nowhere",
            Default::default(),
        )
        .await
        .unwrap();
    let v = call(&reg, &ctx(store.clone(), plain.id), "search_code", question)
        .await
        .unwrap();
    assert!(
        v["passages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p.get("amendment").is_some())
            .all(|p| p["amendment"]["applies"] == false),
        "{v:#}"
    );
    // The command's rendering cites an amendment as one.
    let text = sparky::core::commands::passages_text(
        &[
            json!({"section": "210.8", "source": "WA amendment: wac-296-46b.md", "text": "x",
                 "amendment": {"label": "Washington local amendment: takes precedence over the model code there"}}),
        ],
        5,
        100,
    );
    assert!(text.contains("Washington local amendment"), "{text}");
    drop(w.dir);
}

#[tokio::test]
async fn amendments_outrank_locally_sqlite() {
    amendments_outrank_locally(Db::Sqlite).await;
}

#[tokio::test]
async fn amendments_outrank_locally_postgres() {
    amendments_outrank_locally(Db::Postgres).await;
}

/// In a conversation, the model is told the code in force and why, and the table value it
/// gets back for a 2017 project is the 2017 one, named as such.
async fn conversation_names_the_edition(db: Db) {
    let w = world(db).await;
    for c in [
        "project create Old Office",
        "project set location WA",
        "project set permit 2018-03-01",
    ] {
        let out = cmd(&w, "owner", c).await;
        assert!(!out.is_error, "{out:?}");
    }
    w.fake.push(Reply::ToolCalls(vec![(
        "lookup_table".into(),
        json!({"table": "220.12", "row": "office"}),
    )]));
    w.fake
        .push(Reply::Text("3.5 VA/ft² (NEC 2017 Table 220.12).".into()));
    let sink = CollectSink::default();
    w.agent
        .handle(
            Input {
                key: key(),
                user: "owner".into(),
                event_id: None,
                action: InputAction::Message {
                    text: "What general lighting load for an office?".into(),
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
        .any(|e| matches!(e, Effect::Text { text, .. } if text.contains("NEC 2017"))));
    let requests = w.fake.requests();
    let first = requests.first().expect("first request").to_string();
    assert!(
        first.contains("Code in force: 2017 NEC, adopted by Washington effective 2017-07-01"),
        "{first}"
    );
    let second = requests.last().expect("second request").to_string();
    assert!(second.contains("NEC 2017 Table 220.12"), "{second}");
    assert!(second.contains("3.5"), "{second}");
    assert!(!second.contains("\\\"va_per_ft2\\\":1.3"), "{second}");
    drop(w.dir);
}

#[tokio::test]
async fn conversation_names_the_edition_sqlite() {
    conversation_names_the_edition(Db::Sqlite).await;
}

#[tokio::test]
async fn conversation_names_the_edition_postgres() {
    conversation_names_the_edition(Db::Postgres).await;
}
