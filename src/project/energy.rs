//! The daily energy budget of an off-grid or mobile system: what the loads use and the charging
//! sources deliver, in watt-hours.

use super::{ChargingSourceSpec, LoadItemSpec, ProjectData};

/// Daily energy of the loads and sources, in watt-hours.
pub fn budget(p: &ProjectData) -> (f64, f64) {
    let used = p.loads.iter().map(|l| load_wh(&l.spec)).sum();
    let produced = p.charging_sources.iter().map(|s| source_wh(&s.spec)).sum();
    (used, produced)
}

/// Daily energy of one load item (all of its quantity), Wh.
pub fn load_wh(l: &LoadItemSpec) -> f64 {
    l.watts.0 * l.hours_per_day * l.duty_cycle * f64::from(l.quantity)
}

/// Daily energy a charging source delivers to the battery, Wh.
pub fn source_wh(s: &ChargingSourceSpec) -> f64 {
    s.watts.0 * s.hours_per_day * s.efficiency
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nec::units::Watts;

    #[test]
    fn load_energy_uses_duty_cycle_and_quantity() {
        let l = LoadItemSpec {
            name: "fridge".into(),
            watts: Watts(45.0),
            hours_per_day: 24.0,
            duty_cycle: 0.33,
            quantity: 2,
            notes: String::new(),
        };
        assert!((load_wh(&l) - 712.8).abs() < 1e-9);
    }
}
