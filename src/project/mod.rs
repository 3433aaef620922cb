//! The project model: a team's electrical system as the bot knows it.
//!
//! `*Spec` structs are what a tool or an import proposes; the stored records add ids.
//!
//! What the project's data means lives here too: the shared analysis over its equipment
//! ([`analysis`]: slots and phases, panel loading, the fault-current chain along the feeders,
//! voltage-drop inputs, naming circuits the way people do), the rule checks of an inspection
//! ([`inspection`]), what a change must satisfy ([`invariants`]), whether a stored plan still
//! fits the project at Confirm ([`plan_check`]) and the energy budget ([`energy`]). Each is a
//! pure function of [`ProjectData`], failing with [`AnalysisError`].
//!
//! Layer: domain engine. Imports `domain`, `nec` and `jurisdiction`; never the store, `tools` or
//! the core: services that read or write projects live in `services`, and the tools only call
//! and render what is decided here.

pub mod analysis;
pub mod circuit_diff;
pub mod circuit_protection;
pub mod dwelling_circuits;
pub mod energy;
pub mod equipment;
mod error;
pub mod feeder_egc;
pub mod inspection;
pub mod invariants;
pub mod motor_circuit;
pub mod plan;
pub mod plan_check;
pub mod raceway_contents;

pub use equipment::{ApplianceKind, ApplianceNameplate, MotorLoad, RacewayMaterial};
pub use error::AnalysisError;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::policy::ConfirmPolicy;
use crate::nec::units::{
    Amps, ConductorSize, Edition, Feet, Material, Phase, TempRating, VoltAmperes, Volts, Watts,
};

pub use crate::domain::workspace::Workspace;

/// A project bound to channels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Project {
    /// Database id.
    pub id: i64,
    /// The workspace it belongs to.
    pub workspace: Workspace,
    /// Name, unique in its workspace.
    pub name: String,
    /// NEC edition the project was created with; the edition in force comes from `site`
    /// (see [`crate::jurisdiction::code_in_force`]) when a location or override is set.
    pub edition: Edition,
    /// Who may confirm changes; `None` uses the configured default.
    pub confirm_policy: Option<ConfirmPolicy>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Job-site location, permit date and edition override (which code applies).
    #[serde(default)]
    pub site: crate::jurisdiction::Site,
}

impl crate::jurisdiction::Sited for Project {
    fn site(&self) -> &crate::jurisdiction::Site {
        &self.site
    }
    fn created_edition(&self) -> Edition {
        self.edition
    }
}

/// A member's role in a project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemberRole {
    /// Can read and ask.
    Viewer,
    /// Can confirm changes under the `editors` policy.
    Editor,
    /// Can also change project settings.
    Owner,
}

impl MemberRole {
    /// Stable name used in storage.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Viewer => "viewer",
            Self::Editor => "editor",
            Self::Owner => "owner",
        }
    }

    /// Parses the stored name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "viewer" => Some(Self::Viewer),
            "editor" => Some(Self::Editor),
            "owner" => Some(Self::Owner),
            _ => None,
        }
    }
}

/// The utility service of a project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServiceSpec {
    /// Nominal line-to-line voltage (e.g. 240 for 120/240 V, 208 or 480).
    pub voltage: Volts,
    /// Phases.
    pub phase: Phase,
    /// Service rating.
    pub rating: Amps,
    /// Available fault current at the service from the utility, in kA, when known.
    #[serde(default)]
    pub available_fault_ka: Option<f64>,
    /// Free-form notes.
    #[serde(default)]
    pub notes: String,
}

/// A panelboard or switchboard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PanelSpec {
    /// Unique name within the project ("LP-1", "MDP").
    pub name: String,
    /// Nominal line-to-line voltage.
    pub voltage: Volts,
    /// Phases.
    pub phase: Phase,
    /// Bus rating.
    pub bus_rating: Amps,
    /// Main breaker rating; `None` for main-lug-only.
    #[serde(default)]
    pub main_breaker: Option<Amps>,
    /// Short-circuit (interrupting) rating in kA, when known.
    #[serde(default)]
    pub interrupting_rating_ka: Option<f64>,
    /// What feeds it: "service", another panel's name or a transformer's name.
    #[serde(default)]
    pub fed_from: Option<String>,
    /// Number of circuit spaces.
    #[serde(default = "default_spaces")]
    pub spaces: u32,
    /// Where it is.
    #[serde(default)]
    pub location: String,
}

fn default_spaces() -> u32 {
    42
}

/// A stored panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Panel {
    /// Database id.
    pub id: i64,
    /// Owning project.
    pub project_id: i64,
    /// The panel's data.
    #[serde(flatten)]
    pub spec: PanelSpec,
}

/// A branch circuit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CircuitSpec {
    /// First circuit (slot) number, unique within the panel.
    pub number: i32,
    /// Poles (1, 2 or 3).
    #[serde(default = "one_pole")]
    pub poles: u8,
    /// What it feeds ("EV charger garage").
    pub description: String,
    /// Connected load.
    pub load_va: VoltAmperes,
    /// Whether the load runs 3 hours or more (125 % rule).
    #[serde(default)]
    pub continuous: bool,
    /// Breaker rating.
    pub breaker: Amps,
    /// Conductor size, when known.
    #[serde(default)]
    pub conductor_size: Option<ConductorSize>,
    /// Conductor material.
    #[serde(default = "copper")]
    pub material: Material,
    /// Insulation temperature rating.
    #[serde(default = "c75")]
    pub insulation: TempRating,
    /// One-way length, when known.
    #[serde(default)]
    pub length: Option<Feet>,
    /// Raceway or cable ("3/4 EMT", "NM-B").
    #[serde(default)]
    pub conduit: String,
    /// The motor it supplies, if any (sized from the NEC full-load current tables).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub motor: Option<MotorLoad>,
    /// The appliance nameplate, if any (used by the dwelling load calculations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appliance: Option<ApplianceNameplate>,
}

fn one_pole() -> u8 {
    1
}
fn copper() -> Material {
    Material::Copper
}
fn c75() -> TempRating {
    TempRating::C75
}

/// A stored circuit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Circuit {
    /// Database id.
    pub id: i64,
    /// Owning panel.
    pub panel_id: i64,
    /// The circuit's data.
    #[serde(flatten)]
    pub spec: CircuitSpec,
}

/// A feeder between two pieces of equipment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FeederSpec {
    /// Unique name within the project.
    pub name: String,
    /// Source equipment name ("service", panel or transformer).
    pub from: String,
    /// Load-side equipment name.
    pub to: String,
    /// Conductor size per set.
    pub conductor_size: ConductorSize,
    /// Conductor material.
    #[serde(default = "copper")]
    pub material: Material,
    /// Insulation rating.
    #[serde(default = "c75")]
    pub insulation: TempRating,
    /// Parallel sets.
    #[serde(default = "one_set")]
    pub sets: u8,
    /// One-way length.
    #[serde(default)]
    pub length: Option<Feet>,
    /// Overcurrent protection at the source.
    pub ocpd: Amps,
    /// Raceway material (voltage drop and point-to-point columns), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raceway: Option<RacewayMaterial>,
    /// Installed equipment grounding conductor size (per raceway), checked against 250.122.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egc_size: Option<ConductorSize>,
    /// Point-to-point C value of this run (from the cable maker or a published table), used
    /// instead of the shipped table; per set (parallel sets are counted separately).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c_value: Option<f64>,
    /// Line-to-neutral impedance of one set, ohms per 1000 ft (C = 1000 / Z), used when no
    /// `c_value` is recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impedance_ohms_per_1000ft: Option<f64>,
}

fn one_set() -> u8 {
    1
}

/// A stored feeder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Feeder {
    /// Database id.
    pub id: i64,
    /// Owning project.
    pub project_id: i64,
    /// The feeder's data.
    #[serde(flatten)]
    pub spec: FeederSpec,
}

/// A transformer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TransformerSpec {
    /// Unique name within the project.
    pub name: String,
    /// Rating in kVA.
    pub kva: f64,
    /// Primary voltage (line to line).
    pub primary_voltage: Volts,
    /// Secondary voltage (line to line).
    pub secondary_voltage: Volts,
    /// Phases.
    pub phase: Phase,
    /// Nameplate impedance in percent.
    pub impedance_percent: f64,
    /// What feeds it.
    #[serde(default)]
    pub fed_from: Option<String>,
}

/// A stored transformer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transformer {
    /// Database id.
    pub id: i64,
    /// Owning project.
    pub project_id: i64,
    /// The transformer's data.
    #[serde(flatten)]
    pub spec: TransformerSpec,
}

/// A piece of equipment that uses energy (for off-grid budgets).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoadItemSpec {
    /// What it is ("Dometic CFX3 45 fridge").
    pub name: String,
    /// Power while running.
    pub watts: Watts,
    /// Hours per day it is switched on.
    pub hours_per_day: f64,
    /// Fraction of the on-time it actually draws power (0..=1; a fridge's compressor cycles).
    pub duty_cycle: f64,
    /// How many.
    #[serde(default = "one_u32")]
    pub quantity: u32,
    /// Assumptions and sources of the numbers.
    #[serde(default)]
    pub notes: String,
}

fn one_u32() -> u32 {
    1
}

/// A stored load item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadItem {
    /// Database id.
    pub id: i64,
    /// Owning project.
    pub project_id: i64,
    /// The item's data.
    #[serde(flatten)]
    pub spec: LoadItemSpec,
}

/// Something that charges a battery bank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChargingSourceSpec {
    /// What it is ("400 W roof solar").
    pub name: String,
    /// "solar", "alternator", "shore", "generator", "wind" or "other".
    pub kind: String,
    /// Output while producing.
    pub watts: Watts,
    /// Equivalent full-output hours per day (peak sun hours for solar).
    pub hours_per_day: f64,
    /// Fraction of the output that reaches the battery (0..=1).
    pub efficiency: f64,
    /// Assumptions and sources.
    #[serde(default)]
    pub notes: String,
}

/// A stored charging source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChargingSource {
    /// Database id.
    pub id: i64,
    /// Owning project.
    pub project_id: i64,
    /// The source's data.
    #[serde(flatten)]
    pub spec: ChargingSourceSpec,
}

/// A punch-list task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskSpec {
    /// Short title.
    pub title: String,
    /// Details.
    #[serde(default)]
    pub notes: String,
    /// Who should do it (platform user id or name).
    #[serde(default)]
    pub assignee: Option<String>,
}

/// A stored task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// Database id.
    pub id: i64,
    /// Owning project.
    pub project_id: i64,
    /// The task's data.
    #[serde(flatten)]
    pub spec: TaskSpec,
    /// Who created it.
    pub created_by: String,
    /// When.
    pub created_at: DateTime<Utc>,
    /// When it was completed.
    pub completed_at: Option<DateTime<Utc>>,
    /// By whom.
    pub completed_by: Option<String>,
}

/// Everything stored about one project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectData {
    /// The project.
    pub project: Project,
    /// Its service, if entered.
    pub service: Option<ServiceSpec>,
    /// Panels.
    pub panels: Vec<Panel>,
    /// Circuits of all panels.
    pub circuits: Vec<Circuit>,
    /// Feeders.
    pub feeders: Vec<Feeder>,
    /// Transformers.
    pub transformers: Vec<Transformer>,
    /// Energy-budget loads.
    pub loads: Vec<LoadItem>,
    /// Charging sources.
    pub charging_sources: Vec<ChargingSource>,
    /// Tasks.
    pub tasks: Vec<Task>,
}

impl ProjectData {
    /// The panel with this name (case-insensitive).
    pub fn panel_by_name(&self, name: &str) -> Option<&Panel> {
        self.panels
            .iter()
            .find(|p| p.spec.name.eq_ignore_ascii_case(name.trim()))
    }

    /// The transformer with this name (case-insensitive).
    pub fn transformer_by_name(&self, name: &str) -> Option<&Transformer> {
        self.transformers
            .iter()
            .find(|t| t.spec.name.eq_ignore_ascii_case(name.trim()))
    }

    /// Circuits of one panel, by circuit number.
    pub fn circuits_of(&self, panel_id: i64) -> Vec<&Circuit> {
        let mut v: Vec<&Circuit> = self
            .circuits
            .iter()
            .filter(|c| c.panel_id == panel_id)
            .collect();
        v.sort_by_key(|c| c.spec.number);
        v
    }
}
