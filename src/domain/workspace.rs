//! Workspaces: the team a conversation and its projects belong to.

use serde::{Deserialize, Serialize};

/// The team a project belongs to: a platform and its workspace there (Slack team id, Discord
/// guild id, or the console's `local`). Names are unique per workspace; nothing a command or a
/// tool does reaches a project of another workspace.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Workspace {
    /// "slack", "discord" or "console".
    pub platform: String,
    /// Team or guild id, or "local".
    pub id: String,
}

impl Workspace {
    /// A workspace by platform and id.
    pub fn new(platform: impl Into<String>, id: impl Into<String>) -> Self {
        Self {
            platform: platform.into(),
            id: id.into(),
        }
    }

    /// The console's (and the command line's) own workspace.
    pub fn local() -> Self {
        Self::new("console", "local")
    }
}

impl std::fmt::Display for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.platform, self.id)
    }
}

impl std::str::FromStr for Workspace {
    type Err = String;

    /// Parses `PLATFORM:ID` (e.g. `slack:T0123`); `local` is the console's.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim() == "local" {
            return Ok(Self::local());
        }
        match s.trim().split_once(':') {
            Some((p, id)) if !p.is_empty() && !id.is_empty() => Ok(Self::new(p, id)),
            _ => Err(format!(
                "'{s}' is not a workspace; use PLATFORM:ID (e.g. slack:T0123) or local"
            )),
        }
    }
}
