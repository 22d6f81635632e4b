//! The web UI's first run and admin page: setup from loopback or with the
//! code only, every admin route refused to a non-admin, every kind of
//! session listed and revoked, the scan's progress, and a user's own
//! settings (time zone, API keys for apps).

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;

use crate::common::{send, session, Setup};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, Request, StatusCode};
use spindle_server::{Config, ManualClock};

fn setup_request(peer: &str, body: &str, forwarded: bool) -> Request<Body> {
    let mut b = Request::post("/ui/setup")
        .header(header::HOST, "127.0.0.1:4533")
        .header(header::CONTENT_TYPE, "application/json")
        .header("x-spindle-csrf", "1");
    if forwarded {
        b = b.header("x-forwarded-for", "203.0.113.7");
    }
    let mut req = b.body(Body::from(body.to_owned())).unwrap();
    let addr: SocketAddr = peer.parse().unwrap();
    req.extensions_mut().insert(ConnectInfo(addr));
    req
}

#[tokio::test]
async fn the_first_user_is_refused_from_another_machine_without_the_setup_code() {
    let s = Setup::empty();
    let st = s.state(Config::default(), Arc::new(ManualClock::new(1_700_000_000)));
    let code = st.setup_code().expect("no users: a setup code");
    let app = spindle_server::router(st.clone());
    let body = |code: &str| format!(r#"{{"user":"root","password":"pw","code":"{code}"}}"#);

    let (status, cookie, _) = send(&app, setup_request("192.0.2.9:5000", &body(""), false)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(cookie.is_none());
    let (status, _, _) = send(
        &app,
        setup_request("192.0.2.9:5000", &body("WRONG-CODE-0000"), false),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // A local proxy forwarding a stranger is not local.
    let (status, _, _) = send(&app, setup_request("127.0.0.1:5000", &body(""), true)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(!s.accounts.user_exists("root"));

    // The code, typed in lower case, works from anywhere, once.
    let (status, cookie, out) = send(
        &app,
        setup_request("192.0.2.9:5000", &body(&code.to_lowercase()), false),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&out));
    assert!(cookie.unwrap().starts_with("spindle_session="));
    assert!(s.accounts.is_admin("root"));
    assert_eq!(st.setup_code(), None);
    let again = r#"{"user":"eve","password":"pw"}"#;
    let (status, _, _) = send(&app, setup_request("127.0.0.1:5000", again, false)).await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "set up already, even from loopback"
    );
    assert!(!s.accounts.user_exists("eve"));
}

#[tokio::test]
async fn the_first_user_may_be_made_from_loopback_without_the_code() {
    let s = Setup::empty();
    let st = s.state(Config::default(), Arc::new(ManualClock::new(1_700_000_000)));
    let app = spindle_server::router(st);
    let body = r#"{"user":"root","password":"pw"}"#;
    let (status, _, _) = send(&app, setup_request("[::1]:5000", body, false)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(s.accounts.is_admin("root"));
}

#[tokio::test]
async fn a_user_who_is_not_an_administrator_is_refused_on_every_admin_route() {
    let s = Setup::empty().user("root", "pw").user("bob", "pw");
    assert!(s.accounts.is_admin("root") && !s.accounts.is_admin("bob"));
    let st = s.state(Config::default(), Arc::new(ManualClock::new(1_700_000_000)));
    let app = spindle_server::router(st);
    let bob = session(&app, "bob", "pw").await;
    let root = session(&app, "root", "pw").await;
    for (method, path) in spindle_server::web::ADMIN_ROUTES {
        let path = path.replace("NAME", "root");
        let req = |cookie: Option<&str>| {
            let mut b = Request::builder()
                .method(*method)
                .uri(&path)
                .header(header::HOST, "127.0.0.1:4533")
                .header(header::CONTENT_TYPE, "application/json")
                .header("x-spindle-csrf", "1");
            if let Some(c) = cookie {
                b = b.header(header::COOKIE, c);
            }
            b.body(Body::from(r#"{"name":"x","password":"y","handle":"z"}"#))
                .unwrap()
        };
        let (status, _, _) = send(&app, req(Some(&bob))).await;
        assert_eq!(
            status,
            StatusCode::FORBIDDEN,
            "{method} {path} for a non-admin"
        );
        let (status, _, _) = send(&app, req(None)).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{method} {path} without a session"
        );
    }
    // Nothing changed: root is still there and still the administrator.
    assert!(s.accounts.is_admin("root"));
    // The administrator may list the users.
    let mut req = common::get("/ui/api/admin/users");
    req.headers_mut()
        .insert(header::COOKIE, root.parse().unwrap());
    let (status, _, body) = send(&app, req).await;
    assert_eq!(status, StatusCode::OK);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["users"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn a_deleted_users_web_session_ends_and_a_revoked_one_too() {
    let s = Setup::empty().user("root", "pw").user("bob", "pw");
    let st = s.state(Config::default(), Arc::new(ManualClock::new(1_700_000_000)));
    let app = spindle_server::router(st.clone());
    let bob = session(&app, "bob", "pw").await;
    let me = |c: &str| {
        let mut r = common::get("/ui/api/me");
        r.headers_mut().insert(header::COOKIE, c.parse().unwrap());
        r
    };
    assert_eq!(send(&app, me(&bob)).await.0, StatusCode::OK);
    let handle = st.web_sessions().list(Some("bob"), st.now())[0]
        .handle
        .clone();
    assert!(st.web_sessions().revoke(&handle, None));
    assert_eq!(send(&app, me(&bob)).await.0, StatusCode::UNAUTHORIZED);
    let bob = session(&app, "bob", "pw").await;
    // Deleted with the CLI beside the running server.
    s.accounts.delete_user("bob").unwrap();
    assert_eq!(send(&app, me(&bob)).await.0, StatusCode::UNAUTHORIZED);
}

/// A `GET` of `path` with the session `cookie`: status and JSON body.
async fn get_as(app: &axum::Router, path: &str, cookie: &str) -> (StatusCode, serde_json::Value) {
    let mut req = common::get(path);
    req.headers_mut()
        .insert(header::COOKIE, cookie.parse().unwrap());
    let (status, _, body) = send(app, req).await;
    (status, serde_json::from_slice(&body).unwrap_or_default())
}

/// A CSRF-headed `POST` of `body` to `path` with the session `cookie`.
async fn post_as(
    app: &axum::Router,
    path: &str,
    cookie: &str,
    body: serde_json::Value,
) -> (StatusCode, serde_json::Value) {
    let req = Request::post(path)
        .header(header::HOST, "127.0.0.1:4533")
        .header(header::CONTENT_TYPE, "application/json")
        .header("x-spindle-csrf", "1")
        .header(header::COOKIE, cookie)
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, _, out) = send(app, req).await;
    (status, serde_json::from_slice(&out).unwrap_or_default())
}

#[tokio::test]
async fn an_administrator_lists_and_revokes_session_keys_and_api_keys_without_seeing_them() {
    use serde_json::json;
    let s = Setup::empty().user("root", "pw").user("bob", "pw");
    let (lfm_key, _) = s.accounts.add_api_key("scrobbler", 1).unwrap();
    let sk = s.accounts.new_session("bob", &lfm_key, 2).unwrap();
    let (app_key, app_id) = s.accounts.add_app_key("bob", "Symfonium", 3).unwrap();
    let old_token = s.token("bob");
    let st = s.state(Config::default(), Arc::new(ManualClock::new(1_700_000_000)));
    let app = spindle_server::router(st);
    let root = session(&app, "root", "pw").await;
    let bob = session(&app, "bob", "pw").await;

    let (status, v) = get_as(&app, "/ui/api/admin/sessions", &root).await;
    assert_eq!(status, StatusCode::OK);
    let text = v.to_string();
    assert!(
        !text.contains(&sk) && !text.contains(&app_key),
        "no secret leaves: {text}"
    );
    let handle = spindle_server::accounts::handle(&sk);
    assert_eq!(v["lastfm"][0]["handle"], handle.as_str());
    assert_eq!(v["lastfm"][0]["user"], "bob");
    assert_eq!(v["apps"][0]["id"], app_id.as_str());
    assert_eq!(v["apps"][0]["app"], "Symfonium");
    assert_eq!(v["web"].as_array().unwrap().len(), 2);
    let (_, users) = get_as(&app, "/ui/api/admin/users", &root).await;
    let b = users["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == "bob")
        .unwrap();
    assert_eq!(
        (b["name"].as_str(), b["lastfm_sessions"].as_u64()),
        (Some("bob"), Some(1))
    );
    assert_eq!(
        (b["api_keys"].as_u64(), b["token"].as_bool()),
        (Some(1), Some(true))
    );

    let (status, keys) = get_as(&app, "/ui/api/admin/apikeys", &root).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(keys["keys"][0]["api_key"], lfm_key.as_str());
    assert_eq!(keys["keys"][0]["sessions"], 1);
    assert!(keys["keys"][0].get("secret").is_none(), "{keys}");
    assert_eq!(keys["apps"][0]["id"], app_id.as_str());

    // bob, no administrator, can revoke nothing here.
    let revoke_app = json!({"handle": app_id, "kind": "app"});
    let (status, _) = post_as(
        &app,
        "/ui/api/admin/sessions/revoke",
        &bob,
        revoke_app.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(s.accounts.user_by_app_key(&app_key).as_deref(), Some("bob"));
    // A kind names where to look: an API key's id is no session key.
    let (status, _) = post_as(
        &app,
        "/ui/api/admin/sessions/revoke",
        &root,
        json!({"handle": app_id, "kind": "lastfm"}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(s.accounts.user_by_app_key(&app_key).as_deref(), Some("bob"));

    let (status, _) = post_as(
        &app,
        "/ui/api/admin/sessions/revoke",
        &root,
        revoke_app.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(s.accounts.user_by_app_key(&app_key), None);
    let (status, _) = post_as(&app, "/ui/api/admin/sessions/revoke", &root, revoke_app).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "revoked already");
    let (status, _) = post_as(
        &app,
        "/ui/api/admin/sessions/revoke",
        &root,
        json!({"handle": handle, "kind": "lastfm"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(s.accounts.session(&sk).is_none());

    let (status, _) = post_as(
        &app,
        "/ui/api/admin/apikeys/delete",
        &root,
        json!({"api_key": lfm_key}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(s.accounts.api_secret(&lfm_key).is_none());

    let (status, _) = post_as(&app, "/ui/api/admin/user/bob/token", &bob, json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(s.accounts.user_by_token(&old_token).as_deref(), Some("bob"));
    let (status, v) = post_as(&app, "/ui/api/admin/user/bob/token", &root, json!({})).await;
    assert_eq!(status, StatusCode::OK);
    let new_token = v["token"].as_str().unwrap();
    assert_eq!(s.accounts.user_by_token(&old_token), None);
    assert_eq!(s.accounts.user_by_token(new_token).as_deref(), Some("bob"));
}

#[tokio::test]
async fn a_user_sets_their_time_zone_and_makes_and_revokes_their_own_app_keys() {
    use serde_json::json;
    let s = Setup::empty().user("root", "pw").user("bob", "pw");
    let (_, root_id) = s.accounts.add_app_key("root", "root's app", 0).unwrap();
    let st = s.state(Config::default(), Arc::new(ManualClock::new(1_700_000_000)));
    let app = spindle_server::router(st);
    let bob = session(&app, "bob", "pw").await;

    let (status, v) = get_as(&app, "/ui/api/me/settings", &bob).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["timezone"], "UTC");
    let (status, v) = post_as(
        &app,
        "/ui/api/me/settings",
        &bob,
        json!({"timezone": "Mars/Base"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(v["error"].as_str().unwrap().contains("Mars/Base"), "{v}");
    let (status, v) = post_as(
        &app,
        "/ui/api/me/settings",
        &bob,
        json!({"timezone": "Europe/Paris"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["timezone"], "Europe/Paris");
    assert_eq!(
        s.accounts.time_zone_name("bob").as_deref(),
        Some("Europe/Paris")
    );

    let (status, made) = post_as(&app, "/ui/api/me/apikeys", &bob, json!({"app": "Feishin"})).await;
    assert_eq!(status, StatusCode::OK);
    let key = made["key"].as_str().unwrap();
    let id = made["id"].as_str().unwrap();
    assert_eq!(s.accounts.user_by_app_key(key).as_deref(), Some("bob"));
    let (_, v) = get_as(&app, "/ui/api/me/settings", &bob).await;
    assert_eq!(
        v["apps"].as_array().unwrap().len(),
        1,
        "only bob's own: {v}"
    );
    assert!(!v.to_string().contains(key));
    // Not root's key, even by its id.
    let (status, _) = post_as(
        &app,
        "/ui/api/me/apikeys/revoke",
        &bob,
        json!({"id": root_id}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(s.accounts.app_keys(Some("root")).len(), 1);
    let (status, _) = post_as(&app, "/ui/api/me/apikeys/revoke", &bob, json!({"id": id})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(s.accounts.user_by_app_key(key), None);

    // Without the settings role, nothing changes.
    let mut p = s.accounts.profile("bob").unwrap();
    p.roles.settings = false;
    s.accounts.set_profile("bob", p).unwrap();
    let (status, _) = post_as(
        &app,
        "/ui/api/me/settings",
        &bob,
        json!({"timezone": "UTC"}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = post_as(&app, "/ui/api/me/apikeys", &bob, json!({"app": "x"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        s.accounts.time_zone_name("bob").as_deref(),
        Some("Europe/Paris")
    );
}

#[tokio::test]
async fn scan_now_reports_its_progress_and_ends_with_the_library_count() {
    let s = Setup::demo().user("root", "pw");
    let st = s.state(Config::default(), Arc::new(ManualClock::new(1_700_000_000)));
    let app = spindle_server::router(st.clone());
    let root = session(&app, "root", "pw").await;
    // A new file, so the rescan has something to read.
    let extra = s.root.as_ref().unwrap().join("extra.flac");
    std::fs::copy(&s.files[0], &extra).unwrap();
    let (status, v) = post_as(&app, "/ui/api/admin/scan", &root, serde_json::json!({})).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    for field in ["scanning", "count", "stage", "done", "total"] {
        assert!(v.get(field).is_some(), "{field} in {v}");
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut seen_done = Vec::new();
    loop {
        let (_, v) = get_as(&app, "/ui/api/admin/scan", &root).await;
        if v["scanning"] == false {
            assert_eq!(v["stage"], "idle");
            assert_eq!(
                v["count"].as_u64().unwrap(),
                s.files.len() as u64 + 1,
                "{v}"
            );
            assert!(v["last_scan"].is_i64());
            break;
        }
        seen_done.push(v["done"].as_u64().unwrap());
        assert!(std::time::Instant::now() < deadline, "the scan never ended");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert!(
        seen_done.windows(2).all(|w| w[0] <= w[1]),
        "the count only grows: {seen_done:?}"
    );
    st.stop_background();
}
