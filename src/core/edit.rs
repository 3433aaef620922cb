//! A person's Edit of a waiting proposal: the card's form (see [`super::edit_form`]) submitted
//! with corrected values. Like a typed correction it never confirms anything: the proposal is
//! superseded and the corrected change is planned again and shown on a new card, for a person
//! to confirm. Unlike a typed correction it needs no model: the same call (same id, so a
//! model's conversation stays whole) is planned with the new arguments.

use std::collections::BTreeMap;

use serde_json::json;

use super::edit_form::{self, EditForm, FieldError};
use super::gate::{prior_results, PlannedCall};
use super::runner::RunFor;
use super::{Agent, CoreError, Effect, EffectSink, Input, Outcome, UserRef};
use crate::llm::ToolCall;
use crate::store::{AuditKind, PendingAction, PendingState};
use crate::tools::RegisteredTool;

impl Agent {
    /// The Edit form of a waiting proposal, for a platform to show; `None` when it is no longer
    /// waiting or has no form (several changes: the person types the correction).
    pub async fn edit_form(&self, action_id: &str) -> Result<Option<EditForm>, CoreError> {
        let Some(action) = self.store.pending(action_id).await? else {
            return Ok(None);
        };
        Ok(self.form_of(&action))
    }

    fn form_of(&self, action: &PendingAction) -> Option<EditForm> {
        if action.state != PendingState::Pending {
            return None;
        }
        let item = action.items.first()?;
        edit_form::form(action, self.tools().schema(&item.tool)?)
    }

    /// Checks submitted values field by field, for a platform that shows errors on the fields
    /// before it closes the form (Slack). Decides nothing; the submission itself is an
    /// [`super::InputAction::Edit`]. `Ok(Err(..))`: the fields to correct.
    pub async fn check_edit(
        &self,
        action_id: &str,
        values: &BTreeMap<String, String>,
    ) -> Result<Result<(), Vec<FieldError>>, CoreError> {
        let Some(action) = self.store.pending(action_id).await? else {
            return Ok(Ok(()));
        };
        let Some(form) = self.form_of(&action) else {
            return Ok(Ok(()));
        };
        let item = &action.items[0];
        let schema = self.tools().schema(&item.tool).cloned().unwrap_or_default();
        Ok(edit_form::apply(&form, &item.args, &schema, values).map(|_| ()))
    }

    /// Handles an Edit submission under the thread's lease.
    pub(super) async fn on_edit(
        &self,
        input: &Input,
        action_id: String,
        values: BTreeMap<String, String>,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        let attempt = json!({"edit": values});
        let Some((action, session)) = self
            .decidable(input, Some(action_id), attempt, sink)
            .await?
        else {
            return Ok(());
        };
        let Some(form) = self.form_of(&action) else {
            sink.emit(Effect::Error {
                message: "This proposal has several changes; type the correction in the thread \
                          instead."
                    .into(),
            })
            .await;
            return Ok(());
        };
        let item = &action.items[0];
        let schema = self.tools().schema(&item.tool).cloned().unwrap_or_default();
        let args = match edit_form::apply(&form, &item.args, &schema, &values) {
            Ok(a) => a,
            Err(errors) => {
                sink.emit(Effect::Error {
                    message: field_errors(&form, &errors),
                })
                .await;
                return Ok(());
            }
        };
        let call = ToolCall {
            id: item.call_id.clone(),
            name: item.tool.clone(),
            arguments: args.to_string(),
            thought_signature: action
                .calls
                .first()
                .and_then(|c| c.thought_signature.clone()),
        };
        let who = RunFor {
            session_id: Some(session.id),
            actor: &input.user,
        };
        let planned = match self.runner.validate(None, &call) {
            Ok(v) => match v.tool {
                RegisteredTool::Write(tool) => {
                    let ctx = self.tool_context(&session, &input.user);
                    self.runner
                        .plan(&call, tool, &v.args, &ctx, who)
                        .await
                        .map(|plan| PlannedCall {
                            call: call.clone(),
                            args: v.args,
                            plan,
                        })
                }
                RegisteredTool::Read(_) => return Ok(()),
            },
            Err(e) => Err(e),
        };
        let planned = match planned {
            Ok(p) => p,
            Err(e) => {
                // The proposal stays as it was; the person sees why the edit cannot be planned.
                sink.emit(Effect::Error {
                    message: format!(
                        "That edit cannot be proposed: {e}. The proposal stays as it was."
                    ),
                })
                .await;
                return Ok(());
            }
        };
        let Some(action) = self
            .store
            .transition_pending(
                &action.id,
                PendingState::Pending,
                PendingState::Superseded,
                Some(&input.user),
                chrono::Utc::now(),
            )
            .await?
        else {
            return Ok(());
        };
        self.audit_decision(
            &action,
            &input.user,
            AuditKind::Corrected,
            json!({"edited": {"tool": item.tool, "args": args}}),
        )
        .await?;
        sink.emit(Effect::Resolved {
            action_id: action.id.clone(),
            outcome: Outcome::Superseded,
            by: Some(UserRef::new(&input.user)),
            details: vec!["Edited; the corrected change is proposed below.".to_string()],
        })
        .await;
        self.propose(
            &session,
            &input.user,
            action.origin,
            vec![planned],
            &[],
            prior_results(&action),
            sink,
        )
        .await?;
        Ok(())
    }
}

/// The errors of a submission, for a platform that cannot show them on the fields.
pub fn field_errors(form: &EditForm, errors: &[FieldError]) -> String {
    let label = |name: &str| {
        form.fields
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.label.clone())
            .unwrap_or_else(|| name.to_string())
    };
    let lines: Vec<String> = errors
        .iter()
        .map(|e| format!("• {}: {}", label(&e.field), e.message))
        .collect();
    format!(
        "The edit was not applied; the proposal stays as it was.\n{}",
        lines.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_fields_people_read() {
        let form = EditForm {
            action_id: "a".into(),
            title: "Edit: Add circuit".into(),
            fields: vec![edit_form::FormField {
                name: "breaker".into(),
                label: "Breaker".into(),
                value: "20".into(),
                required: true,
            }],
        };
        let text = field_errors(
            &form,
            &[FieldError {
                field: "breaker".into(),
                message: "Enter a whole number.".into(),
            }],
        );
        assert!(text.contains("• Breaker: Enter a whole number."), "{text}");
    }
}
