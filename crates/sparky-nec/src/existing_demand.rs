//! Existing load from measured maximum demand (220.87): a year of maximum demand data (the
//! utility's monthly peaks), or a recording of at least 30 days (the exception, the highest
//! 15-minute average), taken at 125 %, plus the new load, against the service rating or the
//! feeder ampacity. 2020 and 2023 do not permit the method where the feeder or service has a
//! renewable energy system or peak-load shaving.

use serde::{Deserialize, Serialize};

use super::dwelling::Appliance;
use super::error::{in_range, non_negative, positive, NecError};
use super::units::{Amps, Edition};

/// The unit of the demand figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DemandUnit {
    /// Kilowatts (the utility's billing demand).
    #[default]
    Kw,
    /// Kilovolt-amperes.
    Kva,
    /// Amperes on the highest loaded phase.
    A,
}

/// The demand data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DemandData {
    /// The maximum demand of each month of a year (220.87(1)).
    Monthly(Vec<f64>),
    /// A continuous recording (220.87 exception): its highest demand, the days recorded and
    /// the averaging interval.
    Recorded {
        /// Highest demand recorded.
        peak: f64,
        /// Days recorded (at least 30).
        days: u32,
        /// Averaging interval of the peak, minutes (15).
        interval_minutes: u32,
    },
}

/// What the result is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// The rating of the service.
    Service,
    /// The ampacity of a feeder.
    Feeder,
}

/// Inputs of [`existing_load_from_demand`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExistingDemandInput {
    /// NEC edition.
    #[serde(default)]
    pub edition: Edition,
    /// The demand data.
    pub data: DemandData,
    /// Its unit.
    #[serde(default)]
    pub unit: DemandUnit,
    /// Power factor to turn kW into kVA (`None`: kW taken as kVA).
    #[serde(default)]
    pub power_factor: Option<f64>,
    /// Line-to-line voltage.
    pub voltage: f64,
    /// Three-phase system.
    #[serde(default)]
    pub three_phase: bool,
    /// Service rating or feeder ampacity, A.
    pub limit: Amps,
    /// Which of the two `limit` is.
    pub limit_kind: Limit,
    /// The loads being added, VA.
    #[serde(default)]
    pub new_loads: Vec<Appliance>,
    /// The feeder or service has a PV or wind system, or any peak-load shaving (`None`: not
    /// stated).
    #[serde(default)]
    pub renewable_or_peak_shaving: Option<bool>,
}

/// Result of [`existing_load_from_demand`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExistingDemandResult {
    /// Edition used.
    pub edition: Edition,
    /// "12 months of maximum demand" or "30-day recording".
    pub data_basis: String,
    /// The maximum demand, in the unit given.
    pub maximum_demand: f64,
    /// Its unit.
    pub unit: DemandUnit,
    /// Month (1–12 in the order given) of the maximum, for monthly data.
    pub maximum_month: Option<usize>,
    /// Existing maximum demand, A.
    pub existing_a: f64,
    /// At 125 %, A.
    pub existing_125_a: f64,
    /// New load, VA.
    pub new_load_va: f64,
    /// New load, A.
    pub new_load_a: f64,
    /// 125 % of the existing plus the new load, A.
    pub total_a: f64,
    /// Service rating or feeder ampacity, A.
    pub limit_a: f64,
    /// What `limit_a` is.
    pub limit_kind: Limit,
    /// Whether 220.87 may be used here (2020, 2023: not with renewables or peak shaving).
    pub permitted: bool,
    /// Why not, when not.
    pub not_permitted_why: Option<String>,
    /// `Some(true)` within the limit, `Some(false)` over it, `None` when the method may not be
    /// used.
    pub adequate: Option<bool>,
    /// Limit minus total, A.
    pub spare_a: f64,
    /// References.
    pub references: Vec<String>,
    /// Assumptions made.
    pub assumptions: Vec<String>,
    /// What a plan reviewer still checks.
    pub reviewer_checks: Vec<String>,
}

/// 220.87: may the feeder or service carry its measured maximum demand at 125 % plus the new
/// load?
pub fn existing_load_from_demand(
    input: &ExistingDemandInput,
) -> Result<ExistingDemandResult, NecError> {
    let e = input.edition;
    let v = positive("voltage", input.voltage)?;
    let limit = positive("limit", input.limit.0)?;
    let mut assumptions = Vec::new();
    let (basis, peak, month) = match &input.data {
        DemandData::Monthly(values) => {
            if values.len() != 12 {
                return Err(NecError::invalid(
                    "monthly_peaks",
                    values.len(),
                    "220.87(1) needs the maximum demand for a 1-year period: give 12 monthly peaks, or a recording of at least 30 days (recorded_peak) under the exception",
                ));
            }
            let mut best = (0usize, f64::MIN);
            for (i, x) in values.iter().enumerate() {
                let x = non_negative("monthly_peaks[]", *x)?;
                if x > best.1 {
                    best = (i, x);
                }
            }
            positive("monthly_peaks (largest)", best.1)?;
            (
                "maximum demand for a 1-year period (12 monthly peaks)".to_string(),
                best.1,
                Some(best.0 + 1),
            )
        }
        DemandData::Recorded {
            peak,
            days,
            interval_minutes,
        } => {
            let peak = positive("recorded_peak", *peak)?;
            if *days < 30 {
                return Err(NecError::invalid(
                    "recorded_days",
                    days,
                    "the exception to 220.87(1) needs a recording of at least 30 days",
                ));
            }
            if *interval_minutes > 15 {
                return Err(NecError::invalid(
                    "interval_minutes",
                    interval_minutes,
                    "the exception's maximum demand is the highest 15-minute average; a longer interval averages the peak away",
                ));
            }
            if *interval_minutes < 15 {
                assumptions.push(format!(
                    "recorded peak taken as the highest 15-minute average (recording interval {interval_minutes} min)"
                ));
            }
            (
                format!("{days}-day continuous recording (220.87 exception)"),
                peak,
                None,
            )
        }
    };
    let div = if input.three_phase {
        v * 3f64.sqrt()
    } else {
        v
    };
    let existing_a = match input.unit {
        DemandUnit::A => peak,
        DemandUnit::Kva => peak * 1000.0 / div,
        DemandUnit::Kw => {
            let pf = match input.power_factor {
                Some(pf) => in_range("power_factor", pf, 0.1, 1.0)?,
                None => {
                    assumptions.push(
                        "kW taken as kVA (power factor 1): give power_factor to convert; a lower power factor means more current".into(),
                    );
                    1.0
                }
            };
            peak / pf * 1000.0 / div
        }
    };
    let mut new_va = 0.0;
    for a in &input.new_loads {
        new_va += non_negative("new_loads[].va", a.va)?;
    }
    let new_a = new_va / div;
    let existing_125 = 1.25 * existing_a;
    let total = existing_125 + new_a;
    let (permitted, why) = match (e, input.renewable_or_peak_shaving) {
        (Edition::Nec2020 | Edition::Nec2023, Some(true)) => (
            false,
            Some(format!(
                "NEC {e} does not permit 220.87 where the feeder or service has a renewable energy system (PV, wind) or any peak-load shaving: use a calculated load (Part III, or 220.83 for a dwelling)"
            )),
        ),
        (Edition::Nec2017, Some(true)) => {
            assumptions.push("2017 has no exclusion for renewables or peak shaving, but the metered demand is net of them: the reviewer will want the gross load".into());
            (true, None)
        }
        (_, None) => {
            if e != Edition::Nec2017 {
                assumptions.push(format!(
                    "no PV, wind or peak-load shaving on this {} (NEC {e} excludes 220.87 there): not stated",
                    match input.limit_kind {
                        Limit::Service => "service",
                        Limit::Feeder => "feeder",
                    }
                ));
            }
            (true, None)
        }
        (_, Some(false)) => (true, None),
    };
    if input.unit == DemandUnit::A {
        assumptions.push("demand in amperes taken as the highest loaded phase".into());
    }
    assumptions.push("new load at its nameplate VA, balanced across the lines".into());
    let reviewer_checks = vec![
        "the demand data is maximum demand (kW or kVA), not energy (kWh), and covers a full year or at least 30 days".to_string(),
        "for a recording: taken while the building is occupied, on the highest loaded phase, and including by measurement or calculation the larger of the heating or cooling load and other seasonal loads".into(),
        "the new load's own demand basis (continuous loads at 125 % for the conductors and OCPD where its article requires)".into(),
        match input.limit_kind {
            Limit::Service => "the service has overload protection per 230.90".to_string(),
            Limit::Feeder => "the feeder has overcurrent protection per 240.4".to_string(),
        },
        "the utility's billing demand interval (15 or 30 minutes) and whether any month is missing".into(),
    ];
    Ok(ExistingDemandResult {
        edition: e,
        data_basis: basis,
        maximum_demand: peak,
        unit: input.unit,
        maximum_month: month,
        existing_a,
        existing_125_a: existing_125,
        new_load_va: new_va,
        new_load_a: new_a,
        total_a: total,
        limit_a: limit,
        limit_kind: input.limit_kind,
        permitted,
        not_permitted_why: why,
        adequate: permitted.then_some(total <= limit + 1e-9),
        spare_a: limit - total,
        references: vec![format!("NEC {e} 220.87"), "NEC 230.90, 240.4".into()],
        assumptions,
        reviewer_checks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(data: DemandData) -> ExistingDemandInput {
        ExistingDemandInput {
            edition: Edition::Nec2023,
            data,
            unit: DemandUnit::Kw,
            power_factor: None,
            voltage: 240.0,
            three_phase: false,
            limit: Amps(200.0),
            limit_kind: Limit::Service,
            new_loads: vec![Appliance {
                description: "EV charger".into(),
                va: 9600.0,
                volts: 240.0,
            }],
            renewable_or_peak_shaving: Some(false),
        }
    }

    fn year() -> Vec<f64> {
        vec![
            12.0, 11.5, 10.0, 9.0, 13.0, 18.0, 21.6, 20.0, 15.0, 10.0, 11.0, 12.5,
        ]
    }

    #[test]
    fn the_highest_month_at_125_percent_plus_the_new_load() {
        let r = existing_load_from_demand(&input(DemandData::Monthly(year()))).unwrap();
        assert_eq!(r.maximum_month, Some(7));
        assert!((r.existing_a - 90.0).abs() < 1e-9);
        assert!((r.existing_125_a - 112.5).abs() < 1e-9);
        assert!((r.new_load_a - 40.0).abs() < 1e-9);
        assert!((r.total_a - 152.5).abs() < 1e-9);
        assert_eq!(r.adequate, Some(true));
        assert!(r.assumptions.iter().any(|a| a.contains("power factor")));
    }

    #[test]
    fn data_that_is_not_a_year_or_30_days_is_refused() {
        let mut short = year();
        short.pop();
        assert!(existing_load_from_demand(&input(DemandData::Monthly(short))).is_err());
        let rec = |days, interval_minutes| {
            existing_load_from_demand(&input(DemandData::Recorded {
                peak: 20.0,
                days,
                interval_minutes,
            }))
        };
        assert!(rec(29, 15).is_err());
        assert!(rec(30, 30).is_err());
        assert!(rec(30, 15).is_ok());
        assert!(rec(45, 5)
            .unwrap()
            .assumptions
            .iter()
            .any(|a| a.contains("15-minute")));
        let mut bad = year();
        bad[3] = f64::NAN;
        assert!(existing_load_from_demand(&input(DemandData::Monthly(bad))).is_err());
    }

    #[test]
    fn renewables_exclude_the_method_from_2020() {
        let mut i = input(DemandData::Monthly(year()));
        i.renewable_or_peak_shaving = Some(true);
        for (e, permitted) in [
            (Edition::Nec2017, true),
            (Edition::Nec2020, false),
            (Edition::Nec2023, false),
        ] {
            i.edition = e;
            let r = existing_load_from_demand(&i).unwrap();
            assert_eq!(r.permitted, permitted, "{e}");
            assert_eq!(r.adequate.is_none(), !permitted, "{e}");
        }
    }

    #[test]
    fn amperes_and_three_phase() {
        let mut i = input(DemandData::Monthly(vec![100.0; 12]));
        i.unit = DemandUnit::A;
        i.voltage = 208.0;
        i.three_phase = true;
        i.new_loads[0].va = 208.0 * 3f64.sqrt() * 10.0;
        let r = existing_load_from_demand(&i).unwrap();
        assert!((r.existing_125_a - 125.0).abs() < 1e-9);
        assert!((r.new_load_a - 10.0).abs() < 1e-9);
        assert!((r.spare_a - 65.0).abs() < 1e-9);
    }
}
