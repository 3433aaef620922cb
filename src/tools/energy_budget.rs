//! `energy_budget`: the daily energy balance of loads and charging sources.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::schema::schema_for;
use super::{Tool, ToolContext, ToolError};
use crate::project::energy::{budget, load_wh, source_wh};

#[derive(Deserialize, JsonSchema)]
struct BudgetArgs {}

/// The daily energy balance of loads and charging sources.
pub struct EnergyBudget;

#[async_trait]
impl Tool for EnergyBudget {
    fn name(&self) -> &'static str {
        "energy_budget"
    }
    fn description(&self) -> &'static str {
        "Daily energy budget of the project: each load's and source's Wh/day, totals and the balance."
    }
    fn schema(&self) -> Value {
        schema_for::<BudgetArgs>()
    }
    async fn execute(&self, _args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let p = ctx.project().await?;
        let (used, produced) = budget(&p);
        let loads: Vec<Value> = p
            .loads
            .iter()
            .map(|l| json!({ "id": l.id, "name": l.spec.name, "wh_per_day": load_wh(&l.spec) }))
            .collect();
        let sources: Vec<Value> = p
            .charging_sources
            .iter()
            .map(|s| json!({ "id": s.id, "name": s.spec.name, "wh_per_day": source_wh(&s.spec) }))
            .collect();
        Ok(json!({
            "loads": loads,
            "sources": sources,
            "load_wh_per_day": used,
            "production_wh_per_day": produced,
            "balance_wh_per_day": produced - used,
        }))
    }
}
