//! General lighting load of a non-dwelling occupancy (unit load × area, demand factors,
//! 125 % continuous), per the project's NEC edition.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::nec_args::edition_of;
use super::schema::schema_for;
use super::{nec_err, parse_args, to_value, Tool, ToolContext, ToolError, ToolRegistry};
use crate::nec::general_lighting::{self, GeneralLightingInput};
use crate::nec::units::{Phase, Volts};
use crate::project::analysis::round;

/// Registers the lighting-load tool.
pub fn register(r: &mut ToolRegistry) {
    r.register(super::code_basis::WithCodeBasis(
        CalculateGeneralLightingLoad,
    ));
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LightingArgs {
    /// Occupancy of 2020 Table 220.12 / 2023 Table 220.42(A), e.g. "Office", "Retail",
    /// "Warehouse" (the error lists them all).
    occupancy: String,
    /// Floor area, ft².
    area_ft2: f64,
    /// Runs 3 h or more (default true): 125 %.
    #[serde(default)]
    continuous: Option<bool>,
    /// For the current (default: the project's service).
    #[serde(default)]
    voltage: Option<Volts>,
    /// For the current (default: the project's service).
    #[serde(default)]
    phase: Option<Phase>,
}

/// Non-dwelling general lighting load.
pub struct CalculateGeneralLightingLoad;

#[async_trait]
impl Tool for CalculateGeneralLightingLoad {
    fn name(&self) -> &'static str {
        "calculate_general_lighting_load"
    }
    fn description(&self) -> &'static str {
        "General lighting load of a non-dwelling occupancy (office, retail, warehouse...): area × unit \
         load (2020 Table 220.12 / 2023 Table 220.42(A)), demand factors for hospitals, hotels and \
         warehouses (2020 Table 220.42 / 2023 Table 220.45), and 125 % as a continuous load for the \
         OCPD and conductors. Uses the project's edition. Dwellings: calculate_dwelling_load."
    }
    fn schema(&self) -> Value {
        schema_for::<LightingArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: LightingArgs = parse_args(&args)?;
        let edition = edition_of(ctx).await;
        let service = match ctx.project_id {
            Some(_) => ctx.project().await?.service,
            None => None,
        };
        let (voltage, phase) = match (a.voltage, a.phase, &service) {
            (None, None, Some(s)) => (Some(s.voltage), Some(s.phase)),
            (v, p, _) => (v, p),
        };
        let r = general_lighting::general_lighting_load(&GeneralLightingInput {
            edition,
            occupancy: a.occupancy.clone(),
            area_ft2: a.area_ft2,
            continuous: a.continuous.unwrap_or(true),
            voltage,
            phase,
        })
        .map_err(nec_err)?;
        Ok(json!({
            "occupancy": r.occupancy,
            "edition": edition,
            "connected_va": round(r.connected_va, 0),
            "demand_va": round(r.demand_va, 0),
            "sizing_va": round(r.sizing_va, 0),
            "sizing_a": r.sizing_amps.map(|x| round(x.0, 1)),
            "calculation": to_value(&r)?,
        }))
    }
}
