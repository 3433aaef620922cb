//! Running a tool directly for a person (CLI, slash commands), without the model.
//! The person's own command is the request; a write still shows its preview and needs a yes.

use serde_json::{json, Value};

use super::{ActionPreview, ToolContext, ToolError, ToolRegistry};

/// Runs `name` with `raw_args`. For write tools `approve` sees the preview and decides.
pub async fn run_direct<F>(
    registry: &ToolRegistry,
    name: &str,
    raw_args: &str,
    ctx: &ToolContext,
    approve: F,
) -> Result<Value, ToolError>
where
    F: FnOnce(&ActionPreview) -> bool,
{
    let call = registry.validate(name, raw_args)?;
    if call.tool.writes() {
        let preview = call.tool.preview(&call.args, ctx).await?;
        if !approve(&preview) {
            return Ok(json!({"status": "not_confirmed", "summary": preview.summary}));
        }
    }
    registry.check_rate(name)?;
    call.tool.execute(call.args, ctx).await
}
