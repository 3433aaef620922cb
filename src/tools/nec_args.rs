//! Argument helpers shared by several tools: the edition a calculation uses (and why), a
//! circuit reference built from the usual panel / number / words arguments, and project
//! circuits named as loads.

use super::{ToolContext, ToolError};
use crate::nec::dwelling::Appliance;
use crate::nec::units::Edition;
use crate::project::analysis::{circuit_electrical, circuit_label, resolve_circuit, CircuitRef};
use crate::project::ProjectData;

/// The edition the project's calculations use (the code in force when Sparky ships it).
pub(crate) async fn edition_of(ctx: &ToolContext) -> Edition {
    match ctx.code_in_force().await {
        Ok(Some(code)) => code.tables,
        _ => Edition::default(),
    }
}

pub(crate) fn circuit_ref(
    panel: &Option<String>,
    number: Option<i32>,
    description: &Option<String>,
) -> CircuitRef {
    CircuitRef {
        panel: panel.clone(),
        number,
        description: description.clone(),
    }
}

pub(crate) fn find_ref(
    panel: &Option<String>,
    number: Option<i32>,
    find: &Option<String>,
) -> CircuitRef {
    CircuitRef {
        panel: panel.clone(),
        number,
        description: find.clone(),
    }
}

/// The names of the inputs not given, in the order listed: `(name, given)` pairs.
pub(crate) fn missing_inputs<'a>(inputs: &[(&'a str, bool)]) -> Vec<&'a str> {
    inputs
        .iter()
        .filter(|(_, given)| !given)
        .map(|(name, _)| *name)
        .collect()
}

/// The edition a calculation uses and why: the `edition` argument when given, else the code in
/// force for the project (or Sparky's default).
pub(crate) async fn edition_and_basis(
    ctx: &ToolContext,
    asked: Option<Edition>,
) -> (Edition, &'static str) {
    match asked {
        Some(e) => (e, "the edition argument"),
        None if ctx.project_id.is_some() => (
            edition_of(ctx).await,
            "the code in force for the project (see code_in_force)",
        ),
        None => (
            edition_of(ctx).await,
            "Sparky's default edition (no project bound)",
        ),
    }
}

/// Project circuits named by the caller ("LP-1 #5", "the EV charger") as loads: each at its
/// recorded VA and circuit voltage, described by its label. `field` names the argument in
/// errors.
pub(crate) fn circuit_loads(
    project: Option<&ProjectData>,
    names: &[String],
    field: &str,
) -> Result<Vec<Appliance>, ToolError> {
    let mut out = Vec::new();
    for name in names {
        let p = project.ok_or_else(|| {
            ToolError::MissingData(format!(
                "{field} '{name}' needs a project bound to this conversation; give the load in VA instead"
            ))
        })?;
        let (panel, c, _) = resolve_circuit(
            p,
            &CircuitRef {
                panel: None,
                number: None,
                description: Some(name.clone()),
            },
        )?;
        let e = circuit_electrical(&panel.spec, &c.spec)?;
        out.push(Appliance {
            description: circuit_label(&panel.spec, &c.spec),
            va: c.spec.load_va.0,
            volts: e.volts,
        });
    }
    Ok(out)
}
