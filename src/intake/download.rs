//! Fetching a file a person attached, for Slack (`url_private` with the bot token) and Discord
//! (the attachment's CDN URL): only from the platform's own file hosts ([`super::file_hosts`]),
//! following redirects only within them, and stopping at the size limit instead of reading
//! everything.

use std::time::Duration;

use futures::StreamExt;
use reqwest::Url;

use super::file_hosts::FileHost;
use super::{InboundFile, IntakeError, Limits};

/// Redirects followed, each to one of the platform's file hosts.
const MAX_REDIRECTS: usize = 3;

/// A file the platform announced: name, type, size and where to fetch it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileRef {
    /// File name.
    pub name: String,
    /// Declared MIME type.
    pub mime: String,
    /// Declared size in bytes (0 when the platform's event does not say).
    pub size: usize,
    /// Download URL.
    pub url: String,
}

/// Where and with what a platform's files are fetched.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The origins the platform serves files from.
    pub hosts: &'a [FileHost],
    /// Sent as the bearer token, and only to those origins.
    pub bearer: Option<&'a str>,
}

/// The client downloads go through: it follows no redirect itself ([`fetch`] checks each), and
/// connects to public addresses only ([`super::file_hosts::PublicOnly`]).
pub fn client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(super::file_hosts::public_only())
        .build()
        .unwrap_or_default()
}

/// Downloads `file` from one of `source.hosts`, with its bearer token. The declared size (the
/// platform's, then the response's `Content-Length`) and the bytes received are all held to
/// `limits.max_bytes`. `client` comes from [`client`].
pub async fn fetch(
    client: &reqwest::Client,
    file: &FileRef,
    source: Source<'_>,
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
    let mut url = allowed_url(file, &file.url, source.hosts)?;
    let mut redirects = 0;
    let resp = loop {
        let mut req = client.get(url.clone());
        if let Some(token) = source.bearer {
            req = req.bearer_auth(token);
        }
        let resp = req.send().await.map_err(|e| failed(describe(&e)))?;
        if !resp.status().is_redirection() {
            break resp;
        }
        redirects += 1;
        let location = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| failed("the server redirected without a location".into()))?;
        if redirects > MAX_REDIRECTS {
            return Err(failed("too many redirects".into()));
        }
        let next = url
            .join(location)
            .map_err(|_| failed("the server redirected to something that is not a URL".into()))?;
        url = allowed_url(file, next.as_str(), source.hosts)?;
    };
    if !resp.status().is_success() {
        return Err(failed(format!("the server answered {}", resp.status())));
    }
    if let Some(declared) = resp
        .content_length()
        .filter(|n| *n > limits.max_bytes as u64)
    {
        return Err(too_large(usize::try_from(declared).unwrap_or(usize::MAX)));
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
        let chunk = chunk.map_err(|e| failed(describe(&e)))?;
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

/// `url` when it is on one of `hosts`; otherwise the refusal the person reads.
fn allowed_url(file: &FileRef, url: &str, hosts: &[FileHost]) -> Result<Url, IntakeError> {
    let parsed = Url::parse(url).ok();
    match parsed {
        Some(u) if hosts.iter().any(|h| h.serves(&u)) => Ok(u),
        _ => Err(IntakeError::ForeignHost {
            name: file.name.clone(),
            host: parsed
                .as_ref()
                .and_then(|u| {
                    let host = u.host_str()?;
                    Some(match u.port() {
                        Some(port) => format!("{host}:{port}"),
                        None => host.to_string(),
                    })
                })
                .unwrap_or_else(|| "an address that is not a web link".into()),
            allowed: if hosts.is_empty() {
                "no host: none is configured for this platform".into()
            } else {
                hosts
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        }),
    }
}

/// A download error without its URL (a signed URL is a credential of its own).
fn describe(e: &reqwest::Error) -> String {
    let what = if e.is_timeout() {
        "the download timed out"
    } else if e.is_connect() {
        "could not connect to the file host"
    } else if e.is_body() || e.is_decode() {
        "the download was cut off"
    } else {
        "the download failed"
    };
    // The innermost cause says what happened (a refused address, a reset); the outer ones
    // repeat the URL.
    let mut cause = std::error::Error::source(e);
    let mut deepest = None;
    while let Some(c) = cause {
        deepest = Some(c.to_string());
        cause = c.source();
    }
    match deepest {
        Some(cause) if !cause.contains("://") => format!("{what} ({cause})"),
        _ => what.to_string(),
    }
}
