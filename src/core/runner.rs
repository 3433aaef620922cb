//! The one place a tool runs, whoever asked (the model or a person's command): mode check,
//! schema validation, per-tool rate limit, timeout, panic isolation and the audit row.
//!
//! Read tools execute here. Write tools only plan here; their plans are applied by the
//! confirmation gate ([`super::gate`]) after a person confirms.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::{json, Value};

use super::modes;
use super::session::Mode;
use crate::llm::{ToolCall, ToolResult};
use crate::store::{AuditEntry, AuditKind, Store, StoreError};
use crate::tools::{
    blocking, Tool, ToolContext, ToolError, ToolPlan, ToolRegistry, ValidatedCall, WriteTool,
};

/// Who a run is audited for.
#[derive(Debug, Clone, Copy)]
pub struct RunFor<'a> {
    /// Session, if any.
    pub session_id: Option<i64>,
    /// Who asked.
    pub actor: &'a str,
}

/// Runs tools with the same limits and audit for every caller.
pub struct ToolRunner {
    store: Arc<dyn Store>,
    tools: Arc<ToolRegistry>,
    timeout: Duration,
}

impl ToolRunner {
    /// A runner over `tools`, auditing to `store`, giving each run at most `timeout`.
    pub fn new(store: Arc<dyn Store>, tools: Arc<ToolRegistry>, timeout: Duration) -> Self {
        Self {
            store,
            tools,
            timeout,
        }
    }

    /// The registry.
    pub fn tools(&self) -> &Arc<ToolRegistry> {
        &self.tools
    }

    /// Validates a call, refusing tools outside `mode` (when given) whatever the caller sent.
    pub fn validate(
        &self,
        mode: Option<Mode>,
        call: &ToolCall,
    ) -> Result<ValidatedCall, ToolError> {
        if let Some(mode) = mode {
            if !modes::allows(mode, &call.name) {
                return Err(ToolError::NotFound(format!(
                    "the tool {} is not available in {mode} mode",
                    call.name
                )));
            }
        }
        self.tools.validate(&call.name, &call.arguments)
    }

    /// Runs a read tool and audits it. Every failure is a result for the caller, never a crash.
    pub async fn run_read(
        &self,
        call: &ToolCall,
        tool: Arc<dyn Tool>,
        args: Value,
        ctx: &ToolContext,
        who: RunFor<'_>,
    ) -> ToolResult {
        let (result, entry) = self.run_read_deferred(call, tool, args, ctx, who).await;
        self.write_audit(&entry).await;
        result
    }

    /// Runs a read tool like [`run_read`](Self::run_read) and returns its audit row for the
    /// caller to write together with the turn's other writes.
    pub async fn run_read_deferred(
        &self,
        call: &ToolCall,
        tool: Arc<dyn Tool>,
        args: Value,
        ctx: &ToolContext,
        who: RunFor<'_>,
    ) -> (ToolResult, AuditEntry) {
        let started = Instant::now();
        let outcome = match self.tools.check_rate(ctx.workspace.as_ref(), &call.name) {
            Err(e) => Err(e),
            Ok(()) if tool.cpu_bound() => self.offloaded(&call.name, tool, &args, ctx).await,
            Ok(()) => {
                self.guarded(&call.name, "running", tool.execute(args.clone(), ctx))
                    .await
            }
        };
        let (content, is_error) = match outcome {
            Ok(v) => (Arc::new(v), false),
            Err(e) => (Arc::new(e.to_json()), true),
        };
        let entry = audit_entry(who, &call.name, args, &content, is_error, started);
        let result = ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content,
            is_error,
        };
        (result, entry)
    }

    /// Plans a write call (rate limit, timeout, panic isolation). A failed plan is audited
    /// here; a plan that becomes a proposal is audited by the gate.
    pub async fn plan(
        &self,
        call: &ToolCall,
        tool: Arc<dyn WriteTool>,
        args: &Value,
        ctx: &ToolContext,
        who: RunFor<'_>,
    ) -> Result<ToolPlan, ToolError> {
        let started = Instant::now();
        let outcome = match self.tools.check_rate(ctx.workspace.as_ref(), &call.name) {
            Err(e) => Err(e),
            Ok(()) => {
                self.guarded(&call.name, "preparing the change of", tool.plan(args, ctx))
                    .await
            }
        };
        if let Err(e) = &outcome {
            let entry = audit_entry(
                who,
                &call.name,
                args.clone(),
                &Arc::new(e.to_json()),
                true,
                started,
            );
            self.write_audit(&entry).await;
        }
        outcome
    }

    /// Records a call that could not run at all (unknown tool, invalid arguments, mode).
    pub async fn audit_refused(
        &self,
        call: &ToolCall,
        error: &ToolError,
        who: RunFor<'_>,
    ) -> Result<(), StoreError> {
        self.store
            .record_audit(&AuditEntry {
                session_id: who.session_id,
                actor: who.actor.to_string(),
                kind: AuditKind::Execution,
                tool: Some(call.name.clone()),
                action_id: None,
                args: serde_json::from_str::<Value>(&call.arguments)
                    .ok()
                    .filter(Value::is_object)
                    .unwrap_or_else(|| json!({"raw": call.arguments})),
                result: error.to_json().into(),
                is_error: true,
                duration_ms: 0,
                at: Utc::now(),
            })
            .await
    }

    /// Runs `work` with the timeout and its panics caught: a panic or a hang becomes an
    /// error. It runs on the caller's task: a tool is mostly microseconds of work or an await
    /// on the store, and a task of its own cost a spawn and a wake-up per call, often on the
    /// other worker. A hang at an await is dropped at the timeout; a tool that computes for
    /// long without awaiting says so ([`Tool::cpu_bound`]) and runs
    /// [`offloaded`](Self::offloaded) instead, since no timer fires inside such a loop.
    async fn guarded<T>(
        &self,
        name: &str,
        doing: &str,
        work: impl std::future::Future<Output = Result<T, ToolError>>,
    ) -> Result<T, ToolError> {
        use futures::FutureExt;
        let caught = std::panic::AssertUnwindSafe(work).catch_unwind();
        match tokio::time::timeout(self.timeout, caught).await {
            Ok(Ok(r)) => r,
            Ok(Err(_panic)) => Err(ToolError::Failed(format!(
                "the tool {name} crashed (panic) while {doing} it; nothing else was affected"
            ))),
            Err(_) => Err(ToolError::Failed(format!(
                "the tool {name} did not finish within {} s ({doing} it)",
                self.timeout.as_secs()
            ))),
        }
    }

    /// Runs a CPU-bound tool on the blocking pool within the timeout (see
    /// [`crate::tools::blocking`]): its awaits (the project's read) are driven from that thread
    /// by the runtime's handle, and its computing stalls no worker; past the timeout its result
    /// is abandoned and the caller gets an error.
    async fn offloaded(
        &self,
        name: &str,
        tool: Arc<dyn Tool>,
        args: &Value,
        ctx: &ToolContext,
    ) -> Result<Value, ToolError> {
        let runtime = tokio::runtime::Handle::current();
        // The turn's span follows the work, so its logs stay with the turn.
        let span = tracing::Span::current();
        let (args, ctx) = (args.clone(), ctx.clone());
        blocking::run(name, self.timeout, move || {
            span.in_scope(|| runtime.block_on(tool.execute(args, &ctx)))
        })
        .await
    }

    async fn write_audit(&self, entry: &AuditEntry) {
        if let Err(e) = self.store.record_audit(entry).await {
            tracing::error!(error = %e, tool = ?entry.tool, "could not write the audit row");
        }
    }
}

/// The audit row of one run, counted in the tool metrics.
fn audit_entry(
    who: RunFor<'_>,
    tool: &str,
    args: Value,
    result: &Arc<Value>,
    is_error: bool,
    started: Instant,
) -> AuditEntry {
    crate::telemetry::metrics()
        .tool_calls
        .with_label_values(&[tool, if is_error { "error" } else { "ok" }])
        .inc();
    AuditEntry {
        session_id: who.session_id,
        actor: who.actor.to_string(),
        kind: AuditKind::Execution,
        tool: Some(tool.to_string()),
        action_id: None,
        args,
        // A rendered file is delivered, not archived: the audit keeps its name and size.
        result: super::attachment::redacted(result),
        is_error,
        duration_ms: i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX),
        at: Utc::now(),
    }
}
