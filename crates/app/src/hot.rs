//! What the storage tiers' hot tier hears from the core: which library
//! track a listen or a library `url` is ([`track_of_url`], the one
//! mapping), every accepted listen (`TierFeed`), the listening history
//! replayed once at start ([`replay_and_prefill`]), and the tracks the
//! saved pins select, re-read while the server runs ([`pin_loop`]).
//! See docs/tiers.md ("popularity from streams and the listening
//! history", "Pins").

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use spindle_listens::{Listen, RecentQuery};
use spindle_query::SourcePref;
use spindle_store::{Db, Library, ValueRef};
use spindle_tiers::{Tiers, TiersConfig, TrackRef};

use crate::music::Music;
use crate::worker::BatchWorker;
use crate::App;

/// How far back [`App::replay_history_into`] reads the history.
pub const REPLAY_DAYS: i64 = 90;
/// A replayed listen's weight halves every this many days of age.
pub const REPLAY_HALF_LIFE_DAYS: f64 = 30.0;
/// At most this many listens per user are replayed (the newest).
pub const REPLAY_MAX_PER_USER: usize = 100_000;
/// How often the server looks at the pins file and the library's size
/// (a change of either re-evaluates the pins).
pub const PIN_POLL: Duration = Duration::from_secs(5);

/// The hot-tier policy the server runs: Spindle's (decayed frequencies
/// at several time scales, size-aware admission; docs/tiers-policy.md),
/// with the hot budget of `cfg`.
pub fn policy(cfg: &TiersConfig) -> Box<dyn spindle_tiers::placement::HotPolicy> {
    let budget = cfg.hot.as_ref().map_or(0, |h| h.budget);
    Box::new(spindle_tiers::placement::FromPolicy(
        spindle_tiers::policy::Spindle::new(budget),
    ))
}

/// The track of a library `url` (a `file://` URL) as the tiers name it:
/// its path below the one of `roots` (canonical music folders) it is
/// under, and that folder's index.
pub fn track_of_url(url: Option<&ValueRef<'_>>, roots: &[PathBuf]) -> Option<TrackRef> {
    let url = url?.to_string();
    let file = spindle_media::scan::url_path(&url)?;
    roots.iter().enumerate().find_map(|(i, root)| {
        let rel = file.strip_prefix(root).ok()?;
        Some(TrackRef {
            key: rel.to_str()?.to_owned(),
            folder: Some(i),
        })
    })
}

/// The library track a listen is of, matched as the library linker
/// matches it.
fn track_of_listen(lib: &Library, l: &Listen, roots: &[PathBuf]) -> Option<TrackRef> {
    let id = crate::link::find_entry(lib, l)?;
    let url = lib.get(id, "url", &SourcePref::default());
    track_of_url(url.first(), roots)
}

/// Adds `weight` for each listen's library track into `into`, looking
/// each distinct (mbid, artist, title, album) up once.
fn weigh<'a>(
    lib: &Library,
    roots: &[PathBuf],
    listens: impl IntoIterator<Item = (&'a Listen, f64)>,
    into: &mut HashMap<TrackRef, f64>,
) {
    let mut found: HashMap<(&str, &str, &str, &str), Option<TrackRef>> = HashMap::new();
    for (l, w) in listens {
        let key = (
            l.mbid.as_str(),
            l.artist.as_str(),
            l.title.as_str(),
            l.album.as_str(),
        );
        let t = found
            .entry(key)
            .or_insert_with(|| track_of_listen(lib, l, roots));
        if let Some(t) = t {
            *into.entry(t.clone()).or_default() += w;
        }
    }
}

/// Feeds accepted listens to the storage tiers: each is one play of its
/// library track ([`Tiers::record_listen`], weight 1). A thread of its
/// own ([`crate::worker`]) finds the tracks (a library lookup per distinct
/// track of a batch), so a scrobble is acknowledged without waiting for
/// any of it; its `stop` ends it after the last batch sent and joins it.
/// A correction of the history ([`TierFeed::send_corrected`]) takes each
/// listen it removed back and gives each it added, at the weight the
/// start-up replay gives a listen of its age.
pub struct TierFeed(BatchWorker<(Listen, f64)>);

impl TierFeed {
    /// Queues accepted listens: weight 1 each.
    pub fn send(&self, fresh: Vec<Listen>) {
        self.0.send(fresh.into_iter().map(|l| (l, 1.0)).collect());
    }

    /// Queues what a correction changed, at `now`: each listen of the
    /// last [`REPLAY_DAYS`] days taken away (negative weight) or added,
    /// weighing what [`App::replay_history_into`] gives it.
    pub fn send_corrected(&self, c: &spindle_listens::Corrected, now: i64) {
        let weight = |l: &Listen| {
            let age = now - l.timestamp;
            (age <= REPLAY_DAYS * 86_400)
                .then(|| (-(age.max(0) as f64 / 86_400.0) / REPLAY_HALF_LIFE_DAYS).exp2())
        };
        let less = c
            .removed
            .iter()
            .filter_map(|l| weight(l).map(|w| (l.clone(), -w)));
        let more = c
            .added
            .iter()
            .filter_map(|l| weight(l).map(|w| (l.clone(), w)));
        self.0.send(less.chain(more).collect());
    }

    pub fn flush(&self) {
        self.0.flush();
    }

    /// Starts the thread, which first feeds what was sent before.
    pub fn start(&self) {
        self.0.start();
    }

    pub fn stop(&self) {
        self.0.stop();
    }
}

/// The feed of `tiers`, whose folders are `roots`, from `db`; its thread
/// starts with [`TierFeed::start`].
pub fn feed(db: Arc<Db>, tiers: Arc<Tiers>, roots: Vec<PathBuf>) -> TierFeed {
    TierFeed(BatchWorker::new(
        "spindle-tier-listens",
        "tiers: listens will not reach the hot tier",
        move |batch: Vec<(Listen, f64)>| {
            let mut plays = HashMap::new();
            weigh(
                &db.read(),
                &roots,
                batch.iter().map(|(l, w)| (l, *w)),
                &mut plays,
            );
            for (t, w) in plays {
                // An edit within one track nets to nothing.
                if w != 0.0 {
                    tiers.record_listen(&t, w);
                }
            }
        },
    ))
}

/// What [`App::replay_history_into`] fed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Replayed {
    /// Listens read (of every user, in the window).
    pub listens: usize,
    /// Library tracks they raised, and the total weight given.
    pub tracks: usize,
    pub weight: f64,
}

impl App {
    /// Replays the recent listening history into `tiers` once (at start,
    /// so a restart does not forget what is popular): every user's listens
    /// of the last [`REPLAY_DAYS`] days, at most [`REPLAY_MAX_PER_USER`]
    /// each (the newest), a listen `age` days old weighing
    /// 2^(−age / [`REPLAY_HALF_LIFE_DAYS`]). Reads the history and the
    /// library: call from a blocking thread.
    pub fn replay_history_into(&self, tiers: &Tiers, roots: &[PathBuf]) -> Replayed {
        let now = self.now();
        let from = now - REPLAY_DAYS * 86_400;
        let mut listens = Vec::new();
        for user in self.accounts.user_names() {
            let page = self.listens.recent(
                &user,
                &RecentQuery {
                    from: Some(from),
                    to: None,
                    limit: REPLAY_MAX_PER_USER,
                    page: 1,
                },
            );
            listens.extend(page.listens);
        }
        let weight_of = |l: &Listen| {
            let age_days = (now - l.timestamp).max(0) as f64 / 86_400.0;
            (-age_days / REPLAY_HALF_LIFE_DAYS).exp2()
        };
        let mut plays = HashMap::new();
        weigh(
            &self.db.read(),
            roots,
            listens.iter().map(|l| (l, weight_of(l))),
            &mut plays,
        );
        let mut out = Replayed {
            listens: listens.len(),
            tracks: plays.len(),
            weight: 0.0,
        };
        for (t, w) in plays {
            out.weight += w;
            tiers.record_listen(&t, w);
        }
        out
    }
}

/// The start-up work of the hot tier: the listening history so far (the
/// recent listens, decayed; the library's play counts only when there
/// are none: a library imported with counts from another player, no
/// scrobbles yet) into the policy, then the hot folder's free space
/// filled with what the policy now ranks highest. Call from a blocking
/// thread.
pub fn replay_and_prefill(app: &App, tiers: &Tiers) {
    let _job = tracing::info_span!("replay").entered();
    let roots = app.music.roots();
    let r = app.replay_history_into(tiers, roots);
    if r.listens > 0 {
        tracing::info!(
            "tiers: replayed {} listens of the last {REPLAY_DAYS} days into the hot tier's policy ({} tracks)",
            r.listens, r.tracks
        );
    } else {
        let lib = app.db.read();
        let ids: Vec<u32> = lib.ids().collect();
        let rows = lib.fetch_rows(&ids, &["url", "timesplayed"], &SourcePref::default());
        for r in rows.iter() {
            let plays = match r.get(1) {
                Some(Some(ValueRef::Int(n))) if *n > 0 => *n as f64,
                _ => continue,
            };
            if let Some(track) = track_of_url(r.first().and_then(Option::as_ref), roots) {
                tiers.record_listen(&track, plays);
            }
        }
    }
    let n = tiers.prefill_hot();
    if n > 0 {
        tracing::info!(
            "tiers: promoting {n} tracks the history plays most into the hot tier's free space"
        );
    }
}

/// Why the pins could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PinsError {
    #[error("reading {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("pin {pin:?}: {source}")]
    Query {
        pin: String,
        #[source]
        source: spindle_store::QueryError,
    },
}

/// The tracks the saved pins (the file `pins`) select, in pin order,
/// each once. A pin that does not parse is skipped with a warning.
pub fn pinned_tracks(db: &Db, pins: &Path, roots: &[PathBuf]) -> Result<Vec<TrackRef>, PinsError> {
    let patterns = spindle_tiers::pins::load(pins).map_err(|source| PinsError::Read {
        path: pins.to_owned(),
        source,
    })?;
    let lib = db.read();
    let pref = SourcePref::default();
    let mut out = Vec::new();
    for p in patterns {
        let parsed = match spindle_query::parse(&p) {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("tiers: pin {p:?} does not parse: {e}");
                continue;
            }
        };
        let ids = lib
            .query_ids(&parsed.coll, &pref)
            .map_err(|source| PinsError::Query {
                pin: p.clone(),
                source,
            })?;
        let rows = lib.fetch_rows(&ids.ids, &["url"], &pref);
        for r in rows.iter() {
            if let Some(t) = r.first().and_then(|v| track_of_url(v.as_ref(), roots)) {
                if !out.contains(&t) {
                    out.push(t);
                }
            }
        }
    }
    Ok(out)
}

/// Keeps the hot tier's pins current until `stop` says so: every
/// `every`, when the pins file (`DATA/tiers/pins`) or the library's size
/// changed since the last look, re-evaluates the pins and hands the
/// tracks to [`Tiers::set_pinned`] (on a blocking thread: it reads each
/// track's length). The first look is at once. `music` has the folders
/// the pins' tracks lie in.
pub async fn pin_loop(
    db: Arc<Db>,
    music: Arc<Music>,
    tiers: Arc<Tiers>,
    pins: PathBuf,
    every: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut seen: Option<(Option<SystemTime>, usize)> = None;
    while !*stop.borrow() {
        let mtime = std::fs::metadata(&pins).and_then(|m| m.modified()).ok();
        let entries = db.read().len();
        if seen != Some((mtime, entries)) {
            seen = Some((mtime, entries));
            let (db, music, pins, t) = (db.clone(), music.clone(), pins.clone(), tiers.clone());
            let r = crate::offload::run(move || {
                let _job = tracing::info_span!("pins").entered();
                pinned_tracks(&db, &pins, music.roots()).map(|tracks| t.set_pinned(tracks))
            })
            .await;
            if let Ok(Err(e)) = r {
                tracing::warn!("tiers: pins: {e}");
            }
        }
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            _ = stop.changed() => {}
        }
    }
}
