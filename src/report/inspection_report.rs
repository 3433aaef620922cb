//! The inspection report: every finding of the project's inspection, grouped by severity and
//! counted, with the equipment, NEC reference and suggested fix.

use super::document::{Align, Block, Column, Document, Header, Orientation, Row, RowStyle, Table};
use super::ReportError;
use crate::project::inspection::{
    inspect, summary_line, Category, InspectOptions, Severity, CHECKS,
};
use crate::project::ProjectData;

fn category_name(c: Category) -> &'static str {
    match c {
        Category::Interrupting => "Interrupting ratings",
        Category::Conductors => "Conductors",
        Category::Grounding => "Grounding",
        Category::Panels => "Panels",
        Category::VoltageDrop => "Voltage drop",
        Category::MissingData => "Missing data",
    }
}

const CATEGORIES: [Category; 6] = [
    Category::Interrupting,
    Category::Conductors,
    Category::Grounding,
    Category::Panels,
    Category::VoltageDrop,
    Category::MissingData,
];

/// The whole project's inspection as a document, and a one-line summary.
pub fn build(
    p: &ProjectData,
    header: impl Fn(String) -> Header,
) -> Result<(Document, String), ReportError> {
    let r = inspect(p, &InspectOptions::default())?;
    let c = &r.counts;
    let mut blocks = vec![
        Block::Heading("Summary".into()),
        Block::Facts(vec![
            ("Scope".into(), r.scope.clone()),
            ("Checks run".into(), r.checks_run.len().to_string()),
            ("Violations".into(), c.violations.to_string()),
            ("Warnings".into(), c.warnings.to_string()),
            ("Information".into(), c.info.to_string()),
            ("Findings".into(), r.findings.len().to_string()),
        ]),
    ];
    // Counts by category and severity.
    let mut by_cat = Vec::new();
    for cat in CATEGORIES {
        let count = |s: Severity| {
            r.findings
                .iter()
                .filter(|f| f.category == cat && f.severity == s)
                .count()
        };
        let (v, w, i) = (
            count(Severity::Violation),
            count(Severity::Warning),
            count(Severity::Info),
        );
        let reference = CHECKS
            .iter()
            .filter(|d| d.category == cat && d.reference != "-")
            .map(|d| d.reference.trim_start_matches("NEC "))
            .collect::<Vec<_>>()
            .join("; ");
        let row = Row::new(vec![
            category_name(cat).into(),
            v.to_string(),
            w.to_string(),
            i.to_string(),
            if reference.is_empty() {
                "-".into()
            } else {
                format!("NEC {reference}")
            },
        ]);
        by_cat.push(if v > 0 {
            row.styled(RowStyle::Alert)
        } else {
            row
        });
    }
    by_cat.push(
        Row::new(vec![
            "Total".into(),
            c.violations.to_string(),
            c.warnings.to_string(),
            c.info.to_string(),
            String::new(),
        ])
        .styled(RowStyle::Total),
    );
    blocks.push(Block::Table(Table {
        columns: vec![
            Column::new("Category", 1.6, Align::Left),
            Column::new("Violations", 0.9, Align::Right),
            Column::new("Warnings", 0.9, Align::Right),
            Column::new("Info", 0.6, Align::Right),
            Column::new("Checks (NEC)", 4.0, Align::Left),
        ],
        rows: by_cat,
    }));
    // What each check did: a check that could not run is listed, never read as a pass.
    blocks.push(Block::Table(Table {
        columns: vec![
            Column::new("Check", 1.8, Align::Left),
            Column::new("Run", 0.5, Align::Right),
            Column::new("Passed", 0.7, Align::Right),
            Column::new("Failed", 0.7, Align::Right),
            Column::new("Not run", 0.7, Align::Right),
            Column::new("Why not run", 3.6, Align::Left),
        ],
        rows: r
            .check_summary
            .iter()
            .map(|t| {
                let row = Row::new(vec![
                    t.check.to_string(),
                    t.run.to_string(),
                    t.passed.to_string(),
                    t.failed.to_string(),
                    t.not_run.to_string(),
                    t.not_run_why
                        .iter()
                        .map(|n| format!("{} ({})", n.why, n.equipment.len()))
                        .collect::<Vec<_>>()
                        .join("; "),
                ]);
                if t.failed > 0 || t.not_run > 0 {
                    row.styled(RowStyle::Alert)
                } else {
                    row
                }
            })
            .collect(),
    }));
    let not_run: usize = r.check_summary.iter().map(|t| t.not_run).sum();
    let groups = [
        (Severity::Violation, "Violations", c.violations),
        (Severity::Warning, "Warnings", c.warnings),
        (Severity::Info, "Information", c.info),
    ];
    let mut n = 0;
    for (sev, title, count) in groups {
        if count == 0 {
            continue;
        }
        blocks.push(Block::Heading(format!("{title} ({count})")));
        let rows = r
            .findings
            .iter()
            .filter(|f| f.severity == sev)
            .map(|f| {
                n += 1;
                Row::new(vec![
                    n.to_string(),
                    f.equipment.clone(),
                    f.reference.clone(),
                    f.message.clone(),
                    f.fix.clone(),
                ])
            })
            .collect();
        blocks.push(Block::Table(Table {
            columns: vec![
                Column::new("#", 0.35, Align::Right),
                Column::new("Equipment", 1.5, Align::Left),
                Column::new("NEC", 1.2, Align::Left),
                Column::new("Finding", 3.2, Align::Left),
                Column::new("Suggested fix", 2.8, Align::Left),
            ],
            rows,
        }));
    }
    if r.findings.is_empty() && not_run == 0 {
        blocks.push(Block::Notes(vec![
            "No findings: every check passed on the recorded data.".into(),
        ]));
    } else if r.findings.is_empty() {
        blocks.push(Block::Notes(vec![format!(
            "No findings, but not a clean result: {not_run} check(s) could not run (see the checks table)."
        )]));
    }
    if !r.assumptions.is_empty() {
        blocks.push(Block::Heading("Assumptions".into()));
        blocks.push(Block::Notes(r.assumptions.clone()));
    }
    let summary = summary_line(&r);
    Ok((
        Document {
            header: header("Inspection report".into()),
            orientation: Orientation::Portrait,
            blocks,
        },
        summary,
    ))
}
