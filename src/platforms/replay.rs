//! The replay ledger of the signed HTTP endpoints (Slack and Discord). A captured request
//! passes the signature and timestamp checks until its timestamp goes stale, so each verified
//! request is remembered in the store, where every replica sees it, and refused when it comes
//! again.

use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::store::{Store, StoreError};

/// What became of a verified request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// Seen for the first time.
    First,
    /// Seen before within the window.
    Again,
}

/// Names a signed request by what its signature covers (timestamp and body), so that other
/// encodings of the same signature (hex case, for one) name the same request.
pub fn request_digest(timestamp: &str, body: &[u8]) -> String {
    let mut hash = Sha256::new();
    hash.update(timestamp.trim().as_bytes());
    hash.update([0u8]);
    hash.update(body);
    hex::encode(hash.finalize())
}

/// Records the request in `scope` of the store's ledger. `max_age` is how far the signed
/// timestamp may be from now either way, so a request stays acceptable for twice that long
/// after it was first seen, and is remembered that long.
pub async fn check(
    store: &dyn Store,
    scope: &str,
    timestamp: &str,
    body: &[u8],
    max_age: Duration,
) -> Result<Replay, StoreError> {
    let digest = request_digest(timestamp, body);
    let first = store
        .claim_request(scope, &digest, max_age.saturating_mul(2))
        .await?;
    Ok(if first { Replay::First } else { Replay::Again })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_tell_timestamp_and_body_apart() {
        let a = request_digest("1000", b"body");
        assert_eq!(a, request_digest(" 1000 ", b"body"));
        assert_ne!(a, request_digest("1001", b"body"));
        assert_ne!(a, request_digest("1000", b"bodx"));
        // The separator keeps digits from moving between the two.
        assert_ne!(
            request_digest("10", b"00body"),
            request_digest("1000", b"body")
        );
    }
}
