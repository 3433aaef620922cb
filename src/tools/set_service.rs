//! `set_service`: sets the service.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::plan_preview::{fault_line, plan_item};
use super::schema::schema_for;
use super::{parse_args, ActionPreview, ToolContext, ToolError, ToolPlan, WriteTool};
use crate::project::invariants::check_service;
use crate::project::plan::Change;
use crate::project::ServiceSpec;

fn describe_service(s: &ServiceSpec) -> String {
    format!(
        "{} V {}-phase, {} A{}",
        s.voltage.0,
        s.phase.count(),
        s.rating.0,
        s.available_fault_ka
            .map(|k| format!(", {k} kA available"))
            .unwrap_or_else(|| ", available fault current unknown".into())
    )
}

/// Sets the service.
pub struct SetService;

#[async_trait]
impl WriteTool for SetService {
    fn name(&self) -> &'static str {
        "set_service"
    }
    fn description(&self) -> &'static str {
        "Set the project's utility service: voltage (line to line), phase, rating, available_fault_ka (from \
         the utility), notes. The preview shows before -> after and the fault current and interrupting check \
         at every panel with the new service. Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<ServiceSpec>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let s: ServiceSpec = parse_args(args)?;
        check_service(&s)?;
        let p = ctx.project().await?;
        let mut details = vec![format!(
            "Before: {}",
            p.service
                .as_ref()
                .map(describe_service)
                .unwrap_or_else(|| "no service".into())
        )];
        details.push(format!("After: {}", describe_service(&s)));
        let mut after = p.clone();
        after.service = Some(s.clone());
        for panel in &after.panels {
            details.push(fault_line(&after, &panel.spec));
        }
        Ok(ToolPlan {
            item: plan_item(
                vec![Change::SetService {
                    before: p.service.clone(),
                    after: s.clone(),
                }],
                json!({}),
            ),
            preview: ActionPreview {
                summary: format!("Set the service: {}", describe_service(&s)),
                details,
            },
        })
    }
}
