//! Code both backends share: row decoding, typed-value conversion, error mapping, and the
//! `impl_store!` macro that emits every `Store` method whose SQL is the same in both dialects.
//!
//! Backend files supply a small set of inherent items the macro calls: `BACKEND`,
//! `FOR_UPDATE`, `begin_write`, `begin_read`, `backend_set_embedding`,
//! `backend_search_text`, `backend_search_vector`, `backend_rank_text` and
//! `backend_similarities`.

use chrono::{DateTime, SubsecRound, Utc};
use serde::de::DeserializeOwned;
use sqlx::types::Json;

use super::{PendingState, StoreError, StoreResult};
use crate::config::ConfirmPolicy;
use crate::core::session::{Mode, Session, SessionKey};
use crate::llm::ChatMessage;
use crate::nec::units::{
    Amps, ConductorSize, Edition, Feet, Material, Phase, TempRating, VoltAmperes, Volts, Watts,
};
use crate::project::{
    ChargingSource, ChargingSourceSpec, Circuit, CircuitSpec, Feeder, FeederSpec, LoadItem,
    LoadItemSpec, MemberRole, Panel, PanelSpec, Project, ServiceSpec, Task, TaskSpec, Transformer,
    TransformerSpec, Workspace,
};

use super::{
    ActionOrigin, AuditEntry, AuditKind, AuditRecord, Chunk, Document, PendingAction, QueuedInput,
    ScoredChunk, StoredMessage,
};

/// Columns of a chunk joined with its document (`c` = chunks, `d` = documents).
macro_rules! chunk_cols {
    () => {
        "c.id, c.document_id, d.source, c.section, c.edition, c.page, c.heading, c.text, \
         c.content_hash"
    };
}
pub(crate) use chunk_cols;

/// Current time at the precision both databases keep (microseconds), so a value read back
/// equals the value written.
pub(crate) fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}

/// Truncates a caller's timestamp to stored precision.
pub(crate) fn micros(t: DateTime<Utc>) -> DateTime<Utc> {
    t.trunc_subsecs(6)
}

/// `usize` limit as a SQL integer.
pub(crate) fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

// ----- errors -----

/// A driver error; decode failures mean the stored data is not what this binary expects.
pub(crate) fn db(e: sqlx::Error) -> StoreError {
    match e {
        sqlx::Error::ColumnDecode { index, source } => {
            StoreError::Corrupt(format!("column {index}: {source}"))
        }
        sqlx::Error::Decode(source) => StoreError::Corrupt(source.to_string()),
        other => StoreError::Database(other),
    }
}

fn kind(e: &sqlx::Error) -> Option<sqlx::error::ErrorKind> {
    match e {
        sqlx::Error::Database(d) => Some(d.kind()),
        _ => None,
    }
}

/// Whether the error is a unique-constraint violation.
pub(crate) fn is_unique(e: &sqlx::Error) -> bool {
    matches!(kind(e), Some(sqlx::error::ErrorKind::UniqueViolation))
}

/// Maps constraint violations to the caller's plain messages: `unique` -> `Conflict`,
/// `missing` (a foreign key pointing nowhere) -> `NotFound`; anything else stays a
/// database error.
pub(crate) fn violation(
    e: sqlx::Error,
    unique: Option<String>,
    missing: Option<String>,
) -> StoreError {
    match (kind(&e), unique, missing) {
        (Some(sqlx::error::ErrorKind::UniqueViolation), Some(msg), _) => StoreError::Conflict(msg),
        (Some(sqlx::error::ErrorKind::ForeignKeyViolation), _, Some(msg)) => {
            StoreError::NotFound(msg)
        }
        _ => db(e),
    }
}

/// Rejects values the databases cannot store faithfully (pgvector refuses NaN; an empty
/// vector has no direction).
pub(crate) fn check_embedding(v: &[f32]) -> StoreResult<()> {
    if v.is_empty() {
        return Err(StoreError::Database(sqlx::Error::Encode(
            "an embedding needs at least one dimension".into(),
        )));
    }
    if v.iter().any(|x| !x.is_finite()) {
        return Err(StoreError::Database(sqlx::Error::Encode(
            "an embedding may not contain NaN or infinity".into(),
        )));
    }
    Ok(())
}

/// Refuses a database migrated by a newer binary (before migrating touches it).
pub(crate) fn check_schema_version(
    found: Option<i64>,
    migrator: &sqlx::migrate::Migrator,
) -> StoreResult<()> {
    let supported = newest_version(migrator);
    match found {
        Some(found) if found > supported => Err(StoreError::SchemaTooNew { found, supported }),
        _ => Ok(()),
    }
}

/// The newest migration version a migrator ships.
pub(crate) fn newest_version(migrator: &sqlx::migrate::Migrator) -> i64 {
    migrator
        .iter()
        .filter(|m| m.migration_type.is_up_migration())
        .map(|m| m.version)
        .max()
        .unwrap_or(0)
}

// ----- text the databases refuse -----

/// Text without NUL characters, which Postgres cannot store in TEXT or JSONB (they turn up in
/// text extracted from PDFs). Both backends apply it so they store the same thing.
pub(crate) fn clean_text(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains('\0') {
        std::borrow::Cow::Owned(s.replace('\0', "\u{FFFD}"))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// Optional text through [`clean_text`].
pub(crate) fn clean_opt(s: &Option<String>) -> Option<std::borrow::Cow<'_, str>> {
    s.as_deref().map(clean_text)
}

/// A value as JSON for storage, with NUL characters in strings and keys replaced.
pub(crate) fn db_json<T: serde::Serialize + ?Sized>(v: &T) -> StoreResult<Json<serde_json::Value>> {
    fn scrub(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) if s.contains('\0') => {
                *s = s.replace('\0', "\u{FFFD}");
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(scrub),
            serde_json::Value::Object(map) => {
                if map.keys().any(|k| k.contains('\0')) {
                    let old = std::mem::take(map);
                    for (k, v) in old {
                        map.insert(k.replace('\0', "\u{FFFD}"), v);
                    }
                }
                map.values_mut().for_each(scrub);
            }
            _ => {}
        }
    }
    let mut value = serde_json::to_value(v)
        .map_err(|e| StoreError::Database(sqlx::Error::Encode(Box::new(e))))?;
    scrub(&mut value);
    Ok(Json(value))
}

// ----- typed values -----

fn corrupt(what: &str, value: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("unreadable {what} '{value}'"))
}

/// Phase as stored (1 or 3).
pub(crate) fn phase_to_db(p: Phase) -> i32 {
    i32::from(p.count())
}

fn phase_from_db(v: i32) -> StoreResult<Phase> {
    match v {
        1 => Ok(Phase::Single),
        3 => Ok(Phase::Three),
        other => Err(corrupt("phase", other)),
    }
}

/// Edition as stored (the year).
pub(crate) fn edition_to_db(e: Edition) -> i32 {
    i32::from(e.year())
}

fn edition_from_db(v: i32) -> StoreResult<Edition> {
    v.to_string().parse().map_err(|_| corrupt("edition", v))
}

/// Temperature rating as stored (degrees C).
pub(crate) fn temp_to_db(t: TempRating) -> i32 {
    i32::try_from(t.celsius()).unwrap_or(i32::MAX)
}

fn temp_from_db(v: i32) -> StoreResult<TempRating> {
    v.to_string()
        .parse()
        .map_err(|_| corrupt("temperature rating", v))
}

/// Material as stored ("copper" / "aluminum").
pub(crate) fn material_to_db(m: Material) -> String {
    m.to_string()
}

fn material_from_db(v: &str) -> StoreResult<Material> {
    v.parse().map_err(|_| corrupt("material", v))
}

/// Conductor size as stored (its display form, e.g. "1/0 AWG", "250 kcmil").
pub(crate) fn size_to_db(s: ConductorSize) -> String {
    s.to_string()
}

fn size_from_db(v: &str) -> StoreResult<ConductorSize> {
    v.parse().map_err(|_| corrupt("conductor size", v))
}

fn u8_from_db(what: &str, v: i32) -> StoreResult<u8> {
    u8::try_from(v).map_err(|_| corrupt(what, v))
}

fn u32_from_db(what: &str, v: i64) -> StoreResult<u32> {
    u32::try_from(v).map_err(|_| corrupt(what, v))
}

/// Confirm policy as stored (its serde name).
pub(crate) fn policy_to_db(p: Option<ConfirmPolicy>) -> StoreResult<Option<String>> {
    p.map(|p| match serde_json::to_value(p) {
        Ok(serde_json::Value::String(s)) => Ok(s),
        _ => Err(StoreError::Corrupt(format!(
            "confirm policy {p:?} has no storable name"
        ))),
    })
    .transpose()
}

fn policy_from_db(v: Option<String>) -> StoreResult<Option<ConfirmPolicy>> {
    v.map(|s| {
        serde_json::from_value(serde_json::Value::String(s.clone()))
            .map_err(|_| corrupt("confirm policy", s))
    })
    .transpose()
}

/// Role column value of a message.
pub(crate) fn message_role(m: &ChatMessage) -> &'static str {
    match m {
        ChatMessage::User { .. } => "user",
        ChatMessage::Assistant { .. } => "assistant",
        ChatMessage::Tool { .. } => "tool",
    }
}

// ----- rows -----

/// Typed column access for both backends' rows; decode failures become `Corrupt`.
pub(crate) trait RowExt {
    fn i64(&self, col: &str) -> StoreResult<i64>;
    fn opt_i64(&self, col: &str) -> StoreResult<Option<i64>>;
    fn i32(&self, col: &str) -> StoreResult<i32>;
    fn opt_i32(&self, col: &str) -> StoreResult<Option<i32>>;
    fn f64(&self, col: &str) -> StoreResult<f64>;
    fn opt_f64(&self, col: &str) -> StoreResult<Option<f64>>;
    fn bool(&self, col: &str) -> StoreResult<bool>;
    fn string(&self, col: &str) -> StoreResult<String>;
    fn opt_string(&self, col: &str) -> StoreResult<Option<String>>;
    fn ts(&self, col: &str) -> StoreResult<DateTime<Utc>>;
    fn opt_ts(&self, col: &str) -> StoreResult<Option<DateTime<Utc>>>;
    fn json<T: DeserializeOwned + 'static>(&self, col: &str) -> StoreResult<T>;
    fn opt_json<T: DeserializeOwned + 'static>(&self, col: &str) -> StoreResult<Option<T>>;
}

macro_rules! impl_row_ext {
    ($row:ty) => {
        impl RowExt for $row {
            fn i64(&self, col: &str) -> StoreResult<i64> {
                sqlx::Row::try_get(self, col).map_err(db)
            }
            fn opt_i64(&self, col: &str) -> StoreResult<Option<i64>> {
                sqlx::Row::try_get(self, col).map_err(db)
            }
            fn i32(&self, col: &str) -> StoreResult<i32> {
                sqlx::Row::try_get(self, col).map_err(db)
            }
            fn opt_i32(&self, col: &str) -> StoreResult<Option<i32>> {
                sqlx::Row::try_get(self, col).map_err(db)
            }
            fn f64(&self, col: &str) -> StoreResult<f64> {
                sqlx::Row::try_get(self, col).map_err(db)
            }
            fn opt_f64(&self, col: &str) -> StoreResult<Option<f64>> {
                sqlx::Row::try_get(self, col).map_err(db)
            }
            fn bool(&self, col: &str) -> StoreResult<bool> {
                sqlx::Row::try_get(self, col).map_err(db)
            }
            fn string(&self, col: &str) -> StoreResult<String> {
                sqlx::Row::try_get(self, col).map_err(db)
            }
            fn opt_string(&self, col: &str) -> StoreResult<Option<String>> {
                sqlx::Row::try_get(self, col).map_err(db)
            }
            fn ts(&self, col: &str) -> StoreResult<DateTime<Utc>> {
                sqlx::Row::try_get(self, col).map_err(db)
            }
            fn opt_ts(&self, col: &str) -> StoreResult<Option<DateTime<Utc>>> {
                sqlx::Row::try_get(self, col).map_err(db)
            }
            fn json<T: DeserializeOwned + 'static>(&self, col: &str) -> StoreResult<T> {
                let Json(v) = sqlx::Row::try_get::<Json<T>, _>(self, col).map_err(db)?;
                Ok(v)
            }
            fn opt_json<T: DeserializeOwned + 'static>(&self, col: &str) -> StoreResult<Option<T>> {
                let v = sqlx::Row::try_get::<Option<Json<T>>, _>(self, col).map_err(db)?;
                Ok(v.map(|Json(v)| v))
            }
        }
    };
}

impl_row_ext!(sqlx::postgres::PgRow);
impl_row_ext!(sqlx::sqlite::SqliteRow);

pub(crate) fn project_from(r: &impl RowExt) -> StoreResult<Project> {
    Ok(Project {
        id: r.i64("id")?,
        workspace: Workspace::new(r.string("platform")?, r.string("workspace")?),
        name: r.string("name")?,
        edition: edition_from_db(r.i32("edition")?)?,
        confirm_policy: policy_from_db(r.opt_string("confirm_policy")?)?,
        created_at: r.ts("created_at")?,
        site: site_from(r)?,
    })
}

/// The job-site columns of a project row.
fn site_from(r: &impl RowExt) -> StoreResult<crate::jurisdiction::Site> {
    use crate::jurisdiction::{Location, NecEdition, Site};
    let location = match r.opt_string("site_state")? {
        Some(state) => Some(Location {
            state,
            county: r.opt_string("site_county")?,
            city: r.opt_string("site_city")?,
        }),
        None => None,
    };
    let permit_date = r
        .opt_string("permit_date")?
        .map(|d| {
            chrono::NaiveDate::parse_from_str(&d, "%Y-%m-%d").map_err(|_| corrupt("permit date", d))
        })
        .transpose()?;
    let edition_override = r
        .opt_i32("edition_override")?
        .map(|y| {
            u16::try_from(y)
                .ok()
                .and_then(NecEdition::new)
                .ok_or_else(|| corrupt("edition override", y))
        })
        .transpose()?;
    Ok(Site {
        location,
        permit_date,
        edition_override,
    })
}

pub(crate) fn role_from(r: &impl RowExt) -> StoreResult<MemberRole> {
    let s = r.string("role")?;
    MemberRole::parse(&s).ok_or_else(|| corrupt("member role", s))
}

pub(crate) fn service_from(r: &impl RowExt) -> StoreResult<ServiceSpec> {
    Ok(ServiceSpec {
        voltage: Volts(r.f64("voltage")?),
        phase: phase_from_db(r.i32("phase")?)?,
        rating: Amps(r.f64("rating")?),
        available_fault_ka: r.opt_f64("available_fault_ka")?,
        notes: r.string("notes")?,
    })
}

pub(crate) fn panel_from(r: &impl RowExt) -> StoreResult<Panel> {
    Ok(Panel {
        id: r.i64("id")?,
        project_id: r.i64("project_id")?,
        spec: PanelSpec {
            name: r.string("name")?,
            voltage: Volts(r.f64("voltage")?),
            phase: phase_from_db(r.i32("phase")?)?,
            bus_rating: Amps(r.f64("bus_rating")?),
            main_breaker: r.opt_f64("main_breaker")?.map(Amps),
            interrupting_rating_ka: r.opt_f64("interrupting_rating_ka")?,
            fed_from: r.opt_string("fed_from")?,
            spaces: u32_from_db("panel spaces", r.i64("spaces")?)?,
            location: r.string("location")?,
        },
    })
}

pub(crate) fn circuit_from(r: &impl RowExt) -> StoreResult<Circuit> {
    Ok(Circuit {
        id: r.i64("id")?,
        panel_id: r.i64("panel_id")?,
        spec: CircuitSpec {
            number: r.i32("number")?,
            poles: u8_from_db("poles", r.i32("poles")?)?,
            description: r.string("description")?,
            load_va: VoltAmperes(r.f64("load_va")?),
            continuous: r.bool("continuous")?,
            breaker: Amps(r.f64("breaker")?),
            conductor_size: r
                .opt_string("conductor_size")?
                .map(|s| size_from_db(&s))
                .transpose()?,
            material: material_from_db(&r.string("material")?)?,
            insulation: temp_from_db(r.i32("insulation")?)?,
            length: r.opt_f64("length_ft")?.map(Feet),
            conduit: r.string("conduit")?,
        },
    })
}

pub(crate) fn feeder_from(r: &impl RowExt) -> StoreResult<Feeder> {
    Ok(Feeder {
        id: r.i64("id")?,
        project_id: r.i64("project_id")?,
        spec: FeederSpec {
            name: r.string("name")?,
            from: r.string("from_equipment")?,
            to: r.string("to_equipment")?,
            conductor_size: size_from_db(&r.string("conductor_size")?)?,
            material: material_from_db(&r.string("material")?)?,
            insulation: temp_from_db(r.i32("insulation")?)?,
            sets: u8_from_db("parallel sets", r.i32("sets")?)?,
            length: r.opt_f64("length_ft")?.map(Feet),
            ocpd: Amps(r.f64("ocpd")?),
        },
    })
}

pub(crate) fn transformer_from(r: &impl RowExt) -> StoreResult<Transformer> {
    Ok(Transformer {
        id: r.i64("id")?,
        project_id: r.i64("project_id")?,
        spec: TransformerSpec {
            name: r.string("name")?,
            kva: r.f64("kva")?,
            primary_voltage: Volts(r.f64("primary_voltage")?),
            secondary_voltage: Volts(r.f64("secondary_voltage")?),
            phase: phase_from_db(r.i32("phase")?)?,
            impedance_percent: r.f64("impedance_percent")?,
            fed_from: r.opt_string("fed_from")?,
        },
    })
}

pub(crate) fn load_item_from(r: &impl RowExt) -> StoreResult<LoadItem> {
    Ok(LoadItem {
        id: r.i64("id")?,
        project_id: r.i64("project_id")?,
        spec: LoadItemSpec {
            name: r.string("name")?,
            watts: Watts(r.f64("watts")?),
            hours_per_day: r.f64("hours_per_day")?,
            duty_cycle: r.f64("duty_cycle")?,
            quantity: u32_from_db("quantity", r.i64("quantity")?)?,
            notes: r.string("notes")?,
        },
    })
}

pub(crate) fn charging_source_from(r: &impl RowExt) -> StoreResult<ChargingSource> {
    Ok(ChargingSource {
        id: r.i64("id")?,
        project_id: r.i64("project_id")?,
        spec: ChargingSourceSpec {
            name: r.string("name")?,
            kind: r.string("kind")?,
            watts: Watts(r.f64("watts")?),
            hours_per_day: r.f64("hours_per_day")?,
            efficiency: r.f64("efficiency")?,
            notes: r.string("notes")?,
        },
    })
}

pub(crate) fn task_from(r: &impl RowExt) -> StoreResult<Task> {
    Ok(Task {
        id: r.i64("id")?,
        project_id: r.i64("project_id")?,
        spec: TaskSpec {
            title: r.string("title")?,
            notes: r.string("notes")?,
            assignee: r.opt_string("assignee")?,
        },
        created_by: r.string("created_by")?,
        created_at: r.ts("created_at")?,
        completed_at: r.opt_ts("completed_at")?,
        completed_by: r.opt_string("completed_by")?,
    })
}

pub(crate) fn session_from(r: &impl RowExt) -> StoreResult<Session> {
    let mode = r.string("mode")?;
    Ok(Session {
        id: r.i64("id")?,
        key: SessionKey {
            platform: r.string("platform")?,
            workspace: r.string("workspace")?,
            channel: r.string("channel")?,
            thread: r.string("thread")?,
        },
        mode: mode
            .parse::<Mode>()
            .map_err(|_| corrupt("session mode", &mode))?,
        project_id: r.opt_i64("project_id")?,
        summary: r.string("summary")?,
        summarized_through: r.i64("summarized_through")?,
        created_at: r.ts("created_at")?,
    })
}

pub(crate) fn queued_input_from(r: &impl RowExt) -> StoreResult<QueuedInput> {
    let state = r.string("state")?;
    Ok(QueuedInput {
        id: r.i64("id")?,
        session_id: r.i64("session_id")?,
        user: r.string("user_id")?,
        event_id: r.opt_string("event_id")?,
        action: r.json("action")?,
        running: match state.as_str() {
            "running" => true,
            "waiting" => false,
            other => return Err(corrupt("queued input state", other)),
        },
        waiter_until: r.ts("waiter_until")?,
        created_at: r.ts("created_at")?,
    })
}

pub(crate) fn message_from(r: &impl RowExt) -> StoreResult<StoredMessage> {
    Ok(StoredMessage {
        id: r.i64("id")?,
        session_id: r.i64("session_id")?,
        message: r.json("content")?,
        author: r.opt_string("author")?,
        tokens: r.i64("tokens")?,
        created_at: r.ts("created_at")?,
    })
}

pub(crate) fn pending_from(r: &impl RowExt) -> StoreResult<PendingAction> {
    let state = r.string("state")?;
    Ok(PendingAction {
        id: r.string("id")?,
        session_id: r.i64("session_id")?,
        state: PendingState::parse(&state).ok_or_else(|| corrupt("pending state", &state))?,
        rule: r.json("rule")?,
        calls: r.json("calls")?,
        prior_results: r.json("prior_results")?,
        items: r.json("items")?,
        created_at: r.ts("created_at")?,
        expires_at: r.ts("expires_at")?,
        resolved_by: r.opt_string("resolved_by")?,
        resolved_at: r.opt_ts("resolved_at")?,
        outcome: r.opt_json("outcome")?,
        message_ref: r.opt_string("message_ref")?,
        project_id: r.opt_i64("project_id")?,
        planned_version: r.opt_i64("planned_version")?,
        origin: {
            let o = r.string("origin")?;
            ActionOrigin::parse(&o).ok_or_else(|| corrupt("action origin", &o))?
        },
    })
}

pub(crate) fn audit_from(r: &impl RowExt) -> StoreResult<AuditRecord> {
    let kind = r.string("kind")?;
    Ok(AuditRecord {
        id: r.i64("id")?,
        entry: AuditEntry {
            session_id: r.opt_i64("session_id")?,
            actor: r.string("actor")?,
            kind: AuditKind::parse(&kind).ok_or_else(|| corrupt("audit kind", &kind))?,
            tool: r.opt_string("tool")?,
            action_id: r.opt_string("action_id")?,
            args: r.json("args")?,
            result: r.json("result")?,
            is_error: r.bool("is_error")?,
            duration_ms: r.i64("duration_ms")?,
            at: r.ts("at")?,
        },
    })
}

pub(crate) fn document_from(r: &impl RowExt) -> StoreResult<Document> {
    Ok(Document {
        id: r.i64("id")?,
        source: r.string("source")?,
        title: r.string("title")?,
        workspace: r.opt_string("workspace")?,
        content_hash: r.string("content_hash")?,
    })
}

/// A chunk selected with [`chunk_cols!`].
pub(crate) fn chunk_from(r: &impl RowExt) -> StoreResult<Chunk> {
    Ok(Chunk {
        id: r.i64("id")?,
        document_id: r.i64("document_id")?,
        source: r.string("source")?,
        section: r.opt_string("section")?,
        edition: r.opt_i32("edition")?,
        page: r.opt_i32("page")?,
        heading: r.string("heading")?,
        text: r.string("text")?,
        content_hash: r.string("content_hash")?,
    })
}

/// A chunk selected with [`chunk_cols!`] plus a `score` column.
pub(crate) fn scored_chunk_from(r: &impl RowExt) -> StoreResult<ScoredChunk> {
    Ok(ScoredChunk {
        chunk: chunk_from(r)?,
        score: r.f64("score")?,
    })
}

/// SQL condition applying a `ChunkFilter` whose edition is bound at `$e` and workspace at
/// `$w` (`c` = chunks, `d` = documents).
pub(crate) fn filter_sql(e: usize, w: usize) -> String {
    format!(
        "(c.edition IS NULL OR ${e} IS NULL OR c.edition = ${e}) \
         AND (d.workspace IS NULL OR d.workspace = ${w})"
    )
}

/// Emits `impl Store` for a backend type with a `pool` field; see the module docs for the
/// inherent items it relies on.
macro_rules! impl_store {
    ($store:ty) => {
        const _: () = {
            use async_trait::async_trait;
            use chrono::{DateTime, Utc};
            use sqlx::Row as _;

            use $crate::core::session::{Mode, Session, SessionKey};
            use $crate::nec::units::Edition;
            use $crate::project::{
                ChargingSource, ChargingSourceSpec, Circuit, CircuitSpec, Feeder, FeederSpec,
                LoadItem, LoadItemSpec, MemberRole, Panel, PanelSpec, Project, ProjectData,
                ServiceSpec, Task, TaskSpec, Transformer, TransformerSpec, Workspace,
            };
            use $crate::store::common::*;
            use $crate::store::{
                AuditEntry, AuditRecord, Backend, Chunk, ChunkFilter, Document, NewChunk,
                NewDocument, NewMessage, NewPendingAction, NewQueuedInput, PendingAction,
                PendingState, QueuedInput, ScoredChunk, Store, StoreError, StoreResult,
                StoredMessage,
            };

            impl $store {
                /// Name of a panel for messages (its id when it cannot be read).
                async fn panel_label(&self, panel_id: i64) -> String {
                    sqlx::query_scalar::<_, String>("SELECT name FROM panels WHERE id = $1")
                        .bind(panel_id)
                        .fetch_optional(&self.pool)
                        .await
                        .ok()
                        .flatten()
                        .unwrap_or_else(|| format!("#{panel_id}"))
                }
            }

            #[async_trait]
            impl Store for $store {
                fn backend(&self) -> Backend {
                    <$store>::BACKEND
                }

                async fn ping(&self) -> StoreResult<()> {
                    sqlx::query("SELECT 1")
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    Ok(())
                }

                // ----- projects -----

                async fn create_project(
                    &self,
                    workspace: &Workspace,
                    name: &str,
                    edition: Edition,
                ) -> StoreResult<Project> {
                    let name = name.trim();
                    let row = sqlx::query(
                        "INSERT INTO projects (platform, workspace, name, edition, confirm_policy, created_at) \
                         VALUES ($1, $2, $3, $4, NULL, $5) RETURNING *",
                    )
                    .bind(&workspace.platform)
                    .bind(&workspace.id)
                    .bind(name)
                    .bind(edition_to_db(edition))
                    .bind(now())
                    .fetch_one(&self.pool)
                    .await
                    .map_err(|e| {
                        violation(e, Some(format!("a project named '{name}' already exists")), None)
                    })?;
                    project_from(&row)
                }

                async fn project(&self, id: i64) -> StoreResult<Option<Project>> {
                    sqlx::query("SELECT * FROM projects WHERE id = $1")
                        .bind(id)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db)?
                        .map(|r| project_from(&r))
                        .transpose()
                }

                async fn project_by_name(
                    &self,
                    workspace: &Workspace,
                    name: &str,
                ) -> StoreResult<Option<Project>> {
                    sqlx::query(
                        "SELECT * FROM projects \
                         WHERE platform = $1 AND workspace = $2 AND lower(name) = lower($3)",
                    )
                    .bind(&workspace.platform)
                    .bind(&workspace.id)
                    .bind(name.trim())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)?
                    .map(|r| project_from(&r))
                    .transpose()
                }

                async fn list_projects(&self, workspace: &Workspace) -> StoreResult<Vec<Project>> {
                    sqlx::query(
                        "SELECT * FROM projects WHERE platform = $1 AND workspace = $2 \
                         ORDER BY lower(name), id",
                    )
                    .bind(&workspace.platform)
                    .bind(&workspace.id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db)?
                    .iter()
                    .map(project_from)
                    .collect()
                }

                async fn update_project(&self, project: &Project) -> StoreResult<()> {
                    let site = &project.site;
                    let loc = site.location.as_ref();
                    let done = sqlx::query(
                        "UPDATE projects SET edition = $2, confirm_policy = $3, site_state = $4, \
                         site_county = $5, site_city = $6, permit_date = $7, edition_override = $8 \
                         WHERE id = $1",
                    )
                    .bind(project.id)
                    .bind(edition_to_db(project.edition))
                    .bind(policy_to_db(project.confirm_policy)?)
                    .bind(loc.map(|l| l.state.clone()))
                    .bind(loc.and_then(|l| l.county.clone()))
                    .bind(loc.and_then(|l| l.city.clone()))
                    .bind(site.permit_date.map(|d| d.format("%Y-%m-%d").to_string()))
                    .bind(site.edition_override.map(|e| i32::from(e.year())))
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!(
                            "project {} does not exist",
                            project.id
                        )));
                    }
                    Ok(())
                }

                async fn bind_channel(
                    &self,
                    platform: &str,
                    workspace: &str,
                    channel: &str,
                    project_id: i64,
                ) -> StoreResult<()> {
                    // Only a project of the channel's own workspace can be bound to it.
                    let done = sqlx::query(
                        "INSERT INTO channel_bindings (platform, workspace, channel, project_id, bound_at) \
                         SELECT $1, $2, $3, id, $5 FROM projects \
                         WHERE id = $4 AND platform = $1 AND workspace = $2 \
                         ON CONFLICT (platform, workspace, channel) \
                         DO UPDATE SET project_id = excluded.project_id, bound_at = excluded.bound_at",
                    )
                    .bind(platform)
                    .bind(workspace)
                    .bind(channel)
                    .bind(project_id)
                    .bind(now())
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!(
                            "project {project_id} does not exist"
                        )));
                    }
                    Ok(())
                }

                async fn channel_project(
                    &self,
                    platform: &str,
                    workspace: &str,
                    channel: &str,
                ) -> StoreResult<Option<i64>> {
                    sqlx::query_scalar::<_, i64>(
                        "SELECT project_id FROM channel_bindings \
                         WHERE platform = $1 AND workspace = $2 AND channel = $3",
                    )
                    .bind(platform)
                    .bind(workspace)
                    .bind(channel)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)
                }

                async fn set_member_role(
                    &self,
                    project_id: i64,
                    platform: &str,
                    user: &str,
                    role: MemberRole,
                ) -> StoreResult<()> {
                    sqlx::query(
                        "INSERT INTO project_members (project_id, platform, user_id, role, updated_at) \
                         VALUES ($1, $2, $3, $4, $5) \
                         ON CONFLICT (project_id, platform, user_id) \
                         DO UPDATE SET role = excluded.role, updated_at = excluded.updated_at",
                    )
                    .bind(project_id)
                    .bind(platform)
                    .bind(user)
                    .bind(role.as_str())
                    .bind(now())
                    .execute(&self.pool)
                    .await
                    .map_err(|e| {
                        violation(e, None, Some(format!("project {project_id} does not exist")))
                    })?;
                    Ok(())
                }

                async fn remove_member(
                    &self,
                    project_id: i64,
                    platform: &str,
                    user: &str,
                ) -> StoreResult<bool> {
                    let done = sqlx::query(
                        "DELETE FROM project_members \
                         WHERE project_id = $1 AND platform = $2 AND user_id = $3",
                    )
                    .bind(project_id)
                    .bind(platform)
                    .bind(user)
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    Ok(done.rows_affected() > 0)
                }

                async fn members(&self, project_id: i64) -> StoreResult<Vec<(String, MemberRole)>> {
                    sqlx::query(
                        "SELECT user_id, role FROM project_members WHERE project_id = $1 \
                         ORDER BY user_id",
                    )
                    .bind(project_id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db)?
                    .iter()
                    .map(|r| Ok((r.string("user_id")?, role_from(r)?)))
                    .collect()
                }

                async fn member_role(
                    &self,
                    project_id: i64,
                    platform: &str,
                    user: &str,
                ) -> StoreResult<Option<MemberRole>> {
                    sqlx::query(
                        "SELECT role FROM project_members \
                         WHERE project_id = $1 AND platform = $2 AND user_id = $3",
                    )
                    .bind(project_id)
                    .bind(platform)
                    .bind(user)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)?
                    .map(|r| role_from(&r))
                    .transpose()
                }

                // ----- equipment -----

                async fn set_service(&self, project_id: i64, service: &ServiceSpec) -> StoreResult<()> {
                    sqlx::query(
                        "INSERT INTO services (project_id, voltage, phase, rating, available_fault_ka, notes) \
                         VALUES ($1, $2, $3, $4, $5, $6) \
                         ON CONFLICT (project_id) DO UPDATE SET voltage = excluded.voltage, \
                         phase = excluded.phase, rating = excluded.rating, \
                         available_fault_ka = excluded.available_fault_ka, notes = excluded.notes",
                    )
                    .bind(project_id)
                    .bind(service.voltage.0)
                    .bind(phase_to_db(service.phase))
                    .bind(service.rating.0)
                    .bind(service.available_fault_ka)
                    .bind(&service.notes)
                    .execute(&self.pool)
                    .await
                    .map_err(|e| {
                        violation(e, None, Some(format!("project {project_id} does not exist")))
                    })?;
                    Ok(())
                }

                async fn add_panel(&self, project_id: i64, panel: &PanelSpec) -> StoreResult<Panel> {
                    let row = sqlx::query(
                        "INSERT INTO panels (project_id, name, voltage, phase, bus_rating, main_breaker, \
                         interrupting_rating_ka, fed_from, spaces, location) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING *",
                    )
                    .bind(project_id)
                    .bind(panel.name.trim())
                    .bind(panel.voltage.0)
                    .bind(phase_to_db(panel.phase))
                    .bind(panel.bus_rating.0)
                    .bind(panel.main_breaker.map(|a| a.0))
                    .bind(panel.interrupting_rating_ka)
                    .bind(&panel.fed_from)
                    .bind(i64::from(panel.spaces))
                    .bind(&panel.location)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(|e| {
                        violation(
                            e,
                            Some(format!(
                                "panel '{}' already exists in this project",
                                panel.name.trim()
                            )),
                            Some(format!("project {project_id} does not exist")),
                        )
                    })?;
                    panel_from(&row)
                }

                async fn update_panel(&self, id: i64, panel: &PanelSpec) -> StoreResult<Panel> {
                    let row = sqlx::query(
                        "UPDATE panels SET name = $2, voltage = $3, phase = $4, bus_rating = $5, \
                         main_breaker = $6, interrupting_rating_ka = $7, fed_from = $8, spaces = $9, \
                         location = $10 WHERE id = $1 RETURNING *",
                    )
                    .bind(id)
                    .bind(panel.name.trim())
                    .bind(panel.voltage.0)
                    .bind(phase_to_db(panel.phase))
                    .bind(panel.bus_rating.0)
                    .bind(panel.main_breaker.map(|a| a.0))
                    .bind(panel.interrupting_rating_ka)
                    .bind(&panel.fed_from)
                    .bind(i64::from(panel.spaces))
                    .bind(&panel.location)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| {
                        violation(
                            e,
                            Some(format!(
                                "panel '{}' already exists in this project",
                                panel.name.trim()
                            )),
                            None,
                        )
                    })?
                    .ok_or_else(|| StoreError::NotFound(format!("panel {id} does not exist")))?;
                    panel_from(&row)
                }

                async fn remove_panel(&self, id: i64) -> StoreResult<()> {
                    let done = sqlx::query("DELETE FROM panels WHERE id = $1")
                        .bind(id)
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!("panel {id} does not exist")));
                    }
                    Ok(())
                }

                async fn add_circuit(&self, panel_id: i64, circuit: &CircuitSpec) -> StoreResult<Circuit> {
                    let res = sqlx::query(
                        "INSERT INTO circuits (panel_id, number, poles, description, load_va, continuous, \
                         breaker, conductor_size, material, insulation, length_ft, conduit) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING *",
                    )
                    .bind(panel_id)
                    .bind(circuit.number)
                    .bind(i32::from(circuit.poles))
                    .bind(&circuit.description)
                    .bind(circuit.load_va.0)
                    .bind(circuit.continuous)
                    .bind(circuit.breaker.0)
                    .bind(circuit.conductor_size.map(size_to_db))
                    .bind(material_to_db(circuit.material))
                    .bind(temp_to_db(circuit.insulation))
                    .bind(circuit.length.map(|l| l.0))
                    .bind(&circuit.conduit)
                    .fetch_one(&self.pool)
                    .await;
                    match res {
                        Ok(row) => circuit_from(&row),
                        Err(e) if is_unique(&e) => Err(StoreError::Conflict(format!(
                            "circuit {} already exists on panel {}",
                            circuit.number,
                            self.panel_label(panel_id).await
                        ))),
                        Err(e) => Err(violation(
                            e,
                            None,
                            Some(format!("panel {panel_id} does not exist")),
                        )),
                    }
                }

                async fn update_circuit(&self, id: i64, circuit: &CircuitSpec) -> StoreResult<Circuit> {
                    let res = sqlx::query(
                        "UPDATE circuits SET number = $2, poles = $3, description = $4, load_va = $5, \
                         continuous = $6, breaker = $7, conductor_size = $8, material = $9, \
                         insulation = $10, length_ft = $11, conduit = $12 WHERE id = $1 RETURNING *",
                    )
                    .bind(id)
                    .bind(circuit.number)
                    .bind(i32::from(circuit.poles))
                    .bind(&circuit.description)
                    .bind(circuit.load_va.0)
                    .bind(circuit.continuous)
                    .bind(circuit.breaker.0)
                    .bind(circuit.conductor_size.map(size_to_db))
                    .bind(material_to_db(circuit.material))
                    .bind(temp_to_db(circuit.insulation))
                    .bind(circuit.length.map(|l| l.0))
                    .bind(&circuit.conduit)
                    .fetch_optional(&self.pool)
                    .await;
                    match res {
                        Ok(Some(row)) => circuit_from(&row),
                        Ok(None) => Err(StoreError::NotFound(format!("circuit {id} does not exist"))),
                        Err(e) if is_unique(&e) => {
                            let panel_id = sqlx::query_scalar::<_, i64>(
                                "SELECT panel_id FROM circuits WHERE id = $1",
                            )
                            .bind(id)
                            .fetch_one(&self.pool)
                            .await
                            .map_err(db)?;
                            Err(StoreError::Conflict(format!(
                                "circuit {} already exists on panel {}",
                                circuit.number,
                                self.panel_label(panel_id).await
                            )))
                        }
                        Err(e) => Err(db(e)),
                    }
                }

                async fn remove_circuit(&self, id: i64) -> StoreResult<()> {
                    let done = sqlx::query("DELETE FROM circuits WHERE id = $1")
                        .bind(id)
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!("circuit {id} does not exist")));
                    }
                    Ok(())
                }

                async fn add_feeder(&self, project_id: i64, feeder: &FeederSpec) -> StoreResult<Feeder> {
                    let row = sqlx::query(
                        "INSERT INTO feeders (project_id, name, from_equipment, to_equipment, \
                         conductor_size, material, insulation, sets, length_ft, ocpd) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING *",
                    )
                    .bind(project_id)
                    .bind(feeder.name.trim())
                    .bind(&feeder.from)
                    .bind(&feeder.to)
                    .bind(size_to_db(feeder.conductor_size))
                    .bind(material_to_db(feeder.material))
                    .bind(temp_to_db(feeder.insulation))
                    .bind(i32::from(feeder.sets))
                    .bind(feeder.length.map(|l| l.0))
                    .bind(feeder.ocpd.0)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(|e| {
                        violation(
                            e,
                            Some(format!(
                                "feeder '{}' already exists in this project",
                                feeder.name.trim()
                            )),
                            Some(format!("project {project_id} does not exist")),
                        )
                    })?;
                    feeder_from(&row)
                }

                async fn add_transformer(
                    &self,
                    project_id: i64,
                    transformer: &TransformerSpec,
                ) -> StoreResult<Transformer> {
                    let row = sqlx::query(
                        "INSERT INTO transformers (project_id, name, kva, primary_voltage, \
                         secondary_voltage, phase, impedance_percent, fed_from) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *",
                    )
                    .bind(project_id)
                    .bind(transformer.name.trim())
                    .bind(transformer.kva)
                    .bind(transformer.primary_voltage.0)
                    .bind(transformer.secondary_voltage.0)
                    .bind(phase_to_db(transformer.phase))
                    .bind(transformer.impedance_percent)
                    .bind(&transformer.fed_from)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(|e| {
                        violation(
                            e,
                            Some(format!(
                                "transformer '{}' already exists in this project",
                                transformer.name.trim()
                            )),
                            Some(format!("project {project_id} does not exist")),
                        )
                    })?;
                    transformer_from(&row)
                }

                async fn add_load_item(&self, project_id: i64, item: &LoadItemSpec) -> StoreResult<LoadItem> {
                    let row = sqlx::query(
                        "INSERT INTO load_items (project_id, name, watts, hours_per_day, duty_cycle, \
                         quantity, notes) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *",
                    )
                    .bind(project_id)
                    .bind(&item.name)
                    .bind(item.watts.0)
                    .bind(item.hours_per_day)
                    .bind(item.duty_cycle)
                    .bind(i64::from(item.quantity))
                    .bind(&item.notes)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(|e| {
                        violation(e, None, Some(format!("project {project_id} does not exist")))
                    })?;
                    load_item_from(&row)
                }

                async fn add_charging_source(
                    &self,
                    project_id: i64,
                    source: &ChargingSourceSpec,
                ) -> StoreResult<ChargingSource> {
                    let row = sqlx::query(
                        "INSERT INTO charging_sources (project_id, name, kind, watts, hours_per_day, \
                         efficiency, notes) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *",
                    )
                    .bind(project_id)
                    .bind(&source.name)
                    .bind(&source.kind)
                    .bind(source.watts.0)
                    .bind(source.hours_per_day)
                    .bind(source.efficiency)
                    .bind(&source.notes)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(|e| {
                        violation(e, None, Some(format!("project {project_id} does not exist")))
                    })?;
                    charging_source_from(&row)
                }

                async fn create_task(
                    &self,
                    project_id: i64,
                    task: &TaskSpec,
                    created_by: &str,
                ) -> StoreResult<Task> {
                    let row = sqlx::query(
                        "INSERT INTO tasks (project_id, title, notes, assignee, created_by, created_at) \
                         VALUES ($1, $2, $3, $4, $5, $6) RETURNING *",
                    )
                    .bind(project_id)
                    .bind(&task.title)
                    .bind(&task.notes)
                    .bind(&task.assignee)
                    .bind(created_by)
                    .bind(now())
                    .fetch_one(&self.pool)
                    .await
                    .map_err(|e| {
                        violation(e, None, Some(format!("project {project_id} does not exist")))
                    })?;
                    task_from(&row)
                }

                async fn complete_task(&self, id: i64, by: &str) -> StoreResult<Option<Task>> {
                    sqlx::query(
                        "UPDATE tasks SET completed_at = $2, completed_by = $3 \
                         WHERE id = $1 AND completed_at IS NULL RETURNING *",
                    )
                    .bind(id)
                    .bind(now())
                    .bind(by)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)?
                    .map(|r| task_from(&r))
                    .transpose()
                }

                async fn load_project(&self, project_id: i64) -> StoreResult<ProjectData> {
                    // One snapshot, so the parts agree with each other.
                    let mut tx = self.begin_read().await.map_err(db)?;
                    let data = <$store>::load_project_in(&mut tx, project_id).await?;
                    tx.commit().await.map_err(db)?;
                    Ok(data)
                }

                async fn project_version(&self, project_id: i64) -> StoreResult<i64> {
                    sqlx::query_scalar::<_, i64>("SELECT version FROM projects WHERE id = $1")
                        .bind(project_id)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db)?
                        .ok_or_else(|| {
                            StoreError::NotFound(format!("project {project_id} does not exist"))
                        })
                }

                // ----- sessions and history -----

                async fn open_session(
                    &self,
                    key: &SessionKey,
                    mode: Mode,
                    project_id: Option<i64>,
                ) -> StoreResult<Session> {
                    let created = sqlx::query(
                        "INSERT INTO sessions (platform, workspace, channel, thread, mode, project_id, \
                         summary, summarized_through, created_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, '', 0, $7) \
                         ON CONFLICT (platform, workspace, channel, thread) DO NOTHING RETURNING *",
                    )
                    .bind(&key.platform)
                    .bind(&key.workspace)
                    .bind(&key.channel)
                    .bind(&key.thread)
                    .bind(mode.as_str())
                    .bind(project_id)
                    .bind(now())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| {
                        violation(
                            e,
                            None,
                            Some(format!(
                                "project {} does not exist",
                                project_id.unwrap_or_default()
                            )),
                        )
                    })?;
                    let row = match created {
                        Some(row) => row,
                        None => sqlx::query(
                            "SELECT * FROM sessions \
                             WHERE platform = $1 AND workspace = $2 AND channel = $3 AND thread = $4",
                        )
                        .bind(&key.platform)
                        .bind(&key.workspace)
                        .bind(&key.channel)
                        .bind(&key.thread)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db)?
                        .ok_or_else(|| {
                            StoreError::NotFound(format!("session {key} vanished while opening"))
                        })?,
                    };
                    session_from(&row)
                }

                async fn session(&self, id: i64) -> StoreResult<Option<Session>> {
                    sqlx::query("SELECT * FROM sessions WHERE id = $1")
                        .bind(id)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db)?
                        .map(|r| session_from(&r))
                        .transpose()
                }

                async fn set_session_mode(&self, id: i64, mode: Mode) -> StoreResult<()> {
                    let done = sqlx::query("UPDATE sessions SET mode = $2 WHERE id = $1")
                        .bind(id)
                        .bind(mode.as_str())
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!("session {id} does not exist")));
                    }
                    Ok(())
                }

                async fn set_session_project(&self, id: i64, project_id: Option<i64>) -> StoreResult<()> {
                    let done = sqlx::query("UPDATE sessions SET project_id = $2 WHERE id = $1")
                        .bind(id)
                        .bind(project_id)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| {
                            violation(
                                e,
                                None,
                                Some(format!(
                                    "project {} does not exist",
                                    project_id.unwrap_or_default()
                                )),
                            )
                        })?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!("session {id} does not exist")));
                    }
                    Ok(())
                }

                async fn set_session_summary(
                    &self,
                    id: i64,
                    summary: &str,
                    through_message_id: i64,
                ) -> StoreResult<()> {
                    let done = sqlx::query(
                        "UPDATE sessions SET summary = $2, summarized_through = $3 WHERE id = $1",
                    )
                    .bind(id)
                    .bind(summary)
                    .bind(through_message_id)
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!("session {id} does not exist")));
                    }
                    Ok(())
                }

                async fn append_message(
                    &self,
                    session_id: i64,
                    message: &NewMessage,
                ) -> StoreResult<StoredMessage> {
                    let tokens = i64::try_from(message.message.estimated_tokens()).unwrap_or(i64::MAX);
                    let row = sqlx::query(
                        "INSERT INTO messages (session_id, role, content, author, event_id, tokens, created_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *",
                    )
                    .bind(session_id)
                    .bind(message_role(&message.message))
                    .bind(db_json(&message.message)?)
                    .bind(clean_opt(&message.author))
                    .bind(clean_opt(&message.event_id))
                    .bind(tokens)
                    .bind(now())
                    .fetch_one(&self.pool)
                    .await
                    .map_err(|e| {
                        violation(e, None, Some(format!("session {session_id} does not exist")))
                    })?;
                    message_from(&row)
                }

                async fn recent_messages(
                    &self,
                    session_id: i64,
                    after_id: i64,
                    limit_n: usize,
                ) -> StoreResult<Vec<StoredMessage>> {
                    sqlx::query(
                        "SELECT * FROM (SELECT * FROM messages WHERE session_id = $1 AND id > $2 \
                         ORDER BY id DESC LIMIT $3) AS w ORDER BY id",
                    )
                    .bind(session_id)
                    .bind(after_id)
                    .bind(limit(limit_n))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db)?
                    .iter()
                    .map(message_from)
                    .collect()
                }

                async fn take_lease(
                    &self,
                    session_id: i64,
                    owner: &str,
                    until: DateTime<Utc>,
                    at: DateTime<Utc>,
                ) -> StoreResult<bool> {
                    let done = sqlx::query(
                        "UPDATE sessions SET lease_owner = $2, lease_until = $3 WHERE id = $1 \
                         AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until < $4)",
                    )
                    .bind(session_id)
                    .bind(owner)
                    .bind(micros(until))
                    .bind(micros(at))
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    Ok(done.rows_affected() == 1)
                }

                async fn renew_lease(
                    &self,
                    session_id: i64,
                    owner: &str,
                    until: DateTime<Utc>,
                ) -> StoreResult<bool> {
                    let done = sqlx::query(
                        "UPDATE sessions SET lease_until = $3 WHERE id = $1 AND lease_owner = $2",
                    )
                    .bind(session_id)
                    .bind(owner)
                    .bind(micros(until))
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    Ok(done.rows_affected() == 1)
                }

                async fn release_lease(&self, session_id: i64, owner: &str) -> StoreResult<bool> {
                    let done = sqlx::query(
                        "UPDATE sessions SET lease_owner = NULL, lease_until = NULL \
                         WHERE id = $1 AND lease_owner = $2",
                    )
                    .bind(session_id)
                    .bind(owner)
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    Ok(done.rows_affected() == 1)
                }

                async fn enqueue_input(&self, input: &NewQueuedInput) -> StoreResult<Option<QueuedInput>> {
                    let at = now();
                    let mut tx = self.begin_write().await.map_err(db)?;
                    if let Some(event_id) = input.event_id.as_deref() {
                        let claimed = sqlx::query(
                            "INSERT INTO processed_events (platform, event_id, seen_at) VALUES ($1, $2, $3) \
                             ON CONFLICT (platform, event_id) DO NOTHING",
                        )
                        .bind(&input.platform)
                        .bind(event_id)
                        .bind(at)
                        .execute(&mut *tx)
                        .await
                        .map_err(db)?;
                        if claimed.rows_affected() == 0 {
                            return Ok(None);
                        }
                    }
                    let row = sqlx::query(
                        "INSERT INTO session_inputs (session_id, user_id, event_id, action, state, \
                         waiter_until, created_at) VALUES ($1, $2, $3, $4, 'waiting', $5, $6) RETURNING *",
                    )
                    .bind(input.session_id)
                    .bind(clean_text(&input.user))
                    .bind(clean_opt(&input.event_id))
                    .bind(db_json(&input.action)?)
                    .bind(micros(input.waiter_until))
                    .bind(at)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(|e| {
                        violation(e, None, Some(format!("session {} does not exist", input.session_id)))
                    })?;
                    tx.commit().await.map_err(db)?;
                    queued_input_from(&row).map(Some)
                }

                async fn next_input(&self, session_id: i64) -> StoreResult<Option<QueuedInput>> {
                    sqlx::query(
                        "SELECT * FROM session_inputs WHERE session_id = $1 ORDER BY id LIMIT 1",
                    )
                    .bind(session_id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)?
                    .map(|r| queued_input_from(&r))
                    .transpose()
                }

                async fn queued_input(&self, id: i64) -> StoreResult<Option<QueuedInput>> {
                    sqlx::query("SELECT * FROM session_inputs WHERE id = $1")
                        .bind(id)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db)?
                        .map(|r| queued_input_from(&r))
                        .transpose()
                }

                async fn start_input(&self, id: i64) -> StoreResult<bool> {
                    let done = sqlx::query(
                        "UPDATE session_inputs SET state = 'running' WHERE id = $1",
                    )
                    .bind(id)
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    Ok(done.rows_affected() == 1)
                }

                async fn finish_input(&self, id: i64) -> StoreResult<()> {
                    sqlx::query("DELETE FROM session_inputs WHERE id = $1")
                        .bind(id)
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    Ok(())
                }

                async fn renew_waiter(&self, id: i64, until: DateTime<Utc>) -> StoreResult<bool> {
                    let done = sqlx::query("UPDATE session_inputs SET waiter_until = $2 WHERE id = $1")
                        .bind(id)
                        .bind(micros(until))
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    Ok(done.rows_affected() == 1)
                }

                async fn orphaned_sessions(&self, at: DateTime<Utc>, limit_n: usize) -> StoreResult<Vec<i64>> {
                    // The oldest input of each thread decides: it is orphaned when it was
                    // started and the lease lapsed, or its waiter stopped renewing.
                    sqlx::query_scalar(
                        "SELECT s.id FROM sessions s JOIN session_inputs i ON i.id = \
                         (SELECT MIN(id) FROM session_inputs WHERE session_id = s.id) \
                         WHERE (s.lease_owner IS NULL OR s.lease_until < $1) \
                         AND (i.state = 'running' OR i.waiter_until < $1) \
                         ORDER BY i.id LIMIT $2",
                    )
                    .bind(micros(at))
                    .bind(limit(limit_n))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db)
                }

                // ----- pending actions -----

                async fn create_pending(&self, action: &NewPendingAction) -> StoreResult<PendingAction> {
                    let res = sqlx::query(
                        "INSERT INTO pending_actions (id, session_id, state, rule, calls, prior_results, \
                         items, created_at, expires_at, project_id, planned_version, origin) \
                         VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *",
                    )
                    .bind(&action.id)
                    .bind(action.session_id)
                    .bind(db_json(&action.rule)?)
                    .bind(db_json(&action.calls)?)
                    .bind(db_json(&action.prior_results)?)
                    .bind(db_json(&action.items)?)
                    .bind(micros(action.created_at))
                    .bind(micros(action.expires_at))
                    .bind(action.project_id)
                    .bind(action.planned_version)
                    .bind(action.origin.as_str())
                    .fetch_one(&self.pool)
                    .await;
                    match res {
                        Ok(row) => pending_from(&row),
                        Err(e) if is_unique(&e) => {
                            let taken = sqlx::query_scalar::<_, i64>(
                                "SELECT COUNT(*) FROM pending_actions WHERE id = $1",
                            )
                            .bind(&action.id)
                            .fetch_one(&self.pool)
                            .await
                            .map_err(db)?;
                            Err(StoreError::Conflict(if taken > 0 {
                                format!("pending action {} already exists", action.id)
                            } else {
                                "this conversation already has an action waiting for confirmation"
                                    .to_string()
                            }))
                        }
                        Err(e) => Err(violation(
                            e,
                            None,
                            Some(format!("session {} does not exist", action.session_id)),
                        )),
                    }
                }

                async fn pending(&self, id: &str) -> StoreResult<Option<PendingAction>> {
                    sqlx::query("SELECT * FROM pending_actions WHERE id = $1")
                        .bind(id)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db)?
                        .map(|r| pending_from(&r))
                        .transpose()
                }

                async fn open_pending_for_session(
                    &self,
                    session_id: i64,
                ) -> StoreResult<Option<PendingAction>> {
                    sqlx::query(
                        "SELECT * FROM pending_actions WHERE session_id = $1 AND state = 'pending'",
                    )
                    .bind(session_id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)?
                    .map(|r| pending_from(&r))
                    .transpose()
                }

                async fn transition_pending(
                    &self,
                    id: &str,
                    from: PendingState,
                    to: PendingState,
                    by: Option<&str>,
                    at: DateTime<Utc>,
                ) -> StoreResult<Option<PendingAction>> {
                    // One conditional statement: of any number of racing callers exactly one
                    // matches `state = from`. The first resolution's who/when is kept.
                    sqlx::query(
                        "UPDATE pending_actions SET state = $3, \
                         resolved_by = COALESCE(resolved_by, $4), \
                         resolved_at = COALESCE(resolved_at, $5) \
                         WHERE id = $1 AND state = $2 RETURNING *",
                    )
                    .bind(id)
                    .bind(from.as_str())
                    .bind(to.as_str())
                    .bind(by)
                    .bind(micros(at))
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| {
                        violation(
                            e,
                            Some("this conversation already has an action waiting for confirmation".into()),
                            None,
                        )
                    })?
                    .map(|r| pending_from(&r))
                    .transpose()
                }

                async fn set_pending_outcome(&self, id: &str, outcome: &serde_json::Value) -> StoreResult<()> {
                    let done = sqlx::query("UPDATE pending_actions SET outcome = $2 WHERE id = $1")
                        .bind(id)
                        .bind(db_json(outcome)?)
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!("pending action {id} does not exist")));
                    }
                    Ok(())
                }

                async fn apply_pending(
                    &self,
                    req: &$crate::store::ApplyRequest<'_>,
                ) -> StoreResult<$crate::store::ApplyOutcome> {
                    self.apply_plan(req).await
                }

                async fn set_pending_message_ref(&self, id: &str, message_ref: &str) -> StoreResult<()> {
                    let done = sqlx::query("UPDATE pending_actions SET message_ref = $2 WHERE id = $1")
                        .bind(id)
                        .bind(message_ref)
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!("pending action {id} does not exist")));
                    }
                    Ok(())
                }

                // ----- audit and events -----

                async fn append_turn_step(
                    &self,
                    session_id: i64,
                    messages: &[NewMessage],
                    audits: &[AuditEntry],
                ) -> StoreResult<()> {
                    self.backend_append_turn_step(session_id, messages, audits).await
                }

                async fn record_audit(&self, entry: &AuditEntry) -> StoreResult<()> {
                    sqlx::query(
                        "INSERT INTO tool_audit (session_id, actor, kind, tool, action_id, args, result, \
                         is_error, duration_ms, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                    )
                    .bind(entry.session_id)
                    .bind(&entry.actor)
                    .bind(entry.kind.as_str())
                    .bind(&entry.tool)
                    .bind(&entry.action_id)
                    .bind(db_json(&entry.args)?)
                    .bind(db_json(&entry.result)?)
                    .bind(entry.is_error)
                    .bind(entry.duration_ms)
                    .bind(micros(entry.at))
                    .execute(&self.pool)
                    .await
                    .map_err(|e| {
                        violation(
                            e,
                            None,
                            Some(format!(
                                "session {} does not exist",
                                entry.session_id.unwrap_or_default()
                            )),
                        )
                    })?;
                    Ok(())
                }

                async fn audit_for_session(&self, session_id: i64) -> StoreResult<Vec<AuditRecord>> {
                    sqlx::query("SELECT * FROM tool_audit WHERE session_id = $1 ORDER BY id")
                        .bind(session_id)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db)?
                        .iter()
                        .map(audit_from)
                        .collect()
                }

                async fn claim_event(&self, platform: &str, event_id: &str) -> StoreResult<bool> {
                    let done = sqlx::query(
                        "INSERT INTO processed_events (platform, event_id, seen_at) VALUES ($1, $2, $3) \
                         ON CONFLICT (platform, event_id) DO NOTHING",
                    )
                    .bind(platform)
                    .bind(event_id)
                    .bind(now())
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    Ok(done.rows_affected() == 1)
                }

                async fn claim_request(
                    &self,
                    scope: &str,
                    digest: &str,
                    window: std::time::Duration,
                ) -> StoreResult<bool> {
                    let at = now();
                    let window = chrono::Duration::from_std(window)
                        .unwrap_or_else(|_| chrono::Duration::days(1));
                    // Once a request is too old to pass the timestamp check its digest is no
                    // longer needed; forgetting it keeps the ledger small.
                    sqlx::query("DELETE FROM processed_events WHERE platform = $1 AND seen_at < $2")
                        .bind(scope)
                        .bind(at - window)
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    self.claim_event(scope, digest).await
                }

                // ----- documents and chunks -----

                async fn set_document_jurisdiction(
                    &self,
                    document_id: i64,
                    jurisdiction: Option<&str>,
                ) -> StoreResult<()> {
                    let done = sqlx::query("UPDATE documents SET jurisdiction = $2 WHERE id = $1")
                        .bind(document_id)
                        .bind(jurisdiction)
                        .execute(&self.pool)
                        .await
                        .map_err(db)?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::NotFound(format!(
                            "document {document_id} does not exist"
                        )));
                    }
                    Ok(())
                }

                async fn amendment_documents(
                    &self,
                    workspace: Option<&str>,
                ) -> StoreResult<Vec<(String, String)>> {
                    let rows = sqlx::query(
                        "SELECT source, jurisdiction FROM documents \
                         WHERE jurisdiction IS NOT NULL AND (workspace IS NULL OR workspace = $1) \
                         ORDER BY source",
                    )
                    .bind(workspace)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db)?;
                    rows.iter()
                        .map(|r| Ok((r.string("source")?, r.string("jurisdiction")?)))
                        .collect()
                }

                async fn upsert_document(&self, doc: &NewDocument) -> StoreResult<(Document, bool)> {
                    // A racing insert of the same document loses on the unique index; the retry
                    // then finds and updates the winner's row.
                    let mut attempt = 0;
                    loop {
                        attempt += 1;
                        let mut tx = self.begin_write().await.map_err(db)?;
                        let existing = sqlx::query(&format!(
                            "SELECT id, content_hash FROM documents \
                             WHERE source = $1 AND workspace IS NOT DISTINCT FROM $2{}",
                            <$store>::FOR_UPDATE
                        ))
                        .bind(&doc.source)
                        .bind(&doc.workspace)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(db)?;
                        let res = match existing {
                            Some(row) => {
                                let id = row.try_get::<i64, _>("id").map_err(db)?;
                                let old_hash = row.try_get::<String, _>("content_hash").map_err(db)?;
                                sqlx::query(
                                    "UPDATE documents SET title = $2, content_hash = $3, updated_at = $4 \
                                     WHERE id = $1 RETURNING *",
                                )
                                .bind(id)
                                .bind(clean_text(&doc.title))
                                .bind(&doc.content_hash)
                                .bind(now())
                                .fetch_one(&mut *tx)
                                .await
                                .map(|r| (r, old_hash != doc.content_hash))
                            }
                            None => sqlx::query(
                                "INSERT INTO documents (source, title, workspace, content_hash, \
                                 created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5) RETURNING *",
                            )
                            .bind(&doc.source)
                            .bind(clean_text(&doc.title))
                            .bind(&doc.workspace)
                            .bind(&doc.content_hash)
                            .bind(now())
                            .fetch_one(&mut *tx)
                            .await
                            .map(|r| (r, true)),
                        };
                        match res {
                            Ok((row, changed)) => {
                                let document = document_from(&row)?;
                                tx.commit().await.map_err(db)?;
                                return Ok((document, changed));
                            }
                            Err(e) if is_unique(&e) && attempt < 3 => continue,
                            Err(e) => {
                                return Err(violation(
                                    e,
                                    Some(format!("document '{}' already exists", doc.source)),
                                    None,
                                ))
                            }
                        }
                    }
                }

                async fn replace_chunks(&self, document_id: i64, chunks: &[NewChunk]) -> StoreResult<Vec<i64>> {
                    let mut tx = self.begin_write().await.map_err(db)?;
                    let exists = sqlx::query(&format!(
                        "SELECT id FROM documents WHERE id = $1{}",
                        <$store>::FOR_UPDATE
                    ))
                    .bind(document_id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db)?;
                    if exists.is_none() {
                        return Err(StoreError::NotFound(format!(
                            "document {document_id} does not exist"
                        )));
                    }
                    // Chunks whose text is unchanged keep their row (and so their embeddings):
                    // re-ingesting a document only embeds what changed.
                    let mut reusable: std::collections::HashMap<String, Vec<i64>> =
                        std::collections::HashMap::new();
                    for row in sqlx::query(
                        "SELECT id, content_hash FROM chunks WHERE document_id = $1 ORDER BY ord DESC, id DESC",
                    )
                    .bind(document_id)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db)?
                    {
                        let id = row.try_get::<i64, _>("id").map_err(db)?;
                        let hash = row.try_get::<String, _>("content_hash").map_err(db)?;
                        reusable.entry(hash).or_default().push(id);
                    }
                    let mut plan: Vec<Option<i64>> = Vec::with_capacity(chunks.len());
                    for chunk in chunks {
                        plan.push(reusable.get_mut(&chunk.content_hash).and_then(Vec::pop));
                    }
                    for id in reusable.into_values().flatten() {
                        sqlx::query("DELETE FROM chunks WHERE id = $1")
                            .bind(id)
                            .execute(&mut *tx)
                            .await
                            .map_err(db)?;
                    }
                    let mut ids = Vec::with_capacity(chunks.len());
                    for (ord, (chunk, reuse)) in chunks.iter().zip(plan).enumerate() {
                        let ord = i32::try_from(ord).unwrap_or(i32::MAX);
                        let id = match reuse {
                            Some(id) => {
                                sqlx::query(
                                    "UPDATE chunks SET ord = $2, section = $3, edition = $4, page = $5, \
                                     heading = $6, text = $7 WHERE id = $1",
                                )
                                .bind(id)
                                .bind(ord)
                                .bind(clean_opt(&chunk.section))
                                .bind(chunk.edition)
                                .bind(chunk.page)
                                .bind(clean_text(&chunk.heading))
                                .bind(clean_text(&chunk.text))
                                .execute(&mut *tx)
                                .await
                                .map_err(db)?;
                                id
                            }
                            None => sqlx::query_scalar::<_, i64>(
                                "INSERT INTO chunks (document_id, ord, section, edition, page, heading, \
                                 text, content_hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
                            )
                            .bind(document_id)
                            .bind(ord)
                            .bind(clean_opt(&chunk.section))
                            .bind(chunk.edition)
                            .bind(chunk.page)
                            .bind(clean_text(&chunk.heading))
                            .bind(clean_text(&chunk.text))
                            .bind(&chunk.content_hash)
                            .fetch_one(&mut *tx)
                            .await
                            .map_err(db)?,
                        };
                        ids.push(id);
                    }
                    tx.commit().await.map_err(db)?;
                    Ok(ids)
                }

                async fn set_embedding(&self, chunk_id: i64, model: &str, embedding: &[f32]) -> StoreResult<()> {
                    check_embedding(embedding)?;
                    self.backend_set_embedding(chunk_id, model, embedding).await
                }

                async fn chunks_missing_embedding(&self, model: &str, limit_n: usize) -> StoreResult<Vec<Chunk>> {
                    sqlx::query(concat!(
                        "SELECT ",
                        chunk_cols!(),
                        " FROM chunks c JOIN documents d ON d.id = c.document_id \
                         WHERE NOT EXISTS (SELECT 1 FROM chunk_embeddings e \
                         WHERE e.chunk_id = c.id AND e.model = $1) ORDER BY c.id LIMIT $2"
                    ))
                    .bind(model)
                    .bind(limit(limit_n))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db)?
                    .iter()
                    .map(chunk_from)
                    .collect()
                }

                async fn search_text(
                    &self,
                    query: &str,
                    filter: &ChunkFilter,
                    k: usize,
                ) -> StoreResult<Vec<ScoredChunk>> {
                    if k == 0 || query.trim().is_empty() {
                        return Ok(Vec::new());
                    }
                    self.backend_search_text(query, filter, k).await
                }

                async fn search_vector(
                    &self,
                    embedding: &[f32],
                    model: &str,
                    filter: &ChunkFilter,
                    k: usize,
                ) -> StoreResult<Vec<ScoredChunk>> {
                    // A zero or non-finite query has no direction: nothing is similar to it.
                    if k == 0 || $crate::store::search::CosineQuery::new(embedding).is_none() {
                        return Ok(Vec::new());
                    }
                    self.backend_search_vector(embedding, model, filter, k).await
                }

                async fn rank_text(
                    &self,
                    query: &str,
                    candidates: &[i64],
                    budget: usize,
                    filter: &ChunkFilter,
                    k: usize,
                ) -> StoreResult<Vec<ScoredChunk>> {
                    if query.trim().is_empty() || (k == 0 && candidates.is_empty()) {
                        return Ok(Vec::new());
                    }
                    self.backend_rank_text(query, candidates, budget, filter, k).await
                }

                async fn similarities(
                    &self,
                    ids: &[i64],
                    embedding: &[f32],
                    model: &str,
                ) -> StoreResult<Vec<(i64, f64)>> {
                    if ids.is_empty() || $crate::store::search::CosineQuery::new(embedding).is_none() {
                        return Ok(Vec::new());
                    }
                    self.backend_similarities(ids, embedding, model).await
                }

                async fn chunks_by_section(
                    &self,
                    section: &str,
                    filter: &ChunkFilter,
                ) -> StoreResult<Vec<Chunk>> {
                    sqlx::query(&format!(
                        concat!(
                            "SELECT ",
                            chunk_cols!(),
                            " FROM chunks c JOIN documents d ON d.id = c.document_id \
                             WHERE c.section = $1 AND {} ORDER BY c.edition DESC, c.document_id, c.ord"
                        ),
                        filter_sql(2, 3)
                    ))
                    .bind(clean_text(section.trim()))
                    .bind(filter.edition)
                    .bind(&filter.workspace)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db)?
                    .iter()
                    .map(chunk_from)
                    .collect()
                }
            }
        };
    };
}
pub(crate) use impl_store;
