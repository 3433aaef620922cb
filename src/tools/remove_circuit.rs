//! `remove_circuit`: removes a circuit.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::nec_args::find_ref;
use super::plan_preview::{loading_line, plan_item};
use super::schema::schema_for;
use super::{parse_args, ActionPreview, ToolContext, ToolError, ToolPlan, WriteTool};
use crate::project::analysis::{circuit_label, next_free_number, resolve_circuit, spare_spaces};
use crate::project::circuit_diff::fmt_opt;
use crate::project::plan::Change;
use crate::project::{Circuit, CircuitSpec};

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RemoveCircuitArgs {
    /// Panel of the circuit.
    #[serde(default)]
    panel: Option<String>,
    /// Circuit number.
    #[serde(default)]
    number: Option<i32>,
    /// Or: the circuit by description words or "LP-1 #5".
    #[serde(default)]
    find: Option<String>,
}

/// Removes a circuit.
pub struct RemoveCircuit;

#[async_trait]
impl WriteTool for RemoveCircuit {
    fn name(&self) -> &'static str {
        "remove_circuit"
    }
    fn description(&self) -> &'static str {
        "Remove a circuit, named by panel + number or by `find` words. The preview shows what is removed, \
         the panel load after and the spaces freed. Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<RemoveCircuitArgs>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let a: RemoveCircuitArgs = parse_args(args)?;
        let p = ctx.project().await?;
        let (panel, c, notes) = resolve_circuit(&p, &find_ref(&a.panel, a.number, &a.find))?;
        let rest: Vec<&Circuit> = p
            .circuits_of(panel.id)
            .into_iter()
            .filter(|x| x.id != c.id)
            .collect();
        let specs: Vec<&CircuitSpec> = rest.iter().map(|x| &x.spec).collect();
        let mut details = notes;
        details.push(format!(
            "Removed: {} VA, {} A breaker, {}",
            c.spec.load_va.0,
            c.spec.breaker.0,
            fmt_opt(&c.spec.conductor_size)
        ));
        details.push(format!(
            "Panel after: {}",
            loading_line(&panel.spec, &specs)
        ));
        details.push(format!(
            "Spare spaces after: {}; next free circuit number after: {}",
            spare_spaces(&panel.spec, &rest),
            next_free_number(&panel.spec, &rest, 1)
                .map(|n| n.to_string())
                .unwrap_or_else(|| "none".into())
        ));
        Ok(ToolPlan {
            item: plan_item(
                vec![Change::RemoveCircuit {
                    circuit_id: c.id,
                    panel_id: panel.id,
                    panel: panel.spec.name.clone(),
                    before: c.spec.clone(),
                    panel_circuits: Some(
                        p.circuits_of(panel.id)
                            .into_iter()
                            .map(|c| c.spec.clone())
                            .collect(),
                    ),
                }],
                json!({ "panel": panel.spec.name }),
            ),
            preview: ActionPreview {
                summary: format!("Remove circuit {}", circuit_label(&panel.spec, &c.spec)),
                details,
            },
        })
    }
}
