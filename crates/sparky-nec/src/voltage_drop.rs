//! Voltage drop: K-factor method (Chapter 9 Table 8) and effective-impedance method
//! (Chapter 9 Table 9), single and three phase, plus the smallest conductor meeting a target.
//!
//! The NEC limits voltage drop only in informational notes (210.19(A) IN 4, 215.2(A) IN 2:
//! 3 % branch or feeder, 5 % total) and in a few mandatory rules (e.g. 647.4(D)); the target is
//! the caller's.

use serde::{Deserialize, Serialize};

use super::error::{in_range, positive, NecError};
use super::tables::{self, Conduit, Stranding};
use super::units::{Amps, ConductorSize, Feet, Material, Phase, Volts};

/// Where K (Ω·cmil/ft) comes from in the K-factor method.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum KSource {
    /// K = R(Ω/kft, Chapter 9 Table 8, 75 °C) × cmil / 1000 for the actual size (the default).
    #[default]
    Table8,
    /// The customary constants 12.9 (copper) / 21.2 (aluminum).
    Constant,
    /// A caller-supplied K.
    Custom {
        /// Ω·cmil per ft.
        k: f64,
    },
}

/// Calculation method.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum VoltageDropMethod {
    /// VD = 2·K·I·L/cmil (1-phase) or √3·K·I·L/cmil (3-phase); resistive only.
    KFactor {
        /// Where K comes from.
        #[serde(default)]
        k: KSource,
        /// Solid or stranded (Table 8 only).
        #[serde(default)]
        stranding: Stranding,
    },
    /// VD = m·Ze·I·L/1000 with Ze = R·PF + X·sin(acos PF) from Chapter 9 Table 9,
    /// m = 2 (1-phase) or √3 (3-phase).
    EffectiveZ {
        /// Raceway type.
        conduit: Conduit,
        /// Load power factor, 0 < PF ≤ 1.
        power_factor: f64,
    },
}

/// Inputs for a voltage-drop calculation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoltageDropInput {
    /// 1 or 3 phases.
    pub phase: Phase,
    /// Source voltage the percentage is taken of: line-to-line for 3-phase; for 1-phase the
    /// voltage across the two circuit conductors (e.g. 120 V or 240 V).
    pub source_voltage: Volts,
    /// Load current.
    pub current: Amps,
    /// One-way circuit length.
    pub length: Feet,
    /// Conductor size.
    pub size: ConductorSize,
    /// Conductor material.
    pub material: Material,
    /// Conductors in parallel per phase (1 if not paralleled).
    #[serde(default = "one")]
    pub parallel_sets: u32,
    /// Method.
    pub method: VoltageDropMethod,
    /// Conductor operating temperature, °C, when not the 75 °C of Chapter 9 Table 8: the
    /// Table 8 (or customary) resistance is corrected per Table 8 Note 2.
    #[serde(default)]
    pub conductor_temp_c: Option<f64>,
}

/// Temperature coefficients of resistance of Chapter 9 Table 8 Note 2, per °C.
const ALPHA_CU: f64 = 0.00323;
const ALPHA_AL: f64 = 0.00330;

/// Ratio R(T) / R(75 °C) per Chapter 9 Table 8 Note 2: R2 = R1 [1 + α (T2 − 75)].
pub fn temperature_ratio(material: Material, temp_c: f64) -> Result<f64, NecError> {
    let t = in_range("conductor_temp_c", temp_c, -40.0, 250.0)?;
    let alpha = match material {
        Material::Copper => ALPHA_CU,
        Material::Aluminum => ALPHA_AL,
    };
    Ok(1.0 + alpha * (t - 75.0))
}

fn one() -> u32 {
    1
}

/// Result of a voltage-drop calculation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VoltageDropResult {
    /// The inputs used.
    pub input: VoltageDropInput,
    /// Method description with the formula.
    pub method: String,
    /// NEC references used.
    pub references: Vec<String>,
    /// Assumptions made.
    pub assumptions: Vec<String>,
    /// K used (K-factor method), Ω·cmil/ft.
    pub k: Option<f64>,
    /// Where that K came from (Table 8, customary constant, given), with any temperature
    /// correction.
    pub k_basis: Option<String>,
    /// Effective Z used (Table 9 method), Ω per 1000 ft to neutral.
    pub effective_z_ohm_per_kft: Option<f64>,
    /// Voltage drop.
    pub voltage_drop: Volts,
    /// Voltage drop as a percentage of the source voltage.
    pub percent: f64,
    /// Voltage at the load.
    pub receiving_end_voltage: Volts,
}

/// Calculates voltage drop.
pub fn voltage_drop(input: &VoltageDropInput) -> Result<VoltageDropResult, NecError> {
    let v = positive("source_voltage", input.source_voltage.0)?;
    let i = positive("current", input.current.0)?;
    let l = positive("length", input.length.0)?;
    if input.parallel_sets == 0 {
        return Err(NecError::invalid("parallel_sets", 0, "must be at least 1"));
    }
    let n = f64::from(input.parallel_sets);
    let (mult, mult_name) = match input.phase {
        Phase::Single => (2.0, "2"),
        Phase::Three => (3f64.sqrt(), "√3"),
    };
    let mut references = Vec::new();
    let mut assumptions = vec!["current is the actual load current, not 125 % of it".to_string()];
    let temp = match input.conductor_temp_c {
        Some(t) => Some((t, temperature_ratio(input.material, t)?)),
        None => None,
    };
    let (drop, k_used, k_basis, z_used, method) = match input.method {
        VoltageDropMethod::KFactor { k, stranding } => {
            let cmil = input.size.circular_mils();
            let (k75, basis) = match k {
                KSource::Table8 => {
                    references.push("NEC Chapter 9 Table 8 (DC resistance at 75 °C)".into());
                    let r = tables::dc_resistance(input.size, input.material, stranding)?;
                    (
                        r * tables::table8(input.size, stranding)?.area_cmil / 1000.0,
                        format!(
                            "Chapter 9 Table 8: R {r} Ω/kft × area / 1000 for {} {}",
                            input.size, input.material
                        ),
                    )
                }
                KSource::Constant => (
                    match input.material {
                        Material::Copper => 12.9,
                        Material::Aluminum => 21.2,
                    },
                    "customary constant 12.9 (Cu) / 21.2 (Al) Ω·cmil/ft at 75 °C".to_string(),
                ),
                KSource::Custom { k } => (positive("k", k)?, "K as given".to_string()),
            };
            let (kval, basis) = match (temp, k) {
                (Some((t, ratio)), KSource::Table8 | KSource::Constant) => {
                    references.push("NEC Chapter 9 Table 8 Note 2 (temperature correction)".into());
                    (
                        k75 * ratio,
                        format!("{basis}, corrected to {t} °C: × {ratio:.4} (Table 8 Note 2)"),
                    )
                }
                (Some((t, _)), KSource::Custom { .. }) => {
                    assumptions.push(format!(
                        "a given K is used as given: no correction to {t} °C applied"
                    ));
                    (k75, basis)
                }
                (None, KSource::Custom { .. }) => (k75, basis),
                (None, _) => {
                    assumptions.push(
                        "conductor temperature 75 °C (the basis of Chapter 9 Table 8)".into(),
                    );
                    (k75, basis)
                }
            };
            assumptions.push("resistive drop only: reactance and power factor ignored".into());
            let vd = mult * kval * i * l / (cmil * n);
            let m = format!("K-factor: VD = {mult_name} × K × I × L / (cmil × sets)");
            (vd, Some(kval), Some(basis), None, m)
        }
        VoltageDropMethod::EffectiveZ {
            conduit,
            power_factor,
        } => {
            let pf = in_range("power_factor", power_factor, 0.01, 1.0)?;
            references.push("NEC Chapter 9 Table 9 (AC resistance and reactance)".into());
            let (r, x, _) = tables::ac_impedance(input.size, input.material, conduit)?;
            let ze = r * pf + x * (pf.acos()).sin();
            assumptions.push(
                "three single conductors in one raceway, 60 Hz, 75 °C (the basis of Table 9)"
                    .into(),
            );
            if let Some((t, _)) = temp {
                assumptions.push(format!(
                    "Table 9 values are at 75 °C: the {t} °C conductor temperature is not applied to the effective-Z method"
                ));
            }
            let vd = mult * ze * i * l / 1000.0 / n;
            let m = format!(
                "effective Z: Ze = R·PF + XL·sin(acos PF); VD = {mult_name} × Ze × I × L / 1000 / sets"
            );
            (vd, None, None, Some(ze), m)
        }
    };
    references.push(
        "NEC 210.19(A) Informational Note No. 4 / 215.2(A) Informational Note No. 2 (3 % / 5 % recommendation)"
            .into(),
    );
    Ok(VoltageDropResult {
        input: input.clone(),
        method,
        references,
        assumptions,
        k: k_used,
        k_basis,
        effective_z_ohm_per_kft: z_used,
        voltage_drop: Volts(drop),
        percent: drop / v * 100.0,
        receiving_end_voltage: Volts(v - drop),
    })
}

/// Result of [`smallest_conductor_for_drop`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConductorForDropResult {
    /// Target maximum voltage drop, percent.
    pub target_percent: f64,
    /// The smallest size that meets the target.
    pub size: ConductorSize,
    /// The voltage-drop calculation for that size.
    pub drop: VoltageDropResult,
    /// Sizes tried, with their percentages, smallest first.
    pub tried: Vec<(ConductorSize, f64)>,
    /// Note that ampacity is a separate check.
    pub note: String,
}

/// Finds the smallest conductor (from the sizes the chosen method's table lists) whose voltage
/// drop does not exceed `target_percent`. `input.size` is ignored.
pub fn smallest_conductor_for_drop(
    target_percent: f64,
    input: &VoltageDropInput,
) -> Result<ConductorForDropResult, NecError> {
    let target = in_range("target_percent", target_percent, 0.01, 100.0)?;
    let sizes = match input.method {
        VoltageDropMethod::EffectiveZ { .. } => tables::table9_sizes(input.material)?,
        VoltageDropMethod::KFactor { .. } => tables::building_wire_sizes(input.material)?,
    };
    let mut tried = Vec::new();
    for size in sizes {
        let mut candidate = input.clone();
        candidate.size = size;
        let r = voltage_drop(&candidate)?;
        tried.push((size, r.percent));
        if r.percent <= target {
            return Ok(ConductorForDropResult {
                target_percent: target,
                size,
                drop: r,
                tried,
                note: "voltage drop only: the size must also meet ampacity (310.16) and OCPD rules"
                    .into(),
            });
        }
    }
    Err(NecError::NoSolution {
        what: "conductor size",
        reason: format!(
            "even the largest size in the table gives more than {target} % drop; use parallel sets"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> VoltageDropInput {
        VoltageDropInput {
            phase: Phase::Single,
            source_voltage: Volts(120.0),
            current: Amps(16.0),
            length: Feet(100.0),
            size: "12".parse().unwrap(),
            material: Material::Copper,
            parallel_sets: 1,
            method: VoltageDropMethod::KFactor {
                k: KSource::Constant,
                stranding: Stranding::Stranded,
            },
            conductor_temp_c: None,
        }
    }

    #[test]
    fn rejects_impossible_inputs() {
        let mut i = base();
        i.current = Amps(-1.0);
        assert!(matches!(
            voltage_drop(&i),
            Err(NecError::InvalidInput {
                field: "current",
                ..
            })
        ));
        let mut i = base();
        i.parallel_sets = 0;
        assert!(voltage_drop(&i).is_err());
        let mut i = base();
        i.method = VoltageDropMethod::EffectiveZ {
            conduit: Conduit::Pvc,
            power_factor: 1.5,
        };
        assert!(voltage_drop(&i).is_err());
        let mut i = base();
        i.size = ConductorSize::Kcmil(800);
        i.method = VoltageDropMethod::EffectiveZ {
            conduit: Conduit::Pvc,
            power_factor: 0.9,
        };
        assert!(matches!(voltage_drop(&i), Err(NecError::NotInTable { .. })));
        assert!(smallest_conductor_for_drop(0.0, &base()).is_err());
    }

    #[test]
    fn json_round_trip() {
        let j = r#"{"phase":3,"source_voltage":480,"current":100,"length":200,"size":"1",
            "material":"copper","method":{"method":"effective_z","conduit":"steel","power_factor":0.85}}"#;
        let i: VoltageDropInput = serde_json::from_str(j).unwrap();
        let r = voltage_drop(&i).unwrap();
        assert!(serde_json::to_string(&r).unwrap().contains("percent"));
    }
}
