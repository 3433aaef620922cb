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
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use serde_json::{json, Value};

use super::effects::{Citation, Effect, EffectSink};
use super::gate::{PlannedCall, TextAndPending};
use super::limits::TurnLimiter;
use super::runner::{RunFor, ToolRunner};
use super::session::{Mode, Session, SessionKey};
use super::{context, modes, window};
use crate::config::{AgentConfig, LimitsConfig};
use crate::llm::{
    ChatMessage, ChatProvider, ChatRequest, FinishReason, LlmError, StreamEvent, ToolCall,
    ToolResult, Usage,
};
use crate::store::{ActionOrigin, AuditEntry, AuditKind, NewMessage, Store, StoreError};
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
    pub(super) store: Arc<dyn Store>,
    provider: Option<Arc<dyn ChatProvider>>,
    tools: Arc<ToolRegistry>,
    pub(super) runner: ToolRunner,
    pub(super) cfg: AgentConfig,
    temperature: Option<f32>,
    limiter: TurnLimiter,
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

    /// Handles one input to completion, emitting effects as it goes. Storage failures are
    /// shown to the user and returned; nothing already stored is lost.
    pub async fn handle(&self, input: Input, sink: &dyn EffectSink) -> Result<(), CoreError> {
        let result = self.handle_inner(input, sink).await;
        if let Err(e) = &result {
            tracing::error!(error = %e, "turn failed");
            sink.emit(Effect::Error {
                message: format!("Something went wrong on my side ({e}). Your message is saved; please try again."),
            })
            .await;
        }
        result
    }

    async fn handle_inner(&self, input: Input, sink: &dyn EffectSink) -> Result<(), CoreError> {
        if let Some(event_id) = &input.event_id {
            if !self
                .store
                .claim_event(&input.key.platform, event_id)
                .await?
            {
                tracing::debug!(event_id, "duplicate event ignored");
                return Ok(());
            }
        }
        match input.action.clone() {
            InputAction::Message { text, mode } => self.on_message(&input, text, mode, sink).await,
            InputAction::Confirm { action_id } => {
                self.on_resolve(&input, action_id, true, sink).await
            }
            InputAction::Cancel { action_id } => {
                self.on_resolve(&input, action_id, false, sink).await
            }
            InputAction::Tool { name, args } => {
                self.on_tool_command(&input, name, args, sink).await
            }
        }
    }

    pub(super) async fn open_session(
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
        let _lock = self.store.lock_session(session.id).await?;

        // Typing while a confirmation is pending is a correction, not a confirmation.
        match self
            .text_while_pending(input, &session, &text, sink)
            .await?
        {
            TextAndPending::Held => return Ok(()),
            TextAndPending::Superseded => return self.run_model(&session, &input.user, sink).await,
            TextAndPending::Continue => {}
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
                &NewMessage {
                    message,
                    author: author.map(str::to_string),
                    event_id,
                },
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
            let turn = match self.stream_model(provider.as_ref(), &request, sink).await {
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
            let mut writes: Vec<PlannedCall> = Vec::new();
            // Write calls that could not be planned: the card names them.
            let mut rejected: Vec<ToolResult> = Vec::new();
            let who = RunFor {
                session_id: Some(session.id),
                actor: user,
            };
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
                let validated = match self.runner.validate(Some(session.mode), call) {
                    Ok(v) => v,
                    Err(e) => {
                        self.runner.audit_refused(call, &e, who).await?;
                        let r = error_result(call, &e);
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
                                rejected.push(r.clone());
                                results.push(r);
                            }
                        }
                        continue;
                    }
                    RegisteredTool::Read(tool) => tool,
                };
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
                            .runner
                            .run_read(call, tool, validated.args, &ctx, who)
                            .await;
                        cache.insert(cache_key, r.clone());
                        r
                    }
                };
                collect_citations(&result.content, &mut citations);
                results.push(result);
            }

            if !writes.is_empty() {
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
