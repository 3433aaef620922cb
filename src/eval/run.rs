//! Running a conversation set through the real agent: per conversation a temporary SQLite
//! store holding a copy of the seed project, the shipped tools and the configured model.

use std::sync::Arc;
use std::time::Instant;

use super::grade::{grade, TurnGrade};
use super::observe::{Observer, Observing};
use super::set::{Action, Conversation, ConversationSet, SEED_PROJECT};
use crate::config::Config;
use crate::core::context::{ContextPolicy, ToolOffer};
use crate::core::session::SessionKey;
use crate::core::{Agent, CollectSink, Input, InputAction};
use crate::domain::workspace::Workspace;
use crate::llm::ChatProvider;

/// Which tools each model request offers: the setting `agent.tool_offer` takes.
pub use crate::config::ToolOfferSetting as ToolMode;

/// Why a run could not happen.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// No model is configured.
    #[error("no model is configured: set llm.provider (openai, gemini or an OpenAI-compatible llm.base_url) and its key")]
    NoModel,
    /// The temporary store failed.
    #[error("the temporary store failed: {0}")]
    Store(#[from] crate::store::StoreError),
    /// The core failed.
    #[error("a turn failed: {0}")]
    Core(#[from] crate::core::CoreError),
    /// The seed project could not be imported.
    #[error("the seed project could not be imported: {0}")]
    Seed(#[from] crate::services::project_files::IoError),
    /// The temporary directory could not be made.
    #[error("temporary directory: {0}")]
    Io(#[from] std::io::Error),
}

/// One graded turn.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TurnResult {
    /// Turn index in its conversation (0-based).
    pub turn: usize,
    /// The grade.
    #[serde(flatten)]
    pub grade: TurnGrade,
    /// Wall time of the turn.
    pub seconds: f64,
}

/// One conversation's results.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ConversationResult {
    /// Conversation id.
    pub id: String,
    /// Its category.
    pub category: String,
    /// Each turn's result.
    pub turns: Vec<TurnResult>,
    /// Model requests made.
    pub model_calls: u32,
    /// Prompt tokens reported by the provider.
    pub prompt_tokens: u64,
}

/// The person every conversation is typed as (owner of every seeded project).
const USER: &str = "eval";

/// Runs `set` against the model `config` configures, offering tools as `mode` says.
pub async fn run(
    config: &Config,
    set: &ConversationSet,
    mode: ToolMode,
) -> Result<Vec<ConversationResult>, RunError> {
    let provider = crate::llm::resilient::build_provider(config).ok_or(RunError::NoModel)?;
    run_with(config, provider, set, mode).await
}

/// Runs `set` against `provider`.
pub async fn run_with(
    config: &Config,
    provider: Arc<dyn ChatProvider>,
    set: &ConversationSet,
    mode: ToolMode,
) -> Result<Vec<ConversationResult>, RunError> {
    let dir = std::env::temp_dir().join(format!("sparky-eval-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    let result = run_in(config, provider, set, mode, &dir).await;
    if let Err(e) = std::fs::remove_dir_all(&dir) {
        tracing::warn!(error = %e, dir = %dir.display(), "could not remove the eval's store");
    }
    result
}

async fn run_in(
    config: &Config,
    provider: Arc<dyn ChatProvider>,
    set: &ConversationSet,
    mode: ToolMode,
    dir: &std::path::Path,
) -> Result<Vec<ConversationResult>, RunError> {
    let mut config = config.clone();
    config.database.url = String::new();
    config.database.sqlite_path = dir.join("eval.db").display().to_string();
    // Every conversation is typed by one person in quick succession: no rate limit applies.
    config.limits.turns_per_user_per_minute = u32::MAX;
    config.limits.turns_per_channel_per_minute = u32::MAX;
    config.limits.tool_executions_per_minute = u32::MAX;
    let app = crate::app::App::build(config.clone()).await?;
    // The passages' vectors, as a running server has them (the shipped ones are precomputed):
    // without them search would answer by full text alone.
    if let Err(err) = app.embed_if_changed(false).await {
        tracing::warn!(error = %err, "embedding the knowledge base failed; search uses full text");
    }
    let observer = Observer::default();
    // The shipped tools with the code search, as every front end registers them.
    let tools = app.agent.tools().clone();
    let policy = ContextPolicy {
        tools: ToolOffer::from(mode),
        ..ContextPolicy::default()
    };
    let observing: Arc<dyn ChatProvider> = Arc::new(Observing::new(provider, observer.clone()));
    let seed = crate::services::project_files::parse_file(SEED_PROJECT)?;
    let mut results = Vec::new();
    for (i, c) in set.conversations.iter().enumerate() {
        // A store of its own per conversation: no conversation sees another's writes, and the
        // seed gets the same ids in each, so every conversation's instructions are the same
        // text and a server that caches a prompt's prefix (llama-server, OpenAI) reads the
        // tools once for the run instead of once per conversation.
        let path = dir.join(format!("conversation-{i}.db"));
        let store = crate::store::open("", &path, config.database.max_connections).await?;
        let agent = Agent::new(
            store,
            Some(observing.clone()),
            tools.clone(),
            config.agent.clone(),
            &config.limits,
        )
        .with_model_settings(crate::core::ModelSettings::of(&config.llm))
        .with_context_policy(policy);
        results.push(run_conversation(&agent, &seed, c, &observer).await?);
    }
    Ok(results)
}

async fn run_conversation(
    agent: &Agent,
    seed: &crate::services::project_files::ProjectFile,
    c: &Conversation,
    observer: &Observer,
) -> Result<ConversationResult, RunError> {
    let key = SessionKey::new("console", "local", "eval", c.id.as_str());
    let project = crate::services::project_files::import(
        agent.store().as_ref(),
        &Workspace::local(),
        seed,
        None,
    )
    .await?;
    crate::core::commands::use_or_create_project(agent, &key, USER, Some(&project.name)).await?;
    observer.take();
    let mut turns = Vec::new();
    let (mut model_calls, mut prompt_tokens) = (0, 0);
    for (i, t) in c.turns.iter().enumerate() {
        let action = match &t.action {
            Action::Say(text) => InputAction::Message {
                text: text.clone(),
                mode: None,
            },
            Action::Confirm => InputAction::Confirm { action_id: None },
            Action::Cancel => InputAction::Cancel { action_id: None },
        };
        let input = Input {
            key: key.clone(),
            user: USER.into(),
            event_id: Some(uuid::Uuid::new_v4().simple().to_string()),
            action,
        };
        let sink = CollectSink::default();
        let started = Instant::now();
        agent.handle(input, &sink).await?;
        let seconds = started.elapsed().as_secs_f64();
        let observed = observer.take();
        model_calls += observed.model_calls;
        prompt_tokens += observed.prompt_tokens;
        let grade = grade(&t.expect, &sink.take(), &observed, agent.tools());
        tracing::info!(conversation = %c.id, turn = i, passed = grade.passed(), "eval turn");
        turns.push(TurnResult {
            turn: i,
            grade,
            seconds,
        });
    }
    Ok(ConversationResult {
        id: c.id.clone(),
        category: c.category.clone(),
        turns,
        model_calls,
        prompt_tokens,
    })
}
