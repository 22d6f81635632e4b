//! Who may read a listening history, and credentials that expire: a
//! private user's ListenBrainz and Last.fm reads answer exactly like an
//! unknown user's; the owner reads with their token or a signed session
//! key; the web UI's privacy switch opens a history; a session key works
//! only with its own API key; `auth.getToken` tokens end after an hour;
//! Audioscrobbler 1.2 sessions end when idle and are capped per user; the
//! session cookie is `Secure` behind an `https://` public URL; timestamps
//! at the ends of i64 give an empty page, never a wrap or a panic.

use std::sync::Arc;

use crate::common::Setup;
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use spindle_server::accounts::md5_hex;
use spindle_server::params::Params;
use spindle_server::{Accounts, Config, ManualClock, Music};

use crate::common;

const NOW: i64 = 1_700_000_000;
const PW: &str = "pw";

struct Fixture {
    app: axum::Router,
    clock: Arc<ManualClock>,
    accounts: Arc<Accounts>,
    /// bob's ListenBrainz token.
    bob_token: String,
    ann_token: String,
    key: String,
    secret: String,
    /// bob's session key, issued under `key`.
    bob_sk: String,
    _data: Setup,
}

fn fixture_with(config: Config) -> Fixture {
    let d = Setup::empty().user("ann", PW).user("bob", PW);
    let (key, secret) = d.accounts.add_api_key("tests", 0).unwrap();
    let bob_sk = d.accounts.new_session("bob", &key, 0).unwrap();
    let clock = Arc::new(ManualClock::new(NOW));
    let state = d.state(config, clock.clone());
    let state = state
        .with_music(Music::new(&[], d.path()).unwrap())
        .started();
    Fixture {
        app: spindle_server::router(state),
        clock,
        bob_token: d.token("bob"),
        ann_token: d.token("ann"),
        accounts: d.accounts.clone(),
        key,
        secret,
        bob_sk,
        _data: d,
    }
}

fn fixture() -> Fixture {
    fixture_with(Config::default())
}

struct Answer {
    status: StatusCode,
    cookie: Option<String>,
    body: String,
}

async fn send(app: &axum::Router, req: Request<Body>) -> Answer {
    let (status, cookie, body) = common::send(app, req).await;
    Answer {
        status,
        cookie,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

async fn get(app: &axum::Router, uri: &str, token: Option<&str>) -> Answer {
    let mut b = Request::get(uri);
    if let Some(t) = token {
        b = b.header(header::AUTHORIZATION, format!("Token {t}"));
    }
    send(app, b.body(Body::empty()).unwrap()).await
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A Last.fm call, signed with `secret` when given.
async fn lastfm(app: &axum::Router, params: &[(&str, &str)], secret: Option<&str>) -> Answer {
    let mut p: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    if let Some(s) = secret {
        let sig = Params(p.clone()).signature(s);
        p.push(("api_sig".into(), sig));
    }
    let form: Vec<String> = p.iter().map(|(k, v)| format!("{k}={}", enc(v))).collect();
    let req = Request::post("/2.0/")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(form.join("&")))
        .unwrap();
    send(app, req).await
}

/// A Last.fm call's parameters.
type Call<'a> = &'a [(&'a str, &'a str)];

fn error_code(a: &Answer) -> Option<u32> {
    let i = a.body.find("<error code=\"")? + 13;
    a.body[i..].split('"').next()?.parse().ok()
}

async fn submit(f: &Fixture, token: &str, ts: i64, title: &str) -> Answer {
    let doc = format!(
        r#"{{"listen_type":"single","payload":[{{"listened_at":{ts},"track_metadata":{{"artist_name":"Art","track_name":"{title}"}}}}]}}"#
    );
    let req = Request::post("/1/submit-listens")
        .header(header::AUTHORIZATION, format!("Token {token}"))
        .body(Body::from(doc))
        .unwrap();
    send(&f.app, req).await
}

async fn login(f: &Fixture, user: &str) -> String {
    let a = send(&f.app, common::login(user, PW)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.cookie.unwrap()
}

async fn set_public(f: &Fixture, cookie: &str, public: bool, csrf: bool) -> Answer {
    let session = cookie.split(';').next().unwrap().to_owned();
    let mut b = Request::post("/ui/api/me/privacy").header(header::COOKIE, session);
    if csrf {
        b = b.header("x-spindle-csrf", "1");
    }
    send(
        &f.app,
        b.body(Body::from(format!(r#"{{"public":{public}}}"#)))
            .unwrap(),
    )
    .await
}

#[tokio::test]
async fn listenbrainz_reads_of_a_private_user_answer_like_an_unknown_user() {
    let f = fixture();
    assert_eq!(
        submit(&f, &f.bob_token, NOW - 60, "Song").await.status,
        StatusCode::OK
    );
    for what in ["listens", "playing-now", "listen-count"] {
        let unknown = get(&f.app, &format!("/1/user/nobody/{what}"), None).await;
        assert_eq!(unknown.status, StatusCode::UNAUTHORIZED, "{what}");
        for token in [None, Some(f.ann_token.as_str()), Some("f00")] {
            let private = get(&f.app, &format!("/1/user/bob/{what}"), token).await;
            assert_eq!(
                (private.status, &private.body),
                (unknown.status, &unknown.body),
                "{what} with {token:?}"
            );
        }
        let own = get(&f.app, &format!("/1/user/bob/{what}"), Some(&f.bob_token)).await;
        assert_eq!(own.status, StatusCode::OK, "{what}: {}", own.body);
    }
    let own = get(&f.app, "/1/user/bob/listens", Some(&f.bob_token)).await;
    let v: serde_json::Value = serde_json::from_str(&own.body).unwrap();
    assert_eq!(
        v["payload"]["listens"][0]["track_metadata"]["track_name"],
        "Song"
    );
    submit(&f, &f.bob_token, NOW - 30, "Other").await;
    let count = get(&f.app, "/1/user/bob/listen-count", Some(&f.bob_token)).await;
    let v: serde_json::Value = serde_json::from_str(&count.body).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"payload": {"count": 2}}),
        "{}",
        count.body
    );
}

#[tokio::test]
async fn a_history_made_public_in_the_web_ui_is_read_without_credentials() {
    let f = fixture();
    submit(&f, &f.bob_token, NOW - 60, "Song").await;
    let cookie = login(&f, "bob").await;
    let session = cookie.split(';').next().unwrap().to_owned();
    let read = |c: &str| {
        Request::get("/ui/api/me/privacy")
            .header(header::COOKIE, c.to_owned())
            .body(Body::empty())
            .unwrap()
    };
    let a = send(&f.app, read(&session)).await;
    assert_eq!(a.status, StatusCode::OK);
    assert!(a.body.contains(r#""public":false"#), "{}", a.body);
    // A cross-site POST is refused and changes nothing.
    assert_eq!(
        set_public(&f, &cookie, true, false).await.status,
        StatusCode::FORBIDDEN
    );
    let recent = [
        ("method", "user.getRecentTracks"),
        ("user", "bob"),
        ("api_key", f.key.as_str()),
    ];
    assert_eq!(error_code(&lastfm(&f.app, &recent, None).await), Some(17));

    let a = set_public(&f, &cookie, true, true).await;
    assert!(a.body.contains(r#""public":true"#), "{}", a.body);
    let lb = get(&f.app, "/1/user/bob/listens", None).await;
    assert_eq!(lb.status, StatusCode::OK);
    assert!(lb.body.contains("Song"));
    assert_eq!(
        get(&f.app, "/1/user/bob/playing-now", None).await.status,
        StatusCode::OK
    );
    let lfm = lastfm(&f.app, &recent, None).await;
    assert_eq!(lfm.status, StatusCode::OK, "{}", lfm.body);
    assert!(lfm.body.contains("<name>Song</name>"));
    // ann's history stays private.
    assert_eq!(
        get(&f.app, "/1/user/ann/listens", None).await.status,
        StatusCode::UNAUTHORIZED
    );

    set_public(&f, &cookie, false, true).await;
    assert_eq!(
        get(&f.app, "/1/user/bob/listens", None).await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn lastfm_reads_of_a_private_user_answer_like_an_unknown_user() {
    let f = fixture();
    submit(&f, &f.bob_token, NOW - 60, "Song").await;
    let ann_sk = f.accounts.new_session("ann", &f.key, 0).unwrap();
    let key = f.key.as_str();
    for method in [
        "user.getRecentTracks",
        "user.getTopArtists",
        "user.getTopAlbums",
        "user.getTopTracks",
        "user.getLovedTracks",
        "user.getInfo",
    ] {
        let unknown = lastfm(
            &f.app,
            &[("method", method), ("user", "nobody"), ("api_key", key)],
            None,
        )
        .await;
        assert_eq!(error_code(&unknown), Some(17), "{method}: {}", unknown.body);
        let tries: [(Call, Option<&str>); 3] = [
            (
                &[("method", method), ("user", "bob"), ("api_key", key)],
                None,
            ),
            // A session key in an unsigned call proves nothing.
            (
                &[
                    ("method", method),
                    ("user", "bob"),
                    ("api_key", key),
                    ("sk", &f.bob_sk),
                ],
                None,
            ),
            // Another user's session.
            (
                &[
                    ("method", method),
                    ("user", "bob"),
                    ("api_key", key),
                    ("sk", &ann_sk),
                ],
                Some(&f.secret),
            ),
        ];
        for (params, secret) in tries {
            let private = lastfm(&f.app, params, secret).await;
            assert_eq!(
                (private.status, &private.body),
                (unknown.status, &unknown.body),
                "{method} {params:?}"
            );
        }
        let own = lastfm(
            &f.app,
            &[
                ("method", method),
                ("user", "bob"),
                ("api_key", key),
                ("sk", &f.bob_sk),
            ],
            Some(&f.secret),
        )
        .await;
        assert_eq!(own.status, StatusCode::OK, "{method}: {}", own.body);
    }
    let own = lastfm(
        &f.app,
        &[
            ("method", "user.getRecentTracks"),
            ("api_key", key),
            ("sk", &f.bob_sk),
        ],
        Some(&f.secret),
    )
    .await;
    assert!(own.body.contains("<name>Song</name>"), "{}", own.body);
}

#[tokio::test]
async fn a_session_key_works_only_with_the_api_key_it_was_issued_under() {
    let f = fixture();
    let (key2, secret2) = f.accounts.add_api_key("other", 0).unwrap();
    for (key, secret, want) in [(&key2, &secret2, Some(9)), (&f.key, &f.secret, None)] {
        let a = lastfm(
            &f.app,
            &[
                ("method", "track.updateNowPlaying"),
                ("artist", "A"),
                ("track", "T"),
                ("api_key", key),
                ("sk", &f.bob_sk),
            ],
            Some(secret),
        )
        .await;
        assert_eq!(error_code(&a), want, "{}", a.body);
        if want.is_some() {
            assert_eq!(a.status, StatusCode::FORBIDDEN);
        }
    }
    let read = lastfm(
        &f.app,
        &[
            ("method", "user.getRecentTracks"),
            ("api_key", &key2),
            ("sk", &f.bob_sk),
        ],
        Some(&secret2),
    )
    .await;
    assert_eq!(error_code(&read), Some(9), "{}", read.body);
    // The 1.2.1 handshake binds the session key the same way.
    let t = NOW.to_string();
    for (k, s, want) in [(&key2, &secret2, "BADAUTH"), (&f.key, &f.secret, "OK")] {
        let a = md5_hex(format!("{s}{t}").as_bytes());
        let uri = format!(
            "/?hs=true&p=1.2.1&c=tst&v=1&u=bob&t={t}&a={a}&api_key={k}&sk={}",
            f.bob_sk
        );
        let r = get(&f.app, &uri, None).await;
        assert!(r.body.starts_with(want), "{want}: {}", r.body);
    }
}

#[tokio::test]
async fn an_auth_token_expires_an_hour_after_it_was_made() {
    let f = fixture();
    let key = f.key.as_str();
    let tok = lastfm(
        &f.app,
        &[("method", "auth.getToken"), ("api_key", key)],
        Some(&f.secret),
    )
    .await;
    let i = tok.body.find("<token>").unwrap() + 7;
    let token = tok.body[i..].split('<').next().unwrap().to_owned();
    let exchange = [
        ("method", "auth.getSession"),
        ("api_key", key),
        ("token", token.as_str()),
    ];
    // Not yet approved: 14; after an hour: 15, expired.
    assert_eq!(
        error_code(&lastfm(&f.app, &exchange, Some(&f.secret)).await),
        Some(14)
    );
    f.clock.advance(spindle_server::lastfm::TOKEN_TTL + 1);
    assert_eq!(
        error_code(&lastfm(&f.app, &exchange, Some(&f.secret)).await),
        Some(15)
    );
}

fn handshake_uri(user: &str, t: i64) -> String {
    let a = md5_hex(format!("{}{t}", md5_hex(PW.as_bytes())).as_bytes());
    format!("/?hs=true&p=1.2&c=tst&v=1&u={user}&t={t}&a={a}")
}

async fn as12_session(f: &Fixture) -> String {
    let r = get(&f.app, &handshake_uri("bob", f.clock_now()), None).await;
    assert!(r.body.starts_with("OK\n"), "{}", r.body);
    r.body.lines().nth(1).unwrap().to_owned()
}

async fn now_playing(f: &Fixture, sid: &str) -> String {
    let req = Request::post("/as12/nowplaying")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!("s={sid}&a=Art&t=Now")))
        .unwrap();
    send(&f.app, req).await.body
}

impl Fixture {
    fn clock_now(&self) -> i64 {
        use spindle_server::Clock;
        self.clock.now()
    }
}

#[tokio::test]
async fn a_user_holds_a_bounded_number_of_as12_sessions_and_idle_ones_end() {
    let f = fixture();
    let first = as12_session(&f).await;
    let mut last = String::new();
    for _ in 0..spindle_server::lastfm::as12::MAX_SESSIONS_PER_USER + 20 {
        last = as12_session(&f).await;
    }
    assert_eq!(
        now_playing(&f, &first).await,
        "BADSESSION\n",
        "the oldest session ended"
    );
    assert_eq!(now_playing(&f, &last).await, "OK\n");
    // Use keeps a session alive; a day without use ends it.
    f.clock
        .advance(spindle_server::lastfm::as12::SESSION_IDLE - 10);
    assert_eq!(now_playing(&f, &last).await, "OK\n");
    f.clock
        .advance(spindle_server::lastfm::as12::SESSION_IDLE + 1);
    assert_eq!(now_playing(&f, &last).await, "BADSESSION\n");
}

#[tokio::test]
async fn the_session_cookie_is_secure_behind_an_https_public_url() {
    let f = fixture_with(Config {
        public_url: Some("https://music.example".into()),
        ..Config::default()
    });
    let c = login(&f, "ann").await;
    assert!(c.contains("; Secure"), "{c}");
    let f = fixture();
    let c = login(&f, "ann").await;
    assert!(
        !c.contains("Secure"),
        "plain HTTP would never send it back: {c}"
    );
}

#[tokio::test]
async fn timestamps_at_the_ends_of_i64_give_an_empty_page_never_a_wrap() {
    let f = fixture();
    submit(&f, &f.bob_token, NOW - 60, "Song").await;
    let (max, min) = (i64::MAX.to_string(), i64::MIN.to_string());
    for q in [format!("min_ts={max}"), format!("max_ts={min}")] {
        let a = get(
            &f.app,
            &format!("/1/user/bob/listens?{q}"),
            Some(&f.bob_token),
        )
        .await;
        assert_eq!(a.status, StatusCode::OK, "{q}: {}", a.body);
        let v: serde_json::Value = serde_json::from_str(&a.body).unwrap();
        assert_eq!(v["payload"]["count"], 0, "{q}");
    }
    for q in [format!("min_ts={min}"), format!("max_ts={max}")] {
        let a = get(
            &f.app,
            &format!("/1/user/bob/listens?{q}"),
            Some(&f.bob_token),
        )
        .await;
        let v: serde_json::Value = serde_json::from_str(&a.body).unwrap();
        assert_eq!(v["payload"]["count"], 1, "{q}");
    }
    let key = f.key.as_str();
    for (from, to) in [(&max, None), (&max, Some(&min)), (&min, Some(&min))] {
        let mut p = vec![
            ("method", "user.getRecentTracks"),
            ("api_key", key),
            ("sk", f.bob_sk.as_str()),
            ("from", from.as_str()),
        ];
        if let Some(to) = to {
            p.push(("to", to.as_str()));
        }
        let a = lastfm(&f.app, &p, Some(&f.secret)).await;
        assert_eq!(a.status, StatusCode::OK, "{p:?}: {}", a.body);
        assert!(a.body.contains(r#"total="0""#), "{p:?}: {}", a.body);
    }
    // Submissions: refused, not wrapped.
    for ts in [i64::MAX, i64::MIN] {
        assert_eq!(
            submit(&f, &f.bob_token, ts, "Far").await.status,
            StatusCode::BAD_REQUEST
        );
        let a = lastfm(
            &f.app,
            &[
                ("method", "track.scrobble"),
                ("artist", "Art"),
                ("track", "Far"),
                ("timestamp", &ts.to_string()),
                ("api_key", key),
                ("sk", &f.bob_sk),
            ],
            Some(&f.secret),
        )
        .await;
        assert!(a.body.contains(r#"accepted="0""#), "{}", a.body);
        let r = get(&f.app, &handshake_uri("bob", ts), None).await;
        assert_eq!(r.body, "BADTIME\n");
    }
}
