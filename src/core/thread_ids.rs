//! The sessions of project-bound threads this process has opened, by thread.
//!
//! Opening a thread for an input that asks no mode binds the channel's project only to a
//! session that has none; for a session that has a project it only finds the session's id.
//! Sessions are never deleted and their ids never change, so once a bound thread was opened
//! its next inputs can be queued under the known id without that statement.

use std::collections::HashMap;
use std::sync::Mutex;

use super::session::{Session, SessionKey};

/// Threads remembered at most; past it the map starts over (each thread is then opened
/// once more).
const CAPACITY: usize = 100_000;

/// Session ids of project-bound threads, by thread.
#[derive(Default)]
pub struct ThreadIds {
    ids: Mutex<HashMap<SessionKey, i64>>,
}

impl ThreadIds {
    /// The session of `key`, when it was opened here with a project bound.
    pub fn get(&self, key: &SessionKey) -> Option<i64> {
        self.lock().get(key).copied()
    }

    /// Remembers `session` when a project is bound to it.
    pub fn remember(&self, session: &Session) {
        if session.project_id.is_none() {
            return;
        }
        let mut ids = self.lock();
        if ids.len() >= CAPACITY && !ids.contains_key(&session.key) {
            ids.clear();
        }
        ids.insert(session.key.clone(), session.id);
    }

    /// Forgets `key` (its session lost its project: the next opening binds it again).
    /// Returns whether it was remembered.
    pub fn forget(&self, key: &SessionKey) -> bool {
        self.lock().remove(key).is_some()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionKey, i64>> {
        self.ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: i64, thread: &str, project_id: Option<i64>) -> Session {
        Session {
            id,
            key: SessionKey {
                platform: "slack".into(),
                workspace: "T1".into(),
                channel: "C1".into(),
                thread: thread.into(),
            },
            mode: Default::default(),
            project_id,
            summary: String::new(),
            summarized_through: 0,
            created_at: chrono::Utc::now(),
        }
    }

    #[test]
    fn only_bound_threads_are_remembered_until_forgotten() {
        let ids = ThreadIds::default();
        let bound = session(7, "t1", Some(3));
        let unbound = session(8, "t2", None);
        ids.remember(&bound);
        ids.remember(&unbound);
        assert_eq!(ids.get(&bound.key), Some(7));
        assert_eq!(
            ids.get(&unbound.key),
            None,
            "an unbound thread is opened each time"
        );
        assert!(ids.forget(&bound.key));
        assert_eq!(ids.get(&bound.key), None);
        assert!(!ids.forget(&bound.key));
    }
}
