//! Files attached to a message (a photo of a panel directory, a PDF schedule): the adapters
//! translate them into [`FileRef`]s; the core downloads and reads them within the turn
//! (through [`crate::intake`]), and passes them to the model for that turn only.
//!
//! The history keeps the person's text with a placeholder per file ("[photo: panel.jpg,
//! 1.2 MB]"), never the bytes nor a PDF's text, so later requests stay small and valid on
//! every provider. Without a model that reads images, a picture is answered with how to type
//! or import the circuits instead, and nothing is sent.

use std::collections::HashMap;
use std::time::Duration;

use super::agent::{Agent, CoreError, Input, InputAction};
use super::effects::{Effect, EffectSink};
use super::session::{Mode, Session};
use super::untrusted;
use crate::config::Secret;
use crate::intake::file_hosts::FileHost;
use crate::intake::{self, human_size, Content, Limits};
use crate::llm::{ChatMessage, ChatRequest, ImagePart};

pub use crate::intake::download::FileRef;

/// Longest a single download may take.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(60);

/// How attached files are fetched, within which limits, and whether the model sees pictures.
#[derive(Clone)]
pub struct FileIntake {
    client: reqwest::Client,
    limits: Limits,
    /// Bearer token per platform (Slack's `url_private` needs the bot token).
    tokens: HashMap<String, Secret>,
    /// The origins each platform serves files from; a platform not listed has none.
    hosts: HashMap<String, Vec<FileHost>>,
    vision: bool,
}

impl Default for FileIntake {
    fn default() -> Self {
        Self::new(Limits::default(), false)
    }
}

impl std::fmt::Debug for FileIntake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileIntake")
            .field("limits", &self.limits)
            .field("token_platforms", &self.tokens.keys().collect::<Vec<_>>())
            .field("hosts", &self.hosts)
            .field("vision", &self.vision)
            .finish()
    }
}

impl FileIntake {
    /// Intake within `limits`; `vision` when the configured models read images.
    /// No platform has a file host until [`Self::with_hosts`] names them (the configured
    /// ones, see `app::file_intake`): nothing is downloaded from anywhere by default.
    pub fn new(limits: Limits, vision: bool) -> Self {
        Self {
            client: intake::download::client(DOWNLOAD_TIMEOUT),
            limits,
            tokens: HashMap::new(),
            hosts: HashMap::new(),
            vision,
        }
    }

    /// Sends `token` as the bearer when downloading files of `platform` (only to its hosts).
    pub fn with_token(mut self, platform: &str, token: Secret) -> Self {
        self.tokens.insert(platform.to_string(), token);
        self
    }

    /// Downloads files of `platform` only from `hosts`.
    pub fn with_hosts(mut self, platform: &str, hosts: Vec<FileHost>) -> Self {
        self.hosts.insert(platform.to_string(), hosts);
        self
    }

    /// Whether pictures are sent to the model.
    pub fn vision(&self) -> bool {
        self.vision
    }
}

/// What the files of one message add to the model requests of that turn only.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnFiles {
    /// Pictures, in the order sent.
    pub images: Vec<ImagePart>,
    /// Text of text PDFs, each fenced as untrusted document text.
    pub documents: Vec<String>,
}

impl TurnFiles {
    /// Whether there is nothing to add.
    pub fn is_empty(&self) -> bool {
        self.images.is_empty() && self.documents.is_empty()
    }

    /// Adds the files to the latest user message of `request`, the one they came with
    /// (tool results and model turns of the same turn come after it).
    pub fn attach(&self, request: &mut ChatRequest) {
        if self.is_empty() {
            return;
        }
        let Some(ChatMessage::User { text, images }) = request
            .messages
            .iter_mut()
            .rev()
            .find(|m| matches!(m, ChatMessage::User { .. }))
        else {
            return;
        };
        for d in &self.documents {
            text.push_str("\n\n");
            text.push_str(d);
        }
        images.extend(self.images.iter().cloned());
    }
}

impl InputAction {
    /// A message, with the files attached to it (a plain [`InputAction::Message`] when there
    /// are none).
    pub fn message(text: String, mode: Option<Mode>, files: Vec<FileRef>) -> Self {
        if files.is_empty() {
            Self::Message { text, mode }
        } else {
            Self::MessageWithFiles { text, mode, files }
        }
    }
}

/// What the files of a message became.
pub(super) enum Prepared {
    /// Go on with this text (the person's plus a placeholder per file) and these additions.
    Go(String, TurnFiles),
    /// The turn is over: what could be said was said.
    Stop,
}

/// What the person is told about a scanned PDF whose pages could not be rendered.
fn scan_message(name: &str) -> String {
    format!(
        "{name} is a scanned PDF (its pages are pictures, with no text to read), and its pages \
         could not be rendered. Send a photo or screenshot of each page (JPEG or PNG) instead."
    )
}

/// Which pages of a scan went to the model, in words.
fn pages_sent(shown: usize, total: usize) -> String {
    if shown < total {
        format!("the first {shown} of {total} pages")
    } else if total == 1 {
        "its page".to_string()
    } else {
        format!("all {total} pages")
    }
}

impl Agent {
    /// Downloads and reads the files of a message and decides what the turn does with them.
    /// Refusals (size, type, count, download) are told in the thread; the person's message is
    /// kept either way.
    pub(super) async fn prepare_files(
        &self,
        input: &Input,
        session: &Session,
        text: String,
        files: &[FileRef],
        sink: &dyn EffectSink,
    ) -> Result<Prepared, CoreError> {
        sink.emit(Effect::Status {
            text: "reading the attached files".into(),
        })
        .await;
        let can_see = self.intake.vision && self.has_model();
        let ReadFiles {
            placeholders,
            refusals,
            turn,
            pictures,
        } = self.read_files(input, files, can_see).await;
        let stored = with_placeholders(&text, &placeholders);
        if !refusals.is_empty() {
            sink.emit(Effect::Error {
                message: refusals.join("\n"),
            })
            .await;
        }
        if !pictures.is_empty() && !can_see {
            let model = self
                .provider_name()
                .unwrap_or_else(|| "none configured".to_string());
            let answer =
                intake::no_vision_message(&model, &input.key.workspace, &input.key.platform);
            self.append(
                session.id,
                ChatMessage::user(stored),
                Some(&input.user),
                input.event_id.clone(),
            )
            .await?;
            self.append(
                session.id,
                ChatMessage::assistant(answer.clone()),
                None,
                None,
            )
            .await?;
            sink.emit(Effect::Text {
                text: answer,
                citations: vec![],
            })
            .await;
            return Ok(Prepared::Stop);
        }
        if turn.is_empty() && !refusals.is_empty() {
            // Nothing readable: the message is kept, the person was told why, and the model is
            // not asked about files it cannot see.
            self.append(
                session.id,
                ChatMessage::user(stored),
                Some(&input.user),
                input.event_id.clone(),
            )
            .await?;
            return Ok(Prepared::Stop);
        }
        Ok(Prepared::Go(stored, turn))
    }

    /// Downloads and reads `files`, within the limit on their number.
    async fn read_files(&self, input: &Input, files: &[FileRef], can_see: bool) -> ReadFiles {
        let intake = &self.intake;
        let mut read = ReadFiles::default();
        if let Err(e) = intake::check_count(files.len(), &intake.limits) {
            read.refusals
                .push(format!("{e}; send them in smaller batches"));
            read.placeholders
                .extend(files.iter().map(|f| format!("[not read: {}]", f.name)));
            return read;
        }
        let source = intake::download::Source {
            hosts: intake
                .hosts
                .get(&input.key.platform)
                .map_or(&[], Vec::as_slice),
            bearer: intake.tokens.get(&input.key.platform).map(Secret::expose),
        };
        for f in files {
            self.read_file(f, source, can_see, &mut read).await;
        }
        read
    }

    /// Downloads and reads one file: a picture or a scan the model sees, a PDF's text, or the
    /// reason it was not read.
    async fn read_file(
        &self,
        f: &FileRef,
        source: intake::download::Source<'_>,
        can_see: bool,
        out: &mut ReadFiles,
    ) {
        let got =
            intake::download::fetch(&self.intake.client, f, source, &self.intake.limits).await;
        let mut scan_bytes = Vec::new();
        let read = match got {
            Ok(file) => {
                let size = file.bytes.len();
                let c = intake::classify(&file, &self.intake.limits).await;
                if matches!(c, Ok(Content::ScannedPdf { .. })) {
                    scan_bytes = file.bytes;
                }
                c.map(|c| (c, size))
            }
            Err(e) => Err(e),
        };
        match read {
            Ok((Content::Image { name, mime, bytes }, size)) => {
                out.placeholders
                    .push(format!("[photo: {name}, {}]", human_size(size)));
                out.pictures.push(name);
                out.turn.images.push(ImagePart {
                    mime: mime.to_string(),
                    bytes,
                });
            }
            Ok((
                Content::PdfText {
                    name,
                    text,
                    clipped,
                },
                size,
            )) => {
                out.placeholders.push(format!(
                    "[PDF: {name}, {}; its text was read in that turn only]",
                    human_size(size)
                ));
                let source = if clipped {
                    format!("attached PDF {name} (clipped)")
                } else {
                    format!("attached PDF {name}")
                };
                out.turn.documents.push(format!(
                    "[{}]\n{}",
                    untrusted::LABEL,
                    untrusted::delimit(&source, &text)
                ));
            }
            Ok((Content::ScannedPdf { name }, size)) if can_see => {
                // Drawn by a reader process within the budget, not on these threads.
                let rendered = intake::pages::read(&name, scan_bytes, &self.intake.limits).await;
                match rendered {
                    Ok(Some(pages)) => {
                        out.placeholders.push(format!(
                            "[scanned PDF: {name}, {}; {} sent as pictures]",
                            human_size(size),
                            pages_sent(pages.pngs.len(), pages.total)
                        ));
                        out.pictures.push(name);
                        out.turn
                            .images
                            .extend(pages.pngs.into_iter().map(|bytes| ImagePart {
                                mime: "image/png".into(),
                                bytes,
                            }));
                    }
                    Ok(None) => {
                        out.placeholders.push(format!("[not read: {name}]"));
                        out.refusals.push(scan_message(&name));
                    }
                    Err(e) => {
                        out.placeholders.push(format!("[not read: {name}]"));
                        out.refusals.push(e.to_string());
                    }
                }
            }
            Ok((Content::ScannedPdf { name }, size)) => {
                out.placeholders.push(format!(
                    "[scanned PDF: {name}, {}; not read]",
                    human_size(size)
                ));
                out.pictures.push(name);
            }
            Err(e) => {
                out.placeholders.push(format!("[not read: {}]", f.name));
                out.refusals.push(e.to_string());
            }
        }
    }
}

/// What the files of one message came to.
#[derive(Default)]
struct ReadFiles {
    /// One line per file for the stored message.
    placeholders: Vec<String>,
    /// Why files were not read, told in the thread.
    refusals: Vec<String>,
    turn: TurnFiles,
    /// Pictures (and scans) the model would have to see.
    pictures: Vec<String>,
}

/// The person's text followed by one placeholder line per file.
fn with_placeholders(text: &str, placeholders: &[String]) -> String {
    let mut out = text.trim().to_string();
    for p in placeholders {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_a_person_would_write_them() {
        assert_eq!(human_size(512), "512 bytes");
        assert_eq!(human_size(340_000), "340 kB");
        assert_eq!(human_size(1_234_567), "1.2 MB");
    }

    #[test]
    fn placeholders_follow_the_text_and_stand_alone_without_it() {
        let p = vec!["[photo: a.jpg, 1.2 MB]".to_string()];
        assert_eq!(
            with_placeholders(" add to LP-2 ", &p),
            "add to LP-2\n[photo: a.jpg, 1.2 MB]"
        );
        assert_eq!(with_placeholders("", &p), "[photo: a.jpg, 1.2 MB]");
    }

    #[test]
    fn files_join_the_latest_user_message_only() {
        let mut req = ChatRequest {
            messages: vec![
                ChatMessage::user("earlier"),
                ChatMessage::assistant("ok"),
                ChatMessage::user("add these"),
                ChatMessage::assistant("reading"),
            ],
            ..ChatRequest::default()
        };
        let turn = TurnFiles {
            images: vec![ImagePart {
                mime: "image/png".into(),
                bytes: vec![1, 2, 3],
            }],
            documents: vec!["<<<document x>>>\n1 Kitchen\n<<<end of document>>>".into()],
        };
        turn.attach(&mut req);
        match &req.messages[2] {
            ChatMessage::User { text, images } => {
                assert!(text.starts_with("add these\n\n<<<document x>>>"), "{text}");
                assert_eq!(images.len(), 1);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(&req.messages[0], ChatMessage::User { images, .. } if images.is_empty()));
        // Never stored: the pictures are not part of the serialised message.
        let stored = serde_json::to_string(&req.messages[2]).unwrap_or_default();
        assert!(
            !stored.contains("images") && stored.contains("add these"),
            "{stored}"
        );
    }
}
