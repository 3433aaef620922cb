//! Kept-alive connections to a plain-HTTP model server, seen from the server: calls in a row
//! share one connection, a connection the server dropped while idle is replaced without the
//! call failing, and a body left unread never hands its connection to the next call. With a
//! proxy in the environment, calls go through it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::bot::{Bot, Db};
use crate::support::fake_llm::{Dialect, FakeLlm, Reply};
use futures::StreamExt;
use sparky::llm::openai::OpenAiProvider;
use sparky::llm::{ChatMessage, ChatProvider, ChatRequest, FinishReason, StreamEvent};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A streamed Chat Completion answering `text`, as OpenAI frames it.
fn answer(text: &str) -> String {
    let delta = serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}}]});
    let stop = serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    format!("data: {delta}\n\ndata: {stop}\n\ndata: [DONE]\n\n")
}

/// What the server does after a request.
#[derive(Clone, Copy, PartialEq)]
enum After {
    /// Answers with a `Content-Length` body and keeps the connection.
    Answer,
    /// Answers, then closes the connection without saying so in the response.
    AnswerThenClose,
    /// Sends the head and the first event of a chunked body, then nothing more (the first
    /// request only; later ones are answered).
    StallFirst,
}

/// A model server written against the socket: counts the connections it accepts and the
/// requests it answers.
struct RawServer {
    base_url: String,
    connections: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
}

impl RawServer {
    async fn start(after: After) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(AtomicUsize::new(0));
        let (c, r) = (connections.clone(), requests.clone());
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                c.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve(socket, after, r.clone()));
            }
        });
        Self {
            base_url: format!("http://{addr}/v1"),
            connections,
            requests,
        }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

/// Reads one request (head and `Content-Length` body); `false` at the end of the connection.
async fn read_request(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> bool {
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if buffer.len() >= end + 4 + length {
                buffer.drain(..end + 4 + length);
                return true;
            }
        }
        let mut chunk = [0u8; 16 * 1024];
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

async fn serve(mut socket: TcpStream, after: After, requests: Arc<AtomicUsize>) {
    let mut buffer = Vec::new();
    while read_request(&mut socket, &mut buffer).await {
        let n = requests.fetch_add(1, Ordering::SeqCst);
        if after == After::StallFirst && n == 0 {
            let first =
                serde_json::json!({"choices": [{"index": 0, "delta": {"content": "part"}}]});
            let event = format!("data: {first}\n\n");
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                 transfer-encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
                event.len()
            );
            let _ = socket.write_all(head.as_bytes()).await;
            // Holds the connection open with its body unfinished.
            tokio::time::sleep(Duration::from_secs(30)).await;
            return;
        }
        let body = answer(&format!("answer {n}"));
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if socket.write_all(response.as_bytes()).await.is_err() {
            return;
        }
        if after == After::AnswerThenClose {
            let _ = socket.shutdown().await;
            return;
        }
    }
}

fn provider(server: &RawServer) -> OpenAiProvider {
    OpenAiProvider::new(
        server.base_url.clone(),
        "m",
        None,
        None,
        Duration::from_secs(5),
    )
}

fn request() -> ChatRequest {
    ChatRequest {
        system: String::new(),
        messages: vec![ChatMessage::user("hi")],
        tools: vec![],
        temperature: None,
        max_output_tokens: None,
        seed: None,
        tool_choice: Default::default(),
    }
}

/// The text of one whole call, or the error that ended it.
async fn call(p: &OpenAiProvider) -> Result<String, String> {
    let mut stream = p.stream(&request()).await.map_err(|e| e.to_string())?;
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        match event.map_err(|e| e.to_string())? {
            StreamEvent::TextDelta(t) => text.push_str(&t),
            StreamEvent::Done(FinishReason::Stop) => return Ok(text),
            _ => {}
        }
    }
    Err(format!("the stream ended without finishing: {text:?}"))
}

#[tokio::test]
async fn calls_in_a_row_share_one_connection() {
    let server = RawServer::start(After::Answer).await;
    let p = provider(&server);
    for n in 0..5 {
        assert_eq!(call(&p).await, Ok(format!("answer {n}")));
    }
    assert_eq!(server.requests(), 5);
    assert_eq!(
        server.connections(),
        1,
        "every call after the first reuses it"
    );
}

#[tokio::test]
async fn a_connection_closed_while_idle_is_replaced_without_failing_the_call() {
    let server = RawServer::start(After::AnswerThenClose).await;
    let p = provider(&server);
    for n in 0..4 {
        assert_eq!(call(&p).await, Ok(format!("answer {n}")));
        // The close reaches the client while the connection sits idle.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(server.requests(), 4);
    assert_eq!(server.connections(), 4);
}

#[tokio::test]
async fn a_body_left_unread_keeps_its_connection_from_the_next_call() {
    let server = RawServer::start(After::StallFirst).await;
    let p = provider(&server);
    let mut stream = p.stream(&request()).await.expect("the first call's head");
    let first = stream.next().await;
    assert!(
        matches!(&first, Some(Ok(StreamEvent::TextDelta(t))) if t == "part"),
        "{first:?}"
    );
    // The reader gives up with the body unfinished.
    drop(stream);
    let next = tokio::time::timeout(Duration::from_secs(3), call(&p)).await;
    assert_eq!(next.ok(), Some(Ok("answer 1".to_string())));
    assert_eq!(server.connections(), 2);
}

#[tokio::test]
async fn a_proxy_named_in_the_environment_carries_the_calls() {
    for dialect in [Dialect::OpenAi, Dialect::Gemini] {
        let fake = FakeLlm::start(dialect).await;
        let mut bot = Bot::new(Db::Sqlite, Some(&fake)).await;
        // The model's own host does not resolve: only the proxy (the fake, which answers
        // requests in absolute form) can reach it.
        let (proxy, path) = fake
            .base_url()
            .rsplit_once('/')
            .map(|(proxy, path)| (proxy.to_string(), path.to_string()))
            .expect("a base URL with a path");
        let upper = match dialect {
            Dialect::OpenAi => "OPENAI",
            Dialect::Gemini => "GEMINI",
        };
        bot.set(
            &format!("SPARKY_LLM__{upper}__BASE_URL"),
            &format!("http://model.invalid/{path}"),
        );
        bot.set("HTTP_PROXY", &proxy);
        bot.set("NO_PROXY", "");
        bot.set("no_proxy", "");
        fake.push(Reply::Text("through the proxy".into()));
        let out = bot.chat("alice", &[], "hello\n").await;
        let text = serde_json::to_string(&out).unwrap_or_default();
        assert!(text.contains("through the proxy"), "{dialect:?}: {text}");
        assert_eq!(fake.requests().len(), 1, "{dialect:?}");
    }
}
