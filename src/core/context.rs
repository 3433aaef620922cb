//! The project as the model sees it, and the policy that decides how much context a request
//! carries.
//!
//! The stable part (project header and panel index) goes in the system prompt, which stays
//! byte-identical from turn to turn so providers' prompt caches hit; the part relevant to the
//! question (the panels it names, whole) travels with the latest user message.

use std::fmt::Write;

use crate::project::{Panel, ProjectData};

/// Above this many characters the project is summarised and the model uses query tools.
const WHOLE_LIMIT: usize = 6000;

/// Which tools a request offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolOffer {
    /// Every tool of the session's mode, each in full.
    All,
    /// Every tool of the mode, those relevant to the latest messages (and those used in the
    /// window) in full, the others in short form (first sentence, argument names and types).
    Relevant,
    /// Only the tools the question and the conversation call for, a small core set in short
    /// form, and a discovery tool naming the rest ([`super::tool_router`]).
    Routed,
}

impl From<crate::config::ToolOfferSetting> for ToolOffer {
    fn from(setting: crate::config::ToolOfferSetting) -> Self {
        match setting {
            crate::config::ToolOfferSetting::Routed => Self::Routed,
            crate::config::ToolOfferSetting::All => Self::All,
        }
    }
}

/// How the project is shown to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectScope {
    /// The whole project in every request, however large.
    Whole,
    /// Whole when small, else a fixed summary (one line per panel with its loads).
    Summary,
    /// Whole when small, else a stable header and panel index, plus the panels the latest
    /// question names, whole.
    Relevant,
}

/// How much context each request carries. Every lever is measured by `benches/context.rs`
/// (figures in docs/context.md); [`ContextPolicy::default`] keeps the ones that pay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextPolicy {
    /// Which tools are offered.
    pub tools: ToolOffer,
    /// Whether tool schemas are sent compacted.
    pub compact_schemas: bool,
    /// How the project is shown.
    pub project: ProjectScope,
    /// Whether large tool results of earlier turns are sent as digests.
    pub digest_old_results: bool,
    /// Whether the whole history is sent, ignoring the token budget.
    pub whole_history: bool,
    /// Whether turns leaving the window are summarised by the model (one extra call when the
    /// window rolls) rather than extractively.
    pub model_summary: bool,
}

impl ContextPolicy {
    /// Everything, every time: the baseline the economy is measured against.
    pub fn naive() -> Self {
        Self {
            tools: ToolOffer::All,
            compact_schemas: false,
            project: ProjectScope::Whole,
            digest_old_results: false,
            whole_history: true,
            model_summary: false,
        }
    }

    /// Every lever on.
    pub fn economy() -> Self {
        Self {
            tools: ToolOffer::Routed,
            compact_schemas: true,
            project: ProjectScope::Relevant,
            digest_old_results: true,
            whole_history: false,
            model_summary: true,
        }
    }
}

impl Default for ContextPolicy {
    fn default() -> Self {
        Self::economy()
    }
}

/// The project split by how often it changes in a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectView {
    /// For the system prompt: the same on every turn until the project changes.
    pub stable: String,
    /// For the latest user message: the parts the question names; empty when none.
    pub relevant: String,
}

/// The project for a request under `scope`, given the latest user messages (newest first).
pub fn project_view(p: &ProjectData, scope: ProjectScope, latest: &[&str]) -> ProjectView {
    let whole = render_whole(p);
    if scope == ProjectScope::Whole || whole.len() <= WHOLE_LIMIT {
        return ProjectView {
            stable: whole,
            relevant: String::new(),
        };
    }
    if scope == ProjectScope::Summary {
        return ProjectView {
            stable: project_context(p),
            relevant: String::new(),
        };
    }
    let mut stable = header(p);
    let _ = writeln!(
        stable,
        "The project is large: this is its panel index. The panels a question names are attached \
         to it whole; use describe_panel, find_circuits and the other query tools for the rest."
    );
    for panel in &p.panels {
        let ps = &panel.spec;
        let _ = writeln!(
            stable,
            "- {}: {} V {}-phase, {} A bus, fed from {}",
            ps.name,
            ps.voltage.0,
            ps.phase.count(),
            ps.bus_rating.0,
            ps.fed_from.as_deref().unwrap_or("unknown"),
        );
    }
    let _ = writeln!(
        stable,
        "{} feeders, {} transformers, {} loads, {} charging sources.",
        p.feeders.len(),
        p.transformers.len(),
        p.loads.len(),
        p.charging_sources.len(),
    );
    // The newest message that names a panel decides: a follow-up without a name ("and its
    // feeder?") keeps the panels of the message before.
    let named: Vec<&Panel> = latest
        .iter()
        .map(|text| named_panels(p, text))
        .find(|v| !v.is_empty())
        .unwrap_or_default();
    let mut relevant = String::new();
    for panel in named {
        render_panel(&mut relevant, p, panel);
        for f in p.feeders.iter().filter(|f| {
            f.spec.to.eq_ignore_ascii_case(&panel.spec.name)
                || f.spec.from.eq_ignore_ascii_case(&panel.spec.name)
        }) {
            render_feeder(&mut relevant, f);
        }
    }
    ProjectView { stable, relevant }
}

/// Panels whose name appears in `text` as a word of its own ("LP-3" but not "LP-31").
pub fn named_panels<'a>(p: &'a ProjectData, text: &str) -> Vec<&'a Panel> {
    let hay = text.to_lowercase();
    p.panels
        .iter()
        .filter(|panel| {
            let needle = panel.spec.name.trim().to_lowercase();
            !needle.is_empty() && contains_word(&hay, &needle)
        })
        .collect()
}

fn contains_word(hay: &str, needle: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
    hay.match_indices(needle).any(|(i, _)| {
        !word(hay[..i].chars().next_back()) && !word(hay[i + needle.len()..].chars().next())
    })
}

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

// Things are named as people and tools name them, never by database id: ids mean nothing to
// the model, and two copies of one project would get different prompts (no prefix caching).
fn render_panel(s: &mut String, p: &ProjectData, panel: &Panel) {
    let ps = &panel.spec;
    let _ = writeln!(
        s,
        "Panel {}: {} V {}-phase, {} A bus, main {}, AIC {}, fed from {}, {} spaces.",
        ps.name,
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

fn render_feeder(s: &mut String, f: &crate::project::Feeder) {
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

fn render_whole(p: &ProjectData) -> String {
    let mut s = header(p);
    for panel in &p.panels {
        render_panel(&mut s, p, panel);
    }
    for f in &p.feeders {
        render_feeder(&mut s, f);
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
            "Load {}: {} W, {} h/day, duty {}, qty {}.",
            l.spec.name, l.spec.watts.0, l.spec.hours_per_day, l.spec.duty_cycle, l.spec.quantity
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nec::units::{Amps, Edition, Phase, VoltAmperes, Volts};
    use crate::project::{Circuit, CircuitSpec, PanelSpec, Project};

    fn big() -> ProjectData {
        let mut p = ProjectData {
            project: Project {
                id: 1,
                workspace: crate::project::Workspace::local(),
                name: "tower".into(),
                edition: Edition::Nec2023,
                confirm_policy: None,
                created_at: chrono::Utc::now(),
                site: Default::default(),
            },
            service: None,
            panels: vec![],
            circuits: vec![],
            feeders: vec![],
            transformers: vec![],
            loads: vec![],
            charging_sources: vec![],
            tasks: vec![],
        };
        for i in 1..=40 {
            p.panels.push(Panel {
                id: i,
                project_id: 1,
                spec: PanelSpec {
                    name: format!("LP-{i}"),
                    voltage: Volts(208.0),
                    phase: Phase::Three,
                    bus_rating: Amps(225.0),
                    main_breaker: None,
                    interrupting_rating_ka: None,
                    fed_from: None,
                    spaces: 42,
                    location: String::new(),
                },
            });
            for n in 1..=10 {
                p.circuits.push(Circuit {
                    id: i * 100 + n,
                    panel_id: i,
                    spec: CircuitSpec {
                        number: n as i32,
                        poles: 1,
                        description: format!("Receptacles room {i}{n:02}"),
                        load_va: VoltAmperes(900.0),
                        continuous: false,
                        breaker: Amps(20.0),
                        conductor_size: None,
                        material: crate::nec::units::Material::Copper,
                        insulation: crate::nec::units::TempRating::C75,
                        length: None,
                        conduit: String::new(),
                        motor: None,
                        appliance: None,
                    },
                });
            }
        }
        p
    }

    #[test]
    fn a_follow_up_question_gets_the_panels_it_names() {
        let p = big();
        let first = project_view(&p, ProjectScope::Relevant, &["what is on LP-3?"]);
        assert!(first.relevant.contains("LP-3"), "{}", first.relevant);
        let other = project_view(
            &p,
            ProjectScope::Relevant,
            &["and LP-7?", "what is on LP-3?"],
        );
        assert!(other.relevant.contains("LP-7"), "{}", other.relevant);
        assert_eq!(other.stable, first.stable, "the stable part does not move");
    }

    #[test]
    fn a_large_project_sends_its_index_and_the_named_panels() {
        let p = big();
        let v = project_view(&p, ProjectScope::Relevant, &["and the one on LP-3?"]);
        assert!(v.stable.contains("- LP-31:"), "{}", v.stable);
        assert!(
            !v.stable.contains("Receptacles"),
            "the index carries no circuits"
        );
        assert!(v.relevant.contains("Panel LP-3:"), "{}", v.relevant);
        assert!(v.relevant.contains("Receptacles room 305"));
        assert!(!v.relevant.contains("Panel LP-31:"), "LP-31 is not LP-3");
        // A follow-up that names nothing keeps the panels of the message before.
        let v = project_view(
            &p,
            ProjectScope::Relevant,
            &["and its breaker?", "LP-12 please"],
        );
        assert!(v.relevant.contains("Panel LP-12:"));
        // The stable part does not depend on the question.
        assert_eq!(
            project_view(&p, ProjectScope::Relevant, &["LP-1"]).stable,
            project_view(&p, ProjectScope::Relevant, &["LP-2"]).stable
        );
        let whole = project_view(&p, ProjectScope::Whole, &[]);
        assert!(whole.stable.len() > 4 * v.stable.len());
    }
}
