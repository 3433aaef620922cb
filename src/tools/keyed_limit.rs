//! A per-key rate limit (governor's keyed limiter) that forgets idle keys: once a minute, keys
//! whose bucket is full again are dropped, so its memory follows the people, channels and
//! workspaces active in the last minutes, not every one ever seen. Tool limits and the core's
//! turn limits both use it.

use std::hash::Hash;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// How often keys whose bucket is full again are dropped.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// `per_minute` takes a minute per key, idle keys dropped once a minute.
pub struct KeyedLimit<K: Hash + Eq + Clone> {
    limiter: DefaultKeyedRateLimiter<K>,
    /// When idle keys were last dropped.
    pruned: Mutex<Instant>,
}

impl<K: Hash + Eq + Clone> KeyedLimit<K> {
    /// `per_minute` takes per key (at least 1).
    pub fn per_minute(per_minute: u32) -> Self {
        let n = NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN);
        Self {
            limiter: RateLimiter::keyed(Quota::per_minute(n)),
            pruned: Mutex::new(Instant::now()),
        }
    }

    /// Takes one for `key`; the error is how long to wait.
    pub fn check(&self, key: &K) -> Result<(), Duration> {
        self.prune_idle();
        // The limiter's own clock: a fresh default clock calibrates itself on every call.
        let now = self.limiter.clock().now();
        self.limiter
            .check_key(key)
            .map_err(|not_until| not_until.wait_time_from(now))
    }

    /// Keys held (with recent takes).
    pub fn len(&self) -> usize {
        self.limiter.len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.limiter.is_empty()
    }

    fn prune_idle(&self) {
        let mut last = self.pruned.lock().unwrap_or_else(|p| p.into_inner());
        if last.elapsed() >= PRUNE_EVERY {
            *last = Instant::now();
            self.limiter.retain_recent();
            self.limiter.shrink_to_fit();
        }
    }

    /// Drops idle keys now, as the next take after a minute would.
    #[cfg(test)]
    pub(crate) fn prune_now(&self) {
        *self.pruned.lock().unwrap_or_else(|p| p.into_inner()) -= PRUNE_EVERY;
        self.prune_idle();
    }
}
