//! The turn loop (DESIGN.md section 3).
//!
//! ```text
//! Idle --text--> Thinking --model text--> Idle
//!                   |--read-only calls--> run (runner) --> Thinking
//!                   |--write calls--> plan (runner) --> Review (the gate)
//! ```
//!
//! Tools run in [`super::runner`]; proposals, Confirm, Cancel and corrections are the
//! gate's ([`super::gate`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use futures::StreamExt;
use serde_json::{json, Value};

use super::context::ContextPolicy;
use super::effects::{Citation, Effect, EffectSink};
use super::gate::{PlannedCall, TextAndPending};
use super::lease::{Admission, Queued, TurnEnd};
use super::ledger::{InputKind, Ledger};
use super::limits::TurnLimiter;
use super::mention;
use super::request;
use super::runner::{RunFor, ToolRunner};
use super::session::{Mode, Session, SessionKey};
use crate::config::{AgentConfig, LimitsConfig};
use crate::llm::{
    ChatMessage, ChatProvider, ChatRequest, FinishReason, LlmError, StreamEvent, ToolCall,
    ToolChoice, ToolResult, Usage,
};
use crate::store::{
    ActionOrigin, AuditEntry, AuditKind, NewMessage, QueuedQuestion, Store, StoreError,
};
use crate::tools::{RegisteredTool, ToolError, ToolRegistry};

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
    /// and a call required (see [`ToolChoice::Required`]).
    pub constrain_repairs: bool,
}

impl ModelSettings {
    /// The settings the configuration's `[llm]` table gives.
    pub fn of(llm: &crate::config::LlmConfig) -> Self {
        Self {
            temperature: Some(llm.temperature),
            max_output_tokens: Some(llm.max_output_tokens),
            constrain_repairs: llm.constrain_repairs,
        }
    }
}

/// The agent: owns every decision between an input and its effects.
pub struct Agent {
    pub(super) store: Arc<dyn Store>,
    provider: Option<Arc<dyn ChatProvider>>,
    tools: Arc<ToolRegistry>,
    pub(super) runner: ToolRunner,
    pub(super) cfg: AgentConfig,
    model: ModelSettings,
    limiter: TurnLimiter,
    admission: Admission,
    /// Every turn and every platform task that leads to one, so shutdown can wait for them
    /// whatever the transport.
    tasks: tokio_util::task::TaskTracker,
    context: ContextPolicy,
    /// Downloads of attached files and whether the model sees pictures.
    pub(super) intake: super::inbound::FileIntake,
    ledger: Ledger,
}

/// What one streamed model call produced.
struct ModelTurn {
    text: String,
    calls: Vec<ToolCall>,
    signature: Option<String>,
    usage: Usage,
    finish: FinishReason,
}

impl ModelTurn {
    /// Whether the turn has nothing to store or show.
    fn is_empty(&self) -> bool {
        self.text.trim().is_empty() && self.calls.is_empty()
    }
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
                    .run_model_with(&session, &input.user, &files, sink)
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
            citations: citations
                .into_iter()
                .map(|(section, edition, source)| Citation {
                    section,
                    edition,
                    source,
                })
                .collect(),
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

    /// Thinking: model calls and read-only tools until an answer, a proposal or a limit.
    pub(super) async fn run_model(
        &self,
        session: &Session,
        user: &str,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        self.run_model_with(session, user, &super::inbound::TurnFiles::default(), sink)
            .await
    }

    /// [`Self::run_model`] with files that join every model request of this turn only.
    pub(super) async fn run_model_with(
        &self,
        session: &Session,
        user: &str,
        files: &super::inbound::TurnFiles,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        self.run_model_from(session, user, files, None, None, sink)
            .await
    }

    /// [`Self::run_model_with`] from the thread's history when the caller read it already;
    /// the turn's last write finishes `end`.
    async fn run_model_from(
        &self,
        session: &Session,
        user: &str,
        files: &super::inbound::TurnFiles,
        history: Option<super::window::TurnHistory>,
        end: Option<&TurnEnd<'_>>,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        // Offline, a resolved confirmation needs no follow-up: its outcome was already shown.
        let Some(provider) = self.provider.clone() else {
            return Ok(());
        };
        // The thread is read once; the turn's own writes are added as it goes.
        let mut history = match history {
            Some(read) => read,
            None => super::window::TurnHistory::load(self.store.as_ref(), session).await?,
        };
        // One read of the project serves every request and tool call of the turn.
        let turn_project = session.project_id.map(|id| {
            Arc::new(super::turn_project::TurnProject::seen_at(
                id,
                history.project_revision(id),
            ))
        });
        let mut ctx = self.tool_context(session, user);
        ctx.turn_project = turn_project.clone();
        if self.context.digest_old_results {
            // What the requests would send of old results is all this turn keeps of them.
            history.digest_old_results(super::request::WHOLE_RESULT_TURNS);
        }
        // A read call repeated in the turn (same tool, same arguments) gets the first call's
        // result, found by that call's id in the turn's results.
        let mut cache: HashMap<(String, String), String> = HashMap::new();
        let mut citations: BTreeSet<(String, Option<i32>, String)> = BTreeSet::new();
        let mut tool_calls_used = 0u32;
        let mut usage = Usage::default();
        let mut model_calls = 0u32;
        // One silent retry per model call for a turn that failed before showing anything.
        let mut retried = false;
        // A step's writes (the model's message, the tool results, their audit rows) wait in
        // `unsaved` and are stored with the next write of the turn: with the final answer and
        // the turn's audit row in one statement, or before a proposal. A turn that fails
        // midway still stores what it did; one cut off by a crash is retold from its input.
        let mut unsaved = UnsavedSteps::default();
        // Calls that failed in this turn: sent again unchanged, they are not run again.
        let mut failed_calls = super::repeats::FailedCalls::default();
        // A tool whose arguments were refused: the next request asks for it alone (once per
        // tool and turn).
        let mut repair: Option<String> = None;
        let mut repaired: std::collections::HashSet<String> = Default::default();
        let stepped: Result<Option<(NewMessage, String)>, CoreError> = async {
            loop {
                if model_calls >= self.cfg.max_model_calls_per_turn {
                    sink.emit(Effect::Error {
                        message: format!(
                            "I stopped after {model_calls} model calls in this turn without reaching an answer. \
                             Please narrow the question or ask me to continue."
                        ),
                    })
                    .await;
                    break;
                }
                model_calls += 1;
                let mut request = request::build(
                    self.store.as_ref(),
                    &self.tools,
                    session,
                    &mut history,
                    self.cfg.history_token_budget,
                    &self.context,
                    self.model.temperature,
                    Some(provider.as_ref()),
                    turn_project.as_deref(),
                )
                .await?;
                files.attach(&mut request);
                request.max_output_tokens = self.model.max_output_tokens;
                if let Some(name) = repair.take() {
                    // Only the tool whose arguments were refused, and a call required: a
                    // server that decodes under the schema can only write valid arguments.
                    request.tools = self.tools.specs(&[name.as_str()]);
                    request.tool_choice = ToolChoice::Required;
                }
                sink.emit(Effect::Status {
                    text: super::activity::THINKING.into(),
                })
                .await;
                let model_call = async {
                    let called = Instant::now();
                    let streamed = self.stream_model(provider.as_ref(), request, sink).await;
                    observe_model_call(&provider.name(), called, &streamed);
                    streamed
                };
                // A summary the window wrote is stored while the model answers.
                let (saved, streamed) =
                    tokio::join!(history.save_summary(self.store.as_ref()), model_call);
                saved?;
                let turn = match streamed {
                    Ok(t) => t,
                    Err(e) => {
                        sink.emit(Effect::Error {
                            message: user_message(&e),
                        })
                        .await;
                        break;
                    }
                };
                usage.add(&turn.usage);
                if !turn.finish.is_normal() || turn.is_empty() {
                    let retryable = turn.text.trim().is_empty()
                        && matches!(
                            turn.finish,
                            FinishReason::MalformedToolCall
                                | FinishReason::Stop
                                | FinishReason::ToolCalls
                        );
                    if retryable && !retried {
                        tracing::warn!(finish = ?turn.finish, "model turn without an answer; asking again");
                        retried = true;
                        continue;
                    }
                    tracing::warn!(finish = ?turn.finish, text_len = turn.text.len(), "model turn ended without a usable answer");
                    // What was cut off at the length limit is still an answer; blocked text is not
                    // kept, and an empty turn is never stored (providers reject empty text).
                    let keep = turn.finish == FinishReason::Length && !turn.text.trim().is_empty();
                    if keep {
                        let cut = ChatMessage::Assistant {
                            text: turn.text.clone(),
                            tool_calls: Vec::new(),
                            thought_signature: turn.signature.clone(),
                        };
                        unsaved
                            .messages
                            .push(super::history::new_message(&cut, None, None));
                        unsaved.save(self.store.as_ref(), session.id).await?;
                        sink.emit(Effect::Text {
                            text: turn.text.clone(),
                            citations: citation_list(&citations),
                        })
                        .await;
                    }
                    sink.emit(Effect::Error {
                        message: finish_message(turn.finish, !turn.text.trim().is_empty()),
                    })
                    .await;
                    break;
                }
                retried = false;
                // A step's writes (this message, the tool results, their audit rows) are kept
                // together once its tools ran, so a step cut short leaves no call without its
                // results.
                let said = ChatMessage::Assistant {
                    text: turn.text.clone(),
                    tool_calls: turn.calls.clone(),
                    thought_signature: turn.signature.clone(),
                };
                let assistant = super::history::new_message(&said, None, None);
                if turn.calls.is_empty() {
                    // Stored with the turn's audit row, then shown.
                    return Ok(Some((assistant, turn.text)));
                }
                let mut audits: Vec<AuditEntry> = Vec::new();

                let mut results: Vec<ToolResult> = Vec::new();
                let mut writes: Vec<PlannedCall> = Vec::new();
                // Write calls that could not be planned: the card names them.
                let mut rejected: Vec<ToolResult> = Vec::new();
                let who = RunFor {
                    session_id: Some(session.id),
                    actor: user,
                };
                // Set when the model sent a failed call unchanged a second time.
                let mut give_up: Option<String> = None;
                for call in &turn.calls {
                    if tool_calls_used >= self.cfg.max_tool_calls_per_turn {
                        let r = error_result(
                            call,
                            &ToolError::RateLimited(format!(
                                "left out: the limit of {} tool calls per turn was reached; answer with what you have",
                                self.cfg.max_tool_calls_per_turn
                            )),
                        );
                        // A change left out is named on the card, so nobody takes the card
                        // for the whole request.
                        if self.tools.get(&call.name).is_some_and(|t| t.writes()) {
                            rejected.push(r.clone());
                        }
                        results.push(r);
                        continue;
                    }
                    match failed_calls.verdict(call, self.tools.schema(&call.name)) {
                        super::repeats::Verdict::Run => {}
                        super::repeats::Verdict::Instruct(r) => {
                            results.push(r);
                            continue;
                        }
                        super::repeats::Verdict::Stop { result, message } => {
                            results.push(result);
                            give_up.get_or_insert(message);
                            continue;
                        }
                    }
                    tool_calls_used += 1;
                    let validated = match self.runner.validate(Some(session.mode), call) {
                        Ok(v) => v,
                        Err(e) => {
                            self.runner.audit_refused(call, &e, who).await?;
                            if self.model.constrain_repairs
                                && matches!(e, ToolError::InvalidArguments(_))
                                && self.tools.get(&call.name).is_some()
                                && repaired.insert(call.name.clone())
                            {
                                repair.get_or_insert_with(|| call.name.clone());
                            }
                            let r = error_result(call, &e);
                            failed_calls.record(call, &r);
                            if self.tools.get(&call.name).is_some_and(|t| t.writes()) {
                                rejected.push(r.clone());
                            }
                            results.push(r);
                            continue;
                        }
                    };
                    let tool = match validated.tool {
                        RegisteredTool::Write(tool) => {
                            // Later write calls of the turn plan against the earlier ones.
                            let mut write_ctx = ctx.clone();
                            write_ctx.planned = Arc::new(
                                writes
                                    .iter()
                                    .flat_map(|w| w.plan.item.changes.iter().cloned())
                                    .collect(),
                            );
                            match self
                                .runner
                                .plan(call, tool, &validated.args, &write_ctx, who)
                                .await
                            {
                                Ok(plan) => writes.push(PlannedCall {
                                    call: call.clone(),
                                    args: validated.args,
                                    plan,
                                }),
                                Err(e) => {
                                    let r = error_result(call, &e);
                                    failed_calls.record(call, &r);
                                    rejected.push(r.clone());
                                    results.push(r);
                                }
                            }
                            continue;
                        }
                        RegisteredTool::Read(tool) => tool,
                    };
                    let cache_key = (call.name.clone(), validated.args.to_string());
                    let hit = cache.get(&cache_key).and_then(|first| {
                        results
                            .iter()
                            .find(|r| &r.call_id == first)
                            .or_else(|| history.tool_result(first))
                            .cloned()
                    });
                    let result = match hit {
                        Some(hit) => ToolResult {
                            call_id: call.id.clone(),
                            ..hit
                        },
                        None => {
                            sink.emit(Effect::Status {
                                text: super::activity::of_tool(&call.name, &validated.args),
                            })
                            .await;
                            let (mut r, audit) = self
                                .runner
                                .run_read_deferred(call, tool, validated.args, &ctx, who)
                                .await;
                            // The audit row keeps the result as it came from the tool.
                            audits.push(audit);
                            // A file goes to the thread, never into the history or the model.
                            if let Some(file) = super::attachment::take_attachment(&mut r.content) {
                                sink.emit(Effect::File { file }).await;
                            }
                            // What people wrote in the project reaches the model as data.
                            if !r.is_error {
                                super::untrusted::fence_tool_result(&mut r.content);
                            }
                            cache.insert(cache_key, r.call_id.clone());
                            r
                        }
                    };
                    failed_calls.record(call, &result);
                    collect_citations(&result.content, &mut citations);
                    results.push(result);
                }

                // The person hears once why the turn stops, before any proposal of the step.
                let stop = give_up.is_some();
                if let Some(message) = give_up {
                    sink.emit(Effect::Error { message }).await;
                }
                if !writes.is_empty() {
                    // The proposal is stored after the steps that led to it.
                    unsaved.messages.push(assistant);
                    unsaved.audits.extend(audits);
                    unsaved.save(self.store.as_ref(), session.id).await?;
                    self.propose(
                        session,
                        user,
                        ActionOrigin::Model,
                        writes,
                        &rejected,
                        results,
                        sink,
                    )
                    .await?;
                    break;
                }
                // No proposal to carry them: the person hears of failed changes here.
                for r in &rejected {
                    sink.emit(Effect::Error {
                        message: format!(
                            "The proposed change ({}) could not be prepared: {}",
                            r.name,
                            r.content
                                .get("error")
                                .and_then(Value::as_str)
                                .unwrap_or("failed")
                        ),
                    })
                    .await;
                }
                let tool_message = ChatMessage::Tool { results };
                unsaved.messages.push(assistant);
                unsaved
                    .messages
                    .push(super::history::new_message(&tool_message, None, None));
                unsaved.audits.extend(audits);
                history.extend([said, tool_message]);
                if stop {
                    break;
                }
            }
            Ok(None)
        }
        .await;
        // The thread as read is not needed for the last write: a turn waiting on the pool
        // for it holds only what it writes.
        drop(history);
        drop(cache);
        let answer = match stepped {
            Ok(answer) => answer,
            Err(e) => {
                if let Err(lost) = unsaved.save(self.store.as_ref(), session.id).await {
                    tracing::error!(error = %lost, "could not store a failed turn's steps");
                }
                return Err(e);
            }
        };
        usage.record(&provider.name());
        let (answer, shown) = match answer {
            Some((message, text)) => (Some(message), Some(text)),
            None => (None, None),
        };
        let turn_audit = AuditEntry {
            session_id: Some(session.id),
            actor: "model".into(),
            kind: AuditKind::Execution,
            tool: Some("model_turn".into()),
            action_id: None,
            args: json!({"provider": provider.name(), "model_calls": model_calls, "tool_calls": tool_calls_used}),
            result: json!({"input_tokens": usage.input_tokens, "cached_input_tokens": usage.cached_input_tokens, "output_tokens": usage.output_tokens}),
            is_error: false,
            duration_ms: 0,
            at: Utc::now(),
        };
        unsaved.messages.extend(answer);
        unsaved.audits.push(turn_audit);
        match end {
            Some(end) => {
                end.write(self.store.as_ref(), session.id, &mut unsaved)
                    .await?
            }
            None => unsaved.save(self.store.as_ref(), session.id).await?,
        }
        if let Some(text) = shown {
            sink.emit(Effect::Text {
                text,
                citations: citation_list(&citations),
            })
            .await;
        }
        Ok(())
    }

    async fn stream_model(
        &self,
        provider: &dyn ChatProvider,
        request: ChatRequest,
        sink: &dyn EffectSink,
    ) -> Result<ModelTurn, LlmError> {
        // Until the first event, the person is told now and then that the model is awaited.
        let every = Duration::from_secs(self.cfg.waiting_status_secs.max(1));
        let started = async {
            let mut stream = provider.stream(&request).await?;
            let first = stream.next().await;
            Ok::<_, LlmError>((first, stream))
        };
        let (first, rest) = while_waiting(started, every, sink).await?;
        // Sent: the copy of the history it holds is not kept while the answer streams.
        drop(request);
        let mut stream = futures::stream::iter(first).chain(rest);
        let mut turn = ModelTurn {
            text: String::new(),
            calls: Vec::new(),
            signature: None,
            usage: Usage::default(),
            finish: FinishReason::Stop,
        };
        while let Some(event) = stream.next().await {
            match event? {
                StreamEvent::TextDelta(t) => {
                    // Model text cannot carry the core's mention markers.
                    let t = mention::strip(&t);
                    turn.text.push_str(&t);
                    sink.emit(Effect::Delta { text: t }).await;
                }
                StreamEvent::ToolCall(c) => turn.calls.push(c),
                StreamEvent::TextSignature(s) => turn.signature = Some(s),
                StreamEvent::Usage(u) => turn.usage = u,
                StreamEvent::Done(reason) => {
                    turn.finish = reason;
                    break;
                }
            }
        }
        // Ids must be unique within a turn for results to be matched.
        let mut seen = std::collections::HashSet::new();
        for (i, c) in turn.calls.iter_mut().enumerate() {
            if c.id.is_empty() || !seen.insert(c.id.clone()) {
                c.id = format!("call_{}_{}", i, uuid::Uuid::new_v4().simple());
                seen.insert(c.id.clone());
            }
        }
        Ok(turn)
    }
}

/// Runs `work`, emitting "waiting for the model (N s)…" every `every` until it ends: a
/// model server on a CPU may read a long prompt for minutes before its first token, and a
/// person seeing nothing for that long takes the bot for dead.
async fn while_waiting<T>(
    work: impl std::future::Future<Output = T>,
    every: Duration,
    sink: &dyn EffectSink,
) -> T {
    let started = tokio::time::Instant::now();
    let mut ticks = tokio::time::interval_at(started + every, every);
    tokio::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = ticks.tick() => {
                let secs = started.elapsed().as_secs();
                sink.emit(Effect::Status {
                    text: format!("waiting for the model ({secs} s)…"),
                })
                .await;
            }
        }
    }
}

/// Counts a model call, its latency and its tokens by provider.
fn observe_model_call(provider: &str, started: Instant, result: &Result<ModelTurn, LlmError>) {
    let m = crate::telemetry::metrics();
    m.model_seconds
        .with_label_values(&[provider])
        .observe(started.elapsed().as_secs_f64());
    let outcome = if result.is_ok() { "ok" } else { "error" };
    m.model_calls.with_label_values(&[provider, outcome]).inc();
    if let Ok(turn) = result {
        m.tokens
            .with_label_values(&[provider, "input"])
            .inc_by(turn.usage.input_tokens);
        m.tokens
            .with_label_values(&[provider, "output"])
            .inc_by(turn.usage.output_tokens);
    }
}

/// A turn's writes not stored yet, in the order they happened.
#[derive(Default)]
pub(super) struct UnsavedSteps {
    messages: Vec<NewMessage>,
    audits: Vec<AuditEntry>,
}

impl UnsavedSteps {
    /// Stores them together (one statement on Postgres); nothing is left once stored.
    async fn save(&mut self, store: &dyn Store, session_id: i64) -> Result<(), StoreError> {
        if self.messages.is_empty() && self.audits.is_empty() {
            return Ok(());
        }
        store
            .append_turn_step(session_id, &self.messages, &self.audits)
            .await?;
        self.messages.clear();
        self.audits.clear();
        Ok(())
    }

    /// Stores them with the finishing of the turn's input (see [`TurnEnd`]).
    pub(super) async fn end(
        &mut self,
        store: &dyn Store,
        session_id: i64,
        input: crate::store::InputFinish<'_>,
    ) -> Result<bool, StoreError> {
        let released = store
            .end_turn(session_id, &self.messages, &self.audits, input)
            .await?;
        self.messages.clear();
        self.audits.clear();
        Ok(released)
    }
}

fn error_result(call: &ToolCall, e: &ToolError) -> ToolResult {
    ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: e.to_json(),
        is_error: true,
    }
}

fn collect_citations(content: &Value, out: &mut BTreeSet<(String, Option<i32>, String)>) {
    let Some(passages) = content.get("passages").and_then(Value::as_array) else {
        return;
    };
    for p in passages {
        if let Some(section) = p.get("section").and_then(Value::as_str) {
            let edition = p
                .get("edition")
                .and_then(Value::as_i64)
                .and_then(|e| i32::try_from(e).ok());
            let source = p
                .get("source")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            out.insert((section.to_string(), edition, source));
        }
    }
}

fn user_message(e: &LlmError) -> String {
    match e {
        LlmError::RateLimited { retry_after } => format!(
            "The language model is rate limiting us{}. Your message is saved; please try again shortly.",
            retry_after
                .map(|d| format!(" (about {} s)", d.as_secs().max(1)))
                .unwrap_or_default()
        ),
        LlmError::ContextTooLong => {
            "This conversation is too long for the model. Start a new thread; your project data is unaffected. \
             If a thread's first message gets this answer, the model server's context window is \
             smaller than the instructions and tools need: an administrator can start it with a \
             larger one.".into()
        }
        LlmError::Auth(_) => "The language model refused our credentials; an administrator needs to check the API key.".into(),
        LlmError::Timeout(t) => timeout_message(t),
        other => format!("The language model failed ({other}). Your message is saved; please try again."),
    }
}

/// What the person is told when a model call ran out of time: which bound, and which
/// setting raises it when the server is only slow.
fn timeout_message(t: &crate::llm::TimedOut) -> String {
    let raise = match t.stage.setting() {
        Some(setting) => format!(
            " If the model server is just slow (a local model on a CPU can take minutes), an \
             administrator can raise {setting} in bot-config.toml."
        ),
        None => String::new(),
    };
    format!(
        "The language model did not answer in time: {t}. Your message is saved; please try \
         again.{raise}"
    )
}

fn citation_list(citations: &BTreeSet<(String, Option<i32>, String)>) -> Vec<Citation> {
    citations
        .iter()
        .map(|(section, edition, source)| Citation {
            section: section.clone(),
            edition: *edition,
            source: source.clone(),
        })
        .collect()
}

/// What the user is told when a model turn ended without a usable answer; `partial` when
/// some of its text was already shown.
fn finish_message(reason: FinishReason, partial: bool) -> String {
    let incomplete = if partial {
        " What was shown above is incomplete."
    } else {
        ""
    };
    match reason {
        FinishReason::Length if partial => {
            "The answer was cut off at the model's output limit. Ask me to continue, or ask a narrower question.".into()
        }
        FinishReason::Length => {
            "The model reached its output limit before writing an answer. Please ask a narrower question.".into()
        }
        FinishReason::ContentFilter => format!(
            "The model provider's safety filter blocked this answer.{incomplete} Please rephrase the question."
        ),
        FinishReason::Blocklist => format!(
            "The model provider stopped this answer because it matched a blocked term.{incomplete} Please rephrase the question."
        ),
        FinishReason::SensitiveData => format!(
            "The model provider stopped this answer because it may contain sensitive personal information.{incomplete} Leave personal details out and ask again."
        ),
        FinishReason::Recitation => format!(
            "The model provider stopped this answer because it would have quoted a source word for word.{incomplete} Ask for a summary or the section number instead."
        ),
        FinishReason::MalformedToolCall => format!(
            "The model could not form a valid tool call, even on a second try.{incomplete} Please rephrase the question or ask again."
        ),
        FinishReason::Other => format!(
            "The model stopped without finishing its answer.{incomplete} Please try again."
        ),
        FinishReason::Stop | FinishReason::ToolCalls => {
            "The model returned an empty answer, even on a second try. Please try again or rephrase the question.".into()
        }
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
