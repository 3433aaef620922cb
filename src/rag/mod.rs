//! Knowledge and retrieval: the shipped corpus, ingestion of a team's documents, embeddings and
//! hybrid search with citations.
//!
//! Layer: domain engine for retrieval. Imports `store`, `config`, `nec`, `jurisdiction`, the
//! HTTP policies and `pdf` (reading documents within limits); never the core, the tools or a
//! platform.

pub mod amendments;
pub mod bundled;
pub mod corpus;
pub mod domain;
pub mod embed;
pub mod eval;
pub mod expand;
pub mod index_tuning;
pub mod ingest;
pub mod query_cache;
pub mod scope;
pub mod search;
pub mod sections;
pub mod table_rows;

use sha2::{Digest, Sha256};

/// SHA-256 of a text, hex.
pub fn hash(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

use std::sync::Arc;

use crate::config::{Config, EmbedderKind};
use embed::Embedder;

/// The local model directory in effect: `rag.model_dir`, or the platform default when empty.
pub fn model_dir(config: &crate::config::RagConfig) -> std::path::PathBuf {
    if config.model_dir.trim().is_empty() {
        embed::default_model_dir()
    } else {
        std::path::PathBuf::from(config.model_dir.trim())
    }
}

/// The embedder the configuration asks for, or `None` with the reason search is full text only.
/// The local model is fetched on first use when `rag.auto_fetch` is on.
pub async fn build_embedder(
    config: &Config,
    progress: bool,
) -> (Option<Arc<dyn Embedder>>, String) {
    match config.rag.embedder {
        EmbedderKind::None => (None, "rag.embedder is \"none\"".into()),
        EmbedderKind::Local => {
            let dir = model_dir(&config.rag);
            if !embed::local::missing_files(&dir).is_empty() {
                if !config.rag.auto_fetch {
                    return (
                        None,
                        format!(
                            "the local embedding model is not in {}; run `sparky models fetch`",
                            dir.display()
                        ),
                    );
                }
                if let Err(e) = embed::fetch::fetch_local_model(&dir, progress).await {
                    tracing::warn!(error = %e, "could not fetch the local embedding model");
                    return (
                        None,
                        format!("the local embedding model could not be fetched: {e}"),
                    );
                }
            }
            match embed::local::LocalEmbedder::open(&dir).await {
                Ok(e) => (Some(Arc::new(e)), String::new()),
                Err(e) => (
                    None,
                    format!("the local embedding model failed to load: {e}"),
                ),
            }
        }
        EmbedderKind::Openai => match &config.secrets.openai_api_key {
            Some(key) => match embed::openai::OpenAiEmbedder::new(key.expose()) {
                Ok(e) => (
                    Some(Arc::new(
                        e.with_base_url(config.llm.openai.base_url.clone()),
                    )),
                    String::new(),
                ),
                Err(e) => (None, e.to_string()),
            },
            None => (None, "OPENAI_API_KEY is not set".into()),
        },
        EmbedderKind::Gemini => match &config.secrets.gemini_api_key {
            Some(key) => match embed::gemini::GeminiEmbedder::new(key.expose()) {
                Ok(e) => (
                    Some(Arc::new(
                        e.with_base_url(config.llm.gemini.base_url.clone())
                            .with_output_dimensionality(768),
                    )),
                    String::new(),
                ),
                Err(e) => (None, e.to_string()),
            },
            None => (None, "GEMINI_API_KEY is not set".into()),
        },
    }
}
