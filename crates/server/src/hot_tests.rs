//! The storage tiers' hot tier hears every accepted scrobble, whichever
//! API it came through, and the recent history at start (`crate::hot`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use spindle_listens::Listen;
use spindle_query::SourcePref;
use spindle_store::Db;
use spindle_tiers::Tiers;

use crate::params::Params;
use crate::scrobble::store;
use crate::state::lock;
use crate::AppState;
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
    )
    .started();
    let calls = Calls::default();
    let cfg = spindle_tiers::TiersConfig {
        hot: Some(spindle_tiers::config::HotConfig {
            path: data.path().join("hot"),
            budget: 1 << 20,
        }),
        ..Default::default()
    };
    let roots = vec![root];
    let tiers =
        Arc::new(Tiers::new(cfg, &roots, data.path(), Box::new(Recorder(calls.clone()))).unwrap());
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
        .with_music(music.with_tiers(f.tiers.clone()))
        .started();
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
