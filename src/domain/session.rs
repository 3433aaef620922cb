//! Session identity (which platform thread a conversation is), modes, and the session row.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Identifies one conversation: a thread on a platform.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SessionKey {
    /// "discord", "slack" or "console".
    pub platform: String,
    /// Guild id, Slack team id, or "local".
    pub workspace: String,
    /// Parent channel id (for DMs, the DM channel).
    pub channel: String,
    /// Thread id (Discord thread channel id, Slack thread_ts, console thread name).
    pub thread: String,
}

impl SessionKey {
    /// Builds a key.
    pub fn new(
        platform: impl Into<String>,
        workspace: impl Into<String>,
        channel: impl Into<String>,
        thread: impl Into<String>,
    ) -> Self {
        Self {
            platform: platform.into(),
            workspace: workspace.into(),
            channel: channel.into(),
            thread: thread.into(),
        }
    }
}

impl SessionKey {
    /// The workspace the conversation happens in (its projects are the only ones it sees).
    pub fn workspace(&self) -> super::workspace::Workspace {
        super::workspace::Workspace::new(&self.platform, &self.workspace)
    }
}

impl fmt::Display for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}/{}/{}",
            self.platform, self.workspace, self.channel, self.thread
        )
    }
}

/// What a session is for; chosen when it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// NEC questions, calculations, project questions and changes.
    #[default]
    General,
    /// Spec assistant for loads (equipment that consumes power).
    Load,
    /// Spec assistant for charging sources (solar, alternator, shore power...).
    Source,
}

impl Mode {
    /// Stable name used in storage and commands.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::General => "general",
            Self::Load => "load",
            Self::Source => "source",
        }
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "general" => Ok(Self::General),
            "load" => Ok(Self::Load),
            "source" => Ok(Self::Source),
            other => Err(format!("unknown mode '{other}' (general, load or source)")),
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stored session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Session {
    /// Database id.
    pub id: i64,
    /// Platform identity.
    pub key: SessionKey,
    /// Mode chosen at start.
    pub mode: Mode,
    /// Project the session works on, if any.
    pub project_id: Option<i64>,
    /// Running summary of messages up to `summarized_through`.
    pub summary: String,
    /// Id of the last message folded into `summary` (0 when none).
    pub summarized_through: i64,
    /// Creation time.
    pub created_at: DateTime<Utc>,
}
