//! `calculate_multifamily_load`: the service or feeder of a multifamily dwelling (apartments,
//! condos), standard method (Part III over the units) and optional method (220.84; two units
//! by 220.85), with the house load, compared with the project's service.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::nec_args::edition_and_basis;
use super::schema::schema_for;
use super::{nec_err, parse_args, to_value, Tool, ToolContext, ToolError, ToolRegistry};
use crate::nec::dwelling::Appliance;
use crate::nec::multifamily::{self, MethodLoad, MultifamilyInput, UnitType};
use crate::nec::units::{Amps, Edition, Phase, Volts};
use crate::project::analysis::round;

/// Registers the multifamily tool.
pub fn register(r: &mut ToolRegistry) {
    r.register(super::code_basis::WithCodeBasis(CalculateMultifamilyLoad));
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ApplianceArg {
    #[serde(default)]
    description: String,
    va: f64,
    /// 120 or 240 (default 240).
    #[serde(default)]
    volts: Option<f64>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UnitTypeArg {
    #[serde(default)]
    description: String,
    /// Number of identical units.
    count: u32,
    /// ft² of one unit.
    floor_area_ft2: f64,
    /// Per unit (default 2).
    #[serde(default)]
    small_appliance_circuits: Option<u32>,
    /// Per unit (default 1; 0 with a common laundry).
    #[serde(default)]
    laundry_circuits: Option<u32>,
    /// Electric range, cooktop, oven: kW each (none: gas cooking).
    #[serde(default)]
    cooking_kw: Vec<f64>,
    /// Dryer nameplate, W each.
    #[serde(default)]
    dryer_w: Vec<f64>,
    /// Water heater, dishwasher, disposer... per unit.
    #[serde(default)]
    appliances: Vec<ApplianceArg>,
    /// Electric space heating per unit, VA.
    #[serde(default)]
    heating_va: f64,
    /// Air conditioning per unit, VA.
    #[serde(default)]
    cooling_va: f64,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct MultifamilyArgs {
    /// The dwelling units on the feeder or service, grouped by type.
    units: Vec<UnitTypeArg>,
    /// House (common-area) load calculated by Part III, VA.
    #[serde(default)]
    house_load_va: Option<f64>,
    /// Each unit has one feeder only (220.84(A)(1)).
    #[serde(default)]
    single_feeder_per_unit: Option<bool>,
    /// Largest motor on the feeder, VA (25 % in the standard method).
    #[serde(default)]
    largest_motor_va: Option<f64>,
    /// Default: the project's service, else 240.
    #[serde(default)]
    voltage: Option<Volts>,
    /// Default: the project's service, else 1.
    #[serde(default)]
    phase: Option<Phase>,
    /// Service or feeder rating to compare, A (default the project's service).
    #[serde(default)]
    service_rating: Option<Amps>,
    /// 2017, 2020 or 2023 (default: the project's code in force).
    #[serde(default)]
    edition: Option<Edition>,
}

fn method_json(m: &MethodLoad) -> Value {
    json!({
        "method": m.method,
        "total_va": round(m.total_va, 0),
        "amps": round(m.amps.0, 1),
        "neutral_a": m.neutral_amps.map(|n| round(n.0, 1)),
        "minimum_rating_a": m.minimum_rating.0,
        "lines": m.lines.iter().map(|l| json!({
            "item": l.item,
            "reference": l.reference,
            "connected_va": round(l.connected_va, 0),
            "demand_va": round(l.demand_va, 0),
        })).collect::<Vec<_>>(),
    })
}

/// Multifamily service or feeder load.
pub struct CalculateMultifamilyLoad;

#[async_trait]
impl Tool for CalculateMultifamilyLoad {
    fn name(&self) -> &'static str {
        "calculate_multifamily_load"
    }
    fn description(&self) -> &'static str {
        "Service or feeder for a multifamily dwelling (apartment building, condos, three or more \
         dwelling units; two units by 220.85): standard method (Part III over all units: lighting \
         demand 220.42/220.45, 220.53, 220.54 dryers, 220.55 ranges, 220.60, neutral 220.61) and \
         optional method (NEC 220.84, Table 220.84 demand factor by number of units), each plus \
         the house load, with the 220.84(A) conditions checked and the lesser permitted load \
         named; compared with the project's service. One new dwelling: calculate_dwelling_load."
    }
    fn schema(&self) -> Value {
        schema_for::<MultifamilyArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: MultifamilyArgs = parse_args(&args)?;
        let (edition, edition_basis) = edition_and_basis(ctx, a.edition).await;
        let service = match ctx.project_id {
            Some(_) => ctx.project().await?.service,
            None => None,
        };
        let mut assumptions: Vec<String> = Vec::new();
        let phase = a
            .phase
            .or(service.as_ref().map(|s| s.phase))
            .unwrap_or(Phase::Single);
        let voltage = match a.voltage.or(service.as_ref().map(|s| s.voltage)) {
            Some(v) => v.0,
            None => {
                assumptions.push("120/240 V single-phase (voltage not given)".into());
                240.0
            }
        };
        let mut unit_types = Vec::new();
        for (i, u) in a.units.iter().enumerate() {
            if u.small_appliance_circuits.is_none() {
                assumptions.push(format!(
                    "units[{i}]: 2 small-appliance circuits per unit (not given)"
                ));
            }
            if u.laundry_circuits.is_none() {
                assumptions.push(format!(
                    "units[{i}]: 1 laundry circuit per unit (not given; 0 where a common laundry serves the tenants, 210.52(F) Exception No. 1)"
                ));
            }
            unit_types.push(UnitType {
                description: u.description.clone(),
                count: u.count,
                floor_area_ft2: u.floor_area_ft2,
                small_appliance_circuits: u.small_appliance_circuits.unwrap_or(2),
                laundry_circuits: u.laundry_circuits.unwrap_or(1),
                fastened_appliances: u
                    .appliances
                    .iter()
                    .map(|x| Appliance {
                        description: x.description.clone(),
                        va: x.va,
                        volts: x.volts.unwrap_or(240.0),
                    })
                    .collect(),
                dryers_w: u.dryer_w.clone(),
                cooking_appliances_kw: u.cooking_kw.clone(),
                heating_va: u.heating_va,
                cooling_va: u.cooling_va,
            });
        }
        let r = multifamily::multifamily_load(&MultifamilyInput {
            edition,
            unit_types,
            house_load_va: a.house_load_va.unwrap_or(0.0),
            voltage,
            three_phase: phase == Phase::Three,
            single_feeder_per_unit: a.single_feeder_per_unit,
            largest_motor_va: a.largest_motor_va,
        })
        .map_err(nec_err)?;
        assumptions.extend(r.assumptions.iter().cloned());
        let rating = a.service_rating.or(service.as_ref().map(|s| s.rating));
        let service_check = rating.map(|s| {
            json!({
                "rating_a": s.0,
                "governing_a": round(r.governing.amps.0, 1),
                "adequate": r.governing.amps.0 <= s.0 + 1e-9,
            })
        });
        let mut reviewer_checks = vec![
            "house loads (common lighting, laundry, elevators, pumps, site lighting) calculated by Part III and added".to_string(),
            "each unit's own feeder sized as one dwelling unit (220.82 or Part III), not by these totals".into(),
            "the optional method's neutral by 220.61".into(),
            "one feeder per unit and electric cooking and heating or air conditioning in every unit, as the plans show".into(),
            "the utility's service size and the AHJ".into(),
        ];
        if edition == Edition::Nec2023 {
            reviewer_checks.push(
                "2023: EV supply equipment is a load of its own (220.57, at least 7200 VA each) and takes no 220.53 demand factor: add it to the house or unit loads".into(),
            );
        }
        Ok(json!({
            "edition": edition,
            "edition_basis": edition_basis,
            "units": r.units,
            "standard": method_json(&r.standard),
            "optional": r.optional.as_ref().map(method_json),
            "demand_factor": r.demand_factor,
            "optional_not_permitted": r.optional_not_permitted,
            "conditions": to_value(&r.conditions)?,
            "governing": method_json(&r.governing),
            "governing_why": r.governing_why,
            "service": service_check,
            "references": r.references,
            "reviewer_checks": reviewer_checks,
            "assumptions": assumptions,
        }))
    }
}
