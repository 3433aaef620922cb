//! How many receptacle outlets, lengths of multioutlet assembly or luminaires one branch circuit
//! may supply, from the unit loads of 220.14 and the circuit's rating (V × A, at 80 % where the
//! load is continuous, 210.19(A)/210.20(A)).
//!
//! Unit loads (each confirmed by two publishers, see `data/SOURCES.md`): 180 VA per single,
//! duplex or triplex receptacle on one yoke (220.14(I)); a fixed multioutlet assembly 180 VA per
//! 5 ft, or per 1 ft where the appliances are likely used at once (220.14(H)). A yoke with four
//! or more receptacles is not answered (one published copy of its unit load only). In a
//! dwelling the general-purpose receptacles carry no per-outlet load and the NEC sets no count
//! per circuit: they are part of the 3 VA/ft² general lighting load (2017/2020 220.14(J), 2023
//! 220.41), which sizes the number of circuits instead.

use serde::{Deserialize, Serialize};

use super::error::{positive, NecError};
use super::units::{Amps, Edition, Phase, VoltAmperes, Volts};

/// 220.14(I): one single, duplex or triplex receptacle on one yoke.
pub const VA_PER_YOKE: f64 = 180.0;
/// 220.14(H): each length of fixed multioutlet assembly counts as one 180 VA outlet.
pub const VA_PER_ASSEMBLY_LENGTH: f64 = 180.0;
/// 220.14(H)(1): the length, ft, when appliances are unlikely to be used at once.
pub const ASSEMBLY_LENGTH_FT: f64 = 5.0;
/// 220.14(H)(2): the length, ft, when appliances are likely to be used at once.
pub const ASSEMBLY_LENGTH_SIMULTANEOUS_FT: f64 = 1.0;
/// Continuous loads at 125 % of their current (210.19(A)(1), 210.20(A)).
pub const CONTINUOUS_FACTOR: f64 = 1.25;
/// Dwelling general lighting unit load, VA/ft² (2017/2020 220.14(J) with Table 220.12; 2023
/// 220.41).
pub const DWELLING_VA_PER_FT2: f64 = 3.0;

/// Dwelling or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CountOccupancy {
    /// A dwelling unit.
    Dwelling,
    /// Anything else.
    OtherThanDwelling,
}

/// What the circuit supplies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OutletKind {
    /// General-purpose receptacles: single, duplex or triplex on one yoke.
    Receptacle,
    /// Four or more receptacles on one yoke.
    QuadReceptacle,
    /// Fixed multioutlet assembly (plug strip).
    MultioutletAssembly {
        /// Appliances likely to be used at the same time.
        simultaneous: bool,
    },
    /// Luminaires of a given rating.
    Luminaire {
        /// Each luminaire's VA (ballast or driver input, not lamp watts).
        va_each: f64,
    },
}

/// One circuit and what it supplies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutletCountInput {
    /// Edition.
    pub edition: Edition,
    /// Occupancy.
    pub occupancy: CountOccupancy,
    /// What the circuit supplies.
    pub outlet: OutletKind,
    /// Circuit voltage (line to neutral for a one-pole circuit).
    pub volts: Volts,
    /// Phases (a three-phase circuit carries √3 × V × A).
    pub phase: Phase,
    /// Breaker or fuse rating.
    pub breaker: Amps,
    /// The load runs 3 h or more.
    pub continuous: bool,
    /// Dwelling floor area, ft², for the 3 VA/ft² circuit count.
    pub floor_area_ft2: Option<f64>,
}

/// The answer and its arithmetic.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutletCountResult {
    /// Circuit rating in VA (V × A, × √3 three-phase).
    pub circuit_va: VoltAmperes,
    /// VA the outlets may add up to (80 % of the rating for a continuous load).
    pub usable_va: VoltAmperes,
    /// VA each outlet or length counts for (with 125 % for a continuous luminaire load).
    pub va_each: Option<VoltAmperes>,
    /// The most outlets (receptacle yokes or luminaires) the circuit may supply; `None` where
    /// the NEC sets no count.
    pub max_count: Option<u32>,
    /// For a multioutlet assembly: the longest run, ft.
    pub max_length_ft: Option<f64>,
    /// Dwelling: circuits the 3 VA/ft² load needs at this rating, when the area is given.
    pub dwelling_circuits_needed: Option<u32>,
    /// The steps, in words and numbers.
    pub arithmetic: Vec<String>,
    /// Sections relied on.
    pub references: Vec<String>,
    /// What the count does not decide.
    pub notes: Vec<String>,
}

fn dwelling_section(edition: Edition) -> &'static str {
    match edition {
        Edition::Nec2017 | Edition::Nec2020 => "220.14(J)",
        Edition::Nec2023 => "220.41",
    }
}

/// The most outlets of one kind a branch circuit may supply.
pub fn outlet_count(input: &OutletCountInput) -> Result<OutletCountResult, NecError> {
    let v = positive("volts", input.volts.0)?;
    let a = positive("breaker", input.breaker.0)?;
    let factor = if input.phase == Phase::Three {
        3f64.sqrt()
    } else {
        1.0
    };
    let circuit = v * a * factor;
    let usable = if input.continuous {
        circuit / CONTINUOUS_FACTOR
    } else {
        circuit
    };
    let mut arithmetic = vec![format!(
        "circuit: {v} V × {a} A{} = {:.0} VA",
        if factor > 1.0 { " × √3" } else { "" },
        circuit
    )];
    if input.continuous {
        arithmetic.push(format!(
            "continuous load: {circuit:.0} VA / 1.25 = {usable:.0} VA usable (80 %, 210.19(A)(1) and 210.20(A))"
        ));
    }
    let mut references = vec!["210.19(A)(1)".to_string(), "210.20(A)".to_string()];
    let mut notes = Vec::new();
    let mut out = OutletCountResult {
        circuit_va: VoltAmperes(circuit),
        usable_va: VoltAmperes(usable),
        va_each: None,
        max_count: None,
        max_length_ft: None,
        dwelling_circuits_needed: None,
        arithmetic: Vec::new(),
        references: Vec::new(),
        notes: Vec::new(),
    };
    let dwelling = input.occupancy == CountOccupancy::Dwelling;
    match &input.outlet {
        OutletKind::Receptacle | OutletKind::QuadReceptacle if dwelling => {
            let s = dwelling_section(input.edition);
            references.push(s.into());
            notes.push(format!(
                "dwelling general-purpose receptacles: the NEC sets no number per circuit and gives them no per-outlet load; they are part of the {DWELLING_VA_PER_FT2} VA/ft² general lighting load ({s}). Small-appliance, laundry and bathroom circuits are counted by circuit, 1500 VA each for the load calculation (220.52), not by outlet"
            ));
            if let Some(area) = input.floor_area_ft2 {
                let area = positive("floor_area_ft2", area)?;
                let load = area * DWELLING_VA_PER_FT2;
                let n = (load / circuit).ceil() as u32;
                arithmetic.push(format!(
                    "{area} ft² × {DWELLING_VA_PER_FT2} VA/ft² = {load:.0} VA; / {circuit:.0} VA per circuit = {:.2}, so at least {n} general-purpose circuits of this rating",
                    load / circuit
                ));
                out.dwelling_circuits_needed = Some(n);
                references.push("210.11(A)".into());
            }
        }
        OutletKind::Receptacle => {
            let n = (usable / VA_PER_YOKE + 1e-9).floor() as u32;
            arithmetic.push(format!(
                "{usable:.0} VA / {VA_PER_YOKE} VA per yoke = {:.2}, so {n} receptacle outlets (single, duplex or triplex)",
                usable / VA_PER_YOKE
            ));
            out.va_each = Some(VoltAmperes(VA_PER_YOKE));
            out.max_count = Some(n);
            references.push("220.14(I)".into());
            notes.push("general-purpose receptacles are usually not a continuous load; a receptacle for a specific load is counted at that load (220.14(A))".into());
        }
        OutletKind::QuadReceptacle => {
            return Err(NecError::NotVerified {
                table: "NEC 220.14(I)",
                key: "four or more receptacles on one yoke".into(),
                hint: "one published copy of that unit load was found; count such a device from its own load or ask the AHJ",
            });
        }
        OutletKind::MultioutletAssembly { simultaneous } => {
            let len = if *simultaneous {
                ASSEMBLY_LENGTH_SIMULTANEOUS_FT
            } else {
                ASSEMBLY_LENGTH_FT
            };
            let n = (usable / VA_PER_ASSEMBLY_LENGTH + 1e-9).floor() as u32;
            let ft = f64::from(n) * len;
            arithmetic.push(format!(
                "{usable:.0} VA / {VA_PER_ASSEMBLY_LENGTH} VA per {len} ft length = {n} lengths, so at most {ft} ft of assembly ({})",
                if *simultaneous { "appliances used at the same time" } else { "appliances unlikely to be used at the same time" }
            ));
            out.va_each = Some(VoltAmperes(VA_PER_ASSEMBLY_LENGTH));
            out.max_count = Some(n);
            out.max_length_ft = Some(ft);
            references.push("220.14(H)".into());
            if dwelling {
                notes.push("220.14(H) is written for other than dwelling units; in a dwelling the assembly is part of the general lighting or small-appliance load".into());
            }
        }
        OutletKind::Luminaire { va_each } => {
            let va = positive("va_each", *va_each)?;
            let each = if input.continuous {
                va * CONTINUOUS_FACTOR
            } else {
                va
            };
            let n = (circuit / each + 1e-9).floor() as u32;
            arithmetic.push(if input.continuous {
                format!(
                    "{va} VA × 1.25 = {each:.2} VA per luminaire; {circuit:.0} VA / {each:.2} = {:.2}, so {n} luminaires",
                    circuit / each
                )
            } else {
                format!("{circuit:.0} VA / {va} VA = {:.2}, so {n} luminaires", circuit / va)
            });
            out.va_each = Some(VoltAmperes(each));
            out.max_count = Some(n);
            references.push("220.14(D)".into());
            references.push("210.23".into());
            notes.push("use the luminaire's input VA (ballast or driver), not lamp watts".into());
        }
    }
    out.arithmetic = arithmetic;
    out.references = references;
    out.notes = notes;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(outlet: OutletKind, volts: f64, breaker: f64) -> OutletCountInput {
        OutletCountInput {
            edition: Edition::Nec2023,
            occupancy: CountOccupancy::OtherThanDwelling,
            outlet,
            volts: Volts(volts),
            phase: Phase::Single,
            breaker: Amps(breaker),
            continuous: false,
            floor_area_ft2: None,
        }
    }

    #[test]
    fn receptacles_15_and_20_amp() {
        assert_eq!(
            outlet_count(&input(OutletKind::Receptacle, 120.0, 20.0))
                .unwrap()
                .max_count,
            Some(13)
        );
        assert_eq!(
            outlet_count(&input(OutletKind::Receptacle, 120.0, 15.0))
                .unwrap()
                .max_count,
            Some(10)
        );
        // Continuous: 2400 / 1.25 = 1920 VA, 10 receptacles.
        let mut i = input(OutletKind::Receptacle, 120.0, 20.0);
        i.continuous = true;
        assert_eq!(outlet_count(&i).unwrap().max_count, Some(10));
    }

    #[test]
    fn luminaires_at_125_percent() {
        // 277 V 20 A: 5540 VA; 100 VA luminaires continuous: 125 VA each, 44.
        let mut i = input(OutletKind::Luminaire { va_each: 100.0 }, 277.0, 20.0);
        i.continuous = true;
        let r = outlet_count(&i).unwrap();
        assert_eq!(r.max_count, Some(44));
        assert!((r.va_each.unwrap().0 - 125.0).abs() < 1e-9);
    }

    #[test]
    fn dwelling_has_no_count_and_gives_circuits() {
        let mut i = input(OutletKind::Receptacle, 120.0, 15.0);
        i.occupancy = CountOccupancy::Dwelling;
        i.floor_area_ft2 = Some(2000.0);
        let r = outlet_count(&i).unwrap();
        assert_eq!(r.max_count, None);
        // 6000 VA / 1800 VA = 3.33: 4 circuits.
        assert_eq!(r.dwelling_circuits_needed, Some(4));
        assert!(r.references.contains(&"220.41".to_string()));
        i.edition = Edition::Nec2020;
        assert!(outlet_count(&i)
            .unwrap()
            .references
            .contains(&"220.14(J)".to_string()));
    }

    #[test]
    fn errors() {
        assert!(outlet_count(&input(OutletKind::Receptacle, 0.0, 20.0)).is_err());
        assert!(outlet_count(&input(OutletKind::QuadReceptacle, 120.0, 20.0)).is_err());
        assert!(
            outlet_count(&input(OutletKind::Luminaire { va_each: -5.0 }, 120.0, 20.0)).is_err()
        );
    }
}
