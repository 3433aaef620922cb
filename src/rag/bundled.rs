//! Vectors of the shipped corpus, computed ahead of time with the default local model and
//! compiled into the binary, so a fresh install searches with vectors at once instead of
//! embedding every shipped passage first. Team documents are still embedded as they arrive.
//!
//! File format (little-endian): `SPKV2\n`, the model name and `\n`, the hex SHA-256 of the
//! model's weights and `\n`, `u32` dimensions, `u32` count, then per passage the SHA-256 of
//! its text (32 bytes) and its vector (`f32`s). A vector is used only when the running model
//! has the same name, size and weights; any other model embeds the passages itself.
//! `sparky models vectors` writes it; a test checks that it covers every shipped passage.

use std::collections::HashMap;
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use super::embed::{EmbedKind, Embedder};

const MAGIC: &[u8] = b"SPKV2\n";
const FILE: &[u8] = include_bytes!("corpus/vectors.bin");

/// Precomputed vectors for one model, by the SHA-256 of the text they embed.
#[derive(Debug, Default)]
pub struct Bundled {
    model: String,
    weights: String,
    dimensions: usize,
    vectors: HashMap<[u8; 32], Vec<f32>>,
}

impl Bundled {
    /// The model the vectors come from.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// How many passages have a vector.
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    /// SHA-256 (hex) of the weights the vectors come from.
    pub fn weights(&self) -> &str {
        &self.weights
    }

    /// The vector of `text` as `model` with these `weights` embeds it, when it was computed
    /// ahead of time.
    pub fn vector(
        &self,
        model: &str,
        dimensions: usize,
        weights: Option<&str>,
        text: &str,
    ) -> Option<&[f32]> {
        if model != self.model || dimensions != self.dimensions || weights != Some(&self.weights) {
            return None;
        }
        self.vectors.get(&digest(text)).map(Vec::as_slice)
    }

    /// Reads the format above; `None` when the bytes are not in it.
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        let rest = bytes.strip_prefix(MAGIC)?;
        let end = rest.iter().position(|b| *b == b'\n')?;
        let model = std::str::from_utf8(&rest[..end]).ok()?.to_string();
        let rest = &rest[end + 1..];
        let end = rest.iter().position(|b| *b == b'\n')?;
        let weights = std::str::from_utf8(&rest[..end]).ok()?.to_string();
        let rest = &rest[end + 1..];
        let dimensions = u32::from_le_bytes(rest.get(0..4)?.try_into().ok()?) as usize;
        let count = u32::from_le_bytes(rest.get(4..8)?.try_into().ok()?) as usize;
        let record = 32 + dimensions * 4;
        let body = rest.get(8..)?;
        if dimensions == 0 || body.len() != count.checked_mul(record)? {
            return None;
        }
        let vectors = body
            .chunks_exact(record)
            .map(|r| {
                let mut key = [0u8; 32];
                key.copy_from_slice(&r[..32]);
                let v = r[32..]
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                (key, v)
            })
            .collect();
        Some(Self {
            model,
            weights,
            dimensions,
            vectors,
        })
    }

    /// Writes `(text, vector)` pairs in the format above.
    pub fn encode(
        model: &str,
        weights: &str,
        dimensions: usize,
        entries: &[(String, Vec<f32>)],
    ) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(model.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(weights.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(&(dimensions as u32).to_le_bytes());
        out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for (text, v) in entries {
            out.extend_from_slice(&digest(text));
            for x in v {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        out
    }
}

/// Embeds every shipped passage with `embedder` and encodes the result in the format above
/// (what `sparky models vectors` writes to `src/rag/corpus/vectors.bin`).
pub async fn compute(embedder: &dyn Embedder) -> Result<Vec<u8>, String> {
    let mut texts: Vec<String> = super::corpus::summary_chunks()?
        .into_iter()
        .chain(super::corpus::table_chunks()?)
        .map(|c| c.text)
        .collect();
    texts.sort();
    texts.dedup();
    let mut entries = Vec::with_capacity(texts.len());
    for batch in texts.chunks(32) {
        let vectors = embedder
            .embed(batch, EmbedKind::Document)
            .await
            .map_err(|e| e.to_string())?;
        if vectors.len() != batch.len() {
            return Err(format!(
                "asked for {} vectors, got {}",
                batch.len(),
                vectors.len()
            ));
        }
        entries.extend(batch.iter().cloned().zip(vectors));
    }
    let weights = embedder
        .fingerprint()
        .ok_or("only a model whose weights are known here can ship its vectors")?;
    Ok(Bundled::encode(
        embedder.model_name(),
        weights,
        embedder.dimensions(),
        &entries,
    ))
}

/// The vectors compiled into this binary.
pub fn bundled() -> &'static Bundled {
    static BUNDLED: OnceLock<Bundled> = OnceLock::new();
    BUNDLED.get_or_init(|| Bundled::parse(FILE).unwrap_or_default())
}

fn digest(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let entries = vec![
            ("a".to_string(), vec![1.0, -0.5]),
            ("b".to_string(), vec![0.25, 2.0]),
        ];
        let bytes = Bundled::encode("m", "w1", 2, &entries);
        let b = Bundled::parse(&bytes).expect("parses");
        assert_eq!(b.len(), 2);
        assert_eq!(b.vector("m", 2, Some("w1"), "b"), Some(&[0.25, 2.0][..]));
        assert_eq!(b.vector("m", 2, Some("w1"), "c"), None);
        assert_eq!(b.vector("other", 2, Some("w1"), "a"), None);
        assert_eq!(b.vector("m", 3, Some("w1"), "a"), None);
        // Same name, other weights (a fine-tuned or corrupted model): recomputed.
        assert_eq!(b.vector("m", 2, Some("w2"), "a"), None);
        assert_eq!(b.vector("m", 2, None, "a"), None);
        assert!(Bundled::parse(&bytes[..bytes.len() - 1]).is_none());
        assert!(Bundled::parse(b"SPKV2\nm\n").is_none());
        assert!(Bundled::parse(b"").is_none());
    }

    /// Every passage the binary ships has its vector, from the default local model.
    #[test]
    fn every_shipped_passage_has_a_vector() {
        let b = bundled();
        assert_eq!(b.model(), super::super::embed::local::MODEL_NAME);
        // The pinned SHA-256 of the weights the fetcher installs.
        assert_eq!(b.weights(), super::super::embed::fetch::WEIGHTS_SHA256);
        let chunks = super::super::corpus::summary_chunks()
            .expect("summaries")
            .into_iter()
            .chain(super::super::corpus::table_chunks().expect("tables"));
        let missing: Vec<String> = chunks
            .filter(|c| {
                b.vector(
                    b.model(),
                    super::super::embed::local::DIMENSIONS,
                    Some(b.weights()),
                    &c.text,
                )
                .is_none()
            })
            .map(|c| c.section.unwrap_or(c.heading))
            .collect();
        assert!(
            missing.is_empty(),
            "no bundled vector for {missing:?}: run `sparky models vectors`"
        );
    }
}
