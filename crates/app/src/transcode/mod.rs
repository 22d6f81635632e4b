//! Transcoding: Subsonic's `stream` with `format` and `maxBitRate` (and
//! rules giving users and clients defaults), `timeOffset` seeks, and the
//! web player's streams of formats browsers cannot decode, made by
//! Debian's ffmpeg as a child process. docs/transcoding.md has the
//! configuration, the cache's keys and layout, and the limits.
//!
//! This is the [`Transcoder`] service; the HTTP answers (a cached copy
//! served as a file, a live encode's body) are the server's.
//!
//! - [`plan`]: whether a request is transcoded, and to what (pure).
//! - [`format`](mod@format): the output formats and their ffmpeg options.
//! - [`config`]: the `[transcode]` section and its rules.
//! - [`gate`]: the encode slots and their fair queue.
//! - [`ffmpeg`]: one encode, its pump to the client and its tee.
//! - [`pace`]: the pace a client must keep to hold its slot.
//! - [`cache`]: finished transcodes in the hot folder.
//! - [`prepare`]: the album's next track, transcoded ahead.
//!
//! A request goes: plan ([`Transcoder::plan_for`]) → cache
//! ([`Transcoder::cache`]: a hot copy is served like any file, with
//! ranges and conditional requests) → a slot → ffmpeg
//! ([`Transcoder::encode`]) → the body, chunked (or with an estimated
//! length when asked), ending only once ffmpeg exited 0.

pub mod cache;
pub mod config;
pub mod ffmpeg;
pub mod format;
pub mod gate;
pub mod pace;
pub mod plan;
pub mod prepare;

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use spindle_store::Db;
use spindle_tiers::{Tiers, TrackRef};
use tokio::sync::{mpsc, OnceCell};

pub use config::{TranscodeConfig, CACHE_BUDGET, CACHE_DIR};
pub use ffmpeg::EncodeError;
pub use format::Format;
pub use gate::Busy;
pub use plan::{Ask, Plan, Source, Target};

use crate::catalog::Song;
use crate::music::Music;

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
/// per server, shared by every adapter that streams.
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
        let mut tasks = std::mem::take(&mut *crate::sync::lock(&self.tasks));
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

    /// The transcode cache: the hot tier's when there are `tiers`, else
    /// the own one in the configured folder (opened on first use), else
    /// none.
    pub async fn cache(&self, tiers: Option<&Arc<Tiers>>) -> Option<Arc<cache::Cache>> {
        self.cache
            .get_or_init(|| async {
                if let Some(c) = tiers.and_then(cache::Cache::of_tiers) {
                    return Some(Arc::new(c));
                }
                let dir = self.cfg.cache_dir.clone()?;
                let budget = self.cfg.cache_budget;
                let opened =
                    crate::offload::run(move || cache::Cache::open_own(&dir, budget)).await;
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

/// A song ready to transcode: found and opened on a blocking thread
/// ([`Prepared::of`]), encoded by [`Transcoder::encode`].
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
    /// Opens `song`'s file through its music folder in `music`
    /// (blocking).
    pub fn of(music: &Music, song: &Song) -> Prepared {
        let opened = music.file_of(song).ok();
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
            track: Music::track_of(song),
            duration: song.duration.and_then(|d| u32::try_from(d).ok()),
            version,
            source: Source {
                suffix: song.suffix.clone(),
                bitrate: song.bitrate.and_then(|b| u32::try_from(b).ok()),
            },
        }
    }

    /// The cache key of its transcode to `t`.
    pub fn key(&self, t: &Target) -> String {
        spindle_tiers::runtime::variant_key(&self.track.key, &t.variant(), &self.version)
    }

    /// The seconds of audio a transcode to `t` holds (0: unknown).
    pub fn secs(&self, t: &Target) -> f64 {
        (f64::from(self.duration.unwrap_or(0)) - t.offset).max(0.0)
    }

    /// The bytes a transcode to `t` is expected to take.
    pub fn estimate(&self, t: &Target) -> u64 {
        let secs = f64::from(self.duration.unwrap_or(0)) - t.offset;
        let kbps = match t.bitrate {
            0 => self.source.bitrate.unwrap_or(1000),
            b => b,
        };
        (secs.max(0.0) * f64::from(kbps) * 1000.0 / 8.0) as u64
    }
}

impl Transcoder {
    /// The first rule that covers `user` with `client` and whose query
    /// matches `song` in `db` (library lookups: call on a blocking
    /// thread).
    pub fn rule_for(
        &self,
        db: &Db,
        user: &str,
        client: &str,
        song: &Song,
    ) -> Option<&config::Rule> {
        let rules = &self.cfg.rules;
        let covering = rules.iter().filter(|r| r.covers(user, client));
        let mut lib = None;
        for r in covering {
            let Some((pattern, coll)) = &r.query else {
                return Some(r);
            };
            let lib = lib.get_or_insert_with(|| db.read());
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
    /// may read the library `db`).
    pub fn plan_for(
        &self,
        db: &Db,
        user: &str,
        client: &str,
        song: &Song,
        ask: &Ask,
    ) -> Result<Plan, format::UnknownFormat> {
        let rule = self.rule_for(db, user, client, song);
        let src = Source {
            suffix: song.suffix.clone(),
            bitrate: song.bitrate.and_then(|b| u32::try_from(b).ok()),
        };
        plan::decide(ask, rule, &src, self.cfg.default_format)
    }

    /// A live encode of `p` to `t` in `user`'s turn for an encode slot
    /// (fair queueing, [`gate`]): reads the file, or through `tiers` when
    /// it did not open; with `copy_to`, the output is also written into
    /// that cache. What the client takes is paced ([`pace`]).
    pub async fn encode(
        &self,
        tiers: Option<&Arc<Tiers>>,
        p: Prepared,
        t: &Target,
        user: &str,
        copy_to: Option<&Arc<cache::Cache>>,
    ) -> Result<Encoding, TranscodeError> {
        let estimated = p.estimate(t);
        let secs = p.secs(t);
        let key = p.key(t);
        let permit = self.gate.acquire(user).await?;
        let input = match p.file {
            Some(f) => ffmpeg::Input::File(f),
            None => match tiers {
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
        let started = ffmpeg::start(&self.cfg.ffmpeg, input, t, permit, &p.path, secs).await?;
        let copy = copy_to.and_then(|c| c.writer(&key, estimated).map(|w| (c.clone(), w)));
        let progress = Arc::new(pace::Progress::default());
        let judge = pace::Pace::new(self.cfg.stall_timeout, t.bitrate, std::time::Instant::now());
        let rx = ffmpeg::pump(started, copy, Some((judge, progress.clone())));
        Ok(Encoding { rx, progress })
    }
}

/// A live encode ([`Transcoder::encode`]): ffmpeg's output as the pump
/// sends it (an error aborts the transfer), and the client's progress
/// the body reports as it hands the chunks on ([`pace::Progress::took`];
/// once the pump cut the client off, [`pace::Progress::is_cut`]).
pub struct Encoding {
    pub rx: mpsc::Receiver<std::io::Result<Bytes>>,
    pub progress: Arc<pace::Progress>,
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
