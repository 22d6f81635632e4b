//! The Subsonic API (v1.16.1) with OpenSubsonic extensions at
//! `/rest/METHOD` (and `/rest/METHOD.view`), GET or form POST, answering
//! XML or, with `f=json`, JSON.
//!
//! Every method needs a user (`u`+`p`, `u`+`t`+`s`, or `apiKey`; see
//! [`auth`]) except `getOpenSubsonicExtensions`. Songs are library entries
//! with a file under a music folder; albums and artists are derived (see
//! [`crate::catalog`]). `stream` and `download` send the file as it is
//! (no transcoding) through [`crate::stream`]; neither counts a play:
//! only `scrobble` does, into the listening history every API shares.

pub mod auth;
mod browse;
mod lists;
mod media;
pub mod response;
mod user;

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Path, Request, State};
use axum::http::Method;
use axum::response::Response;
use axum::routing::get;
use axum::Router;

use crate::catalog::Catalog;
use crate::params::Params;
use crate::state::AppState;
use response::{Format, Node};

pub fn router() -> Router<AppState> {
    Router::new().route("/rest/{method}", get(handle).post(handle))
}

/// A Subsonic error: code and message.
#[derive(Debug, Clone)]
pub(crate) struct Fail(pub u32, pub String);

pub(crate) fn missing(name: &str) -> Fail {
    Fail(10, format!("Required parameter is missing: {name}"))
}

pub(crate) fn not_found(what: &str) -> Fail {
    Fail(70, format!("{what} not found"))
}

/// What every handler gets.
pub(crate) struct Ctx {
    pub state: AppState,
    pub user: String,
    pub p: Params,
    cat: Option<Arc<Catalog>>,
}

impl Ctx {
    /// The catalog (built on first use; call on a blocking thread).
    pub fn cat(&mut self) -> Arc<Catalog> {
        if let Some(c) = &self.cat {
            return c.clone();
        }
        let c = self.state.music.catalog(&self.state.db);
        self.cat = Some(c.clone());
        c
    }

    pub fn req(&self, name: &str) -> Result<&str, Fail> {
        self.p.nonempty(name).ok_or_else(|| missing(name))
    }

    /// Every value of a repeated parameter.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.p
            .0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// An integer parameter; `Fail(0)` when it is not one.
    pub fn int(&self, name: &str) -> Result<Option<i64>, Fail> {
        match self.p.nonempty(name) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| Fail(0, format!("Parameter {name} is not an integer: {v:?}"))),
        }
    }

    pub fn now(&self) -> i64 {
        self.state.now()
    }
}

type SyncResult = Result<Option<Node>, Fail>;

async fn handle(
    State(state): State<AppState>,
    Path(method): Path<String>,
    req: Request,
) -> Response {
    let started = Instant::now();
    let (parts, body) = req.into_parts();
    let ip = crate::auth_guard::client_ip(&parts.extensions);
    // A POST with its credentials in the query string is authenticated
    // before its body is read; one with them in the body (OpenSubsonic
    // formPost) may send only a small body before it is authenticated
    // (crate::body::SUBSONIC_PRE_AUTH_MAX_BODY).
    let mut early_user = None;
    let body = if parts.method == Method::POST {
        let query = Params::parse(parts.uri.query(), b"");
        let fmt = Format::from_params(query.get("f"), query.get("callback"));
        let limit = if has_credentials(&query) {
            match who(&query, &state, ip).await {
                Ok(user) => early_user = Some(user),
                Err(Fail(code, msg)) => return response::error(code, &msg, &fmt),
            }
            crate::body::SUBSONIC_MAX_BODY
        } else {
            crate::body::SUBSONIC_PRE_AUTH_MAX_BODY
        };
        match crate::body::read_body(body, limit, &state.bodies).await {
            Ok(b) => b,
            Err(e) => return e.decorate(response::error(0, &e.to_string(), &fmt)),
        }
    } else {
        crate::body::BodyBytes::empty()
    };
    let p = Params::parse(parts.uri.query(), &body);
    let fmt = Format::from_params(p.get("f"), p.get("callback"));
    let method = method.strip_suffix(".view").unwrap_or(&method).to_owned();
    let head = parts.method == Method::HEAD;

    if method == "getOpenSubsonicExtensions" {
        return response::ok(Some(browse::extensions()), &fmt);
    }
    // Authentication here (throttled; an Argon2 run waits on the hashing
    // pool), then the method on a blocking thread: the store is
    // synchronous. A stream authenticated by apiKey or salted token skips
    // that hop (it was a saving when the check ran there too).
    let quick = matches!(method.as_str(), "stream" | "download")
        && (p.get("apiKey").is_some() || (p.get("t").is_some() && p.get("s").is_some()));
    let st = state.clone();
    let fmt2 = fmt.clone();
    let m2 = method.clone();
    let authed = match early_user {
        Some(u) => Ok(u),
        None => who(&p, &state, ip).await,
    };
    let run = move || {
        let user = authed?;
        let mut ctx = Ctx {
            state: st,
            user,
            p,
            cat: None,
        };
        let r = match m2.as_str() {
            "stream" | "download" | "getCoverArt" | "scrobble" => return Ok(Err(ctx)),
            _ => dispatch(&m2, &mut ctx),
        };
        Ok(Ok(r))
    };
    let outcome = if quick {
        Ok(run())
    } else {
        tokio::task::spawn_blocking(run).await
    };
    let resp = match outcome {
        Err(_) => response::error(0, "The request failed inside the server", &fmt2),
        Ok(Err(Fail(code, msg))) => response::error(code, &msg, &fmt2),
        Ok(Ok(Ok(Ok(body)))) => response::ok(body, &fmt2),
        Ok(Ok(Ok(Err(Fail(code, msg))))) => response::error(code, &msg, &fmt2),
        Ok(Ok(Err(ctx))) => {
            let r = match method.as_str() {
                "stream" | "download" => {
                    media::stream(ctx, &parts.headers, head, method == "download").await
                }
                "getCoverArt" => media::cover_art(ctx).await,
                _ => media::scrobble(ctx).await,
            };
            match r {
                Ok(resp) => resp,
                Err(Fail(code, msg)) => response::error(code, &msg, &fmt2),
            }
        }
    };
    let failed = !resp.status().is_success();
    state.metrics.request(started.elapsed(), failed);
    resp
}

/// Who a request from `ip` is (throttled; an Argon2 run goes to the
/// hashing pool).
async fn who(p: &Params, st: &AppState, ip: Option<std::net::IpAddr>) -> Result<String, Fail> {
    auth::authenticate(p, st, ip)
        .await
        .map_err(|r| Fail(r.code, r.message))
}

/// Whether `p` holds a whole set of credentials (`u`+`p`, `u`+`t`+`s` or
/// `apiKey`), so the request can be authenticated from it alone.
fn has_credentials(p: &Params) -> bool {
    p.get("apiKey").is_some()
        || (p.get("u").is_some()
            && (p.get("p").is_some() || (p.get("t").is_some() && p.get("s").is_some())))
}

fn dispatch(method: &str, c: &mut Ctx) -> SyncResult {
    match method {
        "ping" => Ok(None),
        "getLicense" => Ok(Some(
            Node::new("license")
                .b("valid", true)
                .s("email", "")
                .s("licenseExpires", "2099-12-31T00:00:00.000Z"),
        )),
        "getMusicFolders" => browse::music_folders(c),
        "getIndexes" => browse::indexes(c),
        "getArtists" => browse::artists(c),
        "getArtist" => browse::artist(c),
        "getAlbum" => browse::album(c),
        "getSong" => browse::song(c),
        "getMusicDirectory" => browse::directory(c),
        "getGenres" => browse::genres(c),
        "getAlbumList2" => lists::album_list2(c),
        "getRandomSongs" => lists::random_songs(c),
        "search3" => lists::search3(c),
        "star" => user::star(c, true),
        "unstar" => user::star(c, false),
        "getStarred2" => user::starred2(c),
        "getPlaylists" => user::playlists(c),
        "getPlaylist" => user::playlist(c),
        "createPlaylist" => user::create_playlist(c),
        "updatePlaylist" => user::update_playlist(c),
        "deletePlaylist" => user::delete_playlist(c),
        "getNowPlaying" => user::now_playing(c),
        "getUser" => user::get_user(c),
        _ => Err(Fail(0, format!("Unknown method: {method}"))),
    }
}
