//! Fetching a file a person attached, for Slack (`url_private` with the bot token) and Discord
//! (the attachment's CDN URL), stopping at the size limit instead of reading everything.

use futures::StreamExt;

use super::{InboundFile, IntakeError, Limits};

/// A file the platform announced: name, type, size and where to fetch it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileRef {
    /// File name.
    pub name: String,
    /// Declared MIME type.
    pub mime: String,
    /// Declared size in bytes.
    pub size: usize,
    /// Download URL.
    pub url: String,
}

/// Downloads `file`, with `bearer` as the Authorization token when given. The declared size
/// and the bytes received are both held to `limits.max_bytes`.
pub async fn fetch(
    client: &reqwest::Client,
    file: &FileRef,
    bearer: Option<&str>,
    limits: &Limits,
) -> Result<InboundFile, IntakeError> {
    let too_large = |size| IntakeError::TooLarge {
        name: file.name.clone(),
        size,
        max: limits.max_bytes,
    };
    if file.size > limits.max_bytes {
        return Err(too_large(file.size));
    }
    let failed = |reason: String| IntakeError::Download {
        name: file.name.clone(),
        reason,
    };
    let mut req = client.get(&file.url);
    if let Some(token) = bearer {
        req = req.bearer_auth(token);
    }
    let resp = req.send().await.map_err(|e| failed(e.to_string()))?;
    if !resp.status().is_success() {
        return Err(failed(format!("the server answered {}", resp.status())));
    }
    // Slack answers a missing token or scope with its HTML sign-in page, status 200.
    let html = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/html"));
    if html {
        return Err(failed(
            "the server sent a web page instead of the file (is the files:read scope granted?)"
                .into(),
        ));
    }
    let mut bytes = Vec::new();
    let mut body = resp.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| failed(e.to_string()))?;
        if bytes.len() + chunk.len() > limits.max_bytes {
            return Err(too_large(bytes.len() + chunk.len()));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(InboundFile {
        name: file.name.clone(),
        declared_mime: file.mime.clone(),
        bytes,
    })
}
