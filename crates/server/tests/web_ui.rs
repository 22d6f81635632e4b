//! The web UI: the page at `/` (the Audioscrobbler handshake still
//! answers `/?hs=true`), login with a session cookie, refusals without a
//! session and for cross-site POSTs, search with query-language errors at
//! their column, and streaming with the session.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use spindle_media::scan::{scan, Quiet, ScanOptions};
use spindle_server::{Accounts, AppState, Config, Music, SystemClock};
use tower::ServiceExt;

fn app() -> (axum::Router, tempfile::TempDir, tempfile::TempDir) {
    let data = tempfile::tempdir().unwrap();
    let music = tempfile::tempdir().unwrap();
    spindle_media::demo::generate_demo(music.path()).unwrap();
    let db = Arc::new(spindle_store::Db::open(data.path().join("lib")).unwrap());
    let root = std::fs::canonicalize(music.path()).unwrap();
    scan(
        &db,
        std::slice::from_ref(&root),
        &ScanOptions::default(),
        &mut Quiet,
    )
    .unwrap();
    let accounts = Accounts::open(&data.path().join("accounts")).unwrap();
    accounts.add_user("ann", "pw", 0).unwrap();
    let (listens, _) = spindle_listens::Listens::open(&data.path().join("listens")).unwrap();
    let state = AppState::new(
        db,
        Arc::new(accounts),
        Arc::new(listens),
        Config::default(),
        Arc::new(SystemClock),
    );
    let m = Arc::new(Music::new(&[root], data.path()).unwrap());
    (spindle_server::router_with(state, m), data, music)
}

async fn send(app: &axum::Router, req: Request<Body>) -> (StatusCode, Option<String>, Vec<u8>) {
    let r = app.clone().oneshot(req).await.unwrap();
    let status = r.status();
    let cookie = r
        .headers()
        .get(header::SET_COOKIE)
        .map(|v| v.to_str().unwrap().to_owned());
    (
        status,
        cookie,
        r.into_body().collect().await.unwrap().to_bytes().to_vec(),
    )
}

fn login(csrf: bool, origin: Option<&str>, pw: &str) -> Request<Body> {
    let mut b = Request::post("/ui/login")
        .header(header::HOST, "127.0.0.1:4533")
        .header(header::CONTENT_TYPE, "application/json");
    if csrf {
        b = b.header("x-spindle-csrf", "1");
    }
    if let Some(o) = origin {
        b = b.header(header::ORIGIN, o);
    }
    b.body(Body::from(format!(r#"{{"user":"ann","password":"{pw}"}}"#)))
        .unwrap()
}

#[tokio::test]
async fn the_page_logs_in_searches_and_streams_with_a_session() {
    let (app, _d, _m) = app();
    let (s, _, body) = send(&app, Request::get("/").body(Body::empty()).unwrap()).await;
    assert_eq!(s, StatusCode::OK);
    assert!(String::from_utf8_lossy(&body).contains("<audio"));
    // The AS 1.2 handshake keeps its URL.
    let (_, _, body) = send(
        &app,
        Request::get("/?hs=true&p=1.2&u=ann&t=1&a=x&c=tst&v=1")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert!(!String::from_utf8_lossy(&body).contains("<html"));

    // No session: refused.
    for path in [
        "/ui/api/me",
        "/ui/api/search?q=",
        "/ui/api/recent",
        "/ui/stream/1",
    ] {
        let (s, _, _) = send(&app, Request::get(path).body(Body::empty()).unwrap()).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{path}");
    }
    // Cross-site: no token, or a foreign Origin.
    let (s, c, _) = send(&app, login(false, None, "pw")).await;
    assert_eq!((s, c), (StatusCode::FORBIDDEN, None));
    let (s, c, _) = send(&app, login(true, Some("https://evil.example"), "pw")).await;
    assert_eq!((s, c), (StatusCode::FORBIDDEN, None));
    let (s, c, _) = send(&app, login(true, None, "wrong")).await;
    assert_eq!((s, c), (StatusCode::UNAUTHORIZED, None));

    let (s, c, _) = send(&app, login(true, Some("http://127.0.0.1:4533"), "pw")).await;
    assert_eq!(s, StatusCode::OK);
    let c = c.unwrap();
    assert!(
        c.contains("HttpOnly") && c.contains("SameSite=Strict"),
        "{c}"
    );
    let session = c.split(';').next().unwrap().to_owned();
    let get = |p: &str| {
        Request::get(p)
            .header(header::COOKIE, session.as_str())
            .body(Body::empty())
            .unwrap()
    };
    let (s, _, body) = send(&app, get("/ui/api/search?q=artist~sine%20AND%20tracknr:2")).await;
    assert_eq!(s, StatusCode::OK);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let titles: Vec<&str> = v["songs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles.len(), 2, "{v}");
    let (s, _, body) = send(&app, get("/ui/api/search?q=artist:")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["column"], 8, "{v}");

    let id = {
        let (_, _, body) = send(&app, get("/ui/api/search?q=")).await;
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        v["songs"][0]["id"].as_u64().unwrap()
    };
    let (s, _, body) = send(&app, get(&format!("/ui/stream/{id}"))).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(&body[..4], b"RIFF");
    let (s, _, _) = send(&app, get("/ui/stream/..%2F..%2Fetc%2Fpasswd")).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}
