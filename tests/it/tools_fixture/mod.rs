//! Shared by the tools_* tests: a seeded project with known problems, and calls through the
//! real tool registry.
#![allow(dead_code)]

use std::sync::Arc;

use serde_json::Value;
use sparky::config::ConfirmPolicy;
use sparky::core::session::{Mode, SessionKey};
use sparky::llm::ToolCall;
use sparky::nec::units::{
    Amps, ConductorSize, Edition, Feet, Material, Phase, TempRating, VoltAmperes, Volts,
};
use sparky::project::plan::Change;
use sparky::project::plan_check::check_plan;
use sparky::project::ProjectData;
use sparky::project::{CircuitSpec, PanelSpec, ServiceSpec};
use sparky::store::{
    ActionItem, ActionOrigin, Applied, ApplyOutcome, ApplyRequest, ConfirmRule, Finish,
    NewPendingAction, PendingAction, Store,
};
use sparky::tools::changes::item_result;
use sparky::tools::{
    ActionPreview, RegisteredTool, ToolContext, ToolError, ToolPlan, ToolRegistry,
};

/// The registry every test uses (the one the bot ships).
pub fn registry() -> ToolRegistry {
    sparky::tools::default_registry(100_000)
}

/// A tool context on a project plus the store behind it (tools only see it read-only; the
/// fixture applies write plans through the store's real apply transaction).
#[derive(Clone)]
pub struct Ctx {
    /// What tools see.
    pub tool: ToolContext,
    /// The store.
    pub store: Arc<dyn Store>,
}

impl std::ops::Deref for Ctx {
    type Target = ToolContext;
    fn deref(&self) -> &ToolContext {
        &self.tool
    }
}

impl std::ops::DerefMut for Ctx {
    fn deref_mut(&mut self) -> &mut ToolContext {
        &mut self.tool
    }
}

/// A context on `project`.
pub fn ctx(store: Arc<dyn Store>, project: i64) -> Ctx {
    Ctx {
        tool: ToolContext::new(store.clone(), Some(project), "tester", None),
        store,
    }
}

/// Validates and runs a tool like the core does: a read tool executes; a write tool is
/// planned, stored as a pending action and applied through the store's apply transaction
/// exactly as planned (the result is what the model would see).
pub async fn call(
    reg: &ToolRegistry,
    ctx: &Ctx,
    name: &str,
    args: Value,
) -> Result<Value, ToolError> {
    let c = reg.validate(name, &args.to_string())?;
    reg.check_rate(ctx.tool.workspace.as_ref(), name)?;
    match c.tool {
        RegisteredTool::Read(t) => t.execute(c.args, &ctx.tool).await,
        RegisteredTool::Write(t) => {
            let plan = t.plan(&c.args, &ctx.tool).await?;
            apply(ctx, name, c.args, plan).await
        }
    }
}

/// Stores `plan` as a pending action of a fresh session and applies it.
pub async fn apply(ctx: &Ctx, name: &str, args: Value, plan: ToolPlan) -> Result<Value, ToolError> {
    let store = &ctx.store;
    let key = SessionKey::new(
        "test",
        "fixture",
        "tools",
        uuid::Uuid::new_v4().simple().to_string(),
    );
    let session = store
        .open_session(&key, Mode::General, ctx.project_id)
        .await
        .unwrap();
    let call = ToolCall {
        id: "call_1".into(),
        name: name.into(),
        arguments: args.to_string(),
        thought_signature: None,
    };
    let id = uuid::Uuid::new_v4().to_string();
    store
        .create_pending(&NewPendingAction {
            id: id.clone(),
            session_id: session.id,
            rule: ConfirmRule {
                policy: ConfirmPolicy::Requester,
                requester: "tester".into(),
            },
            calls: vec![call.into()],
            prior_results: vec![],
            items: vec![ActionItem {
                call_id: "call_1".into(),
                tool: name.into(),
                args,
                summary: plan.preview.summary,
                details: plan.preview.details,
                plan: plan.item,
            }],
            created_at: chrono::Utc::now(),
            expires_at: chrono::Utc::now() + chrono::Duration::hours(1),
            project_id: ctx.project_id,
            planned_version: None,
            origin: ActionOrigin::Command,
        })
        .await
        .unwrap();
    let check = |p: &ProjectData, c: &[Change]| check_plan(p, c);
    let finish = |_: &PendingAction, _: &Applied| Finish {
        outcome: Value::Null,
        message: None,
        audit: vec![],
    };
    let req = ApplyRequest {
        action_id: &id,
        by: "tester",
        at: chrono::Utc::now(),
        check: &check,
        finish: &finish,
    };
    match store.apply_pending(&req).await {
        Ok(ApplyOutcome::Done {
            action,
            applied: Applied::Written(rows),
            ..
        }) => Ok(item_result(&action.items[0].plan, &rows[0])),
        Ok(ApplyOutcome::Done {
            applied: Applied::Outdated(why),
            ..
        }) => Err(ToolError::Conflict(why.join("; "))),
        Ok(other) => panic!("unexpected apply outcome {other:?}"),
        Err(e) => Err(e.into()),
    }
}

/// Validates and previews (plans) a write tool.
pub async fn preview(
    reg: &ToolRegistry,
    ctx: &Ctx,
    name: &str,
    args: Value,
) -> Result<ActionPreview, ToolError> {
    let c = reg.validate(name, &args.to_string())?;
    let RegisteredTool::Write(t) = c.tool else {
        panic!("{name} must be a write tool");
    };
    Ok(t.plan(&c.args, &ctx.tool).await?.preview)
}

/// The error text of a call that must fail.
pub async fn call_err(reg: &ToolRegistry, ctx: &Ctx, name: &str, args: Value) -> String {
    match call(reg, ctx, name, args.clone()).await {
        Ok(v) => panic!("{name} {args} should fail but returned {v:#}"),
        Err(e) => e.to_string(),
    }
}

fn s(t: &str) -> ConductorSize {
    t.parse().expect("size")
}

/// A circuit with the usual defaults.
pub fn circuit(
    number: i32,
    poles: u8,
    description: &str,
    va: f64,
    breaker: f64,
    size: Option<&str>,
    length: Option<f64>,
) -> CircuitSpec {
    CircuitSpec {
        number,
        poles,
        description: description.into(),
        load_va: VoltAmperes(va),
        continuous: false,
        breaker: Amps(breaker),
        conductor_size: size.map(s),
        material: Material::Copper,
        insulation: TempRating::C75,
        length: length.map(Feet),
        conduit: String::new(),
        motor: None,
        appliance: None,
    }
}

/// Project "Shop": a 208Y/120 V service with 22 kA available; panel LP-1 (10 kA, fed from the
/// service with no feeder) holding seeded problems:
/// - #1 Kitchen receptacles: fine
/// - #3 Shop heater: 12 AWG on a 30 A breaker (240.4(B), 240.4(D))
/// - #5 Barn lights: 16 A over 114 ft of 12 AWG, about 6 % drop
/// - #7 EV charger garage, 2-pole, #12 EGC on a 40 A breaker (250.122)
/// - #2 Water heater, 2-pole, no length
/// - #6 Dryer, 2-pole, no conductor size
///
/// and panel LP-2 (fine, 65 kA, fed from LP-1 through feeder F2 of 3 AWG, 60 ft).
pub async fn seed(store: &Arc<dyn Store>, name: &str) -> i64 {
    seed_in(store, &sparky::project::Workspace::local(), name).await
}

/// [`seed`] in a given workspace.
pub async fn seed_in(
    store: &Arc<dyn Store>,
    workspace: &sparky::project::Workspace,
    name: &str,
) -> i64 {
    let p = store
        .create_project(workspace, name, Edition::Nec2023)
        .await
        .expect("project");
    store
        .set_service(
            p.id,
            &ServiceSpec {
                voltage: Volts(208.0),
                phase: Phase::Three,
                rating: Amps(400.0),
                available_fault_ka: Some(22.0),
                notes: String::new(),
            },
        )
        .await
        .expect("service");
    let lp1 = store
        .add_panel(
            p.id,
            &PanelSpec {
                name: "LP-1".into(),
                voltage: Volts(208.0),
                phase: Phase::Three,
                bus_rating: Amps(225.0),
                main_breaker: Some(Amps(200.0)),
                interrupting_rating_ka: Some(10.0),
                fed_from: Some("service".into()),
                spaces: 42,
                location: "shop".into(),
            },
        )
        .await
        .expect("LP-1");
    let lp2 = store
        .add_panel(
            p.id,
            &PanelSpec {
                name: "LP-2".into(),
                voltage: Volts(208.0),
                phase: Phase::Three,
                bus_rating: Amps(100.0),
                main_breaker: Some(Amps(100.0)),
                interrupting_rating_ka: Some(65.0),
                fed_from: Some("LP-1".into()),
                spaces: 24,
                location: "barn".into(),
            },
        )
        .await
        .expect("LP-2");
    store
        .add_feeder(
            p.id,
            &sparky::project::FeederSpec {
                name: "F2".into(),
                from: "LP-1".into(),
                to: "LP-2".into(),
                conductor_size: s("3"),
                material: Material::Copper,
                insulation: TempRating::C75,
                sets: 1,
                length: Some(Feet(60.0)),
                ocpd: Amps(100.0),
                raceway: None,
                egc_size: None,
                c_value: None,
                impedance_ohms_per_1000ft: None,
            },
        )
        .await
        .expect("feeder");
    let mut ev = circuit(
        7,
        2,
        "EV charger garage",
        6656.0,
        40.0,
        Some("8"),
        Some(50.0),
    );
    ev.continuous = true;
    ev.conduit = "3/4 PVC, #12 EGC".into();
    let mut kitchen = circuit(
        1,
        1,
        "Kitchen receptacles",
        1500.0,
        20.0,
        Some("12"),
        Some(40.0),
    );
    kitchen.conduit = "1/2 EMT".into();
    for c in [
        kitchen,
        circuit(3, 1, "Shop heater", 1800.0, 30.0, Some("12"), Some(30.0)),
        circuit(5, 1, "Barn lights", 1920.0, 20.0, Some("12"), Some(114.0)),
        ev,
        circuit(2, 2, "Water heater", 4500.0, 30.0, Some("10"), None),
        circuit(6, 2, "Dryer", 5000.0, 30.0, None, Some(30.0)),
    ] {
        store.add_circuit(lp1.id, &c).await.expect("circuit");
    }
    let mut pump = circuit(1, 3, "Well pump", 3000.0, 20.0, Some("12"), Some(20.0));
    pump.conduit = "3/4 EMT".into();
    store
        .add_circuit(lp2.id, &pump)
        .await
        .expect("LP-2 circuit");
    p.id
}

/// A fresh SQLite store in a temporary directory.
pub async fn sqlite() -> (Arc<dyn Store>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = sparky::store::SqliteStore::open(&dir.path().join("t.db"))
        .await
        .expect("sqlite");
    (Arc::new(store), dir)
}
