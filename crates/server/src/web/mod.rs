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
//!
//! Every route, who may call it and how a cluster serves it is a row of
//! one table ([`routes`]), from which the router and the cluster's
//! routing of `/ui/` paths are read. Handlers end in `?`: what they
//! answer when they fail is a `WebError` (`error.rs`), and what may
//! block (an fsyncing write, a walk of the catalog) goes through the
//! state's blocking facade, `AppState::call`. The web UI's own state
//! (sessions, the first-run code) is one [`WebState`], a field of the
//! server's state.

mod activity;
mod admin;
mod charts;
mod cover;
mod error;
mod extract;
mod forward;
mod history;
mod imports;
mod library;
mod mine;
mod review;
pub mod routes;
mod sessions;
mod settings;
mod setup;

pub use admin::ADMIN_ROUTES;
pub use routes::router;
pub use sessions::{SessionInfo, Sessions};
pub use setup::{FirstRun, SETUP_CODE_GROUPS};

pub(crate) use error::{err, WebError, WebResult};
pub(crate) use library::may_see;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use crate::accounts::Accounts;
use crate::auth_guard::ClientIp;
use crate::catalog::Catalog;
use crate::state::AppState;
use extract::{Csrf, SmallJson, User};

/// The web UI's own state, one field of the server's
/// ([`crate::state::StateParts`]): the logged-in browsers and the
/// first-run setup code.
pub struct WebState {
    /// Logged-in web UI browsers.
    pub(crate) sessions: Sessions,
    /// The first-run setup code, while no user exists ([`setup`]).
    pub(crate) first_run: FirstRun,
}

impl WebState {
    /// No session yet; a setup code if `accounts` holds no user.
    pub fn new(accounts: &Accounts) -> WebState {
        WebState {
            sessions: Sessions::default(),
            first_run: FirstRun::new(accounts),
        }
    }
}

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

async fn app_js() -> Response {
    asset(APP_JS, "text/javascript; charset=utf-8")
}

async fn style_css() -> Response {
    asset(STYLE_CSS, "text/css; charset=utf-8")
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
        &self.web.sessions
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
    let user = st.web.sessions.user(&id, st.now())?;
    if !st.accounts.user_exists(&user) {
        st.web.sessions.end(&id);
        return None;
    }
    Some(user)
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
    let id = st.web.sessions.start(user, st.now(), agent, ip);
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
        st.web.sessions.end(&id);
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
) -> WebResult {
    let u = user.clone();
    st.call(move |st| st.music.set_listens_public(&u, form.public))
        .await?
        .map_err(|e| WebError::internal(format!("could not save the setting: {e}")))?;
    Ok(privacy_json(&st, &user))
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
) -> WebResult<T> {
    let bytes = crate::body::read_body(body, MAX_UI_BODY, &st.bodies)
        .await
        .map_err(|e| WebError::answer(e.decorate(err(e.status(), &e.to_string()))))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| WebError::bad_request(format!("bad request body: {e}")))
}

/// Runs `f` over the catalog through the state's blocking facade
/// ([`AppState::call`]), for a logged-in user.
async fn with_catalog(
    st: AppState,
    h: &HeaderMap,
    f: impl FnOnce(&AppState, &Catalog, &str) -> WebResult + Send + 'static,
) -> WebResult {
    let user = session_user(&st, h)
        .ok_or_else(|| WebError::new(StatusCode::UNAUTHORIZED, "not logged in"))?;
    st.call(move |st| f(st, &st.music.catalog(&st.db), &user))
        .await?
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
) -> WebResult {
    use crate::source::{Play, Request, SongRef, Who};
    let req = Request {
        song: SongRef::Id(id),
        who: Who::User(user),
        play: Play::Browser { client: WEB_CLIENT },
    };
    let source = crate::source::decide(&st, None, req)
        .await
        .map_err(|_| WebError::not_found("no such song"))?;
    Ok(
        crate::source::serve(&st, source, &h, method == Method::HEAD)
            .await
            .unwrap_or_else(|e| crate::transcode::error_response(&e)),
    )
}
