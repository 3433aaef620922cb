//! Tools the model (and people, through commands) can call.
//!
//! A tool is a name, a description, a JSON Schema for its arguments, a read/write flag and an
//! async `execute`. Write tools also `preview` what they will change: the confirmation gate in
//! the core shows that preview and runs `execute` only after a recorded Confirm.

mod direct;
pub mod inspection;
pub mod nec_tools;
pub mod project_tools;
pub mod query;
mod registry;
pub mod report_tool;
pub mod schema;
pub mod search_tool;
pub mod utility;

use std::sync::Arc;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::project::ProjectData;
use crate::store::{Store, StoreError};

pub use direct::run_direct;
pub use registry::{ToolRegistry, ValidatedCall};

/// Why a tool call failed; the message goes back to the model (or person) verbatim.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not match the schema or make no sense.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// A named thing (panel, circuit, task) does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The project lacks data the calculation needs.
    #[error("missing data: {0}")]
    MissingData(String),
    /// The change conflicts with existing data.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The tool is rate limited.
    #[error("rate limited: {0}")]
    RateLimited(String),
    /// Anything else.
    #[error("{0}")]
    Failed(String),
}

impl ToolError {
    /// The JSON the model receives for this error.
    pub fn to_json(&self) -> Value {
        serde_json::json!({ "error": self.to_string() })
    }
}

impl From<StoreError> for ToolError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Conflict(m) => Self::Conflict(m),
            StoreError::NotFound(m) => Self::NotFound(m),
            other => Self::Failed(other.to_string()),
        }
    }
}

/// What a write tool will do, shown before confirmation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActionPreview {
    /// One line: the change.
    pub summary: String,
    /// The resulting state and anything worth checking.
    pub details: Vec<String>,
}

/// Everything a tool may use while running.
#[derive(Clone)]
pub struct ToolContext {
    /// The store.
    pub store: Arc<dyn Store>,
    /// Project the session works on.
    pub project_id: Option<i64>,
    /// Session, when called from a conversation.
    pub session_id: Option<i64>,
    /// Who asked (platform user id).
    pub user: String,
    /// Workspace of the caller (for document visibility).
    pub workspace: Option<String>,
}

impl ToolContext {
    /// The bound project id, or a clear error.
    pub fn require_project(&self) -> Result<i64, ToolError> {
        self.project_id.ok_or_else(|| {
            ToolError::MissingData(
                "no project is bound to this conversation; create or choose one with `/sparky project use NAME`"
                    .into(),
            )
        })
    }

    /// Loads the bound project whole.
    pub async fn project(&self) -> Result<ProjectData, ToolError> {
        let id = self.require_project()?;
        Ok(self.store.load_project(id).await?)
    }
}

/// A callable tool.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Unique name.
    fn name(&self) -> &'static str;
    /// What it does, for the model.
    fn description(&self) -> &'static str;
    /// JSON Schema of the arguments object.
    fn schema(&self) -> Value;
    /// Whether it changes the project (and so needs confirmation).
    fn writes(&self) -> bool {
        false
    }
    /// What a write will change; called before the confirmation is shown.
    async fn preview(&self, _args: &Value, _ctx: &ToolContext) -> Result<ActionPreview, ToolError> {
        Err(ToolError::Failed(format!(
            "{} does not change anything",
            self.name()
        )))
    }
    /// Runs the tool on validated arguments.
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError>;
}

/// Deserialises validated arguments into a typed struct.
pub fn parse_args<T: DeserializeOwned>(args: &Value) -> Result<T, ToolError> {
    serde_json::from_value(args.clone()).map_err(|e| ToolError::InvalidArguments(e.to_string()))
}

/// Serialises a typed result.
pub fn to_value<T: Serialize>(v: &T) -> Result<Value, ToolError> {
    serde_json::to_value(v)
        .map_err(|e| ToolError::Failed(format!("could not encode the result: {e}")))
}

/// The registry with every tool Sparky ships.
pub fn default_registry(tool_executions_per_minute: u32) -> ToolRegistry {
    let mut r = ToolRegistry::new(tool_executions_per_minute);
    utility::register(&mut r);
    project_tools::register(&mut r);
    nec_tools::register(&mut r);
    query::register(&mut r);
    inspection::register(&mut r);
    report_tool::register(&mut r);
    r
}
