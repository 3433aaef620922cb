//! `run_inspection`: the project's rule checks ([`crate::project::inspection`]) filtered by
//! severity and trimmed to a size the model can read, with the checks that ran.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::code_basis::WithCodeBasis;
use super::schema::schema_for;
use super::{parse_args, to_value, Tool, ToolContext, ToolError, ToolRegistry};
use crate::project::inspection::{
    inspect, summary_line, Category, InspectOptions, Severity, CHECKS,
};

/// Registers `run_inspection`.
pub fn register(r: &mut ToolRegistry) {
    r.register(WithCodeBasis(RunInspection));
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct InspectionArgs {
    /// Only this category: interrupting, conductors, grounding, panels, voltage_drop, missing_data.
    #[serde(default)]
    category: Option<Category>,
    /// Only this panel.
    #[serde(default)]
    panel: Option<String>,
    /// Leave out findings less serious than this (violation, warning, info; default info).
    #[serde(default)]
    min_severity: Option<Severity>,
    /// Most findings to return (default 100, at most 2000); the counts always cover all.
    #[serde(default)]
    max_findings: Option<u32>,
}

/// Runs the rule checks.
pub struct RunInspection;

#[async_trait]
impl Tool for RunInspection {
    fn name(&self) -> &'static str {
        "run_inspection"
    }
    fn description(&self) -> &'static str {
        "Inspect the project (or one category or panel) against NEC rules; each finding has severity \
         (violation/warning/info), equipment, NEC reference and a suggested fix. Checks: \
         interrupting_rating (110.9/110.10: panel kA vs available fault current), \
         branch_conductor_ampacity (210.19(A)(1), 210.20(A), 110.14(C): 125 % continuous), \
         conductor_protection (240.4(B); motor circuits 430.22/430.52), small_conductor (240.4(D)), feeder_conductor (215.2, 215.3, \
         240.4), egc_size (250.122), panel_loading (408.30, 215.3), panel_protection (408.36), \
         panel_spaces (408.54), circuit_voltage_drop (>3 %, 210.19(A) IN 4), feeder_voltage_drop \
         (>3 % feeder, >5 % total, 215.2(A) IN 2), missing_data (no fault current, AIC, conductor size, \
         length...). Categories: interrupting, conductors, grounding, panels, voltage_drop, missing_data. \
         The summary and check_summary count, per check, items run, passed, failed and not run (with why)."
    }
    fn schema(&self) -> Value {
        schema_for::<InspectionArgs>()
    }
    fn cpu_bound(&self) -> bool {
        // Walks every panel and circuit of the project: long on a large one.
        true
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: InspectionArgs = parse_args(&args)?;
        let p = ctx.project().await?;
        let mut report = inspect(
            &p,
            &InspectOptions {
                category: a.category,
                panel: a.panel,
            },
        )?;
        if let Some(min) = a.min_severity {
            report.findings.retain(|f| f.severity <= min);
        }
        let max = a.max_findings.unwrap_or(100).clamp(1, 2000) as usize;
        let total = report.findings.len();
        report.findings.truncate(max);
        let mut v = to_value(&report)?;
        if total > max {
            v["truncated"] = json!(format!(
                "showing {max} of {total} findings (most serious first); narrow by category or panel, or raise max_findings"
            ));
        }
        v["checks"] = to_value(
            &CHECKS
                .iter()
                .filter(|c| a.category.is_none_or(|x| x == c.category))
                .collect::<Vec<_>>(),
        )?;
        // Every line counts what ran, passed, failed and did not run: a check that could not
        // run is never read as clean.
        v["summary"] = json!(summary_line(&report));
        v["check_lines"] = json!(report
            .check_summary
            .iter()
            .map(|t| t.line())
            .collect::<Vec<_>>());
        Ok(v)
    }
}
