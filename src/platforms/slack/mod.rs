//! The Slack adapter (slack-morphism): Socket Mode or the HTTP Events API, chosen by
//! `slack.transport`. It translates Slack payloads into core inputs and renders core effects
//! into a thread through the shared [`SurfaceSink`]; every decision stays in the core.
//!
//! * [`run`] connects over Socket Mode until `shutdown` resolves.
//! * [`events_router`] is the HTTP endpoint (`/slack/events`, `/slack/commands`,
//!   `/slack/interactivity`; any of them accepts any kind) for `serve` to mount.
//!
//! Every inbound payload is acknowledged at once and handled afterwards in a task.
//!
//! Besides channel threads, the assistant surface (Agents & AI Apps: [`assistant`]) and the
//! App Home tab ([`home`]) feed the same core.

mod assistant;
pub mod events;
mod files;
pub mod forms;
pub mod home;
mod http;
pub mod inbound_files;
pub mod mrkdwn;
pub mod project_form;
pub mod signature;
mod socket;
pub mod thread;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OnceCell;

use crate::config::{Config, SlackConfig};
use crate::core::addressing::Place;
use crate::core::commands::{self, Command};
use crate::core::ledger::InputKind;
use crate::core::project_form::FormKind;
use crate::core::session::SessionKey;
use crate::core::{Agent, Effect, EffectSink, Input, InputAction};
use crate::platforms::surface::SurfaceSink;

pub use events::{Gate, Job, SlashAction, SlashCommand, PLATFORM};
pub use http::{events_router, events_service};
pub use socket::{run, run_linked};
pub use thread::{SlackApi, SlackThread, StreamRecipient, ThreadTarget};

/// Why the Slack adapter could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum SlackError {
    /// Missing or inconsistent configuration.
    #[error("Slack is not configured correctly: {0}")]
    Config(String),
    /// Slack refused the credentials or the connection.
    #[error("Slack API error: {0}")]
    Api(String),
}

/// What the person is told when the message a slash command's thread hangs under could not
/// be posted: the cause Slack gave, and only that (an invitation only when the bot is not in
/// the channel).
fn header_refused(e: &crate::platforms::surface::SurfaceError) -> &'static str {
    use crate::platforms::surface::SurfaceError;
    match e {
        SurfaceError::RateLimited(_) => {
            "Slack is limiting how fast I may post right now, so I could not start a thread for this. Try again in a minute."
        }
        SurfaceError::Failed(m) if m.contains("not_in_channel") || m.contains("channel_not_found") => {
            "I could not post in this channel. Invite me with `/invite @Sparky` and try again."
        }
        SurfaceError::Failed(_) => {
            "Slack did not accept my message in this channel, so I could not start a thread for this. Try again later."
        }
    }
}

/// Handlers still running (the core's one type, shared by every platform).
pub use crate::core::inflight::InFlight;

/// What every handler shares.
pub(crate) struct Shared {
    agent: Arc<Agent>,
    api: Arc<SlackApi>,
    cfg: SlackConfig,
    gate: Gate,
    bot_user: OnceCell<Option<String>>,
    inflight: InFlight,
    /// Whether Slack's streaming API is (still) used; cleared on its first refusal.
    streaming: Arc<AtomicBool>,
}

impl Shared {
    fn new(agent: Arc<Agent>, config: &Config) -> Result<Arc<Self>, SlackError> {
        let token = config
            .secrets
            .slack_bot_token
            .as_ref()
            .ok_or_else(|| SlackError::Config("SLACK_BOT_TOKEN is not set".into()))?;
        Ok(Arc::new(Self {
            inflight: InFlight::of(&agent),
            agent,
            api: Arc::new(SlackApi::new(&config.slack.api_base_url, token.expose())),
            gate: events::gate_from_config(&config.slack),
            cfg: config.slack.clone(),
            bot_user: OnceCell::new(),
            streaming: Arc::new(AtomicBool::new(config.slack.streaming)),
        }))
    }

    /// The bot's user id: from the event when it says, else `auth.test` once.
    async fn bot_user(&self, from_event: Option<String>) -> Option<String> {
        if from_event.is_some() {
            return from_event;
        }
        self.bot_user
            .get_or_init(|| async {
                match self.api.bot_user_id().await {
                    Ok(id) => Some(id),
                    Err(e) => {
                        tracing::warn!(error = %e, "auth.test failed; the bot's own id is unknown");
                        None
                    }
                }
            })
            .await
            .clone()
    }

    fn thread(&self, target: ThreadTarget) -> SlackThread {
        SlackThread::new(
            self.api.clone(),
            target,
            Duration::from_millis(self.cfg.edit_interval_ms),
            &self.cfg.working_reaction,
        )
    }

    /// Handles a push event after it was acknowledged.
    fn spawn_push(self: &Arc<Self>, cb: slack_morphism::prelude::SlackPushEventCallback) {
        let shared = self.clone();
        self.inflight.spawn(async move {
            let bot = shared.bot_user(events::bot_user_from(&cb)).await;
            if let Some(job) = events::job_from_push(&cb, bot.as_deref(), &shared.gate) {
                // A turn's event id is claimed by the core; these never reach it as inputs,
                // so a redelivery is recognised here.
                let outside_the_core = matches!(job, Job::Assistant { .. } | Job::Home { .. });
                if outside_the_core
                    && !shared
                        .agent
                        .ledger()
                        .first_delivery(PLATFORM, InputKind::Event, &cb.event_id.0)
                        .await
                {
                    return;
                }
                shared.process(job).await;
            }
        });
    }

    /// Handles a job after the payload was acknowledged.
    fn spawn_job(self: &Arc<Self>, job: Job) {
        let shared = self.clone();
        self.inflight
            .spawn(async move { shared.process(job).await });
    }

    async fn process(&self, job: Job) {
        match job {
            Job::Turn {
                input,
                target,
                only_if_session,
            } => {
                // A plain thread reply: the core's rule says whether it is for Sparky.
                let place = Place::Thread {
                    started_by_sparky: false,
                };
                if only_if_session && !self.agent.belongs(&input.key, place, false).await {
                    return;
                }
                self.turn(input, target).await;
            }
            Job::Command(cmd) => self.command(cmd).await,
            Job::OpenEditForm {
                trigger_id,
                action_id,
                team,
                user,
                target,
            } => {
                let note = match self.agent.edit_form(&action_id).await {
                    Ok(Some(form)) => {
                        let view = forms::edit_view(&form, &team, &target);
                        match self.api.open_modal(&trigger_id, view).await {
                            Ok(()) => return,
                            Err(e) => {
                                tracing::warn!(error = %e, "could not open the edit form");
                                "I could not open the form; type the correction in the thread instead."
                            }
                        }
                    }
                    Ok(None) => "This proposal cannot be edited any more (it was resolved, or it has several changes: type the correction in the thread).",
                    Err(e) => {
                        tracing::warn!(error = %e, "could not read the proposal to edit");
                        "I could not open the form; try again."
                    }
                };
                let _ = self
                    .api
                    .ephemeral(&target.channel, Some(&target.thread_ts), &user, note)
                    .await;
            }
            Job::Assistant {
                key,
                user,
                context_channel,
                started: true,
            } => self.assistant_started(key, user, context_channel).await,
            Job::Assistant {
                key,
                user,
                context_channel,
                started: false,
            } => self.assistant_context(key, user, context_channel).await,
            Job::Home { team, user } => self.publish_home(&team, &user).await,
            Job::HomeButton {
                trigger_id,
                team,
                user,
                button,
            } => self.home_button(&trigger_id, &team, &user, button).await,
            Job::ProjectForm(sub) => self.submit_project_form(sub).await,
        }
    }

    /// Whether `key` is an assistant thread (bound again to its context channel's project for
    /// the turn about to run); only a direct-message thread can be one.
    async fn is_assistant_thread(&self, key: &SessionKey) -> bool {
        if !events::is_direct(&key.channel, None) {
            return false;
        }
        match self.agent.assistant_turn(key).await {
            Ok(yes) => yes,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the assistant thread");
                false
            }
        }
    }

    async fn turn(&self, input: Input, target: ThreadTarget) {
        let assistant = self.is_assistant_thread(&input.key).await;
        // An assistant thread is titled after its first question.
        let question = match &input.action {
            InputAction::Message { text, .. } | InputAction::MessageWithFiles { text, .. }
                if assistant =>
            {
                Some((input.key.clone(), text.clone()))
            }
            _ => None,
        };
        let mut thread = self.thread(target);
        if assistant {
            thread = thread.in_assistant_thread();
        }
        if self.cfg.streaming {
            let recipient = StreamRecipient {
                team: input.key.workspace.clone(),
                user: input.user.clone(),
            };
            thread = thread.with_streaming(recipient, self.streaming.clone());
        }
        let sink = SurfaceSink::new(thread, self.agent.confirmation_cards(), self.agent.outbox());
        if let Err(e) = self.agent.handle(input, &sink).await {
            // Already shown to the user by the core.
            tracing::warn!(error = %e, "Slack turn ended with an error");
        }
        sink.surface().finish().await;
        if let Some((key, text)) = question {
            self.title_after(&key, &text).await;
        }
    }

    /// A slash command: a message in the channel that the answer threads under.
    async fn command(&self, cmd: SlashCommand) {
        // The header is posted before any input reaches the core, so the command itself is
        // checked against the core's ledger first.
        let ledger = self.agent.ledger();
        if !ledger
            .first_delivery(PLATFORM, InputKind::Command, &cmd.trigger_id)
            .await
        {
            return;
        }
        let action = events::parse_slash(&cmd.text);
        if let SlashAction::Run(c) = &action {
            if c.is_private() {
                return self.private_command(&cmd, c.clone()).await;
            }
            // Typed without arguments: the form, in a modal (no header, no thread).
            if let Command::ProjectForm(kind) = c {
                return match kind {
                    FormKind::Create => {
                        self.open_project_form(
                            &cmd.trigger_id,
                            &cmd.team,
                            &cmd.user,
                            None,
                            Some(&cmd.channel),
                        )
                        .await
                    }
                    FormKind::Set => self.open_channel_project_form(&cmd.trigger_id, &cmd).await,
                };
            }
        }
        let shown = if cmd.text.trim().is_empty() {
            self.cfg.slash_command.clone()
        } else {
            format!("{} {}", self.cfg.slash_command, cmd.text.trim())
        };
        let header = format!("<@{}> used `{}`", cmd.user, mrkdwn::escape(&shown));
        let blocks: Vec<slack_morphism::prelude::SlackBlock> = serde_json::from_value(serde_json::json!([{
            "type": "section", "text": {"type": "mrkdwn", "text": mrkdwn::truncate(&header, mrkdwn::SECTION_MAX)}
        }]))
        .unwrap_or_default();
        let ts = match self.api.post(&cmd.channel, None, &header, blocks).await {
            Ok(ts) => ts,
            Err(e) => {
                tracing::warn!(error = %e, channel = %cmd.channel, "could not post the command's header in the channel");
                let note = header_refused(&e);
                let _ = self
                    .api
                    .ephemeral(&cmd.channel, None, &cmd.user, note)
                    .await;
                return;
            }
        };
        let key = SessionKey::new(PLATFORM, &cmd.team, &cmd.channel, &ts);
        let target = ThreadTarget {
            channel: cmd.channel.clone(),
            thread_ts: ts.clone(),
            react_to: Some(ts),
        };
        match action {
            SlashAction::Ask { text, mode } => {
                let input = Input {
                    key,
                    user: cmd.user.clone(),
                    event_id: None,
                    action: InputAction::Message { text, mode },
                };
                self.turn(input, target).await;
            }
            // A tool command is an input of the thread: a write shows its card there.
            SlashAction::Run(Command::Tool { name, args }) => {
                let input = Input {
                    key,
                    user: cmd.user.clone(),
                    event_id: None,
                    action: InputAction::Tool { name, args },
                };
                self.turn(input, target).await;
            }
            SlashAction::Run(c) => {
                let fenced = matches!(c, Command::Help | Command::ProjectExport);
                let mut out = commands::execute(&self.agent, &key, &cmd.user, c).await;
                let files = std::mem::take(&mut out.files);
                let effect = if out.is_error {
                    Effect::Error { message: out.text }
                } else {
                    Effect::Text {
                        text: if fenced {
                            format!("```\n{}\n```", out.text)
                        } else {
                            out.text
                        },
                        citations: Vec::new(),
                    }
                };
                self.show(target.clone(), effect).await;
                for file in files {
                    self.show(target.clone(), Effect::File { file }).await;
                }
            }
            SlashAction::Usage(u) => self.show(target, Effect::Error { message: u }).await,
        }
    }

    /// A command whose answer only its caller sees: no header in the channel, no thread; the
    /// answer is an ephemeral message.
    async fn private_command(&self, cmd: &SlashCommand, c: Command) {
        let key = SessionKey::new(PLATFORM, &cmd.team, &cmd.channel, "");
        let out = commands::execute(&self.agent, &key, &cmd.user, c).await;
        let text = if out.is_error {
            format!("⚠️ {}", out.text)
        } else {
            out.text
        };
        let text = mrkdwn::truncate(&mrkdwn::to_mrkdwn(&text), mrkdwn::MESSAGE_MAX);
        if let Err(e) = self
            .api
            .ephemeral(&cmd.channel, None, &cmd.user, &text)
            .await
        {
            tracing::warn!(error = %e, channel = %cmd.channel, "could not show a private answer");
        }
    }

    async fn show(&self, target: ThreadTarget, effect: Effect) {
        let sink = SurfaceSink::new(
            self.thread(target),
            self.agent.confirmation_cards(),
            self.agent.outbox(),
        );
        sink.emit(effect).await;
    }
}
