//! The `project members`, `project grant` and `project revoke` commands: who holds which
//! role in the bound project.

use serde_json::{json, Value};

use super::{unbound, Caller, CommandOutput};
use crate::core::mention::UserRef;
use crate::project::MemberRole;
use crate::store::StoreError;

/// `project members`: the bound project's members and their roles.
pub(super) async fn list(at: &Caller<'_>) -> Result<CommandOutput, StoreError> {
    let Some(id) = at.bound else {
        return Ok(unbound());
    };
    let members = at.agent.store().members(id).await?;
    let text = if members.is_empty() {
        "Nobody holds a role in this project yet.".to_string()
    } else {
        members
            .iter()
            .map(|(u, r)| format!("- {}: {}", UserRef::new(u.as_str()), r.as_str()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let list: Vec<Value> = members
        .iter()
        .map(|(u, r)| json!({"user": u, "role": r}))
        .collect();
    Ok(CommandOutput::ok(
        text,
        json!({"type": "members", "members": list}),
    ))
}

/// `project grant USER ROLE` (owners only).
pub(super) async fn grant(
    at: &Caller<'_>,
    who: &str,
    role: MemberRole,
) -> Result<CommandOutput, StoreError> {
    let id = match owned(at).await? {
        Ok(id) => id,
        Err(refusal) => return Ok(refusal),
    };
    at.agent
        .store()
        .set_member_role(id, &at.key.platform, who, role)
        .await?;
    Ok(CommandOutput::ok(
        format!(
            "{} is now {} of this project.",
            UserRef::new(who),
            role.as_str()
        ),
        json!({"type": "member", "user": who, "role": role}),
    ))
}

/// `project revoke USER` (owners only; the last owner stays).
pub(super) async fn revoke(at: &Caller<'_>, who: &str) -> Result<CommandOutput, StoreError> {
    let id = match owned(at).await? {
        Ok(id) => id,
        Err(refusal) => return Ok(refusal),
    };
    let store = at.agent.store();
    let owners = store
        .members(id)
        .await?
        .into_iter()
        .filter(|(u, r)| *r == MemberRole::Owner && *u != who)
        .count();
    if owners == 0 {
        return Ok(CommandOutput::err(
            "A project keeps at least one owner; grant someone else owner first.",
        ));
    }
    let removed = store.remove_member(id, &at.key.platform, who).await?;
    Ok(CommandOutput::ok(
        if removed {
            format!(
                "{} no longer has a role in this project.",
                UserRef::new(who)
            )
        } else {
            format!("{} had no role in this project.", UserRef::new(who))
        },
        json!({"type": "member", "user": who, "role": null}),
    ))
}

/// The bound project when `user` owns it; otherwise the refusal to show.
async fn owned(at: &Caller<'_>) -> Result<Result<i64, CommandOutput>, StoreError> {
    let Some(id) = at.bound else {
        return Ok(Err(unbound()));
    };
    let role = at
        .agent
        .store()
        .member_role(id, &at.key.platform, at.user)
        .await?;
    Ok(if role == Some(MemberRole::Owner) {
        Ok(id)
    } else {
        Err(CommandOutput::err(
            "Only an owner of the project can change roles.",
        ))
    })
}
