//! `check_panel_capacity`: panel loading against bus and main.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::schema::schema_for;
use super::{parse_args, to_value, Tool, ToolContext, ToolError};
use crate::project::analysis::{panel_or_only, round, spare_spaces};
use crate::project::CircuitSpec;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PanelCapArgs {
    /// Panel name (may be left out when the project has one panel).
    #[serde(default)]
    panel: Option<String>,
    /// The main (or feeder) OCPD is listed for 100 % continuous operation.
    #[serde(default)]
    main_100_percent_rated: bool,
}

/// Panel loading against bus and main.
pub struct CheckPanelCapacity;

#[async_trait]
impl Tool for CheckPanelCapacity {
    fn name(&self) -> &'static str {
        "check_panel_capacity"
    }
    fn description(&self) -> &'static str {
        "Check a panel's loading from its circuit schedule: per-phase load with continuous loads at 125 %, \
         against the bus and main ratings (408.30, 210.20(A)/215.3/230.42(A)), phase imbalance, spare \
         amperes and spare spaces. Set main_100_percent_rated only if the main is listed for 100 %."
    }
    fn schema(&self) -> Value {
        schema_for::<PanelCapArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: PanelCapArgs = parse_args(&args)?;
        let p = ctx.project().await?;
        let panel = panel_or_only(&p, a.panel.as_deref())?;
        let circuits = p.circuits_of(panel.id);
        if circuits.is_empty() {
            return Err(ToolError::MissingData(format!(
                "panel {} has no circuits, so it has no load to check; add circuits first",
                panel.spec.name
            )));
        }
        let specs: Vec<&CircuitSpec> = circuits.iter().map(|c| &c.spec).collect();
        let mut input = crate::project::analysis::panel_input(&panel.spec, &specs);
        input.main_100_percent_rated = a.main_100_percent_rated;
        let r = crate::nec::panel::panel_capacity(&input)
            .map_err(|e| ToolError::InvalidArguments(format!("panel {}: {e}", panel.spec.name)))?;
        let mut v = to_value(&r)?;
        if let Some(o) = v.as_object_mut() {
            // The input echoes every circuit; the schedule is what describe_panel is for.
            o.remove("input");
        }
        Ok(json!({
            "panel": panel.spec.name,
            "bus_rating_a": panel.spec.bus_rating.0,
            "main_breaker_a": panel.spec.main_breaker.map(|m| m.0),
            "circuits": circuits.len(),
            "spaces": panel.spec.spaces,
            "spare_spaces": spare_spaces(&panel.spec, &circuits),
            "percent_of_rating": round(r.max_phase_amps / r.limiting_rating.0 * 100.0, 1),
            "result": v,
        }))
    }
}
