//! Wiring: configuration -> store, provider, tools -> agent.
//!
//! Layer: the shell. Wires every layer together; only `main.rs` imports it.

use std::sync::Arc;

use crate::config::Config;
use crate::core::Agent;
use crate::rag::search::Retriever;
use crate::store::{Store, StoreError};
use crate::tools::search_tool::SearchCode;

/// Opens the configured database: Postgres when `database.url` is set, otherwise the SQLite
/// file. Refuses a schema newer than this binary and applies pending migrations.
pub async fn connect_store(config: &Config) -> Result<Arc<dyn Store>, StoreError> {
    crate::store::open(
        &config.database.url,
        &config.sqlite_file(),
        config.database.max_connections,
    )
    .await
}

/// The assembled application.
pub struct App {
    /// Validated configuration.
    pub config: Config,
    /// The store (migrated).
    pub store: Arc<dyn Store>,
    /// The agent.
    pub agent: Arc<Agent>,
    /// Knowledge-base search.
    pub retriever: Retriever,
}

impl App {
    /// Connects the store (running migrations), builds the provider and the tools.
    pub async fn build(config: Config) -> Result<Self, StoreError> {
        crate::llm::tls::install_default_crypto_provider();
        let store = connect_store(&config).await?;
        let provider = crate::llm::resilient::build_provider(&config);
        let (embedder, why_not) =
            crate::rag::build_embedder(&config, is_terminal::is_terminal(std::io::stderr())).await;
        // The shipped corpus is stored as text at once (fast); vectors come from
        // `embed_in_background` (long-running commands) or the command itself.
        if let Err(e) = crate::rag::ingest::sync_builtin(store.as_ref(), None).await {
            tracing::error!(error = %e, "could not store the built-in knowledge base");
        }
        // One read: the vector index's search width measured for this library before.
        let model = embedder.as_ref().map(|e| e.model_name().to_string());
        if let Err(e) =
            crate::rag::index_tuning::apply(store.as_ref(), &config.rag, model.as_deref()).await
        {
            tracing::warn!(error = %e, "could not read the vector index's tuning; using the default width");
        }
        let retriever = Retriever::new(store.clone(), embedder, why_not);
        let mut tools = crate::tools::default_registry(config.limits.tool_executions_per_minute);
        tools.register(SearchCode::new(retriever.clone()));
        let tools = Arc::new(tools);
        let agent = Agent::new(
            store.clone(),
            provider,
            tools,
            config.agent.clone(),
            &config.limits,
        )
        .with_model_settings(crate::core::ModelSettings::of(&config.llm))
        .with_context_policy(context_policy(&config))
        .with_file_intake(file_intake(&config));
        Ok(Self {
            config,
            store,
            agent: Arc::new(agent),
            retriever,
        })
    }
}

impl App {
    /// Embeds the passages that lack a vector of the retriever's model, now, when they changed
    /// since the last complete pass (one read of two counters otherwise); 0 without an
    /// embedder. For a command that searches at once after start-up.
    pub async fn embed_if_changed(
        &self,
        progress: bool,
    ) -> Result<usize, crate::rag::ingest::IngestError> {
        match self.retriever.embedder() {
            Some(e) => {
                crate::rag::ingest::embed_if_changed(self.store.as_ref(), e.as_ref(), progress)
                    .await
            }
            None => Ok(0),
        }
    }

    /// Warms the retrieval indexes and embeds passages that lack a vector, in the background,
    /// the latter when the passages changed since
    /// the last complete pass (otherwise one read of two counters), then measures the vector
    /// index's search width again if the library changed by a tenth since it was last
    /// measured. Long-running commands call it once at start, so no request waits for it;
    /// search uses vectors and the new width as they arrive.
    pub fn embed_in_background(&self) {
        // Start-up does not wait for the indexes to be read.
        let warming = self.store.clone();
        tokio::spawn(async move {
            match warming.warm_indexes().await {
                Ok(Some(done)) => tracing::info!(%done, "retrieval indexes warmed"),
                Ok(None) => {}
                Err(e) => tracing::debug!(error = %e, "retrieval indexes not warmed"),
            }
        });
        let Some(embedder) = self.retriever.embedder().cloned() else {
            return;
        };
        let store = self.store.clone();
        let rag = self.config.rag.clone();
        tokio::spawn(async move {
            if let Err(err) =
                crate::rag::ingest::embed_if_changed(store.as_ref(), embedder.as_ref(), false).await
            {
                tracing::warn!(error = %err, "embedding the knowledge base failed; search uses full text");
            }
            if let Err(err) =
                crate::rag::index_tuning::tune_if_changed(store.as_ref(), embedder.as_ref(), &rag)
                    .await
            {
                tracing::warn!(error = %err, "measuring the vector index failed; keeping its width");
            }
        });
    }
}

/// Attached-file intake: default limits, `llm.vision`, each platform's file hosts, and Slack's
/// bot token for `url_private` downloads (sent to those hosts only).
pub fn file_intake(config: &Config) -> crate::core::FileIntake {
    let intake = crate::core::FileIntake::new(crate::intake::Limits::default(), config.llm.vision)
        .with_hosts(
            crate::platforms::slack::PLATFORM,
            config.slack.file_hosts.clone(),
        )
        .with_hosts(
            crate::platforms::discord::PLATFORM,
            config.discord.file_hosts.clone(),
        );
    match &config.secrets.slack_bot_token {
        Some(token) => intake.with_token(crate::platforms::slack::PLATFORM, token.clone()),
        None => intake,
    }
}

/// The context policy the configuration asks for: the shipped levers, with the tool offer of
/// `agent.tool_offer`.
fn context_policy(config: &Config) -> crate::core::context::ContextPolicy {
    crate::core::context::ContextPolicy {
        tools: config.agent.tool_offer.into(),
        ..Default::default()
    }
}
