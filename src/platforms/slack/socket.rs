//! Socket Mode: slack-morphism keeps the WebSocket connections (reconnecting on
//! `disconnect`), and each envelope is acknowledged as soon as its handler was started.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use slack_morphism::prelude::*;

use super::thread::SlackHyperClient;
use super::{events, http, Shared, SlackError};
use crate::config::{Config, SlackTransport};
use crate::core::Agent;
use crate::platforms::link::GatewayLink;

/// Runs the Slack adapter over Socket Mode until `shutdown` resolves, then lets handlers in
/// flight finish (up to `server.shutdown_grace_secs`).
pub async fn run(
    agent: Arc<Agent>,
    config: &Config,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), SlackError> {
    run_linked(agent, config, shutdown, GatewayLink::unobserved()).await
}

/// [`run`], reporting to `link` when a Socket Mode connection is greeted (`hello`) and when
/// one breaks.
pub async fn run_linked(
    agent: Arc<Agent>,
    config: &Config,
    shutdown: impl Future<Output = ()> + Send,
    link: GatewayLink,
) -> Result<(), SlackError> {
    if config.slack.transport != SlackTransport::Socket {
        return Err(SlackError::Config(
            "slack.transport is \"http\": mount slack::events_router in the HTTP server instead"
                .into(),
        ));
    }
    let app_token = config
        .secrets
        .slack_app_token
        .as_ref()
        .ok_or_else(|| SlackError::Config("SLACK_APP_TOKEN is not set".into()))?;
    let shared = Shared::new(agent, config)?;
    // Fail fast on a wrong bot token; a network hiccup only delays learning the bot's id.
    match shared.api.bot_user_id().await {
        Ok(id) => {
            let _ = shared.bot_user.set(Some(id));
        }
        Err(slack_morphism::errors::SlackClientError::ApiError(e)) => {
            return Err(SlackError::Api(format!(
                "auth.test refused the bot token: {}",
                e.code
            )));
        }
        Err(e) => tracing::warn!(error = %e, "auth.test failed; will retry when needed"),
    }

    let callbacks = SlackSocketModeListenerCallbacks::new()
        .with_push_events(on_push)
        .with_command_events(on_command)
        .with_interaction_events(on_interaction)
        .with_hello_events(on_hello);
    let env = Arc::new(
        SlackClientEventsListenerEnvironment::new(shared.api.client())
            .with_error_handler(on_error)
            .with_user_state(shared.clone())
            .with_user_state(link.clone()),
    );
    let listener =
        SlackClientSocketModeListener::new(&SlackClientSocketModeConfig::new(), env, callbacks);
    let token = SlackApiToken::new(SlackApiTokenValue(app_token.expose().to_string()));
    listener
        .listen_for(&token)
        .await
        .map_err(|e| SlackError::Api(format!("could not open Socket Mode: {e}")))?;
    listener.start().await;
    tracing::info!("Slack Socket Mode started");
    shutdown.await;
    tracing::info!("Slack Socket Mode stopping");
    listener.shutdown().await;
    link.all_down("stopped");
    let grace = Duration::from_secs(config.server.shutdown_grace_secs);
    if !shared.inflight.wait(grace).await {
        tracing::warn!(
            left = shared.inflight.count(),
            "Slack handlers still running at shutdown"
        );
    }
    Ok(())
}

async fn shared_of(states: &SlackClientEventsUserState) -> Option<Arc<Shared>> {
    states.read().await.get_user_state::<Arc<Shared>>().cloned()
}

async fn on_push(
    event: SlackPushEventCallback,
    _client: Arc<SlackHyperClient>,
    states: SlackClientEventsUserState,
) -> UserCallbackResult<()> {
    if let Some(shared) = shared_of(&states).await {
        shared.spawn_push(event);
    }
    Ok(())
}

async fn on_command(
    event: SlackCommandEvent,
    _client: Arc<SlackHyperClient>,
    states: SlackClientEventsUserState,
) -> UserCallbackResult<SlackCommandEventResponse> {
    let reply = match shared_of(&states).await {
        Some(shared) => http::ack_command(&shared, &event),
        None => serde_json::json!({"text": "Sparky is starting; try again in a moment."}),
    };
    let text = reply
        .get("text")
        .and_then(|t| t.as_str())
        .unwrap_or("")
        .to_string();
    Ok(
        SlackCommandEventResponse::new(SlackMessageContent::new().with_text(text))
            .with_response_type(SlackMessageResponseType::Ephemeral),
    )
}

async fn on_interaction(
    event: SlackInteractionEvent,
    _client: Arc<SlackHyperClient>,
    states: SlackClientEventsUserState,
) -> UserCallbackResult<()> {
    if let Some(shared) = shared_of(&states).await {
        // Socket Mode acknowledges before this runs, so an Edit form's field errors cannot be
        // shown on its fields: the edit reports them in the card's thread.
        let submitted = serde_json::to_value(&event)
            .ok()
            .and_then(|v| super::forms::submission(&v, &shared.gate));
        let project = serde_json::to_value(&event)
            .ok()
            .and_then(|v| super::project_form::submission(&v, &shared.gate));
        if let Some(sub) = project {
            // As for the Edit form: errors are told privately, not on the fields.
            shared.spawn_job(events::Job::ProjectForm(sub));
        } else if let Some(sub) = submitted {
            shared.spawn_job(sub.job);
        } else if let Some(job) = events::job_from_interaction(&event, &shared.gate) {
            shared.spawn_job(job);
        }
    }
    Ok(())
}

// Generic over the event: slack-morphism does not export the hello event's type by name.
async fn on_hello<Hello>(
    _event: Hello,
    _client: Arc<SlackHyperClient>,
    states: SlackClientEventsUserState,
) {
    if let Some(link) = states.read().await.get_user_state::<GatewayLink>() {
        link.one_more_up();
    }
}

/// How slack-morphism reports a WebSocket that broke (it then reconnects on its own).
const BROKEN_SOCKET: &str = "Slack WSS error";

fn on_error(
    err: Box<dyn std::error::Error + Send + Sync>,
    _client: Arc<SlackHyperClient>,
    states: SlackClientEventsUserState,
) -> HttpStatusCode {
    tracing::warn!(error = %err, "Slack Socket Mode error");
    if err.to_string().contains(BROKEN_SOCKET) {
        if let Ok(states) = states.try_read() {
            if let Some(link) = states.get_user_state::<GatewayLink>() {
                link.one_down("a Socket Mode connection broke; reconnecting");
            }
        }
    }
    // OK acknowledges the envelope: a payload we cannot handle is not worth a redelivery.
    HttpStatusCode::OK
}
