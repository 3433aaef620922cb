//! The console adapter: the same core in a terminal. Buttons become numbered choices
//! (`/1` confirm, `/2` cancel); with stdin not a terminal it reads one input per line, so
//! scripts and tests drive it.

pub mod render;

use std::io::IsTerminal;
use std::sync::Arc;

use tokio::io::AsyncBufReadExt;

use crate::core::commands::{self, Command};
use crate::core::session::{Mode, SessionKey};
use crate::core::{Agent, CoreError, Input, InputAction};

use render::{Format, Renderer};

/// Console session settings.
#[derive(Debug, Clone)]
pub struct ConsoleOptions {
    /// The user this console acts as.
    pub user: String,
    /// Mode of a new session.
    pub mode: Option<Mode>,
    /// Thread (session) name.
    pub thread: String,
    /// Project to bind; "default" is created when the console has none.
    pub project: Option<String>,
    /// JSON lines output.
    pub json: bool,
}

/// The session key of a console thread.
pub fn session_key(thread: &str) -> SessionKey {
    SessionKey::new("console", "local", "console", thread)
}

/// Runs the console until end of input or `/quit`.
pub async fn run(agent: Arc<Agent>, opts: ConsoleOptions) -> Result<(), CoreError> {
    let key = session_key(&opts.thread);
    let interactive = std::io::stdin().is_terminal() && !opts.json;
    let format = if opts.json {
        Format::Json
    } else if interactive {
        Format::Interactive
    } else {
        Format::Plain
    };
    let mut out = Renderer::new(std::io::stdout(), format);
    let project =
        commands::use_or_create_project(&agent, &key, &opts.user, opts.project.as_deref()).await?;

    if format != Format::Json {
        out.line(
            &serde_json::Value::Null,
            &format!(
                "Sparky console: user {}, thread {}, project \"{}\". Type /help for commands.",
                opts.user, opts.thread, project
            ),
        );
        if !agent.has_model() {
            out.line(
                &serde_json::Value::Null,
                &crate::core::agent::offline_reply(),
            );
        }
    }

    let mut lines = LineSource::new(interactive);
    while let Some(line) = lines.next().await {
        let line = line.trim().to_string();
        if line.is_empty() {
            continue;
        }
        if matches!(line.as_str(), "/quit" | "/exit") {
            break;
        }
        let action = if let Some(rest) = line.strip_prefix('/') {
            let rest = rest.strip_prefix("sparky ").unwrap_or(rest);
            let (head, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            let id = Some(arg.trim().to_string()).filter(|s| !s.is_empty());
            match head {
                "confirm" | "1" => InputAction::Confirm { action_id: id },
                "cancel" | "2" => InputAction::Cancel { action_id: id },
                _ => match rest.parse::<Command>() {
                    // Tool commands are inputs of the conversation: a write is proposed here
                    // and confirmed with /confirm like any other.
                    Ok(Command::Tool { name, args }) => InputAction::Tool { name, args },
                    Ok(cmd) => {
                        let r = commands::execute(&agent, &key, &opts.user, cmd).await;
                        out.line(&r.json, &crate::core::mention::plain(&r.text));
                        for file in r.files {
                            out.effect(&crate::core::Effect::File { file });
                        }
                        continue;
                    }
                    Err(e) => {
                        out.line(
                            &serde_json::json!({"type": "error", "message": e}),
                            &format!("error: {e}"),
                        );
                        continue;
                    }
                },
            }
        } else {
            InputAction::Message {
                text: line.clone(),
                mode: opts.mode,
            }
        };
        let input = Input {
            key: key.clone(),
            user: opts.user.clone(),
            event_id: None,
            action,
        };
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let agent2 = agent.clone();
        let turn = tokio::spawn(async move {
            let r = agent2.handle(input, &tx).await;
            drop(tx);
            r
        });
        while let Some(effect) = rx.recv().await {
            out.effect(&effect);
        }
        match turn.await {
            Ok(Ok(())) => {}
            // Already shown to the user as an error effect.
            Ok(Err(e)) => tracing::warn!(error = %e, "turn ended with an error"),
            Err(e) => out.line(
                &serde_json::json!({"type": "error", "message": format!("internal error: {e}")}),
                &format!("error: internal error: {e}"),
            ),
        }
    }
    Ok(())
}

/// Lines from a line editor (terminal) or from stdin (scripts).
enum LineSource {
    Editor(Option<Box<rustyline::DefaultEditor>>),
    Stdin(StdinLines<tokio::io::BufReader<tokio::io::Stdin>>),
}

/// Why a line of piped input was not used.
#[derive(Debug, thiserror::Error)]
enum LineError {
    /// The bytes of the line are not UTF-8; the lines after it are still read.
    #[error("line {line} of the input is not valid UTF-8 and was skipped")]
    NotUtf8 {
        /// 1-based line number.
        line: u64,
    },
    /// Reading failed; nothing more can be read.
    #[error("could not read the input: {0}")]
    Io(#[from] std::io::Error),
}

/// Splits piped input into lines itself: `Lines::next_line` fails on a line that is not
/// UTF-8 and a caller cannot tell that from the end of the input.
struct StdinLines<R> {
    reader: R,
    line: u64,
    buf: Vec<u8>,
}

impl<R: tokio::io::AsyncBufRead + Unpin> StdinLines<R> {
    fn new(reader: R) -> Self {
        Self {
            reader,
            line: 0,
            buf: Vec::new(),
        }
    }

    /// The next line without its line ending; `Ok(None)` at the end of the input.
    async fn next_line(&mut self) -> Result<Option<String>, LineError> {
        self.buf.clear();
        if self.reader.read_until(b'\n', &mut self.buf).await? == 0 {
            return Ok(None);
        }
        self.line += 1;
        if self.buf.ends_with(b"\n") {
            self.buf.pop();
            if self.buf.ends_with(b"\r") {
                self.buf.pop();
            }
        }
        match std::str::from_utf8(&self.buf) {
            Ok(text) => Ok(Some(text.to_string())),
            Err(_) => Err(LineError::NotUtf8 { line: self.line }),
        }
    }

    /// The next usable line: bad lines are reported on stderr and skipped.
    async fn next_good_line(&mut self) -> Option<String> {
        loop {
            match self.next_line().await {
                Ok(line) => return line,
                Err(e @ LineError::NotUtf8 { .. }) => eprintln!("sparky: {e}"),
                Err(e @ LineError::Io(_)) => {
                    eprintln!("sparky: {e}");
                    return None;
                }
            }
        }
    }
}

impl LineSource {
    fn new(interactive: bool) -> Self {
        if interactive {
            if let Ok(ed) = rustyline::DefaultEditor::new() {
                return Self::Editor(Some(Box::new(ed)));
            }
        }
        Self::Stdin(StdinLines::new(tokio::io::BufReader::new(
            tokio::io::stdin(),
        )))
    }

    async fn read(&mut self, prompt: &'static str) -> Option<String> {
        match self {
            Self::Editor(slot) => {
                let mut ed = slot.take()?;
                let (ed, line) = tokio::task::spawn_blocking(move || {
                    let line = ed.readline(prompt);
                    if let Ok(l) = &line {
                        let _ = ed.add_history_entry(l.as_str());
                    }
                    (ed, line.ok())
                })
                .await
                .ok()?;
                *slot = Some(ed);
                line
            }
            Self::Stdin(lines) => lines.next_good_line().await,
        }
    }

    async fn next(&mut self) -> Option<String> {
        self.read("you> ").await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bad_lines_are_skipped_and_later_lines_still_read() {
        let input: &[u8] = b"first\r\n\xff\xfe bad\nthird\nlast without newline";
        let mut lines = StdinLines::new(input);
        assert_eq!(
            lines.next_line().await.ok().flatten().as_deref(),
            Some("first")
        );
        assert!(matches!(
            lines.next_line().await,
            Err(LineError::NotUtf8 { line: 2 })
        ));
        assert_eq!(lines.next_good_line().await.as_deref(), Some("third"));
        assert_eq!(
            lines.next_good_line().await.as_deref(),
            Some("last without newline")
        );
        assert_eq!(lines.next_good_line().await, None);
    }
}
