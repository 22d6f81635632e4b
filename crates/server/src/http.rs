//! The HTTP/1 connection loop: accepts TCP connections and runs hyper on
//! each, with the settings streaming needs.
//!
//! `axum::serve` would do, but it offers no say over hyper's connection
//! settings, and one matters here: hyper keeps pulling a response body
//! into its write buffer while that buffer holds under `max_buf_size`
//! bytes (about 400 KiB by default), even when the socket is full. With
//! thousands of slow listeners that is 400 KiB of memory each. Capped at
//! [`MAX_BUF`], a listener whose socket is full holds one chunk of its file
//! (see [`crate::stream`]) and hyper asks for the next only when it was
//! written. Everything else is as `axum::serve` sets it up: TCP_NODELAY,
//! the peer address as `ConnectInfo`, graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;

use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tower::ServiceExt;

/// hyper's buffer limit per connection: request heads up to this size,
/// and at most this much of a body queued beyond one chunk.
pub const MAX_BUF: usize = 16 * 1024;

/// Serves `app` on `listener` until `shutdown` resolves; then stops
/// accepting, lets each connection finish its request in flight, and
/// returns when all have closed.
pub async fn serve_connections(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (signal_tx, signal_rx) = tokio::sync::watch::channel(());
    let (close_tx, close_rx) = tokio::sync::watch::channel(());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, addr) = tokio::select! {
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    // Out of file descriptors and the like: wait, go on.
                    if !matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::ConnectionReset
                    ) {
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let svc = app
            .clone()
            .map_request(move |mut req: axum::http::Request<Incoming>| {
                req.extensions_mut().insert(ConnectInfo::<SocketAddr>(addr));
                req
            });
        let svc = TowerToHyperService::new(svc);
        let mut signal = signal_rx.clone();
        let close = close_rx.clone();
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.max_buf_size(MAX_BUF).timer(TokioTimer::new());
            let conn = builder.serve_connection(TokioIo::new(stream), svc);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = signal.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
            drop(close);
        });
    }
    drop(listener);
    let _ = signal_tx.send(());
    drop(close_rx);
    close_tx.closed().await;
    Ok(())
}
