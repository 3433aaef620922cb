//! Ingestion: documents are chunked by section, content-hashed, stored, and embedded in
//! batches; unchanged documents do nothing.

use std::path::Path;
use std::sync::Arc;

use super::corpus;
use super::embed::{EmbedKind, Embedder};
use super::sections::find_references;
use crate::pdf::reader::{Job, Output, Reply};
use crate::pdf::{worker, PdfBudget};
use crate::store::{NewChunk, NewDocument, Store, StoreError, CHUNK_BATCH};

/// Largest chunk in characters before it is split on paragraphs.
const MAX_CHUNK: usize = 2000;
/// Texts per embedding request.
const EMBED_BATCH: usize = 32;
/// A pass writing at least this many vectors, and at least as many as the store holds, drops
/// the approximate index and builds it once at the end: on Postgres 18 with pgvector 0.8 that
/// took a pass of 20,000 vectors from 72 s (the index kept up to date row by row) to 9.4 s
/// (docs/retrieval.md, "Ingestion and the missing-vector check").
const BULK_VECTORS: i64 = 20_000;

/// Ingestion failures; the store is left as it was.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The file could not be read.
    #[error("cannot read {path}: {message}")]
    Read {
        /// File.
        path: String,
        /// Why.
        message: String,
    },
    /// The file has no text to index.
    #[error("{0} has no extractable text (empty, scanned without OCR, or not a document)")]
    Empty(String),
    /// Unsupported file type.
    #[error("{0}: unsupported file type (PDF, Markdown or plain text)")]
    Unsupported(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Embedding failed (chunks are stored; `sparky ingest` again embeds what is missing).
    #[error("embedding failed: {0}")]
    Embed(String),
}

/// What an ingestion did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct IngestReport {
    /// Documents whose content changed (or were new).
    pub documents_changed: usize,
    /// Documents unchanged (nothing done).
    pub documents_unchanged: usize,
    /// Chunks stored.
    pub chunks: usize,
    /// Chunks embedded now.
    pub embedded: usize,
}

/// A page of extracted text.
struct Page {
    number: Option<i32>,
    text: String,
}

/// The pages of a PDF, read by a reader process within the document budget
/// ([`crate::pdf::PdfBudget::document`]): a file that would unpack or allocate past it is
/// refused with the limit, and the command's own process never parses it.
async fn pdf_pages(name: &str, bytes: Vec<u8>) -> Result<Vec<Page>, IngestError> {
    let read = |message: String| IngestError::Read {
        path: name.to_string(),
        message,
    };
    let response = worker::read(Job::PageTexts, bytes, &PdfBudget::document())
        .await
        .map_err(|b| read(format!("not read: {b}")))?;
    match response.reply {
        Reply::Done(Output::PageTexts(texts)) => Ok(texts
            .into_iter()
            .enumerate()
            .map(|(i, text)| Page {
                number: i32::try_from(i + 1).ok(),
                text,
            })
            .collect()),
        Reply::Refused(b) => Err(read(format!("not read: {b}"))),
        _ => Err(read("not a readable PDF (the file is malformed)".into())),
    }
}

async fn read_pages(path: &Path) -> Result<Vec<Page>, IngestError> {
    let name = path.display().to_string();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    let bytes = tokio::fs::read(path).await.map_err(|e| IngestError::Read {
        path: name.clone(),
        message: e.to_string(),
    })?;
    let pages = match ext.as_str() {
        "pdf" => pdf_pages(&name, bytes).await?,
        "md" | "markdown" | "txt" | "text" => {
            let text = String::from_utf8(bytes).map_err(|_| IngestError::Read {
                path: name.clone(),
                message: "not UTF-8 text".into(),
            })?;
            vec![Page { number: None, text }]
        }
        _ => return Err(IngestError::Unsupported(name)),
    };
    if pages.iter().all(|p| p.text.trim().is_empty()) {
        return Err(IngestError::Empty(name));
    }
    Ok(pages)
}

/// A line that starts a new section: a heading, or a line that begins with a reference.
fn section_start(line: &str) -> Option<String> {
    let t = line.trim_start_matches(['#', ' ', '*']).trim();
    let first = t.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    let refs = find_references(&first);
    let r = refs.into_iter().next()?;
    // The reference must lead the line ("210.8 Ground-Fault..." or "Table 310.16 ...").
    let lead = t.to_ascii_lowercase();
    let bare = r.to_ascii_lowercase();
    let bare_num = bare
        .trim_start_matches("table ")
        .split('(')
        .next()
        .unwrap_or("")
        .to_string();
    (lead.starts_with(&bare_num) || lead.starts_with("table") || lead.starts_with("chapter"))
        .then_some(r)
}

/// Splits pages into section chunks.
fn chunk_pages(pages: &[Page], edition: Option<i32>) -> Vec<NewChunk> {
    let mut out = Vec::new();
    let mut current: Option<(Option<String>, Option<i32>, String, String)> = None;
    let flush = |cur: Option<(Option<String>, Option<i32>, String, String)>,
                 out: &mut Vec<NewChunk>| {
        let Some((section, page, heading, text)) = cur else {
            return;
        };
        let text = text.trim().to_string();
        if text.is_empty() {
            return;
        }
        let mut pieces = Vec::new();
        let mut buf = String::new();
        for para in text.split("\n\n") {
            if !buf.is_empty() && buf.len() + para.len() > MAX_CHUNK {
                pieces.push(std::mem::take(&mut buf));
            }
            if !buf.is_empty() {
                buf.push_str("\n\n");
            }
            buf.push_str(para);
        }
        if !buf.trim().is_empty() {
            pieces.push(buf);
        }
        for p in pieces {
            out.push(NewChunk {
                section: section.clone(),
                edition,
                page,
                heading: heading.clone(),
                content_hash: super::hash(&p),
                text: p,
            });
        }
    };
    for page in pages {
        for line in page.text.lines() {
            if let Some(section) = section_start(line) {
                flush(current.take(), &mut out);
                current = Some((
                    Some(section),
                    page.number,
                    line.trim().trim_start_matches('#').trim().to_string(),
                    String::new(),
                ));
            }
            let cur =
                current.get_or_insert_with(|| (None, page.number, String::new(), String::new()));
            cur.3.push_str(line);
            cur.3.push('\n');
        }
    }
    flush(current.take(), &mut out);
    out
}

/// Marks a document whose chunks are being replaced: its stored hash matches no content until
/// the last batch is in, so a run that stopped half-way is taken up again by the next one.
const INCOMPLETE: &str = "incomplete:";

/// Stores a document's chunks unless its content is unchanged.
async fn store_document(
    store: &dyn Store,
    doc: NewDocument,
    chunks: &[NewChunk],
    report: &mut IngestReport,
    progress: bool,
) -> Result<i64, IngestError> {
    if store
        .document_hash(&doc.source, doc.workspace.as_ref())
        .await?
        .is_some_and(|h| h == doc.content_hash)
    {
        let (stored, _) = store.upsert_document(&doc).await?;
        report.documents_unchanged += 1;
        return Ok(stored.id);
    }
    let pending = NewDocument {
        content_hash: format!("{INCOMPLETE}{}", doc.content_hash),
        ..doc.clone()
    };
    let (stored, _) = store.upsert_document(&pending).await?;
    let total = chunks.len();
    let show = |done: usize| {
        if progress {
            eprint!("\r{}: stored {done}/{total} chunks", doc.source);
        }
    };
    store
        .replace_chunks_in_batches(stored.id, chunks, &show)
        .await?;
    if progress && total > 0 {
        eprintln!();
    }
    store.upsert_document(&doc).await?;
    report.documents_changed += 1;
    report.chunks += total;
    Ok(stored.id)
}

/// Makes sure the shipped corpus (summaries and tables) is stored, then embeds what is missing.
pub async fn sync_builtin(
    store: &dyn Store,
    embedder: Option<&Arc<dyn Embedder>>,
) -> Result<IngestReport, IngestError> {
    let mut report = IngestReport::default();
    for (source, title, chunks) in [
        (
            corpus::SUMMARIES_SOURCE,
            "NEC section summaries written by the Sparky team",
            corpus::summary_chunks(),
        ),
        (
            corpus::TABLES_SOURCE,
            "NEC tables shipped with Sparky",
            corpus::table_chunks(),
        ),
    ] {
        let chunks = chunks.map_err(|e| IngestError::Read {
            path: source.into(),
            message: e,
        })?;
        let all: String = chunks.iter().map(|c| c.content_hash.as_str()).collect();
        let doc = NewDocument {
            source: source.into(),
            title: title.into(),
            workspace: None,
            content_hash: super::hash(&all),
        };
        store_document(store, doc, &chunks, &mut report, false).await?;
    }
    if let Some(e) = embedder {
        report.embedded = embed_if_changed(store, e.as_ref(), false).await?;
    }
    Ok(report)
}

/// Ingests files for a workspace (`None`: visible to everyone).
pub async fn ingest_files(
    store: &dyn Store,
    embedder: Option<&Arc<dyn Embedder>>,
    paths: &[std::path::PathBuf],
    workspace: Option<&crate::domain::workspace::Workspace>,
    edition: Option<i32>,
    progress: bool,
) -> Result<IngestReport, IngestError> {
    ingest_files_for(store, embedder, paths, workspace, edition, None, progress).await
}

/// Ingests files, filed under a jurisdiction's local amendments when `jurisdiction` is given
/// (a key such as "WA" or "WA/Seattle"; see [`crate::jurisdiction::site::jurisdiction_key`]).
/// Amendment documents are named "<jurisdiction> amendment: <file>" so citations say what they are.
pub async fn ingest_files_for(
    store: &dyn Store,
    embedder: Option<&Arc<dyn Embedder>>,
    paths: &[std::path::PathBuf],
    workspace: Option<&crate::domain::workspace::Workspace>,
    edition: Option<i32>,
    jurisdiction: Option<&str>,
    progress: bool,
) -> Result<IngestReport, IngestError> {
    // Read and chunk everything first: a bad file leaves the store untouched.
    let mut prepared = Vec::new();
    for path in paths {
        let pages = read_pages(path).await?;
        let chunks = chunk_pages(&pages, edition);
        if chunks.is_empty() {
            return Err(IngestError::Empty(path.display().to_string()));
        }
        let whole: String = pages.iter().map(|p| p.text.as_str()).collect();
        let title = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("document")
            .to_string();
        let file = path
            .file_name()
            .and_then(|s| s.to_str())
            .unwrap_or("document");
        let doc = NewDocument {
            source: match jurisdiction {
                Some(j) => format!("{j} amendment: {file}"),
                None => file.to_string(),
            },
            title,
            workspace: workspace.cloned(),
            content_hash: super::hash(&format!("{edition:?}\n{whole}")),
        };
        prepared.push((doc, chunks));
    }
    let mut report = IngestReport::default();
    for (doc, chunks) in prepared {
        let id = store_document(store, doc, &chunks, &mut report, progress).await?;
        if jurisdiction.is_some() {
            store.set_document_jurisdiction(id, jurisdiction).await?;
        }
    }
    if let Some(e) = embedder {
        report.embedded = embed_if_changed(store, e.as_ref(), progress).await?;
    }
    Ok(report)
}

/// Embeds every chunk that has no vector for this embedder's model; returns how many.
/// Shipped passages take their precomputed vectors; only the rest goes to the embedder.
pub async fn embed_missing(
    store: &dyn Store,
    embedder: &dyn Embedder,
    progress: bool,
) -> Result<usize, IngestError> {
    // One pass at a time in this process: a second caller (a one-shot search while start-up
    // embeds in the background) waits, then finds nothing left instead of embedding it again.
    static RUNNING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _one = RUNNING.lock().await;
    let (model, dims) = (embedder.model_name(), embedder.dimensions());
    // Read before the scan: a change committed while it runs leaves the counter ahead of the
    // mark, so the next check scans again.
    let (generation, _) = store.embedding_generation(model).await?;
    let missing = store.count_missing_embeddings(model).await?;
    let held = store.indexed_vectors(model).await?.unwrap_or(0);
    if missing >= BULK_VECTORS && missing >= held && store.pause_vector_index(dims).await? {
        tracing::info!(
            missing,
            "vector index dropped for a bulk pass; built again after it"
        );
        if progress {
            eprintln!("{missing} vectors to write: the vector index is built once after them");
        }
    }
    let written = embed_all(store, embedder, progress).await;
    // On every way out, a pass that failed half-way included: searches need the index back.
    if store.ensure_vector_index().await? {
        tracing::info!("vector index built");
        if progress {
            eprintln!("vector index built");
        }
    }
    let done = written?;
    store.mark_embedded(model, generation).await?;
    Ok(done)
}

/// The pass itself: every chunk without a vector, in id order. Chunks are read and their
/// vectors written [`CHUNK_BATCH`] at a time (one statement each way), and sent to the
/// embedder [`EMBED_BATCH`] at a time.
async fn embed_all(
    store: &dyn Store,
    embedder: &dyn Embedder,
    progress: bool,
) -> Result<usize, IngestError> {
    let bundled = super::bundled::bundled();
    let (model, dims, weights) = (
        embedder.model_name(),
        embedder.dimensions(),
        embedder.fingerprint(),
    );
    let mut done = 0usize;
    let mut after_id = 0;
    loop {
        let batch = store
            .chunks_missing_embedding(model, after_id, CHUNK_BATCH)
            .await?;
        let Some(last) = batch.last() else {
            break;
        };
        after_id = last.id;
        let mut vectors: Vec<(i64, Vec<f32>)> = Vec::with_capacity(batch.len());
        let mut to_embed = Vec::new();
        for c in &batch {
            match bundled.vector(model, dims, weights, &c.text) {
                Some(v) => vectors.push((c.id, v.to_vec())),
                None => to_embed.push(c),
            }
        }
        for group in to_embed.chunks(EMBED_BATCH) {
            let texts: Vec<String> = group.iter().map(|c| c.text.clone()).collect();
            let embedded = embedder
                .embed(&texts, EmbedKind::Document)
                .await
                .map_err(|e| IngestError::Embed(e.to_string()))?;
            if embedded.len() != group.len() {
                return Err(IngestError::Embed(format!(
                    "asked for {} vectors, got {}",
                    group.len(),
                    embedded.len()
                )));
            }
            vectors.extend(group.iter().map(|c| c.id).zip(embedded));
        }
        let rows: Vec<(i64, &[f32])> = vectors.iter().map(|(id, v)| (*id, v.as_slice())).collect();
        store.set_embeddings(model, &rows).await?;
        done += batch.len();
        if progress {
            eprint!("\rembedded {done} chunks");
        }
    }
    if progress && done > 0 {
        eprintln!();
    }
    Ok(done)
}

/// Embeds what is missing only when the passages changed since every one last had a vector of
/// this embedder's model (one read of two counters otherwise); returns how many it embedded.
pub async fn embed_if_changed(
    store: &dyn Store,
    embedder: &dyn Embedder,
    progress: bool,
) -> Result<usize, IngestError> {
    let (corpus, embedded) = store.embedding_generation(embedder.model_name()).await?;
    if embedded == Some(corpus) {
        return Ok(0);
    }
    embed_missing(store, embedder, progress).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_follow_section_headings() {
        let pages = vec![Page {
            number: Some(3),
            text: "Intro text\n210.8 Ground-fault protection\nGFCI needed in bathrooms.\n\n## 210.12 Arc-fault\nAFCI rules.\nTable 310.16 Ampacities\n| 12 | 25 |\n".into(),
        }];
        let chunks = chunk_pages(&pages, Some(2023));
        let sections: Vec<Option<String>> = chunks.iter().map(|c| c.section.clone()).collect();
        assert_eq!(
            sections,
            vec![
                None,
                Some("210.8".into()),
                Some("210.12".into()),
                Some("Table 310.16".into())
            ]
        );
        assert!(chunks[1].text.contains("bathrooms"));
        assert_eq!(chunks[1].page, Some(3));
        assert!(chunks.iter().all(|c| c.edition == Some(2023)));
    }

    /// (A malformed PDF, read by the reader process, is tested in tests/it/pdf_budget.rs.)
    #[tokio::test]
    async fn empty_and_unsupported_files_are_refused_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.md");
        std::fs::write(&empty, "   \n").unwrap();
        assert!(matches!(
            read_pages(&empty).await,
            Err(IngestError::Empty(_))
        ));
        let odd = dir.path().join("x.docx");
        std::fs::write(&odd, b"x").unwrap();
        assert!(matches!(
            read_pages(&odd).await,
            Err(IngestError::Unsupported(_))
        ));
    }
}
