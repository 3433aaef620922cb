//! Reading PDFs within a budget: attachments people send and documents added to the knowledge
//! base.
//!
//! A PDF is a small file that may describe a huge amount of work: a 48 kB attachment whose
//! page unpacks to 16 MB of drawing instructions took 1.4 GB to read; an 860-byte one whose
//! font maps a range of 16 million character codes took 3.7 GB and 39 s; a 141 kB scan holding
//! a 12,000 × 12,000 pixel image decodes to half a gigabyte. Its size says nothing about any of
//! this, so a PDF is read in two layers, both in a separate reader process ([`worker`]):
//! - checks made before anything is unpacked ([`budget::survey`]): the page count, what every
//!   stream unpacks to (measured with a ceiling, [`inflate`]), and the pixels of every image
//!   that will be drawn. These name the limit that was hit, so the person knows what to send
//!   instead.
//! - limits on the process itself ([`PdfBudget::memory`], [`PdfBudget::cpu`],
//!   [`PdfBudget::wall`]). The readers (pdf-extract over lopdf, hayro) expand what they parse
//!   up to ~110 times (a content stream becomes one allocated operation per few bytes), expand
//!   character-code ranges and follow references without any bound of their own, so no check
//!   of the file alone bounds their memory or time. The operating system does: the process
//!   cannot allocate past its memory limit, and it is killed at its time limit. The bot's own
//!   memory and threads never hold a PDF's contents.
//!
//! Layer: a leaf; imports nothing of the crate, so the intake of attachments and the ingestion
//! of documents share it.

pub mod budget;
pub mod inflate;
pub mod reader;
pub mod render;
pub mod worker;

pub use budget::{Breach, PdfBudget};

/// A byte count in decimal units, as the limits are written: "32 MB", "512 MB", "1.5 GB".
fn size(bytes: u64) -> String {
    const MB: u64 = 1_000_000;
    if bytes >= 1000 * MB {
        format!("{:.1} GB", bytes as f64 / (1000 * MB) as f64)
    } else {
        format!("{} MB", bytes.div_ceil(MB))
    }
}
