//! The inputs of a dwelling service or feeder calculation read from a project's circuits: each
//! circuit's appliance nameplate (ranges, ovens and cooktops under 220.55, dryers under 220.54,
//! fastened-in-place appliances under 220.53, space heating and air conditioning for 220.60)
//! and its motor (full-load current from the NEC tables, for 25 % of the largest motor).
//! Every input names the circuit it came from; what had to be assumed, and the circuits that
//! could not be counted, are listed so the person can fix the data rather than trust a guess.

use std::collections::HashSet;

use serde::Serialize;

use super::equipment::ApplianceKind;
use super::{MotorLoad, Panel, PanelSpec, ProjectData};
use crate::nec::motors::{motor_flc, MotorInput};
use crate::nec::tables::MotorType;
use crate::nec::units::Phase;

/// How a dwelling calculation groups a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DwellingLoadKind {
    /// Appliance fastened in place (220.53).
    Fastened,
    /// Clothes dryer (220.54).
    Dryer,
    /// Household cooking appliance (220.55).
    Cooking,
    /// Fixed electric space heating (220.51).
    Heating,
    /// Electric heat used with a heat pump (220.82(C)(3)).
    SupplementalHeat,
    /// Air conditioning (220.60 noncoincident with heating).
    Cooling,
    /// Heat pump compressor.
    HeatPump,
    /// EV supply equipment (220.57).
    Evse,
}

/// One calculation input taken from a circuit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CircuitLoad {
    /// Database id of the circuit.
    pub circuit_id: i64,
    /// "HP #3 (Range)".
    pub circuit: String,
    /// The calculation input it feeds.
    pub kind: DwellingLoadKind,
    /// VA counted.
    pub va: f64,
    /// Voltage across the load (line-to-neutral for one pole): loads under 200 V load the
    /// neutral (220.61).
    pub volts: f64,
    /// VA counted for the 25 % of the largest motor, when it is a motor.
    pub motor_va: Option<f64>,
    /// Where the VA came from.
    pub basis: String,
}

/// What the circuits give a dwelling calculation.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DwellingCircuits {
    /// Panels read (the one asked for and those it feeds, or every panel).
    pub panels: Vec<String>,
    /// Inputs, one per circuit with a nameplate or a motor.
    pub loads: Vec<CircuitLoad>,
    /// Circuits with more than one pole and nothing recorded: not counted.
    pub not_counted: Vec<String>,
    /// One-pole circuits with nothing recorded, taken as covered by the 220.12/220.41 and
    /// 220.52 unit loads.
    pub general_circuits: usize,
    /// Space-heating circuits (each taken as one separately controlled unit for 220.82(C)).
    pub space_heating_circuits: u32,
    /// Assumptions made while reading the circuits.
    pub assumptions: Vec<String>,
    /// Loads a dwelling usually has that no circuit records.
    pub missing: Vec<String>,
}

fn ln_voltage(p: &PanelSpec) -> f64 {
    match p.phase {
        Phase::Three => p.voltage.0 / 3f64.sqrt(),
        Phase::Single if p.voltage.0 <= 150.0 => p.voltage.0,
        Phase::Single => p.voltage.0 / 2.0,
    }
}

fn label(p: &PanelSpec, number: i32, description: &str) -> String {
    if description.trim().is_empty() {
        format!("{} #{number}", p.name)
    } else {
        format!("{} #{number} ({})", p.name, description.trim())
    }
}

/// The panels `root` feeds, directly or through transformers and other panels, with `root`.
fn panels_fed_by<'a>(p: &'a ProjectData, root: &'a Panel) -> Vec<&'a Panel> {
    let mut names: HashSet<String> = HashSet::from([root.spec.name.trim().to_ascii_lowercase()]);
    let mut out = vec![root];
    loop {
        let fed = |from: &Option<String>| {
            from.as_deref()
                .is_some_and(|f| names.contains(&f.trim().to_ascii_lowercase()))
        };
        let mut added: Vec<String> = p
            .transformers
            .iter()
            .filter(|t| fed(&t.spec.fed_from))
            .map(|t| t.spec.name.trim().to_ascii_lowercase())
            .filter(|n| !names.contains(n))
            .collect();
        let panels: Vec<&Panel> = p
            .panels
            .iter()
            .filter(|x| fed(&x.spec.fed_from) && !out.iter().any(|o| o.id == x.id))
            .collect();
        added.extend(
            panels
                .iter()
                .map(|x| x.spec.name.trim().to_ascii_lowercase()),
        );
        out.extend(panels);
        if added.is_empty() {
            return out;
        }
        names.extend(added);
    }
}

/// VA of a motor at its table full-load current (V × FLC, × √3 for three-phase), with the
/// table it came from.
fn motor_table_va(m: &MotorLoad) -> Result<(f64, String), String> {
    let flc = motor_flc(&MotorInput {
        hp: m.hp,
        voltage: m.voltage,
        phase: m.phase,
        motor_type: match m.phase {
            Phase::Single => MotorType::SinglePhase,
            Phase::Three => MotorType::SquirrelCage,
        },
        synchronous_power_factor: None,
        nameplate_fla: None,
    })
    .map_err(|e| e.to_string())?;
    let va = match m.phase {
        Phase::Single => m.voltage.0 * flc.flc.0,
        Phase::Three => 3f64.sqrt() * m.voltage.0 * flc.flc.0,
    };
    Ok((
        va,
        format!(
            "{} hp {} V motor: {} FLC {} A × {} V{} = {va:.0} VA",
            m.hp,
            m.voltage.0,
            flc.table,
            flc.flc.0,
            m.voltage.0,
            if m.phase == Phase::Three {
                " × √3"
            } else {
                ""
            }
        ),
    ))
}

/// Reads the dwelling-calculation inputs from the circuits of `scope` and the panels it feeds
/// (every panel when `None`). Circuits whose ids are in `skip` are left out (the caller lists
/// them itself).
pub fn dwelling_loads_from_circuits(
    p: &ProjectData,
    scope: Option<&Panel>,
    skip: &[i64],
) -> DwellingCircuits {
    let panels: Vec<&Panel> = match scope {
        Some(root) => panels_fed_by(p, root),
        None => p.panels.iter().collect(),
    };
    let mut out = DwellingCircuits {
        panels: panels.iter().map(|x| x.spec.name.clone()).collect(),
        ..Default::default()
    };
    let has_heat_pump = panels.iter().any(|x| {
        p.circuits_of(x.id).iter().any(|c| {
            c.spec
                .appliance
                .is_some_and(|a| a.kind == ApplianceKind::HeatPump)
        })
    });
    for panel in &panels {
        for c in p.circuits_of(panel.id) {
            if skip.contains(&c.id) {
                continue;
            }
            let s = &c.spec;
            let name = label(&panel.spec, s.number, &s.description);
            let volts = if s.poles == 1 {
                ln_voltage(&panel.spec)
            } else {
                panel.spec.voltage.0
            };
            let motor = s.motor.as_ref().map(motor_table_va);
            match (&s.appliance, motor) {
                (Some(a), motor) => {
                    let kind = match a.kind {
                        ApplianceKind::Range | ApplianceKind::Cooktop | ApplianceKind::WallOven => {
                            DwellingLoadKind::Cooking
                        }
                        ApplianceKind::Dryer => DwellingLoadKind::Dryer,
                        ApplianceKind::WaterHeater
                        | ApplianceKind::Dishwasher
                        | ApplianceKind::Disposal
                        | ApplianceKind::Fastened => DwellingLoadKind::Fastened,
                        ApplianceKind::SpaceHeating if has_heat_pump => {
                            out.assumptions.push(format!(
                                "{name}: space heating in a house with a heat pump taken as its supplemental heat"
                            ));
                            DwellingLoadKind::SupplementalHeat
                        }
                        ApplianceKind::SpaceHeating => DwellingLoadKind::Heating,
                        ApplianceKind::AirConditioning => DwellingLoadKind::Cooling,
                        ApplianceKind::HeatPump => DwellingLoadKind::HeatPump,
                        ApplianceKind::Evse => DwellingLoadKind::Evse,
                    };
                    if a.kind == ApplianceKind::SpaceHeating {
                        out.space_heating_circuits += 1;
                    }
                    let mut basis = format!("appliance nameplate ({}) {} VA", a.kind.as_str(), a.va.0);
                    let motor_va = match motor {
                        Some(Ok((va, how))) => {
                            basis.push_str(&format!("; motor {how}"));
                            Some(va)
                        }
                        Some(Err(e)) => {
                            out.assumptions.push(format!(
                                "{name}: the recorded motor cannot be sized from the NEC tables ({e}); its nameplate VA is used for the largest motor"
                            ));
                            Some(a.va.0)
                        }
                        None if matches!(
                            a.kind,
                            ApplianceKind::Disposal
                                | ApplianceKind::AirConditioning
                                | ApplianceKind::HeatPump
                        ) =>
                        {
                            out.assumptions.push(format!(
                                "{name}: a {} is a motor load; no motor recorded, so its nameplate {} VA is used for the largest motor",
                                a.kind.as_str(),
                                a.va.0
                            ));
                            Some(a.va.0)
                        }
                        None => None,
                    };
                    out.loads.push(CircuitLoad {
                        circuit_id: c.id,
                        circuit: name,
                        kind,
                        va: a.va.0,
                        volts,
                        motor_va,
                        basis,
                    });
                }
                (None, Some(Ok((va, how)))) => {
                    out.assumptions.push(format!(
                        "{name}: a motor without an appliance nameplate, counted as an appliance fastened in place (220.53) at its table current"
                    ));
                    out.loads.push(CircuitLoad {
                        circuit_id: c.id,
                        circuit: name,
                        kind: DwellingLoadKind::Fastened,
                        va,
                        volts,
                        motor_va: Some(va),
                        basis: format!("motor {how}"),
                    });
                }
                (None, Some(Err(e))) => out.not_counted.push(format!(
                    "{name}: the recorded motor cannot be sized from the NEC tables ({e}); record its appliance nameplate"
                )),
                (None, None) if s.poles > 1 => out.not_counted.push(format!(
                    "{name}: {} VA on {} poles with no appliance nameplate or motor recorded; record the appliance (kind and VA) if it is a fixed load",
                    s.load_va.0, s.poles
                )),
                (None, None) => out.general_circuits += 1,
            }
        }
    }
    let has = |k: DwellingLoadKind| out.loads.iter().any(|l| l.kind == k);
    if !has(DwellingLoadKind::Cooking) {
        out.missing.push(
            "no range, oven or cooktop recorded: none counted under 220.55 (right only if cooking is not electric)".into(),
        );
    }
    if !has(DwellingLoadKind::Dryer) {
        out.missing.push(
            "no dryer recorded: none counted under 220.54 (an electric dryer counts at least 5000 VA)".into(),
        );
    }
    if ![
        DwellingLoadKind::Heating,
        DwellingLoadKind::SupplementalHeat,
        DwellingLoadKind::Cooling,
        DwellingLoadKind::HeatPump,
    ]
    .into_iter()
    .any(has)
    {
        out.missing.push(
            "no heating, air conditioning or heat pump recorded: none counted (220.60)".into(),
        );
    }
    if out.general_circuits > 0 {
        out.assumptions.push(format!(
            "{} one-pole circuit(s) with no appliance or motor recorded taken as general lighting, receptacle, small-appliance or laundry circuits, covered by the unit loads",
            out.general_circuits
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nec::units::{Amps, Edition, Material, TempRating, VoltAmperes, Volts};
    use crate::project::{
        ApplianceNameplate, Circuit, CircuitSpec, Project, Transformer, TransformerSpec, Workspace,
    };

    fn panel(id: i64, name: &str, fed_from: &str) -> Panel {
        Panel {
            id,
            project_id: 1,
            spec: PanelSpec {
                name: name.into(),
                voltage: Volts(240.0),
                phase: Phase::Single,
                bus_rating: Amps(200.0),
                main_breaker: None,
                interrupting_rating_ka: None,
                fed_from: Some(fed_from.into()),
                spaces: 42,
                location: String::new(),
            },
        }
    }

    fn circuit(
        id: i64,
        panel_id: i64,
        poles: u8,
        appliance: Option<(ApplianceKind, f64)>,
        motor: Option<MotorLoad>,
    ) -> Circuit {
        Circuit {
            id,
            panel_id,
            spec: CircuitSpec {
                number: id as i32,
                poles,
                description: format!("c{id}"),
                load_va: VoltAmperes(1000.0),
                continuous: false,
                breaker: Amps(20.0),
                conductor_size: None,
                material: Material::Copper,
                insulation: TempRating::C75,
                length: None,
                conduit: String::new(),
                motor,
                appliance: appliance.map(|(kind, va)| ApplianceNameplate {
                    kind,
                    va: VoltAmperes(va),
                }),
            },
        }
    }

    fn project(
        panels: Vec<Panel>,
        circuits: Vec<Circuit>,
        transformers: Vec<Transformer>,
    ) -> ProjectData {
        ProjectData {
            project: Project {
                id: 1,
                workspace: Workspace::local(),
                name: "House".into(),
                edition: Edition::Nec2023,
                confirm_policy: None,
                created_at: chrono::Utc::now(),
                site: Default::default(),
            },
            service: None,
            panels,
            circuits,
            feeders: vec![],
            transformers,
            loads: vec![],
            charging_sources: vec![],
            tasks: vec![],
        }
    }

    /// A panel's scope takes the panels it feeds, also through a transformer, and not its
    /// parent; every circuit lands in one input or one list, with the reason.
    #[test]
    fn scope_and_classification() {
        let disposer = MotorLoad {
            hp: 0.5,
            phase: Phase::Single,
            voltage: Volts(115.0),
            device: None,
        };
        let p = project(
            vec![
                panel(1, "MAIN", "service"),
                panel(2, "SUB", "MAIN"),
                panel(3, "SHOP", "T1"),
                panel(4, "OTHER", "service"),
            ],
            vec![
                circuit(10, 1, 2, Some((ApplianceKind::Range, 12_000.0)), None),
                circuit(11, 2, 1, None, Some(disposer)),
                circuit(12, 2, 2, None, None),
                circuit(13, 3, 1, None, None),
                circuit(
                    14,
                    3,
                    2,
                    Some((ApplianceKind::AirConditioning, 3600.0)),
                    None,
                ),
                circuit(15, 4, 2, Some((ApplianceKind::Dryer, 5000.0)), None),
            ],
            vec![Transformer {
                id: 7,
                project_id: 1,
                spec: TransformerSpec {
                    name: "T1".into(),
                    kva: 15.0,
                    primary_voltage: Volts(240.0),
                    secondary_voltage: Volts(240.0),
                    phase: Phase::Single,
                    impedance_percent: 3.0,
                    fed_from: Some("sub".into()),
                },
            }],
        );
        let main = p.panel_by_name("MAIN").unwrap();
        let r = dwelling_loads_from_circuits(&p, Some(main), &[]);
        assert_eq!(r.panels, ["MAIN", "SUB", "SHOP"]);
        assert_eq!(r.loads.len(), 3, "{r:#?}");
        // Table 430.248: ½ hp at 115 V is 9.8 A → 1127 VA, fastened in place and a motor.
        let d = r.loads.iter().find(|l| l.circuit_id == 11).unwrap();
        assert_eq!(d.kind, DwellingLoadKind::Fastened);
        assert!((d.va - 1127.0).abs() < 1e-6 && d.volts == 120.0, "{d:?}");
        assert!(d.basis.contains("430.248"), "{}", d.basis);
        let ac = r.loads.iter().find(|l| l.circuit_id == 14).unwrap();
        assert_eq!(
            (ac.kind, ac.motor_va),
            (DwellingLoadKind::Cooling, Some(3600.0))
        );
        assert_eq!(r.not_counted.len(), 1);
        assert!(r.not_counted[0].contains("SUB #12"), "{:?}", r.not_counted);
        assert_eq!(r.general_circuits, 1);
        assert!(r.missing.iter().any(|m| m.contains("dryer")));
        // Skipped circuits and the whole project.
        let r = dwelling_loads_from_circuits(&p, None, &[10]);
        assert_eq!(r.panels.len(), 4);
        assert!(r.loads.iter().all(|l| l.circuit_id != 10));
        assert!(r.missing.iter().any(|m| m.contains("range")));
        assert!(r.loads.iter().any(|l| l.kind == DwellingLoadKind::Dryer));
    }
}
