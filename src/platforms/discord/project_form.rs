//! The project form on Discord: the core's [`ProjectForm`] as a modal (interaction response
//! type 9, one text input per field, the input's custom id the field's name), opened by
//! `/sparky project create|set` without options, and its submission (type 5 interaction) read
//! back into the values the core checks and applies. A Discord modal cannot show errors on its
//! fields: they are answered privately at once, and nothing is changed.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use serenity::all::{ActionRowComponent, CommandInteraction, ModalInteraction};

use super::adapter::{dm_workspace, ephemeral, Discord, Work, AUTOCOMPLETE_BUDGET, PLATFORM};
use crate::core::project_form::{
    errors_text, FormKind, ProjectForm, EDITION, LOCATION, MAX_LOCATION_CHARS, MAX_NAME_CHARS,
    NAME, PERMIT_DATE,
};
use crate::core::session::SessionKey;
use crate::domain::workspace::Workspace;
use crate::platforms::render::clip;

/// The custom id of the modal: this prefix, then `new` or the project's id.
pub const PREFIX: &str = "sparky:project:";
/// Discord's limits: a modal's title, a text input's label and placeholder.
const MAX_TITLE: usize = 45;
const MAX_PLACEHOLDER: usize = 100;

fn field(id: &str, label: &str, value: &str, required: bool, max: usize, hint: &str) -> Value {
    let mut input = json!({
        "type": 4,
        "custom_id": id,
        "label": label,
        "style": 1,
        "required": required,
        "max_length": max,
        "placeholder": clip(hint, MAX_PLACEHOLDER),
    });
    if !value.is_empty() {
        input["value"] = json!(clip(value, max));
    }
    json!({"type": 1, "components": [input]})
}

/// The modal of `form` (response type 9).
pub fn project_modal(form: &ProjectForm) -> Value {
    let mut rows = Vec::new();
    if form.kind() == FormKind::Create {
        rows.push(field(
            NAME,
            "Project name",
            "",
            true,
            MAX_NAME_CHARS,
            "Main St Garage",
        ));
    }
    let years: Vec<&str> = form.editions.iter().map(|(_, v)| v.as_str()).collect();
    rows.push(field(
        EDITION,
        "NEC edition",
        &form.edition,
        false,
        10,
        &years.join(", "),
    ));
    rows.push(field(
        LOCATION,
        "Location (state, county, city)",
        &form.location,
        false,
        MAX_LOCATION_CHARS,
        "WA, King County, Seattle",
    ));
    rows.push(field(
        PERMIT_DATE,
        "Permit date (empty: today)",
        &form.permit_date,
        false,
        10,
        "YYYY-MM-DD",
    ));
    let id = form
        .project
        .map_or_else(|| "new".to_string(), |p| p.to_string());
    json!({"type": 9, "data": {
        "custom_id": format!("{PREFIX}{id}"),
        "title": clip(&form.title, MAX_TITLE),
        "components": rows,
    }})
}

/// The project a modal's custom id names: `Some(None)` a new one, `Some(Some(id))` that one;
/// `None`: not a project form.
pub fn parse_custom_id(id: &str) -> Option<Option<i64>> {
    match id.strip_prefix(PREFIX)? {
        "new" => Some(None),
        n => n.parse::<i64>().ok().map(Some),
    }
}

/// The values typed into a submitted modal, by input.
pub fn values(form: &ModalInteraction) -> BTreeMap<String, String> {
    form.data
        .components
        .iter()
        .flat_map(|row| row.components.iter())
        .filter_map(|c| match c {
            ActionRowComponent::InputText(t) => {
                Some((t.custom_id.clone(), t.value.clone().unwrap_or_default()))
            }
            _ => None,
        })
        .collect()
}

impl Discord {
    /// `/sparky project create|set` without options: the form as the answer itself (Discord
    /// opens it within 3 s), or a private note saying why not.
    pub(super) async fn project_form_answer(
        &self,
        cmd: &CommandInteraction,
        kind: FormKind,
    ) -> Value {
        let lookup = async {
            let key = self.command_key(cmd).await;
            let user = cmd.user.id.to_string();
            match kind {
                FormKind::Create => {
                    self.agent()
                        .project_form(&key.workspace(), &user, None)
                        .await
                }
                FormKind::Set => self.agent().channel_project_form(&key, &user).await,
            }
        };
        match tokio::time::timeout(AUTOCOMPLETE_BUDGET, lookup).await {
            Ok(Ok(Ok(form))) => project_modal(&form),
            Ok(Ok(Err(why))) => ephemeral(&format!("⚠️ {why}")),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "could not read the project for its form");
                ephemeral("⚠️ I could not open the form; try again.")
            }
            Err(_) => ephemeral("⚠️ I could not open the form in time; try again."),
        }
    }

    /// The channel key of a submitted form: its workspace, and the channel a new project is
    /// bound to (a thread's parent).
    async fn form_key(&self, form: &ModalInteraction) -> SessionKey {
        let channel = form.channel_id.to_string();
        let user = form.user.id.to_string();
        let Some(guild) = form.guild_id.map(|g| g.to_string()) else {
            return SessionKey::new(PLATFORM, dm_workspace(&user), &channel, "");
        };
        let parent = form
            .channel
            .as_ref()
            .and_then(|c| c.parent_id)
            .map(|p| p.to_string());
        let parent = match parent {
            Some(p) => p,
            None => self.channel_parent(&channel).await,
        };
        SessionKey::new(PLATFORM, guild, parent, "")
    }

    /// A submitted project form: field errors are answered privately at once; a valid one is
    /// acknowledged (deferred) and applied after.
    pub(super) async fn project_form_submitted(
        &self,
        form: &ModalInteraction,
        project: Option<i64>,
    ) -> (Value, Option<Work>) {
        let values = values(form);
        let kind = if project.is_some() {
            FormKind::Set
        } else {
            FormKind::Create
        };
        let workspace = match form.guild_id {
            Some(g) => Workspace::new(PLATFORM, g.to_string()),
            None => Workspace::new(PLATFORM, dm_workspace(&form.user.id.to_string())),
        };
        let check = self.agent().check_project_form(&workspace, kind, &values);
        if let Ok(Ok(Err(errors))) = tokio::time::timeout(AUTOCOMPLETE_BUDGET, check).await {
            return (ephemeral(&errors_text(&errors)), None);
        }
        let key = self.form_key(form).await;
        (
            json!({"type": 5}),
            Some(Work::ProjectForm(
                Box::new(form.clone()),
                key,
                project,
                values,
            )),
        )
    }

    /// Applies a submitted project form (once per interaction) and answers it.
    pub(super) async fn apply_project_form(
        &self,
        form: &ModalInteraction,
        key: SessionKey,
        project: Option<i64>,
        values: BTreeMap<String, String>,
    ) {
        let user = form.user.id.to_string();
        let text = match self
            .agent()
            .submit_project_form(&key, &user, project, &values)
            .await
        {
            Ok(Ok(out)) if out.is_error => format!("⚠️ {}", out.text),
            Ok(Ok(out)) => out.text,
            Ok(Err(errors)) => format!("⚠️ {}", errors_text(&errors)),
            Err(e) => {
                tracing::warn!(error = %e, "could not apply the project form");
                "⚠️ The project could not be saved; try again.".into()
            }
        };
        let body = json!({"content": clip(&text, super::surface::MAX_MESSAGE), "allowed_mentions": {"parse": []}});
        let app = form.application_id.to_string();
        if let Err(e) = self.rest().edit_original(&app, &form.token, &body).await {
            tracing::warn!(error = %e, "could not answer the project form");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_modal_holds_every_field_and_names_its_project() {
        let m = project_modal(&ProjectForm::create());
        assert_eq!(m["type"], 9);
        assert_eq!(m["data"]["custom_id"], "sparky:project:new");
        let ids: Vec<&str> = m["data"]["components"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["components"][0]["custom_id"].as_str())
            .collect();
        assert_eq!(ids, [NAME, EDITION, LOCATION, PERMIT_DATE]);
        assert_eq!(m["data"]["components"][1]["components"][0]["value"], "2023");
        assert_eq!(parse_custom_id("sparky:project:new"), Some(None));
        assert_eq!(parse_custom_id("sparky:project:12"), Some(Some(12)));
        assert_eq!(parse_custom_id("sparky:project:x"), None);
        assert_eq!(parse_custom_id("sparky:editform:a"), None);
    }
}
