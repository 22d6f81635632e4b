//! The submit path every API shares: per-listen checks (timestamps,
//! empty, NUL or over-long fields), the durable write, now-playing, and the hand-off
//! to the library linker and, when the storage tiers are configured, to
//! their popularity ([`TierFeed`], [`AppState::replay_history_into`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex};

use spindle_listens::{AppendError, LimitError, Listen, RecentQuery, Submitted};
use spindle_query::SourcePref;
use spindle_store::{Db, Library};
use spindle_tiers::{Tiers, TrackRef};

use crate::state::{lock, AppState};

/// Why a listen was not recorded (Last.fm ignoredMessage codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignored {
    /// 1: the artist is empty or not valid text.
    Artist,
    /// 2: the title is empty or not valid text.
    Track,
    /// 3: before the earliest accepted time.
    TooOld,
    /// 4: too far in the future.
    TooNew,
    /// 2 for the title, 1 for any other field: longer than the history
    /// keeps (`spindle_listens::limits`); `field` as [`LimitError`] names it.
    TooLong { field: &'static str },
}

impl Ignored {
    pub fn code(self) -> u32 {
        match self {
            Ignored::Artist => 1,
            Ignored::Track => 2,
            Ignored::TooOld => 3,
            Ignored::TooNew => 4,
            Ignored::TooLong { field: "title" } => 2,
            Ignored::TooLong { .. } => 1,
        }
    }
    pub fn message(self) -> &'static str {
        match self {
            Ignored::Artist => "Artist was ignored",
            Ignored::Track => "Track was ignored",
            Ignored::TooOld => "Timestamp was too old",
            Ignored::TooNew => "Timestamp was too new",
            Ignored::TooLong { field } => match field {
                "artist" => "Artist name too long (at most 1024 bytes)",
                "title" => "Track name too long (at most 1024 bytes)",
                "album" => "Album name too long (at most 1024 bytes)",
                "album artist" => "Album artist name too long (at most 1024 bytes)",
                "MusicBrainz id" => "MusicBrainz id too long (at most 64 bytes)",
                "client name" => "Client name too long (at most 256 bytes)",
                "user name" => "User name too long (at most 64 bytes)",
                _ => "A field is too long",
            },
        }
    }
}

/// The checks every listen passes before it is stored (or kept as
/// now-playing): names present, no NUL, every field within the history's
/// limits ([`Listen::check_limits`]), and with `timed` the time window.
pub fn check(state: &AppState, l: &Listen, timed: bool) -> Result<(), Ignored> {
    let bad = |s: &str| s.trim().is_empty() || s.contains('\0');
    if bad(&l.artist)
        || [&l.album, &l.album_artist, &l.mbid, &l.client]
            .iter()
            .any(|s| s.contains('\0'))
    {
        return Err(Ignored::Artist);
    }
    if bad(&l.title) {
        return Err(Ignored::Track);
    }
    l.check_limits()
        .map_err(|e: LimitError| Ignored::TooLong { field: e.field })?;
    if timed {
        if l.timestamp < state.config.min_timestamp {
            return Err(Ignored::TooOld);
        }
        if l.timestamp > state.now() + state.config.max_future {
            return Err(Ignored::TooNew);
        }
    }
    Ok(())
}

/// Stores listens that passed [`check`]; returns once they are on disk.
/// The listens move to a blocking thread and on to the library linker:
/// nothing is copied.
pub async fn store(state: &AppState, listens: Vec<Listen>) -> Result<Vec<Submitted>, AppendError> {
    if listens.is_empty() {
        return Ok(Vec::new());
    }
    let st = state.clone();
    let out = tokio::task::spawn_blocking(move || {
        let res = st.listens.submit(&listens);
        (res, listens)
    })
    .await;
    let (res, listens) = match out {
        Ok(x) => x,
        Err(e) => return Err(AppendError::Io(format!("the writer task failed: {e}"))),
    };
    let out = res?;
    let fresh: Vec<Listen> = listens
        .into_iter()
        .zip(&out)
        .filter(|(_, s)| **s == Submitted::Accepted)
        .map(|(l, _)| l)
        .collect();
    state.clear_now_playing_of(&fresh);
    if let Some(feed) = state.tiers.get() {
        feed.send(fresh.clone());
    }
    state.linker.send(fresh);
    Ok(out)
}

/// Loves or unloves, durably. A name over its limit is refused with
/// [`AppendError::TooLarge`] (see [`AppendError::is_refusal`]) before
/// anything is written.
pub async fn love(
    state: &AppState,
    user: String,
    artist: String,
    title: String,
    loved: bool,
) -> Result<(), AppendError> {
    spindle_listens::check_love_limits(&user, &artist, &title)?;
    let st = state.clone();
    let now = state.now();
    tokio::task::spawn_blocking(move || st.listens.love(&user, &artist, &title, now, loved))
        .await
        .map_err(|e| AppendError::Io(format!("the writer task failed: {e}")))?
}

impl AppState {
    /// Stores listens from an export (no time-window checks beyond empty
    /// fields) and links them to the library; returns how many were new.
    pub fn import(&self, listens: Vec<Listen>) -> Result<usize, AppendError> {
        let ok: Vec<Listen> = listens
            .into_iter()
            .filter(|l| check(self, l, false).is_ok())
            .collect();
        let mut added = 0;
        for chunk in ok.chunks(10_000) {
            let out = self.listens.submit(chunk)?;
            let fresh: Vec<Listen> = chunk
                .iter()
                .zip(&out)
                .filter(|(_, s)| **s == Submitted::Accepted)
                .map(|(l, _)| l.clone())
                .collect();
            added += fresh.len();
            self.linker.send(fresh);
        }
        self.flush_library_links();
        Ok(added)
    }
}

/// The library track a listen is of, as the tiers name it: its path
/// below one of `roots` (canonical music folders).
fn track_of(lib: &Library, l: &Listen, roots: &[PathBuf]) -> Option<TrackRef> {
    let id = crate::link::find_entry(lib, l)?;
    let url = lib
        .get(id, "url", &SourcePref::default())
        .first()?
        .to_string();
    let file = spindle_media::scan::url_path(&url)?;
    roots.iter().enumerate().find_map(|(i, root)| {
        let rel = file.strip_prefix(root).ok()?;
        Some(TrackRef {
            key: rel.to_str()?.to_owned(),
            folder: Some(i),
        })
    })
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
        let t = found.entry(key).or_insert_with(|| track_of(lib, l, roots));
        if let Some(t) = t {
            *into.entry(t.clone()).or_default() += w;
        }
    }
}

/// Feeds accepted listens to the storage tiers: each is one play of its
/// library track ([`Tiers::record_listen`], weight 1). A thread of its
/// own finds the tracks (a library lookup per distinct track of a batch),
/// so a scrobble is acknowledged without waiting for any of it.
pub(crate) struct TierFeed {
    tx: Mutex<Sender<Vec<Listen>>>,
    /// (batches sent, batches done)
    progress: Arc<(Mutex<(u64, u64)>, Condvar)>,
}

impl TierFeed {
    pub(crate) fn start(db: Arc<Db>, tiers: Arc<Tiers>, roots: Vec<PathBuf>) -> TierFeed {
        let (tx, rx) = channel::<Vec<Listen>>();
        let progress = Arc::new((Mutex::new((0u64, 0u64)), Condvar::new()));
        let p2 = progress.clone();
        let spawned = std::thread::Builder::new()
            .name("spindle-tier-listens".into())
            .spawn(move || {
                while let Ok(mut batch) = rx.recv() {
                    let mut n = 1;
                    while let Ok(more) = rx.try_recv() {
                        batch.extend(more);
                        n += 1;
                    }
                    let mut plays = HashMap::new();
                    weigh(
                        &db.read(),
                        &roots,
                        batch.iter().map(|l| (l, 1.0)),
                        &mut plays,
                    );
                    for (t, w) in plays {
                        tiers.record_listen(&t, w);
                    }
                    let (m, cv) = &*p2;
                    lock(m).1 += n;
                    cv.notify_all();
                }
            });
        if let Err(e) = spawned {
            eprintln!("spindle: tiers: listens will not reach the hot tier: {e}");
        }
        TierFeed {
            tx: Mutex::new(tx),
            progress,
        }
    }

    fn send(&self, listens: Vec<Listen>) {
        if listens.is_empty() {
            return;
        }
        if lock(&self.tx).send(listens).is_ok() {
            lock(&self.progress.0).0 += 1;
        }
    }

    pub(crate) fn flush(&self) {
        let (m, cv) = &*self.progress;
        let mut g = lock(m);
        while g.1 < g.0 {
            g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// How far back [`AppState::replay_history_into`] reads the history.
pub const REPLAY_DAYS: i64 = 90;
/// A replayed listen's weight halves every this many days of age.
pub const REPLAY_HALF_LIFE_DAYS: f64 = 30.0;
/// At most this many listens per user are replayed (the newest).
pub const REPLAY_MAX_PER_USER: usize = 100_000;

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
    /// From now on, every accepted listen raises its library track's
    /// popularity in `tiers` (tracks below `roots`, the canonical music
    /// folders). Once per state; later calls change nothing.
    pub fn feed_tiers(&self, tiers: Arc<Tiers>, roots: Vec<PathBuf>) {
        let _ = self
            .tiers
            .set(TierFeed::start(self.db.clone(), tiers, roots));
    }

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Params;
    use crate::{Accounts, Config, ManualClock, Music};
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use spindle_tiers::placement::{key_id, HotPolicy};
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
        music: Arc<Music>,
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
        let music = Arc::new(Music::new(&roots, data.path()).unwrap());
        Fixture {
            _dirs: (data, music_dir),
            state,
            music,
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
        f.state.feed_tiers(f.tiers.clone(), f.roots.clone());
        let app = crate::router_with(f.state.clone(), f.music.clone());
        let [a, b, c, d] = [0, 1, 2, 3].map(|i| f.tracks[i].clone());

        // ListenBrainz: a single listen of a.
        let token = f.state.accounts.user_token("ann").unwrap();
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
        let (key, secret) = f.state.accounts.add_api_key("ann", NOW).unwrap();
        let sk = f.state.accounts.new_session("ann", &key, NOW).unwrap();
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
        let form: String =
            p.0.iter()
                .map(|(k, v)| format!("{}={}", urlencode(k), urlencode(v)))
                .collect::<Vec<_>>()
                .join("&");
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
        store(&f.state, vec![l]).await.unwrap();

        f.state.flush_library_links();
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

    #[test]
    fn a_field_over_its_limit_is_ignored_with_a_message_naming_the_limit() {
        use spindle_listens::limits::*;
        let data = tempfile::tempdir().unwrap();
        let (listens, _) = spindle_listens::Listens::open(&data.path().join("l")).unwrap();
        let state = AppState::new(
            Arc::new(Db::open(data.path().join("lib")).unwrap()),
            Arc::new(Accounts::open(&data.path().join("accounts")).unwrap()),
            Arc::new(listens),
            Config::default(),
            Arc::new(ManualClock::new(NOW)),
        );
        type Set = fn(&mut Listen, String);
        let fields: [(&str, usize, Set, u32); 6] = [
            ("artist", MAX_ARTIST, |l, v| l.artist = v, 1),
            ("title", MAX_TITLE, |l, v| l.title = v, 2),
            ("album", MAX_ALBUM, |l, v| l.album = v, 1),
            (
                "album artist",
                MAX_ALBUM_ARTIST,
                |l, v| l.album_artist = v,
                1,
            ),
            ("MusicBrainz id", MAX_MBID, |l, v| l.mbid = v, 1),
            ("client name", MAX_CLIENT, |l, v| l.client = v, 1),
        ];
        for (name, max, set, code) in fields {
            let mut l = Listen::new("ann", NOW, "A", "T");
            set(&mut l, "ü".repeat(max / 2));
            assert_eq!(check(&state, &l, true), Ok(()), "{name} at its limit");
            set(&mut l, "x".repeat(max + 1));
            let ig = check(&state, &l, true).unwrap_err();
            assert_eq!(ig, Ignored::TooLong { field: name });
            assert_eq!(ig.code(), code, "{name}");
            assert!(ig.message().contains(&max.to_string()), "{}", ig.message());
        }
    }

    #[tokio::test]
    async fn a_love_with_an_over_long_name_is_refused_before_the_log() {
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().join("l");
        let (listens, _) = spindle_listens::Listens::open(&dir).unwrap();
        let state = AppState::new(
            Arc::new(Db::open(data.path().join("lib")).unwrap()),
            Arc::new(Accounts::open(&data.path().join("accounts")).unwrap()),
            Arc::new(listens),
            Config::default(),
            Arc::new(ManualClock::new(NOW)),
        );
        let log = dir.join(spindle_listens::LOG_FILE);
        let before = std::fs::read(&log).unwrap();
        let e = love(&state, "ann".into(), "a".repeat(3 << 19), "t".into(), true)
            .await
            .unwrap_err();
        assert!(e.is_refusal(), "{e}");
        assert_eq!(std::fs::read(&log).unwrap(), before);
    }

    fn hex(s: &str) -> String {
        s.bytes().map(|b| format!("{b:02x}")).collect()
    }

    fn urlencode(s: &str) -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect()
    }
}
