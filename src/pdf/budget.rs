//! What reading one PDF may cost, and the checks made before it is read.

use hayro::hayro_syntax::object::{Array, Name, Object, Stream};
use hayro::hayro_syntax::page::Page;
use hayro::hayro_syntax::{Filter, Pdf};
use serde::{Deserialize, Serialize};
use std::time::Duration;

use super::inflate::{self, Step};
use super::size;

/// Limits on reading one PDF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PdfBudget {
    /// Most pages.
    pub max_pages: usize,
    /// Most bytes all streams other than images unpack to, together.
    pub max_inflated: usize,
    /// Most bytes one page's drawing instructions (its content streams) unpack to: the
    /// text reader allocates up to ~110 times that while parsing them.
    pub max_page_content: usize,
    /// Largest image (or rendered page), pixels.
    pub max_pixels: u64,
    /// Memory the reader process may allocate, bytes.
    pub memory: u64,
    /// CPU time the reader process may use.
    pub cpu: Duration,
    /// Longest wait for a result, including waiting for a free reader.
    pub wall: Duration,
}

impl PdfBudget {
    /// For a file attached to a message.
    ///
    /// Why these hold memory: a reader process cannot allocate past `memory` (512 MB), and at
    /// most [`super::worker::MAX_READERS`] (2) run at once, so attachments cost the host at
    /// most about 1 GB however they are built, and nothing in the bot's own process. The
    /// checks stop ordinary bombs before that, with a message: a page's 4 MB of drawing
    /// instructions parse to at most ~450 MB (110 times, measured on the worst operators);
    /// a 40-megapixel image (a letter page scanned at 600 dpi is 34) decodes to 160 MB of
    /// RGBA; 32 MB unpacked and 500 pages are far beyond any schedule or specification
    /// section sent in a chat (a legitimate schedule unpacks to well under 1 MB).
    pub fn attachment() -> Self {
        Self {
            max_pages: 500,
            max_inflated: 32_000_000,
            max_page_content: 4_000_000,
            max_pixels: 40_000_000,
            memory: 512_000_000,
            cpu: Duration::from_secs(20),
            wall: Duration::from_secs(30),
        }
    }

    /// For a document added to the knowledge base with `sparky ingest`: a code book runs to a
    /// thousand pages and hundreds of MB unpacked, read once by an administrator, so the
    /// limits are wider; they are still limits.
    pub fn document() -> Self {
        Self {
            max_pages: 5000,
            max_inflated: 1_000_000_000,
            max_page_content: 16_000_000,
            max_pixels: 100_000_000,
            memory: 4_000_000_000,
            cpu: Duration::from_secs(15 * 60),
            wall: Duration::from_secs(20 * 60),
        }
    }
}

/// Which limit reading a PDF hit; the text completes "it was not read: ...".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum Breach {
    /// Too many pages.
    #[error("it has {count} pages; the limit is {max}")]
    Pages {
        /// Pages in the file.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// Its streams unpack to too much.
    #[error("its contents unpack to more than {}, the limit", size(*.max as u64))]
    Inflated {
        /// The limit, bytes.
        max: usize,
    },
    /// A page's drawing instructions unpack to too much.
    #[error("page {page} unpacks to more than {} of drawing instructions, the limit", size(*.max as u64))]
    PageContent {
        /// The page, from 1.
        page: usize,
        /// The limit, bytes.
        max: usize,
    },
    /// An image (or a page once drawn) has too many pixels.
    #[error("it holds a {width} × {height} pixel image; the limit is {} megapixels", .max / 1_000_000)]
    Pixels {
        /// Width, pixels.
        width: u64,
        /// Height, pixels.
        height: u64,
        /// The limit.
        max: u64,
    },
    /// Reading it needed more memory than the reader may use.
    #[error("reading it needed more than {} of memory, the limit", size(*.max))]
    Memory {
        /// The limit, bytes.
        max: u64,
    },
    /// Reading it took too long.
    #[error("reading it took longer than {secs} s, the limit")]
    Time {
        /// The limit, seconds.
        secs: u64,
    },
    /// The reader could not be run.
    #[error("the PDF reader is not available ({0})")]
    Unavailable(String),
}

/// Checks `bytes` against `budget` without unpacking anything past its limits. Images are
/// checked only when they will be drawn (`images`); text extraction skips them. A file the
/// checker cannot parse is left to the reader and the process limits.
pub fn survey(bytes: &[u8], budget: &PdfBudget, images: bool) -> Result<(), Breach> {
    let Ok(pdf) = Pdf::new(bytes.to_vec()) else {
        return Ok(());
    };
    let count = pdf.pages().len();
    if count > budget.max_pages {
        return Err(Breach::Pages {
            count,
            max: budget.max_pages,
        });
    }
    check_pages(&pdf, budget)?;
    check_streams(&pdf, budget, images)
}

/// Each page's content within the page limit, and all of it, counted once a page (pages may
/// share a stream, and are parsed once each), within the file's.
fn check_pages(pdf: &Pdf, budget: &PdfBudget) -> Result<(), Breach> {
    let mut left = budget.max_inflated;
    for (i, page) in pdf.pages().iter().enumerate() {
        let used = page_content(i + 1, page, budget)?;
        left = left.checked_sub(used).ok_or(Breach::Inflated {
            max: budget.max_inflated,
        })?;
    }
    Ok(())
}

/// Every stream once, images apart.
fn check_streams(pdf: &Pdf, budget: &PdfBudget, images: bool) -> Result<(), Breach> {
    let mut left = budget.max_inflated;
    for object in pdf.objects() {
        let Object::Stream(stream) = object else {
            continue;
        };
        if is_image(&stream) {
            if images {
                check_image(&stream, budget)?;
            }
            continue;
        }
        let used = unpacked_len(&stream, left).map_err(|_| Breach::Inflated {
            max: budget.max_inflated,
        })?;
        left -= used;
    }
    Ok(())
}

/// What the page's content streams unpack to, with the page limit as the ceiling.
fn page_content(number: usize, page: &Page<'_>, budget: &PdfBudget) -> Result<usize, Breach> {
    let contents = page.raw();
    let streams: Vec<Stream<'_>> = match contents.get::<Stream<'_>>(b"Contents") {
        Some(stream) => vec![stream],
        None => contents
            .get::<Array<'_>>(b"Contents")
            .map(|a| a.iter::<Stream<'_>>().collect())
            .unwrap_or_default(),
    };
    let breach = Breach::PageContent {
        page: number,
        max: budget.max_page_content,
    };
    let mut left = budget.max_page_content;
    for stream in &streams {
        left -= unpacked_len(stream, left).map_err(|_| breach.clone())?;
    }
    Ok(budget.max_page_content - left)
}

fn is_image(stream: &Stream<'_>) -> bool {
    stream
        .dict()
        .get::<Name<'_>>(b"Subtype")
        .is_some_and(|s| s.as_ref() == b"Image")
}

/// Image streams: the declared dimensions within the pixel limit, and the bytes the
/// non-image filters give no more than those dimensions can use (8 bytes a pixel: four
/// components of 16 bits), so a small declared image cannot unpack to gigabytes either.
fn check_image(stream: &Stream<'_>, budget: &PdfBudget) -> Result<(), Breach> {
    let dict = stream.dict();
    let side = |key: &[u8]| u64::try_from(dict.get::<i64>(key).unwrap_or(0)).unwrap_or(0);
    let (width, height) = (side(b"Width"), side(b"Height"));
    let pixels = width.saturating_mul(height);
    let breach = Breach::Pixels {
        width,
        height,
        max: budget.max_pixels,
    };
    if pixels > budget.max_pixels {
        return Err(breach);
    }
    let cap = usize::try_from(pixels.saturating_mul(8))
        .unwrap_or(usize::MAX)
        .saturating_add(64 * 1024);
    unpacked_len(stream, cap).map_err(|_| breach)?;
    Ok(())
}

/// What `stream` unpacks to, at most `cap` bytes; the image codecs end the chain.
fn unpacked_len(stream: &Stream<'_>, cap: usize) -> Result<usize, inflate::Over> {
    let steps: Vec<Step> = stream
        .filters()
        .iter()
        .map_while(|f| match f {
            Filter::FlateDecode => Some(Some(Step::Flate)),
            Filter::LzwDecode => Some(Some(Step::Lzw)),
            Filter::Ascii85Decode => Some(Some(Step::Ascii85)),
            Filter::AsciiHexDecode => Some(Some(Step::AsciiHex)),
            Filter::RunLengthDecode => Some(Some(Step::RunLength)),
            Filter::Crypt => Some(None),
            _ => None,
        })
        .flatten()
        .collect();
    let raw = stream.raw_data();
    if steps.is_empty() {
        return if raw.len() > cap {
            Err(inflate::Over)
        } else {
            Ok(raw.len())
        };
    }
    inflate::unpack(&raw, &steps, cap).map(|b| b.len())
}
