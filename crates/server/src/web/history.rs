//! Correcting the listening history from the web UI (JSON; see
//! docs/scrobble-hub.md, "Corrections"): list a user's corrections, edit
//! or delete a listen, edit every listen of a track, merge an artist name
//! into another, undo a correction. Each request works on the session
//! user's own history; an admin may name another user with `user`.
//! POSTs are CSRF-checked like every `/ui/` change.
//!
//! | route | body |
//! |---|---|
//! | `GET /ui/api/corrections[?user=U]` | — |
//! | `POST /ui/api/listens/edit` | `{at?, artist, title, new_artist?, new_title?, new_album?}`: one listen (with `at`) or every listen of the track (without) |
//! | `POST /ui/api/listens/delete` | `{at, artist, title}` |
//! | `POST /ui/api/artists/merge` | `{from, to}` |
//! | `POST /ui/api/corrections/{id}/undo` | `{}` |

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use spindle_listens::{Corrected, Correction, CorrectionInfo, Target};

use super::err;
use super::extract::{SmallJson, User};
use crate::corrections::{Action, DeleteArgs, EditArgs, MergeArgs};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/ui/api/corrections", get(list))
        .route("/ui/api/listens/edit", post(correct::<EditArgs>))
        .route("/ui/api/listens/delete", post(correct::<DeleteArgs>))
        .route("/ui/api/artists/merge", post(correct::<MergeArgs>))
        .route("/ui/api/corrections/{id}/undo", post(undo))
}

/// Whose history a request works on: the session user's, or with `user`
/// another's when the session user is an admin.
fn whose(st: &AppState, me: String, other: Option<String>) -> Result<String, Box<Response>> {
    match other {
        Some(u) if u != me => {
            if !st.accounts.is_admin(&me) {
                return Err(Box::new(err(
                    StatusCode::FORBIDDEN,
                    "only an admin may correct another user's history",
                )));
            }
            if !st.accounts.user_exists(&u) {
                return Err(Box::new(err(
                    StatusCode::NOT_FOUND,
                    &format!("no user named '{u}'"),
                )));
            }
            Ok(u)
        }
        _ => Ok(me),
    }
}

fn correction_json(c: &CorrectionInfo) -> Value {
    let what = match &c.what {
        Correction::Edit { target, changes } => {
            let (at, artist, title) = match target {
                Target::Listen {
                    timestamp,
                    artist,
                    title,
                } => (Some(*timestamp), artist, title),
                Target::Track { artist, title } => (None, artist, title),
            };
            json!({
                "kind": "edit", "scope": if at.is_some() { "listen" } else { "track" },
                "at": at, "artist": artist, "title": title,
                "new_artist": changes.artist, "new_title": changes.title,
                "new_album": changes.album,
            })
        }
        Correction::Delete {
            timestamp,
            artist,
            title,
        } => json!({ "kind": "delete", "at": timestamp, "artist": artist, "title": title }),
        Correction::MergeArtist { from, to } => json!({ "kind": "merge", "from": from, "to": to }),
    };
    json!({ "id": c.id, "when": c.when, "undone": c.undone, "what": what })
}

#[derive(Deserialize)]
pub(super) struct Whose {
    user: Option<String>,
}

/// A user's corrections, oldest first.
async fn list(State(st): State<AppState>, User(me, _): User, Query(q): Query<Whose>) -> Response {
    let user = match whose(&st, me, q.user) {
        Ok(u) => u,
        Err(r) => return *r,
    };
    let list: Vec<Value> = st
        .listens
        .corrections(&user)
        .iter()
        .map(correction_json)
        .collect();
    Json(json!({ "user": user, "corrections": list })).into_response()
}

/// Runs `action` on the history of `other` (the session user's without
/// it; see [`whose`]) on a blocking thread and answers with what changed.
async fn run(st: AppState, me: String, other: Option<String>, action: Action) -> Response {
    let user = match whose(&st, me, other) {
        Ok(u) => u,
        Err(r) => return *r,
    };
    let st2 = st.clone();
    let u2 = user.clone();
    let out = tokio::task::spawn_blocking(move || st2.correct_history(&u2, action)).await;
    match out {
        Ok(Ok(Corrected { id, removed, added })) => Json(json!({
            "user": user, "id": id, "removed": removed.len(), "added": added.len(),
        }))
        .into_response(),
        Ok(Err(e)) if e.is_not_found() => err(StatusCode::NOT_FOUND, &e.to_string()),
        Ok(Err(e)) if e.is_refusal() => err(StatusCode::BAD_REQUEST, &e.to_string()),
        Ok(Err(e)) => err(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("could not correct the history: {e}"),
        ),
        Err(e) => err(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("the correction task failed: {e}"),
        ),
    }
}

/// A correction's form: whose history (see [`whose`]) and the
/// correction's own fields ([`EditArgs`], [`DeleteArgs`], [`MergeArgs`],
/// the same as `spindle listens edit|delete|merge` take).
#[derive(Deserialize)]
pub(super) struct Form<T> {
    user: Option<String>,
    #[serde(flatten)]
    what: T,
}

/// An edit, a delete or a merge: the route's form into its correction.
async fn correct<T: Into<Correction>>(
    State(st): State<AppState>,
    User(me, _): User,
    SmallJson(f): SmallJson<Form<T>>,
) -> Response
where
    Form<T>: serde::de::DeserializeOwned,
{
    run(st, me, f.user, Action::Correct(f.what.into())).await
}

async fn undo(
    State(st): State<AppState>,
    Path(id): Path<u64>,
    User(me, _): User,
    SmallJson(f): SmallJson<Whose>,
) -> Response {
    run(st, me, f.user, Action::Undo(id)).await
}
