//! `add_charging_source`: adds a charging source to the energy budget.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::plan_preview::plan_item;
use super::schema::schema_for;
use super::{parse_args, ActionPreview, ToolContext, ToolError, ToolPlan, WriteTool};
use crate::project::energy::{budget, source_wh};
use crate::project::invariants::check_source;
use crate::project::plan::Change;
use crate::project::ChargingSourceSpec;

/// Adds a charging source to the energy budget.
pub struct AddChargingSource;

#[async_trait]
impl WriteTool for AddChargingSource {
    fn name(&self) -> &'static str {
        "add_charging_source"
    }
    fn description(&self) -> &'static str {
        "Add something that charges the battery bank (solar, alternator, shore, generator, wind, other): \
         name, kind, output watts, equivalent full-output hours per day (peak sun hours for solar) and \
         efficiency (0-1); put your assumptions in notes. Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<ChargingSourceSpec>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let s: ChargingSourceSpec = parse_args(args)?;
        check_source(&s)?;
        let project = ctx.project().await?;
        let (used, produced) = budget(&project);
        let wh = source_wh(&s);
        Ok(ToolPlan {
            item: plan_item(
                vec![Change::AddChargingSource { spec: s.clone() }],
                json!({ "wh_per_day": wh }),
            ),
            preview: ActionPreview {
                summary: format!(
                    "Add {} source \"{}\": {} W × {} h/day × {:.0}% efficiency",
                    s.kind,
                    s.name,
                    s.watts.0,
                    s.hours_per_day,
                    s.efficiency * 100.0
                ),
                details: vec![
                    format!("Energy: {wh:.0} Wh/day"),
                    format!(
                        "Daily production after: {:.0} Wh (load {:.0} Wh)",
                        produced + wh,
                        used
                    ),
                ],
            },
        })
    }
}
