//! The turn loop and the confirmation gate (DESIGN.md section 3).
//!
//! ```text
//! Idle --text--> Thinking --model text--> Idle
//!                   |--read-only calls--> run --> Thinking
//!                   |--write calls--> Review (pending action stored, confirmation shown)
//! Review --Confirm--> execute --> results to model --> Thinking
//! Review --Cancel--> "cancelled" to model --> Thinking
//! Review --text--> superseded; the text is the calls' result --> Thinking
//! ```

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use futures::StreamExt;
use serde_json::{json, Value};

use super::effects::{Citation, Effect, EffectSink, Outcome};
use super::lease::Admission;
use super::limits::TurnLimiter;
use super::session::{Mode, Session, SessionKey};
use super::{context, modes, window};
use crate::config::{AgentConfig, ConfirmPolicy, LimitsConfig};
use crate::llm::{
    ChatMessage, ChatProvider, ChatRequest, FinishReason, LlmError, StreamEvent, ToolCall,
    ToolResult, Usage,
};
use crate::project::MemberRole;
use crate::store::{
    ActionItem, AuditEntry, AuditKind, ConfirmRule, NewMessage, NewPendingAction, PendingAction,
    PendingState, Store, StoreError,
};
use crate::tools::{ToolContext, ToolError, ToolRegistry, ValidatedCall};

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
}

impl InputAction {
    /// The kind, as metrics label it: message, confirm or cancel.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Message { .. } => "message",
            Self::Confirm { .. } => "confirm",
            Self::Cancel { .. } => "cancel",
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

/// The agent: owns every decision between an input and its effects.
pub struct Agent {
    store: Arc<dyn Store>,
    provider: Option<Arc<dyn ChatProvider>>,
    tools: Arc<ToolRegistry>,
    cfg: AgentConfig,
    temperature: Option<f32>,
    limiter: TurnLimiter,
    admission: Admission,
    /// Every turn and every platform task that leads to one, so shutdown can wait for them
    /// whatever the transport.
    tasks: tokio_util::task::TaskTracker,
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
            admission: Admission::new(store.clone(), &cfg),
            tasks: tokio_util::task::TaskTracker::new(),
            store,
            provider,
            tools,
            cfg,
            temperature: None,
            limiter: TurnLimiter::new(limits),
        }
    }

    /// Sets the sampling temperature sent to the model.
    pub fn with_temperature(mut self, t: f32) -> Self {
        self.temperature = Some(t);
        self
    }

    /// The store this agent writes to.
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
            if matches!(input.action, InputAction::Message { .. }) {
                // The first sign of life comes before any database work, however busy.
                tx.emit(Effect::Status {
                    text: "received".into(),
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
        match self.session_of(&input).await? {
            Some(session_id) => self.admission.serve(self, session_id, input, sink).await,
            None => {
                // Nothing to queue behind (a button of an unknown action): answered at once.
                if let Some(event_id) = &input.event_id {
                    if !self
                        .store
                        .claim_event(&input.key.platform, event_id)
                        .await?
                    {
                        return Ok(());
                    }
                }
                self.dispatch(&input, sink).await
            }
        }
    }

    /// The session an input belongs to: its thread's, or for a button its action's.
    async fn session_of(&self, input: &Input) -> Result<Option<i64>, CoreError> {
        Ok(match &input.action {
            InputAction::Message { mode, .. } => {
                Some(self.open_session(&input.key, *mode).await?.id)
            }
            InputAction::Confirm {
                action_id: Some(id),
            }
            | InputAction::Cancel {
                action_id: Some(id),
            } => self.store.pending(id).await?.map(|a| a.session_id),
            InputAction::Confirm { action_id: None } | InputAction::Cancel { action_id: None } => {
                Some(self.open_session(&input.key, None).await?.id)
            }
        })
    }

    /// Runs one admitted input: the caller holds its thread's lease.
    pub(super) async fn dispatch(
        &self,
        input: &Input,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        match input.action.clone() {
            InputAction::Message { text, mode } => self.on_message(input, text, mode, sink).await,
            InputAction::Confirm { action_id } => {
                self.on_resolve(input, action_id, true, sink).await
            }
            InputAction::Cancel { action_id } => {
                self.on_resolve(input, action_id, false, sink).await
            }
        }
    }

    async fn open_session(
        &self,
        key: &SessionKey,
        mode: Option<Mode>,
    ) -> Result<Session, CoreError> {
        let bound = self
            .store
            .channel_project(&key.platform, &key.workspace, &key.channel)
            .await?;
        let mut session = self
            .store
            .open_session(key, mode.unwrap_or_default(), bound)
            .await?;
        if let Some(m) = mode {
            if m != session.mode {
                self.store.set_session_mode(session.id, m).await?;
                session.mode = m;
            }
        }
        if session.project_id.is_none() && bound.is_some() {
            self.store.set_session_project(session.id, bound).await?;
            session.project_id = bound;
        }
        Ok(session)
    }

    async fn on_message(
        &self,
        input: &Input,
        text: String,
        mode: Option<Mode>,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        if let Err(message) = self.limiter.check(&input.key, &input.user) {
            sink.emit(Effect::Error { message }).await;
            return Ok(());
        }
        let session = self.open_session(&input.key, mode).await?;

        // Typing while a confirmation is pending is a correction, not a confirmation.
        if let Some(action) = self.store.open_pending_for_session(session.id).await? {
            let now = Utc::now();
            if action.expires_at > now && !self.may_resolve(&action, &session, &input.user).await? {
                // Only someone who may resolve the proposal can supersede it. Anyone else's
                // words are kept in the thread; the model reads them, with their author, once
                // the proposal is resolved.
                self.append(
                    session.id,
                    ChatMessage::user(text),
                    Some(&input.user),
                    input.event_id.clone(),
                )
                .await?;
                sink.emit(Effect::Refusal {
                    action_id: Some(action.id.clone()),
                    user: input.user.clone(),
                    message: format!(
                        "A proposed change is waiting for {}; it stays as proposed. Your message \
                         is kept and will be read when the proposal is resolved.",
                        confirmers_text(&action.rule)
                    ),
                })
                .await;
                return Ok(());
            }
            let (to, kind, outcome, note) = if action.expires_at <= now {
                (
                    PendingState::Expired,
                    AuditKind::Expired,
                    Outcome::Expired,
                    json!({"status": "expired", "message": "the proposal expired before anyone confirmed it; nothing was changed"}),
                )
            } else {
                (
                    PendingState::Superseded,
                    AuditKind::Corrected,
                    Outcome::Superseded,
                    json!({"status": "not_confirmed", "message": "the user did not confirm; nothing was changed. The user said instead:", "user_said": text}),
                )
            };
            if let Some(action) = self
                .store
                .transition_pending(
                    &action.id,
                    PendingState::Pending,
                    to,
                    Some(&input.user),
                    now,
                )
                .await?
            {
                self.audit_decision(&action, &input.user, kind, json!({"text": text}))
                    .await?;
                let results = with_write_results(&action, note);
                sink.emit(Effect::Resolved {
                    action_id: action.id.clone(),
                    outcome,
                    by: Some(input.user.clone()),
                    details: vec![match outcome {
                        Outcome::Expired => "expired before anyone confirmed it".to_string(),
                        _ => "superseded by your message".to_string(),
                    }],
                })
                .await;
                self.append(
                    session.id,
                    ChatMessage::Tool { results },
                    Some(&input.user),
                    input.event_id.clone(),
                )
                .await?;
                if outcome == Outcome::Superseded {
                    return self.run_model(&session, &input.user, sink).await;
                }
            }
        }

        self.append(
            session.id,
            ChatMessage::user(text.clone()),
            Some(&input.user),
            input.event_id.clone(),
        )
        .await?;
        if self.provider.is_none() {
            return self
                .offline_answer(&session, &input.user, &text, sink)
                .await;
        }
        self.run_model(&session, &input.user, sink).await
    }

    /// Without a model, a question is answered with the best passages and their citations.
    async fn offline_answer(
        &self,
        session: &Session,
        user: &str,
        text: &str,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        let Ok(call) = self
            .tools
            .validate("search_code", &json!({ "query": text }).to_string())
        else {
            sink.emit(Effect::Text {
                text: offline_reply(),
                citations: vec![],
            })
            .await;
            return Ok(());
        };
        let ctx = self.tool_context(session, user);
        let tool_call = ToolCall {
            id: "offline".into(),
            name: "search_code".into(),
            arguments: call.args.to_string(),
            thought_signature: None,
        };
        let result = self
            .run_tool(&tool_call, call, &ctx, Some(session.id), user, None)
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
            answer.push('\n');
        }
        answer.push_str(&offline_reply());
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

    async fn append(
        &self,
        session_id: i64,
        message: ChatMessage,
        author: Option<&str>,
        event_id: Option<String>,
    ) -> Result<(), CoreError> {
        self.store
            .append_message(
                session_id,
                &NewMessage {
                    message,
                    author: author.map(str::to_string),
                    event_id,
                },
            )
            .await?;
        Ok(())
    }

    async fn on_resolve(
        &self,
        input: &Input,
        action_id: Option<String>,
        confirm: bool,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        let action = match &action_id {
            Some(id) => self.store.pending(id).await?,
            None => {
                let session = self.open_session(&input.key, None).await?;
                self.store.open_pending_for_session(session.id).await?
            }
        };
        let Some(action) = action else {
            sink.emit(Effect::Error {
                message: match action_id {
                    Some(id) => format!("There is no proposed change with id {id}."),
                    None => "There is no proposed change waiting for confirmation here.".into(),
                },
            })
            .await;
            return Ok(());
        };
        let Some(session) = self.store.session(action.session_id).await? else {
            return Err(StoreError::NotFound(format!(
                "session {} of action {}",
                action.session_id, action.id
            ))
            .into());
        };
        // Re-read as the thread's lease holder: another replica may have resolved it meanwhile.
        let Some(action) = self.store.pending(&action.id).await? else {
            return Ok(());
        };
        if action.state != PendingState::Pending {
            emit_already_resolved(sink, &action, &input.user).await;
            return Ok(());
        }
        let now = Utc::now();
        if action.expires_at <= now {
            if let Some(action) = self
                .store
                .transition_pending(
                    &action.id,
                    PendingState::Pending,
                    PendingState::Expired,
                    None,
                    now,
                )
                .await?
            {
                self.audit_decision(&action, "system", AuditKind::Expired, Value::Null)
                    .await?;
                let results = with_write_results(
                    &action,
                    json!({"status": "expired", "message": "the proposal expired before anyone confirmed it; nothing was changed"}),
                );
                self.append(session.id, ChatMessage::Tool { results }, None, None)
                    .await?;
                sink.emit(Effect::Resolved {
                    action_id: action.id.clone(),
                    outcome: Outcome::Expired,
                    by: None,
                    details: vec!["This proposal expired; nothing was changed. Ask again if it is still wanted.".into()],
                })
                .await;
            }
            return Ok(());
        }
        if !self.may_resolve(&action, &session, &input.user).await? {
            self.audit_decision(
                &action,
                &input.user,
                AuditKind::Refused,
                json!({"confirm": confirm}),
            )
            .await?;
            sink.emit(Effect::Refusal {
                action_id: Some(action.id.clone()),
                user: input.user.clone(),
                message: format!(
                    "Only {} can confirm or cancel this change.",
                    confirmers_text(&action.rule)
                ),
            })
            .await;
            return Ok(());
        }
        let to = if confirm {
            PendingState::Confirmed
        } else {
            PendingState::Cancelled
        };
        let Some(action) = self
            .store
            .transition_pending(
                &action.id,
                PendingState::Pending,
                to,
                Some(&input.user),
                now,
            )
            .await?
        else {
            // Lost a race with another click or replica: the winner reports the outcome.
            if let Some(a) = self.store.pending(&action.id).await? {
                emit_already_resolved(sink, &a, &input.user).await;
            }
            return Ok(());
        };

        let (results, outcome, details) = if confirm {
            self.audit_decision(&action, &input.user, AuditKind::Confirmed, Value::Null)
                .await?;
            self.execute_action(&action, &session, &input.user, sink)
                .await?
        } else {
            self.audit_decision(&action, &input.user, AuditKind::Cancelled, Value::Null)
                .await?;
            let results = with_write_results(
                &action,
                json!({"status": "cancelled", "message": format!("{} cancelled this change; nothing was changed", input.user)}),
            );
            (
                results,
                Outcome::Cancelled,
                vec!["Cancelled; nothing was changed.".to_string()],
            )
        };
        sink.emit(Effect::Resolved {
            action_id: action.id.clone(),
            outcome,
            by: Some(input.user.clone()),
            details,
        })
        .await;
        self.append(
            session.id,
            ChatMessage::Tool { results },
            Some(&input.user),
            input.event_id.clone(),
        )
        .await?;
        self.run_model(&session, &input.user, sink).await
    }

    /// Runs the confirmed write calls once and records the outcome.
    async fn execute_action(
        &self,
        action: &PendingAction,
        session: &Session,
        user: &str,
        sink: &dyn EffectSink,
    ) -> Result<(Vec<ToolResult>, Outcome, Vec<String>), CoreError> {
        let ctx = self.tool_context(session, user);
        let mut results = action.prior_results.clone();
        let mut details = Vec::new();
        let mut failed = false;
        for (call, item) in action.calls.iter().zip(&action.items) {
            sink.emit(Effect::Status {
                text: format!("applying {}", call.name),
            })
            .await;
            let result = match self.validate_in_mode(session.mode, call) {
                Ok(v) => {
                    self.run_tool(call, v, &ctx, Some(session.id), user, Some(&action.id))
                        .await
                }
                Err(e) => error_result(call, &e),
            };
            failed |= result.is_error;
            details.push(if result.is_error {
                format!(
                    "✗ {}: {}",
                    item.summary,
                    result
                        .content
                        .get("error")
                        .and_then(Value::as_str)
                        .unwrap_or("failed")
                )
            } else {
                format!("✓ {}", item.summary)
            });
            results.push(result);
        }
        let outcome_json = json!({
            "results": results.iter().map(|r| json!({"call_id": r.call_id, "tool": r.name, "is_error": r.is_error, "content": r.content})).collect::<Vec<_>>()
        });
        self.store
            .set_pending_outcome(&action.id, &outcome_json)
            .await?;
        self.store
            .transition_pending(
                &action.id,
                PendingState::Confirmed,
                PendingState::Executed,
                None,
                Utc::now(),
            )
            .await?;
        Ok((
            results,
            if failed {
                Outcome::Failed
            } else {
                Outcome::Executed
            },
            details,
        ))
    }

    async fn may_resolve(
        &self,
        action: &PendingAction,
        session: &Session,
        user: &str,
    ) -> Result<bool, CoreError> {
        let role = match session.project_id {
            Some(p) => {
                self.store
                    .member_role(p, &session.key.platform, user)
                    .await?
            }
            None => None,
        };
        Ok(match action.rule.policy {
            ConfirmPolicy::Requester => user == action.rule.requester,
            ConfirmPolicy::AnyMember => {
                user == action.rule.requester || session.project_id.is_none() || role.is_some()
            }
            ConfirmPolicy::Editors => matches!(role, Some(MemberRole::Editor | MemberRole::Owner)),
        })
    }

    /// Validates a call, refusing tools outside the session's mode whatever the model sent.
    fn validate_in_mode(&self, mode: Mode, call: &ToolCall) -> Result<ValidatedCall, ToolError> {
        if !modes::allows(mode, &call.name) {
            return Err(ToolError::NotFound(format!(
                "the tool {} is not available in {mode} mode",
                call.name
            )));
        }
        self.tools.validate(&call.name, &call.arguments)
    }

    fn tool_context(&self, session: &Session, user: &str) -> ToolContext {
        ToolContext {
            store: self.store.clone(),
            project_id: session.project_id,
            session_id: Some(session.id),
            user: user.to_string(),
            workspace: Some(session.key.workspace.clone()),
        }
    }

    async fn audit_decision(
        &self,
        action: &PendingAction,
        actor: &str,
        kind: AuditKind,
        details: Value,
    ) -> Result<(), CoreError> {
        self.store
            .record_audit(&AuditEntry {
                session_id: Some(action.session_id),
                actor: actor.to_string(),
                kind,
                tool: None,
                action_id: Some(action.id.clone()),
                args: json!({"tools": action.calls.iter().map(|c| c.name.clone()).collect::<Vec<_>>()}),
                result: details,
                is_error: kind == AuditKind::Refused,
                duration_ms: 0,
                at: Utc::now(),
            })
            .await?;
        Ok(())
    }

    /// Thinking: model calls and read-only tools until an answer, a proposal or a limit.
    async fn run_model(
        &self,
        session: &Session,
        user: &str,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        // Offline, a resolved confirmation needs no follow-up: its outcome was already shown.
        let Some(provider) = self.provider.clone() else {
            return Ok(());
        };
        let ctx = self.tool_context(session, user);
        let tool_specs = self
            .tools
            .specs(&modes::tool_names(session.mode, &self.tools));
        let mut cache: HashMap<(String, String), ToolResult> = HashMap::new();
        let mut citations: BTreeSet<(String, Option<i32>, String)> = BTreeSet::new();
        let mut tool_calls_used = 0u32;
        let mut usage = Usage::default();
        let mut model_calls = 0u32;
        // One silent retry per model call for a turn that failed before showing anything.
        let mut retried = false;
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
            let request = self.build_request(session, tool_specs.clone()).await?;
            sink.emit(Effect::Status {
                text: "thinking".into(),
            })
            .await;
            let called = Instant::now();
            let streamed = self.stream_model(provider.as_ref(), &request, sink).await;
            observe_model_call(&provider.name(), called, &streamed);
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
            usage.input_tokens += turn.usage.input_tokens;
            usage.output_tokens += turn.usage.output_tokens;
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
                    self.append(
                        session.id,
                        ChatMessage::Assistant {
                            text: turn.text.clone(),
                            tool_calls: Vec::new(),
                            thought_signature: turn.signature.clone(),
                        },
                        None,
                        None,
                    )
                    .await?;
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
            self.append(
                session.id,
                ChatMessage::Assistant {
                    text: turn.text.clone(),
                    tool_calls: turn.calls.clone(),
                    thought_signature: turn.signature.clone(),
                },
                None,
                None,
            )
            .await?;
            if turn.calls.is_empty() {
                sink.emit(Effect::Text {
                    text: turn.text,
                    citations: citation_list(&citations),
                })
                .await;
                break;
            }

            let mut results: Vec<ToolResult> = Vec::new();
            let mut writes: Vec<(ToolCall, ValidatedCall, ActionItem)> = Vec::new();
            for call in &turn.calls {
                if tool_calls_used >= self.cfg.max_tool_calls_per_turn {
                    results.push(error_result(
                        call,
                        &ToolError::RateLimited(format!(
                            "the limit of {} tool calls per turn is reached; answer with what you have",
                            self.cfg.max_tool_calls_per_turn
                        )),
                    ));
                    continue;
                }
                tool_calls_used += 1;
                let validated = match self.validate_in_mode(session.mode, call) {
                    Ok(v) => v,
                    Err(e) => {
                        self.audit_call(
                            session.id,
                            user,
                            call,
                            &Value::Null,
                            &e.to_json(),
                            true,
                            0,
                        )
                        .await?;
                        results.push(error_result(call, &e));
                        continue;
                    }
                };
                if validated.tool.writes() {
                    match self.preview(&validated, &ctx).await {
                        Ok(p) => {
                            let item = ActionItem {
                                call_id: call.id.clone(),
                                tool: call.name.clone(),
                                args: validated.args.clone(),
                                summary: p.summary,
                                details: p.details,
                            };
                            writes.push((call.clone(), validated, item));
                        }
                        Err(e) => results.push(error_result(call, &e)),
                    }
                    continue;
                }
                let cache_key = (call.name.clone(), validated.args.to_string());
                let result = match cache.get(&cache_key) {
                    Some(hit) => ToolResult {
                        call_id: call.id.clone(),
                        ..hit.clone()
                    },
                    None => {
                        sink.emit(Effect::Status {
                            text: format!("running {}", call.name),
                        })
                        .await;
                        let r = self
                            .run_tool(call, validated, &ctx, Some(session.id), user, None)
                            .await;
                        cache.insert(cache_key, r.clone());
                        r
                    }
                };
                collect_citations(&result.content, &mut citations);
                results.push(result);
            }

            if !writes.is_empty() {
                self.propose(session, user, writes, results, sink).await?;
                break;
            }
            self.append(session.id, ChatMessage::Tool { results }, None, None)
                .await?;
        }
        self.store
            .record_audit(&AuditEntry {
                session_id: Some(session.id),
                actor: "model".into(),
                kind: AuditKind::Execution,
                tool: Some("model_turn".into()),
                action_id: None,
                args: json!({"provider": provider.name(), "model_calls": model_calls, "tool_calls": tool_calls_used}),
                result: json!({"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}),
                is_error: false,
                duration_ms: 0,
                at: Utc::now(),
            })
            .await?;
        Ok(())
    }

    async fn propose(
        &self,
        session: &Session,
        user: &str,
        writes: Vec<(ToolCall, ValidatedCall, ActionItem)>,
        prior_results: Vec<ToolResult>,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        let policy = match session.project_id {
            Some(p) => self.store.project(p).await?.and_then(|p| p.confirm_policy),
            None => None,
        }
        .unwrap_or(self.cfg.confirm_policy);
        let now = Utc::now();
        let ttl =
            chrono::Duration::hours(i64::try_from(self.cfg.confirmation_ttl_hours).unwrap_or(24));
        let new = NewPendingAction {
            id: uuid::Uuid::new_v4().to_string(),
            session_id: session.id,
            rule: ConfirmRule {
                policy,
                requester: user.to_string(),
            },
            calls: writes.iter().map(|(c, _, _)| c.clone()).collect(),
            prior_results,
            items: writes.iter().map(|(_, _, i)| i.clone()).collect(),
            created_at: now,
            expires_at: now + ttl,
        };
        let action = self.store.create_pending(&new).await?;
        self.audit_decision(
            &action,
            user,
            AuditKind::Proposed,
            json!({"items": action.items.len()}),
        )
        .await?;
        sink.emit(Effect::Confirmation {
            action_id: action.id.clone(),
            items: action.items.clone(),
            requested_by: user.to_string(),
            confirmers: confirmers_text(&action.rule),
            expires_at: action.expires_at,
        })
        .await;
        Ok(())
    }

    async fn build_request(
        &self,
        session: &Session,
        tools: Vec<crate::llm::ToolSpec>,
    ) -> Result<ChatRequest, CoreError> {
        let win =
            window::build(self.store.as_ref(), session, self.cfg.history_token_budget).await?;
        let mut system = modes::system_prompt(session.mode);
        match session.project_id {
            Some(p) => match self.store.load_project(p).await {
                Ok(data) => {
                    system.push_str("\n\n# Project\n");
                    system.push_str(&context::project_context(&data));
                }
                Err(StoreError::NotFound(_)) => {
                    system.push_str("\n\nThe bound project no longer exists.")
                }
                Err(e) => return Err(e.into()),
            },
            None => system.push_str(
                "\n\nNo project is bound to this conversation; project tools will say so. \
                 The user can bind one with `/sparky project use NAME`.",
            ),
        }
        if !win.summary.is_empty() {
            system.push_str("\n\n# Earlier in this conversation\n");
            system.push_str(&win.summary);
        }
        Ok(ChatRequest {
            system,
            messages: win.messages,
            tools,
            temperature: self.temperature,
            max_output_tokens: None,
        })
    }

    async fn stream_model(
        &self,
        provider: &dyn ChatProvider,
        request: &ChatRequest,
        sink: &dyn EffectSink,
    ) -> Result<ModelTurn, LlmError> {
        let mut stream = provider.stream(request).await?;
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

    async fn preview(
        &self,
        call: &ValidatedCall,
        ctx: &ToolContext,
    ) -> Result<crate::tools::ActionPreview, ToolError> {
        let tool = call.tool.clone();
        let args = call.args.clone();
        let ctx = ctx.clone();
        let timeout = Duration::from_secs(self.cfg.tool_timeout_secs);
        let task = tokio::spawn(async move { tool.preview(&args, &ctx).await });
        match tokio::time::timeout(timeout, task).await {
            Ok(Ok(r)) => r,
            Ok(Err(join)) => Err(ToolError::Failed(format!(
                "the tool crashed while preparing the change: {join}"
            ))),
            Err(_) => Err(ToolError::Failed(format!(
                "preparing the change took longer than {} s",
                timeout.as_secs()
            ))),
        }
    }

    /// Executes one validated call with rate limit, timeout and panic isolation, and audits it.
    async fn run_tool(
        &self,
        call: &ToolCall,
        validated: ValidatedCall,
        ctx: &ToolContext,
        session_id: Option<i64>,
        user: &str,
        action_id: Option<&str>,
    ) -> ToolResult {
        let started = Instant::now();
        let args = validated.args.clone();
        let outcome = match self.tools.check_rate(&call.name) {
            Err(e) => Err(e),
            Ok(()) => {
                let tool = validated.tool.clone();
                let task_args = validated.args.clone();
                let task_ctx = ctx.clone();
                let timeout = Duration::from_secs(self.cfg.tool_timeout_secs);
                let task = tokio::spawn(async move { tool.execute(task_args, &task_ctx).await });
                let abort = task.abort_handle();
                match tokio::time::timeout(timeout, task).await {
                    Ok(Ok(r)) => r,
                    Ok(Err(join)) => Err(ToolError::Failed(format!(
                        "the tool {} crashed ({}); nothing else was affected",
                        call.name,
                        if join.is_panic() {
                            "panic"
                        } else {
                            "cancelled"
                        }
                    ))),
                    Err(_) => {
                        abort.abort();
                        Err(ToolError::Failed(format!(
                            "the tool {} did not finish within {} s",
                            call.name,
                            timeout.as_secs()
                        )))
                    }
                }
            }
        };
        let (content, is_error) = match outcome {
            Ok(v) => (v, false),
            Err(e) => (e.to_json(), true),
        };
        let ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        crate::telemetry::metrics()
            .tool_calls
            .with_label_values(&[call.name.as_str(), if is_error { "error" } else { "ok" }])
            .inc();
        let entry = AuditEntry {
            session_id,
            actor: user.to_string(),
            kind: AuditKind::Execution,
            tool: Some(call.name.clone()),
            action_id: action_id.map(str::to_string),
            args,
            result: content.clone(),
            is_error,
            duration_ms: ms,
            at: Utc::now(),
        };
        if let Err(e) = self.store.record_audit(&entry).await {
            tracing::error!(error = %e, tool = %call.name, "could not write the audit row");
        }
        ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content,
            is_error,
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn audit_call(
        &self,
        session_id: i64,
        user: &str,
        call: &ToolCall,
        args: &Value,
        result: &Value,
        is_error: bool,
        ms: i64,
    ) -> Result<(), CoreError> {
        self.store
            .record_audit(&AuditEntry {
                session_id: Some(session_id),
                actor: user.to_string(),
                kind: AuditKind::Execution,
                tool: Some(call.name.clone()),
                action_id: None,
                args: if args.is_null() {
                    json!({"raw": call.arguments})
                } else {
                    args.clone()
                },
                result: result.clone(),
                is_error,
                duration_ms: ms,
                at: Utc::now(),
            })
            .await?;
        Ok(())
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

fn error_result(call: &ToolCall, e: &ToolError) -> ToolResult {
    ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: e.to_json(),
        is_error: true,
    }
}

/// Results for every call of an action: the read-only ones already computed, plus `note`
/// for each write call.
fn with_write_results(action: &PendingAction, note: Value) -> Vec<ToolResult> {
    let mut results = action.prior_results.clone();
    results.extend(action.calls.iter().map(|c| ToolResult {
        call_id: c.id.clone(),
        name: c.name.clone(),
        content: note.clone(),
        is_error: true,
    }));
    results
}

/// A late click (double click, redelivery, another replica): the outcome stays as the winner
/// showed it; the clicker alone is told how it ended.
async fn emit_already_resolved(sink: &dyn EffectSink, action: &PendingAction, clicker: &str) {
    let message = format!(
        "This change was already {}{}.",
        action.state.as_str(),
        action
            .resolved_by
            .as_deref()
            .map(|b| format!(" by {b}"))
            .unwrap_or_default()
    );
    sink.emit(Effect::Resolved {
        action_id: action.id.clone(),
        outcome: Outcome::AlreadyResolved,
        by: action.resolved_by.clone(),
        details: vec![message.clone()],
    })
    .await;
    sink.emit(Effect::Refusal {
        action_id: Some(action.id.clone()),
        user: clicker.to_string(),
        message,
    })
    .await;
}

/// Who may confirm, in words.
pub fn confirmers_text(rule: &ConfirmRule) -> String {
    match rule.policy {
        ConfirmPolicy::Requester => rule.requester.clone(),
        ConfirmPolicy::AnyMember => format!("{} or any project member", rule.requester),
        ConfirmPolicy::Editors => "project editors".into(),
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
            "This conversation is too long for the model. Start a new thread; your project data is unaffected.".into()
        }
        LlmError::Auth(_) => "The language model refused our credentials; an administrator needs to check the API key.".into(),
        other => format!("The language model failed ({other}). Your message is saved; please try again."),
    }
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
