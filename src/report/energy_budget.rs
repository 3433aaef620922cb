//! The daily energy budget: every load and charging source with its watt-hours per day, the
//! totals and the balance (computed by the same functions as the `energy_budget` tool).

use super::document::{
    num, Align, Block, Column, Document, Header, Orientation, Row, RowStyle, Table,
};
use super::ReportError;
use crate::project::energy::{budget, load_wh, source_wh};
use crate::project::AnalysisError;
use crate::project::ProjectData;

/// The energy budget as a document, and a one-line summary.
pub fn build(
    p: &ProjectData,
    header: impl Fn(String) -> Header,
) -> Result<(Document, String), ReportError> {
    if p.loads.is_empty() && p.charging_sources.is_empty() {
        return Err(AnalysisError::MissingData(format!(
            "project {} has no loads or charging sources for an energy budget; add them with add_load_item and add_charging_source",
            p.project.name
        ))
        .into());
    }
    let (used, produced) = budget(p);
    let balance = produced - used;
    let mut loads: Vec<Row> = p
        .loads
        .iter()
        .map(|l| {
            let s = &l.spec;
            Row::new(vec![
                s.name.clone(),
                num(s.watts.0, 1),
                num(s.hours_per_day, 1),
                format!("{} %", num(s.duty_cycle * 100.0, 0)),
                s.quantity.to_string(),
                num(load_wh(s), 0),
                s.notes.clone(),
            ])
        })
        .collect();
    loads.push(
        Row::new(vec![
            "Total".into(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            num(used, 0),
            String::new(),
        ])
        .styled(RowStyle::Total),
    );
    let mut sources: Vec<Row> = p
        .charging_sources
        .iter()
        .map(|c| {
            let s = &c.spec;
            Row::new(vec![
                s.name.clone(),
                s.kind.clone(),
                num(s.watts.0, 1),
                num(s.hours_per_day, 1),
                format!("{} %", num(s.efficiency * 100.0, 0)),
                num(source_wh(s), 0),
                s.notes.clone(),
            ])
        })
        .collect();
    sources.push(
        Row::new(vec![
            "Total".into(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            num(produced, 0),
            String::new(),
        ])
        .styled(RowStyle::Total),
    );
    let verdict = if balance >= 0.0 {
        format!("surplus of {} Wh/day", num(balance, 0))
    } else {
        format!("DEFICIT of {} Wh/day", num(-balance, 0))
    };
    let blocks = vec![
        Block::Heading("Balance".into()),
        Block::Facts(vec![
            ("Loads".into(), format!("{} Wh/day", num(used, 0))),
            ("Charging".into(), format!("{} Wh/day", num(produced, 0))),
            ("Balance".into(), verdict.clone()),
        ]),
        Block::Heading(format!("Loads ({})", p.loads.len())),
        Block::Table(Table {
            columns: vec![
                Column::new("Load", 2.6, Align::Left),
                Column::new("W", 0.8, Align::Right),
                Column::new("h/day", 0.7, Align::Right),
                Column::new("Duty", 0.7, Align::Right),
                Column::new("Qty", 0.5, Align::Right),
                Column::new("Wh/day", 0.9, Align::Right),
                Column::new("Notes", 2.6, Align::Left),
            ],
            rows: loads,
        }),
        Block::Heading(format!("Charging sources ({})", p.charging_sources.len())),
        Block::Table(Table {
            columns: vec![
                Column::new("Source", 2.4, Align::Left),
                Column::new("Kind", 0.9, Align::Left),
                Column::new("W", 0.8, Align::Right),
                Column::new("h/day", 0.7, Align::Right),
                Column::new("Eff.", 0.7, Align::Right),
                Column::new("Wh/day", 0.9, Align::Right),
                Column::new("Notes", 2.4, Align::Left),
            ],
            rows: sources,
        }),
        Block::Notes(vec![
            "Load Wh/day = W × hours per day × duty cycle × quantity; source Wh/day = W × equivalent full-output hours × efficiency.".into(),
        ]),
    ];
    Ok((
        Document {
            header: header("Energy budget".into()),
            orientation: Orientation::Portrait,
            blocks,
        },
        format!(
            "loads {} Wh/day, charging {} Wh/day: {verdict}",
            num(used, 0),
            num(produced, 0)
        ),
    ))
}
