//! Translation between Discord events and core inputs, shared by the gateway and the HTTP
//! interactions endpoint. Decides nothing the core decides: it only finds the session key,
//! answers Discord in time and renders effects through [`SurfaceSink`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use serenity::all::{
    CommandInteraction, ComponentInteraction, Interaction, Message, ModalInteraction,
};

use super::commands::{self, Slash};
use super::rest::{ChannelInfo, Rest};
use super::surface::{InteractionHandle, ThreadSurface, MAX_MESSAGE};
use super::DiscordError;
use crate::config::Config;
use crate::core::addressing::Place;
use crate::core::allow::AllowList;
use crate::core::commands::{execute, Command, CommandOutput};
use crate::core::inflight::InFlight;
use crate::core::ledger::InputKind;
use crate::core::session::{Mode, SessionKey};
use crate::core::{Agent, Input, InputAction};
use crate::platforms::render::{
    clip as clip_to, parse_button, parse_edit_form, split_message, ButtonAction, EDIT_FORM_PREFIX,
};
use crate::platforms::surface::{ChatSurface, SurfaceSink};

/// Platform name in session keys.
pub const PLATFORM: &str = "discord";
/// The workspace of `user`'s direct messages with the bot: a DM belongs to its user, so what
/// one person creates in a DM is never listed in another's.
pub fn dm_workspace(user: &str) -> String {
    format!("dm-{user}")
}
/// Most messages one command answer is split into (a project export can be long).
const MAX_PARTS: usize = 8;

/// Settings from `[discord]`, parsed once.
#[derive(Debug, Clone)]
pub struct Settings {
    allow: AllowList,
    require_mention: bool,
    archive_minutes: u16,
}

impl Settings {
    /// Reads `[discord]`.
    pub fn from_config(config: &Config) -> Self {
        let d = &config.discord;
        Self {
            allow: AllowList {
                workspaces: d.allowed_guilds.clone(),
                channels: d.allowed_channels.clone(),
                direct_messages: d.respond_in_dms,
            },
            require_mention: d.require_mention,
            archive_minutes: d.thread_auto_archive_minutes,
        }
    }

    /// Whether the bot answers in this guild (`None`: a DM).
    pub fn guild_allowed(&self, guild: Option<&str>) -> bool {
        match guild {
            None => self.allow.permits(None, None),
            Some(g) => self.allow.workspace_allowed(g),
        }
    }

    /// Whether the bot answers in this channel (for a thread, pass its parent too).
    pub fn channel_allowed(&self, channel: &str, parent: Option<&str>) -> bool {
        self.allow.channel_allowed(channel, parent)
    }
}

/// Work left after an interaction was acknowledged.
pub enum Work {
    /// A `/sparky` command.
    Command(Box<CommandInteraction>, Slash),
    /// A Confirm or Cancel click, or a submitted Edit form, in the thread of a card.
    OnCard(Box<Interacted>, InputAction),
    /// A submitted project form: the channel it was sent from, the project it sets (`None`:
    /// a new one) and the values typed.
    ProjectForm(
        Box<ModalInteraction>,
        SessionKey,
        Option<i64>,
        std::collections::BTreeMap<String, String>,
    ),
}

/// What a click on a card and a submitted form share: who, where, and the interaction to
/// answer through.
pub struct Interacted {
    id: String,
    app_id: String,
    token: String,
    channel: String,
    guild: Option<String>,
    parent: Option<String>,
    user: String,
}

impl Interacted {
    fn of_click(c: &ComponentInteraction) -> Self {
        Self {
            id: c.id.to_string(),
            app_id: c.application_id.to_string(),
            token: c.token.clone(),
            channel: c.channel_id.to_string(),
            guild: c.guild_id.map(|g| g.to_string()),
            parent: c
                .channel
                .as_ref()
                .and_then(|x| x.parent_id)
                .map(|p| p.to_string()),
            user: c.user.id.to_string(),
        }
    }

    fn of_form(m: &ModalInteraction) -> Self {
        Self {
            id: m.id.to_string(),
            app_id: m.application_id.to_string(),
            token: m.token.clone(),
            channel: m.channel_id.to_string(),
            guild: m.guild_id.map(|g| g.to_string()),
            parent: m
                .channel
                .as_ref()
                .and_then(|x| x.parent_id)
                .map(|p| p.to_string()),
            user: m.user.id.to_string(),
        }
    }
}

/// Discord's limits for a modal: its title and each label.
const MAX_MODAL_TITLE: usize = 45;
const MAX_MODAL_LABEL: usize = 45;

/// The adapter's shared state.
pub struct Discord {
    agent: Arc<Agent>,
    rest: Rest,
    settings: Settings,
    bot_id: RwLock<Option<String>>,
    channels: Mutex<HashMap<String, ChannelInfo>>,
    inflight: InFlight,
}

/// A private answer (flag 64) to an interaction.
pub(super) fn ephemeral(text: &str) -> Value {
    json!({"type": 4, "data": {"content": clip(text), "flags": 64, "allowed_mentions": {"parse": []}}})
}

fn clip(text: &str) -> String {
    clip_to(text, MAX_MESSAGE)
}

/// Longest name or value of an autocomplete choice Discord accepts.
const MAX_CHOICE: usize = 100;
/// Autocomplete must be answered within Discord's 3 s; past this, nothing is offered.
pub(super) const AUTOCOMPLETE_BUDGET: Duration = Duration::from_secs(2);

/// Removes mentions of the bot (`<@id>`, `<@!id>`) from a message.
pub fn strip_mention(text: &str, bot: &str) -> String {
    crate::core::mention::strip_bot(text, Some(bot))
}

impl Discord {
    /// Builds the adapter state from the configuration (needs `DISCORD_TOKEN`).
    pub fn new(agent: Arc<Agent>, config: &Config) -> Result<Self, DiscordError> {
        let token = config
            .secrets
            .discord_token
            .as_ref()
            .ok_or(DiscordError::MissingSecret("DISCORD_TOKEN"))?;
        let token = token.expose().trim_start_matches("Bot ").to_string();
        let rest = Rest::new(&config.discord.api_base_url, &token).map_err(DiscordError::Setup)?;
        Ok(Self {
            inflight: InFlight::of(&agent),
            agent,
            rest,
            settings: Settings::from_config(config),
            bot_id: RwLock::new(None),
            channels: Mutex::new(HashMap::new()),
        })
    }

    /// The REST client.
    pub fn rest(&self) -> &Rest {
        &self.rest
    }

    /// The core.
    pub(super) fn agent(&self) -> &Agent {
        &self.agent
    }

    /// Records the bot's own user id (from READY).
    pub fn set_bot_id(&self, id: String) {
        if let Ok(mut b) = self.bot_id.write() {
            *b = Some(id);
        }
    }

    fn bot_id(&self) -> Option<String> {
        self.bot_id.read().ok().and_then(|b| b.clone())
    }

    /// Remembers a channel (from GUILD_CREATE, THREAD_CREATE or a lookup).
    pub fn remember_channel(&self, info: ChannelInfo) {
        if let Ok(mut c) = self.channels.lock() {
            c.insert(info.id.clone(), info);
        }
    }

    async fn channel_info(&self, id: &str) -> Option<ChannelInfo> {
        if let Some(c) = self.channels.lock().ok().and_then(|c| c.get(id).cloned()) {
            return Some(c);
        }
        match self.rest.channel(id).await {
            Ok(info) => {
                self.remember_channel(info.clone());
                Some(info)
            }
            Err(e) => {
                tracing::warn!(channel = id, error = %e, "cannot read the channel");
                None
            }
        }
    }

    /// Handles acknowledged work in a task the agent tracks (shutdown waits for it).
    pub fn spawn_work(self: &Arc<Self>, work: Work) {
        let discord = self.clone();
        self.inflight
            .spawn(async move { discord.process(work).await });
    }

    /// Waits until no turn is in flight, at most `limit`.
    pub async fn drain(&self, limit: Duration) {
        if !self.inflight.wait(limit).await {
            tracing::warn!("shutting down with Discord turns still running");
        }
    }

    /// Runs one input and renders its effects on `surface`.
    async fn converse(&self, input: Input, surface: ThreadSurface) {
        let turn = async {
            surface.working(crate::core::activity::RECEIVED).await;
            let sink = SurfaceSink::new(
                surface,
                self.agent.confirmation_cards(),
                self.agent.outbox(),
            );
            if let Err(e) = self.agent.handle(input, &sink).await {
                tracing::error!(error = %e, "Discord turn failed");
            }
        };
        self.inflight.track(turn).await;
    }

    /// A message from the gateway: continues a session in a thread the bot is in, or starts a
    /// thread when the bot is mentioned (or mentions are not required).
    pub async fn on_message(&self, msg: &Message) {
        if msg.author.bot {
            return;
        }
        let Some(bot) = self.bot_id() else {
            tracing::debug!("message before READY ignored");
            return;
        };
        let channel = msg.channel_id.to_string();
        let guild = msg.guild_id.map(|g| g.to_string());
        if !self.settings.guild_allowed(guild.as_deref()) {
            return;
        }
        let text = strip_mention(&msg.content, &bot);
        let files = super::inbound_files::attachment_refs(&msg.attachments);
        if text.is_empty() && files.is_empty() {
            return;
        }
        let user = msg.author.id.to_string();
        let event_id = Some(msg.id.to_string());
        let input = |key| Input {
            key,
            user: user.clone(),
            event_id: event_id.clone(),
            action: InputAction::message(text.clone(), None, files.clone()),
        };
        let Some(guild) = guild else {
            let key = SessionKey::new(PLATFORM, dm_workspace(&user), &channel, &channel);
            let surface = ThreadSurface::new(self.rest.clone(), &channel, None);
            return self.converse(input(key), surface).await;
        };
        let mentioned = msg.mentions.iter().any(|u| u.id.to_string() == bot)
            || msg.content.contains(&format!("<@{bot}>"));
        let Some(info) = self.channel_info(&channel).await else {
            return;
        };
        if info.is_thread() {
            let parent = info.parent_id.clone().unwrap_or_else(|| channel.clone());
            if !self.settings.channel_allowed(&channel, Some(&parent)) {
                return;
            }
            let key = SessionKey::new(PLATFORM, &guild, &parent, &channel);
            let place = Place::Thread {
                started_by_sparky: info.owner_id.as_deref() == Some(bot.as_str()),
            };
            if !self.agent.belongs(&key, place, mentioned).await {
                return;
            }
            let surface = ThreadSurface::new(self.rest.clone(), &channel, None);
            return self.converse(input(key), surface).await;
        }
        if !self.settings.channel_allowed(&channel, None) {
            return;
        }
        let place = Place::Channel {
            mention_required: self.settings.require_mention,
        };
        let key = SessionKey::new(PLATFORM, &guild, &channel, msg.id.to_string());
        if !self.agent.belongs(&key, place, mentioned).await {
            return;
        }
        let message = msg.id.to_string();
        // A photo sent without words still names its thread.
        let name = match files.first() {
            Some(f) if text.is_empty() => f.name.clone(),
            _ => text.clone(),
        };
        let Some(thread) = self.start_thread(&channel, &message, &name).await else {
            return;
        };
        let key = SessionKey::new(PLATFORM, &guild, &channel, &thread);
        let surface = ThreadSurface::new(self.rest.clone(), &thread, None);
        self.converse(input(key), surface).await;
    }

    /// Starts a thread from `message`; a redelivered message finds the thread it already has.
    async fn start_thread(&self, channel: &str, message: &str, name: &str) -> Option<String> {
        match self
            .rest
            .thread_from_message(channel, message, name, self.settings.archive_minutes)
            .await
        {
            Ok(info) => {
                let id = info.id.clone();
                self.remember_channel(info);
                Some(id)
            }
            Err(e) => {
                // A message's thread has the message's id.
                if let Ok(existing) = self.rest.channel(message).await {
                    if existing.is_thread() {
                        return Some(existing.id);
                    }
                }
                tracing::error!(error = %e, channel, "cannot start a thread");
                None
            }
        }
    }

    /// The session key of a command used in `cmd`'s channel: project bindings belong to the
    /// channel, also when used inside one of its threads.
    pub(super) async fn command_key(&self, cmd: &CommandInteraction) -> SessionKey {
        let channel = cmd.channel_id.to_string();
        let guild = cmd.guild_id.map(|g| g.to_string());
        let parent = match &guild {
            Some(_) => self.channel_parent(&channel).await,
            None => channel.clone(),
        };
        let workspace = guild.unwrap_or_else(|| dm_workspace(&cmd.user.id.to_string()));
        SessionKey::new(PLATFORM, &workspace, &parent, &channel)
    }

    /// The channel that holds `channel` when it is a guild thread, else `channel` itself.
    pub(super) async fn channel_parent(&self, channel: &str) -> String {
        self.channel_info(channel)
            .await
            .filter(ChannelInfo::is_thread)
            .and_then(|i| i.parent_id)
            .unwrap_or_else(|| channel.to_string())
    }

    /// The names to offer while a person types an option (type 8 answer): the caller's
    /// workspace's only, nothing where Sparky is not enabled or the lookup is too slow.
    async fn autocomplete(&self, cmd: &CommandInteraction) -> Value {
        let guild = cmd.guild_id.map(|g| g.to_string());
        let enabled = self.settings.guild_allowed(guild.as_deref());
        let target = commands::autocomplete_target(&cmd.data).filter(|_| enabled);
        let choices = match target {
            Some((what, typed)) => {
                let lookup = async {
                    let key = self.command_key(cmd).await;
                    let user = cmd.user.id.to_string();
                    self.agent.suggest(&key, &user, what, &typed).await
                };
                match tokio::time::timeout(AUTOCOMPLETE_BUDGET, lookup).await {
                    Ok(Ok(choices)) => choices,
                    Ok(Err(e)) => {
                        tracing::warn!(error = %e, "autocomplete lookup failed");
                        Vec::new()
                    }
                    Err(_) => {
                        tracing::warn!("autocomplete lookup too slow");
                        Vec::new()
                    }
                }
            }
            None => Vec::new(),
        };
        let choices: Vec<Value> = choices
            .iter()
            .map(|c| json!({"name": clip_to(&c.label, MAX_CHOICE), "value": clip_to(&c.value, MAX_CHOICE)}))
            .collect();
        json!({"type": 8, "data": {"choices": choices}})
    }

    /// Decides the answer Discord needs within 3 s, and what is left to do after it.
    pub async fn triage(&self, interaction: Interaction) -> (Value, Option<Work>) {
        match interaction {
            Interaction::Ping(_) => (json!({"type": 1}), None),
            Interaction::Command(cmd) => {
                let on_message = cmd.data.name == commands::ASK_ABOUT_MESSAGE;
                if cmd.data.name != commands::COMMAND_NAME && !on_message {
                    return (ephemeral("Unknown command."), None);
                }
                let guild = cmd.guild_id.map(|g| g.to_string());
                let channel = cmd.channel_id.to_string();
                let parent = cmd
                    .channel
                    .as_ref()
                    .and_then(|c| c.parent_id)
                    .map(|p| p.to_string());
                if !self.settings.guild_allowed(guild.as_deref())
                    || (guild.is_some()
                        && !self.settings.channel_allowed(&channel, parent.as_deref()))
                {
                    return (ephemeral("Sparky is not enabled in this channel."), None);
                }
                let parsed = if on_message {
                    commands::about_message(&cmd.data)
                } else {
                    commands::parse(&cmd.data.options())
                };
                match parsed {
                    Err(e) => (ephemeral(&format!("⚠️ {e}")), None),
                    Ok(Slash::Run(Command::Help)) => {
                        (ephemeral(&crate::core::commands::help_text()), None)
                    }
                    // Without options: the form, as the answer itself.
                    Ok(Slash::Run(Command::ProjectForm(kind))) => {
                        (self.project_form_answer(&cmd, kind).await, None)
                    }
                    // Deferred, and ephemeral (flag 64) when only the caller may see it.
                    Ok(Slash::Run(c)) if c.is_private() => (
                        json!({"type": 5, "data": {"flags": 64}}),
                        Some(Work::Command(Box::new(cmd), Slash::Run(c))),
                    ),
                    Ok(slash) => (
                        json!({"type": 5}),
                        Some(Work::Command(Box::new(cmd), slash)),
                    ),
                }
            }
            Interaction::Component(comp) => match parse_button(&comp.data.custom_id) {
                // The form must be the answer itself (Discord opens it within 3 s).
                Some(ButtonAction::Edit(id)) => (self.edit_modal(&id).await, None),
                Some(button) => match button.input() {
                    Some(action) => {
                        let who = Interacted::of_click(&comp);
                        (
                            json!({"type": 6}),
                            Some(Work::OnCard(Box::new(who), action)),
                        )
                    }
                    None => (json!({"type": 6}), None),
                },
                None => (json!({"type": 6}), None),
            },
            Interaction::Modal(form) => {
                match super::project_form::parse_custom_id(&form.data.custom_id) {
                    Some(project) => self.project_form_submitted(&form, project).await,
                    None => self.edit_submitted(&form).await,
                }
            }
            Interaction::Autocomplete(cmd) => (self.autocomplete(&cmd).await, None),
            _ => (json!({"type": 6}), None),
        }
    }

    /// An interaction from the gateway: acknowledge over REST, then do the work.
    pub async fn on_gateway_interaction(&self, interaction: Interaction) {
        let id = interaction.id().to_string();
        let token = interaction.token().to_string();
        let (ack, work) = self.triage(interaction).await;
        if let Err(e) = self.rest.interaction_callback(&id, &token, &ack).await {
            // Discord shows "interaction failed"; still do the work (e.g. a click that was
            // acknowledged by a previous delivery).
            tracing::warn!(error = %e, interaction = id, "could not acknowledge the interaction");
        }
        if let Some(work) = work {
            self.process(work).await;
        }
    }

    /// Does the work of an acknowledged interaction.
    pub async fn process(&self, work: Work) {
        self.inflight.track(self.run_work(work)).await;
    }

    async fn run_work(&self, work: Work) {
        match work {
            Work::Command(cmd, slash) => {
                // A redelivered interaction (a gateway resume) runs nothing twice.
                let id = cmd.id.to_string();
                let ledger = self.agent.ledger();
                if ledger
                    .first_delivery(PLATFORM, InputKind::Command, &id)
                    .await
                {
                    self.run_command(&cmd, slash).await;
                }
            }
            Work::OnCard(who, action) => self.on_card(&who, action).await,
            Work::ProjectForm(form, key, project, values) => {
                // A redelivered submission (a gateway resume) changes nothing twice.
                let id = form.id.to_string();
                if self
                    .agent
                    .ledger()
                    .first_delivery(PLATFORM, InputKind::Command, &id)
                    .await
                {
                    self.apply_project_form(&form, key, project, values).await;
                }
            }
        }
    }

    /// The Edit form of a card as a modal (interaction response type 9), or a private note
    /// when the proposal can no longer be edited.
    async fn edit_modal(&self, action_id: &str) -> Value {
        let form = match tokio::time::timeout(AUTOCOMPLETE_BUDGET, self.agent.edit_form(action_id))
            .await
        {
            Ok(Ok(Some(form))) => form,
            Ok(Ok(None)) => {
                return ephemeral(
                    "This proposal cannot be edited any more (it was resolved, or it has several \
                     changes: type the correction in the thread).",
                )
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "could not read the proposal to edit");
                return ephemeral("⚠️ I could not open the form; try again.");
            }
            Err(_) => return ephemeral("⚠️ I could not open the form in time; try again."),
        };
        let rows: Vec<Value> = form
            .fields
            .iter()
            .map(|f| {
                json!({"type": 1, "components": [{
                    "type": 4,
                    "custom_id": f.name,
                    "label": clip_to(&f.label, MAX_MODAL_LABEL),
                    "style": 1,
                    "value": clip_to(&f.value, crate::core::edit_form::MAX_VALUE_CHARS),
                    "required": f.required,
                    "max_length": crate::core::edit_form::MAX_VALUE_CHARS,
                }]})
            })
            .collect();
        json!({"type": 9, "data": {
            "custom_id": format!("{EDIT_FORM_PREFIX}{}", form.action_id),
            "title": clip_to(&form.title, MAX_MODAL_TITLE),
            "components": rows,
        }})
    }

    /// A submitted Edit form: field errors are answered privately at once (a Discord modal
    /// cannot show them on its fields); valid values go to the card's thread as an edit.
    async fn edit_submitted(&self, form: &ModalInteraction) -> (Value, Option<Work>) {
        let Some(action_id) = parse_edit_form(&form.data.custom_id) else {
            return (json!({"type": 6}), None);
        };
        let values = super::project_form::values(form);
        let check = self.agent.check_edit(action_id, &values);
        if let Ok(Ok(Err(errors))) = tokio::time::timeout(AUTOCOMPLETE_BUDGET, check).await {
            if let Ok(Ok(Some(f))) =
                tokio::time::timeout(AUTOCOMPLETE_BUDGET, self.agent.edit_form(action_id)).await
            {
                let text = crate::core::edit::field_errors(&f, &errors);
                return (ephemeral(&text), None);
            }
        }
        let action = InputAction::Edit {
            action_id: action_id.to_string(),
            values,
        };
        let who = Interacted::of_form(form);
        (
            json!({"type": 6}),
            Some(Work::OnCard(Box::new(who), action)),
        )
    }

    /// A click or a submitted form on a card, handled in the card's thread.
    async fn on_card(&self, who: &Interacted, action: InputAction) {
        let channel = who.channel.clone();
        let workspace = who.guild.clone().unwrap_or_else(|| dm_workspace(&who.user));
        let parent = match &who.parent {
            Some(p) => p.clone(),
            None if who.guild.is_some() => self
                .channel_info(&channel)
                .await
                .and_then(|c| c.parent_id)
                .unwrap_or_else(|| channel.clone()),
            None => channel.clone(),
        };
        let handle = InteractionHandle {
            app_id: who.app_id.clone(),
            token: who.token.clone(),
            received: Instant::now(),
        };
        let input = Input {
            key: SessionKey::new(PLATFORM, workspace, parent, &channel),
            user: who.user.clone(),
            event_id: Some(who.id.clone()),
            action,
        };
        let surface = ThreadSurface::new(self.rest.clone(), &channel, Some(handle));
        self.converse(input, surface).await;
    }

    async fn run_command(&self, cmd: &CommandInteraction, slash: Slash) {
        let handle = InteractionHandle {
            app_id: cmd.application_id.to_string(),
            token: cmd.token.clone(),
            received: Instant::now(),
        };
        let user = cmd.user.id.to_string();
        let channel = cmd.channel_id.to_string();
        let key = self.command_key(cmd).await;
        let in_thread = key.channel != channel;
        let mut tool = None;
        let (text, mode) = match slash {
            // A tool command is an input of the thread: a write shows its card there.
            Slash::Run(Command::Tool { name, args }) => {
                let text = format!("tool {name} {args}");
                tool = Some((name, args));
                (text, None)
            }
            Slash::Run(command) => {
                let export = matches!(command, Command::ProjectExport);
                let private = command.is_private();
                let mut out = execute(&self.agent, &key, &user, command).await;
                let files = std::mem::take(&mut out.files);
                self.answer(&handle, &out, export, private).await;
                // A report goes into the channel or thread the command came from.
                if !files.is_empty() {
                    let surface = ThreadSurface::new(self.rest.clone(), &channel, None);
                    let sink = crate::platforms::surface::SurfaceSink::new(
                        surface,
                        self.agent.confirmation_cards(),
                        self.agent.outbox(),
                    );
                    for file in files {
                        crate::core::EffectSink::emit(&sink, crate::core::Effect::File { file })
                            .await;
                    }
                }
                return;
            }
            Slash::Search { question } => {
                let command = Command::Search { query: question };
                let out = execute(&self.agent, &key, &user, command).await;
                return self.answer(&handle, &out, false, false).await;
            }
            Slash::Ask { question, mode } => (question, mode),
            Slash::Spec { mode, equipment } => (
                commands::spec_opening(mode, equipment.as_deref()),
                Some(mode),
            ),
        };
        let heading = format!("<@{user}>{}: {}", mode_label(mode), text);
        let original = match self
            .rest
            .edit_original(
                &handle.app_id,
                &handle.token,
                &json!({"content": clip(&heading), "allowed_mentions": {"parse": []}}),
            )
            .await
        {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(error = %e, "cannot answer the command");
                return;
            }
        };
        let (key, thread) = match cmd.guild_id {
            Some(guild) if !in_thread => {
                let guild = guild.to_string();
                let Some(thread) = self.start_thread(&channel, &original.id, &text).await else {
                    let _ = self
                        .rest
                        .followup(
                            &handle.app_id,
                            &handle.token,
                            &json!({"content": "⚠️ I could not start a thread here (check my Create Public Threads permission).", "flags": 64}),
                        )
                        .await;
                    return;
                };
                (SessionKey::new(PLATFORM, &guild, &channel, &thread), thread)
            }
            _ => (key, channel.clone()),
        };
        let surface = ThreadSurface::new(self.rest.clone(), &thread, Some(handle));
        let input = match tool {
            Some((name, args)) => Input {
                key,
                user,
                event_id: Some(cmd.id.to_string()),
                action: InputAction::Tool { name, args },
            },
            None => message_input(key, user, Some(cmd.id.to_string()), text, mode),
        };
        self.converse(input, surface).await;
    }

    /// A command's answer; `private` keeps every part of it ephemeral (the deferred response
    /// already is, follow-ups are marked so).
    async fn answer(
        &self,
        handle: &InteractionHandle,
        out: &CommandOutput,
        code: bool,
        private: bool,
    ) {
        let text = if out.is_error {
            format!("⚠️ {}", out.text)
        } else if code {
            format!("```json\n{}\n```", out.text)
        } else {
            out.text.clone()
        };
        // People the core named are shown as mentions (never pinging: `allowed_mentions`).
        let text = super::surface::mentionize(&text);
        self.answer_text(handle, &text, private).await;
    }

    /// The command's answer: the deferred response, then follow-ups for long text.
    async fn answer_text(&self, handle: &InteractionHandle, text: &str, private: bool) {
        let mut parts = split_message(text, MAX_MESSAGE);
        if parts.is_empty() {
            parts.push("Done.".into());
        }
        if parts.len() > MAX_PARTS {
            parts.truncate(MAX_PARTS);
            parts
                .push("… (cut here; use `sparky` on the command line for the whole output)".into());
        }
        for (i, part) in parts.iter().enumerate() {
            let mut body = json!({"content": part, "allowed_mentions": {"parse": []}});
            if private {
                body["flags"] = json!(64);
            }
            let result = if i == 0 {
                self.rest
                    .edit_original(&handle.app_id, &handle.token, &body)
                    .await
            } else {
                self.rest
                    .followup(&handle.app_id, &handle.token, &body)
                    .await
            };
            if let Err(e) = result {
                tracing::error!(error = %e, "cannot send the command's answer");
                return;
            }
        }
    }
}

fn mode_label(mode: Option<Mode>) -> &'static str {
    match mode {
        Some(Mode::Load) => " (spec assistant: loads)",
        Some(Mode::Source) => " (spec assistant: sources)",
        _ => "",
    }
}

fn message_input(
    key: SessionKey,
    user: String,
    event_id: Option<String>,
    text: String,
    mode: Option<Mode>,
) -> Input {
    Input {
        key,
        user,
        event_id,
        action: InputAction::Message { text, mode },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_of_the_bot_are_removed() {
        assert_eq!(
            strip_mention("<@123> what is 250.122?", "123"),
            "what is 250.122?"
        );
        assert_eq!(strip_mention("hey <@!123>", "123"), "hey");
        assert_eq!(strip_mention("<@999> hi", "123"), "<@999> hi");
    }

    #[test]
    fn allow_lists() {
        let s = Settings {
            allow: AllowList {
                workspaces: vec!["1".into(), "2".into()],
                channels: vec!["10".into()],
                direct_messages: false,
            },
            require_mention: true,
            archive_minutes: 1440,
        };
        assert!(s.guild_allowed(Some("2")));
        assert!(!s.guild_allowed(Some("3")));
        assert!(!s.guild_allowed(None));
        assert!(s.channel_allowed("10", None));
        assert!(s.channel_allowed("55", Some("10")));
        assert!(!s.channel_allowed("55", Some("11")));
    }
}
