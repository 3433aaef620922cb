//! The one outbound HTTP retry policy: which failed requests may be sent again, and after how
//! long. Every client (model providers, embedders, Discord REST, Slack Web API, model fetch)
//! decides through it, so a new call only has to say whether it is safe to repeat.
//!
//! The rules:
//! * a request that never reached the server (connection refused, DNS, TLS handshake) is
//!   always sent again;
//! * 429, and 503 with a wait the server named, mean the server did not act on it: sent again
//!   after that wait; a wait longer than [`RetryPolicy::max_delay`] is not sat out but
//!   reported (sending sooner than asked would only be refused again);
//! * a timeout, a connection broken after sending, or another 5xx leaves it unknown whether
//!   the server acted: only a [`Replay::Safe`] request is sent again;
//! * any other 4xx is permanent and never repeated.
//!
//! Backoff is exponential with jitter (between half and all of `base_delay * 2^retry`), so
//! many replicas failing together do not come back together.
//!
//! Layer: foundation. Imports no other layer; every outbound client uses it.

use std::future::Future;
use std::time::Duration;

/// Whether sending a request twice can do harm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// Repeating it changes nothing: GET, PUT, PATCH, DELETE, or a POST without side effects
    /// (a model completion, an embedding, a typing indicator).
    Safe,
    /// Repeating it may act twice (posting a message, creating a thread).
    Unsafe,
}

impl Replay {
    /// The usual reading of an HTTP method: POST is unsafe, the others are idempotent.
    pub fn of_method(method: &reqwest::Method) -> Self {
        if *method == reqwest::Method::POST {
            Self::Unsafe
        } else {
            Self::Safe
        }
    }
}

/// How one attempt failed, as far as retrying is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The request never reached the server.
    NotSent,
    /// The request may have reached the server (timeout, connection lost after sending).
    Unknown,
    /// The server answered with an error status, and maybe a wait.
    Status {
        /// HTTP status code.
        status: u16,
        /// The wait the server asked for (`Retry-After` or the body's equivalent).
        wait: Option<Duration>,
    },
    /// Retrying cannot help (a malformed answer, a refused credential).
    Permanent,
}

impl Failure {
    /// Whether the server refused for a rate limit (429).
    pub fn is_rate_limit(&self) -> bool {
        matches!(self, Self::Status { status: 429, .. })
    }

    /// The failure of a reqwest send: a connect error never reached the server.
    pub fn of_reqwest(error: &reqwest::Error) -> Self {
        if error.is_connect() {
            Self::NotSent
        } else if error.is_builder() || error.is_redirect() {
            Self::Permanent
        } else {
            Self::Unknown
        }
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Send again after this wait.
    RetryAfter(Duration),
    /// Give up and report the failure.
    Stop,
}

/// Limits of retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff wait; doubled on each retry.
    pub base_delay: Duration,
    /// Longest single wait; a server asking for more is not retried.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The backoff before retry number `retry` (0 for the first): a random wait between half
    /// and all of `base_delay * 2^retry`, at most `max_delay`.
    pub fn backoff(&self, retry: u32) -> Duration {
        let full = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(retry.min(20)))
            .min(self.max_delay);
        let jitter: f64 = rand::random_range(0.5..=1.0);
        full.mul_f64(jitter)
    }

    /// Whether and when to send again after `failure` on retry number `retry` (0 after the
    /// first attempt) of a request that is `replay`.
    pub fn verdict(&self, retry: u32, replay: Replay, failure: &Failure) -> Verdict {
        if retry >= self.max_retries {
            return Verdict::Stop;
        }
        let safe = replay == Replay::Safe;
        let retry_in = match failure {
            Failure::NotSent => Some(self.backoff(retry)),
            Failure::Unknown => safe.then(|| self.backoff(retry)),
            Failure::Permanent => None,
            Failure::Status { status, wait } => match (*status, wait) {
                (429 | 503, Some(wait)) if *wait > self.max_delay => None,
                (429 | 503, Some(wait)) => Some(*wait),
                // A 429 is never acted on; without a wait, back off.
                (429, None) => Some(self.backoff(retry)),
                (408 | 500..=599, _) if safe => Some(self.backoff(retry)),
                _ => None,
            },
        };
        match retry_in {
            Some(wait) => Verdict::RetryAfter(wait.min(self.max_delay)),
            None => Verdict::Stop,
        }
    }

    /// Runs `attempt` until it succeeds or the policy says stop; `classify` tells how an error
    /// failed. `what` names the request in logs. Returns the last error on giving up.
    pub async fn run<T, E, F, Fut>(
        &self,
        what: &str,
        replay: Replay,
        classify: impl Fn(&E) -> Failure,
        attempt: F,
    ) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: std::fmt::Display,
    {
        self.run_observed(what, replay, classify, |_| {}, attempt)
            .await
    }

    /// [`run`](Self::run), telling `on_wait` of every failure that is waited out before the
    /// next attempt (a caller counts its 429s).
    pub async fn run_observed<T, E, F, Fut>(
        &self,
        what: &str,
        replay: Replay,
        classify: impl Fn(&E) -> Failure,
        on_wait: impl Fn(&Failure),
        mut attempt: F,
    ) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: std::fmt::Display,
    {
        let mut retry = 0;
        loop {
            let error = match attempt().await {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            let failure = classify(&error);
            match self.verdict(retry, replay, &failure) {
                Verdict::RetryAfter(wait) => {
                    tracing::info!(
                        what,
                        error = %error,
                        retry = retry + 1,
                        wait_ms = wait.as_millis() as u64,
                        "request failed; retrying"
                    );
                    on_wait(&failure);
                    tokio::time::sleep(wait).await;
                    retry += 1;
                }
                Verdict::Stop => {
                    if retry > 0 || failure != Failure::Permanent {
                        tracing::warn!(what, error = %error, attempts = retry + 1, "request failed");
                    }
                    return Err(error);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(2),
        }
    }

    fn status(status: u16, wait: Option<u64>) -> Failure {
        Failure::Status {
            status,
            wait: wait.map(Duration::from_secs),
        }
    }

    #[test]
    fn permanent_client_errors_are_never_repeated() {
        let p = policy();
        for code in [400, 401, 403, 404, 405, 409, 413, 422] {
            for replay in [Replay::Safe, Replay::Unsafe] {
                assert_eq!(p.verdict(0, replay, &status(code, None)), Verdict::Stop);
                assert_eq!(p.verdict(0, replay, &status(code, Some(1))), Verdict::Stop);
            }
        }
        assert_eq!(
            p.verdict(0, Replay::Safe, &Failure::Permanent),
            Verdict::Stop
        );
    }

    #[test]
    fn a_post_that_may_have_arrived_is_not_sent_twice() {
        let p = policy();
        for f in [
            Failure::Unknown,
            status(500, None),
            status(502, None),
            status(504, None),
            status(503, None),
        ] {
            assert_eq!(p.verdict(0, Replay::Unsafe, &f), Verdict::Stop, "{f:?}");
            assert!(
                matches!(p.verdict(0, Replay::Safe, &f), Verdict::RetryAfter(_)),
                "{f:?}"
            );
        }
        // Never sent, or refused with a wait: safe for any request.
        assert!(matches!(
            p.verdict(0, Replay::Unsafe, &Failure::NotSent),
            Verdict::RetryAfter(_)
        ));
        assert_eq!(
            p.verdict(0, Replay::Unsafe, &status(503, Some(1))),
            Verdict::RetryAfter(Duration::from_secs(1))
        );
        assert_eq!(
            p.verdict(1, Replay::Unsafe, &status(429, Some(1))),
            Verdict::RetryAfter(Duration::from_secs(1))
        );
    }

    #[test]
    fn long_server_waits_are_reported_and_retries_bounded() {
        let p = policy();
        assert_eq!(
            p.verdict(0, Replay::Safe, &status(429, Some(3600))),
            Verdict::Stop
        );
        assert_eq!(
            p.verdict(0, Replay::Safe, &status(429, Some(2))),
            Verdict::RetryAfter(Duration::from_secs(2))
        );
        assert_eq!(p.verdict(3, Replay::Safe, &Failure::NotSent), Verdict::Stop);
    }

    #[test]
    fn backoff_grows_with_jitter_within_bounds() {
        let p = policy();
        for retry in 0..8 {
            let full = Duration::from_millis(100 * 2u64.pow(retry)).min(p.max_delay);
            let seen: Vec<Duration> = (0..50).map(|_| p.backoff(retry)).collect();
            assert!(seen.iter().all(|d| *d >= full / 2 && *d <= full), "{retry}");
            // Jitter: fifty draws are not all the same.
            assert!(seen.iter().any(|d| *d != seen[0]), "{retry}");
        }
        assert!(p.backoff(u32::MAX) <= p.max_delay);
    }

    #[tokio::test]
    async fn run_counts_attempts_as_the_verdicts_say() {
        let p = RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
        };
        let mut calls = 0;
        let r: Result<(), String> = p
            .run(
                "test",
                Replay::Unsafe,
                |_| Failure::Unknown,
                || {
                    calls += 1;
                    async { Err("timed out".to_string()) }
                },
            )
            .await;
        assert!(r.is_err());
        assert_eq!(calls, 1);
        let mut calls = 0;
        let r: Result<u32, String> = p
            .run(
                "test",
                Replay::Unsafe,
                |_| Failure::NotSent,
                || {
                    calls += 1;
                    let n = calls;
                    async move {
                        if n < 3 {
                            Err("refused".to_string())
                        } else {
                            Ok(n)
                        }
                    }
                },
            )
            .await;
        assert_eq!(r, Ok(3));
    }
}
