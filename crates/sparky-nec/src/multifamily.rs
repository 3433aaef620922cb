//! Service or feeder load of a multifamily dwelling (three or more units, and two units by
//! 220.85): the standard method of Part III over the feeder's summed units (the dwelling
//! engine's [`dwelling_standard_with`]) and the optional method of 220.84 (Table 220.84 on the
//! connected load), each with the house load, with the 220.84(A) conditions checked and the
//! lesser permitted load named.

use serde::{Deserialize, Serialize};

use super::dwelling::{
    dwelling_standard_with, service_rating, Appliance, DwellingLoadResult, DwellingStandardInput,
    LoadLine, StandardOptions,
};
use super::error::{non_negative, positive, NecError};
use super::tables;
use super::units::{Amps, Edition};

/// 1500 VA per small-appliance or laundry circuit (220.52, 220.84(C)(2)).
const CIRCUIT_VA: f64 = 1500.0;
/// Electric cooking assumed per unit for the 220.84(A)(2) exception.
const ASSUMED_COOKING_VA: f64 = 8000.0;

fn two() -> u32 {
    2
}
fn one() -> u32 {
    1
}

/// A group of identical dwelling units on the feeder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitType {
    /// What the units are ("2-bedroom, electric range").
    #[serde(default)]
    pub description: String,
    /// How many such units the feeder supplies.
    pub count: u32,
    /// Floor area of one unit, ft² (outside dimensions).
    pub floor_area_ft2: f64,
    /// Small-appliance circuits per unit (at least 2).
    #[serde(default = "two")]
    pub small_appliance_circuits: u32,
    /// Laundry circuits per unit (0 where a common laundry serves the tenants).
    #[serde(default = "one")]
    pub laundry_circuits: u32,
    /// Fastened-in-place appliances per unit (water heater, dishwasher, disposer...),
    /// nameplate.
    #[serde(default)]
    pub fastened_appliances: Vec<Appliance>,
    /// Clothes dryers per unit, nameplate W.
    #[serde(default)]
    pub dryers_w: Vec<f64>,
    /// Electric cooking appliances per unit over 1¾ kW, kW each.
    #[serde(default)]
    pub cooking_appliances_kw: Vec<f64>,
    /// Fixed electric space heating per unit, VA.
    #[serde(default)]
    pub heating_va: f64,
    /// Air conditioning per unit, VA.
    #[serde(default)]
    pub cooling_va: f64,
}

/// Inputs of [`multifamily_load`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MultifamilyInput {
    /// NEC edition.
    #[serde(default)]
    pub edition: Edition,
    /// The dwelling units the feeder or service supplies.
    pub unit_types: Vec<UnitType>,
    /// House (common-area) load already calculated by Part III, VA; added to both methods.
    #[serde(default)]
    pub house_load_va: f64,
    /// Line-to-line voltage (240 or 208).
    pub voltage: f64,
    /// A 3-phase, 4-wire feeder (208Y/120 V).
    #[serde(default)]
    pub three_phase: bool,
    /// Each dwelling unit is supplied by one feeder only (220.84(A)(1)); `None`: not stated.
    #[serde(default)]
    pub single_feeder_per_unit: Option<bool>,
    /// VA of the largest motor on the feeder (25 % added by the standard method).
    #[serde(default)]
    pub largest_motor_va: Option<f64>,
}

/// One method's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MethodLoad {
    /// Which method.
    pub method: String,
    /// Its lines, house load last.
    pub lines: Vec<LoadLine>,
    /// Total calculated load, VA.
    pub total_va: f64,
    /// Line current.
    pub amps: Amps,
    /// Smallest standard rating not below the current (and not below 100 A).
    pub minimum_rating: Amps,
    /// Neutral (220.61) when the method gives one.
    pub neutral_amps: Option<Amps>,
}

/// A condition of 220.84(A) and what the input says of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Condition {
    /// The section.
    pub reference: String,
    /// What it asks.
    pub condition: String,
    /// `Some(true)` met, `Some(false)` not met, `None` not stated in the input.
    pub met: Option<bool>,
    /// Why.
    pub note: String,
}

/// Result of [`multifamily_load`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MultifamilyResult {
    /// Edition used.
    pub edition: Edition,
    /// Dwelling units on the feeder.
    pub units: u32,
    /// Standard method (Part III), house load included.
    pub standard: MethodLoad,
    /// Optional method (220.84, or 220.85 for two units), house load included; `None` when
    /// the method cannot be used (why in `optional_not_permitted`).
    pub optional: Option<MethodLoad>,
    /// Table 220.84 factor used.
    pub demand_factor: Option<f64>,
    /// Why the optional method is not available.
    pub optional_not_permitted: Option<String>,
    /// The 220.84(A) conditions.
    pub conditions: Vec<Condition>,
    /// The lesser load the code permits, and why.
    pub governing: MethodLoad,
    /// Why `governing` is the one.
    pub governing_why: String,
    /// References.
    pub references: Vec<String>,
    /// Assumptions made.
    pub assumptions: Vec<String>,
}

fn amps_of(va: f64, input: &MultifamilyInput) -> f64 {
    if input.three_phase {
        va / (input.voltage * 3f64.sqrt())
    } else {
        va / input.voltage
    }
}

fn method_load(
    method: String,
    mut lines: Vec<LoadLine>,
    house: f64,
    neutral_amps: Option<Amps>,
    input: &MultifamilyInput,
) -> Result<MethodLoad, NecError> {
    if house > 0.0 {
        lines.push(LoadLine {
            item: "house load (calculated by Part III, given)".into(),
            reference: "NEC Article 220 Part III (220.84(B))".into(),
            connected_va: house,
            demand_va: house,
        });
    }
    let total: f64 = lines.iter().map(|l| l.demand_va).sum();
    let amps = amps_of(total, input);
    Ok(MethodLoad {
        method,
        lines,
        total_va: total,
        amps: Amps(amps),
        minimum_rating: Amps(service_rating(amps, input.edition)?),
        neutral_amps,
    })
}

/// The feeder's units as one standard-method input: Part III applies its demand factors to
/// the feeder's total, so the areas, circuits and appliances of every unit are summed.
fn summed(input: &MultifamilyInput) -> DwellingStandardInput {
    let mut s = DwellingStandardInput {
        evse_va: Vec::new(),
        edition: input.edition,
        floor_area_ft2: 0.0,
        small_appliance_circuits: 0,
        laundry_circuits: 0,
        fastened_appliances: Vec::new(),
        dryers_w: Vec::new(),
        cooking_appliances_kw: Vec::new(),
        heating_va: 0.0,
        cooling_va: 0.0,
        largest_motor_va: input.largest_motor_va,
        voltage: input.voltage,
    };
    for t in &input.unit_types {
        let n = t.count as usize;
        s.floor_area_ft2 += f64::from(t.count) * t.floor_area_ft2;
        s.small_appliance_circuits += t.count * t.small_appliance_circuits;
        s.laundry_circuits += t.count * t.laundry_circuits;
        for _ in 0..n {
            s.fastened_appliances
                .extend(t.fastened_appliances.iter().cloned());
            s.dryers_w.extend_from_slice(&t.dryers_w);
            s.cooking_appliances_kw
                .extend_from_slice(&t.cooking_appliances_kw);
        }
        s.heating_va += f64::from(t.count) * t.heating_va;
        s.cooling_va += f64::from(t.count) * t.cooling_va;
    }
    s
}

/// Connected load of one unit for Table 220.84 (220.84(C)): 3 VA/ft², 1500 VA per
/// small-appliance and laundry circuit, the nameplates of the fastened, cooking and dryer
/// appliances, and the larger of air conditioning and space heating.
fn unit_connected(t: &UnitType) -> Result<f64, NecError> {
    let mut va = positive("unit_types[].floor_area_ft2", t.floor_area_ft2)? * 3.0
        + f64::from(t.small_appliance_circuits + t.laundry_circuits) * CIRCUIT_VA;
    for a in &t.fastened_appliances {
        va += non_negative("fastened_appliances[].va", a.va)?;
    }
    for w in &t.dryers_w {
        va += non_negative("dryers_w", *w)?;
    }
    for kw in &t.cooking_appliances_kw {
        va += non_negative("cooking_appliances_kw", *kw)? * 1000.0;
    }
    let heat = non_negative("heating_va", t.heating_va)?;
    let cool = non_negative("cooling_va", t.cooling_va)?;
    Ok(va + heat.max(cool))
}

fn validate(input: &MultifamilyInput) -> Result<u32, NecError> {
    positive("voltage", input.voltage)?;
    non_negative("house_load_va", input.house_load_va)?;
    if input.unit_types.is_empty() {
        return Err(NecError::MissingInput {
            field: "unit_types",
            reason: "give the dwelling units (count, floor area, appliances)".into(),
        });
    }
    let mut units = 0u32;
    for t in &input.unit_types {
        if t.count == 0 {
            return Err(NecError::invalid(
                "unit_types[].count",
                0,
                "must be at least 1",
            ));
        }
        if t.small_appliance_circuits < 2 {
            return Err(NecError::invalid(
                "unit_types[].small_appliance_circuits",
                t.small_appliance_circuits,
                "each dwelling unit needs at least two (210.11(C)(1))",
            ));
        }
        units = units.checked_add(t.count).ok_or_else(|| {
            NecError::invalid("unit_types[].count", t.count, "too many dwelling units")
        })?;
    }
    if units > 10_000 {
        return Err(NecError::invalid(
            "unit_types[].count",
            units,
            "at most 10 000 dwelling units on one feeder",
        ));
    }
    if units < 2 {
        return Err(NecError::invalid(
            "unit_types[].count",
            units,
            "one dwelling unit is not a multifamily load: use the one-unit methods (220.82 or Part III)",
        ));
    }
    Ok(units)
}

/// Standard and optional loads of a multifamily feeder or service.
pub fn multifamily_load(input: &MultifamilyInput) -> Result<MultifamilyResult, NecError> {
    let units = validate(input)?;
    let e = input.edition;
    let house = input.house_load_va;
    let mut assumptions = Vec::new();
    let mut references = vec![
        match e {
            Edition::Nec2023 => "NEC 2023 220.41, Table 220.45 (standard method lighting)",
            Edition::Nec2020 => "NEC 2020 220.14(J), Table 220.42 (standard method lighting)",
            Edition::Nec2017 => "NEC 2017 Table 220.12, Table 220.42 (standard method lighting)",
        }
        .to_string(),
        "NEC 220.53, 220.54, 220.55, 220.60, 220.61".into(),
        "NEC 220.84, Table 220.84".into(),
    ];

    // Standard method: the dwelling engine over the summed units.
    let std: DwellingLoadResult = dwelling_standard_with(
        &summed(input),
        StandardOptions {
            three_phase: input.three_phase,
            cooking_least: true,
        },
    )?;
    assumptions.extend(std.assumptions.iter().cloned());
    let standard = method_load(
        format!("standard method, Part III, {units} units"),
        std.lines.clone(),
        house,
        std.neutral_amps,
        input,
    )?;

    // 220.84(A) conditions.
    let without_cooking: u32 = input
        .unit_types
        .iter()
        .filter(|t| t.cooking_appliances_kw.is_empty())
        .map(|t| t.count)
        .sum();
    let without_hvac: u32 = input
        .unit_types
        .iter()
        .filter(|t| t.heating_va <= 0.0 && t.cooling_va <= 0.0)
        .map(|t| t.count)
        .sum();
    let conditions = vec![
        Condition {
            reference: "NEC 220.84(A)(1)".into(),
            condition: "no dwelling unit is supplied by more than one feeder".into(),
            met: input.single_feeder_per_unit,
            note: match input.single_feeder_per_unit {
                Some(true) => "stated".into(),
                Some(false) => {
                    "a unit has more than one feeder: the optional method does not apply".into()
                }
                None => "not stated: assumed, confirm on the riser diagram".into(),
            },
        },
        Condition {
            reference: "NEC 220.84(A)(2)".into(),
            condition: "each dwelling unit has electric cooking equipment".into(),
            met: Some(without_cooking == 0),
            note: if without_cooking == 0 {
                "every unit has an electric cooking appliance".into()
            } else {
                format!("{without_cooking} unit(s) without electric cooking: the exception compares the standard method without cooking with the optional method plus 8 kW per unit, and permits the lesser")
            },
        },
        Condition {
            reference: "NEC 220.84(A)(3)".into(),
            condition: "each dwelling unit has electric space heating or air conditioning, or both"
                .into(),
            met: Some(without_hvac == 0),
            note: if without_hvac == 0 {
                "every unit has heating or air conditioning".into()
            } else {
                format!("{without_hvac} unit(s) with neither: the optional method does not apply")
            },
        },
    ];
    if input.single_feeder_per_unit.is_none() {
        assumptions.push(
            "each dwelling unit supplied by one feeder only (220.84(A)(1)), not stated".into(),
        );
    }

    // Optional method.
    let mut demand_factor = None;
    let mut not_permitted = None;
    let mut optional = None;
    let connected: Vec<(f64, &UnitType)> = input
        .unit_types
        .iter()
        .map(|t| unit_connected(t).map(|va| (va, t)))
        .collect::<Result<_, _>>()?;
    let total_connected: f64 = connected
        .iter()
        .map(|(va, t)| va * f64::from(t.count))
        .sum();
    if input.single_feeder_per_unit == Some(false) {
        not_permitted =
            Some("a dwelling unit is supplied by more than one feeder (220.84(A)(1))".into());
    } else if without_hvac > 0 {
        not_permitted = Some(format!(
            "{without_hvac} unit(s) have neither electric space heating nor air conditioning (220.84(A)(3))"
        ));
    } else if units == 2 {
        // 220.85: two units may use three identical units under 220.84, the lesser permitted.
        match input.unit_types.as_slice() {
            [t] if t.count == 2 && without_cooking == 0 => {
                let f = tables::multifamily_demand_factor(3)?;
                demand_factor = Some(f);
                let three = connected[0].0 * 3.0;
                optional = Some(method_load(
                    "three identical units by 220.84 (220.85)".into(),
                    vec![LoadLine {
                        item: format!(
                            "3 identical units × {:.0} VA connected × {:.0} % (Table 220.84, 3 units)",
                            connected[0].0,
                            f * 100.0
                        ),
                        reference: "NEC 220.85, 220.84, Table 220.84".into(),
                        connected_va: three,
                        demand_va: three * f,
                    }],
                    house,
                    None,
                    input,
                )?);
                references.push("NEC 220.85".into());
            }
            _ => {
                not_permitted = Some(
                    "two units: 220.85 compares with three identical units, so both units must be identical and have electric cooking".into(),
                );
            }
        }
    } else {
        let f = tables::multifamily_demand_factor(units)?;
        demand_factor = Some(f);
        let mut lines: Vec<LoadLine> = connected
            .iter()
            .map(|(va, t)| LoadLine {
                item: format!(
                    "{} × {} connected {:.0} VA (3 VA/ft², 1500 VA circuits, nameplates, larger of heating and AC)",
                    t.count,
                    if t.description.is_empty() { "unit" } else { t.description.as_str() },
                    va
                ),
                reference: "NEC 220.84(C)".into(),
                connected_va: va * f64::from(t.count),
                demand_va: va * f64::from(t.count),
            })
            .collect();
        let mut dwelling_total = total_connected;
        if without_cooking > 0 {
            let added = ASSUMED_COOKING_VA * f64::from(without_cooking);
            lines.push(LoadLine {
                item: format!("{without_cooking} unit(s) without electric cooking: 8 kW each for the comparison"),
                reference: "NEC 220.84(A)(2) Exception".into(),
                connected_va: added,
                demand_va: added,
            });
            dwelling_total += added;
        }
        lines.push(LoadLine {
            item: format!(
                "Table 220.84 demand factor for {units} units: {:.0} %",
                f * 100.0
            ),
            reference: "NEC Table 220.84".into(),
            connected_va: 0.0,
            demand_va: dwelling_total * f - dwelling_total,
        });
        optional = Some(method_load(
            format!("optional method, 220.84, {units} units"),
            lines,
            house,
            None,
            input,
        )?);
    }

    let (governing, governing_why) = match &optional {
        Some(o) if o.total_va < standard.total_va => (
            o.clone(),
            if without_cooking > 0 {
                "the standard method without cooking exceeds the optional method with 8 kW per unit, so the lesser (the optional) is permitted (220.84(A)(2) Exception)".to_string()
            } else if units == 2 {
                "220.85: three identical units by 220.84 give less than the standard method; the lesser is permitted".into()
            } else {
                "the optional method (220.84) gives the lesser load; either method is permitted".into()
            },
        ),
        Some(_) if without_cooking > 0 => (
            standard.clone(),
            "the standard method without cooking does not exceed the optional method with 8 kW per unit: the standard method applies (220.84(A)(2) Exception)".into(),
        ),
        Some(_) => (
            standard.clone(),
            "the standard method gives the lesser load; either method is permitted".into(),
        ),
        None => (
            standard.clone(),
            format!(
                "only the standard method applies: {}",
                not_permitted.clone().unwrap_or_default()
            ),
        ),
    };
    if house <= 0.0 {
        assumptions.push(
            "no house load given: common-area lighting, receptacles, laundry and equipment are calculated by Part III and added to both methods (220.84(B))".into(),
        );
    }
    if input.three_phase {
        assumptions.push("3-phase, 4-wire feeder: current = VA ÷ (V × √3), loads balanced".into());
    }
    assumptions
        .push("optional method neutral: by 220.61 (the standard method's neutral is given)".into());
    Ok(MultifamilyResult {
        edition: e,
        units,
        standard,
        optional,
        demand_factor,
        optional_not_permitted: not_permitted,
        conditions,
        governing,
        governing_why,
        references,
        assumptions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One unit type of Annex D Example D4(b): 840 ft², common laundry, 8 kW range, four
    /// 1.5 kW heaters, 2.5 kW water heater.
    fn d4b_unit(count: u32) -> UnitType {
        UnitType {
            description: "D4(b) unit".into(),
            count,
            floor_area_ft2: 840.0,
            small_appliance_circuits: 2,
            laundry_circuits: 0,
            fastened_appliances: vec![Appliance {
                description: "water heater".into(),
                va: 2500.0,
                volts: 240.0,
            }],
            dryers_w: vec![],
            cooking_appliances_kw: vec![8.0],
            heating_va: 6000.0,
            cooling_va: 0.0,
        }
    }

    fn input(types: Vec<UnitType>) -> MultifamilyInput {
        MultifamilyInput {
            edition: Edition::Nec2023,
            unit_types: types,
            house_load_va: 0.0,
            voltage: 240.0,
            three_phase: false,
            single_feeder_per_unit: Some(true),
            largest_motor_va: None,
        }
    }

    #[test]
    fn table_220_84_bands() {
        for (n, f) in [
            (3, 0.45),
            (5, 0.45),
            (6, 0.44),
            (10, 0.43),
            (11, 0.42),
            (20, 0.38),
            (21, 0.37),
            (40, 0.28),
            (61, 0.24),
            (62, 0.23),
            (500, 0.23),
        ] {
            assert_eq!(tables::multifamily_demand_factor(n).unwrap(), f, "{n}");
        }
        assert!(tables::multifamily_demand_factor(2).is_err());
    }

    #[test]
    fn conditions_decide_the_optional_method() {
        // No heating or AC: not permitted.
        let mut t = d4b_unit(10);
        t.heating_va = 0.0;
        let r = multifamily_load(&input(vec![t])).unwrap();
        assert!(r.optional.is_none());
        assert!(r.optional_not_permitted.unwrap().contains("220.84(A)(3)"));
        assert_eq!(r.governing.total_va, r.standard.total_va);
        // A second feeder per unit: not permitted.
        let mut i = input(vec![d4b_unit(10)]);
        i.single_feeder_per_unit = Some(false);
        assert!(multifamily_load(&i).unwrap().optional.is_none());
        // Not stated: computed, with the assumption named.
        i.single_feeder_per_unit = None;
        let r = multifamily_load(&i).unwrap();
        assert!(r.optional.is_some());
        assert!(r.assumptions.iter().any(|a| a.contains("220.84(A)(1)")));
    }

    #[test]
    fn units_without_cooking_take_the_exception() {
        // 10 units with gas ranges: optional method is computed with 8 kW per unit.
        let mut t = d4b_unit(10);
        t.cooking_appliances_kw.clear();
        let r = multifamily_load(&input(vec![t.clone()])).unwrap();
        let o = r.optional.clone().unwrap();
        let per_unit = 840.0 * 3.0 + 3000.0 + 2500.0 + 6000.0;
        let want = (per_unit + 8000.0) * 10.0 * 0.43;
        assert!((o.total_va - want).abs() < 1e-6, "{o:?}");
        assert!(r.governing_why.contains("Exception"));
        assert_eq!(
            r.governing.total_va,
            o.total_va.min(r.standard.total_va),
            "the lesser is permitted"
        );
    }

    #[test]
    fn two_units_compare_three_identical_units() {
        let r = multifamily_load(&input(vec![d4b_unit(2)])).unwrap();
        let o = r.optional.unwrap();
        let per_unit = 840.0 * 3.0 + 3000.0 + 8000.0 + 2500.0 + 6000.0;
        assert!((o.total_va - per_unit * 3.0 * 0.45).abs() < 1e-6);
        assert_eq!(r.demand_factor, Some(0.45));
        // Different units: 220.85 needs identical ones.
        let mut other = d4b_unit(1);
        other.floor_area_ft2 = 900.0;
        let r = multifamily_load(&input(vec![d4b_unit(1), other])).unwrap();
        assert!(r.optional.is_none());
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(multifamily_load(&input(vec![])).is_err());
        assert!(multifamily_load(&input(vec![d4b_unit(1)])).is_err());
        let mut t = d4b_unit(4);
        t.small_appliance_circuits = 1;
        assert!(multifamily_load(&input(vec![t])).is_err());
        let mut t = d4b_unit(4);
        t.floor_area_ft2 = f64::NAN;
        assert!(multifamily_load(&input(vec![t])).is_err());
        let mut i = input(vec![d4b_unit(4)]);
        i.house_load_va = -1.0;
        assert!(multifamily_load(&i).is_err());
    }
}
