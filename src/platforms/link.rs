//! Whether a gateway (the Discord gateway, Slack Socket Mode) is connected, as the adapter
//! sees it: up once the platform greeted the connection (Discord's READY or RESUMED, Slack's
//! `hello`), down when it dropped. `serve` shows it in `/readyz`; connecting or retrying is
//! not connected.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

/// A change of a gateway's connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkChange {
    /// At least one connection is greeted and receiving events.
    Up,
    /// No connection receives events; the detail says why.
    Down(String),
}

/// Where an adapter reports its gateway's connection (to `/readyz` in `serve`).
pub type LinkReport = Arc<dyn Fn(LinkChange) + Send + Sync>;

/// The connections of one gateway (one per Discord shard, one per Socket Mode connection),
/// reporting [`LinkChange::Up`] while any is connected and [`LinkChange::Down`] when none is.
#[derive(Clone)]
pub struct GatewayLink {
    report: LinkReport,
    live: Arc<Mutex<BTreeSet<u64>>>,
}

impl GatewayLink {
    /// A link reporting to `report`.
    pub fn new(report: LinkReport) -> Self {
        Self {
            report,
            live: Arc::default(),
        }
    }

    /// A link reporting nowhere (an adapter run without `serve`).
    pub fn unobserved() -> Self {
        Self::new(Arc::new(|_| {}))
    }

    /// Connection `id` was greeted by the platform.
    pub fn up(&self, id: u64) {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id);
        (self.report)(LinkChange::Up);
    }

    /// Connection `id` dropped; the gateway is down when no other connection is up.
    pub fn down(&self, id: u64, why: &str) {
        let none_left = {
            let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            live.remove(&id);
            live.is_empty()
        };
        if none_left {
            (self.report)(LinkChange::Down(why.to_string()));
        }
    }

    /// A connection greeted by a platform that does not say which one it is: counted under a
    /// fresh id.
    pub fn one_more_up(&self) {
        let id = {
            let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            live.last().map_or(0, |l| l + 1)
        };
        self.up(id);
    }

    /// One of the connections counted by [`one_more_up`](Self::one_more_up) dropped.
    pub fn one_down(&self, why: &str) {
        let first = self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .first()
            .copied();
        self.down(first.unwrap_or(0), why);
    }

    /// The connections up now are `live` (read from the client): reports only a change
    /// between none and some.
    pub fn track(&self, live: BTreeSet<u64>, why: &str) {
        let is_up = !live.is_empty();
        let was_up = {
            let mut known = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            !std::mem::replace(&mut *known, live).is_empty()
        };
        match (was_up, is_up) {
            (false, true) => (self.report)(LinkChange::Up),
            (true, false) => (self.report)(LinkChange::Down(why.to_string())),
            _ => {}
        }
    }

    /// Every connection dropped at once.
    pub fn all_down(&self, why: &str) {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        (self.report)(LinkChange::Down(why.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn up_while_any_connection_is_up() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let link = GatewayLink::new(Arc::new(move |c| s.lock().unwrap().push(c)));
        link.up(0);
        link.up(1);
        link.down(0, "shard 0 dropped");
        link.down(1, "shard 1 dropped");
        assert_eq!(
            *seen.lock().unwrap(),
            vec![
                LinkChange::Up,
                LinkChange::Up,
                LinkChange::Down("shard 1 dropped".into())
            ]
        );
        seen.lock().unwrap().clear();
        link.one_more_up();
        link.one_more_up();
        link.one_down("dropped");
        assert_eq!(*seen.lock().unwrap(), vec![LinkChange::Up, LinkChange::Up]);
        link.one_down("dropped");
        assert_eq!(
            seen.lock().unwrap().last(),
            Some(&LinkChange::Down("dropped".into()))
        );
        seen.lock().unwrap().clear();
        link.track(BTreeSet::from([0]), "none");
        link.track(BTreeSet::from([0, 1]), "none");
        link.track(BTreeSet::new(), "none");
        link.track(BTreeSet::new(), "none");
        assert_eq!(
            *seen.lock().unwrap(),
            vec![LinkChange::Up, LinkChange::Down("none".into())]
        );
    }
}
