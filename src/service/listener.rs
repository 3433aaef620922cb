//! The HTTP listener: accepts connections for the operational and platform endpoints and
//! holds each client to time limits, so slow connections cannot pile up.
//!
//! Layer: the shell.

use std::future::Future;
use std::time::Duration;

use axum::response::IntoResponse;

use crate::config::Config;

/// Time limits on the HTTP server's clients.
#[derive(Debug, Clone, Copy)]
pub(super) struct HttpLimits {
    headers: Duration,
    request: Duration,
    grace: Duration,
}

impl HttpLimits {
    pub(super) fn of(config: &Config) -> Self {
        Self {
            headers: Duration::from_secs(config.server.header_timeout_secs),
            request: Duration::from_secs(config.server.request_timeout_secs),
            grace: Duration::from_secs(config.server.shutdown_grace_secs),
        }
    }
}

/// Serves `router` on `listener` until `stop`. Unlike a plain `axum::serve`, a client that
/// sends its headers slowly (or holds a kept-alive connection silent) is disconnected after
/// `limits.headers`, and a request whose body trickles in is answered 408 after
/// `limits.request`, so slow connections cannot pile up.
pub(super) async fn serve_http(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    stop: impl Future<Output = ()>,
    limits: HttpLimits,
) -> anyhow::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    let request = limits.request;
    let router = router.layer(axum::middleware::from_fn(
        move |req: axum::extract::Request, next: axum::middleware::Next| async move {
            match tokio::time::timeout(request, next.run(req)).await {
                Ok(resp) => resp,
                Err(_) => axum::http::StatusCode::REQUEST_TIMEOUT.into_response(),
            }
        },
    ));
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.headers);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut stop = std::pin::pin!(stop);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors, say: wait instead of spinning.
                    tracing::warn!(error = %e, "http server: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        let conn = builder
            .serve_connection(TokioIo::new(stream), service)
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
    let _ = tokio::time::timeout(limits.grace, graceful.shutdown()).await;
    Ok(())
}
