//! The HTTP Events API endpoint: signature and timestamp checked over the raw body, replays
//! refused (through the store's ledger, so all replicas agree), `url_verification` answered,
//! everything else acknowledged at once and handled in a task afterwards.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::json;
use slack_morphism::prelude::*;

use super::signature::{verify, MAX_AGE_SECS};
use super::{events, forms, project_form, InFlight, Shared, SlackError};
use crate::config::{Config, Secret};
use crate::core::Agent;
use crate::platforms::replay;

/// Ledger scope of Slack's signed requests.
const REPLAY_SCOPE: &str = "slack:signed-request";

struct HttpState {
    shared: Arc<Shared>,
    secret: Secret,
}

/// The Slack HTTP endpoint for `serve` to merge: `POST /slack/events`, `/slack/commands` and
/// `/slack/interactivity` (each accepts any of the three kinds, so one URL may be used for all).
pub fn events_router(agent: Arc<Agent>, config: &Config) -> Result<Router, SlackError> {
    events_service(agent, config).map(|(router, _)| router)
}

/// [`events_router`] plus the counter of handlers still running, to wait for at shutdown.
pub fn events_service(
    agent: Arc<Agent>,
    config: &Config,
) -> Result<(Router, InFlight), SlackError> {
    let secret = config
        .secrets
        .slack_signing_secret
        .clone()
        .ok_or_else(|| SlackError::Config("SLACK_SIGNING_SECRET is not set".into()))?;
    let shared = Shared::new(agent, config)?;
    let inflight = shared.inflight.clone();
    let state = Arc::new(HttpState { shared, secret });
    let router = Router::new()
        .route("/slack/events", post(handle))
        .route("/slack/commands", post(handle))
        .route("/slack/interactivity", post(handle))
        .with_state(state);
    Ok((router, inflight))
}

fn refuse(status: StatusCode, why: &str) -> Response {
    (status, why.to_string()).into_response()
}

async fn handle(State(st): State<Arc<HttpState>>, headers: HeaderMap, body: Bytes) -> Response {
    let now = chrono::Utc::now().timestamp();
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let timestamp = text("x-slack-request-timestamp");
    if let Err(e) = verify(
        st.secret.expose(),
        timestamp,
        text("x-slack-signature"),
        &body,
        now,
    ) {
        tracing::warn!(error = %e, "refused a Slack request");
        return refuse(StatusCode::UNAUTHORIZED, &e.to_string());
    }
    // Only what the signature covers decides: Slack's retries are signed anew with a fresh
    // timestamp (their event ids are de-duplicated by the core), so an unsigned header such
    // as X-Slack-Retry-Num cannot excuse a second copy of the same signed request.
    let max_age = std::time::Duration::from_secs(MAX_AGE_SECS.unsigned_abs());
    if let Err(refusal) = replay::refuse_replays(
        st.shared.agent.ledger(),
        REPLAY_SCOPE,
        timestamp.unwrap_or_default(),
        &body,
        max_age,
    )
    .await
    {
        return refusal.into_response();
    }
    let is_json =
        text(header::CONTENT_TYPE.as_str()).is_some_and(|c| c.starts_with("application/json"));
    if is_json {
        return push_event(&st, &body);
    }
    let form: Vec<(String, String)> = match serde_urlencoded::from_bytes(&body) {
        Ok(f) => f,
        Err(_) => return refuse(StatusCode::BAD_REQUEST, "body is neither JSON nor a form"),
    };
    if let Some((_, payload)) = form.iter().find(|(k, _)| k == "payload") {
        return interaction(&st, payload).await;
    }
    if form.iter().any(|(k, _)| k == "command") {
        return command(&st, &body);
    }
    if form.iter().any(|(k, _)| k == "ssl_check") {
        // Slack checking the certificate of the slash command URL.
        return StatusCode::OK.into_response();
    }
    refuse(StatusCode::BAD_REQUEST, "unknown Slack payload")
}

fn push_event(st: &HttpState, body: &[u8]) -> Response {
    match read_push_event(body) {
        Ok(SlackPushEvent::UrlVerification(v)) => {
            Json(json!({"challenge": v.challenge})).into_response()
        }
        Ok(SlackPushEvent::EventCallback(cb)) => {
            st.shared.spawn_push(cb);
            StatusCode::OK.into_response()
        }
        Ok(SlackPushEvent::AppRateLimited(r)) => {
            tracing::warn!(team = %r.team_id, "Slack is rate limiting events for this app");
            StatusCode::OK.into_response()
        }
        Err(e) => {
            if serde_json::from_slice::<serde_json::Value>(body).is_ok() {
                // Well-formed but of a shape we do not handle: acknowledged so Slack does
                // not retry it.
                tracing::debug!(error = %e, "ignored a Slack event");
                StatusCode::OK.into_response()
            } else {
                refuse(StatusCode::BAD_REQUEST, "body is not JSON")
            }
        }
    }
}

/// A push event; a field of the wrong shape is named by its path. Each type is read as its
/// own struct: the library's tagged `SlackPushEvent` reads through a buffer, which loses the
/// path.
fn read_push_event(body: &[u8]) -> Result<SlackPushEvent, crate::json_decode::JsonError> {
    use crate::json_decode::{from_slice, from_value};
    let raw: serde_json::Value = from_slice(body)?;
    match raw.get("type").and_then(serde_json::Value::as_str) {
        Some("event_callback") => from_value(&raw).map(SlackPushEvent::EventCallback),
        Some("url_verification") => from_value(&raw).map(SlackPushEvent::UrlVerification),
        Some("app_rate_limited") => from_value(&raw).map(SlackPushEvent::AppRateLimited),
        _ => from_value(&raw),
    }
}

async fn interaction(st: &HttpState, payload: &str) -> Response {
    // A submitted project form: its field errors are shown on the fields; a valid one closes
    // the form and is applied after.
    let value = serde_json::from_str::<serde_json::Value>(payload).ok();
    if let Some(sub) = value
        .as_ref()
        .and_then(|v| project_form::submission(v, &st.shared.gate))
    {
        let workspace = crate::domain::workspace::Workspace::new(events::PLATFORM, &sub.team);
        let mut errors: Vec<_> = sub.channel_error(&st.shared.gate).into_iter().collect();
        match st
            .shared
            .agent
            .check_project_form(&workspace, sub.kind(), &sub.values)
            .await
        {
            Ok(Err(more)) => errors.extend(more),
            Ok(Ok(())) => {}
            // The submission itself reports what went wrong.
            Err(e) => tracing::warn!(error = %e, "could not check a project form"),
        }
        if !errors.is_empty() {
            return Json(forms::errors_response(&errors)).into_response();
        }
        st.shared.spawn_job(events::Job::ProjectForm(sub));
        return StatusCode::OK.into_response();
    }
    // A submitted Edit form is answered with its field errors, which Slack shows on the
    // fields; a valid one closes the form and is applied in the card's thread.
    if let Some(sub) = value
        .as_ref()
        .and_then(|v| forms::submission(v, &st.shared.gate))
    {
        match st
            .shared
            .agent
            .check_edit(&sub.action_id, &sub.values)
            .await
        {
            Ok(Err(errors)) => return Json(forms::errors_response(&errors)).into_response(),
            Ok(Ok(())) => {}
            // The edit itself reports what went wrong, in the thread.
            Err(e) => tracing::warn!(error = %e, "could not check an edit"),
        }
        st.shared.spawn_job(sub.job);
        return StatusCode::OK.into_response();
    }
    match crate::json_decode::from_str::<SlackInteractionEvent>(payload) {
        Ok(ev) => {
            if let Some(job) = events::job_from_interaction(&ev, &st.shared.gate) {
                st.shared.spawn_job(job);
            }
            StatusCode::OK.into_response()
        }
        Err(e) => {
            tracing::debug!(error = %e, "ignored a Slack interaction");
            StatusCode::OK.into_response()
        }
    }
}

fn command(st: &HttpState, body: &[u8]) -> Response {
    let cmd: SlackCommandEvent = match serde_urlencoded::from_bytes(body) {
        Ok(c) => c,
        Err(e) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                &format!("not a slash command: {e}"),
            )
        }
    };
    Json(ack_command(&st.shared, &cmd)).into_response()
}

/// Starts a slash command and returns the immediate (ephemeral) answer.
pub(super) fn ack_command(shared: &Arc<Shared>, cmd: &SlackCommandEvent) -> serde_json::Value {
    // A signed request for another command of the same app is not run as this one.
    if cmd.command.0 != shared.cfg.slash_command {
        return json!({
            "response_type": "ephemeral",
            "text": format!("{} is not a command of Sparky; use {}.", cmd.command.0, shared.cfg.slash_command)
        });
    }
    match events::job_from_command(cmd, &shared.gate) {
        Some(job) => {
            shared.spawn_job(job);
            let text = match events::parse_slash(&cmd.text.clone().unwrap_or_default()) {
                events::SlashAction::Run(crate::core::commands::Command::ProjectForm(_)) => {
                    "Opening the project form."
                }
                events::SlashAction::Run(c) if c.is_private() => {
                    "On it; only you will see the answer."
                }
                _ => "On it; the answer will be in a thread.",
            };
            json!({"response_type": "ephemeral", "text": text})
        }
        None => {
            json!({"response_type": "ephemeral", "text": "Sparky is not enabled in this channel."})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_push_event_is_named_by_its_path() {
        let body = json!({
            "type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": "Ev1",
            "event_time": 1_700_000_000,
            "event": {"type": "app_mention", "user": "U1", "channel": "C1", "ts": "1.2", "text": "hi"},
            "authorizations": [{"team_id": "T1", "user_id": ["U1"], "is_bot": true}]
        });
        let err = read_push_event(body.to_string().as_bytes()).err();
        assert_eq!(
            err.as_ref().map(|e| e.path.as_str()),
            Some("authorizations[0].user_id"),
            "{err:?}"
        );
        let not_json = read_push_event(b"{").err().map(|e| e.path);
        assert_eq!(not_json.as_deref(), Some("."));
    }
}
