//! The App Home tab: on `app_home_opened` (tab "home") the core's [`Home`] for the person is
//! rendered as Block Kit and published with `views.publish`; links to the threads come from
//! `chat.getPermalink`. Its buttons carry stable action ids.

use futures::future::join_all;
use serde_json::{json, Value};
use slack_morphism::prelude::*;

use super::mrkdwn::{escape, truncate, SECTION_MAX};
use super::thread::{parse_message_ref, SlackApi};
use super::Shared;
use crate::core::home::{Home, ThreadLink};
use crate::core::session::SessionKey;
use crate::http_policy::Replay;
use crate::platforms::surface::SurfaceError;
use crate::project::Workspace;

/// The "New project" button.
pub const NEW_PROJECT: &str = "sparky_home_project_new";
/// A project's "Edit" button (its value is the project id).
pub const EDIT_PROJECT: &str = "sparky_home_project_edit";
/// A waiting card's link button.
pub const OPEN_CARD: &str = "sparky_home_open_card";
/// An applied change's link button.
pub const OPEN_THREAD: &str = "sparky_home_open_thread";

/// A Home tab button that asks Sparky for something (link buttons only open their URL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HomeButton {
    /// Set up a new project.
    NewProject,
    /// Edit the project with this id (as the button's value carried it).
    EditProject(String),
}

impl HomeButton {
    /// The button for `action_id` and its `value`, when it is one of the Home tab's.
    pub fn parse(action_id: &str, value: Option<&str>) -> Option<Self> {
        match action_id {
            NEW_PROJECT => Some(Self::NewProject),
            EDIT_PROJECT => Some(Self::EditProject(value.unwrap_or_default().to_string())),
            _ => None,
        }
    }
}

/// Slack's cap on a button's text.
const BUTTON_TEXT_MAX: usize = 75;

fn section(text: &str) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn", "text": truncate(text, SECTION_MAX)}})
}

fn heading(text: &str) -> Value {
    json!({"type": "header", "text": {"type": "plain_text", "text": truncate(text, 150), "emoji": true}})
}

fn context(text: &str) -> Value {
    json!({"type": "context", "elements": [{"type": "mrkdwn", "text": truncate(text, SECTION_MAX)}]})
}

fn link_button(text: &str, url: &str, action_id: &str) -> Value {
    json!({
        "type": "button",
        "text": {"type": "plain_text", "text": truncate(text, BUTTON_TEXT_MAX), "emoji": true},
        "url": url,
        "action_id": action_id,
    })
}

/// Slack's date formatting, which each reader sees in their own time zone.
fn when(at: chrono::DateTime<chrono::Utc>) -> String {
    format!(
        "<!date^{}^{{date_short_pretty}} {{time}}|{}>",
        at.timestamp(),
        at.format("%Y-%m-%d %H:%M UTC")
    )
}

fn changes(summaries: &[String]) -> String {
    summaries
        .iter()
        .map(|s| format!("• {}", escape(s)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The Home tab's blocks for `home`; `waiting_links` and `recent_links` are the permalinks of
/// its waiting cards and applied changes, in order (`None` where Slack gave none).
pub fn home_blocks(
    home: &Home,
    waiting_links: &[Option<String>],
    recent_links: &[Option<String>],
) -> Vec<Value> {
    let mut blocks = vec![heading("Your projects")];
    if home.projects.is_empty() {
        blocks.push(context(
            "You hold no role in a project of this workspace yet. Create one here, or with `/sparky project create NAME` in the channel it is for.",
        ));
    }
    for p in &home.projects {
        let mut text = format!(
            "*{}* · {}\n{}",
            escape(&p.name),
            p.role.as_str(),
            escape(&p.code)
        );
        if let Some(place) = &p.location {
            text.push_str(&format!(" · {}", escape(place)));
        }
        let mut block = section(&text);
        block["accessory"] = json!({
            "type": "button",
            "text": {"type": "plain_text", "text": "Edit", "emoji": true},
            "action_id": EDIT_PROJECT,
            "value": p.id.to_string(),
        });
        blocks.push(block);
    }
    if home.more_projects > 0 {
        blocks.push(context(&format!(
            "…and {} more. `/sparky project list` in a channel lists them all.",
            home.more_projects
        )));
    }
    blocks.push(json!({
        "type": "actions",
        "block_id": "sparky_home_projects",
        "elements": [{
            "type": "button",
            "text": {"type": "plain_text", "text": "New project", "emoji": true},
            "style": "primary",
            "action_id": NEW_PROJECT,
        }]
    }));

    blocks.push(json!({"type": "divider"}));
    blocks.push(heading("Waiting for your confirmation"));
    if home.waiting.is_empty() {
        blocks.push(context("Nothing is waiting for you."));
    }
    for (i, w) in home.waiting.iter().enumerate() {
        let project = w
            .project
            .as_deref()
            .map(escape)
            .unwrap_or_else(|| "No project".into());
        let text = format!(
            "*{project}*\n{}\nAsked by <@{}> · expires {}",
            changes(&w.summaries),
            w.requested_by.id(),
            when(w.expires_at)
        );
        let mut block = section(&text);
        if let Some(Some(url)) = waiting_links.get(i) {
            block["accessory"] = link_button("Open the card", url, OPEN_CARD);
        }
        blocks.push(block);
    }

    blocks.push(json!({"type": "divider"}));
    blocks.push(heading("Applied lately"));
    if home.recent.is_empty() {
        blocks.push(context("No change was applied in your projects yet."));
    }
    for (i, r) in home.recent.iter().enumerate() {
        let text = format!(
            "*{}*\n{}\nConfirmed by <@{}> · {}",
            escape(&r.project),
            changes(&r.summaries),
            r.by.id(),
            when(r.at)
        );
        let mut block = section(&text);
        if let Some(Some(url)) = recent_links.get(i) {
            block["accessory"] = link_button("Open the thread", url, OPEN_THREAD);
        }
        blocks.push(block);
    }
    blocks
}

fn view(v: Value) -> Result<SlackView, SurfaceError> {
    serde_json::from_value(v).map_err(|e| SurfaceError::Failed(format!("bad view: {e}")))
}

impl SlackApi {
    /// `views.publish`: `blocks` as the Home tab of `user`.
    pub async fn publish_home(&self, user: &str, blocks: Vec<Value>) -> Result<(), SurfaceError> {
        let home = view(json!({"type": "home", "blocks": blocks}))?;
        let req = SlackApiViewsPublishRequest::new(SlackUserId(user.to_string()), home);
        let (client, token, req) = (self.client(), self.token(), &req);
        let client = &client;
        // Publishing the same view again changes nothing.
        self.run("views.publish", Replay::Safe, move || async move {
            client.open_session(token).views_publish(req).await
        })
        .await
        .map(|_| ())
    }

    /// `views.open`: a modal for the interaction `trigger_id` came with.
    pub async fn open_modal(&self, trigger_id: &str, modal: Value) -> Result<(), SurfaceError> {
        let req =
            SlackApiViewsOpenRequest::new(SlackTriggerId(trigger_id.to_string()), view(modal)?);
        let (client, token, req) = (self.client(), self.token(), &req);
        let client = &client;
        self.run("views.open", Replay::Unsafe, move || async move {
            client.open_session(token).views_open(req).await
        })
        .await
        .map(|_| ())
    }

    /// `chat.getPermalink` of the message `ts` in `channel`.
    pub async fn permalink(&self, channel: &str, ts: &str) -> Result<String, SurfaceError> {
        let req = SlackApiChatGetPermalinkRequest::new(channel.into(), SlackTs(ts.to_string()));
        let (client, token, req) = (self.client(), self.token(), &req);
        let client = &client;
        let r = self
            .run("chat.getPermalink", Replay::Safe, move || async move {
                client.open_session(token).chat_get_permalink(req).await
            })
            .await?;
        Ok(r.permalink.to_string())
    }

    /// The permalink of what `link` points at (its message, else its thread), when Slack
    /// gives one.
    async fn link(&self, link: &ThreadLink) -> Option<String> {
        let SessionKey {
            channel, thread, ..
        } = &link.key;
        let (channel, ts) = link
            .message
            .as_deref()
            .and_then(|m| parse_message_ref(m).ok())
            .unwrap_or((channel.as_str(), thread.as_str()));
        match self.permalink(channel, ts).await {
            Ok(url) => Some(url),
            Err(e) => {
                tracing::debug!(error = %e, "no permalink for a Home tab link");
                None
            }
        }
    }
}

impl Shared {
    /// Publishes the Home tab of `user` in `team`.
    pub(super) async fn publish_home(&self, team: &str, user: &str) {
        let workspace = Workspace::new(super::PLATFORM, team);
        let home = match self.agent.home(&workspace, user).await {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the Home tab's content");
                return;
            }
        };
        let waiting = join_all(home.waiting.iter().map(|w| self.api.link(&w.link))).await;
        let recent = join_all(home.recent.iter().map(|r| self.api.link(&r.link))).await;
        if let Err(e) = self
            .api
            .publish_home(user, home_blocks(&home, &waiting, &recent))
            .await
        {
            tracing::warn!(error = %e, "could not publish the Home tab");
        }
    }

    /// A Home tab button: the project form, new or pre-filled with the project's values.
    pub(super) async fn home_button(
        &self,
        trigger_id: &str,
        team: &str,
        user: &str,
        button: HomeButton,
    ) {
        let project = match button {
            HomeButton::NewProject => None,
            HomeButton::EditProject(id) => match id.parse::<i64>() {
                Ok(id) => Some(id),
                Err(_) => return,
            },
        };
        self.open_project_form(trigger_id, team, user, project, None)
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::home::{HomeProject, RecentChange, WaitingCard};
    use crate::core::UserRef;
    use crate::project::MemberRole;

    fn link() -> ThreadLink {
        ThreadLink {
            key: SessionKey::new("slack", "T1", "C1", "1.1"),
            message: Some("C1:1.2".into()),
        }
    }

    #[test]
    fn home_blocks_are_valid_block_kit_with_stable_action_ids() {
        let home = Home {
            projects: vec![HomeProject {
                id: 7,
                name: "Shop <&>".into(),
                role: MemberRole::Owner,
                code: "NEC 2023 (project default, no location)".into(),
                location: None,
            }],
            more_projects: 0,
            waiting: vec![WaitingCard {
                action_id: "a1".into(),
                project: Some("Shop".into()),
                summaries: vec!["Create task <Label panels>".into()],
                requested_by: UserRef::new("U1"),
                expires_at: chrono::Utc::now(),
                link: link(),
            }],
            recent: vec![RecentChange {
                project: "Shop".into(),
                by: UserRef::new("U2"),
                at: chrono::Utc::now(),
                summaries: vec!["Add circuit 7".into()],
                link: link(),
            }],
        };
        let blocks = home_blocks(&home, &[Some("https://x.test/p1".into())], &[None]);
        assert!(view(json!({"type": "home", "blocks": blocks.clone()})).is_ok());
        let text = serde_json::to_string(&blocks).unwrap_or_default();
        assert!(text.contains("Shop &lt;&amp;&gt;"), "{text}");
        assert!(text.contains("&lt;Label panels&gt;"), "{text}");
        assert!(text.contains(NEW_PROJECT) && text.contains(EDIT_PROJECT));
        assert!(text.contains(OPEN_CARD) && !text.contains(OPEN_THREAD));
        assert_eq!(
            HomeButton::parse(EDIT_PROJECT, Some("7")),
            Some(HomeButton::EditProject("7".into()))
        );
        assert_eq!(HomeButton::parse(OPEN_CARD, None), None);
    }
}
