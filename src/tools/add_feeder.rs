//! `add_feeder`: adds a feeder.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::plan_preview::{fault_line, plan_item};
use super::schema::schema_for;
use super::{parse_args, ActionPreview, ToolContext, ToolError, ToolPlan, WriteTool};
use crate::nec::units::TempRating;
use crate::project::analysis::feeder_voltage_drop;
use crate::project::invariants::check_feeder;
use crate::project::plan::Change;
use crate::project::{Feeder, FeederSpec};

/// Adds a feeder.
pub struct AddFeeder;

#[async_trait]
impl WriteTool for AddFeeder {
    fn name(&self) -> &'static str {
        "add_feeder"
    }
    fn description(&self) -> &'static str {
        "Add a feeder (name, from, to, size, material, sets, length, ocpd, raceway, egc_size). \
         From and to name the service, a panel or a transformer; the raceway (steel, aluminum \
         or nonmetallic) picks the Chapter 9 Table 9 and point-to-point columns; egc_size is checked \
         against 250.122. The preview shows the ampacity against the OCPD, the 250.122 EGC, voltage \
         drop at the fed panel's load, and the fault current at the load end. Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<FeederSpec>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let f: FeederSpec = parse_args(args)?;
        let p = ctx.project().await?;
        check_feeder(&p, &f)?;
        let mut after = p.clone();
        let feeder = Feeder {
            id: -1,
            project_id: p.project.id,
            spec: f.clone(),
        };
        after.feeders.push(feeder.clone());
        let mut details = Vec::new();
        if let Ok(a) = crate::nec::tables::ampacity(
            f.conductor_size,
            f.material,
            f.insulation.min(TempRating::C75),
        ) {
            let total = a * f64::from(f.sets.max(1));
            details.push(format!(
                "Ampacity {total} A ({} × {} {} at {}) vs OCPD {} A{}",
                f.sets.max(1),
                f.conductor_size,
                f.material,
                f.insulation.min(TempRating::C75),
                f.ocpd.0,
                if total + 1e-9 < f.ocpd.0 {
                    " — the OCPD is above the ampacity (check 240.4(B))"
                } else {
                    ""
                }
            ));
        }
        if let Ok(c) = crate::project::feeder_egc::check_feeder_egc(&f, None) {
            details.push(format!(
                "EGC (250.122{}): at least {} {}{}",
                if c.required.upsize_ratio.is_some() {
                    ", increased per 250.122(B)"
                } else {
                    ""
                },
                c.required.size,
                f.material,
                match (c.installed, c.pass) {
                    (Some(e), Some(false)) => format!(" — the recorded {e} is too small"),
                    (Some(e), _) => format!("; recorded {e}"),
                    _ => "; not recorded".into(),
                }
            ));
        }
        match feeder_voltage_drop(&after, &feeder, None, None) {
            Ok(r) => details.push(format!(
                "Voltage drop at the load of {}: {:.2} % at {:.1} A",
                f.to, r.percent, r.input.current.0
            )),
            Err(e) => details.push(format!("Voltage drop unknown: {e}")),
        }
        if let Some(to) = after.panel_by_name(&f.to) {
            details.push(fault_line(&after, &to.spec));
        }
        Ok(ToolPlan {
            item: plan_item(
                vec![Change::AddFeeder {
                    spec: FeederSpec {
                        name: f.name.trim().to_string(),
                        ..f.clone()
                    },
                }],
                json!({}),
            ),
            preview: ActionPreview {
                summary: format!(
                    "Add feeder {}: {} -> {}, {} × {} {}, {} A OCPD{}",
                    f.name.trim(),
                    f.from,
                    f.to,
                    f.sets.max(1),
                    f.conductor_size,
                    f.material,
                    f.ocpd.0,
                    f.length
                        .map(|l| format!(", {} ft", l.0))
                        .unwrap_or_default()
                ),
                details,
            },
        })
    }
}
