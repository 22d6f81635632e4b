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
use axum::response::IntoResponse;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use spindle_listens::{Corrected, Correction, CorrectionInfo, Target};

use super::extract::{SmallJson, User};
use super::{WebError, WebResult};
use crate::corrections::Action;
use crate::state::AppState;

/// Whose history a request works on: the session user's, or with `user`
/// another's when the session user is an admin.
fn whose(st: &AppState, me: String, other: Option<String>) -> WebResult<String> {
    match other {
        Some(u) if u != me => {
            if !st.accounts.is_admin(&me) {
                return Err(WebError::new(
                    StatusCode::FORBIDDEN,
                    "only an admin may correct another user's history",
                ));
            }
            if !st.accounts.user_exists(&u) {
                return Err(WebError::not_found(format!("no user named '{u}'")));
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
pub(super) async fn list(
    State(st): State<AppState>,
    User(me, _): User,
    Query(q): Query<Whose>,
) -> WebResult {
    let user = whose(&st, me, q.user)?;
    let list: Vec<Value> = st
        .listens
        .corrections(&user)
        .iter()
        .map(correction_json)
        .collect();
    Ok(Json(json!({ "user": user, "corrections": list })).into_response())
}

/// Runs `action` on the history of `other` (the session user's without
/// it; see [`whose`]) through the state's blocking facade and answers
/// with what changed.
async fn run(st: AppState, me: String, other: Option<String>, action: Action) -> WebResult {
    let user = whose(&st, me, other)?;
    let u2 = user.clone();
    let Corrected { id, removed, added } = st
        .call(move |st| st.correct_history(&u2, action))
        .await
        .map_err(|e| WebError::internal(format!("the correction task failed: {e}")))?
        .map_err(|e| {
            if e.is_not_found() {
                WebError::not_found(e.to_string())
            } else if e.is_refusal() {
                WebError::bad_request(e.to_string())
            } else {
                WebError::internal(format!("could not correct the history: {e}"))
            }
        })?;
    Ok(Json(json!({
        "user": user, "id": id, "removed": removed.len(), "added": added.len(),
    }))
    .into_response())
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
pub(super) async fn correct<T: Into<Correction>>(
    State(st): State<AppState>,
    User(me, _): User,
    SmallJson(f): SmallJson<Form<T>>,
) -> WebResult
where
    Form<T>: serde::de::DeserializeOwned,
{
    run(st, me, f.user, Action::Correct(f.what.into())).await
}

pub(super) async fn undo(
    State(st): State<AppState>,
    Path(id): Path<u64>,
    User(me, _): User,
    SmallJson(f): SmallJson<Whose>,
) -> WebResult {
    run(st, me, f.user, Action::Undo(id)).await
}
