//! The project form on Slack: the core's [`ProjectForm`] as a modal for `views.open` (one
//! input block per field, the block id the field's name), and its `view_submission` read back
//! into the values the core checks and applies. Opened from a channel (`/sparky project
//! create|set` without arguments) a new project is bound to that channel; opened from the Home
//! tab the person picks the channel (`conversations_select`).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::events::{allowed, Gate, SlashCommand, PLATFORM};
use super::mrkdwn::{self, escape};
use super::Shared;
use crate::core::edit_form::FieldError;
use crate::core::ledger::InputKind;
use crate::core::project_form::{
    errors_text, FormKind, ProjectForm, CHANNEL, EDITION, LOCATION, MAX_LOCATION_CHARS,
    MAX_NAME_CHARS, NAME, PERMIT_DATE,
};
use crate::core::session::SessionKey;
use crate::domain::workspace::Workspace;
use crate::platforms::render::clip;

/// The modal's callback id.
pub const CALLBACK_ID: &str = "sparky_project";
/// Slack's limit on a modal's title.
const MAX_TITLE: usize = 24;

fn input(block: &str, label: &str, optional: bool, element: Value) -> Value {
    json!({
        "type": "input",
        "block_id": block,
        "optional": optional,
        "label": {"type": "plain_text", "text": label},
        "element": element,
    })
}

fn text_input(initial: &str, max: usize, placeholder: &str) -> Value {
    let mut e = json!({
        "type": "plain_text_input",
        "action_id": "value",
        "max_length": max,
        "placeholder": {"type": "plain_text", "text": placeholder},
    });
    if !initial.is_empty() {
        e["initial_value"] = json!(clip(initial, max));
    }
    e
}

/// The modal for `form` in `team`. `channel`: the channel it was opened from (a new project is
/// bound to it); `None` (the Home tab): a new project asks which channel.
pub fn project_view(form: &ProjectForm, team: &str, channel: Option<&str>) -> Value {
    let mut blocks = Vec::new();
    match form.kind() {
        FormKind::Create => blocks.push(input(
            NAME,
            "Project name",
            false,
            text_input("", MAX_NAME_CHARS, "Main St Garage"),
        )),
        FormKind::Set => blocks.push(json!({
            "type": "section",
            "text": {"type": "mrkdwn", "text": format!("*{}*", escape(&form.name))},
        })),
    }
    let options: Vec<Value> = form
        .editions
        .iter()
        .map(
            |(label, value)| json!({"text": {"type": "plain_text", "text": label}, "value": value}),
        )
        .collect();
    let mut select = json!({"type": "static_select", "action_id": "value", "options": options});
    if let Some(o) = options.iter().find(|o| o["value"] == form.edition.as_str()) {
        select["initial_option"] = o.clone();
    }
    blocks.push(input(EDITION, "NEC edition", false, select));
    blocks.push(input(
        LOCATION,
        "Location (state, county, city)",
        true,
        text_input(
            &form.location,
            MAX_LOCATION_CHARS,
            "WA, King County, Seattle",
        ),
    ));
    let mut date = json!({"type": "datepicker", "action_id": "value"});
    if !form.permit_date.is_empty() {
        date["initial_date"] = json!(form.permit_date);
    }
    blocks.push(input(PERMIT_DATE, "Permit date (empty: today)", true, date));
    if form.kind() == FormKind::Create {
        blocks.push(match channel {
            Some(c) => json!({"type": "context", "elements": [{"type": "mrkdwn",
                "text": format!("The project is bound to <#{c}>; you become its owner.")}]}),
            None => input(
                CHANNEL,
                "Channel the project works in",
                false,
                json!({
                    "type": "conversations_select",
                    "action_id": "value",
                    "default_to_current_conversation": true,
                    "filter": {"include": ["public", "private"], "exclude_bot_users": true},
                }),
            ),
        });
    }
    json!({
        "type": "modal",
        "callback_id": CALLBACK_ID,
        "title": {"type": "plain_text", "text": clip(&form.title, MAX_TITLE)},
        "submit": {"type": "plain_text", "text": if form.project.is_some() { "Save" } else { "Create" }},
        "close": {"type": "plain_text", "text": "Cancel"},
        "private_metadata": json!({
            "team": team,
            "project": form.project,
            "channel": channel,
        }).to_string(),
        "blocks": blocks,
    })
}

/// A submitted project form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submission {
    /// Team id.
    pub team: String,
    /// Who submitted it.
    pub user: String,
    /// The project it sets; `None`: it creates one.
    pub project: Option<i64>,
    /// The channel a new project is bound to: the one it was opened from, else the one
    /// picked (`None` when none was).
    pub channel: Option<String>,
    /// Whether it was opened from the Home tab (which is published again after).
    pub from_home: bool,
    /// The submitted values by field.
    pub values: BTreeMap<String, String>,
    /// One submission of one view state: a redelivery carries the same id.
    pub id: String,
}

impl Submission {
    /// Create or set.
    pub fn kind(&self) -> FormKind {
        if self.project.is_some() {
            FormKind::Set
        } else {
            FormKind::Create
        }
    }

    /// The channel's error, for a new project: none picked, or one Sparky does not work in.
    pub fn channel_error(&self, gate: &Gate) -> Option<FieldError> {
        if self.kind() == FormKind::Set {
            return None;
        }
        let message = match &self.channel {
            None => "Pick the channel the project is for.",
            Some(c) if !allowed(gate, &self.team, c) => "Sparky is not enabled in that channel.",
            Some(_) => return None,
        };
        Some(FieldError {
            field: CHANNEL.into(),
            message: message.into(),
        })
    }
}

/// What an element of a submitted view holds, whatever its type.
fn element_value(v: &Value) -> Option<String> {
    ["value", "selected_date", "selected_conversation"]
        .iter()
        .find_map(|k| v[k].as_str())
        .or_else(|| v["selected_option"]["value"].as_str())
        .map(str::to_string)
}

/// The project form in a `view_submission` (as JSON); `None` for any other payload, and for
/// a team or channel the gate does not allow. The core checks the values, the workspace and
/// the person's role again.
pub fn submission(payload: &Value, gate: &Gate) -> Option<Submission> {
    if payload["type"] != "view_submission" || payload["view"]["callback_id"] != CALLBACK_ID {
        return None;
    }
    let meta: Value = serde_json::from_str(payload["view"]["private_metadata"].as_str()?).ok()?;
    let team = meta["team"].as_str()?.to_string();
    // The form was opened in this team; a submission from another is not this one's.
    if payload["team"]["id"].as_str() != Some(team.as_str()) || !gate.workspace_allowed(&team) {
        return None;
    }
    let opened_in = meta["channel"].as_str().map(str::to_string);
    if let Some(c) = &opened_in {
        if !allowed(gate, &team, c) {
            return None;
        }
    }
    let values: BTreeMap<String, String> = payload["view"]["state"]["values"]
        .as_object()?
        .iter()
        .filter_map(|(block, actions)| Some((block.clone(), element_value(&actions["value"])?)))
        .collect();
    let picked = values.get(CHANNEL).filter(|c| !c.is_empty()).cloned();
    Some(Submission {
        user: payload["user"]["id"].as_str()?.to_string(),
        project: meta["project"].as_i64(),
        from_home: opened_in.is_none(),
        channel: opened_in.or(picked),
        values,
        id: format!(
            "project-form:{}:{}",
            payload["view"]["id"].as_str().unwrap_or_default(),
            payload["view"]["hash"].as_str().unwrap_or_default()
        ),
        team,
    })
}

impl Shared {
    /// Opens the project form for the interaction `trigger_id` came with: a new project's
    /// (`project` `None`) or that project's, pre-filled. `channel`: where it was opened from
    /// (a new project is bound to it; `None`: the Home tab). Why it cannot open is told
    /// privately.
    pub(super) async fn open_project_form(
        &self,
        trigger_id: &str,
        team: &str,
        user: &str,
        project: Option<i64>,
        channel: Option<&str>,
    ) {
        let workspace = Workspace::new(PLATFORM, team);
        let note = match self.agent.project_form(&workspace, user, project).await {
            Ok(Ok(form)) => {
                self.show_project_form(trigger_id, team, channel, &form)
                    .await
            }
            Ok(Err(why)) => why,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the project for its form");
                "I could not open the form; try again.".into()
            }
        };
        self.tell(user, channel, &note).await;
    }

    /// `/sparky project set` without arguments: the form of the channel's project.
    pub(super) async fn open_channel_project_form(&self, trigger_id: &str, cmd: &SlashCommand) {
        let key = SessionKey::new(PLATFORM, &cmd.team, &cmd.channel, "");
        let note = match self.agent.channel_project_form(&key, &cmd.user).await {
            Ok(Ok(form)) => {
                self.show_project_form(trigger_id, &cmd.team, Some(&cmd.channel), &form)
                    .await
            }
            Ok(Err(why)) => why,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the project for its form");
                "I could not open the form; try again.".into()
            }
        };
        self.tell(&cmd.user, Some(&cmd.channel), &note).await;
    }

    /// `views.open` of `form`; what to tell the person when it failed (empty: nothing).
    async fn show_project_form(
        &self,
        trigger_id: &str,
        team: &str,
        channel: Option<&str>,
        form: &ProjectForm,
    ) -> String {
        match self
            .api
            .open_modal(trigger_id, project_view(form, team, channel))
            .await
        {
            Ok(()) => String::new(),
            Err(e) => {
                tracing::warn!(error = %e, "could not open the project form");
                "I could not open the form; use `/sparky project create NAME` or `/sparky project set ...` instead.".into()
            }
        }
    }

    /// Applies a submitted project form and tells the person how it went: privately in the
    /// project's channel, else in their messages with the app; the Home tab it came from is
    /// published again.
    pub(super) async fn submit_project_form(&self, sub: Submission) {
        if !self
            .agent
            .ledger()
            .first_delivery(PLATFORM, InputKind::Event, &sub.id)
            .await
        {
            return;
        }
        let note = if let Some(e) = sub.channel_error(&self.gate) {
            errors_text(&[e])
        } else {
            let channel = sub.channel.clone().unwrap_or_default();
            let key = SessionKey::new(PLATFORM, &sub.team, &channel, "");
            match self
                .agent
                .submit_project_form(&key, &sub.user, sub.project, &sub.values)
                .await
            {
                Ok(Ok(out)) if out.is_error => format!("⚠️ {}", out.text),
                Ok(Ok(out)) => out.text,
                Ok(Err(errors)) => errors_text(&errors),
                Err(e) => {
                    tracing::warn!(error = %e, "could not apply the project form");
                    "⚠️ The project could not be saved; try again.".into()
                }
            }
        };
        self.tell(&sub.user, sub.channel.as_deref(), &mrkdwn::to_mrkdwn(&note))
            .await;
        if sub.from_home {
            self.publish_home(&sub.team, &sub.user).await;
        }
    }

    /// Tells `user` `note` privately in `channel`, else in their messages with the app.
    async fn tell(&self, user: &str, channel: Option<&str>, note: &str) {
        if note.is_empty() {
            return;
        }
        let note = mrkdwn::truncate(note, mrkdwn::MESSAGE_MAX);
        if let Some(c) = channel {
            match self.api.ephemeral(c, None, user, &note).await {
                Ok(()) => return,
                Err(e) => tracing::debug!(error = %e, "no private note in the channel"),
            }
        }
        if let Err(e) = self.api.post(user, None, &note, Vec::new()).await {
            tracing::warn!(error = %e, "could not tell the person about the project form");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(view: &Value, state: Value) -> Value {
        json!({
            "type": "view_submission",
            "team": {"id": "T1"},
            "user": {"id": "U1"},
            "view": {
                "id": "V1", "hash": "h1",
                "callback_id": view["callback_id"],
                "private_metadata": view["private_metadata"],
                "state": {"values": state}
            }
        })
    }

    #[test]
    fn a_home_form_asks_for_the_channel_and_reads_every_element_back() {
        let view = project_view(&ProjectForm::create(), "T1", None);
        let ids: Vec<&str> = view["blocks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["block_id"].as_str())
            .collect();
        assert_eq!(ids, [NAME, EDITION, LOCATION, PERMIT_DATE, CHANNEL]);
        assert_eq!(
            view["blocks"][1]["element"]["initial_option"]["value"],
            "2023"
        );
        let p = payload(
            &view,
            json!({
                "name": {"value": {"type": "plain_text_input", "value": "Shop"}},
                "edition": {"value": {"type": "static_select", "selected_option": {"value": "2020"}}},
                "location": {"value": {"type": "plain_text_input", "value": null}},
                "permit_date": {"value": {"type": "datepicker", "selected_date": "2024-03-01"}},
                "channel": {"value": {"type": "conversations_select", "selected_conversation": "C9"}}
            }),
        );
        let gate = Gate::default();
        let s = submission(&p, &gate).expect("ours");
        assert_eq!((s.project, s.from_home), (None, true));
        assert_eq!(s.channel.as_deref(), Some("C9"));
        assert_eq!(s.values[NAME], "Shop");
        assert_eq!(s.values[EDITION], "2020");
        assert_eq!(s.values[PERMIT_DATE], "2024-03-01");
        assert!(!s.values.contains_key(LOCATION));
        assert_eq!(s.channel_error(&gate), None);
        let mut other = p.clone();
        other["team"]["id"] = json!("T2");
        assert!(submission(&other, &gate).is_none(), "another team's");
        let mut none = p;
        none["view"]["state"]["values"]
            .as_object_mut()
            .map(|v| v.remove(CHANNEL));
        let s = submission(&none, &gate).expect("ours");
        assert_eq!(
            s.channel_error(&gate).map(|e| e.field),
            Some(CHANNEL.to_string())
        );
    }

    #[test]
    fn a_channel_form_binds_its_channel() {
        let view = project_view(&ProjectForm::create(), "T1", Some("C1"));
        assert!(view.to_string().contains("bound to <#C1>"));
        let s = submission(&payload(&view, json!({})), &Gate::default()).expect("ours");
        assert_eq!((s.channel.as_deref(), s.from_home), (Some("C1"), false));
    }
}
