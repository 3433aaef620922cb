//! What a stored plan needs from the project to still be right, checked change by change when
//! a person confirms.
//!
//! A plan is refused only when the project changed in a way that touches it (the number is
//! taken, the circuit was edited or removed, the panel is gone); changes elsewhere in the
//! project do not block it.

use super::analysis::{circuit_label, slot_conflict};
use super::circuit_diff::field_changes;
use super::invariants::known_source;
use super::plan::{Change, FIRST_PLACEHOLDER};
use super::{CircuitSpec, PanelSpec, ProjectData};

/// Why each change of `changes` no longer fits `current`, in plan order; empty when the plan
/// can be applied as stored. Later changes are checked against the project with the earlier
/// ones applied.
pub fn check_plan(current: &ProjectData, changes: &[Change]) -> Vec<String> {
    let mut p = current.clone();
    let mut next = FIRST_PLACEHOLDER;
    let mut problems = Vec::new();
    for c in changes {
        if let Err(why) = check_change(&p, c) {
            problems.push(why);
        }
        c.simulate(&mut p, &mut next);
    }
    problems
}

fn panel_changed(name: &str, planned: &PanelSpec, now: &PanelSpec) -> Option<String> {
    (planned != now).then(|| {
        format!("panel {name} was changed since this was proposed (its voltage, spaces or ratings differ)")
    })
}

/// Why a circuit change's card no longer holds when the panel's circuits differ from those it
/// was planned against (`seen`, in any order). The card showed consequences worked out from
/// them (spare spaces after, the panel's load), and a person confirms the numbers they read:
/// any change to the same panel since makes the card outdated, and the change is proposed
/// again with numbers that hold. Recomputing the lines at Confirm instead would apply
/// something the person never saw, and show it only after the fact.
fn circuits_changed(
    panel: &str,
    seen: &Option<Vec<CircuitSpec>>,
    p: &ProjectData,
    panel_id: i64,
) -> Option<String> {
    let seen = seen.as_ref()?;
    let mut now: Vec<&CircuitSpec> = p
        .circuits_of(panel_id)
        .into_iter()
        .map(|c| &c.spec)
        .collect();
    let same = seen.len() == now.len()
        && seen.iter().all(|s| match now.iter().position(|n| *n == s) {
            Some(i) => {
                now.swap_remove(i);
                true
            }
            None => false,
        });
    (!same).then(|| {
        format!(
            "panel {panel}'s circuits changed since this was proposed, so the spare spaces and              panel load shown on the card no longer hold"
        )
    })
}

fn check_change(p: &ProjectData, c: &Change) -> Result<(), String> {
    match c {
        Change::SetService { before, .. } => {
            if &p.service != before {
                return Err("the service was changed since this was proposed".into());
            }
        }
        Change::AddPanel { spec } => {
            let name = spec.name.trim();
            if p.panel_by_name(name).is_some()
                || p.transformers
                    .iter()
                    .any(|t| t.spec.name.eq_ignore_ascii_case(name))
            {
                return Err(format!("equipment named {name} now exists"));
            }
            if let Some(src) = &spec.fed_from {
                if !known_source(p, src) {
                    return Err(format!("its source {} is gone", src.trim()));
                }
            }
        }
        Change::AddCircuit {
            panel_id,
            panel,
            spec,
            panel_circuits,
        } => {
            let Some(now) = p.panels.iter().find(|x| x.id == *panel_id) else {
                return Err(format!("panel {} is gone", panel.name));
            };
            if let Some(why) = panel_changed(&panel.name, panel, &now.spec) {
                return Err(why);
            }
            if let Some(why) = slot_conflict(&now.spec, &p.circuits_of(*panel_id), spec, None) {
                return Err(format!(
                    "{} can no longer be added: {why}",
                    circuit_label(&now.spec, spec)
                ));
            }
            if let Some(why) = circuits_changed(&panel.name, panel_circuits, p, *panel_id) {
                return Err(why);
            }
        }
        Change::UpdateCircuit {
            circuit_id,
            panel_id,
            panel,
            before,
            after,
            panel_circuits,
        } => {
            let label = circuit_label(panel, before);
            let Some(now) = p.circuits.iter().find(|x| x.id == *circuit_id) else {
                return Err(format!("{label} was removed since this was proposed"));
            };
            if &now.spec != before {
                return Err(format!(
                    "{label} was changed since this was proposed ({})",
                    field_changes(before, &now.spec).join("; ")
                ));
            }
            let Some(panel_now) = p.panels.iter().find(|x| x.id == *panel_id) else {
                return Err(format!("panel {} is gone", panel.name));
            };
            if let Some(why) = panel_changed(&panel.name, panel, &panel_now.spec) {
                return Err(why);
            }
            if let Some(why) = slot_conflict(
                &panel_now.spec,
                &p.circuits_of(*panel_id),
                after,
                Some(*circuit_id),
            ) {
                return Err(format!("{label} can no longer be changed: {why}"));
            }
            if let Some(why) = circuits_changed(&panel.name, panel_circuits, p, *panel_id) {
                return Err(why);
            }
        }
        Change::RemoveCircuit {
            circuit_id,
            panel_id,
            panel,
            before,
            panel_circuits,
        } => {
            let label = format!("{panel} #{} ({})", before.number, before.description);
            let Some(now) = p.circuits.iter().find(|x| x.id == *circuit_id) else {
                return Err(format!("{label} was already removed"));
            };
            if &now.spec != before {
                return Err(format!(
                    "{label} was changed since this was proposed ({})",
                    field_changes(before, &now.spec).join("; ")
                ));
            }
            if let Some(why) = circuits_changed(panel, panel_circuits, p, *panel_id) {
                return Err(why);
            }
        }
        Change::AddFeeder { spec } => {
            let name = spec.name.trim();
            if p.feeders
                .iter()
                .any(|x| x.spec.name.eq_ignore_ascii_case(name))
            {
                return Err(format!("a feeder named {name} now exists"));
            }
            for end in [&spec.from, &spec.to] {
                if !known_source(p, end) {
                    return Err(format!("{} is gone", end.trim()));
                }
            }
        }
        Change::AddTransformer { spec } => {
            let name = spec.name.trim();
            if p.panel_by_name(name).is_some()
                || p.transformers
                    .iter()
                    .any(|t| t.spec.name.eq_ignore_ascii_case(name))
            {
                return Err(format!("equipment named {name} now exists"));
            }
            if let Some(src) = &spec.fed_from {
                if !known_source(p, src) {
                    return Err(format!("its source {} is gone", src.trim()));
                }
            }
        }
        Change::AddLoadItem { .. }
        | Change::AddChargingSource { .. }
        | Change::CreateTask { .. } => {}
        Change::CompleteTask { task_id, title } => {
            match p.tasks.iter().find(|t| t.id == *task_id) {
                None => return Err(format!("task {task_id} \"{title}\" was removed")),
                Some(t) if t.completed_at.is_some() => {
                    return Err(format!("task {task_id} \"{title}\" is already done"))
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}
