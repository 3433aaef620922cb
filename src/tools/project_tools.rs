//! Project pack: tools that read or change the project's equipment.
//!
//! Every write tool plans the change and shows the resulting state; the core shows that plan
//! and applies it only after a person confirms.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::nec_err;
use super::nec_tools::{conductor_check_line, suggest_breaker_and_conductor};
use super::schema::schema_for;
use super::{
    parse_args, ActionPreview, Tool, ToolContext, ToolError, ToolPlan, ToolRegistry, WriteTool,
};
use crate::nec::tables::MotorOcpdType;
use crate::nec::units::{Amps, ConductorSize, Feet, Material, TempRating, VoltAmperes};
use crate::project::analysis::{
    circuit_electrical, circuit_label, circuit_voltage_drop, feeder_voltage_drop, next_free_number,
    panel_loading, phase_letters, resolve_circuit, resolve_panel, spare_spaces, CircuitRef,
    FaultCalculator,
};
use crate::project::energy::{budget, load_wh, source_wh};
use crate::project::invariants::{
    check_circuit_spec, check_feeder, check_load, check_panel_spec, check_service, check_source,
    check_transformer, source_voltage,
};
use crate::project::motor_circuit::{size_motor_circuit, MotorCircuitSizing};
use crate::project::plan::{Change, ItemPlan};
use crate::project::{
    AnalysisError, ApplianceNameplate, ChargingSourceSpec, Circuit, CircuitSpec, Feeder,
    FeederSpec, LoadItemSpec, MotorLoad, Panel, PanelSpec, ProjectData, ServiceSpec, Transformer,
    TransformerSpec,
};

/// Registers the project tools.
pub fn register(r: &mut ToolRegistry) {
    r.register_write(AddLoadItem);
    r.register_write(AddChargingSource);
    r.register(EnergyBudget);
    r.register_write(AddPanel);
    r.register_write(AddCircuit);
    r.register_write(UpdateCircuit);
    r.register_write(RemoveCircuit);
    r.register_write(SetService);
    r.register_write(AddFeeder);
    r.register_write(AddTransformer);
}

/// One call's plan: its changes and the fields its result adds (a JSON object).
pub(crate) fn plan_item(changes: Vec<Change>, result: Value) -> ItemPlan {
    ItemPlan {
        changes,
        result: match result {
            Value::Object(m) => m,
            _ => serde_json::Map::new(),
        },
    }
}

/// Adds a load to the energy budget.
pub struct AddLoadItem;

#[async_trait]
impl WriteTool for AddLoadItem {
    fn name(&self) -> &'static str {
        "add_load_item"
    }
    fn description(&self) -> &'static str {
        "Add a piece of equipment that uses energy to the project's load list (off-grid energy budget): \
         name, running watts, hours per day switched on, duty cycle (0-1, fraction of on-time it draws \
         power) and quantity; put your assumptions in notes. Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<LoadItemSpec>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let l: LoadItemSpec = parse_args(args)?;
        check_load(&l)?;
        let project = ctx.project().await?;
        let (used, produced) = budget(&project);
        let wh = load_wh(&l);
        Ok(ToolPlan {
            item: plan_item(
                vec![Change::AddLoadItem { spec: l.clone() }],
                json!({ "wh_per_day": wh }),
            ),
            preview: ActionPreview {
                summary: format!(
                    "Add load \"{}\": {} W × {} h/day × duty {:.0}%{}",
                    l.name,
                    l.watts.0,
                    l.hours_per_day,
                    l.duty_cycle * 100.0,
                    if l.quantity > 1 {
                        format!(" × {}", l.quantity)
                    } else {
                        String::new()
                    }
                ),
                details: vec![
                    format!("Energy: {wh:.0} Wh/day"),
                    format!(
                        "Daily load after: {:.0} Wh (production {:.0} Wh)",
                        used + wh,
                        produced
                    ),
                ],
            },
        })
    }
}

/// Adds a charging source to the energy budget.
pub struct AddChargingSource;

#[async_trait]
impl WriteTool for AddChargingSource {
    fn name(&self) -> &'static str {
        "add_charging_source"
    }
    fn description(&self) -> &'static str {
        "Add something that charges the battery bank (solar, alternator, shore, generator, wind, other): \
         name, kind, output watts, equivalent full-output hours per day (peak sun hours for solar) and \
         efficiency (0-1); put your assumptions in notes. Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<ChargingSourceSpec>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let s: ChargingSourceSpec = parse_args(args)?;
        check_source(&s)?;
        let project = ctx.project().await?;
        let (used, produced) = budget(&project);
        let wh = source_wh(&s);
        Ok(ToolPlan {
            item: plan_item(
                vec![Change::AddChargingSource { spec: s.clone() }],
                json!({ "wh_per_day": wh }),
            ),
            preview: ActionPreview {
                summary: format!(
                    "Add {} source \"{}\": {} W × {} h/day × {:.0}% efficiency",
                    s.kind,
                    s.name,
                    s.watts.0,
                    s.hours_per_day,
                    s.efficiency * 100.0
                ),
                details: vec![
                    format!("Energy: {wh:.0} Wh/day"),
                    format!(
                        "Daily production after: {:.0} Wh (load {:.0} Wh)",
                        produced + wh,
                        used
                    ),
                ],
            },
        })
    }
}

#[derive(Deserialize, JsonSchema)]
struct BudgetArgs {}

/// The daily energy balance of loads and charging sources.
pub struct EnergyBudget;

#[async_trait]
impl Tool for EnergyBudget {
    fn name(&self) -> &'static str {
        "energy_budget"
    }
    fn description(&self) -> &'static str {
        "Daily energy budget of the project: each load's and source's Wh/day, totals and the balance."
    }
    fn schema(&self) -> Value {
        schema_for::<BudgetArgs>()
    }
    async fn execute(&self, _args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let p = ctx.project().await?;
        let (used, produced) = budget(&p);
        let loads: Vec<Value> = p
            .loads
            .iter()
            .map(|l| json!({ "id": l.id, "name": l.spec.name, "wh_per_day": load_wh(&l.spec) }))
            .collect();
        let sources: Vec<Value> = p
            .charging_sources
            .iter()
            .map(|s| json!({ "id": s.id, "name": s.spec.name, "wh_per_day": source_wh(&s.spec) }))
            .collect();
        Ok(json!({
            "loads": loads,
            "sources": sources,
            "load_wh_per_day": used,
            "production_wh_per_day": produced,
            "balance_wh_per_day": produced - used,
        }))
    }
}

// ---------------------------------------------------------------------------------------------
// Equipment write tools: panels, circuits, service, feeders, transformers.
//
// Each tool plans against the current project: the exact rows, every default filled in. The
// gate stores that plan and applies it as stored.

fn describe_panel_spec(s: &PanelSpec) -> String {
    format!(
        "{} V {}-phase, {} A bus, {}, {} spaces{}{}",
        s.voltage.0,
        s.phase.count(),
        s.bus_rating.0,
        s.main_breaker
            .map(|m| format!("{} A main", m.0))
            .unwrap_or_else(|| "main lugs only".into()),
        s.spaces,
        s.interrupting_rating_ka
            .map(|k| format!(", {k} kA"))
            .unwrap_or_default(),
        s.fed_from
            .as_deref()
            .map(|f| format!(", fed from {f}"))
            .unwrap_or_default(),
    )
}

/// Fault-current line for a panel of a (possibly hypothetical) project.
fn fault_line(p: &ProjectData, panel: &PanelSpec) -> String {
    match FaultCalculator::new(p).at(&panel.name) {
        Ok(f) => match panel.interrupting_rating_ka {
            Some(r) if r + 1e-9 >= f.fault_ka => format!(
                "Available fault current at {}: {:.1} kA; its {r} kA rating is sufficient (110.9)",
                panel.name, f.fault_ka
            ),
            Some(r) => format!(
                "WARNING: available fault current at {} is {:.1} kA, above its {r} kA rating (110.9/110.10)",
                panel.name, f.fault_ka
            ),
            None => format!(
                "Available fault current at {}: {:.1} kA (no interrupting rating recorded to compare)",
                panel.name, f.fault_ka
            ),
        },
        Err(e) => format!("Fault current at {} unknown: {e}", panel.name),
    }
}

fn loading_line(panel: &PanelSpec, circuits: &[&CircuitSpec]) -> String {
    match panel_loading(panel, circuits) {
        Ok(Some(r)) => {
            let phases = r
                .phases
                .iter()
                .map(|x| format!("{} {:.0} VA", x.phase, x.connected_va))
                .collect::<Vec<_>>()
                .join(", ");
            format!(
                "{}: highest phase {:.1} A (continuous at 125 %) of {} A ({:.0} %){}; {phases}",
                panel.name,
                r.max_phase_amps,
                r.limiting_rating.0,
                r.max_phase_amps / r.limiting_rating.0 * 100.0,
                if r.pass {
                    ""
                } else {
                    " — OVERLOADED (408.30/215.3)"
                }
            )
        }
        Ok(None) => format!("{}: no load", panel.name),
        Err(e) => format!("{}: loading unknown ({e})", panel.name),
    }
}

/// Adds a panel.
pub struct AddPanel;

#[async_trait]
impl WriteTool for AddPanel {
    fn name(&self) -> &'static str {
        "add_panel"
    }
    fn description(&self) -> &'static str {
        "Add a panelboard: name, voltage (line to line), phase, bus_rating, main_breaker (omit for main \
         lugs only), interrupting_rating_ka, fed_from (service, a panel or a transformer), spaces, \
         location. The preview shows the panel, the available fault current at it and the interrupting \
         check. Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<PanelSpec>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let s: PanelSpec = parse_args(args)?;
        let p = ctx.project().await?;
        check_panel_spec(&p, &s, None)?;
        let mut after = p.clone();
        after.panels.push(Panel {
            id: -1,
            project_id: p.project.id,
            spec: s.clone(),
        });
        let mut details = vec![
            format!(
                "Project {} will have {} panel(s): {}",
                p.project.name,
                after.panels.len(),
                after
                    .panels
                    .iter()
                    .map(|x| x.spec.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            fault_line(&after, &s),
        ];
        if let Some(m) = s.main_breaker {
            if m.0 > s.bus_rating.0 {
                details.push(format!(
                    "WARNING: main {} A above bus {} A (408.36)",
                    m.0, s.bus_rating.0
                ));
            }
        }
        if let Some(v) = s.fed_from.as_deref().and_then(|f| source_voltage(&p, f)) {
            if (v - s.voltage.0).abs() > 1.0 {
                details.push(format!(
                    "WARNING: its source is {v} V but the panel is {} V; a transformer belongs between them",
                    s.voltage.0
                ));
            }
        }
        Ok(ToolPlan {
            item: plan_item(
                vec![Change::AddPanel {
                    spec: PanelSpec {
                        name: s.name.trim().to_string(),
                        ..s.clone()
                    },
                }],
                json!({}),
            ),
            preview: ActionPreview {
                summary: format!("Add panel {}: {}", s.name.trim(), describe_panel_spec(&s)),
                details,
            },
        })
    }
}

/// Identifies a circuit: panel + number, or words.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AddCircuitArgs {
    /// Panel to add it to.
    panel: String,
    /// Circuit (first slot) number; default: the next free number for its poles.
    #[serde(default)]
    number: Option<i32>,
    /// Poles: 1, 2 or 3 (default 1).
    #[serde(default)]
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
    /// Appliance nameplate (kind and VA) used by the dwelling load calculations.
    #[serde(default)]
    appliance: Option<ApplianceNameplate>,
    /// Breaker; default: suggested by the NEC engine (next standard rating ≥ 125 % cont. + noncont.).
    #[serde(default)]
    breaker: Option<Amps>,
    /// Conductor size; default: smallest size passing 210.19(A)/240.4 for the breaker.
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
    /// Raceway or cable, with the EGC if known ("3/4 PVC, #10 EGC").
    #[serde(default)]
    conduit: Option<String>,
}

/// Lines describing a circuit's state in its panel (shared by the circuit previews).
fn circuit_result_lines(
    p: &ProjectData,
    panel: &Panel,
    c: &CircuitSpec,
    others: &[&CircuitSpec],
) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(e) = circuit_electrical(&panel.spec, c) {
        out.push(format!(
            "Load: {:.1} A at {:.0} V ({})",
            e.current,
            e.volts,
            phase_letters(&panel.spec, c)
        ));
    }
    if let Some(line) = conductor_check_line(p, &panel.spec, c) {
        out.push(line);
    }
    if let Ok(egc) = crate::nec::tables::egc_for_ocpd(c.breaker.0, c.material) {
        out.push(format!("Minimum EGC (250.122): {egc} {}", c.material));
    }
    match circuit_voltage_drop(&panel.spec, c, None, None) {
        Ok(r) => out.push(format!(
            "Voltage drop: {:.2} % ({:.1} V){}",
            r.percent,
            r.voltage_drop.0,
            if r.percent > 3.0 {
                " — above the 3 % recommendation"
            } else {
                ""
            }
        )),
        Err(AnalysisError::MissingData(m)) if c.length.is_none() => {
            let _ = m;
            out.push("Voltage drop: unknown (no length)".into());
        }
        Err(e) => out.push(format!("Voltage drop: unknown ({e})")),
    }
    let mut all: Vec<&CircuitSpec> = others.to_vec();
    all.push(c);
    out.push(format!("Panel after: {}", loading_line(&panel.spec, &all)));
    out
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
    let load_va = match (a.load_va, &motor) {
        (Some(v), _) => v,
        (None, Some(m)) => m.load_va,
        (None, None) => {
            return Err(ToolError::MissingData(
                "load_va is required (or give motor: hp, phase, voltage)".into(),
            ))
        }
    };
    let mut spec = CircuitSpec {
        number,
        poles,
        description: a.description.trim().to_string(),
        load_va,
        continuous: a.continuous,
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
        appliance: a.appliance,
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
         next free space; breaker and conductor_size default to the NEC engine's suggestion (125 % \
         continuous, 240.6(A), 310.16, 240.4). The preview shows the circuit, the suggestions, the \
         conductor check, minimum EGC, voltage drop (when length is given), the panel load after, and the \
         next free circuit number. Needs confirmation."
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum ClearableField {
    /// Forget the conductor size.
    ConductorSize,
    /// Forget the length.
    Length,
    /// The circuit no longer supplies a motor.
    Motor,
    /// Forget the appliance nameplate.
    Appliance,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CircuitChanges {
    /// New circuit number (moves it in the panel).
    #[serde(default)]
    number: Option<i32>,
    /// New poles.
    #[serde(default)]
    poles: Option<u8>,
    /// New description.
    #[serde(default)]
    description: Option<String>,
    /// New load, VA.
    #[serde(default)]
    load_va: Option<VoltAmperes>,
    /// Continuous or not.
    #[serde(default)]
    continuous: Option<bool>,
    /// New breaker.
    #[serde(default)]
    breaker: Option<Amps>,
    /// New conductor size.
    #[serde(default)]
    conductor_size: Option<ConductorSize>,
    /// New material.
    #[serde(default)]
    material: Option<Material>,
    /// New insulation rating.
    #[serde(default)]
    insulation: Option<TempRating>,
    /// New one-way length, ft.
    #[serde(default)]
    length: Option<Feet>,
    /// New raceway text.
    #[serde(default)]
    conduit: Option<String>,
    /// The motor it supplies (run_inspection then judges it by 430.22/430.52).
    #[serde(default)]
    motor: Option<MotorLoad>,
    /// The appliance nameplate (read by calculate_dwelling_load).
    #[serde(default)]
    appliance: Option<ApplianceNameplate>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UpdateCircuitArgs {
    /// Panel of the circuit.
    #[serde(default)]
    panel: Option<String>,
    /// Circuit number.
    #[serde(default)]
    number: Option<i32>,
    /// Or: the circuit by description words ("the EV charger") or "LP-1 #5".
    #[serde(default)]
    find: Option<String>,
    /// Fields to change.
    #[serde(default)]
    changes: CircuitChanges,
    /// Fields to forget: conductor_size, length, motor, appliance.
    #[serde(default)]
    clear: Vec<ClearableField>,
}

fn fmt_opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| "—".into())
}

/// Before -> after lines for every field that changes.
pub(crate) fn field_changes(b: &CircuitSpec, a: &CircuitSpec) -> Vec<String> {
    let mut v = Vec::new();
    let mut line = |name: &str, before: String, after: String| {
        if before != after {
            v.push(format!("{name}: {before} -> {after}"));
        }
    };
    line("number", b.number.to_string(), a.number.to_string());
    line("poles", b.poles.to_string(), a.poles.to_string());
    line(
        "description",
        format!("\"{}\"", b.description),
        format!("\"{}\"", a.description),
    );
    line("load", b.load_va.to_string(), a.load_va.to_string());
    line(
        "continuous",
        b.continuous.to_string(),
        a.continuous.to_string(),
    );
    line("breaker", b.breaker.to_string(), a.breaker.to_string());
    line(
        "conductor",
        fmt_opt(&b.conductor_size),
        fmt_opt(&a.conductor_size),
    );
    line("material", b.material.to_string(), a.material.to_string());
    line(
        "insulation",
        b.insulation.to_string(),
        a.insulation.to_string(),
    );
    line("length", fmt_opt(&b.length), fmt_opt(&a.length));
    line(
        "raceway",
        format!("\"{}\"", b.conduit),
        format!("\"{}\"", a.conduit),
    );
    line("motor", motor_text(&b.motor), motor_text(&a.motor));
    line(
        "appliance",
        appliance_text(&b.appliance),
        appliance_text(&a.appliance),
    );
    v
}

fn motor_text(m: &Option<MotorLoad>) -> String {
    match m {
        None => "—".into(),
        Some(m) => format!(
            "{} hp {}-phase {} V{}",
            m.hp,
            m.phase.count(),
            m.voltage.0,
            m.device
                .and_then(|d| serde_json::to_value(d).ok())
                .and_then(|v| v.as_str().map(|s| format!(", {s}")))
                .unwrap_or_default()
        ),
    }
}

fn appliance_text(a: &Option<ApplianceNameplate>) -> String {
    match a {
        None => "—".into(),
        Some(a) => format!("{} {} VA", a.kind.as_str(), a.va.0),
    }
}

fn find_ref(panel: &Option<String>, number: Option<i32>, find: &Option<String>) -> CircuitRef {
    CircuitRef {
        panel: panel.clone(),
        number,
        description: find.clone(),
    }
}

/// The circuit before and after an update.
fn plan_update<'a>(
    p: &'a ProjectData,
    a: &UpdateCircuitArgs,
) -> Result<(&'a Panel, &'a Circuit, CircuitSpec, Vec<String>), ToolError> {
    let (panel, c, notes) = resolve_circuit(p, &find_ref(&a.panel, a.number, &a.find))?;
    let ch = &a.changes;
    let mut s = c.spec.clone();
    if let Some(x) = ch.number {
        s.number = x;
    }
    if let Some(x) = ch.poles {
        s.poles = x;
    }
    if let Some(x) = &ch.description {
        s.description = x.trim().to_string();
    }
    if let Some(x) = ch.load_va {
        s.load_va = x;
    }
    if let Some(x) = ch.continuous {
        s.continuous = x;
    }
    if let Some(x) = ch.breaker {
        s.breaker = x;
    }
    if let Some(x) = ch.conductor_size {
        s.conductor_size = Some(x);
    }
    if let Some(x) = ch.material {
        s.material = x;
    }
    if let Some(x) = ch.insulation {
        s.insulation = x;
    }
    if let Some(x) = ch.length {
        s.length = Some(x);
    }
    if let Some(x) = &ch.conduit {
        s.conduit = x.trim().to_string();
    }
    if let Some(x) = ch.motor {
        s.motor = Some(x);
    }
    if let Some(x) = ch.appliance {
        s.appliance = Some(x);
    }
    for f in &a.clear {
        match f {
            ClearableField::ConductorSize => s.conductor_size = None,
            ClearableField::Length => s.length = None,
            ClearableField::Motor => s.motor = None,
            ClearableField::Appliance => s.appliance = None,
        }
    }
    if s == c.spec {
        return Err(ToolError::InvalidArguments(format!(
            "nothing changes for {}: give `changes` (or `clear`) with new values",
            circuit_label(&panel.spec, &c.spec)
        )));
    }
    check_circuit_spec(p, panel, &s, Some(c.id))?;
    Ok((panel, c, s, notes))
}

/// Changes fields of a circuit.
pub struct UpdateCircuit;

#[async_trait]
impl WriteTool for UpdateCircuit {
    fn name(&self) -> &'static str {
        "update_circuit"
    }
    fn description(&self) -> &'static str {
        "Change a circuit, named by panel + number or by `find` words (\"the EV charger\"): `changes` holds \
         the new values (number, poles, description, load_va, continuous, breaker, conductor_size, material, \
         insulation, length, conduit, motor, appliance); `clear` forgets conductor_size, length, motor or \
         appliance. The preview shows every \
         field before -> after and the result (conductor check, voltage drop, panel load). Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<UpdateCircuitArgs>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let a: UpdateCircuitArgs = parse_args(args)?;
        let p = ctx.project().await?;
        let (panel, c, after, notes) = plan_update(&p, &a)?;
        let others: Vec<&CircuitSpec> = p
            .circuits_of(panel.id)
            .into_iter()
            .filter(|x| x.id != c.id)
            .map(|x| &x.spec)
            .collect();
        let mut details = field_changes(&c.spec, &after);
        details.extend(notes);
        details.extend(circuit_result_lines(&p, panel, &after, &others));
        Ok(ToolPlan {
            item: plan_item(
                vec![Change::UpdateCircuit {
                    circuit_id: c.id,
                    panel_id: panel.id,
                    panel: panel.spec.clone(),
                    before: c.spec.clone(),
                    after: after.clone(),
                }],
                json!({ "panel": panel.spec.name, "changes": field_changes(&c.spec, &after) }),
            ),
            preview: ActionPreview {
                summary: format!("Update {}", circuit_label(&panel.spec, &c.spec)),
                details,
            },
        })
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RemoveCircuitArgs {
    /// Panel of the circuit.
    #[serde(default)]
    panel: Option<String>,
    /// Circuit number.
    #[serde(default)]
    number: Option<i32>,
    /// Or: the circuit by description words or "LP-1 #5".
    #[serde(default)]
    find: Option<String>,
}

/// Removes a circuit.
pub struct RemoveCircuit;

#[async_trait]
impl WriteTool for RemoveCircuit {
    fn name(&self) -> &'static str {
        "remove_circuit"
    }
    fn description(&self) -> &'static str {
        "Remove a circuit, named by panel + number or by `find` words. The preview shows what is removed, \
         the panel load after and the spaces freed. Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<RemoveCircuitArgs>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let a: RemoveCircuitArgs = parse_args(args)?;
        let p = ctx.project().await?;
        let (panel, c, notes) = resolve_circuit(&p, &find_ref(&a.panel, a.number, &a.find))?;
        let rest: Vec<&Circuit> = p
            .circuits_of(panel.id)
            .into_iter()
            .filter(|x| x.id != c.id)
            .collect();
        let specs: Vec<&CircuitSpec> = rest.iter().map(|x| &x.spec).collect();
        let mut details = notes;
        details.push(format!(
            "Removed: {} VA, {} A breaker, {}",
            c.spec.load_va.0,
            c.spec.breaker.0,
            fmt_opt(&c.spec.conductor_size)
        ));
        details.push(format!(
            "Panel after: {}",
            loading_line(&panel.spec, &specs)
        ));
        details.push(format!(
            "Spare spaces after: {}; next free circuit number after: {}",
            spare_spaces(&panel.spec, &rest),
            next_free_number(&panel.spec, &rest, 1)
                .map(|n| n.to_string())
                .unwrap_or_else(|| "none".into())
        ));
        Ok(ToolPlan {
            item: plan_item(
                vec![Change::RemoveCircuit {
                    circuit_id: c.id,
                    panel_id: panel.id,
                    panel: panel.spec.name.clone(),
                    before: c.spec.clone(),
                }],
                json!({ "panel": panel.spec.name }),
            ),
            preview: ActionPreview {
                summary: format!("Remove circuit {}", circuit_label(&panel.spec, &c.spec)),
                details,
            },
        })
    }
}

fn describe_service(s: &ServiceSpec) -> String {
    format!(
        "{} V {}-phase, {} A{}",
        s.voltage.0,
        s.phase.count(),
        s.rating.0,
        s.available_fault_ka
            .map(|k| format!(", {k} kA available"))
            .unwrap_or_else(|| ", available fault current unknown".into())
    )
}

/// Sets the service.
pub struct SetService;

#[async_trait]
impl WriteTool for SetService {
    fn name(&self) -> &'static str {
        "set_service"
    }
    fn description(&self) -> &'static str {
        "Set the project's utility service: voltage (line to line), phase, rating, available_fault_ka (from \
         the utility), notes. The preview shows before -> after and the fault current and interrupting check \
         at every panel with the new service. Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<ServiceSpec>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let s: ServiceSpec = parse_args(args)?;
        check_service(&s)?;
        let p = ctx.project().await?;
        let mut details = vec![format!(
            "Before: {}",
            p.service
                .as_ref()
                .map(describe_service)
                .unwrap_or_else(|| "no service".into())
        )];
        details.push(format!("After: {}", describe_service(&s)));
        let mut after = p.clone();
        after.service = Some(s.clone());
        for panel in &after.panels {
            details.push(fault_line(&after, &panel.spec));
        }
        Ok(ToolPlan {
            item: plan_item(
                vec![Change::SetService {
                    before: p.service.clone(),
                    after: s.clone(),
                }],
                json!({}),
            ),
            preview: ActionPreview {
                summary: format!("Set the service: {}", describe_service(&s)),
                details,
            },
        })
    }
}

/// Adds a feeder.
pub struct AddFeeder;

#[async_trait]
impl WriteTool for AddFeeder {
    fn name(&self) -> &'static str {
        "add_feeder"
    }
    fn description(&self) -> &'static str {
        "Add a feeder (name, from, to, size, material, sets, length, ocpd, raceway, egc_size). \
         From and to name the service, a panel or a transformer; the raceway (steel, aluminum \
         or nonmetallic) picks the Chapter 9 Table 9 and point-to-point columns; egc_size is checked \
         against 250.122. The preview shows the ampacity against the OCPD, the 250.122 EGC, voltage \
         drop at the fed panel's load, and the fault current at the load end. Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<FeederSpec>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let f: FeederSpec = parse_args(args)?;
        let p = ctx.project().await?;
        check_feeder(&p, &f)?;
        let mut after = p.clone();
        let feeder = Feeder {
            id: -1,
            project_id: p.project.id,
            spec: f.clone(),
        };
        after.feeders.push(feeder.clone());
        let mut details = Vec::new();
        if let Ok(a) = crate::nec::tables::ampacity(
            f.conductor_size,
            f.material,
            f.insulation.min(TempRating::C75),
        ) {
            let total = a * f64::from(f.sets.max(1));
            details.push(format!(
                "Ampacity {total} A ({} × {} {} at {}) vs OCPD {} A{}",
                f.sets.max(1),
                f.conductor_size,
                f.material,
                f.insulation.min(TempRating::C75),
                f.ocpd.0,
                if total + 1e-9 < f.ocpd.0 {
                    " — the OCPD is above the ampacity (check 240.4(B))"
                } else {
                    ""
                }
            ));
        }
        if let Ok(c) = crate::project::feeder_egc::check_feeder_egc(&f, None) {
            details.push(format!(
                "EGC (250.122{}): at least {} {}{}",
                if c.required.upsize_ratio.is_some() {
                    ", increased per 250.122(B)"
                } else {
                    ""
                },
                c.required.size,
                f.material,
                match (c.installed, c.pass) {
                    (Some(e), Some(false)) => format!(" — the recorded {e} is too small"),
                    (Some(e), _) => format!("; recorded {e}"),
                    _ => "; not recorded".into(),
                }
            ));
        }
        match feeder_voltage_drop(&after, &feeder, None, None) {
            Ok(r) => details.push(format!(
                "Voltage drop at the load of {}: {:.2} % at {:.1} A",
                f.to, r.percent, r.input.current.0
            )),
            Err(e) => details.push(format!("Voltage drop unknown: {e}")),
        }
        if let Some(to) = after.panel_by_name(&f.to) {
            details.push(fault_line(&after, &to.spec));
        }
        Ok(ToolPlan {
            item: plan_item(
                vec![Change::AddFeeder {
                    spec: FeederSpec {
                        name: f.name.trim().to_string(),
                        ..f.clone()
                    },
                }],
                json!({}),
            ),
            preview: ActionPreview {
                summary: format!(
                    "Add feeder {}: {} -> {}, {} × {} {}, {} A OCPD{}",
                    f.name.trim(),
                    f.from,
                    f.to,
                    f.sets.max(1),
                    f.conductor_size,
                    f.material,
                    f.ocpd.0,
                    f.length
                        .map(|l| format!(", {} ft", l.0))
                        .unwrap_or_default()
                ),
                details,
            },
        })
    }
}

/// Adds a transformer.
pub struct AddTransformer;

#[async_trait]
impl WriteTool for AddTransformer {
    fn name(&self) -> &'static str {
        "add_transformer"
    }
    fn description(&self) -> &'static str {
        "Add a transformer: name, kva, primary_voltage, secondary_voltage, phase, impedance_percent \
         (nameplate), fed_from. The preview shows the secondary full-load current and the available fault \
         current at the secondary (unlimited primary). Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<TransformerSpec>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let t: TransformerSpec = parse_args(args)?;
        let p = ctx.project().await?;
        check_transformer(&p, &t)?;
        let mut after = p.clone();
        after.transformers.push(Transformer {
            id: -1,
            project_id: p.project.id,
            spec: t.clone(),
        });
        let mut details = Vec::new();
        match FaultCalculator::new(&after).at(&t.name) {
            Ok(f) => details.push(format!(
                "Available fault current at the secondary: {:.1} kA ({})",
                f.fault_ka,
                f.steps
                    .iter()
                    .map(|s| s.how.clone())
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
            Err(e) => details.push(format!("Fault current unknown: {e}")),
        }
        Ok(ToolPlan {
            item: plan_item(
                vec![Change::AddTransformer {
                    spec: TransformerSpec {
                        name: t.name.trim().to_string(),
                        ..t.clone()
                    },
                }],
                json!({}),
            ),
            preview: ActionPreview {
                summary: format!(
                    "Add transformer {}: {} kVA, {} V -> {} V {}-phase, {} % Z{}",
                    t.name.trim(),
                    t.kva,
                    t.primary_voltage.0,
                    t.secondary_voltage.0,
                    t.phase.count(),
                    t.impedance_percent,
                    t.fed_from
                        .as_deref()
                        .map(|f| format!(", fed from {f}"))
                        .unwrap_or_default()
                ),
                details,
            },
        })
    }
}
