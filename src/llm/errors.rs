//! Mapping of HTTP failures and error bodies of both wire formats to [`LlmError`].

use std::time::Duration;

use serde_json::Value;

use super::LlmError;

/// Longest error text kept from a provider body.
const MAX_MESSAGE: usize = 500;

/// Which wire format an error body is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorDialect {
    /// `{"error": {"message", "type", "param", "code"}}`.
    OpenAi,
    /// `{"error": {"code", "message", "status", "details": [...]}}` (google.rpc.Status).
    Gemini,
}

/// Maps an HTTP error status, its `Retry-After` header value and its body to a typed error.
pub fn from_http_status(
    dialect: ErrorDialect,
    status: u16,
    retry_after_header: Option<&str>,
    body: &str,
) -> LlmError {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    // Some servers wrap the status in a one-element array (Gemini's JSON-array streaming).
    let parsed = match parsed {
        Some(Value::Array(mut items)) if items.len() == 1 => Some(items.remove(0)),
        other => other,
    };
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let message = error
        .and_then(|e| e.get("message").or_else(|| e.as_str().map(|_| e)))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| {
            if body.trim().is_empty() {
                format!("HTTP {status}")
            } else {
                format!("HTTP {status}: {}", body.trim())
            }
        });
    let message = truncate(&message);
    classify(dialect, status, retry_after_header, error, message)
}

/// Maps an error object delivered inside a stream (`data: {"error": {...}}`).
pub fn from_stream_error(dialect: ErrorDialect, error: &Value) -> LlmError {
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .unwrap_or(0);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(truncate)
        .unwrap_or_else(|| truncate(&error.to_string()));
    let status = if status == 0 {
        // OpenAI mid-stream errors carry a type instead of an HTTP code.
        match error.get("type").and_then(Value::as_str) {
            Some("rate_limit_error") | Some("rate_limit_exceeded") => 429,
            Some("invalid_request_error") => 400,
            _ => 500,
        }
    } else {
        status
    };
    classify(dialect, status, None, Some(error), message)
}

fn classify(
    dialect: ErrorDialect,
    status: u16,
    retry_after_header: Option<&str>,
    error: Option<&Value>,
    message: String,
) -> LlmError {
    let code = error
        .and_then(|e| e.get("code"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let reasons = error.map(gemini_reasons).unwrap_or_default();
    let lower = message.to_ascii_lowercase();
    let context_too_long = code == "context_length_exceeded"
        || code == "string_above_max_length"
        || lower.contains("maximum context length")
        || lower.contains("context length exceeded")
        || lower.contains("context_length_exceeded")
        || (lower.contains("input token count") && lower.contains("exceeds the maximum"))
        || lower.contains("prompt is too long")
        // llama.cpp's llama-server: the prompt is larger than the context it was started with.
        || error.and_then(|e| e.get("type")).and_then(Value::as_str)
            == Some("exceed_context_size_error")
        || lower.contains("exceeds the available context size");
    match status {
        429 => {
            let retry_after = retry_after_header
                .and_then(parse_retry_after_header)
                .or_else(|| error.and_then(gemini_retry_delay));
            // OpenAI reports an exhausted balance as 429 insufficient_quota: waiting will not help.
            if code == "insufficient_quota" {
                return LlmError::Auth(message);
            }
            LlmError::RateLimited { retry_after }
        }
        500 | 502 | 503 | 504 | 529 => LlmError::Overloaded(message),
        401 | 403 => LlmError::Auth(message),
        400 | 404 | 413 | 422 if context_too_long => LlmError::ContextTooLong,
        400 if dialect == ErrorDialect::Gemini
            && reasons
                .iter()
                .any(|r| r == "API_KEY_INVALID" || r == "API_KEY_SERVICE_BLOCKED") =>
        {
            LlmError::Auth(message)
        }
        408 => LlmError::Timeout(super::TimedOut {
            stage: super::TimeoutStage::Server,
            after: Duration::ZERO,
        }),
        400..=499 => LlmError::InvalidRequest(message),
        _ => LlmError::Overloaded(message),
    }
}

/// Parses `Retry-After` as delta-seconds (fractions allowed) or an HTTP date, validated and
/// capped by [`crate::retry_after`].
pub fn parse_retry_after_header(value: &str) -> Option<Duration> {
    crate::retry_after::parse_retry_after(value)
}

/// `ErrorInfo.reason` values of a google.rpc.Status error.
fn gemini_reasons(error: &Value) -> Vec<String> {
    error
        .get("details")
        .and_then(Value::as_array)
        .map(|details| {
            details
                .iter()
                .filter_map(|d| d.get("reason").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
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
        .and_then(parse_proto_duration)
}

/// Parses a protobuf JSON duration such as "17s" or "1.5s".
pub fn parse_proto_duration(text: &str) -> Option<Duration> {
    crate::retry_after::parse_secs(text.trim().strip_suffix('s')?)
}

/// Maps a reqwest failure (sending, or reading the body) to a typed error. The only timeout
/// reqwest is given is the connect timeout, which the caller maps itself (it knows the bound).
pub fn from_reqwest(err: &reqwest::Error) -> LlmError {
    if err.is_connect() {
        LlmError::Transport(format!("connect: {}", error_chain(err)))
    } else if err.is_decode() {
        LlmError::Protocol(error_chain(err))
    } else {
        LlmError::Transport(error_chain(err))
    }
}

/// The error and its sources on one line, without the URL (which may carry a key).
fn error_chain(err: &reqwest::Error) -> String {
    let mut text = err.without_url_ref().to_string();
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    truncate(&text)
}

trait WithoutUrl {
    fn without_url_ref(&self) -> String;
}

impl WithoutUrl for reqwest::Error {
    fn without_url_ref(&self) -> String {
        let text = self.to_string();
        match self.url() {
            Some(url) => text.replace(url.as_str(), "<url>"),
            None => text,
        }
    }
}

fn truncate(text: &str) -> String {
    if text.len() <= MAX_MESSAGE {
        return text.to_string();
    }
    let mut end = MAX_MESSAGE;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = format!(
            "{}/tests/fixtures/llm/gemini/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn gemini_error_fixtures() {
        let e = from_http_status(
            ErrorDialect::Gemini,
            400,
            None,
            &fixture("error-400.api-key-invalid.json"),
        );
        assert!(
            matches!(e, LlmError::Auth(ref m) if m.contains("API key not valid")),
            "{e:?}"
        );
        let e = from_http_status(
            ErrorDialect::Gemini,
            403,
            None,
            &fixture("error-403.service-disabled.json"),
        );
        assert!(
            matches!(e, LlmError::Auth(ref m) if m.contains("has not been used")),
            "{e:?}"
        );
        let e = from_http_status(
            ErrorDialect::Gemini,
            404,
            None,
            &fixture("error-404.model-not-found.json"),
        );
        assert!(
            matches!(e, LlmError::InvalidRequest(ref m) if m.contains("gemini-5.0-flash")),
            "{e:?}"
        );
        let e = from_http_status(
            ErrorDialect::Gemini,
            429,
            None,
            &fixture("error-429.quota-exceeded.json"),
        );
        assert_eq!(e, LlmError::RateLimited { retry_after: None });
    }

    #[test]
    fn gemini_retry_info() {
        let body = r#"{"error":{"code":429,"message":"You exceeded your current quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"17s"}]}}"#;
        let e = from_http_status(ErrorDialect::Gemini, 429, None, body);
        assert_eq!(
            e,
            LlmError::RateLimited {
                retry_after: Some(Duration::from_secs(17))
            }
        );
        assert_eq!(
            parse_proto_duration("0.5s"),
            Some(Duration::from_millis(500))
        );
        assert_eq!(parse_proto_duration("soon"), None);
    }

    #[test]
    fn openai_errors() {
        let e = from_http_status(
            ErrorDialect::OpenAi,
            429,
            Some("7"),
            r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
        );
        assert_eq!(
            e,
            LlmError::RateLimited {
                retry_after: Some(Duration::from_secs(7))
            }
        );
        let e = from_http_status(
            ErrorDialect::OpenAi,
            400,
            None,
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        );
        assert_eq!(e, LlmError::ContextTooLong);
        let e = from_http_status(
            ErrorDialect::OpenAi,
            400,
            None,
            r#"{"error":{"code":400,"message":"request (19724 tokens) exceeds the available context size (16384 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":19724,"n_ctx":16384}}"#,
        );
        assert_eq!(e, LlmError::ContextTooLong, "llama-server's own error");
        let e = from_http_status(
            ErrorDialect::OpenAi,
            400,
            None,
            r#"{"error":{"message":"Invalid 'messages[2]'","type":"invalid_request_error","code":null}}"#,
        );
        assert!(matches!(e, LlmError::InvalidRequest(ref m) if m.contains("messages[2]")));
        let e = from_http_status(
            ErrorDialect::OpenAi,
            401,
            None,
            r#"{"error":{"message":"Incorrect API key provided"}}"#,
        );
        assert!(matches!(e, LlmError::Auth(_)));
        let e = from_http_status(ErrorDialect::OpenAi, 503, None, "<html>oops</html>");
        assert!(matches!(e, LlmError::Overloaded(ref m) if m.contains("503")));
        let e = from_http_status(ErrorDialect::OpenAi, 502, None, "");
        assert!(matches!(e, LlmError::Overloaded(_)));
        let e = from_http_status(ErrorDialect::OpenAi, 400, None, "not json");
        assert!(matches!(e, LlmError::InvalidRequest(_)));
    }

    #[test]
    fn retry_after_header_forms() {
        assert_eq!(parse_retry_after_header("3"), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after_header("1.5"),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after_header("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after_header("later"), None);
    }
}
