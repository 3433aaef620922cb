//! Slack's assistant surface (Agents & AI Apps): the split-view thread in the app's
//! direct-message channel. Its Web API calls (`assistant.threads.setSuggestedPrompts`,
//! `setStatus`, `setTitle`) and the handling of `assistant_thread_started` and
//! `assistant_thread_context_changed`; what to offer, which project the thread sees and its
//! title are the core's ([`crate::core::assistant`]).

use serde::Serialize;
use slack_morphism::prelude::*;

use super::mrkdwn::truncate;
use super::thread::SlackApi;
use super::Shared;
use crate::core::session::SessionKey;
use crate::core::starters::Starters;
use crate::http_policy::Replay;
use crate::platforms::surface::SurfaceError;

/// Slack's cap on a prompt's title and message lengths is not published; these keep the
/// prompts to what its UI shows whole.
const MAX_PROMPT_TITLE: usize = 75;
const MAX_PROMPT_MESSAGE: usize = 500;

/// `assistant.threads.setStatus` with `loading_messages`, which slack-morphism's request type
/// does not have (its response type and HTTP path are used as for every other call).
#[derive(Debug, Serialize)]
struct SetStatusRequest<'a> {
    channel_id: &'a str,
    thread_ts: &'a str,
    status: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    loading_messages: &'a [String],
}

impl SlackApi {
    /// `assistant.threads.setSuggestedPrompts`: the questions offered in the thread.
    pub async fn set_suggested_prompts(
        &self,
        channel: &str,
        thread_ts: &str,
        starters: &Starters,
    ) -> Result<(), SurfaceError> {
        let prompts = starters
            .prompts
            .iter()
            .map(|p| {
                SlackAssistantPrompt::new(
                    truncate(&p.title, MAX_PROMPT_TITLE),
                    truncate(&p.message, MAX_PROMPT_MESSAGE),
                )
            })
            .collect();
        let req = SlackApiAssistantThreadsSetSuggestedPromptsRequest::new(
            channel.into(),
            SlackTs(thread_ts.to_string()),
            prompts,
        )
        .with_title(starters.heading.clone());
        let (client, token, req) = (self.client(), self.token(), &req);
        let client = &client;
        self.run(
            "assistant.threads.setSuggestedPrompts",
            Replay::Safe,
            move || async move {
                client
                    .open_session(token)
                    .assistant_threads_set_suggested_prompts(req)
                    .await
            },
        )
        .await
        .map(|_| ())
    }

    /// `assistant.threads.setStatus`: "Sparky `status`" under the thread while it works, with
    /// `loading` rotated; an empty `status` clears it. Tried once (a status is cosmetic, and
    /// Slack clears it by itself when the answer is posted).
    pub async fn set_status(
        &self,
        channel: &str,
        thread_ts: &str,
        status: &str,
        loading: &[String],
    ) -> Result<(), SurfaceError> {
        let req = SetStatusRequest {
            channel_id: channel,
            thread_ts,
            status,
            loading_messages: loading,
        };
        let (client, token, req) = (self.client(), self.token(), &req);
        let client = &client;
        self.run_once("assistant.threads.setStatus", move || async move {
            client
                .open_session(token)
                .http_session_api
                .http_post::<_, SlackApiAssistantThreadsSetStatusResponse>(
                    "assistant.threads.setStatus",
                    req,
                    None,
                )
                .await
        })
        .await
        .map(|_| ())
    }

    /// `assistant.threads.setTitle`.
    pub async fn set_title(
        &self,
        channel: &str,
        thread_ts: &str,
        title: &str,
    ) -> Result<(), SurfaceError> {
        let req = SlackApiAssistantThreadSetTitleRequest::new(
            channel.into(),
            SlackTs(thread_ts.to_string()),
            title.to_string(),
        );
        let (client, token, req) = (self.client(), self.token(), &req);
        let client = &client;
        self.run(
            "assistant.threads.setTitle",
            Replay::Safe,
            move || async move {
                client
                    .open_session(token)
                    .assistant_threads_set_title(req)
                    .await
            },
        )
        .await
        .map(|_| ())
    }
}

impl Shared {
    /// A person opened an assistant thread: the core remembers it and its context, and its
    /// questions are offered.
    pub(super) async fn assistant_started(
        &self,
        key: SessionKey,
        user: String,
        context: Option<String>,
    ) {
        match self
            .agent
            .assistant_thread_started(&key, &user, context.as_deref())
            .await
        {
            Ok(starters) => self.offer(&key, &starters).await,
            Err(e) => tracing::warn!(error = %e, "could not open an assistant thread"),
        }
    }

    /// The person moved to another channel with the thread open.
    pub(super) async fn assistant_context(
        &self,
        key: SessionKey,
        user: String,
        context: Option<String>,
    ) {
        match self
            .agent
            .assistant_context_changed(&key, &user, context.as_deref())
            .await
        {
            Ok(Some(starters)) => self.offer(&key, &starters).await,
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "could not record an assistant thread's context"),
        }
    }

    async fn offer(&self, key: &SessionKey, starters: &Starters) {
        if let Err(e) = self
            .api
            .set_suggested_prompts(&key.channel, &key.thread, starters)
            .await
        {
            tracing::warn!(error = %e, "could not set the suggested prompts");
        }
    }

    /// Gives the assistant thread its title after its first question.
    pub(super) async fn title_after(&self, key: &SessionKey, question: &str) {
        match self.agent.assistant_title(key, question).await {
            Ok(Some(title)) => {
                if let Err(e) = self.api.set_title(&key.channel, &key.thread, &title).await {
                    tracing::warn!(error = %e, "could not set the assistant thread's title");
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "could not claim the assistant thread's title"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_status_carries_loading_messages_only_when_given() {
        let loading = vec!["Checking Table 310.16…".to_string()];
        let body = serde_json::to_value(SetStatusRequest {
            channel_id: "D1",
            thread_ts: "1.2",
            status: "is checking Table 310.16…",
            loading_messages: &loading,
        })
        .expect("serialises");
        assert_eq!(body["loading_messages"][0], "Checking Table 310.16…");
        let clear = serde_json::to_value(SetStatusRequest {
            channel_id: "D1",
            thread_ts: "1.2",
            status: "",
            loading_messages: &[],
        })
        .expect("serialises");
        assert_eq!(
            clear,
            serde_json::json!({"channel_id": "D1", "thread_ts": "1.2", "status": ""})
        );
    }
}
