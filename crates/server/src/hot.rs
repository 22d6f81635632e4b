//! What the storage tiers' hot tier hears from the server: which library
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

use crate::state::AppState;
use crate::worker::BatchWorker;

/// How far back [`AppState::replay_history_into`] reads the history.
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
pub(crate) struct TierFeed(BatchWorker<(Listen, f64)>);

impl TierFeed {
    /// Queues accepted listens: weight 1 each.
    pub(crate) fn send(&self, fresh: Vec<Listen>) {
        self.0.send(fresh.into_iter().map(|l| (l, 1.0)).collect());
    }

    /// Queues what a correction changed, at `now`: each listen of the
    /// last [`REPLAY_DAYS`] days taken away (negative weight) or added,
    /// weighing what [`AppState::replay_history_into`] gives it.
    pub(crate) fn send_corrected(&self, c: &spindle_listens::Corrected, now: i64) {
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

    pub(crate) fn flush(&self) {
        self.0.flush();
    }

    pub(crate) fn stop(&self) {
        self.0.stop();
    }
}

/// Starts the feed of `tiers`, whose folders are `roots`, from `db`.
pub(crate) fn feed(db: Arc<Db>, tiers: Arc<Tiers>, roots: Vec<PathBuf>) -> TierFeed {
    TierFeed(BatchWorker::start(
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

/// What [`AppState::replay_history_into`] fed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Replayed {
    /// Listens read (of every user, in the window).
    pub listens: usize,
    /// Library tracks they raised, and the total weight given.
    pub tracks: usize,
    pub weight: f64,
}

impl AppState {
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
pub fn replay_and_prefill(state: &AppState, tiers: &Tiers) {
    let _job = tracing::info_span!("replay").entered();
    let roots = state.music.roots();
    let r = state.replay_history_into(tiers, roots);
    if r.listens > 0 {
        tracing::info!(
            "tiers: replayed {} listens of the last {REPLAY_DAYS} days into the hot tier's policy ({} tracks)",
            r.listens, r.tracks
        );
    } else {
        let lib = state.db.read();
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
/// track's length). The first look is at once.
pub async fn pin_loop(
    state: AppState,
    tiers: Arc<Tiers>,
    pins: PathBuf,
    every: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut seen: Option<(Option<SystemTime>, usize)> = None;
    while !*stop.borrow() {
        let mtime = std::fs::metadata(&pins).and_then(|m| m.modified()).ok();
        let entries = state.db.read().len();
        if seen != Some((mtime, entries)) {
            seen = Some((mtime, entries));
            let (st, pins, t) = (state.clone(), pins.clone(), tiers.clone());
            let r = tokio::task::spawn_blocking(move || {
                let _job = tracing::info_span!("pins").entered();
                pinned_tracks(&st.db, &pins, st.music.roots()).map(|tracks| t.set_pinned(tracks))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Params;
    use crate::scrobble::store;
    use crate::state::lock;
    use crate::{Accounts, Config, ManualClock, Music};
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use spindle_tiers::placement::{key_id, HotPolicy};
    use std::sync::Mutex;
    use tower::ServiceExt;

    const PW: &str = "pw for tests";
    const NOW: i64 = 1_750_000_000;

    type Calls = Arc<Mutex<Vec<(u64, f64)>>>;

    /// A policy that records the listens it hears of.
    struct Recorder(Calls);

    impl HotPolicy for Recorder {
        fn access(&mut self, _id: u64, _size: u64) -> (bool, Vec<u64>) {
            (false, Vec::new())
        }
        fn contains(&self, _id: u64) -> bool {
            false
        }
        fn record_listen(&mut self, id: u64, weight: f64) {
            lock(&self.0).push((id, weight));
        }
        fn set_budget(&mut self, _bytes: u64) -> Vec<u64> {
            Vec::new()
        }
        fn remove(&mut self, _id: u64) -> bool {
            false
        }
    }

    struct Fixture {
        _dirs: (tempfile::TempDir, tempfile::TempDir),
        state: AppState,
        tiers: Arc<Tiers>,
        calls: Calls,
        roots: Vec<PathBuf>,
        /// (entry id, artist, title, album, tiers key) of each demo track.
        tracks: Vec<(u32, String, String, String, String)>,
    }

    fn fixture() -> Fixture {
        let data = tempfile::tempdir().unwrap();
        let music_dir = tempfile::tempdir().unwrap();
        spindle_media::demo::generate_demo(music_dir.path()).unwrap();
        let root = std::fs::canonicalize(music_dir.path()).unwrap();
        let db = Arc::new(Db::open(data.path().join("lib")).unwrap());
        spindle_media::scan::scan(
            &db,
            std::slice::from_ref(&root),
            &spindle_media::scan::ScanOptions::default(),
            &mut spindle_media::scan::Quiet,
        )
        .unwrap();
        let accounts = Accounts::open(&data.path().join("accounts")).unwrap();
        accounts.add_user("ann", PW, 0).unwrap();
        let (listens, _) = spindle_listens::Listens::open(&data.path().join("listens")).unwrap();
        let state = AppState::new(
            db.clone(),
            Arc::new(accounts),
            Arc::new(listens),
            Config::default(),
            Arc::new(ManualClock::new(NOW)),
        );
        let calls = Calls::default();
        let cfg = spindle_tiers::TiersConfig {
            hot: Some(spindle_tiers::config::HotConfig {
                path: data.path().join("hot"),
                budget: 1 << 20,
            }),
            ..Default::default()
        };
        let roots = vec![root];
        let tiers = Arc::new(
            Tiers::new(cfg, &roots, data.path(), Box::new(Recorder(calls.clone()))).unwrap(),
        );
        let lib = db.read();
        let pref = SourcePref::default();
        let get = |id, k: &str| {
            lib.get(id, k, &pref)
                .first()
                .map(|v| v.to_string())
                .unwrap_or_default()
        };
        let mut tracks: Vec<_> = lib
            .ids()
            .map(|id| {
                let file = spindle_media::scan::url_path(&get(id, "url")).unwrap();
                let key = file.strip_prefix(&roots[0]).unwrap().to_str().unwrap();
                (
                    id,
                    get(id, "artist"),
                    get(id, "title"),
                    get(id, "album"),
                    key.to_owned(),
                )
            })
            .collect();
        tracks.sort();
        drop(lib);
        Fixture {
            _dirs: (data, music_dir),
            state,
            tiers,
            calls,
            roots,
            tracks,
        }
    }

    /// The listens the policy heard of: weight per tiers key.
    fn heard(f: &Fixture) -> HashMap<String, f64> {
        let mut out = HashMap::new();
        for (id, w) in lock(&f.calls).iter() {
            let key = f
                .tracks
                .iter()
                .find(|t| key_id(&t.4) == *id)
                .map_or_else(|| format!("unknown {id}"), |t| t.4.clone());
            *out.entry(key).or_default() += w;
        }
        out
    }

    async fn send(app: &axum::Router, req: Request<Body>) -> (StatusCode, String) {
        let r = app.clone().oneshot(req).await.unwrap();
        let status = r.status();
        let body = http_body_util::BodyExt::collect(r.into_body())
            .await
            .unwrap()
            .to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn every_accepted_scrobble_raises_its_tracks_popularity_in_the_tiers() {
        let f = fixture();
        let music = Music::new(&f.roots, f._dirs.0.path()).unwrap();
        let state = f
            .state
            .clone()
            .with_music(music.with_tiers(f.tiers.clone()));
        let app = crate::router(state.clone());
        let [a, b, c, d] = [0, 1, 2, 3].map(|i| f.tracks[i].clone());

        // ListenBrainz: a single listen of a.
        let token = state.accounts.user_token("ann").unwrap();
        let body = serde_json::json!({"listen_type": "single", "payload": [{
            "listened_at": NOW - 100,
            "track_metadata": {"artist_name": a.1, "track_name": a.2, "release_name": a.3}}]});
        let req = Request::post("/1/submit-listens")
            .header("authorization", format!("Token {token}"))
            .body(Body::from(body.to_string()))
            .unwrap();
        let (st, text) = send(&app, req).await;
        assert_eq!(st, StatusCode::OK, "{text}");

        // Last.fm 2.0: track.scrobble of b, signed, with a session.
        let (key, secret) = state.accounts.add_api_key("ann", NOW).unwrap();
        let sk = state.accounts.new_session("ann", &key, NOW).unwrap();
        let mut p = Params(
            [
                ("method", "track.scrobble"),
                ("api_key", key.as_str()),
                ("sk", sk.as_str()),
                ("artist[0]", b.1.as_str()),
                ("track[0]", b.2.as_str()),
                ("timestamp[0]", &(NOW - 50).to_string()),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        );
        let sig = p.signature(&secret);
        p.0.push(("api_sig".into(), sig));
        p.0.push(("format".into(), "json".into()));
        let form = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&p.0)
            .finish();
        let req = Request::post("/2.0/")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(form))
            .unwrap();
        let (st, text) = send(&app, req).await;
        assert!(
            st == StatusCode::OK && text.contains("\"accepted\":1"),
            "{text}"
        );

        // Subsonic: scrobble of c with submission=true counts; a
        // now-playing report of d (submission=false) does not.
        let auth = format!("u=ann&p=enc:{}&v=1.16.1&c=test&f=json", hex(PW));
        for (t, submission) in [(&c, true), (&d, false)] {
            let uri = format!("/rest/scrobble?{auth}&id={}&submission={submission}", t.0);
            let (st, text) = send(&app, Request::get(uri).body(Body::empty()).unwrap()).await;
            assert!(st == StatusCode::OK && text.contains("\"ok\""), "{text}");
        }

        // The same ListenBrainz listen again is a duplicate: not counted.
        let req = Request::post("/1/submit-listens")
            .header("authorization", format!("Token {token}"))
            .body(Body::from(body.to_string()))
            .unwrap();
        assert_eq!(send(&app, req).await.0, StatusCode::OK);
        // A listen of a track not in the library reaches no track.
        let mut l = Listen::new("ann", NOW - 10, "Nobody", "Nothing");
        l.client = "test".into();
        store(&state, vec![l]).await.unwrap();

        state.flush_library_links();
        let got = heard(&f);
        let want: HashMap<String, f64> = [(a.4, 1.0), (b.4, 1.0), (c.4, 1.0)].into_iter().collect();
        assert_eq!(got, want);
    }

    #[tokio::test]
    async fn a_restart_replays_the_recent_history_weighted_by_recency() {
        let f = fixture();
        let day = 86_400;
        let [a, b, c] = [0, 1, 2].map(|i| f.tracks[i].clone());
        let listen = |t: &(u32, String, String, String, String), ts: i64| {
            let mut l = Listen::new("ann", ts, &t.1, &t.2);
            l.album = t.3.clone();
            l
        };
        // a: twice today; b: once 30 days ago (half a play); c: 200 days
        // ago, outside the window.
        let ls = vec![
            listen(&a, NOW - 60),
            listen(&a, NOW - 600),
            listen(&b, NOW - 30 * day),
            listen(&c, NOW - 200 * day),
        ];
        f.state.listens.submit(&ls).unwrap();
        let r = f.state.replay_history_into(&f.tiers, &f.roots);
        assert_eq!((r.listens, r.tracks), (3, 2), "{r:?}");
        let got = heard(&f);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!((got[&a.4] - 2.0).abs() < 0.01, "{got:?}");
        assert!((got[&b.4] - 0.5).abs() < 0.01, "{got:?}");
        // Without tiers fed, a scrobble changes nothing there.
        store(&f.state, vec![listen(&a, NOW - 5)]).await.unwrap();
        f.state.flush_library_links();
        assert_eq!(heard(&f).len(), 2);
    }

    fn hex(s: &str) -> String {
        s.bytes().map(|b| format!("{b:02x}")).collect()
    }
}
