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
//! written. The second: the socket is a [`SendfileStream`], so file bytes
//! in the page cache go out by `sendfile` and no chunk is held at all (see
//! [`crate::stream::sendfile`]). Everything else is as `axum::serve` sets
//! it up: TCP_NODELAY, the peer address as `ConnectInfo`, graceful
//! shutdown.
//!
//! Every connection is also bounded in time: a request head must arrive
//! within [`HEADER_TIMEOUT`] (hyper's timer also runs while a keep-alive
//! connection waits for its next request, so it is the idle timeout too),
//! and a client that reads nothing of a response for [`WRITE_TIMEOUT`] is
//! disconnected (in [`SendfileStream`]). Bodies have their own deadlines
//! ([`crate::body`]).

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tower::ServiceExt;

use crate::stream::sendfile::{self, SendQueue, SendfileStream, SentBytes};

/// hyper's buffer limit per connection: request heads up to this size,
/// and at most this much of a body queued beyond one chunk.
pub const MAX_BUF: usize = 16 * 1024;

/// [`crate::Config::header_timeout`]'s default: 30 s to send a request's
/// head, and the longest a keep-alive connection waits idle for its next
/// request. A slowloris client that never finishes its headers holds its
/// connection (16 KiB of buffer, a file descriptor) this long and no
/// longer; a real client sends a head in one packet.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// [`crate::Config::write_timeout`]'s default: 60 s. A connection whose
/// socket takes no bytes of a response for this long is closed. A player
/// that paused reads nothing while its buffer is full, but the socket
/// still takes the send queue's worth and clients resume within seconds;
/// 60 s without a byte is a client that is gone or stalling on purpose.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(60);

/// A connection's settings (from [`crate::Config`]).
#[derive(Debug, Clone, Copy)]
pub struct ConnSettings {
    /// The most bytes a connection keeps queued unsent in the kernel
    /// (`TCP_NOTSENT_LOWAT`; 0 leaves the kernel's default, as much as
    /// the send buffer holds).
    pub send_queue: u32,
    /// See [`HEADER_TIMEOUT`].
    pub header_timeout: Duration,
    /// See [`WRITE_TIMEOUT`].
    pub write_timeout: Duration,
}

impl From<&crate::Config> for ConnSettings {
    fn from(c: &crate::Config) -> ConnSettings {
        ConnSettings {
            send_queue: c.send_queue,
            header_timeout: c.header_timeout,
            write_timeout: c.write_timeout,
        }
    }
}

/// Serves `app` on `listener` until `shutdown` resolves; then stops
/// accepting, lets each connection finish its request in flight, and
/// returns when all have closed. Bytes sent by `sendfile` are counted in
/// `sent` (the server's metrics).
pub async fn serve_connections(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    settings: ConnSettings,
    sent: SentBytes,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_connections_with(listener, app, settings, sent, None, shutdown).await
}

/// Runs hyper's HTTP/1 on one connection's `io` until it closes, or, once
/// `signal` changes, until its request in flight is done. `writev`: hyper
/// queues body buffers as they are (zero-copy sending needs it).
macro_rules! drive {
    ($io:expr, $svc:expr, $settings:expr, $writev:expr, $signal:expr) => {{
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .max_buf_size(MAX_BUF)
            .timer(TokioTimer::new())
            .header_read_timeout($settings.header_timeout);
        if $writev {
            builder.writev(true);
        }
        let conn = builder.serve_connection(TokioIo::new($io), $svc);
        let mut conn = std::pin::pin!(conn);
        tokio::select! {
            _ = conn.as_mut() => {}
            _ = $signal.changed() => {
                conn.as_mut().graceful_shutdown();
                let _ = conn.await;
            }
        }
    }};
}

/// [`serve_connections`], over TLS when `tls` is given: each connection's
/// handshake must finish within the header timeout; file bytes then go
/// through the IO engine rather than `sendfile` ([`crate::tls`]).
pub async fn serve_connections_with(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    settings: ConnSettings,
    sent: SentBytes,
    tls: Option<tokio_rustls::TlsAcceptor>,
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
        if settings.send_queue > 0 {
            use std::os::fd::AsFd;
            let _ = spindle_io::set_notsent_lowat(stream.as_fd(), settings.send_queue);
        }
        let is_tls = tls.is_some();
        let svc = app
            .clone()
            .map_request(move |mut req: axum::http::Request<Incoming>| {
                req.extensions_mut().insert(ConnectInfo::<SocketAddr>(addr));
                if is_tls {
                    req.extensions_mut().insert(crate::front::Tls);
                }
                req
            });
        let svc = TowerToHyperService::new(svc);
        let mut signal = signal_rx.clone();
        let close = close_rx.clone();
        if let Some(acceptor) = &tls {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let handshake =
                    tokio::time::timeout(settings.header_timeout, acceptor.accept(stream));
                let io = tokio::select! {
                    r = handshake => match r {
                        Ok(Ok(io)) => io,
                        Ok(Err(e)) => {
                            tracing::debug!("TLS handshake with {addr} failed: {e}");
                            return;
                        }
                        Err(_) => return,
                    },
                    _ = signal.changed() => return,
                };
                let io = crate::tls::WriteTimeout::new(io, settings.write_timeout);
                drive!(io, svc, settings, false, signal);
                drop(close);
            });
            continue;
        }
        let queue = std::sync::Arc::new(SendQueue::default());
        let sent = sent.clone();
        tokio::spawn(sendfile::scope(queue.clone(), async move {
            // writev(true): hyper queues body buffers as they are, which
            // the stand-ins of zero-copy sending rely on (never copied).
            let io = SendfileStream::new(stream, queue, sent, settings.write_timeout);
            drive!(io, svc, settings, true, signal);
            drop(close);
        }));
    }
    drop(listener);
    let _ = signal_tx.send(());
    drop(close_rx);
    close_tx.closed().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Reads one HTTP/1.1 response with a Content-Length: status, head,
    /// body.
    async fn response(s: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> (u16, String, Vec<u8>) {
        loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                let len: usize = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().ok())?
                    })
                    .expect("a Content-Length");
                while buf.len() < end + 4 + len {
                    let mut chunk = vec![0u8; 64 * 1024];
                    // A slow reader now and then: the server meets full sockets.
                    if buf.len().is_multiple_of(3) {
                        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                    }
                    let n = s.read(&mut chunk).await.unwrap();
                    assert!(n > 0, "the connection closed mid-body");
                    buf.extend_from_slice(&chunk[..n]);
                }
                let status = head[9..12].parse().unwrap();
                let body = buf[end + 4..end + 4 + len].to_vec();
                buf.drain(..end + 4 + len);
                return (status, head, body);
            }
            let mut chunk = vec![0u8; 4096];
            let n = s.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the connection closed before a response");
            buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Serves `app` with `settings` on a loopback port, counting bytes
    /// sent by `sendfile` in `sent`; the sender stops the server.
    async fn start(
        app: axum::Router,
        settings: ConnSettings,
        sent: SentBytes,
    ) -> (
        SocketAddr,
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<std::io::Result<()>>,
    ) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve_connections(
            listener,
            app,
            settings,
            sent,
            async move {
                let _ = stopped.await;
            },
        ));
        (addr, stop, server)
    }

    fn short(header_ms: u64, write_ms: u64) -> ConnSettings {
        ConnSettings {
            send_queue: 16 * 1024,
            header_timeout: Duration::from_millis(header_ms),
            write_timeout: Duration::from_millis(write_ms),
        }
    }

    /// Reads until the server closes the connection (EOF or reset), up
    /// to `limit`; the bytes read.
    async fn read_to_close(s: &mut tokio::net::TcpStream, limit: Duration) -> Vec<u8> {
        let mut got = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        let r = tokio::time::timeout(limit, async {
            loop {
                match s.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => got.extend_from_slice(&chunk[..n]),
                }
            }
        })
        .await;
        assert!(r.is_ok(), "the server kept the connection open");
        got
    }

    /// A client that asks for a big response and then reads nothing is
    /// disconnected after the write timeout: its connection no longer
    /// holds up a shutdown, and the response it gets is cut short.
    #[tokio::test]
    async fn a_client_that_stops_reading_is_disconnected_after_the_write_timeout() {
        const LEN: usize = 32 << 20;
        let big = axum::body::Bytes::from(vec![7u8; LEN]);
        let app = axum::Router::new().route(
            "/big",
            axum::routing::get(move || {
                let big = big.clone();
                async move { big }
            }),
        );
        let (addr, stop, server) = start(app, short(10_000, 300), SentBytes::default()).await;
        // A small receive window: the server's socket fills at once.
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.set_recv_buffer_size(4096).unwrap();
        let mut s = sock.connect(addr).await.unwrap();
        s.write_all(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1000)).await;
        // The stalled connection is gone: the server stops at once.
        let _ = stop.send(());
        let stopped = tokio::time::timeout(Duration::from_secs(2), server).await;
        assert!(
            stopped.is_ok(),
            "a client that reads nothing held its connection"
        );
        let got = read_to_close(&mut s, Duration::from_secs(5)).await;
        assert!(got.starts_with(b"HTTP/1.1 200"));
        assert!(
            got.len() < LEN,
            "the whole response was sent ({} bytes)",
            got.len()
        );
    }

    /// A client that never finishes its request head is closed after the
    /// header timeout, and so is a keep-alive connection left idle.
    #[tokio::test]
    async fn unfinished_heads_and_idle_connections_are_closed_after_the_header_timeout() {
        let app = axum::Router::new().route("/", axum::routing::get(|| async { "hi" }));
        let (addr, stop, server) = start(app, short(300, 10_000), SentBytes::default()).await;
        let started = std::time::Instant::now();
        let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n")
            .await
            .unwrap();
        let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
        idle.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .unwrap();
        let mut buf = Vec::new();
        let (status, _, body) = response(&mut idle, &mut buf).await;
        assert_eq!((status, &body[..]), (200, &b"hi"[..]));
        let got = read_to_close(&mut slow, Duration::from_secs(3)).await;
        assert!(!got.starts_with(b"HTTP/1.1 200"));
        read_to_close(&mut idle, Duration::from_secs(3)).await;
        assert!(started.elapsed() < Duration::from_secs(3));
        let _ = stop.send(());
        server.await.unwrap().unwrap();
    }

    /// Through the real connection loop (zero-copy sending included), on
    /// one keep-alive connection with pipelined requests: whole files and
    /// ranges arrive byte for byte, from the page cache (sendfile) and
    /// from a file dropped from it (the IO engine), mixed.
    #[tokio::test]
    async fn files_arrive_byte_exact_through_the_connection_loop() {
        use axum::routing::get;
        let engine = crate::stream::ReadEngine::Io(spindle_io::EngineKind::Psync);
        let reader = std::sync::Arc::new(crate::stream::Reader::start(engine).unwrap().0);
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..1_300_000u32).map(|i| (i * 31 % 253) as u8).collect();
        for name in ["warm", "cold"] {
            std::fs::write(dir.path().join(name), &data).unwrap();
        }
        let root = dir.path().to_owned();
        let app = axum::Router::new().route(
            "/{name}",
            get(
                move |axum::extract::Path(name): axum::extract::Path<String>,
                      headers: axum::http::HeaderMap| {
                    let path = root.join(name);
                    let reader = reader.clone();
                    async move {
                        let path = path;
                        crate::stream::serve_file(&reader, &path, "audio/x", &headers, false)
                            .await
                            .0
                    }
                },
            ),
        );
        // A small send queue: sendfile stops short and resumes many times.
        let settings = ConnSettings {
            send_queue: 16 * 1024,
            ..ConnSettings::from(&crate::Config::default())
        };
        let sent = SentBytes::default();
        let (addr, stop, server) = start(app, settings, sent.clone()).await;
        let cold = std::fs::File::open(dir.path().join("cold")).unwrap();

        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut buf = Vec::new();
        let cases: &[(&str, Option<&str>, std::ops::Range<usize>)] = &[
            ("warm", None, 0..data.len()),
            ("warm", Some("bytes=70000-135535"), 70_000..135_536),
            ("warm", Some("bytes=-5"), data.len() - 5..data.len()),
            ("cold", None, 0..data.len()),
            ("cold", Some("bytes=1000000-"), 1_000_000..data.len()),
            ("warm", Some("bytes=1-1"), 1..2),
        ];
        for round in 0..3 {
            // Round 1 sends every request at once (pipelined).
            let mut reqs = String::new();
            for (name, range, _) in cases {
                let range = range.map_or(String::new(), |r| format!("Range: {r}\r\n"));
                reqs += &format!("GET /{name} HTTP/1.1\r\nHost: t\r\n{range}\r\n");
            }
            if round == 1 {
                s.write_all(reqs.as_bytes()).await.unwrap();
            }
            for (i, (name, range, want)) in cases.iter().enumerate() {
                if *name == "cold" {
                    spindle_io::evict_cached(&cold).unwrap();
                }
                if round != 1 {
                    let range = range.map_or(String::new(), |r| format!("Range: {r}\r\n"));
                    let req = format!("GET /{name} HTTP/1.1\r\nHost: t\r\n{range}\r\n");
                    s.write_all(req.as_bytes()).await.unwrap();
                }
                let (status, head, body) = response(&mut s, &mut buf).await;
                assert_eq!(status, if range.is_some() { 206 } else { 200 }, "{head}");
                assert_eq!(body.len(), want.len(), "round {round} case {i}");
                assert!(
                    body == data[want.clone()],
                    "round {round} case {i}: bytes differ"
                );
            }
        }
        // The warm file went out by sendfile (at least its whole copies).
        assert!(sent.get() >= 3 * data.len() as u64);
        drop(s);
        let _ = stop.send(());
        server.await.unwrap().unwrap();
    }
}
