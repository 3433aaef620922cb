//! Projects: the project rows, channel bindings, members and roles, tasks, the version every
//! applied plan bumps, and the whole-project snapshot.

use async_trait::async_trait;

use crate::nec::units::Edition;
use crate::project::{MemberRole, Project, ProjectData, Task, TaskSpec, Workspace};

use super::StoreResult;

/// Projects of a workspace, who may act on them, and the snapshot a plan is checked against.
#[async_trait]
pub trait ProjectStore: Send + Sync {
    /// Creates a project in `workspace`; `Conflict` when the name exists there.
    async fn create_project(
        &self,
        workspace: &Workspace,
        name: &str,
        edition: Edition,
    ) -> StoreResult<Project>;
    /// Creates a project with its job `site` (location, permit date, edition override), owned
    /// by `owner`, and binds `owner.channel` to it, all or nothing: a crash never leaves a
    /// project without its owner, its site or its channel.
    async fn create_owned_project(
        &self,
        workspace: &Workspace,
        name: &str,
        edition: Edition,
        site: &crate::jurisdiction::Site,
        owner: &super::ProjectOwner,
    ) -> StoreResult<Project>;
    /// A project by id.
    async fn project(&self, id: i64) -> StoreResult<Option<Project>>;
    /// A project of `workspace` by name (case-insensitive); other workspaces' projects are
    /// never found.
    async fn project_by_name(
        &self,
        workspace: &Workspace,
        name: &str,
    ) -> StoreResult<Option<Project>>;
    /// The projects of `workspace`, by name.
    async fn list_projects(&self, workspace: &Workspace) -> StoreResult<Vec<Project>>;
    /// Saves edition, confirm policy and the job site (location, permit date, override).
    async fn update_project(&self, project: &Project) -> StoreResult<()>;
    /// Binds a channel to a project of the channel's own workspace (replacing any earlier
    /// binding); `NotFound` when the project is not in that workspace.
    async fn bind_channel(
        &self,
        platform: &str,
        workspace: &str,
        channel: &str,
        project_id: i64,
    ) -> StoreResult<()>;
    /// The project a channel is bound to.
    async fn channel_project(
        &self,
        platform: &str,
        workspace: &str,
        channel: &str,
    ) -> StoreResult<Option<i64>>;
    /// Sets a member's role in a project.
    async fn set_member_role(
        &self,
        project_id: i64,
        platform: &str,
        user: &str,
        role: MemberRole,
    ) -> StoreResult<()>;
    /// Makes `user` the owner of a project nobody holds a role in, atomically: of two people
    /// claiming it at once, one becomes owner. Whether this call did.
    async fn claim_ownerless(
        &self,
        project_id: i64,
        platform: &str,
        user: &str,
    ) -> StoreResult<bool>;
    /// Removes a member's role; whether there was one.
    async fn remove_member(&self, project_id: i64, platform: &str, user: &str)
        -> StoreResult<bool>;
    /// Every member of a project with their role, by user id.
    async fn members(&self, project_id: i64) -> StoreResult<Vec<(String, MemberRole)>>;
    /// A member's role, if any.
    async fn member_role(
        &self,
        project_id: i64,
        platform: &str,
        user: &str,
    ) -> StoreResult<Option<MemberRole>>;
    /// Creates a task.
    async fn create_task(
        &self,
        project_id: i64,
        task: &TaskSpec,
        created_by: &str,
    ) -> StoreResult<Task>;
    /// Marks a task done; `None` when it does not exist or was already done.
    async fn complete_task(&self, id: i64, by: &str) -> StoreResult<Option<Task>>;
    /// The project's version: bumped by every applied plan.
    async fn project_version(&self, project_id: i64) -> StoreResult<i64>;
    /// Everything about a project; `NotFound` when it does not exist.
    async fn load_project(&self, project_id: i64) -> StoreResult<ProjectData> {
        self.load_project_seen(project_id, None).await
    }
    /// [`load_project`](Self::load_project) when an earlier statement saw the project at
    /// `revision` (a turn reads it with the thread): the read kept at that revision, without
    /// looking the revision up again; `None` looks it up.
    async fn load_project_seen(
        &self,
        project_id: i64,
        revision: Option<i64>,
    ) -> StoreResult<ProjectData>;
}

/// Emits `impl ProjectStore` for a backend store type.
macro_rules! impl_projects {
    ($store:ty, $db:ty) => {
        const _: () = {
            use async_trait::async_trait;

            use $crate::nec::units::Edition;
            use $crate::project::{MemberRole, Project, ProjectData, Task, TaskSpec, Workspace};
            use $crate::store::common::*;
            use $crate::store::{StoreError, StoreResult, ProjectStore};

            impl $store {
                /// Saves a project's edition, confirm policy and site through `ex`.
                async fn update_project_in<'c, E>(ex: E, project: &Project) -> StoreResult<()>
                where
                    E: sqlx::Executor<'c, Database = $db>,
                {
                    let site = &project.site;
                    let loc = site.location.as_ref();
                    let done = sqlx::query(
                        "UPDATE projects SET edition = $2, confirm_policy = $3, site_state = $4, \
                         site_county = $5, site_city = $6, permit_date = $7, edition_override = $8 \
                         WHERE id = $1",
                    )
                    .bind(project.id)
                    .bind(edition_to_db(project.edition))
                    .bind(policy_to_db(project.confirm_policy)?)
                    .bind(loc.map(|l| l.state.clone()))
                    .bind(loc.and_then(|l| l.county.clone()))
                    .bind(loc.and_then(|l| l.city.clone()))
                    .bind(site.permit_date.map(|d| d.format("%Y-%m-%d").to_string()))
                    .bind(site.edition_override.map(|e| i32::from(e.year())))
                    .execute(ex)
                    .await
                    .map_err(db)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!(
                            "project {} does not exist",
                            project.id
                        )));
                    }
                    Ok(())
                }

                /// Inserts a project through `tx`; a name already used in the workspace is a
                /// conflict.
                async fn insert_project_in(
                    tx: &mut sqlx::Transaction<'static, $db>,
                    workspace: &Workspace,
                    name: &str,
                    edition: Edition,
                ) -> StoreResult<Project> {
                    let name = name.trim();
                    let row = sqlx::query(
                        "INSERT INTO projects (platform, workspace, name, edition, confirm_policy, created_at) \
                         VALUES ($1, $2, $3, $4, NULL, $5) RETURNING *",
                    )
                    .bind(&workspace.platform)
                    .bind(&workspace.id)
                    .bind(name)
                    .bind(edition_to_db(edition))
                    .bind(now())
                    .fetch_one(&mut **tx)
                    .await
                    .map_err(|e| {
                        violation(e, Some(format!("a project named '{name}' already exists")), None)
                    })?;
                    project_from(&row)
                }

                /// Everything about a project, read through `tx`.
                pub(crate) async fn load_project_in(
                    tx: &mut sqlx::Transaction<'static, $db>,
                    project_id: i64,
                ) -> StoreResult<ProjectData> {
                    let project = sqlx::query("SELECT * FROM projects WHERE id = $1")
                        .bind(project_id)
                        .fetch_optional(&mut **tx)
                        .await
                        .map_err(db)?
                        .map(|r| project_from(&r))
                        .transpose()?
                        .ok_or_else(|| {
                            StoreError::NotFound(format!("project {project_id} does not exist"))
                        })?;
                    let service = sqlx::query("SELECT * FROM services WHERE project_id = $1")
                        .bind(project_id)
                        .fetch_optional(&mut **tx)
                        .await
                        .map_err(db)?
                        .map(|r| service_from(&r))
                        .transpose()?;
                    macro_rules! rows {
                        ($sql:expr, $from:ident) => {
                            sqlx::query($sql)
                                .bind(project_id)
                                .fetch_all(&mut **tx)
                                .await
                                .map_err(db)?
                                .iter()
                                .map($from)
                                .collect::<StoreResult<Vec<_>>>()?
                        };
                    }
                    let panels = rows!("SELECT * FROM panels WHERE project_id = $1 ORDER BY id", panel_from);
                    let circuits = rows!(
                        "SELECT c.* FROM circuits c JOIN panels p ON p.id = c.panel_id \
                         WHERE p.project_id = $1 ORDER BY c.panel_id, c.number",
                        circuit_from
                    );
                    let feeders = rows!("SELECT * FROM feeders WHERE project_id = $1 ORDER BY id", feeder_from);
                    let transformers = rows!(
                        "SELECT * FROM transformers WHERE project_id = $1 ORDER BY id",
                        transformer_from
                    );
                    let loads = rows!("SELECT * FROM load_items WHERE project_id = $1 ORDER BY id", load_item_from);
                    let charging_sources = rows!(
                        "SELECT * FROM charging_sources WHERE project_id = $1 ORDER BY id",
                        charging_source_from
                    );
                    let tasks = rows!("SELECT * FROM tasks WHERE project_id = $1 ORDER BY id", task_from);
                    Ok(ProjectData {
                        project,
                        service,
                        panels,
                        circuits,
                        feeders,
                        transformers,
                        loads,
                        charging_sources,
                        tasks,
                    })
                }

                /// Inserts a task: the one statement both the store method and applied
                /// plans run, so a column added here reaches both.
                pub(crate) fn stmt_insert_task<'q>(project_id: i64, spec: &'q TaskSpec, created_by: &'q str) -> Stmt<'q, $db> {
                    sqlx::query(
                        "INSERT INTO tasks (project_id, title, notes, assignee, created_by, created_at) \
                        VALUES ($1, $2, $3, $4, $5, $6) RETURNING *",
                    )
                    .bind(project_id)
                    .bind(&spec.title)
                    .bind(&spec.notes)
                    .bind(&spec.assignee)
                    .bind(created_by)
                    .bind(now())
                }

                /// Marks an open task done: the one statement both the store method and applied
                /// plans run, so a column added here reaches both.
                pub(crate) fn stmt_complete_task<'q>(id: i64, by: &'q str) -> Stmt<'q, $db> {
                    sqlx::query(
                        "UPDATE tasks SET completed_at = $2, completed_by = $3 \
                        WHERE id = $1 AND completed_at IS NULL RETURNING *",
                    )
                    .bind(id)
                    .bind(now())
                    .bind(by)
                }
            }

            #[async_trait]
            impl ProjectStore for $store {
                async fn create_project(
                    &self,
                    workspace: &Workspace,
                    name: &str,
                    edition: Edition,
                ) -> StoreResult<Project> {
                    let mut tx = self.begin_write().await.map_err(db)?;
                    let project = Self::insert_project_in(&mut tx, workspace, name, edition).await?;
                    tx.commit().await.map_err(db)?;
                    Ok(project)
                }

                async fn create_owned_project(
                    &self,
                    workspace: &Workspace,
                    name: &str,
                    edition: Edition,
                    site: &$crate::jurisdiction::Site,
                    owner: &$crate::store::ProjectOwner,
                ) -> StoreResult<Project> {
                    let mut tx = self.begin_write().await.map_err(db)?;
                    let mut project =
                        Self::insert_project_in(&mut tx, workspace, name, edition).await?;
                    if *site != $crate::jurisdiction::Site::default() {
                        project.site = site.clone();
                        Self::update_project_in(&mut *tx, &project).await?;
                    }
                    sqlx::query(
                        "INSERT INTO project_members (project_id, platform, user_id, role, updated_at) \
                         VALUES ($1, $2, $3, 'owner', $4)",
                    )
                    .bind(project.id)
                    .bind(&workspace.platform)
                    .bind(&owner.user)
                    .bind(now())
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                    $crate::store::failpoint::hit("create_project_before_bind");
                    sqlx::query(
                        "INSERT INTO channel_bindings (platform, workspace, channel, project_id, bound_at) \
                         VALUES ($1, $2, $3, $4, $5) \
                         ON CONFLICT (platform, workspace, channel) \
                         DO UPDATE SET project_id = excluded.project_id, bound_at = excluded.bound_at",
                    )
                    .bind(&workspace.platform)
                    .bind(&workspace.id)
                    .bind(&owner.channel)
                    .bind(project.id)
                    .bind(now())
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                    tx.commit().await.map_err(db)?;
                    Ok(project)
                }

                async fn project(&self, id: i64) -> StoreResult<Option<Project>> {
                    sqlx::query("SELECT * FROM projects WHERE id = $1")
                        .bind(id)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db)?
                        .map(|r| project_from(&r))
                        .transpose()
                }

                async fn project_by_name(
                    &self,
                    workspace: &Workspace,
                    name: &str,
                ) -> StoreResult<Option<Project>> {
                    sqlx::query(
                        "SELECT * FROM projects \
                         WHERE platform = $1 AND workspace = $2 AND lower(name) = lower($3)",
                    )
                    .bind(&workspace.platform)
                    .bind(&workspace.id)
                    .bind(name.trim())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)?
                    .map(|r| project_from(&r))
                    .transpose()
                }

                async fn list_projects(&self, workspace: &Workspace) -> StoreResult<Vec<Project>> {
                    sqlx::query(
                        "SELECT * FROM projects WHERE platform = $1 AND workspace = $2 \
                         ORDER BY lower(name), id",
                    )
                    .bind(&workspace.platform)
                    .bind(&workspace.id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db)?
                    .iter()
                    .map(project_from)
                    .collect()
                }

                async fn update_project(&self, project: &Project) -> StoreResult<()> {
                    Self::update_project_in(&self.pool, project).await
                }

                async fn bind_channel(
                    &self,
                    platform: &str,
                    workspace: &str,
                    channel: &str,
                    project_id: i64,
                ) -> StoreResult<()> {
                    // Only a project of the channel's own workspace can be bound to it.
                    let done = sqlx::query(
                        "INSERT INTO channel_bindings (platform, workspace, channel, project_id, bound_at) \
                         SELECT $1, $2, $3, id, $5 FROM projects \
                         WHERE id = $4 AND platform = $1 AND workspace = $2 \
                         ON CONFLICT (platform, workspace, channel) \
                         DO UPDATE SET project_id = excluded.project_id, bound_at = excluded.bound_at",
                    )
                    .bind(platform)
                    .bind(workspace)
                    .bind(channel)
                    .bind(project_id)
                    .bind(now())
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!(
                            "project {project_id} does not exist"
                        )));
                    }
                    Ok(())
                }

                async fn channel_project(
                    &self,
                    platform: &str,
                    workspace: &str,
                    channel: &str,
                ) -> StoreResult<Option<i64>> {
                    sqlx::query_scalar::<_, i64>(
                        "SELECT project_id FROM channel_bindings \
                         WHERE platform = $1 AND workspace = $2 AND channel = $3",
                    )
                    .bind(platform)
                    .bind(workspace)
                    .bind(channel)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)
                }

                async fn set_member_role(
                    &self,
                    project_id: i64,
                    platform: &str,
                    user: &str,
                    role: MemberRole,
                ) -> StoreResult<()> {
                    sqlx::query(
                        "INSERT INTO project_members (project_id, platform, user_id, role, updated_at) \
                         VALUES ($1, $2, $3, $4, $5) \
                         ON CONFLICT (project_id, platform, user_id) \
                         DO UPDATE SET role = excluded.role, updated_at = excluded.updated_at",
                    )
                    .bind(project_id)
                    .bind(platform)
                    .bind(user)
                    .bind(role.as_str())
                    .bind(now())
                    .execute(&self.pool)
                    .await
                    .map_err(|e| {
                        violation(e, None, Some(format!("project {project_id} does not exist")))
                    })?;
                    Ok(())
                }

                async fn claim_ownerless(
                    &self,
                    project_id: i64,
                    platform: &str,
                    user: &str,
                ) -> StoreResult<bool> {
                    // The project's row lock (Postgres) or the write lock (SQLite) orders two
                    // claims; the second one's statement then sees the first one's owner.
                    let mut tx = self.begin_write().await.map_err(db)?;
                    let lock = format!("SELECT id FROM projects WHERE id = $1{}", Self::FOR_UPDATE);
                    let found: Option<i64> = sqlx::query_scalar(&lock)
                        .bind(project_id)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(db)?;
                    if found.is_none() {
                        return Err(StoreError::NotFound(format!(
                            "project {project_id} does not exist"
                        )));
                    }
                    let done = sqlx::query(
                        "INSERT INTO project_members (project_id, platform, user_id, role, updated_at) \
                         SELECT $1, $2, $3, 'owner', $4 \
                         WHERE NOT EXISTS (SELECT 1 FROM project_members WHERE project_id = $1)",
                    )
                    .bind(project_id)
                    .bind(platform)
                    .bind(user)
                    .bind(now())
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                    tx.commit().await.map_err(db)?;
                    Ok(done.rows_affected() == 1)
                }

                async fn remove_member(
                    &self,
                    project_id: i64,
                    platform: &str,
                    user: &str,
                ) -> StoreResult<bool> {
                    let done = sqlx::query(
                        "DELETE FROM project_members \
                         WHERE project_id = $1 AND platform = $2 AND user_id = $3",
                    )
                    .bind(project_id)
                    .bind(platform)
                    .bind(user)
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    Ok(done.rows_affected() > 0)
                }

                async fn members(&self, project_id: i64) -> StoreResult<Vec<(String, MemberRole)>> {
                    sqlx::query(
                        "SELECT user_id, role FROM project_members WHERE project_id = $1 \
                         ORDER BY user_id",
                    )
                    .bind(project_id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db)?
                    .iter()
                    .map(|r| Ok((r.string("user_id")?, role_from(r)?)))
                    .collect()
                }

                async fn member_role(
                    &self,
                    project_id: i64,
                    platform: &str,
                    user: &str,
                ) -> StoreResult<Option<MemberRole>> {
                    sqlx::query(
                        "SELECT role FROM project_members \
                         WHERE project_id = $1 AND platform = $2 AND user_id = $3",
                    )
                    .bind(project_id)
                    .bind(platform)
                    .bind(user)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)?
                    .map(|r| role_from(&r))
                    .transpose()
                }

                async fn create_task(
                    &self,
                    project_id: i64,
                    task: &TaskSpec,
                    created_by: &str,
                ) -> StoreResult<Task> {
                    let row = <$store>::stmt_insert_task(project_id, task, created_by)
                        .fetch_one(&self.pool)
                        .await
                        .map_err(|e| {
                        violation(e, None, Some(format!("project {project_id} does not exist")))
                    })?;
                    task_from(&row)
                }

                async fn complete_task(&self, id: i64, by: &str) -> StoreResult<Option<Task>> {
                    <$store>::stmt_complete_task(id, by)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db)?
                        .map(|r| task_from(&r))
                        .transpose()
                }

                async fn project_version(&self, project_id: i64) -> StoreResult<i64> {
                    sqlx::query_scalar::<_, i64>("SELECT version FROM projects WHERE id = $1")
                        .bind(project_id)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db)?
                        .ok_or_else(|| {
                            StoreError::NotFound(format!("project {project_id} does not exist"))
                        })
                }

                async fn load_project_seen(
                    &self,
                    project_id: i64,
                    revision: Option<i64>,
                ) -> StoreResult<ProjectData> {
                    // One snapshot, so the parts agree with each other (src/store/project_read.rs).
                    self.backend_load_project(project_id, revision).await
                }
            }
        };
    };
}
pub(crate) use impl_projects;
