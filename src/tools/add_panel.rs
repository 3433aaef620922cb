//! `add_panel`: adds a panel.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::plan_preview::{fault_line, plan_item};
use super::schema::schema_for;
use super::{parse_args, ActionPreview, ToolContext, ToolError, ToolPlan, WriteTool};
use crate::project::invariants::{check_panel_spec, source_voltage};
use crate::project::plan::Change;
use crate::project::{Panel, PanelSpec};

fn describe_panel_spec(s: &PanelSpec) -> String {
    format!(
        "{} V {}-phase, {} A bus, {}, {} spaces{}{}",
        s.voltage.0,
        s.phase.count(),
        s.bus_rating.0,
        s.main_breaker
            .map(|m| format!("{} A main", m.0))
            .unwrap_or_else(|| "main lugs only".into()),
        s.spaces,
        s.interrupting_rating_ka
            .map(|k| format!(", {k} kA"))
            .unwrap_or_default(),
        s.fed_from
            .as_deref()
            .map(|f| format!(", fed from {f}"))
            .unwrap_or_default(),
    )
}

/// Adds a panel.
pub struct AddPanel;

#[async_trait]
impl WriteTool for AddPanel {
    fn name(&self) -> &'static str {
        "add_panel"
    }
    fn description(&self) -> &'static str {
        "Add a panelboard: name, voltage (line to line), phase, bus_rating, main_breaker (omit for main \
         lugs only), interrupting_rating_ka, fed_from (service, a panel or a transformer), spaces, \
         location. The preview shows the panel, the available fault current at it and the interrupting \
         check. Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<PanelSpec>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let s: PanelSpec = parse_args(args)?;
        let p = ctx.project().await?;
        check_panel_spec(&p, &s, None)?;
        let mut after = p.clone();
        after.panels.push(Panel {
            id: -1,
            project_id: p.project.id,
            spec: s.clone(),
        });
        let mut details = vec![
            format!(
                "Project {} will have {} panel(s): {}",
                p.project.name,
                after.panels.len(),
                after
                    .panels
                    .iter()
                    .map(|x| x.spec.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            fault_line(&after, &s),
        ];
        if let Some(m) = s.main_breaker {
            if m.0 > s.bus_rating.0 {
                details.push(format!(
                    "WARNING: main {} A above bus {} A (408.36)",
                    m.0, s.bus_rating.0
                ));
            }
        }
        if let Some(v) = s.fed_from.as_deref().and_then(|f| source_voltage(&p, f)) {
            if (v - s.voltage.0).abs() > 1.0 {
                details.push(format!(
                    "WARNING: its source is {v} V but the panel is {} V; a transformer belongs between them",
                    s.voltage.0
                ));
            }
        }
        Ok(ToolPlan {
            item: plan_item(
                vec![Change::AddPanel {
                    spec: PanelSpec {
                        name: s.name.trim().to_string(),
                        ..s.clone()
                    },
                }],
                json!({}),
            ),
            preview: ActionPreview {
                summary: format!("Add panel {}: {}", s.name.trim(), describe_panel_spec(&s)),
                details,
            },
        })
    }
}
