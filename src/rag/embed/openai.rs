//! OpenAI embeddings: `POST {base}/embeddings` (also served by OpenAI-compatible servers).

use crate::config::Secret;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{http, normalize, EmbedError, EmbedKind, Embedder};

/// OpenAI's API root.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The default model.
pub const DEFAULT_MODEL: &str = "text-embedding-3-small";
/// Vector length of [`DEFAULT_MODEL`].
pub const DEFAULT_DIMENSIONS: usize = 1536;
/// Inputs per request (the API accepts up to 2048 and 300k tokens in all).
pub const DEFAULT_MAX_BATCH: usize = 128;

/// Embeds with OpenAI's `/embeddings` endpoint. Queries and documents are embedded alike.
#[derive(Clone, Debug)]
pub struct OpenAiEmbedder {
    client: reqwest::Client,
    base_url: String,
    api_key: Secret,
    model: String,
    dimensions: usize,
    /// Sent as `dimensions` (shortened vectors, text-embedding-3 models only).
    requested_dimensions: Option<usize>,
    model_name: String,
    max_batch: usize,
    timeout: Duration,
}

impl OpenAiEmbedder {
    /// `text-embedding-3-small` (1536 dimensions) at [`DEFAULT_BASE_URL`].
    pub fn new(api_key: impl Into<String>) -> Result<Self, EmbedError> {
        Ok(Self {
            client: http::client(Duration::from_secs(10), None)?,
            base_url: DEFAULT_BASE_URL.to_string(),
            api_key: Secret::new(api_key),
            model: DEFAULT_MODEL.to_string(),
            dimensions: DEFAULT_DIMENSIONS,
            requested_dimensions: None,
            model_name: DEFAULT_MODEL.to_string(),
            max_batch: DEFAULT_MAX_BATCH,
            timeout: Duration::from_secs(60),
        })
    }

    /// Uses another API root (e.g. an OpenAI-compatible server), without the trailing
    /// `/embeddings`.
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into().trim_end_matches('/').to_string();
        self
    }

    /// Uses another model whose vectors have `dimensions` entries.
    pub fn with_model(mut self, model: impl Into<String>, dimensions: usize) -> Self {
        self.model = model.into();
        self.model_name = self.model.clone();
        self.dimensions = dimensions;
        self.requested_dimensions = None;
        self
    }

    /// Asks for shortened vectors of `dimensions` entries (text-embedding-3 models); the
    /// model name becomes `<model>@<dimensions>`.
    pub fn with_dimensions(mut self, dimensions: usize) -> Self {
        self.dimensions = dimensions;
        self.requested_dimensions = Some(dimensions);
        self.model_name = format!("{}@{dimensions}", self.model);
        self
    }

    /// Sets the most inputs sent in one request (at least 1).
    pub fn with_max_batch(mut self, max_batch: usize) -> Self {
        self.max_batch = max_batch.max(1);
        self
    }

    /// Sets the deadline of one request (default 60 s).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    async fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let url = format!("{}/embeddings", self.base_url);
        let body = EmbeddingsRequest {
            model: &self.model,
            input: texts,
            encoding_format: "float",
            dimensions: self.requested_dimensions,
        };
        let request = self
            .client
            .post(&url)
            .bearer_auth(self.api_key.expose())
            .timeout(self.timeout)
            .json(&body);
        let response: EmbeddingsResponse = http::send_json(request, &url).await?;
        if response.data.len() != texts.len() {
            return Err(EmbedError::MalformedResponse(format!(
                "{url}: {} embeddings for {} inputs",
                response.data.len(),
                texts.len()
            )));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for item in response.data {
            let slot = out.get_mut(item.index).ok_or_else(|| {
                EmbedError::MalformedResponse(format!("{url}: index {} out of range", item.index))
            })?;
            if item.embedding.len() != self.dimensions {
                return Err(EmbedError::MalformedResponse(format!(
                    "{url}: vector of {} dimensions, expected {}",
                    item.embedding.len(),
                    self.dimensions
                )));
            }
            let mut v = item.embedding;
            normalize(&mut v);
            *slot = Some(v);
        }
        out.into_iter()
            .enumerate()
            .map(|(i, v)| {
                v.ok_or_else(|| {
                    EmbedError::MalformedResponse(format!("{url}: no embedding for input {i}"))
                })
            })
            .collect()
    }
}

#[derive(Serialize)]
struct EmbeddingsRequest<'a> {
    model: &'a str,
    input: &'a [String],
    encoding_format: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    dimensions: Option<usize>,
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    index: usize,
    embedding: Vec<f32>,
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn model_name(&self) -> &str {
        &self.model_name
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    async fn embed(&self, texts: &[String], _kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.max_batch) {
            out.extend(self.embed_batch(chunk).await?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::http::{HeaderMap, StatusCode};
    use axum::response::{IntoResponse, Response};
    use axum::routing::post;
    use axum::{Json, Router};
    use serde_json::{json, Value};

    use super::super::dot;
    use super::*;

    #[derive(Default)]
    struct Seen {
        bodies: Vec<Value>,
        auth: Vec<String>,
    }

    /// A fake `/v1/embeddings`: 429 with Retry-After for the input "busy", 401 for a wrong
    /// key, otherwise one vector per input (deliberately not normalised, returned in reverse
    /// order, as the API is allowed to).
    async fn serve(seen: Arc<Mutex<Seen>>) -> String {
        let app = Router::new().route(
            "/v1/embeddings",
            post(move |headers: HeaderMap, Json(body): Json<Value>| {
                let seen = seen.clone();
                async move {
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string();
                    if let Ok(mut s) = seen.lock() {
                        s.bodies.push(body.clone());
                        s.auth.push(auth.clone());
                    }
                    if auth != "Bearer sk-test" {
                        return (
                            StatusCode::UNAUTHORIZED,
                            Json(json!({"error": {"message": "Incorrect API key provided: sk-wrong.", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}})),
                        )
                            .into_response();
                    }
                    let inputs = body["input"].as_array().cloned().unwrap_or_default();
                    if inputs.iter().any(|i| i == "busy") {
                        let mut r: Response = (
                            StatusCode::TOO_MANY_REQUESTS,
                            Json(json!({"error": {"message": "Rate limit reached for text-embedding-3-small", "type": "requests", "param": null, "code": "rate_limit_exceeded"}})),
                        )
                            .into_response();
                        r.headers_mut()
                            .insert("retry-after", axum::http::HeaderValue::from_static("20"));
                        return r;
                    }
                    let dims = body["dimensions"].as_u64().unwrap_or(1536) as usize;
                    let data: Vec<Value> = inputs
                        .iter()
                        .enumerate()
                        .rev()
                        .map(|(i, text)| {
                            let len = text.as_str().unwrap_or_default().len() as f32;
                            let mut v = vec![0.0f32; dims];
                            v[0] = 2.0 + len;
                            v[1] = 3.0 * (i as f32 + 1.0);
                            json!({"object": "embedding", "index": i, "embedding": v})
                        })
                        .collect();
                    Json(json!({
                        "object": "list",
                        "data": data,
                        "model": "text-embedding-3-small",
                        "usage": {"prompt_tokens": 8, "total_tokens": 8}
                    }))
                    .into_response()
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        format!("http://{addr}/v1")
    }

    fn strings(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|t| t.to_string()).collect()
    }

    #[tokio::test]
    async fn embeds_in_order_normalised_and_batched() {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let base = serve(seen.clone()).await;
        let e = OpenAiEmbedder::new("sk-test")
            .expect("client")
            .with_base_url(format!("{base}/"))
            .with_max_batch(2);
        assert_eq!(e.model_name(), "text-embedding-3-small");
        assert_eq!(e.dimensions(), 1536);
        let texts = strings(&["a", "bb", "ccc"]);
        let v = e.embed(&texts, EmbedKind::Document).await.expect("embed");
        assert_eq!(v.len(), 3);
        for (i, x) in v.iter().enumerate() {
            assert_eq!(x.len(), 1536);
            assert!((dot(x, x) - 1.0).abs() < 1e-5);
            // Order restored from `index`: the first entry encodes the text's length.
            let expect = {
                let mut w = vec![2.0 + texts[i].len() as f32, 3.0 * ((i % 2) as f32 + 1.0)];
                normalize(&mut w);
                w
            };
            assert!((x[0] - expect[0]).abs() < 1e-5 && (x[1] - expect[1]).abs() < 1e-5);
        }
        assert!(e
            .embed(&[], EmbedKind::Query)
            .await
            .expect("empty")
            .is_empty());
        let seen = seen.lock().expect("lock");
        assert_eq!(seen.bodies.len(), 2, "two requests of at most 2 inputs");
        assert_eq!(
            seen.bodies[0],
            json!({"model": "text-embedding-3-small", "input": ["a", "bb"], "encoding_format": "float"})
        );
        assert_eq!(seen.auth[0], "Bearer sk-test");
    }

    #[tokio::test]
    async fn shortened_dimensions_are_requested_and_named() {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let base = serve(seen.clone()).await;
        let e = OpenAiEmbedder::new("sk-test")
            .expect("client")
            .with_base_url(base)
            .with_dimensions(256);
        assert_eq!(e.model_name(), "text-embedding-3-small@256");
        let v = e
            .embed(&strings(&["x"]), EmbedKind::Query)
            .await
            .expect("embed");
        assert_eq!(v[0].len(), 256);
        assert_eq!(seen.lock().expect("lock").bodies[0]["dimensions"], 256);
    }

    #[tokio::test]
    async fn errors_are_typed() {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let base = serve(seen).await;
        let e = OpenAiEmbedder::new("sk-test")
            .expect("client")
            .with_base_url(&base);
        match e.embed(&strings(&["busy"]), EmbedKind::Query).await {
            Err(EmbedError::RateLimited {
                retry_after,
                message,
            }) => {
                assert_eq!(retry_after, Some(Duration::from_secs(20)));
                assert!(message.contains("Rate limit"));
            }
            other => panic!("{other:?}"),
        }
        let wrong = OpenAiEmbedder::new("sk-wrong")
            .expect("client")
            .with_base_url(&base);
        assert!(matches!(
            wrong.embed(&strings(&["x"]), EmbedKind::Query).await,
            Err(EmbedError::Auth(m)) if m.contains("Incorrect API key")
        ));
        // Wrong vector size for the configured model.
        let small = OpenAiEmbedder::new("sk-test")
            .expect("client")
            .with_base_url(&base)
            .with_model("other-model", 3);
        assert!(matches!(
            small.embed(&strings(&["x"]), EmbedKind::Query).await,
            Err(EmbedError::MalformedResponse(_))
        ));
        // Nothing listening.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        let dead = OpenAiEmbedder::new("sk-test")
            .expect("client")
            .with_base_url(format!("http://{addr}/v1"));
        let err = dead.embed(&strings(&["x"]), EmbedKind::Query).await;
        assert!(matches!(err, Err(EmbedError::Transport { .. })), "{err:?}");
    }

    #[test]
    fn debug_hides_the_key() {
        let e = OpenAiEmbedder::new("sk-secret").expect("client");
        assert!(!format!("{e:?}").contains("sk-secret"));
    }
}
