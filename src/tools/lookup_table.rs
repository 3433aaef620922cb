//! `lookup_table`: looks up a shipped table.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::nec_args::edition_of;
use super::schema::schema_for;
use super::{nec_err, parse_args, to_value, Tool, ToolContext, ToolError};
use crate::nec::tables::{self, Conduit, DeviceKind, Tables};
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

/// One lookup: the arguments, read once.
struct Query<'a> {
    t: &'static Tables,
    a: &'a LookupArgs,
    row: Option<&'a str>,
    col: Option<&'a str>,
    edition: Edition,
}

/// The whole of a table.
fn all(v: Value, name: &str) -> Value {
    json!({ "table": name, "rows": v })
}

fn whole<T: Serialize>(rows: &T, name: &str) -> Result<Value, ToolError> {
    Ok(all(to_value(rows)?, name))
}

/// Finds the table family by its normalised name; each family reads its own row and column.
fn lookup(a: &LookupArgs, edition: Edition) -> Result<Value, ToolError> {
    let q = Query {
        t: tables::tables().map_err(nec_err)?,
        a,
        row: a.row.as_deref().map(str::trim).filter(|r| !r.is_empty()),
        col: a.column.as_deref().map(str::trim).filter(|c| !c.is_empty()),
        edition,
    };
    let t = q.t;
    match table_key(&a.table).as_str() {
        "310.16" | "310.15(b)(16)" => ampacity(&q),
        "310.15(b)(1)" | "310.15(b)(1)(1)" | "310.15(b)(2)(a)" => ambient_30c(&q),
        "310.15(b)(1)(2)" => ambient_40c(&q),
        "310.15(c)(1)" | "310.15(b)(3)(a)" => adjustment(&q),
        "98" | "8" => conductor_properties(&q),
        "99" | "9" => ac_impedance(&q),
        "240.6(a)" | "240.6" => standard_ratings(&q),
        "250.122" => egc(&q),
        "250.66" => gec(&q),
        "220.12" => unit_loads(&q, true),
        "220.42(a)" => unit_loads(&q, false),
        // In 2023, 220.42 holds the unit-load table.
        "220.42"
            if edition == Edition::Nec2023 && q.row.is_some_and(|r| r.parse::<f64>().is_err()) =>
        {
            unit_loads(&q, false)
        }
        "220.42" | "220.45" => lighting_demand(&q),
        "220.54" => whole(&t.dryer_demand, "NEC Table 220.54 (dryer demand factors)"),
        "220.55" => whole(
            &t.range_demand,
            "NEC Table 220.55 (ranges and cooking appliances)",
        ),
        "430.52" => whole(
            &t.motor_ocpd,
            "NEC Table 430.52 (motor branch-circuit protective device, % of FLC)",
        ),
        "430.248" => motor_flc(&q, false),
        "430.250" => motor_flc(&q, true),
        "cvalues" | "cvalue" | "point-to-point" | "ptp" | "point-to-pointcvalues" => c_values(&q),
        k if k.contains("130.7(c)(15)(a)") => whole(
            &t.ppe_ac,
            "NFPA 70E Table 130.7(C)(15)(a) (AC arc-flash PPE categories)",
        ),
        k if k.contains("130.7(c)(15)(b)") => whole(
            &t.ppe_dc,
            "NFPA 70E Table 130.7(C)(15)(b) (DC arc-flash PPE categories)",
        ),
        _ => Err(ToolError::NotFound(format!(
            "no shipped table named '{}'; tables: {TABLES}",
            a.table.trim()
        ))),
    }
}

/// Table 310.16: a conductor's row, or one column of it, or the table.
fn ampacity(q: &Query) -> Result<Value, ToolError> {
    let name = "NEC Table 310.16 (allowable ampacities, 30 °C, not more than 3 current-carrying conductors)";
    let material = material_from(q.a);
    let Some(r) = q.row else {
        let rows: Vec<_> =
            q.t.ampacity
                .iter()
                .filter(|r| material.is_none_or(|m| r.material == m))
                .collect();
        return whole(&rows, name);
    };
    let size = parse_size(r)?;
    let material = material.unwrap_or(Material::Copper);
    let full = tables::ampacity_row(size, material).map_err(nec_err)?;
    let Some(c) = q.col.filter(|c| c.parse::<Material>().is_err()) else {
        return Ok(json!({ "table": name, "row": full }));
    };
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

/// Ambient correction on a 30 °C base (its number differs by edition).
fn ambient_30c(q: &Query) -> Result<Value, ToolError> {
    let name = match q.edition {
        Edition::Nec2017 => "NEC 2017 Table 310.15(B)(2)(a) (ambient correction, 30 °C base)",
        Edition::Nec2020 => "NEC 2020 Table 310.15(B)(1) (ambient correction, 30 °C base)",
        Edition::Nec2023 => "NEC 2023 Table 310.15(B)(1)(1) (ambient correction, 30 °C base)",
    };
    let (Some(r), Some(c)) = (q.row, q.col) else {
        return whole(&q.t.temp_correction_30c, name);
    };
    let amb = parse_num(r, "an ambient temperature in °C")?;
    let tr = parse_column_temp(c)?;
    let f = tables::temperature_correction(amb, tr).map_err(nec_err)?;
    Ok(json!({ "table": name, "ambient_c": amb, "column": tr.to_string(), "value": f }))
}

/// Ambient correction on a 40 °C base (2023).
fn ambient_40c(q: &Query) -> Result<Value, ToolError> {
    let name = "NEC 2023 Table 310.15(B)(1)(2) (ambient correction, 40 °C base)";
    let (Some(r), Some(c)) = (q.row, q.col) else {
        return whole(&q.t.temp_correction_40c, name);
    };
    let amb = parse_num(r, "an ambient temperature in °C")?;
    let rating = parse_num(c, "a conductor temperature rating")? as u32;
    let f = tables::temperature_correction_40c_base(amb, rating).map_err(nec_err)?;
    Ok(json!({ "table": name, "ambient_c": amb, "rating_c": rating, "value": f }))
}

/// Table 310.15(C)(1): adjustment by the number of current-carrying conductors.
fn adjustment(q: &Query) -> Result<Value, ToolError> {
    let name =
        "NEC Table 310.15(C)(1) (adjustment for more than three current-carrying conductors)";
    let Some(r) = q.row else {
        return whole(&q.t.adjustment, name);
    };
    let n = parse_num(r, "a number of current-carrying conductors")?;
    if n < 1.0 || n.fract() != 0.0 {
        return Err(ToolError::InvalidArguments(format!(
            "row must be a whole number of conductors, not '{r}'"
        )));
    }
    let f = tables::adjustment_factor(n as u32).map_err(nec_err)?;
    Ok(json!({ "table": name, "conductors": n, "value": f }))
}

/// Chapter 9 Table 8: conductor properties.
fn conductor_properties(q: &Query) -> Result<Value, ToolError> {
    let name = "NEC Chapter 9 Table 8 (conductor properties; DC resistance at 75 °C, Ω/kft)";
    let Some(r) = q.row else {
        return whole(&q.t.table8, name);
    };
    let size = parse_size(r)?;
    let rows: Vec<_> = q.t.table8.iter().filter(|x| x.size == size).collect();
    if rows.is_empty() {
        return Err(nec_err(crate::nec::NecError::not_in_table(
            "NEC Chapter 9 Table 8",
            size.to_string(),
        )));
    }
    Ok(json!({ "table": name, "rows": rows }))
}

/// Chapter 9 Table 9: AC resistance and reactance, for one raceway when the column names it.
fn ac_impedance(q: &Query) -> Result<Value, ToolError> {
    let name = "NEC Chapter 9 Table 9 (AC resistance and reactance, Ω to neutral per 1000 ft)";
    let Some(r) = q.row else {
        return whole(&q.t.table9, name);
    };
    let size = parse_size(r)?;
    let material = material_from(q.a).unwrap_or(Material::Copper);
    let conduit = q.col.and_then(|c| match c.to_ascii_lowercase().as_str() {
        "pvc" => Some(Conduit::Pvc),
        "aluminum" | "al" if q.a.material.is_some() => Some(Conduit::Aluminum),
        "steel" => Some(Conduit::Steel),
        _ => None,
    });
    let Some(conduit) = conduit else {
        let row = q.t.table9.iter().find(|x| x.size == size).ok_or_else(|| {
            nec_err(crate::nec::NecError::not_in_table(
                "NEC Chapter 9 Table 9",
                size.to_string(),
            ))
        })?;
        return Ok(
            json!({ "table": name, "row": row, "columns": "arrays are PVC, aluminum, steel raceway" }),
        );
    };
    let (r, x, z) = tables::ac_impedance(size, material, conduit).map_err(nec_err)?;
    Ok(json!({
        "table": name, "row": size.to_string(), "material": material,
        "raceway": conduit, "r_ohm_per_kft": r, "xl_ohm_per_kft": x,
        "effective_z_085pf_ohm_per_kft": z,
    }))
}

/// Table 240.6(A): the standard ratings, or where a current falls among them.
fn standard_ratings(q: &Query) -> Result<Value, ToolError> {
    let name = "NEC Table 240.6(A) (standard ampere ratings)";
    let edition = q.edition;
    let device = match q.col.map(str::to_ascii_lowercase).as_deref() {
        Some("fuse") | Some("fuses") => DeviceKind::Fuse,
        _ => DeviceKind::CircuitBreaker,
    };
    let list = tables::standard_ratings(edition, device).map_err(nec_err)?;
    let Some(r) = q.row else {
        return Ok(json!({ "table": name, "edition": edition, "device": device, "ratings": list }));
    };
    let amps = parse_num(r, "a current in amperes")?;
    let standard = tables::is_standard_rating(amps, edition, device).map_err(nec_err)?;
    let above = tables::standard_rating_at_or_above(amps, edition, device).ok();
    let below = tables::standard_rating_at_or_below(amps, edition, device).ok();
    Ok(
        json!({ "table": name, "edition": edition, "device": device, "amps": amps, "standard": standard, "next_at_or_above": above, "next_at_or_below": below }),
    )
}

/// Table 250.122: the equipment grounding conductor for an OCPD rating.
fn egc(q: &Query) -> Result<Value, ToolError> {
    let name = "NEC Table 250.122 (minimum equipment grounding conductor)";
    let Some(r) = q.row else {
        return whole(&q.t.egc, name);
    };
    let amps = parse_num(r, "the OCPD rating in amperes")?;
    let cu = tables::egc_for_ocpd(amps, Material::Copper).map_err(nec_err)?;
    let al = tables::egc_for_ocpd(amps, Material::Aluminum).map_err(nec_err)?;
    let m = material_from(q.a);
    Ok(json!({
        "table": name, "ocpd_a": amps,
        "value": m.map(|m| if m == Material::Copper { cu.to_string() } else { al.to_string() }),
        "copper": cu.to_string(), "aluminum": al.to_string(),
        "note": "increase proportionally when the ungrounded conductors are upsized (250.122(B))",
    }))
}

/// Table 250.66: the grounding electrode conductor for the largest ungrounded conductor.
fn gec(q: &Query) -> Result<Value, ToolError> {
    let name = "NEC Table 250.66 (grounding electrode conductor)";
    let Some(r) = q.row else {
        return whole(&q.t.gec, name);
    };
    let size = parse_size(r)?;
    let m = material_from(q.a).unwrap_or(Material::Copper);
    let cu = tables::gec_for_area(size.circular_mils(), m, Material::Copper).map_err(nec_err)?;
    let al = tables::gec_for_area(size.circular_mils(), m, Material::Aluminum).map_err(nec_err)?;
    Ok(json!({
        "table": name, "largest_ungrounded": size.to_string(), "service_material": m,
        "gec_copper": cu.to_string(), "gec_aluminum": al.to_string(),
        "note": "rod/pipe/plate and concrete-encased electrodes have smaller limits (250.66(A)/(B))",
    }))
}

/// General lighting unit loads: 220.12 (2017, 2020) or 220.42(A) (2023), by occupancy.
fn unit_loads(q: &Query, table_220_12: bool) -> Result<Value, ToolError> {
    let t = q.t;
    let (rows, name) = if table_220_12 && q.edition == Edition::Nec2017 {
        (
            &t.unit_loads_2017,
            "NEC 2017 Table 220.12 (general lighting unit loads; the 125 % continuous-load factor is not included)",
        )
    } else if table_220_12 {
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
    let Some(r) = q.row else {
        return whole(rows, name);
    };
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

/// Lighting load demand factors: 220.42 (2020) or 220.45 (2023), optionally by occupancy.
fn lighting_demand(q: &Query) -> Result<Value, ToolError> {
    let name = "NEC 2020 Table 220.42 / 2023 Table 220.45 (lighting load demand factors)";
    let rows: Vec<_> =
        q.t.lighting_demand
            .iter()
            .filter(|x| {
                q.row.is_none_or(|r| {
                    x.occupancy
                        .to_ascii_lowercase()
                        .contains(&r.to_ascii_lowercase())
                })
            })
            .collect();
    whole(&rows, name)
}

/// Motor full-load current: 430.248 (single-phase) or 430.250 (three-phase).
fn motor_flc(q: &Query, three: bool) -> Result<Value, ToolError> {
    let (rows, name) = if three {
        (
            &q.t.flc_three_phase,
            "NEC Table 430.250 (three-phase motor FLC)",
        )
    } else {
        (
            &q.t.flc_single_phase,
            "NEC Table 430.248 (single-phase motor FLC)",
        )
    };
    match (q.row, q.col) {
        (Some(r), Some(c)) => {
            let hp = parse_hp(r)?;
            let v = parse_num(c, "a voltage column")? as u32;
            let flc = tables::motor_flc(hp, three, v, false).map_err(nec_err)?;
            Ok(json!({ "table": name, "hp": hp, "column_volts": v, "value": flc, "unit": "A" }))
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
        _ => whole(rows, name),
    }
}

/// Point-to-point C values.
fn c_values(q: &Query) -> Result<Value, ToolError> {
    let name = "Point-to-point C values (600 V, three single conductors)";
    let Some(r) = q.row else {
        return whole(&q.t.c_values, name);
    };
    let size = parse_size(r)?;
    let hit =
        q.t.c_values
            .iter()
            .find(|x| x.size == size)
            .ok_or_else(|| {
                nec_err(crate::nec::NecError::not_in_table(
                    "point-to-point C value table",
                    size.to_string(),
                ))
            })?;
    Ok(json!({ "table": name, "row": hit }))
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
