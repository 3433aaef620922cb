//! `calculate_existing_dwelling_load_from_demand`: 220.87, the existing load from a year of
//! maximum demand (utility bills) or a 30-day recording, at 125 %, plus the new load, against
//! the service rating or a feeder's ampacity. The calculated alternative for a dwelling
//! (220.83) is `check_service_upgrade`.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::nec_args::{circuit_loads, edition_and_basis};
use super::schema::schema_for;
use super::{nec_err, parse_args, Tool, ToolContext, ToolError, ToolRegistry};
use crate::nec::dwelling::Appliance;
use crate::nec::existing_demand::{self, DemandData, DemandUnit, ExistingDemandInput, Limit};
use crate::nec::units::{Amps, Edition, Phase, Volts};
use crate::project::analysis::round;

/// Registers the measured-demand tool.
pub fn register(r: &mut ToolRegistry) {
    r.register(super::code_basis::WithCodeBasis(ExistingLoadFromDemand));
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum UnitArg {
    Kw,
    Kva,
    A,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NewLoadArg {
    #[serde(default)]
    description: String,
    va: f64,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DemandArgs {
    /// Maximum demand of each of the last 12 months (utility bills), in demand_unit.
    #[serde(default)]
    monthly_peaks: Option<Vec<f64>>,
    /// Or: highest demand of a continuous recording (15-minute average).
    #[serde(default)]
    recorded_peak: Option<f64>,
    /// Days recorded (at least 30).
    #[serde(default)]
    recorded_days: Option<u32>,
    /// Recording interval, minutes (default 15).
    #[serde(default)]
    interval_minutes: Option<u32>,
    /// kw (default), kva or a (highest loaded phase).
    #[serde(default)]
    demand_unit: Option<UnitArg>,
    /// To convert kW to kVA (default 1: kW taken as kVA).
    #[serde(default)]
    power_factor: Option<f64>,
    /// Default: the project's service, else 240.
    #[serde(default)]
    voltage: Option<Volts>,
    /// Default: the project's service, else 1.
    #[serde(default)]
    phase: Option<Phase>,
    /// Service rating, A (default the project's).
    #[serde(default)]
    service_rating: Option<Amps>,
    /// Check a feeder of this ampacity instead of the service.
    #[serde(default)]
    feeder_ampacity: Option<Amps>,
    /// Loads being added.
    #[serde(default)]
    new_loads: Vec<NewLoadArg>,
    /// Project circuits being added ("LP-1 #7", "the EV charger").
    #[serde(default)]
    new_circuits: Vec<String>,
    /// The service or feeder has PV, wind or peak-load shaving.
    #[serde(default)]
    renewable_or_peak_shaving: Option<bool>,
    /// 2017, 2020 or 2023 (default: the project's code in force).
    #[serde(default)]
    edition: Option<Edition>,
}

/// 220.87 from demand data.
pub struct ExistingLoadFromDemand;

#[async_trait]
impl Tool for ExistingLoadFromDemand {
    fn name(&self) -> &'static str {
        "calculate_existing_dwelling_load_from_demand"
    }
    fn description(&self) -> &'static str {
        "Existing load from measured maximum demand, NEC 220.87 (existing house or building): 12 \
         months of peak demand from the utility bills (meter data, kW, kVA or A) or a 30-day \
         recording of 15-minute demand, × 125 %, plus the new load (VA or project circuits), \
         against the service rating or a feeder's ampacity: amps, pass/fail, spare, and what the \
         data must be. 2020/2023: not permitted with PV, wind or peak shaving. Calculated \
         alternative for a dwelling: check_service_upgrade (220.83)."
    }
    fn schema(&self) -> Value {
        schema_for::<DemandArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: DemandArgs = parse_args(&args)?;
        let (edition, edition_basis) = edition_and_basis(ctx, a.edition).await;
        let project = match ctx.project_id {
            Some(_) => Some(ctx.project().await?),
            None => None,
        };
        let service = project.as_ref().and_then(|p| p.service.clone());
        let mut assumptions: Vec<String> = Vec::new();
        let data = match (&a.monthly_peaks, a.recorded_peak) {
            (Some(m), None) => DemandData::Monthly(m.clone()),
            (None, Some(peak)) => DemandData::Recorded {
                peak,
                days: a.recorded_days.ok_or_else(|| {
                    ToolError::MissingData(
                        "recorded_days is required with recorded_peak (at least 30)".into(),
                    )
                })?,
                interval_minutes: a.interval_minutes.unwrap_or(15),
            },
            (Some(_), Some(_)) => {
                return Err(ToolError::InvalidArguments(
                    "give monthly_peaks (a year of utility demand) or recorded_peak (a 30-day recording), not both".into(),
                ))
            }
            (None, None) => {
                return Err(ToolError::MissingData(
                    "give monthly_peaks (12 monthly maximum demands from the utility) or recorded_peak with recorded_days".into(),
                ))
            }
        };
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
        let (limit, kind) = match (a.feeder_ampacity, a.service_rating, &service) {
            (Some(f), _, _) => (f, Limit::Feeder),
            (None, Some(s), _) => (s, Limit::Service),
            (None, None, Some(s)) => (s.rating, Limit::Service),
            (None, None, None) => {
                return Err(ToolError::MissingData(
                    "no service is known: give service_rating or feeder_ampacity (or record the project service with set_service)".into(),
                ))
            }
        };
        let mut new_loads: Vec<Appliance> = a
            .new_loads
            .iter()
            .map(|l| Appliance {
                description: l.description.clone(),
                va: l.va,
                volts: voltage,
            })
            .collect();
        let from_circuits = circuit_loads(project.as_ref(), &a.new_circuits, "new circuit")?;
        let circuits_used: Vec<String> = from_circuits
            .iter()
            .map(|c| c.description.clone())
            .collect();
        new_loads.extend(from_circuits);
        let r = existing_demand::existing_load_from_demand(&ExistingDemandInput {
            edition,
            data,
            unit: match a.demand_unit {
                Some(UnitArg::Kva) => DemandUnit::Kva,
                Some(UnitArg::A) => DemandUnit::A,
                Some(UnitArg::Kw) | None => DemandUnit::Kw,
            },
            power_factor: a.power_factor,
            voltage,
            three_phase: phase == Phase::Three,
            limit,
            limit_kind: kind,
            new_loads,
            renewable_or_peak_shaving: a.renewable_or_peak_shaving,
        })
        .map_err(nec_err)?;
        assumptions.extend(r.assumptions.iter().cloned());
        let verdict = match r.adequate {
            None => r.not_permitted_why.clone().unwrap_or_default(),
            Some(true) => format!(
                "adequate: {:.1} A ≤ {} A, {:.1} A spare",
                r.total_a, r.limit_a, r.spare_a
            ),
            Some(false) => format!(
                "not adequate: {:.1} A > {} A; over by {:.1} A",
                r.total_a, r.limit_a, -r.spare_a
            ),
        };
        Ok(json!({
            "edition": edition,
            "edition_basis": edition_basis,
            "data_basis": r.data_basis,
            "maximum_demand": r.maximum_demand,
            "demand_unit": r.unit,
            "maximum_month": r.maximum_month,
            "existing_a": round(r.existing_a, 1),
            "existing_125pct_a": round(r.existing_125_a, 1),
            "new_load_va": round(r.new_load_va, 0),
            "new_load_a": round(r.new_load_a, 1),
            "new_circuits": circuits_used,
            "total_a": round(r.total_a, 1),
            "limit_a": r.limit_a,
            "limit": match r.limit_kind {
                Limit::Service => "service rating",
                Limit::Feeder => "feeder ampacity",
            },
            "permitted": r.permitted,
            "adequate": r.adequate,
            "spare_a": round(r.spare_a, 1),
            "verdict": verdict,
            "references": r.references,
            "reviewer_checks": r.reviewer_checks,
            "assumptions": assumptions,
        }))
    }
}
