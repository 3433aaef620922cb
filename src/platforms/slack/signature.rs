//! Verifying that an HTTP request comes from Slack: `X-Slack-Signature` is an HMAC-SHA256
//! of `v0:{timestamp}:{raw body}` under the app's signing secret; the timestamp must be
//! recent, and a signed request seen before is a replay.

use std::collections::HashMap;
use std::sync::Mutex;

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Requests older (or newer) than this many seconds are refused, as Slack recommends.
pub const MAX_AGE_SECS: i64 = 300;

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// A header is missing or not readable.
    #[error("missing or malformed X-Slack-Request-Timestamp / X-Slack-Signature")]
    Missing,
    /// The timestamp is more than five minutes away from now.
    #[error("request timestamp is more than five minutes old")]
    Stale,
    /// The signature does not match the body.
    #[error("signature does not match")]
    BadSignature,
    /// The same signed request was already accepted.
    #[error("request was already received (replay)")]
    Replayed,
}

/// The `v0=...` signature of `body` sent at `timestamp`.
pub fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    format!(
        "v0={}",
        hex::encode(mac(secret, timestamp, body).finalize().into_bytes())
    )
}

fn mac(secret: &str, timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret.as_bytes()) {
        Ok(m) => m,
        Err(_) => unreachable!("HMAC takes keys of any length"),
    };
    mac.update(b"v0:");
    mac.update(timestamp.as_bytes());
    mac.update(b":");
    mac.update(body);
    mac
}

/// Checks the timestamp (against `now`, Unix seconds) and the signature over the raw body.
/// Returns the timestamp.
pub fn verify(
    secret: &str,
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now: i64,
) -> Result<i64, VerifyError> {
    let (Some(ts_text), Some(sig)) = (timestamp, signature) else {
        return Err(VerifyError::Missing);
    };
    let ts: i64 = ts_text.trim().parse().map_err(|_| VerifyError::Missing)?;
    if (now - ts).abs() > MAX_AGE_SECS {
        return Err(VerifyError::Stale);
    }
    let Some(hex_sig) = sig.trim().strip_prefix("v0=") else {
        return Err(VerifyError::BadSignature);
    };
    let Ok(expected) = hex::decode(hex_sig) else {
        return Err(VerifyError::BadSignature);
    };
    // Constant-time comparison.
    mac(secret, ts_text.trim(), body)
        .verify_slice(&expected)
        .map_err(|_| VerifyError::BadSignature)?;
    Ok(ts)
}

/// Remembers the signatures accepted in the last five minutes so that a captured request
/// cannot be sent again. (Older ones are refused as stale anyway.)
#[derive(Default)]
pub struct ReplayGuard {
    seen: Mutex<HashMap<String, i64>>,
}

impl ReplayGuard {
    /// Records `signature`; `false` when it was already recorded.
    pub fn first_time(&self, signature: &str, ts: i64, now: i64) -> bool {
        let mut seen = match self.seen.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if seen.len() > 1024 {
            seen.retain(|_, t| (now - *t).abs() <= MAX_AGE_SECS);
        }
        seen.insert(signature.trim().to_string(), ts).is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_and_verify_round_trip() {
        let sig = sign("s3cret", "1000", b"body");
        assert_eq!(
            verify("s3cret", Some("1000"), Some(&sig), b"body", 1010),
            Ok(1000)
        );
        assert_eq!(
            verify("s3cret", Some("1000"), Some(&sig), b"bodx", 1010),
            Err(VerifyError::BadSignature)
        );
        assert_eq!(
            verify("s3cret", Some("1000"), Some(&sig), b"body", 1400),
            Err(VerifyError::Stale)
        );
        assert_eq!(
            verify("s3cret", None, Some(&sig), b"body", 1000),
            Err(VerifyError::Missing)
        );
        assert_eq!(
            verify("s3cret", Some("1000"), Some("v0=zz"), b"body", 1000),
            Err(VerifyError::BadSignature)
        );
    }

    #[test]
    fn replays_are_noticed() {
        let g = ReplayGuard::default();
        assert!(g.first_time("v0=ab", 10, 10));
        assert!(!g.first_time("v0=ab", 10, 11));
        assert!(g.first_time("v0=cd", 10, 11));
    }
}
