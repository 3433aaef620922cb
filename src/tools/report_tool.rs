//! `send_report`: renders a document of the project (panel schedule, inspection report,
//! service load worksheet, energy budget) and hands it to the conversation as a file.

use async_trait::async_trait;
use chrono::Utc;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::attachment::{attach, FileAttachment};
use super::blocking;
use super::schema::schema_for;
use super::{parse_args, Tool, ToolContext, ToolError, ToolRegistry};
use crate::report::{self, Format, ReportError, ReportKind};

/// Registers the report tool.
pub fn register(r: &mut ToolRegistry) {
    r.register(SendReport);
}

/// Which document.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum DocumentArg {
    /// One panel's schedule (give `panel`).
    PanelSchedule,
    /// The project's inspection findings.
    Inspection,
    /// The service load calculation worksheet.
    LoadCalculation,
    /// The daily energy budget of loads and charging sources.
    EnergyBudget,
}

/// File format.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum FormatArg {
    /// Searchable PDF (default).
    #[default]
    Pdf,
    /// PNG image, for a preview in the chat.
    Png,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReportArgs {
    /// The document to produce.
    document: DocumentArg,
    /// Panel name, for a panel schedule.
    #[serde(default)]
    panel: Option<String>,
    /// pdf (default) or png.
    #[serde(default)]
    format: Option<FormatArg>,
}

/// Renders a project document and attaches it to the conversation.
pub struct SendReport;

fn tool_error(e: ReportError) -> ToolError {
    match e {
        ReportError::Data(t) => t.into(),
        ReportError::Usage(m) => ToolError::InvalidArguments(m),
        other => ToolError::Failed(other.to_string()),
    }
}

#[async_trait]
impl Tool for SendReport {
    fn name(&self) -> &'static str {
        "send_report"
    }
    fn description(&self) -> &'static str {
        "Render a document of the project and attach it to this conversation as a file: a panel \
         schedule (slots, loads, breakers, conductors, EGC, voltage drop, per-phase totals, \
         ratings, fault current), the inspection report, the service load calculation or the \
         energy budget. Use it when someone asks to be sent, shown or given a schedule or report \
         (\"send me LP-1's schedule\"). PDF by default; png for a picture. The file is delivered \
         by the chat; do not repeat its contents, just say it is attached."
    }
    fn schema(&self) -> Value {
        schema_for::<ReportArgs>()
    }
    fn cpu_bound(&self) -> bool {
        true
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: ReportArgs = parse_args(&args)?;
        let kind = match a.document {
            DocumentArg::PanelSchedule => {
                ReportKind::parse("panel", a.panel.as_deref()).map_err(tool_error)?
            }
            DocumentArg::Inspection => ReportKind::Inspection,
            DocumentArg::LoadCalculation => ReportKind::Load,
            DocumentArg::EnergyBudget => ReportKind::Energy,
        };
        let format = match a.format.unwrap_or_default() {
            FormatArg::Pdf => Format::Pdf,
            FormatArg::Png => Format::Png,
        };
        let p = ctx.project().await?;
        // Runs on the blocking pool (see `cpu_bound`); a caller that gave up stops it between
        // pages.
        let rendered = report::render_or_stop(
            &p,
            &kind,
            format,
            &ctx.user,
            Utc::now(),
            &blocking::abandoned,
        )
        .map_err(tool_error)?;
        let limits = rendered.limits_note();
        let file = FileAttachment::new(
            rendered.file_name.clone(),
            rendered.title.clone(),
            format.mime(),
            rendered.bytes,
        );
        let mut out = json!({
            "document": rendered.title,
            "file_name": rendered.file_name,
            "format": format,
            "pages": rendered.pages,
            "summary": rendered.summary,
            "note": "the file is attached to the conversation",
        });
        if let Some(limits) = limits {
            out["pages_in_file"] = json!(rendered.pages_in_file);
            out["limits"] = json!(limits);
            out["note"] = json!(format!(
                "the file is attached to the conversation; {limits}"
            ));
        }
        attach(&mut out, &file);
        Ok(out)
    }
}
