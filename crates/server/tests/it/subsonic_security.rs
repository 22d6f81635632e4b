//! The Subsonic API refuses what it must: requests without credentials or
//! with wrong ones, another user's data, and path traversal in every id
//! parameter; streaming answers ranges as RFC 9110 says.

use std::sync::Arc;

use crate::common::Setup;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use spindle_server::{Config, SystemClock};
use tower::ServiceExt;

use crate::common;

const PW: &str = "pw for tests";

struct Fixture {
    app: axum::Router,
    _setup: Setup,
    song: String,
    file: std::path::PathBuf,
    /// ann's ListenBrainz token, to read her (private) history.
    ann_token: String,
}

fn fixture() -> Fixture {
    let d = Setup::demo().user("ann", PW).user("bob", PW);
    let ann_token = d.token("ann");
    let state = d.state(Config::default(), Arc::new(SystemClock));
    let file = std::fs::canonicalize(&d.files[0]).unwrap();
    let id = common::id_of(&d.db, &file).unwrap();
    Fixture {
        app: spindle_server::router(state),
        _setup: d,
        song: id.to_string(),
        file,
        ann_token,
    }
}

async fn get(app: &axum::Router, uri: &str, headers: &[(&str, &str)]) -> (StatusCode, Vec<u8>) {
    let mut req = Request::get(uri);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = app
        .clone()
        .oneshot(req.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    (
        status,
        resp.into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec(),
    )
}

fn code(body: &[u8]) -> Option<i64> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    v["subsonic-response"]["error"]["code"].as_i64()
}

const METHODS: &[&str] = &[
    "ping",
    "getLicense",
    "getMusicFolders",
    "getIndexes",
    "getArtists",
    "getArtist",
    "getAlbum",
    "getSong",
    "getAlbumList2",
    "getRandomSongs",
    "search3",
    "stream",
    "download",
    "getCoverArt",
    "scrobble",
    "star",
    "unstar",
    "getStarred2",
    "getPlaylists",
    "getPlaylist",
    "createPlaylist",
    "updatePlaylist",
    "deletePlaylist",
    "getNowPlaying",
    "getUser",
];

#[tokio::test]
async fn every_method_refuses_missing_and_wrong_credentials() {
    let f = fixture();
    for m in METHODS {
        let (_, body) = get(&f.app, &format!("/rest/{m}?f=json&id=1"), &[]).await;
        assert_eq!(code(&body), Some(10), "{m} without credentials");
        let (_, body) = get(&f.app, &format!("/rest/{m}?f=json&id=1&u=ann&p=nope"), &[]).await;
        assert_eq!(code(&body), Some(40), "{m} with a wrong password");
        let (_, body) = get(
            &f.app,
            &format!("/rest/{m}.view?f=json&id=1&u=ann&t=00&s=x"),
            &[],
        )
        .await;
        assert_eq!(code(&body), Some(40), "{m} with a wrong token");
        let (_, body) = get(
            &f.app,
            &format!(
                "/rest/{m}?f=json&id=1&u=nobody&p={}",
                PW.replace(' ', "%20")
            ),
            &[],
        )
        .await;
        assert_eq!(code(&body), Some(40), "{m} as an unknown user");
        let (_, body) = get(&f.app, &format!("/rest/{m}?f=json&id=1&apiKey=bogus"), &[]).await;
        assert_eq!(code(&body), Some(44), "{m} with a bad API key");
    }
    // The one public method.
    let (_, body) = get(&f.app, "/rest/getOpenSubsonicExtensions?f=json", &[]).await;
    assert_eq!(code(&body), None);
}

#[tokio::test]
async fn all_three_auth_schemes_are_accepted() {
    let f = fixture();
    let salt = "c19b2d";
    let t = spindle_server::accounts::md5_hex(format!("{PW}{salt}").as_bytes());
    let enc: String = PW.bytes().map(|b| format!("{b:02x}")).collect();
    for q in [
        format!("u=ann&p={}", PW.replace(' ', "%20")),
        format!("u=ann&p=enc:{enc}"),
        format!("u=ann&t={t}&s={salt}"),
    ] {
        let (_, body) = get(&f.app, &format!("/rest/ping?f=json&{q}"), &[]).await;
        assert_eq!(code(&body), None, "{q}: {}", String::from_utf8_lossy(&body));
    }
}

#[tokio::test]
async fn another_users_playlist_and_user_record_are_refused() {
    let f = fixture();
    let ann = format!("u=ann&p={}&f=json", PW.replace(' ', "%20"));
    let bob = format!("u=bob&p={}&f=json", PW.replace(' ', "%20"));
    let (_, body) = get(
        &f.app,
        &format!("/rest/createPlaylist?{ann}&name=mine&songId={}", f.song),
        &[],
    )
    .await;
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let id = v["subsonic-response"]["playlist"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for m in [
        format!("getPlaylist?{bob}&id={id}"),
        format!("updatePlaylist?{bob}&playlistId={id}&name=x"),
        format!("deletePlaylist?{bob}&id={id}"),
        format!("getUser?{bob}&username=ann"),
        format!("getPlaylists?{bob}&username=ann"),
    ] {
        let (_, body) = get(&f.app, &format!("/rest/{m}"), &[]).await;
        assert_eq!(code(&body), Some(50), "{m}");
    }
    let (_, body) = get(&f.app, &format!("/rest/getPlaylist?{ann}&id={id}"), &[]).await;
    assert_eq!(code(&body), None);
}

#[tokio::test]
async fn path_traversal_in_every_id_parameter_finds_nothing() {
    let f = fixture();
    let ann = format!("u=ann&p={}&f=json", PW.replace(' ', "%20"));
    let bad = [
        "../../../../etc/passwd",
        "%2Fetc%2Fpasswd",
        "..%2F..%2F..%2Fetc%2Fpasswd",
        "1%2F..%2F..%2Fetc%2Fpasswd",
        "file%3A%2F%2F%2Fetc%2Fpasswd",
        "al-..%2F..%2Fx",
        "ar-%2E%2E",
        "-1",
        "4294967296",
        "99999999999999999999",
        "%00",
    ];
    let params = [
        ("getSong", "id"),
        ("getAlbum", "id"),
        ("getArtist", "id"),
        ("getMusicDirectory", "id"),
        ("stream", "id"),
        ("download", "id"),
        ("getCoverArt", "id"),
        ("scrobble", "id"),
        ("star", "id"),
        ("star", "albumId"),
        ("star", "artistId"),
        ("getPlaylist", "id"),
        ("deletePlaylist", "id"),
        ("updatePlaylist", "playlistId"),
        ("createPlaylist", "songId"),
        ("getIndexes", "musicFolderId"),
    ];
    for (m, p) in params {
        for b in bad {
            let extra = if m == "createPlaylist" { "&name=x" } else { "" };
            let (status, body) = get(&f.app, &format!("/rest/{m}?{ann}{extra}&{p}={b}"), &[]).await;
            assert_eq!(status, StatusCode::OK);
            let c = code(&body);
            assert!(
                matches!(c, Some(0 | 70)),
                "{m} {p}={b}: {}",
                String::from_utf8_lossy(&body)
            );
        }
    }
}

#[tokio::test]
async fn streams_honour_ranges_and_never_count_a_play() {
    let f = fixture();
    let want = std::fs::read(&f.file).unwrap();
    let ann = format!("u=ann&p={}", PW.replace(' ', "%20"));
    let uri = format!("/rest/stream?{ann}&id={}", f.song);
    let (s, body) = get(&f.app, &uri, &[]).await;
    assert_eq!((s, body.len()), (StatusCode::OK, want.len()));
    assert!(body == want);
    let (s, body) = get(&f.app, &uri, &[("range", "bytes=10-19")]).await;
    assert_eq!((s, &body[..]), (StatusCode::PARTIAL_CONTENT, &want[10..20]));
    let (s, body) = get(&f.app, &uri, &[("range", "bytes=-4")]).await;
    assert_eq!(
        (s, &body[..]),
        (StatusCode::PARTIAL_CONTENT, &want[want.len() - 4..])
    );
    let past = format!("bytes={}-", want.len());
    let (s, _) = get(&f.app, &uri, &[("range", past.as_str())]).await;
    assert_eq!(s, StatusCode::RANGE_NOT_SATISFIABLE);
    let (s, body) = get(&f.app, &uri, &[("range", "bytes=0-1,5-9")]).await;
    assert_eq!((s, body.len()), (StatusCode::OK, want.len()));
    let (s, body) = get(&f.app, &uri, &[("range", "bytes=oops")]).await;
    assert_eq!((s, body.len()), (StatusCode::OK, want.len()));
    let auth = format!("Token {}", f.ann_token);
    let (_, body) = get(&f.app, "/1/user/ann/listens", &[("authorization", &auth)]).await;
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["payload"]["count"], 0, "streaming counted a play");
}
