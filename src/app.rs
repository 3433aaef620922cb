//! Wiring: configuration -> store, provider, tools -> agent.

use std::sync::Arc;

use crate::config::Config;
use crate::core::Agent;
use crate::store::{Store, StoreError};

/// The assembled application.
pub struct App {
    /// Validated configuration.
    pub config: Config,
    /// The store (migrated).
    pub store: Arc<dyn Store>,
    /// The agent.
    pub agent: Arc<Agent>,
}

impl App {
    /// Connects the store (running migrations), builds the provider and the tools.
    pub async fn build(config: Config) -> Result<Self, StoreError> {
        crate::llm::tls::install_default_crypto_provider();
        let store = crate::store::connect(&config).await?;
        let provider = crate::llm::resilient::build_provider(&config);
        let tools = Arc::new(crate::tools::default_registry(
            config.limits.tool_executions_per_minute,
        ));
        let agent = Agent::new(
            store.clone(),
            provider,
            tools,
            config.agent.clone(),
            &config.limits,
        )
        .with_temperature(config.llm.temperature);
        Ok(Self {
            config,
            store,
            agent: Arc::new(agent),
        })
    }
}
