//! One oversized listen must not cost anyone their history: a listen with
//! a field over its limit (`spindle_listens::limits`) is refused by every
//! API with that API's own error, before anything is written; another
//! user's listens, sent afterwards, are still there once the server's
//! state is dropped and the history reopened from the same data dir.
//!
//! Before the limits, a Last.fm scrobble with a 1.5 MiB artist was
//! written, read back at the next start as damage, and the log was cut
//! there, with every later listen of every user.

use std::sync::Arc;

use crate::common::Setup;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use spindle_listens::limits::{MAX_ARTIST, MAX_CLIENT};
use spindle_listens::{Listens, RecentQuery};
use spindle_server::accounts::md5_hex;
use spindle_server::params::Params;
use spindle_server::{AppState, Config, ManualClock};
use tower::ServiceExt;

const PW: &str = "pw for tests";
const NOW: i64 = 1_750_000_000;

struct Fixture {
    app: axum::Router,
    state: AppState,
    /// The data dir and the music.
    data: Setup,
    /// A song's Subsonic id.
    song: String,
}

fn fixture() -> Fixture {
    let d = Setup::demo().user("ann", PW).user("bob", PW);
    let state = d.state(Config::default(), Arc::new(ManualClock::new(NOW)));
    let song = d.db.read().ids().next().unwrap().to_string();
    Fixture {
        app: spindle_server::router(state.clone()),
        state,
        data: d,
        song,
    }
}

async fn send(app: &axum::Router, req: Request<Body>) -> (StatusCode, String) {
    let r = app.clone().oneshot(req).await.unwrap();
    let status = r.status();
    let body = r.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// `pairs` as an `application/x-www-form-urlencoded` body.
fn form(pairs: &[(String, String)]) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// A signed Last.fm 2.0 call as `user`, answered in JSON.
async fn lastfm(f: &Fixture, user: &str, params: &[(&str, &str)]) -> (StatusCode, String) {
    let acc = &f.state.accounts;
    let (key, secret) = acc.add_api_key(user, NOW).unwrap();
    let sk = acc.new_session(user, &key, NOW).unwrap();
    let mut p = Params(
        params
            .iter()
            .chain(&[("api_key", key.as_str()), ("sk", sk.as_str())])
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    let sig = p.signature(&secret);
    p.0.push(("api_sig".into(), sig));
    p.0.push(("format".into(), "json".into()));
    let req = Request::post("/2.0/")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(form(&p.0)))
        .unwrap();
    send(&f.app, req).await
}

/// A Last.fm answer that stored nothing: an error, or every scrobble
/// ignored.
fn lastfm_refused(status: StatusCode, text: &str) -> bool {
    let head = text.get(..400).unwrap_or(text);
    // An error in JSON, or in XML when the body (and its `format`) was
    // refused unread.
    let error = head.contains("\"error\":") || head.contains("status=\"failed\"");
    let all_ignored = text.contains("\"accepted\":0") && !head.contains("\"accepted\":1");
    !status.is_server_error() && (error || all_ignored)
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

async fn listenbrainz(f: &Fixture, user: &str, artist: &str) -> (StatusCode, String) {
    let token = f.state.accounts.user_token(user).unwrap();
    let body = serde_json::json!({"listen_type": "single", "payload": [{
        "listened_at": NOW - 100,
        "track_metadata": {"artist_name": artist, "track_name": "Fine"}}]});
    let req = Request::post("/1/submit-listens")
        .header("authorization", format!("Token {token}"))
        .body(Body::from(body.to_string()))
        .unwrap();
    send(&f.app, req).await
}

fn history(listens: &Listens, user: &str) -> Vec<spindle_listens::Listen> {
    let q = RecentQuery {
        limit: 1000,
        page: 1,
        ..RecentQuery::default()
    };
    listens.recent(user, &q).listens
}

#[tokio::test]
async fn an_oversized_scrobble_is_refused_and_every_other_users_listen_survives_a_restart() {
    let f = fixture();
    let ts = (NOW - 60).to_string();

    // Last.fm track.scrobble: the finding's 1.5 MiB artist, and one just
    // over the limit (small enough for every body cap).
    for len in [3 << 19, MAX_ARTIST + 1] {
        let artist = "a".repeat(len);
        let (st, text) = lastfm(
            &f,
            "ann",
            &[
                ("method", "track.scrobble"),
                ("artist", &artist),
                ("track", "T"),
                ("timestamp", &ts),
            ],
        )
        .await;
        assert!(
            lastfm_refused(st, &text),
            "artist of {len} bytes: {st} {:.300}",
            text
        );
    }
    // track.updateNowPlaying and track.love with an over-long artist.
    let long = "b".repeat(MAX_ARTIST + 1);
    let (st, text) = lastfm(
        &f,
        "ann",
        &[
            ("method", "track.updateNowPlaying"),
            ("artist", &long),
            ("track", "T"),
        ],
    )
    .await;
    assert!(
        !st.is_server_error() && text.contains("\"code\":\"1\""),
        "{st} {:.300}",
        text
    );
    let (st, text) = lastfm(
        &f,
        "ann",
        &[("method", "track.love"), ("artist", &long), ("track", "T")],
    )
    .await;
    assert!(
        !st.is_server_error() && text.contains("\"error\":6"),
        "{st} {:.300}",
        text
    );

    // Subsonic scrobble POST whose `c=` client name is near 1 MiB, and one
    // just over its limit.
    for len in [(1 << 20) - 4096, MAX_CLIENT + 1] {
        let uri = format!(
            "/rest/scrobble?u=ann&p=enc:{}&v=1.16.1&f=json&id={}&time={}",
            hex(PW),
            f.song,
            (NOW - 30) * 1000
        );
        let req = Request::post(uri)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(format!("c={}", "c".repeat(len))))
            .unwrap();
        let (st, text) = send(&f.app, req).await;
        assert!(
            !st.is_server_error() && text.contains("\"failed\""),
            "c of {len} bytes: {st} {:.300}",
            text
        );
    }

    // ListenBrainz: 400 with the reason.
    let (st, text) = listenbrainz(&f, "ann", &long).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{text}");
    assert!(text.contains("too long"), "{text}");

    // Audioscrobbler 1.2: the bad entry is dropped, as Last.fm's 1.2
    // server does, and nothing is stored.
    let t = NOW.to_string();
    let a = md5_hex(format!("{}{t}", md5_hex(PW.as_bytes())).as_bytes());
    let uri = format!("/?hs=true&p=1.2.1&c=tst&v=1.0&u=ann&t={t}&a={a}");
    let (_, hs) = send(&f.app, Request::get(uri).body(Body::empty()).unwrap()).await;
    let sid = hs.lines().nth(1).unwrap_or_default().to_owned();
    assert!(hs.starts_with("OK"), "{hs}");
    let body = form(&[
        ("s".into(), sid),
        ("a[0]".into(), long.clone()),
        ("t[0]".into(), "T".into()),
        ("i[0]".into(), ts.clone()),
    ]);
    let req = Request::post("/as12/submissions")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(body))
        .unwrap();
    let (st, _) = send(&f.app, req).await;
    assert!(!st.is_server_error());
    assert!(
        history(&f.state.listens, "ann").is_empty(),
        "nothing of ann's was stored"
    );

    // Another user's listens, through two APIs, are accepted.
    let (st, text) = listenbrainz(&f, "bob", "Bob's Band").await;
    assert_eq!(st, StatusCode::OK, "{text}");
    let (st, text) = lastfm(
        &f,
        "bob",
        &[
            ("method", "track.scrobble"),
            ("artist", &"é".repeat(MAX_ARTIST / 2)),
            ("track", "At the limit"),
            ("timestamp", &ts),
        ],
    )
    .await;
    assert!(
        st == StatusCode::OK && text.contains("\"accepted\":1"),
        "{st} {:.300}",
        text
    );

    // Restart: drop the server's state, reopen the history from disk.
    let Fixture {
        app, state, data, ..
    } = f;
    drop(app);
    drop(state);
    let (listens, report) = Listens::open(&data.path().join("listens")).unwrap();
    assert_eq!(report.truncated_bytes, 0, "nothing was cut off the log");
    let bob = history(&listens, "bob");
    assert_eq!(bob.len(), 2, "{bob:?}");
    assert!(bob.iter().any(|l| l.artist == "Bob's Band"));
    assert!(bob.iter().any(|l| l.artist.len() == MAX_ARTIST));
    assert!(history(&listens, "ann").is_empty());
}
