//! Query pack: find circuits the way people name them and describe a panel; plus the
//! project-aware calculations the NEC tools, the write previews and the inspection share
//! (circuit voltage and current, slots and phases, panel loading, fault current at each panel,
//! voltage drop of circuits and feeders).
//!
//! Panel slot convention (the usual panel schedule): odd numbers on the left, even on the
//! right, two slots per row; rows take phases A, B(, C) in turn. A multi-pole circuit numbered
//! `n` occupies `n`, `n + 2`, ... Nothing here invents a value: a calculation that needs a
//! number the project lacks returns [`AnalysisError::MissingData`] naming the equipment and the
//! missing field.

use std::collections::{BTreeSet, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::AnalysisError;
use crate::nec::conductors::ConductorSizingInput;
use crate::nec::fault_current::{self, FaultType, PointToPointInput, TransformerFaultInput};
use crate::nec::panel::{self, Connection, PanelInput, PanelLoad, PanelResult};
use crate::nec::tables::{ConduitMagnetism, DeviceKind, Stranding};
use crate::nec::units::{Amps, Edition, Feet, Phase, TempRating, Volts};
use crate::nec::voltage_drop::{self, KSource, VoltageDropInput, VoltageDropMethod};
use crate::nec::NecError;
use crate::project::{Circuit, CircuitSpec, Feeder, Panel, PanelSpec, ProjectData};

// ---------------------------------------------------------------------------------------------
// Errors and labels.

/// "LP-1 #5 (EV charger)": how people and findings name a circuit.
pub fn circuit_label(panel: &PanelSpec, c: &CircuitSpec) -> String {
    let poles = if c.poles > 1 {
        format!(" ({}-pole)", c.poles)
    } else {
        String::new()
    };
    if c.description.trim().is_empty() {
        format!("{} #{}{poles}", panel.name, c.number)
    } else {
        format!(
            "{} #{} ({}){poles}",
            panel.name,
            c.number,
            c.description.trim()
        )
    }
}

/// Whether `name` means the utility service.
pub fn is_service(name: &str) -> bool {
    matches!(
        name.trim().to_ascii_lowercase().as_str(),
        "service" | "utility" | "the service"
    )
}

fn list_names(names: impl Iterator<Item = String>) -> String {
    let v: Vec<String> = names.collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// A panel by name, or a NotFound error listing the panels there are.
pub fn resolve_panel<'a>(p: &'a ProjectData, name: &str) -> Result<&'a Panel, AnalysisError> {
    p.panel_by_name(name).ok_or_else(|| {
        AnalysisError::NotFound(format!(
            "there is no panel named '{}' in project {}; panels: {}",
            name.trim(),
            p.project.name,
            list_names(p.panels.iter().map(|x| x.spec.name.clone()))
        ))
    })
}

/// The panel when a name is given, or the only panel of a one-panel project.
pub fn panel_or_only<'a>(
    p: &'a ProjectData,
    name: Option<&str>,
) -> Result<&'a Panel, AnalysisError> {
    match name {
        Some(n) => resolve_panel(p, n),
        None if p.panels.len() == 1 => Ok(&p.panels[0]),
        None => Err(AnalysisError::Invalid(format!(
            "name the panel; project {} has {}",
            p.project.name,
            if p.panels.is_empty() {
                "no panels yet".to_string()
            } else {
                format!(
                    "panels {}",
                    list_names(p.panels.iter().map(|x| x.spec.name.clone()))
                )
            }
        ))),
    }
}

/// A feeder by name, or a NotFound error listing the feeders there are.
pub fn resolve_feeder<'a>(p: &'a ProjectData, name: &str) -> Result<&'a Feeder, AnalysisError> {
    p.feeders
        .iter()
        .find(|f| f.spec.name.eq_ignore_ascii_case(name.trim()))
        .ok_or_else(|| {
            AnalysisError::NotFound(format!(
                "there is no feeder named '{}'; feeders: {}",
                name.trim(),
                list_names(
                    p.feeders
                        .iter()
                        .map(|f| format!("{} ({} -> {})", f.spec.name, f.spec.from, f.spec.to))
                )
            ))
        })
}

// ---------------------------------------------------------------------------------------------
// Slots, phases, voltage and current of circuits.

/// Slots a circuit occupies.
pub fn slots(c: &CircuitSpec) -> impl Iterator<Item = i32> {
    let (n, poles) = (c.number, i32::from(c.poles.max(1)));
    (0..poles).map(move |k| n + 2 * k)
}

fn phase_count(panel: &PanelSpec) -> i32 {
    match panel.phase {
        Phase::Three => 3,
        Phase::Single => 2,
    }
}

/// Index (0 = A) of the phase a slot is on.
pub fn slot_phase(panel: &PanelSpec, slot: i32) -> usize {
    (((slot - 1).max(0) / 2) % phase_count(panel)) as usize
}

/// Phase letters a circuit is connected to ("A", "BC", "ABC").
pub fn phase_letters(panel: &PanelSpec, c: &CircuitSpec) -> String {
    let names = ['A', 'B', 'C'];
    slots(c).map(|s| names[slot_phase(panel, s)]).collect()
}

/// The panel-capacity connection of a circuit.
pub fn connection(panel: &PanelSpec, c: &CircuitSpec) -> Connection {
    let first = slot_phase(panel, c.number);
    match (c.poles, panel.phase, first) {
        (1, _, 0) | (0, _, 0) => Connection::A,
        (1, _, 1) | (0, _, 1) => Connection::B,
        (1, _, _) | (0, _, _) => Connection::C,
        (2, Phase::Single, _) => Connection::AB,
        (2, _, 0) => Connection::AB,
        (2, _, 1) => Connection::BC,
        (2, _, _) => Connection::CA,
        (_, Phase::Three, _) => Connection::ABC,
        // A 3-pole circuit in a single-phase panel is reported by the checks; treat as 2-pole.
        _ => Connection::AB,
    }
}

/// Line-to-neutral voltage of a panel.
pub fn panel_ln_voltage(panel: &PanelSpec) -> f64 {
    match panel.phase {
        Phase::Three => panel.voltage.0 / 3f64.sqrt(),
        // A single-phase panel at 150 V or less is taken as 2-wire (no neutral split).
        Phase::Single if panel.voltage.0 <= 150.0 => panel.voltage.0,
        Phase::Single => panel.voltage.0 / 2.0,
    }
}

/// Voltage, phases and current of a circuit as connected in its panel.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CircuitElectrical {
    /// Voltage across the load (line-to-neutral for 1-pole, line-to-line otherwise).
    pub volts: f64,
    /// 1 or 3 phases.
    pub phase: Phase,
    /// Load current, amperes.
    pub current: f64,
}

/// Voltage and current of a circuit; an error when its poles do not fit the panel.
pub fn circuit_electrical(
    panel: &PanelSpec,
    c: &CircuitSpec,
) -> Result<CircuitElectrical, AnalysisError> {
    let label = || circuit_label(panel, c);
    let (volts, phase) = match (c.poles, panel.phase) {
        (1, _) => (panel_ln_voltage(panel), Phase::Single),
        (2, _) => (panel.voltage.0, Phase::Single),
        (3, Phase::Three) => (panel.voltage.0, Phase::Three),
        (3, Phase::Single) => {
            return Err(AnalysisError::Invalid(format!(
                "{}: a 3-pole circuit needs a three-phase panel; {} is single-phase",
                label(),
                panel.name
            )))
        }
        (p, _) => {
            return Err(AnalysisError::Invalid(format!(
                "{}: poles must be 1, 2 or 3, not {p}",
                label()
            )))
        }
    };
    if !(volts.is_finite() && volts > 0.0) {
        return Err(AnalysisError::Invalid(format!(
            "panel {} has an impossible voltage {}",
            panel.name, panel.voltage.0
        )));
    }
    let va = c.load_va.0;
    let current = match phase {
        Phase::Three => va / (3f64.sqrt() * volts),
        Phase::Single => va / volts,
    };
    Ok(CircuitElectrical {
        volts,
        phase,
        current,
    })
}

/// Next free circuit number for a circuit of `poles` poles (all its slots free and inside the
/// panel's spaces), or `None` when it does not fit.
pub fn next_free_number(panel: &PanelSpec, circuits: &[&Circuit], poles: u8) -> Option<i32> {
    let used = used_slots(circuits);
    let spaces = i32::try_from(panel.spaces).unwrap_or(i32::MAX);
    let poles = i32::from(poles.max(1));
    (1..=spaces).find(|n| {
        (0..poles).all(|k| {
            let s = n + 2 * k;
            s <= spaces && !used.contains(&s)
        })
    })
}

fn used_slots(circuits: &[&Circuit]) -> BTreeSet<i32> {
    circuits.iter().flat_map(|c| slots(&c.spec)).collect()
}

/// Spaces of the panel not used by any circuit.
pub fn spare_spaces(panel: &PanelSpec, circuits: &[&Circuit]) -> u32 {
    let used = used_slots(circuits);
    let spaces = i32::try_from(panel.spaces).unwrap_or(i32::MAX);
    let inside = used.iter().filter(|s| **s >= 1 && **s <= spaces).count() as u32;
    panel.spaces.saturating_sub(inside)
}

/// Why a circuit cannot go where it is proposed (slot outside spaces or taken), if anything.
pub fn slot_conflict(
    panel: &PanelSpec,
    circuits: &[&Circuit],
    candidate: &CircuitSpec,
    ignore_id: Option<i64>,
) -> Option<String> {
    let spaces = i32::try_from(panel.spaces).unwrap_or(i32::MAX);
    if candidate.number < 1 {
        return Some(format!(
            "circuit number must be 1 or more, not {}",
            candidate.number
        ));
    }
    for s in slots(candidate) {
        if s > spaces {
            return Some(format!(
                "slot {s} is outside {}'s {} spaces",
                panel.name, panel.spaces
            ));
        }
        if let Some(other) = circuits
            .iter()
            .filter(|c| Some(c.id) != ignore_id)
            .find(|c| slots(&c.spec).any(|o| o == s))
        {
            return Some(format!(
                "slot {s} of {} is taken by {}",
                panel.name,
                circuit_label(panel, &other.spec)
            ));
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Panel loading.

/// The NEC engine's panel-capacity input for a panel and its circuits.
pub fn panel_input(panel: &PanelSpec, circuits: &[&CircuitSpec]) -> PanelInput {
    PanelInput {
        bus_rating: panel.bus_rating,
        main_rating: panel.main_breaker,
        main_100_percent_rated: false,
        voltage: panel.voltage,
        phase: panel.phase,
        loads: circuits
            .iter()
            .map(|c| PanelLoad {
                description: c.description.clone(),
                va: c.load_va.0,
                continuous: c.continuous,
                connection: connection(panel, c),
            })
            .collect(),
    }
}

/// Panel capacity of a panel with the given circuits; `None` when it has no load at all.
pub fn panel_loading(
    panel: &PanelSpec,
    circuits: &[&CircuitSpec],
) -> Result<Option<PanelResult>, AnalysisError> {
    if circuits.is_empty() {
        return Ok(None);
    }
    panel::panel_capacity(&panel_input(panel, circuits))
        .map(Some)
        .map_err(|e| AnalysisError::Invalid(format!("panel {}: {e}", panel.name)))
}

// ---------------------------------------------------------------------------------------------
// Fault current along the fed-from chain.

/// One step of the fault-current path from the source to a piece of equipment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultStep {
    /// Equipment the current is available at.
    pub at: String,
    /// How it was obtained.
    pub how: String,
    /// Available fault current, kA.
    pub fault_ka: f64,
}

/// Available fault current at a piece of equipment, with how it was found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultPath {
    /// Equipment.
    pub equipment: String,
    /// Available (bolted, symmetrical) fault current, kA.
    pub fault_ka: f64,
    /// Steps from the source, first to last.
    pub steps: Vec<FaultStep>,
    /// Assumptions made on the way.
    pub assumptions: Vec<String>,
    /// Why the figure is only an upper bound (a run whose impedance was left out), with what
    /// would give the exact figure; empty when every run on the way was reduced.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub upper_bound: Vec<String>,
}

/// Computes fault currents at equipment of a project, remembering what it found.
pub struct FaultCalculator<'a> {
    p: &'a ProjectData,
    memo: HashMap<String, Result<FaultPath, AnalysisError>>,
    impedance_tolerance: bool,
    upper_bound_when_c_unknown: bool,
}

impl<'a> FaultCalculator<'a> {
    /// A calculator over `p` (transformers at their nameplate %Z).
    pub fn new(p: &'a ProjectData) -> Self {
        Self {
            p,
            memo: HashMap::new(),
            impedance_tolerance: false,
            upper_bound_when_c_unknown: false,
        }
    }

    /// For interrupting-rating questions: a feeder without a published C value (and none
    /// recorded) is passed with no reduction and the result is labelled an upper bound, instead
    /// of stopping the chain. Never for arc flash, where a lower current can mean more energy.
    pub fn upper_bound_when_c_unknown(mut self) -> Self {
        self.upper_bound_when_c_unknown = true;
        self
    }

    /// Applies the −10 % transformer impedance tolerance along the chain (the worst case the
    /// published point-to-point practice uses), stated in each transformer step.
    pub fn with_impedance_tolerance(mut self, apply: bool) -> Self {
        self.impedance_tolerance = apply;
        self
    }

    /// Available fault current at the service, a transformer secondary or a panel.
    pub fn at(&mut self, equipment: &str) -> Result<FaultPath, AnalysisError> {
        let mut stack = Vec::new();
        self.at_inner(equipment, &mut stack)
    }

    fn at_inner(
        &mut self,
        equipment: &str,
        stack: &mut Vec<String>,
    ) -> Result<FaultPath, AnalysisError> {
        let key = equipment.trim().to_ascii_lowercase();
        if let Some(r) = self.memo.get(&key) {
            return r.clone();
        }
        if stack.contains(&key) {
            stack.push(key);
            return Err(AnalysisError::Invalid(format!(
                "the fed_from chain loops: {}",
                stack.join(" -> ")
            )));
        }
        stack.push(key.clone());
        let r = self.compute(equipment, stack);
        stack.pop();
        self.memo.insert(key, r.clone());
        r
    }

    fn compute(
        &mut self,
        equipment: &str,
        stack: &mut Vec<String>,
    ) -> Result<FaultPath, AnalysisError> {
        let p = self.p;
        if is_service(equipment) {
            let s = p.service.as_ref().ok_or_else(|| {
                AnalysisError::MissingData(
                    "the project has no service; record it with set_service (voltage, phases, rating, available fault current)".into(),
                )
            })?;
            let ka = s.available_fault_ka.ok_or_else(|| {
                AnalysisError::MissingData(
                    "the service has no available fault current (available_fault_ka); ask the utility for it and record it with set_service".into(),
                )
            })?;
            if !(ka.is_finite() && ka > 0.0) {
                return Err(AnalysisError::Invalid(format!(
                    "the service's available fault current {ka} kA is impossible"
                )));
            }
            return Ok(FaultPath {
                equipment: "service".into(),
                fault_ka: ka,
                steps: vec![FaultStep {
                    at: "service".into(),
                    how: "available fault current recorded for the service (from the utility)"
                        .into(),
                    fault_ka: ka,
                }],
                assumptions: Vec::new(),
                upper_bound: Vec::new(),
            });
        }
        if let Some(t) = p.transformer_by_name(equipment) {
            let r = fault_current::transformer_fault_current(&TransformerFaultInput {
                kva: t.spec.kva,
                secondary_voltage: t.spec.secondary_voltage,
                phase: t.spec.phase,
                percent_z: t.spec.impedance_percent,
                apply_impedance_tolerance: self.impedance_tolerance,
                motor_full_load_current: None,
            })
            .map_err(|e| AnalysisError::Invalid(format!("transformer {}: {e}", t.spec.name)))?;
            let z_note = if self.impedance_tolerance {
                "%Z reduced 10 % for the impedance tolerance (worst case)"
            } else {
                "nameplate %Z"
            };
            let ka = r.available_fault_current.0 / 1000.0;
            return Ok(FaultPath {
                equipment: t.spec.name.clone(),
                fault_ka: ka,
                steps: vec![FaultStep {
                    at: format!("{} secondary", t.spec.name),
                    how: format!(
                        "{} kVA, {} % Z{}, {} V: FLA {:.0} A × 100/%Z",
                        t.spec.kva,
                        t.spec.impedance_percent,
                        if self.impedance_tolerance { " × 0.9" } else { "" },
                        t.spec.secondary_voltage.0,
                        r.full_load_current.0
                    ),
                    fault_ka: ka,
                }],
                assumptions: vec![format!(
                    "transformer {}: unlimited primary fault current (an upper bound), {z_note}, no motor contribution",
                    t.spec.name
                )],
                upper_bound: Vec::new(),
            });
        }
        let panel = resolve_panel(p, equipment)?;
        let source = panel.spec.fed_from.as_deref().ok_or_else(|| {
            AnalysisError::MissingData(format!(
                "panel {} has no fed_from (service, a panel or a transformer); record what feeds it",
                panel.spec.name
            ))
        })?;
        if !is_service(source)
            && p.panel_by_name(source).is_none()
            && !p
                .transformers
                .iter()
                .any(|t| t.spec.name.eq_ignore_ascii_case(source.trim()))
        {
            return Err(AnalysisError::NotFound(format!(
                "panel {} is fed from '{source}', which is not the service, a panel or a transformer of the project",
                panel.spec.name
            )));
        }
        let mut path = self.at_inner(source, stack)?;
        let start_ka = path.fault_ka;
        let feeder = p.feeders.iter().find(|f| {
            f.spec.to.eq_ignore_ascii_case(panel.spec.name.trim())
                && f.spec.from.trim().eq_ignore_ascii_case(source.trim())
        });
        let (ka, how) = match feeder {
            Some(f) => match f.spec.length {
                Some(len) => {
                    let recorded_c = match (f.spec.c_value, f.spec.impedance_ohms_per_1000ft) {
                        (Some(c), _) => Some((c, "its recorded C value".to_string())),
                        (None, Some(z)) => Some((
                            fault_current::c_from_impedance(z).map_err(|e| {
                                AnalysisError::Invalid(format!("feeder {}: {e}", f.spec.name))
                            })?,
                            format!("C = 1000 / its recorded {z} Ω per 1000 ft"),
                        )),
                        (None, None) => None,
                    };
                    let r = fault_current::point_to_point(&PointToPointInput {
                        available_fault_current: Amps(start_ka * 1000.0),
                        voltage: panel.spec.voltage,
                        fault_type: match panel.spec.phase {
                            Phase::Three => FaultType::ThreePhase,
                            Phase::Single => FaultType::SinglePhaseLineToLine,
                        },
                        length: len,
                        size: f.spec.conductor_size,
                        material: f.spec.material,
                        conduit: f
                            .spec
                            .raceway
                            .map(|r| r.magnetism())
                            .unwrap_or(ConduitMagnetism::Nonmagnetic),
                        parallel_sets: u32::from(f.spec.sets.max(1)),
                        c_value: recorded_c.as_ref().map(|(c, _)| *c),
                        equipment_interrupting_rating: None,
                    });
                    match r {
                        Ok(r) => {
                            path.assumptions.push(match (&recorded_c, f.spec.raceway) {
                                (Some((_, how)), _) => {
                                    format!("feeder {}: {how}", f.spec.name)
                                }
                                (None, Some(rw)) => format!(
                                    "feeder {}: C value for its {rw} raceway{}",
                                    f.spec.name,
                                    r.c_value_lowest_published
                                        .map(|low| format!(
                                            " ({:.0}; published copies disagree, the lowest is {low:.0}: the higher C gives the higher fault current)",
                                            r.c_value
                                        ))
                                        .unwrap_or_default()
                                ),
                                (None, None) => format!(
                                    "feeder {}: nonmagnetic raceway C value (the higher fault current when the raceway is not recorded)",
                                    f.spec.name
                                ),
                            });
                            (
                                r.fault_current.0 / 1000.0,
                                format!(
                                    "point-to-point over feeder {} ({} × {} {} , {} ft, C {:.0}): f = {:.3}, M = {:.3}",
                                    f.spec.name,
                                    f.spec.sets.max(1),
                                    f.spec.conductor_size,
                                    f.spec.material,
                                    len.0,
                                    r.c_value,
                                    r.f,
                                    r.m
                                ),
                            )
                        }
                        Err(e @ NecError::NotVerified { .. })
                            if self.upper_bound_when_c_unknown =>
                        {
                            path.upper_bound.push(format!(
                                "feeder {}: {e}; its impedance is left out, so the figure from here on is the source's fault current (an upper bound). Record the feeder's c_value or impedance_ohms_per_1000ft for the exact figure",
                                f.spec.name
                            ));
                            (
                                start_ka,
                                format!(
                                    "feeder {}: no published C value for {} {}: no reduction (upper bound)",
                                    f.spec.name, f.spec.conductor_size, f.spec.material
                                ),
                            )
                        }
                        Err(e @ NecError::NotVerified { .. }) => {
                            return Err(AnalysisError::MissingData(format!(
                                "feeder {}: {e}",
                                f.spec.name
                            )))
                        }
                        Err(e) => {
                            return Err(AnalysisError::Invalid(format!(
                                "feeder {}: {e}",
                                f.spec.name
                            )))
                        }
                    }
                }
                None => {
                    path.assumptions.push(format!(
                        "feeder {} has no length: the fault current at {} is taken as at its source (conservative)",
                        f.spec.name, panel.spec.name
                    ));
                    path.upper_bound.push(format!(
                        "feeder {} has no length: its impedance is left out (an upper bound); record its one-way length for the exact figure",
                        f.spec.name
                    ));
                    (
                        start_ka,
                        format!("feeder {} without a length: no reduction", f.spec.name),
                    )
                }
            },
            None => {
                path.assumptions.push(format!(
                    "no feeder recorded from {source} to {}: the fault current at its source is used (conservative)",
                    panel.spec.name
                ));
                (start_ka, "no feeder recorded: no reduction".to_string())
            }
        };
        path.steps.push(FaultStep {
            at: panel.spec.name.clone(),
            how,
            fault_ka: ka,
        });
        path.fault_ka = ka;
        path.equipment = panel.spec.name.clone();
        Ok(path)
    }
}

// ---------------------------------------------------------------------------------------------
// Voltage drop.

/// The K-factor (Chapter 9 Table 8, 75 °C, stranded) method used unless asked otherwise.
pub fn default_vd_method() -> VoltageDropMethod {
    VoltageDropMethod::KFactor {
        k: KSource::Table8,
        stranding: Stranding::Stranded,
    }
}

/// Voltage-drop input of a branch circuit; `length`, `current` and `size` override the
/// recorded values. The error names the circuit and what is missing.
pub fn circuit_vd_input(
    panel: &PanelSpec,
    c: &CircuitSpec,
    length: Option<Feet>,
    current: Option<Amps>,
    size: Option<crate::nec::units::ConductorSize>,
) -> Result<VoltageDropInput, AnalysisError> {
    let label = circuit_label(panel, c);
    let e = circuit_electrical(panel, c)?;
    let length = length.or(c.length).ok_or_else(|| {
        AnalysisError::MissingData(format!(
            "circuit {label} has no length; give `length` (one-way, ft) or record it with update_circuit"
        ))
    })?;
    let size = size.or(c.conductor_size).ok_or_else(|| {
        AnalysisError::MissingData(format!(
            "circuit {label} has no conductor size; give `size` or record it with update_circuit"
        ))
    })?;
    let current = match current {
        Some(i) => i.0,
        None if e.current > 0.0 => e.current,
        None => {
            return Err(AnalysisError::MissingData(format!(
                "circuit {label} has no load (0 VA); give `current` to calculate its voltage drop"
            )))
        }
    };
    Ok(VoltageDropInput {
        conductor_temp_c: None,
        phase: e.phase,
        source_voltage: Volts(e.volts),
        current: Amps(current),
        length,
        size,
        material: c.material,
        parallel_sets: 1,
        method: default_vd_method(),
    })
}

/// Voltage drop of a branch circuit by the K-factor method (Chapter 9 Table 8 K, 75 °C).
/// `length` and `current` override the recorded values.
pub fn circuit_voltage_drop(
    panel: &PanelSpec,
    c: &CircuitSpec,
    length: Option<Feet>,
    current: Option<Amps>,
) -> Result<voltage_drop::VoltageDropResult, AnalysisError> {
    let input = circuit_vd_input(panel, c, length, current, None)?;
    voltage_drop::voltage_drop(&input).map_err(|err| {
        AnalysisError::Invalid(format!("circuit {}: {err}", circuit_label(panel, c)))
    })
}

/// Load current of a feeder: the connected highest-phase current of the panel it feeds.
pub fn feeder_load_current(p: &ProjectData, f: &Feeder) -> Result<(f64, PanelSpec), AnalysisError> {
    let to = p.panel_by_name(&f.spec.to).ok_or_else(|| {
        AnalysisError::MissingData(format!(
            "feeder {} feeds '{}', which is not a panel of the project: its load is unknown; give `current`",
            f.spec.name, f.spec.to
        ))
    })?;
    let circuits: Vec<&CircuitSpec> = p.circuits_of(to.id).into_iter().map(|c| &c.spec).collect();
    let loading = panel_loading(&to.spec, &circuits)?.ok_or_else(|| {
        AnalysisError::MissingData(format!(
            "feeder {}: panel {} has no circuits, so its load is unknown; give `current`",
            f.spec.name, to.spec.name
        ))
    })?;
    Ok((loading.max_phase_amps_100pct, to.spec.clone()))
}

/// Voltage-drop input of a feeder at the load of the panel it feeds (or `current`).
pub fn feeder_vd_input(
    p: &ProjectData,
    f: &Feeder,
    length: Option<Feet>,
    current: Option<Amps>,
) -> Result<VoltageDropInput, AnalysisError> {
    let length = length.or(f.spec.length).ok_or_else(|| {
        AnalysisError::MissingData(format!(
            "feeder {} ({} -> {}) has no length; give `length` (one-way, ft)",
            f.spec.name, f.spec.from, f.spec.to
        ))
    })?;
    let (i, v, phase) = match (current, p.panel_by_name(&f.spec.to)) {
        (Some(i), Some(to)) => (i.0, to.spec.voltage.0, to.spec.phase),
        (Some(_), None) => {
            return Err(AnalysisError::MissingData(format!(
                "feeder {} feeds '{}', which is not a panel: its voltage is unknown",
                f.spec.name, f.spec.to
            )))
        }
        (None, _) => {
            let (i, to) = feeder_load_current(p, f)?;
            (i, to.voltage.0, to.phase)
        }
    };
    Ok(VoltageDropInput {
        conductor_temp_c: None,
        phase,
        source_voltage: Volts(v),
        current: Amps(i),
        length,
        size: f.spec.conductor_size,
        material: f.spec.material,
        parallel_sets: u32::from(f.spec.sets.max(1)),
        method: feeder_vd_method(f),
    })
}

/// A feeder with a recorded raceway uses Chapter 9 Table 9 for that raceway (effective Z at
/// the table's 0.85 power factor); without one, the resistive Table 8 method.
pub fn feeder_vd_method(f: &Feeder) -> VoltageDropMethod {
    match f.spec.raceway {
        Some(r) => VoltageDropMethod::EffectiveZ {
            conduit: r.table9_conduit(),
            power_factor: 0.85,
        },
        None => default_vd_method(),
    }
}

/// Voltage drop of a feeder at the load of the panel it feeds (or `current`).
pub fn feeder_voltage_drop(
    p: &ProjectData,
    f: &Feeder,
    length: Option<Feet>,
    current: Option<Amps>,
) -> Result<voltage_drop::VoltageDropResult, AnalysisError> {
    let input = feeder_vd_input(p, f, length, current)?;
    voltage_drop::voltage_drop(&input)
        .map_err(|e| AnalysisError::Invalid(format!("feeder {}: {e}", f.spec.name)))
}

/// Feeder voltage drops from the service (or a transformer) to a panel: (feeder, percent)
/// for each feeder on the way, or why one is unknown.
pub fn feeder_drops_to_panel(
    p: &ProjectData,
    panel: &PanelSpec,
) -> Result<Vec<(String, f64)>, AnalysisError> {
    let mut out = Vec::new();
    let mut current = panel.clone();
    for _ in 0..32 {
        let Some(src) = current.fed_from.clone() else {
            break;
        };
        if let Some(f) = p.feeders.iter().find(|f| {
            f.spec.to.eq_ignore_ascii_case(current.name.trim())
                && f.spec.from.trim().eq_ignore_ascii_case(src.trim())
        }) {
            let r = feeder_voltage_drop(p, f, None, None)?;
            out.push((f.spec.name.clone(), r.percent));
        }
        match p.panel_by_name(&src) {
            Some(up) => current = up.spec.clone(),
            None => break,
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Naming circuits.

/// How a tool argument names a circuit.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct CircuitRef {
    /// Panel name.
    #[serde(default)]
    pub panel: Option<String>,
    /// Circuit number in the panel.
    #[serde(default)]
    pub number: Option<i32>,
    /// Words of the description ("the EV charger") or "LP-1 #5".
    #[serde(default)]
    pub description: Option<String>,
}

impl CircuitRef {
    /// Whether anything names a circuit.
    pub fn is_given(&self) -> bool {
        self.number.is_some() || self.description.is_some()
    }
}

const STOPWORDS: &[&str] = &[
    "the", "a", "an", "my", "our", "their", "circuit", "circuits", "ckt", "cct", "for", "of", "in",
    "on", "at", "to", "and", "with", "that", "which", "feeding", "feeds", "serving", "one",
    "branch", "panel", "please",
];

fn canonical(token: &str) -> String {
    let t = token.to_ascii_lowercase();
    let t = match t.as_str() {
        "evse" | "evcs" | "ev" => "ev",
        "receptacle" | "receptacles" | "recept" | "recepts" | "recep" | "recp" | "rcpt"
        | "outlet" | "outlets" | "plug" | "plugs" | "plugs/receptacles" => "receptacle",
        "light" | "lights" | "lighting" | "ltg" | "lite" | "lites" => "light",
        "refrigerator" | "refrig" | "fridge" | "ref" => "fridge",
        "htr" | "heater" | "heaters" => "heater",
        "bathroom" | "bathrooms" | "bath" | "baths" => "bath",
        "condenser" | "condensing" | "aircon" | "ac" | "a/c" => "ac",
        "dw" | "dishwasher" => "dishwasher",
        "micro" | "microwave" | "mw" => "microwave",
        "rtu" | "rooftop" => "rtu",
        other => other,
    };
    let t = t.to_string();
    // Plural to singular, crudely: "chargers" -> "charger", not "gas" or "glass".
    if t.len() > 3 && t.ends_with('s') && !t.ends_with("ss") {
        t[..t.len() - 1].to_string()
    } else {
        t
    }
}

/// Normalised words of a description or query.
pub fn tokens(text: &str) -> Vec<String> {
    let lower = text
        .to_ascii_lowercase()
        .replace("a/c", "ac")
        .replace("e.v.", "ev");
    lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty() && !STOPWORDS.contains(t))
        .flat_map(|t| match t {
            // Abbreviations of two words.
            "wh" => vec!["water".to_string(), "heater".to_string()],
            other => vec![canonical(other)],
        })
        .collect()
}

fn token_match(q: &str, d: &str) -> bool {
    q == d || (q.len() >= 3 && d.starts_with(q)) || (d.len() >= 4 && q.starts_with(d))
}

/// Fraction (0..=1) of the query's words found in the description.
pub fn match_score(query: &[String], description: &[String]) -> f64 {
    if query.is_empty() {
        return 0.0;
    }
    let hits = query
        .iter()
        .filter(|q| description.iter().any(|d| token_match(q, d)))
        .count();
    hits as f64 / query.len() as f64
}

/// Reads "LP-1 #5", "LP-1/5", "LP-1 circuit 5", "circuit 5 in LP-1" as (panel, number).
pub fn parse_panel_and_number<'a>(p: &'a ProjectData, text: &str) -> Option<(&'a Panel, i32)> {
    let t = text.trim().to_ascii_lowercase();
    let strip_num = |rest: &str| -> Option<i32> {
        let r = rest
            .trim()
            .trim_start_matches(['#', '/', '-', ':', ','])
            .trim();
        let r = r
            .strip_prefix("circuit")
            .or_else(|| r.strip_prefix("ckt"))
            .or_else(|| r.strip_prefix("cct"))
            .or_else(|| r.strip_prefix("number"))
            .or_else(|| r.strip_prefix("no."))
            .unwrap_or(r)
            .trim()
            .trim_start_matches(['#', '.'])
            .trim();
        if !r.is_empty() && r.chars().all(|c| c.is_ascii_digit()) {
            r.parse().ok()
        } else {
            None
        }
    };
    // Longest names first so "LP-10" is not read as "LP-1" + "0".
    let mut panels: Vec<&Panel> = p.panels.iter().collect();
    panels.sort_by_key(|x| std::cmp::Reverse(x.spec.name.len()));
    for panel in &panels {
        let name = panel.spec.name.trim().to_ascii_lowercase();
        let name_variants = [name.clone(), format!("panel {name}")];
        for n in &name_variants {
            if let Some(rest) = t.strip_prefix(n.as_str()) {
                if let Some(num) = strip_num(rest) {
                    return Some((panel, num));
                }
            }
            // "circuit 5 in LP-1"
            if let Some(head) = t.strip_suffix(n.as_str()) {
                let head = head
                    .trim()
                    .trim_end_matches(',')
                    .trim_end_matches(" panel")
                    .trim();
                let head = ["in", "on", "of", "at"]
                    .iter()
                    .find_map(|w| head.strip_suffix(&format!(" {w}")))
                    .unwrap_or(head);
                if let Some(num) = strip_num(head) {
                    return Some((panel, num));
                }
            }
        }
    }
    None
}

/// A circuit found by words, with its score.
#[derive(Debug, Clone)]
pub struct Candidate<'a> {
    /// Its panel.
    pub panel: &'a Panel,
    /// The circuit.
    pub circuit: &'a Circuit,
    /// 0..=1.
    pub score: f64,
}

/// Circuits whose descriptions match the words, best first (optionally within one panel).
pub fn search_circuits<'a>(
    p: &'a ProjectData,
    query: &str,
    panel: Option<&'a Panel>,
) -> Vec<Candidate<'a>> {
    let q = tokens(query);
    let panels: HashMap<i64, &Panel> = p.panels.iter().map(|x| (x.id, x)).collect();
    let order: HashMap<i64, usize> = p
        .panels
        .iter()
        .enumerate()
        .map(|(i, x)| (x.id, i))
        .collect();
    let mut v: Vec<Candidate<'a>> = p
        .circuits
        .iter()
        .filter(|c| panel.is_none_or(|x| x.id == c.panel_id))
        .filter_map(|c| {
            let pn = panels.get(&c.panel_id)?;
            let score = match_score(&q, &tokens(&c.spec.description));
            (score > 0.0).then_some(Candidate {
                panel: pn,
                circuit: c,
                score,
            })
        })
        .collect();
    v.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(order.get(&a.panel.id).cmp(&order.get(&b.panel.id)))
            .then(a.circuit.spec.number.cmp(&b.circuit.spec.number))
    });
    v
}

/// One circuit named by panel and number, by "LP-1 #5", or by description words; an error
/// says what was not found or which circuits are ambiguous. Notes say how it was matched.
pub fn resolve_circuit<'a>(
    p: &'a ProjectData,
    r: &CircuitRef,
) -> Result<(&'a Panel, &'a Circuit, Vec<String>), AnalysisError> {
    let panel = match &r.panel {
        Some(name) => Some(resolve_panel(p, name)?),
        None => None,
    };
    if let Some(number) = r.number {
        let panel = match panel {
            Some(x) => x,
            None => {
                let having: Vec<&Panel> = p
                    .panels
                    .iter()
                    .filter(|x| p.circuits_of(x.id).iter().any(|c| c.spec.number == number))
                    .collect();
                match having.as_slice() {
                    [one] => *one,
                    [] => {
                        return Err(AnalysisError::NotFound(format!(
                            "no panel has a circuit {number}"
                        )))
                    }
                    many => {
                        return Err(AnalysisError::Invalid(format!(
                            "circuit {number} exists in several panels ({}); name the panel",
                            list_names(many.iter().map(|x| x.spec.name.clone()))
                        )))
                    }
                }
            }
        };
        let circuits = p.circuits_of(panel.id);
        return circuits
            .iter()
            .find(|c| c.spec.number == number)
            .map(|c| (panel, *c, Vec::new()))
            .ok_or_else(|| {
                AnalysisError::NotFound(format!(
                    "panel {} has no circuit {number}; its circuits are {}",
                    panel.spec.name,
                    list_names(circuits.iter().map(|c| c.spec.number.to_string()))
                ))
            });
    }
    let Some(text) = r.description.as_deref().filter(|t| !t.trim().is_empty()) else {
        return Err(AnalysisError::Invalid(
            "name the circuit: panel and number, or words of its description".into(),
        ));
    };
    if let Some((pn, number)) = parse_panel_and_number(p, text) {
        return resolve_circuit(
            p,
            &CircuitRef {
                panel: Some(pn.spec.name.clone()),
                number: Some(number),
                description: None,
            },
        );
    }
    let found = search_circuits(p, text, panel);
    let Some(best) = found.first() else {
        return Err(AnalysisError::NotFound(format!(
            "no circuit{} matches '{}'; use find_circuits to list them",
            panel
                .map(|x| format!(" of panel {}", x.spec.name))
                .unwrap_or_default(),
            text.trim()
        )));
    };
    let top: Vec<&Candidate> = found
        .iter()
        .filter(|c| (c.score - best.score).abs() < 1e-9)
        .collect();
    if top.len() > 1 {
        return Err(AnalysisError::Invalid(format!(
            "'{}' matches {} circuits: {}; give the panel and number",
            text.trim(),
            top.len(),
            top.iter()
                .take(10)
                .map(|c| circuit_label(&c.panel.spec, &c.circuit.spec))
                .collect::<Vec<_>>()
                .join("; ")
        )));
    }
    let mut notes = vec![format!(
        "'{}' read as {}",
        text.trim(),
        circuit_label(&best.panel.spec, &best.circuit.spec)
    )];
    if best.score < 1.0 {
        notes.push("partial match: not every word was found in the description".into());
    }
    Ok((best.panel, best.circuit, notes))
}

// ---------------------------------------------------------------------------------------------
// Conductor sizing of a recorded circuit.

/// Whether a description reads as a multioutlet receptacle circuit (240.4(B)(1)).
fn is_receptacle_circuit(description: &str) -> bool {
    tokens(description).iter().any(|t| t == "receptacle")
}

/// The conductor-sizing input of a branch circuit at its calculated current.
pub fn circuit_conductor_input(
    c: &CircuitSpec,
    e: &CircuitElectrical,
    edition: Edition,
    terminal_rating: Option<TempRating>,
) -> ConductorSizingInput {
    let (cont, noncont) = if c.continuous {
        (e.current, 0.0)
    } else {
        (0.0, e.current)
    };
    ConductorSizingInput {
        continuous_load: Amps(cont),
        noncontinuous_load: Amps(noncont),
        material: c.material,
        insulation: c.insulation,
        terminal_rating,
        ambient_c: None,
        current_carrying_conductors: 3,
        ocpd_rating: Some(c.breaker),
        ocpd_device: DeviceKind::CircuitBreaker,
        multioutlet_receptacle_circuit: is_receptacle_circuit(&c.description),
        edition,
    }
}

/// Rounds for display.
pub fn round(v: f64, places: i32) -> f64 {
    let m = 10f64.powi(places);
    (v * m).round() / m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_match_the_way_people_say_them() {
        let q = tokens("the EV charger");
        assert_eq!(q, vec!["ev", "charger"]);
        assert_eq!(match_score(&q, &tokens("EVSE - garage chargers")), 1.0);
        assert_eq!(match_score(&q, &tokens("Kitchen receptacles")), 0.0);
        assert_eq!(
            match_score(
                &tokens("kitchen outlets"),
                &tokens("Kitchen counter receptacles")
            ),
            1.0
        );
        assert_eq!(match_score(&tokens("A/C"), &tokens("AC condenser")), 1.0);
    }

    #[test]
    fn phases_follow_the_slot_rows() {
        let panel = PanelSpec {
            name: "LP".into(),
            voltage: Volts(208.0),
            phase: Phase::Three,
            bus_rating: Amps(225.0),
            main_breaker: None,
            interrupting_rating_ka: None,
            fed_from: None,
            spaces: 42,
            location: String::new(),
        };
        let mut c = CircuitSpec {
            number: 1,
            poles: 1,
            description: String::new(),
            load_va: crate::nec::units::VoltAmperes(1200.0),
            continuous: false,
            breaker: Amps(20.0),
            conductor_size: None,
            material: crate::nec::units::Material::Copper,
            insulation: crate::nec::units::TempRating::C75,
            length: None,
            conduit: String::new(),
            motor: None,
            appliance: None,
        };
        assert_eq!(phase_letters(&panel, &c), "A");
        c.number = 2;
        assert_eq!(phase_letters(&panel, &c), "A");
        c.number = 3;
        assert_eq!(phase_letters(&panel, &c), "B");
        c.number = 5;
        c.poles = 3;
        assert_eq!(phase_letters(&panel, &c), "CAB");
        assert_eq!(connection(&panel, &c), Connection::ABC);
        c.poles = 2;
        c.number = 3;
        assert_eq!(connection(&panel, &c), Connection::BC);
        let e = circuit_electrical(&panel, &c).unwrap();
        assert_eq!(e.volts, 208.0);
        c.poles = 1;
        let e = circuit_electrical(&panel, &c).unwrap();
        assert!((e.volts - 120.09).abs() < 0.01);
    }
}
