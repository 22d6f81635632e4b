//! Streaming a file over HTTP: `GET`/`HEAD` with `Range` (one range,
//! suffix and open-ended ranges; 206 and 416), `If-Range`, `ETag`,
//! `Last-Modified` and the 304s of `If-None-Match` / `If-Modified-Since`.
//!
//! The body is read from the file in chunks as the client takes them, so
//! a stream costs one buffer, not the file. How the chunks are read is the
//! [`ReadEngine`], chosen once per process with [`configure`] (`spindle
//! serve --io-engine`): tokio's file reads, or one of spindle-io's engines
//! (psync, io_uring, io_uring with SQPOLL) run by a thread of its own (see
//! [`pool`]). Files are sent as they are: there is no transcoding.
//!
//! Which file: callers resolve a library entry id to a song and open its
//! file through its music folder's checked open
//! ([`crate::music::Music::stream_of`], [`open_cached`]); no request
//! parameter is ever used as a path.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use spindle_media::{MusicRoot, OpenRefused};
use tokio::io::{AsyncReadExt, AsyncSeekExt};

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

static READER: std::sync::OnceLock<Option<pool::Pool>> = std::sync::OnceLock::new();

/// Sets the process's read engine (once; later calls change nothing).
/// Returns what runs: an io_uring engine falls back to psync where
/// io_uring is unavailable, and the reason is returned with it.
pub fn configure(engine: ReadEngine) -> Result<(String, Option<String>), spindle_io::SetupError> {
    let (pool, note) = match engine {
        ReadEngine::Tokio => (None, None),
        ReadEngine::Io(kind) => {
            let (p, fell_back) = pool::Pool::start(kind)?;
            (Some(p), fell_back)
        }
    };
    let name = pool
        .as_ref()
        .map_or("tokio".to_owned(), |p| p.kind().name().to_owned());
    let _ = READER.set(pool);
    Ok((name, note))
}

fn reader() -> Option<&'static pool::Pool> {
    READER.get().and_then(Option::as_ref)
}

/// What a `Range` header asks of a body of a given length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeReq {
    /// No range, or one we do not serve (malformed, several ranges, a unit
    /// other than bytes): send the whole body with 200.
    Full,
    /// Bytes `start..=end` (inclusive), with 206.
    Partial { start: u64, end: u64 },
    /// A well-formed range entirely past the end: 416.
    Unsatisfiable,
}

/// Parses a `Range` header value against a body of `len` bytes (RFC 9110
/// §14.1.2). Several ranges are treated as unsupported: the whole body is
/// sent, which the RFC allows and every player copes with.
pub fn parse_range(value: &str, len: u64) -> RangeReq {
    let Some(spec) = value.trim().strip_prefix("bytes=") else {
        return RangeReq::Full;
    };
    let spec = spec.trim();
    if spec.contains(',') {
        return RangeReq::Full;
    }
    let Some((a, b)) = spec.split_once('-') else {
        return RangeReq::Full;
    };
    let (a, b) = (a.trim(), b.trim());
    let num = |s: &str| -> Option<u64> {
        if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    if a.is_empty() {
        // Suffix: the last N bytes.
        let Some(n) = num(b) else {
            return RangeReq::Full;
        };
        if n == 0 || len == 0 {
            return RangeReq::Unsatisfiable;
        }
        return RangeReq::Partial {
            start: len.saturating_sub(n),
            end: len - 1,
        };
    }
    let Some(start) = num(a) else {
        return RangeReq::Full;
    };
    let end = if b.is_empty() {
        None
    } else {
        match num(b) {
            Some(e) if e >= start => Some(e),
            _ => return RangeReq::Full,
        }
    };
    if start >= len {
        return RangeReq::Unsatisfiable;
    }
    RangeReq::Partial {
        start,
        end: end.map_or(len - 1, |e| e.min(len - 1)),
    }
}

/// The validators of a file: a strong ETag from size and mtime, and the
/// mtime for `Last-Modified`.
#[derive(Debug, Clone)]
pub struct Validators {
    pub etag: String,
    pub modified: SystemTime,
}

impl Validators {
    pub fn of(meta: &std::fs::Metadata) -> Validators {
        let modified = meta.modified().unwrap_or(UNIX_EPOCH);
        let nanos = modified
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Validators {
            etag: format!("\"{:x}-{:x}\"", meta.len(), nanos),
            modified,
        }
    }

    fn last_modified(&self) -> String {
        httpdate::fmt_http_date(self.modified)
    }

    fn modified_secs(&self) -> u64 {
        self.modified
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }

    /// `If-None-Match`: any listed tag equal (weak comparison), or `*`.
    fn none_match(&self, value: &str) -> bool {
        let mine = self.etag.trim_start_matches("W/");
        value
            .split(',')
            .map(str::trim)
            .any(|t| t == "*" || t.trim_start_matches("W/") == mine)
    }

    /// `If-Modified-Since` / `If-Range` dates compare at second precision.
    fn not_modified_since(&self, value: &str) -> bool {
        httpdate::parse_http_date(value).is_ok_and(|d| {
            d.duration_since(UNIX_EPOCH)
                .is_ok_and(|d| self.modified_secs() <= d.as_secs())
        })
    }

    /// `If-Range`: a strong ETag equal to ours, or exactly our date.
    fn if_range_holds(&self, value: &str) -> bool {
        let v = value.trim();
        if v.starts_with('"') {
            return v == self.etag;
        }
        if v.starts_with("W/") {
            return false;
        }
        httpdate::parse_http_date(v).is_ok_and(|d| {
            d.duration_since(UNIX_EPOCH)
                .is_ok_and(|d| d.as_secs() == self.modified_secs())
        })
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

/// Answers by (music folder, path below it), each kept for
/// [`OPEN_CACHE_TTL`], at most [`OPEN_CACHE_MAX`] of them (expired ones
/// are dropped when it is full).
struct PathCache<V>(std::sync::Mutex<HashMap<(PathBuf, PathBuf), (V, std::time::Instant)>>);

impl<V: Clone> PathCache<V> {
    fn new() -> PathCache<V> {
        PathCache(std::sync::Mutex::new(HashMap::new()))
    }

    fn get(&self, key: &(PathBuf, PathBuf), now: std::time::Instant) -> Option<V> {
        let cache = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (v, at) = cache.get(key)?;
        (now.duration_since(*at) < OPEN_CACHE_TTL).then(|| v.clone())
    }

    fn put(&self, key: (PathBuf, PathBuf), v: V, now: std::time::Instant) {
        let mut cache = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= OPEN_CACHE_MAX {
            cache.retain(|_, (_, at)| now.duration_since(*at) < OPEN_CACHE_TTL);
        }
        if cache.len() < OPEN_CACHE_MAX {
            cache.insert(key, (v, now));
        }
    }
}

static OPEN_CACHE: std::sync::LazyLock<PathCache<OpenFile>> =
    std::sync::LazyLock::new(PathCache::new);

/// The file at `path` (absolute under `root`, or relative to it), opened
/// through `root`'s checked open, from a small cache of open files (like
/// nginx's `open_file_cache`): a stream of a popular track costs no
/// `open`, no `fstat`, and no wake-up of the music folders' watcher,
/// which hears every open. Only files the checked open gave are cached,
/// keyed by their folder, so nothing reaches a stream without the check.
pub fn open_cached(root: &MusicRoot, path: &Path) -> Result<OpenFile, OpenRefused> {
    let now = std::time::Instant::now();
    let rel = root.relative(path)?;
    let key = (root.path().to_path_buf(), rel);
    if let Some(f) = OPEN_CACHE.get(&key, now) {
        return Ok(f);
    }
    let (file, meta) = root.open(&key.1)?;
    let entry = OpenFile {
        file: std::sync::Arc::new(file),
        meta,
        root: root.clone(),
        rel: key.1.clone(),
    };
    OPEN_CACHE.put(key, entry.clone(), now);
    Ok(entry)
}

/// What was sent, for metrics and logs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sent {
    pub status: u16,
    pub bytes: u64,
}

fn header_str(h: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// Answers a `GET` (or, with `head`, a `HEAD`) for the file at `path`,
/// opened below its own folder (a regular file, no symlink out of that
/// folder). Files under a music folder go through [`open_cached`] and
/// [`serve_opened`] with the music folder instead.
pub async fn serve_file(
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
            open_cached(&root, Path::new(name)).map_err(|_| ())
        });
    match opened {
        Ok(f) => serve_opened(f, content_type, req, head).await,
        Err(()) => plain(StatusCode::NOT_FOUND, "the file is gone"),
    }
}

/// Answers a `GET` (or, with `head`, a `HEAD`) for a file opened by
/// [`open_cached`], with `content_type`. The caller has checked that the
/// client may read it.
pub async fn serve_opened(
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
    let v = Validators::of(&meta);

    let mut b = Response::builder()
        .header(header::ACCEPT_RANGES, "bytes")
        .header(header::ETAG, &v.etag)
        .header(header::LAST_MODIFIED, v.last_modified())
        .header(header::CACHE_CONTROL, "private, max-age=0");

    let not_modified = match header_str(req, header::IF_NONE_MATCH) {
        Some(inm) => v.none_match(inm),
        None => header_str(req, header::IF_MODIFIED_SINCE).is_some_and(|d| v.not_modified_since(d)),
    };
    if not_modified {
        let r = b
            .status(StatusCode::NOT_MODIFIED)
            .body(Body::empty())
            .unwrap_or_default();
        return (
            r,
            Sent {
                status: 304,
                bytes: 0,
            },
        );
    }

    let mut range = header_str(req, header::RANGE).map_or(RangeReq::Full, |r| parse_range(r, len));
    if let Some(ir) = header_str(req, header::IF_RANGE) {
        if !v.if_range_holds(ir) {
            range = RangeReq::Full;
        }
    }
    let (status, start, count) = match range {
        RangeReq::Full => (StatusCode::OK, 0, len),
        RangeReq::Partial { start, end } => {
            b = b.header(header::CONTENT_RANGE, format!("bytes {start}-{end}/{len}"));
            (StatusCode::PARTIAL_CONTENT, start, end - start + 1)
        }
        RangeReq::Unsatisfiable => {
            let r = b
                .status(StatusCode::RANGE_NOT_SATISFIABLE)
                .header(header::CONTENT_RANGE, format!("bytes */{len}"))
                .header(header::CONTENT_LENGTH, "0")
                .body(Body::empty())
                .unwrap_or_default();
            return (
                r,
                Sent {
                    status: 416,
                    bytes: 0,
                },
            );
        }
    };
    b = b
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CONTENT_LENGTH, count);
    let body = if head || count == 0 {
        Body::empty()
    } else if let Some(pool) = reader() {
        Body::new(pool::FileBody::new(pool, file, start, count))
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
        let reader = file.take(count);
        Body::new(TokioBody {
            inner: tokio_util::io::ReaderStream::with_capacity(reader, pool::chunk_len()),
            _open: pool::OpenGuard::new(),
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

fn plain(status: StatusCode, msg: &'static str) -> (Response, Sent) {
    let mut r = Response::new(Body::from(msg));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_headers_are_parsed_as_rfc_9110_says() {
        use RangeReq::*;
        let p = |start, end| Partial { start, end };
        let len = 1000;
        let cases: &[(&str, RangeReq)] = &[
            ("bytes=0-99", p(0, 99)),
            ("bytes=100-", p(100, 999)),
            ("bytes=-100", p(900, 999)),
            ("bytes=-5000", p(0, 999)),
            ("bytes=990-5000", p(990, 999)),
            ("bytes=999-999", p(999, 999)),
            (" bytes= 5 - 9 ", p(5, 9)),
            ("bytes=1000-", Unsatisfiable),
            ("bytes=5000-6000", Unsatisfiable),
            ("bytes=-0", Unsatisfiable),
            // Malformed: ignored, the whole body is sent.
            ("bytes=9-5", Full),
            ("bytes=abc", Full),
            ("bytes=-", Full),
            ("bytes=1-2-3", Full),
            ("bytes=+1-2", Full),
            ("bytes=0x10-", Full),
            ("items=0-5", Full),
            ("", Full),
            ("bytes=99999999999999999999999-", Full),
            // Several or overlapping ranges: unsupported, whole body.
            ("bytes=0-1,5-6", Full),
            ("bytes=0-500,100-600", Full),
        ];
        for (h, want) in cases {
            assert_eq!(parse_range(h, len), *want, "Range: {h}");
        }
        assert_eq!(parse_range("bytes=0-", 0), Unsatisfiable);
        assert_eq!(parse_range("bytes=-1", 0), Unsatisfiable);
    }

    #[test]
    fn random_range_headers_never_panic_and_stay_in_bounds() {
        use rand::{Rng, SeedableRng};
        let seed: u64 = rand::random();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        let alphabet = b"bytes=-0123456789, x";
        for _ in 0..20_000 {
            let n = rng.gen_range(0..16);
            let h: String = (0..n)
                .map(|_| alphabet[rng.gen_range(0..alphabet.len())] as char)
                .collect();
            let h = if rng.gen_bool(0.7) {
                format!("bytes={h}")
            } else {
                h
            };
            let len = rng.gen_range(0..2000u64);
            if let RangeReq::Partial { start, end } = parse_range(&h, len) {
                assert!(start <= end && end < len, "seed {seed}: {h:?} len {len}");
            }
        }
    }

    async fn body_of(r: Response) -> Vec<u8> {
        use http_body_util::BodyExt;
        r.into_body().collect().await.unwrap().to_bytes().to_vec()
    }

    #[tokio::test]
    async fn files_are_served_with_ranges_validators_and_304s() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.bin");
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let get = |h: &[(&'static str, String)]| {
            let mut m = HeaderMap::new();
            for (k, v) in h {
                m.insert(*k, HeaderValue::from_str(v).unwrap());
            }
            m
        };
        let (r, _) = serve_file(&path, "audio/x", &get(&[]), false).await;
        assert_eq!(r.status(), 200);
        let etag = r.headers()[header::ETAG].to_str().unwrap().to_owned();
        let lm = r.headers()[header::LAST_MODIFIED]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(body_of(r).await, data);

        let (r, s) = serve_file(
            &path,
            "audio/x",
            &get(&[("range", "bytes=70000-70009".into())]),
            false,
        )
        .await;
        assert_eq!((r.status().as_u16(), s.bytes), (206, 10));
        assert_eq!(
            r.headers()[header::CONTENT_RANGE],
            "bytes 70000-70009/200000"
        );
        assert_eq!(body_of(r).await, &data[70000..70010]);

        let (r, _) = serve_file(
            &path,
            "audio/x",
            &get(&[("range", "bytes=-3".into())]),
            false,
        )
        .await;
        assert_eq!(body_of(r).await, &data[199_997..]);

        let (r, _) = serve_file(
            &path,
            "audio/x",
            &get(&[("range", "bytes=300000-".into())]),
            false,
        )
        .await;
        assert_eq!(r.status(), 416);
        assert_eq!(r.headers()[header::CONTENT_RANGE], "bytes */200000");

        let (r, _) = serve_file(
            &path,
            "audio/x",
            &get(&[("if-none-match", etag.clone())]),
            false,
        )
        .await;
        assert_eq!(r.status(), 304);
        let (r, _) = serve_file(
            &path,
            "audio/x",
            &get(&[("if-modified-since", lm.clone())]),
            false,
        )
        .await;
        assert_eq!(r.status(), 304);
        let (r, _) = serve_file(
            &path,
            "audio/x",
            &get(&[("if-none-match", "\"other\"".into())]),
            false,
        )
        .await;
        assert_eq!(r.status(), 200);

        // If-Range with our tag keeps the range; a stale one gets it all.
        let (r, _) = serve_file(
            &path,
            "audio/x",
            &get(&[("range", "bytes=0-0".into()), ("if-range", etag)]),
            false,
        )
        .await;
        assert_eq!(r.status(), 206);
        let (r, _) = serve_file(
            &path,
            "audio/x",
            &get(&[
                ("range", "bytes=0-0".into()),
                ("if-range", "\"stale\"".into()),
            ]),
            false,
        )
        .await;
        assert_eq!(r.status(), 200);
        let (r, _) = serve_file(
            &path,
            "audio/x",
            &get(&[("range", "bytes=0-0".into()), ("if-range", lm)]),
            false,
        )
        .await;
        assert_eq!(r.status(), 206);

        // HEAD: the headers of a GET, no body.
        let (r, _) = serve_file(&path, "audio/x", &get(&[]), true).await;
        assert_eq!(r.headers()[header::CONTENT_LENGTH], "200000");
        assert!(body_of(r).await.is_empty());
    }
}
