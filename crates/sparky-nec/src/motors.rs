//! Motor branch-circuit short-circuit and ground-fault protection (430.52) with full-load
//! current from Tables 430.248 / 430.250 (not the nameplate, 430.6(A)(1)), branch-circuit
//! conductor ampacity (430.22) and motor feeder protection (430.62(A)).

use serde::{Deserialize, Serialize};

use super::error::{positive, NecError};
use super::tables::{self, DeviceKind, MotorOcpdType, MotorType};
use super::units::{Amps, Edition, Phase, Volts};

/// Inputs for one motor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MotorInput {
    /// Horsepower (a row of the table; no interpolation).
    pub hp: f64,
    /// Rated motor voltage or nominal system voltage (110–120 → 115 V column, 220–240 → 230 V,
    /// 440–480 → 460 V, 550–600 → 575 V; 200, 208 and 2300 V have their own columns).
    pub voltage: Volts,
    /// 1 or 3 phases.
    pub phase: Phase,
    /// Motor type (Table 430.52 row).
    pub motor_type: MotorType,
    /// For synchronous motors: rated power factor (1.0, 0.9 or 0.8); the unity-PF FLC is
    /// multiplied by 1.1 at 90 % and 1.25 at 80 %.
    #[serde(default)]
    pub synchronous_power_factor: Option<f64>,
    /// Nameplate FLC, if known: reported only, never used for these calculations.
    #[serde(default)]
    pub nameplate_fla: Option<Amps>,
}

/// Table FLC of a motor and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MotorFlc {
    /// Full-load current.
    pub flc: Amps,
    /// Table used.
    pub table: String,
    /// Voltage column used.
    pub column_volts: u32,
}

fn column_for(v: f64, three_phase: bool) -> Result<u32, NecError> {
    let col = match v.round() as i64 {
        110..=120 => 115,
        200 => 200,
        208 => 208,
        220..=240 => 230,
        440..=480 => 460,
        550..=600 => 575,
        2300 => 2300,
        _ => 0,
    };
    if col == 0 || (!three_phase && !matches!(col, 115 | 200 | 208 | 230)) {
        return Err(NecError::invalid(
            "voltage",
            v,
            if three_phase {
                "Table 430.250 covers 115, 200, 208, 230, 460, 575 and 2300 V motors"
            } else {
                "Table 430.248 covers 115, 200, 208 and 230 V motors"
            },
        ));
    }
    Ok(col)
}

/// Armature voltage column of Table 430.247: the rated voltage itself, or the column a
/// nominal system voltage serves (115–125 V → 120 V, 230–250 V → 240 V).
fn dc_column_for(v: f64) -> Result<u32, NecError> {
    let col = match v.round() as i64 {
        90 => 90,
        115..=125 => 120,
        180 => 180,
        230..=250 => 240,
        500 => 500,
        550 => 550,
        _ => 0,
    };
    if col == 0 {
        return Err(NecError::invalid(
            "voltage",
            v,
            "Table 430.247 covers DC armature voltages 90, 120, 180, 240, 500 and 550 V",
        ));
    }
    Ok(col)
}

/// Full-load current from Table 430.247 (DC), 430.248 (single-phase) or 430.250 (three-phase)
/// (430.6(A)(1)). DC motors ignore `phase`.
pub fn motor_flc(input: &MotorInput) -> Result<MotorFlc, NecError> {
    let hp = positive("hp", input.hp)?;
    let v = positive("voltage", input.voltage.0)?;
    let three = input.phase == Phase::Three;
    if input.motor_type == MotorType::Dc {
        let col = dc_column_for(v)?;
        return Ok(MotorFlc {
            flc: Amps(tables::motor_flc_dc(hp, col)?),
            table: "NEC Table 430.247".into(),
            column_volts: col,
        });
    }
    if (input.motor_type == MotorType::SinglePhase) == three {
        return Err(NecError::invalid(
            "motor_type",
            format!(
                "{:?} with {} phase(s)",
                input.motor_type,
                input.phase.count()
            ),
            "single-phase motors need phase 1; polyphase types need phase 3",
        ));
    }
    let col = column_for(v, three)?;
    let sync = input.motor_type == MotorType::Synchronous;
    let mut flc = tables::motor_flc(hp, three, col, sync)?;
    if sync {
        let m =
            match input.synchronous_power_factor {
                None => return Err(NecError::MissingInput {
                    field: "synchronous_power_factor",
                    reason:
                        "Table 430.250 synchronous values are for unity PF; give 1.0, 0.9 or 0.8"
                            .into(),
                }),
                Some(pf) if (pf - 1.0).abs() < 1e-9 => 1.0,
                Some(pf) if (pf - 0.9).abs() < 1e-9 => 1.1,
                Some(pf) if (pf - 0.8).abs() < 1e-9 => 1.25,
                Some(pf) => {
                    return Err(NecError::invalid(
                        "synchronous_power_factor",
                        pf,
                        "must be 1.0, 0.9 or 0.8 (Table 430.250 footnote)",
                    ))
                }
            };
        flc *= m;
    }
    Ok(MotorFlc {
        flc: Amps(flc),
        table: if three {
            "NEC Table 430.250"
        } else {
            "NEC Table 430.248"
        }
        .into(),
        column_volts: col,
    })
}

/// Inputs for 430.52 branch-circuit protection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MotorProtectionInput {
    /// The motor.
    pub motor: MotorInput,
    /// Protective device type (Table 430.52 column).
    pub device: MotorOcpdType,
    /// NEC edition (numbering, and 10 A as a standard breaker rating in 2023).
    #[serde(default)]
    pub edition: Edition,
}

/// Result of [`motor_branch_protection`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MotorProtectionResult {
    /// The inputs used.
    pub input: MotorProtectionInput,
    /// Table FLC.
    pub flc: MotorFlc,
    /// Table 430.52 percentage.
    pub percent_of_flc: f64,
    /// FLC × percentage.
    pub calculated_max: Amps,
    /// Whether the calculated value is itself a standard rating.
    pub calculated_is_standard: bool,
    /// Maximum rating: the calculated value, or the next higher standard rating
    /// (430.52(C)(1) Exception No. 1) when it is not standard. Not applicable to
    /// instantaneous-trip breakers, which are adjustable settings.
    pub max_rating_exception_1: Option<Amps>,
    /// Largest standard rating not exceeding the calculated value.
    pub standard_rating_at_or_below: Option<Amps>,
    /// Exception No. 2 ceiling (motor will not start), amperes.
    pub exception_2_max: Option<Amps>,
    /// The largest standard device not over the Exception No. 2 ceiling: what may actually be
    /// installed when the motor will not start on the Exception No. 1 rating.
    pub exception_2_max_device: Option<Amps>,
    /// Branch-circuit conductor minimum ampacity, 125 % of FLC (430.22).
    pub conductor_min_ampacity: Amps,
    /// Nameplate FLA note, if one was given.
    pub nameplate_note: Option<String>,
    /// Method summary.
    pub method: String,
    /// References.
    pub references: Vec<String>,
    /// Assumptions made.
    pub assumptions: Vec<String>,
}

fn table_name(edition: Edition) -> &'static str {
    match edition {
        Edition::Nec2017 => "NEC 2017 Table 430.52",
        Edition::Nec2020 => "NEC 2020 Table 430.52",
        Edition::Nec2023 => "NEC 2023 Table 430.52(C)(1)",
    }
}

/// Maximum branch-circuit short-circuit and ground-fault protective device per 430.52.
pub fn motor_branch_protection(
    input: &MotorProtectionInput,
) -> Result<MotorProtectionResult, NecError> {
    let flc = motor_flc(&input.motor)?;
    let row = tables::motor_ocpd_row(input.motor.motor_type)?;
    let pct = match input.device {
        MotorOcpdType::NonTimeDelayFuse => row.non_time_delay_fuse,
        MotorOcpdType::DualElementFuse => row.dual_element_fuse,
        MotorOcpdType::InstantaneousTripBreaker => row.instantaneous_trip,
        MotorOcpdType::InverseTimeBreaker => row.inverse_time,
    };
    let kind = match input.device {
        MotorOcpdType::NonTimeDelayFuse | MotorOcpdType::DualElementFuse => DeviceKind::Fuse,
        _ => DeviceKind::CircuitBreaker,
    };
    let f = flc.flc.0;
    let calc = f * pct / 100.0;
    let ed = input.edition;
    let is_std = tables::is_standard_rating(calc, ed, kind)?;
    let mut assumptions = vec![
        "FLC from the NEC table, not the nameplate (430.6(A)(1)); overload protection (430.32) uses the nameplate".to_string(),
    ];
    let mut references = vec![
        table_name(ed).to_string(),
        format!("{} (FLC)", flc.table),
        "NEC 430.6(A)(1)".into(),
        "NEC 430.22 (conductor 125 % FLC)".into(),
        "NEC 240.6(A) (standard ratings)".into(),
    ];
    let (max_ex1, at_or_below, ex2) = if input.device == MotorOcpdType::InstantaneousTripBreaker {
        assumptions.push(
            "instantaneous-trip breakers are allowed only when adjustable and part of a listed combination motor controller (430.52(C)(3)); the setting may go up to 1300 % (1700 % Design B) if needed to start".into(),
        );
        (None, None, None)
    } else {
        let up = if is_std {
            calc
        } else {
            tables::standard_rating_at_or_above(calc, ed, kind)?
        };
        let down = tables::standard_rating_at_or_below(calc, ed, kind).ok();
        references.push(format!(
            "{} Exception No. 1 and No. 2",
            match ed {
                Edition::Nec2017 => "NEC 2017 430.52(C)(1)",
                Edition::Nec2020 => "NEC 2020 430.52(C)(1)",
                Edition::Nec2023 => "NEC 2023 430.52(C)(1)",
            }
        ));
        let ex2_pct = match input.device {
            MotorOcpdType::NonTimeDelayFuse => {
                if f * 4.0 <= 600.0 {
                    400.0
                } else {
                    300.0
                }
            }
            MotorOcpdType::DualElementFuse => 225.0,
            MotorOcpdType::InverseTimeBreaker => {
                if f <= 100.0 {
                    400.0
                } else {
                    300.0
                }
            }
            MotorOcpdType::InstantaneousTripBreaker => 0.0,
        };
        (
            Some(Amps(up)),
            down.map(Amps),
            Some(Amps(f * ex2_pct / 100.0)),
        )
    };
    let ex2_device = match ex2 {
        Some(Amps(ceiling)) => tables::standard_rating_at_or_below(ceiling, ed, kind)
            .ok()
            .map(Amps),
        None => None,
    };
    Ok(MotorProtectionResult {
        input: input.clone(),
        percent_of_flc: pct,
        calculated_max: Amps(calc),
        calculated_is_standard: is_std,
        max_rating_exception_1: max_ex1,
        standard_rating_at_or_below: at_or_below,
        exception_2_max: ex2,
        exception_2_max_device: ex2_device,
        conductor_min_ampacity: Amps(1.25 * f),
        nameplate_note: input.motor.nameplate_fla.map(|n| {
            format!("nameplate {n} not used for conductor or short-circuit protection sizing")
        }),
        flc,
        method: "FLC (table) × Table 430.52 percentage; next higher standard rating permitted when the result is not a standard rating".into(),
        references,
        assumptions,
    })
}

/// One motor on a feeder: its FLC and the rating of its branch-circuit protective device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeederMotor {
    /// Table FLC.
    pub flc: Amps,
    /// Rating (or setting) of its branch-circuit short-circuit and ground-fault device.
    pub branch_ocpd: Amps,
}

/// Result of [`motor_feeder_protection`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MotorFeederResult {
    /// Feeder conductor minimum ampacity: 125 % of the largest FLC + the other FLCs (430.24).
    pub conductor_min_ampacity: Amps,
    /// Largest branch device + sum of the other motors' FLCs (430.62(A)).
    pub calculated_max: Amps,
    /// Maximum feeder device: the standard rating not exceeding the calculated value.
    pub max_feeder_ocpd: Amps,
    /// References.
    pub references: Vec<String>,
}

/// Motor feeder conductor (430.24) and short-circuit/ground-fault protection (430.62(A)).
pub fn motor_feeder_protection(
    motors: &[FeederMotor],
    edition: Edition,
    device: DeviceKind,
) -> Result<MotorFeederResult, NecError> {
    if motors.is_empty() {
        return Err(NecError::MissingInput {
            field: "motors",
            reason: "list at least one motor".into(),
        });
    }
    for m in motors {
        positive("flc", m.flc.0)?;
        positive("branch_ocpd", m.branch_ocpd.0)?;
    }
    let total_flc: f64 = motors.iter().map(|m| m.flc.0).sum();
    let largest_flc = motors.iter().map(|m| m.flc.0).fold(0.0, f64::max);
    // The motor with the largest branch device; its FLC is not added again.
    let (idx, largest) = motors
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.branch_ocpd.0.total_cmp(&b.1.branch_ocpd.0))
        .ok_or(NecError::MissingInput {
            field: "motors",
            reason: "list at least one motor".into(),
        })?;
    let others: f64 = motors
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != idx)
        .map(|(_, m)| m.flc.0)
        .sum();
    let calc = largest.branch_ocpd.0 + others;
    Ok(MotorFeederResult {
        conductor_min_ampacity: Amps(total_flc + 0.25 * largest_flc),
        calculated_max: Amps(calc),
        max_feeder_ocpd: Amps(tables::standard_rating_at_or_below(calc, edition, device)?),
        references: vec!["NEC 430.24".into(), "NEC 430.62(A)".into()],
    })
}

/// Non-motor load on a motor feeder.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct OtherFeederLoad {
    /// Continuous non-motor load, A (125 % for the conductor, 215.2(A)(1)).
    #[serde(default)]
    pub continuous: Amps,
    /// Noncontinuous non-motor load, A.
    #[serde(default)]
    pub noncontinuous: Amps,
}

/// Result of [`motor_feeder_with_other_loads`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MotorFeederTotal {
    /// The motor-only result (430.24, 430.62(A)).
    pub motors: MotorFeederResult,
    /// Conductor minimum ampacity with the other loads (430.24 + 125 % continuous +
    /// noncontinuous), A.
    pub conductor_min_ampacity: Amps,
    /// Largest branch device + other FLCs + other loads (430.62(A), 430.63), A.
    pub calculated_max_ocpd: Amps,
    /// Standard rating not exceeding that value, A.
    pub max_feeder_ocpd: Amps,
    /// References.
    pub references: Vec<String>,
}

/// Motor feeder with other loads: conductor per 430.24 (other loads: 125 % continuous plus
/// noncontinuous) and protection per 430.62(A) / 430.63 (other loads added at their current).
pub fn motor_feeder_with_other_loads(
    motors: &[FeederMotor],
    other: OtherFeederLoad,
    edition: Edition,
    device: DeviceKind,
) -> Result<MotorFeederTotal, NecError> {
    let m = motor_feeder_protection(motors, edition, device)?;
    let c = super::error::non_negative("other continuous load", other.continuous.0)?;
    let n = super::error::non_negative("other noncontinuous load", other.noncontinuous.0)?;
    let conductor = m.conductor_min_ampacity.0 + 1.25 * c + n;
    let calc = m.calculated_max.0 + c + n;
    let mut references = m.references.clone();
    if c + n > 0.0 {
        references.push("NEC 430.63 (feeder with other loads)".into());
        references.push("NEC 215.2(A)(1) (125 % continuous)".into());
    }
    Ok(MotorFeederTotal {
        conductor_min_ampacity: Amps(conductor),
        calculated_max_ocpd: Amps(calc),
        max_feeder_ocpd: Amps(tables::standard_rating_at_or_below(calc, edition, device)?),
        motors: m,
        references,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(hp: f64, v: f64, phase: Phase, t: MotorType) -> MotorInput {
        MotorInput {
            hp,
            voltage: Volts(v),
            phase,
            motor_type: t,
            synchronous_power_factor: None,
            nameplate_fla: None,
        }
    }

    #[test]
    fn flc_errors() {
        assert!(motor_flc(&m(7.0, 460.0, Phase::Three, MotorType::SquirrelCage)).is_err());
        assert!(motor_flc(&m(10.0, 400.0, Phase::Three, MotorType::SquirrelCage)).is_err());
        assert!(motor_flc(&m(10.0, 460.0, Phase::Single, MotorType::SinglePhase)).is_err());
        assert!(motor_flc(&m(10.0, 230.0, Phase::Three, MotorType::SinglePhase)).is_err());
        assert!(motor_flc(&m(-1.0, 230.0, Phase::Single, MotorType::SinglePhase)).is_err());
        assert!(matches!(
            motor_flc(&m(100.0, 460.0, Phase::Three, MotorType::Synchronous)),
            Err(NecError::MissingInput { .. })
        ));
        let mut s = m(100.0, 460.0, Phase::Three, MotorType::Synchronous);
        s.synchronous_power_factor = Some(0.8);
        assert!((motor_flc(&s).unwrap().flc.0 - 101.0 * 1.25).abs() < 1e-9);
        assert!(motor_feeder_protection(&[], Edition::Nec2023, DeviceKind::Fuse).is_err());
    }

    #[test]
    fn system_voltage_maps_to_motor_column() {
        let r = motor_flc(&m(10.0, 480.0, Phase::Three, MotorType::SquirrelCage)).unwrap();
        assert_eq!(r.column_volts, 460);
        assert_eq!(r.flc, Amps(14.0));
        let r = motor_flc(&m(2.0, 120.0, Phase::Single, MotorType::SinglePhase)).unwrap();
        assert_eq!(r.flc, Amps(24.0));
    }
}
