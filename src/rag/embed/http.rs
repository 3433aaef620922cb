//! HTTP plumbing shared by the remote embedders: client set-up, sending a JSON request and
//! mapping error answers (OpenAI and google.rpc.Status bodies) to [`EmbedError`].

use std::sync::OnceLock;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::EmbedError;
use crate::http_policy::{Failure, Replay, RetryPolicy};
use crate::retry_after;

/// Longest provider message kept in an error.
const MAX_MESSAGE: usize = 500;

/// Builds a client with the given connect timeout and, when set, a read timeout (longest
/// silence while reading a body).
///
/// Besides the built-in web PKI roots it trusts the PEM bundle named by `SSL_CERT_FILE`
/// (OpenSSL's convention), so that the bot works behind TLS-inspecting proxies whose CA the
/// administrator installed there. A bundle that cannot be used is ignored.
pub(super) fn client(
    connect_timeout: Duration,
    read_timeout: Option<Duration>,
) -> Result<reqwest::Client, EmbedError> {
    let builder = |extra_roots: &[reqwest::Certificate]| {
        let mut b = reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            .user_agent(concat!("sparky/", env!("CARGO_PKG_VERSION")));
        if let Some(t) = read_timeout {
            b = b.read_timeout(t);
        }
        for cert in extra_roots {
            b = b.add_root_certificate(cert.clone());
        }
        b.build()
    };
    builder(extra_roots())
        .or_else(|_| builder(&[]))
        .map_err(|e| EmbedError::Transport {
            url: String::new(),
            message: format!("cannot build HTTP client: {}", error_chain(&e)),
        })
}

/// Certificates of the `SSL_CERT_FILE` bundle, read once per process.
fn extra_roots() -> &'static [reqwest::Certificate] {
    static ROOTS: OnceLock<Vec<reqwest::Certificate>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        std::env::var_os("SSL_CERT_FILE")
            .and_then(|path| std::fs::read(path).ok())
            .and_then(|pem| reqwest::Certificate::from_pem_bundle(&pem).ok())
            .unwrap_or_default()
    })
}

/// Embedding and download requests have no side effects: retried on transient failures, but a
/// provider asking to wait longer than 2 s is reported to the caller rather than waited on.
pub(super) const POLICY: RetryPolicy = RetryPolicy {
    max_retries: 3,
    base_delay: Duration::from_millis(300),
    max_delay: Duration::from_secs(2),
};

/// How an embedding request failed, for the retry policy.
pub(super) fn failure(e: &EmbedError) -> Failure {
    match e {
        EmbedError::RateLimited { retry_after, .. } => Failure::Status {
            status: 429,
            wait: *retry_after,
        },
        EmbedError::Http { status, .. } => Failure::Status {
            status: *status,
            wait: None,
        },
        EmbedError::Transport { .. } => Failure::Unknown,
        _ => Failure::Permanent,
    }
}

/// Sends `request` (to `url`, for messages) under [`POLICY`], maps an error status to a typed
/// error and parses a successful body as `T`.
pub(super) async fn send_json<T: DeserializeOwned>(
    request: reqwest::RequestBuilder,
    url: &str,
) -> Result<T, EmbedError> {
    POLICY
        .run(url, Replay::Safe, failure, || {
            let attempt = request.try_clone();
            async move {
                match attempt {
                    Some(r) => send_json_once(r, url).await,
                    None => Err(EmbedError::MalformedResponse(format!(
                        "{url}: the request body cannot be resent"
                    ))),
                }
            }
        })
        .await
}

async fn send_json_once<T: DeserializeOwned>(
    request: reqwest::RequestBuilder,
    url: &str,
) -> Result<T, EmbedError> {
    let response = request.send().await.map_err(|e| transport(url, &e))?;
    let status = response.status();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = response.bytes().await.map_err(|e| transport(url, &e))?;
    if !status.is_success() {
        return Err(from_status(
            status.as_u16(),
            retry_after.as_deref(),
            &String::from_utf8_lossy(&body),
        ));
    }
    serde_json::from_slice(&body).map_err(|e| {
        EmbedError::MalformedResponse(format!(
            "{url}: {e}; body starts with {:?}",
            truncate(&String::from_utf8_lossy(&body[..body.len().min(200)]))
        ))
    })
}

/// Maps a reqwest failure to [`EmbedError::Transport`].
pub(super) fn transport(url: &str, err: &reqwest::Error) -> EmbedError {
    let kind = if err.is_timeout() {
        "timed out: "
    } else if err.is_connect() {
        "connect: "
    } else {
        ""
    };
    EmbedError::Transport {
        url: url.to_string(),
        message: format!("{kind}{}", error_chain(err)),
    }
}

/// The error and its sources, joined with ": ".
pub(super) fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

/// Maps an HTTP error status, its `Retry-After` header and its body to a typed error.
pub(super) fn from_status(status: u16, retry_after_header: Option<&str>, body: &str) -> EmbedError {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    // Gemini sometimes wraps the status in a one-element array.
    let parsed = match parsed {
        Some(Value::Array(mut items)) if items.len() == 1 => Some(items.remove(0)),
        other => other,
    };
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let message = error
        .and_then(|e| e.get("message").or(Some(e)))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| {
            if body.trim().is_empty() {
                format!("HTTP {status}")
            } else {
                body.trim().to_string()
            }
        });
    let message = truncate(&message);
    let code = error
        .and_then(|e| e.get("code"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let reasons: Vec<&str> = error
        .and_then(|e| e.get("details"))
        .and_then(Value::as_array)
        .map(|d| {
            d.iter()
                .filter_map(|d| d.get("reason").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    match status {
        // OpenAI reports an exhausted balance as 429 insufficient_quota: waiting will not help.
        429 if code == "insufficient_quota" => EmbedError::Auth(message),
        429 => EmbedError::RateLimited {
            retry_after: retry_after_header
                .and_then(retry_after::parse_retry_after)
                .or_else(|| error.and_then(gemini_retry_delay)),
            message,
        },
        401 | 403 => EmbedError::Auth(message),
        // Gemini answers a bad API key with 400 INVALID_ARGUMENT + ErrorInfo API_KEY_INVALID.
        400 if reasons
            .iter()
            .any(|r| *r == "API_KEY_INVALID" || *r == "API_KEY_SERVICE_BLOCKED") =>
        {
            EmbedError::Auth(message)
        }
        400 | 404 | 413 | 422 => EmbedError::BadRequest(message),
        _ => EmbedError::Http { status, message },
    }
}

/// `RetryInfo.retryDelay` ("17s", "0.5s") of a google.rpc.Status error.
fn gemini_retry_delay(error: &Value) -> Option<Duration> {
    error
        .get("details")?
        .as_array()?
        .iter()
        .filter(|d| {
            d.get("@type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with("google.rpc.RetryInfo"))
        })
        .find_map(|d| d.get("retryDelay").and_then(Value::as_str))
        .and_then(|t| retry_after::parse_secs(t.trim().strip_suffix('s')?))
}

/// Cuts a message to [`MAX_MESSAGE`] characters.
pub(super) fn truncate(text: &str) -> String {
    if text.chars().count() <= MAX_MESSAGE {
        text.to_string()
    } else {
        let mut t: String = text.chars().take(MAX_MESSAGE).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_recorded_gemini_errors() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/llm/gemini");
        let body = std::fs::read_to_string(format!("{dir}/error-400.api-key-invalid.json"))
            .expect("recorded Gemini error fixture");
        assert!(
            matches!(from_status(400, None, &body), EmbedError::Auth(m) if m.contains("API key"))
        );
        if let Ok(body) = std::fs::read_to_string(format!("{dir}/error-429.quota-exceeded.json")) {
            match from_status(429, None, &body) {
                EmbedError::RateLimited {
                    retry_after,
                    message,
                } => {
                    assert_eq!(retry_after, None);
                    assert!(message.contains("Quota exceeded"));
                }
                other => panic!("{other:?}"),
            }
        }
        if let Ok(body) = std::fs::read_to_string(format!("{dir}/error-404.model-not-found.json")) {
            assert!(matches!(
                from_status(404, None, &body),
                EmbedError::BadRequest(_)
            ));
        }
    }

    #[test]
    fn maps_openai_and_retry_info() {
        let body = r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
        assert_eq!(
            from_status(429, Some("2"), body),
            EmbedError::RateLimited {
                retry_after: Some(Duration::from_secs(2)),
                message: "Rate limit reached".into()
            }
        );
        let body = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        assert!(matches!(from_status(429, None, body), EmbedError::Auth(_)));
        let body = r#"{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"17s"}]}}"#;
        assert!(matches!(
            from_status(429, None, body),
            EmbedError::RateLimited { retry_after: Some(d), .. } if d == Duration::from_secs(17)
        ));
        assert!(matches!(from_status(401, None, "{}"), EmbedError::Auth(_)));
        assert_eq!(
            from_status(503, None, "overloaded"),
            EmbedError::Http {
                status: 503,
                message: "overloaded".into()
            }
        );
    }
}
