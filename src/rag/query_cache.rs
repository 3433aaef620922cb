//! A bounded least-recently-used cache of question vectors, keyed by model and text, so a
//! question asked again (the same words in another thread, a retry, a button) skips the
//! 20–30 ms the local model takes to embed it.

use std::collections::HashMap;
use std::sync::Mutex;

/// Question vectors by (model, text); evicts the least recently used entry when full.
#[derive(Debug)]
pub struct QueryCache {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    tick: u64,
    entries: HashMap<(String, String), (u64, Vec<f32>)>,
    hits: u64,
    misses: u64,
}

impl QueryCache {
    /// A cache of at most `capacity` vectors (0 disables it).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The vector of `text` under `model`, when cached (and marks it recently used).
    pub fn get(&self, model: &str, text: &str) -> Option<Vec<f32>> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.tick += 1;
        let tick = inner.tick;
        let found = inner
            .entries
            .get_mut(&(model.to_string(), text.to_string()))
            .map(|(used, v)| {
                *used = tick;
                v.clone()
            });
        if found.is_some() {
            inner.hits += 1;
        } else {
            inner.misses += 1;
        }
        found
    }

    /// Remembers `vector` for `text` under `model`.
    pub fn put(&self, model: &str, text: &str, vector: Vec<f32>) {
        if self.capacity == 0 {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.tick += 1;
        let tick = inner.tick;
        let key = (model.to_string(), text.to_string());
        if !inner.entries.contains_key(&key) && inner.entries.len() >= self.capacity {
            // A linear scan on eviction only: a few thousand entries take microseconds,
            // nothing next to the embedding it saves.
            if let Some(oldest) = inner
                .entries
                .iter()
                .min_by_key(|(_, (used, _))| *used)
                .map(|(k, _)| k.clone())
            {
                inner.entries.remove(&oldest);
            }
        }
        inner.entries.insert(key, (tick, vector));
    }

    /// (hits, misses) so far.
    pub fn stats(&self) -> (u64, u64) {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        (inner.hits, inner.misses)
    }

    /// Vectors held.
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entries
            .len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_by_model_and_text_and_evicts_the_least_recent() {
        let c = QueryCache::new(2);
        c.put("m", "a", vec![1.0]);
        c.put("m", "b", vec![2.0]);
        assert_eq!(c.get("m", "a"), Some(vec![1.0]));
        assert_eq!(c.get("other", "a"), None);
        // "b" is now the least recently used.
        c.put("m", "c", vec![3.0]);
        assert_eq!(c.get("m", "b"), None);
        assert_eq!(c.get("m", "a"), Some(vec![1.0]));
        assert_eq!(c.get("m", "c"), Some(vec![3.0]));
        assert_eq!(c.len(), 2);
        assert_eq!(c.stats(), (3, 2));
        let off = QueryCache::new(0);
        off.put("m", "a", vec![1.0]);
        assert!(off.is_empty());
    }
}
