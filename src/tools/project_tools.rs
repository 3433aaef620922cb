//! Project pack: tools that read or change the project's equipment.
//!
//! Every write tool plans the change against the current project (the exact rows, every
//! default filled in) and shows the resulting state; the gate stores that plan, shows it and
//! applies it as stored only after a person confirms. Each tool lives in its own file; this one
//! registers them.

use super::add_charging_source::AddChargingSource;
use super::add_circuit::AddCircuit;
use super::add_feeder::AddFeeder;
use super::add_load_item::AddLoadItem;
use super::add_panel::AddPanel;
use super::add_transformer::AddTransformer;
use super::energy_budget::EnergyBudget;
use super::remove_circuit::RemoveCircuit;
use super::set_service::SetService;
use super::update_circuit::UpdateCircuit;
use super::ToolRegistry;

/// Registers the project tools.
pub fn register(r: &mut ToolRegistry) {
    r.register_write(AddLoadItem);
    r.register_write(AddChargingSource);
    r.register(EnergyBudget);
    r.register_write(AddPanel);
    r.register_write(AddCircuit);
    r.register_write(UpdateCircuit);
    r.register_write(RemoveCircuit);
    r.register_write(SetService);
    r.register_write(AddFeeder);
    r.register_write(AddTransformer);
}
