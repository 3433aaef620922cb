//! Available fault current: transformer secondary on an infinite bus, the point-to-point
//! method through conductors, and the interrupting-rating check of 110.9 / 110.10.
//!
//! Point-to-point follows the Eaton Bussmann "Selecting Protective Devices" (SPD) handbook:
//! f = √3·L·I / (C·n·E_LL) (3-phase), 2·L·I / (C·n·E_LL) (1-phase L-L),
//! 2·L·I / (C·n·E_LN) (1-phase L-N); M = 1/(1+f); I_fault = I·M.

use serde::{Deserialize, Serialize};

use super::error::{in_range, non_negative, positive, NecError};
use super::tables::{self, ConduitMagnetism};
use super::units::{Amps, ConductorSize, Feet, Material, Phase, Volts};

/// Inputs for the transformer let-through (infinite primary bus) fault current.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransformerFaultInput {
    /// Transformer rating, kVA.
    pub kva: f64,
    /// Secondary line-to-line voltage.
    pub secondary_voltage: Volts,
    /// 1 or 3 phases.
    pub phase: Phase,
    /// Nameplate impedance, percent.
    pub percent_z: f64,
    /// Reduce %Z by 10 % (UL 1561 tolerance) as the SPD handbook does: the worst case.
    #[serde(default)]
    pub apply_impedance_tolerance: bool,
    /// Full-load current of motors running at the secondary; 4 × this is added (SPD handbook).
    #[serde(default)]
    pub motor_full_load_current: Option<Amps>,
}

/// Result of [`transformer_fault_current`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TransformerFaultResult {
    /// The inputs used.
    pub input: TransformerFaultInput,
    /// Secondary full-load current.
    pub full_load_current: Amps,
    /// %Z actually used.
    pub percent_z_used: f64,
    /// Multiplier 100 / %Z.
    pub multiplier: f64,
    /// Fault current from the transformer alone (infinite primary).
    pub transformer_fault_current: Amps,
    /// Motor contribution added.
    pub motor_contribution: Amps,
    /// Total available fault current at the secondary terminals.
    pub available_fault_current: Amps,
    /// Method summary.
    pub method: String,
    /// References used.
    pub references: Vec<String>,
    /// Assumptions made.
    pub assumptions: Vec<String>,
}

/// Fault current at a transformer secondary assuming unlimited primary fault current.
pub fn transformer_fault_current(
    input: &TransformerFaultInput,
) -> Result<TransformerFaultResult, NecError> {
    let kva = positive("kva", input.kva)?;
    let v = positive("secondary_voltage", input.secondary_voltage.0)?;
    let z = in_range("percent_z", input.percent_z, 0.1, 30.0)?;
    let z_used = if input.apply_impedance_tolerance {
        z * 0.9
    } else {
        z
    };
    let fla = match input.phase {
        Phase::Three => kva * 1000.0 / (v * 3f64.sqrt()),
        Phase::Single => kva * 1000.0 / v,
    };
    let multiplier = 100.0 / z_used;
    let isc = fla * multiplier;
    let motor = match input.motor_full_load_current {
        Some(a) => 4.0 * non_negative("motor_full_load_current", a.0)?,
        None => 0.0,
    };
    let mut assumptions = vec![
        "infinite (unlimited) primary fault current: the result is an upper bound".to_string(),
    ];
    if input.apply_impedance_tolerance {
        assumptions.push("%Z reduced by 10 % for the manufacturing tolerance".into());
    } else {
        assumptions.push("nameplate %Z used as is (no −10 % tolerance)".into());
    }
    if motor > 0.0 {
        assumptions.push("motor contribution = 4 × motor full-load current".into());
    }
    if input.phase == Phase::Single {
        assumptions.push(
            "line-to-line fault; a line-to-neutral fault at a center-tapped secondary can be about 1.5 × higher at the terminals".into(),
        );
    }
    Ok(TransformerFaultResult {
        input: input.clone(),
        full_load_current: Amps(fla),
        percent_z_used: z_used,
        multiplier,
        transformer_fault_current: Amps(isc),
        motor_contribution: Amps(motor),
        available_fault_current: Amps(isc + motor),
        method: "I_FLA = kVA·1000 / (E·√3 or E); I_SC = I_FLA × 100 / %Z".into(),
        references: vec![
            "Eaton Bussmann SPD handbook, point-to-point method steps 1–3".into(),
            "NEC 110.9, 110.10, 110.24".into(),
        ],
        assumptions,
    })
}

/// Fault type for the point-to-point method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultType {
    /// Three-phase bolted fault; voltage is line-to-line.
    ThreePhase,
    /// Single-phase line-to-line fault; voltage is line-to-line.
    SinglePhaseLineToLine,
    /// Single-phase line-to-neutral fault; voltage is line-to-neutral and the starting current
    /// must be the line-to-neutral fault current.
    SinglePhaseLineToNeutral,
}

/// Inputs for one point-to-point step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointToPointInput {
    /// Fault current available at the start of the run.
    pub available_fault_current: Amps,
    /// System voltage (line-to-line, or line-to-neutral for L-N faults).
    pub voltage: Volts,
    /// Fault type.
    pub fault_type: FaultType,
    /// One-way length of the run.
    pub length: Feet,
    /// Conductor size (ignored when `c_value` is given).
    pub size: ConductorSize,
    /// Conductor material.
    pub material: Material,
    /// Steel or nonmagnetic raceway.
    pub conduit: ConduitMagnetism,
    /// Conductors in parallel per phase.
    #[serde(default = "one")]
    pub parallel_sets: u32,
    /// Caller-supplied C value (e.g. busway or cable not in the table).
    #[serde(default)]
    pub c_value: Option<f64>,
    /// Interrupting rating of the equipment at the fault point, if it should be checked.
    #[serde(default)]
    pub equipment_interrupting_rating: Option<Amps>,
}

fn one() -> u32 {
    1
}

/// Result of [`point_to_point`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointToPointResult {
    /// The inputs used.
    pub input: PointToPointInput,
    /// C value used.
    pub c_value: f64,
    /// Where published copies of the C value table disagree for this cell: the lowest value
    /// published (the highest is used).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub c_value_lowest_published: Option<f64>,
    /// f factor.
    pub f: f64,
    /// Multiplier M = 1/(1+f).
    pub m: f64,
    /// Available fault current at the fault point.
    pub fault_current: Amps,
    /// Interrupting-rating check, if a rating was given.
    pub interrupting_check: Option<InterruptingCheck>,
    /// Method summary.
    pub method: String,
    /// References used.
    pub references: Vec<String>,
    /// Assumptions made.
    pub assumptions: Vec<String>,
}

/// Fault current at the end of a conductor run by the point-to-point method.
pub fn point_to_point(input: &PointToPointInput) -> Result<PointToPointResult, NecError> {
    let i = positive("available_fault_current", input.available_fault_current.0)?;
    let e = positive("voltage", input.voltage.0)?;
    let l = non_negative("length", input.length.0)?;
    if input.parallel_sets == 0 {
        return Err(NecError::invalid("parallel_sets", 0, "must be at least 1"));
    }
    let mut assumptions = vec![
        "bolted fault, symmetrical RMS amperes; conductor impedance only (no arc, no contact resistance)".to_string(),
    ];
    if e > 600.0 {
        assumptions.push(
            "C values are the 600 V three-single-conductor column; above 600 V they are approximate".into(),
        );
    }
    let (c, lowest) = match input.c_value {
        Some(c) => {
            assumptions.push("C value given by the caller".into());
            (positive("c_value", c)?, None)
        }
        None => {
            let cell = tables::c_value_cell(input.size, input.material, input.conduit)?;
            match cell.lowest_published {
                Some(low) => assumptions.push(format!(
                    "C value from the SPD handbook table (600 V, three single conductors): published copies disagree for this cell ({low:.0} to {:.0}); the higher C is used, which gives the higher fault current",
                    cell.value
                )),
                None => assumptions.push(
                    "C value from the SPD handbook table (600 V, three single conductors), a cell two independent published copies print alike".into(),
                ),
            }
            (cell.value, cell.lowest_published)
        }
    };
    let n = f64::from(input.parallel_sets);
    let (k, k_name) = match input.fault_type {
        FaultType::ThreePhase => (3f64.sqrt(), "√3"),
        _ => (2.0, "2"),
    };
    let f = k * l * i / (c * n * e);
    let m = 1.0 / (1.0 + f);
    let fault = i * m;
    let interrupting_check = match input.equipment_interrupting_rating {
        Some(r) => Some(check_interrupting_rating(Amps(fault), r)?),
        None => None,
    };
    Ok(PointToPointResult {
        input: input.clone(),
        c_value: c,
        c_value_lowest_published: lowest,
        f,
        m,
        fault_current: Amps(fault),
        interrupting_check,
        method: format!("point-to-point: f = {k_name}·L·I / (C·n·E); M = 1/(1+f); I = I_start × M"),
        references: vec![
            "Eaton Bussmann SPD handbook, point-to-point method steps 4–6 and C value table".into(),
            "NEC 110.9, 110.10".into(),
        ],
        assumptions,
    })
}

/// The point-to-point C value of a conductor from its impedance: C is the reciprocal of the
/// line-to-neutral impedance per foot, so C = 1000 / (ohms per 1000 ft).
pub fn c_from_impedance(ohms_per_1000_ft: f64) -> Result<f64, NecError> {
    Ok(1000.0 / positive("impedance_ohms_per_1000ft", ohms_per_1000_ft)?)
}

/// Result of the interrupting-rating check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InterruptingCheck {
    /// Available fault current.
    pub available_fault_current: Amps,
    /// Equipment interrupting (or short-circuit current) rating.
    pub equipment_rating: Amps,
    /// rating ≥ available.
    pub pass: bool,
    /// rating − available (negative when failing).
    pub margin: Amps,
    /// References used.
    pub references: Vec<String>,
}

/// 110.9 / 110.10: the equipment's interrupting rating must be at least the available fault
/// current at its line terminals.
pub fn check_interrupting_rating(
    available_fault_current: Amps,
    equipment_rating: Amps,
) -> Result<InterruptingCheck, NecError> {
    let a = positive("available_fault_current", available_fault_current.0)?;
    let r = positive("equipment_interrupting_rating", equipment_rating.0)?;
    Ok(InterruptingCheck {
        available_fault_current: Amps(a),
        equipment_rating: Amps(r),
        pass: r >= a,
        margin: Amps(r - a),
        references: vec![
            "NEC 110.9 (interrupting rating)".into(),
            "NEC 110.10 (circuit impedance, short-circuit current ratings)".into(),
        ],
    })
}

/// Runs point-to-point steps in series: each step starts from the previous step's result
/// (the `available_fault_current` of steps after the first is overwritten).
pub fn point_to_point_chain(
    steps: &[PointToPointInput],
) -> Result<Vec<PointToPointResult>, NecError> {
    let mut out: Vec<PointToPointResult> = Vec::with_capacity(steps.len());
    for (idx, s) in steps.iter().enumerate() {
        let mut s = s.clone();
        if let Some(prev) = out.last() {
            s.available_fault_current = prev.fault_current;
        }
        let r = point_to_point(&s).map_err(|e| match e {
            NecError::InvalidInput {
                field,
                value,
                reason,
            } => NecError::InvalidInput {
                field,
                value,
                reason: format!("{reason} (step {})", idx + 1),
            },
            other => other,
        })?;
        out.push(r);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors() {
        let t = TransformerFaultInput {
            kva: 0.0,
            secondary_voltage: Volts(480.0),
            phase: Phase::Three,
            percent_z: 5.0,
            apply_impedance_tolerance: false,
            motor_full_load_current: None,
        };
        assert!(transformer_fault_current(&t).is_err());
        let mut t2 = t.clone();
        t2.kva = 500.0;
        t2.percent_z = 0.0;
        assert!(transformer_fault_current(&t2).is_err());
        assert!(check_interrupting_rating(Amps(10_000.0), Amps(-1.0)).is_err());
        let p = PointToPointInput {
            available_fault_current: Amps(20_000.0),
            voltage: Volts(480.0),
            fault_type: FaultType::ThreePhase,
            length: Feet(50.0),
            size: ConductorSize::Kcmil(2000),
            material: Material::Copper,
            conduit: ConduitMagnetism::Steel,
            parallel_sets: 1,
            c_value: None,
            equipment_interrupting_rating: None,
        };
        assert!(matches!(
            point_to_point(&p),
            Err(NecError::NotVerified { .. })
        ));
        // A caller-supplied C value (e.g. busway) is used as given.
        let r = point_to_point(&PointToPointInput {
            c_value: Some(20_000.0),
            ..p
        })
        .unwrap();
        assert_eq!(r.c_value, 20_000.0);
        assert!(r
            .assumptions
            .iter()
            .any(|a| a.contains("given by the caller")));
    }

    #[test]
    fn interrupting_check_fails_when_underrated() {
        let c = check_interrupting_rating(Amps(14_000.0), Amps(10_000.0)).unwrap();
        assert!(!c.pass);
        assert_eq!(c.margin, Amps(-4000.0));
    }
}
