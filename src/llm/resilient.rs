//! Timeouts, retries and fallback around any [`ChatProvider`].
//!
//! Retries follow the shared outbound policy ([`crate::http_policy`]). A request may be
//! retried only until its stream has delivered a first event: once text has reached the
//! caller a retry would duplicate it, so later failures are passed on as they are. A server
//! that sent nothing within the first-byte bound is tried once more at most: a slow server
//! stays slow, and each try costs the person that whole wait again.

use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::{Stream, StreamExt};

use super::gemini::GeminiProvider;
use super::openai::OpenAiProvider;
use super::timeouts::CallClock;
use super::{
    ChatProvider, ChatRequest, ChatStream, LlmError, StreamEvent, StreamTimeouts, TimedOut,
    TimeoutStage,
};
use crate::config::{Config, LlmConfig, ProviderKind};
use crate::http_policy::{self, Failure, Replay};

/// How [`Resilient`] waits and retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Bounds of the first event of an attempt, of each later gap and of the whole call.
    pub timeouts: StreamTimeouts,
    /// Retries after the first attempt, for transient errors only.
    pub max_retries: u32,
    /// First backoff delay; doubled on each retry, with jitter.
    pub base_delay: Duration,
    /// Upper bound of any single wait; a provider asking for a longer `retry_after` is not
    /// retried, its error is reported.
    pub max_delay: Duration,
}

impl RetryPolicy {
    /// Default cap on one backoff wait.
    pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(30);

    /// The policy of the `[llm]` configuration section.
    pub fn from_config(llm: &LlmConfig) -> Self {
        Self {
            timeouts: StreamTimeouts::from_config(llm),
            max_retries: llm.max_retries,
            base_delay: Duration::from_millis(llm.retry_base_delay_ms),
            max_delay: Self::DEFAULT_MAX_DELAY,
        }
    }

    /// The shared outbound policy with these limits.
    pub fn outbound(&self) -> http_policy::RetryPolicy {
        http_policy::RetryPolicy {
            max_retries: self.max_retries,
            base_delay: self.base_delay,
            max_delay: self.max_delay,
        }
    }
}

/// First-byte timeouts of one call that are retried: one more try, not `max_retries`.
const FIRST_BYTE_RETRIES: u32 = 1;

/// How a model request failed, for the outbound policy. Only transient errors are retried;
/// `first_byte_timeouts` counts the call's first-byte timeouts so far (this one included).
fn failure(e: &LlmError, first_byte_timeouts: u32) -> Failure {
    match e {
        LlmError::RateLimited { retry_after } => Failure::Status {
            status: 429,
            wait: *retry_after,
        },
        LlmError::Overloaded(_) => Failure::Status {
            status: 503,
            wait: None,
        },
        LlmError::Timeout(TimedOut { stage, .. }) => match stage {
            TimeoutStage::Connect => Failure::NotSent,
            TimeoutStage::FirstByte if first_byte_timeouts > FIRST_BYTE_RETRIES => {
                Failure::Permanent
            }
            TimeoutStage::FirstByte | TimeoutStage::Idle => Failure::Unknown,
            TimeoutStage::Server => Failure::Status {
                status: 408,
                wait: None,
            },
            // The cap of the whole call: nothing is left to retry with.
            TimeoutStage::Overall => Failure::Permanent,
        },
        LlmError::Transport(_) => Failure::Unknown,
        _ => Failure::Permanent,
    }
}

/// Whether `e` is a timeout waiting for the first byte.
fn is_first_byte_timeout(e: &LlmError) -> bool {
    matches!(
        e,
        LlmError::Timeout(TimedOut {
            stage: TimeoutStage::FirstByte,
            ..
        })
    )
}

/// A provider wrapped with a timeout, retries with backoff for transient errors, and an
/// optional fallback provider tried (with the same policy) when the primary fails with a
/// transient error.
pub struct Resilient {
    primary: Arc<dyn ChatProvider>,
    fallback: Option<Arc<dyn ChatProvider>>,
    policy: RetryPolicy,
}

impl Resilient {
    /// Wraps `primary`.
    pub fn new(primary: Arc<dyn ChatProvider>, policy: RetryPolicy) -> Self {
        Self {
            primary,
            fallback: None,
            policy,
        }
    }

    /// Adds a fallback provider.
    pub fn with_fallback(mut self, fallback: Arc<dyn ChatProvider>) -> Self {
        self.fallback = Some(fallback);
        self
    }

    /// The policy in force.
    pub fn policy(&self) -> RetryPolicy {
        self.policy
    }

    /// Starts a stream under the outbound policy, every attempt within `clock`'s cap. A
    /// completion changes nothing on the server, so it is safe to send again after a timeout.
    async fn with_retries(
        &self,
        provider: &dyn ChatProvider,
        request: &ChatRequest,
        clock: CallClock,
    ) -> Result<ChatStream, LlmError> {
        let name = provider.name();
        let first_byte_timeouts = AtomicU32::new(0);
        let classify = |e: &LlmError| {
            let seen = if is_first_byte_timeout(e) {
                first_byte_timeouts.fetch_add(1, Ordering::Relaxed) + 1
            } else {
                first_byte_timeouts.load(Ordering::Relaxed)
            };
            failure(e, seen)
        };
        self.policy
            .outbound()
            .run(&name, Replay::Safe, classify, || {
                first_event(provider, request, clock.attempt())
            })
            .await
    }
}

/// Starts a stream and waits (until `clock`'s first-byte deadline) for its first event.
/// Returns the stream with that event put back in front and `clock`'s gap and cap on the
/// rest.
async fn first_event(
    provider: &dyn ChatProvider,
    request: &ChatRequest,
    mut clock: CallClock,
) -> Result<ChatStream, LlmError> {
    let start = async {
        let mut stream = provider.stream(request).await?;
        match stream.next().await {
            Some(Ok(event)) => Ok((event, stream)),
            Some(Err(e)) => Err(e),
            None => Err(LlmError::Protocol(
                "the stream ended without any event".into(),
            )),
        }
    };
    let (first, rest) = clock.within(start).await??;
    clock.seen();
    let head = futures::stream::once(async move { Ok::<StreamEvent, LlmError>(first) });
    Ok(Box::pin(head.chain(bounded(rest, clock))))
}

/// Ends `stream` with `Err(Timeout)` when no item arrives by `clock`'s next deadline (a gap
/// longer than its idle bound, or its cap); stops after any error.
fn bounded(
    stream: ChatStream,
    clock: CallClock,
) -> Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send>> {
    Box::pin(futures::stream::unfold(
        (stream, false),
        move |(mut stream, stopped)| async move {
            if stopped {
                return None;
            }
            match clock.within(stream.next()).await {
                Ok(Some(Ok(event))) => Some((Ok(event), (stream, false))),
                Ok(Some(Err(e))) => Some((Err(e), (stream, true))),
                Ok(None) => None,
                Err(timeout) => Some((Err(timeout), (stream, true))),
            }
        },
    ))
}

#[async_trait]
impl ChatProvider for Resilient {
    fn name(&self) -> String {
        match &self.fallback {
            Some(f) => format!("{} (fallback {})", self.primary.name(), f.name()),
            None => self.primary.name(),
        }
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        // The cap covers the primary's tries and the fallback's.
        let clock = CallClock::start(self.policy.timeouts);
        let error = match self
            .with_retries(self.primary.as_ref(), request, clock)
            .await
        {
            Ok(stream) => return Ok(stream),
            Err(e) => e,
        };
        match &self.fallback {
            Some(fallback) if error.is_transient() => {
                tracing::warn!(
                    provider = %self.primary.name(),
                    fallback = %fallback.name(),
                    error = %error,
                    "model provider failed; trying the fallback"
                );
                self.with_retries(fallback.as_ref(), request, clock).await
            }
            _ => Err(error),
        }
    }
}

/// The configured provider (with timeout, retries and fallback), or `None` when
/// `llm.provider` is `none`. A fallback equal to the primary is ignored.
pub fn build_provider(config: &Config) -> Option<Arc<dyn ChatProvider>> {
    let llm = &config.llm;
    let timeouts = StreamTimeouts::from_config(llm);
    if llm.request_timeout_secs.is_some() {
        tracing::warn!(
            "llm.request_timeout_secs is deprecated: it sets llm.overall_timeout_secs; \
             see llm.first_byte_timeout_secs and llm.idle_timeout_secs for slow servers"
        );
    }
    let make = |kind: ProviderKind| -> Option<Arc<dyn ChatProvider>> {
        match kind {
            ProviderKind::None => None,
            ProviderKind::Openai => Some(Arc::new(OpenAiProvider::new(
                llm.openai.base_url.clone(),
                llm.openai.model.clone(),
                config.secrets.openai_api_key.clone(),
                Some(llm.temperature),
                timeouts,
            ))),
            ProviderKind::Gemini => Some(Arc::new(GeminiProvider::new(
                llm.gemini.base_url.clone(),
                llm.gemini.model.clone(),
                config.secrets.gemini_api_key.clone(),
                Some(llm.temperature),
                timeouts,
            ))),
        }
    };
    let mut provider = Resilient::new(make(llm.provider)?, RetryPolicy::from_config(llm));
    if let Some(fallback) = llm
        .fallback_kind()
        .filter(|k| *k != llm.provider)
        .and_then(make)
    {
        provider = provider.with_fallback(fallback);
    }
    Some(Arc::new(provider))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_transient_errors_are_retried_and_long_waits_reported() {
        let p = RetryPolicy {
            timeouts: Duration::from_secs(1).into(),
            max_retries: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
        }
        .outbound();
        let verdict = |e: &LlmError| p.verdict(0, Replay::Safe, &failure(e, 1));
        let timeouts = StreamTimeouts::uniform(Duration::from_secs(1));
        for e in [
            LlmError::Overloaded("x".into()),
            timeouts.error(TimeoutStage::FirstByte),
            timeouts.error(TimeoutStage::Connect),
            LlmError::Transport("reset".into()),
            LlmError::RateLimited { retry_after: None },
        ] {
            assert!(
                matches!(verdict(&e), http_policy::Verdict::RetryAfter(_)),
                "{e:?}"
            );
        }
        // A second first-byte timeout of the same call, and the call's cap, are final.
        let late = timeouts.error(TimeoutStage::FirstByte);
        assert_eq!(
            p.verdict(0, Replay::Safe, &failure(&late, 2)),
            http_policy::Verdict::Stop
        );
        assert_eq!(
            verdict(&timeouts.error(TimeoutStage::Overall)),
            http_policy::Verdict::Stop
        );
        assert_eq!(
            verdict(&LlmError::RateLimited {
                retry_after: Some(Duration::from_millis(300))
            }),
            http_policy::Verdict::RetryAfter(Duration::from_millis(300))
        );
        assert_eq!(
            verdict(&LlmError::RateLimited {
                retry_after: Some(Duration::from_secs(90))
            }),
            http_policy::Verdict::Stop
        );
    }

    #[test]
    fn build_provider_follows_config() {
        let env = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        let c = Config::load(None, &env(&[])).unwrap_or_else(|e| panic!("{e}"));
        assert!(build_provider(&c).is_none());
        let c = Config::load(
            None,
            &env(&[
                ("SPARKY_LLM__PROVIDER", "openai"),
                ("SPARKY_LLM__FALLBACK", "gemini"),
                ("OPENAI_API_KEY", "k"),
                ("GEMINI_API_KEY", "g"),
            ]),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let p = build_provider(&c).unwrap_or_else(|| panic!("no provider"));
        assert_eq!(
            p.name(),
            "openai:gpt-4o-mini (fallback gemini:gemini-2.5-flash)"
        );
    }
}
