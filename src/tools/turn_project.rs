//! The project as one turn sees it: read from the store once, on first use, and shared by
//! every model request and tool call of the turn.
//!
//! A whole project load is a read-only transaction of ten statements; a turn with a tool call
//! used to make it three times (two model requests and the tool). Nothing in a turn changes
//! the project (writes wait for a person's confirmation, in a later turn), so one read is the
//! same answer. A change confirmed in another thread while this turn runs shows from the next
//! turn on; a write planned against the snapshot is still checked against the project's
//! version when confirmed.

use std::future::Future;

use tokio::sync::OnceCell;

use crate::project::ProjectData;
use crate::store::StoreResult;

/// A turn's copy of its bound project, read at most once.
#[derive(Debug)]
pub struct TurnProject {
    id: i64,
    /// The project's revision when the turn read its thread, if that read gave it.
    seen: Option<i64>,
    data: OnceCell<ProjectData>,
}

impl TurnProject {
    /// The project `id`, not read yet.
    pub fn new(id: i64) -> Self {
        Self::seen_at(id, None)
    }

    /// The project `id`, not read yet, seen at `revision` by the turn's read of its thread
    /// (the loader gets it, to skip looking it up).
    pub fn seen_at(id: i64, revision: Option<i64>) -> Self {
        Self {
            id,
            seen: revision,
            data: OnceCell::new(),
        }
    }

    /// The project's id.
    pub fn id(&self) -> i64 {
        self.id
    }

    /// The project, read with `load` (given the id and the revision seen) the first time (a
    /// failed read is not kept: the next caller tries again).
    pub async fn get_or_load<F, Fut>(&self, load: F) -> StoreResult<ProjectData>
    where
        F: FnOnce(i64, Option<i64>) -> Fut,
        Fut: Future<Output = StoreResult<ProjectData>>,
    {
        self.read(load).await.cloned()
    }

    /// [`Self::get_or_load`] without the copy, for a caller that reads a part of it.
    pub async fn read<F, Fut>(&self, load: F) -> StoreResult<&ProjectData>
    where
        F: FnOnce(i64, Option<i64>) -> Fut,
        Fut: Future<Output = StoreResult<ProjectData>>,
    {
        self.data.get_or_try_init(|| load(self.id, self.seen)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nec::units::{Amps, Edition, Phase, Volts};
    use crate::project::{PanelSpec, Workspace};
    use crate::store::{EquipmentStore, ProjectStore, SqliteStore};

    #[tokio::test]
    async fn reads_the_project_once_per_turn_and_retries_after_a_failure() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = SqliteStore::open(&dir.path().join("t.db"))
            .await
            .expect("store");
        let p = store
            .create_project(&Workspace::local(), "turn", Edition::Nec2023)
            .await
            .expect("project");

        let missing = TurnProject::new(p.id + 1000);
        assert!(missing
            .get_or_load(|id, seen| store.load_project_seen(id, seen))
            .await
            .is_err());
        // Not kept: once the project exists under that id a later caller would read it.

        let turn = TurnProject::new(p.id);
        let first = turn
            .get_or_load(|id, seen| store.load_project_seen(id, seen))
            .await
            .expect("read");
        assert!(first.panels.is_empty());
        store
            .add_panel(
                p.id,
                &PanelSpec {
                    name: "LP-1".into(),
                    voltage: Volts(208.0),
                    phase: Phase::Three,
                    bus_rating: Amps(100.0),
                    main_breaker: None,
                    interrupting_rating_ka: None,
                    fed_from: None,
                    spaces: 24,
                    location: String::new(),
                },
            )
            .await
            .expect("panel");
        let again = turn
            .get_or_load(|id, seen| store.load_project_seen(id, seen))
            .await
            .expect("snapshot");
        assert!(again.panels.is_empty(), "the turn keeps its first read");
        let next_turn = TurnProject::new(p.id)
            .get_or_load(|id, seen| store.load_project_seen(id, seen))
            .await
            .expect("read");
        assert_eq!(next_turn.panels.len(), 1, "the next turn reads anew");
    }
}
