//! `check_service_upgrade`: 220.83, may the existing dwelling service carry the added load?

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::nec_args::circuit_loads;
use super::schema::schema_for;
use super::{nec_err, parse_args, to_value, Tool, ToolContext, ToolError};
use crate::nec::dwelling::{self, Appliance, ExistingDwellingInput};
use crate::nec::units::{Amps, Phase};
use crate::project::analysis::round;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ApplianceArg {
    /// What it is.
    #[serde(default)]
    description: String,
    /// Nameplate VA (W taken as VA).
    va: f64,
    /// 120 or 240 (default 240).
    #[serde(default)]
    volts: Option<f64>,
}

impl ApplianceArg {
    fn to_engine(&self) -> Appliance {
        Appliance {
            description: self.description.clone(),
            va: self.va,
            volts: self.volts.unwrap_or(240.0),
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ServiceUpgradeArgs {
    /// Dwelling floor area, ft² (required: not part of the project data).
    floor_area_ft2: Option<f64>,
    /// Small-appliance branch circuits (default 2).
    #[serde(default)]
    small_appliance_circuits: Option<u32>,
    /// Laundry circuits (default 1).
    #[serde(default)]
    laundry_circuits: Option<u32>,
    /// Existing fastened-in-place / dedicated loads at nameplate (range, dryer, water heater, ...).
    #[serde(default)]
    existing_loads: Vec<ApplianceArg>,
    /// Loads being added (other than heating/AC).
    #[serde(default)]
    added_loads: Vec<ApplianceArg>,
    /// Project circuits being added, by name ("LP-1 #5" or "the EV charger"): their load VA is
    /// added.
    #[serde(default)]
    added_circuits: Vec<String>,
    /// Air conditioning being added, VA.
    #[serde(default)]
    added_air_conditioning_va: f64,
    /// Central electric heat being added, VA.
    #[serde(default)]
    added_central_heating_va: f64,
    /// Space heating (fewer than four separately controlled units) being added, VA.
    #[serde(default)]
    added_space_heating_va: f64,
    /// Service rating override (default: the project's service).
    #[serde(default)]
    service_rating: Option<Amps>,
}

/// 220.83: may the existing dwelling service carry the added load?
pub struct CheckServiceUpgrade;

#[async_trait]
impl Tool for CheckServiceUpgrade {
    fn name(&self) -> &'static str {
        "check_service_upgrade"
    }
    fn description(&self) -> &'static str {
        "EXISTING dwelling only: can its service carry existing plus added loads (NEC 220.83: first \
         8 kVA at 100 %, rest at 40 %; added heating/AC at 100 % under 220.83(B))? Needs the floor \
         area and the existing appliance nameplates; added loads as VA or project circuits by name \
         (\"the EV charger\"). Uses the project's service, or service_rating. Says whether an upgrade \
         is needed. For a new dwelling or new service use calculate_dwelling_load."
    }
    fn schema(&self) -> Value {
        schema_for::<ServiceUpgradeArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: ServiceUpgradeArgs = parse_args(&args)?;
        let project = match ctx.project_id {
            Some(_) => Some(ctx.project().await?),
            None => None,
        };
        let service = project.as_ref().and_then(|p| p.service.clone());
        let edition = project
            .as_ref()
            .map(|p| p.project.edition)
            .unwrap_or_default();
        let area = a.floor_area_ft2.ok_or_else(|| {
            ToolError::MissingData(
                "floor_area_ft2 is required (the dwelling's floor area is not part of the project data)".into(),
            )
        })?;
        let mut assumptions = Vec::new();
        let (rating, voltage) = match (&service, a.service_rating) {
            (Some(s), over) => {
                if s.phase == Phase::Three {
                    assumptions.push("220.83 is a single-phase dwelling method; the service is three-phase: result is indicative only".to_string());
                }
                (over.unwrap_or(s.rating), s.voltage.0)
            }
            (None, Some(r)) => {
                assumptions
                    .push("no project service recorded: 120/240 V assumed with the given rating".into());
                (r, 240.0)
            }
            (None, None) => {
                return Err(ToolError::MissingData(
                    "no service is known: give service_rating (or record the project service with set_service)"
                        .into(),
                ))
            }
        };
        let mut added: Vec<Appliance> = a.added_loads.iter().map(ApplianceArg::to_engine).collect();
        let from_circuits = circuit_loads(project.as_ref(), &a.added_circuits, "added circuit")?;
        let circuits_used: Vec<String> = from_circuits
            .iter()
            .map(|c| c.description.clone())
            .collect();
        added.extend(from_circuits);
        if a.small_appliance_circuits.is_none() {
            assumptions.push("2 small-appliance circuits (not given)".into());
        }
        if a.laundry_circuits.is_none() {
            assumptions.push("1 laundry circuit (not given)".into());
        }
        let r = dwelling::dwelling_existing(&ExistingDwellingInput {
            edition,
            floor_area_ft2: area,
            small_appliance_circuits: a.small_appliance_circuits.unwrap_or(2),
            laundry_circuits: a.laundry_circuits.unwrap_or(1),
            existing_loads: a
                .existing_loads
                .iter()
                .map(ApplianceArg::to_engine)
                .collect(),
            added_loads: added,
            added_air_conditioning_va: a.added_air_conditioning_va,
            added_central_heating_va: a.added_central_heating_va,
            added_space_heating_va: a.added_space_heating_va,
            service_rating: rating,
            voltage,
        })
        .map_err(nec_err)?;
        Ok(json!({
            "service_rating_a": rating.0,
            "calculated_load_a": round(r.load.amps.0, 1),
            "service_adequate": r.service_adequate,
            "upgrade_needed": !r.service_adequate,
            "spare_a": round(r.spare_amps, 1),
            "minimum_service_a": r.load.minimum_service_rating.0,
            "added_circuits": circuits_used,
            "calculation": to_value(&r.load)?,
            "assumptions": assumptions,
        }))
    }
}
