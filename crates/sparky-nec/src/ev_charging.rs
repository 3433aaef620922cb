//! EV charging branch circuit and its feeder/service load: each outlet on its own branch circuit
//! (625.40), overcurrent protection at least 125 % of the EVSE's maximum load, which is
//! continuous (625.41), conductors from the conductor sizing engine at 60 °C and 75 °C
//! terminations, the rating an adjustable setting or an energy management system allows
//! (625.42; 2023 with 750.30), and the load one EVSE adds: 2023 220.57 takes 7200 W or the
//! nameplate, whichever is larger; 2017 and 2020 have no 220.57 and use the nameplate.

use serde::{Deserialize, Serialize};

use super::conductors::{size_conductor, ConductorSizingInput};
use super::error::{positive, NecError};
use super::tables::{self, DeviceKind};
use super::units::{Amps, ConductorSize, Edition, Material, Phase, TempRating, VoltAmperes, Volts};

/// 625.41: overcurrent protection not less than 125 % of the EVSE's maximum load.
pub const CONTINUOUS_FACTOR: f64 = 1.25;
/// 2023 220.57: the least load one EVSE counts for in a load calculation, VA.
pub const MIN_EVSE_LOAD_VA_2023: f64 = 7200.0;

/// One kind of EVSE and how many.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvInput {
    /// Edition.
    pub edition: Edition,
    /// Nameplate maximum input current of one EVSE.
    pub amps: Amps,
    /// Supply voltage.
    pub volts: Volts,
    /// Phases.
    pub phase: Phase,
    /// How many EVSE (each on its own branch circuit).
    pub count: u32,
    /// Restricted-access adjusted setting, A (2020 and later).
    pub adjusted_amps: Option<Amps>,
    /// An energy management system limits the EVSE together to this current, A.
    pub managed_amps: Option<Amps>,
    /// Cord-and-plug connected through a receptacle.
    pub receptacle: bool,
    /// Conductor material.
    pub material: Material,
}

/// Minimum conductor for one termination temperature.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConductorChoice {
    /// Termination column used.
    pub terminals: TempRating,
    /// Smallest size.
    pub size: ConductorSize,
    /// Its ampacity in that column.
    pub ampacity: f64,
}

/// Branch circuit and load contribution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvResult {
    /// Edition.
    pub edition: Edition,
    /// The current the circuit is sized for (nameplate, or the adjusted setting).
    pub design_amps: Amps,
    /// 125 % of it.
    pub continuous_125_amps: Amps,
    /// Smallest standard OCPD at or above that (240.6(A)).
    pub branch_ocpd: Amps,
    /// Smallest conductor where any termination is rated 60 °C, and where both ends are 75 °C.
    pub conductors: Vec<ConductorChoice>,
    /// Load one EVSE adds to a feeder or service, VA.
    pub load_each_va: VoltAmperes,
    /// Load all of them add, VA (the managed load where an energy management system limits it).
    pub load_total_va: VoltAmperes,
    /// The managed load, VA, when an energy management system is given.
    pub managed_load_va: Option<VoltAmperes>,
    /// GFCI for the receptacle: the rule and what it says.
    pub gfci: String,
    /// The steps.
    pub arithmetic: Vec<String>,
    /// Sections relied on.
    pub references: Vec<String>,
    /// What the result does not decide.
    pub notes: Vec<String>,
}

fn va(volts: f64, amps: f64, phase: Phase) -> f64 {
    volts
        * amps
        * if phase == Phase::Three {
            3f64.sqrt()
        } else {
            1.0
        }
}

/// Sizes the branch circuit of one EVSE and the load `count` of them add.
pub fn ev_circuit(input: &EvInput) -> Result<EvResult, NecError> {
    let nameplate = positive("amps", input.amps.0)?;
    let volts = positive("volts", input.volts.0)?;
    if input.count == 0 {
        return Err(NecError::invalid("count", 0, "at least one EVSE"));
    }
    let mut arithmetic = Vec::new();
    let mut notes = Vec::new();
    let mut references = vec!["625.40".to_string(), "625.41".to_string()];
    let design = match input.adjusted_amps {
        Some(adj) => {
            let adj = positive("adjusted_amps", adj.0)?;
            if adj > nameplate {
                return Err(NecError::invalid(
                    "adjusted_amps",
                    adj,
                    format!("cannot exceed the nameplate {nameplate} A"),
                ));
            }
            if input.edition == Edition::Nec2017 {
                notes.push("2017: Sparky has no confirmed rule letting an adjusted setting set the rating; the nameplate is used".into());
                nameplate
            } else {
                references.push(if input.edition == Edition::Nec2023 {
                    "625.42(B)".into()
                } else {
                    "625.42".into()
                });
                arithmetic.push(format!("adjusted setting {adj} A (restricted access, marked on the EVSE) used instead of the {nameplate} A nameplate"));
                adj
            }
        }
        None => nameplate,
    };
    let c125 = design * CONTINUOUS_FACTOR;
    let ocpd =
        tables::standard_rating_at_or_above(c125, input.edition, DeviceKind::CircuitBreaker)?;
    arithmetic.push(format!(
        "{design} A continuous × 1.25 = {c125:.1} A; next standard breaker {ocpd} A (240.6(A))"
    ));
    references.push("240.6(A)".into());
    let mut conductors = Vec::new();
    for t in [TempRating::C60, TempRating::C75] {
        let r = size_conductor(&ConductorSizingInput {
            continuous_load: Amps(design),
            noncontinuous_load: Amps(0.0),
            material: input.material,
            insulation: TempRating::C90,
            terminal_rating: Some(t),
            ambient_c: None,
            current_carrying_conductors: 3,
            ocpd_rating: Some(Amps(ocpd)),
            ocpd_device: DeviceKind::CircuitBreaker,
            multioutlet_receptacle_circuit: false,
            edition: input.edition,
        })?;
        arithmetic.push(format!(
            "{} terminations: {} {} ({} A in the {} column) on the {ocpd} A breaker",
            t, r.size, input.material, r.check.ampacity.terminal_ampacity, t
        ));
        conductors.push(ConductorChoice {
            terminals: t,
            size: r.size,
            ampacity: r.check.ampacity.terminal_ampacity,
        });
    }
    references.push("Table 310.16".into());
    references.push("110.14(C)".into());
    notes.push("conductors at 30 °C ambient and no more than three current-carrying conductors; derate with check_conductor_sizing otherwise".into());
    // Load on the feeder or service.
    let nameplate_va = va(volts, design, input.phase);
    let each = if input.edition == Edition::Nec2023 {
        let e = nameplate_va.max(MIN_EVSE_LOAD_VA_2023);
        arithmetic.push(format!(
            "220.57: larger of 7200 VA and the nameplate {nameplate_va:.0} VA = {e:.0} VA per EVSE"
        ));
        references.push("220.57".into());
        e
    } else {
        arithmetic.push(format!(
            "{}: no 220.57 in this edition; the EVSE counts at its rating, {volts} V × {design} A = {nameplate_va:.0} VA",
            input.edition
        ));
        nameplate_va
    };
    let sum = each * f64::from(input.count);
    let mut total = sum;
    let managed = match input.managed_amps {
        Some(m) => {
            let m = positive("managed_amps", m.0)?;
            let mv = va(volts, m, input.phase);
            references.push(match input.edition {
                Edition::Nec2023 => "625.42(A) with 750.30".into(),
                _ => "625.42".into(),
            });
            arithmetic.push(format!(
                "energy management limits the {} EVSE to {m} A: {mv:.0} VA instead of {sum:.0} VA",
                input.count
            ));
            total = mv.min(sum);
            Some(VoltAmperes(total))
        }
        None => {
            if input.count > 1 {
                arithmetic.push(format!("{} × {each:.0} VA = {sum:.0} VA", input.count));
            }
            None
        }
    };
    notes.push(
        "no demand factor is applied to EVSE: 2023 220.53 leaves EVSE out of the 75 % appliance factor; earlier editions are silent, so an AHJ applying one decides that".into(),
    );
    let gfci = if input.receptacle {
        match input.edition {
            Edition::Nec2017 => "receptacle: GFCI by 210.8 wherever the location needs it (a dwelling garage or outdoors does); the 2017 625.54 text is not confirmed in Sparky's sources".to_string(),
            _ => {
                references.push("625.54".into());
                "receptacle for EV charging: GFCI protection for personnel (625.54), besides any 210.8 location rule".to_string()
            }
        }
    } else {
        "hard-wired EVSE: personnel protection is built into listed EVSE (625.22); no GFCI breaker is required by 625.54".to_string()
    };
    Ok(EvResult {
        edition: input.edition,
        design_amps: Amps(design),
        continuous_125_amps: Amps(c125),
        branch_ocpd: Amps(ocpd),
        conductors,
        load_each_va: VoltAmperes(each),
        load_total_va: VoltAmperes(total),
        managed_load_va: managed,
        gfci,
        arithmetic,
        references,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(amps: f64, edition: Edition) -> EvInput {
        EvInput {
            edition,
            amps: Amps(amps),
            volts: Volts(240.0),
            phase: Phase::Single,
            count: 1,
            adjusted_amps: None,
            managed_amps: None,
            receptacle: false,
            material: Material::Copper,
        }
    }

    #[test]
    fn common_chargers() {
        for (a, ocpd, c75) in [(48.0, 60.0, "6"), (40.0, 50.0, "8"), (32.0, 40.0, "8")] {
            let r = ev_circuit(&ev(a, Edition::Nec2023)).unwrap();
            assert_eq!(r.branch_ocpd.0, ocpd, "{a}");
            assert_eq!(r.conductors[1].size, c75.parse().unwrap(), "{a}");
        }
        // 48 A at 60 °C terminations: 6 AWG (55 A) is short of 60 A, 4 AWG.
        let r = ev_circuit(&ev(48.0, Edition::Nec2023)).unwrap();
        assert_eq!(r.conductors[0].size, "4".parse().unwrap());
    }

    #[test]
    fn load_by_edition_and_management() {
        // 16 A × 240 = 3840 VA: 7200 VA in 2023, 3840 VA before.
        assert_eq!(
            ev_circuit(&ev(16.0, Edition::Nec2023))
                .unwrap()
                .load_each_va
                .0,
            7200.0
        );
        assert_eq!(
            ev_circuit(&ev(16.0, Edition::Nec2020))
                .unwrap()
                .load_each_va
                .0,
            3840.0
        );
        let mut i = ev(48.0, Edition::Nec2023);
        i.count = 4;
        i.managed_amps = Some(Amps(80.0));
        let r = ev_circuit(&i).unwrap();
        assert_eq!(r.load_total_va.0, 19_200.0);
        i.adjusted_amps = Some(Amps(32.0));
        let r = ev_circuit(&i).unwrap();
        assert_eq!(r.branch_ocpd.0, 40.0);
        i.adjusted_amps = Some(Amps(60.0));
        assert!(ev_circuit(&i).is_err());
        i.adjusted_amps = None;
        i.count = 0;
        assert!(ev_circuit(&i).is_err());
    }
}
