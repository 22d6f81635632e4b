//! Streaming through spindle-io's engines: one IO thread owns an engine
//! (psync, io_uring, or io_uring with SQPOLL) with registered buffers, and
//! response bodies ask it for chunks over a channel.
//!
//! Each time hyper wants more of a [`FileBody`], the body first tries to
//! read the next chunk from the page cache on the calling thread
//! (`preadv2` with `RWF_NOWAIT`, [`spindle_io::read_cached`]): a hit costs
//! one memory copy and no thread hop, as nginx's reads in its event loop
//! do. Only a read that would wait for the disk goes to the IO thread,
//! which registers the file with its engine on the first such read and
//! removes it when the body is dropped. A stream has at most one chunk in
//! memory either way. How big a chunk is depends on how many streams of
//! the server are open ([`OpenStreams::chunk_len`]): few streams get large
//! chunks (fewer reads and writes per byte), many streams share a budget,
//! so thousands of slow listeners cost little memory each.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll};

use axum::body::Bytes;
use spindle_io::{
    Access, Completion, EngineConfig, EngineKind, FileId, IoEngine, Op, Request, Slot,
};
use tokio::sync::oneshot;

/// The largest chunk a stream reads at once.
pub const MAX_CHUNK: usize = 256 * 1024;
/// The smallest chunk (when very many streams share [`BUDGET`]).
pub const MIN_CHUNK: usize = 8 * 1024;
/// Bytes of chunks the open streams share before chunks shrink.
pub const BUDGET: usize = 32 << 20;
/// Reads the IO thread keeps in flight at most.
const DEPTH: usize = 64;

/// The streams of one server that are open now, which share [`BUDGET`]
/// ([`OpenStreams::chunk_len`]). Held by the server's
/// [`super::Reader`]; clones share the count.
#[derive(Clone, Default)]
pub struct OpenStreams(Arc<AtomicUsize>);

impl OpenStreams {
    /// The chunk size for a stream now: [`BUDGET`] shared by the open
    /// streams, between [`MIN_CHUNK`] and [`MAX_CHUNK`], in whole 4 KiB
    /// pages.
    pub fn chunk_len(&self) -> usize {
        let open = self.0.load(Ordering::Relaxed).max(1);
        (BUDGET / open).clamp(MIN_CHUNK, MAX_CHUNK) & !4095
    }

    /// Counts a stream as open while the guard lives.
    pub fn open(&self) -> OpenGuard {
        self.0.fetch_add(1, Ordering::Relaxed);
        OpenGuard(self.clone())
    }
}

/// One open stream of [`OpenStreams`], until dropped.
pub struct OpenGuard(OpenStreams);

impl OpenGuard {
    /// [`OpenStreams::chunk_len`] of the streams this one is among.
    pub fn chunk_len(&self) -> usize {
        self.0.chunk_len()
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0 .0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A chunk, and the id the file has in the engine.
type ReadReply = oneshot::Sender<std::io::Result<(FileId, Bytes)>>;

/// A file as a read names it: the first read of a body brings the file
/// itself, to be registered; later ones its id.
enum FileRef {
    New(std::fs::File),
    Id(FileId),
}

enum Msg {
    Read {
        file: FileRef,
        offset: u64,
        len: usize,
        reply: ReadReply,
    },
    Close(FileId),
}

/// The IO thread and the way to it. Clones share the thread, which ends
/// when the last clone (the server's reader, a body in flight) is gone.
#[derive(Clone)]
pub struct Pool {
    tx: mpsc::Sender<Msg>,
    kind: EngineKind,
}

/// Registered files the engine can hold: the open-files limit (less some
/// for sockets and the rest), at most 65,536.
fn max_files() -> u32 {
    let soft = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3).map(str::to_owned))
        })
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(1024);
    (soft / 2).clamp(64, 65_536) as u32
}

impl Pool {
    /// Starts the IO thread with an engine of `kind`; an io_uring kind
    /// falls back to psync where io_uring cannot be had, and says why.
    pub fn start(kind: EngineKind) -> Result<(Pool, Option<String>), spindle_io::SetupError> {
        let mut cfg = EngineConfig::new(kind, DEPTH);
        cfg.buf_size = MAX_CHUNK;
        cfg.max_files = max_files();
        let (engine, fell_back) = spindle_io::open_with_fallback(&cfg)?;
        let kind = engine.kind();
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name(format!("spindle-io-{}", kind.name()))
            .spawn(move || run(engine, rx))
            .map_err(|e| {
                spindle_io::SetupError::Config(format!("cannot start the IO thread: {e}"))
            })?;
        Ok((Pool { tx, kind }, fell_back.map(|e| e.to_string())))
    }

    /// The engine that runs (psync after a fallback).
    pub fn kind(&self) -> EngineKind {
        self.kind
    }

    fn send(&self, m: Msg) -> std::io::Result<()> {
        self.tx
            .send(m)
            .map_err(|_| std::io::Error::other("the IO thread has stopped"))
    }
}

/// The IO thread: takes requests, keeps up to `DEPTH` reads in flight,
/// hands each chunk back as `Bytes`.
fn run(mut engine: Box<dyn IoEngine>, rx: mpsc::Receiver<Msg>) {
    let mut free: Vec<usize> = (0..engine.depth()).rev().collect();
    let mut replies: Vec<Option<(ReadReply, bool)>> = (0..engine.depth()).map(|_| None).collect();
    let mut queued: VecDeque<Queued> = VecDeque::new();
    let mut closing: Vec<FileId> = Vec::new();
    let mut done: Vec<Completion> = Vec::new();
    let max_len = engine.buf_size();
    loop {
        if engine.in_flight() == 0 && queued.is_empty() {
            match rx.recv() {
                Ok(m) => take(m, &mut engine, &mut queued, &mut closing, max_len),
                Err(_) => return,
            }
        }
        while let Ok(m) = rx.try_recv() {
            take(m, &mut engine, &mut queued, &mut closing, max_len);
        }
        while !queued.is_empty() && !free.is_empty() {
            let (
                Some(Queued {
                    file,
                    offset,
                    len,
                    reply,
                    first,
                }),
                Some(slot),
            ) = (queued.pop_front(), free.pop())
            else {
                break;
            };
            let req = Request {
                file,
                op: Op::Read,
                offset,
                len,
                slot: Slot(slot),
            };
            match engine.submit(req) {
                Ok(()) => replies[slot] = Some((reply, first)),
                Err(e) => {
                    let _ = reply.send(Err(std::io::Error::other(e)));
                    free.push(slot);
                    if first {
                        // The body never learns the id: remove it here.
                        closing.push(file);
                    }
                }
            }
        }
        if engine.in_flight() > 0 {
            done.clear();
            if let Err(e) = engine.wait(1, &mut done) {
                // The ring is broken: fail what waits and stop.
                for (r, _) in replies.iter_mut().filter_map(Option::take) {
                    let _ = r.send(Err(std::io::Error::other(e.to_string())));
                }
                return;
            }
            for c in &done {
                let slot = c.req.slot.0;
                let data = match c.bytes() {
                    Ok(n) => engine
                        .buf(c.req.slot)
                        .map(|b| (c.req.file, Bytes::copy_from_slice(&b[..n])))
                        .ok_or_else(|| std::io::Error::other("no buffer for a finished read")),
                    Err(e) => Err(e),
                };
                if let Some((r, first)) = replies[slot].take() {
                    let failed = data.is_err();
                    // A first read that fails, or whose body is gone, leaves
                    // a file only this thread knows: remove it.
                    if (r.send(data).is_err() || failed) && first {
                        closing.push(c.req.file);
                    }
                }
                free.push(slot);
            }
        }
        // Files are removed once no read on them is in flight.
        closing.retain(|&f| {
            engine
                .remove_file(f)
                .is_err_and(|e| matches!(e, spindle_io::SubmitError::FileBusy { .. }))
        });
    }
}

/// A read waiting for a free slot.
struct Queued {
    file: FileId,
    offset: u64,
    len: usize,
    reply: ReadReply,
    /// The file's first read (registered for it).
    first: bool,
}

/// One message to the IO thread.
fn take(
    m: Msg,
    engine: &mut Box<dyn IoEngine>,
    queued: &mut VecDeque<Queued>,
    closing: &mut Vec<FileId>,
    max_len: usize,
) {
    match m {
        Msg::Read {
            file,
            offset,
            len,
            reply,
        } => {
            let (id, first) = match file {
                FileRef::Id(id) => (id, false),
                FileRef::New(f) => match engine.add_file(f, Access::ReadOnly) {
                    Ok(id) => (id, true),
                    Err(e) => {
                        let _ = reply.send(Err(std::io::Error::other(e)));
                        return;
                    }
                },
            };
            queued.push_back(Queued {
                file: id,
                offset,
                len: len.min(max_len),
                reply,
                first,
            });
        }
        Msg::Close(file) => {
            if let Err(spindle_io::SubmitError::FileBusy { .. }) = engine.remove_file(file) {
                closing.push(file);
            }
        }
    }
}

/// A response body read through the pool: `count` bytes from `start`.
pub struct FileBody {
    pool: Pool,
    /// The file, for reads from the page cache on the caller's thread.
    file: std::sync::Arc<std::fs::File>,
    /// Its id in the engine once registered.
    id: Option<FileId>,
    offset: u64,
    left: u64,
    pending: Option<oneshot::Receiver<std::io::Result<(FileId, Bytes)>>>,
    /// Whether to try the page cache on the calling thread first.
    cache_reads: bool,
    /// The connection's queue for ranges sent by `sendfile`, when the
    /// connection can take them (see [`super::sendfile`]).
    zero_copy: Option<std::sync::Arc<super::sendfile::SendQueue>>,
    /// Counts it among the open streams, whose number sets its chunks.
    open: OpenGuard,
}

impl FileBody {
    /// A body of `count` bytes of `file` from `start`, one of `streams`.
    pub fn new(
        pool: &Pool,
        streams: &OpenStreams,
        file: std::sync::Arc<std::fs::File>,
        start: u64,
        count: u64,
    ) -> FileBody {
        FileBody {
            pool: pool.clone(),
            file,
            id: None,
            offset: start,
            left: count,
            pending: None,
            cache_reads: true,
            zero_copy: super::sendfile::current(),
            open: streams.open(),
        }
    }

    /// Whether each chunk is first tried from the page cache on the
    /// calling thread (on by default; off sends every read to the engine).
    pub fn cache_reads(mut self, on: bool) -> FileBody {
        self.cache_reads = on;
        self
    }

    /// Whether cached ranges go out by `sendfile` when the connection
    /// allows it (on by default; off copies every chunk through memory).
    pub fn zero_copy(mut self, on: bool) -> FileBody {
        if !on {
            self.zero_copy = None;
        }
        self
    }
}

impl Drop for FileBody {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let _ = self.pool.send(Msg::Close(id));
        }
        // Dropped while the first read is in flight: the IO thread finds
        // nobody to take its reply and removes the file itself.
    }
}

impl http_body::Body for FileBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        let this = &mut *self;
        if this.left == 0 {
            return Poll::Ready(None);
        }
        if this.pending.is_none() {
            // Cached bytes on a connection that can take them go out by
            // sendfile: no read, no copy, no buffer held while the socket
            // is full.
            if let Some(q) = &this.zero_copy {
                let len = (super::sendfile::MAX_STAND_IN as u64).min(this.left);
                if spindle_io::range_cached(&this.file, this.offset, len) == Some(true) {
                    let data = q.stand_in(this.file.clone(), this.offset, len as usize);
                    this.offset += len;
                    this.left -= len;
                    return Poll::Ready(Some(Ok(http_body::Frame::data(data))));
                }
            }
            let len = (this.open.chunk_len() as u64).min(this.left) as usize;
            // What the page cache holds is read right here (a memory copy,
            // no hop to the IO thread); the engine gets what would block.
            let mut v = Vec::new();
            let cached = if this.cache_reads {
                spindle_io::read_cached(&this.file, &mut v, len, this.offset)?
            } else {
                None
            };
            if let Some(n) = cached {
                if n > 0 {
                    let n = (n as u64).min(this.left);
                    this.offset += n;
                    this.left -= n;
                    return Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from(v)))));
                }
            }
            let file = match this.id {
                Some(id) => FileRef::Id(id),
                None => FileRef::New(this.file.try_clone()?),
            };
            let (tx, rx) = oneshot::channel();
            this.pool.send(Msg::Read {
                file,
                offset: this.offset,
                len,
                reply: tx,
            })?;
            this.pending = Some(rx);
        }
        let Some(rx) = this.pending.as_mut() else {
            return Poll::Ready(None);
        };
        let got = match Pin::new(rx).poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(r) => r,
        };
        this.pending = None;
        let (id, data) = got.map_err(|_| std::io::Error::other("the IO thread has stopped"))??;
        this.id = Some(id);
        if data.is_empty() {
            // The file got shorter than its length said.
            this.left = 0;
            return Poll::Ready(Some(Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the file ended early",
            ))));
        }
        let n = (data.len() as u64).min(this.left);
        this.offset += n;
        this.left -= n;
        Poll::Ready(Some(Ok(http_body::Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_shrink_as_streams_open_and_stay_in_bounds() {
        let streams = OpenStreams::default();
        let alone = streams.chunk_len();
        assert!((MIN_CHUNK..=MAX_CHUNK).contains(&alone) && alone.is_multiple_of(4096));
        let many: Vec<OpenGuard> = (0..BUDGET / MIN_CHUNK * 2)
            .map(|_| streams.open())
            .collect();
        assert_eq!(streams.chunk_len(), MIN_CHUNK);
        drop(many);
    }

    async fn collect(b: FileBody) -> Vec<u8> {
        use http_body_util::BodyExt;
        b.collect().await.unwrap().to_bytes().to_vec()
    }

    #[tokio::test]
    async fn every_engine_sends_the_exact_bytes_across_chunks_from_cache_and_from_the_engine() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.bin");
        let data: Vec<u8> = (0..700_001u32).map(|i| (i * 7 % 253) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let len = data.len() as u64;
        for kind in [
            EngineKind::Psync,
            EngineKind::Uring,
            EngineKind::UringSqpoll,
        ] {
            let (pool, _) = Pool::start(kind).unwrap();
            let streams = OpenStreams::default();
            for cache in [true, false] {
                for (start, count) in [(0, len), (1, 300_000), (len - 5, 5), (262_143, 2)] {
                    let f = std::sync::Arc::new(std::fs::File::open(&path).unwrap());
                    let body = FileBody::new(&pool, &streams, f, start, count).cache_reads(cache);
                    let got = collect(body).await;
                    let want = &data[start as usize..(start + count) as usize];
                    assert!(got == want, "{kind} cache {cache}: {start}+{count}");
                }
                // Bodies dropped mid-stream leave no file registered: many
                // more than the engine's table holds come and go.
                for _ in 0..(max_files() as usize + 10) {
                    let f = std::sync::Arc::new(std::fs::File::open(&path).unwrap());
                    let mut body = FileBody::new(&pool, &streams, f, 0, len).cache_reads(cache);
                    let frame = std::future::poll_fn(|cx| {
                        http_body::Body::poll_frame(Pin::new(&mut body), cx)
                    })
                    .await;
                    assert!(frame.is_some_and(|f| f.is_ok()));
                }
            }
        }
    }
}
