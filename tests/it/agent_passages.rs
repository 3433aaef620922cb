//! Passages of the shipped corpus searched with the person's words before the first model call: they travel with
//! the message, fenced as data, and are cited when the answer names their section; a question
//! they do not match, or `agent.prefetch_passages = 0`, adds nothing.

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;

use sparky::config::Config;
use sparky::core::session::SessionKey;
use sparky::core::{Agent, CollectSink, Effect, Input, InputAction};
use sparky::rag::search::Retriever;
use sparky::tools::default_registry;
use sparky::tools::search_tool::SearchCode;
use support::fake_llm::{Dialect, FakeLlm, Reply};

struct World {
    agent: Agent,
    _dir: tempfile::TempDir,
}

/// An agent over an SQLite store holding the shipped corpus, in a bound channel.
async fn world(fake: &FakeLlm, settings: &[(&str, &str)]) -> World {
    sparky::llm::tls::install_default_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let mut env: BTreeMap<String, String> = fake.env().into_iter().collect();
    env.insert("SPARKY_LLM__MAX_RETRIES".into(), "0".into());
    env.insert(
        "SPARKY_DATABASE__SQLITE_PATH".into(),
        dir.path().join("t.db").display().to_string(),
    );
    env.extend(settings.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let config = Config::load(None, &env).unwrap();
    let store = sparky::app::connect_store(&config).await.unwrap();
    // The shipped corpus, searched by full text (no embedder).
    sparky::rag::ingest::sync_builtin(store.as_ref(), None)
        .await
        .unwrap();
    let ws = sparky::project::Workspace::new("test", "w");
    let mut tools = default_registry(1000);
    tools.register(SearchCode::new(Retriever::new(
        store.clone(),
        None,
        "tests",
    )));
    let agent = Agent::new(
        store.clone(),
        sparky::llm::resilient::build_provider(&config),
        Arc::new(tools),
        config.agent.clone(),
        &config.limits,
    );
    // Team documents are searched for the workspace of the channel's project.
    let project = store
        .create_project(&ws, "p", sparky::nec::units::Edition::Nec2023)
        .await
        .unwrap();
    store
        .bind_channel("test", "w", "c", project.id)
        .await
        .unwrap();
    World { agent, _dir: dir }
}

async fn ask(w: &World, text: &str) -> Vec<Effect> {
    let sink = CollectSink::default();
    let input = Input {
        key: SessionKey::new("test", "w", "c", "thread-1"),
        user: "alice".into(),
        event_id: None,
        action: InputAction::Message {
            text: text.into(),
            mode: None,
        },
    };
    w.agent.handle(input, &sink).await.unwrap();
    sink.take()
}

fn cited(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Text { citations, .. } => Some(citations),
            _ => None,
        })
        .flatten()
        .map(|c| c.section.clone())
        .collect()
}

#[tokio::test]
async fn a_code_question_reaches_the_model_with_the_passages_it_finds() {
    for dialect in [Dialect::OpenAi, Dialect::Gemini] {
        let fake = FakeLlm::start(dialect).await;
        let w = world(&fake, &[]).await;
        fake.push(Reply::Text(
            "Yes: 210.8 requires GFCI protection for garage receptacles.".into(),
        ));
        let effects = ask(&w, "do garage receptacles need gfci").await;
        let sent = fake.requests()[0].to_string();
        assert!(
            sent.contains("[NEC passages found for this message"),
            "{dialect:?}: {sent}"
        );
        assert!(sent.contains("210.8"), "{dialect:?}: {sent}");
        // Fenced as data, like any retrieved text.
        assert!(sent.contains("<<<document"), "{dialect:?}: {sent}");
        assert_eq!(fake.requests().len(), 1, "{dialect:?}: no extra model call");
        assert_eq!(cited(&effects), ["210.8(A)"], "{dialect:?}: {effects:#?}");

        // An answer that does not name the section cites nothing; a question the library does
        // not match sends no passages.
        fake.push(Reply::Text("A poem about a dog.".into()));
        let effects = ask(&w, "write me a poem about a dog").await;
        let sent = fake.requests()[1].to_string();
        assert!(!sent.contains("[NEC passages"), "{dialect:?}: {sent}");
        assert!(cited(&effects).is_empty(), "{dialect:?}: {effects:#?}");
    }
}

#[tokio::test]
async fn no_passages_are_searched_when_switched_off() {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let w = world(&fake, &[("SPARKY_AGENT__PREFETCH_PASSAGES", "0")]).await;
    fake.push(Reply::Text("Yes: 210.8.".into()));
    let effects = ask(&w, "do garage receptacles need gfci").await;
    let sent = fake.requests()[0].to_string();
    assert!(!sent.contains("[NEC passages"), "{sent}");
    assert!(cited(&effects).is_empty(), "{effects:#?}");
}
