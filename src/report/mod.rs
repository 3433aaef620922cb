//! Documents people forward: panel schedules, inspection reports, service load worksheets and
//! energy budgets, rendered from the project's data by the same analysis the tools use.
//!
//! One layout (an SVG per page built by [`layout`]) feeds both formats: PNG through resvg for
//! a preview in the chat, PDF through svg2pdf with the text kept as text (searchable) and the
//! embedded font subset (`assets/fonts/`, never a system font).
//!
//! Layer: domain engine for documents. Imports `project` (the same analysis and inspection the
//! tools call) and `nec`; never `tools`, the core or a platform.

pub mod document;
mod energy_budget;
pub mod fonts;
mod inspection_report;
pub mod layout;
mod load_worksheet;
pub mod output;
mod panel_schedule;

use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::project::AnalysisError;
use crate::project::ProjectData;
use document::{Document, Header};

/// Why a report could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReportError {
    /// The request names something the project does not have, or lacks data.
    #[error("{0}")]
    Data(#[from] AnalysisError),
    /// Rendering failed (a bug, not bad input).
    #[error("could not render the report: {0}")]
    Render(String),
    /// Rendering was given up: whoever asked stopped waiting.
    #[error("rendering was stopped")]
    Stopped,
    /// The request itself is malformed.
    #[error("{0}")]
    Usage(String),
}

/// Which document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "document", rename_all = "snake_case")]
pub enum ReportKind {
    /// The schedule of one panel.
    Panel {
        /// Panel name.
        panel: String,
    },
    /// Every inspection finding of the project.
    Inspection,
    /// The service load calculation worksheet.
    Load,
    /// The daily energy budget.
    Energy,
}

impl ReportKind {
    /// Parses `panel NAME`, `inspection`, `load` or `energy`.
    pub fn parse(kind: &str, name: Option<&str>) -> Result<Self, ReportError> {
        match (
            kind.trim().to_ascii_lowercase().as_str(),
            name.map(str::trim),
        ) {
            ("panel" | "schedule", Some(n)) if !n.is_empty() => Ok(Self::Panel {
                panel: n.to_string(),
            }),
            ("panel" | "schedule", _) => Err(ReportError::Usage(
                "name the panel: report panel NAME".into(),
            )),
            ("inspection", _) => Ok(Self::Inspection),
            ("load" | "service", _) => Ok(Self::Load),
            ("energy" | "budget", _) => Ok(Self::Energy),
            (other, _) => Err(ReportError::Usage(format!(
                "unknown report '{other}': panel NAME, inspection, load or energy"
            ))),
        }
    }

    fn slug(&self) -> String {
        match self {
            Self::Panel { panel } => format!(
                "panel-schedule-{}",
                panel
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    })
                    .collect::<String>()
            ),
            Self::Inspection => "inspection-report".into(),
            Self::Load => "service-load-calculation".into(),
            Self::Energy => "energy-budget".into(),
        }
    }
}

/// File format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Vector PDF, searchable, fonts embedded.
    #[default]
    Pdf,
    /// PNG of the first pages, stacked (a preview in the chat).
    Png,
}

impl Format {
    /// The file extension.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Pdf => "pdf",
            Self::Png => "png",
        }
    }

    /// The MIME type.
    pub fn mime(self) -> &'static str {
        match self {
            Self::Pdf => "application/pdf",
            Self::Png => "image/png",
        }
    }
}

impl FromStr for Format {
    type Err = ReportError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "pdf" => Ok(Self::Pdf),
            "png" => Ok(Self::Png),
            other => Err(ReportError::Usage(format!(
                "unknown format '{other}': pdf or png"
            ))),
        }
    }
}

/// A rendered document.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// File name ("panel-schedule-LP-1.pdf").
    pub file_name: String,
    /// Title ("Panel schedule LP-1").
    pub title: String,
    /// The format.
    pub format: Format,
    /// Pages of the document.
    pub pages: usize,
    /// Pages in the file: every page in a PDF, at most [`output::MAX_PNG_PAGES`] in a PNG.
    pub pages_in_file: usize,
    /// Table rows left out because the document reached [`layout::MAX_PAGES`].
    pub rows_left_out: usize,
    /// One line about the content ("14 circuits, 3 spare spaces").
    pub summary: String,
    /// The file.
    pub bytes: Vec<u8>,
}

impl Rendered {
    /// What the file leaves out, for the reply ("showing pages 1–10 of 143; the PDF has them
    /// all"); `None` when it holds the whole document.
    pub fn limits_note(&self) -> Option<String> {
        let mut notes = Vec::new();
        if self.pages_in_file < self.pages {
            notes.push(format!(
                "showing pages 1–{} of {}; the PDF has them all",
                self.pages_in_file, self.pages
            ));
        }
        if self.rows_left_out > 0 {
            notes.push(format!(
                "the document stops at {} pages: {} more table rows are left out",
                self.pages, self.rows_left_out
            ));
        }
        (!notes.is_empty()).then(|| notes.join("; "))
    }
}

/// Builds the document for `kind` from the project's data (no rendering).
pub fn build(
    p: &ProjectData,
    kind: &ReportKind,
    requested_by: &str,
    at: DateTime<Utc>,
) -> Result<(Document, String), ReportError> {
    let header = |title: String| Header {
        title,
        project: p.project.name.clone(),
        edition: format!("NEC {}", p.project.edition),
        date: at.format("%Y-%m-%d").to_string(),
        requested_by: requested_by.to_string(),
    };
    match kind {
        ReportKind::Panel { panel } => panel_schedule::build(p, panel, header),
        ReportKind::Inspection => inspection_report::build(p, header),
        ReportKind::Load => load_worksheet::build(p, header),
        ReportKind::Energy => energy_budget::build(p, header),
    }
}

/// Builds and renders a document.
pub fn render(
    p: &ProjectData,
    kind: &ReportKind,
    format: Format,
    requested_by: &str,
    at: DateTime<Utc>,
) -> Result<Rendered, ReportError> {
    render_or_stop(p, kind, format, requested_by, at, &|| false)
}

/// [`render`], giving up between pages once `stop` says so (its caller has gone).
pub fn render_or_stop(
    p: &ProjectData,
    kind: &ReportKind,
    format: Format,
    requested_by: &str,
    at: DateTime<Utc>,
    stop: &dyn Fn() -> bool,
) -> Result<Rendered, ReportError> {
    let (doc, summary) = build(p, kind, requested_by, at)?;
    let laid = layout::paginate(&doc, layout::MAX_PAGES);
    let (bytes, pages_in_file) = match format {
        Format::Pdf => (
            output::to_pdf_or_stop(&laid.pages, &doc.header.title, stop)?,
            laid.pages.len(),
        ),
        Format::Png => (
            output::to_png_or_stop(&laid.pages, stop)?,
            laid.pages.len().min(output::MAX_PNG_PAGES),
        ),
    };
    Ok(Rendered {
        file_name: format!("{}.{}", kind.slug(), format.extension()),
        title: doc.header.title,
        format,
        pages: laid.pages.len(),
        pages_in_file,
        rows_left_out: laid.rows_left_out,
        summary,
        bytes,
    })
}
