//! The replay ledger of the signed HTTP endpoints (Slack and Discord). A captured request
//! passes the signature and timestamp checks until its timestamp goes stale, so each verified
//! request is remembered in the store, where every replica sees it, and refused when it comes
//! again.

use std::time::Duration;

use sha2::{Digest, Sha256};

use axum::http::StatusCode;

use crate::core::ledger::Ledger;

/// Names a signed request by what its signature covers (timestamp and body), so that other
/// encodings of the same signature (hex case, for one) name the same request.
pub fn request_digest(timestamp: &str, body: &[u8]) -> String {
    let mut hash = Sha256::new();
    hash.update(timestamp.trim().as_bytes());
    hash.update([0u8]);
    hash.update(body);
    hex::encode(hash.finalize())
}

/// Records the verified request in `scope` of the store's ledger and refuses it when it was
/// seen before: the HTTP status and text to answer with. `max_age` is how far the signed
/// timestamp may be from now either way, so a request stays acceptable for twice that long
/// after it was first seen, and is remembered that long.
pub async fn refuse_replays(
    ledger: &Ledger,
    scope: &str,
    timestamp: &str,
    body: &[u8],
    max_age: Duration,
) -> Result<(), (StatusCode, &'static str)> {
    let digest = request_digest(timestamp, body);
    match ledger
        .claim_request(scope, &digest, max_age.saturating_mul(2))
        .await
    {
        Ok(true) => Ok(()),
        Ok(false) => {
            tracing::warn!(scope, "refused a replayed request");
            Err((
                StatusCode::UNAUTHORIZED,
                "request was already received (replay)",
            ))
        }
        Err(e) => {
            tracing::error!(scope, error = %e, "could not check a request for replay");
            Err((
                StatusCode::SERVICE_UNAVAILABLE,
                "could not check the request for replay",
            ))
        }
    }
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
