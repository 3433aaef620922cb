//! The service load worksheet: every panel's connected load with continuous loads at 125 %
//! (the same panel-capacity calculation as the schedule), totalled against the service.

use super::document::{
    num, Align, Block, Column, Document, Header, Orientation, Row, RowStyle, Table,
};
use super::ReportError;
use crate::nec::units::Phase;
use crate::project::analysis::panel_loading;
use crate::project::AnalysisError;
use crate::project::ProjectData;

/// The worksheet as a document, and a one-line summary.
pub fn build(
    p: &ProjectData,
    header: impl Fn(String) -> Header,
) -> Result<(Document, String), ReportError> {
    if p.panels.is_empty() {
        return Err(AnalysisError::MissingData(format!(
            "project {} has no panels: nothing to total for a service load calculation",
            p.project.name
        ))
        .into());
    }
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let (mut cont, mut noncont) = (0.0, 0.0);
    for panel in &p.panels {
        let circuits = p.circuits_of(panel.id);
        let specs: Vec<_> = circuits.iter().map(|c| &c.spec).collect();
        let (c, n) = match panel_loading(&panel.spec, &specs) {
            Ok(Some(r)) => (r.continuous_va, r.noncontinuous_va),
            Ok(None) => (0.0, 0.0),
            Err(e) => {
                notes.push(format!("{}: {e}", panel.spec.name));
                (0.0, 0.0)
            }
        };
        cont += c;
        noncont += n;
        rows.push(Row::new(vec![
            panel.spec.name.clone(),
            panel.spec.fed_from.clone().unwrap_or_else(|| "-".into()),
            circuits.len().to_string(),
            num(c, 0),
            num(c * 1.25, 0),
            num(n, 0),
            num(c * 1.25 + n, 0),
        ]));
    }
    let design = cont * 1.25 + noncont;
    rows.push(
        Row::new(vec![
            "Total".into(),
            String::new(),
            p.circuits.len().to_string(),
            num(cont, 0),
            num(cont * 1.25, 0),
            num(noncont, 0),
            num(design, 0),
        ])
        .styled(RowStyle::Total),
    );
    let mut facts = vec![
        (
            "Connected load".to_string(),
            format!("{} VA", num(cont + noncont, 0)),
        ),
        (
            "Continuous at 125 %".into(),
            format!("{} VA", num(cont * 1.25, 0)),
        ),
        ("Calculated load".into(), format!("{} VA", num(design, 0))),
    ];
    let summary = match &p.service {
        Some(s) => {
            let amps = match s.phase {
                Phase::Single => design / s.voltage.0,
                Phase::Three => design / (3f64.sqrt() * s.voltage.0),
            };
            let pct = amps / s.rating.0 * 100.0;
            let ok = amps <= s.rating.0 + 1e-9;
            facts.push((
                "Service".into(),
                format!(
                    "{} {}, {}",
                    s.voltage,
                    if s.phase == Phase::Three {
                        "3-phase"
                    } else {
                        "1-phase"
                    },
                    s.rating
                ),
            ));
            facts.push((
                "Calculated current".into(),
                format!("{} A ({} % of the service)", num(amps, 1), num(pct, 0)),
            ));
            facts.push((
                "Result".into(),
                if ok {
                    format!(
                        "the service carries the load with {} A to spare",
                        num(s.rating.0 - amps, 1)
                    )
                } else {
                    format!("OVER the service rating by {} A", num(amps - s.rating.0, 1))
                },
            ));
            format!(
                "{} VA, {} A on a {} service",
                num(design, 0),
                num(amps, 1),
                s.rating
            )
        }
        None => {
            facts.push((
                "Service".into(),
                "not recorded: record it with set_service to compare".into(),
            ));
            format!("{} VA calculated load; no service recorded", num(design, 0))
        }
    };
    notes.insert(
        0,
        "Every circuit of every panel is counted once: continuous loads at 125 %, noncontinuous at 100 % (NEC 215.2(A)(1), 230.42(A)). No demand factors are applied; for a dwelling, the Article 220 methods (check_service_upgrade) may give a lower load.".into(),
    );
    let blocks = vec![
        Block::Heading("Result".into()),
        Block::Facts(facts),
        Block::Heading("Load by panel".into()),
        Block::Table(Table {
            columns: vec![
                Column::new("Panel", 1.2, Align::Left),
                Column::new("Fed from", 1.2, Align::Left),
                Column::new("Circuits", 0.8, Align::Right),
                Column::new("Continuous VA", 1.3, Align::Right),
                Column::new("× 125 %", 1.2, Align::Right),
                Column::new("Noncont. VA", 1.3, Align::Right),
                Column::new("Calculated VA", 1.3, Align::Right),
            ],
            rows,
        }),
        Block::Heading("Method".into()),
        Block::Notes(notes),
    ];
    Ok((
        Document {
            header: header("Service load calculation".into()),
            orientation: Orientation::Portrait,
            blocks,
        },
        summary,
    ))
}
