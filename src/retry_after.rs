//! Waits that other servers ask of us (`Retry-After`, a body's `retry_after`, Google's
//! `RetryInfo.retryDelay`), validated and capped in one place. They come from outside:
//! `Duration::from_secs_f64` panics on NaN, negative and huge values, and an honest-looking
//! "wait a year" must not park a turn either.
//!
//! Layer: foundation. Imports no other layer.

use std::time::Duration;

/// The longest wait a server can impose; anything longer (including infinity) is cut to this.
pub const MAX_WAIT: Duration = Duration::from_secs(3600);

/// A wait given in seconds: `None` for NaN or a negative number, at most [`MAX_WAIT`].
pub fn from_secs(secs: f64) -> Option<Duration> {
    if secs.is_nan() || secs < 0.0 {
        return None;
    }
    if secs >= MAX_WAIT.as_secs_f64() {
        return Some(MAX_WAIT);
    }
    Some(Duration::from_secs_f64(secs))
}

/// Seconds written as text ("3", " 1.5 "), as [`from_secs`] takes them.
pub fn parse_secs(text: &str) -> Option<Duration> {
    from_secs(text.trim().parse().ok()?)
}

/// A `Retry-After` value: delta-seconds (fractions allowed) or an HTTP date such as
/// `Wed, 21 Oct 2015 07:28:00 GMT` (a date in the past gives zero); at most [`MAX_WAIT`].
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return from_secs(secs);
    }
    let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let delta = when.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(delta.to_std().unwrap_or(Duration::ZERO).min(MAX_WAIT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_numbers_never_panic_and_are_capped() {
        assert_eq!(from_secs(1.5), Some(Duration::from_millis(1500)));
        assert_eq!(from_secs(0.0), Some(Duration::ZERO));
        assert_eq!(from_secs(f64::NAN), None);
        assert_eq!(from_secs(-0.5), None);
        assert_eq!(from_secs(f64::NEG_INFINITY), None);
        assert_eq!(from_secs(f64::INFINITY), Some(MAX_WAIT));
        assert_eq!(from_secs(1e300), Some(MAX_WAIT));
        assert_eq!(from_secs(f64::MAX), Some(MAX_WAIT));
        for text in ["NaN", "nan", "-1", "-inf", "later", ""] {
            assert_eq!(parse_retry_after(text), None, "{text}");
            assert_eq!(parse_secs(text), None, "{text}");
        }
        for text in ["1e300", "inf", "infinity", "99999999999999999999999"] {
            assert_eq!(parse_retry_after(text), Some(MAX_WAIT), "{text}");
        }
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after(" 1.5 "),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(
            parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT"),
            Some(MAX_WAIT)
        );
        let soon = (chrono::Utc::now() + chrono::Duration::seconds(120)).to_rfc2822();
        let wait = parse_retry_after(&soon).unwrap_or_default();
        assert!(
            wait > Duration::from_secs(100) && wait <= Duration::from_secs(120),
            "{wait:?}"
        );
    }
}
