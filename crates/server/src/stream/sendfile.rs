//! Zero-copy sending: file bytes go from the page cache to the socket by
//! `sendfile(2)`, never through the server's memory, while hyper still
//! writes the HTTP framing.
//!
//! hyper takes a body as `Bytes` and has no way to hand a file range to
//! the socket. So a body that wants a range sent by `sendfile` yields a
//! *stand-in*: a slice of `STAND_IN` (a static, never-written block)
//! of the range's length, and records the range on its connection's
//! [`SendQueue`]. The connection's socket is a [`SendfileStream`]: when
//! hyper asks it to write slices, ordinary slices are written as usual and
//! a slice that points into `STAND_IN` is replaced by `sendfile` of the
//! range at the front of the queue. hyper writes in order, so the queue's
//! front is always the stand-in being written; where in it hyper has got
//! to is the slice's offset into `STAND_IN`, which is checked against
//! the queue's own count before anything is sent.
//!
//! This holds only while hyper queues body buffers as they are instead of
//! copying them into its own buffer: hyper's "queue" write strategy,
//! which [`crate::http`] sets explicitly (`writev(true)`) for every
//! connection it wraps in a [`SendfileStream`]. Bodies look their
//! connection's queue up in a task-local ([`current`]) that only such
//! connections set, so a body served any other way (tests calling
//! handlers directly, another server loop) never yields a stand-in.
//!
//! A range is sent by `sendfile` only when `cachestat(2)` says all of it
//! is in the page cache ([`spindle_io::range_cached`]); otherwise the body
//! reads it through the IO engine as before, since `sendfile` of an
//! uncached file would block the async thread on the disk.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::body::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

/// The longest range one stand-in covers.
pub const MAX_STAND_IN: usize = 256 * 1024;

/// What a stand-in's slice points into. It is never written, so the
/// pages behind it are the kernel's shared zero page until something reads
/// them; if a stand-in were ever copied instead of replaced, the client
/// would get zeros where the file was and the response would be corrupt —
/// which is why stand-ins are only made for [`SendfileStream`]s.
static STAND_IN: [u8; MAX_STAND_IN] = [0; MAX_STAND_IN];

/// Bytes a server's connections sent by `sendfile`: the counter of
/// `/metrics` ([`crate::metrics::Metrics`] holds it), handed to each
/// [`SendfileStream`] by the connection loop. Clones share the count.
#[derive(Debug, Clone, Default)]
pub struct SentBytes(Arc<AtomicU64>);

impl SentBytes {
    /// Bytes sent by `sendfile` so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    fn add(&self, n: usize) {
        self.0.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// A file range waiting to be sent in place of a stand-in.
struct Range {
    file: Arc<std::fs::File>,
    offset: u64,
    len: usize,
    /// Bytes of it already sent.
    sent: usize,
}

/// The ranges a connection's bodies have handed to hyper as stand-ins,
/// in the order hyper will write them.
#[derive(Default)]
pub struct SendQueue(Mutex<VecDeque<Range>>);

impl SendQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Range>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A stand-in for `len` bytes (at most [`MAX_STAND_IN`]) of `file` at
    /// `offset`, queued to be sent by `sendfile`.
    pub fn stand_in(&self, file: Arc<std::fs::File>, offset: u64, len: usize) -> Bytes {
        let len = len.min(MAX_STAND_IN);
        self.lock().push_back(Range {
            file,
            offset,
            len,
            sent: 0,
        });
        Bytes::from_static(&STAND_IN[..len])
    }
}

tokio::task_local! {
    static CONN: Arc<SendQueue>;
}

/// The send queue of the connection this task serves, if it was set up
/// for zero-copy sending (see the module's documentation).
pub fn current() -> Option<Arc<SendQueue>> {
    CONN.try_with(Arc::clone).ok()
}

/// Runs `fut` (a connection's future) with `queue` as its [`current`].
pub async fn scope<F: std::future::Future>(queue: Arc<SendQueue>, fut: F) -> F::Output {
    CONN.scope(queue, fut).await
}

/// Whether a slice is (part of) a stand-in, and where in it it starts.
fn stand_in_offset(s: &[u8]) -> Option<usize> {
    let base = STAND_IN.as_ptr() as usize;
    let p = s.as_ptr() as usize;
    (p >= base && p < base + MAX_STAND_IN && !s.is_empty()).then(|| p - base)
}

/// A TCP connection whose writes send stand-ins' ranges by `sendfile`,
/// and fail with `TimedOut` once the socket has taken no bytes for the
/// write timeout (a client that stopped reading is let go).
///
/// The timeout costs nothing per write: a write that goes through only
/// clears `stalled_since`. A write that finds the socket
/// full notes the time (once per stall) and polls one timer, made on the
/// first stall and reset at most once per timeout period: when it fires
/// early (it was set for an earlier stall) it is moved to the current
/// stall's deadline.
pub struct SendfileStream {
    tcp: TcpStream,
    queue: Arc<SendQueue>,
    /// Where the bytes sent by `sendfile` are counted.
    sent: SentBytes,
    write_timeout: std::time::Duration,
    /// When the socket last refused a write, if no write went through
    /// since.
    stalled_since: Option<tokio::time::Instant>,
    /// Wakes the connection at the write timeout of a stall.
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl SendfileStream {
    pub fn new(
        tcp: TcpStream,
        queue: Arc<SendQueue>,
        sent: SentBytes,
        write_timeout: std::time::Duration,
    ) -> SendfileStream {
        SendfileStream {
            tcp,
            queue,
            sent,
            write_timeout,
            stalled_since: None,
            timer: None,
        }
    }

    /// The socket is full: whether the stall has lasted the write timeout
    /// (then an error), else Pending with the timer set to wake this task
    /// when it will have.
    fn poll_stalled(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<usize>> {
        let since = *self
            .stalled_since
            .get_or_insert_with(tokio::time::Instant::now);
        let deadline = since + self.write_timeout;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        loop {
            if std::future::Future::poll(timer.as_mut(), cx).is_pending() {
                return Poll::Pending;
            }
            if tokio::time::Instant::now() >= deadline {
                return Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "the client read nothing for {} s",
                        self.write_timeout.as_secs_f32()
                    ),
                )));
            }
            // Set for an earlier stall: move it to this one's deadline.
            timer.as_mut().reset(deadline);
        }
    }

    /// One attempt at writing `bufs` without blocking: the ordinary
    /// slices before the first stand-in in one `sendmsg`, then (if those
    /// all went) the stand-in's range by `sendfile`. Returns the bytes of
    /// `bufs` consumed; `WouldBlock` when nothing could be written.
    fn write_now(&self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
        use std::os::fd::AsFd;
        let sock = self.tcp.as_fd();
        let first_stand_in = bufs.iter().position(|b| stand_in_offset(b).is_some());
        let plain = &bufs[..first_stand_in.unwrap_or(bufs.len())];
        let plain_len: usize = plain.iter().map(|b| b.len()).sum();
        let mut done = 0;
        if plain_len > 0 {
            // Without MSG_MORE: with it, the head waits in a partial
            // segment that sendfile's pages then join, and a 64 KiB range
            // cost 94 µs of CPU instead of 57 (measured on loopback).
            done = spindle_io::send_slices(sock, plain, false)?;
            if done < plain_len {
                return Ok(done);
            }
        }
        let Some(i) = first_stand_in else {
            return Ok(done);
        };
        let at = stand_in_offset(&bufs[i]).unwrap_or(0);
        let want = bufs[i].len();
        let mut q = self.queue.lock();
        let Some(r) = q.front_mut() else {
            return Err(std::io::Error::other(
                "a stand-in without a queued file range",
            ));
        };
        if r.sent != at || r.len - r.sent != want {
            return Err(std::io::Error::other(format!(
                "a stand-in at {at} (+{want}) does not match the queued range ({} of {} sent)",
                r.sent, r.len
            )));
        }
        let n = match spindle_io::send_file(sock, &r.file, r.offset + r.sent as u64, want) {
            Ok(n) => n,
            Err(e) if done > 0 && e.kind() == std::io::ErrorKind::WouldBlock => return Ok(done),
            Err(e) => return Err(e),
        };
        if n == 0 {
            // The file is shorter than when the response was made.
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the file ended early",
            ));
        }
        self.sent.add(n);
        r.sent += n;
        if r.sent == r.len {
            q.pop_front();
        }
        Ok(done + n)
    }

    fn poll_write_slices(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        if bufs.iter().all(|b| b.is_empty()) {
            return Poll::Ready(Ok(0));
        }
        loop {
            match self.tcp.poll_write_ready(cx) {
                Poll::Ready(r) => r?,
                Poll::Pending => return self.poll_stalled(cx),
            }
            match self.tcp.try_io(Interest::WRITABLE, || self.write_now(bufs)) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                r => {
                    if r.is_ok() {
                        self.stalled_since = None;
                    }
                    return Poll::Ready(r);
                }
            }
        }
    }
}

impl AsyncRead for SendfileStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for SendfileStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.get_mut().poll_write_slices(cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.get_mut().poll_write_slices(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Stand-ins between ordinary bytes arrive as the file's bytes, in
    /// order, through partial writes to a slow reader.
    #[tokio::test]
    async fn stand_ins_are_replaced_by_the_file_bytes() {
        let path = std::env::temp_dir().join(format!("spindle-sendfile-{}", std::process::id()));
        let data: Vec<u8> = (0..600_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let file = Arc::new(std::fs::File::open(&path).unwrap());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let reader = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 1000];
            loop {
                // A slow reader: the writer sees partial writes.
                tokio::time::sleep(std::time::Duration::from_micros(50)).await;
                let n = s.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            got
        });
        let tcp = TcpStream::connect(addr).await.unwrap();
        let queue = Arc::new(SendQueue::default());
        let mut w = SendfileStream::new(
            tcp,
            queue.clone(),
            SentBytes::default(),
            std::time::Duration::from_secs(60),
        );
        let mut want = Vec::new();
        // head, stand-in, gap, stand-in, stand-in, tail
        type Part<'a> = (Option<(u64, usize)>, &'a [u8]);
        let parts: Vec<Part<'_>> = vec![
            (None, b"HEAD\r\n"),
            (Some((1000, MAX_STAND_IN)), b""),
            (None, b"--"),
            (Some((0, 10)), b""),
            (Some((590_000, 10_000)), b""),
            (None, b"tail"),
        ];
        let mut bufs: Vec<Bytes> = Vec::new();
        for (range, bytes) in &parts {
            match range {
                Some((off, len)) => {
                    bufs.push(queue.stand_in(file.clone(), *off, *len));
                    want.extend_from_slice(&data[*off as usize..*off as usize + len]);
                }
                None => {
                    bufs.push(Bytes::from_static(bytes));
                    want.extend_from_slice(bytes);
                }
            }
        }
        // Write as hyper does: vectored, advancing by what was written.
        let mut at = 0;
        let mut skip = 0;
        while at < bufs.len() {
            let slices: Vec<IoSlice<'_>> = std::iter::once(IoSlice::new(&bufs[at][skip..]))
                .chain(bufs[at + 1..].iter().map(|b| IoSlice::new(b)))
                .collect();
            let mut n =
                std::future::poll_fn(|cx| Pin::new(&mut w).poll_write_vectored(cx, &slices))
                    .await
                    .unwrap();
            assert!(n > 0);
            while n > 0 {
                let left = bufs[at].len() - skip;
                if n >= left {
                    n -= left;
                    at += 1;
                    skip = 0;
                } else {
                    skip += n;
                    n = 0;
                }
            }
        }
        w.shutdown().await.unwrap();
        drop(w);
        let got = reader.await.unwrap();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "the bytes differ");
        assert!(queue.lock().is_empty());
        let _ = std::fs::remove_file(&path);
    }

    /// A stand-in written out of turn is refused, not sent as zeros or as
    /// the wrong range.
    #[tokio::test]
    async fn a_stand_in_that_does_not_match_the_queue_is_an_error() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _accept = tokio::spawn(async move { listener.accept().await });
        let tcp = TcpStream::connect(addr).await.unwrap();
        let queue = Arc::new(SendQueue::default());
        let mut w = SendfileStream::new(
            tcp,
            queue,
            SentBytes::default(),
            std::time::Duration::from_secs(60),
        );
        // Nothing queued.
        let r = w.write(&STAND_IN[..100]).await;
        assert!(r.is_err());
    }
}
