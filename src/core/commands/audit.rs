//! The `audit` command: the latest changes of a project, for its owners and editors.

use super::{not_found, unbound, Caller, CommandOutput};
use crate::core::audit_log;
use crate::store::StoreError;

/// `audit [PROJECT] [N]`: the `limit` newest changes of the named project, or the bound one.
pub(super) async fn run(
    at: &Caller<'_>,
    project: Option<String>,
    limit: usize,
) -> Result<CommandOutput, StoreError> {
    let store = at.agent.store();
    let p = match project {
        Some(name) => match store.project_by_name(&at.key.workspace(), &name).await? {
            Some(p) => p,
            None => return Ok(not_found(&name)),
        },
        None => match at.bound {
            Some(id) => match store.project(id).await? {
                Some(p) => p,
                None => return Ok(unbound()),
            },
            None => return Ok(unbound()),
        },
    };
    let role = store.member_role(p.id, &at.key.platform, at.user).await?;
    if !audit_log::may_read(role) {
        return Ok(CommandOutput::err(format!(
            "Only owners and editors of project \"{}\" can read its changes.",
            p.name
        )));
    }
    let lines = audit_log::project_history(store.as_ref(), p.id, limit).await?;
    Ok(CommandOutput::ok(
        audit_log::to_text(&p.name, &lines),
        audit_log::to_json(&p.name, &lines),
    ))
}
