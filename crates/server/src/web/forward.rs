//! The settings page's "Linked services": the logged-in user links a
//! Last.fm-compatible account by the desktop flow (start: the approval
//! page to open; finish: asked again until approved) or a
//! ListenBrainz-compatible one by its token, sees each link's queue and
//! state, and unlinks. Every POST needs the CSRF header; linking needs
//! the Subsonic settings role, as the other settings do.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use super::extract::{Role, SmallJson, User};
use super::{WebError, WebResult};
use crate::forward::{link, linking, ForwardError, LinkKind};
use crate::state::AppState;

/// Linking and unlinking need the Subsonic settings role.
#[derive(Default)]
pub(super) struct Linker;

impl Role for Linker {
    const REFUSAL: &'static str =
        "you may not link services: ask an administrator for the settings role";

    fn held(st: &AppState, user: &str) -> bool {
        st.accounts.roles(user).is_some_and(|r| r.settings)
    }
}

fn forward_err(e: ForwardError) -> WebError {
    let status = match &e {
        ForwardError::BadName(_) | ForwardError::NoApiKey => StatusCode::BAD_REQUEST,
        ForwardError::NoLink { .. } => StatusCode::NOT_FOUND,
        ForwardError::TooManyLinks { .. } => StatusCode::CONFLICT,
        ForwardError::Service {
            source: spindle_scrobble::SendError::Blocked(_),
            ..
        } => StatusCode::FORBIDDEN,
        ForwardError::Service { .. } | ForwardError::Refused { .. } => StatusCode::BAD_GATEWAY,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    WebError::new(status, e.to_string())
}

fn off() -> WebError {
    WebError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "forwarding is off on this server",
    )
}

/// `GET /ui/api/forward`: `{"links": [LinkStatus…], "lastfm_key": bool}`.
pub(super) async fn list(State(st): State<AppState>, User(u, _): User) -> Response {
    let links = st
        .call(move |st| st.forward.statuses(Some(&u)))
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
pub(super) struct LastFmStartForm {
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
pub(super) async fn lastfm_start(
    State(st): State<AppState>,
    User(u, Linker): User<Linker>,
    SmallJson(f): SmallJson<LastFmStartForm>,
) -> WebResult {
    if st.forward.root().is_none() {
        return Err(off());
    }
    let flow = linking::start_lastfm(
        given(&f.url),
        given(&f.api_key),
        given(&f.api_secret),
        &st.config.forward,
    )
    .await
    .map_err(forward_err)?;
    let out = json!({ "token": flow.token, "approve_url": flow.approve_url });
    st.forward.keep_flow(&u, flow);
    Ok(Json(out).into_response())
}

#[derive(Deserialize)]
pub(super) struct FinishForm {
    token: String,
    name: Option<String>,
}

/// `POST /ui/api/forward/lastfm/finish` `{"token", "name"?}`: `200
/// {"linked": LinkStatus…}` once approved, `202 {"waiting": true}` before.
pub(super) async fn lastfm_finish(
    State(st): State<AppState>,
    User(u, Linker): User<Linker>,
    SmallJson(f): SmallJson<FinishForm>,
) -> WebResult {
    let (root, name) = new_link(&st, &u, &f.name, LinkKind::Lastfm).await?;
    let flow = st
        .forward
        .flow(&u, &f.token)
        .ok_or_else(|| WebError::not_found("no linking under way with this token: start again"))?;
    match flow.try_finish(st.now()).await.map_err(forward_err)? {
        None => Ok((StatusCode::ACCEPTED, Json(json!({ "waiting": true }))).into_response()),
        Some(l) => {
            st.forward.drop_flow(&f.token);
            saved(&st, root, u, name, l).await
        }
    }
}

/// Where `user`'s new link of `kind` goes: the links' folder and its
/// name (`name`, else the kind's), checked; refused while forwarding is
/// off, and for a new name when the user has
/// [`link::MAX_LINKS_PER_USER`] links (409) — before the service is asked.
async fn new_link(
    st: &AppState,
    user: &str,
    name: &Option<String>,
    kind: LinkKind,
) -> WebResult<(std::path::PathBuf, String)> {
    let root = st.forward.root().ok_or_else(off)?.to_owned();
    let name = given(name).unwrap_or(kind.as_str()).to_owned();
    link::check_name(&name).map_err(forward_err)?;
    // The user's links are a folder listing.
    let (r, u, n) = (root.clone(), user.to_owned(), name.clone());
    spindle_app::offload::run(move || link::check_room(&r, &u, &n))
        .await?
        .map_err(forward_err)?;
    Ok((root, name))
}

/// Saves a new link at the end of the log and answers with its state.
async fn saved(
    st: &AppState,
    root: std::path::PathBuf,
    user: String,
    name: String,
    l: link::Link,
) -> WebResult {
    let cursor = st.listens.committed_end();
    let (u, n) = (user.clone(), name.clone());
    st.call(move |st| st.forward.save_link(&root, &u, &n, &l, cursor))
        .await?
        .map_err(forward_err)?;
    tracing::info!(user = %user, link = %name, "service linked");
    Ok(Json(json!({ "linked": name })).into_response())
}

#[derive(Deserialize)]
pub(super) struct ListenBrainzForm {
    token: String,
    url: Option<String>,
    name: Option<String>,
}

/// `POST /ui/api/forward/listenbrainz` `{"token", "url"?, "name"?}`: the
/// token is checked at the service before it is kept.
pub(super) async fn listenbrainz(
    State(st): State<AppState>,
    User(u, Linker): User<Linker>,
    SmallJson(f): SmallJson<ListenBrainzForm>,
) -> WebResult {
    let (root, name) = new_link(&st, &u, &f.name, LinkKind::Listenbrainz).await?;
    let l = linking::listenbrainz(given(&f.url), f.token.trim(), &st.config.forward, st.now())
        .await
        .map_err(forward_err)?;
    saved(&st, root, u, name, l).await
}

#[derive(Deserialize)]
pub(super) struct UnlinkForm {
    name: String,
}

/// `POST /ui/api/forward/unlink` `{"name"}`: removes the link and its
/// queue.
pub(super) async fn unlink(
    State(st): State<AppState>,
    User(u, Linker): User<Linker>,
    SmallJson(f): SmallJson<UnlinkForm>,
) -> WebResult {
    let root = st
        .forward
        .root()
        .map(std::path::Path::to_owned)
        .ok_or_else(off)?;
    spindle_app::offload::run(move || link::remove(&root, &u, &f.name))
        .await?
        .map_err(forward_err)?;
    Ok(Json(json!({ "unlinked": true })).into_response())
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    use super::*;

    /// A forwarding server state with `ann` logged in and
    /// [`link::MAX_LINKS_PER_USER`] links of hers saved: the state, the
    /// session cookie, and the guard of its folder.
    fn full() -> (AppState, String, tempfile::TempDir) {
        let data = tempfile::tempdir().unwrap();
        let st = AppState::in_dir(data.path(), 1_750_000_000).with_forwarding(data.path());
        st.accounts.add_user_cheaply("ann", "pw");
        let root = st.forward.root().unwrap().to_owned();
        let l = link::Link {
            kind: LinkKind::Listenbrainz,
            url: "http://127.0.0.1:9".into(),
            api_key: String::new(),
            api_secret: String::new(),
            secret: "tok".into(),
            remote_user: "ann".into(),
            linked_at: 1,
        };
        for i in 0..link::MAX_LINKS_PER_USER {
            linking::save(&root, "ann", &format!("l{i}"), &l, 0).unwrap();
        }
        let id = st.web.sessions.start("ann", st.now(), "test", None);
        (st, format!("{}={id}", super::super::COOKIE), data)
    }

    /// The status and error message of linking a ListenBrainz account
    /// under `name` at an address where nothing listens.
    async fn link_lb(st: &AppState, cookie: &str, name: &str) -> (u16, String) {
        let body = json!({"token": "tok", "url": "http://127.0.0.1:9", "name": name});
        let req = Request::post("/ui/api/forward/listenbrainz")
            .header("content-type", "application/json")
            .header("x-spindle-csrf", "1")
            .header("cookie", cookie)
            .body(Body::from(body.to_string()))
            .unwrap();
        let r = crate::web::router()
            .with_state(st.clone())
            .oneshot(req)
            .await
            .unwrap();
        let status = r.status().as_u16();
        let bytes = r.into_body().collect().await.unwrap().to_bytes();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        (status, v["error"].as_str().unwrap_or("").to_owned())
    }

    #[tokio::test]
    async fn a_new_link_beyond_the_limit_is_refused_before_the_service_is_asked() {
        let (st, cookie, _data) = full();
        let (status, msg) = link_lb(&st, &cookie, "one-more").await;
        assert_eq!(status, 409, "{msg}");
        assert!(
            msg.contains(&format!("{} links", link::MAX_LINKS_PER_USER)),
            "{msg}"
        );
        // Linking an existing name again goes on to the service (here
        // refused by the outbound rule, being loopback: 403), not refused
        // for the count.
        let (status, msg) = link_lb(&st, &cookie, "l0").await;
        assert_eq!(status, 403, "{msg}");
        assert!(msg.contains("loopback"), "{msg}");
    }
}
