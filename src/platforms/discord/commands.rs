//! The `/sparky` slash command: its definition (typed options) and its translation into what
//! the core understands (a message with a mode, or a platform-neutral [`Command`]).

use serenity::all::{
    CommandData, CommandDataOptionValue, CommandOptionType, CommandType, CreateCommand,
    CreateCommandOption, Permissions, ResolvedOption, ResolvedTarget, ResolvedValue,
};

use crate::core::commands::Command;
use crate::core::session::Mode;
use crate::core::suggest::Suggest;
use crate::nec::units::Edition;
use crate::project::MemberRole;

/// Name of the one top-level command.
pub const COMMAND_NAME: &str = "sparky";
/// Name of the message context-menu command (right-click a message → Apps).
pub const ASK_ABOUT_MESSAGE: &str = "Ask Sparky";
/// The longest message text a context-menu question quotes.
const MAX_QUOTED: usize = 1500;

/// Who sees the commands by default: members who may post. Discord sets permissions per
/// top-level command, not per sub-command, so the commands that change a project (`project
/// grant|revoke|set`) are gated by the project's roles in the core, whatever a server's admins
/// set here.
fn members_who_post() -> Permissions {
    Permissions::SEND_MESSAGES
}

/// Every command Sparky registers with Discord.
pub fn definitions() -> Vec<CreateCommand> {
    vec![definition(), message_command()]
}

/// "Ask Sparky" on a message: starts a thread about that message.
pub fn message_command() -> CreateCommand {
    CreateCommand::new(ASK_ABOUT_MESSAGE)
        .kind(CommandType::Message)
        .default_member_permissions(members_who_post())
}

/// The question a context-menu use asks: the message's text, quoted, with its author. `Err`
/// says why there is nothing to ask about.
pub fn about_message(data: &CommandData) -> Result<Slash, String> {
    let Some(ResolvedTarget::Message(m)) = data.target() else {
        return Err("Use this on a message.".into());
    };
    let text = m.content.trim();
    if text.is_empty() {
        return Err("That message has no text to ask about.".into());
    }
    let mut quoted: String = text.chars().take(MAX_QUOTED).collect();
    if text.chars().count() > MAX_QUOTED {
        quoted.push('…');
    }
    let quoted = quoted
        .lines()
        .map(|l| format!("> {l}"))
        .collect::<Vec<_>>()
        .join("\n");
    Ok(Slash::Ask {
        question: format!("About this message by <@{}>:\n{quoted}", m.author.id),
        mode: None,
    })
}

/// A `/sparky` invocation, translated.
#[derive(Debug, Clone, PartialEq)]
pub enum Slash {
    /// Ask a question: starts a thread and a session (or continues the thread it is used in).
    Ask {
        /// The question.
        question: String,
        /// Session mode, default general.
        mode: Option<Mode>,
    },
    /// Start the spec assistant for loads or charging sources.
    Spec {
        /// Load or Source.
        mode: Mode,
        /// Equipment described in the command, if any.
        equipment: Option<String>,
    },
    /// Search the code and the team's documents.
    Search {
        /// What to look for.
        question: String,
    },
    /// A platform-neutral command (project, tool(s), help).
    Run(Command),
}

fn text(name: &str, description: &str, required: bool) -> CreateCommandOption {
    CreateCommandOption::new(CommandOptionType::String, name, description)
        .required(required)
        .max_length(if name == "args" { 4000 } else { 1800 })
}

fn person() -> CreateCommandOption {
    CreateCommandOption::new(CommandOptionType::User, "user", "The person").required(true)
}

fn user<'a>(opts: &'a [ResolvedOption<'a>]) -> Result<String, String> {
    opts.iter()
        .find_map(|o| match o.value {
            ResolvedValue::User(u, _) if o.name == "user" => Some(u.id.to_string()),
            _ => None,
        })
        .ok_or_else(|| "the option `user` is required".to_string())
}

fn sub(name: &str, description: &str) -> CreateCommandOption {
    CreateCommandOption::new(CommandOptionType::SubCommand, name, description)
}

/// The definition of `/sparky` and its sub-commands, as registered with Discord.
pub fn definition() -> CreateCommand {
    let mode = text("mode", "Conversation mode", false)
        .add_string_choice("general", "general")
        .add_string_choice("load (spec assistant)", "load")
        .add_string_choice("source (spec assistant)", "source");
    let edition = text("edition", "NEC edition (default 2023)", false)
        .add_string_choice("NEC 2017", "2017")
        .add_string_choice("NEC 2020", "2020")
        .add_string_choice("NEC 2023", "2023");
    CreateCommand::new(COMMAND_NAME)
        .description("NEC compliance copilot")
        .default_member_permissions(members_who_post())
        .add_option(
            sub("ask", "Ask a question; starts a thread")
                .add_sub_option(text("question", "Your question", true))
                .add_sub_option(mode),
        )
        .add_option(
            CreateCommandOption::new(CommandOptionType::SubCommandGroup, "spec", "Spec assistant")
                .add_sub_option(
                    sub("load", "Describe equipment that uses power").add_sub_option(text(
                        "equipment",
                        "e.g. Dometic CFX3 45 fridge",
                        false,
                    )),
                )
                .add_sub_option(
                    sub("source", "Describe a charging source").add_sub_option(text(
                        "equipment",
                        "e.g. 400 W solar array",
                        false,
                    )),
                ),
        )
        .add_option(
            CreateCommandOption::new(
                CommandOptionType::SubCommandGroup,
                "project",
                "The channel's project",
            )
            .add_sub_option(
                sub(
                    "create",
                    "Create a project and bind this channel to it (no name: a form)",
                )
                .add_sub_option(text("name", "Project name", false))
                    .add_sub_option(edition),
            )
            .add_sub_option(
                sub("use", "Bind this channel to a project")
                    .add_sub_option(text("name", "Project name", true).set_autocomplete(true)),
            )
            .add_sub_option(sub("show", "Show the bound project"))
            .add_sub_option(sub("export", "Export the bound project as JSON"))
            .add_sub_option(sub("list", "List this server's projects"))
            .add_sub_option(sub("members", "Who has which role in the bound project"))
            .add_sub_option(
                sub(
                    "grant",
                    "Give a person a role in the bound project (owners only)",
                )
                .add_sub_option(person())
                .add_sub_option(
                    text("role", "The role", true)
                        .add_string_choice("viewer", "viewer")
                        .add_string_choice("editor", "editor")
                        .add_string_choice("owner", "owner"),
                ),
            )
            .add_sub_option(
                sub("revoke", "Take a person's role away (owners only)").add_sub_option(person()),
            )
            .add_sub_option(
                sub(
                    "set",
                    "Where the job is and which code applies (owners only; no options: a form)",
                )
                .add_sub_option(
                    text("what", "What to set", false)
                        .add_string_choice("location: STATE[, COUNTY County][, CITY]", "location")
                        .add_string_choice("edition override: YEAR or auto", "edition")
                        .add_string_choice("permit date: YYYY-MM-DD or today", "permit"),
                )
                .add_sub_option(text("value", "The value", false).set_autocomplete(true)),
            )
            .add_sub_option(sub("code", "Which NEC edition applies here, and why")),
        )
        .add_option(
            sub("search", "Search the code and the team's documents").add_sub_option(text(
                "question",
                "What to look for",
                true,
            )),
        )
        .add_option(
            sub("tool", "Run a tool directly")
                .add_sub_option(
                    text("name", "Tool name (see /sparky tools)", true).set_autocomplete(true),
                )
                .add_sub_option(text(
                    "args",
                    "Arguments as JSON, e.g. {\"expression\": \"2*3\"}",
                    false,
                )),
        )
        .add_option(
            sub("report", "A document of the project as a file (PDF or PNG)")
                .add_sub_option(
                    text("document", "Which document", true)
                        .add_string_choice("panel schedule", "panel")
                        .add_string_choice("inspection report", "inspection")
                        .add_string_choice("service load calculation", "load")
                        .add_string_choice("energy budget", "energy"),
                )
                .add_sub_option(
                    text("panel", "Panel name (panel schedule)", false).set_autocomplete(true),
                )
                .add_sub_option(
                    text("format", "File format (default PDF)", false)
                        .add_string_choice("PDF", "pdf")
                        .add_string_choice("PNG", "png"),
                ),
        )
        .add_option(
            sub(
                "audit",
                "The latest changes of a project: who asked, who confirmed, what, when (only you see it)",
            )
            .add_sub_option(
                text("project", "Project name (default: this channel's)", false)
                    .set_autocomplete(true),
            )
            .add_sub_option(
                CreateCommandOption::new(CommandOptionType::Integer, "count", "How many changes")
                    .min_int_value(1)
                    .max_int_value(crate::core::audit_log::MAX_LINES as u64),
            ),
        )
        .add_option(sub("tools", "List the tools"))
        .add_option(sub("help", "How to use Sparky"))
}

/// The option a person is typing into, and what they typed, when it names something Sparky can
/// offer (a project, panel, tool or state).
pub fn autocomplete_target(data: &CommandData) -> Option<(Suggest, String)> {
    let mut path = Vec::new();
    let mut options = &data.options;
    while let Some((name, inner)) = options.iter().find_map(|o| match &o.value {
        CommandDataOptionValue::SubCommand(v) | CommandDataOptionValue::SubCommandGroup(v) => {
            Some((o.name.as_str(), v))
        }
        _ => None,
    }) {
        path.push(name);
        options = inner;
    }
    let (focused, typed) = options.iter().find_map(|o| match &o.value {
        CommandDataOptionValue::Autocomplete { value, .. } => Some((o.name.as_str(), value)),
        _ => None,
    })?;
    let what = options.iter().find_map(|o| match &o.value {
        CommandDataOptionValue::String(s) if o.name == "what" => Some(s.as_str()),
        _ => None,
    });
    let kind = match (path.as_slice(), focused) {
        (["project", "use"], "name") => Suggest::Project,
        (["tool"], "name") => Suggest::Tool,
        (["report"], "panel") => Suggest::Panel,
        (["audit"], "project") => Suggest::AuditedProject,
        (["project", "set"], "value") if what == Some("location") => Suggest::State,
        _ => return None,
    };
    Some((kind, typed.clone()))
}

fn string<'a>(opts: &'a [ResolvedOption<'a>], name: &str) -> Option<&'a str> {
    opts.iter()
        .find(|o| o.name == name)
        .and_then(|o| match o.value {
            ResolvedValue::String(s) => Some(s.trim()).filter(|s| !s.is_empty()),
            _ => None,
        })
}

fn required<'a>(opts: &'a [ResolvedOption<'a>], name: &str) -> Result<&'a str, String> {
    string(opts, name).ok_or_else(|| format!("the option `{name}` is required"))
}

/// Translates the options of `/sparky` (serenity's resolved form).
pub fn parse(options: &[ResolvedOption<'_>]) -> Result<Slash, String> {
    let Some(first) = options.first() else {
        return Err("use a sub-command, e.g. `/sparky ask`".into());
    };
    match (first.name, &first.value) {
        ("ask", ResolvedValue::SubCommand(o)) => Ok(Slash::Ask {
            question: required(o, "question")?.to_string(),
            mode: string(o, "mode").map(str::parse::<Mode>).transpose()?,
        }),
        ("search", ResolvedValue::SubCommand(o)) => Ok(Slash::Search {
            question: required(o, "question")?.to_string(),
        }),
        ("tool", ResolvedValue::SubCommand(o)) => Ok(Slash::Run(Command::Tool {
            name: required(o, "name")?.to_string(),
            args: string(o, "args").unwrap_or("{}").to_string(),
        })),
        ("report", ResolvedValue::SubCommand(o)) => Ok(Slash::Run(Command::Report {
            kind: crate::report::ReportKind::parse(required(o, "document")?, string(o, "panel"))
                .map_err(|e| e.to_string())?,
            format: string(o, "format")
                .unwrap_or("pdf")
                .parse()
                .map_err(|e: crate::report::ReportError| e.to_string())?,
        })),
        ("audit", ResolvedValue::SubCommand(o)) => Ok(Slash::Run(Command::Audit {
            project: string(o, "project").map(str::to_string),
            limit: o
                .iter()
                .find_map(|x| match x.value {
                    ResolvedValue::Integer(n) if x.name == "count" => usize::try_from(n).ok(),
                    _ => None,
                })
                .unwrap_or(crate::core::audit_log::DEFAULT_LINES),
        })),
        ("tools", _) => Ok(Slash::Run(Command::Tools)),
        ("help", _) => Ok(Slash::Run(Command::Help)),
        ("spec", ResolvedValue::SubCommandGroup(g)) => {
            let Some(s) = g.first() else {
                return Err("use `/sparky spec load` or `/sparky spec source`".into());
            };
            let o: &[ResolvedOption<'_>] = match &s.value {
                ResolvedValue::SubCommand(o) => o,
                _ => &[],
            };
            let mode = match s.name {
                "load" => Mode::Load,
                "source" => Mode::Source,
                other => return Err(format!("unknown spec kind `{other}`")),
            };
            Ok(Slash::Spec {
                mode,
                equipment: string(o, "equipment").map(str::to_string),
            })
        }
        ("project", ResolvedValue::SubCommandGroup(g)) => {
            let Some(s) = g.first() else {
                return Err(
                    "use `/sparky project create|use|show|export|list|members|grant|revoke`".into(),
                );
            };
            let o: &[ResolvedOption<'_>] = match &s.value {
                ResolvedValue::SubCommand(o) => o,
                _ => &[],
            };
            let cmd = match s.name {
                // Without options: the form (the core decides it, as for typed text).
                "create" | "set"
                    if ["name", "what", "value"]
                        .iter()
                        .all(|n| string(o, n).is_none()) =>
                {
                    format!("project {}", s.name).parse::<Command>()?
                }
                "create" => Command::ProjectCreate {
                    name: required(o, "name")?.to_string(),
                    edition: match string(o, "edition") {
                        Some(e) => e.parse::<Edition>().map_err(|e| e.to_string())?,
                        None => Edition::default(),
                    },
                },
                "use" => Command::ProjectUse {
                    name: required(o, "name")?.to_string(),
                },
                "show" => Command::ProjectShow,
                "export" => Command::ProjectExport,
                "list" => Command::ProjectList,
                "members" => Command::ProjectMembers,
                "grant" => Command::ProjectGrant {
                    user: user(o)?,
                    role: MemberRole::parse(required(o, "role")?)
                        .ok_or("the role is viewer, editor or owner")?,
                },
                "revoke" => Command::ProjectRevoke { user: user(o)? },
                "code" => Command::ProjectCode,
                // The core parses the value, so every front end reads it the same way.
                "set" => format!(
                    "project set {} {}",
                    required(o, "what")?,
                    required(o, "value")?
                )
                .parse::<Command>()?,
                other => return Err(format!("unknown project sub-command `{other}`")),
            };
            Ok(Slash::Run(cmd))
        }
        (other, _) => Err(format!("unknown sub-command `{other}`; try `/sparky help`")),
    }
}

pub use crate::core::commands::spec_opening;

#[cfg(test)]
mod tests {
    use super::*;
    use serenity::all::CommandData;

    fn data(options: serde_json::Value) -> CommandData {
        serde_json::from_value(serde_json::json!({
            "id": "771825006014889984", "name": "sparky", "type": 1, "options": options
        }))
        .unwrap()
    }

    #[test]
    fn ask_with_mode() {
        let d = data(serde_json::json!([{"type": 1, "name": "ask", "options": [
            {"type": 3, "name": "question", "value": "What size EGC for 60 A?"},
            {"type": 3, "name": "mode", "value": "load"}
        ]}]));
        assert_eq!(
            parse(&d.options()).unwrap(),
            Slash::Ask {
                question: "What size EGC for 60 A?".into(),
                mode: Some(Mode::Load)
            }
        );
    }

    #[test]
    fn project_group_maps_to_core_commands() {
        let d = data(
            serde_json::json!([{"type": 2, "name": "project", "options": [
                {"type": 1, "name": "create", "options": [
                    {"type": 3, "name": "name", "value": "Shop"}, {"type": 3, "name": "edition", "value": "2020"}
                ]}
            ]}]),
        );
        assert_eq!(
            parse(&d.options()).unwrap(),
            Slash::Run(Command::ProjectCreate {
                name: "Shop".into(),
                edition: Edition::Nec2020
            })
        );
        for (sub, kind) in [
            ("create", crate::core::project_form::FormKind::Create),
            ("set", crate::core::project_form::FormKind::Set),
        ] {
            let d = data(
                serde_json::json!([{"type": 2, "name": "project", "options": [
                    {"type": 1, "name": sub, "options": []}
                ]}]),
            );
            assert_eq!(
                parse(&d.options()).unwrap(),
                Slash::Run(Command::ProjectForm(kind)),
                "{sub} without options opens the form"
            );
        }
        let d = data(
            serde_json::json!([{"type": 2, "name": "spec", "options": [{"type": 1, "name": "source", "options": []}]}]),
        );
        assert_eq!(
            parse(&d.options()).unwrap(),
            Slash::Spec {
                mode: Mode::Source,
                equipment: None
            }
        );
    }

    #[test]
    fn grant_takes_a_picked_user_and_a_role() {
        let mut d = data(
            serde_json::json!([{"type": 2, "name": "project", "options": [
                {"type": 1, "name": "grant", "options": [
                    {"type": 6, "name": "user", "value": "80351110224678912"},
                    {"type": 3, "name": "role", "value": "editor"}
                ]}
            ]}]),
        );
        d.resolved.users.insert(
            serenity::all::UserId::new(80351110224678912),
            serde_json::from_value(serde_json::json!({
                "id": "80351110224678912", "username": "nelly", "discriminator": "1337",
                "avatar": null, "global_name": "Nelly"
            }))
            .unwrap(),
        );
        assert_eq!(
            parse(&d.options()).unwrap(),
            Slash::Run(Command::ProjectGrant {
                user: "80351110224678912".into(),
                role: MemberRole::Editor
            })
        );
        let d = data(
            serde_json::json!([{"type": 2, "name": "project", "options": [
                {"type": 1, "name": "grant", "options": [{"type": 3, "name": "role", "value": "editor"}]}
            ]}]),
        );
        assert!(parse(&d.options()).unwrap_err().contains("user"));
    }

    #[test]
    fn missing_options_are_explained() {
        let d = data(serde_json::json!([{"type": 1, "name": "ask", "options": []}]));
        assert!(parse(&d.options()).unwrap_err().contains("question"));
        assert!(parse(&[]).is_err());
    }

    #[test]
    fn the_definition_serializes_with_every_sub_command() {
        let v = serde_json::to_value(definition()).unwrap();
        let names: Vec<&str> = v["options"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|o| o["name"].as_str())
            .collect();
        for n in [
            "ask", "spec", "project", "search", "tool", "audit", "tools", "help",
        ] {
            assert!(names.contains(&n), "{n} missing in {names:?}");
        }
    }
}
