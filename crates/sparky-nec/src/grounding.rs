//! Equipment grounding conductors (250.122, including proportional upsizing, 250.122(B)) and
//! grounding electrode conductors (250.66).

use serde::{Deserialize, Serialize};

use super::error::{positive, NecError};
use super::tables;
use super::units::{Amps, ConductorSize, Material};

/// Inputs for sizing an equipment grounding conductor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EgcInput {
    /// Rating or setting of the automatic overcurrent device ahead of the circuit.
    pub ocpd_rating: Amps,
    /// Material of the EGC.
    pub egc_material: Material,
    /// Ungrounded conductor size actually installed (per parallel set). Needed for the
    /// 250.122(B) upsizing and the "not larger than the circuit conductors" cap.
    #[serde(default)]
    pub installed_size: Option<ConductorSize>,
    /// The minimum ungrounded conductor size that would have had sufficient ampacity; when
    /// `installed_size` is larger, 250.122(B) increases the EGC proportionally.
    #[serde(default)]
    pub minimum_size: Option<ConductorSize>,
    /// Material of the ungrounded conductors (defaults to the EGC material).
    #[serde(default)]
    pub circuit_material: Option<Material>,
}

/// Result of [`egc_size`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EgcResult {
    /// The inputs used.
    pub input: EgcInput,
    /// Size read from Table 250.122.
    pub table_size: ConductorSize,
    /// Upsizing ratio (installed cmil / minimum cmil), if 250.122(B) applied.
    pub upsize_ratio: Option<f64>,
    /// Required circular mils after upsizing.
    pub required_cmil: f64,
    /// The EGC size required.
    pub size: ConductorSize,
    /// Whether the result was capped at the circuit conductor size.
    pub capped_at_circuit_conductor: bool,
    /// Method summary.
    pub method: String,
    /// NEC references used.
    pub references: Vec<String>,
    /// Assumptions made.
    pub assumptions: Vec<String>,
}

/// Sizes an equipment grounding conductor per 250.122.
pub fn egc_size(input: &EgcInput) -> Result<EgcResult, NecError> {
    let ocpd = positive("ocpd_rating", input.ocpd_rating.0)?;
    let table_size = tables::egc_for_ocpd(ocpd, input.egc_material)?;
    let mut references = vec!["NEC 250.122(A), Table 250.122".to_string()];
    let mut assumptions = Vec::new();
    let circuit_material = input.circuit_material.unwrap_or(input.egc_material);
    let mut required = table_size.circular_mils();
    let mut ratio = None;
    match (input.installed_size, input.minimum_size) {
        (Some(inst), Some(min)) if inst > min => {
            let r = inst.circular_mils() / min.circular_mils();
            required *= r;
            ratio = Some(r);
            references.push("NEC 250.122(B) (proportional increase)".into());
        }
        (Some(inst), Some(min)) if inst < min => {
            return Err(NecError::invalid(
                "installed_size",
                inst,
                format!("is smaller than minimum_size {min}"),
            ));
        }
        (None, Some(_)) => {
            return Err(NecError::MissingInput {
                field: "installed_size",
                reason: "250.122(B) needs the installed ungrounded conductor size as well as the minimum size".into(),
            })
        }
        (Some(_), None) => assumptions.push(
            "minimum_size not given: circuit conductors assumed not upsized (250.122(B) not applied)"
                .into(),
        ),
        _ => {}
    }
    // Smallest size of the EGC material with at least the required area.
    let sizes = tables::building_wire_sizes(input.egc_material)?;
    let mut size = sizes
        .iter()
        .copied()
        .find(|s| s.circular_mils() + 0.5 >= required)
        .ok_or_else(|| NecError::NoSolution {
            what: "EGC size",
            reason: format!("{required:.0} cmil is above the largest listed size"),
        })?;
    if size < table_size {
        size = table_size;
    }
    let mut capped = false;
    if let Some(inst) = input.installed_size {
        // 250.122(A): never required larger than the circuit conductors.
        if circuit_material == input.egc_material && size > inst {
            size = inst;
            capped = true;
        } else if circuit_material != input.egc_material {
            assumptions.push(
                "EGC and circuit conductors differ in material: the 'not larger than the circuit conductors' cap was not applied"
                    .into(),
            );
        }
    }
    Ok(EgcResult {
        input: input.clone(),
        table_size,
        upsize_ratio: ratio,
        required_cmil: required,
        size,
        capped_at_circuit_conductor: capped,
        method: "Table 250.122 by OCPD rating; increased by the cmil ratio of installed to minimum ungrounded conductors when those were upsized".into(),
        references,
        assumptions,
    })
}

/// Type of grounding electrode the GEC runs to (250.66(A)–(C) limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ElectrodeKind {
    /// Rod, pipe or plate electrodes: GEC need not exceed 6 AWG Cu / 4 AWG Al (250.66(A)).
    RodPipePlate,
    /// Concrete-encased electrode: need not exceed 4 AWG Cu (250.66(B)).
    ConcreteEncased,
    /// Ground ring: need not exceed the ring conductor (250.66(C)).
    GroundRing,
    /// Any other electrode (metal water pipe, building steel): full Table 250.66 size.
    #[default]
    Other,
}

/// Inputs for sizing a grounding electrode conductor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GecInput {
    /// Largest ungrounded service-entrance (or derived) conductor, per set.
    pub largest_ungrounded: ConductorSize,
    /// Its material.
    pub service_material: Material,
    /// Parallel sets (areas are added, 250.66 table note 1).
    #[serde(default = "one")]
    pub parallel_sets: u32,
    /// Material of the GEC.
    pub gec_material: Material,
    /// Electrode type.
    #[serde(default)]
    pub electrode: ElectrodeKind,
}

fn one() -> u32 {
    1
}

/// Result of [`gec_size`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GecResult {
    /// The inputs used.
    pub input: GecInput,
    /// Equivalent area of the largest ungrounded conductor, cmil.
    pub equivalent_area_cmil: f64,
    /// Size from Table 250.66.
    pub table_size: ConductorSize,
    /// Size required after any 250.66(A)/(B) electrode limit.
    pub size: ConductorSize,
    /// Method summary.
    pub method: String,
    /// NEC references used.
    pub references: Vec<String>,
    /// Assumptions made.
    pub assumptions: Vec<String>,
}

/// Sizes a grounding electrode conductor per 250.66.
pub fn gec_size(input: &GecInput) -> Result<GecResult, NecError> {
    if input.parallel_sets == 0 {
        return Err(NecError::invalid("parallel_sets", 0, "must be at least 1"));
    }
    let area = input.largest_ungrounded.circular_mils() * f64::from(input.parallel_sets);
    let table_size = tables::gec_for_area(area, input.service_material, input.gec_material)?;
    let mut references = vec!["NEC 250.66, Table 250.66".to_string()];
    let mut assumptions = Vec::new();
    let cap: Option<ConductorSize> = match (input.electrode, input.gec_material) {
        (ElectrodeKind::RodPipePlate, Material::Copper) => {
            references.push("NEC 250.66(A)".into());
            Some(ConductorSize::Awg(6))
        }
        (ElectrodeKind::RodPipePlate, Material::Aluminum) => {
            references.push("NEC 250.66(A)".into());
            Some(ConductorSize::Awg(4))
        }
        (ElectrodeKind::ConcreteEncased, Material::Copper) => {
            references.push("NEC 250.66(B)".into());
            Some(ConductorSize::Awg(4))
        }
        (ElectrodeKind::ConcreteEncased, Material::Aluminum) => {
            assumptions.push(
                "250.66(B) limits the concrete-encased GEC to 4 AWG copper; no aluminum limit applied"
                    .into(),
            );
            None
        }
        (ElectrodeKind::GroundRing, _) => {
            references.push("NEC 250.66(C)".into());
            assumptions.push(
                "ground ring: the GEC need not be larger than the ring conductor (not known here)"
                    .into(),
            );
            None
        }
        (ElectrodeKind::Other, _) => None,
    };
    let size = match cap {
        Some(c) if c < table_size => c,
        _ => table_size,
    };
    Ok(GecResult {
        input: input.clone(),
        equivalent_area_cmil: area,
        table_size,
        size,
        method: "Table 250.66 by the (summed) area of the largest ungrounded conductor, limited by electrode type".into(),
        references,
        assumptions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn egc_errors() {
        let mut i = EgcInput {
            ocpd_rating: Amps(0.0),
            egc_material: Material::Copper,
            installed_size: None,
            minimum_size: None,
            circuit_material: None,
        };
        assert!(egc_size(&i).is_err());
        i.ocpd_rating = Amps(7000.0);
        assert!(matches!(egc_size(&i), Err(NecError::NotInTable { .. })));
        i.ocpd_rating = Amps(100.0);
        i.minimum_size = Some("3".parse().unwrap());
        assert!(matches!(egc_size(&i), Err(NecError::MissingInput { .. })));
        i.installed_size = Some("4".parse().unwrap());
        assert!(egc_size(&i).is_err());
    }

    #[test]
    fn egc_never_larger_than_circuit_conductors() {
        // 60 A OCPD protecting 14 AWG tap-type conductors: table says 10 AWG, cap at 14.
        let r = egc_size(&EgcInput {
            ocpd_rating: Amps(60.0),
            egc_material: Material::Copper,
            installed_size: Some("14".parse().unwrap()),
            minimum_size: None,
            circuit_material: None,
        })
        .unwrap();
        assert_eq!(r.size, "14".parse().unwrap());
        assert!(r.capped_at_circuit_conductor);
    }

    #[test]
    fn gec_rod_limit() {
        let r = gec_size(&GecInput {
            largest_ungrounded: "500".parse().unwrap(),
            service_material: Material::Copper,
            parallel_sets: 1,
            gec_material: Material::Copper,
            electrode: ElectrodeKind::RodPipePlate,
        })
        .unwrap();
        assert_eq!(r.table_size, "1/0".parse().unwrap());
        assert_eq!(r.size, "6".parse().unwrap());
    }
}
