//! The Edit form of a confirmation card: the proposed call's arguments as fields a person can
//! correct (a modal on Slack and Discord), and the submitted text turned back into arguments,
//! checked against the tool's schema field by field so an error can be shown on its field.
//!
//! The form is the same on every platform: at most [`MAX_FIELDS`] fields (Discord's modal holds
//! five inputs), the required arguments first. Arguments left out of the form keep their
//! proposed values. A card with several changes has no form: the person types the correction.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::store::PendingAction;

/// Most fields a form shows.
pub const MAX_FIELDS: usize = 5;
/// Longest text accepted in one field.
pub const MAX_VALUE_CHARS: usize = 1000;

/// The form that edits a waiting proposal.
#[derive(Debug, Clone, PartialEq)]
pub struct EditForm {
    /// The proposal it edits.
    pub action_id: String,
    /// Title: the tool's name, readable.
    pub title: String,
    /// The fields, pre-filled with the proposed values.
    pub fields: Vec<FormField>,
}

/// One field of an [`EditForm`].
#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    /// The argument's name (the field's id on the platform).
    pub name: String,
    /// What the person reads: the argument's name in words.
    pub label: String,
    /// The proposed value as text.
    pub value: String,
    /// Whether the tool requires it.
    pub required: bool,
}

/// A field whose submitted text is not a valid value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field (argument name).
    pub field: String,
    /// Why, for the person.
    pub message: String,
}

/// Whether a card of `items` gets an Edit form: one change.
pub fn editable(items: &[crate::store::ActionItem]) -> bool {
    items.len() == 1
}

/// The form of `action`, whose one call's tool has `schema` (its JSON Schema); `None` for a
/// card with several changes or a call with no field a person can type.
pub fn form(action: &PendingAction, schema: &Value) -> Option<EditForm> {
    if !editable(&action.items) {
        return None;
    }
    let item = action.items.first()?;
    let args = item.args.as_object()?;
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let typed = |v: &Value| v.is_string() || v.is_number() || v.is_boolean();
    let mut names: Vec<&str> = required
        .iter()
        .copied()
        .filter(|n| args.get(*n).is_some_and(typed))
        .collect();
    names.extend(
        args.iter()
            .filter(|(n, v)| typed(v) && !required.contains(&n.as_str()))
            .map(|(n, _)| n.as_str()),
    );
    names.truncate(MAX_FIELDS);
    if names.is_empty() {
        return None;
    }
    Some(EditForm {
        action_id: action.id.clone(),
        title: format!("Edit: {}", words(&item.tool)),
        fields: names
            .into_iter()
            .map(|n| FormField {
                name: n.to_string(),
                label: words(n),
                value: match &args[n] {
                    Value::String(s) => s.clone(),
                    v => v.to_string(),
                },
                required: required.contains(&n),
            })
            .collect(),
    })
}

/// `add_circuit` → "Add circuit".
fn words(name: &str) -> String {
    let spaced = name.replace('_', " ");
    let mut c = spaced.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => spaced,
    }
}

/// The proposed `args` with the form's `values` applied, each checked against the property's
/// type in `schema`. Only the form's own fields are read (anything else a payload carries is
/// ignored); an emptied optional field removes the argument.
pub fn apply(
    form: &EditForm,
    args: &Value,
    schema: &Value,
    values: &BTreeMap<String, String>,
) -> Result<Value, Vec<FieldError>> {
    let mut out: Map<String, Value> = args.as_object().cloned().unwrap_or_default();
    let mut errors = Vec::new();
    for field in &form.fields {
        let Some(text) = values.get(&field.name) else {
            continue;
        };
        let text = text.trim();
        let fail = |message: String| FieldError {
            field: field.name.clone(),
            message,
        };
        if text.is_empty() {
            if field.required {
                errors.push(fail("This field is required.".into()));
            } else {
                out.remove(&field.name);
            }
            continue;
        }
        if text.chars().count() > MAX_VALUE_CHARS {
            errors.push(fail(format!("At most {MAX_VALUE_CHARS} characters.")));
            continue;
        }
        let property = &schema["properties"][&field.name];
        match parse(text, property) {
            Ok(v) => {
                out.insert(field.name.clone(), v);
            }
            Err(m) => errors.push(fail(m)),
        }
    }
    if errors.is_empty() {
        Ok(Value::Object(out))
    } else {
        Err(errors)
    }
}

/// `text` as a value of `property`'s type (the first type named, for a union).
fn parse(text: &str, property: &Value) -> Result<Value, String> {
    let kind = match &property["type"] {
        Value::String(t) => t.as_str(),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string"),
        _ => "string",
    };
    let value = match kind {
        "integer" => text
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "Enter a whole number.".to_string())?,
        // A whole number stays one ("20", not "20.0") whatever the schema calls it.
        "number" if text.parse::<i64>().is_ok() => Value::from(text.parse::<i64>().unwrap_or(0)),
        "number" => match text.parse::<f64>() {
            Ok(n) if n.is_finite() => serde_json::Number::from_f64(n)
                .map(Value::Number)
                .ok_or_else(|| "Enter a number.".to_string())?,
            _ => return Err("Enter a number.".into()),
        },
        "boolean" => match text.to_ascii_lowercase().as_str() {
            "true" | "yes" | "y" => Value::Bool(true),
            "false" | "no" | "n" => Value::Bool(false),
            _ => return Err("Enter yes or no.".into()),
        },
        _ => Value::String(text.to_string()),
    };
    if let Some(allowed) = property["enum"].as_array() {
        if !allowed.contains(&value) {
            let names: Vec<String> = allowed
                .iter()
                .map(|a| {
                    a.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| a.to_string())
                })
                .collect();
            return Err(format!("One of: {}.", names.join(", ")));
        }
    }
    for (bound, ok) in [
        ("minimum", value.as_f64() >= property["minimum"].as_f64()),
        (
            "maximum",
            property["maximum"].is_null() || value.as_f64() <= property["maximum"].as_f64(),
        ),
    ] {
        if !ok {
            return Err(format!(
                "The {bound} is {}.",
                property[bound].as_f64().unwrap_or_default()
            ));
        }
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{ActionItem, ActionOrigin, ConfirmRule, PendingState};
    use serde_json::json;

    fn action(args: Value) -> PendingAction {
        PendingAction {
            id: "a1".into(),
            session_id: 1,
            state: PendingState::Pending,
            rule: ConfirmRule {
                policy: crate::domain::policy::ConfirmPolicy::Requester,
                requester: "u".into(),
            },
            calls: Vec::new(),
            prior_results: Vec::new(),
            items: vec![ActionItem {
                call_id: "c1".into(),
                tool: "add_circuit".into(),
                args,
                summary: String::new(),
                details: Vec::new(),
                plan: Default::default(),
            }],
            created_at: chrono::Utc::now(),
            expires_at: chrono::Utc::now(),
            resolved_by: None,
            resolved_at: None,
            outcome: None,
            message_ref: None,
            project_id: None,
            planned_version: None,
            origin: ActionOrigin::Model,
        }
    }

    fn schema() -> Value {
        json!({"type": "object", "required": ["panel", "breaker"], "properties": {
            "panel": {"type": "string"},
            "breaker": {"type": "integer", "minimum": 1, "maximum": 6000},
            "poles": {"type": "integer", "enum": [1, 2, 3]},
            "description": {"type": "string"},
            "continuous": {"type": "boolean"},
            "loads": {"type": "array"}
        }})
    }

    #[test]
    fn required_fields_come_first_and_lists_are_left_out() {
        let a = action(
            json!({"breaker": 20, "continuous": false, "description": "EV", "loads": [], "panel": "LP-1", "poles": 2}),
        );
        let f = form(&a, &schema()).expect("a form");
        let names: Vec<&str> = f.fields.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(
            names,
            ["panel", "breaker", "continuous", "description", "poles"]
        );
        assert_eq!(f.fields[1].value, "20");
        assert_eq!(f.fields[1].label, "Breaker");
        assert!(f.fields[0].required && !f.fields[2].required);
        assert_eq!(f.title, "Edit: Add circuit");
    }

    #[test]
    fn values_are_checked_field_by_field() {
        let args = json!({"breaker": 20, "description": "EV", "panel": "LP-1", "poles": 2});
        let a = action(args.clone());
        let f = form(&a, &schema()).expect("a form");
        let v = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let ok = apply(
            &f,
            &args,
            &schema(),
            &v(&[("breaker", " 30 "), ("description", ""), ("injected", "x")]),
        )
        .expect("valid");
        assert_eq!(ok, json!({"breaker": 30, "panel": "LP-1", "poles": 2}));
        let errors = apply(
            &f,
            &args,
            &schema(),
            &v(&[("breaker", "thirty"), ("poles", "4"), ("panel", " ")]),
        )
        .expect_err("invalid");
        let by: BTreeMap<&str, &str> = errors
            .iter()
            .map(|e| (e.field.as_str(), e.message.as_str()))
            .collect();
        assert_eq!(by["breaker"], "Enter a whole number.");
        assert_eq!(by["poles"], "One of: 1, 2, 3.");
        assert_eq!(by["panel"], "This field is required.");
        let errors = apply(&f, &args, &schema(), &v(&[("breaker", "0")])).expect_err("bound");
        assert_eq!(errors[0].message, "The minimum is 1.");
    }

    #[test]
    fn a_card_with_several_changes_has_no_form() {
        let mut a = action(json!({"panel": "LP-1", "breaker": 20}));
        a.items.push(a.items[0].clone());
        assert!(form(&a, &schema()).is_none());
    }
}
