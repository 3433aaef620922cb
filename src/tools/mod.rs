//! Tools the model (and people, through commands) can call.
//!
//! A tool is a name, a description and a JSON Schema for its arguments. Read tools
//! ([`Tool`]) `execute` against a read-only view of the store. Write tools ([`WriteTool`])
//! only `plan`: the confirmation gate in the core stores the plan, shows it, and applies
//! exactly that plan after a recorded Confirm. The type decides which a tool is.
//!
//! Layer: under the core. A tool imports the domain engines, `store` (through the views it is
//! handed) and `domain`; it never imports `core` or a platform. Rule: one file per tool (or per
//! small family of tools), named for it, holding its argument struct, its [`Tool`] or
//! [`WriteTool`] impl and the rendering only it uses. What a calculation, check or invariant
//! decides lives in `nec` (code rules over plain inputs) or `project` (rules over a project's
//! equipment), never here, so the reports and the gate reach the same rule without going
//! through a tool.
//!
//! The files:
//! - Registration of the packs: `nec_tools` (the NEC calculations) and `project_tools` (the
//!   project's equipment and energy budget); [`default_registry`] below registers everything.
//! - NEC tools: `calculate_voltage_drop`, `calculate_short_circuit`, `check_panel_capacity`,
//!   `check_conductor_sizing`, `calculate_arc_flash`, `check_service_upgrade`, `lookup_table`.
//! - Project tools: `add_load_item`, `add_charging_source`, `energy_budget`, `add_panel`,
//!   `add_circuit`, `update_circuit`, `remove_circuit`, `set_service`, `add_feeder`,
//!   `add_transformer`.
//! - Other tools: `find_circuits`, `describe_panel`, `run_inspection`, `code_in_force`,
//!   `report_tool` (`send_report`), `search_tool` (`search_code`), `discovery` (`more_tools`),
//!   and the families `utility` (calculator, time, tasks), `dwelling_tools`, `motor_tools`,
//!   `grounding_tools`, `lighting_tools`, `protection_tools` (`check_gfci_afci`,
//!   `count_outlets_per_circuit`, `size_ev_circuit`), `pv_tools` (`check_pv_interconnection`),
//!   `existing_load_tools` (`calculate_existing_dwelling_load_from_demand`),
//!   `multifamily_tools` (`calculate_multifamily_load`), `fill_tools` (box fill, raceway fill).
//! - Shared by several tools: `nec_args` (the edition a calculation uses, circuit references
//!   from arguments), `plan_preview` (a call's plan item and the fault-current, loading and
//!   circuit lines of the write previews), `code_basis` (the edition and why, added to every
//!   NEC result), `schema` (argument schemas), `attachment` (files a tool hands back),
//!   `changes` (the result of an applied call), `turn_project` (the turn's one read of the
//!   project), `blocking` (CPU-bound work off the async workers, within a budget),
//!   `read_store` and `registry`.

pub mod add_charging_source;
pub mod add_circuit;
pub mod add_feeder;
pub mod add_load_item;
pub mod add_panel;
pub mod add_transformer;
pub mod attachment;
pub mod blocking;
pub mod calculate_arc_flash;
pub mod calculate_short_circuit;
pub mod calculate_voltage_drop;
pub mod changes;
pub mod check_conductor_sizing;
pub mod check_panel_capacity;
pub mod check_service_upgrade;
pub mod code_basis;
pub mod code_in_force;
pub mod describe_panel;
pub mod discovery;
pub mod dwelling_tools;
pub mod energy_budget;
pub mod existing_load_tools;
pub mod fill_tools;
pub mod find_circuits;
pub mod grounding_tools;
pub mod keyed_limit;
pub mod lighting_tools;
pub mod lookup_table;
pub mod motor_tools;
pub mod multifamily_tools;
pub mod nec_args;
pub mod nec_tools;
pub mod plan_preview;
pub mod project_tools;
pub mod protection_tools;
pub mod pv_tools;
mod read_store;
mod registry;
pub mod remove_circuit;
pub mod report_tool;
pub mod run_inspection;
pub mod schema;
pub mod search_tool;
pub mod set_service;
pub mod turn_project;
pub mod update_circuit;
pub mod utility;

use std::sync::Arc;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::nec::NecError;
use crate::project::plan::{Change, ItemPlan, FIRST_PLACEHOLDER};
use crate::project::{AnalysisError, ProjectData};
use crate::store::{Store, StoreError};

pub use read_store::ReadStore;
pub use registry::{RegisteredTool, ToolRegistry, ValidatedCall};

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

impl From<AnalysisError> for ToolError {
    fn from(e: AnalysisError) -> Self {
        match e {
            AnalysisError::Invalid(m) => Self::InvalidArguments(m),
            AnalysisError::NotFound(m) => Self::NotFound(m),
            AnalysisError::MissingData(m) => Self::MissingData(m),
            AnalysisError::Conflict(m) => Self::Conflict(m),
            AnalysisError::Failed(m) => Self::Failed(m),
        }
    }
}

/// Maps an engine error to a tool error (the engine's message already names the input).
pub fn nec_err(e: NecError) -> ToolError {
    AnalysisError::from(e).into()
}

/// What a write tool will do, shown before confirmation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActionPreview {
    /// One line: the change.
    pub summary: String,
    /// The resulting state and anything worth checking.
    pub details: Vec<String>,
}

/// A write tool's plan for one call: what the card shows and the exact changes Confirm applies.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolPlan {
    /// The card's lines.
    pub preview: ActionPreview,
    /// The changes, fully resolved, and what the result adds besides the written rows.
    pub item: ItemPlan,
}

/// Everything a tool may use while running. The store is a read-only view: tools never write;
/// a write tool plans and the confirmation gate applies the plan.
#[derive(Clone)]
pub struct ToolContext {
    /// The store, read-only.
    pub store: ReadStore,
    /// Project the session works on.
    pub project_id: Option<i64>,
    /// Session, when called from a conversation.
    pub session_id: Option<i64>,
    /// Who asked (platform user id).
    pub user: String,
    /// Workspace of the caller (for document visibility and tool limits).
    pub workspace: Option<crate::domain::workspace::Workspace>,
    /// Changes planned by earlier write calls of the same turn, not yet applied;
    /// [`project`](Self::project) shows the project with them applied so calls plan against
    /// each other.
    pub planned: Arc<Vec<Change>>,
    /// The turn's one read of the bound project, shared with its model requests (see
    /// [`turn_project`]); `None` reads it anew on every call.
    pub turn_project: Option<Arc<turn_project::TurnProject>>,
}

impl ToolContext {
    /// A context on `project_id` for `user`.
    pub fn new(
        store: Arc<dyn Store>,
        project_id: Option<i64>,
        user: impl Into<String>,
        workspace: Option<crate::domain::workspace::Workspace>,
    ) -> Self {
        Self {
            store: ReadStore::new(store),
            project_id,
            session_id: None,
            user: user.into(),
            workspace,
            planned: Arc::new(Vec::new()),
            turn_project: None,
        }
    }

    /// The bound project id, or a clear error.
    pub fn require_project(&self) -> Result<i64, ToolError> {
        self.project_id.ok_or_else(|| {
            ToolError::MissingData(
                "no project is bound to this conversation; create or choose one with `/sparky project use NAME`"
                    .into(),
            )
        })
    }

    /// Loads the bound project whole (with the changes already planned in this turn applied),
    /// its edition set to the one its calculations use: the code in force at the job site when
    /// Sparky ships that edition's tables (see [`crate::jurisdiction::for_project`]).
    pub async fn project(&self) -> Result<ProjectData, ToolError> {
        let id = self.require_project()?;
        let mut p = match &self.turn_project {
            Some(turn) if turn.id() == id => {
                turn.get_or_load(|id, seen| self.store.load_project_seen(id, seen))
                    .await?
            }
            _ => self.store.load_project(id).await?,
        };
        p.project.edition = crate::jurisdiction::for_project(&p.project).tables;
        let mut next = FIRST_PLACEHOLDER;
        for c in self.planned.iter() {
            c.simulate(&mut p, &mut next);
        }
        Ok(p)
    }

    /// The code in force for the bound project, when one is bound.
    pub async fn code_in_force(
        &self,
    ) -> Result<Option<crate::jurisdiction::CodeInForce>, ToolError> {
        let Some(id) = self.project_id else {
            return Ok(None);
        };
        // In a model turn the project's row is in the turn's read: no statement of its own.
        if let Some(turn) = self.turn_project.as_ref().filter(|t| t.id() == id) {
            return match turn
                .read(|id, seen| self.store.load_project_seen(id, seen))
                .await
            {
                Ok(p) => Ok(Some(crate::jurisdiction::for_project(&p.project))),
                Err(StoreError::NotFound(_)) => Ok(None),
                Err(e) => Err(e.into()),
            };
        }
        Ok(self
            .store
            .project(id)
            .await?
            .map(|p| crate::jurisdiction::for_project(&p)))
    }
}

/// A tool that only reads: calculations, queries, search. It sees the store read-only.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Unique name.
    fn name(&self) -> &'static str;
    /// What it does, for the model.
    fn description(&self) -> &'static str;
    /// JSON Schema of the arguments object.
    fn schema(&self) -> Value;
    /// Runs the tool on validated arguments.
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError>;
    /// Whether a run can compute for long without awaiting (rendering a document, walking a
    /// whole project). The runner then executes it on the blocking pool (see [`blocking`]),
    /// where its timeout holds and the async workers stay free for other conversations.
    fn cpu_bound(&self) -> bool {
        false
    }
}

/// A tool that changes the project. It cannot run: it only plans (the exact rows to insert,
/// update or delete, every default filled in), and the confirmation gate applies the stored
/// plan after a person confirms. Registered with
/// [`ToolRegistry::register_write`]; a write tool is not a [`Tool`], so it cannot be
/// registered as a read tool.
#[async_trait]
pub trait WriteTool: Send + Sync {
    /// Unique name.
    fn name(&self) -> &'static str;
    /// What it does, for the model.
    fn description(&self) -> &'static str;
    /// JSON Schema of the arguments object.
    fn schema(&self) -> Value;
    /// The change against the project as `ctx` shows it; writes nothing.
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError>;
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
    r.register(find_circuits::FindCircuits);
    r.register(describe_panel::DescribePanel);
    run_inspection::register(&mut r);
    dwelling_tools::register(&mut r);
    motor_tools::register(&mut r);
    grounding_tools::register(&mut r);
    lighting_tools::register(&mut r);
    protection_tools::register(&mut r);
    r.register(code_in_force::CodeInForceTool);
    report_tool::register(&mut r);
    pv_tools::register(&mut r);
    existing_load_tools::register(&mut r);
    multifamily_tools::register(&mut r);
    r.register(discovery::MoreTools);
    fill_tools::register(&mut r);
    r
}
