//! `check_conductor_sizing`: checks or sizes conductors of a project circuit or feeder, or of
//! free inputs.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::nec_args::{circuit_ref, edition_of};
use super::schema::schema_for;
use super::{parse_args, to_value, Tool, ToolContext, ToolError};
use crate::nec::conductors::{self, ConductorSizingInput};
use crate::nec::grounding::{self, EgcInput};
use crate::nec::tables::{self, DeviceKind};
use crate::nec::units::{Amps, ConductorSize, Material, TempRating};
use crate::project::analysis::{
    circuit_conductor_input, circuit_electrical, circuit_label, feeder_load_current, panel_loading,
    resolve_circuit, resolve_feeder, resolve_panel, round,
};
use crate::project::circuit_protection::{protection_rule, MotorCircuitJudgement, ProtectionRule};
use crate::project::CircuitSpec;

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum DeviceArg {
    /// Inverse-time circuit breaker.
    Breaker,
    /// Fuse.
    Fuse,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SizingArgs {
    /// Panel of the circuit.
    #[serde(default)]
    panel: Option<String>,
    /// Circuit number.
    #[serde(default)]
    number: Option<i32>,
    /// Circuit by description words or "LP-1 #5".
    #[serde(default)]
    description: Option<String>,
    /// A feeder of the project by name.
    #[serde(default)]
    feeder: Option<String>,
    /// Free input: continuous load, A.
    #[serde(default)]
    continuous_load: Option<Amps>,
    /// Free input: noncontinuous load, A.
    #[serde(default)]
    noncontinuous_load: Option<Amps>,
    /// OCPD rating (free input or override); left out on free inputs, the engine picks one.
    #[serde(default)]
    ocpd: Option<Amps>,
    /// Conductor size to check (free input or override); left out, the smallest passing size is found.
    #[serde(default)]
    size: Option<ConductorSize>,
    /// Conductor material (free input or override).
    #[serde(default)]
    material: Option<Material>,
    /// Insulation rating (free input or override).
    #[serde(default)]
    insulation: Option<TempRating>,
    /// Lowest terminal rating; left out, 110.14(C)(1) decides (60 °C up to 100 A).
    #[serde(default)]
    terminal_rating: Option<TempRating>,
    /// Ambient temperature, °C (default 30).
    #[serde(default)]
    ambient_c: Option<f64>,
    /// Current-carrying conductors in the raceway (default 3).
    #[serde(default)]
    current_carrying_conductors: Option<u32>,
    /// OCPD kind (default breaker).
    #[serde(default)]
    device: Option<DeviceArg>,
    /// Multioutlet receptacle branch circuit (forbids the 240.4(B) next size up).
    #[serde(default)]
    multioutlet_receptacle_circuit: Option<bool>,
}

/// Checks or sizes conductors of a project circuit or feeder, or of free inputs.
pub struct CheckConductorSizing;

#[async_trait]
impl Tool for CheckConductorSizing {
    fn name(&self) -> &'static str {
        "check_conductor_sizing"
    }
    fn description(&self) -> &'static str {
        "Check (or size) the conductors of a project circuit (panel + number or description), a project \
         feeder, or free inputs: 125 % continuous + noncontinuous against the terminal-column ampacity, \
         corrected ampacity (ambient, conductor count), OCPD rules 210.20(A)/215.3, 240.4(B) and 240.4(D). \
         Also gives the smallest passing size and the minimum EGC (250.122, upsized per 250.122(B)). \
         Conditions not given (ambient 30 °C, 3 conductors, terminal rating per 110.14(C)(1)) are listed \
         as assumptions. A project circuit with a recorded motor is judged by Article 430 instead \
         (430.22 conductor, Table 430.52 device; 240.4(G))."
    }
    fn schema(&self) -> Value {
        schema_for::<SizingArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: SizingArgs = parse_args(&args)?;
        let edition = edition_of(ctx).await;
        let r = circuit_ref(&a.panel, a.number, &a.description);
        let mut notes: Vec<String> = Vec::new();
        let mut assumptions: Vec<String> = Vec::new();
        let (what, mut input, size, sets) = if let Some(name) = &a.feeder {
            let p = ctx.project().await?;
            let f = resolve_feeder(&p, name)?;
            let (cont, noncont) = match (a.continuous_load, a.noncontinuous_load) {
                (None, None) => {
                    let (_, to) = feeder_load_current(&p, f)?;
                    let panel = resolve_panel(&p, &to.name)?;
                    let specs: Vec<&CircuitSpec> = p
                        .circuits_of(panel.id)
                        .into_iter()
                        .map(|c| &c.spec)
                        .collect();
                    let l = panel_loading(&panel.spec, &specs)?.ok_or_else(|| {
                        ToolError::MissingData(format!("panel {} has no circuits", to.name))
                    })?;
                    let cont = ((l.max_phase_amps - l.max_phase_amps_100pct) / 0.25).max(0.0);
                    assumptions.push(format!(
                        "feeder load = connected highest-phase load of panel {} ({:.1} A, of which {:.1} A continuous); no Article 220 demand factors applied",
                        to.name, l.max_phase_amps_100pct, cont
                    ));
                    (cont, (l.max_phase_amps_100pct - cont).max(0.0))
                }
                (c, n) => (c.map(|x| x.0).unwrap_or(0.0), n.map(|x| x.0).unwrap_or(0.0)),
            };
            let sets = u32::from(f.spec.sets.max(1));
            if sets > 1 {
                assumptions.push(format!(
                    "{sets} parallel sets: each set checked for 1/{sets} of the load and of the OCPD"
                ));
            }
            let n = f64::from(sets);
            (
                format!("feeder {} ({} -> {})", f.spec.name, f.spec.from, f.spec.to),
                ConductorSizingInput {
                    continuous_load: Amps(cont / n),
                    noncontinuous_load: Amps(noncont / n),
                    material: f.spec.material,
                    insulation: f.spec.insulation,
                    terminal_rating: None,
                    ambient_c: None,
                    current_carrying_conductors: 3,
                    ocpd_rating: Some(Amps(f.spec.ocpd.0 / n)),
                    ocpd_device: DeviceKind::CircuitBreaker,
                    multioutlet_receptacle_circuit: false,
                    edition,
                },
                Some(f.spec.conductor_size),
                sets,
            )
        } else if r.is_given() {
            let p = ctx.project().await?;
            let (panel, c, n) = resolve_circuit(&p, &r)?;
            notes.extend(n);
            let label = circuit_label(&panel.spec, &c.spec);
            // 240.4(G): a motor circuit is judged by Article 430, not by 240.4(D) and 210.20(A).
            if c.spec.motor.is_some()
                && a.continuous_load.is_none()
                && a.noncontinuous_load.is_none()
            {
                let mut spec = c.spec.clone();
                spec.conductor_size = a.size.or(spec.conductor_size);
                spec.breaker = a.ocpd.unwrap_or(spec.breaker);
                spec.material = a.material.unwrap_or(spec.material);
                spec.insulation = a.insulation.unwrap_or(spec.insulation);
                if let ProtectionRule::Motor(j) = protection_rule(&spec, edition) {
                    return Ok(motor_circuit_result(&label, &spec, &j, notes));
                }
            }
            let e = circuit_electrical(&panel.spec, &c.spec)?;
            if e.current <= 0.0 && a.continuous_load.is_none() && a.noncontinuous_load.is_none() {
                return Err(ToolError::MissingData(format!(
                    "circuit {label} has no load (0 VA); give continuous_load or noncontinuous_load"
                )));
            }
            assumptions.push(format!(
                "load {:.2} A = {} VA / {:.0} V{}",
                e.current,
                c.spec.load_va.0,
                e.volts,
                if c.spec.continuous {
                    ", continuous"
                } else {
                    ", noncontinuous"
                }
            ));
            if c.spec.conductor_size.is_none() && a.size.is_none() {
                notes.push(format!(
                    "circuit {label} has no conductor size recorded: the smallest passing size is given instead"
                ));
            }
            let mut input = circuit_conductor_input(&c.spec, &e, edition, None);
            if input.multioutlet_receptacle_circuit && a.multioutlet_receptacle_circuit.is_none() {
                assumptions.push(
                    "the description names receptacles: treated as a multioutlet receptacle circuit (no 240.4(B) next size up)".into(),
                );
            }
            if let Some(x) = a.continuous_load {
                input.continuous_load = x;
            }
            if let Some(x) = a.noncontinuous_load {
                input.noncontinuous_load = x;
            }
            (label, input, a.size.or(c.spec.conductor_size), 1)
        } else {
            if a.continuous_load.is_none() && a.noncontinuous_load.is_none() {
                return Err(ToolError::InvalidArguments(
                    "name a circuit (panel + number, or description), a feeder, or give continuous_load and/or noncontinuous_load".into(),
                ));
            }
            if a.material.is_none() {
                assumptions.push("material not given: copper".into());
            }
            if a.insulation.is_none() {
                assumptions.push("insulation not given: 75 °C".into());
            }
            (
                "free inputs".to_string(),
                ConductorSizingInput {
                    continuous_load: a.continuous_load.unwrap_or_default(),
                    noncontinuous_load: a.noncontinuous_load.unwrap_or_default(),
                    material: Material::Copper,
                    insulation: TempRating::C75,
                    terminal_rating: None,
                    ambient_c: None,
                    current_carrying_conductors: 3,
                    ocpd_rating: None,
                    ocpd_device: DeviceKind::CircuitBreaker,
                    multioutlet_receptacle_circuit: false,
                    edition,
                },
                a.size,
                1,
            )
        };
        if let Some(m) = a.material {
            input.material = m;
        }
        if let Some(i) = a.insulation {
            input.insulation = i;
        }
        if a.terminal_rating.is_some() {
            input.terminal_rating = a.terminal_rating;
        }
        if a.ambient_c.is_some() {
            input.ambient_c = a.ambient_c;
        }
        if let Some(n) = a.current_carrying_conductors {
            input.current_carrying_conductors = n;
        }
        if let Some(o) = a.ocpd {
            input.ocpd_rating = Some(Amps(o.0 / f64::from(sets)));
        }
        if let Some(d) = a.device {
            input.ocpd_device = match d {
                DeviceArg::Breaker => DeviceKind::CircuitBreaker,
                DeviceArg::Fuse => DeviceKind::Fuse,
            };
        }
        if let Some(m) = a.multioutlet_receptacle_circuit {
            input.multioutlet_receptacle_circuit = m;
        }
        let load125 = 1.25 * input.continuous_load.0 + input.noncontinuous_load.0;
        let n_sets = f64::from(sets);
        // The next standard OCPD at or above the whole load (all sets), then per set.
        let min_ocpd_total = tables::standard_rating_at_or_above(
            (load125 * n_sets).max(1.0),
            input.edition,
            input.ocpd_device,
        )
        .ok();
        let min_ocpd = min_ocpd_total.map(|m| m / n_sets);
        // 210.20(A) / 215.3: an OCPD below 125 % continuous + noncontinuous must be increased;
        // size the conductors for the increased OCPD instead.
        let ocpd_too_small =
            matches!((input.ocpd_rating, min_ocpd), (Some(o), Some(_)) if o.0 + 1e-9 < load125);
        let sized = if ocpd_too_small {
            let mut raised = input.clone();
            raised.ocpd_rating = min_ocpd.map(Amps);
            conductors::size_conductor(&raised)
        } else {
            conductors::size_conductor(&input)
        };
        let check = match size {
            Some(s) => Some(
                conductors::check_conductor(&input, s)
                    .map_err(|e| ToolError::InvalidArguments(format!("{what}: {e}")))?,
            ),
            None => None,
        };
        let minimum = sized.as_ref().ok().map(|r| r.size);
        let ocpd_for_egc = check
            .as_ref()
            .map(|c| c.ocpd_rating)
            .or_else(|| sized.as_ref().ok().map(|r| r.check.ocpd_rating))
            .map(|o| o * f64::from(sets));
        let egc = match ocpd_for_egc {
            Some(ocpd) => {
                let installed = size.or(minimum);
                grounding::egc_size(&EgcInput {
                    ocpd_rating: Amps(ocpd),
                    egc_material: input.material,
                    installed_size: installed,
                    minimum_size: match (installed, minimum) {
                        (Some(i), Some(m)) if i >= m => Some(m),
                        _ => None,
                    },
                    circuit_material: Some(input.material),
                })
                .map(|r| {
                    json!({
                        "size": r.size.to_string(),
                        "table_size": r.table_size.to_string(),
                        "upsize_ratio": r.upsize_ratio.map(|x| round(x, 3)),
                        "required_cmil": round(r.required_cmil, 0),
                        "references": r.references,
                        "assumptions": r.assumptions,
                    })
                })
                .unwrap_or_else(|e| json!({ "error": e.to_string() }))
            }
            None => Value::Null,
        };
        let sizing = match &sized {
            Ok(r) => json!({
                "smallest_passing_size": r.size.to_string(),
                "ocpd_a": r.check.ocpd_rating * f64::from(sets),
                "ocpd_chosen_by_engine": r.check.ocpd_chosen_by_engine,
                "rejected": r.rejected.iter().map(|(s, why)| json!({"size": s.to_string(), "why": why})).collect::<Vec<_>>(),
            }),
            Err(e) => json!({ "error": e.to_string() }),
        };
        if check.is_none() && sized.is_err() {
            return Err(sized
                .map(|_| ())
                .map_err(|e| ToolError::InvalidArguments(format!("{what}: {e}")))
                .err()
                .unwrap_or_else(|| ToolError::Failed(format!("{what}: no result"))));
        }
        let pass = check.as_ref().map(|c| c.pass);
        let fix = match (&check, &sized) {
            _ if ocpd_too_small => Some(format!(
                "the {} A OCPD is below 125 % of the continuous load + the noncontinuous load ({:.1} A): increase it to at least {} A (210.20(A) / 215.3){}",
                input.ocpd_rating.map(|o| o.0 * f64::from(sets)).unwrap_or_default(),
                load125 * f64::from(sets),
                min_ocpd_total.unwrap_or_default(),
                match &sized {
                    Ok(s) => format!(" with {} {} conductors or larger", s.size, input.material),
                    Err(_) => String::new(),
                }
            )),
            (Some(c), Ok(s)) if !c.pass => Some(format!(
                "use {} {} (smallest size that passes with a {} A OCPD) or reduce the OCPD",
                s.size,
                input.material,
                s.check.ocpd_rating * f64::from(sets)
            )),
            _ => None,
        };
        Ok(json!({
            "for": what,
            "size_checked": size.map(|s| s.to_string()),
            "pass": pass,
            "failed_rules": check.as_ref().map(|c| c.checks.iter().filter(|r| !r.pass).map(|r| json!({"rule": format!("NEC {}", r.rule), "detail": r.detail})).collect::<Vec<_>>()),
            "suggested_fix": fix,
            "load_125_percent_a": round(load125 * f64::from(sets), 2),
            "minimum_ocpd_a": min_ocpd_total,
            "check": check.as_ref().map(to_value).transpose()?,
            "sizing": sizing,
            "egc": egc,
            "assumptions": assumptions,
            "notes": notes,
        }))
    }
}

/// The `check_conductor_sizing` answer for a motor circuit: the Article 430 judgement.
fn motor_circuit_result(
    label: &str,
    spec: &CircuitSpec,
    j: &MotorCircuitJudgement,
    notes: Vec<String>,
) -> Value {
    let z = &j.sizing;
    let pass = !j
        .findings
        .iter()
        .any(|f| f.verdict == crate::project::circuit_protection::Verdict::Violation);
    json!({
        "for": label,
        "rule": "motor branch circuit: Article 430 protects the conductors (240.4(G)); 240.4(D) and 210.20(A) do not apply",
        "size_checked": spec.conductor_size.map(|s| s.to_string()),
        "ocpd_a": spec.breaker.0,
        "pass": pass,
        "findings": j.findings,
        "flc_a": z.flc.0,
        "flc_source": z.flc_source,
        "conductor_min_ampacity_a": round(z.conductor_min_ampacity.0, 2),
        "terminal_column": z.terminal_column.to_string(),
        "smallest_conductor": z.conductor.to_string(),
        "device": z.device,
        "percent_of_flc": z.percent_of_flc,
        "max_device_a": z.max_device_rating.map(|m| m.0),
        "exception_2_max_a": z.exception_2_max.map(|m| round(m.0, 1)),
        "references": z.references,
        "assumptions": if spec.motor.is_some_and(|m| m.device.is_none()) {
            vec!["device not recorded: inverse-time breaker"]
        } else {
            vec![]
        },
        "notes": notes,
    })
}
