//! Files people send in (photos of a panel directory, PDFs of a schedule): size and type
//! limits with a clear message, what the file is (sniffed from its bytes, not its name), and
//! the form each model provider takes it in (OpenAI `image_url` data URL, Gemini
//! `inline_data`; a text PDF as its extracted text).
//!
//! Nothing here is stored: a file lives for the turn that reads it. A PDF is read by a
//! separate process within [`crate::pdf::PdfBudget::attachment`] (pages, unpacked size,
//! pixels, memory, time), never in the bot's own.
//!
//! Layer: domain engine for incoming files. Imports nothing of the core, the store or a
//! platform.

pub mod download;
pub mod file_hosts;
pub mod pages;

use serde_json::{json, Value};

use crate::pdf::reader::{Job, Output, Reply};
use crate::pdf::{worker, Breach, PdfBudget};

/// A size as people write it: "1.2 MB", "340 kB", "512 bytes" (decimal units, as phones and
/// file managers show them).
pub fn human_size(bytes: usize) -> String {
    const KB: f64 = 1000.0;
    let b = bytes as f64;
    if b >= KB * KB {
        format!("{:.1} MB", b / (KB * KB))
    } else if b >= KB {
        format!("{:.0} kB", b / KB)
    } else {
        format!("{bytes} bytes")
    }
}

/// Limits on what is accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest file, bytes.
    pub max_bytes: usize,
    /// Most files in one message.
    pub max_files: usize,
    /// Most characters of PDF text passed on.
    pub max_pdf_chars: usize,
    /// Most pages of a scanned PDF rendered and sent as pictures.
    pub max_scan_pages: usize,
    /// What reading one PDF may cost.
    pub pdf: PdfBudget,
}

impl Default for Limits {
    fn default() -> Self {
        // OpenAI takes images up to 20 MB, Gemini inline data up to 20 MB per request.
        Self {
            max_bytes: 10 * 1024 * 1024,
            max_files: 4,
            max_pdf_chars: 60_000,
            max_scan_pages: 4,
            pdf: PdfBudget::attachment(),
        }
    }
}

/// Why a file was refused; the message is shown to the person as is.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IntakeError {
    /// Over the size limit.
    #[error("{name} is {}; the limit is {} (send a smaller photo or a page at a time)", human_size(*.size), human_size(*.max))]
    TooLarge {
        /// File name.
        name: String,
        /// Its size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// Not an image or PDF Sparky can read.
    #[error("{name} ({kind}) cannot be read: send a JPEG, PNG, WebP or GIF photo, or a PDF{hint}")]
    Unsupported {
        /// File name.
        name: String,
        /// What it looks like.
        kind: String,
        /// Extra advice (HEIC).
        hint: String,
    },
    /// Too many files in one message.
    #[error("{count} files in one message; the limit is {max}")]
    TooMany {
        /// Files sent.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A PDF hit a limit on what reading it may cost.
    #[error(
        "{name} was not read: {breach}. Send the pages you need as photos or as a smaller PDF"
    )]
    Refused {
        /// File name.
        name: String,
        /// The limit hit.
        breach: Breach,
    },
    /// The platform did not hand the file over.
    #[error("could not download {name}: {reason}")]
    Download {
        /// File name.
        name: String,
        /// Why.
        reason: String,
    },
    /// The file's link points somewhere other than the platform's file hosts: nothing was
    /// requested, and no token sent.
    #[error("{name} was not downloaded: its link points to {host}, and files are only downloaded from {allowed}")]
    ForeignHost {
        /// File name.
        name: String,
        /// The host the link named.
        host: String,
        /// The platform's file hosts.
        allowed: String,
    },
}

/// A file as received.
#[derive(Debug, Clone, PartialEq)]
pub struct InboundFile {
    /// Name given by the sender.
    pub name: String,
    /// Type the platform declared (may be wrong; the bytes decide).
    pub declared_mime: String,
    /// Content.
    pub bytes: Vec<u8>,
}

/// What a file turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A photo or picture.
    Image {
        /// File name.
        name: String,
        /// image/jpeg, image/png, image/webp or image/gif.
        mime: &'static str,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// A PDF with a text layer, as its text.
    PdfText {
        /// File name.
        name: String,
        /// Extracted text (clipped to the limit).
        text: String,
        /// Whether it was clipped.
        clipped: bool,
    },
    /// A PDF without text (a scan).
    ScannedPdf {
        /// File name.
        name: String,
    },
}

/// The image type from the first bytes, when it is one Sparky passes on.
pub fn sniff_image(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0xFF, 0xD8, 0xFF, ..] => Some("image/jpeg"),
        [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, ..] => Some("image/png"),
        [b'G', b'I', b'F', b'8', ..] => Some("image/gif"),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Some("image/webp"),
        _ => None,
    }
}

fn is_heic(bytes: &[u8]) -> bool {
    bytes.get(4..8) == Some(b"ftyp")
        && matches!(
            bytes.get(8..12),
            Some(b"heic" | b"heix" | b"hevc" | b"heim" | b"heis" | b"mif1" | b"msf1")
        )
}

/// Checks the number of files against the limit.
pub fn check_count(count: usize, limits: &Limits) -> Result<(), IntakeError> {
    if count > limits.max_files {
        return Err(IntakeError::TooMany {
            count,
            max: limits.max_files,
        });
    }
    Ok(())
}

/// What `file` is, within `limits`. A PDF is read by a reader process ([`crate::pdf::worker`]);
/// the caller only waits.
pub async fn classify(file: &InboundFile, limits: &Limits) -> Result<Content, IntakeError> {
    let size = file.bytes.len();
    if size > limits.max_bytes {
        return Err(IntakeError::TooLarge {
            name: file.name.clone(),
            size,
            max: limits.max_bytes,
        });
    }
    if let Some(mime) = sniff_image(&file.bytes) {
        return Ok(Content::Image {
            name: file.name.clone(),
            mime,
            bytes: file.bytes.clone(),
        });
    }
    if file.bytes.starts_with(b"%PDF-") {
        return pdf_content(file, limits).await;
    }
    let (kind, hint) = if is_heic(&file.bytes) {
        (
            "HEIC".to_string(),
            "; on an iPhone, set Camera > Formats > Most Compatible or share the photo as JPEG"
                .to_string(),
        )
    } else if file.declared_mime.is_empty() {
        ("unknown type".to_string(), String::new())
    } else {
        (file.declared_mime.clone(), String::new())
    };
    Err(IntakeError::Unsupported {
        name: file.name.clone(),
        kind,
        hint,
    })
}

/// What a reader process made of a PDF, or why it did not.
pub(crate) async fn read_pdf(
    name: &str,
    job: Job,
    bytes: Vec<u8>,
    budget: &PdfBudget,
) -> Result<Output, IntakeError> {
    let refused = |breach| IntakeError::Refused {
        name: name.to_string(),
        breach,
    };
    let response = match worker::read(job, bytes, budget).await {
        Ok(response) => response,
        Err(breach) => {
            if let Breach::Unavailable(why) = &breach {
                tracing::warn!(file = name, why, "no PDF reader could be started");
            }
            return Err(refused(breach));
        }
    };
    tracing::debug!(file = name, peak_rss_kb = ?response.peak_rss_kb, "PDF read");
    match response.reply {
        Reply::Done(output) => Ok(output),
        Reply::Refused(breach) => Err(refused(breach)),
        Reply::Unreadable => Err(unreadable(name)),
    }
}

fn unreadable(name: &str) -> IntakeError {
    IntakeError::Unsupported {
        name: name.to_string(),
        kind: "a PDF that could not be read".into(),
        hint: String::new(),
    }
}

async fn pdf_content(file: &InboundFile, limits: &Limits) -> Result<Content, IntakeError> {
    let job = Job::Text {
        max_chars: limits.max_pdf_chars,
    };
    let (text, clipped) = match read_pdf(&file.name, job, file.bytes.clone(), &limits.pdf).await? {
        Output::Text { text, clipped } => (text, clipped),
        _ => return Err(unreadable(&file.name)),
    };
    // Some scans carry a few stray characters; a directory has far more text.
    if text.split_whitespace().count() < 5 {
        return Ok(Content::ScannedPdf {
            name: file.name.clone(),
        });
    }
    Ok(Content::PdfText {
        name: file.name.clone(),
        text,
        clipped,
    })
}

fn image_part(mime: &str, bytes: &[u8]) -> crate::llm::ImagePart {
    crate::llm::ImagePart {
        mime: mime.to_string(),
        bytes: bytes.to_vec(),
    }
}

fn pdf_text_part(name: &str, text: &str, clipped: bool) -> String {
    format!(
        "[Text of the attached PDF {name}{}]\n{text}",
        if clipped { ", clipped" } else { "" }
    )
}

/// The content part of an OpenAI Chat Completions user message for `c`
/// (`None` for a scanned PDF, which has nothing to pass on).
pub fn openai_part(c: &Content) -> Option<Value> {
    match c {
        Content::Image { mime, bytes, .. } => Some(image_part(mime, bytes).openai_part()),
        Content::PdfText {
            name,
            text,
            clipped,
        } => Some(json!({"type": "text", "text": pdf_text_part(name, text, *clipped)})),
        Content::ScannedPdf { .. } => None,
    }
}

/// The part of a Gemini `generateContent` user turn for `c`.
pub fn gemini_part(c: &Content) -> Option<Value> {
    match c {
        Content::Image { mime, bytes, .. } => Some(image_part(mime, bytes).gemini_part()),
        Content::PdfText {
            name,
            text,
            clipped,
        } => Some(json!({"text": pdf_text_part(name, text, *clipped)})),
        Content::ScannedPdf { .. } => None,
    }
}

/// What to say when a picture arrives and the configured model cannot see: why, and how to
/// get the circuits in anyway (typing them, or the schedule CSV import). `workspace` and
/// `platform` fill in the import command for the person's workspace.
pub fn no_vision_message(model: &str, workspace: &str, platform: &str) -> String {
    let columns = crate::services::project_files::CSV_COLUMNS.join(",");
    let ws = if platform == "console" || workspace == "local" {
        "local".to_string()
    } else {
        format!("{platform}:{workspace}")
    };
    format!(
        "I cannot read pictures: the configured model ({model}) is not set up to take images \
         (an administrator can set `llm.vision = true` for a model that reads them, such as \
         gpt-4o-mini or gemini-2.5-flash). Nothing from the picture was sent.\n\
         Meanwhile, type the circuits here (\"add to LP-2: #1 kitchen receptacles, 20 A 1-pole, \
         1500 VA; #3 ...\") and I will propose them, or import them as a CSV file:\n\
         1. One row per circuit, with this header: `{columns}` \
         (`sparky project export PROJECT --format csv` writes a filled-in example).\n\
         2. On the machine that runs Sparky: `sparky project import FILE.csv --project PROJECT \
         --panel PANEL --workspace {ws}`.\n\
         A PDF schedule with a text layer needs no picture reading: attach it as a PDF."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn file(name: &str, bytes: &[u8]) -> InboundFile {
        InboundFile {
            name: name.into(),
            declared_mime: "application/octet-stream".into(),
            bytes: bytes.to_vec(),
        }
    }

    const PNG_HEAD: &[u8] = &[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13];

    #[tokio::test]
    async fn images_are_known_by_their_bytes_not_their_names() {
        let l = Limits::default();
        let c = classify(&file("directory.pdf", PNG_HEAD), &l)
            .await
            .unwrap();
        assert!(matches!(
            c,
            Content::Image {
                mime: "image/png",
                ..
            }
        ));
        let c = classify(&file("x", &[0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10]), &l)
            .await
            .unwrap();
        assert!(matches!(
            c,
            Content::Image {
                mime: "image/jpeg",
                ..
            }
        ));
        let webp = [b"RIFF".as_slice(), &[0, 0, 0, 0], b"WEBPVP8 "].concat();
        assert!(matches!(
            classify(&file("w", &webp), &l).await.unwrap(),
            Content::Image {
                mime: "image/webp",
                ..
            }
        ));
    }

    #[tokio::test]
    async fn oversize_wrong_type_and_too_many_files_are_refused_with_a_message() {
        let l = Limits {
            max_bytes: 8,
            ..Limits::default()
        };
        let e = classify(&file("big.png", PNG_HEAD), &l).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            "big.png is 12 bytes; the limit is 8 bytes (send a smaller photo or a page at a time)"
        );
        let mut doc = file("notes.docx", b"PK\x03\x04word/document.xml");
        doc.declared_mime =
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document".into();
        let e = classify(&doc, &Limits::default())
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("notes.docx") && e.contains("JPEG, PNG"), "{e}");
        let heic = [&[0, 0, 0, 0x18][..], b"ftypheic", b"\0\0\0\0mif1"].concat();
        let e = classify(&file("IMG_0042.HEIC", &heic), &Limits::default())
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("HEIC") && e.contains("Most Compatible"), "{e}");
        assert!(check_count(4, &Limits::default()).is_ok());
        assert_eq!(
            check_count(5, &Limits::default()).unwrap_err().to_string(),
            "5 files in one message; the limit is 4"
        );
    }

    #[test]
    fn provider_parts_carry_the_bytes_in_each_wire_format() {
        let c = Content::Image {
            name: "p.png".into(),
            mime: "image/png",
            bytes: PNG_HEAD.to_vec(),
        };
        let o = openai_part(&c).unwrap();
        assert_eq!(o["type"], "image_url");
        let url = o["image_url"]["url"].as_str().unwrap();
        let b64 = url.strip_prefix("data:image/png;base64,").unwrap();
        let back = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        assert_eq!(back, PNG_HEAD);
        let g = gemini_part(&c).unwrap();
        assert_eq!(g["inline_data"]["mime_type"], "image/png");
        let back = base64::engine::general_purpose::STANDARD
            .decode(g["inline_data"]["data"].as_str().unwrap())
            .unwrap();
        assert_eq!(back, PNG_HEAD);
        let t = Content::PdfText {
            name: "s.pdf".into(),
            text: "1 Kitchen 20 A".into(),
            clipped: false,
        };
        assert_eq!(openai_part(&t).unwrap()["type"], "text");
        assert!(gemini_part(&t).unwrap()["text"]
            .as_str()
            .unwrap()
            .ends_with("1 Kitchen 20 A"));
        assert!(openai_part(&Content::ScannedPdf { name: "s".into() }).is_none());
    }
}
