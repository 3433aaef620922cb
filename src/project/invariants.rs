//! What a project's data must satisfy before a change is planned: names that are unique and
//! non-empty, ratings in range, equipment fed from something the project has, circuits that fit
//! their panel. A failure lists every problem at once, in words a person can act on.

use super::analysis::{
    circuit_electrical, circuit_label, is_service, next_free_number, slot_conflict,
};
use super::{
    AnalysisError, ChargingSourceSpec, Circuit, CircuitSpec, FeederSpec, LoadItemSpec, Panel,
    PanelSpec, ProjectData, ServiceSpec, TransformerSpec,
};

/// A load item of the energy budget: named, with watts, hours, duty cycle and quantity in range.
pub fn check_load(l: &LoadItemSpec) -> Result<(), AnalysisError> {
    let mut problems = Vec::new();
    if l.name.trim().is_empty() {
        problems.push("name is empty".to_string());
    }
    if !(l.watts.0 > 0.0 && l.watts.0 <= 100_000.0) {
        problems.push(format!(
            "watts must be between 0 and 100000, not {}",
            l.watts.0
        ));
    }
    if !(0.0..=24.0).contains(&l.hours_per_day) {
        problems.push(format!(
            "hours_per_day must be 0-24, not {}",
            l.hours_per_day
        ));
    }
    if !(0.0..=1.0).contains(&l.duty_cycle) {
        problems.push(format!(
            "duty_cycle must be between 0 and 1, not {}",
            l.duty_cycle
        ));
    }
    if l.quantity == 0 {
        problems.push("quantity must be at least 1".into());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(AnalysisError::Invalid(problems.join("; ")))
    }
}

/// A charging source: named, of a known kind, with watts, hours and efficiency in range.
pub fn check_source(s: &ChargingSourceSpec) -> Result<(), AnalysisError> {
    let mut problems = Vec::new();
    if s.name.trim().is_empty() {
        problems.push("name is empty".to_string());
    }
    if !["solar", "alternator", "shore", "generator", "wind", "other"].contains(&s.kind.as_str()) {
        problems.push(format!(
            "kind must be solar, alternator, shore, generator, wind or other, not '{}'",
            s.kind
        ));
    }
    if !(s.watts.0 > 0.0 && s.watts.0 <= 1_000_000.0) {
        problems.push(format!("watts must be positive, not {}", s.watts.0));
    }
    if !(0.0..=24.0).contains(&s.hours_per_day) {
        problems.push(format!(
            "hours_per_day must be 0-24, not {}",
            s.hours_per_day
        ));
    }
    if !(s.efficiency > 0.0 && s.efficiency <= 1.0) {
        problems.push(format!(
            "efficiency must be above 0 and at most 1, not {}",
            s.efficiency
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(AnalysisError::Invalid(problems.join("; ")))
    }
}

fn err_list(problems: Vec<String>) -> Result<(), AnalysisError> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(AnalysisError::Invalid(problems.join("; ")))
    }
}

/// Adds a problem when `v` is not a number above 0 and at most `max` (`unit` follows the
/// maximum in the message, with its space).
fn up_to(problems: &mut Vec<String>, field: &str, v: f64, max: f64, unit: &str) {
    if !finite_in(v, 0.0, max) {
        problems.push(format!(
            "{field} must be above 0 and at most {max}{unit}, not {v}"
        ));
    }
}

/// `fed_from` must name the service, a panel or a transformer of the project.
fn require_source(p: &ProjectData, src: &str) -> Result<(), AnalysisError> {
    if known_source(p, src) {
        return Ok(());
    }
    Err(AnalysisError::NotFound(format!(
        "fed_from '{}' is not the service, a panel or a transformer of the project; sources: {}",
        src.trim(),
        sources_list(p)
    )))
}

fn finite_in(v: f64, lo: f64, hi: f64) -> bool {
    v.is_finite() && v > lo && v <= hi
}

/// Whether `name` is the service, a panel or a transformer of the project.
pub fn known_source(p: &ProjectData, name: &str) -> bool {
    is_service(name)
        || p.panel_by_name(name).is_some()
        || p.transformers
            .iter()
            .any(|t| t.spec.name.eq_ignore_ascii_case(name.trim()))
}

fn sources_list(p: &ProjectData) -> String {
    let mut v = vec!["service".to_string()];
    v.extend(p.panels.iter().map(|x| x.spec.name.clone()));
    v.extend(p.transformers.iter().map(|t| t.spec.name.clone()));
    v.join(", ")
}

/// A panel: named (not `service`, not taken unless it is `ignore_id`), ratings in range, fed
/// from the service, a panel or a transformer of the project and not from itself.
pub fn check_panel_spec(
    p: &ProjectData,
    s: &PanelSpec,
    ignore_id: Option<i64>,
) -> Result<(), AnalysisError> {
    let mut problems = Vec::new();
    let name = s.name.trim();
    if name.is_empty() || name.len() > 64 {
        problems.push("name must be 1-64 characters".to_string());
    }
    if is_service(name) {
        problems.push(format!("'{name}' is reserved for the service"));
    }
    up_to(&mut problems, "voltage", s.voltage.0, 1000.0, " V");
    up_to(&mut problems, "bus_rating", s.bus_rating.0, 6000.0, " A");
    if let Some(m) = s.main_breaker {
        up_to(&mut problems, "main_breaker", m.0, 6000.0, " A");
    }
    if let Some(k) = s.interrupting_rating_ka {
        up_to(&mut problems, "interrupting_rating_ka", k, 300.0, " kA");
    }
    if s.spaces == 0 || s.spaces > 200 {
        problems.push(format!("spaces must be 1-200, not {}", s.spaces));
    }
    err_list(problems)?;
    if let Some(other) = p.panel_by_name(name) {
        if Some(other.id) != ignore_id {
            return Err(AnalysisError::Conflict(format!(
                "project {} already has a panel named {}",
                p.project.name, other.spec.name
            )));
        }
    }
    if let Some(src) = &s.fed_from {
        if src.trim().eq_ignore_ascii_case(name) {
            return Err(AnalysisError::Invalid(format!(
                "panel {name} cannot feed itself"
            )));
        }
        require_source(p, src)?;
    }
    Ok(())
}

/// The voltage `src` (the service, a panel or a transformer's secondary) supplies.
pub fn source_voltage(p: &ProjectData, src: &str) -> Option<f64> {
    if is_service(src) {
        return p.service.as_ref().map(|s| s.voltage.0);
    }
    if let Some(x) = p.panel_by_name(src) {
        return Some(x.spec.voltage.0);
    }
    p.transformers
        .iter()
        .find(|t| t.spec.name.eq_ignore_ascii_case(src.trim()))
        .map(|t| t.spec.secondary_voltage.0)
}

/// A circuit in `panel`: described, ratings in range, a known conductor, a voltage the panel
/// can give it, and slots free (except its own, `ignore_id`).
pub fn check_circuit_spec(
    p: &ProjectData,
    panel: &Panel,
    c: &CircuitSpec,
    ignore_id: Option<i64>,
) -> Result<(), AnalysisError> {
    let mut problems = Vec::new();
    let d = c.description.trim();
    if d.is_empty() || d.len() > 200 {
        problems.push("description must be 1-200 characters".to_string());
    }
    if !(c.load_va.0.is_finite() && c.load_va.0 >= 0.0 && c.load_va.0 <= 10_000_000.0) {
        problems.push(format!(
            "load_va must be 0-10000000 VA, not {}",
            c.load_va.0
        ));
    }
    up_to(&mut problems, "breaker", c.breaker.0, 6000.0, " A");
    if !(1..=3).contains(&c.poles) {
        problems.push(format!("poles must be 1, 2 or 3, not {}", c.poles));
    }
    if let Some(l) = c.length {
        up_to(&mut problems, "length", l.0, 10_000.0, " ft");
    }
    if let Some(s) = c.conductor_size {
        if let Err(e) = crate::nec::tables::ampacity_row(s, c.material) {
            problems.push(format!("conductor_size: {e}"));
        }
    }
    err_list(problems)?;
    circuit_electrical(&panel.spec, c)?;
    let circuits: Vec<&Circuit> = p.circuits_of(panel.id);
    if let Some(why) = slot_conflict(&panel.spec, &circuits, c, ignore_id) {
        return Err(AnalysisError::Conflict(format!(
            "cannot place {}: {why}; next free circuit number: {}",
            circuit_label(&panel.spec, c),
            next_free_number(&panel.spec, &circuits, c.poles)
                .map(|n| n.to_string())
                .unwrap_or_else(|| "none (panel full)".into())
        )));
    }
    Ok(())
}

/// The service: voltage, rating and available fault current in range.
pub fn check_service(s: &ServiceSpec) -> Result<(), AnalysisError> {
    let mut problems = Vec::new();
    up_to(&mut problems, "voltage", s.voltage.0, 1000.0, " V");
    up_to(&mut problems, "rating", s.rating.0, 6000.0, " A");
    if let Some(k) = s.available_fault_ka {
        up_to(&mut problems, "available_fault_ka", k, 300.0, " kA");
    }
    err_list(problems)
}

/// A feeder: named and new, ratings in range, between two different pieces of equipment of
/// the project.
pub fn check_feeder(p: &ProjectData, f: &FeederSpec) -> Result<(), AnalysisError> {
    let mut problems = Vec::new();
    let name = f.name.trim();
    if name.is_empty() || name.len() > 64 {
        problems.push("name must be 1-64 characters".to_string());
    }
    up_to(&mut problems, "ocpd", f.ocpd.0, 6000.0, " A");
    if f.sets == 0 || f.sets > 20 {
        problems.push(format!("sets must be 1-20, not {}", f.sets));
    }
    if let Some(l) = f.length {
        up_to(&mut problems, "length", l.0, 10_000.0, " ft");
    }
    // Published C values run from a few hundred (14 AWG) to about 60 000 (busway).
    if let Some(c) = f.c_value {
        up_to(&mut problems, "c_value", c, 100_000.0, "");
    }
    if let Some(z) = f.impedance_ohms_per_1000ft {
        up_to(
            &mut problems,
            "impedance_ohms_per_1000ft",
            z,
            100.0,
            " Ω per 1000 ft",
        );
    }
    if let Err(e) = crate::nec::tables::ampacity_row(f.conductor_size, f.material) {
        problems.push(format!("conductor_size: {e}"));
    }
    err_list(problems)?;
    if p.feeders
        .iter()
        .any(|x| x.spec.name.eq_ignore_ascii_case(name))
    {
        return Err(AnalysisError::Conflict(format!(
            "project {} already has a feeder named {name}",
            p.project.name
        )));
    }
    for end in [&f.from, &f.to] {
        if !known_source(p, end) {
            return Err(AnalysisError::NotFound(format!(
                "'{}' is not the service, a panel or a transformer of the project; equipment: {}",
                end.trim(),
                sources_list(p)
            )));
        }
    }
    if f.from.trim().eq_ignore_ascii_case(f.to.trim()) {
        return Err(AnalysisError::Invalid(
            "a feeder must connect two different pieces of equipment".into(),
        ));
    }
    Ok(())
}

/// A transformer: named and new, ratings and impedance in range, fed from equipment of the
/// project.
pub fn check_transformer(p: &ProjectData, t: &TransformerSpec) -> Result<(), AnalysisError> {
    let mut problems = Vec::new();
    let name = t.name.trim();
    if name.is_empty() || name.len() > 64 || is_service(name) {
        problems.push("name must be 1-64 characters and not 'service'".to_string());
    }
    up_to(&mut problems, "kva", t.kva, 100_000.0, "");
    if !finite_in(t.primary_voltage.0, 0.0, 50_000.0) {
        problems.push(format!(
            "primary_voltage must be above 0, not {}",
            t.primary_voltage.0
        ));
    }
    if !finite_in(t.secondary_voltage.0, 0.0, 50_000.0) {
        problems.push(format!(
            "secondary_voltage must be above 0, not {}",
            t.secondary_voltage.0
        ));
    }
    if !(t.impedance_percent.is_finite() && (0.1..=30.0).contains(&t.impedance_percent)) {
        problems.push(format!(
            "impedance_percent must be 0.1-30, not {}",
            t.impedance_percent
        ));
    }
    err_list(problems)?;
    if p.transformers
        .iter()
        .any(|x| x.spec.name.eq_ignore_ascii_case(name))
        || p.panel_by_name(name).is_some()
    {
        return Err(AnalysisError::Conflict(format!(
            "project {} already has equipment named {name}",
            p.project.name
        )));
    }
    if let Some(src) = &t.fed_from {
        require_source(p, src)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nec::units::Watts;

    #[test]
    fn load_items_out_of_range_name_every_problem() {
        let l = LoadItemSpec {
            name: "fridge".into(),
            watts: Watts(45.0),
            hours_per_day: 24.0,
            duty_cycle: 0.33,
            quantity: 2,
            notes: String::new(),
        };
        assert!(check_load(&l).is_ok());
        let bad = LoadItemSpec {
            duty_cycle: 1.5,
            hours_per_day: 30.0,
            ..l
        };
        let err = check_load(&bad).unwrap_err().to_string();
        assert!(
            err.contains("duty_cycle") && err.contains("hours_per_day"),
            "{err}"
        );
    }

    #[test]
    fn range_problems_name_the_field_the_limit_and_the_value() {
        let s = ServiceSpec {
            voltage: crate::nec::units::Volts(2000.0),
            phase: crate::nec::units::Phase::Single,
            rating: crate::nec::units::Amps(200.0),
            available_fault_ka: Some(350.5),
            notes: String::new(),
        };
        let err = check_service(&s).unwrap_err().to_string();
        assert_eq!(
            err,
            "invalid arguments: voltage must be above 0 and at most 1000 V, not 2000; \
             available_fault_ka must be above 0 and at most 300 kA, not 350.5"
        );
    }
}
