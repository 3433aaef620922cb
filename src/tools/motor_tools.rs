//! Motor tools: branch circuit (430.22 conductor, 430.52 short-circuit and ground-fault
//! protection by device type with 430.52(C)(1) Exceptions 1 and 2) and feeder (430.24,
//! 430.62(A), 430.63), always from the FLC tables 430.247 / 430.248 / 430.250.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::nec_args::edition_of;
use super::schema::schema_for;
use super::{nec_err, parse_args, Tool, ToolContext, ToolError, ToolRegistry};
use crate::nec::motors::{
    self, FeederMotor, MotorInput, MotorProtectionInput, MotorProtectionResult, OtherFeederLoad,
};
use crate::nec::tables::{self, DeviceKind, MotorOcpdType, MotorType};
use crate::nec::units::{Amps, ConductorSize, Edition, Material, Phase, TempRating, Volts};
use crate::project::analysis::round;

/// Registers the motor tools.
pub fn register(r: &mut ToolRegistry) {
    r.register(super::code_basis::WithCodeBasis(SizeMotorCircuit));
    r.register(super::code_basis::WithCodeBasis(SizeMotorFeeder));
}

const DEVICES: [MotorOcpdType; 4] = [
    MotorOcpdType::NonTimeDelayFuse,
    MotorOcpdType::DualElementFuse,
    MotorOcpdType::InverseTimeBreaker,
    MotorOcpdType::InstantaneousTripBreaker,
];

/// The motor fields shared by both tools' arguments.
macro_rules! motor_input {
    ($m:expr) => {
        motor_input(
            $m.hp,
            $m.voltage,
            $m.phase,
            $m.motor_type,
            $m.synchronous_power_factor,
            $m.nameplate_fla,
        )
    };
}

fn motor_input(
    hp: f64,
    voltage: Volts,
    phase: Option<Phase>,
    motor_type: Option<MotorType>,
    synchronous_power_factor: Option<f64>,
    nameplate_fla: Option<Amps>,
) -> MotorInput {
    let phase = phase.unwrap_or(Phase::Three);
    MotorInput {
        hp,
        voltage,
        phase,
        motor_type: motor_type.unwrap_or(match phase {
            Phase::Single => MotorType::SinglePhase,
            Phase::Three => MotorType::SquirrelCage,
        }),
        synchronous_power_factor,
        nameplate_fla,
    }
}

fn protection(
    motor: &MotorInput,
    device: MotorOcpdType,
    edition: Edition,
) -> Result<MotorProtectionResult, ToolError> {
    motors::motor_branch_protection(&MotorProtectionInput {
        motor: motor.clone(),
        device,
        edition,
    })
    .map_err(nec_err)
}

fn protection_json(r: &MotorProtectionResult) -> Value {
    json!({
        "device": r.input.device,
        "percent_of_flc": r.percent_of_flc,
        "calculated_a": round(r.calculated_max.0, 2),
        "calculated_is_standard": r.calculated_is_standard,
        "max_rating_a": r.max_rating_exception_1.map(|a| a.0),
        "standard_at_or_below_a": r.standard_rating_at_or_below.map(|a| a.0),
        "exception_2_ceiling_a": r.exception_2_max.map(|a| round(a.0, 1)),
        "exception_2_largest_device_a": r.exception_2_max_device.map(|a| a.0),
    })
}

/// Smallest conductor whose ampacity in the terminal column meets `min_a`.
fn smallest_conductor(
    min_a: f64,
    material: Material,
    terminal: TempRating,
) -> Result<ConductorSize, ToolError> {
    for size in tables::building_wire_sizes(material).map_err(nec_err)? {
        if tables::ampacity(size, material, terminal).is_ok_and(|a| a >= min_a) {
            return Ok(size);
        }
    }
    Err(ToolError::Failed(format!(
        "no single {material} conductor carries {min_a:.1} A at {terminal}; use parallel sets"
    )))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CircuitArgs {
    /// Horsepower, a table row (0.5 for 1/2 hp).
    hp: f64,
    /// Rated or system voltage (DC: armature voltage).
    voltage: Volts,
    /// 1 or 3 (ignored for dc; default 3).
    #[serde(default)]
    phase: Option<Phase>,
    /// Default: single_phase for phase 1, squirrel_cage for phase 3.
    #[serde(default)]
    motor_type: Option<MotorType>,
    /// Synchronous motors: rated PF 1.0, 0.9 or 0.8.
    #[serde(default)]
    synchronous_power_factor: Option<f64>,
    /// Nameplate FLA: reported, never used for these sizes (430.6(A)(1)).
    #[serde(default)]
    nameplate_fla: Option<Amps>,
    /// Protective device; left out, every Table 430.52 column is given.
    #[serde(default)]
    device: Option<MotorOcpdType>,
    /// Conductor material (default copper).
    #[serde(default)]
    material: Option<Material>,
    /// Terminal temperature rating; left out, 110.14(C)(1) (60 °C up to 100 A).
    #[serde(default)]
    terminal_rating: Option<TempRating>,
}

/// One motor's branch circuit.
pub struct SizeMotorCircuit;

#[async_trait]
impl Tool for SizeMotorCircuit {
    fn name(&self) -> &'static str {
        "size_motor_circuit"
    }
    fn description(&self) -> &'static str {
        "Motor branch circuit from hp and voltage: FLC from Table 430.247 (dc), 430.248 (1-phase) or \
         430.250 (3-phase), never the nameplate; conductor 125 % FLC (430.22) and its smallest size; \
         maximum short-circuit/ground-fault device per Table 430.52 by device type, with the next \
         standard size (Exception 1) and the Exception 2 ceiling when the motor will not start."
    }
    fn schema(&self) -> Value {
        schema_for::<CircuitArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: CircuitArgs = parse_args(&args)?;
        let edition = edition_of(ctx).await;
        let motor = motor_input!(a);
        let devices: Vec<MotorOcpdType> = match a.device {
            Some(d) => vec![d],
            None => DEVICES.to_vec(),
        };
        let results = devices
            .iter()
            .map(|d| protection(&motor, *d, edition))
            .collect::<Result<Vec<_>, _>>()?;
        let first = results
            .first()
            .ok_or_else(|| ToolError::Failed("no device to size".into()))?;
        let flc = first.flc.flc.0;
        let min_a = first.conductor_min_ampacity.0;
        let material = a.material.unwrap_or(Material::Copper);
        let mut assumptions = first.assumptions.clone();
        if a.material.is_none() {
            assumptions.push("copper conductors (not given)".into());
        }
        let terminal = match a.terminal_rating {
            Some(t) => t,
            None if min_a <= 100.0 => {
                assumptions.push("terminals 60 °C (110.14(C)(1)(a)); motors marked design B, C or D may use the 75 °C column (110.14(C)(1)(a)(4)): give terminal_rating 75".into());
                TempRating::C60
            }
            None => TempRating::C75,
        };
        let size = smallest_conductor(min_a, material, terminal)?;
        if a.phase.is_none() && motor.motor_type != MotorType::Dc {
            assumptions.push("three-phase (phase not given)".into());
        }
        let mut references = first.references.clone();
        references.push("NEC 110.14(C)(1), Table 310.16".into());
        Ok(json!({
            "motor": {
                "hp": motor.hp, "voltage": motor.voltage.0,
                "phase": if motor.motor_type == MotorType::Dc { Value::Null } else { json!(motor.phase) },
                "motor_type": motor.motor_type,
            },
            "flc_a": flc,
            "flc_table": first.flc.table,
            "flc_column_v": first.flc.column_volts,
            "nameplate_note": first.nameplate_note,
            "conductor": {
                "min_ampacity_a": round(min_a, 2),
                "rule": "NEC 430.22: 125 % of the table FLC",
                "smallest_size": size.to_string(),
                "material": material,
                "terminal_column": terminal,
            },
            "protection": results.iter().map(protection_json).collect::<Vec<_>>(),
            "protection_note": "max_rating_a: the calculated value or, when it is not a standard rating, the next standard size (430.52(C)(1) Exception No. 1); exception_2_ceiling_a: the most the device may be raised to when the motor will not start (Exception No. 2). Overload protection (430.32) uses the nameplate.",
            "edition": edition,
            "references": references,
            "assumptions": assumptions,
        }))
    }
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum FeederDeviceArg {
    Breaker,
    Fuse,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FeederMotorArg {
    /// Horsepower, a table row (0.5 for 1/2 hp).
    hp: f64,
    /// Rated or system voltage (DC: armature voltage).
    voltage: Volts,
    /// 1 or 3 (ignored for dc; default 3).
    #[serde(default)]
    phase: Option<Phase>,
    /// Default: single_phase for phase 1, squirrel_cage for phase 3.
    #[serde(default)]
    motor_type: Option<MotorType>,
    /// Synchronous motors: rated PF 1.0, 0.9 or 0.8.
    #[serde(default)]
    synchronous_power_factor: Option<f64>,
    /// Nameplate FLA: reported, never used for these sizes (430.6(A)(1)).
    #[serde(default)]
    nameplate_fla: Option<Amps>,
    /// Its branch device type (default inverse_time_breaker).
    #[serde(default)]
    device: Option<MotorOcpdType>,
    /// Its installed branch device rating; left out, the 430.52 maximum.
    #[serde(default)]
    branch_ocpd: Option<Amps>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FeederArgs {
    motors: Vec<FeederMotorArg>,
    /// Non-motor continuous load on the feeder, A.
    #[serde(default)]
    other_continuous_a: Option<Amps>,
    /// Non-motor noncontinuous load, A.
    #[serde(default)]
    other_noncontinuous_a: Option<Amps>,
    /// Feeder device: breaker (default) or fuse.
    #[serde(default)]
    feeder_device: Option<FeederDeviceArg>,
}

/// A feeder supplying several motors.
pub struct SizeMotorFeeder;

#[async_trait]
impl Tool for SizeMotorFeeder {
    fn name(&self) -> &'static str {
        "size_motor_feeder"
    }
    fn description(&self) -> &'static str {
        "Feeder to several motors (and other loads): conductor = 125 % of the largest FLC + other FLCs \
         + other loads (430.24); maximum feeder protection = largest branch device + other FLCs + \
         other loads, rounded down to a standard size (430.62(A), 430.63). FLCs from the NEC tables."
    }
    fn schema(&self) -> Value {
        schema_for::<FeederArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: FeederArgs = parse_args(&args)?;
        if a.motors.is_empty() {
            return Err(ToolError::InvalidArguments(
                "list at least one motor".into(),
            ));
        }
        let edition = edition_of(ctx).await;
        let mut rows = Vec::new();
        let mut feeder_motors = Vec::new();
        let mut assumptions = Vec::new();
        for (i, m) in a.motors.iter().enumerate() {
            let input = motor_input!(m);
            let device = m.device.unwrap_or(MotorOcpdType::InverseTimeBreaker);
            let r = protection(&input, device, edition)
                .map_err(|e| ToolError::InvalidArguments(format!("motors[{i}]: {e}")))?;
            let branch = match (m.branch_ocpd, r.max_rating_exception_1) {
                (Some(b), _) => b.0,
                (None, Some(max)) => {
                    assumptions.push(format!(
                        "motors[{i}]: branch device taken at its 430.52 maximum, {} A",
                        max.0
                    ));
                    max.0
                }
                (None, None) => {
                    return Err(ToolError::MissingData(format!(
                        "motors[{i}]: give branch_ocpd (the instantaneous-trip setting)"
                    )))
                }
            };
            feeder_motors.push(FeederMotor {
                flc: r.flc.flc,
                branch_ocpd: Amps(branch),
            });
            rows.push(json!({
                "hp": input.hp, "voltage": input.voltage.0, "flc_a": r.flc.flc.0,
                "flc_table": r.flc.table, "branch_device": device, "branch_ocpd_a": branch,
            }));
        }
        let device = match a.feeder_device {
            Some(FeederDeviceArg::Fuse) => DeviceKind::Fuse,
            _ => DeviceKind::CircuitBreaker,
        };
        let r = motors::motor_feeder_with_other_loads(
            &feeder_motors,
            OtherFeederLoad {
                continuous: a.other_continuous_a.unwrap_or_default(),
                noncontinuous: a.other_noncontinuous_a.unwrap_or_default(),
            },
            edition,
            device,
        )
        .map_err(nec_err)?;
        Ok(json!({
            "motors": rows,
            "conductor_min_ampacity_a": round(r.conductor_min_ampacity.0, 2),
            "calculated_max_ocpd_a": round(r.calculated_max_ocpd.0, 2),
            "max_feeder_ocpd_a": r.max_feeder_ocpd.0,
            "feeder_device": device,
            "note": "430.62(A): the feeder device may not exceed the calculated value; the next size down is used when it is not a standard rating",
            "edition": edition,
            "references": r.references,
            "assumptions": assumptions,
        }))
    }
}
