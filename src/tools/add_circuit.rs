//! `add_circuit`: adds a branch circuit, its breaker and conductor suggested by the NEC engine
//! when not given.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::plan_preview::{circuit_result_lines, plan_item};
use super::schema::schema_for;
use super::{nec_err, parse_args, ActionPreview, ToolContext, ToolError, ToolPlan, WriteTool};
use crate::nec::conductors;
use crate::nec::tables::{self, DeviceKind, MotorOcpdType};
use crate::nec::units::{Amps, ConductorSize, Edition, Feet, Material, TempRating, VoltAmperes};
use crate::project::analysis::{
    circuit_conductor_input, circuit_electrical, circuit_label, next_free_number, panel_ln_voltage,
    resolve_panel, spare_spaces, CircuitElectrical,
};
use crate::project::invariants::check_circuit_spec;
use crate::project::motor_circuit::{size_motor_circuit, MotorCircuitSizing};
use crate::project::plan::Change;
use crate::project::{
    ApplianceKind, ApplianceNameplate, Circuit, CircuitSpec, MotorLoad, Panel, ProjectData,
};

/// Identifies a circuit: panel + number, or words.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AddCircuitArgs {
    /// Panel to add it to.
    panel: String,
    /// Circuit (first slot) number, when the person named one; otherwise the next free number
    /// for its poles.
    #[serde(default)]
    number: Option<i32>,
    /// Poles: 1, 2 or 3 (default 1).
    #[serde(default)]
    #[schemars(range(min = 1, max = 3))]
    poles: Option<u8>,
    /// What it feeds.
    description: String,
    /// Connected load, VA (required unless `motor` is given: then V × table FLC).
    #[serde(default)]
    load_va: Option<VoltAmperes>,
    /// Load runs 3 h or more (125 % rule).
    #[serde(default)]
    continuous: bool,
    /// A motor on this circuit (hp, phase, voltage, device): the circuit is sized from the
    /// code — FLC from Tables 430.248/430.250 (not the nameplate), conductors 125 % of FLC
    /// (430.22), protection by Table 430.52 for the device (default inverse_time_breaker).
    #[serde(default)]
    motor: Option<MotorLoad>,
    /// The appliance it feeds (kind, nameplate VA), for the dwelling load calculations.
    #[serde(default)]
    appliance: Option<ApplianceArg>,
    /// Breaker rating, A, when the person named one; otherwise the NEC engine picks it (210.20(A),
    /// 240.6(A)).
    #[serde(default)]
    breaker: Option<Amps>,
    /// Conductor size alone (AWG or kcmil), when the person named one; otherwise the NEC engine
    /// picks the smallest passing 210.19(A) and 240.4 for the breaker.
    #[serde(default)]
    conductor_size: Option<ConductorSize>,
    /// Conductor material (default copper).
    #[serde(default)]
    material: Option<Material>,
    /// Insulation rating (default 75 °C).
    #[serde(default)]
    insulation: Option<TempRating>,
    /// One-way length, ft.
    #[serde(default)]
    length: Option<Feet>,
    /// Raceway or cable, and the EGC, as the person described them.
    #[serde(default)]
    conduit: Option<String>,
}

/// The appliance on a new circuit; its VA may come from `load_va` instead.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ApplianceArg {
    /// What the appliance is.
    kind: ApplianceKind,
    /// Nameplate VA (default: the circuit's load_va).
    #[serde(default)]
    va: Option<VoltAmperes>,
}

/// 625.41: an EVSE's breaker is at least 125 % of its load, so the most a breaker allows.
const EVSE_BREAKER_FACTOR: f64 = 1.25;

/// The circuit's load: given, the appliance or motor nameplate, or for an EV charger with
/// only a breaker the most that breaker may carry continuously (625.41), said in `notes`.
fn load_of(
    a: &AddCircuitArgs,
    motor: Option<&MotorCircuitSizing>,
    panel: &Panel,
    poles: u8,
    notes: &mut Vec<String>,
) -> Result<VoltAmperes, ToolError> {
    if let Some(v) = a.load_va {
        return Ok(v);
    }
    if let Some(m) = motor {
        return Ok(m.load_va);
    }
    match a.appliance {
        Some(ApplianceArg { va: Some(v), .. }) => {
            notes.push(format!("load: the appliance nameplate, {:.0} VA", v.0));
            Ok(v)
        }
        Some(ApplianceArg {
            kind: ApplianceKind::Evse,
            va: None,
        }) => {
            let breaker = a.breaker.ok_or_else(|| {
                ToolError::MissingData(
                    "an EV charger needs its nameplate (load_va, or amps × volts) or the breaker"
                        .into(),
                )
            })?;
            // Across the load: line-to-neutral on one pole, the panel's voltage otherwise.
            let volts = if poles == 1 {
                panel_ln_voltage(&panel.spec)
            } else {
                panel.spec.voltage.0
            };
            let amps = breaker.0 / EVSE_BREAKER_FACTOR;
            let va = amps * volts;
            notes.push(format!(
                "load: {va:.0} VA ({amps:.0} A × {volts:.0} V), the most a {:.0} A breaker allows an \
                 EV charger (625.41: breaker at least 125 % of its load); give the nameplate if it is less",
                breaker.0
            ));
            Ok(VoltAmperes(va))
        }
        _ => Err(ToolError::MissingData(
            "load_va is required (or give motor: hp, phase, voltage; for an EV charger, \
             appliance {kind: evse} with the breaker)"
                .into(),
        )),
    }
}

/// The circuit add_circuit will write, with the notes of what was suggested.
fn plan_add_circuit<'a>(
    p: &'a ProjectData,
    a: &AddCircuitArgs,
) -> Result<(&'a Panel, CircuitSpec, Vec<String>), ToolError> {
    let panel = resolve_panel(p, &a.panel)?;
    let circuits = p.circuits_of(panel.id);
    let motor_poles = a.motor.map(|m| match m.phase {
        crate::nec::units::Phase::Three => 3,
        crate::nec::units::Phase::Single if m.voltage.0 <= 150.0 => 1,
        crate::nec::units::Phase::Single => 2,
    });
    let poles = a.poles.or(motor_poles).unwrap_or(1);
    if !(1..=3).contains(&poles) {
        return Err(ToolError::InvalidArguments(format!(
            "poles must be 1, 2 or 3, not {poles}"
        )));
    }
    let mut notes = Vec::new();
    let number = match a.number {
        Some(n) => n,
        None => {
            let n = next_free_number(&panel.spec, &circuits, poles).ok_or_else(|| {
                ToolError::Conflict(format!(
                    "panel {} has no free space for a {poles}-pole circuit ({} spaces, {} spare)",
                    panel.spec.name,
                    panel.spec.spaces,
                    spare_spaces(&panel.spec, &circuits)
                ))
            })?;
            notes.push(format!("circuit number {n}: the next free space"));
            n
        }
    };
    let motor = match &a.motor {
        Some(m) => Some(
            size_motor_circuit(
                m,
                a.material.unwrap_or(Material::Copper),
                a.insulation.unwrap_or(TempRating::C75),
                p.project.edition,
            )
            .map_err(nec_err)?,
        ),
        None => None,
    };
    let load_va = load_of(a, motor.as_ref(), panel, poles, &mut notes)?;
    let appliance = a.appliance.map(|x| ApplianceNameplate {
        kind: x.kind,
        va: x.va.unwrap_or(load_va),
    });
    let evse = matches!(a.appliance, Some(x) if x.kind == ApplianceKind::Evse);
    if evse && !a.continuous {
        notes.push("continuous: an EV charger is a continuous load (625.41)".into());
    }
    let mut spec = CircuitSpec {
        number,
        poles,
        description: a.description.trim().to_string(),
        load_va,
        continuous: a.continuous || evse,
        breaker: a.breaker.unwrap_or(Amps(0.0)),
        conductor_size: a.conductor_size,
        material: a.material.unwrap_or(Material::Copper),
        insulation: a.insulation.unwrap_or(TempRating::C75),
        length: a.length,
        conduit: a.conduit.clone().unwrap_or_default(),
        motor: a.motor.map(|m| MotorLoad {
            device: Some(m.device.unwrap_or(MotorOcpdType::InverseTimeBreaker)),
            ..m
        }),
        appliance,
    };
    if a.material.is_none() {
        notes.push("material: copper (not given)".into());
    }
    if a.insulation.is_none() {
        notes.push("insulation: 75 °C (not given)".into());
    }
    if !(spec.load_va.0.is_finite() && spec.load_va.0 >= 0.0) {
        return Err(ToolError::InvalidArguments(format!(
            "load_va must be 0 or more, not {}",
            spec.load_va.0
        )));
    }
    if let Some(m) = &motor {
        apply_motor_sizing(&mut spec, m, a, &mut notes)?;
        check_circuit_spec(p, panel, &spec, None)?;
        return Ok((panel, spec, notes));
    }
    let e = circuit_electrical(&panel.spec, &spec)?;
    let (breaker, size, n) = suggest_breaker_and_conductor(
        &spec,
        &e,
        p.project.edition,
        a.breaker.is_some(),
        a.conductor_size.is_some(),
    )?;
    spec.breaker = breaker;
    spec.conductor_size = size;
    notes.extend(n);
    check_circuit_spec(p, panel, &spec, None)?;
    Ok((panel, spec, notes))
}

/// Fills breaker and conductor of a motor circuit from the code sizing, checks given values
/// against it, and says what was derived.
fn apply_motor_sizing(
    spec: &mut CircuitSpec,
    m: &MotorCircuitSizing,
    a: &AddCircuitArgs,
    notes: &mut Vec<String>,
) -> Result<(), ToolError> {
    let hp = a.motor.map(|x| x.hp).unwrap_or_default();
    notes.push(format!(
        "motor {hp} hp: FLC {} A from {} (not the nameplate, 430.6(A)(1)); load {:.0} VA",
        m.flc.0, m.flc_source, m.load_va.0
    ));
    notes.push(format!(
        "conductors at least 125 % × {} = {:.1} A (430.22), {} column (110.14(C)(1)): {} {}",
        m.flc.0, m.conductor_min_ampacity.0, m.terminal_column, m.conductor, spec.material
    ));
    let device = serde_json::to_value(m.device)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    match m.max_device_rating {
        Some(max) => notes.push(format!(
            "{device}: {} % × {} = {:.1} A (Table 430.52); maximum {} A (430.52(C)(1) Exception No. 1); 240.4(G) lets Article 430 protect the motor-circuit conductors",
            m.percent_of_flc, m.flc.0, m.calculated_max.0, max.0
        )),
        None => notes.push(format!(
            "{device}: an adjustable setting up to {} % × {} = {:.1} A (Table 430.52), part of a listed combination controller (430.52(C)(3))",
            m.percent_of_flc, m.flc.0, m.calculated_max.0
        )),
    }
    match (a.breaker, m.max_device_rating) {
        (Some(b), Some(max)) if b.0 > max.0 + 1e-9 => {
            return Err(ToolError::InvalidArguments(format!(
                "breaker {} A is above the {} A that 430.52 allows for this motor and device",
                b.0, max.0
            )))
        }
        (Some(b), _) => spec.breaker = b,
        (None, Some(max)) => {
            spec.breaker = max;
            notes.push(format!("breaker {} A: the 430.52 maximum", max.0));
        }
        (None, None) => {
            return Err(ToolError::MissingData(
                "an instantaneous-trip device has no standard rating: give breaker (the device's rating)".into(),
            ))
        }
    }
    match a.conductor_size {
        Some(c) if c < m.conductor => {
            return Err(ToolError::InvalidArguments(format!(
                "conductor {c} is below the {} that 430.22 requires ({:.1} A)",
                m.conductor, m.conductor_min_ampacity.0
            )))
        }
        Some(c) => spec.conductor_size = Some(c),
        None => spec.conductor_size = Some(m.conductor),
    }
    if a.continuous {
        notes.push("continuous is ignored for motors: 430.22 already applies 125 %".into());
        spec.continuous = false;
    }
    Ok(())
}

/// Adds a branch circuit.
pub struct AddCircuit;

#[async_trait]
impl WriteTool for AddCircuit {
    fn name(&self) -> &'static str {
        "add_circuit"
    }
    fn description(&self) -> &'static str {
        "Add a branch circuit to a panel: description, load_va, continuous, poles; number defaults to the \
         next free space. Send breaker, conductor_size, conduit and length only when the person gave \
         them: the NEC engine sizes the breaker and conductor (240.6(A), 310.16, 240.4). The preview \
         shows the circuit, the suggestions, the conductor check, minimum EGC, voltage drop (when \
         length is given), the panel load after, and the next free circuit number. Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<AddCircuitArgs>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let a: AddCircuitArgs = parse_args(args)?;
        let p = ctx.project().await?;
        let (panel, spec, notes) = plan_add_circuit(&p, &a)?;
        let others: Vec<&CircuitSpec> = p
            .circuits_of(panel.id)
            .into_iter()
            .map(|c| &c.spec)
            .collect();
        let mut details = vec![format!(
            "Breaker {} A, conductor {}, {}{}",
            spec.breaker.0,
            spec.conductor_size
                .map(|s| format!("{s} {}", spec.material))
                .unwrap_or_else(|| "not given".into()),
            spec.length
                .map(|l| format!("{} ft", l.0))
                .unwrap_or_else(|| "length not given".into()),
            if spec.conduit.is_empty() {
                String::new()
            } else {
                format!(", {}", spec.conduit)
            }
        )];
        details.extend(notes.iter().cloned());
        details.extend(circuit_result_lines(&p, panel, &spec, &others));
        let mut after = p.circuits_of(panel.id);
        let new = Circuit {
            id: -1,
            panel_id: panel.id,
            spec: spec.clone(),
        };
        after.push(&new);
        details.push(format!(
            "Spare spaces after: {}; next free circuit number after: {}",
            spare_spaces(&panel.spec, &after),
            next_free_number(&panel.spec, &after, 1)
                .map(|n| n.to_string())
                .unwrap_or_else(|| "none".into())
        ));
        Ok(ToolPlan {
            item: plan_item(
                vec![Change::AddCircuit {
                    panel_id: panel.id,
                    panel: panel.spec.clone(),
                    spec: spec.clone(),
                    panel_circuits: Some(
                        p.circuits_of(panel.id)
                            .into_iter()
                            .map(|c| c.spec.clone())
                            .collect(),
                    ),
                }],
                json!({ "panel": panel.spec.name, "notes": notes }),
            ),
            preview: ActionPreview {
                summary: format!(
                    "Add circuit {}: {} VA{}, {} A breaker",
                    circuit_label(&panel.spec, &spec),
                    spec.load_va.0,
                    if spec.continuous { " continuous" } else { "" },
                    spec.breaker.0
                ),
                details,
            },
        })
    }
}

/// Sizes a circuit's conductor and breaker the way add_circuit suggests them: breaker = the
/// next standard rating at or above 125 % continuous + noncontinuous (at least 15 A), conductor
/// = the smallest passing size for that breaker.
pub fn suggest_breaker_and_conductor(
    c: &CircuitSpec,
    e: &CircuitElectrical,
    edition: Edition,
    breaker_given: bool,
    size_given: bool,
) -> Result<(Amps, Option<ConductorSize>, Vec<String>), ToolError> {
    let mut notes = Vec::new();
    let load125 = if c.continuous {
        1.25 * e.current
    } else {
        e.current
    };
    let breaker = if breaker_given {
        c.breaker
    } else {
        if load125 <= 0.0 {
            return Err(ToolError::MissingData(
                "give `breaker`: with no load there is nothing to size it from".into(),
            ));
        }
        let b = tables::standard_rating_at_or_above(
            load125.max(15.0),
            edition,
            DeviceKind::CircuitBreaker,
        )
        .map_err(nec_err)?;
        notes.push(format!(
            "breaker {b} A suggested: next standard rating (240.6(A)) at or above {:.1} A{}",
            load125,
            if c.continuous {
                " (125 % of the continuous load, 210.20(A))"
            } else {
                ""
            }
        ));
        Amps(b)
    };
    let size = if size_given {
        c.conductor_size
    } else if e.current > 0.0 {
        let mut spec = c.clone();
        spec.breaker = breaker;
        let input = circuit_conductor_input(&spec, e, edition, None);
        let r = conductors::size_conductor(&input).map_err(nec_err)?;
        notes.push(format!(
            "conductor {} {} suggested: smallest size passing 210.19(A), 240.4 with a {} A breaker (terminals per 110.14(C)(1), 30 °C, 3 conductors)",
            r.size, c.material, breaker.0
        ));
        Some(r.size)
    } else {
        notes.push("no conductor size given and no load to size it from".into());
        None
    };
    Ok((breaker, size, notes))
}
