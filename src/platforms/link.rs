//! Whether a gateway (the Discord gateway, Slack Socket Mode) is connected, as the adapter
//! sees it: up once the platform greeted the connection (Discord's READY or RESUMED, Slack's
//! `hello`), down when it dropped. `serve` shows it in `/readyz`; connecting or retrying is
//! not connected.

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

/// How many connections of one gateway are greeted (one per Discord shard, one per Socket
/// Mode connection), reporting [`LinkChange::Up`] while any is and [`LinkChange::Down`] when
/// none is.
#[derive(Clone)]
pub struct GatewayLink {
    report: LinkReport,
    live: Arc<Mutex<usize>>,
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

    /// Replaces the count of live connections, returning the one before.
    fn swap(&self, live: impl FnOnce(usize) -> usize) -> usize {
        let mut n = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        let was = *n;
        *n = live(was);
        was
    }

    /// One more connection was greeted by the platform.
    pub fn one_more_up(&self) {
        self.swap(|n| n + 1);
        (self.report)(LinkChange::Up);
    }

    /// One connection dropped; the gateway is down when no other connection is up.
    pub fn one_down(&self, why: &str) {
        if self.swap(|n| n.saturating_sub(1)) <= 1 {
            (self.report)(LinkChange::Down(why.to_string()));
        }
    }

    /// `live` connections are up now (read from the client): reports only a change between
    /// none and some.
    pub fn track(&self, live: usize, why: &str) {
        match (self.swap(|_| live) > 0, live > 0) {
            (false, true) => (self.report)(LinkChange::Up),
            (true, false) => (self.report)(LinkChange::Down(why.to_string())),
            _ => {}
        }
    }

    /// Every connection dropped at once.
    pub fn all_down(&self, why: &str) {
        self.swap(|_| 0);
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
        link.one_more_up();
        link.one_more_up();
        link.one_down("shard 0 dropped");
        link.one_down("shard 1 dropped");
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
        link.track(1, "none");
        link.track(2, "none");
        link.track(0, "none");
        link.track(0, "none");
        assert_eq!(
            *seen.lock().unwrap(),
            vec![LinkChange::Up, LinkChange::Down("none".into())]
        );
    }
}
