//! The admin page's API, under `/ui/api/admin/`: users (list, add,
//! delete, roles, folders and time zone, a new password, a new
//! ListenBrainz token), the music folders, the rescan and its progress,
//! every kind of session — web sessions, Last.fm session keys,
//! OpenSubsonic API keys — listed and revoked, and Last.fm API keys
//! (made, listed, deleted). Every route answers `403` to a session whose
//! user is not an administrator and `401` without a session; every POST
//! needs the CSRF header. Secrets never leave: a web session, session key
//! or API key is named by its handle or id.

#![allow(
    clippy::result_large_err,
    reason = "the error is the axum Response sent straight back; boxing it buys nothing once per request"
)]

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::err;
use super::extract::{Admin, SmallJson, User};
use crate::accounts::{handle, AccountError, Profile, Roles, DEFAULT_TIME_ZONE};
use crate::state::AppState;

/// Every admin route, for the tests that walk them all: (method, path).
pub const ADMIN_ROUTES: &[(&str, &str)] = &[
    ("GET", "/ui/api/admin/users"),
    ("POST", "/ui/api/admin/users"),
    ("POST", "/ui/api/admin/user/NAME"),
    ("POST", "/ui/api/admin/user/NAME/password"),
    ("POST", "/ui/api/admin/user/NAME/delete"),
    ("POST", "/ui/api/admin/user/NAME/token"),
    ("GET", "/ui/api/admin/folders"),
    ("GET", "/ui/api/admin/scan"),
    ("POST", "/ui/api/admin/scan"),
    ("GET", "/ui/api/admin/sessions"),
    ("POST", "/ui/api/admin/sessions/revoke"),
    ("GET", "/ui/api/admin/apikeys"),
    ("POST", "/ui/api/admin/apikeys"),
    ("POST", "/ui/api/admin/apikeys/delete"),
];

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/ui/api/admin/users", get(users).post(add_user))
        .route("/ui/api/admin/user/{name}", post(set_profile))
        .route("/ui/api/admin/user/{name}/password", post(set_password))
        .route("/ui/api/admin/user/{name}/delete", post(delete_user))
        .route("/ui/api/admin/user/{name}/token", post(reset_token))
        .route("/ui/api/admin/folders", get(folders))
        .route("/ui/api/admin/scan", get(scan_status).post(start_scan))
        .route("/ui/api/admin/sessions", get(sessions))
        .route("/ui/api/admin/sessions/revoke", post(revoke))
        .route("/ui/api/admin/apikeys", get(api_keys).post(add_api_key))
        .route("/ui/api/admin/apikeys/delete", post(delete_api_key))
}

fn account_err(e: AccountError) -> Response {
    let status = match e {
        AccountError::NoSuchUser(_) => StatusCode::NOT_FOUND,
        AccountError::UserExists(_) => StatusCode::CONFLICT,
        AccountError::InvalidName(_)
        | AccountError::EmptyPassword
        | AccountError::LastAdmin(_)
        | AccountError::UnknownTimeZone(_)
        | AccountError::Ambiguous(_) => StatusCode::BAD_REQUEST,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    err(status, &e.to_string())
}

/// A user as the admin page shows them, with how many credentials of
/// each kind they hold.
fn user_json(st: &AppState, name: &str, p: &Profile) -> Value {
    let acc = &st.accounts;
    json!({
        "name": name, "admin": p.roles.admin, "roles": p.roles, "folders": p.folders,
        "email": p.email, "max_bit_rate": p.max_bit_rate, "created": acc.user_created(name),
        "web_sessions": st.sessions.list(Some(name), st.now()).len(),
        "lastfm_sessions": acc.sessions_of(name).len(),
        "api_keys": acc.app_keys(Some(name)).len(),
        "token": acc.has_token(name),
        "timezone": acc.time_zone_name(name).unwrap_or_else(|| DEFAULT_TIME_ZONE.to_owned()),
    })
}

/// `GET /ui/api/admin/users`.
async fn users(State(st): State<AppState>, _: User<Admin>) -> Response {
    let list: Vec<Value> = st
        .accounts
        .list_users()
        .iter()
        .map(|(n, p)| user_json(&st, n, p))
        .collect();
    Json(json!({ "users": list })).into_response()
}

#[derive(Deserialize)]
struct NewUser {
    name: String,
    password: String,
    #[serde(default)]
    admin: bool,
}

/// `POST /ui/api/admin/users` `{"name", "password", "admin"}`.
async fn add_user(
    State(st): State<AppState>,
    User(by, Admin): User<Admin>,
    SmallJson(f): SmallJson<NewUser>,
) -> Response {
    let mut profile = Profile::default();
    profile.roles.admin = f.admin;
    let st2 = st.clone();
    let name = f.name.clone();
    let made = tokio::task::spawn_blocking(move || {
        st2.accounts
            .add_user_with(&f.name, &f.password, st2.now(), profile)
    })
    .await;
    match made {
        Ok(Ok(())) => {
            tracing::info!(user = %name, by = %by, "user added");
            Json(json!({ "name": name })).into_response()
        }
        Ok(Err(e)) => account_err(e),
        Err(_) => err(StatusCode::INTERNAL_SERVER_ERROR, "the request failed"),
    }
}

#[derive(Deserialize)]
struct ProfileForm {
    roles: Option<Roles>,
    admin: Option<bool>,
    folders: Option<Vec<u32>>,
    timezone: Option<String>,
}

/// `POST /ui/api/admin/user/NAME` `{"admin"?, "roles"?, "folders"?,
/// "timezone"?}`: the roles (every Subsonic role, or only `admin`), the
/// granted music folders (ids from `/ui/api/admin/folders`; `[]` grants
/// every folder) and the time zone (an IANA name; `""`: UTC).
async fn set_profile(
    State(st): State<AppState>,
    Path(name): Path<String>,
    _: User<Admin>,
    SmallJson(f): SmallJson<ProfileForm>,
) -> Response {
    let Some(mut p) = st.accounts.profile(&name) else {
        return err(StatusCode::NOT_FOUND, &format!("no user named '{name}'"));
    };
    if let Some(r) = f.roles {
        p.roles = r;
    }
    if let Some(a) = f.admin {
        p.roles.admin = a;
    }
    if let Some(folders) = f.folders {
        let n = st.music.roots().len();
        if let Some(bad) = folders.iter().find(|&&id| id == 0 || id as usize > n) {
            return err(
                StatusCode::BAD_REQUEST,
                &format!("no music folder {bad}: the server has {n}"),
            );
        }
        p.folders = folders;
    }
    if let Some(tz) = f.timezone.as_deref().filter(|t| !t.trim().is_empty()) {
        if let Err(e) = crate::accounts::parse_time_zone(tz) {
            return account_err(e);
        }
    }
    let saved = st
        .accounts
        .set_profile(&name, p)
        .and_then(|()| match &f.timezone {
            Some(tz) => st.accounts.set_time_zone(&name, tz),
            None => Ok(()),
        });
    match saved {
        Ok(()) => {
            let p = st.accounts.profile(&name).unwrap_or_default();
            Json(user_json(&st, &name, &p)).into_response()
        }
        Err(e) => account_err(e),
    }
}

#[derive(Deserialize)]
struct PasswordForm {
    password: String,
}

/// `POST /ui/api/admin/user/NAME/password` `{"password"}`: a new password;
/// the user's web sessions end (other than the administrator's own).
async fn set_password(
    State(st): State<AppState>,
    Path(name): Path<String>,
    User(by, Admin): User<Admin>,
    SmallJson(f): SmallJson<PasswordForm>,
) -> Response {
    let (st2, n2) = (st.clone(), name.clone());
    let done =
        tokio::task::spawn_blocking(move || st2.accounts.set_password(&n2, &f.password)).await;
    match done {
        Ok(Ok(())) => {
            let ended = if by == name {
                0
            } else {
                st.sessions.revoke_user(&name)
            };
            tracing::info!(user = %name, by = %by, "password changed");
            Json(json!({ "name": name, "sessions_ended": ended })).into_response()
        }
        Ok(Err(e)) => account_err(e),
        Err(_) => err(StatusCode::INTERNAL_SERVER_ERROR, "the request failed"),
    }
}

impl AppState {
    /// Deletes a user everywhere: the account (tokens, session keys), the
    /// web sessions, the user data (stars, playlists, ratings of albums
    /// and artists, queues, bookmarks, shares) and the song ratings in the
    /// library. The listening history stays. The last administrator
    /// cannot be deleted ([`AccountError::LastAdmin`]). Blocking.
    pub fn delete_user_everywhere(&self, name: &str) -> Result<(), String> {
        self.accounts.delete_user(name).map_err(|e| e.to_string())?;
        self.sessions.revoke_user(name);
        self.plays.forget_user(name);
        self.music
            .userdata
            .forget_user(name)
            .map_err(|e| format!("the user is deleted but their data stays: {e}"))?;
        crate::subsonic::rating::forget_ratings(self, name)
    }
}

/// `POST /ui/api/admin/user/NAME/delete`. An administrator cannot delete
/// themselves (another one can).
async fn delete_user(
    State(st): State<AppState>,
    Path(name): Path<String>,
    User(by, Admin): User<Admin>,
) -> Response {
    if by == name {
        return err(
            StatusCode::BAD_REQUEST,
            "you cannot delete yourself: ask another administrator",
        );
    }
    if !st.accounts.user_exists(&name) {
        return err(StatusCode::NOT_FOUND, &format!("no user named '{name}'"));
    }
    let (st2, n2) = (st.clone(), name.clone());
    match tokio::task::spawn_blocking(move || st2.delete_user_everywhere(&n2)).await {
        Ok(Ok(())) => {
            tracing::info!(user = %name, by = %by, "user deleted");
            Json(json!({ "deleted": name })).into_response()
        }
        Ok(Err(e)) => err(StatusCode::BAD_REQUEST, &e),
        Err(_) => err(StatusCode::INTERNAL_SERVER_ERROR, "the request failed"),
    }
}

/// `GET /ui/api/admin/folders`: `{"folders": [{"id", "path"}]}`, ids as
/// Subsonic numbers them (1-based).
async fn folders(State(st): State<AppState>, _: User<Admin>) -> Response {
    let list: Vec<Value> = st
        .music
        .roots()
        .iter()
        .enumerate()
        .map(|(i, p)| json!({ "id": i + 1, "path": p.display().to_string() }))
        .collect();
    Json(json!({ "folders": list })).into_response()
}

/// `{"scanning", "count", "stage", "done", "total", "last_scan"}`: whether
/// the rescan Subsonic's `startScan` also runs is running; `count`, the
/// files it has read so far while it runs ([`crate::subsonic::scan`]'s
/// live count), else the songs in the library; `stage` (`walking`,
/// `reading`, `finishing`, `idle`) with `done` of `total` files to read;
/// when the last rescan ended.
fn scan_json(st: &AppState) -> Response {
    let p = st.subsonic.scans.progress();
    let count = if st.subsonic.scans.running() {
        st.subsonic.scans.count()
    } else {
        st.music.catalog(&st.db).songs.len() as u64
    };
    Json(json!({
        "scanning": st.subsonic.scans.running(), "count": count, "stage": p.stage.name(),
        "done": p.done, "total": p.total, "last_scan": st.subsonic.scans.finished(),
    }))
    .into_response()
}

/// `GET /ui/api/admin/scan`.
async fn scan_status(State(st): State<AppState>, _: User<Admin>) -> Response {
    st.call(scan_json)
        .await
        .unwrap_or_else(|_| err(StatusCode::INTERNAL_SERVER_ERROR, "the request failed"))
}

/// `POST /ui/api/admin/scan`: starts a rescan of the music folders (the
/// one Subsonic's `startScan` runs) unless one runs.
async fn start_scan(State(st): State<AppState>, _: User<Admin>) -> Response {
    if let Err(e) = st
        .subsonic
        .scans
        .start(st.db.clone(), st.music.clone(), st.clock.clone())
    {
        return err(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("the scan did not start: {e}"),
        );
    }
    st.call(scan_json)
        .await
        .unwrap_or_else(|_| err(StatusCode::INTERNAL_SERVER_ERROR, "the request failed"))
}

/// `GET /ui/api/admin/sessions`: every live web session (its handle,
/// user, start, last use, browser, address), every Last.fm session key
/// (its handle, user, the API key it was issued under, start) and every
/// OpenSubsonic API key (its id, user, app, start).
async fn sessions(State(st): State<AppState>, _: User<Admin>) -> Response {
    let lastfm: Vec<Value> = st
        .accounts
        .all_sessions()
        .iter()
        .map(|(sk, s)| {
            json!({ "handle": handle(sk), "user": s.user, "api_key": s.api_key,
                    "created": s.created })
        })
        .collect();
    Json(json!({
        "web": st.sessions.list(None, st.now()),
        "lastfm": lastfm,
        "apps": app_keys_json(&st, None),
    }))
    .into_response()
}

/// The OpenSubsonic API keys (of `user` only, if given) as the pages list
/// them: `[{"id", "user", "app", "created"}]`.
pub(super) fn app_keys_json(st: &AppState, user: Option<&str>) -> Vec<Value> {
    st.accounts
        .app_keys(user)
        .iter()
        .map(|(id, k)| json!({ "id": id, "user": k.user, "app": k.app, "created": k.created }))
        .collect()
}

#[derive(Deserialize)]
struct RevokeForm {
    handle: String,
    #[serde(default)]
    kind: RevokeKind,
}

/// What a revocation names.
#[derive(Deserialize, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum RevokeKind {
    /// A web session, by its handle.
    #[default]
    Web,
    /// A Last.fm session key, by its handle.
    Lastfm,
    /// An OpenSubsonic API key, by its id.
    App,
}

/// `POST /ui/api/admin/sessions/revoke` `{"handle", "kind"?}`: ends a web
/// session (`kind` `web`, the default), a Last.fm session key (`lastfm`)
/// or an OpenSubsonic API key (`app`, `handle` being its id).
async fn revoke(
    State(st): State<AppState>,
    User(by, Admin): User<Admin>,
    SmallJson(f): SmallJson<RevokeForm>,
) -> Response {
    let gone = || err(StatusCode::NOT_FOUND, "no such session (it may have ended)");
    if f.kind == RevokeKind::Web {
        return if st.sessions.revoke(&f.handle, None) {
            Json(json!({ "revoked": f.handle })).into_response()
        } else {
            gone()
        };
    }
    let done = if f.kind == RevokeKind::App {
        st.accounts.revoke_app_key(&f.handle)
    } else {
        st.accounts.revoke_session_key(&f.handle)
    };
    match done {
        Ok(Some(_)) => {
            tracing::info!(handle = %f.handle, by = %by, "credential revoked");
            Json(json!({ "revoked": f.handle })).into_response()
        }
        Ok(None) => gone(),
        Err(e) => account_err(e),
    }
}

/// `GET /ui/api/admin/apikeys`: the Last.fm API keys (`keys`: `api_key`,
/// `name`, `created`, and how many session keys were issued under each;
/// never the secret) and the OpenSubsonic API keys (`apps`).
async fn api_keys(State(st): State<AppState>, _: User<Admin>) -> Response {
    let sessions = st.accounts.all_sessions();
    let keys: Vec<Value> = st
        .accounts
        .api_keys()
        .iter()
        .map(|(key, k)| {
            let n = sessions.iter().filter(|(_, s)| &s.api_key == key).count();
            json!({ "api_key": key, "name": k.name, "created": k.created, "sessions": n })
        })
        .collect();
    Json(json!({ "keys": keys, "apps": app_keys_json(&st, None) })).into_response()
}

#[derive(Deserialize)]
struct NewKey {
    #[serde(default)]
    name: String,
}

/// `POST /ui/api/admin/apikeys` `{"name"}`: a Last.fm API key and secret
/// pair (shown once).
async fn add_api_key(
    State(st): State<AppState>,
    _: User<Admin>,
    SmallJson(f): SmallJson<NewKey>,
) -> Response {
    match st.accounts.add_api_key(&f.name, st.now()) {
        Ok((key, secret)) => {
            Json(json!({ "api_key": key, "secret": secret, "name": f.name })).into_response()
        }
        Err(e) => account_err(e),
    }
}

#[derive(Deserialize)]
struct DeleteKey {
    api_key: String,
}

/// `POST /ui/api/admin/apikeys/delete` `{"api_key"}`: deletes a Last.fm
/// API key; the session keys issued under it end with it.
async fn delete_api_key(
    State(st): State<AppState>,
    User(by, Admin): User<Admin>,
    SmallJson(f): SmallJson<DeleteKey>,
) -> Response {
    match st.accounts.delete_api_key(&f.api_key) {
        Ok(true) => {
            tracing::info!(api_key = %f.api_key, by = %by, "Last.fm API key deleted");
            Json(json!({ "deleted": f.api_key })).into_response()
        }
        Ok(false) => err(StatusCode::NOT_FOUND, "no such API key"),
        Err(e) => account_err(e),
    }
}

/// `POST /ui/api/admin/user/NAME/token`: a new ListenBrainz token for the
/// user (`{"name", "token"}`, shown once here; `spindle user token NAME`
/// prints it again). The old one stops working at once, as a ListenBrainz
/// token, an OpenSubsonic `apiKey` and a `/metrics` bearer.
async fn reset_token(
    State(st): State<AppState>,
    Path(name): Path<String>,
    User(by, Admin): User<Admin>,
) -> Response {
    match st.accounts.reset_token(&name) {
        Ok(token) => {
            tracing::info!(user = %name, by = %by, "ListenBrainz token reset");
            Json(json!({ "name": name, "token": token })).into_response()
        }
        Err(e) => account_err(e),
    }
}
