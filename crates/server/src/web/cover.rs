//! `/ui/cover/ID?size=N`: the cover of a song, album (`al-…`) or artist
//! (`ar-…`) for the web UI, for a logged-in user, through
//! [`crate::cover`] (the same covers, cache, ETag and 304 as Subsonic's
//! `getCoverArt`). Without `size` (or with 0) the image is sent as it is.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;

use super::extract::User;
use super::{err, WebError, WebResult};
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
) -> WebResult {
    // A user granted some music folders only gets no cover of what is
    // outside them: a hidden id answers as an unknown one.
    if st.accounts.folders_of(&user).is_some() {
        let (id2, user) = (id.clone(), user.clone());
        let visible = st
            .call(move |st| {
                let cat = st.music.catalog(&st.db);
                Access::of(st, &user).sees_id(&cat, &id2)
            })
            .await
            .unwrap_or(false);
        if !visible {
            return Err(WebError::not_found(format!("{id} not found")));
        }
    }
    let size = q.size.filter(|&s| s > 0);
    crate::cover::answer(&st, id, size, &h, &user)
        .await
        .map_err(cover_err)
}

/// What the page is told when there is no cover to send.
fn cover_err(e: CoverError) -> WebError {
    let status = match e {
        CoverError::Busy(_) => {
            let mut r = err(StatusCode::SERVICE_UNAVAILABLE, &e.to_string());
            crate::cover::busy_headers(&mut r);
            return WebError::answer(r);
        }
        CoverError::NoSuchId(_) | CoverError::NotFound(_) => StatusCode::NOT_FOUND,
        CoverError::Unusable { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    WebError::new(status, e.to_string())
}
