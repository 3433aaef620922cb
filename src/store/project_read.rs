//! The whole-project snapshot a turn reads: one round trip on Postgres.
//!
//! A project is ten tables' worth of rows. On Postgres they are read with one simple-protocol
//! message carrying `SET TRANSACTION ... REPEATABLE READ READ ONLY` and the nine selects: the
//! server runs a multi-statement message as one implicit transaction (one snapshot, so the
//! parts agree), ended by the server itself even if the caller goes away, and answers it in
//! one go. The rows come back in text format, which the same row decoders read. On SQLite,
//! where there is no network, the selects run in a read transaction as before.

use futures::TryStreamExt;
use sqlx::postgres::PgRow;
use sqlx::Either;

use super::common::{
    charging_source_from, circuit_from, db, feeder_from, load_item_from, panel_from, project_from,
    service_from, task_from, transformer_from,
};
use super::{PostgresStore, SqliteStore, StoreError, StoreResult};
use crate::project::ProjectData;

/// Every part of a project, in the order [`PostgresStore::backend_load_project`] reads them.
/// `{id}` is the project's id (an integer: nothing from outside is spliced into the text).
const PARTS: [&str; 9] = [
    "SELECT * FROM projects WHERE id = {id}",
    "SELECT * FROM services WHERE project_id = {id}",
    "SELECT * FROM panels WHERE project_id = {id} ORDER BY id",
    "SELECT c.* FROM circuits c JOIN panels p ON p.id = c.panel_id \
     WHERE p.project_id = {id} ORDER BY c.panel_id, c.number",
    "SELECT * FROM feeders WHERE project_id = {id} ORDER BY id",
    "SELECT * FROM transformers WHERE project_id = {id} ORDER BY id",
    "SELECT * FROM load_items WHERE project_id = {id} ORDER BY id",
    "SELECT * FROM charging_sources WHERE project_id = {id} ORDER BY id",
    "SELECT * FROM tasks WHERE project_id = {id} ORDER BY id",
];

fn decode_all<T>(rows: &[PgRow], from: impl Fn(&PgRow) -> StoreResult<T>) -> StoreResult<Vec<T>> {
    rows.iter().map(from).collect()
}

fn not_found(project_id: i64) -> StoreError {
    StoreError::NotFound(format!("project {project_id} does not exist"))
}

impl PostgresStore {
    /// See [`ProjectStore::load_project_seen`](super::ProjectStore::load_project_seen).
    pub(crate) async fn backend_load_project(
        &self,
        project_id: i64,
        _seen: Option<i64>,
    ) -> StoreResult<ProjectData> {
        self.read_project_whole(project_id).await
    }

    /// The project, in one snapshot.
    async fn read_project_whole(&self, project_id: i64) -> StoreResult<ProjectData> {
        let mut sql = String::from("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY");
        let id = project_id.to_string();
        for part in PARTS {
            sql.push_str("; ");
            sql.push_str(&part.replace("{id}", &id));
        }
        // parts[0] is the SET; parts[k] the rows of PARTS[k - 1].
        let mut parts: Vec<Vec<PgRow>> = (0..=PARTS.len()).map(|_| Vec::new()).collect();
        let mut at = 0usize;
        let mut results = sqlx::raw_sql(&sql).fetch_many(self.pool());
        while let Some(item) = results.try_next().await.map_err(db)? {
            match item {
                // A statement's end: the rows that follow are the next part's.
                Either::Left(_) => at += 1,
                Either::Right(row) => match parts.get_mut(at) {
                    Some(part) => part.push(row),
                    None => {
                        return Err(StoreError::Corrupt(
                            "the project read returned more results than it asked for".into(),
                        ))
                    }
                },
            }
        }
        drop(results);
        if at != parts.len() {
            return Err(StoreError::Corrupt(format!(
                "the project read ended after {at} of {} statements",
                parts.len()
            )));
        }
        let row = parts[1].first().ok_or_else(|| not_found(project_id))?;
        let project = project_from(row)?;
        let data = ProjectData {
            project,
            service: parts[2].first().map(service_from).transpose()?,
            panels: decode_all(&parts[3], panel_from)?,
            circuits: decode_all(&parts[4], circuit_from)?,
            feeders: decode_all(&parts[5], feeder_from)?,
            transformers: decode_all(&parts[6], transformer_from)?,
            loads: decode_all(&parts[7], load_item_from)?,
            charging_sources: decode_all(&parts[8], charging_source_from)?,
            tasks: decode_all(&parts[9], task_from)?,
        };
        Ok(data)
    }
}

impl SqliteStore {
    /// See [`ProjectStore::load_project_seen`](super::ProjectStore::load_project_seen).
    pub(crate) async fn backend_load_project(
        &self,
        project_id: i64,
        _seen: Option<i64>,
    ) -> StoreResult<ProjectData> {
        // One snapshot, so the parts agree with each other.
        let mut tx = self.begin_read().await.map_err(db)?;
        let data = Self::load_project_in(&mut tx, project_id).await?;
        tx.commit().await.map_err(db)?;
        Ok(data)
    }
}
