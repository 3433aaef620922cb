//! Argument helpers shared by several tools: the edition a calculation uses and a circuit
//! reference built from the usual panel / number / words arguments.

use super::ToolContext;
use crate::nec::units::Edition;
use crate::project::analysis::CircuitRef;

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
