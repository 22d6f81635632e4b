//! The admin page's API, under `/ui/api/admin/`: users (list, add,
//! delete, roles, folders and time zone, a new password, a new
//! ListenBrainz token), the music folders, the rescan and its progress,
//! every kind of session — web sessions, Last.fm session keys,
//! OpenSubsonic API keys — listed and revoked, and Last.fm API keys
//! (made, listed, deleted). Every route answers `403` to a session whose
//! user is not an administrator and `401` without a session; every POST
//! needs the CSRF header. Secrets never leave: a web session, session key
//! or API key is named by its handle or id.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::extract::{Admin, SmallJson, User};
use super::{WebError, WebResult};
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

fn account_err(e: AccountError) -> WebError {
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
    WebError::new(status, e.to_string())
}

/// A user as the admin page shows them, with how many credentials of
/// each kind they hold.
fn user_json(st: &AppState, name: &str, p: &Profile) -> Value {
    let acc = &st.accounts;
    json!({
        "name": name, "admin": p.roles.admin, "roles": p.roles, "folders": p.folders,
        "email": p.email, "max_bit_rate": p.max_bit_rate, "created": acc.user_created(name),
        "web_sessions": st.web.sessions.list(Some(name), st.now()).len(),
        "lastfm_sessions": acc.sessions_of(name).len(),
        "api_keys": acc.app_keys(Some(name)).len(),
        "token": acc.has_token(name),
        "timezone": acc.time_zone_name(name).unwrap_or_else(|| DEFAULT_TIME_ZONE.to_owned()),
    })
}

/// `GET /ui/api/admin/users`.
pub(super) async fn users(State(st): State<AppState>, _: User<Admin>) -> Response {
    let list: Vec<Value> = st
        .accounts
        .list_users()
        .iter()
        .map(|(n, p)| user_json(&st, n, p))
        .collect();
    Json(json!({ "users": list })).into_response()
}

#[derive(Deserialize)]
pub(super) struct NewUser {
    name: String,
    password: String,
    #[serde(default)]
    admin: bool,
}

/// `POST /ui/api/admin/users` `{"name", "password", "admin"}`.
pub(super) async fn add_user(
    State(st): State<AppState>,
    User(by, Admin): User<Admin>,
    SmallJson(f): SmallJson<NewUser>,
) -> WebResult {
    let mut profile = Profile::default();
    profile.roles.admin = f.admin;
    let name = f.name.clone();
    st.call(move |st| {
        st.accounts
            .add_user_with(&f.name, &f.password, st.now(), profile)
    })
    .await?
    .map_err(account_err)?;
    tracing::info!(user = %name, by = %by, "user added");
    Ok(Json(json!({ "name": name })).into_response())
}

#[derive(Deserialize)]
pub(super) struct ProfileForm {
    roles: Option<Roles>,
    admin: Option<bool>,
    folders: Option<Vec<u32>>,
    timezone: Option<String>,
}

/// `POST /ui/api/admin/user/NAME` `{"admin"?, "roles"?, "folders"?,
/// "timezone"?}`: the roles (every Subsonic role, or only `admin`), the
/// granted music folders (ids from `/ui/api/admin/folders`; `[]` grants
/// every folder) and the time zone (an IANA name; `""`: UTC).
pub(super) async fn set_profile(
    State(st): State<AppState>,
    Path(name): Path<String>,
    _: User<Admin>,
    SmallJson(f): SmallJson<ProfileForm>,
) -> WebResult {
    let mut p = st
        .accounts
        .profile(&name)
        .ok_or_else(|| WebError::not_found(format!("no user named '{name}'")))?;
    if let Some(r) = f.roles {
        p.roles = r;
    }
    if let Some(a) = f.admin {
        p.roles.admin = a;
    }
    if let Some(folders) = f.folders {
        let n = st.music.roots().len();
        if let Some(bad) = folders.iter().find(|&&id| id == 0 || id as usize > n) {
            return Err(WebError::bad_request(format!(
                "no music folder {bad}: the server has {n}"
            )));
        }
        p.folders = folders;
    }
    if let Some(tz) = f.timezone.as_deref().filter(|t| !t.trim().is_empty()) {
        crate::accounts::parse_time_zone(tz).map_err(account_err)?;
    }
    st.call(move |st| {
        st.accounts
            .set_profile(&name, p)
            .and_then(|()| match &f.timezone {
                Some(tz) => st.accounts.set_time_zone(&name, tz),
                None => Ok(()),
            })?;
        let p = st.accounts.profile(&name).unwrap_or_default();
        Ok(Json(user_json(st, &name, &p)).into_response())
    })
    .await?
    .map_err(account_err)
}

#[derive(Deserialize)]
pub(super) struct PasswordForm {
    password: String,
}

/// `POST /ui/api/admin/user/NAME/password` `{"password"}`: a new password;
/// the user's web sessions end (other than the administrator's own).
pub(super) async fn set_password(
    State(st): State<AppState>,
    Path(name): Path<String>,
    User(by, Admin): User<Admin>,
    SmallJson(f): SmallJson<PasswordForm>,
) -> WebResult {
    let n2 = name.clone();
    st.call(move |st| st.accounts.set_password(&n2, &f.password))
        .await?
        .map_err(account_err)?;
    let ended = if by == name {
        0
    } else {
        st.web.sessions.revoke_user(&name)
    };
    tracing::info!(user = %name, by = %by, "password changed");
    Ok(Json(json!({ "name": name, "sessions_ended": ended })).into_response())
}

impl AppState {
    /// Deletes a user everywhere: the account (tokens, session keys), the
    /// web sessions, the user data (stars, playlists, ratings of albums
    /// and artists, queues, bookmarks, shares) and the song ratings in the
    /// library. The listening history stays. The last administrator
    /// cannot be deleted ([`AccountError::LastAdmin`]). Blocking.
    pub fn delete_user_everywhere(&self, name: &str) -> Result<(), String> {
        self.accounts.delete_user(name).map_err(|e| e.to_string())?;
        self.web.sessions.revoke_user(name);
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
pub(super) async fn delete_user(
    State(st): State<AppState>,
    Path(name): Path<String>,
    User(by, Admin): User<Admin>,
) -> WebResult {
    if by == name {
        return Err(WebError::bad_request(
            "you cannot delete yourself: ask another administrator",
        ));
    }
    if !st.accounts.user_exists(&name) {
        return Err(WebError::not_found(format!("no user named '{name}'")));
    }
    let n2 = name.clone();
    st.call(move |st| st.delete_user_everywhere(&n2))
        .await?
        .map_err(WebError::bad_request)?;
    tracing::info!(user = %name, by = %by, "user deleted");
    Ok(Json(json!({ "deleted": name })).into_response())
}

/// `GET /ui/api/admin/folders`: `{"folders": [{"id", "path"}]}`, ids as
/// Subsonic numbers them (1-based).
pub(super) async fn folders(State(st): State<AppState>, _: User<Admin>) -> Response {
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
pub(super) async fn scan_status(State(st): State<AppState>, _: User<Admin>) -> WebResult {
    Ok(st.call(scan_json).await?)
}

/// `POST /ui/api/admin/scan`: starts a rescan of the music folders (the
/// one Subsonic's `startScan` runs) unless one runs.
pub(super) async fn start_scan(State(st): State<AppState>, _: User<Admin>) -> WebResult {
    st.subsonic
        .scans
        .start(st.db.clone(), st.music.clone(), st.clock.clone())
        .map_err(|e| {
            WebError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the scan did not start: {e}"),
            )
        })?;
    Ok(st.call(scan_json).await?)
}

/// `GET /ui/api/admin/sessions`: every live web session (its handle,
/// user, start, last use, browser, address), every Last.fm session key
/// (its handle, user, the API key it was issued under, start) and every
/// OpenSubsonic API key (its id, user, app, start).
pub(super) async fn sessions(State(st): State<AppState>, _: User<Admin>) -> Response {
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
        "web": st.web.sessions.list(None, st.now()),
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
pub(super) struct RevokeForm {
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
pub(super) async fn revoke(
    State(st): State<AppState>,
    User(by, Admin): User<Admin>,
    SmallJson(f): SmallJson<RevokeForm>,
) -> WebResult {
    let gone = || WebError::not_found("no such session (it may have ended)");
    if f.kind == RevokeKind::Web {
        return if st.web.sessions.revoke(&f.handle, None) {
            Ok(Json(json!({ "revoked": f.handle })).into_response())
        } else {
            Err(gone())
        };
    }
    let (kind, handle) = (f.kind, f.handle.clone());
    let done = st
        .call(move |st| {
            if kind == RevokeKind::App {
                st.accounts.revoke_app_key(&handle)
            } else {
                st.accounts.revoke_session_key(&handle)
            }
        })
        .await?
        .map_err(account_err)?;
    if done.is_none() {
        return Err(gone());
    }
    tracing::info!(handle = %f.handle, by = %by, "credential revoked");
    Ok(Json(json!({ "revoked": f.handle })).into_response())
}

/// `GET /ui/api/admin/apikeys`: the Last.fm API keys (`keys`: `api_key`,
/// `name`, `created`, and how many session keys were issued under each;
/// never the secret) and the OpenSubsonic API keys (`apps`).
pub(super) async fn api_keys(State(st): State<AppState>, _: User<Admin>) -> Response {
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
pub(super) struct NewKey {
    #[serde(default)]
    name: String,
}

/// `POST /ui/api/admin/apikeys` `{"name"}`: a Last.fm API key and secret
/// pair (shown once).
pub(super) async fn add_api_key(
    State(st): State<AppState>,
    _: User<Admin>,
    SmallJson(f): SmallJson<NewKey>,
) -> WebResult {
    let name = f.name.clone();
    let (key, secret) = st
        .call(move |st| st.accounts.add_api_key(&name, st.now()))
        .await?
        .map_err(account_err)?;
    Ok(Json(json!({ "api_key": key, "secret": secret, "name": f.name })).into_response())
}

#[derive(Deserialize)]
pub(super) struct DeleteKey {
    api_key: String,
}

/// `POST /ui/api/admin/apikeys/delete` `{"api_key"}`: deletes a Last.fm
/// API key; the session keys issued under it end with it.
pub(super) async fn delete_api_key(
    State(st): State<AppState>,
    User(by, Admin): User<Admin>,
    SmallJson(f): SmallJson<DeleteKey>,
) -> WebResult {
    let key = f.api_key.clone();
    let deleted = st
        .call(move |st| st.accounts.delete_api_key(&key))
        .await?
        .map_err(account_err)?;
    if !deleted {
        return Err(WebError::not_found("no such API key"));
    }
    tracing::info!(api_key = %f.api_key, by = %by, "Last.fm API key deleted");
    Ok(Json(json!({ "deleted": f.api_key })).into_response())
}

/// `POST /ui/api/admin/user/NAME/token`: a new ListenBrainz token for the
/// user (`{"name", "token"}`, shown once here; `spindle user token NAME`
/// prints it again). The old one stops working at once, as a ListenBrainz
/// token, an OpenSubsonic `apiKey` and a `/metrics` bearer.
pub(super) async fn reset_token(
    State(st): State<AppState>,
    Path(name): Path<String>,
    User(by, Admin): User<Admin>,
) -> WebResult {
    let n2 = name.clone();
    let token = st
        .call(move |st| st.accounts.reset_token(&n2))
        .await?
        .map_err(account_err)?;
    tracing::info!(user = %name, by = %by, "ListenBrainz token reset");
    Ok(Json(json!({ "name": name, "token": token })).into_response())
}
