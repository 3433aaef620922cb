//! `add_transformer`: adds a transformer.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::plan_preview::plan_item;
use super::schema::schema_for;
use super::{parse_args, ActionPreview, ToolContext, ToolError, ToolPlan, WriteTool};
use crate::project::analysis::FaultCalculator;
use crate::project::invariants::check_transformer;
use crate::project::plan::Change;
use crate::project::{Transformer, TransformerSpec};

/// Adds a transformer.
pub struct AddTransformer;

#[async_trait]
impl WriteTool for AddTransformer {
    fn name(&self) -> &'static str {
        "add_transformer"
    }
    fn description(&self) -> &'static str {
        "Add a transformer: name, kva, primary_voltage, secondary_voltage, phase, impedance_percent \
         (nameplate), fed_from. The preview shows the secondary full-load current and the available fault \
         current at the secondary (unlimited primary). Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<TransformerSpec>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let t: TransformerSpec = parse_args(args)?;
        let p = ctx.project().await?;
        check_transformer(&p, &t)?;
        let mut after = p.clone();
        after.transformers.push(Transformer {
            id: -1,
            project_id: p.project.id,
            spec: t.clone(),
        });
        let mut details = Vec::new();
        match FaultCalculator::new(&after).at(&t.name) {
            Ok(f) => details.push(format!(
                "Available fault current at the secondary: {:.1} kA ({})",
                f.fault_ka,
                f.steps
                    .iter()
                    .map(|s| s.how.clone())
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
            Err(e) => details.push(format!("Fault current unknown: {e}")),
        }
        Ok(ToolPlan {
            item: plan_item(
                vec![Change::AddTransformer {
                    spec: TransformerSpec {
                        name: t.name.trim().to_string(),
                        ..t.clone()
                    },
                }],
                json!({}),
            ),
            preview: ActionPreview {
                summary: format!(
                    "Add transformer {}: {} kVA, {} V -> {} V {}-phase, {} % Z{}",
                    t.name.trim(),
                    t.kva,
                    t.primary_voltage.0,
                    t.secondary_voltage.0,
                    t.phase.count(),
                    t.impedance_percent,
                    t.fed_from
                        .as_deref()
                        .map(|f| format!(", fed from {f}"))
                        .unwrap_or_default()
                ),
                details,
            },
        })
    }
}
