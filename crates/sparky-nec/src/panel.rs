//! Panelboard capacity: continuous loads at 125 % plus noncontinuous loads against the bus and
//! main ratings (the "80 % rule" of 210.20(A) / 215.3 / 230.42(A) for standard-rated devices),
//! with per-phase loading and imbalance for three-phase and split-phase panels.

use serde::{Deserialize, Serialize};

use super::error::{non_negative, positive, NecError};
use super::units::{Amps, Phase, Volts};

/// Which phase conductors a load is connected to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Connection {
    /// Line A to neutral.
    A,
    /// Line B to neutral.
    B,
    /// Line C to neutral (three-phase panels only).
    C,
    /// A to B.
    AB,
    /// B to C (three-phase only).
    BC,
    /// C to A (three-phase only).
    CA,
    /// All three phases (three-phase only).
    ABC,
}

/// One load in the panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelLoad {
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Load in volt-amperes.
    pub va: f64,
    /// Continuous (3 h or more).
    #[serde(default)]
    pub continuous: bool,
    /// Connection.
    pub connection: Connection,
}

/// Inputs for a panel capacity check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelInput {
    /// Bus rating.
    pub bus_rating: Amps,
    /// Main overcurrent device rating (`None`: main-lug-only; give the feeder OCPD instead).
    #[serde(default)]
    pub main_rating: Option<Amps>,
    /// The main (or feeder) OCPD is listed for 100 % continuous operation.
    #[serde(default)]
    pub main_100_percent_rated: bool,
    /// Line-to-line voltage (240 for 120/240 V, 208 or 480 for wye systems).
    pub voltage: Volts,
    /// 1 (split-phase 3-wire) or 3 phases (4-wire wye).
    pub phase: Phase,
    /// Loads.
    pub loads: Vec<PanelLoad>,
}

/// Per-phase loading.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseLoading {
    /// Phase name.
    pub phase: String,
    /// Connected VA on this phase.
    pub connected_va: f64,
    /// VA with continuous loads at 125 %.
    pub design_va: f64,
    /// Current with continuous loads at 125 %.
    pub design_amps: f64,
}

/// Result of [`panel_capacity`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PanelResult {
    /// The inputs used.
    pub input: PanelInput,
    /// Total continuous VA.
    pub continuous_va: f64,
    /// Total noncontinuous VA.
    pub noncontinuous_va: f64,
    /// Per-phase loading.
    pub phases: Vec<PhaseLoading>,
    /// Highest phase current with continuous at 125 %.
    pub max_phase_amps: f64,
    /// Highest phase current with continuous at 100 % (used against a 100 %-rated main).
    pub max_phase_amps_100pct: f64,
    /// Imbalance: largest deviation from the average phase current, percent of the average.
    pub imbalance_percent: f64,
    /// Limit the design current was compared with (lower of bus and main).
    pub limiting_rating: Amps,
    /// Remaining capacity at the limiting rating, amperes.
    pub spare_amps: f64,
    /// Whether the bus and main ratings are sufficient.
    pub pass: bool,
    /// Findings, one per check.
    pub findings: Vec<String>,
    /// Method summary.
    pub method: String,
    /// References.
    pub references: Vec<String>,
    /// Assumptions made.
    pub assumptions: Vec<String>,
}

/// Checks panel loading against bus and main ratings and reports phase balance.
pub fn panel_capacity(input: &PanelInput) -> Result<PanelResult, NecError> {
    let bus = positive("bus_rating", input.bus_rating.0)?;
    let main = match input.main_rating {
        Some(m) => Some(positive("main_rating", m.0)?),
        None => None,
    };
    let v_ll = positive("voltage", input.voltage.0)?;
    if input.loads.is_empty() {
        return Err(NecError::MissingInput {
            field: "loads",
            reason: "list at least one load".into(),
        });
    }
    let three = input.phase == Phase::Three;
    let v_ln = if three {
        v_ll / 3f64.sqrt()
    } else {
        v_ll / 2.0
    };
    let n_phases = if three { 3 } else { 2 };
    let mut connected = vec![0.0; n_phases];
    let mut design = vec![0.0; n_phases];
    let (mut cont, mut noncont) = (0.0, 0.0);
    for (idx, l) in input.loads.iter().enumerate() {
        let va = non_negative("loads[].va", l.va)?;
        let shares: &[(usize, f64)] = match (l.connection, three) {
            (Connection::A, _) => &[(0, 1.0)],
            (Connection::B, _) => &[(1, 1.0)],
            (Connection::AB, _) => &[(0, 0.5), (1, 0.5)],
            (Connection::C, true) => &[(2, 1.0)],
            (Connection::BC, true) => &[(1, 0.5), (2, 0.5)],
            (Connection::CA, true) => &[(2, 0.5), (0, 0.5)],
            (Connection::ABC, true) => &[(0, 1.0 / 3.0), (1, 1.0 / 3.0), (2, 1.0 / 3.0)],
            (c, false) => {
                return Err(NecError::invalid(
                    "loads[].connection",
                    format!("{c:?} (load {})", idx + 1),
                    "a single-phase (split-phase) panel has only lines A and B",
                ))
            }
        };
        let factor = if l.continuous { 1.25 } else { 1.0 };
        if l.continuous {
            cont += va;
        } else {
            noncont += va;
        }
        for (p, s) in shares {
            connected[*p] += va * s;
            design[*p] += va * s * factor;
        }
    }
    let names = ["A", "B", "C"];
    let phases: Vec<PhaseLoading> = (0..n_phases)
        .map(|i| PhaseLoading {
            phase: names[i].into(),
            connected_va: connected[i],
            design_va: design[i],
            design_amps: design[i] / v_ln,
        })
        .collect();
    let max_design = phases.iter().map(|p| p.design_amps).fold(0.0, f64::max);
    let max_connected = connected.iter().map(|va| va / v_ln).fold(0.0, f64::max);
    let avg = phases.iter().map(|p| p.design_amps).sum::<f64>() / n_phases as f64;
    let imbalance = if avg > 0.0 {
        phases
            .iter()
            .map(|p| (p.design_amps - avg).abs())
            .fold(0.0, f64::max)
            / avg
            * 100.0
    } else {
        0.0
    };
    let mut findings = Vec::new();
    let mut pass = true;
    // Bus: continuous at 125 % (panelboards are not 100 %-rated assemblies unless listed).
    let bus_ok = max_design <= bus + 1e-9;
    pass &= bus_ok;
    findings.push(format!(
        "bus {bus} A vs highest phase {max_design:.1} A (continuous at 125 %): {}",
        if bus_ok { "OK" } else { "OVERLOADED" }
    ));
    let mut limiting = bus;
    let mut assumptions = vec![
        "line-to-line loads split equally between their two phases (panel-schedule approximation)"
            .to_string(),
        "loads are already demand-factored where Article 220 allows".to_string(),
    ];
    match main {
        Some(m) => {
            let (needed, how) = if input.main_100_percent_rated {
                (max_connected, "100 %-rated: continuous at 100 %")
            } else {
                (
                    max_design,
                    "standard device: continuous at 125 % (the 80 % rule)",
                )
            };
            let ok = needed <= m + 1e-9;
            pass &= ok;
            findings.push(format!(
                "main {m} A vs highest phase {needed:.1} A ({how}): {}",
                if ok { "OK" } else { "OVERLOADED" }
            ));
            limiting = limiting.min(m);
        }
        None => assumptions.push(
            "main-lug-only: the feeder OCPD protecting the bus must be checked separately (408.36)"
                .into(),
        ),
    }
    if three && imbalance > 10.0 {
        findings.push(format!(
            "phase imbalance {imbalance:.1} % (over 10 %: consider moving loads)"
        ));
    }
    Ok(PanelResult {
        input: input.clone(),
        continuous_va: cont,
        noncontinuous_va: noncont,
        phases,
        max_phase_amps: max_design,
        max_phase_amps_100pct: max_connected,
        imbalance_percent: imbalance,
        limiting_rating: Amps(limiting),
        spare_amps: limiting - max_design,
        pass,
        findings,
        method: "per-phase VA / line-to-neutral voltage, continuous loads × 1.25, compared with bus and main ratings".into(),
        references: vec![
            "NEC 210.20(A), 215.3, 230.42(A) (125 % continuous; 100 %-rated exception)".into(),
            "NEC 408.30, 408.36 (panelboard rating and overcurrent protection)".into(),
        ],
        assumptions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(va: f64, continuous: bool, connection: Connection) -> PanelLoad {
        PanelLoad {
            description: String::new(),
            va,
            continuous,
            connection,
        }
    }

    #[test]
    fn three_phase_balance_and_80_percent_rule() {
        // 208Y/120 V, 100 A main: 3 × 8 kVA continuous per phase = 24 kVA; per phase
        // 8000 × 1.25 / 120.09 = 83.3 A ≤ 100 A.
        let r = panel_capacity(&PanelInput {
            bus_rating: Amps(125.0),
            main_rating: Some(Amps(100.0)),
            main_100_percent_rated: false,
            voltage: Volts(208.0),
            phase: Phase::Three,
            loads: vec![
                load(8000.0, true, Connection::A),
                load(8000.0, true, Connection::B),
                load(8000.0, true, Connection::C),
            ],
        })
        .unwrap();
        assert!(r.pass);
        assert!(
            (r.max_phase_amps - 83.27).abs() < 0.05,
            "{}",
            r.max_phase_amps
        );
        assert!(r.imbalance_percent < 1e-9);
        // 10 kVA continuous on A alone: 104 A > 100 A main.
        let r = panel_capacity(&PanelInput {
            bus_rating: Amps(125.0),
            main_rating: Some(Amps(100.0)),
            main_100_percent_rated: false,
            voltage: Volts(208.0),
            phase: Phase::Three,
            loads: vec![
                load(10000.0, true, Connection::A),
                load(2000.0, false, Connection::BC),
            ],
        })
        .unwrap();
        assert!(!r.pass);
        assert!(r.imbalance_percent > 10.0);
    }

    #[test]
    fn errors() {
        let mut i = PanelInput {
            bus_rating: Amps(100.0),
            main_rating: None,
            main_100_percent_rated: false,
            voltage: Volts(240.0),
            phase: Phase::Single,
            loads: vec![],
        };
        assert!(matches!(
            panel_capacity(&i),
            Err(NecError::MissingInput { .. })
        ));
        i.loads.push(load(100.0, false, Connection::C));
        assert!(panel_capacity(&i).is_err());
        i.loads[0].connection = Connection::A;
        i.loads[0].va = f64::NAN;
        assert!(panel_capacity(&i).is_err());
    }
}
