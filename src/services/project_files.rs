//! Project files: a whole project as JSON (export from and import into the store) and a panel
//! schedule as CSV (export, and import into a named panel).
//!
//! The JSON file carries names, not database ids, so `export -> import under a new name ->
//! export` gives the same file apart from the name. Task timestamps are not carried (the store
//! sets them when the tasks are created); who created and completed a task is.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::nec::units::{
    Amps, ConductorSize, Edition, Feet, Material, Phase, TempRating, VoltAmperes, Volts,
};
use crate::project::{
    ApplianceKind, ApplianceNameplate, ChargingSourceSpec, CircuitSpec, FeederSpec, LoadItemSpec,
    MotorLoad, PanelSpec, Project, ProjectData, ServiceSpec, TaskSpec, TransformerSpec, Workspace,
};
use crate::store::{Store, StoreError};

/// The `format` value of a project file.
pub const FORMAT: &str = "sparky-project";
/// The newest file version this code writes and reads.
pub const VERSION: u32 = 1;

/// Why a file could not be read, checked or imported.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The file's content is wrong; the message lists every problem found.
    #[error("{0}")]
    Invalid(String),
    /// The store refused.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
}

/// A circuit with the name of its panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelCircuit {
    /// Panel name.
    pub panel: String,
    /// The circuit.
    #[serde(flatten)]
    pub circuit: CircuitSpec,
}

/// A task as carried in a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskFile {
    /// The task.
    #[serde(flatten)]
    pub spec: TaskSpec,
    /// Who created it.
    #[serde(default)]
    pub created_by: String,
    /// Who completed it, when done.
    #[serde(default)]
    pub completed_by: Option<String>,
}

/// A whole project as a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectFile {
    /// Always [`FORMAT`].
    pub format: String,
    /// File version.
    pub version: u32,
    /// Project name.
    pub name: String,
    /// NEC edition.
    pub edition: Edition,
    /// Job-site location, permit date and edition override (absent in older files).
    #[serde(default, skip_serializing_if = "site_is_unset")]
    pub site: crate::jurisdiction::Site,
    /// The service.
    #[serde(default)]
    pub service: Option<ServiceSpec>,
    /// Panels.
    #[serde(default)]
    pub panels: Vec<PanelSpec>,
    /// Circuits, each with its panel's name.
    #[serde(default)]
    pub circuits: Vec<PanelCircuit>,
    /// Feeders.
    #[serde(default)]
    pub feeders: Vec<FeederSpec>,
    /// Transformers.
    #[serde(default)]
    pub transformers: Vec<TransformerSpec>,
    /// Energy-budget loads.
    #[serde(default)]
    pub loads: Vec<LoadItemSpec>,
    /// Charging sources.
    #[serde(default)]
    pub charging_sources: Vec<ChargingSourceSpec>,
    /// Tasks.
    #[serde(default)]
    pub tasks: Vec<TaskFile>,
}

fn site_is_unset(s: &crate::jurisdiction::Site) -> bool {
    *s == crate::jurisdiction::Site::default()
}

/// The file form of stored project data.
pub fn to_file(p: &ProjectData) -> ProjectFile {
    let names: HashMap<i64, &str> = p
        .panels
        .iter()
        .map(|x| (x.id, x.spec.name.as_str()))
        .collect();
    let order: HashMap<i64, usize> = p
        .panels
        .iter()
        .enumerate()
        .map(|(i, x)| (x.id, i))
        .collect();
    let mut circuits: Vec<_> = p.circuits.iter().collect();
    circuits.sort_by_key(|c| (order.get(&c.panel_id).copied(), c.spec.number));
    ProjectFile {
        format: FORMAT.into(),
        version: VERSION,
        name: p.project.name.clone(),
        edition: p.project.edition,
        site: p.project.site.clone(),
        service: p.service.clone(),
        panels: p.panels.iter().map(|x| x.spec.clone()).collect(),
        circuits: circuits
            .into_iter()
            .map(|c| PanelCircuit {
                panel: names
                    .get(&c.panel_id)
                    .copied()
                    .unwrap_or_default()
                    .to_string(),
                circuit: c.spec.clone(),
            })
            .collect(),
        feeders: p.feeders.iter().map(|x| x.spec.clone()).collect(),
        transformers: p.transformers.iter().map(|x| x.spec.clone()).collect(),
        loads: p.loads.iter().map(|x| x.spec.clone()).collect(),
        charging_sources: p.charging_sources.iter().map(|x| x.spec.clone()).collect(),
        tasks: p
            .tasks
            .iter()
            .map(|t| TaskFile {
                spec: t.spec.clone(),
                created_by: t.created_by.clone(),
                completed_by: t.completed_by.clone(),
            })
            .collect(),
    }
}

/// Reads a project file; also accepts the JSON of stored project data (`project export` in
/// chat), which carries ids.
pub fn parse_file(text: &str) -> Result<ProjectFile, IoError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| IoError::Invalid(format!("not JSON: {e}")))?;
    let value = match value.get("type").and_then(|t| t.as_str()) {
        // The chat command's JSON wraps the data.
        Some("project_export") => value.get("project").cloned().unwrap_or_default(),
        _ => value,
    };
    if value.get("format").is_some() {
        let f: ProjectFile = serde_json::from_value(value)
            .map_err(|e| IoError::Invalid(format!("not a valid project file: {e}")))?;
        if f.format != FORMAT {
            return Err(IoError::Invalid(format!(
                "format is '{}', expected '{FORMAT}'",
                f.format
            )));
        }
        if f.version == 0 || f.version > VERSION {
            return Err(IoError::Invalid(format!(
                "file version {} is not supported (this sparky reads up to {VERSION})",
                f.version
            )));
        }
        return Ok(f);
    }
    if value.get("project").is_some() && value.get("panels").is_some() {
        let d: ProjectData = serde_json::from_value(value)
            .map_err(|e| IoError::Invalid(format!("not valid project data: {e}")))?;
        return Ok(to_file(&d));
    }
    Err(IoError::Invalid(format!(
        "not a project file: expected an object with \"format\": \"{FORMAT}\""
    )))
}

fn is_service(name: &str) -> bool {
    name.trim().eq_ignore_ascii_case("service")
}

/// Checks a file's internal consistency; the error lists every problem.
pub fn validate(f: &ProjectFile) -> Result<(), IoError> {
    let mut problems = Vec::new();
    if f.name.trim().is_empty() {
        problems.push("name is empty".to_string());
    }
    let mut panels = HashSet::new();
    for p in &f.panels {
        if p.name.trim().is_empty() {
            problems.push("a panel has an empty name".into());
        }
        if !panels.insert(p.name.trim().to_ascii_lowercase()) {
            problems.push(format!("panel {} appears twice", p.name));
        }
    }
    let mut transformers = HashSet::new();
    for t in &f.transformers {
        if !transformers.insert(t.name.trim().to_ascii_lowercase()) {
            problems.push(format!("transformer {} appears twice", t.name));
        }
    }
    let known = |n: &str| {
        let k = n.trim().to_ascii_lowercase();
        is_service(n) || panels.contains(&k) || transformers.contains(&k)
    };
    for p in &f.panels {
        if let Some(src) = &p.fed_from {
            if !known(src) {
                problems.push(format!(
                    "panel {} is fed from '{src}', which is not in the file",
                    p.name
                ));
            }
        }
    }
    for t in &f.transformers {
        if let Some(src) = &t.fed_from {
            if !known(src) {
                problems.push(format!(
                    "transformer {} is fed from '{src}', which is not in the file",
                    t.name
                ));
            }
        }
    }
    let mut feeders = HashSet::new();
    for x in &f.feeders {
        if !feeders.insert(x.name.trim().to_ascii_lowercase()) {
            problems.push(format!("feeder {} appears twice", x.name));
        }
        for end in [&x.from, &x.to] {
            if !known(end) {
                problems.push(format!(
                    "feeder {} connects '{end}', which is not in the file",
                    x.name
                ));
            }
        }
    }
    let mut numbers = HashSet::new();
    for c in &f.circuits {
        let k = c.panel.trim().to_ascii_lowercase();
        if !panels.contains(&k) {
            problems.push(format!(
                "circuit {} is in panel '{}', which is not in the file",
                c.circuit.number, c.panel
            ));
        }
        if !numbers.insert((k, c.circuit.number)) {
            problems.push(format!(
                "panel {} has circuit {} twice",
                c.panel, c.circuit.number
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(IoError::Invalid(problems.join("; ")))
    }
}

/// Creates a project from a file (under `name` when given). Everything is checked first;
/// a store failure part-way leaves a partial project, which the error names.
pub async fn import(
    store: &dyn Store,
    workspace: &Workspace,
    file: &ProjectFile,
    name: Option<&str>,
) -> Result<Project, IoError> {
    validate(file)?;
    let name = name.unwrap_or(&file.name).trim();
    if name.is_empty() {
        return Err(IoError::Invalid("the project name is empty".into()));
    }
    if store.project_by_name(workspace, name).await?.is_some() {
        return Err(IoError::Invalid(format!(
            "a project named {name} already exists; import under another name with --name"
        )));
    }
    let mut project = store.create_project(workspace, name, file.edition).await?;
    let partial = |e: StoreError| {
        IoError::Invalid(format!(
            "import stopped part-way ({e}); project {name} is incomplete"
        ))
    };
    if !site_is_unset(&file.site) {
        project.site = file.site.clone();
        store.update_project(&project).await.map_err(partial)?;
    }
    if let Some(s) = &file.service {
        store.set_service(project.id, s).await.map_err(partial)?;
    }
    let mut ids = HashMap::new();
    for p in &file.panels {
        let added = store.add_panel(project.id, p).await.map_err(partial)?;
        ids.insert(p.name.trim().to_ascii_lowercase(), added.id);
    }
    for t in &file.transformers {
        store
            .add_transformer(project.id, t)
            .await
            .map_err(partial)?;
    }
    for x in &file.feeders {
        store.add_feeder(project.id, x).await.map_err(partial)?;
    }
    for c in &file.circuits {
        let Some(panel_id) = ids.get(&c.panel.trim().to_ascii_lowercase()) else {
            continue;
        };
        store
            .add_circuit(*panel_id, &c.circuit)
            .await
            .map_err(partial)?;
    }
    for l in &file.loads {
        store.add_load_item(project.id, l).await.map_err(partial)?;
    }
    for s in &file.charging_sources {
        store
            .add_charging_source(project.id, s)
            .await
            .map_err(partial)?;
    }
    for t in &file.tasks {
        let created_by = if t.created_by.is_empty() {
            "import"
        } else {
            &t.created_by
        };
        let task = store
            .create_task(project.id, &t.spec, created_by)
            .await
            .map_err(partial)?;
        if let Some(by) = &t.completed_by {
            store.complete_task(task.id, by).await.map_err(partial)?;
        }
    }
    Ok(project)
}

/// A project's file by project name.
pub async fn export(
    store: &dyn Store,
    workspace: &Workspace,
    name: &str,
) -> Result<ProjectFile, IoError> {
    Ok(to_file(&load_by_name(store, workspace, name).await?))
}

async fn load_by_name(
    store: &dyn Store,
    workspace: &Workspace,
    name: &str,
) -> Result<ProjectData, IoError> {
    let p = store
        .project_by_name(workspace, name)
        .await?
        .ok_or_else(|| IoError::Invalid(format!("there is no project named {}", name.trim())))?;
    Ok(store.load_project(p.id).await?)
}

// ---------------------------------------------------------------------------------------------
// Panel schedule CSV.

/// Columns of the schedule CSV, in order.
pub const CSV_COLUMNS: &[&str] = &[
    "panel",
    "circuit",
    "poles",
    "description",
    "load_va",
    "continuous",
    "breaker_a",
    "conductor",
    "material",
    "insulation_c",
    "length_ft",
    "conduit",
    "motor_hp",
    "motor_phase",
    "motor_voltage",
    "motor_device",
    "appliance_kind",
    "appliance_va",
];

/// The motor and appliance columns of a schedule row, in `CSV_COLUMNS` order.
fn nameplate_fields(s: &CircuitSpec) -> [String; 6] {
    let (hp, ph, v, dev) = match &s.motor {
        Some(m) => (
            num(m.hp),
            m.phase.count().to_string(),
            num(m.voltage.0),
            m.device.map(motor_device_name).unwrap_or_default(),
        ),
        None => Default::default(),
    };
    let (kind, va) = match &s.appliance {
        Some(a) => (a.kind.as_str().to_string(), num(a.va.0)),
        None => Default::default(),
    };
    [hp, ph, v, dev, kind, va]
}

fn motor_device_name(d: crate::nec::tables::MotorOcpdType) -> String {
    serde_json::to_value(d)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Reads the motor and appliance columns of a schedule row (all empty: none).
fn parse_nameplates(
    get: &dyn Fn(&str) -> String,
) -> Result<(Option<MotorLoad>, Option<ApplianceNameplate>), String> {
    let positive = |name: &str| -> Result<f64, String> {
        let s = get(name);
        match s.parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
            _ => Err(format!("{name} '{s}' is not a positive number")),
        }
    };
    let motor = if get("motor_hp").is_empty()
        && get("motor_phase").is_empty()
        && get("motor_voltage").is_empty()
        && get("motor_device").is_empty()
    {
        None
    } else {
        let hp = positive("motor_hp")?;
        let phase = match get("motor_phase").as_str() {
            "1" => Phase::Single,
            "3" => Phase::Three,
            s => return Err(format!("motor_phase '{s}' must be 1 or 3")),
        };
        let voltage = Volts(positive("motor_voltage")?);
        let device = match get("motor_device").as_str() {
            "" => None,
            s => Some(
                serde_json::from_value(serde_json::Value::String(s.to_string())).map_err(|_| {
                    format!("motor_device '{s}' must be non_time_delay_fuse, dual_element_fuse, instantaneous_trip_breaker or inverse_time_breaker")
                })?,
            ),
        };
        Some(MotorLoad {
            hp,
            phase,
            voltage,
            device,
        })
    };
    let appliance = if get("appliance_kind").is_empty() && get("appliance_va").is_empty() {
        None
    } else {
        let kind: ApplianceKind = get("appliance_kind").parse()?;
        Some(ApplianceNameplate {
            kind,
            va: VoltAmperes(positive("appliance_va")?),
        })
    };
    Ok((motor, appliance))
}

/// Characters that make a spreadsheet read a cell as a formula.
const FORMULA_START: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// A CSV cell for text people wrote: quoted where needed, and a leading formula character
/// escaped with `'` so a spreadsheet shows the text instead of running it.
fn csv_field(s: &str) -> String {
    if s.starts_with(FORMULA_START) {
        return csv_quoted(&format!("'{s}"));
    }
    csv_quoted(s)
}

/// Text written by [`csv_field`], back as it was.
fn csv_text(cell: &str) -> &str {
    match cell.strip_prefix('\'') {
        Some(rest) if rest.starts_with(FORMULA_START) => rest,
        _ => cell,
    }
}

fn csv_quoted(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round())
    } else {
        format!("{v}")
    }
}

/// The schedule of one panel (or all panels) as CSV with a header row.
pub fn schedule_csv(p: &ProjectData, panel: Option<&str>) -> Result<String, IoError> {
    let panels: Vec<_> = match panel {
        Some(n) => vec![p.panel_by_name(n).ok_or_else(|| {
            IoError::Invalid(format!(
                "project {} has no panel named {}; panels: {}",
                p.project.name,
                n.trim(),
                p.panels
                    .iter()
                    .map(|x| x.spec.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?],
        None => p.panels.iter().collect(),
    };
    let mut out = CSV_COLUMNS.join(",");
    out.push_str("\r\n");
    for panel in panels {
        for c in p.circuits_of(panel.id) {
            let s = &c.spec;
            let row = [
                csv_field(&panel.spec.name),
                s.number.to_string(),
                s.poles.to_string(),
                csv_field(&s.description),
                num(s.load_va.0),
                s.continuous.to_string(),
                num(s.breaker.0),
                s.conductor_size.map(|x| x.to_string()).unwrap_or_default(),
                s.material.to_string(),
                s.insulation.celsius().to_string(),
                s.length.map(|l| num(l.0)).unwrap_or_default(),
                csv_field(&s.conduit),
            ];
            let mut row = row.to_vec();
            row.extend(nameplate_fields(s));
            out.push_str(&row.join(","));
            out.push_str("\r\n");
        }
    }
    Ok(out)
}

/// Splits CSV text into records (RFC 4180: quoted fields may hold commas, quotes, newlines).
pub fn parse_csv(text: &str) -> Result<Vec<Vec<String>>, IoError> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.trim_start_matches('\u{feff}').chars().peekable();
    let mut line = 1usize;
    while let Some(ch) = chars.next() {
        if quoted {
            match ch {
                '"' if chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                '"' => quoted = false,
                '\n' => {
                    line += 1;
                    field.push(ch);
                }
                _ => field.push(ch),
            }
            continue;
        }
        match ch {
            '"' if field.is_empty() => quoted = true,
            ',' => row.push(std::mem::take(&mut field)),
            '\r' => {}
            '\n' => {
                line += 1;
                row.push(std::mem::take(&mut field));
                if !(row.len() == 1 && row[0].trim().is_empty()) {
                    rows.push(std::mem::take(&mut row));
                } else {
                    row.clear();
                }
            }
            _ => field.push(ch),
        }
    }
    if quoted {
        return Err(IoError::Invalid(format!(
            "CSV: a quoted field is not closed (line {line})"
        )));
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    Ok(rows)
}

/// Reads a schedule CSV into circuits for `panel`. Rows naming another panel are an error.
/// The header names the columns (any order; `circuit`, `description`, `load_va` and
/// `breaker_a` are required).
pub fn parse_schedule_csv(text: &str, panel: &str) -> Result<Vec<CircuitSpec>, IoError> {
    let rows = parse_csv(text)?;
    let Some((header, body)) = rows.split_first() else {
        return Err(IoError::Invalid("CSV: the file is empty".into()));
    };
    let col: HashMap<String, usize> = header
        .iter()
        .enumerate()
        .map(|(i, h)| (h.trim().to_ascii_lowercase(), i))
        .collect();
    let missing: Vec<&str> = ["circuit", "description", "load_va", "breaker_a"]
        .into_iter()
        .filter(|c| !col.contains_key(*c))
        .collect();
    if !missing.is_empty() {
        return Err(IoError::Invalid(format!(
            "CSV: the header lacks {} (columns: {})",
            missing.join(", "),
            CSV_COLUMNS.join(",")
        )));
    }
    let mut problems = Vec::new();
    let mut out = Vec::new();
    for (i, r) in body.iter().enumerate() {
        let line = i + 2;
        let get = |name: &str| -> &str {
            col.get(name)
                .and_then(|&k| r.get(k))
                .map(|s| csv_text(s.trim()))
                .unwrap_or("")
        };
        let mut bad = |what: String| problems.push(format!("row {line}: {what}"));
        let p = get("panel");
        if !p.is_empty() && !p.eq_ignore_ascii_case(panel.trim()) {
            bad(format!("panel '{p}' is not {}", panel.trim()));
            continue;
        }
        let number = match get("circuit").parse::<i32>() {
            Ok(n) if n >= 1 => n,
            _ => {
                bad(format!(
                    "circuit '{}' is not a number of 1 or more",
                    get("circuit")
                ));
                continue;
            }
        };
        let poles = match get("poles") {
            "" => 1,
            s => match s.parse::<u8>() {
                Ok(n @ 1..=3) => n,
                _ => {
                    bad(format!("poles '{s}' must be 1, 2 or 3"));
                    continue;
                }
            },
        };
        let number_of = |name: &str, bad: &mut dyn FnMut(String)| -> Option<f64> {
            let s = get(name);
            match s.parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => Some(v),
                _ => {
                    bad(format!("{name} '{s}' is not a number of 0 or more"));
                    None
                }
            }
        };
        let Some(load) = number_of("load_va", &mut bad) else {
            continue;
        };
        let Some(breaker) = number_of("breaker_a", &mut bad) else {
            continue;
        };
        let conductor_size = match get("conductor") {
            "" => None,
            s => match s.parse::<ConductorSize>() {
                Ok(x) => Some(x),
                Err(e) => {
                    bad(format!("conductor: {e}"));
                    continue;
                }
            },
        };
        let material = match get("material") {
            "" => Material::Copper,
            s => match s.parse::<Material>() {
                Ok(m) => m,
                Err(e) => {
                    bad(e.to_string());
                    continue;
                }
            },
        };
        let insulation = match get("insulation_c") {
            "" => TempRating::C75,
            s => match s.parse::<TempRating>() {
                Ok(t) => t,
                Err(e) => {
                    bad(e.to_string());
                    continue;
                }
            },
        };
        let length = match get("length_ft") {
            "" => None,
            s => match s.parse::<f64>() {
                Ok(v) if v.is_finite() && v > 0.0 => Some(Feet(v)),
                _ => {
                    bad(format!("length_ft '{s}' is not a positive number"));
                    continue;
                }
            },
        };
        let (motor, appliance) = match parse_nameplates(&|n: &str| get(n).to_string()) {
            Ok(x) => x,
            Err(e) => {
                bad(e);
                continue;
            }
        };
        let continuous = match get("continuous").to_ascii_lowercase().as_str() {
            "" | "false" | "no" | "n" | "0" => false,
            "true" | "yes" | "y" | "1" | "x" => true,
            s => {
                bad(format!("continuous '{s}' must be true or false"));
                continue;
            }
        };
        out.push(CircuitSpec {
            number,
            poles,
            description: get("description").to_string(),
            load_va: VoltAmperes(load),
            continuous,
            breaker: Amps(breaker),
            conductor_size,
            material,
            insulation,
            length,
            conduit: get("conduit").to_string(),
            motor,
            appliance,
        });
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(IoError::Invalid(format!("CSV: {}", problems.join("; "))))
    }
}

/// Adds the circuits of a schedule CSV to a panel; nothing is written when any row is wrong
/// or its number is already used in the panel.
pub async fn import_schedule(
    store: &dyn Store,
    workspace: &Workspace,
    project: &str,
    panel: &str,
    text: &str,
) -> Result<usize, IoError> {
    let p = load_by_name(store, workspace, project).await?;
    let target = p.panel_by_name(panel).ok_or_else(|| {
        IoError::Invalid(format!(
            "project {} has no panel named {}",
            p.project.name,
            panel.trim()
        ))
    })?;
    let circuits = parse_schedule_csv(text, &target.spec.name)?;
    let mut used: HashSet<i32> = p
        .circuits_of(target.id)
        .iter()
        .map(|c| c.spec.number)
        .collect();
    let clashes: Vec<String> = circuits
        .iter()
        .filter(|c| !used.insert(c.number))
        .map(|c| c.number.to_string())
        .collect();
    if !clashes.is_empty() {
        return Err(IoError::Invalid(format!(
            "panel {} already has (or the CSV repeats) circuit(s) {}",
            target.spec.name,
            clashes.join(", ")
        )));
    }
    for c in &circuits {
        store.add_circuit(target.id, c).await?;
    }
    Ok(circuits.len())
}

// ---------------------------------------------------------------------------------------------
// The `sparky project` command.

/// `sparky project ...`
#[derive(Debug, clap::Subcommand)]
pub enum ProjectCmd {
    /// Import a project file (JSON), or a panel schedule (CSV) into a panel of a project.
    Import {
        /// The file.
        file: PathBuf,
        /// JSON: create the project under this name instead of the file's.
        #[arg(long)]
        name: Option<String>,
        /// CSV: the project to import into.
        #[arg(long)]
        project: Option<String>,
        /// CSV: the panel to import into.
        #[arg(long)]
        panel: Option<String>,
        /// json or csv (default: from the file extension).
        #[arg(long)]
        format: Option<String>,
        /// The workspace the project belongs to: PLATFORM:ID (e.g. slack:T0123) or local.
        #[arg(long, default_value = "local")]
        workspace: Workspace,
    },
    /// Export a project as JSON, or its panel schedules as CSV.
    Export {
        /// Project name.
        name: String,
        /// Write here instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
        /// json (default) or csv.
        #[arg(long, default_value = "json")]
        format: String,
        /// CSV: only this panel.
        #[arg(long)]
        panel: Option<String>,
        /// The workspace the project belongs to: PLATFORM:ID (e.g. slack:T0123) or local.
        #[arg(long, default_value = "local")]
        workspace: Workspace,
    },
}

/// Runs a `sparky project` command; what it prints goes to standard output.
pub async fn run_cli(store: Arc<dyn Store>, cmd: ProjectCmd) -> Result<(), IoError> {
    match cmd {
        ProjectCmd::Import {
            file,
            name,
            project,
            panel,
            format,
            workspace,
        } => {
            let text = std::fs::read_to_string(&file).map_err(|e| IoError::File {
                path: file.display().to_string(),
                source: e,
            })?;
            let csv = match format.as_deref().map(str::to_ascii_lowercase).as_deref() {
                Some("csv") => true,
                Some("json") => false,
                Some(other) => {
                    return Err(IoError::Invalid(format!(
                        "unknown format '{other}' (json or csv)"
                    )))
                }
                None => file
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("csv")),
            };
            if csv {
                let (Some(project), Some(panel)) = (project, panel) else {
                    return Err(IoError::Invalid(
                        "a CSV schedule needs --project NAME and --panel NAME".into(),
                    ));
                };
                let n =
                    import_schedule(store.as_ref(), &workspace, &project, &panel, &text).await?;
                println!(
                    "{}",
                    serde_json::json!({"imported_circuits": n, "project": project, "panel": panel})
                );
            } else {
                let f = parse_file(&text)?;
                let p = import(store.as_ref(), &workspace, &f, name.as_deref()).await?;
                println!(
                    "{}",
                    serde_json::json!({
                        "imported": p.name,
                        "panels": f.panels.len(),
                        "circuits": f.circuits.len(),
                        "feeders": f.feeders.len(),
                        "transformers": f.transformers.len(),
                    })
                );
            }
            Ok(())
        }
        ProjectCmd::Export {
            name,
            out,
            format,
            panel,
            workspace,
        } => {
            let text = match format.to_ascii_lowercase().as_str() {
                "json" => {
                    let f = export(store.as_ref(), &workspace, &name).await?;
                    serde_json::to_string_pretty(&f)
                        .map_err(|e| IoError::Invalid(format!("encoding: {e}")))?
                        + "\n"
                }
                "csv" => {
                    let p = load_by_name(store.as_ref(), &workspace, &name).await?;
                    schedule_csv(&p, panel.as_deref())?
                }
                other => {
                    return Err(IoError::Invalid(format!(
                        "unknown format '{other}' (json or csv)"
                    )))
                }
            };
            match out {
                Some(path) => std::fs::write(&path, text).map_err(|e| IoError::File {
                    path: path.display().to_string(),
                    source: e,
                })?,
                None => print!("{text}"),
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_round_trip() {
        let text = "a,b\r\n\"x, \"\"y\"\"\",\"multi\nline\"\r\n\r\n1,2";
        let rows = parse_csv(text).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1][0], "x, \"y\"");
        assert_eq!(rows[1][1], "multi\nline");
        assert_eq!(csv_field("x, \"y\""), "\"x, \"\"y\"\"\"");
        assert!(parse_csv("\"open").is_err());
    }

    #[test]
    fn text_a_spreadsheet_would_run_is_escaped_and_reads_back() {
        for text in [
            "=HYPERLINK(\"http://x\",\"y\")",
            "+1",
            "-5 spare",
            "@SUM(A1)",
            "\tx",
            "\rx",
        ] {
            let cell = csv_field(text);
            let rows = parse_csv(&format!("description\r\n{cell}\r\n")).unwrap();
            assert!(rows[1][0].starts_with('\''), "{text:?} -> {cell:?}");
            assert_eq!(csv_text(&rows[1][0]), text);
        }
        assert_eq!(csv_field("Lights"), "Lights");
        assert_eq!(csv_text("'quoted by hand"), "'quoted by hand");
    }

    #[test]
    fn schedule_rows_are_checked() {
        let ok = "circuit,poles,description,load_va,breaker_a,conductor,length_ft\n1,1,Lights,1200,20,12,50\n";
        let v = parse_schedule_csv(ok, "LP-1").unwrap();
        assert_eq!(v[0].conductor_size, Some(ConductorSize::Awg(12)));
        let bad = "circuit,description,load_va,breaker_a,conductor\nx,Lights,-5,20,13 kcmilx\n";
        let e = parse_schedule_csv(bad, "LP-1").unwrap_err().to_string();
        assert!(e.contains("row 2") && e.contains("circuit 'x'"), "{e}");
        assert!(parse_schedule_csv("circuit\n1\n", "LP-1").is_err());
    }
}
