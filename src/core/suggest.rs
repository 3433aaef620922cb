//! Names offered while a person types a command option (Discord's autocomplete): projects,
//! panels, tools and states. Only what the caller's workspace holds is offered, never another
//! workspace's names, and projects only when the caller could use them.

use crate::jurisdiction::site::STATES;
use crate::store::StoreError;

use super::session::SessionKey;
use super::Agent;

/// Most names offered at once (Discord shows at most 25 choices).
pub const MAX_SUGGESTIONS: usize = 25;

/// What an option names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suggest {
    /// A project of the workspace the caller holds a role in, or that nobody holds one in
    /// (those are claimed by whoever binds them first).
    Project,
    /// A project of the workspace whose changes the caller may read (owner or editor), for
    /// `audit`.
    AuditedProject,
    /// A panel of the channel's project.
    Panel,
    /// A tool of the registry.
    Tool,
    /// A state, for `project set location`.
    State,
}

/// One name offered: what the person reads and what the option receives when they pick it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// Shown in the list.
    pub label: String,
    /// Sent back as the option's value.
    pub value: String,
}

impl Choice {
    fn same(name: String) -> Self {
        Self {
            label: name.clone(),
            value: name,
        }
    }
}

/// Whether `name` matches what was typed: every typed word appears in it, case ignored.
fn matches(name: &str, typed: &str) -> bool {
    let name = name.to_lowercase();
    typed
        .to_lowercase()
        .split_whitespace()
        .all(|word| name.contains(word))
}

/// Orders names that start with what was typed first, then alphabetically, and keeps at most
/// [`MAX_SUGGESTIONS`].
fn rank(mut names: Vec<Choice>, typed: &str) -> Vec<Choice> {
    let typed = typed.trim().to_lowercase();
    names.retain(|n| matches(&n.label, &typed));
    names.sort_by_key(|n| {
        let label = n.label.to_lowercase();
        (!label.starts_with(&typed), label)
    });
    names.dedup();
    names.truncate(MAX_SUGGESTIONS);
    names
}

impl Agent {
    /// The names to offer `user` in the thread or channel of `key` for an option of kind
    /// `what`, given what they typed so far.
    pub async fn suggest(
        &self,
        key: &SessionKey,
        user: &str,
        what: Suggest,
        typed: &str,
    ) -> Result<Vec<Choice>, StoreError> {
        let store = self.store();
        let names = match what {
            Suggest::Tool => self
                .tools()
                .all()
                .map(|t| Choice::same(t.name().to_string()))
                .collect(),
            Suggest::State => STATES
                .iter()
                .map(|(code, name)| Choice {
                    label: format!("{name} ({code})"),
                    value: (*code).to_string(),
                })
                .collect(),
            Suggest::Panel => {
                match store
                    .channel_project(&key.platform, &key.workspace, &key.channel)
                    .await?
                {
                    Some(id) => store
                        .load_project(id)
                        .await?
                        .panels
                        .iter()
                        .map(|p| Choice::same(p.spec.name.clone()))
                        .collect(),
                    None => Vec::new(),
                }
            }
            Suggest::Project | Suggest::AuditedProject => {
                let mut usable = Vec::new();
                let typed_lower = typed.trim().to_lowercase();
                for p in store.list_projects(&key.workspace()).await? {
                    if !matches(&p.name, &typed_lower) {
                        continue;
                    }
                    let members = store.members(p.id).await?;
                    let role = members.iter().find(|(u, _)| u == user).map(|(_, r)| *r);
                    let offered = match what {
                        Suggest::AuditedProject => super::audit_log::may_read(role),
                        _ => members.is_empty() || role.is_some(),
                    };
                    if offered {
                        usable.push(Choice::same(p.name));
                    }
                }
                usable
            }
        };
        Ok(rank(names, typed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_starting_with_the_typed_text_come_first() {
        let names: Vec<Choice> = ["Warehouse", "Barn", "Barn addition", "Old barn"]
            .map(|n| Choice::same(n.to_string()))
            .to_vec();
        let labels = |v: Vec<Choice>| v.into_iter().map(|c| c.label).collect::<Vec<_>>();
        assert_eq!(
            labels(rank(names.clone(), "barn")),
            ["Barn", "Barn addition", "Old barn"]
        );
        assert_eq!(labels(rank(names.clone(), "ADD barn")), ["Barn addition"]);
        assert_eq!(rank(names, "").len(), 4);
        let many: Vec<Choice> = (0..40).map(|i| Choice::same(format!("p{i:02}"))).collect();
        assert_eq!(rank(many, "p").len(), MAX_SUGGESTIONS);
    }
}
