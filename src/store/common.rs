//! Code every aggregate shares: row decoding, typed-value conversion, error mapping, and
//! `impl_store!`, which implements each aggregate's trait (from its own file) and `Store`
//! for a backend.
//!
//! Backend files supply a small set of inherent items the aggregates call: `BACKEND`,
//! `FOR_UPDATE`, `begin_write`, `begin_read`, `embedding_param`,
//! `backend_search_text`, `backend_search_vector`, `backend_rank_text` and
//! `backend_similarities`.

use chrono::{DateTime, SubsecRound, Utc};
use serde::de::DeserializeOwned;
use serde::Serialize;
use sqlx::types::Json;

pub(crate) use super::json_text::JsonText;
use super::{PendingState, StoreError, StoreResult};
use crate::domain::message::MessageRecord;
use crate::domain::policy::ConfirmPolicy;
use crate::domain::session::{Mode, Session, SessionKey};
use crate::nec::units::{
    Amps, ConductorSize, Edition, Feet, Material, Phase, TempRating, VoltAmperes, Volts, Watts,
};
use crate::project::RacewayMaterial;
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

/// A value as JSON for a `jsonb` column, with NUL characters in strings and keys replaced
/// (as [`JsonText`] writes it).
pub(crate) fn db_json<T: serde::Serialize + ?Sized>(
    v: &T,
) -> StoreResult<Json<Box<serde_json::value::RawValue>>> {
    JsonText::of(v)?.into_jsonb()
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

/// A circuit's motor or appliance nameplate as stored (a JSON object in a text column).
/// These are plain structs of numbers and enums, which always serialise.
pub(crate) fn nameplate_json<T: Serialize>(v: &Option<T>) -> Option<String> {
    v.as_ref().and_then(|x| serde_json::to_string(x).ok())
}

fn nameplate_from_db<T: DeserializeOwned>(what: &str, v: Option<String>) -> StoreResult<Option<T>> {
    v.map(|t| serde_json::from_str(&t).map_err(|_| corrupt(what, &t)))
        .transpose()
}

fn raceway_from_db(v: Option<String>) -> StoreResult<Option<RacewayMaterial>> {
    v.map(|t| t.parse().map_err(|_| corrupt("raceway", &t)))
        .transpose()
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
/// Appends a history message, its columns bound as `$1` to `$7` (see `stmt_with_message`).
pub(crate) const INSERT_MESSAGE: &str = "INSERT INTO messages (session_id, role, content, \
     author, event_id, tokens, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *";

pub(crate) fn message_role(m: &MessageRecord) -> &'static str {
    m.role()
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
            motor: nameplate_from_db("circuit motor", r.opt_string("motor")?)?,
            appliance: nameplate_from_db("circuit appliance", r.opt_string("appliance")?)?,
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
            raceway: raceway_from_db(r.opt_string("raceway")?)?,
            egc_size: r
                .opt_string("egc_size")?
                .map(|s| size_from_db(&s))
                .transpose()?,
            c_value: r.opt_f64("c_value")?,
            impedance_ohms_per_1000ft: r.opt_f64("impedance_ohms_per_1000ft")?,
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

/// Removes an input from its session's inbox (`$1`: its id).
pub(crate) const FINISH_INPUT: &str = "DELETE FROM session_inputs WHERE id = $1";

/// Gives a session's lease up (`$1`: the session, `$2`: the owner it must still be).
pub(crate) const RELEASE_LEASE: &str =
    "UPDATE sessions SET lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2";

pub(crate) fn session_from(r: &impl RowExt) -> StoreResult<Session> {
    session_named(r, "id", "created_at")
}

/// [`session_from`] from a row where the session's `id` and `created_at` have other names
/// (a row that also holds an input's).
pub(crate) fn session_named(r: &impl RowExt, id: &str, created_at: &str) -> StoreResult<Session> {
    let mode = r.string("mode")?;
    Ok(Session {
        id: r.i64(id)?,
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
        created_at: r.ts(created_at)?,
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
        workspace: r
            .opt_string("workspace")?
            .map(|w| {
                w.parse()
                    .map_err(|e: String| corrupt("document workspace", e))
            })
            .transpose()?,
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

/// Emits `impl Store` (every aggregate's trait) for a backend type with a `pool` field; see
/// the module docs for the inherent items it relies on.
macro_rules! impl_store {
    ($store:ty, $db:ty) => {
        $crate::store::projects::impl_projects!($store, $db);
        $crate::store::equipment::impl_equipment!($store, $db);
        $crate::store::sessions::impl_sessions!($store, $db);
        $crate::store::inbox::impl_inbox!($store, $db);
        $crate::store::pending::impl_pending!($store, $db);
        $crate::store::outbox::impl_outbox!($store, $db);
        $crate::store::audit::impl_audit!($store, $db);
        $crate::store::assistant_threads::impl_assistant_threads!($store, $db);
        $crate::store::ledger::impl_ledger!($store, $db);
        $crate::store::documents::impl_documents!($store, $db);
        $crate::store::chunk_search::impl_chunk_search!($store, $db);

        #[async_trait::async_trait]
        impl $crate::store::Store for $store {
            fn backend(&self) -> $crate::store::Backend {
                <$store>::BACKEND
            }

            async fn ping(&self) -> $crate::store::StoreResult<()> {
                sqlx::query("SELECT 1")
                    .execute(&self.pool)
                    .await
                    .map_err($crate::store::common::db)?;
                Ok(())
            }

            async fn append_turn_step(
                &self,
                session_id: i64,
                messages: &[$crate::store::NewMessage],
                audits: &[$crate::store::AuditEntry],
            ) -> $crate::store::StoreResult<()> {
                if messages.is_empty() && audits.is_empty() {
                    return Ok(());
                }
                self.backend_write_turn(session_id, messages, audits, None)
                    .await
                    .map(|_| ())
            }

            async fn end_turn(
                &self,
                session_id: i64,
                messages: &[$crate::store::NewMessage],
                audits: &[$crate::store::AuditEntry],
                input: $crate::store::InputFinish<'_>,
            ) -> $crate::store::StoreResult<bool> {
                self.backend_write_turn(session_id, messages, audits, Some(input))
                    .await
            }
        }
    };
}
pub(crate) use impl_store;

/// A statement with its values bound, ready to run on a pool or in a transaction.
pub(crate) type Stmt<'q, DB> = sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments<'q>>;
