//! The web UI: one page at `/` (HTML, CSS and JavaScript embedded in the
//! binary with `include_str!`, no build step) and what it calls under
//! `/ui/`: a small JSON API ([`library`]: search, albums, artists;
//! [`activity`]: now playing, recent listens, the player's reports) and
//! SVG charts ([`charts`]).
//!
//! Access: a user logs in with name and password (Argon2-checked) and gets
//! a session cookie (`HttpOnly`, `SameSite=Strict`, random 128-bit id,
//! kept in memory). State-changing requests (login, logout, the player's
//! now-playing and scrobble reports) must carry the `X-Spindle-Csrf`
//! header, which a cross-site form cannot send, and a same-origin
//! `Origin` when the browser sends one; a failed login costs the client a
//! second. Every `/ui/api/…`, `/ui/chart/…` and `/ui/stream/ID` request
//! needs a session; only the page, its script and its style sheet (which
//! hold no data) are public, so the login form can load.

mod activity;
mod charts;
mod library;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::json;

use crate::accounts::random_hex;
use crate::catalog::Catalog;
use crate::music::Music;
use crate::state::{lock, AppState};

const COOKIE: &str = "spindle_session";
const CSRF_HEADER: &str = "x-spindle-csrf";
/// Sessions last this long without use.
const SESSION_TTL: i64 = 7 * 24 * 3600;

const INDEX_HTML: &str = include_str!("index.html");
const APP_JS: &str = include_str!("app.js");
const STYLE_CSS: &str = include_str!("style.css");

/// Logged-in browsers: session id → (user, last use).
#[derive(Default)]
pub struct Sessions(Mutex<HashMap<String, (String, i64)>>);

impl Sessions {
    fn user(&self, id: &str, now: i64) -> Option<String> {
        let mut s = lock(&self.0);
        let e = s.get_mut(id)?;
        if now - e.1 > SESSION_TTL {
            s.remove(id);
            return None;
        }
        e.1 = now;
        Some(e.0.clone())
    }
}

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/ui/app.js",
            get(|| async { asset(APP_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/ui/style.css",
            get(|| async { asset(STYLE_CSS, "text/css; charset=utf-8") }),
        )
        .route("/ui/login", post(login))
        .route("/ui/logout", post(logout))
        .route("/ui/api/me", get(me))
        .route("/ui/api/search", get(library::search))
        .route("/ui/api/album/{id}", get(library::album))
        .route("/ui/api/artists", get(library::artists))
        .route("/ui/api/artist/{id}", get(library::artist))
        .route("/ui/api/recent", get(activity::recent))
        .route("/ui/api/now", get(activity::now))
        .route("/ui/api/playing", post(activity::playing))
        .route("/ui/chart/{name}", get(charts::chart))
        .route("/ui/stream/{id}", get(stream))
}

/// Serves the page at `/`, which the Audioscrobbler 1.2 handshake shares:
/// a request to `/` with an `hs` parameter goes on to it.
pub async fn index_or_next(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let is_page = req.uri().path() == "/"
        && (req.method() == Method::GET || req.method() == Method::HEAD)
        && !req
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|kv| kv == "hs" || kv.starts_with("hs=")));
    if is_page {
        return asset(INDEX_HTML, "text/html; charset=utf-8");
    }
    next.run(req).await
}

fn asset(body: &'static str, ct: &'static str) -> Response {
    let mut r = Response::new(Body::from(body));
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    r.headers_mut().insert(
        "content-security-policy",
        HeaderValue::from_static("default-src 'self'; media-src 'self'; img-src 'self' data:"),
    );
    r
}

fn cookie(h: &HeaderMap) -> Option<String> {
    h.get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| {
            c.trim()
                .strip_prefix(&format!("{COOKIE}="))
                .map(str::to_owned)
        })
}

/// The user whose session cookie `h` carries.
pub(crate) fn session_user(st: &AppState, music: &Music, h: &HeaderMap) -> Option<String> {
    music.sessions.user(&cookie(h)?, st.now())
}

pub(crate) fn err(status: StatusCode, msg: &str) -> Response {
    (status, Json(json!({ "error": msg }))).into_response()
}

/// Cross-site forgery guard for POSTs: the custom header (a cross-site
/// form cannot set it) and, when the browser sends one, a same-origin
/// `Origin`.
pub(crate) fn csrf_ok(h: &HeaderMap) -> bool {
    if h.get(CSRF_HEADER).is_none() {
        return false;
    }
    match (h.get(header::ORIGIN), h.get(header::HOST)) {
        (Some(o), Some(host)) => {
            let (Ok(o), Ok(host)) = (o.to_str(), host.to_str()) else {
                return false;
            };
            o.split_once("://").is_some_and(|(_, rest)| rest == host)
        }
        _ => true,
    }
}

#[derive(Deserialize)]
struct LoginForm {
    user: String,
    password: String,
}

async fn login(
    State(st): State<AppState>,
    Extension(music): Extension<Arc<Music>>,
    h: HeaderMap,
    body: Body,
) -> Response {
    if !csrf_ok(&h) {
        return err(StatusCode::FORBIDDEN, "cross-site request refused");
    }
    let form: LoginForm = match small_json(body).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let acc = st.accounts.clone();
    let (user, pw) = (form.user.clone(), form.password);
    let good = tokio::task::spawn_blocking(move || acc.check_password(&user, &pw))
        .await
        .unwrap_or(false);
    if !good {
        // Slow down guessing.
        tokio::time::sleep(Duration::from_secs(1)).await;
        return err(StatusCode::UNAUTHORIZED, "wrong user name or password");
    }
    let id = random_hex();
    lock(&music.sessions.0).insert(id.clone(), (form.user.clone(), st.now()));
    let mut r = Json(json!({ "user": form.user })).into_response();
    if let Ok(v) = HeaderValue::from_str(&format!(
        "{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/; Max-Age={SESSION_TTL}"
    )) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

async fn logout(Extension(music): Extension<Arc<Music>>, h: HeaderMap) -> Response {
    if !csrf_ok(&h) {
        return err(StatusCode::FORBIDDEN, "cross-site request refused");
    }
    if let Some(id) = cookie(&h) {
        lock(&music.sessions.0).remove(&id);
    }
    let mut r = Json(json!({})).into_response();
    r.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("spindle_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"),
    );
    r
}

async fn me(
    State(st): State<AppState>,
    Extension(music): Extension<Arc<Music>>,
    h: HeaderMap,
) -> Response {
    match session_user(&st, &music, &h) {
        Some(u) => Json(json!({ "user": u })).into_response(),
        None => err(StatusCode::UNAUTHORIZED, "not logged in"),
    }
}

/// Largest body a UI POST may send.
const MAX_UI_BODY: usize = 16 << 10;

/// Reads a JSON body of at most [`MAX_UI_BODY`] bytes (the server's
/// global body limit is off; each API sets its own).
pub(crate) async fn small_json<T: serde::de::DeserializeOwned>(body: Body) -> Result<T, Response> {
    let bytes = axum::body::to_bytes(body, MAX_UI_BODY)
        .await
        .map_err(|_| err(StatusCode::PAYLOAD_TOO_LARGE, "request too large"))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| err(StatusCode::BAD_REQUEST, &format!("bad request body: {e}")))
}

/// Runs `f` over the catalog on a blocking thread, for a logged-in user.
async fn with_catalog(
    st: AppState,
    music: Arc<Music>,
    h: &HeaderMap,
    f: impl FnOnce(&AppState, &Catalog, &str) -> Response + Send + 'static,
) -> Response {
    let Some(user) = session_user(&st, &music, h) else {
        return err(StatusCode::UNAUTHORIZED, "not logged in");
    };
    tokio::task::spawn_blocking(move || {
        let cat = music.catalog(&st.db);
        f(&st, &cat, &user)
    })
    .await
    .unwrap_or_else(|_| err(StatusCode::INTERNAL_SERVER_ERROR, "the request failed"))
}

async fn stream(
    State(st): State<AppState>,
    Extension(music): Extension<Arc<Music>>,
    method: Method,
    h: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if session_user(&st, &music, &h).is_none() {
        return err(StatusCode::UNAUTHORIZED, "not logged in");
    }
    let m = music.clone();
    let found = tokio::task::spawn_blocking(move || {
        let cat = m.catalog(&st.db);
        let s = cat.song(&id)?;
        // Through the tiers, the music folder is one copy among several.
        let path = match m.tiers() {
            Some(_) => None,
            None => Some(m.file_of(s)?),
        };
        Some((path, s.content_type.clone(), Music::track_of(s)))
    })
    .await
    .ok()
    .flatten();
    let Some((path, ct, track)) = found else {
        return err(StatusCode::NOT_FOUND, "no such song");
    };
    let head = method == Method::HEAD;
    let (r, sent) = match (path, music.tiers()) {
        (_, Some(tiers)) => crate::tiered::serve_track(tiers, &track, &ct, &h, head).await,
        (Some(path), None) => crate::stream::serve_file(&path, &ct, &h, head).await,
        (None, None) => return err(StatusCode::NOT_FOUND, "no such song"),
    };
    if sent.status < 300 {
        music.metrics.stream(sent.bytes);
    }
    r
}
