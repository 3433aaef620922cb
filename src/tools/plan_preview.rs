//! What the write tools' previews share: one call's plan item and the lines that show a panel's
//! fault current and loading and a circuit's state after the change.

use serde_json::Value;

use crate::nec::conductors;
use crate::project::analysis::{
    circuit_conductor_input, circuit_electrical, circuit_voltage_drop, panel_loading,
    phase_letters, FaultCalculator,
};
use crate::project::plan::{Change, ItemPlan};
use crate::project::{AnalysisError, CircuitSpec, Panel, PanelSpec, ProjectData};

/// One call's plan: its changes and the fields its result adds (a JSON object).
pub(crate) fn plan_item(changes: Vec<Change>, result: Value) -> ItemPlan {
    ItemPlan {
        changes,
        result: match result {
            Value::Object(m) => m,
            _ => serde_json::Map::new(),
        },
    }
}

/// Fault-current line for a panel of a (possibly hypothetical) project.
pub(crate) fn fault_line(p: &ProjectData, panel: &PanelSpec) -> String {
    match FaultCalculator::new(p)
        .upper_bound_when_c_unknown()
        .at(&panel.name)
    {
        Ok(f) if !f.upper_bound.is_empty() => {
            let verdict = match panel.interrupting_rating_ka {
                Some(r) if r + 1e-9 >= f.fault_ka => {
                    format!("; its {r} kA rating is sufficient (110.9)")
                }
                Some(r) => format!(
                    "; its {r} kA rating is below that bound, so 110.9/110.10 is undecided"
                ),
                None => String::new(),
            };
            format!(
                "Available fault current at {}: at most {:.1} kA (upper bound: {}){verdict}",
                panel.name,
                f.fault_ka,
                f.upper_bound.join("; ")
            )
        }
        Ok(f) => match panel.interrupting_rating_ka {
            Some(r) if r + 1e-9 >= f.fault_ka => format!(
                "Available fault current at {}: {:.1} kA; its {r} kA rating is sufficient (110.9)",
                panel.name, f.fault_ka
            ),
            Some(r) => format!(
                "WARNING: available fault current at {} is {:.1} kA, above its {r} kA rating (110.9/110.10)",
                panel.name, f.fault_ka
            ),
            None => format!(
                "Available fault current at {}: {:.1} kA (no interrupting rating recorded to compare)",
                panel.name, f.fault_ka
            ),
        },
        Err(e) => format!("Fault current at {} unknown: {e}", panel.name),
    }
}

pub(crate) fn loading_line(panel: &PanelSpec, circuits: &[&CircuitSpec]) -> String {
    match panel_loading(panel, circuits) {
        Ok(Some(r)) => {
            let phases = r
                .phases
                .iter()
                .map(|x| format!("{} {:.0} VA", x.phase, x.connected_va))
                .collect::<Vec<_>>()
                .join(", ");
            format!(
                "{}: highest phase {:.1} A (continuous at 125 %) of {} A ({:.0} %){}; {phases}",
                panel.name,
                r.max_phase_amps,
                r.limiting_rating.0,
                r.max_phase_amps / r.limiting_rating.0 * 100.0,
                if r.pass {
                    ""
                } else {
                    " — OVERLOADED (408.30/215.3)"
                }
            )
        }
        Ok(None) => format!("{}: no load", panel.name),
        Err(e) => format!("{}: loading unknown ({e})", panel.name),
    }
}

/// Lines describing a circuit's state in its panel (shared by the circuit previews).
pub(crate) fn circuit_result_lines(
    p: &ProjectData,
    panel: &Panel,
    c: &CircuitSpec,
    others: &[&CircuitSpec],
) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(e) = circuit_electrical(&panel.spec, c) {
        out.push(format!(
            "Load: {:.1} A at {:.0} V ({})",
            e.current,
            e.volts,
            phase_letters(&panel.spec, c)
        ));
    }
    if let Some(line) = conductor_check_line(p, &panel.spec, c) {
        out.push(line);
    }
    if let Ok(egc) = crate::nec::tables::egc_for_ocpd(c.breaker.0, c.material) {
        out.push(format!("Minimum EGC (250.122): {egc} {}", c.material));
    }
    match circuit_voltage_drop(&panel.spec, c, None, None) {
        Ok(r) => out.push(format!(
            "Voltage drop: {:.2} % ({:.1} V){}",
            r.percent,
            r.voltage_drop.0,
            if r.percent > 3.0 {
                " — above the 3 % recommendation"
            } else {
                ""
            }
        )),
        Err(AnalysisError::MissingData(m)) if c.length.is_none() => {
            let _ = m;
            out.push("Voltage drop: unknown (no length)".into());
        }
        Err(e) => out.push(format!("Voltage drop: unknown ({e})")),
    }
    let mut all: Vec<&CircuitSpec> = others.to_vec();
    all.push(c);
    out.push(format!("Panel after: {}", loading_line(&panel.spec, &all)));
    out
}

/// Convenience for previews: the conductor check of a circuit as one line, if it can be made.
pub fn conductor_check_line(
    p: &ProjectData,
    panel: &crate::project::PanelSpec,
    c: &CircuitSpec,
) -> Option<String> {
    let size = c.conductor_size?;
    let e = circuit_electrical(panel, c).ok()?;
    if e.current <= 0.0 {
        return None;
    }
    let input = circuit_conductor_input(c, &e, p.project.edition, None);
    let r = conductors::check_conductor(&input, size).ok()?;
    Some(if r.pass {
        format!(
            "Conductor check: {size} {} on {} A passes (210.19(A), 210.20(A), 240.4)",
            c.material, c.breaker.0
        )
    } else {
        let failed: Vec<String> = r
            .checks
            .iter()
            .filter(|x| !x.pass)
            .map(|x| format!("NEC {}: {}", x.rule, x.detail))
            .collect();
        format!("Conductor check FAILS: {}", failed.join("; "))
    })
}
