//! The HTTP interactions endpoint: Discord POSTs commands and clicks here instead of sending
//! them over the gateway. Requests are Ed25519-verified with the application's public key
//! (serenity's `Verifier`), stale timestamps are refused, and a request seen before within
//! the timestamp window is refused through the store's ledger (shared by all replicas), so a
//! captured request cannot be replayed.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::Value;
use serenity::all::Interaction;
use serenity::interactions_endpoint::Verifier;

use super::adapter::Discord;
use crate::core::Agent;
use crate::platforms::replay;

/// Ledger scope of Discord's signed requests.
const REPLAY_SCOPE: &str = "discord:signed-request";

/// Path of the endpoint in the router.
pub const PATH: &str = "/discord/interactions";

/// What the endpoint needs.
pub struct Endpoint {
    /// Adapter state.
    pub discord: Arc<Discord>,
    /// Signature checker.
    pub verifier: Verifier,
    /// Largest accepted difference between the signed timestamp and now.
    pub max_age: Duration,
    /// The agent, whose ledger remembers verified requests to refuse replays.
    pub agent: Arc<Agent>,
}

/// Parses a 64-digit hex public key.
pub fn parse_public_key(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(text.trim(), &mut out).ok()?;
    Some(out)
}

/// The router with the endpoint at [`PATH`].
pub fn router(endpoint: Arc<Endpoint>) -> Router {
    Router::new().route(PATH, post(handle)).with_state(endpoint)
}

fn unauthorized(why: &'static str) -> Response {
    (StatusCode::UNAUTHORIZED, why).into_response()
}

async fn handle(State(ep): State<Arc<Endpoint>>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(signature), Some(timestamp)) = (
        header("x-signature-ed25519"),
        header("x-signature-timestamp"),
    ) else {
        return unauthorized("missing signature headers");
    };
    if ep.verifier.verify(signature, timestamp, &body).is_err() {
        return unauthorized("invalid request signature");
    }
    // The timestamp is signed, so a replay cannot refresh it.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    match timestamp.trim().parse::<i64>() {
        Ok(ts) if now.abs_diff(ts) <= ep.max_age.as_secs() => {}
        _ => return unauthorized("stale or invalid request timestamp"),
    }
    if let Err(refusal) = replay::refuse_replays(
        ep.agent.ledger(),
        REPLAY_SCOPE,
        timestamp,
        &body,
        ep.max_age,
    )
    .await
    {
        return refusal.into_response();
    }
    let raw: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(_) => return (StatusCode::BAD_REQUEST, "body is not JSON").into_response(),
    };
    // PING needs no parsing beyond its type (Discord checks the endpoint with it).
    if raw.get("type").and_then(Value::as_u64) == Some(1) {
        return Json(serde_json::json!({"type": 1})).into_response();
    }
    let interaction = match read_interaction(&raw) {
        Ok(i) => i,
        Err(e) => {
            tracing::warn!(error = %e, "unreadable interaction");
            let why = format!("unreadable interaction at {}", e.path);
            return (StatusCode::BAD_REQUEST, why).into_response();
        }
    };
    let (ack, work) = ep.discord.triage(interaction).await;
    if let Some(work) = work {
        ep.discord.spawn_work(work);
    }
    Json(ack).into_response()
}

/// An interaction as Discord sends it; a field of the wrong shape is named by its path. Each
/// kind is read as its own type: the library's `Interaction` reads through an untyped map,
/// which loses the path.
fn read_interaction(raw: &Value) -> Result<Interaction, crate::json_decode::JsonError> {
    use crate::json_decode::from_value;
    match raw.get("type").and_then(Value::as_u64) {
        Some(2) => from_value(raw).map(Interaction::Command),
        Some(3) => from_value(raw).map(Interaction::Component),
        Some(4) => from_value(raw).map(Interaction::Autocomplete),
        Some(5) => from_value(raw).map(Interaction::Modal),
        _ => from_value(raw),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_interaction_is_refused_naming_the_field() {
        let raw = serde_json::json!({
            "id": "1", "application_id": "2", "type": 2, "token": "t", "version": 1,
            "data": {"id": "3", "name": 5, "type": 1}
        });
        let err = read_interaction(&raw).err().map(|e| e.path);
        assert_eq!(err.as_deref(), Some("data.name"));
    }

    #[test]
    fn public_keys_parse() {
        let k = "67c6bd767ca099e79efac9fcce4d2022a63bf7dea780e7f3d813f694c1597089";
        assert_eq!(parse_public_key(k).map(|b| b[0]), Some(0x67));
        assert!(parse_public_key("abc").is_none());
        assert!(parse_public_key(&"zz".repeat(32)).is_none());
    }
}
