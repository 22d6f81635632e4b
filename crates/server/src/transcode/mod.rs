//! Transcoding: Subsonic's `stream` with `format` and `maxBitRate` (and
//! rules giving users and clients defaults), `timeOffset` seeks, and the
//! web player's streams of formats browsers cannot decode, made by
//! Debian's ffmpeg as a child process. docs/transcoding.md has the
//! configuration, the cache's keys and layout, and the limits.
//!
//! - [`plan`]: whether a request is transcoded, and to what (pure).
//! - [`format`](mod@format): the output formats and their ffmpeg options.
//! - [`config`]: the `[transcode]` section and its rules.
//! - [`gate`]: the encode slots and their fair queue.
//! - [`ffmpeg`]: one encode, its pump to the client and its tee.
//! - [`pace`]: the pace a client must keep to hold its slot.
//! - [`cache`]: finished transcodes in the hot folder.
//!
//! A request goes: plan → cache (a hot copy is served like any file,
//! with ranges and conditional requests, by [`crate::stream`]) → a slot
//! → ffmpeg → the body, chunked (or with an estimated length when asked),
//! ending only once ffmpeg exited 0.

pub mod cache;
pub mod config;
pub mod ffmpeg;
pub mod format;
pub mod gate;
pub mod pace;
pub mod plan;
pub mod prepare;

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use spindle_tiers::TrackRef;
use tokio::sync::{mpsc, OnceCell};

pub use config::{TranscodeConfig, CACHE_BUDGET, CACHE_DIR};
pub use ffmpeg::EncodeError;
pub use format::Format;
pub use gate::Busy;
pub use plan::{Ask, Plan, Source, Target};

use crate::catalog::Song;
use crate::state::AppState;
use crate::stream::Sent;

/// How long a refused client is asked to wait (`Retry-After`).
pub const RETRY_AFTER_SECS: u64 = 5;
/// The bitrate of the web player's transcodes (MP3: every browser).
pub const BROWSER_BITRATE: u32 = 256;

/// Why a transcode could not be served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TranscodeError {
    #[error(transparent)]
    Busy(#[from] Busy),
    #[error(transparent)]
    Encode(#[from] EncodeError),
    #[error("{0} cannot be read: no copy of it is reachable")]
    NoSource(String),
}

/// The server's transcoder: its settings, encode slots and cache. One
/// per server, in [`AppState`].
pub struct Transcoder {
    cfg: TranscodeConfig,
    gate: Arc<gate::Gate>,
    /// Opened on first use (the own cache reads its copies at open).
    cache: OnceCell<Option<Arc<cache::Cache>>>,
    /// Preparations running ([`prepare`]), stopped by
    /// [`Transcoder::shutdown`].
    tasks: std::sync::Mutex<tokio::task::JoinSet<()>>,
    stopping: std::sync::atomic::AtomicBool,
}

impl Transcoder {
    pub fn new(cfg: TranscodeConfig) -> Transcoder {
        Transcoder {
            gate: gate::Gate::new(cfg.max_concurrent, cfg.queue, cfg.queue_timeout),
            cfg,
            cache: OnceCell::new(),
            tasks: std::sync::Mutex::new(tokio::task::JoinSet::new()),
            stopping: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Stops the preparations ahead (their ffmpeg is killed and reaped)
    /// and waits for them; none starts afterwards. Live transcodes end
    /// with their connections.
    pub async fn shutdown(&self) {
        self.stopping
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let mut tasks = std::mem::take(&mut *crate::state::lock(&self.tasks));
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }

    pub fn config(&self) -> &TranscodeConfig {
        &self.cfg
    }

    /// Encodes (running, waiting for a slot).
    pub fn load(&self) -> (usize, usize) {
        self.gate.load()
    }

    async fn cache(&self, st: &AppState) -> Option<Arc<cache::Cache>> {
        self.cache
            .get_or_init(|| async {
                if let Some(c) = st.tiers().and_then(cache::Cache::of_tiers) {
                    return Some(Arc::new(c));
                }
                let dir = self.cfg.cache_dir.clone()?;
                let budget = self.cfg.cache_budget;
                let opened =
                    spindle_app::offload::run(move || cache::Cache::open_own(&dir, budget)).await;
                match opened {
                    Ok(Ok(c)) => Some(Arc::new(c)),
                    Ok(Err(e)) => {
                        tracing::warn!("transcodes will not be cached: {e}");
                        None
                    }
                    Err(_) => None,
                }
            })
            .await
            .clone()
    }
}

/// `http` with the transcode cache in `data_dir/`[`CACHE_DIR`] unless
/// the config names a folder (used when there is no hot tier).
pub fn with_cache_under(mut http: crate::Config, data_dir: &std::path::Path) -> crate::Config {
    if http.transcode.cache_dir.is_none() {
        http.transcode.cache_dir = Some(data_dir.join(CACHE_DIR));
    }
    http
}

/// A song ready to transcode: found and opened on a blocking thread
/// ([`Prepared::of`]), served by [`serve`].
pub struct Prepared {
    /// The file, opened through its music folder's checked open, if it
    /// could be (else the tiers are read).
    file: Option<std::fs::File>,
    /// For logs and messages.
    path: PathBuf,
    track: TrackRef,
    /// Seconds.
    duration: Option<u32>,
    /// The variant key's file version.
    version: String,
    pub source: Source,
}

impl Prepared {
    /// Opens `song`'s file through its music folder (blocking).
    pub fn of(st: &AppState, song: &Song) -> Prepared {
        let opened = st.music.file_of(song).ok();
        let version = match &opened {
            Some((_, meta)) => {
                let mtime = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_secs());
                format!("{:x}-{mtime:x}", meta.len())
            }
            None => format!("{:x}-0", song.size.unwrap_or(0)),
        };
        Prepared {
            file: opened.map(|(f, _)| f),
            path: song.file.clone(),
            track: crate::Music::track_of(song),
            duration: song.duration.and_then(|d| u32::try_from(d).ok()),
            version,
            source: Source {
                suffix: song.suffix.clone(),
                bitrate: song.bitrate.and_then(|b| u32::try_from(b).ok()),
            },
        }
    }

    /// The cache key of its transcode to `t`.
    fn key(&self, t: &Target) -> String {
        spindle_tiers::runtime::variant_key(&self.track.key, &t.variant(), &self.version)
    }

    /// The seconds of audio a transcode to `t` holds (0: unknown).
    fn secs(&self, t: &Target) -> f64 {
        (f64::from(self.duration.unwrap_or(0)) - t.offset).max(0.0)
    }

    /// The bytes a transcode to `t` is expected to take.
    fn estimate(&self, t: &Target) -> u64 {
        let secs = f64::from(self.duration.unwrap_or(0)) - t.offset;
        let kbps = match t.bitrate {
            0 => self.source.bitrate.unwrap_or(1000),
            b => b,
        };
        (secs.max(0.0) * f64::from(kbps) * 1000.0 / 8.0) as u64
    }
}

/// The first rule that covers `user` with `client` and whose query
/// matches `song` (library lookups: call on a blocking thread).
pub fn rule_for<'a>(
    st: &'a AppState,
    user: &str,
    client: &str,
    song: &Song,
) -> Option<&'a config::Rule> {
    let rules = &st.transcoder.cfg.rules;
    let covering = rules.iter().filter(|r| r.covers(user, client));
    let mut lib = None;
    for r in covering {
        let Some((pattern, coll)) = &r.query else {
            return Some(r);
        };
        let lib = lib.get_or_insert_with(|| st.db.read());
        // The song first: the rule's filters are then tested on it alone.
        let one = spindle_query::Coll::Intersection(vec![
            spindle_query::Coll::IdList(vec![song.id]),
            coll.clone(),
        ]);
        match lib.query_ids(&one, &spindle_query::SourcePref::default()) {
            Ok(ids) if !ids.ids.is_empty() => return Some(r),
            Ok(_) => {}
            Err(e) => tracing::warn!("transcode rule {pattern:?}: {e}"),
        }
    }
    None
}

/// The plan for `song` asked by `user` with `client` (blocking: rules
/// may read the library).
pub fn plan_for(
    st: &AppState,
    user: &str,
    client: &str,
    song: &Song,
    ask: &Ask,
) -> Result<Plan, format::UnknownFormat> {
    let rule = rule_for(st, user, client, song);
    let src = Source {
        suffix: song.suffix.clone(),
        bitrate: song.bitrate.and_then(|b| u32::try_from(b).ok()),
    };
    plan::decide(ask, rule, &src, st.transcoder.cfg.default_format)
}

/// For the web player: a transcode to MP3 when browsers cannot decode
/// `song` (APE, WavPack, AIFF, ALAC, …), else `None` (the file as it is).
/// The rules come first (the source decision, `source.rs`).
pub fn for_browser(song: &Song) -> Option<Target> {
    let kbps = song.bitrate.and_then(|b| u32::try_from(b).ok());
    format::browser_cannot_play(&song.suffix, kbps).then_some(Target {
        format: Format::Mp3,
        bitrate: BROWSER_BITRATE,
        offset: 0.0,
    })
}

/// Answers a request for `p` transcoded to `t`: the cached copy when
/// there is one (ranges, `ETag`, 304 — as any file), else a live encode
/// (`200`, chunked; with `estimate`, a `Content-Length` of duration ×
/// bitrate, the body cut or zero-padded to it). `user` queues fairly.
/// Then, with spare encode slots, `next` (the album's next track, if
/// given) is transcoded the same way into the cache ([`prepare`]).
#[allow(
    clippy::too_many_arguments,
    reason = "what the request asks, and one track to prepare"
)]
pub async fn serve(
    st: &AppState,
    p: Prepared,
    t: Target,
    req: &HeaderMap,
    head: bool,
    estimate: bool,
    user: &str,
    next: Option<Prepared>,
) -> Result<(Response, Sent), TranscodeError> {
    // Prepared only once this request holds what it needs (a cached
    // copy, or an encode slot): a preparation never delays it.
    let mut next = next.filter(|_| !head && t.offset == 0.0);
    let tc = &st.transcoder;
    let estimated = p.estimate(&t);
    let secs = p.secs(&t);
    // Without a duration there is nothing to estimate from.
    let estimate = estimate && estimated > 0;
    let cache = if t.offset > 0.0 {
        None
    } else {
        tc.cache(st).await
    };
    let key = p.key(&t);
    let mut keep = false;
    if let Some(c) = &cache {
        let a = c.access(&key, estimated);
        keep = a.keep;
        if a.hit.is_some() {
            let (dir, name) = c.object(&key);
            if let Ok(root) = spindle_media::MusicRoot::new(&dir) {
                if let Ok(f) = st.reader.open(&root, &name) {
                    let ct = t.format.content_type();
                    if let Some(n) = next.take() {
                        prepare::spawn(st, n, t);
                    }
                    return Ok(crate::stream::serve_opened(&st.reader, f, ct, req, head).await);
                }
            }
        }
    }
    let mut b = Response::builder()
        .header(header::CONTENT_TYPE, t.format.content_type())
        .header(header::ACCEPT_RANGES, "none")
        .header("x-spindle-transcode", t.variant());
    if estimate {
        b = b.header(header::CONTENT_LENGTH, estimated);
    }
    if head {
        let sent = Sent {
            status: 200,
            bytes: 0,
        };
        return Ok((b.body(Body::empty()).unwrap_or_default(), sent));
    }
    let permit = tc.gate.acquire(user).await?;
    let input = match p.file {
        Some(f) => ffmpeg::Input::File(f),
        None => match st.tiers() {
            Some(tiers) => match tiers.open(&p.track, 0).await {
                Ok(s) => ffmpeg::Input::Stream(Box::new(s)),
                Err(e) => {
                    tracing::warn!(path = %p.path.display(), "cannot transcode {}: {e}", p.path.display());
                    return Err(TranscodeError::NoSource(p.track.key.clone()));
                }
            },
            None => {
                tracing::warn!(path = %p.path.display(), "cannot transcode {}: the file does not open", p.path.display());
                return Err(TranscodeError::NoSource(p.track.key.clone()));
            }
        },
    };
    let started = ffmpeg::start(&tc.cfg.ffmpeg, input, &t, permit, &p.path, secs).await?;
    let copy = match (&cache, keep) {
        (Some(c), true) => c.writer(&key, estimated).map(|w| (c.clone(), w)),
        _ => None,
    };
    let progress = Arc::new(pace::Progress::default());
    let judge = pace::Pace::new(tc.cfg.stall_timeout, t.bitrate, std::time::Instant::now());
    let rx = ffmpeg::pump(started, copy, Some((judge, progress.clone())));
    if let Some(n) = next {
        prepare::spawn(st, n, t);
    }
    let body = Body::new(Live {
        rx,
        limit: estimate.then_some(estimated),
        sent: 0,
        progress,
    });
    let sent = Sent {
        status: 200,
        bytes: if estimate { estimated } else { 0 },
    };
    Ok((b.body(body).unwrap_or_default(), sent))
}

/// The answer to a [`TranscodeError`] outside the Subsonic API: 503 with
/// `Retry-After` when busy, else 500; the message in plain text.
pub fn error_response(e: &TranscodeError) -> Response {
    let status = match e {
        TranscodeError::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let (mut r, _) = crate::stream::plain(status, e.to_string());
    if matches!(e, TranscodeError::Busy(_)) {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    }
    r
}

/// A live transcode's body: ffmpeg's output as the pump sends it; an
/// error from the pump aborts the connection. With a `limit` (the
/// estimated length) the body is exactly that long: cut, or padded with
/// zeros once ffmpeg finished. What it hands on is the client's
/// progress ([`pace`]); once the pump cut the client off, the body ends
/// with an error.
struct Live {
    rx: mpsc::Receiver<std::io::Result<Bytes>>,
    limit: Option<u64>,
    sent: u64,
    progress: Arc<pace::Progress>,
}

impl http_body::Body for Live {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        if self.progress.is_cut() {
            return Poll::Ready(Some(Err(std::io::Error::other(
                "the client read too slowly: the transcode was stopped",
            ))));
        }
        let left = self.limit.map(|l| l.saturating_sub(self.sent));
        if left == Some(0) {
            return Poll::Ready(None);
        }
        match self.rx.poll_recv(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Ready(Some(Ok(mut chunk))) => {
                if let Some(left) = left {
                    chunk.truncate(usize::try_from(left).unwrap_or(usize::MAX));
                }
                self.sent += chunk.len() as u64;
                self.progress.took(chunk.len() as u64);
                Poll::Ready(Some(Ok(http_body::Frame::data(chunk))))
            }
            Poll::Ready(None) => match left {
                None => Poll::Ready(None),
                Some(left) => {
                    let n = left.min(ffmpeg::CHUNK as u64) as usize;
                    self.sent += n as u64;
                    Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from(vec![0u8; n])))))
                }
            },
        }
    }
}
