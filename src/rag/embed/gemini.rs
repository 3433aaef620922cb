//! Gemini embeddings: `POST {base}/models/{model}:batchEmbedContents`.
//!
//! Queries are sent with `taskType: RETRIEVAL_QUERY`, documents with `RETRIEVAL_DOCUMENT`.
//! With an `outputDimensionality` below the model's full size the API returns a truncated
//! vector that is no longer unit length (the recorded 768-dimension answer has norm ≈0.57),
//! so every vector is re-normalised here.

use crate::config::Secret;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{http, normalize, EmbedError, EmbedKind, Embedder};

/// The Gemini Developer API root.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";
/// The default model.
pub const DEFAULT_MODEL: &str = "gemini-embedding-001";
/// Full vector length of [`DEFAULT_MODEL`].
pub const DEFAULT_DIMENSIONS: usize = 3072;
/// Requests per `batchEmbedContents` call (the API's limit is 100).
pub const DEFAULT_MAX_BATCH: usize = 100;

/// Embeds with Gemini's `batchEmbedContents`.
#[derive(Clone, Debug)]
pub struct GeminiEmbedder {
    client: reqwest::Client,
    base_url: String,
    api_key: Secret,
    model: String,
    dimensions: usize,
    output_dimensionality: Option<usize>,
    model_name: String,
    max_batch: usize,
    timeout: Duration,
}

impl GeminiEmbedder {
    /// `gemini-embedding-001` at full size (3072) at [`DEFAULT_BASE_URL`].
    pub fn new(api_key: impl Into<String>) -> Result<Self, EmbedError> {
        Ok(Self {
            client: http::client(Duration::from_secs(10), None)?,
            base_url: DEFAULT_BASE_URL.to_string(),
            api_key: Secret::new(api_key),
            model: DEFAULT_MODEL.to_string(),
            dimensions: DEFAULT_DIMENSIONS,
            output_dimensionality: None,
            model_name: DEFAULT_MODEL.to_string(),
            max_batch: DEFAULT_MAX_BATCH,
            timeout: Duration::from_secs(60),
        })
    }

    /// Uses another API root (without `/models/...`).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into().trim_end_matches('/').to_string();
        self
    }

    /// Uses another model (name without the `models/` prefix) of `dimensions` full size.
    pub fn with_model(mut self, model: impl Into<String>, dimensions: usize) -> Self {
        let model = model.into();
        self.model = model
            .strip_prefix("models/")
            .map(str::to_string)
            .unwrap_or(model);
        self.model_name = self.model.clone();
        self.dimensions = dimensions;
        self.output_dimensionality = None;
        self
    }

    /// Asks for vectors of `dimensions` entries (`outputDimensionality`, e.g. 768); the
    /// model name becomes `<model>@<dimensions>`, e.g. `gemini-embedding-001@768`.
    pub fn with_output_dimensionality(mut self, dimensions: usize) -> Self {
        self.dimensions = dimensions;
        self.output_dimensionality = Some(dimensions);
        self.model_name = format!("{}@{dimensions}", self.model);
        self
    }

    /// Sets the most texts sent in one request (1 to 100).
    pub fn with_max_batch(mut self, max_batch: usize) -> Self {
        self.max_batch = max_batch.clamp(1, DEFAULT_MAX_BATCH);
        self
    }

    /// Sets the deadline of one request (default 60 s).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn request_body<'a>(&'a self, texts: &'a [String], kind: EmbedKind) -> BatchRequest<'a> {
        let model = format!("models/{}", self.model);
        let task_type = match kind {
            EmbedKind::Query => "RETRIEVAL_QUERY",
            EmbedKind::Document => "RETRIEVAL_DOCUMENT",
        };
        BatchRequest {
            requests: texts
                .iter()
                .map(|text| EmbedRequest {
                    model: model.clone(),
                    content: Content {
                        parts: vec![Part { text }],
                    },
                    task_type,
                    output_dimensionality: self.output_dimensionality,
                })
                .collect(),
        }
    }

    async fn embed_batch(
        &self,
        texts: &[String],
        kind: EmbedKind,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let url = format!("{}/models/{}:batchEmbedContents", self.base_url, self.model);
        let request = self
            .client
            .post(&url)
            .header("x-goog-api-key", self.api_key.expose())
            .timeout(self.timeout)
            .json(&self.request_body(texts, kind));
        let response: BatchResponse = http::send_json(request, &url).await?;
        vectors_from_response(response, texts.len(), self.dimensions)
            .map_err(|e| EmbedError::MalformedResponse(format!("{url}: {e}")))
    }
}

/// Checks a parsed answer against the request and returns the re-normalised vectors.
fn vectors_from_response(
    response: BatchResponse,
    expected_count: usize,
    dimensions: usize,
) -> Result<Vec<Vec<f32>>, String> {
    if response.embeddings.len() != expected_count {
        return Err(format!(
            "{} embeddings for {expected_count} inputs",
            response.embeddings.len()
        ));
    }
    response
        .embeddings
        .into_iter()
        .map(|e| {
            let mut v = e.values;
            if v.len() != dimensions {
                return Err(format!(
                    "vector of {} dimensions, expected {dimensions}",
                    v.len()
                ));
            }
            normalize(&mut v);
            Ok(v)
        })
        .collect()
}

#[derive(Serialize)]
struct BatchRequest<'a> {
    requests: Vec<EmbedRequest<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EmbedRequest<'a> {
    model: String,
    content: Content<'a>,
    task_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_dimensionality: Option<usize>,
}

#[derive(Serialize)]
struct Content<'a> {
    parts: Vec<Part<'a>>,
}

#[derive(Serialize)]
struct Part<'a> {
    text: &'a str,
}

#[derive(Deserialize)]
struct BatchResponse {
    #[serde(default)]
    embeddings: Vec<ContentEmbedding>,
}

#[derive(Deserialize)]
struct ContentEmbedding {
    values: Vec<f32>,
}

#[async_trait]
impl Embedder for GeminiEmbedder {
    fn model_name(&self) -> &str {
        &self.model_name
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    async fn embed(&self, texts: &[String], kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.max_batch) {
            out.extend(self.embed_batch(chunk, kind).await?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::extract::Path as UrlPath;
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::IntoResponse;
    use axum::routing::post;
    use axum::{Json, Router};
    use serde_json::{json, Value};

    use super::super::dot;
    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/llm/gemini");

    fn strings(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|t| t.to_string()).collect()
    }

    /// The recorded 768-dimension request and response.
    fn fixtures() -> (Value, String) {
        let read = |name: &str| {
            let path = format!("{FIXTURES}/batch-embed-contents.gemini-embedding-001-768.{name}");
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
        };
        let request = serde_json::from_str(&read("request.json")).expect("request fixture json");
        (request, read("response.json"))
    }

    #[test]
    fn parses_recorded_response_and_renormalises() {
        let (_, body) = fixtures();
        let raw: Value = serde_json::from_str(&body).expect("fixture json");
        let raw_values: Vec<f32> = raw["embeddings"][0]["values"]
            .as_array()
            .expect("values")
            .iter()
            .filter_map(Value::as_f64)
            .map(|x| x as f32)
            .collect();
        let raw_norm = dot(&raw_values, &raw_values).sqrt();
        assert!(
            raw_norm < 0.6,
            "recorded truncated vector is not unit length: {raw_norm}"
        );

        let parsed: BatchResponse = serde_json::from_str(&body).expect("parse");
        let v = vectors_from_response(parsed, 1, 768).expect("vectors");
        assert_eq!(v[0].len(), 768);
        assert!((dot(&v[0], &v[0]) - 1.0).abs() < 1e-5);
        // Same direction as the raw values.
        assert!((dot(&v[0], &raw_values) / raw_norm - 1.0).abs() < 1e-5);
        assert!((v[0][0] - raw_values[0] / raw_norm).abs() < 1e-6);
    }

    #[test]
    fn request_matches_recorded_shape() {
        let (recorded, _) = fixtures();
        let e = GeminiEmbedder::new("k")
            .expect("client")
            .with_output_dimensionality(768);
        let texts = strings(&["Some text goes here"]);
        let mut ours =
            serde_json::to_value(e.request_body(&texts, EmbedKind::Document)).expect("serialise");
        // The recording (llm-gemini) sends no task type; everything else must be identical.
        let task = ours["requests"][0]
            .as_object_mut()
            .and_then(|o| o.remove("taskType"));
        assert_eq!(task, Some(json!("RETRIEVAL_DOCUMENT")));
        assert_eq!(ours, recorded);
    }

    #[derive(Default)]
    struct Seen {
        paths: Vec<String>,
        keys: Vec<String>,
        bodies: Vec<Value>,
    }

    /// A fake Gemini API. Returns truncated (non-unit) vectors whose first value encodes the
    /// position in the batch; answers 429 with `Retry-After` and a RetryInfo for "busy", and
    /// 400 API_KEY_INVALID for a wrong key.
    async fn serve(seen: Arc<Mutex<Seen>>) -> String {
        let app = Router::new().route(
            "/v1beta/models/{call}",
            post(
                move |UrlPath(call): UrlPath<String>,
                      headers: HeaderMap,
                      Json(body): Json<Value>| {
                    let seen = seen.clone();
                    async move {
                        let key = headers
                            .get("x-goog-api-key")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_string();
                        if let Ok(mut s) = seen.lock() {
                            s.paths.push(call.clone());
                            s.keys.push(key.clone());
                            s.bodies.push(body.clone());
                        }
                        if key != "gk-test" {
                            let body = std::fs::read_to_string(format!(
                                "{FIXTURES}/error-400.api-key-invalid.json"
                            ))
                            .unwrap_or_else(|_| {
                                r#"{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}"#.to_string()
                            });
                            return (StatusCode::BAD_REQUEST, body).into_response();
                        }
                        let requests = body["requests"].as_array().cloned().unwrap_or_default();
                        if requests
                            .iter()
                            .any(|r| r["content"]["parts"][0]["text"] == "busy")
                        {
                            return (
                                StatusCode::TOO_MANY_REQUESTS,
                                [("retry-after", "3")],
                                Json(json!({"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "31s"}]}})),
                            )
                                .into_response();
                        }
                        let embeddings: Vec<Value> = requests
                            .iter()
                            .enumerate()
                            .map(|(i, r)| {
                                let dims =
                                    r["outputDimensionality"].as_u64().unwrap_or(3072) as usize;
                                let mut v = vec![0.01f32; dims];
                                v[0] = 0.1 * (i as f32 + 1.0);
                                json!({"values": v})
                            })
                            .collect();
                        Json(json!({"embeddings": embeddings})).into_response()
                    }
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        format!("http://{addr}/v1beta")
    }

    #[tokio::test]
    async fn embeds_with_task_type_and_renormalises_truncated_vectors() {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let base = serve(seen.clone()).await;
        let e = GeminiEmbedder::new("gk-test")
            .expect("client")
            .with_base_url(&base)
            .with_output_dimensionality(768)
            .with_max_batch(2);
        assert_eq!(e.model_name(), "gemini-embedding-001@768");
        assert_eq!(e.dimensions(), 768);
        let texts = strings(&["one", "two", "three"]);
        let v = e.embed(&texts, EmbedKind::Query).await.expect("embed");
        assert_eq!(v.len(), 3);
        for x in &v {
            assert_eq!(x.len(), 768);
            assert!((dot(x, x) - 1.0).abs() < 1e-5, "norm² {}", dot(x, x));
        }
        // Order kept: 1st and 3rd are each first in their batch, so identical.
        assert!((dot(&v[0], &v[2]) - 1.0).abs() < 1e-6);
        assert!(dot(&v[0], &v[1]) < 0.999);

        let d = e
            .embed(&strings(&["doc"]), EmbedKind::Document)
            .await
            .expect("doc");
        assert_eq!(d[0].len(), 768);

        let seen = seen.lock().expect("lock");
        assert_eq!(seen.paths[0], "gemini-embedding-001:batchEmbedContents");
        assert_eq!(seen.keys[0], "gk-test");
        assert_eq!(seen.bodies.len(), 3);
        assert_eq!(
            seen.bodies[0]["requests"][1],
            json!({
                "model": "models/gemini-embedding-001",
                "content": {"parts": [{"text": "two"}]},
                "taskType": "RETRIEVAL_QUERY",
                "outputDimensionality": 768
            })
        );
        assert_eq!(
            seen.bodies[2]["requests"][0]["taskType"],
            json!("RETRIEVAL_DOCUMENT")
        );
    }

    #[tokio::test]
    async fn full_size_has_plain_name_and_no_dimensionality() {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let base = serve(seen.clone()).await;
        let e = GeminiEmbedder::new("gk-test")
            .expect("client")
            .with_base_url(&base);
        assert_eq!(e.model_name(), "gemini-embedding-001");
        let v = e
            .embed(&strings(&["x"]), EmbedKind::Query)
            .await
            .expect("embed");
        assert_eq!(v[0].len(), 3072);
        let seen = seen.lock().expect("lock");
        assert!(seen.bodies[0]["requests"][0]
            .get("outputDimensionality")
            .is_none());
    }

    #[tokio::test]
    async fn errors_are_typed() {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let base = serve(seen).await;
        let e = GeminiEmbedder::new("gk-test")
            .expect("client")
            .with_base_url(&base)
            .with_output_dimensionality(768);
        match e.embed(&strings(&["busy"]), EmbedKind::Query).await {
            Err(EmbedError::RateLimited {
                retry_after,
                message,
            }) => {
                // The header wins over the body's RetryInfo.
                assert_eq!(retry_after, Some(Duration::from_secs(3)));
                assert!(message.contains("exhausted"));
            }
            other => panic!("{other:?}"),
        }
        let wrong = GeminiEmbedder::new("bad")
            .expect("client")
            .with_base_url(&base);
        let err = wrong.embed(&strings(&["x"]), EmbedKind::Query).await;
        assert!(matches!(err, Err(EmbedError::Auth(_))), "{err:?}");
        // Vector size other than configured.
        let mismatched = GeminiEmbedder::new("gk-test")
            .expect("client")
            .with_base_url(&base)
            .with_model("models/gemini-embedding-001", 10);
        let err = mismatched.embed(&strings(&["x"]), EmbedKind::Query).await;
        assert!(
            matches!(err, Err(EmbedError::MalformedResponse(ref m)) if m.contains("3072")),
            "{err:?}"
        );
    }
}
