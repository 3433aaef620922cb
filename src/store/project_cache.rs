//! Projects read before, kept with the revision they were read at.
//!
//! A turn reads its bound project whole (ten tables). Projects change rarely (a person
//! confirms a change) and are read on every turn, so each store keeps the last read of each
//! project with its `revision`, which triggers bump in the same transaction as any change to
//! the project's rows (migration 0012). A read then costs one indexed lookup of the revision
//! while nothing changed; any change, made by this process or another replica, makes the
//! next read a full one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::project::ProjectData;

/// Most projects kept; past it the cache starts over (a process serves a bounded set of
/// channels, and a full read is only the cost of a miss).
const MAX_PROJECTS: usize = 512;

/// The last read of each project, by id.
#[derive(Debug, Default)]
pub(crate) struct ProjectCache {
    entries: Mutex<HashMap<i64, (i64, Arc<ProjectData>)>>,
}

impl ProjectCache {
    /// The project as read at `revision`, if that is the read kept.
    pub(crate) fn get(&self, project_id: i64, revision: i64) -> Option<Arc<ProjectData>> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .get(&project_id)
            .filter(|(kept, _)| *kept == revision)
            .map(|(_, data)| data.clone())
    }

    /// Keeps `data`, read at `revision`, unless a later read is already kept.
    pub(crate) fn put(&self, revision: i64, data: Arc<ProjectData>) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= MAX_PROJECTS && !entries.contains_key(&data.project.id) {
            entries.clear();
        }
        let id = data.project.id;
        match entries.get(&id) {
            Some((kept, _)) if *kept > revision => {}
            _ => {
                entries.insert(id, (revision, data));
            }
        }
    }
}
