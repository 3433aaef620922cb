//! Timeouts, retries and fallback around any [`ChatProvider`].
//!
//! A request may be retried only until its stream has delivered a first event: once text has
//! reached the caller a retry would duplicate it, so later failures are passed on as they are.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::{Stream, StreamExt};

use super::gemini::GeminiProvider;
use super::openai::OpenAiProvider;
use super::{ChatProvider, ChatRequest, ChatStream, LlmError, StreamEvent};
use crate::config::{Config, LlmConfig, ProviderKind};

/// How [`Resilient`] waits and retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Longest wait for the first event of a stream, and for each later event.
    pub timeout: Duration,
    /// Retries after the first attempt, for transient errors only.
    pub max_retries: u32,
    /// First backoff delay; doubled on each retry, with jitter.
    pub base_delay: Duration,
    /// Upper bound of any single wait, including a provider's `retry_after`.
    pub max_delay: Duration,
}

impl RetryPolicy {
    /// Default cap on one backoff wait.
    pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(30);

    /// The policy of the `[llm]` configuration section.
    pub fn from_config(llm: &LlmConfig) -> Self {
        Self {
            timeout: Duration::from_secs(llm.request_timeout_secs.max(1)),
            max_retries: llm.max_retries,
            base_delay: Duration::from_millis(llm.retry_base_delay_ms),
            max_delay: Self::DEFAULT_MAX_DELAY,
        }
    }

    /// The wait before retry number `retry` (0 for the first retry) after `error`: the
    /// provider's `retry_after` when it gave one, else exponential backoff with jitter
    /// (between half and all of `base_delay * 2^retry`); never more than `max_delay`.
    pub fn delay(&self, retry: u32, error: &LlmError) -> Duration {
        if let LlmError::RateLimited {
            retry_after: Some(after),
        } = error
        {
            return (*after).min(self.max_delay);
        }
        let exp = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(retry.min(20)))
            .min(self.max_delay);
        let jitter: f64 = rand::random_range(0.5..=1.0);
        exp.mul_f64(jitter)
    }
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

    async fn with_retries(
        &self,
        provider: &dyn ChatProvider,
        request: &ChatRequest,
    ) -> Result<ChatStream, LlmError> {
        let mut retry = 0;
        loop {
            match first_event(provider, request, self.policy.timeout).await {
                Ok(stream) => return Ok(stream),
                Err(e) if e.is_transient() && retry < self.policy.max_retries => {
                    let delay = self.policy.delay(retry, &e);
                    tracing::warn!(
                        provider = %provider.name(),
                        error = %e,
                        retry = retry + 1,
                        delay_ms = delay.as_millis() as u64,
                        "model request failed; retrying"
                    );
                    tokio::time::sleep(delay).await;
                    retry += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Starts a stream and waits (within `timeout` overall) for its first event. Returns the
/// stream with that event put back in front and an idle timeout on the rest.
async fn first_event(
    provider: &dyn ChatProvider,
    request: &ChatRequest,
    timeout: Duration,
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
    let (first, rest) = tokio::time::timeout(timeout, start)
        .await
        .map_err(|_| LlmError::Timeout)??;
    let head = futures::stream::once(async move { Ok::<StreamEvent, LlmError>(first) });
    Ok(Box::pin(head.chain(with_idle_timeout(rest, timeout))))
}

/// Ends `stream` with `Err(Timeout)` when no item arrives for `idle`; stops after any error.
pub fn with_idle_timeout(
    stream: ChatStream,
    idle: Duration,
) -> Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send>> {
    Box::pin(futures::stream::unfold(
        (stream, false),
        move |(mut stream, stopped)| async move {
            if stopped {
                return None;
            }
            match tokio::time::timeout(idle, stream.next()).await {
                Ok(Some(Ok(event))) => Some((Ok(event), (stream, false))),
                Ok(Some(Err(e))) => Some((Err(e), (stream, true))),
                Ok(None) => None,
                Err(_) => Some((Err(LlmError::Timeout), (stream, true))),
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
        let error = match self.with_retries(self.primary.as_ref(), request).await {
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
                self.with_retries(fallback.as_ref(), request).await
            }
            _ => Err(error),
        }
    }
}

/// The configured provider (with timeout, retries and fallback), or `None` when
/// `llm.provider` is `none`. A fallback equal to the primary is ignored.
pub fn build_provider(config: &Config) -> Option<Arc<dyn ChatProvider>> {
    let llm = &config.llm;
    let timeout = Duration::from_secs(llm.request_timeout_secs.max(1));
    let make = |kind: ProviderKind| -> Option<Arc<dyn ChatProvider>> {
        match kind {
            ProviderKind::None => None,
            ProviderKind::Openai => Some(Arc::new(OpenAiProvider::new(
                llm.openai.base_url.clone(),
                llm.openai.model.clone(),
                config.secrets.openai_api_key.clone(),
                Some(llm.temperature),
                timeout,
            ))),
            ProviderKind::Gemini => Some(Arc::new(GeminiProvider::new(
                llm.gemini.base_url.clone(),
                llm.gemini.model.clone(),
                config.secrets.gemini_api_key.clone(),
                Some(llm.temperature),
                timeout,
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
    fn delays_grow_and_respect_caps() {
        let p = RetryPolicy {
            timeout: Duration::from_secs(1),
            max_retries: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
        };
        let e = LlmError::Overloaded("x".into());
        for retry in 0..6 {
            let d = p.delay(retry, &e);
            let full = Duration::from_millis(100 * 2u64.pow(retry)).min(p.max_delay);
            assert!(d >= full / 2 && d <= full, "{retry}: {d:?}");
        }
        let rl = LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(90)),
        };
        assert_eq!(p.delay(0, &rl), Duration::from_secs(1));
        let rl = LlmError::RateLimited {
            retry_after: Some(Duration::from_millis(300)),
        };
        assert_eq!(p.delay(3, &rl), Duration::from_millis(300));
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
