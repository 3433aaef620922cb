//! The Edit form of a card on Slack: the modal that `views.open` shows (one input block per
//! field, the block id the argument's name) and the `view_submission` it comes back as, read
//! into the core's [`InputAction::Edit`]. Field errors go back in the submission's response
//! (`response_action: errors`, keyed by block id), where Slack shows them on the fields.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::events::{allowed, Gate, Job, PLATFORM};
use super::thread::ThreadTarget;
use crate::core::edit_form::{EditForm, FieldError};
use crate::core::session::SessionKey;
use crate::core::{Input, InputAction};
use crate::platforms::render::clip;

/// The modal's callback id.
pub const CALLBACK_ID: &str = "sparky_edit";
/// Slack's limits: a modal title, an input's label.
const MAX_TITLE: usize = 24;
const MAX_LABEL: usize = 2000;

/// The modal for `form`, remembering the card's thread in `private_metadata`.
pub fn edit_view(form: &EditForm, team: &str, target: &ThreadTarget) -> Value {
    let blocks: Vec<Value> = form
        .fields
        .iter()
        .map(|f| {
            json!({
                "type": "input",
                "block_id": f.name,
                "optional": !f.required,
                "label": {"type": "plain_text", "text": clip(&f.label, MAX_LABEL)},
                "element": {
                    "type": "plain_text_input",
                    "action_id": "value",
                    "initial_value": clip(&f.value, crate::core::edit_form::MAX_VALUE_CHARS),
                    "max_length": crate::core::edit_form::MAX_VALUE_CHARS,
                },
            })
        })
        .collect();
    json!({
        "type": "modal",
        "callback_id": CALLBACK_ID,
        "title": {"type": "plain_text", "text": clip(&form.title, MAX_TITLE)},
        "submit": {"type": "plain_text", "text": "Propose"},
        "close": {"type": "plain_text", "text": "Close"},
        "private_metadata": json!({
            "action_id": form.action_id,
            "team": team,
            "channel": target.channel,
            "thread_ts": target.thread_ts,
        }).to_string(),
        "blocks": blocks,
    })
}

/// A submitted Edit form, read from a `view_submission` payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    /// The proposal it edits.
    pub action_id: String,
    /// The submitted text by field.
    pub values: BTreeMap<String, String>,
    /// The job that applies it in the card's thread.
    pub job: Job,
}

/// The Edit form in a `view_submission` (as JSON); `None` for any other payload, and for a
/// thread the gate does not allow. The core checks again that the person may decide the
/// proposal and that it belongs to that thread.
pub fn submission(payload: &Value, gate: &Gate) -> Option<Submission> {
    if payload["type"] != "view_submission" || payload["view"]["callback_id"] != CALLBACK_ID {
        return None;
    }
    let meta: Value = serde_json::from_str(payload["view"]["private_metadata"].as_str()?).ok()?;
    let field = |k: &str| meta[k].as_str().map(str::to_string);
    let (action_id, team, channel, thread) = (
        field("action_id")?,
        field("team")?,
        field("channel")?,
        field("thread_ts")?,
    );
    // The form was opened in this team; a submission from another is not this one's.
    if payload["team"]["id"].as_str() != Some(team.as_str()) || !allowed(gate, &team, &channel) {
        return None;
    }
    let user = payload["user"]["id"].as_str()?.to_string();
    let values: BTreeMap<String, String> = payload["view"]["state"]["values"]
        .as_object()?
        .iter()
        .map(|(block, actions)| {
            let v = &actions["value"]["value"];
            (block.clone(), v.as_str().unwrap_or("").to_string())
        })
        .collect();
    let view_id = payload["view"]["id"].as_str().unwrap_or_default();
    let hash = payload["view"]["hash"].as_str().unwrap_or_default();
    let job = Job::Turn {
        input: Input {
            key: SessionKey::new(PLATFORM, &team, &channel, &thread),
            user,
            // One submission of one view state: a redelivery carries the same pair.
            event_id: Some(format!("edit:{view_id}:{hash}")),
            action: InputAction::Edit {
                action_id: action_id.clone(),
                values: values.clone(),
            },
        },
        target: ThreadTarget {
            channel,
            thread_ts: thread,
            react_to: None,
        },
        only_if_session: false,
    };
    Some(Submission {
        action_id,
        values,
        job,
    })
}

/// The response that shows `errors` on their fields.
pub fn errors_response(errors: &[FieldError]) -> Value {
    let by_block: serde_json::Map<String, Value> = errors
        .iter()
        .map(|e| (e.field.clone(), Value::String(e.message.clone())))
        .collect();
    json!({"response_action": "errors", "errors": by_block})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::edit_form::FormField;

    fn form() -> EditForm {
        EditForm {
            action_id: "a1".into(),
            title: "Edit: Add circuit with a long name".into(),
            fields: vec![FormField {
                name: "breaker".into(),
                label: "Breaker".into(),
                value: "15".into(),
                required: true,
            }],
        }
    }

    #[test]
    fn a_submission_of_the_view_comes_back_as_an_edit_of_its_thread() {
        let target = ThreadTarget {
            channel: "C1".into(),
            thread_ts: "1700000000.000100".into(),
            react_to: None,
        };
        let view = edit_view(&form(), "T1", &target);
        assert_eq!(
            view["title"]["text"].as_str().map(|t| t.chars().count()),
            Some(24)
        );
        assert_eq!(view["blocks"][0]["block_id"], "breaker");
        assert_eq!(view["blocks"][0]["element"]["initial_value"], "15");
        let payload = json!({
            "type": "view_submission",
            "team": {"id": "T1"},
            "user": {"id": "U1"},
            "view": {
                "id": "V1", "hash": "h1",
                "callback_id": CALLBACK_ID,
                "private_metadata": view["private_metadata"],
                "state": {"values": {"breaker": {"value": {"type": "plain_text_input", "value": "20"}}}}
            }
        });
        let gate = Gate::default();
        let s = submission(&payload, &gate).expect("ours");
        assert_eq!(s.action_id, "a1");
        assert_eq!(s.values["breaker"], "20");
        let Job::Turn { input, target, .. } = s.job else {
            panic!("a turn")
        };
        assert_eq!(
            input.key,
            SessionKey::new("slack", "T1", "C1", "1700000000.000100")
        );
        assert_eq!(target.thread_ts, "1700000000.000100");
        // From another team, or not a form of ours: nothing.
        let mut other = payload.clone();
        other["team"]["id"] = json!("T2");
        assert!(submission(&other, &gate).is_none());
        let mut other = payload;
        other["view"]["callback_id"] = json!("someone_else");
        assert!(submission(&other, &gate).is_none());
    }

    #[test]
    fn errors_are_keyed_by_block() {
        let r = errors_response(&[FieldError {
            field: "breaker".into(),
            message: "Enter a whole number.".into(),
        }]);
        assert_eq!(r["response_action"], "errors");
        assert_eq!(r["errors"]["breaker"], "Enter a whole number.");
    }
}
