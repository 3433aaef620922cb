//! The work done inside the reader process ([`super::worker`]): the checks, then the text or
//! the page pictures. Plain functions, so they can be tested without a process.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use pdf_extract::{Document, Object, ObjectId, PlainTextOutput};
use serde::{Deserialize, Serialize};

use super::budget::{self, Breach, PdfBudget};
use super::render::{self, RenderedPages};

/// What the reader is asked to do with a PDF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Job {
    /// Its text, up to `max_chars` characters (an attachment).
    Text {
        /// Characters wanted; pages after the one that reaches them are not read.
        max_chars: usize,
    },
    /// The text of every page (a document for the knowledge base).
    PageTexts,
    /// Its first `max_pages` pages drawn as PNG (a scan, for a model that reads images).
    Pages {
        /// Pages wanted.
        max_pages: usize,
    },
}

/// What the reader made of a PDF.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Output {
    /// For [`Job::Text`].
    Text {
        /// The text, at most the characters asked for.
        text: String,
        /// Whether there was more.
        clipped: bool,
    },
    /// For [`Job::PageTexts`]: one string a page, first page first.
    PageTexts(Vec<String>),
    /// For [`Job::Pages`].
    Pages(RenderedPages),
}

/// The reader's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reply {
    /// Read.
    Done(Output),
    /// Not read: a limit was hit.
    Refused(Breach),
    /// Not a PDF the readers can parse (pdf-extract panics on some malformed files; the panic
    /// ends here).
    Unreadable,
}

/// Does `job` on `bytes` within `budget`.
pub fn run(job: Job, bytes: &[u8], budget: &PdfBudget) -> Reply {
    let work = std::panic::AssertUnwindSafe(|| match job {
        Job::Text { max_chars } => text(bytes, max_chars, budget),
        Job::PageTexts => page_texts(bytes, budget),
        Job::Pages { max_pages } => match render::render(bytes, max_pages, budget) {
            Ok(Some(pages)) => Reply::Done(Output::Pages(pages)),
            Ok(None) => Reply::Unreadable,
            Err(b) => Reply::Refused(b),
        },
    });
    std::panic::catch_unwind(work).unwrap_or(Reply::Unreadable)
}

/// The document, checked and without its images, with its pages in order.
fn load(bytes: &[u8], budget: &PdfBudget) -> Result<(Document, BTreeMap<u32, ObjectId>), Reply> {
    budget::survey(bytes, budget, false).map_err(Reply::Refused)?;
    let mut doc = Document::load_mem(bytes).map_err(|_| Reply::Unreadable)?;
    let pages = doc.get_pages();
    if pages.len() > budget.max_pages {
        return Err(Reply::Refused(Breach::Pages {
            count: pages.len(),
            max: budget.max_pages,
        }));
    }
    drop_images(&mut doc);
    Ok((doc, pages))
}

/// Images carry no text, yet pdf-extract unpacks every image a page draws and parses its
/// pixels as drawing instructions: emptied, they cost nothing.
fn drop_images(doc: &mut Document) {
    for object in doc.objects.values_mut() {
        let Object::Stream(stream) = object else {
            continue;
        };
        let image = stream
            .dict
            .get(b"Subtype")
            .and_then(Object::as_name)
            .is_ok_and(|s| s == b"Image");
        if image {
            stream.dict.remove(b"Filter");
            stream.dict.remove(b"DecodeParms");
            stream.set_content(Vec::new());
        }
    }
}

/// Text written by pdf-extract, readable between pages (to stop once there is enough).
#[derive(Clone, Default)]
struct Shared(Rc<RefCell<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    /// Whether more than `max` characters were written (bytes are at least characters, so
    /// counting is needed only past `max` bytes).
    fn over(&self, max: usize) -> bool {
        let bytes = self.0.borrow();
        bytes.len() > max && String::from_utf8_lossy(&bytes).chars().nth(max).is_some()
    }
}

/// Pages are read in order into one output (as pdf-extract reads a whole file), stopping after
/// the page that passes `max_chars`.
fn text(bytes: &[u8], max_chars: usize, budget: &PdfBudget) -> Reply {
    let (doc, pages) = match load(bytes, budget) {
        Ok(loaded) => loaded,
        Err(reply) => return reply,
    };
    let shared = Shared::default();
    let mut sink = shared.clone();
    let mut out = PlainTextOutput::new(&mut sink as &mut dyn std::io::Write);
    for &number in pages.keys() {
        if pdf_extract::output_doc_page(&doc, &mut out, number).is_err() {
            return Reply::Unreadable;
        }
        if shared.over(max_chars) {
            break;
        }
    }
    let all = String::from_utf8_lossy(&shared.0.borrow()).into_owned();
    let clipped = all.chars().nth(max_chars).is_some();
    Reply::Done(Output::Text {
        text: all.chars().take(max_chars).collect(),
        clipped,
    })
}

/// Every page's text, each page read on its own (as pdf-extract's by-page reading does),
/// stopping at the first page that cannot be read.
fn page_texts(bytes: &[u8], budget: &PdfBudget) -> Reply {
    let (doc, pages) = match load(bytes, budget) {
        Ok(loaded) => loaded,
        Err(reply) => return reply,
    };
    let mut texts = Vec::new();
    for &number in pages.keys() {
        let mut text = String::new();
        let mut out = PlainTextOutput::new(&mut text);
        if pdf_extract::output_doc_page(&doc, &mut out, number).is_err() {
            break;
        }
        texts.push(text);
    }
    Reply::Done(Output::PageTexts(texts))
}
