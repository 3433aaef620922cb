//! Grounding electrode conductor (250.66), including parallel service-entrance sets by their
//! equivalent area, from free inputs or a project feeder that records the service conductors.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::schema::schema_for;
use super::{nec_err, parse_args, to_value, Tool, ToolContext, ToolError, ToolRegistry};
use crate::nec::grounding::{self, ElectrodeKind, GecInput};
use crate::nec::units::{ConductorSize, Material};
use crate::project::analysis::resolve_feeder;

/// Registers the grounding tools.
pub fn register(r: &mut ToolRegistry) {
    r.register(super::code_basis::WithCodeBasis(
        SizeGroundingElectrodeConductor,
    ));
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum ElectrodeArg {
    RodPipePlate,
    ConcreteEncased,
    GroundRing,
    Other,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GecArgs {
    /// A project feeder recording the service-entrance (or derived-system) conductors.
    #[serde(default)]
    feeder: Option<String>,
    /// Largest ungrounded conductor per set (free input or override).
    #[serde(default)]
    size: Option<ConductorSize>,
    /// Its material (default copper).
    #[serde(default)]
    material: Option<Material>,
    /// Parallel sets: their areas are added (default 1).
    #[serde(default)]
    parallel_sets: Option<u32>,
    /// GEC material (default copper).
    #[serde(default)]
    gec_material: Option<Material>,
    /// rod_pipe_plate, concrete_encased, ground_ring or other (water pipe, building steel;
    /// the default).
    #[serde(default)]
    electrode: Option<ElectrodeArg>,
}

/// 250.66 GEC size.
pub struct SizeGroundingElectrodeConductor;

#[async_trait]
impl Tool for SizeGroundingElectrodeConductor {
    fn name(&self) -> &'static str {
        "size_grounding_electrode_conductor"
    }
    fn description(&self) -> &'static str {
        "Grounding electrode conductor per Table 250.66 from the largest ungrounded service-entrance \
         conductor; parallel sets by their summed (equivalent) area; limited by electrode type \
         (250.66(A) rod 6 AWG Cu, (B) concrete-encased 4 AWG Cu, (C) ground ring). Free inputs or a \
         project feeder."
    }
    fn schema(&self) -> Value {
        schema_for::<GecArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: GecArgs = parse_args(&args)?;
        let mut assumptions = Vec::new();
        let (what, size, material, sets) = match &a.feeder {
            Some(name) => {
                let p = ctx.project().await?;
                let f = resolve_feeder(&p, name)?;
                (
                    format!("feeder {}", f.spec.name),
                    a.size.unwrap_or(f.spec.conductor_size),
                    a.material.unwrap_or(f.spec.material),
                    a.parallel_sets.unwrap_or(u32::from(f.spec.sets.max(1))),
                )
            }
            None => {
                let size = a.size.ok_or_else(|| {
                    ToolError::InvalidArguments(
                        "give size (largest ungrounded conductor per set) or a project feeder"
                            .into(),
                    )
                })?;
                if a.material.is_none() {
                    assumptions.push("service conductors copper (not given)".to_string());
                }
                (
                    "free inputs".to_string(),
                    size,
                    a.material.unwrap_or(Material::Copper),
                    a.parallel_sets.unwrap_or(1),
                )
            }
        };
        if a.electrode.is_none() {
            assumptions.push(
                "electrode other than rod, concrete-encased or ring (no 250.66(A)-(C) limit)"
                    .to_string(),
            );
        }
        let r = grounding::gec_size(&GecInput {
            largest_ungrounded: size,
            service_material: material,
            parallel_sets: sets,
            gec_material: a.gec_material.unwrap_or(Material::Copper),
            electrode: match a.electrode {
                Some(ElectrodeArg::RodPipePlate) => ElectrodeKind::RodPipePlate,
                Some(ElectrodeArg::ConcreteEncased) => ElectrodeKind::ConcreteEncased,
                Some(ElectrodeArg::GroundRing) => ElectrodeKind::GroundRing,
                Some(ElectrodeArg::Other) | None => ElectrodeKind::Other,
            },
        })
        .map_err(nec_err)?;
        assumptions.extend(r.assumptions.iter().cloned());
        let mut calc = to_value(&r)?;
        if let Some(o) = calc.as_object_mut() {
            o.remove("assumptions");
        }
        Ok(json!({
            "for": what,
            "gec_size": r.size.to_string(),
            "table_size": r.table_size.to_string(),
            "equivalent_area_kcmil": r.equivalent_area_cmil / 1000.0,
            "calculation": calc,
            "assumptions": assumptions,
        }))
    }
}
