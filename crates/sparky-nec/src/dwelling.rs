//! Dwelling-unit service and feeder load calculations (Article 220): the standard method
//! (Part III), the optional method for one dwelling unit (220.82) and the existing-dwelling
//! check for added loads (220.83). Numbering differences between 2020 and 2023 are reported.

use serde::{Deserialize, Serialize};

use super::error::{non_negative, positive, NecError};
use super::ev_charging::MIN_EVSE_LOAD_VA_2023;
use super::tables::{self, DeviceKind};
use super::units::{Amps, Edition};

/// Small-appliance and laundry branch circuits are 1500 VA each (220.52).
const CIRCUIT_VA: f64 = 1500.0;
/// Dwelling general lighting, VA/ft².
const DWELLING_VA_PER_FT2: f64 = 3.0;

/// An appliance or other load at its nameplate rating.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Appliance {
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Nameplate VA (W taken as VA).
    pub va: f64,
    /// 120 (line-to-neutral, loads the neutral) or 240 (line-to-line).
    #[serde(default = "v240")]
    pub volts: f64,
}

fn v240() -> f64 {
    240.0
}
fn two() -> u32 {
    2
}
fn one() -> u32 {
    1
}

/// One line of a load calculation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadLine {
    /// What the line is.
    pub item: String,
    /// NEC reference.
    pub reference: String,
    /// Connected (nameplate) VA.
    pub connected_va: f64,
    /// VA after demand factors.
    pub demand_va: f64,
}

fn refs(edition: Edition) -> (&'static str, &'static str) {
    // (dwelling general lighting unit load, lighting demand factor table)
    match edition {
        Edition::Nec2017 => ("NEC 2017 Table 220.12 (3 VA/ft²)", "NEC 2017 Table 220.42"),
        Edition::Nec2020 => (
            "NEC 2020 220.14(J) / 220.12 (3 VA/ft²)",
            "NEC 2020 Table 220.42",
        ),
        Edition::Nec2023 => ("NEC 2023 220.41 (3 VA/ft²)", "NEC 2023 Table 220.45"),
    }
}

/// Applies the dwelling tiers of the lighting demand table to `va`.
pub(crate) fn dwelling_lighting_demand(va: f64) -> Result<f64, NecError> {
    let rows: Vec<_> = tables::tables()?
        .lighting_demand
        .iter()
        .filter(|r| r.occupancy == "Dwelling units")
        .collect();
    if rows.is_empty() {
        return Err(NecError::not_in_table(
            "lighting demand factors",
            "Dwelling units",
        ));
    }
    Ok(rows
        .iter()
        .map(|r| {
            let top = r.to_va.unwrap_or(f64::INFINITY).min(va);
            (top - r.from_va).max(0.0) * r.factor
        })
        .sum())
}

/// Table 220.54 demand factor for `n` dryers.
pub fn dryer_demand_factor(n: u32) -> Result<f64, NecError> {
    if n == 0 {
        return Err(NecError::invalid("dryer count", 0, "must be at least 1"));
    }
    let r = tables::tables()?
        .dryer_demand
        .iter()
        .find(|r| n >= r.min && r.max.is_none_or(|m| n <= m))
        .ok_or_else(|| NecError::not_in_table("NEC Table 220.54", format!("{n} dryers")))?;
    Ok(r.base - r.step * (f64::from(n) - r.offset))
}

/// Household cooking appliance demand per Table 220.55 and its notes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RangeDemand {
    /// Appliance ratings in kW.
    pub appliances_kw: Vec<f64>,
    /// Demand in kW.
    pub demand_kw: f64,
    /// How each group was treated.
    pub steps: Vec<String>,
}

fn range_row(n: u32) -> Result<&'static tables::RangeDemandRow, NecError> {
    tables::tables()?
        .range_demand
        .iter()
        .find(|r| n >= r.min && r.max.is_none_or(|m| n <= m))
        .ok_or_else(|| NecError::not_in_table("NEC Table 220.55", format!("{n} appliances")))
}

/// Column C of Table 220.55 for `kw` appliances of not over 27 kW: the row for their number,
/// then Notes 1 and 2 (the average rating with ratings under 12 kW counted as 12 kW; +5 % of
/// the Column C value per kW, or major fraction, above 12 kW). Returns (kW, the step).
fn column_c(kw: &[f64], what: &str) -> Result<(f64, String), NecError> {
    let n = kw.len() as u32;
    let row = range_row(n)?;
    let base = match (row.col_c_kw, row.col_c_base_kw, row.col_c_kw_per_range) {
        (Some(c), _, _) => c,
        (None, Some(b), Some(p)) => b + p * f64::from(n),
        _ => {
            return Err(NecError::not_in_table(
                "NEC Table 220.55 Column C",
                format!("{n} ranges"),
            ))
        }
    };
    let avg = kw.iter().map(|k| k.max(12.0)).sum::<f64>() / f64::from(n);
    let excess = avg - 12.0;
    let whole = excess.floor();
    let kw_over = if excess - whole >= 0.5 {
        whole + 1.0
    } else {
        whole
    }
    .max(0.0);
    let d = base * (1.0 + 0.05 * kw_over);
    Ok((
        d,
        format!(
            "{n} appliance(s) {what}: Column C {base} kW, average {avg:.2} kW → +{}% (Notes 1, 2) = {d:.3} kW",
            5.0 * kw_over
        ),
    ))
}

/// Demand of household cooking appliances over 1¾ kW (Table 220.55): Column C with Notes 1
/// and 2 for appliances over 8¾ kW (up to 27 kW); Columns A and B (Note 3) for 1¾–8¾ kW.
pub fn range_demand(appliances_kw: &[f64]) -> Result<RangeDemand, NecError> {
    let mut large = Vec::new();
    let (mut col_a, mut col_b) = (Vec::new(), Vec::new());
    for &kw in appliances_kw {
        positive("cooking appliance kW", kw)?;
        if kw <= 1.75 {
            return Err(NecError::invalid(
                "cooking appliance kW",
                kw,
                "Table 220.55 covers appliances over 1¾ kW; list smaller ones as fastened-in-place appliances",
            ));
        }
        if kw > 27.0 {
            return Err(NecError::invalid(
                "cooking appliance kW",
                kw,
                "Table 220.55 covers appliances up to 27 kW; larger ones need a separate calculation",
            ));
        }
        if kw > 8.75 {
            large.push(kw);
        } else if kw < 3.5 {
            col_a.push(kw);
        } else {
            col_b.push(kw);
        }
    }
    let mut demand = 0.0;
    let mut steps = Vec::new();
    if !large.is_empty() {
        let (d, step) = column_c(&large, "over 8¾ kW")?;
        steps.push(step);
        demand += d;
    }
    for (group, col, name) in [(&col_a, 'A', "under 3½ kW"), (&col_b, 'B', "3½–8¾ kW")] {
        if group.is_empty() {
            continue;
        }
        let n = group.len() as u32;
        let row = range_row(n)?;
        let pct = if col == 'A' {
            row.col_a_pct
        } else {
            row.col_b_pct
        };
        let sum: f64 = group.iter().sum();
        let d = sum * pct / 100.0;
        steps.push(format!(
            "{n} appliance(s) {name}: {sum} kW × Column {col} {pct} % = {d:.3} kW (Note 3)"
        ));
        demand += d;
    }
    Ok(RangeDemand {
        appliances_kw: appliances_kw.to_vec(),
        demand_kw: demand,
        steps,
    })
}

/// Table 220.55 by whichever permitted way gives the lesser demand: [`range_demand`] (Column C
/// over 8¾ kW, Columns A and B by Note 3 below) or Column C for every appliance (Column C
/// covers ranges not over 12 kW; Note 3 only permits the other columns). With many 8 kW
/// ranges Column C is the lesser (Annex D Example D4(a): ten 8 kW ranges, 25 kW).
pub fn range_demand_least(appliances_kw: &[f64]) -> Result<RangeDemand, NecError> {
    let split = range_demand(appliances_kw)?;
    if appliances_kw.is_empty() || appliances_kw.iter().all(|k| *k > 8.75) {
        return Ok(split);
    }
    let (c, step) = column_c(appliances_kw, "by Column C")?;
    if c < split.demand_kw - 1e-9 {
        Ok(RangeDemand {
            appliances_kw: appliances_kw.to_vec(),
            demand_kw: c,
            steps: vec![format!(
                "{step}; less than Note 3 ({:.3} kW), so Column C is used",
                split.demand_kw
            )],
        })
    } else {
        let mut r = split;
        r.steps
            .push(format!("Column C for all would give {c:.3} kW, not less"));
        Ok(r)
    }
}

/// Single-phase ranges on a 3-phase, 4-wire feeder (220.55): the demand is worked for twice
/// the largest number connected between any two phases (ranges spread evenly, so ⌈n/3⌉ per
/// pair, the largest ratings counted), by [`range_demand_least`]; each phase carries half of
/// it, so the 3-phase equivalent is 1.5 times that demand (Annex D Example D5(a)).
pub fn range_demand_three_phase(appliances_kw: &[f64]) -> Result<RangeDemand, NecError> {
    let n = appliances_kw.len();
    let per_pair = n.div_ceil(3);
    let mut sorted = appliances_kw.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let mut twice = sorted[..per_pair].to_vec();
    twice.extend_from_slice(&sorted[..per_pair]);
    let r = range_demand_least(&twice)?;
    let d = 1.5 * r.demand_kw;
    let mut steps = vec![format!(
        "{n} single-phase appliance(s) on a 3-phase feeder: at most {per_pair} between any two phases, worked as 2 × {per_pair} = {}",
        twice.len()
    )];
    steps.extend(r.steps);
    steps.push(format!(
        "{:.3} kW ÷ 2 per phase × 3 phases = {d:.3} kW 3-phase equivalent (220.55)",
        r.demand_kw
    ));
    Ok(RangeDemand {
        appliances_kw: appliances_kw.to_vec(),
        demand_kw: d,
        steps,
    })
}

/// Inputs for the standard method for one dwelling unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DwellingStandardInput {
    /// NEC edition.
    #[serde(default)]
    pub edition: Edition,
    /// Floor area in ft² (outside dimensions; excluding open porches, garages, unfinished spaces).
    pub floor_area_ft2: f64,
    /// 20 A small-appliance branch circuits (at least 2, 210.11(C)(1)).
    #[serde(default = "two")]
    pub small_appliance_circuits: u32,
    /// Laundry branch circuits (at least 1).
    #[serde(default = "one")]
    pub laundry_circuits: u32,
    /// Appliances fastened in place (220.53): not ranges, dryers, space heating or AC.
    #[serde(default)]
    pub fastened_appliances: Vec<Appliance>,
    /// Clothes dryers, nameplate W each (5000 W minimum applied, 220.54).
    #[serde(default)]
    pub dryers_w: Vec<f64>,
    /// EV supply equipment, nameplate VA each, at 240 V: 100 % and outside the 220.53 demand
    /// factor; 2023 counts each at 7200 VA or the nameplate, whichever is larger (220.57).
    #[serde(default)]
    pub evse_va: Vec<f64>,
    /// Household cooking appliances over 1¾ kW, kW each (Table 220.55).
    #[serde(default)]
    pub cooking_appliances_kw: Vec<f64>,
    /// Fixed electric space heating, VA (220.51, 100 %).
    #[serde(default)]
    pub heating_va: f64,
    /// Air conditioning / heat pump compressor, VA.
    #[serde(default)]
    pub cooling_va: f64,
    /// VA of the largest motor; 25 % of it is added (220.50, 430.24).
    #[serde(default)]
    pub largest_motor_va: Option<f64>,
    /// Service voltage (line-to-line), normally 240.
    #[serde(default = "v240")]
    pub voltage: f64,
}

/// Result of a dwelling load calculation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DwellingLoadResult {
    /// Method name.
    pub method: String,
    /// Edition.
    pub edition: Edition,
    /// Each line of the calculation.
    pub lines: Vec<LoadLine>,
    /// Total calculated load, VA.
    pub total_va: f64,
    /// Total ÷ voltage.
    pub amps: Amps,
    /// Smallest standard rating not less than the calculated current and not less than 100 A
    /// (230.79(C)).
    pub minimum_service_rating: Amps,
    /// Neutral load per 220.61, VA (standard method only).
    pub neutral_va: Option<f64>,
    /// Neutral current.
    pub neutral_amps: Option<Amps>,
    /// References.
    pub references: Vec<String>,
    /// Assumptions made.
    pub assumptions: Vec<String>,
}

/// The smallest standard rating not below `amps` and not below 100 A (230.79(C)).
pub(crate) fn service_rating(amps: f64, edition: Edition) -> Result<f64, NecError> {
    let r =
        tables::standard_rating_at_or_above(amps.max(1.0), edition, DeviceKind::CircuitBreaker)?;
    Ok(r.max(100.0))
}

fn check_circuits(sa: u32, laundry: u32, assumptions: &mut Vec<String>) -> Result<(), NecError> {
    if sa < 2 {
        return Err(NecError::invalid(
            "small_appliance_circuits",
            sa,
            "a dwelling needs at least two (210.11(C)(1))",
        ));
    }
    if laundry == 0 {
        assumptions.push(
            "no laundry circuit: allowed only where no laundry is provided (210.11(C)(2))".into(),
        );
    }
    Ok(())
}

/// How [`dwelling_standard_with`] works beyond one dwelling unit on a 120/240 V service.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StandardOptions {
    /// A 3-phase, 4-wire feeder or service (208Y/120 V): currents are VA ÷ (V × √3) and
    /// single-phase ranges are taken by the 3-phase rule of 220.55
    /// ([`range_demand_three_phase`]).
    pub three_phase: bool,
    /// Table 220.55 by the lesser of its permitted ways ([`range_demand_least`]), as the
    /// multifamily examples of Annex D do.
    pub cooking_least: bool,
}

/// Standard method (Article 220 Part III) for one dwelling unit.
pub fn dwelling_standard(input: &DwellingStandardInput) -> Result<DwellingLoadResult, NecError> {
    dwelling_standard_with(input, StandardOptions::default())
}

/// The standard method with [`StandardOptions`]: several dwelling units on one feeder are the
/// same calculation over their summed areas, circuits and appliances (Part III applies its
/// demand factors to the feeder's total; Annex D Examples D4(a), D5(a)).
pub fn dwelling_standard_with(
    input: &DwellingStandardInput,
    opts: StandardOptions,
) -> Result<DwellingLoadResult, NecError> {
    let area = positive("floor_area_ft2", input.floor_area_ft2)?;
    let v = positive("voltage", input.voltage)?;
    // VA per ampere of line current.
    let div = if opts.three_phase { v * 3f64.sqrt() } else { v };
    let mut assumptions = Vec::new();
    check_circuits(
        input.small_appliance_circuits,
        input.laundry_circuits,
        &mut assumptions,
    )?;
    let (lighting_ref, demand_ref) = refs(input.edition);
    let mut lines = Vec::new();
    let lighting = area * DWELLING_VA_PER_FT2;
    let sa = f64::from(input.small_appliance_circuits) * CIRCUIT_VA;
    let laundry = f64::from(input.laundry_circuits) * CIRCUIT_VA;
    let gl_total = lighting + sa + laundry;
    let gl_demand = dwelling_lighting_demand(gl_total)?;
    lines.push(LoadLine {
        item: format!("general lighting {area} ft² × 3 VA"),
        reference: lighting_ref.into(),
        connected_va: lighting,
        demand_va: lighting,
    });
    lines.push(LoadLine {
        item: format!(
            "{} small-appliance + {} laundry circuits × 1500 VA",
            input.small_appliance_circuits, input.laundry_circuits
        ),
        reference: "NEC 220.52(A), (B)".into(),
        connected_va: sa + laundry,
        demand_va: sa + laundry,
    });
    lines.push(LoadLine {
        item: "demand factors on general lighting, small-appliance and laundry load".into(),
        reference: demand_ref.into(),
        connected_va: 0.0,
        demand_va: gl_demand - gl_total,
    });
    let mut neutral = gl_demand;

    if !input.fastened_appliances.is_empty() {
        let mut total = 0.0;
        let mut on_neutral = 0.0;
        for a in &input.fastened_appliances {
            total += non_negative("fastened_appliances[].va", a.va)?;
            if a.volts < 200.0 {
                on_neutral += a.va;
            }
        }
        let f = if input.fastened_appliances.len() >= 4 {
            0.75
        } else {
            1.0
        };
        lines.push(LoadLine {
            item: format!(
                "{} fastened-in-place appliance(s){}",
                input.fastened_appliances.len(),
                if f < 1.0 { " at 75 %" } else { "" }
            ),
            reference: "NEC 220.53".into(),
            connected_va: total,
            demand_va: total * f,
        });
        neutral += on_neutral * f;
    }
    if !input.evse_va.is_empty() {
        lines.push(evse_line(&input.evse_va, input.edition)?);
    }
    if !input.dryers_w.is_empty() {
        let mut total = 0.0;
        for &w in &input.dryers_w {
            total += positive("dryers_w", w)?.max(5000.0);
        }
        let f = dryer_demand_factor(input.dryers_w.len() as u32)?;
        let d = total * f;
        lines.push(LoadLine {
            item: format!(
                "{} dryer(s) (5000 W minimum each) × {f}",
                input.dryers_w.len()
            ),
            reference: "NEC 220.54, Table 220.54".into(),
            connected_va: total,
            demand_va: d,
        });
        neutral += 0.7 * d;
    }
    if !input.cooking_appliances_kw.is_empty() {
        let kw = &input.cooking_appliances_kw;
        let r = match opts {
            StandardOptions {
                three_phase: true, ..
            } => range_demand_three_phase(kw)?,
            StandardOptions {
                cooking_least: true,
                ..
            } => range_demand_least(kw)?,
            _ => range_demand(kw)?,
        };
        let connected: f64 = kw.iter().sum::<f64>() * 1000.0;
        lines.push(LoadLine {
            item: format!("cooking appliances: {}", r.steps.join("; ")),
            reference: "NEC 220.55, Table 220.55".into(),
            connected_va: connected,
            demand_va: r.demand_kw * 1000.0,
        });
        neutral += 0.7 * r.demand_kw * 1000.0;
    }
    let heat = non_negative("heating_va", input.heating_va)?;
    let cool = non_negative("cooling_va", input.cooling_va)?;
    if heat > 0.0 || cool > 0.0 {
        let (which, va) = if heat >= cool {
            ("heating", heat)
        } else {
            ("cooling", cool)
        };
        lines.push(LoadLine {
            item: format!("larger of heating {heat} VA and cooling {cool} VA ({which}); the other omitted as noncoincident"),
            reference: "NEC 220.51, 220.60".into(),
            connected_va: heat + cool,
            demand_va: va,
        });
    }
    match input.largest_motor_va {
        Some(m) => {
            let m = non_negative("largest_motor_va", m)?;
            lines.push(LoadLine {
                item: format!("25 % of the largest motor ({m} VA)"),
                reference: "NEC 220.50, 430.24".into(),
                connected_va: 0.0,
                demand_va: 0.25 * m,
            });
        }
        None => {
            assumptions.push("no motor given: 25 % of the largest motor (220.50) not added".into())
        }
    }
    let total: f64 = lines.iter().map(|l| l.demand_va).sum();
    let amps = total / div;
    // 220.61(B)(2): 70 % of the unbalanced load above 200 A.
    let neutral_raw = neutral / div;
    let neutral_amps = if neutral_raw > 200.0 {
        let n = 200.0 + 0.7 * (neutral_raw - 200.0);
        assumptions.push(format!(
            "neutral {neutral_raw:.1} A reduced to {n:.1} A: 70 % of the part above 200 A (220.61(B)(2))"
        ));
        n
    } else {
        neutral_raw
    };
    let neutral = neutral_amps * div;
    assumptions.push("appliance kW ratings taken as kVA".into());
    assumptions.push(
        "neutral: ranges and dryers at 70 % (220.61(B)(1)); 240 V loads carry no neutral current"
            .into(),
    );
    Ok(DwellingLoadResult {
        method: "standard method, Article 220 Part III".into(),
        edition: input.edition,
        lines,
        total_va: total,
        amps: Amps(amps),
        minimum_service_rating: Amps(service_rating(amps, input.edition)?),
        neutral_va: Some(neutral),
        neutral_amps: Some(Amps(neutral_amps)),
        references: vec![
            "NEC 220.40".into(),
            lighting_ref.into(),
            demand_ref.into(),
            "NEC 220.52, 220.53, 220.54, 220.55, 220.60, 220.61".into(),
            "NEC 230.42, 230.79(C) (100 A minimum)".into(),
        ],
        assumptions,
    })
}

/// EV supply equipment in the standard method, at 100 %. 2023 220.57 takes 7200 VA or the
/// nameplate, whichever is larger; 2017 and 2020 have no 220.57 and take the nameplate
/// (220.14(A)), kept out of the fastened-appliance demand factor like 2023 does: the charger
/// is a continuous load (625.41).
fn evse_line(evse_va: &[f64], edition: Edition) -> Result<LoadLine, NecError> {
    let floor = match edition {
        Edition::Nec2023 => MIN_EVSE_LOAD_VA_2023,
        _ => 0.0,
    };
    let mut connected = 0.0;
    let mut counted = 0.0;
    for &va in evse_va {
        let va = positive("evse_va", va)?;
        connected += va;
        counted += va.max(floor);
    }
    let (item, reference) = match edition {
        Edition::Nec2023 => (
            format!(
                "{} EVSE at 7200 VA or the nameplate, whichever is larger, 100 %",
                evse_va.len()
            ),
            "NEC 220.57",
        ),
        _ => (
            format!("{} EVSE at nameplate, 100 %", evse_va.len()),
            "NEC 220.14(A), 625.41",
        ),
    };
    Ok(LoadLine {
        item,
        reference: reference.into(),
        connected_va: connected,
        demand_va: counted,
    })
}

/// Heating and air-conditioning loads for the optional methods.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct HvacLoads {
    /// Air conditioning and cooling, VA.
    #[serde(default)]
    pub air_conditioning_va: f64,
    /// Heat pump without supplemental electric heat, VA.
    #[serde(default)]
    pub heat_pump_without_supplemental_va: f64,
    /// Heat pump compressor (used with supplemental heat), VA.
    #[serde(default)]
    pub heat_pump_compressor_va: f64,
    /// Supplemental (central) electric heat used with the heat pump, VA.
    #[serde(default)]
    pub supplemental_heat_va: f64,
    /// The compressor is prevented from running with the supplemental heat.
    #[serde(default)]
    pub compressor_interlocked: bool,
    /// Electric space heating (not central with a heat pump), VA.
    #[serde(default)]
    pub space_heating_va: f64,
    /// Number of separately controlled space-heating units.
    #[serde(default)]
    pub space_heating_units: u32,
    /// Electric thermal storage and other continuously loaded heating, VA.
    #[serde(default)]
    pub thermal_storage_va: f64,
}

/// The largest of the 220.82(C) selections: (label, VA).
fn hvac_82c(h: &HvacLoads) -> Result<(String, f64), NecError> {
    let ac = non_negative("air_conditioning_va", h.air_conditioning_va)?;
    let hp = non_negative(
        "heat_pump_without_supplemental_va",
        h.heat_pump_without_supplemental_va,
    )?;
    let comp = non_negative("heat_pump_compressor_va", h.heat_pump_compressor_va)?;
    let supp = non_negative("supplemental_heat_va", h.supplemental_heat_va)?;
    let sh = non_negative("space_heating_va", h.space_heating_va)?;
    let ts = non_negative("thermal_storage_va", h.thermal_storage_va)?;
    if sh > 0.0 && h.space_heating_units == 0 {
        return Err(NecError::MissingInput {
            field: "space_heating_units",
            reason: "220.82(C) uses 65 % for fewer than four separately controlled units and 40 % for four or more".into(),
        });
    }
    let central = if h.compressor_interlocked {
        0.65 * supp
    } else {
        comp + 0.65 * supp
    };
    let (sh_pct, sh_label) = if h.space_heating_units >= 4 {
        (0.40, "(C)(5) 40 %")
    } else {
        (0.65, "(C)(4) 65 %")
    };
    let options = [
        ("220.82(C)(1) air conditioning 100 %".to_string(), ac),
        (
            "220.82(C)(2) heat pump without supplemental heat 100 %".to_string(),
            hp,
        ),
        (
            if h.compressor_interlocked {
                "220.82(C)(3) supplemental heat 65 % (compressor interlocked)".to_string()
            } else {
                "220.82(C)(3) heat pump compressor 100 % + supplemental heat 65 %".to_string()
            },
            central,
        ),
        (
            format!(
                "220.82{sh_label} of {} space-heating unit(s)",
                h.space_heating_units
            ),
            sh * sh_pct,
        ),
        ("220.82(C)(6) thermal storage 100 %".to_string(), ts),
    ];
    let best = options
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .cloned()
        .unwrap_or_default();
    Ok(best)
}

/// Inputs for the optional method (220.82) for one new dwelling unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DwellingOptionalInput {
    /// NEC edition.
    #[serde(default)]
    pub edition: Edition,
    /// Floor area, ft².
    pub floor_area_ft2: f64,
    /// Small-appliance circuits.
    #[serde(default = "two")]
    pub small_appliance_circuits: u32,
    /// Laundry circuits.
    #[serde(default = "one")]
    pub laundry_circuits: u32,
    /// Every appliance fastened in place, permanently connected or on a specific circuit
    /// (ranges, ovens, cooking units, dryers, water heaters, dishwashers, motors), nameplate.
    #[serde(default)]
    pub appliances: Vec<Appliance>,
    /// Heating and air conditioning.
    #[serde(default)]
    pub hvac: HvacLoads,
    /// Service voltage, normally 240.
    #[serde(default = "v240")]
    pub voltage: f64,
}

/// Optional method for a one-family dwelling or one dwelling unit (220.82).
pub fn dwelling_optional(input: &DwellingOptionalInput) -> Result<DwellingLoadResult, NecError> {
    let area = positive("floor_area_ft2", input.floor_area_ft2)?;
    let v = positive("voltage", input.voltage)?;
    let mut assumptions = vec![
        "220.82(A): service or feeder 120/240 V or 208Y/120 V 3-wire with ampacity of 100 A or more".to_string(),
    ];
    check_circuits(
        input.small_appliance_circuits,
        input.laundry_circuits,
        &mut assumptions,
    )?;
    let mut general = area * DWELLING_VA_PER_FT2
        + f64::from(input.small_appliance_circuits + input.laundry_circuits) * CIRCUIT_VA;
    for a in &input.appliances {
        general += non_negative("appliances[].va", a.va)?;
    }
    let first = general.min(10_000.0);
    let rest = (general - 10_000.0).max(0.0) * 0.4;
    let (label, hvac) = hvac_82c(&input.hvac)?;
    let lines = vec![
        LoadLine {
            item: format!(
                "general load: {area} ft² × 3 VA, {} × 1500 VA circuits, {} appliance(s) at nameplate; first 10 kVA at 100 %",
                input.small_appliance_circuits + input.laundry_circuits,
                input.appliances.len()
            ),
            reference: "NEC 220.82(B)".into(),
            connected_va: general,
            demand_va: first,
        },
        LoadLine {
            item: "remainder of general load at 40 %".into(),
            reference: "NEC 220.82(B)".into(),
            connected_va: 0.0,
            demand_va: rest,
        },
        LoadLine {
            item: format!("heating/air conditioning, largest selection: {label}"),
            reference: "NEC 220.82(C)".into(),
            connected_va: hvac,
            demand_va: hvac,
        },
    ];
    let total = first + rest + hvac;
    let amps = total / v;
    Ok(DwellingLoadResult {
        method: "optional method for one dwelling unit, 220.82".into(),
        edition: input.edition,
        lines,
        total_va: total,
        amps: Amps(amps),
        minimum_service_rating: Amps(service_rating(amps, input.edition)?),
        neutral_va: None,
        neutral_amps: None,
        references: vec!["NEC 220.82".into(), "NEC 230.42, 230.79(C)".into()],
        assumptions,
    })
}

/// Inputs for the existing-dwelling check (220.83).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExistingDwellingInput {
    /// NEC edition.
    #[serde(default)]
    pub edition: Edition,
    /// Floor area, ft².
    pub floor_area_ft2: f64,
    /// Small-appliance circuits.
    #[serde(default = "two")]
    pub small_appliance_circuits: u32,
    /// Laundry circuits.
    #[serde(default = "one")]
    pub laundry_circuits: u32,
    /// Existing cooking appliances and other fastened, permanently connected or dedicated-circuit
    /// loads (including existing heating/AC when none is being added), nameplate.
    #[serde(default)]
    pub existing_loads: Vec<Appliance>,
    /// Loads being added other than heating/air conditioning.
    #[serde(default)]
    pub added_loads: Vec<Appliance>,
    /// Air conditioning being installed, VA (selects 220.83(B)).
    #[serde(default)]
    pub added_air_conditioning_va: f64,
    /// Central electric space heating being installed, VA (selects 220.83(B)).
    #[serde(default)]
    pub added_central_heating_va: f64,
    /// Space heating in fewer than four separately controlled units being installed, VA.
    #[serde(default)]
    pub added_space_heating_va: f64,
    /// Existing service rating.
    pub service_rating: Amps,
    /// Service voltage, normally 240.
    #[serde(default = "v240")]
    pub voltage: f64,
}

/// Result of [`dwelling_existing`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExistingDwellingResult {
    /// The load calculation.
    pub load: DwellingLoadResult,
    /// The existing service rating.
    pub service_rating: Amps,
    /// Calculated current ≤ service rating.
    pub service_adequate: bool,
    /// Spare capacity, amperes (negative when overloaded).
    pub spare_amps: f64,
}

/// Existing dwelling: may the existing service carry the existing plus added load (220.83)?
pub fn dwelling_existing(
    input: &ExistingDwellingInput,
) -> Result<ExistingDwellingResult, NecError> {
    let area = positive("floor_area_ft2", input.floor_area_ft2)?;
    let v = positive("voltage", input.voltage)?;
    let rating = positive("service_rating", input.service_rating.0)?;
    let mut assumptions = Vec::new();
    check_circuits(
        input.small_appliance_circuits,
        input.laundry_circuits,
        &mut assumptions,
    )?;
    let mut other = area * DWELLING_VA_PER_FT2
        + f64::from(input.small_appliance_circuits + input.laundry_circuits) * CIRCUIT_VA;
    for a in input.existing_loads.iter().chain(&input.added_loads) {
        other += non_negative("loads[].va", a.va)?;
    }
    let ac = non_negative("added_air_conditioning_va", input.added_air_conditioning_va)?;
    let central = non_negative("added_central_heating_va", input.added_central_heating_va)?;
    let space = non_negative("added_space_heating_va", input.added_space_heating_va)?;
    let hvac_added = ac + central + space > 0.0;
    let first = other.min(8000.0);
    let rest = (other - 8000.0).max(0.0) * 0.4;
    let mut lines = vec![
        LoadLine {
            item: "all other load (3 VA/ft², 1500 VA circuits, existing and added appliances): first 8 kVA at 100 %".into(),
            reference: if hvac_added { "NEC 220.83(B)" } else { "NEC 220.83(A)" }.into(),
            connected_va: other,
            demand_va: first,
        },
        LoadLine {
            item: "remainder at 40 %".into(),
            reference: if hvac_added { "NEC 220.83(B)" } else { "NEC 220.83(A)" }.into(),
            connected_va: 0.0,
            demand_va: rest,
        },
    ];
    if hvac_added {
        let heat = central + space;
        let va = ac.max(heat);
        lines.push(LoadLine {
            item: format!(
                "added heating/air conditioning at 100 %: larger of AC {ac} VA and heating {heat} VA"
            ),
            reference: "NEC 220.83(B), 220.60".into(),
            connected_va: ac + heat,
            demand_va: va,
        });
        assumptions.push(
            "heating and air conditioning taken as noncoincident (220.60): the larger is used"
                .into(),
        );
    }
    let total: f64 = lines.iter().map(|l| l.demand_va).sum();
    let amps = total / v;
    let load = DwellingLoadResult {
        method: if hvac_added {
            "existing dwelling with heating/AC added, 220.83(B)"
        } else {
            "existing dwelling without added heating/AC, 220.83(A)"
        }
        .into(),
        edition: input.edition,
        lines,
        total_va: total,
        amps: Amps(amps),
        minimum_service_rating: Amps(service_rating(amps, input.edition)?),
        neutral_va: None,
        neutral_amps: None,
        references: vec!["NEC 220.83".into()],
        assumptions,
    };
    Ok(ExistingDwellingResult {
        load,
        service_rating: Amps(rating),
        service_adequate: amps <= rating + 1e-9,
        spare_amps: rating - amps,
    })
}

/// Which conductors of a 120/240 V 3-wire feeder a load is connected to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineConnection {
    /// Line A to neutral (120 V).
    LineA,
    /// Line B to neutral (120 V).
    LineB,
    /// Line A to line B (240 V).
    LineToLine,
}

/// A load added on top of a calculated feeder current, in amperes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineLoad {
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Rated current.
    pub amps: f64,
    /// Connection.
    pub connection: LineConnection,
    /// Whether it is a motor (for 25 % of the largest motor, 430.24).
    #[serde(default)]
    pub motor: bool,
}

/// Inputs for [`dwelling_line_currents`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineCurrentsInput {
    /// NEC edition.
    #[serde(default)]
    pub edition: Edition,
    /// Current per line already calculated (e.g. a standard-method result), amperes.
    pub base_line_amps: f64,
    /// Neutral current already calculated (the standard method's 220.61 neutral), amperes;
    /// without it no neutral is given.
    #[serde(default)]
    pub base_neutral_amps: Option<f64>,
    /// Loads added per line.
    pub loads: Vec<LineLoad>,
}

/// Result of [`dwelling_line_currents`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineCurrentsResult {
    /// The inputs used.
    pub input: LineCurrentsInput,
    /// Line A total, amperes.
    pub line_a: Amps,
    /// Line B total, amperes.
    pub line_b: Amps,
    /// 25 % of the largest motor added to line A and line B.
    pub motor_25pct: (f64, f64),
    /// Neutral total (220.61), amperes, when a base neutral was given.
    pub neutral: Option<Amps>,
    /// 25 % of the largest 120 V motor added to the neutral.
    pub motor_25pct_neutral: f64,
    /// Smallest standard rating not below the heavier line (and not below 100 A).
    pub minimum_service_rating: Amps,
    /// References.
    pub references: Vec<String>,
    /// Assumptions made.
    pub assumptions: Vec<String>,
}

/// Adds individual loads line by line to a calculated 120/240 V feeder current (the method of
/// Annex D Example D1(b)): each line gets its loads plus 25 % of the largest motor it carries;
/// the service is sized on the heavier line. With a base neutral the neutral is carried the
/// same way (220.61): 240 V loads add nothing; 120 V loads on opposite lines are paired largest
/// with largest and the neutral carries the larger of each pair (their unbalance, the rule of
/// the D1(b) footnote), an unpaired one in full; plus 25 % of the largest 120 V motor.
pub fn dwelling_line_currents(input: &LineCurrentsInput) -> Result<LineCurrentsResult, NecError> {
    let base = non_negative("base_line_amps", input.base_line_amps)?;
    let base_neutral = input
        .base_neutral_amps
        .map(|n| non_negative("base_neutral_amps", n))
        .transpose()?;
    let (mut a, mut b) = (base, base);
    let (mut motor_a, mut motor_b) = (0.0f64, 0.0f64);
    for l in &input.loads {
        let amps = non_negative("loads[].amps", l.amps)?;
        let (on_a, on_b) = match l.connection {
            LineConnection::LineA => (true, false),
            LineConnection::LineB => (false, true),
            LineConnection::LineToLine => (true, true),
        };
        if on_a {
            a += amps;
            if l.motor {
                motor_a = motor_a.max(amps);
            }
        }
        if on_b {
            b += amps;
            if l.motor {
                motor_b = motor_b.max(amps);
            }
        }
    }
    let (ma, mb) = (0.25 * motor_a, 0.25 * motor_b);
    a += ma;
    b += mb;
    // Neutral: 120 V loads of each line, largest first, paired across the lines.
    let side = |c: LineConnection| {
        let mut v: Vec<f64> = input
            .loads
            .iter()
            .filter(|l| l.connection == c)
            .map(|l| l.amps)
            .collect();
        v.sort_by(|x, y| y.total_cmp(x));
        v
    };
    let (na, nb) = (side(LineConnection::LineA), side(LineConnection::LineB));
    let unbalance: f64 = (0..na.len().max(nb.len()))
        .map(|i| {
            na.get(i)
                .copied()
                .unwrap_or(0.0)
                .max(nb.get(i).copied().unwrap_or(0.0))
        })
        .sum();
    let motor_n = 0.25
        * input
            .loads
            .iter()
            .filter(|l| l.motor && l.connection != LineConnection::LineToLine)
            .map(|l| l.amps)
            .fold(0.0, f64::max);
    let neutral = base_neutral.map(|n| Amps(n + unbalance + motor_n));
    let mut references = vec![
        "NEC 220.50, 430.24 (25 % of the largest motor)".to_string(),
        "NEC 230.42, 230.79(C)".to_string(),
    ];
    let mut assumptions = vec![
        "added loads at 100 % of rated current; 115/230 V nameplates taken on 120/240 V"
            .to_string(),
    ];
    if neutral.is_some() {
        references.push("NEC 220.61 (feeder or service neutral load)".into());
        assumptions.push("neutral: 240 V loads add nothing; 120 V loads on opposite lines paired largest with largest, the larger of each pair taken (their unbalance), an unpaired one in full; 25 % of the largest 120 V motor".into());
    }
    Ok(LineCurrentsResult {
        input: input.clone(),
        line_a: Amps(a),
        line_b: Amps(b),
        motor_25pct: (ma, mb),
        neutral,
        motor_25pct_neutral: motor_n,
        minimum_service_rating: Amps(service_rating(a.max(b), input.edition)?),
        references,
        assumptions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_notes() {
        // One 16 kW range: 8 kW × (1 + 4 × 5 %) = 9.6 kW (Note 1).
        assert!((range_demand(&[16.0]).unwrap().demand_kw - 9.6).abs() < 1e-9);
        // 12.4 kW: 0.4 kW is not a major fraction.
        assert!((range_demand(&[12.4]).unwrap().demand_kw - 8.0).abs() < 1e-9);
        // 12.5 kW: major fraction → +5 %.
        assert!((range_demand(&[12.5]).unwrap().demand_kw - 8.4).abs() < 1e-9);
        // Two ovens of 4 kW (Column B, 2 appliances 65 %) = 5.2 kW.
        assert!((range_demand(&[4.0, 4.0]).unwrap().demand_kw - 5.2).abs() < 1e-9);
        assert!(range_demand(&[30.0]).is_err());
        assert!(range_demand(&[1.5]).is_err());
        assert!(range_demand(&[f64::NAN]).is_err());
    }

    #[test]
    fn dryer_factors() {
        assert_eq!(dryer_demand_factor(4).unwrap(), 1.0);
        assert_eq!(dryer_demand_factor(5).unwrap(), 0.85);
        assert!((dryer_demand_factor(15).unwrap() - 0.43).abs() < 1e-9);
        assert!((dryer_demand_factor(30).unwrap() - 0.315).abs() < 1e-9);
        assert_eq!(dryer_demand_factor(50).unwrap(), 0.25);
        assert!(dryer_demand_factor(0).is_err());
    }

    #[test]
    fn errors() {
        let mut i = DwellingStandardInput {
            evse_va: Vec::new(),
            edition: Edition::Nec2023,
            floor_area_ft2: 0.0,
            small_appliance_circuits: 2,
            laundry_circuits: 1,
            fastened_appliances: vec![],
            dryers_w: vec![],
            cooking_appliances_kw: vec![],
            heating_va: 0.0,
            cooling_va: 0.0,
            largest_motor_va: None,
            voltage: 240.0,
        };
        assert!(dwelling_standard(&i).is_err());
        i.floor_area_ft2 = 1000.0;
        i.small_appliance_circuits = 1;
        assert!(dwelling_standard(&i).is_err());
        let o = DwellingOptionalInput {
            edition: Edition::Nec2020,
            floor_area_ft2: 1500.0,
            small_appliance_circuits: 2,
            laundry_circuits: 1,
            appliances: vec![],
            hvac: HvacLoads {
                space_heating_va: 5000.0,
                ..Default::default()
            },
            voltage: 240.0,
        };
        assert!(matches!(
            dwelling_optional(&o),
            Err(NecError::MissingInput { .. })
        ));
    }

    /// 2023 220.57 counts an EVSE at 7200 VA or its nameplate, whichever is larger, at 100 %
    /// beside four fastened appliances at 75 % (2023 220.53 leaves EVSE out); 2020 takes the
    /// nameplate.
    #[test]
    fn evse_is_counted_by_edition() {
        let house = |edition, evse_va: Vec<f64>| DwellingStandardInput {
            evse_va,
            edition,
            floor_area_ft2: 2000.0,
            small_appliance_circuits: 2,
            laundry_circuits: 1,
            fastened_appliances: (0..4)
                .map(|i| Appliance {
                    description: format!("appliance {i}"),
                    va: 1000.0,
                    volts: 240.0,
                })
                .collect(),
            dryers_w: vec![],
            cooking_appliances_kw: vec![],
            heating_va: 0.0,
            cooling_va: 0.0,
            largest_motor_va: None,
            voltage: 240.0,
        };
        // By hand: 2000 ft² × 3 + 3 × 1500 = 10,500 VA; 3000 + 35 % × 7500 = 5,625 VA;
        // fastened 4 × 1000 × 75 % = 3,000 VA; base 8,625 VA.
        let base = dwelling_standard(&house(Edition::Nec2023, vec![])).unwrap();
        assert!((base.total_va - 8625.0).abs() < 1e-6, "{}", base.total_va);
        for (edition, evse, counted) in [
            // A 16 A charger (3,840 VA) counts as 7,200 VA in 2023, at its nameplate before.
            (Edition::Nec2023, 3840.0, 7200.0),
            (Edition::Nec2020, 3840.0, 3840.0),
            (Edition::Nec2017, 3840.0, 3840.0),
            // A 48 A charger (11,520 VA) counts at its nameplate.
            (Edition::Nec2023, 11520.0, 11520.0),
        ] {
            let r = dwelling_standard(&house(edition, vec![evse])).unwrap();
            assert!(
                (r.total_va - (8625.0 + counted)).abs() < 1e-6,
                "{edition:?} {evse}: {}",
                r.total_va
            );
            let line = r.lines.iter().find(|l| l.item.contains("EVSE")).unwrap();
            assert_eq!(line.connected_va, evse);
            let reference = if edition == Edition::Nec2023 {
                "NEC 220.57"
            } else {
                "NEC 220.14(A), 625.41"
            };
            assert_eq!(line.reference, reference);
            // 240 V: no neutral current.
            assert_eq!(r.neutral_va, base.neutral_va);
        }
        assert!(dwelling_standard(&house(Edition::Nec2023, vec![-1.0])).is_err());
    }
}
