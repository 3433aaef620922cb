//! The result the model sees once a stored plan is applied: the plan's own fields plus the
//! rows written. (Whether a stored plan still fits the project is
//! [`crate::project::plan_check`].)

use serde_json::{Map, Value};

use crate::project::plan::{ItemPlan, Written};

/// The result the model sees for one applied call: the plan's own fields plus the rows written
/// (`added`, `updated`, `removed`, `service`, `created`, `completed`).
pub fn item_result(item: &ItemPlan, written: &[Written]) -> Value {
    let mut out: Map<String, Value> = item.result.clone();
    for w in written {
        let (key, value) = match w {
            Written::Service(s) => ("service", serde_json::to_value(s)),
            Written::Panel(x) => ("added", serde_json::to_value(x)),
            Written::AddedCircuit(x) => ("added", serde_json::to_value(x)),
            Written::UpdatedCircuit(x) => ("updated", serde_json::to_value(x)),
            Written::RemovedCircuit(x) => ("removed", serde_json::to_value(x)),
            Written::Feeder(x) => ("added", serde_json::to_value(x)),
            Written::Transformer(x) => ("added", serde_json::to_value(x)),
            Written::LoadItem(x) => ("added", serde_json::to_value(x)),
            Written::ChargingSource(x) => ("added", serde_json::to_value(x)),
            Written::CreatedTask(x) => ("created", serde_json::to_value(x)),
            Written::CompletedTask(x) => ("completed", serde_json::to_value(x)),
        };
        out.insert(key.to_string(), value.unwrap_or(Value::Null));
    }
    Value::Object(out)
}
