//! The logged-in user's own settings and credentials, for the page's
//! "Settings": the time zone their "today" and daily charts count in
//! (an IANA name; UTC until set), and their OpenSubsonic API keys, one
//! per app (made — the key shown once — listed by id, revoked). Changing
//! either needs the Subsonic settings role; every POST the CSRF header.

#![allow(
    clippy::result_large_err,
    reason = "the error is the axum Response sent straight back; boxing it buys nothing once per request"
)]

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::err;
use super::extract::{Role, SmallJson, User};
use crate::accounts::{AccountError, Revoked, DEFAULT_TIME_ZONE};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/ui/api/me/settings", get(settings).post(set_settings))
        .route("/ui/api/me/apikeys", post(add_key))
        .route("/ui/api/me/apikeys/revoke", post(revoke_key))
}

/// The role a change needs (a read needs only a session): the Subsonic
/// settings role.
#[derive(Default)]
struct Changer;

impl Role for Changer {
    const REFUSAL: &'static str =
        "you may not change your settings: ask an administrator for the settings role";

    fn held(st: &AppState, user: &str) -> bool {
        st.accounts.roles(user).is_some_and(|r| r.settings)
    }
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
async fn settings(State(st): State<AppState>, User(u, _): User) -> Response {
    settings_json(&st, &u)
}

#[derive(Deserialize)]
struct SettingsForm {
    timezone: Option<String>,
}

/// `POST /ui/api/me/settings` `{"timezone"}`: an IANA name (`""`: back to
/// UTC); `400` names a zone the database does not know.
async fn set_settings(
    State(st): State<AppState>,
    User(u, Changer): User<Changer>,
    SmallJson(f): SmallJson<SettingsForm>,
) -> Response {
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
async fn add_key(
    State(st): State<AppState>,
    User(u, Changer): User<Changer>,
    SmallJson(f): SmallJson<NewKey>,
) -> Response {
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
async fn revoke_key(
    State(st): State<AppState>,
    User(u, Changer): User<Changer>,
    SmallJson(f): SmallJson<RevokeForm>,
) -> Response {
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
