//! The `project` commands: create, use, list, show, export, code and set.

use serde_json::json;

use super::{execute, not_found, unbound, Caller, Command, CommandOutput};
use crate::core::session::SessionKey;
use crate::core::Agent;
use crate::jurisdiction::{for_project, Site};
use crate::nec::units::Edition;
use crate::project::MemberRole;
use crate::store::StoreError;

/// Binds the channel of `key` to the project `name` (created when missing, its creator the
/// owner), or keeps the channel's project (else "default") when no name is given: the front
/// ends that start on a project (the console, the command line) use this one rule, built on
/// the same `project use` and `project create` commands as every platform. Returns the
/// project's name.
pub async fn use_or_create_project(
    agent: &Agent,
    key: &SessionKey,
    user: &str,
    name: Option<&str>,
) -> Result<String, StoreError> {
    let store = agent.store();
    if name.is_none() {
        if let Some(id) = store
            .channel_project(&key.platform, &key.workspace, &key.channel)
            .await?
        {
            if let Some(p) = store.project(id).await? {
                return Ok(p.name);
            }
        }
    }
    let name = name.unwrap_or("default").to_string();
    let bind = || execute(agent, key, user, Command::ProjectUse { name: name.clone() });
    let mut out = bind().await;
    if out.is_error {
        let create = Command::ProjectCreate {
            name: name.clone(),
            edition: Edition::default(),
        };
        out = execute(agent, key, user, create).await;
        if out.is_error {
            // It exists (the refusal to bind it says why) or another console just created it.
            out = bind().await;
        }
    }
    if out.is_error {
        return Err(StoreError::Conflict(out.text));
    }
    Ok(out.json["project"]["name"]
        .as_str()
        .unwrap_or(&name)
        .to_string())
}

/// Moves the thread of `key` onto `project_id`. A thread keeps the project it started on
/// when its channel's binding changes elsewhere, but the thread where `project use` or
/// `project create` is said (or a console restarted with `--project`) works on the project
/// named from then on: its
/// next proposals are planned against it, and their cards name and apply to it.
async fn this_thread_works_on(
    agent: &Agent,
    key: &SessionKey,
    project_id: i64,
) -> Result<(), StoreError> {
    let store = agent.store();
    let session = store.open_thread(key, None).await?;
    if session.project_id != Some(project_id) {
        store
            .set_session_project(session.id, Some(project_id))
            .await?;
    }
    Ok(())
}

/// Creates the project `name` in the workspace of `key` with its job `site`, `user` its
/// owner and the channel of `key` bound to it, in one transaction: what `project create` and
/// the project form both do.
pub(in crate::core) async fn create_project(
    agent: &Agent,
    key: &SessionKey,
    user: &str,
    name: &str,
    edition: Edition,
    site: &Site,
) -> Result<crate::project::Project, StoreError> {
    let owner = crate::store::ProjectOwner {
        user: user.to_string(),
        channel: key.channel.clone(),
    };
    agent
        .store()
        .create_owned_project(&key.workspace(), name.trim(), edition, site, &owner)
        .await
}

/// What the creator of `p` is told.
pub(in crate::core) fn created(p: &crate::project::Project) -> CommandOutput {
    let next = if p.site.location.is_none() {
        " Set where the job is with `project set location STATE`."
    } else {
        ""
    };
    CommandOutput::ok(
        format!(
            "Created project \"{}\" ({}) and bound this channel to it; you are its owner.{next}",
            p.name,
            for_project(p).label()
        ),
        json!({"type": "project", "project": p}),
    )
}

/// Changes the job site of `p` for `user` (owners only): what `project set` and the project
/// form both do.
pub(in crate::core) async fn set_site(
    agent: &Agent,
    platform: &str,
    user: &str,
    mut p: crate::project::Project,
    change: impl FnOnce(&mut Site),
) -> Result<CommandOutput, StoreError> {
    let store = agent.store();
    if store.member_role(p.id, platform, user).await? != Some(MemberRole::Owner) {
        return Ok(CommandOutput::err(SET_REFUSED));
    }
    change(&mut p.site);
    store.update_project(&p).await?;
    let code = for_project(&p);
    Ok(CommandOutput::ok(
        format!("{}: {}\n{}", p.name, code.label(), code.summary()),
        json!({"type": "code_in_force", "project": p.name, "site": p.site, "code": code}),
    ))
}

/// Why a person who is not an owner cannot change the job site.
pub(in crate::core) const SET_REFUSED: &str =
    "Only an owner of the project can change where and under which code it is built.";

/// `project create NAME [EDITION]`: the caller owns it, and this thread works on it.
pub(super) async fn create(
    at: &Caller<'_>,
    name: &str,
    edition: Edition,
) -> Result<CommandOutput, StoreError> {
    let p = create_project(at.agent, at.key, at.user, name, edition, &Site::default()).await?;
    this_thread_works_on(at.agent, at.key, p.id).await?;
    Ok(created(&p))
}

/// `project use NAME`: binds the channel to a project of the workspace the caller may edit.
pub(super) async fn use_named(at: &Caller<'_>, name: &str) -> Result<CommandOutput, StoreError> {
    let (store, key, user) = (at.agent.store(), at.key, at.user);
    // Another workspace's project is "not found", exactly like a missing one.
    let Some(p) = store.project_by_name(&key.workspace(), name).await? else {
        return Ok(not_found(name));
    };
    if at.bound == Some(p.id) {
        this_thread_works_on(at.agent, key, p.id).await?;
        return Ok(CommandOutput::ok(
            format!("This channel works on project \"{}\".", p.name),
            json!({"type": "project", "project": p}),
        ));
    }
    // A project nobody holds a role in (imported, or older than roles) is claimed by
    // the first person who binds it; of two at once, one.
    let claimed = store.members(p.id).await?.is_empty()
        && store.claim_ownerless(p.id, &key.platform, user).await?;
    let role = store.member_role(p.id, &key.platform, user).await?;
    if !claimed && !matches!(role, Some(MemberRole::Editor | MemberRole::Owner)) {
        return Ok(CommandOutput::err(format!(
            "Binding a channel to \"{}\" needs the editor or owner role; ask an owner to \
             `project grant` you one.",
            p.name
        )));
    }
    store
        .bind_channel(&key.platform, &key.workspace, &key.channel, p.id)
        .await?;
    this_thread_works_on(at.agent, key, p.id).await?;
    Ok(CommandOutput::ok(
        format!("This channel now works on project \"{}\".", p.name),
        json!({"type": "project", "project": p}),
    ))
}

/// `project list`: the workspace's projects.
pub(super) async fn list(at: &Caller<'_>) -> Result<CommandOutput, StoreError> {
    let list = at.agent.store().list_projects(&at.key.workspace()).await?;
    let text = if list.is_empty() {
        "No projects yet.".to_string()
    } else {
        list.iter()
            .map(|p| format!("- {} ({})", p.name, for_project(p).label()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    Ok(CommandOutput::ok(
        text,
        json!({"type": "projects", "projects": list}),
    ))
}

/// `project show` (the project as the model reads it) or `project export` (as JSON).
pub(super) async fn show(at: &Caller<'_>, export: bool) -> Result<CommandOutput, StoreError> {
    let Some(id) = at.bound else {
        return Ok(unbound());
    };
    let data = at.agent.store().load_project(id).await?;
    Ok(if export {
        let text = serde_json::to_string_pretty(&data).unwrap_or_default();
        CommandOutput::ok(text, json!({"type": "project_export", "project": data}))
    } else {
        CommandOutput::ok(
            crate::core::context::project_context(&data),
            json!({"type": "project", "project": data.project}),
        )
    })
}

/// `project code`: which code applies to the bound project, and why.
pub(super) async fn code(at: &Caller<'_>) -> Result<CommandOutput, StoreError> {
    let Some(id) = at.bound else {
        return Ok(unbound());
    };
    let Some(p) = at.agent.store().project(id).await? else {
        return Ok(unbound());
    };
    let code = for_project(&p);
    Ok(CommandOutput::ok(
        format!("{}: {}\n{}", p.name, code.label(), code.summary()),
        json!({"type": "code_in_force", "project": p.name, "code": code}),
    ))
}

/// `project set location|edition|permit`: one field of the bound project's job site.
pub(super) async fn set(at: &Caller<'_>, command: Command) -> Result<CommandOutput, StoreError> {
    let Some(id) = at.bound else {
        return Ok(unbound());
    };
    let Some(p) = at.agent.store().project(id).await? else {
        return Ok(unbound());
    };
    set_site(
        at.agent,
        &at.key.platform,
        at.user,
        p,
        |site| match command {
            Command::ProjectSetLocation { location } => site.location = location,
            Command::ProjectSetEdition { edition } => site.edition_override = edition,
            Command::ProjectSetPermitDate { date } => site.permit_date = date,
            _ => {}
        },
    )
    .await
}
