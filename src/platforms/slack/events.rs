//! Slack payloads to core inputs. Pure functions: no I/O, so they are checked directly
//! against recorded payloads.

use slack_morphism::prelude::*;

use super::thread::ThreadTarget;
use crate::config::SlackConfig;
use crate::core::allow::AllowList;
use crate::core::commands::Command;
use crate::core::session::{Mode, SessionKey};
use crate::core::{Input, InputAction};
use crate::platforms::render::{parse_button, ButtonAction};

/// Platform name in session keys and processed-event ids.
pub const PLATFORM: &str = "slack";

/// Which workspaces and channels the bot answers in: the core's allow-list, from `[slack]`.
pub type Gate = AllowList;

/// The gate configured in `[slack]`.
pub fn gate_from_config(cfg: &SlackConfig) -> Gate {
    AllowList {
        workspaces: cfg.allowed_workspaces.clone(),
        channels: cfg.allowed_channels.clone(),
        direct_messages: cfg.allow_direct_messages,
    }
}

/// Whether an event from `team` in `channel` may be answered (a `D…` channel is a direct
/// message).
pub fn allowed(gate: &Gate, team: &str, channel: &str) -> bool {
    let channel = (!is_direct(channel, None)).then_some((channel, None));
    gate.permits(Some(team), channel)
}

/// Direct-message channels have ids starting with `D` (and `channel_type` "im").
pub(super) fn is_direct(channel: &str, channel_type: Option<&str>) -> bool {
    channel_type == Some("im") || channel.starts_with('D')
}

/// What an inbound Slack payload asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Job {
    /// A conversation turn rendered into `target`.
    Turn {
        /// For the core.
        input: Input,
        /// Where replies go.
        target: ThreadTarget,
        /// Only when the thread already is a Sparky session (a plain reply in a channel
        /// thread that may have nothing to do with the bot).
        only_if_session: bool,
    },
    /// A slash command.
    Command(SlashCommand),
    /// A click on a card's Edit button: open its form (within Slack's 3 s for `trigger_id`).
    OpenEditForm {
        /// The click's trigger id, which `views.open` needs.
        trigger_id: String,
        /// The proposal.
        action_id: String,
        /// Team id.
        team: String,
        /// Who clicked (told privately when the form cannot open).
        user: String,
        /// The card's thread.
        target: ThreadTarget,
    },
    /// An assistant thread was opened (`assistant_thread_started`) or the channel its person
    /// views changed (`assistant_thread_context_changed`).
    Assistant {
        /// The thread: the app's direct-message channel and the thread's ts.
        key: SessionKey,
        /// Who opened it.
        user: String,
        /// The channel they view, when Slack named one that Sparky answers in.
        context_channel: Option<String>,
        /// Whether the thread was just opened (else its context changed).
        started: bool,
    },
    /// The person opened the app's Home tab.
    Home {
        /// Team id.
        team: String,
        /// Who opened it.
        user: String,
    },
    /// A button of the Home tab.
    HomeButton {
        /// Opens a modal within three seconds of the click.
        trigger_id: String,
        /// Team id.
        team: String,
        /// Who clicked.
        user: String,
        /// Which button.
        button: super::home::HomeButton,
    },
    /// A submitted project form.
    ProjectForm(super::project_form::Submission),
}

/// A `/sparky ...` invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlashCommand {
    /// Team id.
    pub team: String,
    /// Channel id.
    pub channel: String,
    /// Invoking user.
    pub user: String,
    /// Text after the command.
    pub text: String,
    /// Unique per invocation (used to de-duplicate redeliveries).
    pub trigger_id: String,
}

/// The bot's own user id as the event's authorizations state it.
pub fn bot_user_from(cb: &SlackPushEventCallback) -> Option<String> {
    cb.authorizations
        .iter()
        .flatten()
        .find(|a| a.is_bot == Some(true))
        .map(|a| a.user_id.0.clone())
}

/// Turns Slack's text back into what the person typed: the bot's mention removed and the
/// three escaped characters restored.
pub fn clean_text(text: &str, bot_user: Option<&str>) -> String {
    crate::core::mention::strip_bot(text, bot_user)
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
        .trim()
        .to_string()
}

fn key(team: &str, channel: &str, thread: &str) -> SessionKey {
    SessionKey::new(PLATFORM, team, channel, thread)
}

/// The job for an Events API callback, or `None` when Sparky has nothing to do with it
/// (its own messages, edits, joins, other bots, channels not allowed...).
pub fn job_from_push(
    cb: &SlackPushEventCallback,
    bot_user: Option<&str>,
    gate: &Gate,
) -> Option<Job> {
    let team = cb.team_id.0.as_str();
    let event_id = Some(cb.event_id.0.clone());
    match &cb.event {
        SlackEventCallbackBody::AppMention(e) => {
            let channel = e.channel.0.as_str();
            if Some(e.user.0.as_str()) == bot_user || !allowed(gate, team, channel) {
                return None;
            }
            let ts = e.origin.ts.0.clone();
            let thread = e
                .origin
                .thread_ts
                .as_ref()
                .map_or(ts.clone(), |t| t.0.clone());
            let text = clean_text(e.content.text.as_deref().unwrap_or(""), bot_user);
            let files = super::inbound_files::file_refs(e.content.files.as_deref().unwrap_or(&[]));
            Some(Job::Turn {
                input: Input {
                    key: key(team, channel, &thread),
                    user: e.user.0.clone(),
                    event_id,
                    action: InputAction::message(text, None, files),
                },
                target: ThreadTarget {
                    channel: channel.to_string(),
                    thread_ts: thread,
                    react_to: Some(ts),
                },
                only_if_session: false,
            })
        }
        SlackEventCallbackBody::Message(e) => {
            if e.sender.bot_id.is_some() {
                return None;
            }
            // Edits, deletions, joins and the like are not new input.
            if let Some(sub) = &e.subtype {
                if !matches!(
                    sub,
                    SlackMessageEventType::ThreadBroadcast | SlackMessageEventType::FileShare
                ) {
                    return None;
                }
            }
            let user = e.sender.user.as_ref()?.0.clone();
            let channel = e.origin.channel.as_ref()?.0.clone();
            if Some(user.as_str()) == bot_user || !allowed(gate, team, &channel) {
                return None;
            }
            let raw = e
                .content
                .as_ref()
                .and_then(|c| c.text.as_deref())
                .unwrap_or("");
            let text = clean_text(raw, bot_user);
            let files = super::inbound_files::file_refs(
                e.content
                    .as_ref()
                    .and_then(|c| c.files.as_deref())
                    .unwrap_or(&[]),
            );
            if text.is_empty() && files.is_empty() {
                return None;
            }
            let ts = e.origin.ts.0.clone();
            let thread_ts = e.origin.thread_ts.as_ref().map(|t| t.0.clone());
            let direct = is_direct(
                &channel,
                e.origin.channel_type.as_ref().map(|t| t.0.as_str()),
            );
            if !direct {
                // Top-level channel messages reach Sparky only as app_mention; a mention in a
                // thread also arrives as app_mention, so the plain copy is skipped here.
                let Some(thread_ts) = &thread_ts else {
                    return None;
                };
                if thread_ts == &ts {
                    return None;
                }
                if bot_user.is_some_and(|b| raw.contains(&format!("<@{b}>"))) {
                    return None;
                }
            }
            let thread = thread_ts.unwrap_or_else(|| ts.clone());
            Some(Job::Turn {
                input: Input {
                    key: key(team, &channel, &thread),
                    user,
                    event_id,
                    action: InputAction::message(text, None, files),
                },
                target: ThreadTarget {
                    channel,
                    thread_ts: thread,
                    react_to: Some(ts),
                },
                only_if_session: !direct,
            })
        }
        SlackEventCallbackBody::AssistantThreadStarted(SlackAssistantThreadStartedEvent {
            assistant_thread: t,
            ..
        })
        | SlackEventCallbackBody::AssistantThreadContextChanged(
            SlackAssistantThreadContextChangedEvent {
                assistant_thread: t,
                ..
            },
        ) => {
            let started = matches!(cb.event, SlackEventCallbackBody::AssistantThreadStarted(_));
            assistant_job(team, t, started, bot_user, gate)
        }
        SlackEventCallbackBody::AppHomeOpened(e) => {
            // The Messages and About tabs have nothing to publish.
            if e.tab.as_deref() != Some("home") || !gate.workspace_allowed(team) {
                return None;
            }
            Some(Job::Home {
                team: team.to_string(),
                user: e.user.0.clone(),
            })
        }
        _ => None,
    }
}

/// The job for an assistant thread's event: the thread lives in the app's direct-message
/// channel (the direct-message switch applies); its context channel counts only when Sparky
/// answers in it.
fn assistant_job(
    team: &str,
    t: &SlackAssistantThread,
    started: bool,
    bot_user: Option<&str>,
    gate: &Gate,
) -> Option<Job> {
    let user = t.user_id.0.as_str();
    let channel = t.channel_id.0.as_str();
    if Some(user) == bot_user || !is_direct(channel, None) || !allowed(gate, team, channel) {
        return None;
    }
    let context_channel = t
        .context
        .channel_id
        .as_ref()
        .map(|c| c.0.clone())
        .filter(|c| !c.is_empty() && allowed(gate, team, c));
    Some(Job::Assistant {
        key: key(team, channel, &t.thread_ts.0),
        user: user.to_string(),
        context_channel,
        started,
    })
}

/// The job for a Confirm / Cancel click or a Home tab button, or `None` for other
/// interactions.
pub fn job_from_interaction(event: &SlackInteractionEvent, gate: &Gate) -> Option<Job> {
    let SlackInteractionEvent::BlockActions(e) = event else {
        return None;
    };
    let team = e.team.id.0.as_str();
    let user = e.user.as_ref()?.id.0.clone();
    if matches!(e.container, SlackInteractionActionContainer::View(_)) {
        if !gate.workspace_allowed(team) {
            return None;
        }
        let button = e
            .actions
            .iter()
            .flatten()
            .find_map(|a| super::home::HomeButton::parse(&a.action_id.0, a.value.as_deref()))?;
        return Some(Job::HomeButton {
            trigger_id: e.trigger_id.0.clone(),
            team: team.to_string(),
            user,
            button,
        });
    }
    let (button, action) = e
        .actions
        .iter()
        .flatten()
        .find_map(|a| parse_button(&a.action_id.0).map(|b| (b, a)))?;
    let (container_channel, message_ts) = match &e.container {
        SlackInteractionActionContainer::Message(m) => (
            m.channel_id.as_ref().map(|c| c.0.clone()),
            m.message_ts.0.clone(),
        ),
        _ => return None,
    };
    let channel = e
        .channel
        .as_ref()
        .map(|c| c.id.0.clone())
        .or(container_channel)?;
    if !allowed(gate, team, &channel) {
        return None;
    }
    let thread = e
        .message
        .as_ref()
        .and_then(|m| m.origin.thread_ts.as_ref())
        .map_or(message_ts, |t| t.0.clone());
    // One click has one trigger id; a redelivered click carries the same one.
    let event_id = Some(format!(
        "click:{}:{}",
        e.trigger_id.0,
        action
            .action_ts
            .as_ref()
            .map(|t| t.0.as_str())
            .unwrap_or("")
    ));
    let target = ThreadTarget {
        channel: channel.clone(),
        thread_ts: thread.clone(),
        react_to: None,
    };
    let action = match button {
        ButtonAction::Edit(action_id) => {
            return Some(Job::OpenEditForm {
                trigger_id: e.trigger_id.0.clone(),
                action_id,
                team: team.to_string(),
                user,
                target,
            })
        }
        other => other.input()?,
    };
    Some(Job::Turn {
        input: Input {
            key: key(team, &channel, &thread),
            user,
            event_id,
            action,
        },
        target,
        only_if_session: false,
    })
}

/// The job for a slash command, or `None` when the channel is not allowed.
pub fn job_from_command(cmd: &SlackCommandEvent, gate: &Gate) -> Option<Job> {
    if !allowed(gate, &cmd.team_id.0, &cmd.channel_id.0) {
        return None;
    }
    Some(Job::Command(SlashCommand {
        team: cmd.team_id.0.clone(),
        channel: cmd.channel_id.0.clone(),
        user: cmd.user_id.0.clone(),
        text: cmd.text.clone().unwrap_or_default(),
        trigger_id: cmd.trigger_id.0.clone(),
    }))
}

/// What the text after `/sparky` asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum SlashAction {
    /// Start a conversation with this text (in this mode).
    Ask {
        /// The question or description.
        text: String,
        /// Mode of the new session.
        mode: Option<Mode>,
    },
    /// A platform-neutral command.
    Run(Command),
    /// The text was not understood: this usage line.
    Usage(String),
}

/// Parses the text after `/sparky`: `ask Q`, `spec load|source [TEXT]`, any command of the
/// core's table (`project ...`, `search Q`, `tools`, `tool NAME {json}`, `audit`…), `help`;
/// anything else is a question.
pub fn parse_slash(text: &str) -> SlashAction {
    let text = text.trim();
    let (head, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let rest = rest.trim();
    match head.to_ascii_lowercase().as_str() {
        "" | "help" => SlashAction::Run(Command::Help),
        "ask" if rest.is_empty() => SlashAction::Usage("usage: /sparky ask QUESTION".into()),
        "ask" => SlashAction::Ask {
            text: rest.to_string(),
            mode: None,
        },
        "spec" => {
            let (sub, what) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            match sub.parse::<Mode>() {
                Ok(mode @ (Mode::Load | Mode::Source)) => SlashAction::Ask {
                    text: crate::core::commands::spec_opening(mode, Some(what)),
                    mode: Some(mode),
                },
                _ => SlashAction::Usage("usage: /sparky spec load|source [what you have]".into()),
            }
        }
        // Every other command of the core's table (`project`, `search`, `report`, `audit`…).
        word if is_command(word) => match text.parse::<Command>() {
            Ok(c) => SlashAction::Run(c),
            Err(e) => SlashAction::Usage(e),
        },
        _ => SlashAction::Ask {
            text: text.to_string(),
            mode: None,
        },
    }
}

/// Whether `word` starts one of the core's commands.
fn is_command(word: &str) -> bool {
    crate::core::commands::COMMAND_LIST
        .iter()
        .any(|c| c.split(' ').next() == Some(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slash_text_parses() {
        assert_eq!(parse_slash(""), SlashAction::Run(Command::Help));
        assert_eq!(
            parse_slash("spec load Dometic CFX3 45 fridge"),
            SlashAction::Ask {
                text: "Dometic CFX3 45 fridge".into(),
                mode: Some(Mode::Load)
            }
        );
        assert!(matches!(
            parse_slash("spec general x"),
            SlashAction::Usage(_)
        ));
        assert_eq!(
            parse_slash("project use Shop"),
            SlashAction::Run(Command::ProjectUse {
                name: "Shop".into()
            })
        );
        assert_eq!(
            parse_slash("search 250.122"),
            SlashAction::Run(Command::Search {
                query: "250.122".into()
            })
        );
        assert_eq!(
            parse_slash("what size EGC for 60 A?"),
            SlashAction::Ask {
                text: "what size EGC for 60 A?".into(),
                mode: None
            }
        );
    }

    #[test]
    fn gate_applies_lists() {
        let g = Gate {
            workspaces: vec!["T1".into()],
            channels: vec!["C1".into()],
            direct_messages: false,
        };
        assert!(allowed(&g, "T1", "C1"));
        assert!(!allowed(&g, "T1", "C2"));
        assert!(!allowed(&g, "T2", "C1"));
        assert!(!allowed(&g, "T1", "D1"));
        assert!(allowed(
            &Gate {
                direct_messages: true,
                ..Gate::default()
            },
            "T9",
            "D1"
        ));
    }

    #[test]
    fn mentions_are_removed_and_entities_restored() {
        assert_eq!(
            clean_text("<@U1> is 5 &lt; 6 &amp; 7?", Some("U1")),
            "is 5 < 6 & 7?"
        );
        assert_eq!(clean_text("<@U1> hi", None), "hi");
    }
}
