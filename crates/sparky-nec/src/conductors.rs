//! Conductor sizing and checking for branch circuits and feeders: 125 % of continuous plus
//! 100 % of noncontinuous load, ambient temperature correction, adjustment for more than three
//! current-carrying conductors, terminal temperature limits (110.14(C)), small-conductor caps
//! (240.4(D)) and the next-higher-standard-rating rule (240.4(B)).

use serde::{Deserialize, Serialize};

use super::error::{non_negative, positive, NecError};
use super::tables::{self, DeviceKind};
use super::units::{Amps, ConductorSize, Edition, Material, TempRating};

/// Inputs for sizing or checking circuit conductors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConductorSizingInput {
    /// Continuous load (3 h or more), amperes.
    pub continuous_load: Amps,
    /// Noncontinuous load, amperes.
    #[serde(default)]
    pub noncontinuous_load: Amps,
    /// Conductor material.
    pub material: Material,
    /// Insulation temperature rating (the Table 310.16 column used for correction/adjustment).
    pub insulation: TempRating,
    /// Lowest temperature rating of the terminations at either end. `None`: the 110.14(C)(1)
    /// default (60 °C for circuits rated 100 A or less, 75 °C above).
    #[serde(default)]
    pub terminal_rating: Option<TempRating>,
    /// Ambient temperature in °C. `None`: 30 °C (no correction).
    #[serde(default)]
    pub ambient_c: Option<f64>,
    /// Current-carrying conductors in the raceway or cable (spares counted, EGCs not).
    #[serde(default = "three")]
    pub current_carrying_conductors: u32,
    /// Rating of the overcurrent device. `None`: the engine picks the smallest standard rating
    /// not less than 125 % continuous + 100 % noncontinuous.
    #[serde(default)]
    pub ocpd_rating: Option<Amps>,
    /// Fuse or breaker (which standard ratings exist; 240.6(A)).
    #[serde(default)]
    pub ocpd_device: DeviceKind,
    /// Branch circuit with more than one receptacle outlet for cord-and-plug loads (240.4(B)(1)
    /// then forbids the next-size-up rule).
    #[serde(default)]
    pub multioutlet_receptacle_circuit: bool,
    /// NEC edition.
    #[serde(default)]
    pub edition: Edition,
}

fn three() -> u32 {
    3
}

/// How the allowable ampacity of one size was obtained.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AmpacityChain {
    /// Conductor size.
    pub size: ConductorSize,
    /// Table 310.16 ampacity in the insulation column.
    pub table_ampacity: f64,
    /// Insulation column used.
    pub insulation_column: TempRating,
    /// Temperature correction factor.
    pub temperature_correction: f64,
    /// Adjustment factor for current-carrying conductors.
    pub adjustment: f64,
    /// table × correction × adjustment: the conductor's ampacity under the conditions of use.
    pub corrected_ampacity: f64,
    /// Terminal column used (the lower of terminal and insulation ratings).
    pub terminal_column: TempRating,
    /// Table 310.16 ampacity in the terminal column (110.14(C) limit on the load).
    pub terminal_ampacity: f64,
    /// The lower of the corrected and terminal ampacities.
    pub usable_ampacity: f64,
}

/// One rule checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleCheck {
    /// NEC reference.
    pub rule: String,
    /// What was compared, with numbers.
    pub detail: String,
    /// Whether it passed.
    pub pass: bool,
}

/// Result of checking one conductor size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConductorCheckResult {
    /// The inputs used.
    pub input: ConductorSizingInput,
    /// Size checked.
    pub size: ConductorSize,
    /// The ampacity chain.
    pub ampacity: AmpacityChain,
    /// 125 % continuous + 100 % noncontinuous, amperes.
    pub load_with_125pct_continuous: f64,
    /// Continuous + noncontinuous, amperes.
    pub load: f64,
    /// OCPD rating the conductor was checked against.
    pub ocpd_rating: f64,
    /// Whether the engine chose the OCPD rating.
    pub ocpd_chosen_by_engine: bool,
    /// Each rule, with pass/fail.
    pub checks: Vec<RuleCheck>,
    /// All rules pass.
    pub pass: bool,
    /// Method summary.
    pub method: String,
    /// NEC references used.
    pub references: Vec<String>,
    /// Assumptions made.
    pub assumptions: Vec<String>,
}

/// Result of [`size_conductor`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConductorSizingResult {
    /// The smallest size that passes every rule.
    pub size: ConductorSize,
    /// The full check of that size.
    pub check: ConductorCheckResult,
    /// Smaller sizes rejected and the first rule each failed.
    pub rejected: Vec<(ConductorSize, String)>,
}

struct Prepared {
    load125: f64,
    load: f64,
    ocpd: f64,
    ocpd_chosen: bool,
    ft: f64,
    fa: f64,
    terminal: TempRating,
    assumptions: Vec<String>,
}

fn prepare(input: &ConductorSizingInput) -> Result<Prepared, NecError> {
    let c = non_negative("continuous_load", input.continuous_load.0)?;
    let nc = non_negative("noncontinuous_load", input.noncontinuous_load.0)?;
    if c + nc <= 0.0 {
        return Err(NecError::invalid(
            "continuous_load + noncontinuous_load",
            c + nc,
            "the total load must be greater than 0 A",
        ));
    }
    let load125 = 1.25 * c + nc;
    let mut assumptions = Vec::new();
    let (ocpd, ocpd_chosen) = match input.ocpd_rating {
        Some(a) => (positive("ocpd_rating", a.0)?, false),
        None => (
            tables::standard_rating_at_or_above(load125, input.edition, input.ocpd_device)?,
            true,
        ),
    };
    let ambient = input.ambient_c.unwrap_or(30.0);
    if input.ambient_c.is_none() {
        assumptions.push("ambient 30 °C (not given): no temperature correction".into());
    }
    let ft = tables::temperature_correction(ambient, input.insulation)?;
    let fa = tables::adjustment_factor(input.current_carrying_conductors)?;
    let terminal = match input.terminal_rating {
        Some(t) => t,
        None => {
            let t = if ocpd <= 100.0 {
                TempRating::C60
            } else {
                TempRating::C75
            };
            assumptions.push(format!(
                "terminal rating not given: {t} per 110.14(C)(1) for a {ocpd} A circuit (equipment marked otherwise allows more)"
            ));
            t
        }
    };
    let terminal = terminal.min(input.insulation);
    Ok(Prepared {
        load125,
        load: c + nc,
        ocpd,
        ocpd_chosen,
        ft,
        fa,
        terminal,
        assumptions,
    })
}

fn correction_ref(edition: Edition) -> &'static str {
    match edition {
        Edition::Nec2017 => "NEC 2017 Table 310.15(B)(2)(a) (ambient correction)",
        Edition::Nec2020 => "NEC 2020 Table 310.15(B)(1) (ambient correction)",
        Edition::Nec2023 => "NEC 2023 Table 310.15(B)(1)(1) (ambient correction)",
    }
}

fn check_prepared(
    input: &ConductorSizingInput,
    p: &Prepared,
    size: ConductorSize,
) -> Result<ConductorCheckResult, NecError> {
    let row = tables::ampacity_row(size, input.material)?;
    let table_ampacity = tables::ampacity(size, input.material, input.insulation)?;
    let terminal_ampacity = tables::ampacity(size, input.material, p.terminal)?;
    let corrected = table_ampacity * p.ft * p.fa;
    let chain = AmpacityChain {
        size,
        table_ampacity,
        insulation_column: input.insulation,
        temperature_correction: p.ft,
        adjustment: p.fa,
        corrected_ampacity: corrected,
        terminal_column: p.terminal,
        terminal_ampacity,
        usable_ampacity: corrected.min(terminal_ampacity),
    };
    let mut checks = Vec::new();
    checks.push(RuleCheck {
        rule: "210.19(A)(1)(a) / 215.2(A)(1)(a) with 110.14(C)".into(),
        detail: format!(
            "{} ampacity {terminal_ampacity} A (terminal column, no correction) ≥ 125 % continuous + noncontinuous {:.2} A",
            p.terminal, p.load125
        ),
        pass: terminal_ampacity + 1e-9 >= p.load125,
    });
    checks.push(RuleCheck {
        rule: "210.19(A)(1)(b) / 215.2(A)(1)(b) with 310.15".into(),
        detail: format!(
            "corrected ampacity {table_ampacity} × {} × {} = {corrected:.2} A ≥ load {:.2} A",
            p.ft, p.fa, p.load
        ),
        pass: corrected + 1e-9 >= p.load,
    });
    if !p.ocpd_chosen {
        checks.push(RuleCheck {
            rule: "210.20(A) / 215.3".into(),
            detail: format!(
                "OCPD {} A ≥ 125 % continuous + noncontinuous {:.2} A",
                p.ocpd, p.load125
            ),
            pass: p.ocpd + 1e-9 >= p.load125,
        });
    }
    // 240.4: the conductor's ampacity (after correction/adjustment) must be protected.
    let protected = if p.ocpd <= corrected + 1e-9 {
        RuleCheck {
            rule: "240.4".into(),
            detail: format!("OCPD {} A ≤ ampacity {corrected:.2} A", p.ocpd),
            pass: true,
        }
    } else {
        let std_at_ampacity =
            tables::is_standard_rating(corrected, input.edition, input.ocpd_device)?;
        let next_up =
            tables::standard_rating_at_or_above(corrected, input.edition, input.ocpd_device)?;
        let ok = !input.multioutlet_receptacle_circuit
            && !std_at_ampacity
            && p.ocpd <= 800.0
            && (p.ocpd - next_up).abs() < 1e-9;
        RuleCheck {
            rule: "240.4(B)".into(),
            detail: format!(
                "OCPD {} A exceeds ampacity {corrected:.2} A; next standard rating above the ampacity is {next_up} A{}",
                p.ocpd,
                if input.multioutlet_receptacle_circuit {
                    " (not permitted: multioutlet receptacle branch circuit)"
                } else if p.ocpd > 800.0 {
                    " (not permitted above 800 A, 240.4(C))"
                } else {
                    ""
                }
            ),
            pass: ok,
        }
    };
    checks.push(protected);
    if let Some(cap) = row.max_ocpd_240_4d {
        checks.push(RuleCheck {
            rule: "240.4(D)".into(),
            detail: format!(
                "small conductor {size} {}: OCPD {} A ≤ {cap} A",
                input.material, p.ocpd
            ),
            pass: p.ocpd <= cap + 1e-9,
        });
    }
    let pass = checks.iter().all(|c| c.pass);
    let mut assumptions = p.assumptions.clone();
    assumptions.push("240.4(D) exceptions (240.4(E)/(G), e.g. motor circuits) not applied".into());
    Ok(ConductorCheckResult {
        input: input.clone(),
        size,
        ampacity: chain,
        load_with_125pct_continuous: p.load125,
        load: p.load,
        ocpd_rating: p.ocpd,
        ocpd_chosen_by_engine: p.ocpd_chosen,
        checks,
        pass,
        method: "ampacity = Table 310.16 × temperature correction × adjustment; terminals limit the load; OCPD protects the conductor".into(),
        references: vec![
            "NEC Table 310.16".into(),
            correction_ref(input.edition).into(),
            "NEC Table 310.15(C)(1) (adjustment)".into(),
            "NEC 110.14(C) (terminal temperature)".into(),
            "NEC 210.19(A)(1), 215.2(A)(1) (125 % continuous)".into(),
            "NEC 240.4(B), 240.4(D), 240.6(A)".into(),
        ],
        assumptions,
    })
}

/// Checks a given conductor size against the load and OCPD.
pub fn check_conductor(
    input: &ConductorSizingInput,
    size: ConductorSize,
) -> Result<ConductorCheckResult, NecError> {
    let p = prepare(input)?;
    check_prepared(input, &p, size)
}

/// Finds the smallest conductor of Table 310.16 (14 AWG Cu / 12 AWG Al and up) that passes
/// every rule of [`check_conductor`].
pub fn size_conductor(input: &ConductorSizingInput) -> Result<ConductorSizingResult, NecError> {
    let p = prepare(input)?;
    if !p.ocpd_chosen && p.ocpd + 1e-9 < p.load125 {
        // No conductor fixes an OCPD that is too small for the load.
        let min = tables::standard_rating_at_or_above(p.load125, input.edition, input.ocpd_device)?;
        return Err(NecError::NoSolution {
            what: "conductor size for this OCPD",
            reason: format!(
                "the {} A OCPD is below 125 % of the continuous load plus the noncontinuous load ({:.2} A): 210.20(A) / 215.3 require the OCPD to be increased to at least {min} A, with conductors sized for it",
                p.ocpd, p.load125
            ),
        });
    }
    let mut rejected = Vec::new();
    for size in tables::building_wire_sizes(input.material)? {
        let r = check_prepared(input, &p, size)?;
        if r.pass {
            return Ok(ConductorSizingResult {
                size,
                check: r,
                rejected,
            });
        }
        let first = r
            .checks
            .iter()
            .find(|c| !c.pass)
            .map(|c| format!("{}: {}", c.rule, c.detail))
            .unwrap_or_default();
        rejected.push((size, first));
    }
    Err(NecError::NoSolution {
        what: "single conductor size",
        reason: format!(
            "no size up to 2000 kcmil carries {:.1} A under these conditions; use parallel conductors (310.10(G))",
            p.load125
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(c: f64, nc: f64) -> ConductorSizingInput {
        ConductorSizingInput {
            continuous_load: Amps(c),
            noncontinuous_load: Amps(nc),
            material: Material::Copper,
            insulation: TempRating::C90,
            terminal_rating: None,
            ambient_c: None,
            current_carrying_conductors: 3,
            ocpd_rating: None,
            ocpd_device: DeviceKind::CircuitBreaker,
            multioutlet_receptacle_circuit: false,
            edition: Edition::Nec2023,
        }
    }

    #[test]
    fn small_conductor_rule_blocks_14_awg_on_20_a() {
        // 14 A on a 20 A breaker: 14 AWG 90 °C carries it (25 A, 60 °C terminals 15 A) but
        // 240.4(D) caps its OCPD at 15 A.
        let mut i = input(0.0, 14.0);
        i.ocpd_rating = Some(Amps(20.0));
        let r = size_conductor(&i).unwrap();
        assert_eq!(r.size, "12".parse().unwrap());
        assert!(r.rejected[0].1.contains("240.4(D)"));
    }

    #[test]
    fn errors_not_panics() {
        assert!(size_conductor(&input(0.0, 0.0)).is_err());
        assert!(size_conductor(&input(-5.0, 0.0)).is_err());
        let mut i = input(10.0, 0.0);
        i.current_carrying_conductors = 0;
        assert!(size_conductor(&i).is_err());
        let mut i = input(10.0, 0.0);
        i.ambient_c = Some(95.0);
        assert!(size_conductor(&i).is_err());
        // 5000 A cannot be one conductor.
        assert!(matches!(
            size_conductor(&input(5000.0, 0.0)),
            Err(NecError::NoSolution { .. }) | Err(NecError::NotInTable { .. })
        ));
        assert!(check_conductor(&input(10.0, 0.0), ConductorSize::Kcmil(2500)).is_err());
    }
}
