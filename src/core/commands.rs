//! Commands people type or click (`/sparky project use X`, `/sparky tool ...`), handled the same
//! way on every platform. Adapters parse their own syntax into [`Command`].

use std::str::FromStr;

use serde_json::{json, Value};

use super::mention::UserRef;
use super::session::{Mode, SessionKey};
use super::Agent;
use super::{CollectSink, Effect, Input, InputAction, Outcome};
use crate::jurisdiction::site::parse_permit_date;
use crate::jurisdiction::{for_project, Location, NecEdition, Site};
use crate::nec::units::Edition;
use crate::project::MemberRole;
use crate::store::StoreError;

/// A platform-neutral command.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Create a project and bind the channel to it.
    ProjectCreate {
        /// Project name.
        name: String,
        /// Edition, default 2023.
        edition: Edition,
    },
    /// `project create` or `project set` typed without arguments: a platform with forms opens
    /// the project form (see [`super::project_form`]); elsewhere it is the usage line.
    ProjectForm(super::project_form::FormKind),
    /// Bind the channel to an existing project.
    ProjectUse {
        /// Project name.
        name: String,
    },
    /// Show the bound project.
    ProjectShow,
    /// Export the bound project as JSON.
    ProjectExport,
    /// List the workspace's projects.
    ProjectList,
    /// Give a person a role in the bound project (owners only).
    ProjectGrant {
        /// Platform user id (a `<@U123>` mention is accepted).
        user: String,
        /// The role.
        role: MemberRole,
    },
    /// Take a person's role in the bound project away (owners only).
    ProjectRevoke {
        /// Platform user id (a `<@U123>` mention is accepted).
        user: String,
    },
    /// The bound project's members and their roles.
    ProjectMembers,
    /// Set (or clear with `None`) the bound project's job-site location (owners only).
    ProjectSetLocation {
        /// State, optional county and city.
        location: Option<Location>,
    },
    /// Set the team's edition override (`None`: the adoption table decides; owners only).
    ProjectSetEdition {
        /// The edition the authority having jurisdiction enforces.
        edition: Option<NecEdition>,
    },
    /// Set the permit date (`None`: today; owners only).
    ProjectSetPermitDate {
        /// The date.
        date: Option<chrono::NaiveDate>,
    },
    /// Which code applies to the bound project, and why.
    ProjectCode,
    /// The latest changes of a project (the bound one, or one named): shown only to the
    /// caller, owners and editors only.
    Audit {
        /// A project of the workspace by name; `None`: the channel's.
        project: Option<String>,
        /// How many changes, newest first.
        limit: usize,
    },
    /// Search the knowledge base.
    Search {
        /// The question.
        query: String,
    },
    /// List the tools.
    Tools,
    /// Run a tool: a read tool answers at once; a write tool is proposed for confirmation.
    Tool {
        /// Tool name.
        name: String,
        /// Arguments as JSON text.
        args: String,
    },
    /// Render a project document and attach it (`report panel LP-1 png`).
    Report {
        /// Which document.
        kind: crate::report::ReportKind,
        /// File format.
        format: crate::report::Format,
    },
    /// Help text.
    Help,
}

/// What a command produced: text for people and JSON for scripts.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandOutput {
    /// Text to show.
    pub text: String,
    /// The same as data.
    pub json: Value,
    /// Whether it failed.
    pub is_error: bool,
    /// Files to deliver with the text (a rendered report).
    pub files: Vec<super::attachment::FileAttachment>,
}

impl CommandOutput {
    fn ok(text: impl Into<String>, json: Value) -> Self {
        Self {
            text: text.into(),
            json,
            is_error: false,
            files: Vec::new(),
        }
    }
    pub(super) fn err(text: impl Into<String>) -> Self {
        let text = text.into();
        Self {
            json: json!({"type": "error", "message": text}),
            text,
            is_error: true,
            files: Vec::new(),
        }
    }
}

impl FromStr for Command {
    type Err = String;

    /// Parses the text after `/sparky` (or the console's `/`): `project use X`, `tool NAME {json}`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (head, rest) = s.split_once(char::is_whitespace).unwrap_or((s, ""));
        let rest = rest.trim();
        match head {
            "help" => Ok(Self::Help),
            "tools" => Ok(Self::Tools),
            "search" if !rest.is_empty() => Ok(Self::Search {
                query: rest.to_string(),
            }),
            "search" => Err("usage: search QUESTION".into()),
            "tool" => {
                let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, "{}"));
                if name.is_empty() {
                    return Err("usage: tool NAME {json arguments}".into());
                }
                Ok(Self::Tool {
                    name: name.to_string(),
                    args: args.trim().to_string(),
                })
            }
            "report" => parse_report(rest),
            "audit" => Ok(parse_audit(rest)),
            "project" => {
                let (sub, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                let arg = arg.trim();
                match sub {
                    "create" | "set" if arg.is_empty() => {
                        Ok(Self::ProjectForm(if sub == "create" {
                            super::project_form::FormKind::Create
                        } else {
                            super::project_form::FormKind::Set
                        }))
                    }
                    "create" => {
                        let (name, edition) = match arg.rsplit_once(char::is_whitespace) {
                            Some((n, e)) if e.parse::<Edition>().is_ok() => (
                                n.trim().to_string(),
                                e.parse::<Edition>().unwrap_or_default(),
                            ),
                            _ => (arg.to_string(), Edition::default()),
                        };
                        Ok(Self::ProjectCreate { name, edition })
                    }
                    "use" if !arg.is_empty() => Ok(Self::ProjectUse {
                        name: arg.to_string(),
                    }),
                    "show" => Ok(Self::ProjectShow),
                    "export" => Ok(Self::ProjectExport),
                    "list" => Ok(Self::ProjectList),
                    "members" => Ok(Self::ProjectMembers),
                    "grant" => {
                        let (user, role) = arg
                            .rsplit_once(char::is_whitespace)
                            .ok_or("usage: project grant USER viewer|editor|owner")?;
                        let role = MemberRole::parse(&role.to_ascii_lowercase())
                            .ok_or("the role is viewer, editor or owner")?;
                        Ok(Self::ProjectGrant {
                            user: user_id(user)?,
                            role,
                        })
                    }
                    "revoke" if !arg.is_empty() => Ok(Self::ProjectRevoke {
                        user: user_id(arg)?,
                    }),
                    "code" => Ok(Self::ProjectCode),
                    "set" => parse_set(arg),
                    _ => Err(PROJECT_USAGE.into()),
                }
            }
            other => Err(format!("unknown command '{other}'; try help")),
        }
    }
}

/// `audit [PROJECT] [N]`: a trailing number is the count; the rest names the project.
fn parse_audit(rest: &str) -> Command {
    let (name, limit) = match rest.rsplit_once(char::is_whitespace) {
        Some((n, c)) if c.parse::<usize>().is_ok() => (n.trim(), c.parse().ok()),
        _ => match rest.parse::<usize>() {
            Ok(n) => ("", Some(n)),
            Err(_) => (rest, None),
        },
    };
    Command::Audit {
        project: (!name.is_empty()).then(|| name.to_string()),
        limit: limit.unwrap_or(super::audit_log::DEFAULT_LINES),
    }
}

impl Command {
    /// Whether the answer is shown only to the person who asked (ephemeral on Slack and
    /// Discord): the change history names people and threads the channel may not share.
    pub fn is_private(&self) -> bool {
        matches!(self, Self::Audit { .. })
    }
}

const PROJECT_USAGE: &str =
    "usage: project create NAME [2017|2020|2023] | use NAME | show | export \
     | list | members | grant USER viewer|editor|owner | revoke USER | code \
     | set location STATE[, COUNTY County][, CITY] | set edition YEAR|auto \
     | set permit YYYY-MM-DD|today";

const SET_USAGE: &str = "usage: project set location STATE[, COUNTY County][, CITY] | none \
     | set edition YEAR|auto | set permit YYYY-MM-DD|today";

/// `project set location|edition|permit VALUE`.
fn parse_set(arg: &str) -> Result<Command, String> {
    let (what, value) = arg.split_once(char::is_whitespace).unwrap_or((arg, ""));
    let value = value.trim();
    if value.is_empty() {
        return Err(SET_USAGE.into());
    }
    let clear = |v: &str| ["none", "auto", "clear"].contains(&v.to_ascii_lowercase().as_str());
    match what.to_ascii_lowercase().as_str() {
        "location" => Ok(Command::ProjectSetLocation {
            location: if clear(value) {
                None
            } else {
                Some(value.parse::<Location>().map_err(|e| e.to_string())?)
            },
        }),
        "edition" => Ok(Command::ProjectSetEdition {
            edition: if clear(value) {
                None
            } else {
                Some(value.parse::<NecEdition>()?)
            },
        }),
        "permit" | "permit-date" | "date" => Ok(Command::ProjectSetPermitDate {
            date: parse_permit_date(value).map_err(|e| e.to_string())?,
        }),
        _ => Err(SET_USAGE.into()),
    }
}
const REPORT_USAGE: &str = "usage: report panel NAME | inspection | load | energy [pdf|png]";

/// `panel LP-1 png`, `inspection`, `load pdf`: the format is an optional last word.
fn parse_report(rest: &str) -> Result<Command, String> {
    use crate::report::{Format, ReportKind};
    let mut words: Vec<&str> = rest.split_whitespace().collect();
    let format = match words.last().map(|w| w.parse::<Format>()) {
        Some(Ok(f)) => {
            words.pop();
            f
        }
        _ => Format::Pdf,
    };
    let Some((kind, name)) = words.split_first() else {
        return Err(REPORT_USAGE.into());
    };
    let name = (!name.is_empty()).then(|| name.join(" "));
    let kind =
        ReportKind::parse(kind, name.as_deref()).map_err(|e| format!("{e}; {REPORT_USAGE}"))?;
    Ok(Command::Report { kind, format })
}

/// A user id from what people type: the id itself or a mention (`<@U123>`, `<@!123>`,
/// `<@U123|alice>`), which Slack and Discord both send for a picked person.
pub fn user_id(text: &str) -> Result<String, String> {
    let t = text.trim();
    let id = match t.strip_prefix("<@").and_then(|r| r.strip_suffix('>')) {
        Some(inner) => {
            let inner = inner.strip_prefix('!').unwrap_or(inner);
            inner.split('|').next().unwrap_or(inner)
        }
        None => t,
    };
    if id.is_empty() || id.chars().any(char::is_whitespace) {
        return Err(format!(
            "'{t}' is not a person; name one user id or mention"
        ));
    }
    Ok(id.to_string())
}

/// Passages as Markdown: "**NEC 2023 210.8(A)**" then the text, clipped to `max_chars`.
pub fn passages_text(passages: &[Value], max: usize, max_chars: usize) -> String {
    let mut out = String::new();
    for p in passages.iter().take(max) {
        let section = p
            .get("section")
            .and_then(Value::as_str)
            .unwrap_or("(no section)");
        let edition = p
            .get("edition")
            .and_then(Value::as_i64)
            .map(|e| format!("NEC {e} "))
            .unwrap_or_default();
        let source = p.get("source").and_then(Value::as_str).unwrap_or("");
        // A local amendment is cited as one, not as the model code.
        let amendment = p
            .pointer("/amendment/label")
            .and_then(Value::as_str)
            .map(|l| format!(" — {l}"))
            .unwrap_or_default();
        // The model's fence stays with the model: a person reads the passage itself.
        let body =
            crate::llm::untrusted::undelimit(p.get("text").and_then(Value::as_str).unwrap_or(""));
        let clipped: String = body.chars().take(max_chars).collect();
        let more = if body.chars().count() > max_chars {
            "…"
        } else {
            ""
        };
        out.push_str(&format!(
            "\n**{edition}{section}** ({source}){amendment}\n{clipped}{more}\n"
        ));
    }
    out
}

/// Every `/sparky` command as people type it: the first word, and each `project` command.
/// The README, the Slack manifest and Discord's registration list exactly these (a test
/// compares them).
pub const COMMAND_LIST: &[&str] = &[
    "ask",
    "spec",
    "project create",
    "project use",
    "project show",
    "project export",
    "project list",
    "project members",
    "project grant",
    "project revoke",
    "project set",
    "project code",
    "search",
    "report",
    "audit",
    "tools",
    "tool",
    "help",
];

/// Help text shared by every front end.
pub fn help_text() -> String {
    "Ask me NEC questions or about your project in plain words.\n\
     Commands:\n\
     \x20 project create NAME [2017|2020|2023]  create a project and bind this channel to it\n\
     \x20 project use NAME                 bind this channel to a project\n\
     \x20 project show | export | list     show the bound project, export it as JSON, list projects\n\
     \x20 project members                 who has which role in the bound project\n\
     \x20 project grant USER ROLE         give a person viewer, editor or owner (owners only)\n\
     \x20 project revoke USER             take a person's role away (owners only)\n\
     \x20 project set location WA[, King County][, Seattle]  where the job is (owners only)\n\
     \x20 project set permit YYYY-MM-DD|today  the permit date the code in force is taken on\n\
     \x20 project set edition YEAR|auto  override the adopted edition, or let the location decide\n\
     \x20 project code                    which NEC edition applies here, and why\n\
     \x20 audit [PROJECT] [N]              the latest N changes: who asked, who confirmed, what, when (owners and editors; only you see it)\n\
     \x20 search QUESTION                  passages of the knowledge base with their sections\n\
     \x20 report panel NAME|inspection|load|energy [pdf|png]  a document of the project as a file\n\
     \x20 tools                            list the tools\n\
     \x20 tool NAME {json}                 run a tool directly (changes ask for confirmation)\n\
     A proposed change runs only when someone allowed clicks its Confirm button (on the \
     console: `confirm [ID]` or `cancel [ID]`).\n\
     Typing while a change is proposed corrects it instead of confirming it."
        .into()
}

/// What the spec assistant is told when its command names no equipment (every front end).
pub fn spec_opening(mode: Mode, equipment: Option<&str>) -> String {
    match (mode, equipment.map(str::trim).filter(|e| !e.is_empty())) {
        (_, Some(e)) => e.to_string(),
        (Mode::Source, None) => "I want to add a charging source to the project.".into(),
        _ => "I want to add loads to the project.".into(),
    }
}

/// Binds the channel of `key` to the project `name` (created when missing, its creator the
/// owner), or keeps the channel's project (else "default") when no name is given: the front
/// ends that start on a project (the console, the command line) use this one rule, built on
/// the same `project use` and `project create` commands as every platform. Returns the
/// project's name.
pub async fn use_or_create_project(
    agent: &Agent,
    key: &SessionKey,
    user: &str,
    name: Option<&str>,
) -> Result<String, StoreError> {
    let store = agent.store();
    if name.is_none() {
        if let Some(id) = store
            .channel_project(&key.platform, &key.workspace, &key.channel)
            .await?
        {
            if let Some(p) = store.project(id).await? {
                return Ok(p.name);
            }
        }
    }
    let name = name.unwrap_or("default").to_string();
    let bind = || execute(agent, key, user, Command::ProjectUse { name: name.clone() });
    let mut out = bind().await;
    if out.is_error {
        let create = Command::ProjectCreate {
            name: name.clone(),
            edition: Edition::default(),
        };
        out = execute(agent, key, user, create).await;
        if out.is_error {
            // It exists (the refusal to bind it says why) or another console just created it.
            out = bind().await;
        }
    }
    if out.is_error {
        return Err(StoreError::Conflict(out.text));
    }
    Ok(out.json["project"]["name"]
        .as_str()
        .unwrap_or(&name)
        .to_string())
}

/// Moves the thread of `key` onto `project_id`. A thread keeps the project it started on
/// when its channel's binding changes elsewhere, but the thread where `project use` or
/// `project create` is said (or a console restarted with `--project`) works on the project
/// named from then on: its
/// next proposals are planned against it, and their cards name and apply to it.
async fn this_thread_works_on(
    agent: &Agent,
    key: &SessionKey,
    project_id: i64,
) -> Result<(), StoreError> {
    let store = agent.store();
    let session = store.open_thread(key, None).await?;
    if session.project_id != Some(project_id) {
        store
            .set_session_project(session.id, Some(project_id))
            .await?;
    }
    Ok(())
}

/// Creates the project `name` in the workspace of `key` with its job `site`, `user` its
/// owner and the channel of `key` bound to it, in one transaction: what `project create` and
/// the project form both do.
pub(super) async fn create_project(
    agent: &Agent,
    key: &SessionKey,
    user: &str,
    name: &str,
    edition: Edition,
    site: &Site,
) -> Result<crate::project::Project, StoreError> {
    let owner = crate::store::ProjectOwner {
        user: user.to_string(),
        channel: key.channel.clone(),
    };
    agent
        .store()
        .create_owned_project(&key.workspace(), name.trim(), edition, site, &owner)
        .await
}

/// What the creator of `p` is told.
pub(super) fn created(p: &crate::project::Project) -> CommandOutput {
    let next = if p.site.location.is_none() {
        " Set where the job is with `project set location STATE`."
    } else {
        ""
    };
    CommandOutput::ok(
        format!(
            "Created project \"{}\" ({}) and bound this channel to it; you are its owner.{next}",
            p.name,
            for_project(p).label()
        ),
        json!({"type": "project", "project": p}),
    )
}

/// Changes the job site of `p` for `user` (owners only): what `project set` and the project
/// form both do.
pub(super) async fn set_site(
    agent: &Agent,
    platform: &str,
    user: &str,
    mut p: crate::project::Project,
    change: impl FnOnce(&mut Site),
) -> Result<CommandOutput, StoreError> {
    let store = agent.store();
    if store.member_role(p.id, platform, user).await? != Some(MemberRole::Owner) {
        return Ok(CommandOutput::err(SET_REFUSED));
    }
    change(&mut p.site);
    store.update_project(&p).await?;
    let code = for_project(&p);
    Ok(CommandOutput::ok(
        format!("{}: {}\n{}", p.name, code.label(), code.summary()),
        json!({"type": "code_in_force", "project": p.name, "site": p.site, "code": code}),
    ))
}

/// Why a person who is not an owner cannot change the job site.
pub(super) const SET_REFUSED: &str =
    "Only an owner of the project can change where and under which code it is built.";

/// Runs a command for `user` in the conversation `key`.
pub async fn execute(
    agent: &Agent,
    key: &SessionKey,
    user: &str,
    command: Command,
) -> CommandOutput {
    match run(agent, key, user, command).await {
        Ok(out) => out,
        Err(e) => CommandOutput::err(e.to_string()),
    }
}

async fn run(
    agent: &Agent,
    key: &SessionKey,
    user: &str,
    command: Command,
) -> Result<CommandOutput, StoreError> {
    let store = agent.store();
    let workspace = key.workspace();
    let bound = store
        .channel_project(&key.platform, &key.workspace, &key.channel)
        .await?;
    Ok(match command {
        Command::Help => {
            CommandOutput::ok(help_text(), json!({"type": "help", "text": help_text()}))
        }
        Command::ProjectCreate { name, edition } => {
            let p = create_project(agent, key, user, &name, edition, &Site::default()).await?;
            this_thread_works_on(agent, key, p.id).await?;
            created(&p)
        }
        Command::ProjectForm(_) => CommandOutput::err(PROJECT_USAGE),
        Command::ProjectUse { name } => {
            // Another workspace's project is "not found", exactly like a missing one.
            let Some(p) = store.project_by_name(&workspace, &name).await? else {
                return Ok(not_found(&name));
            };
            if bound == Some(p.id) {
                this_thread_works_on(agent, key, p.id).await?;
                return Ok(CommandOutput::ok(
                    format!("This channel works on project \"{}\".", p.name),
                    json!({"type": "project", "project": p}),
                ));
            }
            // A project nobody holds a role in (imported, or older than roles) is claimed by
            // the first person who binds it; of two at once, one.
            let claimed = store.members(p.id).await?.is_empty()
                && store.claim_ownerless(p.id, &key.platform, user).await?;
            let role = store.member_role(p.id, &key.platform, user).await?;
            if !claimed && !matches!(role, Some(MemberRole::Editor | MemberRole::Owner)) {
                return Ok(CommandOutput::err(format!(
                    "Binding a channel to \"{}\" needs the editor or owner role; ask an owner to \
                     `project grant` you one.",
                    p.name
                )));
            }
            store
                .bind_channel(&key.platform, &key.workspace, &key.channel, p.id)
                .await?;
            this_thread_works_on(agent, key, p.id).await?;
            CommandOutput::ok(
                format!("This channel now works on project \"{}\".", p.name),
                json!({"type": "project", "project": p}),
            )
        }
        Command::ProjectList => {
            let list = store.list_projects(&workspace).await?;
            let text = if list.is_empty() {
                "No projects yet.".to_string()
            } else {
                list.iter()
                    .map(|p| format!("- {} ({})", p.name, for_project(p).label()))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            CommandOutput::ok(text, json!({"type": "projects", "projects": list}))
        }
        Command::Audit { project, limit } => {
            let p = match project {
                Some(name) => match store.project_by_name(&workspace, &name).await? {
                    Some(p) => p,
                    None => return Ok(not_found(&name)),
                },
                None => match bound {
                    Some(id) => match store.project(id).await? {
                        Some(p) => p,
                        None => return Ok(unbound()),
                    },
                    None => return Ok(unbound()),
                },
            };
            let role = store.member_role(p.id, &key.platform, user).await?;
            if !super::audit_log::may_read(role) {
                return Ok(CommandOutput::err(format!(
                    "Only owners and editors of project \"{}\" can read its changes.",
                    p.name
                )));
            }
            let lines = super::audit_log::project_history(store.as_ref(), p.id, limit).await?;
            CommandOutput::ok(
                super::audit_log::to_text(&p.name, &lines),
                super::audit_log::to_json(&p.name, &lines),
            )
        }
        Command::ProjectMembers => {
            let Some(id) = bound else {
                return Ok(unbound());
            };
            let members = store.members(id).await?;
            let text = if members.is_empty() {
                "Nobody holds a role in this project yet.".to_string()
            } else {
                members
                    .iter()
                    .map(|(u, r)| format!("- {}: {}", UserRef::new(u.as_str()), r.as_str()))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            let list: Vec<Value> = members
                .iter()
                .map(|(u, r)| json!({"user": u, "role": r}))
                .collect();
            CommandOutput::ok(text, json!({"type": "members", "members": list}))
        }
        Command::ProjectGrant { user: who, role } => {
            let id = match owned(agent, key, user, bound).await? {
                Ok(id) => id,
                Err(refusal) => return Ok(refusal),
            };
            store.set_member_role(id, &key.platform, &who, role).await?;
            CommandOutput::ok(
                format!(
                    "{} is now {} of this project.",
                    UserRef::new(who.as_str()),
                    role.as_str()
                ),
                json!({"type": "member", "user": who, "role": role}),
            )
        }
        Command::ProjectRevoke { user: who } => {
            let id = match owned(agent, key, user, bound).await? {
                Ok(id) => id,
                Err(refusal) => return Ok(refusal),
            };
            let owners = store
                .members(id)
                .await?
                .into_iter()
                .filter(|(u, r)| *r == MemberRole::Owner && *u != who)
                .count();
            if owners == 0 {
                return Ok(CommandOutput::err(
                    "A project keeps at least one owner; grant someone else owner first.",
                ));
            }
            let removed = store.remove_member(id, &key.platform, &who).await?;
            CommandOutput::ok(
                if removed {
                    format!(
                        "{} no longer has a role in this project.",
                        UserRef::new(who.as_str())
                    )
                } else {
                    format!(
                        "{} had no role in this project.",
                        UserRef::new(who.as_str())
                    )
                },
                json!({"type": "member", "user": who, "role": null}),
            )
        }
        Command::ProjectCode => {
            let Some(id) = bound else {
                return Ok(unbound());
            };
            let Some(p) = store.project(id).await? else {
                return Ok(unbound());
            };
            let code = for_project(&p);
            CommandOutput::ok(
                format!("{}: {}\n{}", p.name, code.label(), code.summary()),
                json!({"type": "code_in_force", "project": p.name, "code": code}),
            )
        }
        Command::ProjectSetLocation { .. }
        | Command::ProjectSetEdition { .. }
        | Command::ProjectSetPermitDate { .. } => {
            let Some(id) = bound else {
                return Ok(unbound());
            };
            let Some(p) = store.project(id).await? else {
                return Ok(unbound());
            };
            set_site(agent, &key.platform, user, p, |site| match command {
                Command::ProjectSetLocation { location } => site.location = location,
                Command::ProjectSetEdition { edition } => site.edition_override = edition,
                Command::ProjectSetPermitDate { date } => site.permit_date = date,
                _ => {}
            })
            .await?
        }
        Command::ProjectShow | Command::ProjectExport => {
            let Some(id) = bound else {
                return Ok(unbound());
            };
            let data = store.load_project(id).await?;
            if matches!(command, Command::ProjectExport) {
                let text = serde_json::to_string_pretty(&data).unwrap_or_default();
                CommandOutput::ok(text, json!({"type": "project_export", "project": data}))
            } else {
                CommandOutput::ok(
                    super::context::project_context(&data),
                    json!({"type": "project", "project": data.project}),
                )
            }
        }
        Command::Search { query } => {
            if agent.tools().get("search_code").is_none() {
                return Ok(CommandOutput::err(
                    "Search is not available in this deployment.",
                ));
            }
            let args = json!({ "query": query }).to_string();
            match run_tool(agent, key, user, "search_code", &args).await {
                ToolRun::Output {
                    result,
                    is_error: false,
                } => {
                    let passages = result
                        .get("passages")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    let text = if passages.is_empty() {
                        format!("Nothing in the knowledge base answers \"{query}\".")
                    } else {
                        passages_text(&passages, 5, 400)
                    };
                    CommandOutput::ok(
                        text,
                        json!({"type": "search", "query": query, "result": result}),
                    )
                }
                other => other.into_output("search_code"),
            }
        }
        Command::Tools => {
            let list: Vec<Value> = agent
                .tools()
                .all()
                .map(|t| json!({"name": t.name(), "description": t.description(), "writes": t.writes(), "schema": t.schema()}))
                .collect();
            let text = agent
                .tools()
                .all()
                .map(|t| {
                    format!(
                        "- {}{}: {}",
                        t.name(),
                        if t.writes() { " (change)" } else { "" },
                        t.description()
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            CommandOutput::ok(text, json!({"type": "tools", "tools": list}))
        }
        Command::Tool { name, args } => run_tool(agent, key, user, &name, &args)
            .await
            .into_output(&name),
        Command::Report { kind, format } => {
            let args = match &kind {
                crate::report::ReportKind::Panel { panel } => {
                    json!({"document": "panel_schedule", "panel": panel, "format": format})
                }
                crate::report::ReportKind::Inspection => {
                    json!({"document": "inspection", "format": format})
                }
                crate::report::ReportKind::Load => {
                    json!({"document": "load_calculation", "format": format})
                }
                crate::report::ReportKind::Energy => {
                    json!({"document": "energy_budget", "format": format})
                }
            };
            match run_tool(agent, key, user, "send_report", &args.to_string()).await {
                ToolRun::Output {
                    mut result,
                    is_error: false,
                } => {
                    let file = super::attachment::take_attachment(&mut result);
                    let v = &result;
                    let mut text = format!(
                        "{} ({} page{}, {}): {}",
                        v["document"].as_str().unwrap_or("Report"),
                        v["pages"],
                        if v["pages"] == 1 { "" } else { "s" },
                        format.extension().to_uppercase(),
                        v["summary"].as_str().unwrap_or_default()
                    );
                    // What the file leaves out ("showing pages 1–10 of 143; …").
                    if let Some(limits) = v["limits"].as_str() {
                        text.push_str(&format!(" ({limits})"));
                    }
                    let mut out =
                        CommandOutput::ok(text, json!({"type": "report", "result": result}));
                    out.files.extend(file);
                    out
                }
                other => other.into_output("send_report"),
            }
        }
    })
}

/// What a tool command produced, from the effects the core emitted for it.
enum ToolRun {
    /// A result (a read tool's, or an error before anything was proposed).
    Output { result: Value, is_error: bool },
    /// A write was proposed: it waits for Confirm.
    Proposed {
        action_id: String,
        items: Vec<crate::store::ActionItem>,
    },
    /// The core refused or failed.
    Error(String),
}

impl ToolRun {
    fn into_output(self, name: &str) -> CommandOutput {
        match self {
            ToolRun::Output {
                result,
                is_error: false,
            } => CommandOutput::ok(
                serde_json::to_string_pretty(&result).unwrap_or_default(),
                json!({"type": "tool_result", "tool": name, "result": result}),
            ),
            ToolRun::Output { result, .. } => CommandOutput::err(
                result
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("the tool failed")
                    .to_string(),
            ),
            ToolRun::Proposed { action_id, items } => {
                let summaries: Vec<String> = items.into_iter().map(|i| i.summary).collect();
                CommandOutput::ok(
                format!(
                    "Proposed ({action_id}): {}. Confirm with `confirm {action_id}` or cancel with `cancel {action_id}`.",
                    summaries.join("; ")
                ),
                json!({"type": "proposal", "tool": name, "action_id": action_id, "items": summaries}),
            )
            }
            ToolRun::Error(m) => CommandOutput::err(m),
        }
    }
}

/// Runs a tool command through the core (the one tool runner and, for writes, the gate).
async fn run_tool(agent: &Agent, key: &SessionKey, user: &str, name: &str, args: &str) -> ToolRun {
    let sink = CollectSink::default();
    let input = Input {
        key: key.clone(),
        user: user.to_string(),
        event_id: None,
        action: InputAction::Tool {
            name: name.to_string(),
            args: args.to_string(),
        },
    };
    if let Err(e) = agent.handle(input, &sink).await {
        return ToolRun::Error(e.to_string());
    }
    let mut out = ToolRun::Error("the tool produced no result".into());
    for effect in sink.take() {
        match effect {
            Effect::ToolOutput {
                result, is_error, ..
            } => out = ToolRun::Output { result, is_error },
            Effect::Confirmation {
                action_id, items, ..
            } => out = ToolRun::Proposed { action_id, items },
            Effect::Error { message } => out = ToolRun::Error(message),
            _ => {}
        }
    }
    out
}

/// Runs a tool once for a script or terminal (`sparky tool`): a write is proposed like any
/// other and then confirmed as `user` when `approve` says so (`--yes`, or a person's answer at
/// the terminal), or cancelled; both are audited under `user`.
pub async fn run_tool_once(
    agent: &Agent,
    key: &SessionKey,
    user: &str,
    name: &str,
    args: &str,
    approve: impl FnOnce(&[crate::store::ActionItem]) -> bool,
) -> CommandOutput {
    let (action_id, items) = match run_tool(agent, key, user, name, args).await {
        ToolRun::Proposed { action_id, items } => (action_id, items),
        other => return other.into_output(name),
    };
    let confirm = approve(&items);
    let sink = CollectSink::default();
    let input = Input {
        key: key.clone(),
        user: user.to_string(),
        event_id: None,
        action: if confirm {
            InputAction::Confirm {
                action_id: Some(action_id.clone()),
            }
        } else {
            InputAction::Cancel {
                action_id: Some(action_id.clone()),
            }
        },
    };
    if let Err(e) = agent.handle(input, &sink).await {
        return CommandOutput::err(e.to_string());
    }
    let summary: Vec<String> = items.iter().map(|i| i.summary.clone()).collect();
    if !confirm {
        let result = json!({"status": "not_confirmed", "summary": summary.join("; ")});
        return CommandOutput::ok(
            serde_json::to_string_pretty(&result).unwrap_or_default(),
            json!({"type": "tool_result", "tool": name, "result": result}),
        );
    }
    let mut out = CommandOutput::err("the confirmed change produced no result");
    for effect in sink.take() {
        match effect {
            Effect::ToolOutput {
                result, is_error, ..
            } => out = ToolRun::Output { result, is_error }.into_output(name),
            Effect::Resolved {
                outcome: Outcome::Outdated,
                details,
                ..
            } => out = CommandOutput::err(details.join("\n")),
            Effect::Error { message } => out = CommandOutput::err(message),
            _ => {}
        }
    }
    out
}

/// The bound project when `user` owns it; otherwise the refusal to show.
async fn owned(
    agent: &Agent,
    key: &SessionKey,
    user: &str,
    bound: Option<i64>,
) -> Result<Result<i64, CommandOutput>, StoreError> {
    let Some(id) = bound else {
        return Ok(Err(unbound()));
    };
    let role = agent.store().member_role(id, &key.platform, user).await?;
    Ok(if role == Some(MemberRole::Owner) {
        Ok(id)
    } else {
        Err(CommandOutput::err(
            "Only an owner of the project can change roles.",
        ))
    })
}

fn not_found(name: &str) -> CommandOutput {
    CommandOutput::err(format!("There is no project named \"{}\".", name.trim()))
}

fn unbound() -> CommandOutput {
    CommandOutput::err("No project is bound to this channel; use `project use NAME`.")
}

/// Parses a mode name for the `mode` option of commands.
pub fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse() {
        assert_eq!(
            "project create Shop 2020".parse::<Command>().unwrap(),
            Command::ProjectCreate {
                name: "Shop".into(),
                edition: Edition::Nec2020
            }
        );
        assert_eq!(
            "project create Main St Garage".parse::<Command>().unwrap(),
            Command::ProjectCreate {
                name: "Main St Garage".into(),
                edition: Edition::Nec2023
            }
        );
        assert_eq!(
            "tool calculator {\"expression\": \"1+1\"}"
                .parse::<Command>()
                .unwrap(),
            Command::Tool {
                name: "calculator".into(),
                args: "{\"expression\": \"1+1\"}".into(),
            }
        );
        assert_eq!(
            "project grant <@U0ALICE|alice> Editor"
                .parse::<Command>()
                .unwrap(),
            Command::ProjectGrant {
                user: "U0ALICE".into(),
                role: MemberRole::Editor
            }
        );
        assert_eq!(
            "project revoke <@!80351110224678912>"
                .parse::<Command>()
                .unwrap(),
            Command::ProjectRevoke {
                user: "80351110224678912".into()
            }
        );
        assert!("project grant bob".parse::<Command>().is_err());
        assert!("project grant bob admin".parse::<Command>().is_err());
        assert!("project grant <@> owner".parse::<Command>().is_err());
        assert!("project revoke".parse::<Command>().is_err());
        assert!("project".parse::<Command>().is_err());
        assert!("frobnicate".parse::<Command>().is_err());
    }

    #[test]
    fn site_commands_parse() {
        match "project set location WA, King County, Seattle".parse::<Command>() {
            Ok(Command::ProjectSetLocation { location: Some(l) }) => {
                assert_eq!(l.state, "WA");
                assert_eq!(l.city.as_deref(), Some("Seattle"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            "project set location none".parse::<Command>().unwrap(),
            Command::ProjectSetLocation { location: None }
        );
        assert_eq!(
            "project set edition 2017".parse::<Command>().unwrap(),
            Command::ProjectSetEdition {
                edition: NecEdition::new(2017)
            }
        );
        assert_eq!(
            "project set edition auto".parse::<Command>().unwrap(),
            Command::ProjectSetEdition { edition: None }
        );
        assert_eq!(
            "project set permit 2024-05-01".parse::<Command>().unwrap(),
            Command::ProjectSetPermitDate {
                date: chrono::NaiveDate::from_ymd_opt(2024, 5, 1)
            }
        );
        assert_eq!(
            "project create Old Shop 2017".parse::<Command>().unwrap(),
            Command::ProjectCreate {
                name: "Old Shop".into(),
                edition: Edition::Nec2017
            }
        );
        assert!("project set edition 2019".parse::<Command>().is_err());
        assert!("project set location Atlantis".parse::<Command>().is_err());
        assert!("project set permit yesterday".parse::<Command>().is_err());
        assert!("project set colour blue".parse::<Command>().is_err());
        assert!("project set location".parse::<Command>().is_err());
        // Without arguments: the form, where a platform has one.
        assert_eq!(
            " project  set ".parse::<Command>().unwrap(),
            Command::ProjectForm(super::super::project_form::FormKind::Set)
        );
        assert_eq!(
            "project create".parse::<Command>().unwrap(),
            Command::ProjectForm(super::super::project_form::FormKind::Create)
        );
    }

    #[test]
    fn report_commands_take_an_optional_format_last() {
        use crate::report::{Format, ReportKind};
        assert_eq!(
            "report panel LP 1 png".parse::<Command>().unwrap(),
            Command::Report {
                kind: ReportKind::Panel {
                    panel: "LP 1".into()
                },
                format: Format::Png
            }
        );
        assert_eq!(
            "report inspection".parse::<Command>().unwrap(),
            Command::Report {
                kind: ReportKind::Inspection,
                format: Format::Pdf
            }
        );
        assert!("report".parse::<Command>().is_err());
        assert!("report panel".parse::<Command>().is_err());
        assert!("report panel pdf".parse::<Command>().is_err());
        assert!("report invoices".parse::<Command>().is_err());
    }
}
