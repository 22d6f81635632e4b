//! The Subsonic API (v1.16.1) with OpenSubsonic extensions at
//! `/rest/METHOD` (and `/rest/METHOD.view`), GET or form POST, answering
//! XML or, with `f=json`, JSON.
//!
//! Every method needs a user (`u`+`p`, `u`+`t`+`s`, or `apiKey`; see
//! [`auth`]) except `getOpenSubsonicExtensions`. Songs are library entries
//! with a file under a music folder; albums and artists are derived (see
//! [`crate::catalog`]). `stream` and `download` send the file as it is
//! (transcoded by [`crate::transcode`] when asked) through
//! [`crate::stream`]; neither counts a play: only `scrobble` does, into
//! the listening history every API shares.

pub(crate) mod access;
mod admin;
pub mod auth;
mod browse;
pub(crate) mod chat;
mod cover;
mod file_playlists;
mod folders;
mod info;
mod lists;
mod lyrics;
mod media;
mod misc;
mod podcast;
mod privacy;
mod queue;
mod radio;
pub mod rating;
pub mod response;
pub(crate) mod scan;
mod shares;
#[cfg(test)]
pub(crate) mod testkit;
mod user;
pub(crate) mod views;

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

/// Every method this server answers, as `dispatch` and `handle` match
/// them (without `.view`); a unit test below reads the matches from this
/// file and fails when a method is missing here, and the folder access
/// test (`crates/server/tests/folder_access.rs`) walks every one of them.
pub const METHODS: &[&str] = &[
    "getOpenSubsonicExtensions",
    "stream",
    "download",
    "getCoverArt",
    "scrobble",
    "getAvatar",
    "ping",
    "getLicense",
    "getMusicFolders",
    "getIndexes",
    "getArtists",
    "getArtist",
    "getAlbum",
    "getSong",
    "getLyrics",
    "getLyricsBySongId",
    "getMusicDirectory",
    "getGenres",
    "getAlbumList2",
    "getRandomSongs",
    "search3",
    "getAlbumList",
    "search2",
    "getStarred",
    "getSongsByGenre",
    "getTopSongs",
    "getSimilarSongs",
    "getSimilarSongs2",
    "getArtistInfo",
    "getArtistInfo2",
    "getAlbumInfo",
    "getAlbumInfo2",
    "star",
    "unstar",
    "getStarred2",
    "getPlaylists",
    "getPlaylist",
    "createPlaylist",
    "updatePlaylist",
    "deletePlaylist",
    "getNowPlaying",
    "getUser",
    "getUsers",
    "createUser",
    "updateUser",
    "deleteUser",
    "changePassword",
    "setRating",
    "savePlayQueue",
    "getPlayQueue",
    "savePlayQueueByIndex",
    "getPlayQueueByIndex",
    "createBookmark",
    "getBookmarks",
    "deleteBookmark",
    "getScanStatus",
    "startScan",
    "tokenInfo",
    "getInternetRadioStations",
    "createInternetRadioStation",
    "updateInternetRadioStation",
    "deleteInternetRadioStation",
    "createShare",
    "getShares",
    "updateShare",
    "deleteShare",
    "getPodcasts",
    "getNewestPodcasts",
    "search",
    "getVideos",
    "getVideoInfo",
    "getCaptions",
    "hls.m3u8",
    "hls",
    "getChatMessages",
    "addChatMessage",
    // podcast::UNSUPPORTED
    "createPodcastChannel",
    "deletePodcastChannel",
    "deletePodcastEpisode",
    "downloadPodcastEpisode",
    "refreshPodcasts",
    "jukeboxControl",
    "getPodcastEpisode",
];

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/rest/{method}", get(handle).post(handle))
        .route(info::IMAGE_ROUTE, get(info::signed_image))
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
    /// The request's Host header, for URLs back to this server.
    pub host: Option<String>,
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

    /// A boolean parameter, the one reading of every boolean of the API
    /// ([`parse_flag`]): `None` when absent or empty, `Fail(0)` for a
    /// value that is not a boolean (never a guess).
    pub fn flag(&self, name: &str) -> Result<Option<bool>, Fail> {
        match self.p.nonempty(name) {
            None => Ok(None),
            Some(v) => parse_flag(v).map(Some).ok_or_else(|| {
                Fail(
                    0,
                    format!("Parameter {name} must be true or false, not {v:?}"),
                )
            }),
        }
    }

    pub fn now(&self) -> i64 {
        self.state.now()
    }
}

/// A Subsonic boolean as clients send it: `true`/`false` in any case
/// (Python's `True`), `1`/`0`, `yes`/`no`; anything else is `None`.
pub(crate) fn parse_flag(v: &str) -> Option<bool> {
    let v = v.trim();
    let is = |w: &str| v.eq_ignore_ascii_case(w);
    if is("true") || is("1") || is("yes") {
        Some(true)
    } else if is("false") || is("0") || is("no") {
        Some(false)
    } else {
        None
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
        && (p.get("apiKey").is_some() || (p.nonempty("t").is_some() && p.nonempty("s").is_some()));
    let st = state.clone();
    let fmt2 = fmt.clone();
    let m2 = method.clone();
    let authed = match early_user {
        Some(u) => Ok(u),
        // Logged in by a trusted single-sign-on proxy (crate::proxy).
        None => match crate::proxy::proxy_user(&state, &parts.headers) {
            Some(u) => Ok(u),
            None => who(&p, &state, ip).await,
        },
    };
    let host = parts
        .headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned);
    // A user granted some music folders only is checked against the
    // catalog first (access::gate), which may need building: never on
    // this thread.
    let quick = quick
        && authed.as_ref().is_ok_and(|u| {
            state.accounts.folders_of(u).is_none() || state.music.recent_catalog().is_some()
        });
    let run = move || {
        let user = authed?;
        let mut ctx = Ctx {
            state: st,
            user,
            p,
            host,
            cat: None,
        };
        let r = match m2.as_str() {
            "stream" | "download" | "getCoverArt" | "scrobble" => {
                access::gate(&mut ctx, &m2)?;
                return Ok(Err(ctx));
            }
            "getAvatar" => return Ok(Err(ctx)),
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
                "getCoverArt" => cover::cover_art(ctx, &parts.headers).await,
                "getAvatar" => misc::avatar(ctx).await,
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
            && (p.nonempty("p").is_some()
                || (p.nonempty("t").is_some() && p.nonempty("s").is_some())))
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
        "getIndexes" => folders::indexes(c),
        "getArtists" => browse::artists(c),
        "getArtist" => browse::artist(c),
        "getAlbum" => browse::album(c),
        "getSong" => browse::song(c),
        "getLyrics" => lyrics::get_lyrics(c),
        "getLyricsBySongId" => lyrics::get_lyrics_by_song_id(c),
        "getMusicDirectory" => folders::directory(c),
        "getGenres" => browse::genres(c),
        "getAlbumList2" => lists::album_list2(c),
        "getRandomSongs" => lists::random_songs(c),
        "search3" => lists::search3(c),
        "getAlbumList" => lists::album_list(c),
        "search2" => lists::search2(c),
        "getStarred" => lists::starred(c),
        "getSongsByGenre" => lists::songs_by_genre(c),
        "getTopSongs" => info::top_songs(c),
        "getSimilarSongs" => info::similar_songs1(c),
        "getSimilarSongs2" => info::similar_songs2(c),
        "getArtistInfo" => info::artist_info1(c),
        "getArtistInfo2" => info::artist_info2(c),
        "getAlbumInfo" | "getAlbumInfo2" => info::album_info1(c),
        "star" => user::star(c, true),
        "unstar" => user::star(c, false),
        "getStarred2" => user::starred2(c),
        "getPlaylist" if file_playlists::is_file_id(c.p.get("id")) => file_playlists::playlist(c),
        "updatePlaylist" if file_playlists::is_file_id(c.p.get("playlistId")) => {
            file_playlists::refuse_change(c)
        }
        "deletePlaylist" if file_playlists::is_file_id(c.p.get("id")) => {
            file_playlists::refuse_change(c)
        }
        "getPlaylists" => user::playlists(c),
        "getPlaylist" => user::playlist(c),
        "createPlaylist" => user::create_playlist(c),
        "updatePlaylist" => user::update_playlist(c),
        "deletePlaylist" => user::delete_playlist(c),
        "getNowPlaying" => user::now_playing(c),
        "getUser" => admin::get_user(c),
        "getUsers" => admin::get_users(c),
        "createUser" => admin::create_user(c),
        "updateUser" => admin::update_user(c),
        "deleteUser" => admin::delete_user(c),
        "changePassword" => admin::change_password(c),
        "setRating" => rating::set_rating(c),
        "savePlayQueue" => queue::save_play_queue(c),
        "getPlayQueue" => queue::get_play_queue(c),
        "savePlayQueueByIndex" => queue::save_play_queue_by_index(c),
        "getPlayQueueByIndex" => queue::get_play_queue_by_index(c),
        "createBookmark" => queue::create_bookmark(c),
        "getBookmarks" => queue::get_bookmarks(c),
        "deleteBookmark" => queue::delete_bookmark(c),
        "getScanStatus" => scan::get_scan_status(c),
        "startScan" => scan::start_scan(c),
        "tokenInfo" => auth::token_info(c),
        "getInternetRadioStations" => radio::stations(c),
        "createInternetRadioStation" => radio::create(c),
        "updateInternetRadioStation" => radio::update(c),
        "deleteInternetRadioStation" => radio::delete(c),
        "createShare" => shares::create(c),
        "getShares" => shares::list(c),
        "updateShare" => shares::update(c),
        "deleteShare" => shares::delete(c),
        "getPodcasts" => podcast::podcasts(c),
        "getNewestPodcasts" => podcast::newest_podcasts(c),
        "search" => misc::search(c),
        "getVideos" => misc::videos(c),
        "getVideoInfo" | "getCaptions" => misc::no_video(c),
        "hls.m3u8" | "hls" => misc::hls(c),
        "getChatMessages" => misc::chat_messages(c),
        "addChatMessage" => misc::add_chat_message(c),
        m if podcast::UNSUPPORTED.contains(&m) => podcast::unsupported(m),
        _ => Err(Fail(0, format!("Unknown method: {method}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boolean_is_read_in_any_case_and_as_1_0_yes_no_and_nothing_else_is_guessed() {
        for t in ["true", "True", "TRUE", "1", "yes", "Yes", " true "] {
            assert_eq!(parse_flag(t), Some(true), "{t:?}");
        }
        for f in ["false", "False", "FALSE", "0", "no", "NO"] {
            assert_eq!(parse_flag(f), Some(false), "{f:?}");
        }
        for bad in ["", "t", "f", "on", "off", "2", "falsey", "nope"] {
            assert_eq!(parse_flag(bad), None, "{bad:?}");
        }
    }

    /// The method names the matches of this file name: every arm that
    /// starts with a string.
    fn matched() -> std::collections::BTreeSet<String> {
        let src = include_str!("mod.rs");
        let code = src.split("#[cfg(test)]\nmod tests").next().unwrap_or(src);
        let mut out = std::collections::BTreeSet::new();
        for line in code.lines().map(str::trim) {
            let Some(pattern) = line.split("=>").next().filter(|_| line.contains("=>")) else {
                continue;
            };
            if !pattern.starts_with('"') {
                continue;
            }
            let pattern = pattern.split(" if ").next().unwrap_or(pattern);
            out.extend(
                pattern
                    .split('|')
                    .map(|p| p.trim().trim_matches('"').to_owned()),
            );
        }
        out
    }

    #[test]
    fn every_matched_method_is_in_the_list_of_methods() {
        let found = matched();
        assert!(
            found.contains("getAlbumList2") && found.contains("stream"),
            "{found:?}"
        );
        let missing: Vec<&String> = found
            .iter()
            .filter(|m| !METHODS.contains(&m.as_str()))
            .collect();
        assert!(missing.is_empty(), "add to METHODS: {missing:?}");
        for m in podcast::UNSUPPORTED {
            assert!(METHODS.contains(&m), "add to METHODS: {m}");
        }
        let mut seen = std::collections::HashSet::new();
        for m in METHODS {
            assert!(seen.insert(m), "{m} is twice in METHODS");
            assert!(
                found.contains(*m)
                    || podcast::UNSUPPORTED.contains(m)
                    || *m == "getOpenSubsonicExtensions",
                "{m} is in METHODS but no match answers it"
            );
        }
    }
}
