//! `lookup_table`: looks up a shipped table.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::nec_args::edition_of;
use super::schema::schema_for;
use super::{nec_err, parse_args, to_value, Tool, ToolContext, ToolError};
use crate::nec::tables::{self, Conduit, DeviceKind};
use crate::nec::units::{ConductorSize, Edition, Material, TempRating, UnitParseError};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LookupArgs {
    /// Table: "310.16", "310.15(B)(1)", "310.15(C)(1)", "250.122", "250.66", "240.6(A)",
    /// "chapter 9 table 8", "chapter 9 table 9", "220.12"/"220.42(A)" (unit loads), "220.45"
    /// (lighting demand), "220.54", "220.55", "430.52", "430.248", "430.250", "c values",
    /// "70E 130.7(C)(15)(a)" or "(b)".
    table: String,
    /// Row key: conductor size ("3/0"), OCPD amps ("60"), ambient °C, conductor count, hp,
    /// occupancy, motor type.
    #[serde(default)]
    row: Option<String>,
    /// Column: temperature ("75"), material, raceway ("steel"), voltage ("460"), device.
    #[serde(default)]
    column: Option<String>,
    /// Conductor material where the table has both.
    #[serde(default)]
    material: Option<Material>,
}

/// Looks up a shipped table.
pub struct LookupTable;

fn table_key(name: &str) -> String {
    let mut t = name.trim().to_ascii_lowercase();
    for w in ["nec", "nfpa", "table", "tbl", "chapter", "ch.", "ch", " "] {
        t = t.replace(w, "");
    }
    t.trim_start_matches(['.', ':']).to_string()
}

fn parse_column_temp(s: &str) -> Result<TempRating, ToolError> {
    let t = s
        .trim()
        .to_ascii_lowercase()
        .trim_start_matches('c')
        .trim_end_matches(['c', '°'])
        .trim_end_matches('°')
        .to_string();
    t.parse()
        .map_err(|e: UnitParseError| ToolError::InvalidArguments(format!("column: {e}")))
}

fn parse_size(s: &str) -> Result<ConductorSize, ToolError> {
    s.parse()
        .map_err(|e: UnitParseError| ToolError::InvalidArguments(format!("row: {e}")))
}

fn parse_num(s: &str, what: &str) -> Result<f64, ToolError> {
    let t = s
        .trim()
        .trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == '°' || c == ' ')
        .trim();
    t.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| ToolError::InvalidArguments(format!("row must be {what}, not '{s}'")))
}

fn material_from(a: &LookupArgs) -> Option<Material> {
    a.material
        .or_else(|| a.column.as_deref().and_then(|c| c.parse::<Material>().ok()))
}

const TABLES: &str = "310.16, 310.15(B)(1)(1), 310.15(B)(1)(2), 310.15(C)(1), chapter 9 table 8, chapter 9 table 9, 240.6(A), 250.122, 250.66, 220.12 (2020) / 220.42(A) (2023), 220.42 (2020) / 220.45 (2023) lighting demand, 220.54, 220.55, 430.52, 430.248, 430.250, c values (point-to-point), NFPA 70E 130.7(C)(15)(a) and (b)";

fn lookup(a: &LookupArgs, edition: Edition) -> Result<Value, ToolError> {
    let t = tables::tables().map_err(nec_err)?;
    let key = table_key(&a.table);
    let row = a.row.as_deref().map(str::trim).filter(|r| !r.is_empty());
    let col = a.column.as_deref().map(str::trim).filter(|c| !c.is_empty());
    let all = |v: Value, name: &str| json!({ "table": name, "rows": v });
    match key.as_str() {
        "310.16" | "310.15(b)(16)" => {
            let name = "NEC Table 310.16 (allowable ampacities, 30 °C, not more than 3 current-carrying conductors)";
            let material = material_from(a);
            match row {
                None => {
                    let rows: Vec<_> = t
                        .ampacity
                        .iter()
                        .filter(|r| material.is_none_or(|m| r.material == m))
                        .collect();
                    Ok(all(to_value(&rows)?, name))
                }
                Some(r) => {
                    let size = parse_size(r)?;
                    let material = material.unwrap_or(Material::Copper);
                    let full = tables::ampacity_row(size, material).map_err(nec_err)?;
                    let temp = col.filter(|c| c.parse::<Material>().is_err());
                    match temp {
                        Some(c) => {
                            let tr = parse_column_temp(c)?;
                            let v = tables::ampacity(size, material, tr).map_err(nec_err)?;
                            Ok(json!({
                                "table": name,
                                "row": size.to_string(),
                                "material": material,
                                "column": tr.to_string(),
                                "value": v,
                                "unit": "A",
                                "full_row": full,
                                "note": "before ambient correction (310.15(B)) and adjustment (310.15(C)); small conductors are also limited by 240.4(D)",
                            }))
                        }
                        None => Ok(json!({ "table": name, "row": full })),
                    }
                }
            }
        }
        "310.15(b)(1)" | "310.15(b)(1)(1)" | "310.15(b)(2)(a)" => {
            let name = match edition {
                Edition::Nec2017 => {
                    "NEC 2017 Table 310.15(B)(2)(a) (ambient correction, 30 °C base)"
                }
                Edition::Nec2020 => "NEC 2020 Table 310.15(B)(1) (ambient correction, 30 °C base)",
                Edition::Nec2023 => {
                    "NEC 2023 Table 310.15(B)(1)(1) (ambient correction, 30 °C base)"
                }
            };
            match (row, col) {
                (Some(r), Some(c)) => {
                    let amb = parse_num(r, "an ambient temperature in °C")?;
                    let tr = parse_column_temp(c)?;
                    let f = tables::temperature_correction(amb, tr).map_err(nec_err)?;
                    Ok(
                        json!({ "table": name, "ambient_c": amb, "column": tr.to_string(), "value": f }),
                    )
                }
                _ => Ok(all(to_value(&t.temp_correction_30c)?, name)),
            }
        }
        "310.15(b)(1)(2)" => {
            let name = "NEC 2023 Table 310.15(B)(1)(2) (ambient correction, 40 °C base)";
            match (row, col) {
                (Some(r), Some(c)) => {
                    let amb = parse_num(r, "an ambient temperature in °C")?;
                    let rating = parse_num(c, "a conductor temperature rating")? as u32;
                    let f =
                        tables::temperature_correction_40c_base(amb, rating).map_err(nec_err)?;
                    Ok(json!({ "table": name, "ambient_c": amb, "rating_c": rating, "value": f }))
                }
                _ => Ok(all(to_value(&t.temp_correction_40c)?, name)),
            }
        }
        "310.15(c)(1)" | "310.15(b)(3)(a)" => {
            let name = "NEC Table 310.15(C)(1) (adjustment for more than three current-carrying conductors)";
            match row {
                Some(r) => {
                    let n = parse_num(r, "a number of current-carrying conductors")?;
                    if n < 1.0 || n.fract() != 0.0 {
                        return Err(ToolError::InvalidArguments(format!(
                            "row must be a whole number of conductors, not '{r}'"
                        )));
                    }
                    let f = tables::adjustment_factor(n as u32).map_err(nec_err)?;
                    Ok(json!({ "table": name, "conductors": n, "value": f }))
                }
                None => Ok(all(to_value(&t.adjustment)?, name)),
            }
        }
        "98" | "8" => {
            let name =
                "NEC Chapter 9 Table 8 (conductor properties; DC resistance at 75 °C, Ω/kft)";
            match row {
                Some(r) => {
                    let size = parse_size(r)?;
                    let rows: Vec<_> = t.table8.iter().filter(|x| x.size == size).collect();
                    if rows.is_empty() {
                        return Err(nec_err(crate::nec::NecError::not_in_table(
                            "NEC Chapter 9 Table 8",
                            size.to_string(),
                        )));
                    }
                    Ok(json!({ "table": name, "rows": rows }))
                }
                None => Ok(all(to_value(&t.table8)?, name)),
            }
        }
        "99" | "9" => {
            let name =
                "NEC Chapter 9 Table 9 (AC resistance and reactance, Ω to neutral per 1000 ft)";
            match row {
                Some(r) => {
                    let size = parse_size(r)?;
                    let material = material_from(a).unwrap_or(Material::Copper);
                    match col.and_then(|c| match c.to_ascii_lowercase().as_str() {
                        "pvc" => Some(Conduit::Pvc),
                        "aluminum" | "al" if a.material.is_some() => Some(Conduit::Aluminum),
                        "steel" => Some(Conduit::Steel),
                        _ => None,
                    }) {
                        Some(conduit) => {
                            let (r, x, z) =
                                tables::ac_impedance(size, material, conduit).map_err(nec_err)?;
                            Ok(json!({
                                "table": name, "row": size.to_string(), "material": material,
                                "raceway": conduit, "r_ohm_per_kft": r, "xl_ohm_per_kft": x,
                                "effective_z_085pf_ohm_per_kft": z,
                            }))
                        }
                        None => {
                            let row =
                                t.table9.iter().find(|x| x.size == size).ok_or_else(|| {
                                    nec_err(crate::nec::NecError::not_in_table(
                                        "NEC Chapter 9 Table 9",
                                        size.to_string(),
                                    ))
                                })?;
                            Ok(
                                json!({ "table": name, "row": row, "columns": "arrays are PVC, aluminum, steel raceway" }),
                            )
                        }
                    }
                }
                None => Ok(all(to_value(&t.table9)?, name)),
            }
        }
        "240.6(a)" | "240.6" => {
            let name = "NEC Table 240.6(A) (standard ampere ratings)";
            let device = match col.map(str::to_ascii_lowercase).as_deref() {
                Some("fuse") | Some("fuses") => DeviceKind::Fuse,
                _ => DeviceKind::CircuitBreaker,
            };
            let list = tables::standard_ratings(edition, device).map_err(nec_err)?;
            match row {
                Some(r) => {
                    let amps = parse_num(r, "a current in amperes")?;
                    let standard =
                        tables::is_standard_rating(amps, edition, device).map_err(nec_err)?;
                    let above = tables::standard_rating_at_or_above(amps, edition, device).ok();
                    let below = tables::standard_rating_at_or_below(amps, edition, device).ok();
                    Ok(
                        json!({ "table": name, "edition": edition, "device": device, "amps": amps, "standard": standard, "next_at_or_above": above, "next_at_or_below": below }),
                    )
                }
                None => Ok(
                    json!({ "table": name, "edition": edition, "device": device, "ratings": list }),
                ),
            }
        }
        "250.122" => {
            let name = "NEC Table 250.122 (minimum equipment grounding conductor)";
            match row {
                Some(r) => {
                    let amps = parse_num(r, "the OCPD rating in amperes")?;
                    let cu = tables::egc_for_ocpd(amps, Material::Copper).map_err(nec_err)?;
                    let al = tables::egc_for_ocpd(amps, Material::Aluminum).map_err(nec_err)?;
                    let m = material_from(a);
                    Ok(json!({
                        "table": name, "ocpd_a": amps,
                        "value": m.map(|m| if m == Material::Copper { cu.to_string() } else { al.to_string() }),
                        "copper": cu.to_string(), "aluminum": al.to_string(),
                        "note": "increase proportionally when the ungrounded conductors are upsized (250.122(B))",
                    }))
                }
                None => Ok(all(to_value(&t.egc)?, name)),
            }
        }
        "250.66" => {
            let name = "NEC Table 250.66 (grounding electrode conductor)";
            match row {
                Some(r) => {
                    let size = parse_size(r)?;
                    let m = material_from(a).unwrap_or(Material::Copper);
                    let cu = tables::gec_for_area(size.circular_mils(), m, Material::Copper)
                        .map_err(nec_err)?;
                    let al = tables::gec_for_area(size.circular_mils(), m, Material::Aluminum)
                        .map_err(nec_err)?;
                    Ok(json!({
                        "table": name, "largest_ungrounded": size.to_string(), "service_material": m,
                        "gec_copper": cu.to_string(), "gec_aluminum": al.to_string(),
                        "note": "rod/pipe/plate and concrete-encased electrodes have smaller limits (250.66(A)/(B))",
                    }))
                }
                None => Ok(all(to_value(&t.gec)?, name)),
            }
        }
        "220.12" | "220.42(a)" => {
            let (rows, name) = if key == "220.12" && edition == Edition::Nec2017 {
                (
                    &t.unit_loads_2017,
                    "NEC 2017 Table 220.12 (general lighting unit loads; the 125 % continuous-load factor is not included)",
                )
            } else if key == "220.12" {
                (
                    &t.unit_loads_2020,
                    "NEC 2020 Table 220.12 (general lighting unit loads)",
                )
            } else {
                (
                    &t.unit_loads_2023,
                    "NEC 2023 Table 220.42(A) (general lighting unit loads)",
                )
            };
            match row {
                Some(r) => {
                    let want = r.to_ascii_lowercase();
                    let hits: Vec<_> = rows
                        .iter()
                        .filter(|x| x.occupancy.to_ascii_lowercase().contains(&want))
                        .collect();
                    if hits.is_empty() {
                        return Err(ToolError::NotFound(format!(
                            "{name} has no occupancy matching '{r}'; occupancies: {}",
                            rows.iter()
                                .map(|x| x.occupancy.clone())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )));
                    }
                    Ok(json!({ "table": name, "rows": hits }))
                }
                None => Ok(all(to_value(rows)?, name)),
            }
        }
        "220.42" | "220.45" => {
            if key == "220.42"
                && edition == Edition::Nec2023
                && row.is_some_and(|r| r.parse::<f64>().is_err())
            {
                // In 2023, 220.42 holds the unit-load table.
                return lookup(
                    &LookupArgs {
                        table: "220.42(A)".into(),
                        row: a.row.clone(),
                        column: a.column.clone(),
                        material: a.material,
                    },
                    edition,
                );
            }
            let name = "NEC 2020 Table 220.42 / 2023 Table 220.45 (lighting load demand factors)";
            let rows: Vec<_> = t
                .lighting_demand
                .iter()
                .filter(|x| {
                    row.is_none_or(|r| {
                        x.occupancy
                            .to_ascii_lowercase()
                            .contains(&r.to_ascii_lowercase())
                    })
                })
                .collect();
            Ok(all(to_value(&rows)?, name))
        }
        "220.54" => Ok(all(
            to_value(&t.dryer_demand)?,
            "NEC Table 220.54 (dryer demand factors)",
        )),
        "220.55" => Ok(all(
            to_value(&t.range_demand)?,
            "NEC Table 220.55 (ranges and cooking appliances)",
        )),
        "430.52" => Ok(all(
            to_value(&t.motor_ocpd)?,
            "NEC Table 430.52 (motor branch-circuit protective device, % of FLC)",
        )),
        "430.248" | "430.250" => {
            let three = key == "430.250";
            let (rows, name) = if three {
                (
                    &t.flc_three_phase,
                    "NEC Table 430.250 (three-phase motor FLC)",
                )
            } else {
                (
                    &t.flc_single_phase,
                    "NEC Table 430.248 (single-phase motor FLC)",
                )
            };
            match (row, col) {
                (Some(r), Some(c)) => {
                    let hp = parse_hp(r)?;
                    let v = parse_num(c, "a voltage column")? as u32;
                    let flc = tables::motor_flc(hp, three, v, false).map_err(nec_err)?;
                    Ok(
                        json!({ "table": name, "hp": hp, "column_volts": v, "value": flc, "unit": "A" }),
                    )
                }
                (Some(r), None) => {
                    let hp = parse_hp(r)?;
                    let hit = rows
                        .iter()
                        .find(|x| (x.hp - hp).abs() < 0.01)
                        .ok_or_else(|| {
                            ToolError::InvalidArguments(format!("{name} has no row for {r} hp"))
                        })?;
                    Ok(json!({ "table": name, "row": hit }))
                }
                _ => Ok(all(to_value(rows)?, name)),
            }
        }
        "cvalues" | "cvalue" | "point-to-point" | "ptp" | "point-to-pointcvalues" => {
            let name = "Point-to-point C values (600 V, three single conductors)";
            match row {
                Some(r) => {
                    let size = parse_size(r)?;
                    let hit = t.c_values.iter().find(|x| x.size == size).ok_or_else(|| {
                        nec_err(crate::nec::NecError::not_in_table(
                            "point-to-point C value table",
                            size.to_string(),
                        ))
                    })?;
                    Ok(json!({ "table": name, "row": hit }))
                }
                None => Ok(all(to_value(&t.c_values)?, name)),
            }
        }
        k if k.contains("130.7(c)(15)(a)") => Ok(all(
            to_value(&t.ppe_ac)?,
            "NFPA 70E Table 130.7(C)(15)(a) (AC arc-flash PPE categories)",
        )),
        k if k.contains("130.7(c)(15)(b)") => Ok(all(
            to_value(&t.ppe_dc)?,
            "NFPA 70E Table 130.7(C)(15)(b) (DC arc-flash PPE categories)",
        )),
        _ => Err(ToolError::NotFound(format!(
            "no shipped table named '{}'; tables: {TABLES}",
            a.table.trim()
        ))),
    }
}

fn parse_hp(s: &str) -> Result<f64, ToolError> {
    let t = s
        .trim()
        .to_ascii_lowercase()
        .trim_end_matches("hp")
        .trim()
        .to_string();
    // "1-1/2" or "1/2".
    let (whole, frac) = match t.split_once('-') {
        Some((w, f)) => (w.trim().parse::<f64>().ok(), Some(f.trim().to_string())),
        None if t.contains('/') => (Some(0.0), Some(t.clone())),
        None => (t.parse::<f64>().ok(), None),
    };
    let frac = match frac {
        Some(f) => match f.split_once('/') {
            Some((n, d)) => match (n.trim().parse::<f64>(), d.trim().parse::<f64>()) {
                (Ok(n), Ok(d)) if d > 0.0 => Some(n / d),
                _ => None,
            },
            None => None,
        },
        None => Some(0.0),
    };
    match (whole, frac) {
        (Some(w), Some(f)) => Ok(w + f),
        _ => Err(ToolError::InvalidArguments(format!(
            "row must be a horsepower like 10, 1/2 or 1-1/2, not '{s}'"
        ))),
    }
}

#[async_trait]
impl Tool for LookupTable {
    fn name(&self) -> &'static str {
        "lookup_table"
    }
    fn description(&self) -> &'static str {
        "Look up a table the code ships, by table name and optional row and column, e.g. table \"310.16\" \
         row \"3/0\" column \"75\" material copper -> 200 A; \"250.122\" row \"60\"; \"310.15(B)(1)\" row \
         \"40\" column \"90\"; \"310.15(C)(1)\" row \"9\"; \"430.250\" row \"10\" column \"460\"; \"240.6(A)\" \
         row \"27\". Without a row the whole table is returned. Uses the project's NEC edition."
    }
    fn schema(&self) -> Value {
        schema_for::<LookupArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: LookupArgs = parse_args(&args)?;
        let edition = edition_of(ctx).await;
        let mut v = lookup(&a, edition)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("edition".into(), json!(edition));
        }
        Ok(v)
    }
}
