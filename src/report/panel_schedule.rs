//! The panel schedule: every circuit with its slot, phase, load, breaker, conductors, EGC and
//! voltage drop; per-phase totals with continuous loads at 125 %; ratings, spare spaces and
//! the available fault current against the interrupting rating.

use std::collections::BTreeSet;

use super::document::{
    num, Align, Block, Column, Document, Header, Orientation, Row, RowStyle, Table,
};
use super::ReportError;
use crate::nec::tables::egc_for_ocpd;
use crate::nec::units::Phase;
use crate::project::analysis::{
    circuit_voltage_drop, panel_loading, phase_letters, resolve_panel, slots, spare_spaces,
    FaultCalculator,
};
use crate::project::inspection::recorded_egc;
use crate::project::ProjectData;

/// Branch-circuit voltage drop above this (percent) is highlighted (210.19(A) IN No. 4).
const VD_LIMIT: f64 = 3.0;

fn phase_words(p: Phase) -> &'static str {
    match p {
        Phase::Single => "1-phase",
        Phase::Three => "3-phase",
    }
}

/// Free slot numbers as ranges ("13, 15-21").
fn ranges(free: &[i32]) -> String {
    // Slots on one side of a panel step by 2 (odd left, even right).
    let mut parts = Vec::new();
    for side in [1, 0] {
        let col: Vec<i32> = free.iter().copied().filter(|s| s % 2 == side).collect();
        let mut i = 0;
        while i < col.len() {
            let start = col[i];
            let mut end = start;
            while i + 1 < col.len() && col[i + 1] == end + 2 {
                i += 1;
                end = col[i];
            }
            parts.push(if end == start {
                start.to_string()
            } else {
                format!("{start}-{end}")
            });
            i += 1;
        }
    }
    parts.join(", ")
}

/// The schedule of `name`, and a one-line summary.
pub fn build(
    p: &ProjectData,
    name: &str,
    header: impl Fn(String) -> Header,
) -> Result<(Document, String), ReportError> {
    let panel = resolve_panel(p, name)?;
    let spec = &panel.spec;
    let circuits = p.circuits_of(panel.id);
    let specs: Vec<_> = circuits.iter().map(|c| &c.spec).collect();
    let mut notes = Vec::new();

    let mut rows = Vec::new();
    let mut egc_from_table = false;
    for c in &circuits {
        let c = &c.spec;
        let slot_list: Vec<String> = slots(c).map(|s| s.to_string()).collect();
        let conductor = c
            .conductor_size
            .map(|s| format!("{s} {} {}", c.material, c.insulation))
            .unwrap_or_else(|| "-".into());
        let egc = match recorded_egc(&c.conduit) {
            Some(s) => s.to_string(),
            None => match egc_for_ocpd(c.breaker.0, c.material) {
                Ok(s) => {
                    egc_from_table = true;
                    format!("{s} *")
                }
                Err(_) => "-".into(),
            },
        };
        let (vd, alert) = match circuit_voltage_drop(spec, c, None, None) {
            Ok(r) => (format!("{:.2} %", r.percent), r.percent > VD_LIMIT),
            Err(_) => ("-".into(), false),
        };
        let row = Row::new(vec![
            slot_list.join(","),
            phase_letters(spec, c),
            c.description.clone(),
            num(c.load_va.0, 0),
            if c.continuous {
                "C".into()
            } else {
                String::new()
            },
            format!("{}", c.breaker),
            c.poles.to_string(),
            conductor,
            egc,
            vd,
        ]);
        rows.push(if alert {
            row.styled(RowStyle::Alert)
        } else {
            row
        });
    }
    let spaces = i32::try_from(spec.spaces).unwrap_or(i32::MAX);
    let used: BTreeSet<i32> = circuits.iter().flat_map(|c| slots(&c.spec)).collect();
    let free: Vec<i32> = (1..=spaces).filter(|s| !used.contains(s)).collect();
    let spare = spare_spaces(spec, &circuits);
    if !free.is_empty() {
        rows.push(
            Row::new(vec![
                String::new(),
                String::new(),
                format!("Spare spaces ({spare}): {}", ranges(&free)),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ])
            .styled(RowStyle::Muted),
        );
    }

    let mut fc = FaultCalculator::new(p);
    let (fault, fault_ka) = match fc.at(&spec.name) {
        Ok(f) => {
            notes.extend(f.assumptions.iter().map(|a| format!("Fault current: {a}")));
            (format!("{} kA", num(f.fault_ka, 2)), Some(f.fault_ka))
        }
        Err(e) => (format!("unknown ({e})"), None),
    };
    let interrupting = match (spec.interrupting_rating_ka, fault_ka) {
        (Some(r), Some(f)) if r + 1e-9 >= f => {
            format!("{} kA: adequate (NEC 110.9, 110.10)", num(r, 0))
        }
        (Some(r), Some(_)) => format!(
            "{} kA: BELOW the available fault current (NEC 110.9)",
            num(r, 0)
        ),
        (Some(r), None) => format!("{} kA (available fault current unknown)", num(r, 0)),
        (None, _) => "not recorded".into(),
    };
    let mut facts = vec![
        (
            "System".to_string(),
            format!("{} {}", spec.voltage, phase_words(spec.phase)),
        ),
        ("Bus rating".into(), spec.bus_rating.to_string()),
        (
            "Main".into(),
            spec.main_breaker
                .map(|m| format!("{m} breaker"))
                .unwrap_or_else(|| "main lugs only".into()),
        ),
        (
            "Spaces".into(),
            format!(
                "{} ({} used, {spare} spare)",
                spec.spaces,
                spec.spaces.saturating_sub(spare)
            ),
        ),
        (
            "Fed from".into(),
            spec.fed_from
                .clone()
                .unwrap_or_else(|| "not recorded".into()),
        ),
        (
            "Location".into(),
            if spec.location.is_empty() {
                "-".into()
            } else {
                spec.location.clone()
            },
        ),
        ("Available fault current".into(), fault),
        ("Interrupting rating".into(), interrupting),
    ];

    let mut blocks = vec![Block::Heading("Ratings and loading".into())];
    let loading = panel_loading(spec, &specs);
    let mut totals = Vec::new();
    let summary = match &loading {
        Ok(Some(r)) => {
            let mut design_total = 0.0;
            for ph in &r.phases {
                design_total += ph.design_va;
                totals.push(Row::new(vec![
                    ph.phase.clone(),
                    num(ph.connected_va, 0),
                    num(ph.design_va, 0),
                    num(ph.design_amps, 1),
                ]));
            }
            totals.push(
                Row::new(vec![
                    "Total".into(),
                    num(r.continuous_va + r.noncontinuous_va, 0),
                    num(design_total, 0),
                    String::new(),
                ])
                .styled(RowStyle::Total),
            );
            let pct = r.max_phase_amps / r.limiting_rating.0 * 100.0;
            facts.push((
                "Continuous load".into(),
                format!(
                    "{} VA (at 125 %: {} VA)",
                    num(r.continuous_va, 0),
                    num(r.continuous_va * 1.25, 0)
                ),
            ));
            facts.push((
                "Noncontinuous load".into(),
                format!("{} VA", num(r.noncontinuous_va, 0)),
            ));
            facts.push((
                "Highest phase".into(),
                format!(
                    "{} A of {} ({} %)",
                    num(r.max_phase_amps, 1),
                    r.limiting_rating,
                    num(pct, 0)
                ),
            ));
            facts.push((
                "Spare capacity".into(),
                format!("{} A", num(r.spare_amps, 1)),
            ));
            facts.push((
                "Phase imbalance".into(),
                format!("{} %", num(r.imbalance_percent, 1)),
            ));
            facts.push((
                "Loading check".into(),
                if r.pass {
                    "pass".into()
                } else {
                    "FAIL: over the bus or main rating".into()
                },
            ));
            // The facts already say "pass"; the check's own lines matter when it fails.
            if !r.pass {
                notes.extend(r.findings.iter().cloned());
            }
            notes.extend(r.assumptions.iter().cloned());
            format!(
                "{} circuits, {spare} spare spaces, highest phase {} A of {} ({})",
                circuits.len(),
                num(r.max_phase_amps, 1),
                r.limiting_rating,
                if r.pass { "pass" } else { "over rating" }
            )
        }
        Ok(None) => {
            notes.push("No circuits yet: no load.".into());
            format!("no circuits, {spare} spare spaces")
        }
        Err(e) => {
            notes.push(format!("Loading could not be calculated: {e}"));
            format!("{} circuits, {spare} spare spaces", circuits.len())
        }
    };
    blocks.push(Block::Facts(facts));
    blocks.push(Block::Heading("Circuits".into()));
    blocks.push(Block::Table(Table {
        columns: vec![
            Column::new("Ckt", 0.9, Align::Center),
            Column::new("Ph", 0.6, Align::Center),
            Column::new("Description", 4.6, Align::Left),
            Column::new("Load VA", 1.2, Align::Right),
            Column::new("Cont.", 0.6, Align::Center),
            Column::new("Breaker", 1.0, Align::Right),
            Column::new("Poles", 0.7, Align::Center),
            Column::new("Conductor", 2.1, Align::Left),
            Column::new("EGC", 1.1, Align::Left),
            Column::new("VD", 1.0, Align::Right),
        ],
        rows,
    }));
    if !totals.is_empty() {
        blocks.push(Block::Heading(
            "Per-phase totals (continuous loads at 125 %)".into(),
        ));
        blocks.push(Block::Table(Table {
            columns: vec![
                Column::new("Phase", 1.0, Align::Center),
                Column::new("Connected VA", 2.0, Align::Right),
                Column::new("Design VA", 2.0, Align::Right),
                Column::new("Design A", 2.0, Align::Right),
            ],
            rows: totals,
        }));
    }
    let mut legend = vec![
        "Cont. C: continuous load (3 h or more), counted at 125 % (NEC 210.20(A), 215.3).".to_string(),
        format!("VD: branch-circuit voltage drop by the K-factor method (Chapter 9 Table 8); rows above {VD_LIMIT} % are shaded (210.19(A) Informational Note No. 4); '-' where the length or conductor is not recorded."),
    ];
    if egc_from_table {
        legend.push(
            "EGC *: not recorded; the minimum size from Table 250.122 for the breaker is shown."
                .into(),
        );
    }
    legend.extend(notes);
    blocks.push(Block::Heading("Notes".into()));
    blocks.push(Block::Notes(legend));
    Ok((
        Document {
            header: header(format!("Panel schedule {}", spec.name)),
            orientation: Orientation::Landscape,
            blocks,
        },
        summary,
    ))
}

#[cfg(test)]
mod tests {
    use super::ranges;

    #[test]
    fn free_slots_become_ranges_per_side() {
        assert_eq!(ranges(&[13, 15, 17, 21, 14, 16]), "13-17, 21, 14-16");
        assert_eq!(ranges(&[]), "");
    }
}
