//! Tool results that depend on the NEC edition name the edition used and why: a wrapper that
//! adds the project's code in force to every object a tool returns.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{Tool, ToolContext, ToolError};
use crate::jurisdiction::CodeInForce;
use crate::nec::units::Edition;

/// A tool whose results carry a `code_in_force` object: the edition in force, the edition
/// the calculation used, why, and what could not be checked.
pub struct WithCodeBasis<T>(pub T);

/// The `code_in_force` object of a result.
pub fn basis_json(code: Option<&CodeInForce>) -> Value {
    match code {
        Some(c) => json!({
            "edition_in_force": c.edition.map(|e| e.year()),
            "calculated_with": c.tables.year(),
            "why": c.explanation,
            "cannot_check": c.cannot_check,
            "warnings": c.warnings,
        }),
        None => json!({
            "edition_in_force": null,
            "calculated_with": Edition::default().year(),
            "why": format!(
                "{} NEC, Sparky's default: no project is bound, so no job site decides the edition.",
                Edition::default()
            ),
            "cannot_check": null,
            "warnings": [],
        }),
    }
}

#[async_trait]
impl<T: Tool> Tool for WithCodeBasis<T> {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn description(&self) -> &'static str {
        self.0.description()
    }
    fn schema(&self) -> Value {
        self.0.schema()
    }
    fn cpu_bound(&self) -> bool {
        self.0.cpu_bound()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let mut out = self.0.execute(args, ctx).await?;
        if let Value::Object(o) = &mut out {
            // A store hiccup here must not lose the result itself.
            let code = ctx.code_in_force().await.ok().flatten();
            o.insert("code_in_force".into(), basis_json(code.as_ref()));
        }
        Ok(out)
    }
}
