//! The project as the model sees it: whole when small, a summary when large.

use std::fmt::Write;

use crate::project::ProjectData;

/// Above this many characters the project is summarised and the model uses query tools.
const WHOLE_LIMIT: usize = 6000;

/// Text describing the project for the system prompt.
pub fn project_context(p: &ProjectData) -> String {
    let whole = render_whole(p);
    if whole.len() <= WHOLE_LIMIT {
        return whole;
    }
    let mut s = header(p);
    let _ = writeln!(
        s,
        "The project is large; this is a summary. Use describe_panel, find_circuits and the other \
         query tools for details."
    );
    for panel in &p.panels {
        let circuits = p.circuits_of(panel.id);
        let va: f64 = circuits.iter().map(|c| c.spec.load_va.0).sum();
        let _ = writeln!(
            s,
            "- panel {}: {} V {}-phase, {} A bus, {} circuits, {:.0} VA connected",
            panel.spec.name,
            panel.spec.voltage.0,
            panel.spec.phase.count(),
            panel.spec.bus_rating.0,
            circuits.len(),
            va
        );
    }
    let _ = writeln!(
        s,
        "{} feeders, {} transformers, {} loads, {} charging sources, {} open tasks.",
        p.feeders.len(),
        p.transformers.len(),
        p.loads.len(),
        p.charging_sources.len(),
        p.tasks.iter().filter(|t| t.completed_at.is_none()).count()
    );
    s
}

fn header(p: &ProjectData) -> String {
    let code = crate::jurisdiction::for_project(&p.project);
    let mut s = format!(
        "Project \"{}\" ({}).\nCode in force: {} Name this edition and its basis in answers; \
         where something cannot be checked, say so rather than using another edition's values.\n",
        p.project.name,
        code.label(),
        code.summary()
    );
    match &p.service {
        Some(svc) => {
            let _ = writeln!(
                s,
                "Service: {} V {}-phase, {} A{}.",
                svc.voltage.0,
                svc.phase.count(),
                svc.rating.0,
                svc.available_fault_ka
                    .map(|k| format!(", {k} kA available fault current"))
                    .unwrap_or_default()
            );
        }
        None => s.push_str("Service: not entered.\n"),
    }
    s
}

fn render_whole(p: &ProjectData) -> String {
    let mut s = header(p);
    for panel in &p.panels {
        let ps = &panel.spec;
        let _ = writeln!(
            s,
            "Panel {} (id {}): {} V {}-phase, {} A bus, main {}, AIC {}, fed from {}, {} spaces.",
            ps.name,
            panel.id,
            ps.voltage.0,
            ps.phase.count(),
            ps.bus_rating.0,
            ps.main_breaker
                .map(|a| format!("{} A", a.0))
                .unwrap_or_else(|| "MLO".into()),
            ps.interrupting_rating_ka
                .map(|k| format!("{k} kA"))
                .unwrap_or_else(|| "unknown".into()),
            ps.fed_from.as_deref().unwrap_or("unknown"),
            ps.spaces
        );
        for c in p.circuits_of(panel.id) {
            let cs = &c.spec;
            let _ = writeln!(
                s,
                "  ckt {} ({}P) {}: {:.0} VA{}, {} A breaker, {} {} {}, {}",
                cs.number,
                cs.poles,
                cs.description,
                cs.load_va.0,
                if cs.continuous { " continuous" } else { "" },
                cs.breaker.0,
                cs.conductor_size
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "size unknown".into()),
                cs.material,
                cs.insulation,
                cs.length
                    .map(|l| format!("{} ft", l.0))
                    .unwrap_or_else(|| "length unknown".into()),
            );
        }
    }
    for f in &p.feeders {
        let fs = &f.spec;
        let _ = writeln!(
            s,
            "Feeder {}: {} -> {}, {} set(s) of {} {}, {} A OCPD{}.",
            fs.name,
            fs.from,
            fs.to,
            fs.sets,
            fs.conductor_size,
            fs.material,
            fs.ocpd.0,
            fs.length
                .map(|l| format!(", {} ft", l.0))
                .unwrap_or_default()
        );
    }
    for t in &p.transformers {
        let ts = &t.spec;
        let _ = writeln!(
            s,
            "Transformer {}: {} kVA, {} V -> {} V, {}-phase, {}% Z.",
            ts.name,
            ts.kva,
            ts.primary_voltage.0,
            ts.secondary_voltage.0,
            ts.phase.count(),
            ts.impedance_percent
        );
    }
    for l in &p.loads {
        let _ = writeln!(
            s,
            "Load {} (id {}): {} W, {} h/day, duty {}, qty {}.",
            l.spec.name,
            l.id,
            l.spec.watts.0,
            l.spec.hours_per_day,
            l.spec.duty_cycle,
            l.spec.quantity
        );
    }
    for c in &p.charging_sources {
        let _ = writeln!(
            s,
            "Source {} ({}): {} W, {} h/day, efficiency {}.",
            c.spec.name, c.spec.kind, c.spec.watts.0, c.spec.hours_per_day, c.spec.efficiency
        );
    }
    for t in p.tasks.iter().filter(|t| t.completed_at.is_none()) {
        let _ = writeln!(s, "Open task {}: {}.", t.id, t.spec.title);
    }
    s
}
