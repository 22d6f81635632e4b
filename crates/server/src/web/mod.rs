//! The web UI: one page at `/` (HTML, CSS and JavaScript embedded in the
//! binary with `include_str!`, no build step) and what it calls under
//! `/ui/`: a small JSON API (`library`: search, albums, artists;
//! `activity`: now playing, recent listens, the player's reports) and
//! SVG charts (`charts`).
//!
//! Access: a user logs in with name and password (Argon2-checked) and gets
//! a session cookie (`HttpOnly`, `SameSite=Strict`, `Secure` when the
//! server's public URL is `https://`, random 128-bit id, kept in memory,
//! ending after [`SESSION_TTL`] unused, at most
//! [`MAX_SESSIONS_PER_USER`] per user). State-changing requests (login, logout, the player's
//! now-playing and scrobble reports) must carry the `X-Spindle-Csrf`
//! header, which a cross-site form cannot send, and a same-origin
//! `Origin` when the browser sends one; failed logins are throttled
//! ([`crate::throttle`]: 429 with `Retry-After`). `/ui/api/me/privacy`
//! reads and sets whether the user's
//! listening history is public (ListenBrainz and Last.fm reads without
//! the user's credentials); it is private until the user says otherwise.
//! Every `/ui/api/…`, `/ui/chart/…` and `/ui/stream/ID` request
//! needs a session; only the page, its script and its style sheet (which
//! hold no data) are public, so the login form can load.

mod activity;
mod admin;
mod charts;
mod cover;
mod extract;
mod forward;
mod history;
mod imports;
mod library;
mod mine;
mod review;
mod sessions;
mod settings;
mod setup;

pub use admin::ADMIN_ROUTES;
pub use sessions::{SessionInfo, Sessions};
pub use setup::{FirstRun, SETUP_CODE_GROUPS};

pub(crate) use library::may_see;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use crate::auth_guard::ClientIp;
use crate::catalog::Catalog;
use crate::state::AppState;
use extract::{Csrf, SmallJson, User};

const COOKIE: &str = "spindle_session";
/// The web player's client name: in its listens, and for the
/// `[transcode]` rules (`client = "Spindle web"`).
pub const WEB_CLIENT: &str = "Spindle web";
const CSRF_HEADER: &str = "x-spindle-csrf";
/// A web session ends after this long without a request: 7 days, so a
/// browser used weekly stays logged in and a forgotten one does not.
pub const SESSION_TTL: i64 = 7 * 24 * 3600;

/// Most live web sessions per user: 32 browsers; a login past it ends the
/// user's oldest session. Only a correct password makes a session, so the
/// table stays under 32 × the number of accounts.
pub const MAX_SESSIONS_PER_USER: usize = 32;

const INDEX_HTML: &str = include_str!("index.html");
const APP_JS: &str = include_str!("app.js");
const STYLE_CSS: &str = include_str!("style.css");

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
        .route("/ui/setup", post(setup::create))
        .route("/ui/api/setup", get(setup::status))
        .route("/ui/api/me", get(me))
        .route("/ui/api/me/privacy", get(privacy).post(set_privacy))
        .route("/ui/api/search", get(library::search))
        .route("/ui/api/album/{id}", get(library::album))
        .route("/ui/api/artists", get(library::artists))
        .route("/ui/api/artist/{id}", get(library::artist))
        .route("/ui/api/recent", get(activity::recent))
        .route("/ui/api/review", get(review::review))
        .route("/ui/api/now", get(activity::now))
        .route("/ui/api/playing", post(activity::playing))
        .route("/ui/chart/{name}", get(charts::chart))
        .route("/ui/stream/{id}", get(stream))
        .route("/ui/cover/{id}", get(cover::cover))
        .merge(mine::router())
        .merge(admin::router())
        .merge(settings::router())
        .merge(forward::router())
        .merge(history::router())
        .merge(imports::router())
}

/// The page at `/`, for a request that asks for it; `None` for any other
/// (the Audioscrobbler 1.2 handshake shares `/`: a request to it with an
/// `hs` parameter goes on to its route). Called by the middleware over
/// every route ([`crate::metrics::count`], which counts the page too),
/// so that a request passes one middleware fewer.
pub fn index_page(req: &axum::extract::Request) -> Option<Response> {
    let is_page = req.uri().path() == "/"
        && (req.method() == Method::GET || req.method() == Method::HEAD)
        && !req
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|kv| kv == "hs" || kv.starts_with("hs=")));
    is_page.then(|| asset(INDEX_HTML, "text/html; charset=utf-8"))
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

impl AppState {
    /// The logged-in browsers (listed and revoked by the admin page).
    pub fn web_sessions(&self) -> &Sessions {
        &self.sessions
    }
}

/// The user whose session cookie `h` carries.
/// A session of a user since deleted (`spindle user delete` beside the
/// running server) ends here.
pub(crate) fn session_user(st: &AppState, h: &HeaderMap) -> Option<String> {
    // Logged in by a trusted single-sign-on proxy (crate::proxy).
    if let Some(u) = crate::proxy::proxy_user(st, h) {
        return Some(u);
    }
    let id = cookie(h)?;
    let user = st.sessions.user(&id, st.now())?;
    if !st.accounts.user_exists(&user) {
        st.sessions.end(&id);
        return None;
    }
    Some(user)
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
    ClientIp(ip): ClientIp,
    h: HeaderMap,
    _: Csrf,
    SmallJson(form): SmallJson<LoginForm>,
) -> Response {
    let checked = st
        .guard
        .password(&st.accounts, ip, &form.user, &form.password, "web")
        .await;
    if let Err(denied) = checked {
        return crate::auth_guard::http_refusal(denied, "wrong user name or password", err);
    }
    let admin = st.accounts.is_admin(&form.user);
    logged_in(&st, &form.user, admin, &h, ip)
}

/// Starts a web session for `user` (a login, the first-run setup) and
/// answers `{"user", "admin"}` with the cookie that carries it.
fn logged_in(
    st: &AppState,
    user: &str,
    admin: bool,
    h: &HeaderMap,
    ip: Option<std::net::IpAddr>,
) -> Response {
    let agent = h
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let id = st.sessions.start(user, st.now(), agent, ip);
    let r = Json(json!({ "user": user, "admin": admin })).into_response();
    with_cookie(r, &session_cookie(st, &id, SESSION_TTL))
}

/// `r` with a `Set-Cookie` header of `cookie`.
fn with_cookie(mut r: Response, cookie: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(cookie) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

/// The `Set-Cookie` value of a session (an empty `id` with `max_age` 0
/// ends it). `Secure` keeps the cookie off plain HTTP; the server speaks
/// no TLS itself, so it is set when the public URL is `https://` (a TLS
/// proxy in front), and left off for plain-HTTP setups, where a browser
/// would otherwise never send the cookie back.
fn session_cookie(st: &AppState, id: &str, max_age: i64) -> String {
    let secure = st.config.public_url.as_deref().is_some_and(|u| {
        u.get(..8)
            .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
    });
    format!(
        "{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age}{}",
        if secure { "; Secure" } else { "" }
    )
}

async fn logout(State(st): State<AppState>, h: HeaderMap, _: Csrf) -> Response {
    if let Some(id) = cookie(&h) {
        st.sessions.end(&id);
    }
    with_cookie(Json(json!({})).into_response(), &session_cookie(&st, "", 0))
}

/// `{"user": …, "public": bool}`: whether the user's listening history is
/// public.
fn privacy_json(st: &AppState, user: &str) -> Response {
    Json(json!({ "user": user, "public": st.music.listens_public(user) })).into_response()
}

async fn privacy(State(st): State<AppState>, User(u, _): User) -> Response {
    privacy_json(&st, &u)
}

#[derive(Deserialize)]
struct PrivacyForm {
    public: bool,
}

/// Makes the user's listening history public (`{"public": true}`) or
/// private again. CSRF-checked; the user is the session's.
async fn set_privacy(
    State(st): State<AppState>,
    User(user, _): User,
    SmallJson(form): SmallJson<PrivacyForm>,
) -> Response {
    let (m, u) = (st.music.clone(), user.clone());
    match tokio::task::spawn_blocking(move || m.set_listens_public(&u, form.public)).await {
        Ok(Ok(())) => privacy_json(&st, &user),
        Ok(Err(e)) => err(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("could not save the setting: {e}"),
        ),
        Err(_) => err(StatusCode::INTERNAL_SERVER_ERROR, "the request failed"),
    }
}

/// `{"user", "admin"}`: who the session is, and whether the page shows
/// the admin page.
async fn me(State(st): State<AppState>, User(u, _): User) -> Response {
    let admin = st.accounts.is_admin(&u);
    Json(json!({ "user": u, "admin": admin })).into_response()
}

/// Largest body a UI POST may send: 16 KiB. The largest is a login (a
/// name and a password); the rest are a track id and a flag.
pub const MAX_UI_BODY: usize = 16 << 10;

/// Reads a JSON body of at most [`MAX_UI_BODY`] bytes, under the server's
/// body deadlines and budget ([`crate::body`]): 413, 408 or 503.
pub(crate) async fn small_json<T: serde::de::DeserializeOwned>(
    st: &AppState,
    body: Body,
) -> Result<T, Response> {
    let bytes = crate::body::read_body(body, MAX_UI_BODY, &st.bodies)
        .await
        .map_err(|e| e.decorate(err(e.status(), &e.to_string())))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| err(StatusCode::BAD_REQUEST, &format!("bad request body: {e}")))
}

/// Runs `f` over the catalog on a blocking thread, for a logged-in user.
async fn with_catalog(
    st: AppState,
    h: &HeaderMap,
    f: impl FnOnce(&AppState, &Catalog, &str) -> Response + Send + 'static,
) -> Response {
    let Some(user) = session_user(&st, h) else {
        return err(StatusCode::UNAUTHORIZED, "not logged in");
    };
    tokio::task::spawn_blocking(move || {
        let cat = st.music.catalog(&st.db);
        f(&st, &cat, &user)
    })
    .await
    .unwrap_or_else(|_| err(StatusCode::INTERNAL_SERVER_ERROR, "the request failed"))
}

/// `/ui/stream/ID`: a song the session's user may see, through
/// [`crate::source`] (the rules for the user and [`WEB_CLIENT`], MP3 of
/// what browsers cannot decode); 404 for a song unknown or hidden.
async fn stream(
    State(st): State<AppState>,
    method: Method,
    h: HeaderMap,
    Path(id): Path<String>,
    User(user, _): User,
) -> Response {
    use crate::source::{Play, Request, SongRef, Who};
    let req = Request {
        song: SongRef::Id(id),
        who: Who::User(user),
        play: Play::Browser { client: WEB_CLIENT },
    };
    match crate::source::decide(&st, None, req).await {
        Ok(source) => crate::source::serve(&st, source, &h, method == Method::HEAD)
            .await
            .unwrap_or_else(|e| crate::transcode::error_response(&e)),
        Err(_) => err(StatusCode::NOT_FOUND, "no such song"),
    }
}
