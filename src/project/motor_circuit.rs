//! Sizing a motor branch circuit from the code: full-load current from Tables 430.247–430.250
//! (never the nameplate, 430.6(A)(1)), conductors at 125 % of it (430.22) in the 110.14(C)
//! terminal column, and the branch short-circuit and ground-fault device from Table 430.52
//! with Exception No. 1 (next higher standard rating). 240.4(G) lets Article 430 protect the
//! motor-circuit conductors, so 240.4(D) does not cap the device.

use serde::Serialize;

use super::equipment::MotorLoad;
use crate::nec::error::NecError;
use crate::nec::motors::{self, MotorInput, MotorProtectionInput};
use crate::nec::tables::{self, MotorOcpdType, MotorType};
use crate::nec::units::{Amps, ConductorSize, Edition, Material, Phase, TempRating, VoltAmperes};

/// A motor branch circuit as the code sizes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MotorCircuitSizing {
    /// Table full-load current.
    pub flc: Amps,
    /// The table it came from ("Table 430.250, 460 V column").
    pub flc_source: String,
    /// 125 % of the FLC (430.22).
    pub conductor_min_ampacity: Amps,
    /// Terminal temperature column used for the conductor.
    pub terminal_column: TempRating,
    /// Smallest conductor carrying the minimum ampacity in that column.
    pub conductor: ConductorSize,
    /// Device type the protection is sized for.
    pub device: MotorOcpdType,
    /// Table 430.52 percentage of FLC.
    pub percent_of_flc: f64,
    /// FLC × percentage.
    pub calculated_max: Amps,
    /// The largest rating permitted: the calculated value, or the next higher standard rating
    /// (Exception No. 1). `None` for instantaneous-trip breakers (an adjustable setting).
    pub max_device_rating: Option<Amps>,
    /// The 430.52(C)(1) Exception No. 2 ceiling, for a motor that will not start on the
    /// Exception No. 1 rating. `None` for instantaneous-trip breakers.
    pub exception_2_max: Option<Amps>,
    /// Load in VA at the FLC (V × FLC, × √3 for three-phase).
    pub load_va: VoltAmperes,
    /// Poles the circuit needs at this voltage (1 for 115/120 V single-phase).
    pub poles: u8,
    /// NEC references.
    pub references: Vec<String>,
}

/// Sizes the branch circuit of `motor` with `material` conductors of `insulation` rating.
pub fn size_motor_circuit(
    motor: &MotorLoad,
    material: Material,
    insulation: TempRating,
    edition: Edition,
) -> Result<MotorCircuitSizing, NecError> {
    let device = motor.device.unwrap_or(MotorOcpdType::InverseTimeBreaker);
    let input = MotorInput {
        hp: motor.hp,
        voltage: motor.voltage,
        phase: motor.phase,
        motor_type: match motor.phase {
            Phase::Single => MotorType::SinglePhase,
            Phase::Three => MotorType::SquirrelCage,
        },
        synchronous_power_factor: None,
        nameplate_fla: None,
    };
    let prot = motors::motor_branch_protection(&MotorProtectionInput {
        motor: input,
        device,
        edition,
    })?;
    let flc = prot.flc.flc;
    let min = prot.conductor_min_ampacity;
    // 110.14(C)(1): 60 °C terminals up to 100 A (or 14–1 AWG) unless marked otherwise.
    let terminal = if min.0 <= 100.0 {
        TempRating::C60
    } else {
        TempRating::C75
    }
    .min(insulation);
    let conductor = tables::building_wire_sizes(material)?
        .into_iter()
        .find(|s| tables::ampacity(*s, material, terminal).is_ok_and(|a| a >= min.0))
        .ok_or_else(|| NecError::NoSolution {
            what: "motor branch-circuit conductor",
            reason: format!(
                "no single {material} conductor carries {:.1} A at {terminal}",
                min.0
            ),
        })?;
    let volts = motor.voltage.0;
    let load = match motor.phase {
        Phase::Single => volts * flc.0,
        Phase::Three => 3f64.sqrt() * volts * flc.0,
    };
    let poles = match motor.phase {
        Phase::Three => 3,
        Phase::Single if volts <= 150.0 => 1,
        Phase::Single => 2,
    };
    let mut references = prot.references.clone();
    references.push("NEC 240.4(G) (motor-circuit conductors protected per Article 430)".into());
    references.push("NEC 110.14(C)(1) (terminal column)".into());
    Ok(MotorCircuitSizing {
        flc,
        flc_source: format!("{}, {} V column", prot.flc.table, prot.flc.column_volts),
        conductor_min_ampacity: min,
        terminal_column: terminal,
        conductor,
        device,
        percent_of_flc: prot.percent_of_flc,
        calculated_max: prot.calculated_max,
        max_device_rating: prot.max_rating_exception_1,
        exception_2_max: prot.exception_2_max,
        load_va: VoltAmperes(load),
        poles,
        references,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nec::units::Volts;

    /// NEC Informative Annex D, Example D8: 25 hp, 460 V, three-phase squirrel-cage motor,
    /// FLC 34 A (Table 430.250), conductors 125 % = 42.5 A, non-time-delay fuse 300 % = 102 A →
    /// 110 A (Exception No. 1). The conductor is the hand check of 110.14(C)(1): 42.5 A in the
    /// 60 °C column → 6 AWG Cu (55 A; 8 AWG carries 40 A).
    #[test]
    fn annex_d8_25hp_460v() {
        let r = size_motor_circuit(
            &MotorLoad {
                hp: 25.0,
                phase: Phase::Three,
                voltage: Volts(460.0),
                device: Some(MotorOcpdType::NonTimeDelayFuse),
            },
            Material::Copper,
            TempRating::C75,
            Edition::Nec2023,
        )
        .unwrap();
        assert_eq!(r.flc, Amps(34.0));
        assert!((r.conductor_min_ampacity.0 - 42.5).abs() < 1e-9);
        assert!((r.calculated_max.0 - 102.0).abs() < 1e-9);
        assert_eq!(r.max_device_rating, Some(Amps(110.0)));
        assert_eq!(r.terminal_column, TempRating::C60);
        assert_eq!(r.conductor, "6".parse().unwrap());
        assert_eq!(r.poles, 3);
        assert!((r.load_va.0 - 3f64.sqrt() * 460.0 * 34.0).abs() < 1e-6);
        assert!(r.flc_source.contains("430.250"), "{}", r.flc_source);
    }

    /// Default device: inverse time breaker, 250 % (hand check): 10 hp 460 V, FLC 14 A → 35 A.
    #[test]
    fn default_device_is_inverse_time_breaker() {
        let r = size_motor_circuit(
            &MotorLoad {
                hp: 10.0,
                phase: Phase::Three,
                voltage: Volts(460.0),
                device: None,
            },
            Material::Copper,
            TempRating::C75,
            Edition::Nec2023,
        )
        .unwrap();
        assert_eq!(r.device, MotorOcpdType::InverseTimeBreaker);
        assert_eq!(r.flc, Amps(14.0));
        assert_eq!(r.max_device_rating, Some(Amps(35.0)));
        // 17.5 A in the 60 °C column: 14 AWG carries 15 A, 12 AWG 20 A.
        assert_eq!(r.conductor, "12".parse().unwrap());
    }

    /// 2 hp, 230 V single-phase (Table 430.248: 12 A); dual-element fuse 175 % = 21 A, not
    /// standard → 25 A by Exception No. 1; conductor 15 A → 14 AWG; two poles at 230 V.
    #[test]
    fn two_hp_230v_single_phase_dual_element_fuse() {
        let r = size_motor_circuit(
            &MotorLoad {
                hp: 2.0,
                phase: Phase::Single,
                voltage: Volts(230.0),
                device: Some(MotorOcpdType::DualElementFuse),
            },
            Material::Copper,
            TempRating::C90,
            Edition::Nec2020,
        )
        .unwrap();
        assert_eq!(r.flc, Amps(12.0));
        assert!((r.calculated_max.0 - 21.0).abs() < 1e-9);
        assert_eq!(r.max_device_rating, Some(Amps(25.0)));
        assert_eq!(r.conductor, "14".parse().unwrap());
        assert_eq!(r.poles, 2);
    }

    /// Edge cases: a horsepower that is no table row is an error naming the table; a 115 V
    /// single-phase motor is a one-pole circuit; a large motor goes to the 75 °C column.
    #[test]
    fn edges() {
        let e = size_motor_circuit(
            &MotorLoad {
                hp: 4.2,
                phase: Phase::Three,
                voltage: Volts(460.0),
                device: None,
            },
            Material::Copper,
            TempRating::C75,
            Edition::Nec2023,
        )
        .unwrap_err();
        assert!(e.to_string().contains("430.250"), "{e}");
        let r = size_motor_circuit(
            &MotorLoad {
                hp: 1.0,
                phase: Phase::Single,
                voltage: Volts(115.0),
                device: None,
            },
            Material::Copper,
            TempRating::C75,
            Edition::Nec2023,
        )
        .unwrap();
        assert_eq!(r.flc, Amps(16.0));
        assert_eq!(r.poles, 1);
        let r = size_motor_circuit(
            &MotorLoad {
                hp: 100.0,
                phase: Phase::Three,
                voltage: Volts(460.0),
                device: None,
            },
            Material::Copper,
            TempRating::C75,
            Edition::Nec2023,
        )
        .unwrap();
        // FLC 124 A → 155 A minimum → 2/0 Cu at 75 °C (175 A).
        assert_eq!(r.flc, Amps(124.0));
        assert_eq!(r.terminal_column, TempRating::C75);
        assert_eq!(r.conductor, "2/0".parse().unwrap());
    }
}
