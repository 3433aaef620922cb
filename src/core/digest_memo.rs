//! The digests of stored tool results, by message: a thread's older results are read back
//! whole on every turn and cut to the same digest each time ([`crate::domain::digest`]).
//! Stored messages never change, so a digest worked out once serves every later turn of the
//! thread on this process, along with its text as a JSON string once a request has written it.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::domain::tool_output::ToolOutput;

/// Results remembered at most (a few KB each); past it the memo starts over.
const CAPACITY: usize = 256;

/// Digests by (stored message id, position of the result in the message).
#[derive(Default)]
pub struct DigestMemo {
    digests: Mutex<HashMap<(i64, usize), Option<ToolOutput>>>,
}

impl DigestMemo {
    /// The digest of result `index` of the stored message `message_id`, whose content is
    /// `content` (`None`: it is sent whole). Worked out from `content` the first time.
    pub fn digest(
        &self,
        message_id: i64,
        index: usize,
        content: &ToolOutput,
    ) -> Option<ToolOutput> {
        let key = (message_id, index);
        if let Some(known) = self.lock().get(&key) {
            return known.clone();
        }
        let digest = content.digest().cloned();
        let mut digests = self.lock();
        if digests.len() >= CAPACITY {
            digests.clear();
        }
        digests.insert(key, digest.clone());
        digest
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(i64, usize), Option<ToolOutput>>> {
        self.digests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn large(panel: &str) -> ToolOutput {
        let rows: Vec<_> = (1..=40)
            .map(|n| json!({"circuit": n, "load_va": 1000 + n, "description": "receptacles"}))
            .collect();
        ToolOutput::from(json!({"panel": panel, "circuits": rows}))
    }

    #[test]
    fn a_digest_is_worked_out_once_per_result_and_equals_a_fresh_one() {
        let memo = DigestMemo::default();
        let result = large("LP-1");
        let first = memo
            .digest(7, 0, &result)
            .expect("a large result has a digest");
        assert_eq!(Some(&first), result.digest());
        // The next turn reads the same message again: a new copy of the same text.
        let again = memo.digest(7, 0, &large("LP-1")).expect("kept");
        assert!(
            std::ptr::eq(first.json(), again.json()),
            "the same digest, shared"
        );
        // Another result of the message, or another message, is its own.
        let other = memo.digest(7, 1, &large("LP-2")).expect("digested");
        assert_eq!(other["panel"], "LP-2");
        assert_eq!(
            memo.digest(8, 0, &ToolOutput::from(json!({"ok": true}))),
            None
        );
        assert_eq!(memo.len(), 3);
    }

    #[test]
    fn the_memo_stays_within_its_capacity() {
        let memo = DigestMemo::default();
        let small = ToolOutput::from(json!({"ok": true}));
        for id in 0..(CAPACITY as i64 * 3 + 5) {
            memo.digest(id, 0, &small);
        }
        assert!(memo.len() <= CAPACITY);
        assert!(memo.len() > 0);
    }
}
