//! Project pack: tools that read or change the project's equipment.
//!
//! Every write tool previews the change and the resulting state; the core shows that preview
//! and executes only after a person confirms.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::schema::schema_for;
use super::{parse_args, to_value, ActionPreview, Tool, ToolContext, ToolError, ToolRegistry};
use crate::project::{ChargingSourceSpec, LoadItemSpec, ProjectData};

/// Registers the project tools.
pub fn register(r: &mut ToolRegistry) {
    r.register(AddLoadItem);
    r.register(AddChargingSource);
    r.register(EnergyBudget);
}

/// Daily energy of the loads and sources, in watt-hours.
fn budget(p: &ProjectData) -> (f64, f64) {
    let used = p.loads.iter().map(|l| load_wh(&l.spec)).sum();
    let produced = p.charging_sources.iter().map(|s| source_wh(&s.spec)).sum();
    (used, produced)
}

fn load_wh(l: &LoadItemSpec) -> f64 {
    l.watts.0 * l.hours_per_day * l.duty_cycle * f64::from(l.quantity)
}

fn source_wh(s: &ChargingSourceSpec) -> f64 {
    s.watts.0 * s.hours_per_day * s.efficiency
}

fn check_load(l: &LoadItemSpec) -> Result<(), ToolError> {
    let mut problems = Vec::new();
    if l.name.trim().is_empty() {
        problems.push("name is empty".to_string());
    }
    if !(l.watts.0 > 0.0 && l.watts.0 <= 100_000.0) {
        problems.push(format!(
            "watts must be between 0 and 100000, not {}",
            l.watts.0
        ));
    }
    if !(0.0..=24.0).contains(&l.hours_per_day) {
        problems.push(format!(
            "hours_per_day must be 0-24, not {}",
            l.hours_per_day
        ));
    }
    if !(0.0..=1.0).contains(&l.duty_cycle) {
        problems.push(format!(
            "duty_cycle must be between 0 and 1, not {}",
            l.duty_cycle
        ));
    }
    if l.quantity == 0 {
        problems.push("quantity must be at least 1".into());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ToolError::InvalidArguments(problems.join("; ")))
    }
}

fn check_source(s: &ChargingSourceSpec) -> Result<(), ToolError> {
    let mut problems = Vec::new();
    if s.name.trim().is_empty() {
        problems.push("name is empty".to_string());
    }
    if !["solar", "alternator", "shore", "generator", "wind", "other"].contains(&s.kind.as_str()) {
        problems.push(format!(
            "kind must be solar, alternator, shore, generator, wind or other, not '{}'",
            s.kind
        ));
    }
    if !(s.watts.0 > 0.0 && s.watts.0 <= 1_000_000.0) {
        problems.push(format!("watts must be positive, not {}", s.watts.0));
    }
    if !(0.0..=24.0).contains(&s.hours_per_day) {
        problems.push(format!(
            "hours_per_day must be 0-24, not {}",
            s.hours_per_day
        ));
    }
    if !(s.efficiency > 0.0 && s.efficiency <= 1.0) {
        problems.push(format!(
            "efficiency must be above 0 and at most 1, not {}",
            s.efficiency
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ToolError::InvalidArguments(problems.join("; ")))
    }
}

/// Adds a load to the energy budget.
pub struct AddLoadItem;

#[async_trait]
impl Tool for AddLoadItem {
    fn name(&self) -> &'static str {
        "add_load_item"
    }
    fn description(&self) -> &'static str {
        "Add a piece of equipment that uses energy to the project's load list (off-grid energy budget): \
         name, running watts, hours per day switched on, duty cycle (0-1, fraction of on-time it draws \
         power) and quantity; put your assumptions in notes. Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<LoadItemSpec>()
    }
    fn writes(&self) -> bool {
        true
    }
    async fn preview(&self, args: &Value, ctx: &ToolContext) -> Result<ActionPreview, ToolError> {
        let l: LoadItemSpec = parse_args(args)?;
        check_load(&l)?;
        let project = ctx.project().await?;
        let (used, produced) = budget(&project);
        let wh = load_wh(&l);
        Ok(ActionPreview {
            summary: format!(
                "Add load \"{}\": {} W × {} h/day × duty {:.0}%{}",
                l.name,
                l.watts.0,
                l.hours_per_day,
                l.duty_cycle * 100.0,
                if l.quantity > 1 {
                    format!(" × {}", l.quantity)
                } else {
                    String::new()
                }
            ),
            details: vec![
                format!("Energy: {wh:.0} Wh/day"),
                format!(
                    "Daily load after: {:.0} Wh (production {:.0} Wh)",
                    used + wh,
                    produced
                ),
            ],
        })
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let l: LoadItemSpec = parse_args(&args)?;
        check_load(&l)?;
        let project = ctx.require_project()?;
        let item = ctx.store.add_load_item(project, &l).await?;
        Ok(json!({ "added": to_value(&item)?, "wh_per_day": load_wh(&l) }))
    }
}

/// Adds a charging source to the energy budget.
pub struct AddChargingSource;

#[async_trait]
impl Tool for AddChargingSource {
    fn name(&self) -> &'static str {
        "add_charging_source"
    }
    fn description(&self) -> &'static str {
        "Add something that charges the battery bank (solar, alternator, shore, generator, wind, other): \
         name, kind, output watts, equivalent full-output hours per day (peak sun hours for solar) and \
         efficiency (0-1); put your assumptions in notes. Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<ChargingSourceSpec>()
    }
    fn writes(&self) -> bool {
        true
    }
    async fn preview(&self, args: &Value, ctx: &ToolContext) -> Result<ActionPreview, ToolError> {
        let s: ChargingSourceSpec = parse_args(args)?;
        check_source(&s)?;
        let project = ctx.project().await?;
        let (used, produced) = budget(&project);
        let wh = source_wh(&s);
        Ok(ActionPreview {
            summary: format!(
                "Add {} source \"{}\": {} W × {} h/day × {:.0}% efficiency",
                s.kind,
                s.name,
                s.watts.0,
                s.hours_per_day,
                s.efficiency * 100.0
            ),
            details: vec![
                format!("Energy: {wh:.0} Wh/day"),
                format!(
                    "Daily production after: {:.0} Wh (load {:.0} Wh)",
                    produced + wh,
                    used
                ),
            ],
        })
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let s: ChargingSourceSpec = parse_args(&args)?;
        check_source(&s)?;
        let project = ctx.require_project()?;
        let source = ctx.store.add_charging_source(project, &s).await?;
        Ok(json!({ "added": to_value(&source)?, "wh_per_day": source_wh(&s) }))
    }
}

#[derive(Deserialize, JsonSchema)]
struct BudgetArgs {}

/// The daily energy balance of loads and charging sources.
pub struct EnergyBudget;

#[async_trait]
impl Tool for EnergyBudget {
    fn name(&self) -> &'static str {
        "energy_budget"
    }
    fn description(&self) -> &'static str {
        "Daily energy budget of the project: each load's and source's Wh/day, totals and the balance."
    }
    fn schema(&self) -> Value {
        schema_for::<BudgetArgs>()
    }
    async fn execute(&self, _args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let p = ctx.project().await?;
        let (used, produced) = budget(&p);
        let loads: Vec<Value> = p
            .loads
            .iter()
            .map(|l| json!({ "id": l.id, "name": l.spec.name, "wh_per_day": load_wh(&l.spec) }))
            .collect();
        let sources: Vec<Value> = p
            .charging_sources
            .iter()
            .map(|s| json!({ "id": s.id, "name": s.spec.name, "wh_per_day": source_wh(&s.spec) }))
            .collect();
        Ok(json!({
            "loads": loads,
            "sources": sources,
            "load_wh_per_day": used,
            "production_wh_per_day": produced,
            "balance_wh_per_day": produced - used,
        }))
    }
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
        assert!(check_load(&l).is_ok());
        let bad = LoadItemSpec {
            duty_cycle: 1.5,
            hours_per_day: 30.0,
            ..l
        };
        let err = check_load(&bad).unwrap_err().to_string();
        assert!(
            err.contains("duty_cycle") && err.contains("hours_per_day"),
            "{err}"
        );
    }
}
