//! `code_in_force`: which NEC edition applies at a job site and why, for the bound project or
//! for any state (and date) the model asks about.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::schema::schema_for;
use super::{parse_args, to_value, Tool, ToolContext, ToolError};
use crate::jurisdiction::adoption::rows_for_state;
use crate::jurisdiction::changes::changes_2026;
use crate::jurisdiction::site::parse_permit_date;
use crate::jurisdiction::{code_in_force, for_project, today, Location, Site};
use crate::nec::units::Edition;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// A state (code or name) to ask about instead of the project's job site, e.g. "WA".
    #[serde(default)]
    state: Option<String>,
    /// County, with `state`.
    #[serde(default)]
    county: Option<String>,
    /// City, with `state`.
    #[serde(default)]
    city: Option<String>,
    /// Permit date YYYY-MM-DD, with `state` (default today).
    #[serde(default)]
    date: Option<String>,
}

/// Reads the code in force.
pub struct CodeInForceTool;

#[async_trait]
impl Tool for CodeInForceTool {
    fn name(&self) -> &'static str {
        "code_in_force"
    }
    fn description(&self) -> &'static str {
        "Which NEC edition applies at the job site and why: the team's override, else the state's \
         (or county's/city's) adoption on the permit date (or today), with the sources, whether \
         they agree, local amendments and what Sparky cannot check when its tables (2017, 2020, \
         2023) do not cover that edition. Without arguments it answers for the bound project; \
         with `state` (and optional county, city, date) for that place."
    }
    fn schema(&self) -> Value {
        schema_for::<Args>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: Args = parse_args(&args)?;
        let (code, project) = match &a.state {
            Some(state) => {
                let mut location = Location::state(state)
                    .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
                location.county = a.county.clone().filter(|c| !c.trim().is_empty());
                location.city = a.city.clone().filter(|c| !c.trim().is_empty());
                let permit_date = match &a.date {
                    Some(d) => parse_permit_date(d)
                        .map_err(|e| ToolError::InvalidArguments(e.to_string()))?,
                    None => None,
                };
                let site = Site {
                    location: Some(location),
                    permit_date,
                    edition_override: None,
                };
                let code = code_in_force(&site, Edition::default(), today())
                    .map_err(|e| ToolError::Failed(e.to_string()))?;
                (code, None)
            }
            None => {
                let id = ctx.require_project()?;
                let p = ctx
                    .store
                    .project(id)
                    .await?
                    .ok_or_else(|| ToolError::NotFound(format!("project {id}")))?;
                (for_project(&p), Some(p.name))
            }
        };
        let history = match &code.location {
            Some(l) => rows_for_state(&l.state)
                .map_err(|e| ToolError::Failed(e.to_string()))?
                .into_iter()
                .map(|r| {
                    json!({
                        "adopted": r.adopted, "effective": r.effective, "verified": r.verified,
                        "amendments": r.amendments, "note": r.note,
                    })
                })
                .collect(),
            None => Vec::new(),
        };
        let mut out = json!({
            "project": project,
            "summary": code.summary(),
            "label": code.label(),
            "code": to_value(&code)?,
            "adoption_history": history,
            "instructions": "Name this edition and its basis in the answer. If cannot_check is set, \
                say what cannot be checked instead of presenting another edition's values as the \
                code in force. Unverified rows must be called unverified.",
        });
        if code.edition.is_some_and(|e| e.year() >= 2026) {
            let changes = changes_2026().map_err(|e| ToolError::Failed(e.to_string()))?;
            out["changes_2026"] = to_value(&changes)?;
        }
        Ok(out)
    }
}
