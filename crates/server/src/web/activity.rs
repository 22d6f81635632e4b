//! What is happening: the user's now playing (whichever API reported it:
//! Subsonic `scrobble` with `submission=false`, Last.fm
//! `updateNowPlaying`, ListenBrainz `playing_now`, Audioscrobbler 1.2, or
//! this UI's player), recent listens from the history with how many fell
//! on the user's today (midnight in their time zone, UTC by default), and
//! the web player's own reports.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use spindle_listens::{Listen, RecentQuery};

use super::extract::{SmallJson, User};
use super::{with_catalog, WebError, WebResult};
use crate::state::AppState;

fn listen_json(l: &Listen) -> Value {
    json!({
        "artist": l.artist, "title": l.title, "album": l.album, "at": l.timestamp,
        "client": l.client, "duration": l.duration,
    })
}

/// The user's 20 latest listens, how many there are, and how many since
/// the start of the user's today (`today`).
pub(super) async fn recent(State(st): State<AppState>, h: HeaderMap) -> WebResult {
    with_catalog(st, &h, |st, _, user| {
        let q = RecentQuery {
            limit: 20,
            page: 1,
            ..Default::default()
        };
        let page = st.listens.recent(user, &q);
        let items: Vec<Value> = page.listens.iter().map(listen_json).collect();
        let tz = st.accounts.time_zone(user);
        let midnight = super::charts::day_start(&tz, super::charts::local_day(&tz, st.now()));
        let today = RecentQuery {
            from: Some(midnight),
            limit: 0,
            page: 1,
            ..Default::default()
        };
        let today = st.listens.recent(user, &today).total;
        Ok(Json(json!({ "listens": items, "total": page.total, "today": today })).into_response())
    })
    .await
}

/// The user's now playing, or `null`.
pub(super) async fn now(State(st): State<AppState>, User(user, _): User) -> Response {
    let np = st.now_playing(&user).map(|l| listen_json(&l));
    Json(json!({ "now_playing": np })).into_response()
}

#[derive(Deserialize, Clone, Copy)]
pub(super) struct Playing {
    /// The song (library entry id).
    id: u32,
    /// `false`: now playing; `true`: a listen that started at `at`.
    #[serde(default)]
    scrobble: bool,
    /// When the play started, UNIX seconds (default now).
    at: Option<i64>,
}

/// The web player's reports: now playing when a track starts, a listen
/// once it has played long enough (the player applies the usual rule:
/// half the track or 4 minutes, tracks over 30 s). CSRF-checked; the user
/// is the session's.
pub(super) async fn playing(
    State(st): State<AppState>,
    User(user, _): User,
    SmallJson(p): SmallJson<Playing>,
) -> WebResult {
    let now = st.now();
    let listen = st
        .call(move |st| {
            let cat = st.music.catalog(&st.db);
            // A song outside the user's music folders is as unknown as a
            // missing one.
            let s = cat
                .song(&p.id.to_string())
                .filter(|s| super::library::may_see(st, &user, s))?;
            let mut l = Listen::new(&user, p.at.unwrap_or(now), &s.artist, &s.title);
            l.album = s.album.clone();
            l.album_artist = s.album_artist.clone();
            l.duration = s.duration.and_then(|d| u32::try_from(d).ok());
            l.track_number = s.track.and_then(|t| u32::try_from(t).ok());
            l.client = super::WEB_CLIENT.to_owned();
            Some(l)
        })
        .await
        .ok()
        .flatten()
        .ok_or_else(|| WebError::not_found("no such song"))?;
    if !p.scrobble {
        st.set_now_playing_song(listen, p.id);
        return Ok(Json(json!({ "now_playing": true })).into_response());
    }
    crate::scrobble::check(&st, &listen, true)
        .map_err(|why| WebError::bad_request(why.message()))?;
    let out = crate::scrobble::store_songs(&st, vec![(listen, Some(p.id))])
        .await
        .map_err(|e| {
            if e.is_refusal() {
                WebError::bad_request(e.to_string())
            } else {
                WebError::internal(format!("could not record the listen: {e}"))
            }
        })?;
    let accepted = out.first() == Some(&spindle_listens::Submitted::Accepted);
    Ok(Json(json!({ "accepted": accepted })).into_response())
}
