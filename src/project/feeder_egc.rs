//! A feeder's equipment grounding conductor against 250.122: sized by the feeder OCPD
//! (Table 250.122; in each raceway of a parallel set, 250.122(F)), increased in proportion to
//! the ungrounded conductors when those were upsized (250.122(B)).

use serde::Serialize;

use super::FeederSpec;
use crate::nec::error::NecError;
use crate::nec::grounding::{egc_size, EgcInput, EgcResult};
use crate::nec::tables;
use crate::nec::units::{ConductorSize, TempRating};

/// The outcome of checking a feeder's recorded EGC.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FeederEgcCheck {
    /// The 250.122 sizing (table size, upsizing ratio, required size).
    pub required: EgcResult,
    /// The ungrounded conductor size per set that would have been enough (the 250.122(B) base).
    pub minimum_phase_size: ConductorSize,
    /// The recorded EGC, if any.
    pub installed: Option<ConductorSize>,
    /// Whether the recorded EGC is at least the required size (`None`: not recorded).
    pub pass: Option<bool>,
}

/// Smallest conductor per set whose 75 °C ampacity (or the insulation's, if lower) times the
/// number of sets reaches the OCPD: the base for 250.122(B) when the load is not known.
pub fn minimum_phase_size_for_ocpd(f: &FeederSpec) -> Result<ConductorSize, NecError> {
    let column = f.insulation.min(TempRating::C75);
    let sets = f64::from(f.sets.max(1));
    tables::building_wire_sizes(f.material)?
        .into_iter()
        .find(|s| {
            tables::ampacity(*s, f.material, column).is_ok_and(|a| a * sets + 1e-9 >= f.ocpd.0)
        })
        .ok_or_else(|| NecError::NoSolution {
            what: "feeder conductor",
            reason: format!(
                "no {} conductor in {} sets carries {} A",
                f.material, sets, f.ocpd.0
            ),
        })
}

/// Checks the feeder's EGC. `minimum_phase_size` is the per-set size the load needed (from the
/// conductor sizing); `None` uses [`minimum_phase_size_for_ocpd`]. The EGC is taken to be of
/// the feeder's conductor material.
pub fn check_feeder_egc(
    f: &FeederSpec,
    minimum_phase_size: Option<ConductorSize>,
) -> Result<FeederEgcCheck, NecError> {
    let min = match minimum_phase_size {
        Some(m) => m,
        None => minimum_phase_size_for_ocpd(f)?,
    }
    .min(f.conductor_size);
    let required = egc_size(&EgcInput {
        ocpd_rating: f.ocpd,
        egc_material: f.material,
        installed_size: Some(f.conductor_size),
        minimum_size: Some(min),
        circuit_material: Some(f.material),
    })?;
    let pass = f.egc_size.map(|e| e >= required.size);
    Ok(FeederEgcCheck {
        minimum_phase_size: min,
        installed: f.egc_size,
        pass,
        required,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nec::units::{Amps, Feet, Material};

    fn feeder(size: &str, ocpd: f64, egc: Option<&str>) -> FeederSpec {
        FeederSpec {
            name: "F1".into(),
            from: "service".into(),
            to: "LP".into(),
            conductor_size: size.parse().unwrap(),
            material: Material::Copper,
            insulation: TempRating::C75,
            sets: 1,
            length: Some(Feet(100.0)),
            ocpd: Amps(ocpd),
            raceway: None,
            egc_size: egc.map(|e| e.parse().unwrap()),
            c_value: None,
            impedance_ohms_per_1000ft: None,
        }
    }

    /// Table 250.122: a 200 A OCPD needs 6 AWG Cu; 3/0 Cu (200 A at 75 °C) is not upsized.
    #[test]
    fn table_size_when_not_upsized() {
        let c = check_feeder_egc(&feeder("3/0", 200.0, Some("6")), None).unwrap();
        assert_eq!(c.minimum_phase_size, "3/0".parse().unwrap());
        assert_eq!(c.required.size, "6".parse().unwrap());
        assert_eq!(c.required.upsize_ratio, None);
        assert_eq!(c.pass, Some(true));
        let c = check_feeder_egc(&feeder("3/0", 200.0, Some("8")), None).unwrap();
        assert_eq!(c.pass, Some(false));
        let c = check_feeder_egc(&feeder("3/0", 200.0, None), None).unwrap();
        assert_eq!(c.pass, None);
    }

    /// 250.122(B), the proportional increase, checked by hand with Table 250.122 and the
    /// Chapter 9 Table 8 areas: 100 A OCPD, 3 AWG Cu needed (100 A at
    /// 75 °C), upsized to 1/0 for voltage drop: ratio 105,600 / 52,620 = 2.007; Table 250.122
    /// gives 8 AWG (16,510 cmil) → 33,133 cmil → 4 AWG (41,740 cmil).
    #[test]
    fn proportional_increase_when_upsized() {
        let c = check_feeder_egc(&feeder("1/0", 100.0, Some("8")), None).unwrap();
        assert_eq!(c.minimum_phase_size, "3".parse().unwrap());
        let r = c.required.upsize_ratio.unwrap();
        assert!((r - 105_600.0 / 52_620.0).abs() < 1e-3, "{r}");
        assert_eq!(c.required.table_size, "8".parse().unwrap());
        assert_eq!(c.required.size, "4".parse().unwrap());
        assert_eq!(c.pass, Some(false));
        // The load-based minimum, when known, is used instead of the OCPD-based one.
        let c = check_feeder_egc(
            &feeder("1/0", 100.0, Some("4")),
            Some("1/0".parse().unwrap()),
        )
        .unwrap();
        assert_eq!(c.required.upsize_ratio, None);
        assert_eq!(c.required.size, "8".parse().unwrap());
        assert_eq!(c.pass, Some(true));
    }
}
