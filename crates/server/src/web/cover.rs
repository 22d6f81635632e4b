//! `/ui/cover/ID?size=N`: the cover of a song, album (`al-…`) or artist
//! (`ar-…`) for the web UI, for a logged-in user, through
//! [`crate::cover`] (the same covers, cache, ETag and 304 as Subsonic's
//! `getCoverArt`). Without `size` (or with 0) the image is sent as it is.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;

use super::err;
use super::extract::User;
use crate::cover::CoverError;
use crate::state::AppState;
use crate::subsonic::access::Access;

#[derive(Deserialize)]
pub(super) struct CoverQ {
    size: Option<u32>,
}

pub(super) async fn cover(
    State(st): State<AppState>,
    h: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<CoverQ>,
    User(user, _): User,
) -> Response {
    // A user granted some music folders only gets no cover of what is
    // outside them: a hidden id answers as an unknown one.
    if st.accounts.folders_of(&user).is_some() {
        let st2 = st.clone();
        let id2 = id.clone();
        let user = user.clone();
        let visible = tokio::task::spawn_blocking(move || {
            let cat = st2.music.catalog(&st2.db);
            Access::of(&st2, &user).sees_id(&cat, &id2)
        })
        .await
        .unwrap_or(false);
        if !visible {
            return err(StatusCode::NOT_FOUND, &format!("{id} not found"));
        }
    }
    let size = q.size.filter(|&s| s > 0);
    match crate::cover::answer(&st, id, size, &h, &user).await {
        Ok(r) => r,
        Err(e @ CoverError::Busy(_)) => {
            let mut r = err(StatusCode::SERVICE_UNAVAILABLE, &e.to_string());
            crate::cover::busy_headers(&mut r);
            r
        }
        Err(e @ (CoverError::NoSuchId(_) | CoverError::NotFound(_))) => {
            err(StatusCode::NOT_FOUND, &e.to_string())
        }
        Err(e @ CoverError::Unusable { .. }) => {
            err(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string())
        }
        Err(e) => err(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}
