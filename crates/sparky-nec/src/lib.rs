//! The pure NEC (NFPA 70) calculation engine: typed tables and calculations with no I/O.
//!
//! Tables live as CSV under `data/` (sources in `data/SOURCES.md`) and are parsed once.
//! Every calculation takes a serde-friendly input struct and returns a result struct that
//! states its inputs, method, NEC references, assumptions and numbers, or a [`NecError`].
//! Editions 2017, 2020 and 2023 are supported where numbering or values differ.
//!
//! Entry points:
//! - [`voltage_drop::voltage_drop`], [`voltage_drop::smallest_conductor_for_drop`]
//! - [`conductors::size_conductor`], [`conductors::check_conductor`]
//! - [`grounding::egc_size`] (250.122), [`grounding::gec_size`] (250.66)
//! - [`fault_current::transformer_fault_current`], [`fault_current::point_to_point`],
//!   [`fault_current::point_to_point_chain`], [`fault_current::check_interrupting_rating`]
//! - [`arc_flash::arc_flash`] (IEEE 1584-2018 or NFPA 70E table), [`arc_flash::ieee1584`],
//!   [`arc_flash::arcing_currents`], [`arc_flash::ppe_category_ac`], [`arc_flash::ppe_category_dc`]
//! - [`panel::panel_capacity`]
//! - [`box_fill::box_fill`] (314.16), [`raceway_fill::raceway_fill`] (Chapter 9 Tables 1, 4,
//!   5, 8), over the tables of [`fill_tables`]
//! - [`dwelling::dwelling_standard`], [`dwelling::dwelling_optional`] (220.82),
//!   [`dwelling::dwelling_existing`] (220.83), [`dwelling::dwelling_line_currents`],
//!   [`dwelling::range_demand`], [`dwelling::dryer_demand_factor`]
//! - [`multifamily::multifamily_load`] (Part III over the units and 220.84, 220.85),
//!   [`existing_demand::existing_load_from_demand`] (220.87),
//!   [`pv_interconnection::pv_interconnection`] (705.12 busbar, feeder and tap options; the
//!   supply side 705.11 as a note)
//! - [`general_lighting::general_lighting_load`] (non-dwelling 220.12 / 220.42(A), 125 %)
//! - [`outlet_count::outlet_count`] (receptacles, multioutlet assemblies, luminaires per circuit)
//! - [`ev_charging::ev_circuit`] (625.40–625.42, 220.57)
//! - [`gfci_afci::protection`] (210.8 GFCI and 210.12 AFCI by location, occupancy, edition, work)
//! - [`motors::motor_flc`], [`motors::motor_branch_protection`] (430.52),
//!   [`motors::motor_feeder_protection`] (430.24, 430.62(A))
//! - [`tables`]: direct lookups (ampacity, correction and adjustment factors, Tables 8/9,
//!   standard ratings, EGC/GEC, unit loads, motor FLC, C values).
//!
//! Layer: domain engine, a crate of its own (`sparky-nec`) that depends on nothing of the bot;
//! the bot re-exports it as `sparky::nec`.

pub mod arc_flash;
pub mod box_fill;
pub mod conductors;
pub mod dwelling;
pub mod error;
pub mod ev_charging;
pub mod existing_demand;
pub mod fault_current;
pub mod fill_tables;
pub mod general_lighting;
pub mod gfci_afci;
pub mod grounding;
pub mod motors;
pub mod multifamily;
pub mod outlet_count;
pub mod panel;
pub mod pv_interconnection;
pub mod raceway_fill;
#[cfg(feature = "schemars")]
mod schema;
pub mod tables;
pub mod units;
pub mod voltage_drop;

#[cfg(test)]
mod fill_sources_check;
#[cfg(test)]
mod two_source_check;
#[cfg(test)]
mod worked_examples;
#[cfg(test)]
mod worked_examples_engine_reach;
#[cfg(test)]
mod worked_examples_pv_demand_multifamily;

pub use error::NecError;
