//! The settings page's "Linked services": the logged-in user links a
//! Last.fm-compatible account by the desktop flow (start: the approval
//! page to open; finish: asked again until approved) or a
//! ListenBrainz-compatible one by its token, sees each link's queue and
//! state, and unlinks. Every POST needs the CSRF header; linking needs
//! the Subsonic settings role, as the other settings do.

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
use crate::forward::{link, linking, ForwardError, LinkKind};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/ui/api/forward", get(list))
        .route("/ui/api/forward/lastfm/start", post(lastfm_start))
        .route("/ui/api/forward/lastfm/finish", post(lastfm_finish))
        .route("/ui/api/forward/listenbrainz", post(listenbrainz))
        .route("/ui/api/forward/unlink", post(unlink))
}

/// Linking and unlinking need the Subsonic settings role.
#[derive(Default)]
struct Linker;

impl Role for Linker {
    const REFUSAL: &'static str =
        "you may not link services: ask an administrator for the settings role";

    fn held(st: &AppState, user: &str) -> bool {
        st.accounts.roles(user).is_some_and(|r| r.settings)
    }
}

fn forward_err(e: ForwardError) -> Response {
    let status = match &e {
        ForwardError::BadName(_) | ForwardError::NoApiKey => StatusCode::BAD_REQUEST,
        ForwardError::NoLink { .. } => StatusCode::NOT_FOUND,
        ForwardError::Service { .. } | ForwardError::Refused { .. } => StatusCode::BAD_GATEWAY,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    err(status, &e.to_string())
}

fn off() -> Response {
    err(
        StatusCode::SERVICE_UNAVAILABLE,
        "forwarding is off on this server",
    )
}

/// `GET /ui/api/forward`: `{"links": [LinkStatus…], "lastfm_key": bool}`.
async fn list(State(st): State<AppState>, User(u, _): User) -> Response {
    let s = st.clone();
    let links = tokio::task::spawn_blocking(move || s.forward.statuses(Some(&u)))
        .await
        .unwrap_or_default();
    Json(json!({
        "links": links,
        "lastfm_key": !st.config.forward.lastfm_api_key.is_empty(),
        "lastfm_url": st.config.forward.lastfm_url,
        "listenbrainz_url": st.config.forward.listenbrainz_url,
    }))
    .into_response()
}

#[derive(Deserialize)]
struct LastFmStartForm {
    url: Option<String>,
    api_key: Option<String>,
    api_secret: Option<String>,
}

fn given(s: &Option<String>) -> Option<&str> {
    s.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// `POST /ui/api/forward/lastfm/start` `{"url"?, "api_key"?,
/// "api_secret"?}`: `{"token", "approve_url"}`; the user opens the page,
/// approves, then calls `finish`.
async fn lastfm_start(
    State(st): State<AppState>,
    User(u, Linker): User<Linker>,
    SmallJson(f): SmallJson<LastFmStartForm>,
) -> Response {
    if st.forward.root().is_none() {
        return off();
    }
    match linking::start_lastfm(
        given(&f.url),
        given(&f.api_key),
        given(&f.api_secret),
        &st.config.forward,
    )
    .await
    {
        Ok(flow) => {
            let out = json!({ "token": flow.token, "approve_url": flow.approve_url });
            st.forward.keep_flow(&u, flow);
            Json(out).into_response()
        }
        Err(e) => forward_err(e),
    }
}

#[derive(Deserialize)]
struct FinishForm {
    token: String,
    name: Option<String>,
}

/// `POST /ui/api/forward/lastfm/finish` `{"token", "name"?}`: `200
/// {"linked": LinkStatus…}` once approved, `202 {"waiting": true}` before.
async fn lastfm_finish(
    State(st): State<AppState>,
    User(u, Linker): User<Linker>,
    SmallJson(f): SmallJson<FinishForm>,
) -> Response {
    let (root, name) = match new_link(&st, &f.name, LinkKind::Lastfm) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let Some(flow) = st.forward.flow(&u, &f.token) else {
        return err(
            StatusCode::NOT_FOUND,
            "no linking under way with this token: start again",
        );
    };
    match flow.try_finish(st.now()).await {
        Ok(None) => (StatusCode::ACCEPTED, Json(json!({ "waiting": true }))).into_response(),
        Ok(Some(l)) => {
            st.forward.drop_flow(&f.token);
            saved(&st, &root, &u, &name, l).await
        }
        Err(e) => forward_err(e),
    }
}

/// Where a new link of `kind` goes: the links' folder and its name
/// (`name`, else the kind's), checked; refused while forwarding is off.
fn new_link(
    st: &AppState,
    name: &Option<String>,
    kind: LinkKind,
) -> Result<(std::path::PathBuf, String), Response> {
    let root = st.forward.root().ok_or_else(off)?.to_owned();
    let name = given(name).unwrap_or(kind.as_str()).to_owned();
    link::check_name(&name).map_err(forward_err)?;
    Ok((root, name))
}

/// Saves a new link at the end of the log and answers with its state.
async fn saved(
    st: &AppState,
    root: &std::path::Path,
    user: &str,
    name: &str,
    l: link::Link,
) -> Response {
    let (root, user, name) = (root.to_owned(), user.to_owned(), name.to_owned());
    let cursor = st.listens.committed_end();
    let r = tokio::task::spawn_blocking(move || {
        linking::save(&root, &user, &name, &l, cursor).map(|_| (user, name))
    })
    .await;
    match r {
        Ok(Ok((user, name))) => {
            tracing::info!(user = %user, link = %name, "service linked");
            Json(json!({ "linked": name })).into_response()
        }
        Ok(Err(e)) => forward_err(e),
        Err(e) => err(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

#[derive(Deserialize)]
struct ListenBrainzForm {
    token: String,
    url: Option<String>,
    name: Option<String>,
}

/// `POST /ui/api/forward/listenbrainz` `{"token", "url"?, "name"?}`: the
/// token is checked at the service before it is kept.
async fn listenbrainz(
    State(st): State<AppState>,
    User(u, Linker): User<Linker>,
    SmallJson(f): SmallJson<ListenBrainzForm>,
) -> Response {
    let (root, name) = match new_link(&st, &f.name, LinkKind::Listenbrainz) {
        Ok(t) => t,
        Err(r) => return r,
    };
    match linking::listenbrainz(given(&f.url), f.token.trim(), &st.config.forward, st.now()).await {
        Ok(l) => saved(&st, &root, &u, &name, l).await,
        Err(e) => forward_err(e),
    }
}

#[derive(Deserialize)]
struct UnlinkForm {
    name: String,
}

/// `POST /ui/api/forward/unlink` `{"name"}`: removes the link and its
/// queue.
async fn unlink(
    State(st): State<AppState>,
    User(u, Linker): User<Linker>,
    SmallJson(f): SmallJson<UnlinkForm>,
) -> Response {
    let Some(root) = st.forward.root().map(std::path::Path::to_owned) else {
        return off();
    };
    let r = tokio::task::spawn_blocking(move || link::remove(&root, &u, &f.name)).await;
    match r {
        Ok(Ok(())) => Json(json!({ "unlinked": true })).into_response(),
        Ok(Err(e)) => forward_err(e),
        Err(e) => err(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}
