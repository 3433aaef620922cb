//! A person's home (Slack's App Home tab): what is shown to them, chosen here as plain data
//! for the adapter to render.
//!
//! * the projects of their workspace they hold a role in (never another workspace's);
//! * the proposals waiting that they may confirm, in those projects or asked by them;
//! * the changes last confirmed and applied in those projects, from the audit trail.

use chrono::{DateTime, Utc};

use super::mention::UserRef;
use super::session::SessionKey;
use super::{Agent, CoreError};
use crate::domain::workspace::Workspace;
use crate::project::MemberRole;

/// Most projects listed.
pub const MAX_PROJECTS: usize = 20;
/// Most waiting proposals listed.
pub const MAX_WAITING: usize = 10;
/// Most applied changes listed.
pub const MAX_RECENT: usize = 5;
/// Waiting proposals read from the store before keeping the ones for this person.
const WAITING_SCAN: usize = 200;
/// Applied changes read before keeping the ones in this person's projects.
const RECENT_SCAN: usize = 100;

/// One of the person's projects.
#[derive(Debug, Clone, PartialEq)]
pub struct HomeProject {
    /// Project id (the value of its buttons).
    pub id: i64,
    /// Name.
    pub name: String,
    /// The person's role in it.
    pub role: MemberRole,
    /// The code in force for it, as labelled everywhere ("NEC 2023 (project default, no
    /// location)").
    pub code: String,
    /// The job site ("Seattle, King County, Washington"), when set.
    pub location: Option<String>,
}

/// Where something happened: a thread, and the message in it when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadLink {
    /// The thread.
    pub key: SessionKey,
    /// The platform's reference of the message to point at (a card), when stored.
    pub message: Option<String>,
}

/// A proposal waiting for the person's Confirm.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitingCard {
    /// Action id.
    pub action_id: String,
    /// The project it changes, by name.
    pub project: Option<String>,
    /// One line per change.
    pub summaries: Vec<String>,
    /// Whose message led to it.
    pub requested_by: UserRef,
    /// When it expires.
    pub expires_at: DateTime<Utc>,
    /// Its card.
    pub link: ThreadLink,
}

/// A change confirmed and applied.
#[derive(Debug, Clone, PartialEq)]
pub struct RecentChange {
    /// The project it changed, by name.
    pub project: String,
    /// Who confirmed it.
    pub by: UserRef,
    /// When.
    pub at: DateTime<Utc>,
    /// One line per change.
    pub summaries: Vec<String>,
    /// The thread it was proposed in.
    pub link: ThreadLink,
}

/// Everything a person's home shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Home {
    /// Their projects, by name, at most [`MAX_PROJECTS`].
    pub projects: Vec<HomeProject>,
    /// How many more projects they hold a role in than are listed.
    pub more_projects: usize,
    /// Proposals they may confirm, newest first.
    pub waiting: Vec<WaitingCard>,
    /// Changes applied lately in their projects, newest first.
    pub recent: Vec<RecentChange>,
}

impl Agent {
    /// What the home of `user` in `workspace` shows.
    pub async fn home(&self, workspace: &Workspace, user: &str) -> Result<Home, CoreError> {
        let store = self.store();
        let mut mine = Vec::new();
        for p in store.list_projects(workspace).await? {
            if let Some(role) = store.member_role(p.id, &workspace.platform, user).await? {
                mine.push((p, role));
            }
        }
        let names: std::collections::HashMap<i64, String> =
            mine.iter().map(|(p, _)| (p.id, p.name.clone())).collect();

        let mut waiting = Vec::new();
        for w in store
            .waiting_in_workspace(workspace, Utc::now(), WAITING_SCAN)
            .await?
        {
            if waiting.len() == MAX_WAITING {
                break;
            }
            let a = &w.action;
            let in_mine = a.project_id.is_some_and(|id| names.contains_key(&id));
            if !in_mine && a.rule.requester != user {
                continue;
            }
            let Some(session) = store.session(a.session_id).await? else {
                continue;
            };
            if !self.may_resolve(a, &session, user).await? {
                continue;
            }
            waiting.push(WaitingCard {
                action_id: a.id.clone(),
                project: a.project_id.and_then(|id| names.get(&id).cloned()),
                summaries: a.items.iter().map(|i| i.summary.clone()).collect(),
                requested_by: UserRef::new(a.rule.requester.clone()),
                expires_at: a.expires_at,
                link: ThreadLink {
                    key: w.key.clone(),
                    message: a.message_ref.clone(),
                },
            });
        }

        let recent = store
            .recent_applied(workspace, RECENT_SCAN)
            .await?
            .into_iter()
            .filter_map(|c| {
                let project = names.get(&c.project_id)?.clone();
                Some(RecentChange {
                    project,
                    by: UserRef::new(c.by),
                    at: c.at,
                    summaries: c.items.iter().map(|i| i.summary.clone()).collect(),
                    link: ThreadLink {
                        key: c.key,
                        message: None,
                    },
                })
            })
            .take(MAX_RECENT)
            .collect();

        let more_projects = mine.len().saturating_sub(MAX_PROJECTS);
        let projects = mine
            .into_iter()
            .take(MAX_PROJECTS)
            .map(|(p, role)| HomeProject {
                id: p.id,
                code: crate::jurisdiction::for_project(&p).label(),
                location: p.site.location.as_ref().map(ToString::to_string),
                name: p.name,
                role,
            })
            .collect();
        Ok(Home {
            projects,
            more_projects,
            waiting,
            recent,
        })
    }
}
