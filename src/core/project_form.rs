//! The project form (a modal on Slack and Discord): create a project, or set an existing one's
//! edition, location and permit date. The platforms only show the form and hand back what was
//! typed; the checks and the change are made here once, through the same functions as
//! `project create` and `project set` (create: one transaction of project, owner and channel
//! binding; set: owners only), always within the caller's workspace.

use std::collections::BTreeMap;

use super::commands::{self, CommandOutput};
use super::edit_form::FieldError;
use super::session::SessionKey;
use super::{Agent, CoreError};
use crate::domain::workspace::Workspace;
use crate::jurisdiction::site::parse_permit_date;
use crate::jurisdiction::{Location, NecEdition, Site};
use crate::nec::units::Edition;
use crate::project::{MemberRole, Project};

/// The name field (create only).
pub const NAME: &str = "name";
/// The edition field.
pub const EDITION: &str = "edition";
/// The location field: `STATE[, COUNTY County][, CITY]`.
pub const LOCATION: &str = "location";
/// The permit date field: `YYYY-MM-DD`, empty for "today".
pub const PERMIT_DATE: &str = "permit_date";
/// The channel a new project is bound to, where the platform lets the person pick it.
pub const CHANNEL: &str = "channel";
/// The edition value that lets the location's adoption decide (set only).
pub const AUTO: &str = "auto";
/// Longest project name.
pub const MAX_NAME_CHARS: usize = 80;
/// Longest location text.
pub const MAX_LOCATION_CHARS: usize = 200;

/// Create a project, or set an existing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormKind {
    /// A new project, bound to a channel.
    Create,
    /// The channel's project (or one picked on a platform's home).
    Set,
}

/// The form as shown: its title, the values it is pre-filled with and the editions offered.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectForm {
    /// The project it sets; `None`: it creates one.
    pub project: Option<i64>,
    /// The project's name (empty for a new one; not editable once created).
    pub name: String,
    /// Title for people ("New project", "Project: Shop").
    pub title: String,
    /// Pre-filled edition: a year, or [`AUTO`] (set), or the default year (create).
    pub edition: String,
    /// Pre-filled location, as people type it ("WA, King County, Seattle").
    pub location: String,
    /// Pre-filled permit date (`YYYY-MM-DD`), empty for "today".
    pub permit_date: String,
    /// The editions offered: (label, value).
    pub editions: Vec<(String, String)>,
}

impl ProjectForm {
    /// An empty form for a new project.
    pub fn create() -> Self {
        Self {
            project: None,
            name: String::new(),
            title: "New project".into(),
            edition: Edition::default().year().to_string(),
            location: String::new(),
            permit_date: String::new(),
            editions: Edition::ALL
                .iter()
                .map(|e| (format!("NEC {}", e.year()), e.year().to_string()))
                .collect(),
        }
    }

    /// The form of `p`, pre-filled with its current values.
    pub fn set(p: &Project) -> Self {
        let mut editions = vec![(
            "Auto: the location's adopted edition".to_string(),
            AUTO.to_string(),
        )];
        editions.extend(Self::create().editions);
        Self {
            project: Some(p.id),
            name: p.name.clone(),
            title: format!("Project: {}", p.name),
            edition: p
                .site
                .edition_override
                .map(|e| e.to_string())
                .unwrap_or_else(|| AUTO.into()),
            location: p.site.location.as_ref().map(typed).unwrap_or_default(),
            permit_date: p
                .site
                .permit_date
                .map(|d| d.format("%Y-%m-%d").to_string())
                .unwrap_or_default(),
            editions,
        }
    }

    /// Whether it creates a project.
    pub fn kind(&self) -> FormKind {
        if self.project.is_some() {
            FormKind::Set
        } else {
            FormKind::Create
        }
    }
}

/// A location as people type it, so a pre-filled field parses back to the same location.
fn typed(l: &Location) -> String {
    let mut parts = vec![l.state.clone()];
    parts.extend(l.county.clone());
    parts.extend(l.city.clone());
    parts.join(", ")
}

/// The submitted values, checked.
#[derive(Debug, Clone, PartialEq)]
struct Checked {
    name: String,
    /// Create: the project's edition.
    edition: Edition,
    /// Location, permit date and (set) the team's edition override.
    site: Site,
}

/// Checks `values` field by field for a form of `kind` (the channel is checked by the
/// platform, which knows it).
fn check(kind: FormKind, values: &BTreeMap<String, String>) -> Result<Checked, Vec<FieldError>> {
    let get = |k: &str| values.get(k).map(|v| v.trim()).unwrap_or("");
    let mut errors = Vec::new();
    let mut fail = |field: &str, message: String| {
        errors.push(FieldError {
            field: field.to_string(),
            message,
        })
    };
    let name = get(NAME).to_string();
    if kind == FormKind::Create {
        if name.is_empty() {
            fail(NAME, "Name the project.".into());
        } else if name.chars().count() > MAX_NAME_CHARS {
            fail(NAME, format!("At most {MAX_NAME_CHARS} characters."));
        }
    }
    let (mut edition, mut edition_override) = (Edition::default(), None);
    let typed_edition = get(EDITION);
    match kind {
        FormKind::Create if typed_edition.is_empty() => {}
        FormKind::Create => match typed_edition.parse::<Edition>() {
            Ok(e) => edition = e,
            Err(_) => fail(EDITION, "Pick 2017, 2020 or 2023.".into()),
        },
        FormKind::Set if typed_edition.is_empty() || typed_edition.eq_ignore_ascii_case(AUTO) => {}
        FormKind::Set => match typed_edition.parse::<NecEdition>() {
            Ok(e) => edition_override = Some(e),
            Err(e) => fail(EDITION, format!("{e}, or auto.")),
        },
    }
    let mut site = Site::default();
    let location = get(LOCATION);
    if location.chars().count() > MAX_LOCATION_CHARS {
        fail(
            LOCATION,
            format!("At most {MAX_LOCATION_CHARS} characters."),
        );
    } else if !location.is_empty() {
        match location.parse::<Location>() {
            Ok(l) => site.location = Some(l),
            Err(e) => fail(LOCATION, capitalized(&e.to_string())),
        }
    }
    let permit = get(PERMIT_DATE);
    if !permit.is_empty() {
        match parse_permit_date(permit) {
            Ok(d) => site.permit_date = d,
            Err(e) => fail(PERMIT_DATE, capitalized(&e.to_string())),
        }
    }
    site.edition_override = edition_override;
    if errors.is_empty() {
        Ok(Checked {
            name,
            edition,
            site,
        })
    } else {
        Err(errors)
    }
}

/// A message shown on a field starts with a capital letter and ends with a full stop.
fn capitalized(text: &str) -> String {
    let mut c = text.chars();
    let mut out: String = match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    };
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}

/// The errors of a submission as one message, for a platform that cannot show them on the
/// fields (Discord; Slack over Socket Mode).
pub fn errors_text(errors: &[FieldError]) -> String {
    fn label(f: &str) -> &str {
        match f {
            NAME => "Name",
            EDITION => "Edition",
            LOCATION => "Location",
            PERMIT_DATE => "Permit date",
            CHANNEL => "Channel",
            other => other,
        }
    }
    let lines: Vec<String> = errors
        .iter()
        .map(|e| format!("• {}: {}", label(&e.field), e.message))
        .collect();
    format!("Nothing was changed.\n{}", lines.join("\n"))
}

impl Agent {
    /// The form `user` gets in `workspace`: a new project's (`project` `None`), or the form of
    /// that project pre-filled. `Ok(Err(..))`: why not (another workspace's project, or not
    /// an owner of it), for the person.
    pub async fn project_form(
        &self,
        workspace: &Workspace,
        user: &str,
        project: Option<i64>,
    ) -> Result<Result<ProjectForm, String>, CoreError> {
        let Some(id) = project else {
            return Ok(Ok(ProjectForm::create()));
        };
        Ok(self
            .settable(workspace, user, id)
            .await?
            .map(|p| ProjectForm::set(&p)))
    }

    /// The form of the project bound to the channel of `key`, for `project set` typed without
    /// arguments. `Ok(Err(..))`: why not.
    pub async fn channel_project_form(
        &self,
        key: &SessionKey,
        user: &str,
    ) -> Result<Result<ProjectForm, String>, CoreError> {
        let bound = self
            .store()
            .channel_project(&key.platform, &key.workspace, &key.channel)
            .await?;
        match bound {
            Some(id) => self.project_form(&key.workspace(), user, Some(id)).await,
            None => Ok(Err(
                "No project is bound to this channel; create one with `project create`.".into(),
            )),
        }
    }

    /// The project `id` when it is of `workspace` and `user` may set it (owners, as for
    /// `project set`); else why not.
    async fn settable(
        &self,
        workspace: &Workspace,
        user: &str,
        id: i64,
    ) -> Result<Result<Project, String>, CoreError> {
        let store = self.store();
        // Another workspace's project is "not found", exactly like a missing one.
        let Some(p) = store
            .project(id)
            .await?
            .filter(|p| p.workspace == *workspace)
        else {
            return Ok(Err("That project does not exist in this workspace.".into()));
        };
        if store.member_role(p.id, &workspace.platform, user).await? != Some(MemberRole::Owner) {
            return Ok(Err(commands::SET_REFUSED.into()));
        }
        Ok(Ok(p))
    }

    /// Checks a submitted project form field by field (for a platform that shows errors on the
    /// fields before it closes the form); a new project's name must be free in `workspace`.
    /// Decides nothing. `Ok(Err(..))`: the fields to correct.
    pub async fn check_project_form(
        &self,
        workspace: &Workspace,
        kind: FormKind,
        values: &BTreeMap<String, String>,
    ) -> Result<Result<(), Vec<FieldError>>, CoreError> {
        let mut errors = check(kind, values).err().unwrap_or_default();
        let name = values.get(NAME).map(|n| n.trim()).unwrap_or("");
        if kind == FormKind::Create && !name.is_empty() {
            if let Some(p) = self.store().project_by_name(workspace, name).await? {
                errors.insert(
                    0,
                    FieldError {
                        field: NAME.into(),
                        message: format!(
                            "A project named \"{}\" already exists here; pick another name.",
                            p.name
                        ),
                    },
                );
            }
        }
        if !errors.is_empty() {
            return Ok(Err(errors));
        }
        Ok(Ok(()))
    }

    /// Applies a submitted project form for `user`: creates the project in the workspace of
    /// `key` bound to its channel (`project` `None`), or sets the project `project` of that
    /// workspace. `Ok(Err(..))`: the fields to correct, nothing changed.
    pub async fn submit_project_form(
        &self,
        key: &SessionKey,
        user: &str,
        project: Option<i64>,
        values: &BTreeMap<String, String>,
    ) -> Result<Result<CommandOutput, Vec<FieldError>>, CoreError> {
        let workspace = key.workspace();
        let kind = if project.is_some() {
            FormKind::Set
        } else {
            FormKind::Create
        };
        if let Err(errors) = self.check_project_form(&workspace, kind, values).await? {
            return Ok(Err(errors));
        }
        let checked = match check(kind, values) {
            Ok(c) => c,
            Err(errors) => return Ok(Err(errors)),
        };
        let Some(id) = project else {
            let made = commands::create_project(
                self,
                key,
                user,
                &checked.name,
                checked.edition,
                &checked.site,
            )
            .await;
            return Ok(Ok(match made {
                Ok(p) => commands::created(&p),
                // Taken between the check and the insert: shown on the field like the check.
                Err(crate::store::StoreError::Conflict(m)) => {
                    return Ok(Err(vec![FieldError {
                        field: NAME.into(),
                        message: capitalized(&m),
                    }]))
                }
                Err(e) => return Err(e.into()),
            }));
        };
        let p = match self.settable(&workspace, user, id).await? {
            Ok(p) => p,
            Err(why) => return Ok(Ok(CommandOutput::err(why))),
        };
        let site = checked.site;
        let out = commands::set_site(self, &key.platform, user, p, |s| *s = site).await?;
        Ok(Ok(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn every_field_is_checked_and_its_error_named() {
        let errors = check(
            FormKind::Create,
            &values(&[
                (NAME, "  "),
                (EDITION, "2014"),
                (LOCATION, "Atlantis"),
                (PERMIT_DATE, "next week"),
            ]),
        )
        .expect_err("invalid");
        let by: BTreeMap<&str, &str> = errors
            .iter()
            .map(|e| (e.field.as_str(), e.message.as_str()))
            .collect();
        assert_eq!(by[NAME], "Name the project.");
        assert_eq!(by[EDITION], "Pick 2017, 2020 or 2023.");
        assert!(
            by[LOCATION].starts_with("'Atlantis' is not a US state"),
            "{by:?}"
        );
        assert!(
            by[PERMIT_DATE].starts_with("'next week' is not a date"),
            "{by:?}"
        );
        assert!(errors_text(&errors).contains("• Permit date: 'next week'"));
    }

    #[test]
    fn valid_values_become_the_site() {
        let c = check(
            FormKind::Create,
            &values(&[
                (NAME, " Shop "),
                (EDITION, "2020"),
                (LOCATION, "wa, King County, Seattle"),
                (PERMIT_DATE, "2024-03-01"),
            ]),
        )
        .expect("valid");
        assert_eq!(c.name, "Shop");
        assert_eq!(c.edition, Edition::Nec2020);
        assert_eq!(
            c.site.location.as_ref().map(|l| l.state.as_str()),
            Some("WA")
        );
        assert_eq!(
            c.site.permit_date.map(|d| d.to_string()).as_deref(),
            Some("2024-03-01")
        );
        // Set: the edition is the override, "auto" clears it, empty fields clear theirs.
        let c = check(FormKind::Set, &values(&[(EDITION, "auto"), (LOCATION, "")])).expect("valid");
        assert_eq!(c.site, Site::default());
        let c = check(FormKind::Set, &values(&[(EDITION, "2026")])).expect("valid");
        assert_eq!(c.site.edition_override.map(|e| e.year()), Some(2026));
    }

    #[test]
    fn a_prefilled_form_reads_back_as_the_same_site() {
        let mut site = Site {
            location: Some("OR, Multnomah County, Portland".parse().expect("location")),
            permit_date: chrono::NaiveDate::from_ymd_opt(2025, 1, 15),
            edition_override: NecEdition::new(2020),
        };
        let p = Project {
            id: 3,
            workspace: Workspace::new("slack", "T1"),
            name: "Shop".into(),
            edition: Edition::Nec2023,
            confirm_policy: None,
            created_at: chrono::Utc::now(),
            site: site.clone(),
        };
        let f = ProjectForm::set(&p);
        assert_eq!(f.kind(), FormKind::Set);
        assert_eq!(f.edition, "2020");
        assert_eq!(f.editions[0].1, AUTO);
        let back = check(
            FormKind::Set,
            &values(&[
                (EDITION, &f.edition),
                (LOCATION, &f.location),
                (PERMIT_DATE, &f.permit_date),
            ]),
        )
        .expect("valid");
        assert_eq!(back.site, site);
        site.edition_override = None;
        assert_eq!(
            ProjectForm::set(&Project { site, ..p }).edition,
            AUTO,
            "no override: auto"
        );
        assert_eq!(ProjectForm::create().kind(), FormKind::Create);
    }
}
