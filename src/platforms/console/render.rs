//! Renders core effects as terminal text or JSON lines.

use std::io::Write;

use crate::core::{mention, Effect, FileAttachment, Outcome};
use crate::platforms::render::{citations_line, one_line, readable};

/// A terminal has no thread to attach to: files go to the temporary directory.
fn save_file(file: &FileAttachment) -> std::io::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join("sparky-files");
    std::fs::create_dir_all(&dir)?;
    let name: String = file
        .file_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || ".-_".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let path = dir.join(if name.is_empty() { "file".into() } else { name });
    std::fs::write(&path, &file.bytes)?;
    Ok(path)
}

/// How effects are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Text for a person at a terminal (statuses shown).
    Interactive,
    /// Plain text for scripts (no statuses).
    Plain,
    /// One JSON object per line.
    Json,
}

/// Turns effects into output, remembering whether streamed text is mid-line.
pub struct Renderer<W: Write> {
    out: W,
    format: Format,
    streamed: bool,
}

impl<W: Write> Renderer<W> {
    /// A renderer writing to `out`.
    pub fn new(out: W, format: Format) -> Self {
        Self {
            out,
            format,
            streamed: false,
        }
    }

    /// Prints an arbitrary JSON value (JSON mode) or text line.
    pub fn line(&mut self, json: &serde_json::Value, text: &str) {
        let _ = match self.format {
            Format::Json => writeln!(self.out, "{json}"),
            _ => writeln!(self.out, "{text}"),
        };
        let _ = self.out.flush();
    }

    /// Prints one effect.
    pub fn effect(&mut self, effect: &Effect) {
        if self.format == Format::Json {
            if let Ok(line) = serde_json::to_string(effect) {
                let _ = writeln!(self.out, "{line}");
            }
            let _ = self.out.flush();
            return;
        }
        let _ = self.text(effect);
        let _ = self.out.flush();
    }

    fn end_stream(&mut self) -> std::io::Result<()> {
        if self.streamed {
            writeln!(self.out)?;
            self.streamed = false;
        }
        Ok(())
    }

    fn text(&mut self, effect: &Effect) -> std::io::Result<()> {
        match effect {
            Effect::Status { text } => {
                if self.format == Format::Interactive && !self.streamed {
                    writeln!(self.out, "\x1b[2m… {text}\x1b[0m")?;
                }
            }
            Effect::Notice { text } => {
                self.end_stream()?;
                writeln!(self.out, "({text})")?;
            }
            Effect::Delta { text } => {
                write!(self.out, "{text}")?;
                self.streamed = true;
            }
            Effect::Text { text, citations } => {
                if self.streamed {
                    self.end_stream()?;
                } else if !text.is_empty() {
                    writeln!(self.out, "{text}")?;
                }
                if let Some(line) = citations_line(citations) {
                    writeln!(self.out, "{line}")?;
                }
            }
            Effect::Confirmation {
                action_id,
                items,
                rejected,
                confirmers,
                expires_at,
                ..
            } => {
                self.end_stream()?;
                writeln!(self.out, "Proposed change ({action_id}):")?;
                for (i, item) in items.iter().enumerate() {
                    writeln!(self.out, "  {}. {}", i + 1, one_line(&item.summary))?;
                    for d in &item.details {
                        writeln!(self.out, "       {}", one_line(d))?;
                    }
                }
                for r in rejected {
                    writeln!(self.out, "  Not included, could not be prepared: {r}")?;
                }
                writeln!(
                    self.out,
                    "  [1] /confirm   [2] /cancel   (or type a correction; {} may confirm; expires {})",
                    mention::plain(confirmers),
                    expires_at.format("%Y-%m-%d %H:%M UTC")
                )?;
            }
            Effect::Resolved {
                outcome,
                by,
                details,
                ..
            } => {
                self.end_stream()?;
                let head = match outcome {
                    Outcome::Executed => "Applied",
                    Outcome::Failed => "Applied with errors",
                    Outcome::Cancelled => "Cancelled",
                    Outcome::Superseded => "Superseded",
                    Outcome::Expired => "Expired",
                    Outcome::AlreadyResolved => "Already resolved",
                    Outcome::Outdated => "Not applied: the project changed since it was proposed",
                };
                match by {
                    Some(by) => writeln!(self.out, "{head} (by {}).", by.id())?,
                    None => writeln!(self.out, "{head}.")?,
                }
                for d in details {
                    writeln!(self.out, "  {d}")?;
                }
            }
            Effect::Refusal { message, .. } => {
                self.end_stream()?;
                writeln!(self.out, "(only you see this) {}", mention::plain(message))?;
            }
            Effect::File { file } => {
                self.end_stream()?;
                match save_file(file) {
                    Ok(path) => writeln!(
                        self.out,
                        "File: {} ({} bytes) saved to {}",
                        file.title,
                        file.size,
                        path.display()
                    )?,
                    Err(e) => writeln!(self.out, "error: could not save {}: {e}", file.file_name)?,
                }
            }
            Effect::Error { message } => {
                self.end_stream()?;
                writeln!(self.out, "error: {message}")?;
            }
            Effect::ToolOutput {
                tool,
                result,
                is_error,
            } => {
                self.end_stream()?;
                let body = readable(result);
                if *is_error {
                    writeln!(self.out, "error: {tool}:\n{body}")?;
                } else {
                    writeln!(self.out, "{tool}:\n{body}")?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::Citation;

    fn render(format: Format, effects: &[Effect]) -> String {
        let mut buf = Vec::new();
        {
            let mut r = Renderer::new(&mut buf, format);
            for e in effects {
                r.effect(e);
            }
        }
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn streamed_text_is_not_printed_twice() {
        let out = render(
            Format::Plain,
            &[
                Effect::Status {
                    text: "thinking".into(),
                },
                Effect::Delta { text: "Hel".into() },
                Effect::Delta { text: "lo".into() },
                Effect::Text {
                    text: "Hello".into(),
                    citations: vec![Citation {
                        section: "Table 310.16".into(),
                        edition: Some(2023),
                        source: "sparky".into(),
                    }],
                },
            ],
        );
        assert_eq!(out, "Hello\nSources: NEC 2023 Table 310.16\n");
    }

    #[test]
    fn json_lines_carry_a_type() {
        let out = render(
            Format::Json,
            &[Effect::Error {
                message: "boom".into(),
            }],
        );
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["type"], "error");
        assert_eq!(v["message"], "boom");
    }
}
