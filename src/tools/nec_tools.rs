//! NEC pack: read-only calculations over the project and the NEC engine.
//!
//! Every tool works on a piece of equipment of the project (a circuit by panel and number or
//! description, a feeder, a panel, a transformer) or on free inputs. Values the project lacks
//! are never invented: the error names the equipment and the missing field, and every result
//! lists the assumptions it used. Each tool lives in its own file; this one registers them.

use super::calculate_arc_flash::CalculateArcFlash;
use super::calculate_short_circuit::CalculateShortCircuit;
use super::calculate_voltage_drop::CalculateVoltageDrop;
use super::check_conductor_sizing::CheckConductorSizing;
use super::check_panel_capacity::CheckPanelCapacity;
use super::check_service_upgrade::CheckServiceUpgrade;
use super::code_basis::WithCodeBasis;
use super::lookup_table::LookupTable;
use super::ToolRegistry;

/// Registers the NEC tools.
pub fn register(r: &mut ToolRegistry) {
    // Every result names the edition used and why (see `code_basis`).
    r.register(WithCodeBasis(CalculateVoltageDrop));
    r.register(WithCodeBasis(CalculateShortCircuit));
    r.register(WithCodeBasis(CheckPanelCapacity));
    r.register(WithCodeBasis(CheckConductorSizing));
    r.register(WithCodeBasis(CalculateArcFlash));
    r.register(WithCodeBasis(CheckServiceUpgrade));
    r.register(WithCodeBasis(LookupTable));
}
