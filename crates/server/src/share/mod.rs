//! Public share links, no account needed:
//!
//! - `GET /share/TOKEN`: a small HTML page (`page`) with the share's
//!   title, its tracks and an `<audio>` player;
//! - `GET`/`HEAD /share/TOKEN/stream/SONG`: a song of that share, through
//!   the same stream path as the Subsonic `stream` (ranges and all);
//! - `GET /share/TOKEN/player.js`: the page's script (the page allows no
//!   inline script).
//!
//! A share that does not exist, was deleted or has expired answers 404 to
//! all of them, and a song not in the share is never streamed; nor is a
//! song its owner may no longer see (music folder grants, checked at
//! every request): its stream answers that 404 and the page leaves it
//! out. Shares are made through the Subsonic API ([`crate::subsonic`]'s
//! `createShare`) and kept in [`crate::userdata`].

mod page;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use axum::routing::on;
use axum::Router;

use crate::cluster::route::Class::{self, Local, Write};
use crate::state::AppState;
use crate::userdata::Share;
use crate::web::routes::{self, row, Auth::Public, Route, Verb::Get};

/// Every route of a share link, one row each (see
/// [`crate::web::routes`]): all public. The page is a write, because a
/// visit counts (the share's `visitCount`, shipped by the primary); its
/// script and its streams any node answers.
#[rustfmt::skip]
pub static TABLE: &[Route] = &[
    row(Get, "/share/{token}", Public, Write, |m| on(m, show)),
    row(Get, "/share/{token}/player.js", Public, Local, |m| on(m, script)),
    row(Get, "/share/{token}/stream/{song}", Public, Local, |m| on(m, stream)),
];

/// The share links' router: every row of [`TABLE`].
pub fn router() -> Router<AppState> {
    routes::router_of(TABLE)
}

/// How a cluster serves a request under `/share/`: as its route says,
/// whatever its method (a visit counts however it comes); a path of no
/// route (a 404 any node gives) is local.
pub fn class_of(path: &str) -> Class {
    TABLE
        .iter()
        .find(|r| routes::matches(r.path, path))
        .map_or(Local, |r| r.class)
}

/// The public URL of a share: [`crate::Config::public_url`], else
/// `http://` and the request's `Host` (when it looks like a host name,
/// else `localhost`) and [`crate::Config::base_path`].
pub(crate) fn share_url(st: &AppState, host: Option<&str>, token: &str) -> String {
    let base = match &st.config.public_url {
        Some(u) => u.trim_end_matches('/').to_owned(),
        None => {
            let host = host
                .filter(|h| {
                    !h.is_empty()
                        && h.len() <= 255
                        && h.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
                })
                .unwrap_or("localhost");
            format!("http://{host}{}", st.config.base_path.trim_end_matches('/'))
        }
    };
    format!("{base}/share/{token}")
}

/// A response with the headers every share answer has: no caching by
/// others, no referrer (the URL is the secret), no sniffing.
fn respond(status: StatusCode, body: impl Into<Body>, ct: &'static str) -> Response {
    let mut r = Response::new(body.into());
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; media-src 'self'",
        ),
    );
    r
}

fn gone() -> Response {
    respond(
        StatusCode::NOT_FOUND,
        page::GONE,
        "text/html; charset=utf-8",
    )
}

async fn show(State(st): State<AppState>, Path(token): Path<String>) -> Response {
    let html = st
        .call(move |st| {
            let mut share = st.music.userdata.visit_share(&token, st.now())?;
            let cat = st.music.catalog(&st.db);
            // Only what plays: what its owner may still see.
            let access = crate::subsonic::access::Access::of(st, &share.owner);
            if !access.is_everything() {
                share
                    .songs
                    .retain(|&e| cat.song_by_entry(e).is_some_and(|s| access.sees_song(s)));
            }
            Some(page::render(&token, &share, &cat))
        })
        .await
        .ok()
        .flatten();
    match html {
        Some(html) => respond(StatusCode::OK, html, "text/html; charset=utf-8"),
        None => gone(),
    }
}

async fn script() -> Response {
    respond(
        StatusCode::OK,
        page::SCRIPT,
        "text/javascript; charset=utf-8",
    )
}

/// A live share holding `song`.
pub(crate) fn live_with(st: &AppState, token: &str, song: u32) -> Option<Share> {
    st.music
        .userdata
        .share(token)
        .filter(|s| s.live(st.now()) && s.songs.contains(&song))
}

/// A song of a live share, as it is (through [`crate::source`]), while
/// the share's owner may still see it; else the share's 404.
async fn stream(
    State(st): State<AppState>,
    method: Method,
    h: HeaderMap,
    Path((token, song)): Path<(String, String)>,
) -> Response {
    use crate::source::{Play, Request, SongRef, Who};
    let Ok(entry) = song.parse::<u32>() else {
        return gone();
    };
    let req = Request {
        song: SongRef::Entry(entry),
        who: Who::Share(token),
        play: Play::Original { attachment: false },
    };
    match crate::source::decide(&st, None, req).await {
        Ok(source) => crate::source::serve(&st, source, &h, method == Method::HEAD)
            .await
            .unwrap_or_else(|e| crate::transcode::error_response(&e)),
        Err(_) => gone(),
    }
}

#[cfg(test)]
mod tests;
