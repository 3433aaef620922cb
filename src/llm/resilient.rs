//! Timeouts, retries and fallback around any [`ChatProvider`].
//!
//! Retries follow the shared outbound policy ([`crate::http_policy`]). A request may be
//! retried only until its stream has delivered a first event: once text has reached the
//! caller a retry would duplicate it, so later failures are passed on as they are.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::{Stream, StreamExt};

use super::gemini::GeminiProvider;
use super::openai::OpenAiProvider;
use super::{ChatProvider, ChatRequest, ChatStream, LlmError, StreamEvent};
use crate::config::{Config, LlmConfig, ProviderKind};
use crate::http_policy::{self, Failure, Replay};

/// How [`Resilient`] waits and retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Longest wait for the first event of a stream, and for each later event.
    pub timeout: Duration,
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
            timeout: Duration::from_secs(llm.request_timeout_secs.max(1)),
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

/// How a model request failed, for the outbound policy. Only transient errors are retried.
fn failure(e: &LlmError) -> Failure {
    match e {
        LlmError::RateLimited { retry_after } => Failure::Status {
            status: 429,
            wait: *retry_after,
        },
        LlmError::Overloaded(_) => Failure::Status {
            status: 503,
            wait: None,
        },
        LlmError::Timeout | LlmError::Transport(_) => Failure::Unknown,
        _ => Failure::Permanent,
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

    /// Starts a stream under the outbound policy. A completion changes nothing on the
    /// server, so it is safe to send again after a timeout.
    async fn with_retries(
        &self,
        provider: &dyn ChatProvider,
        request: &ChatRequest,
    ) -> Result<ChatStream, LlmError> {
        let name = provider.name();
        self.policy
            .outbound()
            .run(&name, Replay::Safe, failure, || {
                first_event(provider, request, self.policy.timeout)
            })
            .await
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
    fn only_transient_errors_are_retried_and_long_waits_reported() {
        let p = RetryPolicy {
            timeout: Duration::from_secs(1),
            max_retries: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
        }
        .outbound();
        let verdict = |e: &LlmError| p.verdict(0, Replay::Safe, &failure(e));
        for e in [
            LlmError::Overloaded("x".into()),
            LlmError::Timeout,
            LlmError::Transport("reset".into()),
            LlmError::RateLimited { retry_after: None },
        ] {
            assert!(
                matches!(verdict(&e), http_policy::Verdict::RetryAfter(_)),
                "{e:?}"
            );
        }
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
