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
use axum::{Extension, Router};

use crate::catalog::Catalog;
use crate::music::Music;
use crate::params::Params;
use crate::state::AppState;
use response::{Format, Node};

/// Largest form body accepted.
const MAX_BODY: usize = 1 << 20;

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
    pub music: Arc<Music>,
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
        let c = self.music.catalog(&self.state.db);
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
    Extension(music): Extension<Arc<Music>>,
    Path(method): Path<String>,
    req: Request,
) -> Response {
    let started = Instant::now();
    let (parts, body) = req.into_parts();
    let body = if parts.method == Method::POST {
        match axum::body::to_bytes(body, MAX_BODY).await {
            Ok(b) => b,
            Err(_) => {
                return response::error(0, "Request body too large", &Format::Xml);
            }
        }
    } else {
        Default::default()
    };
    let p = Params::parse(parts.uri.query(), &body);
    let fmt = Format::from_params(p.get("f"), p.get("callback"));
    let method = method.strip_suffix(".view").unwrap_or(&method).to_owned();
    let head = parts.method == Method::HEAD;

    if method == "getOpenSubsonicExtensions" {
        return response::ok(Some(browse::extensions()), &fmt);
    }
    // Authentication, then the method, on a blocking thread: the store is
    // synchronous and so are the account checks.
    // A stream authenticated by apiKey or salted token costs a map lookup
    // and an md5, microseconds: checked right here, it saves a hop to the
    // blocking pool per request (the password forms may run Argon2, so
    // they still go there).
    let quick = matches!(method.as_str(), "stream" | "download")
        && (p.get("apiKey").is_some() || (p.get("t").is_some() && p.get("s").is_some()));
    let st = state.clone();
    let mu = music.clone();
    let fmt2 = fmt.clone();
    let m2 = method.clone();
    let run = move || {
        let user = match auth::authenticate(&p, &st.accounts) {
            Ok(u) => u,
            Err(r) => return Err(Fail(r.code, r.message.to_owned())),
        };
        let mut ctx = Ctx {
            state: st,
            music: mu,
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
    music.metrics.request(started.elapsed(), failed);
    resp
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
