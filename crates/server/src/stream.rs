//! Streaming a file over HTTP: `GET`/`HEAD` with `Range` (one range,
//! suffix and open-ended ranges; 206 and 416), `If-Range`, `ETag`,
//! `Last-Modified` and the 304s of `If-None-Match` / `If-Modified-Since`,
//! all decided by [`conditional`], which the tiers' path shares.
//!
//! The body is read from the file in chunks as the client takes them, so
//! a stream costs one buffer, not the file. How the chunks are read is the
//! [`Reader`], started once per server from a [`ReadEngine`] (`spindle
//! serve --io-engine`): tokio's file reads, or one of spindle-io's engines
//! (psync, io_uring, io_uring with SQPOLL) run by a thread of its own (see
//! [`pool`]). Files are sent as they are; transcoding is
//! [`crate::transcode`], whose cached copies are served by the same path.
//!
//! Which file: callers resolve a library entry id to a song and open its
//! file through its music folder's checked open
//! ([`crate::music::Music::stream_of`] through [`crate::music::Opener`], [`Reader::open`]); no request
//! parameter is ever used as a path.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use conditional::{Plan, Validators};
use spindle_media::{MusicRoot, OpenRefused};
use tokio::io::{AsyncReadExt, AsyncSeekExt};

pub mod conditional;
pub mod pool;
pub mod sendfile;

/// Bytes read from the file per chunk.
pub const CHUNK: usize = 64 * 1024;

/// How the stream path reads files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadEngine {
    /// tokio's file reads (a blocking-pool thread per read).
    Tokio,
    /// spindle-io's engines, on an IO thread of their own.
    Io(spindle_io::EngineKind),
}

/// The engine `spindle serve` uses unless told otherwise (see
/// docs/bench-stream.md for the measurements behind it).
pub const DEFAULT_ENGINE: &str = "uring";

impl ReadEngine {
    /// `tokio`, `psync`, `uring` or `uring-sqpoll`.
    pub fn parse(s: &str) -> Result<ReadEngine, String> {
        match s {
            "tokio" => Ok(ReadEngine::Tokio),
            _ => spindle_io::EngineKind::parse(s)
                .map(ReadEngine::Io)
                .map_err(|_| {
                    format!("unknown IO engine '{s}'; expected tokio, psync, uring or uring-sqpoll")
                }),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ReadEngine::Tokio => "tokio",
            ReadEngine::Io(k) => k.name(),
        }
    }
}

/// How streams read files: tokio's file reads, or one of spindle-io's
/// engines on an IO thread of its own (stopped when the last clone of
/// the server state drops); with the files open for streaming and the
/// count of open streams. One per server, in its state: streaming code
/// gets it from there, never from a process-wide static.
#[derive(Default)]
pub struct Reader {
    pool: Option<pool::Pool>,
    /// Files opened for streams, reused by the next ones ([`Reader::open`]).
    files: OpenCache,
    /// The streams open now, which share the chunk budget.
    streams: pool::OpenStreams,
}

impl Reader {
    /// Starts `engine`. Returns it with the reason when an io_uring
    /// engine fell back to psync (io_uring unavailable here).
    pub fn start(engine: ReadEngine) -> Result<(Reader, Option<String>), spindle_io::SetupError> {
        match engine {
            ReadEngine::Tokio => Ok((Reader::default(), None)),
            ReadEngine::Io(kind) => {
                let (p, fell_back) = pool::Pool::start(kind)?;
                let reader = Reader {
                    pool: Some(p),
                    ..Reader::default()
                };
                Ok((reader, fell_back))
            }
        }
    }

    /// What runs: `tokio`, or the engine's name (after any fallback).
    pub fn name(&self) -> &'static str {
        self.pool.as_ref().map_or("tokio", |p| p.kind().name())
    }

    /// A body of `count` bytes of `file` from `start` read through the IO
    /// engine (cached ranges by `sendfile`), one of this reader's streams;
    /// `None` with tokio's reads. `file` is read at offsets only: it may
    /// be shared (the tiers' local copies, [`crate::tiered`]).
    pub(crate) fn file_body(
        &self,
        file: std::sync::Arc<std::fs::File>,
        start: u64,
        count: u64,
    ) -> Option<pool::FileBody> {
        let pool = self.pool.as_ref()?;
        Some(pool::FileBody::new(pool, &self.streams, file, start, count))
    }

    /// The file at `path` (absolute under `root`, or relative to it),
    /// opened through `root`'s checked open, from a small cache of open
    /// files (like nginx's `open_file_cache`): a stream of a popular track
    /// costs no `open`, no `fstat`, and no wake-up of the music folders'
    /// watcher, which hears every open. Only files the checked open gave
    /// are cached, keyed by their folder, so nothing reaches a stream
    /// without the check.
    pub fn open(&self, root: &MusicRoot, path: &Path) -> Result<OpenFile, OpenRefused> {
        let now = std::time::Instant::now();
        let rel = root.relative(path)?;
        let key = (root.path().to_path_buf(), rel);
        if let Some(f) = self.files.get(&key, now) {
            return Ok(f);
        }
        let (file, meta) = root.open(&key.1)?;
        let entry = OpenFile {
            file: std::sync::Arc::new(file),
            meta,
            root: root.clone(),
            rel: key.1.clone(),
        };
        self.files.put(key, entry.clone(), now);
        Ok(entry)
    }
}

/// How long an open file is reused for new requests (nginx's
/// `open_file_cache_valid`, which the benchmark sets to 60 s). A file
/// replaced on disk is served as it was for at most this long, with its
/// old validators, so clients never mix the two.
pub const OPEN_CACHE_TTL: std::time::Duration = std::time::Duration::from_secs(2);
/// Open files kept at most.
const OPEN_CACHE_MAX: usize = 1024;

/// A file under a music folder, opened for streaming through the folder's
/// checked open ([`MusicRoot::open`]: inside the folder once symlinks are
/// resolved, a regular file). Clones share the descriptor: reads of it
/// must give their offset (`pread`, `sendfile` with an offset), never
/// move its position.
#[derive(Clone)]
pub struct OpenFile {
    file: std::sync::Arc<std::fs::File>,
    meta: std::fs::Metadata,
    root: MusicRoot,
    rel: PathBuf,
}

/// Open files by (music folder, path below it), each kept for
/// [`OPEN_CACHE_TTL`], at most [`OPEN_CACHE_MAX`] of them (expired ones
/// are dropped when it is full).
#[derive(Default)]
struct OpenCache(std::sync::Mutex<HashMap<(PathBuf, PathBuf), (OpenFile, std::time::Instant)>>);

impl OpenCache {
    fn get(&self, key: &(PathBuf, PathBuf), now: std::time::Instant) -> Option<OpenFile> {
        let cache = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (v, at) = cache.get(key)?;
        (now.duration_since(*at) < OPEN_CACHE_TTL).then(|| v.clone())
    }

    fn put(&self, key: (PathBuf, PathBuf), v: OpenFile, now: std::time::Instant) {
        let mut cache = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= OPEN_CACHE_MAX {
            cache.retain(|_, (_, at)| now.duration_since(*at) < OPEN_CACHE_TTL);
        }
        if cache.len() < OPEN_CACHE_MAX {
            cache.insert(key, (v, now));
        }
    }
}

/// What was sent, for metrics and logs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sent {
    pub status: u16,
    pub bytes: u64,
}

/// Answers a `GET` (or, with `head`, a `HEAD`) for the file at `path`,
/// opened below its own folder (a regular file, no symlink out of that
/// folder). Files under a music folder go through [`Reader::open`] and
/// [`serve_opened`] with the music folder instead.
pub async fn serve_file(
    reader: &Reader,
    path: &Path,
    content_type: &str,
    req: &HeaderMap,
    head: bool,
) -> (Response, Sent) {
    let opened = path
        .parent()
        .zip(path.file_name())
        .ok_or(())
        .and_then(|(dir, name)| {
            let root = MusicRoot::new(dir).map_err(|_| ())?;
            reader.open(&root, Path::new(name)).map_err(|_| ())
        });
    match opened {
        Ok(f) => serve_opened(reader, f, content_type, req, head).await,
        Err(()) => plain(StatusCode::NOT_FOUND, "the file is gone"),
    }
}

/// Answers a `GET` (or, with `head`, a `HEAD`) for a file opened by
/// [`Reader::open`], with `content_type`, read by `reader`. The caller has
/// checked that the client may read it.
pub async fn serve_opened(
    reader: &Reader,
    opened: OpenFile,
    content_type: &str,
    req: &HeaderMap,
    head: bool,
) -> (Response, Sent) {
    let OpenFile {
        file,
        meta,
        root,
        rel,
    } = opened;
    let len = meta.len();
    let v = Validators::of_file(&meta);
    let Plan {
        builder: b,
        status,
        start,
        count,
    } = match conditional::head(Response::builder(), req, &v, len, content_type) {
        ControlFlow::Continue(plan) => plan,
        ControlFlow::Break(done) => return done,
    };
    let body = if head || count == 0 {
        Body::empty()
    } else if let Some(pool) = &reader.pool {
        Body::new(pool::FileBody::new(
            pool,
            &reader.streams,
            file,
            start,
            count,
        ))
    } else {
        // A file of its own: tokio reads at the file position, which a
        // duplicate of the cached descriptor would share with others.
        let Ok((own, _)) = root.open(&rel) else {
            return plain(StatusCode::NOT_FOUND, "the file is gone");
        };
        let mut file = tokio::fs::File::from_std(own);
        if start > 0 && file.seek(std::io::SeekFrom::Start(start)).await.is_err() {
            return plain(StatusCode::INTERNAL_SERVER_ERROR, "cannot seek in the file");
        }
        let chunk = reader.streams.chunk_len();
        Body::new(TokioBody {
            inner: tokio_util::io::ReaderStream::with_capacity(file.take(count), chunk),
            _open: reader.streams.open(),
        })
    };
    let sent = Sent {
        status: status.as_u16(),
        bytes: if head { 0 } else { count },
    };
    (b.body(body).unwrap_or_default(), sent)
}

/// A body read by tokio's file reads, counted among the open streams.
struct TokioBody {
    inner: tokio_util::io::ReaderStream<tokio::io::Take<tokio::fs::File>>,
    _open: pool::OpenGuard,
}

impl http_body::Body for TokioBody {
    type Data = axum::body::Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        use futures_core::Stream;
        std::pin::Pin::new(&mut self.inner)
            .poll_next(cx)
            .map(|o| o.map(|r| r.map(http_body::Frame::data)))
    }
}

/// A plain-text answer with `status` and nothing streamed (every
/// streaming path's errors).
pub(crate) fn plain(status: StatusCode, msg: impl Into<Body>) -> (Response, Sent) {
    let mut r = Response::new(msg.into());
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    (
        r,
        Sent {
            status: status.as_u16(),
            bytes: 0,
        },
    )
}

impl crate::music::Opener for Reader {
    type File = OpenFile;

    fn open(&self, root: &MusicRoot, path: &Path) -> Result<OpenFile, OpenRefused> {
        Reader::open(self, root, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(r: Response) -> Vec<u8> {
        use http_body_util::BodyExt;
        r.into_body().collect().await.unwrap().to_bytes().to_vec()
    }

    /// `serve_file` of `path` (as `audio/x`) with the request headers `h`.
    async fn ask(
        reader: &Reader,
        path: &Path,
        h: &[(&'static str, &str)],
        head: bool,
    ) -> (Response, Sent) {
        let mut m = HeaderMap::new();
        for (k, v) in h {
            m.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        serve_file(reader, path, "audio/x", &m, head).await
    }

    #[tokio::test]
    async fn files_are_served_with_ranges_validators_and_304s() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.bin");
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let reader = Reader::default();
        let (r, _) = ask(&reader, &path, &[], false).await;
        assert_eq!(r.status(), 200);
        let etag = r.headers()[header::ETAG].to_str().unwrap().to_owned();
        let lm = r.headers()[header::LAST_MODIFIED]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(body_of(r).await, data);

        let (r, s) = ask(&reader, &path, &[("range", "bytes=70000-70009")], false).await;
        assert_eq!((r.status().as_u16(), s.bytes), (206, 10));
        assert_eq!(
            r.headers()[header::CONTENT_RANGE],
            "bytes 70000-70009/200000"
        );
        assert_eq!(body_of(r).await, &data[70000..70010]);

        let (r, _) = ask(&reader, &path, &[("range", "bytes=-3")], false).await;
        assert_eq!(body_of(r).await, &data[199_997..]);

        let (r, _) = ask(&reader, &path, &[("range", "bytes=300000-")], false).await;
        assert_eq!(r.status(), 416);
        assert_eq!(r.headers()[header::CONTENT_RANGE], "bytes */200000");

        let (r, _) = ask(&reader, &path, &[("if-none-match", &etag)], false).await;
        assert_eq!(r.status(), 304);
        let (r, _) = ask(&reader, &path, &[("if-modified-since", &lm)], false).await;
        assert_eq!(r.status(), 304);
        let (r, _) = ask(&reader, &path, &[("if-none-match", "\"other\"")], false).await;
        assert_eq!(r.status(), 200);

        // If-Range with our tag keeps the range; a stale one gets it all.
        let range = ("range", "bytes=0-0");
        let (r, _) = ask(&reader, &path, &[range, ("if-range", &etag)], false).await;
        assert_eq!(r.status(), 206);
        let (r, _) = ask(&reader, &path, &[range, ("if-range", "\"stale\"")], false).await;
        assert_eq!(r.status(), 200);
        let (r, _) = ask(&reader, &path, &[range, ("if-range", &lm)], false).await;
        assert_eq!(r.status(), 206);

        // HEAD: the headers of a GET, no body.
        let (r, _) = ask(&reader, &path, &[], true).await;
        assert_eq!(r.headers()[header::CONTENT_LENGTH], "200000");
        assert!(body_of(r).await.is_empty());
    }
}
