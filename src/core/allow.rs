//! Where Sparky answers: the one allow-list every platform applies, configured the same way
//! (`allowed_workspaces`/`allowed_guilds` and `allowed_channels` lists, plus whether direct
//! messages are answered).
//!
//! * A workspace (Slack team, Discord guild) that is known must be on the list, unless the
//!   list is empty.
//! * A direct message is answered when direct messages are on.
//! * A channel must be on the channel list (unless it is empty); a thread counts as its
//!   parent channel.

/// The allow-list of one platform.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    /// Allowed workspace ids (empty: all).
    pub workspaces: Vec<String>,
    /// Allowed channel ids (empty: all).
    pub channels: Vec<String>,
    /// Whether direct messages are answered.
    pub direct_messages: bool,
}

impl AllowList {
    /// Whether the workspace `id` may be answered in.
    pub fn workspace_allowed(&self, id: &str) -> bool {
        self.workspaces.is_empty() || self.workspaces.iter().any(|w| w == id)
    }

    /// Whether `channel` (or, for a thread, its `parent`) may be answered in.
    pub fn channel_allowed(&self, channel: &str, parent: Option<&str>) -> bool {
        self.channels.is_empty()
            || self
                .channels
                .iter()
                .any(|c| c == channel || Some(c.as_str()) == parent)
    }

    /// The whole rule: `workspace` when known, and `channel` (with its parent) or, for a
    /// direct message (`None`), the direct-message switch.
    pub fn permits(&self, workspace: Option<&str>, channel: Option<(&str, Option<&str>)>) -> bool {
        if workspace.is_some_and(|w| !self.workspace_allowed(w)) {
            return false;
        }
        match channel {
            None => self.direct_messages,
            Some((c, parent)) => self.channel_allowed(c, parent),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rule_for_workspaces_channels_threads_and_direct_messages() {
        let a = AllowList {
            workspaces: vec!["T1".into()],
            channels: vec!["C1".into()],
            direct_messages: false,
        };
        assert!(a.permits(Some("T1"), Some(("C1", None))));
        assert!(a.permits(Some("T1"), Some(("thread", Some("C1")))));
        assert!(!a.permits(Some("T1"), Some(("C2", None))));
        assert!(!a.permits(Some("T2"), Some(("C1", None))));
        assert!(!a.permits(Some("T1"), None));
        let open = AllowList {
            direct_messages: true,
            ..AllowList::default()
        };
        assert!(open.permits(Some("T9"), None));
        assert!(open.permits(None, None));
        assert!(open.permits(Some("T9"), Some(("C9", None))));
    }
}
