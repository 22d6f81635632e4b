//! `getCoverArt`: the cover of a song, album (`al-…`) or artist (`ar-…`)
//! at the `size` asked for, through [`crate::cover`] (sources, resizing,
//! the disk cache, ETag and 304).

use axum::http::HeaderMap;
use axum::response::Response;

use super::{Ctx, SubsonicError};
use crate::cover::CoverError;

/// `getCoverArt?id=…&size=N`: the image with its longer side at `size`
/// pixels (never scaled up), or as it is without a positive `size`. An
/// unknown id or an id without art is error 70; a cover that cannot be
/// decoded (and no other to fall back on) is error 0 with the reason; a
/// cover the server has no time to make now is error 0 with HTTP 503 and
/// `Retry-After`.
pub(crate) async fn cover_art(c: Ctx, headers: &HeaderMap) -> Result<Response, SubsonicError> {
    let id = c.req("id")?.to_owned();
    let size = c
        .int("size")?
        .filter(|&s| s > 0)
        .map(|s| u32::try_from(s).unwrap_or(u32::MAX));
    match crate::cover::answer(&c.state, id, size, headers, &c.user).await {
        Ok(r) => Ok(r),
        Err(CoverError::NoSuchId(_) | CoverError::NotFound(_)) => {
            Err(SubsonicError::NotFound("Cover art"))
        }
        Err(e @ CoverError::Busy(_)) => Err(SubsonicError::Busy {
            message: e.to_string(),
            retry_after: crate::cover::COVER_RETRY_AFTER_SECS,
        }),
        Err(e) => Err(SubsonicError::Internal(e.to_string())),
    }
}
