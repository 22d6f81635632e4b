//! The logged-in user's own settings and credentials, for the page's
//! "Settings": the time zone their "today" and daily charts count in
//! (an IANA name; UTC until set), and their OpenSubsonic API keys, one
//! per app (made — the key shown once — listed by id, revoked). Changing
//! either needs the Subsonic settings role; every POST the CSRF header.

#![allow(
    clippy::result_large_err,
    reason = "the error is the axum Response sent straight back; boxing it buys nothing once per request"
)]

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::{csrf_ok, err, session_user, small_json};
use crate::accounts::{AccountError, Revoked, DEFAULT_TIME_ZONE};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/ui/api/me/settings", get(settings).post(set_settings))
        .route("/ui/api/me/apikeys", post(add_key))
        .route("/ui/api/me/apikeys/revoke", post(revoke_key))
}

/// The session's user for a read; for a POST, also the CSRF header and
/// the settings role.
fn user(st: &AppState, h: &HeaderMap, post: bool) -> Result<String, Response> {
    if post && !csrf_ok(h) {
        return Err(err(StatusCode::FORBIDDEN, "cross-site request refused"));
    }
    let u = session_user(st, h).ok_or_else(|| err(StatusCode::UNAUTHORIZED, "not logged in"))?;
    if post && !st.accounts.roles(&u).is_some_and(|r| r.settings) {
        return Err(err(
            StatusCode::FORBIDDEN,
            "you may not change your settings: ask an administrator for the settings role",
        ));
    }
    Ok(u)
}

fn account_err(e: AccountError) -> Response {
    let status = match e {
        AccountError::NoSuchUser(_) => StatusCode::NOT_FOUND,
        AccountError::Io { .. } | AccountError::Corrupt { .. } | AccountError::Hash(_) => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
        _ => StatusCode::BAD_REQUEST,
    };
    err(status, &e.to_string())
}

/// `{"timezone", "default", "apps"}`: the user's time zone (the default
/// when none is set), and their API keys (`[{"id", "app", "created"}]`).
fn settings_json(st: &AppState, user: &str) -> Response {
    let tz = st.accounts.time_zone_name(user);
    let apps: Vec<serde_json::Value> = st
        .accounts
        .app_keys(Some(user))
        .iter()
        .map(|(id, k)| json!({ "id": id, "app": k.app, "created": k.created }))
        .collect();
    Json(json!({
        "timezone": tz.as_deref().unwrap_or(DEFAULT_TIME_ZONE),
        "default": DEFAULT_TIME_ZONE,
        "apps": apps,
    }))
    .into_response()
}

/// `GET /ui/api/me/settings`.
async fn settings(State(st): State<AppState>, h: HeaderMap) -> Response {
    match user(&st, &h, false) {
        Ok(u) => settings_json(&st, &u),
        Err(r) => r,
    }
}

#[derive(Deserialize)]
struct SettingsForm {
    timezone: Option<String>,
}

/// `POST /ui/api/me/settings` `{"timezone"}`: an IANA name (`""`: back to
/// UTC); `400` names a zone the database does not know.
async fn set_settings(State(st): State<AppState>, h: HeaderMap, body: Body) -> Response {
    let u = match user(&st, &h, true) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let f: SettingsForm = match small_json(&st, body).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    if let Some(tz) = f.timezone {
        if let Err(e) = st.accounts.set_time_zone(&u, &tz) {
            return account_err(e);
        }
    }
    settings_json(&st, &u)
}

#[derive(Deserialize)]
struct NewKey {
    app: String,
}

/// `POST /ui/api/me/apikeys` `{"app"}`: a new API key for one app:
/// `{"key", "id", "app"}`, the key shown this once.
async fn add_key(State(st): State<AppState>, h: HeaderMap, body: Body) -> Response {
    let u = match user(&st, &h, true) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let f: NewKey = match small_json(&st, body).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    match st.accounts.add_app_key(&u, &f.app, st.now()) {
        Ok((key, id)) => {
            tracing::info!(user = %u, id = %id, "API key made");
            Json(json!({ "key": key, "id": id, "app": f.app.trim() })).into_response()
        }
        Err(e) => account_err(e),
    }
}

#[derive(Deserialize)]
struct RevokeForm {
    id: String,
}

/// `POST /ui/api/me/apikeys/revoke` `{"id"}`: ends one of the user's own
/// API keys; `404` if none of theirs has that id.
async fn revoke_key(State(st): State<AppState>, h: HeaderMap, body: Body) -> Response {
    let u = match user(&st, &h, true) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let f: RevokeForm = match small_json(&st, body).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    // Ids only, and the user's own: a session key is not revoked here.
    let mine = st
        .accounts
        .app_keys(Some(&u))
        .into_iter()
        .any(|(id, _)| id == f.id);
    if !mine {
        return err(StatusCode::NOT_FOUND, "no such API key of yours");
    }
    match st.accounts.revoke(&u, &f.id) {
        Ok(Some(Revoked::AppKey { id, .. })) => {
            tracing::info!(user = %u, id = %id, "API key revoked");
            Json(json!({ "revoked": id })).into_response()
        }
        Ok(_) => err(StatusCode::NOT_FOUND, "no such API key of yours"),
        Err(e) => account_err(e),
    }
}
