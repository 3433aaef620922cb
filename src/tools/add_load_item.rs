//! `add_load_item`: adds a load to the energy budget.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::plan_preview::plan_item;
use super::schema::schema_for;
use super::{parse_args, ActionPreview, ToolContext, ToolError, ToolPlan, WriteTool};
use crate::project::energy::{budget, load_wh};
use crate::project::invariants::check_load;
use crate::project::plan::Change;
use crate::project::LoadItemSpec;

/// Adds a load to the energy budget.
pub struct AddLoadItem;

#[async_trait]
impl WriteTool for AddLoadItem {
    fn name(&self) -> &'static str {
        "add_load_item"
    }
    fn description(&self) -> &'static str {
        "Add a piece of equipment that uses energy to the project's load list (off-grid energy budget): \
         name, running watts, hours per day switched on, duty cycle (0-1, fraction of on-time it draws \
         power) and quantity; put your assumptions in notes. Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<LoadItemSpec>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let l: LoadItemSpec = parse_args(args)?;
        check_load(&l)?;
        let project = ctx.project().await?;
        let (used, produced) = budget(&project);
        let wh = load_wh(&l);
        Ok(ToolPlan {
            item: plan_item(
                vec![Change::AddLoadItem { spec: l.clone() }],
                json!({ "wh_per_day": wh }),
            ),
            preview: ActionPreview {
                summary: format!(
                    "Add load \"{}\": {} W × {} h/day × duty {:.0}%{}",
                    l.name,
                    l.watts.0,
                    l.hours_per_day,
                    l.duty_cycle * 100.0,
                    if l.quantity > 1 {
                        format!(" × {}", l.quantity)
                    } else {
                        String::new()
                    }
                ),
                details: vec![
                    format!("Energy: {wh:.0} Wh/day"),
                    format!(
                        "Daily load after: {:.0} Wh (production {:.0} Wh)",
                        used + wh,
                        produced
                    ),
                ],
            },
        })
    }
}
