//! A circuit before and after a change, as one `field: before -> after` line per changed field.

use super::{ApplianceNameplate, CircuitSpec, MotorLoad};

/// An optional value as text, `—` when absent.
pub fn fmt_opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| "—".into())
}

/// Before -> after lines for every field that changes.
pub fn field_changes(b: &CircuitSpec, a: &CircuitSpec) -> Vec<String> {
    let mut v = Vec::new();
    let mut line = |name: &str, before: String, after: String| {
        if before != after {
            v.push(format!("{name}: {before} -> {after}"));
        }
    };
    line("number", b.number.to_string(), a.number.to_string());
    line("poles", b.poles.to_string(), a.poles.to_string());
    line(
        "description",
        format!("\"{}\"", b.description),
        format!("\"{}\"", a.description),
    );
    line("load", b.load_va.to_string(), a.load_va.to_string());
    line(
        "continuous",
        b.continuous.to_string(),
        a.continuous.to_string(),
    );
    line("breaker", b.breaker.to_string(), a.breaker.to_string());
    line(
        "conductor",
        fmt_opt(&b.conductor_size),
        fmt_opt(&a.conductor_size),
    );
    line("material", b.material.to_string(), a.material.to_string());
    line(
        "insulation",
        b.insulation.to_string(),
        a.insulation.to_string(),
    );
    line("length", fmt_opt(&b.length), fmt_opt(&a.length));
    line(
        "raceway",
        format!("\"{}\"", b.conduit),
        format!("\"{}\"", a.conduit),
    );
    line("motor", motor_text(&b.motor), motor_text(&a.motor));
    line(
        "appliance",
        appliance_text(&b.appliance),
        appliance_text(&a.appliance),
    );
    v
}

fn motor_text(m: &Option<MotorLoad>) -> String {
    match m {
        None => "—".into(),
        Some(m) => format!(
            "{} hp {}-phase {} V{}",
            m.hp,
            m.phase.count(),
            m.voltage.0,
            m.device
                .and_then(|d| serde_json::to_value(d).ok())
                .and_then(|v| v.as_str().map(|s| format!(", {s}")))
                .unwrap_or_default()
        ),
    }
}

fn appliance_text(a: &Option<ApplianceNameplate>) -> String {
    match a {
        None => "—".into(),
        Some(a) => format!("{} {} VA", a.kind.as_str(), a.va.0),
    }
}
