//! Which overcurrent-protection rule judges a branch circuit. A general circuit's conductors
//! are protected per 240.4, with the small-conductor limits of 240.4(D). A circuit that
//! supplies a motor is judged by Article 430 instead (240.4(G)): conductors at 125 % of the
//! table full-load current (430.22), and the branch short-circuit and ground-fault device up to
//! the Table 430.52 percentage, the next standard rating above it (430.52(C)(1) Exception
//! No. 1), and, only where the motor will not start, the Exception No. 2 ceiling. So 14 AWG on
//! a 25 A inverse-time breaker is right for a 2 hp, 230 V motor and wrong for a lighting circuit.

use serde::Serialize;

use super::motor_circuit::{size_motor_circuit, MotorCircuitSizing};
use super::CircuitSpec;
use crate::nec::tables::{self, MotorOcpdType};
use crate::nec::units::{Edition, TempRating};

/// The rule a circuit's conductor protection is judged by.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum ProtectionRule {
    /// 240.4 with the 240.4(D) small-conductor limits, and 210.19(A)/210.20(A) for the load.
    General,
    /// Article 430 (240.4(G)): the motor circuit's conductor and device were checked here.
    Motor(MotorCircuitJudgement),
    /// A motor is recorded but the NEC tables cannot size it (e.g. a horsepower that is not a
    /// table row); the circuit falls back to the general rules and the reason is reported.
    MotorNotSized {
        /// Why Article 430 could not be applied.
        reason: String,
    },
}

impl ProtectionRule {
    /// Whether Article 430 replaced the general 240.4 / 210.19 / 210.20 checks.
    pub fn is_article_430(&self) -> bool {
        matches!(self, Self::Motor(_))
    }
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MotorAspect {
    /// Branch-circuit conductor ampacity (430.22).
    Conductor,
    /// Branch short-circuit and ground-fault protective device (430.52).
    Device,
}

/// How serious a motor-circuit finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Not permitted.
    Violation,
    /// Permitted only under a condition the project data cannot show.
    Warning,
    /// Not checked, with the reason.
    Info,
}

/// One problem with a motor branch circuit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MotorFinding {
    /// Conductor or device.
    pub aspect: MotorAspect,
    /// How serious.
    pub verdict: Verdict,
    /// NEC reference.
    pub reference: String,
    /// What is wrong, with numbers.
    pub message: String,
    /// What would fix it.
    pub fix: String,
}

/// A motor branch circuit judged by Article 430.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MotorCircuitJudgement {
    /// The code sizing the circuit was compared with.
    pub sizing: MotorCircuitSizing,
    /// Problems found (empty: the conductor and the device meet Article 430).
    pub findings: Vec<MotorFinding>,
}

/// The rule that applies to `c` and, for a motor circuit, the Article 430 check of its
/// recorded conductor and device.
pub fn protection_rule(c: &CircuitSpec, edition: Edition) -> ProtectionRule {
    let Some(motor) = &c.motor else {
        return ProtectionRule::General;
    };
    let sizing = match size_motor_circuit(motor, c.material, c.insulation, edition) {
        Ok(s) => s,
        Err(e) => {
            return ProtectionRule::MotorNotSized {
                reason: e.to_string(),
            }
        }
    };
    let mut findings = Vec::new();
    if let Some(size) = c.conductor_size {
        let min = sizing.conductor_min_ampacity.0;
        let at = |column: TempRating| tables::ampacity(size, c.material, column).ok();
        let amp = at(sizing.terminal_column);
        if amp.is_none_or(|a| a + 1e-9 < min) {
            let at75 = at(TempRating::C75.min(c.insulation));
            let passes_at_75 =
                sizing.terminal_column == TempRating::C60 && at75.is_some_and(|a| a + 1e-9 >= min);
            findings.push(MotorFinding {
                aspect: MotorAspect::Conductor,
                verdict: if passes_at_75 {
                    Verdict::Warning
                } else {
                    Verdict::Violation
                },
                reference: "NEC 430.22, 110.14(C)".into(),
                message: format!(
                    "{size} {} carries {} A in the {} column, less than 125 % of the {} A full-load current ({}) = {:.1} A{}",
                    c.material,
                    amp.map(|a| a.to_string()).unwrap_or_else(|| "no value".into()),
                    sizing.terminal_column,
                    sizing.flc.0,
                    sizing.flc_source,
                    min,
                    if passes_at_75 {
                        " (passes if both terminations are listed and marked for 75 °C, 110.14(C)(1)(a))"
                    } else {
                        ""
                    }
                ),
                fix: format!("use {} {} or larger", sizing.conductor, c.material),
            });
        }
    }
    let b = c.breaker.0;
    let device_name = device_label(sizing.device);
    match (sizing.max_device_rating, sizing.exception_2_max) {
        (Some(max), ex2) if b > max.0 + 1e-9 => {
            let within_ex2 = ex2.is_some_and(|e| b <= e.0 + 1e-9);
            findings.push(MotorFinding {
                aspect: MotorAspect::Device,
                verdict: if within_ex2 {
                    Verdict::Warning
                } else {
                    Verdict::Violation
                },
                reference: "NEC 430.52(C)(1), Exceptions No. 1 and No. 2".into(),
                message: format!(
                    "{b} A {device_name} is above the {} A Table 430.52 allows ({} % of {} A = {:.1} A, next standard rating by Exception No. 1){}",
                    max.0,
                    sizing.percent_of_flc,
                    sizing.flc.0,
                    sizing.calculated_max.0,
                    match (within_ex2, ex2) {
                        (true, Some(e)) => format!("; permitted up to {:.1} A only where the motor will not start on {} A (Exception No. 2)", e.0, max.0),
                        (false, Some(e)) => format!(", and above the {:.1} A Exception No. 2 ceiling", e.0),
                        _ => String::new(),
                    }
                ),
                fix: if within_ex2 {
                    format!("record why the motor does not start on {} A, or use a {} A device", max.0, max.0)
                } else {
                    format!("use a {} A {device_name} or smaller", max.0)
                },
            });
        }
        (Some(_), _) => {}
        (None, _) => findings.push(MotorFinding {
            aspect: MotorAspect::Device,
            verdict: Verdict::Info,
            reference: "NEC 430.52(C)(3)".into(),
            message: format!(
                "instantaneous-trip breaker: its setting is adjustable and not recorded (up to {} % of {} A = {:.1} A, more only where the motor will not start); not checked",
                sizing.percent_of_flc, sizing.flc.0, sizing.calculated_max.0
            ),
            fix: "confirm the setting and that it is part of a listed combination motor controller".into(),
        }),
    }
    ProtectionRule::Motor(MotorCircuitJudgement { sizing, findings })
}

fn device_label(d: MotorOcpdType) -> &'static str {
    match d {
        MotorOcpdType::NonTimeDelayFuse => "non-time-delay fuse",
        MotorOcpdType::DualElementFuse => "dual-element fuse",
        MotorOcpdType::InstantaneousTripBreaker => "instantaneous-trip breaker",
        MotorOcpdType::InverseTimeBreaker => "inverse-time breaker",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nec::units::{Amps, Material, Phase, VoltAmperes, Volts};
    use crate::project::MotorLoad;

    fn motor_circuit(
        hp: f64,
        size: &str,
        breaker: f64,
        device: Option<MotorOcpdType>,
    ) -> CircuitSpec {
        CircuitSpec {
            number: 1,
            poles: 2,
            description: "well pump".into(),
            load_va: VoltAmperes(2760.0),
            continuous: false,
            breaker: Amps(breaker),
            conductor_size: Some(size.parse().unwrap()),
            material: Material::Copper,
            insulation: TempRating::C75,
            length: None,
            conduit: String::new(),
            motor: Some(MotorLoad {
                hp,
                phase: Phase::Single,
                voltage: Volts(230.0),
                device,
            }),
            appliance: None,
        }
    }

    fn findings(r: &ProtectionRule) -> &[MotorFinding] {
        match r {
            ProtectionRule::Motor(j) => &j.findings,
            other => panic!("not judged by Article 430: {other:?}"),
        }
    }

    /// 2 hp, 230 V single-phase: Table 430.248 FLC 12 A; 430.22: 15 A → 14 AWG in the 60 °C
    /// column; Table 430.52 inverse-time breaker 250 % = 30 A (a standard rating), Exception
    /// No. 2 ceiling 400 % = 48 A. 14 AWG on 25 A and 30 A is right (240.4(G)), 40 A needs the
    /// Exception No. 2 condition, 50 A is never permitted.
    #[test]
    fn fourteen_awg_on_a_motor_breaker_above_15_a() {
        let r = protection_rule(&motor_circuit(2.0, "14", 25.0, None), Edition::Nec2023);
        assert!(r.is_article_430());
        assert!(findings(&r).is_empty(), "{r:?}");
        let r = protection_rule(&motor_circuit(2.0, "14", 30.0, None), Edition::Nec2023);
        assert!(findings(&r).is_empty(), "{r:?}");
        let r = protection_rule(&motor_circuit(2.0, "14", 40.0, None), Edition::Nec2023);
        let f = findings(&r);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            (f[0].aspect, f[0].verdict),
            (MotorAspect::Device, Verdict::Warning)
        );
        assert!(f[0].message.contains("48.0 A"), "{}", f[0].message);
        let r = protection_rule(&motor_circuit(2.0, "14", 50.0, None), Edition::Nec2023);
        let f = findings(&r);
        assert_eq!(
            (f[0].aspect, f[0].verdict),
            (MotorAspect::Device, Verdict::Violation)
        );
        assert!(f[0].fix.contains("30 A"), "{}", f[0].fix);
    }

    /// 3 hp, 230 V single-phase: FLC 17 A, 430.22 21.25 A: 14 AWG (15 A at 60 °C, 20 A at
    /// 75 °C) fails in either column; 12 AWG (20 A at 60 °C, 25 A at 75 °C) passes only with
    /// 75 °C terminals. Dual-element fuse 175 % = 29.75 A → 30 A (Exception No. 1).
    #[test]
    fn conductor_below_125_percent_of_flc() {
        let r = protection_rule(
            &motor_circuit(3.0, "14", 30.0, Some(MotorOcpdType::DualElementFuse)),
            Edition::Nec2020,
        );
        let f = findings(&r);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            (f[0].aspect, f[0].verdict),
            (MotorAspect::Conductor, Verdict::Violation)
        );
        assert!(f[0].message.contains("21.2"), "{}", f[0].message);
        let r = protection_rule(
            &motor_circuit(3.0, "12", 30.0, Some(MotorOcpdType::DualElementFuse)),
            Edition::Nec2020,
        );
        let f = findings(&r);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            (f[0].aspect, f[0].verdict),
            (MotorAspect::Conductor, Verdict::Warning)
        );
    }

    /// No motor: the general rule; a horsepower that is no table row falls back with a reason;
    /// an instantaneous-trip breaker's setting is reported as not checked.
    #[test]
    fn general_fallback_and_instantaneous_trip() {
        let mut c = motor_circuit(2.0, "14", 25.0, None);
        c.motor = None;
        assert_eq!(
            protection_rule(&c, Edition::Nec2023),
            ProtectionRule::General
        );
        let r = protection_rule(&motor_circuit(2.2, "14", 25.0, None), Edition::Nec2023);
        match r {
            ProtectionRule::MotorNotSized { reason } => {
                assert!(reason.contains("430.248"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        let r = protection_rule(
            &motor_circuit(
                2.0,
                "14",
                25.0,
                Some(MotorOcpdType::InstantaneousTripBreaker),
            ),
            Edition::Nec2023,
        );
        let f = findings(&r);
        assert_eq!(f[0].verdict, Verdict::Info);
    }
}
