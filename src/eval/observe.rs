//! A provider wrapper that records what the model was asked and what it answered, so the
//! grader sees every tool call with its result, the calls per conversation and the tokens.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;

use crate::llm::{
    ChatMessage, ChatProvider, ChatRequest, ChatStream, LlmError, StreamEvent, ToolCall, ToolChoice,
};

/// One tool call the model made, with its result when a later request carried it.
#[derive(Debug, Clone)]
pub struct ObservedCall {
    /// The call as the model sent it.
    pub call: ToolCall,
    /// Whether its result was an error (`None`: no later request carried a result).
    pub failed: Option<bool>,
    /// The result's error text, when it failed.
    pub error: Option<String>,
    /// Whether the request required a call (a re-ask after refused arguments), which a server
    /// may decode under the tool's schema.
    pub constrained: bool,
}

/// What the model did since the last [`Observer::take`].
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// Model requests made.
    pub model_calls: u32,
    /// Prompt tokens the provider reported (0 when it reports none).
    pub prompt_tokens: u64,
    /// Tool calls in the order the model made them.
    pub calls: Vec<ObservedCall>,
}

#[derive(Default)]
struct Log {
    observed: Observed,
    /// Results seen in requests, by call id.
    results: HashMap<String, (bool, Option<String>)>,
}

/// Shared record of one provider's traffic.
#[derive(Clone, Default)]
pub struct Observer(Arc<Mutex<Log>>);

impl Observer {
    fn log(&self) -> std::sync::MutexGuard<'_, Log> {
        match self.0.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Everything recorded so far, each call matched with its result; the record starts again.
    pub fn take(&self) -> Observed {
        let mut log = self.log();
        let mut observed = std::mem::take(&mut log.observed);
        for c in &mut observed.calls {
            if let Some((failed, error)) = log.results.get(&c.call.id) {
                c.failed = Some(*failed);
                c.error = error.clone();
            }
        }
        log.results.clear();
        observed
    }
}

/// Wraps a provider, recording into an [`Observer`].
pub struct Observing {
    inner: Arc<dyn ChatProvider>,
    observer: Observer,
}

impl Observing {
    /// Records `inner`'s traffic into `observer`.
    pub fn new(inner: Arc<dyn ChatProvider>, observer: Observer) -> Self {
        Self { inner, observer }
    }
}

#[async_trait]
impl ChatProvider for Observing {
    fn name(&self) -> String {
        self.inner.name()
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        {
            let mut log = self.observer.log();
            log.observed.model_calls += 1;
            for m in &request.messages {
                if let ChatMessage::Tool { results } = m {
                    for r in results {
                        let error = r.is_error.then(|| {
                            r.content
                                .get("error")
                                .and_then(|e| e.as_str())
                                .map_or_else(|| r.content.to_string(), str::to_string)
                        });
                        log.results.insert(r.call_id.clone(), (r.is_error, error));
                    }
                }
            }
        }
        let stream = self.inner.stream(request).await?;
        let observer = self.observer.clone();
        let constrained = request.tool_choice == ToolChoice::Required;
        Ok(Box::pin(stream.inspect(move |event| {
            let mut log = observer.log();
            match event {
                Ok(StreamEvent::ToolCall(call)) => log.observed.calls.push(ObservedCall {
                    call: call.clone(),
                    failed: None,
                    error: None,
                    constrained,
                }),
                Ok(StreamEvent::Usage(u)) => log.observed.prompt_tokens += u.input_tokens,
                _ => {}
            }
        })))
    }
}
