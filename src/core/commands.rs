//! Commands people type or click (`/sparky project use X`, `/sparky tool ...`), handled the same
//! way on every platform. Adapters parse their own syntax into [`Command`].

mod audit;
mod members;
mod project;
mod tools;

use std::str::FromStr;

use serde_json::{json, Value};

use super::session::{Mode, SessionKey};
use super::Agent;
use crate::jurisdiction::site::parse_permit_date;
use crate::jurisdiction::{Location, NecEdition};
use crate::nec::units::Edition;
use crate::project::MemberRole;
use crate::store::StoreError;

pub use project::use_or_create_project;
pub(super) use project::{create_project, created, set_site, SET_REFUSED};
pub use tools::run_tool_once;

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

/// Who runs a command, and where: what every command's handler reads.
struct Caller<'a> {
    agent: &'a Agent,
    key: &'a SessionKey,
    user: &'a str,
    /// The project the channel of `key` is bound to.
    bound: Option<i64>,
}

/// One handler per command group: `project` ([`project`]), roles ([`members`]), `audit`
/// ([`audit`]) and the tool commands ([`tools`]).
async fn run(
    agent: &Agent,
    key: &SessionKey,
    user: &str,
    command: Command,
) -> Result<CommandOutput, StoreError> {
    let bound = agent
        .store()
        .channel_project(&key.platform, &key.workspace, &key.channel)
        .await?;
    let at = Caller {
        agent,
        key,
        user,
        bound,
    };
    match command {
        Command::Help => Ok(CommandOutput::ok(
            help_text(),
            json!({"type": "help", "text": help_text()}),
        )),
        Command::ProjectCreate { name, edition } => project::create(&at, &name, edition).await,
        Command::ProjectForm(_) => Ok(CommandOutput::err(PROJECT_USAGE)),
        Command::ProjectUse { name } => project::use_named(&at, &name).await,
        Command::ProjectList => project::list(&at).await,
        Command::ProjectShow => project::show(&at, false).await,
        Command::ProjectExport => project::show(&at, true).await,
        Command::ProjectCode => project::code(&at).await,
        Command::ProjectSetLocation { .. }
        | Command::ProjectSetEdition { .. }
        | Command::ProjectSetPermitDate { .. } => project::set(&at, command).await,
        Command::ProjectMembers => members::list(&at).await,
        Command::ProjectGrant { user: who, role } => members::grant(&at, &who, role).await,
        Command::ProjectRevoke { user: who } => members::revoke(&at, &who).await,
        Command::Audit { project, limit } => audit::run(&at, project, limit).await,
        Command::Tools => Ok(tools::list(agent)),
        Command::Tool { name, args } => Ok(tools::tool(&at, &name, &args).await),
        Command::Search { query } => tools::search(&at, &query).await,
        Command::Report { kind, format } => Ok(tools::report(&at, &kind, format).await),
    }
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
