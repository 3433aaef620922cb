//! The store as tools see it: the read methods only, under the store's own names. Nothing
//! reachable from a tool can write; only the confirmation gate's apply step does.

use std::sync::Arc;

use crate::domain::session::Session;
use crate::project::{MemberRole, Project, ProjectData, Workspace};
use crate::store::{
    AuditRecord, Backend, Chunk, ChunkFilter, PendingAction, ScoredChunk, Store, StoreResult,
    StoredMessage,
};

/// A read-only view of a [`Store`].
#[derive(Clone)]
pub struct ReadStore(Arc<dyn Store>);

impl ReadStore {
    /// The read-only view of `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self(store)
    }

    /// Which backend this is.
    pub fn backend(&self) -> Backend {
        self.0.backend()
    }

    /// A project by id.
    pub async fn project(&self, id: i64) -> StoreResult<Option<Project>> {
        self.0.project(id).await
    }

    /// A project of `workspace` by name.
    pub async fn project_by_name(
        &self,
        workspace: &Workspace,
        name: &str,
    ) -> StoreResult<Option<Project>> {
        self.0.project_by_name(workspace, name).await
    }

    /// The projects of `workspace`.
    pub async fn list_projects(&self, workspace: &Workspace) -> StoreResult<Vec<Project>> {
        self.0.list_projects(workspace).await
    }

    /// The project a channel is bound to.
    pub async fn channel_project(
        &self,
        platform: &str,
        workspace: &str,
        channel: &str,
    ) -> StoreResult<Option<i64>> {
        self.0.channel_project(platform, workspace, channel).await
    }

    /// Every member of a project with their role.
    pub async fn members(&self, project_id: i64) -> StoreResult<Vec<(String, MemberRole)>> {
        self.0.members(project_id).await
    }

    /// A member's role, if any.
    pub async fn member_role(
        &self,
        project_id: i64,
        platform: &str,
        user: &str,
    ) -> StoreResult<Option<MemberRole>> {
        self.0.member_role(project_id, platform, user).await
    }

    /// Everything about a project.
    pub async fn load_project(&self, project_id: i64) -> StoreResult<ProjectData> {
        self.0.load_project(project_id).await
    }

    /// Everything about a project, seen at `revision` by an earlier read of the turn.
    pub async fn load_project_seen(
        &self,
        project_id: i64,
        revision: Option<i64>,
    ) -> StoreResult<ProjectData> {
        self.0.load_project_seen(project_id, revision).await
    }

    /// The project's version (bumped by every applied plan).
    pub async fn project_version(&self, project_id: i64) -> StoreResult<i64> {
        self.0.project_version(project_id).await
    }

    /// A session by id.
    pub async fn session(&self, id: i64) -> StoreResult<Option<Session>> {
        self.0.session(id).await
    }

    /// The newest `limit` messages with id > `after_id`, oldest first.
    pub async fn recent_messages(
        &self,
        session_id: i64,
        after_id: i64,
        limit: usize,
    ) -> StoreResult<Vec<StoredMessage>> {
        self.0.recent_messages(session_id, after_id, limit).await
    }

    /// A pending action by id.
    pub async fn pending(&self, id: &str) -> StoreResult<Option<PendingAction>> {
        self.0.pending(id).await
    }

    /// Audit rows of a session.
    pub async fn audit_for_session(&self, session_id: i64) -> StoreResult<Vec<AuditRecord>> {
        self.0.audit_for_session(session_id).await
    }

    /// Full-text search, best first.
    pub async fn search_text(
        &self,
        query: &str,
        filter: &ChunkFilter,
        k: usize,
    ) -> StoreResult<Vec<ScoredChunk>> {
        self.0.search_text(query, filter, k).await
    }

    /// Nearest neighbours by cosine similarity, best first.
    pub async fn search_vector(
        &self,
        embedding: &[f32],
        model: &str,
        filter: &ChunkFilter,
        k: usize,
    ) -> StoreResult<Vec<ScoredChunk>> {
        self.0.search_vector(embedding, model, filter, k).await
    }

    /// Amendment documents the workspace can see: (source, jurisdiction key).
    pub async fn amendment_documents(
        &self,
        workspace: Option<&crate::domain::workspace::Workspace>,
    ) -> StoreResult<Vec<(String, String)>> {
        self.0.amendment_documents(workspace).await
    }

    /// Chunks whose section reference equals `section`.
    pub async fn chunks_by_section(
        &self,
        section: &str,
        filter: &ChunkFilter,
    ) -> StoreResult<Vec<Chunk>> {
        self.0.chunks_by_section(section, filter).await
    }
}

impl From<Arc<dyn Store>> for ReadStore {
    fn from(store: Arc<dyn Store>) -> Self {
        Self::new(store)
    }
}
