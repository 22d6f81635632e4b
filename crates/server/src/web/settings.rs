//! The logged-in user's own settings and credentials, for the page's
//! "Settings": the time zone their "today" and daily charts count in
//! (an IANA name; UTC until set), and their OpenSubsonic API keys, one
//! per app (made — the key shown once — listed by id, revoked). Changing
//! either needs the Subsonic settings role; every POST the CSRF header.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use super::extract::{Role, SmallJson, User};
use super::{WebError, WebResult};
use crate::accounts::{AccountError, Revoked, DEFAULT_TIME_ZONE};
use crate::state::AppState;

/// The role a change needs (a read needs only a session): the Subsonic
/// settings role.
#[derive(Default)]
pub(super) struct Changer;

impl Role for Changer {
    const REFUSAL: &'static str =
        "you may not change your settings: ask an administrator for the settings role";

    fn held(st: &AppState, user: &str) -> bool {
        st.accounts.roles(user).is_some_and(|r| r.settings)
    }
}

fn account_err(e: AccountError) -> WebError {
    let status = match e {
        AccountError::NoSuchUser(_) => StatusCode::NOT_FOUND,
        AccountError::Io { .. } | AccountError::Corrupt { .. } | AccountError::Hash(_) => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
        _ => StatusCode::BAD_REQUEST,
    };
    WebError::new(status, e.to_string())
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
pub(super) async fn settings(State(st): State<AppState>, User(u, _): User) -> Response {
    settings_json(&st, &u)
}

#[derive(Deserialize)]
pub(super) struct SettingsForm {
    timezone: Option<String>,
}

/// `POST /ui/api/me/settings` `{"timezone"}`: an IANA name (`""`: back to
/// UTC); `400` names a zone the database does not know.
pub(super) async fn set_settings(
    State(st): State<AppState>,
    User(u, Changer): User<Changer>,
    SmallJson(f): SmallJson<SettingsForm>,
) -> WebResult {
    if let Some(tz) = f.timezone {
        let u = u.clone();
        st.call(move |st| st.accounts.set_time_zone(&u, &tz))
            .await?
            .map_err(account_err)?;
    }
    Ok(settings_json(&st, &u))
}

#[derive(Deserialize)]
pub(super) struct NewKey {
    app: String,
}

/// `POST /ui/api/me/apikeys` `{"app"}`: a new API key for one app:
/// `{"key", "id", "app"}`, the key shown this once.
pub(super) async fn add_key(
    State(st): State<AppState>,
    User(u, Changer): User<Changer>,
    SmallJson(f): SmallJson<NewKey>,
) -> WebResult {
    let (u2, app) = (u.clone(), f.app.clone());
    let (key, id) = st
        .call(move |st| st.accounts.add_app_key(&u2, &app, st.now()))
        .await?
        .map_err(account_err)?;
    tracing::info!(user = %u, id = %id, "API key made");
    Ok(Json(json!({ "key": key, "id": id, "app": f.app.trim() })).into_response())
}

#[derive(Deserialize)]
pub(super) struct RevokeForm {
    id: String,
}

/// `POST /ui/api/me/apikeys/revoke` `{"id"}`: ends one of the user's own
/// API keys; `404` if none of theirs has that id.
pub(super) async fn revoke_key(
    State(st): State<AppState>,
    User(u, Changer): User<Changer>,
    SmallJson(f): SmallJson<RevokeForm>,
) -> WebResult {
    let not_mine = || WebError::not_found("no such API key of yours");
    // Ids only, and the user's own: a session key is not revoked here.
    let mine = st
        .accounts
        .app_keys(Some(&u))
        .into_iter()
        .any(|(id, _)| id == f.id);
    if !mine {
        return Err(not_mine());
    }
    let u2 = u.clone();
    let revoked = st
        .call(move |st| st.accounts.revoke(&u2, &f.id))
        .await?
        .map_err(account_err)?;
    let Some(Revoked::AppKey { id, .. }) = revoked else {
        return Err(not_mine());
    };
    tracing::info!(user = %u, id = %id, "API key revoked");
    Ok(Json(json!({ "revoked": id })).into_response())
}
