//! The turn loop (DESIGN.md section 3).
//!
//! ```text
//! Idle --text--> Thinking --model text--> Idle
//!                   |--read-only calls--> run (runner) --> Thinking
//!                   |--write calls--> plan (runner) --> Review (the gate)
//! ```
//!
//! The model's steps are in `turn.rs`; tools run in [`super::runner`]; proposals,
//! Confirm, Cancel and corrections are the gate's ([`super::gate`]).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::context::ContextPolicy;
use super::effects::{Effect, EffectSink};
use super::gate::TextAndPending;
use super::lease::{Admission, Queued};
use super::ledger::{InputKind, Ledger};
use super::limits::TurnLimiter;
use super::runner::{RunFor, ToolRunner};
use super::session::{Mode, Session, SessionKey};
use super::turn::{citation_list, collect_citations};
use crate::config::{AgentConfig, LimitsConfig};
use crate::llm::{ChatMessage, ChatProvider, ToolCall};
use crate::store::{QueuedQuestion, Store, StoreError};
use crate::tools::{RegisteredTool, ToolRegistry};

pub use super::gate::confirmers_text;

/// One thing a person did, already translated from the platform.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    /// Which conversation.
    pub key: SessionKey,
    /// Platform user id of the person.
    pub user: String,
    /// Platform event id, for de-duplicating redeliveries.
    pub event_id: Option<String>,
    /// What they did.
    pub action: InputAction,
}

/// The kinds of input.
#[derive(Debug, Clone, PartialEq)]
pub enum InputAction {
    /// A message; `mode` chooses the mode of a new session.
    Message {
        /// Text as typed.
        text: String,
        /// Mode requested (slash command or button).
        mode: Option<Mode>,
    },
    /// A message with files attached (photos, PDFs), downloaded and read within its turn.
    MessageWithFiles {
        /// Text as typed (may be empty).
        text: String,
        /// Mode requested.
        mode: Option<Mode>,
        /// The files, as references to download.
        files: Vec<super::inbound::FileRef>,
    },
    /// Confirm a pending action (the session's open one when `None`).
    Confirm {
        /// Action id from the button.
        action_id: Option<String>,
    },
    /// Cancel a pending action.
    Cancel {
        /// Action id from the button.
        action_id: Option<String>,
    },
    /// A person's own tool command: a read tool runs at once, a write tool is proposed for
    /// confirmation like a model's.
    Tool {
        /// Tool name.
        name: String,
        /// Arguments as JSON text.
        args: String,
    },
    /// The Edit form of a waiting proposal, submitted: a correction, never a confirmation.
    Edit {
        /// The proposal.
        action_id: String,
        /// The submitted text of each field, by argument name.
        values: std::collections::BTreeMap<String, String>,
    },
}

impl InputAction {
    /// The kind, as metrics label it: message, confirm, cancel, tool or edit.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Message { .. } | Self::MessageWithFiles { .. } => "message",
            Self::Confirm { .. } => "confirm",
            Self::Cancel { .. } => "cancel",
            Self::Tool { .. } => "tool",
            Self::Edit { .. } => "edit",
        }
    }
}

/// Failures the core cannot turn into an answer itself.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What every model request of a turn asks of the model besides the conversation.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModelSettings {
    /// Sampling temperature; the provider's default when `None`.
    pub temperature: Option<f64>,
    /// Most tokens per answer; no limit when `None`.
    pub max_output_tokens: Option<u32>,
    /// Whether a call refused for its arguments is asked for again with only its tool offered
    /// and a call required (see [`crate::llm::ToolChoice::Required`]).
    pub constrain_repairs: bool,
    /// Seed of a turn's first model call (`llm.seed`); each later call of the turn adds its
    /// index, so a turn repeats exactly while a question asked again is not the same draw.
    pub seed: Option<u64>,
}

impl ModelSettings {
    /// The settings the configuration's `[llm]` table gives.
    pub fn of(llm: &crate::config::LlmConfig) -> Self {
        Self {
            temperature: Some(llm.temperature),
            max_output_tokens: Some(llm.max_output_tokens),
            constrain_repairs: llm.constrain_repairs,
            seed: llm.seed(),
        }
    }
}

/// The agent: owns every decision between an input and its effects.
pub struct Agent {
    pub(super) store: Arc<dyn Store>,
    pub(super) provider: Option<Arc<dyn ChatProvider>>,
    pub(super) tools: Arc<ToolRegistry>,
    pub(super) runner: ToolRunner,
    pub(super) cfg: AgentConfig,
    pub(super) model: ModelSettings,
    limiter: TurnLimiter,
    admission: Admission,
    /// Every turn and every platform task that leads to one, so shutdown can wait for them
    /// whatever the transport.
    tasks: tokio_util::task::TaskTracker,
    pub(super) context: ContextPolicy,
    /// Downloads of attached files and whether the model sees pictures.
    pub(super) intake: super::inbound::FileIntake,
    ledger: Ledger,
}

impl Agent {
    /// Builds an agent. `provider` is `None` when no model is configured (offline).
    pub fn new(
        store: Arc<dyn Store>,
        provider: Option<Arc<dyn ChatProvider>>,
        tools: Arc<ToolRegistry>,
        cfg: AgentConfig,
        limits: &LimitsConfig,
    ) -> Self {
        Self {
            runner: ToolRunner::new(
                store.clone(),
                tools.clone(),
                Duration::from_secs(cfg.tool_timeout_secs),
            ),
            admission: Admission::new(store.clone(), &cfg),
            tasks: tokio_util::task::TaskTracker::new(),
            ledger: Ledger::new(
                store.clone(),
                Duration::from_secs(cfg.event_retention_hours.saturating_mul(3600)),
            ),
            store,
            provider,
            tools,
            cfg,
            model: ModelSettings::default(),
            limiter: TurnLimiter::new(limits),
            context: ContextPolicy::default(),
            intake: super::inbound::FileIntake::default(),
        }
    }

    /// Sets how much context each model request carries (the default keeps every lever that
    /// pays; see docs/context.md).
    pub fn with_context_policy(mut self, policy: ContextPolicy) -> Self {
        self.context = policy;
        self
    }

    /// Sets how attached files are fetched and whether pictures go to the model.
    pub fn with_file_intake(mut self, intake: super::inbound::FileIntake) -> Self {
        self.intake = intake;
        self
    }

    /// Sets what every model request asks of the model besides the conversation.
    pub fn with_model_settings(mut self, settings: ModelSettings) -> Self {
        self.model = settings;
        self
    }

    /// The ledger of inputs already taken (redeliveries of any kind are dropped there).
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Where confirmation cards are shown, for the adapters that post and close them.
    pub fn confirmation_cards(&self) -> super::cards::ConfirmationCards {
        super::cards::ConfirmationCards::new(self.store.clone())
    }

    /// Where messages a platform would not take yet wait for delivery.
    pub fn outbox(&self) -> super::outbox::Outbox {
        super::outbox::Outbox::new(self.store.clone())
    }

    /// The store this agent writes to (for the application and the command line; adapters
    /// go through the operations above).
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The tool registry.
    pub fn tools(&self) -> &Arc<ToolRegistry> {
        &self.tools
    }

    /// Whether a model is configured.
    pub fn has_model(&self) -> bool {
        self.provider.is_some()
    }

    /// The configured model as `provider:model`, when there is one.
    pub fn provider_name(&self) -> Option<String> {
        self.provider.as_ref().map(|p| p.name())
    }

    /// Turns in flight and the platform tasks that lead to them; shutdown closes it and waits.
    pub fn tasks(&self) -> &tokio_util::task::TaskTracker {
        &self.tasks
    }

    /// When inputs run: per thread in order, per process within `agent.max_concurrent_turns`.
    pub fn admission(&self) -> &Admission {
        &self.admission
    }

    /// Handles one input to completion, emitting effects as it goes. Storage failures are
    /// shown to the user and returned; nothing already stored is lost.
    ///
    /// The input waits its turn in its thread's inbox (see [`super::lease`]). The turn emits
    /// into a queue that `sink` drains on its own, so a platform that paces edits or answers
    /// 429 never holds the thread's turn or a turn slot; this returns once both are done.
    pub async fn handle(&self, input: Input, sink: &dyn EffectSink) -> Result<(), CoreError> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Effect>();
        let turn = async move {
            let started = Instant::now();
            let platform = input.key.platform.clone();
            let m = crate::telemetry::metrics();
            m.inputs
                .with_label_values(&[platform.as_str(), input.action.kind()])
                .inc();
            if matches!(
                input.action,
                InputAction::Message { .. } | InputAction::MessageWithFiles { .. }
            ) {
                // The first sign of life comes before any database work, however busy.
                tx.emit(Effect::Status {
                    text: super::activity::RECEIVED.into(),
                })
                .await;
            }
            let result = self.handle_inner(input, &tx).await;
            if let Err(e) = &result {
                tracing::error!(error = %e, "turn failed");
                tx.emit(Effect::Error {
                    message: format!("Something went wrong on my side ({e}). Your message is saved; please try again."),
                })
                .await;
            }
            m.turns
                .with_label_values(&[if result.is_ok() { "ok" } else { "error" }])
                .inc();
            m.turn_seconds
                .with_label_values(&[platform.as_str()])
                .observe(started.elapsed().as_secs_f64());
            result
        };
        let render = async {
            while let Some(effect) = rx.recv().await {
                crate::telemetry::observe_effect(&effect);
                sink.emit(effect).await;
            }
        };
        let (result, ()) = self
            .tasks
            .track_future(async { tokio::join!(turn, render) })
            .await;
        result
    }

    async fn handle_inner(&self, input: Input, sink: &dyn EffectSink) -> Result<(), CoreError> {
        if matches!(
            input.action,
            InputAction::Message { .. } | InputAction::MessageWithFiles { .. }
        ) {
            // Messages are counted as they arrive: one that is let in is answered, however
            // long it then waits for its thread.
            if let Err(message) = self.limiter.check(&input.key, &input.user) {
                sink.emit(Effect::Error { message }).await;
                return Ok(());
            }
        }
        if input.event_id.is_some() {
            // Old ids are forgotten as inputs arrive (at most once an hour).
            self.ledger.purge_if_due().await;
        }
        match self.session_of(&input).await? {
            Some(session_id) => self.admission.serve(self, session_id, input, sink).await,
            None => {
                // Nothing to queue behind (a button of an unknown action): answered at once.
                if let Some(event_id) = &input.event_id {
                    if !self
                        .ledger
                        .claim(&input.key.platform, InputKind::Event, event_id)
                        .await?
                    {
                        return Ok(());
                    }
                }
                // Boxed, like a queued input's turn, so a waiting input stays small.
                Box::pin(self.dispatch(&input, None, sink)).await
            }
        }
    }

    /// The session an input belongs to: its thread's, or for a button its action's.
    async fn session_of(&self, input: &Input) -> Result<Option<i64>, CoreError> {
        Ok(match &input.action {
            InputAction::Message { mode, .. } | InputAction::MessageWithFiles { mode, .. } => {
                Some(self.open_session(&input.key, *mode).await?.id)
            }
            InputAction::Confirm {
                action_id: Some(id),
            }
            | InputAction::Cancel {
                action_id: Some(id),
            }
            | InputAction::Edit { action_id: id, .. } => {
                self.store.pending(id).await?.map(|a| a.session_id)
            }
            InputAction::Confirm { action_id: None }
            | InputAction::Cancel { action_id: None }
            | InputAction::Tool { .. } => Some(self.open_session(&input.key, None).await?.id),
        })
    }

    /// Runs one admitted input: the caller holds its thread's lease. `queued` is what the
    /// inbox knows of it, when it was queued.
    pub(super) async fn dispatch(
        &self,
        input: &Input,
        queued: Option<Queued<'_>>,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        match input.action.clone() {
            InputAction::Message { text, mode } => {
                self.on_message(input, text, mode, &[], queued, sink).await
            }
            InputAction::MessageWithFiles { text, mode, files } => {
                self.on_message(input, text, mode, &files, queued, sink)
                    .await
            }
            InputAction::Confirm { action_id } => {
                self.on_resolve(input, action_id, true, sink).await
            }
            InputAction::Cancel { action_id } => {
                self.on_resolve(input, action_id, false, sink).await
            }
            InputAction::Tool { name, args } => self.on_tool_command(input, name, args, sink).await,
            InputAction::Edit { action_id, values } => {
                self.on_edit(input, action_id, values, sink).await
            }
        }
    }

    pub(super) async fn open_session(
        &self,
        key: &SessionKey,
        mode: Option<Mode>,
    ) -> Result<Session, CoreError> {
        // Bound to the channel's project, with the mode applied: one statement on Postgres.
        Ok(self.store.open_thread(key, mode).await?)
    }

    async fn on_message(
        &self,
        input: &Input,
        text: String,
        mode: Option<Mode>,
        files: &[super::inbound::FileRef],
        queued: Option<Queued<'_>>,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        // A queued input's session was opened (its mode and binding applied) when it was
        // queued, and read again when the input started: no need to open it again.
        let (queued_in, end) = match queued {
            Some(q) => (Some(q.started), Some(q.end)),
            None => (None, None),
        };
        // Stored as the input started (no proposal was waiting), the thread read with it.
        let stored_at_start = queued_in.as_ref().is_some_and(|s| s.asked.is_some());
        let queued_in = queued_in.filter(|s| s.session.key == input.key);
        let (session, pending_open, asked) = match queued_in {
            Some(s) => (s.session, Some(s.pending_open), s.asked),
            None => (self.open_session(&input.key, mode).await?, None, None),
        };
        if stored_at_start {
            // The question was stored as the input started; the thread was read with it.
            let history = match asked {
                Some(read) => super::window::TurnHistory::asked(&session, read),
                None => super::window::TurnHistory::load(self.store.as_ref(), &session).await?,
            };
            return self
                .run_model_from(
                    &session,
                    &input.user,
                    &super::inbound::TurnFiles::default(),
                    Some(history),
                    end,
                    sink,
                )
                .await;
        }
        // Attached files are read now and reach the model in this turn only.
        let (text, files) = if files.is_empty() {
            (text, super::inbound::TurnFiles::default())
        } else {
            match self
                .prepare_files(input, &session, text, files, sink)
                .await?
            {
                super::inbound::Prepared::Go(text, files) => (text, files),
                super::inbound::Prepared::Stop => return Ok(()),
            }
        };

        // Typing while a confirmation is pending is a correction, not a confirmation.
        match self
            .text_while_pending(input, &session, &text, pending_open, sink)
            .await?
        {
            TextAndPending::Held => return Ok(()),
            TextAndPending::Superseded => {
                return self
                    .run_model_from(&session, &input.user, &files, None, None, sink)
                    .await
            }
            TextAndPending::Continue => {}
        }

        if self.provider.is_none() {
            self.append(
                session.id,
                ChatMessage::user(text.clone()),
                Some(&input.user),
                input.event_id.clone(),
            )
            .await?;
            return self
                .offline_answer(&session, &input.user, &text, sink)
                .await;
        }
        // Stored, and the thread read back with it, before the model is asked.
        let question = super::history::new_message(
            &ChatMessage::user(text),
            Some(input.user.clone()),
            input.event_id.clone(),
        );
        let history =
            super::window::TurnHistory::ask(self.store.as_ref(), &session, &question).await?;
        drop(question);
        self.run_model_from(&session, &input.user, &files, Some(history), end, sink)
            .await
    }

    /// Without a model, a question is answered with the best passages and their citations.
    async fn offline_answer(
        &self,
        session: &Session,
        user: &str,
        text: &str,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        let tool_call = ToolCall {
            id: "offline".into(),
            name: "search_code".into(),
            arguments: json!({ "query": text }).to_string(),
            thought_signature: None,
        };
        let Ok(RegisteredTool::Read(tool)) = self.runner.validate(None, &tool_call).map(|c| c.tool)
        else {
            sink.emit(Effect::Text {
                text: offline_reply(),
                citations: vec![],
            })
            .await;
            return Ok(());
        };
        let ctx = self.tool_context(session, user);
        let args = json!({ "query": text });
        let who = RunFor {
            session_id: Some(session.id),
            actor: user,
        };
        let result = self
            .runner
            .run_read(&tool_call, tool, args, &ctx, who)
            .await;
        let mut citations = BTreeSet::new();
        collect_citations(&result.content, &mut citations);
        let passages = result
            .content
            .get("passages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut answer = String::new();
        if passages.is_empty() {
            answer.push_str("I found nothing in the knowledge base that answers this.\n\n");
        } else {
            answer.push_str(
                "No language model is configured, so here are the most relevant passages:\n",
            );
            answer.push_str(&super::commands::passages_text(&passages, 3, 700));
            answer.push_str(
                "\nTo get answers in conversation, configure a model (`llm.provider`); \
                 `/tools` lists the calculations that run without one.",
            );
        }
        if passages.is_empty() {
            answer.push_str(&offline_reply());
        }
        self.append(
            session.id,
            ChatMessage::assistant(answer.clone()),
            None,
            None,
        )
        .await?;
        sink.emit(Effect::Text {
            text: answer,
            citations: citation_list(&citations),
        })
        .await;
        Ok(())
    }

    /// The question `input` stores as it starts, when it is a message for the model without
    /// files (what [`Self::on_message`] would store first).
    pub(super) fn question_at_start(&self, input: &Input) -> Option<QueuedQuestion> {
        let InputAction::Message { text, .. } = &input.action else {
            return None;
        };
        self.provider.as_ref()?;
        Some(QueuedQuestion {
            message: super::history::new_message(
                &ChatMessage::user(text.clone()),
                Some(input.user.clone()),
                input.event_id.clone(),
            ),
            limit: super::window::SCAN_LIMIT,
        })
    }

    pub(super) async fn append(
        &self,
        session_id: i64,
        message: ChatMessage,
        author: Option<&str>,
        event_id: Option<String>,
    ) -> Result<(), CoreError> {
        self.store
            .append_message(
                session_id,
                &super::history::new_message(&message, author.map(str::to_string), event_id),
            )
            .await?;
        Ok(())
    }
}

/// What the bot says when no model is configured.
pub fn offline_reply() -> String {
    "No language model is configured, so I cannot hold a conversation yet.\n\
     Offline you can still run every calculation and project tool directly (`/tool NAME {json}`, \
     `/tools` lists them).\n\
     To enable conversations, set `llm.provider` in bot-config.toml (or SPARKY_LLM__PROVIDER) to \
     `openai` or `gemini` and put the key in OPENAI_API_KEY or GEMINI_API_KEY. Any OpenAI-compatible \
     server (Ollama, vLLM, llama.cpp) works through llm.openai.base_url."
        .into()
}
