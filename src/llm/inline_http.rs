//! HTTP/1.1 to a plain-HTTP model server over kept-alive connections that the request's own
//! task drives.
//!
//! A pooled client (reqwest) runs every connection as a task of its own, hands each request
//! and each body chunk to it through channels, and spawns one more task per request to put
//! the connection back in its pool. On a multi-threaded runtime those hand-offs wake the
//! other worker several times per call. Here the connection's future is polled by whoever
//! polls the response (the send, then the body stream), so a call runs on the turn's task
//! alone, and the connection goes back to the idle list when its body has ended.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use http_body_util::Full;
use hyper::body::{Body, Incoming};
use hyper::client::conn::http1::{self, Connection, SendRequest};
use hyper::header::{HeaderMap, HeaderName, HeaderValue, HOST};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::{LlmError, TimedOut, TimeoutStage};

/// Idle connections kept per server: as many as turns usually wait on it at once.
const MAX_IDLE: usize = 64;

type Conn = Connection<TokioIo<TcpStream>, Full<Bytes>>;

/// One kept-alive connection: the handle requests go through and the connection's future.
struct Link {
    send: SendRequest<Full<Bytes>>,
    conn: Pin<Box<Conn>>,
}

impl Link {
    /// Polls the connection's future; `false` once it has ended (closed, or failed).
    fn drive(&mut self, cx: &mut Context<'_>) -> bool {
        self.conn.as_mut().poll_without_shutdown(cx).is_pending()
    }
}

type Idle = Arc<Mutex<Vec<Link>>>;

/// POST requests to one plain-HTTP server (`host:port`), connections kept alive.
#[derive(Clone)]
pub(crate) struct InlineHttp {
    addr: String,
    authority: HeaderValue,
    idle: Idle,
    connect_timeout: Duration,
}

impl std::fmt::Debug for InlineHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InlineHttp")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// A response head, with a body that drives its connection.
pub(crate) struct InlineResponse {
    /// The status code.
    pub status: u16,
    /// The response headers.
    pub headers: HeaderMap,
    /// The body; read to its end, it returns the connection for reuse.
    pub body: InlineBody,
}

/// How a request went on one connection.
enum Attempt {
    Answered(InlineResponse),
    /// A kept-alive connection turned out closed before any of the request was answered
    /// (the server dropped it while idle): worth one more try on a new connection.
    Stale(LlmError),
}

impl InlineHttp {
    /// Requests to `host:port`; `authority` is the `Host` header.
    pub(crate) fn new(
        host: &str,
        port: u16,
        authority: &str,
        connect_timeout: Duration,
    ) -> Option<Self> {
        Some(Self {
            addr: format!("{host}:{port}"),
            authority: HeaderValue::from_str(authority).ok()?,
            idle: Arc::default(),
            connect_timeout,
        })
    }

    /// Sends a POST of `body` to `path` (path and query) and returns once the response head
    /// has arrived.
    pub(crate) async fn post(
        &self,
        path: &str,
        headers: &[(HeaderName, HeaderValue)],
        body: Bytes,
    ) -> Result<InlineResponse, LlmError> {
        let request = || {
            let mut builder = hyper::Request::post(path).header(HOST, self.authority.clone());
            for (name, value) in headers {
                builder = builder.header(name, value.clone());
            }
            builder
                .body(Full::new(body.clone()))
                .map_err(|e| LlmError::Protocol(format!("the request could not be built: {e}")))
        };
        if let Some(link) = self.take_idle() {
            // On a stale one, the next try opens a new connection: other idle ones may be as
            // old.
            if let Attempt::Answered(response) = self.attempt(link, request()?).await? {
                return Ok(response);
            }
        }
        let link = self.connect().await?;
        match self.attempt(link, request()?).await? {
            Attempt::Answered(response) => Ok(response),
            Attempt::Stale(e) => Err(e),
        }
    }

    /// An idle connection still open, if any.
    fn take_idle(&self) -> Option<Link> {
        let mut cx = Context::from_waker(futures::task::noop_waker_ref());
        let mut idle = self.idle.lock().ok()?;
        while let Some(mut link) = idle.pop() {
            // A close the server sent while the connection sat idle is seen here.
            if link.drive(&mut cx) && link.send.is_ready() {
                return Some(link);
            }
        }
        None
    }

    async fn connect(&self) -> Result<Link, LlmError> {
        let tcp = match tokio::time::timeout(self.connect_timeout, TcpStream::connect(&self.addr))
            .await
        {
            Err(_) => {
                return Err(LlmError::Timeout(TimedOut {
                    stage: TimeoutStage::Connect,
                    after: self.connect_timeout,
                }))
            }
            Ok(Err(e)) => return Err(LlmError::Transport(format!("connect: {e}"))),
            Ok(Ok(s)) => s,
        };
        // Requests are written whole; waiting to coalesce them only adds latency.
        let _ = tcp.set_nodelay(true);
        let (send, conn) = http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| LlmError::Transport(format!("connect: {e}")))?;
        Ok(Link {
            send,
            conn: Box::pin(conn),
        })
    }

    async fn attempt(
        &self,
        mut link: Link,
        request: hyper::Request<Full<Bytes>>,
    ) -> Result<Attempt, LlmError> {
        let mut response = std::pin::pin!(link.send.send_request(request));
        let response = futures::future::poll_fn(|cx| {
            // A connection that ends first fails the request's own future.
            link.drive(cx);
            response.as_mut().poll(cx)
        })
        .await;
        match response {
            Ok(response) => {
                let (parts, body) = response.into_parts();
                Ok(Attempt::Answered(InlineResponse {
                    status: parts.status.as_u16(),
                    headers: parts.headers,
                    body: InlineBody {
                        body,
                        link: Some(link),
                        idle: self.idle.clone(),
                    },
                }))
            }
            Err(e) if e.is_canceled() || e.is_incomplete_message() => {
                Ok(Attempt::Stale(LlmError::Transport(e.to_string())))
            }
            Err(e) => Err(LlmError::Transport(e.to_string())),
        }
    }
}

/// A response body; at its end, it returns its connection to the idle list.
pub(crate) struct InlineBody {
    body: Incoming,
    link: Option<Link>,
    idle: Idle,
}

impl InlineBody {
    fn release(&mut self, cx: &mut Context<'_>) {
        let Some(mut link) = self.link.take() else {
            return;
        };
        // The connection sees the exchange finished before it is offered again.
        if link.drive(cx) {
            if let Ok(mut idle) = self.idle.lock() {
                if idle.len() < MAX_IDLE {
                    idle.push(link);
                }
            }
        }
    }
}

impl Drop for InlineBody {
    fn drop(&mut self) {
        // A reader that stops at the last event (`[DONE]`) leaves the body's end unread; it
        // came in the same packet as a rule, so one more look finds it without waiting. A body
        // left with more to come closes its connection.
        if self.link.is_none() {
            return;
        }
        let mut cx = Context::from_waker(futures::task::noop_waker_ref());
        loop {
            if let Some(link) = self.link.as_mut() {
                link.drive(&mut cx);
            }
            match Pin::new(&mut self.body).poll_frame(&mut cx) {
                Poll::Ready(Some(Ok(_))) => continue,
                Poll::Ready(None) => return self.release(&mut cx),
                Poll::Pending | Poll::Ready(Some(Err(_))) => return,
            }
        }
    }
}

impl Stream for InlineBody {
    type Item = Result<Bytes, hyper::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(link) = this.link.as_mut() {
                link.drive(cx);
            }
            match Pin::new(&mut this.body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    this.release(cx);
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Err(e))) => {
                    this.link = None;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(Some(Ok(frame))) => {
                    // Trailers carry nothing a model answer needs.
                    if let Ok(data) = frame.into_data() {
                        return Poll::Ready(Some(Ok(data)));
                    }
                }
            }
        }
    }
}
