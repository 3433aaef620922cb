//! General lighting load of non-dwelling occupancies: floor area × the unit load of 2020
//! Table 220.12 / 2023 Table 220.42(A), the demand factors of 2020 Table 220.42 / 2023 Table
//! 220.45 for the occupancies that have them, and 125 % for a continuous load (210.20(A),
//! 215.2(A)(1), 215.3, 230.42(A)).

use serde::{Deserialize, Serialize};

use super::error::{positive, NecError};
use super::tables::{self, UnitLoadRow};
use super::units::{Amps, Edition, Phase, Volts};

fn yes() -> bool {
    true
}

/// Inputs for [`general_lighting_load`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneralLightingInput {
    /// NEC edition (selects the table).
    #[serde(default)]
    pub edition: Edition,
    /// Occupancy as named in the table (case-insensitive; a unique part of a name also matches).
    pub occupancy: String,
    /// Floor area, ft² (outside dimensions, 220.11 / 220.5(C)).
    pub area_ft2: f64,
    /// The lighting runs three hours or more (normal for these occupancies): 125 % applies.
    #[serde(default = "yes")]
    pub continuous: bool,
    /// System voltage (line to line for three-phase), for the current.
    #[serde(default)]
    pub voltage: Option<Volts>,
    /// Phases, for the current.
    #[serde(default)]
    pub phase: Option<Phase>,
}

/// One demand-factor tier applied.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DemandTier {
    /// VA in this tier.
    pub va: f64,
    /// Factor.
    pub factor: f64,
    /// VA after the factor.
    pub demand_va: f64,
}

/// Result of [`general_lighting_load`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GeneralLightingResult {
    /// Occupancy row used.
    pub occupancy: String,
    /// Edition.
    pub edition: Edition,
    /// Unit load, VA/ft².
    pub unit_load_va_per_ft2: f64,
    /// Area × unit load, VA.
    pub connected_va: f64,
    /// Demand-factor tiers applied (empty: 100 %).
    pub demand_tiers: Vec<DemandTier>,
    /// Load after demand factors, VA.
    pub demand_va: f64,
    /// 1.25 for a continuous load, else 1.0.
    pub continuous_factor: f64,
    /// Load for sizing the OCPD and conductors (demand × continuous factor), VA.
    pub sizing_va: f64,
    /// Current of the demand load, when voltage and phase were given.
    pub demand_amps: Option<Amps>,
    /// Current for sizing (× 1.25 when continuous), when voltage and phase were given.
    pub sizing_amps: Option<Amps>,
    /// References.
    pub references: Vec<String>,
    /// Assumptions and warnings.
    pub assumptions: Vec<String>,
}

/// Finds the unit-load row: exact name first, then a unique partial match; otherwise the error
/// lists every occupancy of the table.
fn find_row(occupancy: &str, edition: Edition) -> Result<&'static UnitLoadRow, NecError> {
    if let Ok(r) = tables::unit_lighting_load(occupancy, edition) {
        return Ok(r);
    }
    let t = tables::tables()?;
    let rows = match edition {
        Edition::Nec2017 => &t.unit_loads_2017,
        Edition::Nec2020 => &t.unit_loads_2020,
        Edition::Nec2023 => &t.unit_loads_2023,
    };
    let want = occupancy.trim().to_ascii_lowercase();
    let hits: Vec<_> = rows
        .iter()
        .filter(|r| {
            let name = r.occupancy.to_ascii_lowercase();
            !want.is_empty() && (name.contains(&want) || want.contains(&name))
        })
        .collect();
    match hits.as_slice() {
        [one] => Ok(one),
        _ => Err(NecError::invalid(
            "occupancy",
            occupancy,
            format!(
                "{} occupancies are: {}",
                table_name(edition),
                rows.iter()
                    .map(|r| r.occupancy.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        )),
    }
}

fn table_name(edition: Edition) -> &'static str {
    match edition {
        Edition::Nec2017 => "NEC 2017 Table 220.12",
        Edition::Nec2020 => "NEC 2020 Table 220.12",
        Edition::Nec2023 => "NEC 2023 Table 220.42(A)",
    }
}

/// The demand-factor occupancy of a unit-load occupancy (only hospitals, hotels/motels and
/// warehouses have factors below 100 %).
fn demand_occupancy(unit_occupancy: &str) -> &'static str {
    let o = unit_occupancy.to_ascii_lowercase();
    if o.starts_with("hospital") {
        "Hospitals"
    } else if o.starts_with("hotels and motels") {
        "Hotels and motels incl. apartment houses without provision for cooking by tenants"
    } else if o.starts_with("warehouse") {
        "Warehouses (storage)"
    } else {
        "All others"
    }
}

/// General lighting load of a non-dwelling occupancy.
pub fn general_lighting_load(
    input: &GeneralLightingInput,
) -> Result<GeneralLightingResult, NecError> {
    let area = positive("area_ft2", input.area_ft2)?;
    let row = find_row(&input.occupancy, input.edition)?;
    let connected = area * row.va_per_ft2;
    let mut assumptions = Vec::new();
    if row.verification != "confirmed" {
        assumptions.push(format!(
            "the unit load of '{}' is uncertain: {}",
            row.occupancy, row.verification
        ));
    }
    let demand_occ = demand_occupancy(&row.occupancy);
    let mut tiers = Vec::new();
    if demand_occ != "All others" {
        for r in tables::tables()?
            .lighting_demand
            .iter()
            .filter(|r| r.occupancy == demand_occ)
        {
            let top = r.to_va.unwrap_or(f64::INFINITY).min(connected);
            let va = (top - r.from_va).max(0.0);
            if va > 0.0 {
                tiers.push(DemandTier {
                    va,
                    factor: r.factor,
                    demand_va: va * r.factor,
                });
            }
        }
        if demand_occ == "Hospitals" {
            assumptions.push("hospital demand factors do not apply to areas where the entire lighting is likely to be used at one time (operating rooms, ballrooms, dining rooms)".into());
        }
        if demand_occ.starts_with("Hotels") {
            assumptions.push("hotel demand factors do not apply to areas where the entire lighting is likely to be used at one time (ballrooms, dining rooms)".into());
        }
    }
    let demand = if tiers.is_empty() {
        connected
    } else {
        tiers.iter().map(|t| t.demand_va).sum()
    };
    let cf = if input.continuous { 1.25 } else { 1.0 };
    if input.continuous {
        assumptions.push("general lighting taken as a continuous load (3 h or more): 125 % for the OCPD and conductors".into());
    }
    let sizing = demand * cf;
    let amps = match (input.voltage, input.phase) {
        (Some(v), Some(p)) => {
            let v = positive("voltage", v.0)?;
            let div = match p {
                Phase::Single => v,
                Phase::Three => v * 3f64.sqrt(),
            };
            Some((demand / div, sizing / div))
        }
        (Some(_), None) | (None, Some(_)) => {
            assumptions.push("give both voltage and phase for the current".into());
            None
        }
        (None, None) => None,
    };
    let demand_ref = match input.edition {
        Edition::Nec2017 => "NEC 2017 220.42, Table 220.42",
        Edition::Nec2020 => "NEC 2020 220.42, Table 220.42",
        Edition::Nec2023 => "NEC 2023 220.45, Table 220.45",
    };
    let unit_ref = match input.edition {
        Edition::Nec2017 => "NEC 2017 220.12, Table 220.12",
        Edition::Nec2020 => "NEC 2020 220.12, Table 220.12",
        Edition::Nec2023 => "NEC 2023 220.42(A), Table 220.42(A)",
    };
    Ok(GeneralLightingResult {
        occupancy: row.occupancy.clone(),
        edition: input.edition,
        unit_load_va_per_ft2: row.va_per_ft2,
        connected_va: connected,
        demand_tiers: tiers,
        demand_va: demand,
        continuous_factor: cf,
        sizing_va: sizing,
        demand_amps: amps.map(|a| Amps(a.0)),
        sizing_amps: amps.map(|a| Amps(a.1)),
        references: vec![
            unit_ref.into(),
            demand_ref.into(),
            "NEC 210.20(A), 215.2(A)(1), 215.3, 230.42(A) (125 % continuous)".into(),
        ],
        assumptions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(occ: &str, area: f64, edition: Edition) -> GeneralLightingInput {
        GeneralLightingInput {
            edition,
            occupancy: occ.into(),
            area_ft2: area,
            continuous: true,
            voltage: None,
            phase: None,
        }
    }

    #[test]
    fn unknown_occupancy_lists_the_table() {
        let e = general_lighting_load(&input("spaceport", 100.0, Edition::Nec2023)).unwrap_err();
        let m = e.to_string();
        assert!(m.contains("Office") && m.contains("Warehouse"), "{m}");
        // "o" matches many rows: ambiguous, so an error too.
        assert!(general_lighting_load(&input("o", 100.0, Edition::Nec2023)).is_err());
        assert!(general_lighting_load(&input("Office", 0.0, Edition::Nec2023)).is_err());
    }

    #[test]
    fn partial_name_matches_one_row() {
        let r = general_lighting_load(&input("manufacturing", 1000.0, Edition::Nec2023)).unwrap();
        assert_eq!(r.occupancy, "Manufacturing facility");
        assert_eq!(r.connected_va, 2200.0);
    }
}
