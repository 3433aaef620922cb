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
    Tool, ToolContext, ToolError, ToolPlan, ToolRegistry, ValidatedCall, WriteTool,
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
        let started = Instant::now();
        let outcome = match self.tools.check_rate(&call.name) {
            Err(e) => Err(e),
            Ok(()) => {
                let task_args = args.clone();
                let task_ctx = ctx.clone();
                self.guarded(&call.name, "running", async move {
                    tool.execute(task_args, &task_ctx).await
                })
                .await
            }
        };
        let (content, is_error) = match outcome {
            Ok(v) => (v, false),
            Err(e) => (e.to_json(), true),
        };
        self.audit(who, &call.name, args, &content, is_error, started)
            .await;
        ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content,
            is_error,
        }
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
        let outcome = match self.tools.check_rate(&call.name) {
            Err(e) => Err(e),
            Ok(()) => {
                let task_args = args.clone();
                let task_ctx = ctx.clone();
                self.guarded(&call.name, "preparing the change of", async move {
                    tool.plan(&task_args, &task_ctx).await
                })
                .await
            }
        };
        if let Err(e) = &outcome {
            self.audit(who, &call.name, args.clone(), &e.to_json(), true, started)
                .await;
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
                result: error.to_json(),
                is_error: true,
                duration_ms: 0,
                at: Utc::now(),
            })
            .await
    }

    /// Runs `work` on its own task with the timeout: a panic or a hang becomes an error.
    async fn guarded<T: Send + 'static>(
        &self,
        name: &str,
        doing: &str,
        work: impl std::future::Future<Output = Result<T, ToolError>> + Send + 'static,
    ) -> Result<T, ToolError> {
        let task = tokio::spawn(work);
        let abort = task.abort_handle();
        match tokio::time::timeout(self.timeout, task).await {
            Ok(Ok(r)) => r,
            Ok(Err(join)) => Err(ToolError::Failed(format!(
                "the tool {name} crashed ({}) while {doing} it; nothing else was affected",
                if join.is_panic() {
                    "panic"
                } else {
                    "cancelled"
                }
            ))),
            Err(_) => {
                abort.abort();
                Err(ToolError::Failed(format!(
                    "the tool {name} did not finish within {} s ({doing} it)",
                    self.timeout.as_secs()
                )))
            }
        }
    }

    async fn audit(
        &self,
        who: RunFor<'_>,
        tool: &str,
        args: Value,
        result: &Value,
        is_error: bool,
        started: Instant,
    ) {
        let entry = AuditEntry {
            session_id: who.session_id,
            actor: who.actor.to_string(),
            kind: AuditKind::Execution,
            tool: Some(tool.to_string()),
            action_id: None,
            args,
            result: result.clone(),
            is_error,
            duration_ms: i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX),
            at: Utc::now(),
        };
        if let Err(e) = self.store.record_audit(&entry).await {
            tracing::error!(error = %e, tool, "could not write the audit row");
        }
    }
}
