//! The confirmation gate (DESIGN.md section 3): no write reaches the project without a
//! recorded Confirm by a person allowed to give it, and what is confirmed is what runs.
//!
//! ```text
//! write calls --plan--> Review (plans stored with the action, card shown)
//! Review --Confirm--> apply the stored plan, in one transaction with pending -> executed,
//!                     the results the model will see and the audit rows
//!              \----> the project changed under the plan: nothing applied, pending -> outdated,
//!                     the model is told what changed and proposes again
//! Review --Cancel--> "cancelled" to the model
//! Review --text by someone who may resolve--> superseded; the text is the calls' result
//! Review --text by anyone else--> stays pending; the text is kept for later
//! ```
//!
//! Confirm is idempotent: the store applies only an action it finds pending, under a row lock,
//! so a second click, a retried delivery or another replica finds it resolved.

use super::mention::UserRef;
use chrono::Utc;
use serde_json::{json, Value};
use std::sync::Arc;

use super::agent::{Agent, CoreError, Input};
use super::effects::{Effect, EffectSink, Outcome};
use super::runner::RunFor;
use super::session::Session;
use crate::config::ConfirmPolicy;
use crate::domain::message::ToolCallRecord;
use crate::llm::{ChatMessage, ToolCall, ToolResult};
use crate::project::plan_check::check_plan;
use crate::project::MemberRole;
use crate::store::{
    ActionItem, ActionOrigin, Applied, ApplyOutcome, ApplyRequest, AuditEntry, AuditKind,
    ConfirmRule, Finish, NewPendingAction, PendingAction, PendingState, StoreError,
};
use crate::tools::changes::item_result;
use crate::tools::{ToolContext, ToolPlan};

/// A write call whose plan is ready to propose.
pub(super) struct PlannedCall {
    /// The call.
    pub call: ToolCall,
    /// Its validated arguments.
    pub args: Value,
    /// Its plan.
    pub plan: ToolPlan,
}

/// What text typed in a thread with a waiting proposal did to it.
pub(super) enum TextAndPending {
    /// Nothing was waiting (or it had just expired); handle the text as usual.
    Continue,
    /// The proposal stays; the text was kept. Nothing more to do.
    Held,
    /// The proposal was superseded and the model was already told; run the model.
    Superseded,
}

impl Agent {
    /// Text from `input.user` arrived while the session may have a proposal waiting
    /// (`pending_open`, when the caller knows whether one does).
    pub(super) async fn text_while_pending(
        &self,
        input: &Input,
        session: &Session,
        text: &str,
        pending_open: Option<bool>,
        sink: &dyn EffectSink,
    ) -> Result<TextAndPending, CoreError> {
        // Known when the input started (under the lease nothing adds a proposal).
        if pending_open == Some(false) {
            return Ok(TextAndPending::Continue);
        }
        let Some(action) = self.store.open_pending_for_session(session.id).await? else {
            return Ok(TextAndPending::Continue);
        };
        let now = Utc::now();
        if action.expires_at > now && !self.may_resolve(&action, session, &input.user).await? {
            // Only someone who may resolve the proposal can supersede it. Anyone else's words
            // are kept in the thread; the model reads them, with their author, once the
            // proposal is resolved.
            self.append(
                session.id,
                ChatMessage::user(text.to_string()),
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
            return Ok(TextAndPending::Held);
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
            return Ok(TextAndPending::Continue);
        };
        self.audit_decision(&action, &input.user, kind, json!({"text": text}))
            .await?;
        sink.emit(Effect::Resolved {
            action_id: action.id.clone(),
            outcome,
            by: Some(UserRef::new(&input.user)),
            details: vec![match outcome {
                Outcome::Expired => "expired before anyone confirmed it".to_string(),
                _ => "superseded by your message".to_string(),
            }],
        })
        .await;
        // A person's command has no model call to answer.
        if action.origin == ActionOrigin::Command {
            return Ok(TextAndPending::Continue);
        }
        self.append(
            session.id,
            ChatMessage::Tool {
                results: with_write_results(&action, note),
            },
            Some(&input.user),
            input.event_id.clone(),
        )
        .await?;
        Ok(if outcome == Outcome::Superseded {
            TextAndPending::Superseded
        } else {
            TextAndPending::Continue
        })
    }

    /// Stores the plans of one turn's write calls as one pending action and shows its card.
    /// `rejected` are write calls whose plan failed: the card names them so the person knows.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn propose(
        &self,
        session: &Session,
        user: &str,
        origin: ActionOrigin,
        writes: Vec<PlannedCall>,
        rejected: &[ToolResult],
        prior_results: Vec<ToolResult>,
        sink: &dyn EffectSink,
    ) -> Result<Option<PendingAction>, CoreError> {
        let policy = self.policy_for(session, user).await?;
        let planned_version = match session.project_id {
            Some(p) => match self.store.project_version(p).await {
                Ok(v) => Some(v),
                Err(StoreError::NotFound(_)) => None,
                Err(e) => return Err(e.into()),
            },
            None => None,
        };
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
            calls: writes
                .iter()
                .map(|w| ToolCallRecord::from(&w.call))
                .collect(),
            prior_results: prior_results.into_iter().map(Into::into).collect(),
            items: writes
                .into_iter()
                .map(|w| ActionItem {
                    call_id: w.call.id.clone(),
                    tool: w.call.name.clone(),
                    args: w.args,
                    summary: w.plan.preview.summary,
                    details: w.plan.preview.details,
                    plan: w.plan.item,
                })
                .collect(),
            created_at: now,
            expires_at: now + ttl,
            project_id: session.project_id,
            planned_version,
            origin,
        };
        let action = match self.store.create_pending(&new).await {
            Ok(a) => a,
            Err(StoreError::Conflict(m)) if origin == ActionOrigin::Command => {
                sink.emit(Effect::Error {
                    message: format!("{m}; confirm or cancel it first."),
                })
                .await;
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        self.audit_decision(
            &action,
            user,
            AuditKind::Proposed,
            json!({"items": action.items.len(), "project_version": planned_version, "plans": action.items.iter().map(|i| &i.plan).collect::<Vec<_>>()}),
        )
        .await?;
        sink.emit(Effect::Confirmation {
            action_id: action.id.clone(),
            items: action.items.clone(),
            rejected: rejected_lines(rejected),
            requested_by: user.to_string(),
            confirmers: confirmers_text(&action.rule),
            expires_at: action.expires_at,
        })
        .await;
        Ok(Some(action))
    }

    /// A Confirm or Cancel from `input.user`.
    pub(super) async fn on_resolve(
        &self,
        input: &Input,
        action_id: Option<String>,
        confirm: bool,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        let decision = json!({"confirm": confirm});
        let Some((action, session)) = self.decidable(input, action_id, decision, sink).await?
        else {
            return Ok(());
        };
        if confirm {
            self.confirm(&action, &session, input, sink).await
        } else {
            self.cancel(&action, &session, input, sink).await
        }
    }

    /// The waiting action a person's Confirm, Cancel or Edit names (the thread's open one when
    /// `action_id` is `None`), with its session, when `input.user` may decide it now. Anything
    /// else (unknown, another thread, already resolved, expired, not theirs to decide) is
    /// answered through `sink` and gives `None`; a refusal is audited with `attempt`.
    pub(super) async fn decidable(
        &self,
        input: &Input,
        action_id: Option<String>,
        attempt: Value,
        sink: &dyn EffectSink,
    ) -> Result<Option<(PendingAction, Session)>, CoreError> {
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
            return Ok(None);
        };
        let Some(session) = self.store.session(action.session_id).await? else {
            return Err(StoreError::NotFound(format!(
                "session {} of action {}",
                action.session_id, action.id
            ))
            .into());
        };
        if !same_thread(&session.key, &input.key) {
            // A button id is no secret once a card was seen: a click (or a forged payload)
            // naming it from another thread or workspace resolves nothing.
            sink.emit(Effect::Refusal {
                action_id: Some(action.id.clone()),
                user: input.user.clone(),
                message: "That change was proposed in another thread; confirm or cancel it \
                          there. Nothing was changed."
                    .into(),
            })
            .await;
            return Ok(None);
        }
        // Re-read as the thread's lease holder: another replica may have resolved it meanwhile.
        let Some(action) = self.store.pending(&action.id).await? else {
            return Ok(None);
        };
        if action.state != PendingState::Pending {
            emit_already_resolved(sink, &action, &input.user).await;
            return Ok(None);
        }
        let now = Utc::now();
        if action.expires_at <= now {
            self.expire(&action, &session, sink).await?;
            return Ok(None);
        }
        if !self.may_resolve(&action, &session, &input.user).await? {
            self.audit_decision(&action, &input.user, AuditKind::Refused, attempt)
                .await?;
            sink.emit(Effect::Refusal {
                action_id: Some(action.id.clone()),
                user: input.user.clone(),
                message: format!(
                    "Only {} can confirm, cancel or edit this change.",
                    confirmers_text(&action.rule)
                ),
            })
            .await;
            return Ok(None);
        }
        Ok(Some((action, session)))
    }

    /// Resolves `action` as expired (nothing applied): its history and audit are told, and
    /// its card through `sink`.
    pub(super) async fn expire(
        &self,
        action: &PendingAction,
        session: &Session,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        let Some(action) = self
            .store
            .transition_pending(
                &action.id,
                PendingState::Pending,
                PendingState::Expired,
                None,
                Utc::now(),
            )
            .await?
        else {
            return Ok(());
        };
        self.audit_decision(&action, "system", AuditKind::Expired, Value::Null)
            .await?;
        if action.origin == ActionOrigin::Model {
            let results = with_write_results(
                &action,
                json!({"status": "expired", "message": "the proposal expired before anyone confirmed it; nothing was changed"}),
            );
            self.append(session.id, ChatMessage::Tool { results }, None, None)
                .await?;
        }
        sink.emit(Effect::Resolved {
            action_id: action.id.clone(),
            outcome: Outcome::Expired,
            by: None,
            details: vec![
                "This proposal expired; nothing was changed. Ask again if it is still wanted."
                    .into(),
            ],
        })
        .await;
        Ok(())
    }

    async fn cancel(
        &self,
        action: &PendingAction,
        session: &Session,
        input: &Input,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        let Some(action) = self
            .store
            .transition_pending(
                &action.id,
                PendingState::Pending,
                PendingState::Cancelled,
                Some(&input.user),
                Utc::now(),
            )
            .await?
        else {
            // Lost a race with another click or replica: the winner reports the outcome.
            if let Some(a) = self.store.pending(&action.id).await? {
                emit_already_resolved(sink, &a, &input.user).await;
            }
            return Ok(());
        };
        self.audit_decision(&action, &input.user, AuditKind::Cancelled, Value::Null)
            .await?;
        sink.emit(Effect::Resolved {
            action_id: action.id.clone(),
            outcome: Outcome::Cancelled,
            by: Some(UserRef::new(&input.user)),
            details: vec!["Cancelled; nothing was changed.".to_string()],
        })
        .await;
        if action.origin == ActionOrigin::Command {
            return Ok(());
        }
        let results = with_write_results(
            &action,
            json!({"status": "cancelled", "message": format!("{} cancelled this change; nothing was changed", input.user)}),
        );
        self.append(
            session.id,
            ChatMessage::Tool { results },
            Some(&input.user),
            input.event_id.clone(),
        )
        .await?;
        self.run_model(session, &input.user, sink).await
    }

    /// Applies the stored plan (or finds it outdated) in one store transaction.
    async fn confirm(
        &self,
        action: &PendingAction,
        session: &Session,
        input: &Input,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        sink.emit(Effect::Status {
            text: "applying the confirmed change".into(),
        })
        .await;
        let by = input.user.as_str();
        let event_id = input.event_id.clone();
        let finish = move |a: &PendingAction, applied: &Applied| finish(a, applied, by, &event_id);
        let check =
            |p: &crate::project::ProjectData, c: &[crate::project::plan::Change]| check_plan(p, c);
        let req = ApplyRequest {
            action_id: &action.id,
            by,
            at: Utc::now(),
            check: &check,
            finish: &finish,
        };
        let (resolved, applied) = match self.store.apply_pending(&req).await {
            Ok(ApplyOutcome::Done {
                action, applied, ..
            }) => (action, applied),
            Ok(ApplyOutcome::NotPending(a)) => {
                emit_already_resolved(sink, &a, by).await;
                return Ok(());
            }
            Ok(ApplyOutcome::Missing) => {
                sink.emit(Effect::Error {
                    message: format!("There is no proposed change with id {}.", action.id),
                })
                .await;
                return Ok(());
            }
            Err(StoreError::Conflict(m)) => {
                sink.emit(Effect::Error {
                    message: format!(
                        "The change could not be applied ({m}). It is still proposed; confirm again to re-check it against the project."
                    ),
                })
                .await;
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let (outcome, details) = match &applied {
            Applied::Written(_) => (
                Outcome::Executed,
                resolved
                    .items
                    .iter()
                    .map(|i| format!("✓ {}", i.summary))
                    .collect(),
            ),
            Applied::Outdated(problems) => {
                let mut d: Vec<String> = problems.iter().map(|p| format!("✗ {p}")).collect();
                d.push("Nothing was changed; the change will be proposed again against the project as it is now.".into());
                (Outcome::Outdated, d)
            }
        };
        sink.emit(Effect::Resolved {
            action_id: resolved.id.clone(),
            outcome,
            by: Some(UserRef::new(by)),
            details,
        })
        .await;
        if resolved.origin == ActionOrigin::Command {
            for r in item_results(&resolved, &applied) {
                sink.emit(Effect::ToolOutput {
                    tool: r.name,
                    result: Arc::unwrap_or_clone(r.content),
                    is_error: r.is_error,
                })
                .await;
            }
            return Ok(());
        }
        self.run_model(session, by, sink).await
    }

    /// A person's own tool command (`/tool NAME {json}`, `sparky tool`): a read tool runs at
    /// once; a write tool is planned and proposed like a model's, and applied on Confirm.
    pub(super) async fn on_tool_command(
        &self,
        input: &Input,
        name: String,
        args: String,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        let session = self.open_session(&input.key, None).await?;
        let call = ToolCall {
            id: format!("command_{}", uuid::Uuid::new_v4().simple()),
            name,
            arguments: args,
            thought_signature: None,
        };
        let who = RunFor {
            session_id: Some(session.id),
            actor: &input.user,
        };
        // The person's own command is not limited by the conversation's mode.
        let validated = match self.runner.validate(None, &call) {
            Ok(v) => v,
            Err(e) => {
                self.runner.audit_refused(&call, &e, who).await?;
                sink.emit(Effect::ToolOutput {
                    tool: call.name.clone(),
                    result: e.to_json(),
                    is_error: true,
                })
                .await;
                return Ok(());
            }
        };
        let ctx = self.tool_context(&session, &input.user);
        match validated.tool {
            crate::tools::RegisteredTool::Read(tool) => {
                let r = self
                    .runner
                    .run_read(&call, tool, validated.args, &ctx, who)
                    .await;
                sink.emit(Effect::ToolOutput {
                    tool: r.name,
                    result: Arc::unwrap_or_clone(r.content),
                    is_error: r.is_error,
                })
                .await;
            }
            crate::tools::RegisteredTool::Write(tool) => {
                match self
                    .runner
                    .plan(&call, tool, &validated.args, &ctx, who)
                    .await
                {
                    Ok(plan) => {
                        let planned = PlannedCall {
                            call,
                            args: validated.args,
                            plan,
                        };
                        self.propose(
                            &session,
                            &input.user,
                            ActionOrigin::Command,
                            vec![planned],
                            &[],
                            Vec::new(),
                            sink,
                        )
                        .await?;
                    }
                    Err(e) => {
                        sink.emit(Effect::ToolOutput {
                            tool: call.name.clone(),
                            result: e.to_json(),
                            is_error: true,
                        })
                        .await
                    }
                }
            }
        }
        Ok(())
    }

    /// The policy a new action of `user` is held to: the project's (or the configured) one,
    /// raised to [`ConfirmPolicy::Editors`] when the project has members and `user` is neither
    /// an editor nor an owner, so a viewer's (or an outsider's) request waits for an editor.
    async fn policy_for(&self, session: &Session, user: &str) -> Result<ConfirmPolicy, CoreError> {
        let Some(p) = session.project_id else {
            return Ok(self.cfg.confirm_policy);
        };
        let policy = self
            .store
            .project(p)
            .await?
            .and_then(|p| p.confirm_policy)
            .unwrap_or(self.cfg.confirm_policy);
        if policy != ConfirmPolicy::Requester || self.may_write(session, user).await? {
            return Ok(policy);
        }
        Ok(ConfirmPolicy::Editors)
    }

    /// Whether `user` may apply changes to the session's project on their own: an editor or
    /// owner, or anyone in a project nobody holds a role in yet (claimed by its first binder).
    async fn may_write(&self, session: &Session, user: &str) -> Result<bool, CoreError> {
        let Some(p) = session.project_id else {
            return Ok(true);
        };
        let members = self.store.members(p).await?;
        Ok(members.is_empty()
            || members
                .iter()
                .any(|(u, r)| u == user && matches!(r, MemberRole::Editor | MemberRole::Owner)))
    }

    pub(super) async fn may_resolve(
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
            // A requester whose role was taken away since the card was shown no longer may.
            ConfirmPolicy::Requester => {
                user == action.rule.requester && self.may_write(session, user).await?
            }
            ConfirmPolicy::AnyMember => {
                user == action.rule.requester || session.project_id.is_none() || role.is_some()
            }
            ConfirmPolicy::Editors => matches!(role, Some(MemberRole::Editor | MemberRole::Owner)),
        })
    }

    pub(super) async fn audit_decision(
        &self,
        action: &PendingAction,
        actor: &str,
        kind: AuditKind,
        details: Value,
    ) -> Result<(), CoreError> {
        self.store
            .record_audit(&decision_entry(action, actor, kind, details))
            .await?;
        Ok(())
    }

    pub(super) fn tool_context(&self, session: &Session, user: &str) -> ToolContext {
        let mut ctx = ToolContext::new(
            self.store.clone(),
            session.project_id,
            user,
            Some(session.key.workspace()),
        );
        ctx.session_id = Some(session.id);
        ctx
    }
}

fn decision_entry(
    action: &PendingAction,
    actor: &str,
    kind: AuditKind,
    details: Value,
) -> AuditEntry {
    AuditEntry {
        session_id: Some(action.session_id),
        actor: actor.to_string(),
        kind,
        tool: None,
        action_id: Some(action.id.clone()),
        args: json!({"tools": action.calls.iter().map(|c| c.name.clone()).collect::<Vec<_>>()}),
        result: details.into(),
        is_error: kind == AuditKind::Refused,
        duration_ms: 0,
        at: Utc::now(),
    }
}

/// The results of an action's write calls once the store decided: each call's rows, or why
/// nothing was applied.
fn item_results(action: &PendingAction, applied: &Applied) -> Vec<ToolResult> {
    action
        .calls
        .iter()
        .zip(&action.items)
        .enumerate()
        .map(|(i, (call, item))| {
            let (content, is_error) = match applied {
                Applied::Written(rows) => (
                    item_result(&item.plan, rows.get(i).map(Vec::as_slice).unwrap_or(&[])),
                    false,
                ),
                Applied::Outdated(problems) => (
                    json!({
                        "status": "not_applied",
                        "error": "the project changed since this change was proposed, in a way that touches it; nothing was applied",
                        "what_changed": problems,
                        "next": "propose the change again against the project as it is now",
                    }),
                    true,
                ),
            };
            ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: content.into(),
                is_error,
            }
        })
        .collect()
}

/// What the apply transaction records besides the changes: the outcome, the results the
/// model will see (for a model's proposal) and the audit rows.
fn finish(
    action: &PendingAction,
    applied: &Applied,
    by: &str,
    event_id: &Option<String>,
) -> Finish {
    let written = item_results(action, applied);
    let mut audit = vec![decision_entry(
        action,
        by,
        AuditKind::Confirmed,
        match applied {
            Applied::Written(_) => json!({"applied": true}),
            Applied::Outdated(p) => json!({"applied": false, "what_changed": p}),
        },
    )];
    for (r, item) in written.iter().zip(&action.items) {
        audit.push(AuditEntry {
            session_id: Some(action.session_id),
            actor: by.to_string(),
            kind: AuditKind::Execution,
            tool: Some(r.name.clone()),
            action_id: Some(action.id.clone()),
            args: item.args.clone(),
            result: r.content.clone(),
            is_error: r.is_error,
            duration_ms: 0,
            at: Utc::now(),
        });
    }
    let outcome = json!({
        "results": written.iter().map(|r| json!({"call_id": r.call_id, "tool": r.name, "is_error": r.is_error, "content": r.content})).collect::<Vec<_>>()
    });
    let message = (action.origin == ActionOrigin::Model).then(|| {
        let mut results = prior_results(action);
        results.extend(written);
        super::history::new_message(
            &ChatMessage::Tool { results },
            Some(by.to_string()),
            event_id.clone(),
        )
    });
    Finish {
        outcome,
        message,
        audit,
    }
}

/// The failed write calls as the card names them: the same failure of many calls once, with
/// their count (fifty calls over the turn's limit are one line, not fifty).
fn rejected_lines(rejected: &[ToolResult]) -> Vec<String> {
    let mut lines: Vec<(String, usize)> = Vec::new();
    for line in rejected.iter().map(rejected_line) {
        match lines.iter_mut().find(|(l, _)| *l == line) {
            Some((_, n)) => *n += 1,
            None => lines.push((line, 1)),
        }
    }
    lines
        .into_iter()
        .map(|(line, n)| {
            if n > 1 {
                format!("{line} ({n} calls)")
            } else {
                line
            }
        })
        .collect()
}

/// A failed write call as the card names it.
fn rejected_line(r: &ToolResult) -> String {
    let why = r
        .content
        .get("error")
        .and_then(Value::as_str)
        .unwrap_or("failed");
    format!("{}: {why}", r.name)
}

/// Results for every call of an action: the read-only ones already computed, plus `note`
/// for each write call.
fn with_write_results(action: &PendingAction, note: Value) -> Vec<ToolResult> {
    let note = Arc::new(note);
    let mut results = prior_results(action);
    results.extend(action.calls.iter().map(|c| ToolResult {
        call_id: c.id.clone(),
        name: c.name.clone(),
        content: note.clone(),
        is_error: true,
    }));
    results
}

/// The results of the read-only calls of the action's turn, as the model is sent them.
pub(super) fn prior_results(action: &PendingAction) -> Vec<ToolResult> {
    action
        .prior_results
        .iter()
        .cloned()
        .map(ToolResult::from)
        .collect()
}

/// A late click (double click, redelivery, another replica): the outcome stays as the winner
/// showed it; the clicker alone is told how it ended.
pub(super) async fn emit_already_resolved(
    sink: &dyn EffectSink,
    action: &PendingAction,
    clicker: &str,
) {
    let message = format!(
        "This change was already {}{}.",
        action.state.as_str(),
        action
            .resolved_by
            .as_deref()
            .map(|b| format!(" by {}", UserRef::new(b)))
            .unwrap_or_default()
    );
    sink.emit(Effect::Resolved {
        action_id: action.id.clone(),
        outcome: Outcome::AlreadyResolved,
        by: action.resolved_by.clone().map(UserRef::new),
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

/// Whether a click from `from` concerns the thread `of`. A Discord click whose parent channel
/// could not be looked up names the thread as its channel; a thread id is unique there.
fn same_thread(of: &crate::domain::SessionKey, from: &crate::domain::SessionKey) -> bool {
    of.platform == from.platform
        && of.workspace == from.workspace
        && of.thread == from.thread
        && (of.channel == from.channel || from.channel == from.thread)
}

/// Who may confirm, in words.
pub fn confirmers_text(rule: &ConfirmRule) -> String {
    match rule.policy {
        ConfirmPolicy::Requester => UserRef::new(&rule.requester).to_string(),
        ConfirmPolicy::AnyMember => {
            format!("{} or any project member", UserRef::new(&rule.requester))
        }
        ConfirmPolicy::Editors => "project editors".into(),
    }
}
