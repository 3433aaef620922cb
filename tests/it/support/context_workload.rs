//! The context-economy workload: a 20-turn conversation in one thread about a real-sized
//! project, played through the agent against a scripted OpenAI-compatible model over real
//! HTTP, under a given context policy.
//!
//! The scripted model is strict about what it relies on: every model step names the facts
//! its answer needs (earlier results, the user's earlier words, project data), and the fake
//! checks that each one is in the request it receives, and that every tool it is scripted to
//! call was offered. It records every request, counts its tokens with the tokenizer it is
//! given, reports usage with the prompt-cache hits an automatic prefix cache would have had
//! (`usage.prompt_tokens_details.cached_tokens`), and records every tool result it is sent.
//!
//! Shared by the integration test (`tests/it/context_economy.rs`) and the benchmark
//! (`benches/context.rs`, which includes this file by path).
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use sparky::config::Config;
use sparky::core::context::ContextPolicy;
use sparky::core::session::SessionKey;
use sparky::core::{Agent, CollectSink, Effect, Input, InputAction};
use sparky::nec::units::{
    Amps, ConductorSize, Edition, Feet, Material, Phase, TempRating, VoltAmperes, Volts,
};
use sparky::project::{
    CircuitSpec, FeederSpec, PanelSpec, ServiceSpec, TaskSpec, TransformerSpec, Workspace,
};
use sparky::services::project_files::{PanelCircuit, ProjectFile, TaskFile};

/// Turns text into tokens (a real tokenizer in the benchmark; any stable one in tests).
pub type Tokenizer = Arc<dyn Fn(&str) -> Vec<u32> + Send + Sync>;

/// Prompt caches of this many tokens or more count (OpenAI: 1,024, then steps of 128).
const CACHE_MIN: usize = 1024;
const CACHE_STEP: usize = 128;

/// A project and the names the conversation uses for it.
pub struct Workload {
    /// Short name for reports.
    pub label: &'static str,
    /// The project, imported before the conversation.
    pub file: ProjectFile,
    /// The panel most questions are about.
    pub a: String,
    /// The panel follow-ups switch to ("and the one on LP-3?").
    pub b: String,
}

impl Workload {
    /// Number of circuits in the project.
    pub fn circuits(&self) -> usize {
        self.file.circuits.len()
    }
}

fn panel(name: &str, volts: f64, phase: Phase, bus: f64, fed_from: &str, spaces: u32) -> PanelSpec {
    PanelSpec {
        name: name.into(),
        voltage: Volts(volts),
        phase,
        bus_rating: Amps(bus),
        main_breaker: None,
        interrupting_rating_ka: Some(22.0),
        fed_from: Some(fed_from.into()),
        spaces,
        location: String::new(),
    }
}

fn circuit(
    number: i32,
    description: String,
    va: f64,
    length: f64,
    continuous: bool,
) -> CircuitSpec {
    CircuitSpec {
        number,
        poles: 1,
        description,
        load_va: VoltAmperes(va),
        continuous,
        breaker: Amps(20.0),
        conductor_size: Some(ConductorSize::Awg(12)),
        material: Material::Copper,
        insulation: TempRating::C75,
        length: Some(Feet(length)),
        conduit: "3/4 EMT".into(),
        motor: None,
        appliance: None,
    }
}

fn feeder(
    name: &str,
    from: &str,
    to: &str,
    size: ConductorSize,
    ocpd: f64,
    length: f64,
) -> FeederSpec {
    FeederSpec {
        name: name.into(),
        from: from.into(),
        to: to.into(),
        conductor_size: size,
        material: Material::Copper,
        insulation: TempRating::C75,
        sets: 1,
        length: Some(Feet(length)),
        ocpd: Amps(ocpd),
        raceway: None,
        egc_size: None,
        c_value: None,
        impedance_ohms_per_1000ft: None,
    }
}

const ROOMS: &[&str] = &[
    "Receptacles office",
    "Lighting corridor",
    "Receptacles open office",
    "Copier",
    "Lighting office",
    "Break room counter receptacles",
    "Microwave",
    "Refrigerator",
    "Hand dryer",
    "Exhaust fan EF",
    "Unit heater UH",
    "Workstation receptacles",
    "Conference room AV",
    "IDF rack",
    "Lighting stair",
    "Exterior lighting",
    "Signage",
    "Water cooler",
    "Door hardware",
    "Fire alarm booster",
];

/// A 50-panel, 2,000-circuit office building on a 480Y/277 V service.
pub fn large() -> Workload {
    let mut panels = vec![{
        let mut p = panel("MDP", 480.0, Phase::Three, 4000.0, "service", 42);
        p.main_breaker = Some(Amps(4000.0));
        p.interrupting_rating_ka = Some(65.0);
        p
    }];
    let mut feeders = Vec::new();
    let mut transformers = Vec::new();
    for d in 1..=4 {
        panels.push(panel(
            &format!("DP-{d}"),
            480.0,
            Phase::Three,
            1200.0,
            "MDP",
            42,
        ));
        feeders.push(feeder(
            &format!("F-DP-{d}"),
            "MDP",
            &format!("DP-{d}"),
            ConductorSize::Kcmil(500),
            1200.0,
            120.0,
        ));
    }
    for h in 1..=10 {
        let dp = format!("DP-{}", (h - 1) % 4 + 1);
        panels.push(panel(
            &format!("HP-{h}"),
            480.0,
            Phase::Three,
            400.0,
            &dp,
            42,
        ));
        feeders.push(feeder(
            &format!("F-HP-{h}"),
            &dp,
            &format!("HP-{h}"),
            ConductorSize::Kcmil(500),
            400.0,
            90.0,
        ));
        transformers.push(TransformerSpec {
            name: format!("T-{h}"),
            kva: 112.5,
            primary_voltage: Volts(480.0),
            secondary_voltage: Volts(208.0),
            phase: Phase::Three,
            impedance_percent: 3.5,
            fed_from: Some(format!("HP-{h}")),
        });
    }
    for l in 1..=30 {
        let t = format!("T-{}", (l - 1) % 10 + 1);
        panels.push(panel(
            &format!("LP-{l}"),
            208.0,
            Phase::Three,
            225.0,
            &t,
            42,
        ));
        feeders.push(feeder(
            &format!("F-LP-{l}"),
            &t,
            &format!("LP-{l}"),
            ConductorSize::Awg(-1),
            225.0,
            25.0 + l as f64,
        ));
    }
    for e in 1..=5 {
        panels.push(panel(
            &format!("EM-{e}"),
            208.0,
            Phase::Three,
            100.0,
            "T-1",
            42,
        ));
    }
    let mut circuits = Vec::new();
    for (pi, p) in panels.iter().enumerate() {
        let floor = pi % 12 + 1;
        for n in 1..=40 {
            let room = ROOMS[(n as usize + pi) % ROOMS.len()];
            let description = if p.voltage.0 > 300.0 {
                format!("Lighting L{floor} zone {n}")
            } else {
                format!("{room} {floor}{n:02}")
            };
            let va = 360.0 + ((n * 97 + pi as i32 * 31) % 1400) as f64;
            let length = 30.0 + ((n * 53 + pi as i32 * 17) % 190) as f64;
            circuits.push(PanelCircuit {
                panel: p.name.clone(),
                circuit: circuit(n, description, va, length, n % 5 == 0),
            });
        }
    }
    Workload {
        label: "office tower (50 panels, 2,000 circuits)",
        file: file(
            "Harbor Tower",
            480.0,
            Phase::Three,
            4000.0,
            panels,
            circuits,
            feeders,
            transformers,
        ),
        a: "LP-7".into(),
        b: "LP-3".into(),
    }
}

/// A house: a 200 A main panel and a garage subpanel.
pub fn small() -> Workload {
    let mut main = panel("MP", 240.0, Phase::Single, 200.0, "service", 40);
    main.main_breaker = Some(Amps(200.0));
    let garage = panel("GP", 240.0, Phase::Single, 100.0, "MP", 12);
    let house = [
        "Kitchen counter receptacles",
        "Kitchen counter receptacles 2",
        "Refrigerator",
        "Dining room receptacles",
        "Living room receptacles",
        "Bedroom 1 receptacles",
        "Bedroom 2 receptacles",
        "Bathroom receptacles",
        "Laundry receptacles",
        "Lighting first floor",
        "Lighting second floor",
        "Microwave",
        "Garbage disposal",
        "Smoke detectors",
        "Exterior receptacles",
        "Bedroom 3 receptacles",
    ];
    let mut circuits: Vec<PanelCircuit> = house
        .iter()
        .enumerate()
        .map(|(i, d)| PanelCircuit {
            panel: "MP".into(),
            circuit: circuit(
                i as i32 + 1,
                d.to_string(),
                600.0 + (i as f64 * 83.0) % 900.0,
                25.0 + (i as f64 * 11.0) % 60.0,
                false,
            ),
        })
        .collect();
    let garage_circuits = [
        "Garage receptacles",
        "Workbench receptacles",
        "Garage door opener",
        "Freezer",
        "Garage lighting",
    ];
    for (i, d) in garage_circuits.iter().enumerate() {
        circuits.push(PanelCircuit {
            panel: "GP".into(),
            circuit: circuit(
                i as i32 + 1,
                d.to_string(),
                500.0 + i as f64 * 150.0,
                20.0 + i as f64 * 9.0,
                false,
            ),
        });
    }
    // The circuits the conversation asks about by number.
    circuits.push(PanelCircuit {
        panel: "GP".into(),
        circuit: circuit(12, "Shop compressor receptacle".into(), 1440.0, 95.0, false),
    });
    let feeders = vec![feeder(
        "F-GP",
        "MP",
        "GP",
        ConductorSize::Awg(3),
        100.0,
        60.0,
    )];
    Workload {
        label: "house (2 panels, 22 circuits)",
        file: file(
            "Maple St residence",
            240.0,
            Phase::Single,
            200.0,
            vec![main, garage],
            circuits,
            feeders,
            vec![],
        ),
        a: "MP".into(),
        b: "GP".into(),
    }
}

#[allow(clippy::too_many_arguments)]
fn file(
    name: &str,
    volts: f64,
    phase: Phase,
    rating: f64,
    panels: Vec<PanelSpec>,
    circuits: Vec<PanelCircuit>,
    feeders: Vec<FeederSpec>,
    transformers: Vec<TransformerSpec>,
) -> ProjectFile {
    ProjectFile {
        format: sparky::services::project_files::FORMAT.into(),
        version: sparky::services::project_files::VERSION,
        name: name.into(),
        edition: Edition::Nec2023,
        site: Default::default(),
        service: Some(ServiceSpec {
            voltage: Volts(volts),
            phase,
            rating: Amps(rating),
            available_fault_ka: Some(if volts > 300.0 { 50.0 } else { 10.0 }),
            notes: String::new(),
        }),
        panels,
        circuits,
        feeders,
        transformers,
        loads: vec![],
        charging_sources: vec![],
        tasks: vec![
            TaskFile {
                spec: TaskSpec {
                    title: "Label every breaker in the electrical rooms".into(),
                    notes: String::new(),
                    assignee: None,
                },
                created_by: "import".into(),
                completed_by: None,
            },
            TaskFile {
                spec: TaskSpec {
                    title: "Torque check on the main lugs".into(),
                    notes: String::new(),
                    assignee: None,
                },
                created_by: "import".into(),
                completed_by: None,
            },
        ],
    }
}

// ---------------------------------------------------------------------------------------------
// The conversation.

/// What a person does in one turn.
#[derive(Debug, Clone)]
pub enum Act {
    /// Writes a message in the thread.
    Say(String),
    /// Presses Confirm on the pending proposal.
    Confirm,
}

/// What the scripted model answers to one request.
#[derive(Debug, Clone)]
pub enum Answer {
    /// Calls these tools (name, arguments).
    Calls(Vec<(String, Value)>),
    /// Answers with this text; `{var}` is replaced by a value remembered from a result.
    Text(String),
}

/// One model call: what the request must contain, the answer, and the values to remember
/// from the results of the calls it makes (variable, key searched anywhere in the result).
#[derive(Debug, Clone)]
pub struct ModelStep {
    /// Facts the answer relies on; `{var}` is replaced first.
    pub needs: Vec<String>,
    /// The answer.
    pub answer: Answer,
    /// Values to remember from this step's tool results.
    pub remember: Vec<(String, String)>,
}

/// One turn: what the person does and the model calls it leads to.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The person's act.
    pub act: Act,
    /// The model calls, in order.
    pub model: Vec<ModelStep>,
}

fn calls(list: &[(&str, Value)]) -> ModelStep {
    ModelStep {
        needs: vec![],
        answer: Answer::Calls(
            list.iter()
                .map(|(n, a)| (n.to_string(), a.clone()))
                .collect(),
        ),
        remember: vec![],
    }
}

fn text(t: &str) -> ModelStep {
    ModelStep {
        needs: vec![],
        answer: Answer::Text(t.into()),
        remember: vec![],
    }
}

impl ModelStep {
    fn needs(mut self, facts: &[&str]) -> Self {
        self.needs.extend(facts.iter().map(|f| f.to_string()));
        self
    }
    fn remember(mut self, var: &str, key: &str) -> Self {
        self.remember.push((var.into(), key.into()));
        self
    }
}

fn say(t: String, model: Vec<ModelStep>) -> Turn {
    Turn {
        act: Act::Say(t),
        model,
    }
}

/// The 20 messages and one confirmation of the conversation, about panels `a` and `b`.
pub fn conversation(w: &Workload) -> Vec<Turn> {
    let (a, b) = (w.a.as_str(), w.b.as_str());
    vec![
        say("What does the NEC require for GFCI protection of receptacles in kitchens and garages?".into(), vec![
            calls(&[("search_code", json!({"query": "GFCI protection receptacles kitchens garages 210.8"}))]),
            text("Per NEC 210.8, receptacles serving kitchen countertops and in garages need GFCI protection."),
        ]),
        say("Look up the ampacity of 10 AWG copper at 75 °C.".into(), vec![
            calls(&[("lookup_table", json!({"table": "310.16", "row": "10", "column": "75", "material": "copper"}))]),
            text("10 AWG copper at 75 °C is good for 35 A (NEC Table 310.16)."),
        ]),
        say(format!("What's the voltage drop on {a} circuit 12?"), vec![
            calls(&[("calculate_voltage_drop", json!({"panel": a, "number": 12}))]).remember("vd_a", "percent"),
            text(&format!("The voltage drop on {a} #12 is {{vd_a}} %.")).needs(&["{vd_a}"]),
        ]),
        say(format!("and the one on {b}?"), vec![
            calls(&[("calculate_voltage_drop", json!({"panel": b, "number": 12}))])
                .needs(&[&format!("voltage drop on {a} circuit 12")])
                .remember("vd_b", "percent"),
            text(&format!("On {b} #12 the drop is {{vd_b}} %.")),
        ]),
        say(format!("Which circuits on {a} have the worst voltage drop? List them all."), vec![
            calls(&[("find_circuits", json!({"panel": a, "selector": "worst_voltage_drop", "limit": 200}))])
                .remember("worst", "voltage_drop_percent"),
            text(&format!("The worst circuit on {a} drops {{worst}} %; the full list is above.")),
        ]),
        say(format!("How loaded is {a}? Can it take more?"), vec![
            calls(&[("check_panel_capacity", json!({"panel": a}))]).remember("load_a", "percent_of_rating"),
            text(&format!("{a} is at {{load_a}} % of its rating.")),
        ]),
        say(format!("What's the available fault current at {b}, and is its 22 kA rating enough?"), vec![
            calls(&[("calculate_short_circuit", json!({"panel": b}))]),
            text(&format!("The fault current at {b} is within its 22 kA interrupting rating.")),
        ]),
        say(format!("Add a 20 A circuit for a new dishwasher to {a}: 1200 VA, 12 AWG copper, 60 ft."), vec![
            calls(&[("add_circuit", json!({"panel": a, "description": "Dishwasher", "load_va": 1200, "breaker": 20, "conductor_size": "12", "length": 60}))]),
        ]),
        say("Make it 1500 VA and 75 ft, it's the commercial unit.".into(), vec![
            calls(&[("add_circuit", json!({"panel": a, "description": "Dishwasher", "load_va": 1500, "breaker": 20, "conductor_size": "12", "length": 75}))])
                .needs(&["\"Dishwasher\"", "1200", "not_confirmed"])
                .remember("dw_number", "number"),
        ]),
        Turn {
            act: Act::Confirm,
            model: vec![text(&format!("Done: the dishwasher is on {a}, 1500 VA at 75 ft.")).needs(&["1500", "\"length\":75"])],
        },
        say(format!("What's {a}'s load now with the dishwasher?"), vec![
            calls(&[("check_panel_capacity", json!({"panel": a}))]).needs(&["Dishwasher"]).remember("load_a2", "percent_of_rating"),
            text(&format!("With the dishwasher {a} is at {{load_a2}} % (it was {{load_a}} %).")).needs(&["{load_a}"]),
        ]),
        say("Is 12 AWG still fine for the dishwasher circuit?".into(), vec![
            calls(&[("check_conductor_sizing", json!({"description": format!("{a} dishwasher")}))]).needs(&["1500", "Dishwasher"]),
            text("12 AWG copper on a 20 A breaker passes for the 1500 VA dishwasher."),
        ]),
        say(format!("Remind me, what was the voltage drop on {b} #12?"), vec![
            text(&format!("{b} #12 drops {{vd_b}} %.")).needs(&["{vd_b}"]),
        ]),
        say("What size equipment grounding conductor does a 60 A circuit need?".into(), vec![
            calls(&[("lookup_table", json!({"table": "250.122", "row": "60"}))]),
            text("A 60 A circuit needs a 10 AWG copper EGC (NEC Table 250.122)."),
        ]),
        say(format!("Describe {b} for me."), vec![
            calls(&[("describe_panel", json!({"panel": b}))]),
            text(&format!("{b} is summarised above.")),
        ]),
        say(format!("Which was worse, {a} #12 or {b} #12?"), vec![
            text(&format!("{a} #12 drops {{vd_a}} % and {b} #12 drops {{vd_b}} %.")).needs(&["{vd_a}", "{vd_b}"]),
        ]),
        say("What's on the punch list?".into(), vec![
            calls(&[("list_tasks", json!({}))]),
            text("Two tasks are open: breaker labels and the torque check."),
        ]),
        say(format!("What's the arc flash incident energy at {b}?"), vec![
            calls(&[("calculate_arc_flash", json!({"panel": b}))]),
            text(&format!("The arc flash result for {b} is above.")),
        ]),
        say("What does the code say about working space in front of panels?".into(), vec![
            calls(&[("search_code", json!({"query": "working space in front of electrical equipment 110.26"}))]),
            text("NEC 110.26 sets the working space depth, width and height in front of panels."),
        ]),
        say("Summarise what we changed today and what is still open.".into(), vec![
            text(&format!(
                "We added the dishwasher on {a} (1500 VA, 75 ft), which took {a} to {{load_a2}} %. The worst drop on {a} was {{worst}} %. Open: breaker labels and the torque check."
            ))
            .needs(&["Dishwasher", "1500", "{load_a2}", "{worst}", "Torque check"]),
        ]),
        say(format!("Thanks. One last thing: which circuit number did the dishwasher get on {a}?"), vec![
            text("The dishwasher is circuit {dw_number}.").needs(&["{dw_number}"]),
        ]),
    ]
}

// ---------------------------------------------------------------------------------------------
// The scripted model.

/// One request the model received.
#[derive(Debug, Clone)]
pub struct RequestRecord {
    /// Index of the turn it belongs to.
    pub turn: usize,
    /// Prompt tokens.
    pub tokens: usize,
    /// Tokens a prefix cache would have served.
    pub cached: usize,
    /// Tokens of the tool definitions alone.
    pub tool_tokens: usize,
    /// Tools offered.
    pub tools: usize,
}

/// One tool result, as the model first received it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// Tool name.
    pub tool: String,
    /// Arguments.
    pub args: Value,
    /// The result, without creation timestamps (the two runs import at different moments).
    pub result: Value,
}

/// A call the model made: tool, arguments, values to remember from its result, turn.
type Issued = (String, Value, Vec<(String, String)>, usize);

#[derive(Default)]
struct Script {
    steps: VecDeque<(usize, ModelStep)>,
    vars: HashMap<String, String>,
    issued: HashMap<String, Issued>,
    seen: HashSet<String>,
    outcomes: Vec<ToolOutcome>,
    lost: Vec<String>,
    requests: Vec<RequestRecord>,
    summaries: Vec<RequestRecord>,
    with_summary: usize,
    prompts: Vec<Vec<u32>>,
    next_id: u64,
}

struct Shared {
    script: Mutex<Script>,
    tokenizer: Tokenizer,
}

fn lock(m: &Mutex<Script>) -> std::sync::MutexGuard<'_, Script> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The scripted model server.
pub struct ScriptedModel {
    shared: Arc<Shared>,
    base_url: String,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl ScriptedModel {
    /// Starts the server on 127.0.0.1 with the conversation's model steps queued.
    pub async fn start(turns: &[Turn], tokenizer: Tokenizer) -> std::io::Result<Self> {
        let mut script = Script::default();
        for (i, t) in turns.iter().enumerate() {
            for s in &t.model {
                script.steps.push_back((i, s.clone()));
            }
        }
        let shared = Arc::new(Shared {
            script: Mutex::new(script),
            tokenizer,
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(handle))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            shared,
            base_url: format!("http://{addr}/v1"),
            server,
        })
    }

    /// Facts found missing so far (and tools not offered when called).
    pub fn lost(&self) -> Vec<String> {
        lock(&self.shared.script).lost.clone()
    }

    /// The `llm.openai.base_url` of this server.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }
}

fn substitute(text: &str, vars: &HashMap<String, String>) -> String {
    let mut out = text.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

fn find_key(v: &Value, key: &str) -> Option<Value> {
    match v {
        Value::Object(m) => m
            .get(key)
            .filter(|x| !x.is_null())
            .cloned()
            .or_else(|| m.values().find_map(|x| find_key(x, key))),
        Value::Array(a) => a.iter().find_map(|x| find_key(x, key)),
        _ => None,
    }
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn without_timestamps(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.ends_with("_at"))
                .map(|(k, v)| (k.clone(), without_timestamps(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_timestamps).collect()),
        other => other.clone(),
    }
}

/// Everything the model reads, in prompt order: system, tool definitions, then the messages.
fn prompt_text(body: &Value) -> (String, String) {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let tools = body.get("tools").map(|t| t.to_string()).unwrap_or_default();
    let mut out = String::new();
    let mut rest = String::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or("");
        let mut part = format!("<|{role}|>");
        if let Some(c) = m["content"].as_str() {
            part.push_str(c);
        }
        if let Some(calls) = m["tool_calls"].as_array() {
            for c in calls {
                part.push_str(c["function"]["name"].as_str().unwrap_or(""));
                part.push_str(c["function"]["arguments"].as_str().unwrap_or(""));
            }
        }
        if i == 0 && role == "system" {
            out.push_str(&part);
            out.push_str(&tools);
        } else {
            rest.push_str(&part);
        }
    }
    if !messages.first().is_some_and(|m| m["role"] == "system") {
        out.push_str(&tools);
    }
    out.push_str(&rest);
    (out, tools)
}

async fn handle(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "request is not JSON").into_response();
    };
    let (prompt, tools_text) = prompt_text(&body);
    let tokens = (shared.tokenizer)(&prompt);
    let tool_tokens = (shared.tokenizer)(&tools_text).len();
    let mut s = lock(&shared.script);
    if body["messages"][0]["content"]
        .as_str()
        .is_some_and(|c| c.starts_with(SUMMARY_PROMPT_START))
    {
        return summary_answer(&mut s, &body, tokens.len());
    }
    let Some((turn, step)) = s.steps.pop_front() else {
        s.lost.push("a request after the script ended".into());
        return (StatusCode::INTERNAL_SERVER_ERROR, "script exhausted").into_response();
    };

    // Tool results this request carries for the first time are the calls' outcomes.
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    for m in &messages {
        if m["role"] != "tool" {
            continue;
        }
        let id = m["tool_call_id"].as_str().unwrap_or("").to_string();
        if s.seen.contains(&id) {
            continue;
        }
        let Some((name, args, remember, from_turn)) = s.issued.get(&id).cloned() else {
            continue;
        };
        s.seen.insert(id);
        let content = m["content"].as_str().unwrap_or("");
        let result =
            serde_json::from_str::<Value>(content).unwrap_or(Value::String(content.into()));
        for (var, key) in remember {
            match find_key(&result, &key) {
                Some(v) => {
                    s.vars.insert(var, scalar_text(&v));
                }
                None => s.lost.push(format!(
                    "turn {}: the {name} result has no {key} to remember as {var}: {result}",
                    from_turn + 1
                )),
            }
        }
        s.outcomes.push(ToolOutcome {
            tool: name,
            args,
            result: without_timestamps(&result),
        });
    }

    // Every fact the answer relies on must be in the request.
    let haystack = {
        let mut h = prompt.clone();
        for m in &messages {
            h.push_str(&m.to_string());
        }
        h
    };
    for fact in &step.needs {
        let fact = substitute(fact, &s.vars);
        if !haystack.contains(&fact) {
            s.lost
                .push(format!("turn {}: the request lacks \"{fact}\"", turn + 1));
        }
    }
    // Tool name -> the argument names its offered schema declares.
    let offered: HashMap<String, Vec<String>> = body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|x| {
                    let f = &x["function"];
                    let props = f["parameters"]["properties"]
                        .as_object()
                        .map(|p| p.keys().cloned().collect())
                        .unwrap_or_default();
                    f["name"].as_str().map(|n| (n.to_string(), props))
                })
                .collect()
        })
        .unwrap_or_default();

    // What an automatic prefix cache would serve: the longest prefix shared with an earlier
    // request, in steps of 128 tokens from 1,024 on.
    let shared_prefix = s
        .prompts
        .iter()
        .map(|p| p.iter().zip(&tokens).take_while(|(x, y)| x == y).count())
        .max()
        .unwrap_or(0);
    let cached = if shared_prefix >= CACHE_MIN {
        shared_prefix / CACHE_STEP * CACHE_STEP
    } else {
        0
    };
    if body["messages"][0]["content"]
        .as_str()
        .is_some_and(|c| c.contains(SUMMARY_MARK))
    {
        s.with_summary += 1;
    }
    s.requests.push(RequestRecord {
        turn,
        tokens: tokens.len(),
        cached,
        tool_tokens,
        tools: offered.len(),
    });
    s.prompts.push(tokens.clone());

    let mut chunks: Vec<Value> = Vec::new();
    let finish = match &step.answer {
        Answer::Calls(list) => {
            let mut fragments = Vec::new();
            for (i, (name, args)) in list.iter().enumerate() {
                match offered.get(name) {
                    None => s.lost.push(format!(
                        "turn {}: the tool {name} was not offered",
                        turn + 1
                    )),
                    Some(props) => {
                        for key in args
                            .as_object()
                            .map(|a| a.keys().collect::<Vec<_>>())
                            .unwrap_or_default()
                        {
                            if !props.contains(key) {
                                s.lost.push(format!(
                                    "turn {}: the offered {name} schema has no argument {key}",
                                    turn + 1
                                ));
                            }
                        }
                    }
                }
                s.next_id += 1;
                let id = format!("call_{}", s.next_id);
                s.issued.insert(
                    id.clone(),
                    (name.clone(), args.clone(), step.remember.clone(), turn),
                );
                fragments.push(json!({"index": i, "id": id, "type": "function",
                    "function": {"name": name, "arguments": args.to_string()}}));
            }
            chunks.push(json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": fragments}}]}));
            "tool_calls"
        }
        Answer::Text(t) => {
            let t = substitute(t, &s.vars);
            chunks.push(
                json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": t}}]}),
            );
            "stop"
        }
    };
    chunks.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}));
    chunks.push(json!({"choices": [], "usage": {
        "prompt_tokens": tokens.len(), "completion_tokens": 20, "total_tokens": tokens.len() + 20,
        "prompt_tokens_details": {"cached_tokens": cached}}}));
    let mut sse = String::new();
    for c in chunks {
        sse.push_str(&format!("data: {c}\n\n"));
    }
    sse.push_str("data: [DONE]\n\n");
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(axum::body::Body::from(sse))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// How the agent's summary request begins (src/core/summary.rs).
const SUMMARY_PROMPT_START: &str = "Summarise the earlier part of a conversation";
/// How the scripted model's summaries begin, so requests that carry one can be counted.
pub const SUMMARY_MARK: &str = "Model summary of earlier turns:";

/// Answers a summary request as a careful model would: every user line and every answer line
/// of the transcript, nothing of the raw tool results (the answers carry what they found).
fn summary_answer(s: &mut Script, body: &Value, tokens: usize) -> Response {
    let transcript = body["messages"][1]["content"].as_str().unwrap_or("");
    if !transcript.contains("user: ") {
        s.lost
            .push("a summary request without the turns to summarise".into());
    }
    let mut summary = String::from(SUMMARY_MARK);
    for line in transcript.lines() {
        let skip = line.is_empty()
            || line == SUMMARY_MARK
            || line.starts_with("result: ")
            || line.starts_with('<')
            || line.starts_with("Summary so far:")
            || line.starts_with("Then:");
        if !skip {
            summary.push('\n');
            summary.push_str(line);
        }
    }
    let turn = s.steps.front().map(|(t, _)| *t).unwrap_or(0);
    s.summaries.push(RequestRecord {
        turn,
        tokens,
        cached: 0,
        tool_tokens: 0,
        tools: 0,
    });
    let chunks = [
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": summary}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": tokens, "completion_tokens": 200,
            "total_tokens": tokens + 200, "prompt_tokens_details": {"cached_tokens": 0}}}),
    ];
    let mut sse = String::new();
    for c in chunks {
        sse.push_str(&format!("data: {c}\n\n"));
    }
    sse.push_str("data: [DONE]\n\n");
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(axum::body::Body::from(sse))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

// ---------------------------------------------------------------------------------------------
// The runner.

/// What one run of the conversation under one policy measured.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// Every request of the conversation, in order.
    pub requests: Vec<RequestRecord>,
    /// Summary requests (the window rolled with a model summary).
    pub summaries: Vec<RequestRecord>,
    /// Conversation requests whose system prompt carried a model-written summary.
    pub with_summary: usize,
    /// Tool results in the order the model first received them.
    pub outcomes: Vec<ToolOutcome>,
    /// Facts that were missing from a request, tools not offered, errors shown to the user.
    pub lost: Vec<String>,
    /// Prompt and cached tokens the agent recorded from the usage it was sent.
    pub recorded_input: u64,
    /// Cached prompt tokens the agent recorded.
    pub recorded_cached: u64,
    /// Number of turns.
    pub turns: usize,
}

impl RunReport {
    /// Prompt tokens of every request of turn `t`.
    pub fn turn_tokens(&self, t: usize) -> usize {
        self.requests
            .iter()
            .chain(&self.summaries)
            .filter(|r| r.turn == t)
            .map(|r| r.tokens)
            .sum()
    }
    /// All prompt tokens, summary requests included.
    pub fn total(&self) -> usize {
        self.requests
            .iter()
            .chain(&self.summaries)
            .map(|r| r.tokens)
            .sum()
    }
    /// Prompt tokens of the summary requests.
    pub fn summary_tokens(&self) -> usize {
        self.summaries.iter().map(|r| r.tokens).sum()
    }
    /// All cached prompt tokens.
    pub fn cached(&self) -> usize {
        self.requests.iter().map(|r| r.cached).sum()
    }
    /// Tokens spent on tool definitions.
    pub fn tool_tokens(&self) -> usize {
        self.requests.iter().map(|r| r.tool_tokens).sum()
    }
}

/// Failures setting up a run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Configuration, store or server setup.
    #[error("{0}")]
    Setup(String),
}

fn setup<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> RunError + '_ {
    move |e| RunError::Setup(format!("{what}: {e}"))
}

/// Plays the conversation about `w` through the agent under `policy`, on a fresh SQLite
/// database, against a fresh scripted model.
pub async fn run(
    w: &Workload,
    policy: ContextPolicy,
    tokenizer: Tokenizer,
) -> Result<RunReport, RunError> {
    run_with(w, policy, tokenizer, &[]).await
}

/// [`run`] with extra configuration (`SPARKY_…` variables).
pub async fn run_with(
    w: &Workload,
    policy: ContextPolicy,
    tokenizer: Tokenizer,
    extra_env: &[(&str, &str)],
) -> Result<RunReport, RunError> {
    sparky::llm::tls::install_default_crypto_provider();
    let turns = conversation(w);
    let model = ScriptedModel::start(&turns, tokenizer)
        .await
        .map_err(setup("model server"))?;
    let dir = tempfile::tempdir().map_err(setup("temp dir"))?;
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in [
        ("SPARKY_LLM__PROVIDER", "openai"),
        ("SPARKY_LLM__OPENAI__BASE_URL", model.base_url()),
        ("SPARKY_LLM__OPENAI__MODEL", "scripted"),
        ("OPENAI_API_KEY", "scripted-key"),
        ("SPARKY_LLM__MAX_RETRIES", "0"),
        ("SPARKY_LIMITS__TURNS_PER_USER_PER_MINUTE", "100000"),
        ("SPARKY_LIMITS__TURNS_PER_CHANNEL_PER_MINUTE", "100000"),
        ("SPARKY_LIMITS__TOOL_EXECUTIONS_PER_MINUTE", "100000"),
    ] {
        env.insert(k.into(), v.into());
    }
    for (k, v) in extra_env {
        env.insert(k.to_string(), v.to_string());
    }
    env.insert(
        "SPARKY_DATABASE__SQLITE_PATH".into(),
        dir.path().join("context.db").display().to_string(),
    );
    let config = Config::load(None, &env).map_err(setup("config"))?;
    let store = sparky::app::connect_store(&config)
        .await
        .map_err(setup("store"))?;
    sparky::rag::ingest::sync_builtin(store.as_ref(), None)
        .await
        .map_err(setup("knowledge base"))?;
    let workspace = Workspace::new("bench", "w");
    let project =
        sparky::services::project_files::import(store.as_ref(), &workspace, &w.file, None)
            .await
            .map_err(setup("project import"))?;
    store
        .bind_channel("bench", "w", "c", project.id)
        .await
        .map_err(setup("bind"))?;
    let retriever = sparky::rag::search::Retriever::new(store.clone(), None, "offline");
    let mut tools = sparky::tools::default_registry(100_000);
    tools.register(sparky::tools::search_tool::SearchCode::new(retriever));
    let provider = sparky::llm::resilient::build_provider(&config);
    let agent = Agent::new(
        store.clone(),
        provider,
        Arc::new(tools),
        config.agent.clone(),
        &config.limits,
    )
    .with_context_policy(policy);

    let key = SessionKey::new("bench", "w", "c", "thread-1");
    let mut problems = Vec::new();
    for (i, t) in turns.iter().enumerate() {
        let action = match &t.act {
            Act::Say(text) => InputAction::Message {
                text: text.clone(),
                mode: None,
            },
            Act::Confirm => InputAction::Confirm { action_id: None },
        };
        let sink = CollectSink::default();
        let input = Input {
            key: key.clone(),
            user: "alice".into(),
            event_id: None,
            action,
        };
        if let Err(e) = agent.handle(input, &sink).await {
            problems.push(format!("turn {}: {e}", i + 1));
        }
        for effect in sink.take() {
            if let Effect::Error { message } = effect {
                problems.push(format!(
                    "turn {}: the user was shown an error: {message}",
                    i + 1
                ));
            }
        }
    }
    let session = store
        .open_session(&key, sparky::core::session::Mode::General, Some(project.id))
        .await
        .map_err(setup("session"))?;
    let audit = store
        .audit_for_session(session.id)
        .await
        .map_err(setup("audit"))?;
    let (recorded_input, recorded_cached) = audit
        .iter()
        .filter(|r| r.entry.tool.as_deref() == Some("model_turn"))
        .fold((0, 0), |(i, c), r| {
            (
                i + r.entry.result["input_tokens"].as_u64().unwrap_or(0),
                c + r.entry.result["cached_input_tokens"].as_u64().unwrap_or(0),
            )
        });
    let s = lock(&model.shared.script);
    let mut lost = s.lost.clone();
    lost.extend(problems);
    if !s.steps.is_empty() {
        lost.push(format!(
            "{} scripted model steps were never asked for",
            s.steps.len()
        ));
    }
    Ok(RunReport {
        requests: s.requests.clone(),
        summaries: s.summaries.clone(),
        with_summary: s.with_summary,
        outcomes: s.outcomes.clone(),
        lost,
        recorded_input,
        recorded_cached,
        turns: turns.len(),
    })
}
