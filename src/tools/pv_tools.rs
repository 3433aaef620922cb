//! `check_pv_interconnection`: PV (or other interactive source) breakers on a busbar, 705.12,
//! from free inputs or a project panel (its bus rating, main breaker and circuit breakers).

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::nec_args::edition_and_basis;
use super::schema::schema_for;
use super::{nec_err, parse_args, to_value, Tool, ToolContext, ToolError, ToolRegistry};
use crate::nec::pv_interconnection::{
    self, FeederConnection, MainPosition, PvInterconnectionInput, Source, SourcePosition,
    TapConnection, TapRule,
};
use crate::nec::units::{Amps, Edition, Phase, Volts};
use crate::project::analysis::{resolve_circuit, resolve_panel, round, CircuitRef};

/// Registers the PV interconnection tool.
pub fn register(r: &mut ToolRegistry) {
    r.register(super::code_basis::WithCodeBasis(CheckPvInterconnection));
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum FedArg {
    End,
    Center,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum PositionArg {
    OppositeEnd,
    Other,
    Unknown,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum TapRuleArg {
    TenFoot,
    TwentyFiveFoot,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct InverterArg {
    #[serde(default)]
    description: String,
    /// Maximum continuous output current, A (datasheet); or give kw.
    #[serde(default)]
    output_a: Option<f64>,
    /// Rated AC output, kW (with voltage and phase).
    #[serde(default)]
    kw: Option<f64>,
    /// Default: the panel's, else 240.
    #[serde(default)]
    voltage: Option<Volts>,
    /// Default: the panel's, else 1.
    #[serde(default)]
    phase: Option<Phase>,
    /// Identical inverters on this one breaker (microinverters; default 1).
    #[serde(default)]
    count: Option<u32>,
    /// Breaker it lands on, A.
    #[serde(default)]
    breaker: Option<Amps>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FeederArg {
    ampacity: Amps,
    /// Primary source OCPD protecting the feeder, A.
    ocpd: Amps,
    /// Source connects at the end opposite that OCPD.
    #[serde(default)]
    at_opposite_end: bool,
    /// OCPD on the load side of the connection, A.
    #[serde(default)]
    load_side_ocpd: Option<Amps>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TapArg {
    ampacity: Amps,
    rule: TapRuleArg,
    /// OCPD protecting the feeder, A.
    feeder_ocpd: Amps,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PvArgs {
    /// Project panel: its bus rating, main breaker and circuit breakers.
    #[serde(default)]
    panel: Option<String>,
    /// Busbar rating, A (panel label).
    #[serde(default)]
    busbar_rating: Option<Amps>,
    /// Main breaker (OCPD protecting the busbar), A.
    #[serde(default)]
    main_breaker: Option<Amps>,
    /// One entry per PV breaker (none: only the limits).
    #[serde(default)]
    inverters: Vec<InverterArg>,
    /// end (default) or center (center-fed).
    #[serde(default)]
    main_position: Option<FedArg>,
    /// Where the PV breaker is: opposite_end (from the main; one end of a center-fed bus),
    /// other, unknown (default).
    #[serde(default)]
    pv_breaker_position: Option<PositionArg>,
    /// Panel is in a dwelling (center-fed option).
    #[serde(default)]
    dwelling: Option<bool>,
    /// Every other breaker on the busbar, A (default: the project panel's circuits).
    #[serde(default)]
    load_breakers: Option<Vec<Amps>>,
    /// Project circuit that is the PV breaker (not counted as a load).
    #[serde(default)]
    pv_circuit: Option<String>,
    /// Connection to a feeder instead.
    #[serde(default)]
    feeder: Option<FeederArg>,
    #[serde(default)]
    tap: Option<TapArg>,
    /// Supply-side note (2017): service rating, A (default the project's).
    #[serde(default)]
    service_rating: Option<Amps>,
    /// Supply-side note (2020/2023): service conductor ampacity, A.
    #[serde(default)]
    service_conductor_ampacity: Option<Amps>,
    /// 2017, 2020 or 2023 (default: the project's code in force).
    #[serde(default)]
    edition: Option<Edition>,
}

/// The inverter's continuous output current, from amperes or kW.
fn output_current(
    i: usize,
    inv: &InverterArg,
    voltage: f64,
    phase: Phase,
) -> Result<(f64, Option<String>), ToolError> {
    let count = f64::from(inv.count.unwrap_or(1).max(1));
    match (inv.output_a, inv.kw) {
        (Some(a), None) => Ok((a * count, None)),
        (None, Some(kw)) => {
            let v = inv.voltage.map(|v| v.0).unwrap_or(voltage);
            let ph = inv.phase.unwrap_or(phase);
            let a =
                pv_interconnection::inverter_current(kw, v, ph == Phase::Three).map_err(nec_err)?;
            Ok((
                a.0 * count,
                Some(format!(
                    "inverters[{i}]: {kw} kW at {v} V {}-phase = {:.2} A continuous output (use the datasheet's maximum continuous output current when it is higher)",
                    ph.count(),
                    a.0
                )),
            ))
        }
        (Some(_), Some(_)) => Err(ToolError::InvalidArguments(format!(
            "inverters[{i}]: give output_a or kw, not both"
        ))),
        (None, None) => Err(ToolError::InvalidArguments(format!(
            "inverters[{i}]: give output_a (maximum continuous output current) or kw"
        ))),
    }
}

/// 705.12 PV busbar interconnection.
pub struct CheckPvInterconnection;

#[async_trait]
impl Tool for CheckPvInterconnection {
    fn name(&self) -> &'static str {
        "check_pv_interconnection"
    }
    fn description(&self) -> &'static str {
        "Solar PV (or other inverter) backfeed breaker on a panel busbar, NEC 705.12 load-side \
         connection: 100 % rule, 120 % rule (PV breaker at the opposite end from the main), sum \
         of all breakers, center-fed dwelling panels; feeder and tap rules; supply-side (line-side \
         tap, 705.11) note. Inverter output current or kW → 125 % → minimum breaker; for each \
         option pass/fail, the numbers and the largest PV breaker and inverter it allows; labels \
         and what the reviewer still checks. Uses a project panel's bus rating, main and breakers."
    }
    fn schema(&self) -> Value {
        schema_for::<PvArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: PvArgs = parse_args(&args)?;
        let (edition, edition_basis) = edition_and_basis(ctx, a.edition).await;
        let mut assumptions: Vec<String> = Vec::new();
        let project = match ctx.project_id {
            Some(_) => Some(ctx.project().await?),
            None => None,
        };
        let panel = match (&a.panel, &project) {
            (Some(name), Some(p)) => Some(resolve_panel(p, name)?),
            (Some(name), None) => {
                return Err(ToolError::MissingData(format!(
                    "panel '{name}' needs a project bound to this conversation; give busbar_rating and main_breaker instead"
                )))
            }
            (None, _) => None,
        };
        let busbar = match (a.busbar_rating, panel) {
            (Some(b), _) => b,
            (None, Some(p)) => p.spec.bus_rating,
            (None, None) => {
                return Err(ToolError::MissingData(
                    "busbar_rating is required (the panelboard label), or name a project panel"
                        .into(),
                ))
            }
        };
        let main = match (a.main_breaker, panel) {
            (Some(m), _) => m,
            (None, Some(p)) => p.spec.main_breaker.ok_or_else(|| {
                ToolError::MissingData(format!(
                    "panel {} is main-lug only: give main_breaker, the rating of the OCPD that protects its busbar",
                    p.spec.name
                ))
            })?,
            (None, None) => {
                return Err(ToolError::MissingData(
                    "main_breaker is required (the OCPD protecting the busbar), or name a project panel".into(),
                ))
            }
        };
        let (voltage, phase) = match panel {
            Some(p) => (p.spec.voltage.0, p.spec.phase),
            None => (240.0, Phase::Single),
        };
        // The PV breaker recorded on the project, when named.
        let pv_circuit = match (&a.pv_circuit, &project) {
            (Some(name), Some(p)) => {
                let (pn, c, _) = resolve_circuit(
                    p,
                    &CircuitRef {
                        panel: a.panel.clone(),
                        number: None,
                        description: Some(name.clone()),
                    },
                )?;
                Some((pn.id, c.id, c.spec.breaker))
            }
            (Some(name), None) => {
                return Err(ToolError::MissingData(format!(
                    "pv_circuit '{name}' needs a project bound to this conversation"
                )))
            }
            (None, _) => None,
        };
        let mut sources = Vec::new();
        for (i, inv) in a.inverters.iter().enumerate() {
            let (current, note) = output_current(i, inv, voltage, phase)?;
            assumptions.extend(note);
            let breaker = match (inv.breaker, &pv_circuit) {
                (Some(b), _) => Some(b),
                (None, Some((_, _, b))) if a.inverters.len() == 1 => Some(*b),
                _ => None,
            };
            sources.push(Source {
                description: if inv.description.is_empty() {
                    format!("inverter {}", i + 1)
                } else {
                    inv.description.clone()
                },
                output_current: Amps(current),
                breaker,
            });
        }
        let load_breakers = match (&a.load_breakers, panel, &project) {
            (Some(b), _, _) => Some(b.clone()),
            (None, Some(pn), Some(p)) => {
                let skip = pv_circuit.map(|(_, id, _)| id);
                let list: Vec<Amps> = p
                    .circuits_of(pn.id)
                    .into_iter()
                    .filter(|c| Some(c.id) != skip)
                    .map(|c| c.spec.breaker)
                    .collect();
                assumptions.push(format!(
                    "sum of breakers: the {} circuit breaker(s) recorded on panel {}{}",
                    list.len(),
                    pn.spec.name,
                    if skip.is_some() {
                        ", without the PV circuit"
                    } else {
                        ""
                    }
                ));
                Some(list)
            }
            _ => None,
        };
        let service_rating = a.service_rating.or_else(|| {
            project
                .as_ref()
                .and_then(|p| p.service.as_ref().map(|s| s.rating))
        });
        if a.main_position.is_none() {
            assumptions.push("end-fed busbar (main_position not given)".into());
        }
        let r = pv_interconnection::pv_interconnection(&PvInterconnectionInput {
            edition,
            busbar_rating: busbar,
            main_ocpd: main,
            main_position: match a.main_position {
                Some(FedArg::Center) => MainPosition::Center,
                _ => MainPosition::End,
            },
            source_position: match a.pv_breaker_position {
                Some(PositionArg::OppositeEnd) => SourcePosition::OppositeEnd,
                Some(PositionArg::Other) => SourcePosition::Other,
                Some(PositionArg::Unknown) | None => SourcePosition::Unknown,
            },
            dwelling: a.dwelling,
            sources,
            load_breakers,
            feeder: a.feeder.as_ref().map(|f| FeederConnection {
                ampacity: f.ampacity,
                primary_ocpd: f.ocpd,
                at_opposite_end: f.at_opposite_end,
                load_side_ocpd: f.load_side_ocpd,
            }),
            tap: a.tap.as_ref().map(|t| TapConnection {
                ampacity: t.ampacity,
                rule: match t.rule {
                    TapRuleArg::TenFoot => TapRule::TenFoot,
                    TapRuleArg::TwentyFiveFoot => TapRule::TwentyFiveFoot,
                },
                feeder_ocpd: t.feeder_ocpd,
            }),
            service_rating,
            service_conductor_ampacity: a.service_conductor_ampacity,
        })
        .map_err(nec_err)?;
        assumptions.extend(r.assumptions.iter().cloned());
        let options: Vec<Value> = r
            .busbar_options
            .iter()
            .chain(&r.feeder_checks)
            .map(|o| {
                json!({
                    "option": o.option,
                    "reference": o.reference,
                    "applies": o.applies,
                    "passes": o.passes,
                    "sum_a": o.sum_a.map(|x| round(x, 2)),
                    "limit_a": o.limit_a.map(|x| round(x, 2)),
                    "max_pv_breaker_a": o.max_source_breaker_a,
                    "max_inverter_output_a": o.max_inverter_output_a.map(|x| round(x, 2)),
                    "max_125pct_output_a": o.max_source_125_a.map(|x| round(x, 2)),
                    "note": o.note,
                })
            })
            .collect();
        let verdict = if a.inverters.is_empty() {
            "no inverter given: the largest PV breaker and inverter output each option allows are listed".to_string()
        } else if r.passing.is_empty() {
            "no load-side option passes with these inputs: reduce the PV breaker, derate the main, use a supply-side connection or a power control system, or upgrade the panel".to_string()
        } else {
            format!("passes: {}", r.passing.join("; "))
        };
        let mut calc = to_value(&r)?;
        if let Some(o) = calc.as_object_mut() {
            o.remove("assumptions");
        }
        Ok(json!({
            "edition": edition,
            "edition_basis": edition_basis,
            "panel": panel.map(|p| p.spec.name.clone()),
            "busbar_rating_a": busbar.0,
            "main_breaker_a": main.0,
            "inverter_output_a": round(r.total_output_a, 2),
            "inverter_output_125pct_a": round(r.total_125_a, 2),
            "pv_breakers": r.sources.iter().map(|s| json!({
                "description": s.description,
                "output_a": round(s.output_current, 2),
                "min_breaker_a": s.minimum_breaker,
                "breaker_a": s.breaker,
                "breaker_ok": s.breaker_ok,
            })).collect::<Vec<_>>(),
            "verdict": verdict,
            "options": options,
            "supply_side": to_value(&r.supply_side)?,
            "reviewer_checks": r.reviewer_checks,
            "calculation": calc,
            "assumptions": assumptions,
        }))
    }
}
