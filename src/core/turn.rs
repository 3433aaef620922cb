//! The turn loop's steps: call the model, classify its answer, run its reads, plan its writes,
//! and finish the turn with one write (DESIGN.md section 3).
//!
//! A step's writes (the model's message, the tool results, their audit rows) wait in
//! [`UnsavedSteps`] and are stored with the next write of the turn: with the final answer and
//! the turn's audit row in one statement, or before a proposal. A turn that fails midway still
//! stores what it did; one cut off by a crash is retold from its input.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use futures::StreamExt;
use serde_json::{json, Value};

use super::agent::{Agent, CoreError};
use super::effects::{Citation, Effect, EffectSink};
use super::gate::PlannedCall;
use super::inbound::TurnFiles;
use super::lease::TurnEnd;
use super::mention;
use super::modes;
use super::passages::{self, Cited, Prefetched};
use super::repeats::{FailedCalls, Verdict};
use super::request;
use super::runner::RunFor;
use super::session::Session;
use super::turn_project::TurnProject;
use super::window::TurnHistory;
use crate::llm::{
    ChatMessage, ChatProvider, ChatRequest, FinishReason, LlmError, StreamEvent, ToolCall,
    ToolChoice, ToolResult, Usage,
};
use crate::store::{ActionOrigin, AuditEntry, AuditKind, NewMessage, Store, StoreError};
use crate::tools::{RegisteredTool, Tool, ToolContext, ToolError, WriteTool};

/// What one turn's steps share, from the thread's first read to the turn's last write.
struct Turn<'a> {
    session: &'a Session,
    user: &'a str,
    /// Files that join every model request of this turn only.
    files: &'a TurnFiles,
    sink: &'a dyn EffectSink,
    provider: Arc<dyn ChatProvider>,
    /// The thread, read once; the turn's own writes are added as it goes.
    history: TurnHistory,
    /// One read of the project serves every request and tool call of the turn.
    project: Option<Arc<TurnProject>>,
    ctx: ToolContext,
    /// A read call repeated in the turn (same tool, same arguments) gets the first call's
    /// result, found by that call's id in the turn's results.
    cache: HashMap<(String, String), String>,
    citations: BTreeSet<Cited>,
    model_calls: u32,
    tool_calls_used: u32,
    usage: Usage,
    /// One silent retry per model call for a turn that failed before showing anything.
    retried: bool,
    /// The steps' writes not stored yet (see the module's doc).
    unsaved: UnsavedSteps,
    /// Calls that failed in this turn: sent again unchanged, they are not run again.
    failed_calls: FailedCalls,
    /// A tool whose arguments were refused: the next request asks for it alone (once per
    /// tool and turn).
    repair: Option<String>,
    repaired: HashSet<String>,
    /// The turn's successful read results, the latest of each tool: what the person is shown
    /// when the model computed but wrote no answer.
    figures: Vec<ToolResult>,
    /// Passages the person's words found before the first model call; they join every
    /// request of the turn.
    passages: Option<Prefetched>,
}

impl Turn<'_> {
    fn who(&self) -> RunFor<'_> {
        RunFor {
            session_id: Some(self.session.id),
            actor: self.user,
        }
    }
}

/// What a model call's answer asks of the turn.
enum Answer {
    /// Nothing usable and nothing shown: the same request once more.
    Retry,
    /// Nothing usable: the person was told why, and the turn ends.
    Unusable,
    /// Text without calls: stored with the turn's audit row, then shown.
    Final(NewMessage, String),
    /// Tool calls to run, with the message that made them (as history and as a row).
    Calls {
        said: ChatMessage,
        message: NewMessage,
        calls: Vec<ToolCall>,
    },
}

/// What one step's tool calls came to.
#[derive(Default)]
struct StepCalls {
    results: Vec<ToolResult>,
    writes: Vec<PlannedCall>,
    /// Write calls that could not be planned: the card names them.
    rejected: Vec<ToolResult>,
    audits: Vec<AuditEntry>,
    /// Set when the model sent a failed call unchanged a second time.
    give_up: Option<String>,
}

impl StepCalls {
    /// A call that did not run: a failed write is also named on the card.
    fn refused(&mut self, result: ToolResult, writes: bool) {
        if writes {
            self.rejected.push(result.clone());
        }
        self.results.push(result);
    }
}

impl Agent {
    /// Thinking: model calls and read-only tools until an answer, a proposal or a limit.
    pub(super) async fn run_model(
        &self,
        session: &Session,
        user: &str,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        self.run_model_from(session, user, &TurnFiles::default(), None, None, sink)
            .await
    }

    /// [`Self::run_model`] with files that join every model request of this turn only, from
    /// the thread's history when the caller read it already; the turn's last write finishes
    /// `end`.
    pub(super) async fn run_model_from(
        &self,
        session: &Session,
        user: &str,
        files: &TurnFiles,
        history: Option<TurnHistory>,
        end: Option<&TurnEnd<'_>>,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        // Offline, a resolved confirmation needs no follow-up: its outcome was already shown.
        let Some(provider) = self.provider.clone() else {
            return Ok(());
        };
        let history = match history {
            Some(read) => read,
            None => TurnHistory::load(self.store.as_ref(), session).await?,
        };
        let mut turn = self.start_turn(session, user, files, history, provider, sink);
        let stepped = self.take_steps(&mut turn).await;
        self.finish_turn(turn, stepped, end).await
    }

    fn start_turn<'a>(
        &self,
        session: &'a Session,
        user: &'a str,
        files: &'a TurnFiles,
        mut history: TurnHistory,
        provider: Arc<dyn ChatProvider>,
        sink: &'a dyn EffectSink,
    ) -> Turn<'a> {
        let project = session
            .project_id
            .map(|id| Arc::new(TurnProject::seen_at(id, history.project_revision(id))));
        let mut ctx = self.tool_context(session, user);
        ctx.turn_project = project.clone();
        if self.context.digest_old_results {
            // What the requests would send of old results is all this turn keeps of them.
            history.digest_old_results(request::WHOLE_RESULT_TURNS);
        }
        Turn {
            session,
            user,
            files,
            sink,
            provider,
            history,
            project,
            ctx,
            cache: HashMap::new(),
            citations: BTreeSet::new(),
            model_calls: 0,
            tool_calls_used: 0,
            usage: Usage::default(),
            retried: false,
            unsaved: UnsavedSteps::default(),
            failed_calls: FailedCalls::default(),
            repair: None,
            repaired: HashSet::new(),
            figures: Vec::new(),
            passages: None,
        }
    }

    /// Model calls and tool calls until an answer, a proposal, a stop or a limit; the
    /// answer (its row and its text) when the model gave one.
    async fn take_steps(
        &self,
        turn: &mut Turn<'_>,
    ) -> Result<Option<(NewMessage, String)>, CoreError> {
        turn.passages = self.prefetch_passages(turn).await;
        loop {
            let Some(answer) = self.call_model(turn).await? else {
                return Ok(None);
            };
            let (said, message, calls) = match self.classify(turn, answer).await? {
                Answer::Retry => continue,
                Answer::Unusable => return Ok(None),
                Answer::Final(message, text) => return Ok(Some((message, text))),
                Answer::Calls {
                    said,
                    message,
                    calls,
                } => (said, message, calls),
            };
            let step = self.run_calls(turn, &calls).await?;
            if self.end_step(turn, said, message, step).await? {
                return Ok(None);
            }
        }
    }

    /// Searches once with the person's words before the first model call (see
    /// [`super::passages`]); `None` when switched off, not allowed in the mode, or nothing
    /// relevant was found.
    async fn prefetch_passages(&self, turn: &mut Turn<'_>) -> Option<Prefetched> {
        let k = self.cfg.prefetch_passages;
        if k == 0 || !modes::allows(turn.session.mode, passages::SEARCH_TOOL) {
            return None;
        }
        let question = turn.history.question()?.trim();
        if question.is_empty() {
            return None;
        }
        let Some(RegisteredTool::Read(tool)) = self.tools.get(passages::SEARCH_TOOL) else {
            return None;
        };
        let (call, args) = passages::search_call(question, k);
        let (result, audit) = self
            .runner
            .run_read_deferred(&call, tool, args, &turn.ctx, turn.who())
            .await;
        turn.unsaved.audits.push(audit);
        Prefetched::from_result(&result.content, result.is_error)
    }

    /// Calls the model once with the thread so far; `None` when the turn stops here (the
    /// limit of model calls, or a failed call the person was told of).
    async fn call_model(&self, turn: &mut Turn<'_>) -> Result<Option<ModelTurn>, CoreError> {
        let sink = turn.sink;
        let model_calls = turn.model_calls;
        if model_calls >= self.cfg.max_model_calls_per_turn {
            sink.emit(Effect::Error {
                message: format!(
                    "I stopped after {model_calls} model calls in this turn without reaching an answer. \
                     Please narrow the question or ask me to continue."
                ),
            })
            .await;
            return Ok(None);
        }
        turn.model_calls += 1;
        let provider = turn.provider.as_ref();
        let mut request = request::build(
            self.store.as_ref(),
            &self.tools,
            turn.session,
            &mut turn.history,
            self.cfg.history_token_budget,
            &self.context,
            self.model.temperature,
            Some(provider),
            turn.project.as_deref(),
        )
        .await?;
        turn.files.attach(&mut request);
        if let Some(passages) = &turn.passages {
            passages.attach(&mut request);
        }
        request.max_output_tokens = self.model.max_output_tokens;
        request.seed = self
            .model
            .seed
            .map(|s| s.wrapping_add(u64::from(model_calls)));
        if let Some(name) = turn.repair.take() {
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
            let streamed = self.stream_model(provider, request, sink).await;
            observe_model_call(&provider.name(), called, &streamed);
            streamed
        };
        // A summary the window wrote is stored while the model answers.
        let (saved, streamed) =
            tokio::join!(turn.history.save_summary(self.store.as_ref()), model_call);
        saved?;
        match streamed {
            Ok(answer) => {
                turn.usage.add(&answer.usage);
                Ok(Some(answer))
            }
            Err(e) => {
                sink.emit(Effect::Error {
                    message: user_message(&e),
                })
                .await;
                Ok(None)
            }
        }
    }

    /// What the model's answer asks of the turn.
    async fn classify(&self, turn: &mut Turn<'_>, answer: ModelTurn) -> Result<Answer, CoreError> {
        if !answer.finish.is_normal() || answer.is_empty() {
            return self.unusable(turn, answer).await;
        }
        turn.retried = false;
        let said = ChatMessage::Assistant {
            text: answer.text.clone(),
            tool_calls: answer.calls.clone(),
            thought_signature: answer.signature,
        };
        let message = super::history::new_message(&said, None, None);
        if answer.calls.is_empty() {
            return Ok(Answer::Final(message, answer.text));
        }
        Ok(Answer::Calls {
            said,
            message,
            calls: answer.calls,
        })
    }

    /// An answer cut off, blocked or empty: asked once more when nothing was shown; otherwise
    /// the person hears why, and text cut off at the length limit is kept as an answer.
    async fn unusable(&self, turn: &mut Turn<'_>, answer: ModelTurn) -> Result<Answer, CoreError> {
        let partial = !answer.text.trim().is_empty();
        let no_words = !partial
            && matches!(
                answer.finish,
                FinishReason::MalformedToolCall | FinishReason::Stop | FinishReason::ToolCalls
            );
        if no_words && !turn.retried {
            tracing::warn!(finish = ?answer.finish, "model turn without an answer; asking again");
            turn.retried = true;
            return Ok(Answer::Retry);
        }
        // No words after the tools ran: asked once more (above), or cut off at the output
        // limit while copying a result out; the person gets the results themselves.
        let cut_before_words = !partial && answer.finish == FinishReason::Length;
        if (no_words || cut_before_words) && !turn.figures.is_empty() {
            tracing::warn!(finish = ?answer.finish, "model wrote no answer after its tools ran; showing their results");
            let text = super::figures::text(&turn.figures);
            return Ok(Answer::Final(text_message(&text, None), text));
        }
        tracing::warn!(finish = ?answer.finish, text_len = answer.text.len(), "model turn ended without a usable answer");
        // What was cut off at the length limit is still an answer; blocked text is not
        // kept, and an empty turn is never stored (providers reject empty text).
        if answer.finish == FinishReason::Length && partial {
            turn.unsaved
                .messages
                .push(text_message(&answer.text, answer.signature));
            turn.unsaved
                .save(self.store.as_ref(), turn.session.id)
                .await?;
            turn.sink
                .emit(Effect::Text {
                    text: answer.text,
                    citations: citation_list(&turn.citations),
                })
                .await;
        }
        // Nothing written after a refused call: what was refused is what the person can act on.
        let refused = match answer.finish {
            FinishReason::Stop | FinishReason::ToolCalls if !partial => {
                turn.failed_calls.unanswered_message()
            }
            _ => None,
        };
        let message = refused.unwrap_or_else(|| finish_message(answer.finish, partial));
        turn.sink.emit(Effect::Error { message }).await;
        Ok(Answer::Unusable)
    }

    /// Runs a step's read calls and plans its write calls, in order, within the turn's limits.
    async fn run_calls(
        &self,
        turn: &mut Turn<'_>,
        calls: &[ToolCall],
    ) -> Result<StepCalls, CoreError> {
        let mut step = StepCalls::default();
        for call in calls {
            if !self.admit_call(turn, call, &mut step) {
                continue;
            }
            turn.tool_calls_used += 1;
            let validated = match self.runner.validate(Some(turn.session.mode), call) {
                Ok(v) => v,
                Err(e) => {
                    self.runner.audit_refused(call, &e, turn.who()).await?;
                    if self.model.constrain_repairs
                        && matches!(e, ToolError::InvalidArguments(_))
                        && self.tools.get(&call.name).is_some()
                        && turn.repaired.insert(call.name.clone())
                    {
                        turn.repair.get_or_insert_with(|| call.name.clone());
                    }
                    let r = error_result(call, &e);
                    turn.failed_calls.record(call, &r);
                    step.refused(r, self.writes(call));
                    continue;
                }
            };
            match validated.tool {
                RegisteredTool::Write(tool) => {
                    self.plan_write(turn, call, tool, validated.args, &mut step)
                        .await;
                }
                RegisteredTool::Read(tool) => {
                    let result = self
                        .run_read(turn, call, tool, validated.args, &mut step)
                        .await;
                    turn.failed_calls.record(call, &result);
                    collect_citations(&result.content, &mut turn.citations);
                    if !result.is_error {
                        turn.figures.retain(|r| r.name != result.name);
                        turn.figures.push(result.clone());
                    }
                    step.results.push(result);
                }
            }
        }
        Ok(step)
    }

    fn writes(&self, call: &ToolCall) -> bool {
        self.tools.get(&call.name).is_some_and(|t| t.writes())
    }

    /// Whether `call` may run: within the turn's limit of tool calls, and not a failed call
    /// sent again unchanged. A call that may not gets its result in `step` here.
    fn admit_call(&self, turn: &mut Turn<'_>, call: &ToolCall, step: &mut StepCalls) -> bool {
        let limit = self.cfg.max_tool_calls_per_turn;
        if turn.tool_calls_used >= limit {
            let r = error_result(
                call,
                &ToolError::RateLimited(format!(
                    "left out: the limit of {limit} tool calls per turn was reached; answer with what you have"
                )),
            );
            // A change left out is named on the card, so nobody takes the card for the whole
            // request.
            step.refused(r, self.writes(call));
            return false;
        }
        match turn
            .failed_calls
            .verdict(call, self.tools.schema(&call.name))
        {
            Verdict::Run => true,
            Verdict::Instruct(r) => {
                step.results.push(r);
                false
            }
            Verdict::Stop { result, message } => {
                step.results.push(result);
                step.give_up.get_or_insert(message);
                false
            }
        }
    }

    /// Plans a write call against the step's earlier writes; a plan that fails is named on
    /// the card.
    async fn plan_write(
        &self,
        turn: &mut Turn<'_>,
        call: &ToolCall,
        tool: Arc<dyn WriteTool>,
        args: Value,
        step: &mut StepCalls,
    ) {
        let mut write_ctx = turn.ctx.clone();
        write_ctx.planned = Arc::new(
            step.writes
                .iter()
                .flat_map(|w| w.plan.item.changes.iter().cloned())
                .collect(),
        );
        match self
            .runner
            .plan(call, tool, &args, &write_ctx, turn.who())
            .await
        {
            Ok(plan) => step.writes.push(PlannedCall {
                call: call.clone(),
                args,
                plan,
            }),
            Err(e) => {
                let r = error_result(call, &e);
                turn.failed_calls.record(call, &r);
                step.refused(r, true);
            }
        }
    }

    /// A read call's result: the first result of the same call in this turn, or the tool run
    /// now (its audit row joins `step`).
    async fn run_read(
        &self,
        turn: &mut Turn<'_>,
        call: &ToolCall,
        tool: Arc<dyn Tool>,
        args: Value,
        step: &mut StepCalls,
    ) -> ToolResult {
        let cache_key = (call.name.clone(), args.to_string());
        let hit = turn.cache.get(&cache_key).and_then(|first| {
            step.results
                .iter()
                .find(|r| &r.call_id == first)
                .or_else(|| turn.history.tool_result(first))
                .cloned()
        });
        if let Some(hit) = hit {
            return ToolResult {
                call_id: call.id.clone(),
                ..hit
            };
        }
        turn.sink
            .emit(Effect::Status {
                text: super::activity::of_tool(&call.name, &args),
            })
            .await;
        let (mut r, audit) = self
            .runner
            .run_read_deferred(call, tool, args, &turn.ctx, turn.who())
            .await;
        // The audit row keeps the result as it came from the tool.
        step.audits.push(audit);
        // A file goes to the thread, never into the history or the model.
        if let Some(file) = super::attachment::take_attachment(Arc::make_mut(&mut r.content)) {
            turn.sink.emit(Effect::File { file }).await;
        }
        // What people wrote in the project reaches the model as data.
        if !r.is_error {
            super::untrusted::fence_tool_result(Arc::make_mut(&mut r.content));
        }
        turn.cache.insert(cache_key, r.call_id.clone());
        r
    }

    /// Ends a step that ran tools: a proposal ends the turn; otherwise the step's writes wait
    /// for the turn's next write and the thread grows by the step. `true` when the turn stops.
    async fn end_step(
        &self,
        turn: &mut Turn<'_>,
        said: ChatMessage,
        message: NewMessage,
        step: StepCalls,
    ) -> Result<bool, CoreError> {
        let sink = turn.sink;
        // The person hears once why the turn stops, before any proposal of the step.
        let stop = step.give_up.is_some();
        if let Some(why) = step.give_up {
            sink.emit(Effect::Error { message: why }).await;
        }
        if !step.writes.is_empty() {
            // The proposal is stored after the steps that led to it.
            turn.unsaved.messages.push(message);
            turn.unsaved.audits.extend(step.audits);
            turn.unsaved
                .save(self.store.as_ref(), turn.session.id)
                .await?;
            self.propose(
                turn.session,
                turn.user,
                ActionOrigin::Model,
                step.writes,
                &step.rejected,
                step.results,
                sink,
            )
            .await?;
            return Ok(true);
        }
        // No proposal to carry them: the person hears of failed changes here.
        for r in &step.rejected {
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
        let tool_message = ChatMessage::Tool {
            results: step.results,
        };
        turn.unsaved.messages.push(message);
        turn.unsaved
            .messages
            .push(super::history::new_message(&tool_message, None, None));
        turn.unsaved.audits.extend(step.audits);
        turn.history.extend([said, tool_message]);
        Ok(stop)
    }

    /// The turn's last write: what its steps did, the answer and the turn's audit row in one
    /// statement (finishing `end` with them when given), then the answer shown. A turn that
    /// failed stores what it did and returns its error.
    async fn finish_turn(
        &self,
        turn: Turn<'_>,
        stepped: Result<Option<(NewMessage, String)>, CoreError>,
        end: Option<&TurnEnd<'_>>,
    ) -> Result<(), CoreError> {
        let Turn {
            session,
            sink,
            provider,
            history,
            cache,
            mut citations,
            model_calls,
            tool_calls_used,
            usage,
            mut unsaved,
            passages,
            ..
        } = turn;
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
        let (answer, shown) = answer.unzip();
        let turn_audit = AuditEntry {
            session_id: Some(session.id),
            actor: "model".into(),
            kind: AuditKind::Execution,
            tool: Some("model_turn".into()),
            action_id: None,
            args: json!({"provider": provider.name(), "model_calls": model_calls, "tool_calls": tool_calls_used}),
            result: json!({"input_tokens": usage.input_tokens, "cached_input_tokens": usage.cached_input_tokens, "output_tokens": usage.output_tokens}).into(),
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
            if let Some(p) = &passages {
                citations.extend(p.cited_in(&text).cloned());
            }
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
        content: e.to_json().into(),
        is_error: true,
    }
}

/// Adds the passages a tool result cites.
pub(super) fn collect_citations(content: &Value, out: &mut BTreeSet<Cited>) {
    if let Some(found) = content.get("passages").and_then(Value::as_array) {
        out.extend(found.iter().filter_map(passages::citation));
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

/// The citations of a turn, in order.
pub(super) fn citation_list(citations: &BTreeSet<Cited>) -> Vec<Citation> {
    citations
        .iter()
        .map(|(section, edition, source)| Citation {
            section: section.clone(),
            edition: *edition,
            source: source.clone(),
        })
        .collect()
}

/// The model's text answer, without calls, as a history row.
fn text_message(text: &str, signature: Option<String>) -> NewMessage {
    let said = ChatMessage::Assistant {
        text: text.to_string(),
        tool_calls: Vec::new(),
        thought_signature: signature,
    };
    super::history::new_message(&said, None, None)
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
