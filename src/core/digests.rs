//! Digests of old tool results, kept per process by stored message.
//!
//! A thread's history is read again at every turn, and every result older than the latest
//! turns is sent as its digest: working one out parses the whole result. Stored messages
//! never change, so a message's digests are worked out once and found by its id at the next
//! turns of its thread.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::domain::tool_output::ToolOutput;

/// Messages kept per generation. A lookup keeps a message young; the older generation is
/// dropped when the young one is full, so the messages of threads still talking stay.
const GENERATION: usize = 2048;

/// The digest of each result of one stored tool message, in order (`None`: sent whole).
pub type MessageDigests = Arc<[Option<ToolOutput>]>;

/// Digests of old results by stored message id.
#[derive(Default)]
pub struct Digests {
    generations: Mutex<Generations>,
}

#[derive(Default)]
struct Generations {
    young: HashMap<i64, MessageDigests>,
    old: HashMap<i64, MessageDigests>,
}

impl Digests {
    /// The digests of the stored message `id`, when they were worked out here.
    pub fn get(&self, id: i64) -> Option<MessageDigests> {
        let mut g = self.lock();
        if let Some(found) = g.young.get(&id) {
            return Some(found.clone());
        }
        let found = g.old.remove(&id)?;
        g.keep(id, found.clone());
        Some(found)
    }

    /// Keeps the digests of the stored message `id`.
    pub fn put(&self, id: i64, digests: MessageDigests) {
        self.lock().keep(id, digests);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Generations> {
        self.generations
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Generations {
    fn keep(&mut self, id: i64, digests: MessageDigests) {
        if self.young.len() >= GENERATION {
            self.old = std::mem::take(&mut self.young);
        }
        self.young.insert(id, digests);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(n: i64) -> MessageDigests {
        Arc::from(vec![Some(ToolOutput::from(serde_json::json!({ "n": n })))])
    }

    #[test]
    fn messages_in_use_stay_and_the_rest_are_dropped_in_generations() {
        let d = Digests::default();
        d.put(1, one(1));
        assert_eq!(
            d.get(1).expect("kept")[0].as_ref().map(|o| o["n"].clone()),
            Some(1.into())
        );
        assert!(d.get(2).is_none());
        // Fill a generation: message 1 moves to the old one, then a lookup brings it back.
        for id in 100..100 + GENERATION as i64 {
            d.put(id, one(id));
        }
        assert!(d.get(1).is_some(), "found in the older generation");
        for id in 10_000..10_000 + GENERATION as i64 {
            d.put(id, one(id));
        }
        assert!(d.get(1).is_some(), "a lookup kept it young");
        assert!(
            d.get(100).is_none(),
            "not looked up for two generations: dropped"
        );
        let g = d.lock();
        assert!(g.young.len() + g.old.len() <= 2 * GENERATION);
    }
}
