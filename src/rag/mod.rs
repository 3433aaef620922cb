//! Knowledge and retrieval: the shipped corpus, ingestion of a team's documents, embeddings and
//! hybrid search with citations.

pub mod corpus;
pub mod sections;

use sha2::{Digest, Sha256};

/// SHA-256 of a text, hex.
pub fn hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
