//! Verifying that an HTTP request comes from Slack: `X-Slack-Signature` is an HMAC-SHA256
//! of `v0:{timestamp}:{raw body}` under the app's signing secret; the timestamp must be
//! recent. Replays are refused by the endpoint through the store's ledger.

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
    // abs_diff: a hostile timestamp near i64::MIN must not overflow.
    if now.abs_diff(ts) > MAX_AGE_SECS.unsigned_abs() {
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
        for ts in [i64::MIN.to_string(), i64::MAX.to_string()] {
            assert_eq!(
                verify("s3cret", Some(&ts), Some(&sig), b"body", 1000),
                Err(VerifyError::Stale)
            );
        }
    }
}
