//! The logged-in user's own things, on the same data the Subsonic API
//! keeps (so a phone app and the page agree): playlists (create, rename,
//! reorder, delete, play), stars, and ratings from 1 to 5 (0 removes),
//! through the one implementation Subsonic's `setRating` uses
//! ([`crate::subsonic::rating`]): a song's rating is a library property,
//! an album's or an artist's lives in the user data. A song, album or
//! artist outside the user's music folders is starred and rated as an
//! unknown id is: 404.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::extract::{Role, SmallJson, User};
use super::library::{may_see, song_json};
use super::{with_catalog, WebError, WebResult};
use crate::catalog::Song;
use crate::state::AppState;
use crate::subsonic::access::Access;
use crate::subsonic::rating::{self, RateError};
use crate::userdata::{Playlist, UserData, UserDataError};

/// The user's rating of a song (entry id), 1..=5, for the library pages.
pub(super) use crate::subsonic::rating::song_rating;
/// Most songs one playlist may hold through the page: 5,000.
pub const MAX_PLAYLIST_SONGS: usize = 5000;

/// The role making and changing playlists needs: the Subsonic playlist
/// role (deleting one's own needs only the session).
#[derive(Default)]
pub(super) struct Editor;

impl Role for Editor {
    const REFUSAL: &'static str =
        "you may not make playlists: ask an administrator for the playlist role";

    fn held(st: &AppState, user: &str) -> bool {
        st.accounts.roles(user).is_some_and(|r| r.playlist)
    }
}

/// The answer when the user data could not be written.
fn not_saved(e: impl std::fmt::Display) -> WebError {
    WebError::internal(format!("could not save: {e}"))
}

fn playlist_json(id: u64, p: &Playlist, user: &str) -> Value {
    json!({
        "id": id, "name": p.name, "comment": p.comment, "owner": p.owner,
        "public": p.public, "songs": p.songs.len(), "mine": p.owner == user,
        "changed": p.changed,
    })
}

/// `GET /ui/api/playlists`: the user's playlists and the public ones.
pub(super) async fn playlists(State(st): State<AppState>, User(user, _): User) -> Response {
    let list: Vec<Value> = st
        .music
        .userdata
        .playlists(&user)
        .iter()
        .map(|(id, p)| playlist_json(*id, p, &user))
        .collect();
    Json(json!({ "playlists": list })).into_response()
}

/// `GET /ui/api/playlist/ID`: a playlist and its tracks (songs the user
/// may see and the library still has).
pub(super) async fn playlist(
    State(st): State<AppState>,
    h: HeaderMap,
    Path(id): Path<u64>,
) -> WebResult {
    with_catalog(st, &h, move |st, cat, user| {
        let p = st
            .music
            .userdata
            .playlist(id)
            .filter(|p| p.owner == user || p.public)
            .ok_or_else(|| WebError::not_found("no such playlist"))?;
        let tracks: Vec<Value> = p
            .songs
            .iter()
            .filter_map(|s| cat.song(&s.to_string()))
            .filter(|s| may_see(st, user, s))
            .map(song_json)
            .collect();
        let mut v = playlist_json(id, &p, user);
        v["tracks"] = Value::from(tracks);
        Ok(Json(v).into_response())
    })
    .await
}

#[derive(Deserialize)]
pub(super) struct PlaylistForm {
    name: Option<String>,
    songs: Option<Vec<u32>>,
    public: Option<bool>,
    comment: Option<String>,
}

fn check_form(f: &PlaylistForm) -> WebResult<()> {
    if f.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
        return Err(WebError::bad_request("a playlist needs a name"));
    }
    if f.songs
        .as_ref()
        .is_some_and(|s| s.len() > MAX_PLAYLIST_SONGS)
    {
        return Err(WebError::bad_request(format!(
            "a playlist holds at most {MAX_PLAYLIST_SONGS} songs"
        )));
    }
    Ok(())
}

/// Runs a change of the user data through the state's blocking facade:
/// it waits for an fsync, which must not hold up the async executor.
/// A refusal over a limit is a 413 with the limit's message.
async fn write<T: Send + 'static>(
    st: &AppState,
    f: impl FnOnce(&UserData) -> Result<T, UserDataError> + Send + 'static,
) -> WebResult<T> {
    st.call(move |st| f(&st.music.userdata))
        .await
        .map_err(|e| not_saved(format!("the writer task failed: {e}")))?
        .map_err(|e| match e {
            UserDataError::TooMany { .. } | UserDataError::TooLong { .. } => {
                WebError::new(StatusCode::PAYLOAD_TOO_LARGE, e.to_string())
            }
            e => not_saved(e),
        })
}

/// `POST /ui/api/playlists` `{"name", "songs"?}`: a new playlist.
pub(super) async fn create(
    State(st): State<AppState>,
    User(user, Editor): User<Editor>,
    SmallJson(f): SmallJson<PlaylistForm>,
) -> WebResult {
    check_form(&f)?;
    let now = st.now();
    let p = Playlist {
        owner: user.clone(),
        name: f.name.unwrap_or_else(|| "New playlist".into()),
        comment: f.comment.unwrap_or_default(),
        public: f.public.unwrap_or(false),
        songs: f.songs.unwrap_or_default(),
        created: now,
        changed: now,
    };
    let p2 = p.clone();
    let id = write(&st, move |u| u.create_playlist(p2)).await?;
    Ok(Json(playlist_json(id, &p, &user)).into_response())
}

/// `POST /ui/api/playlist/ID` `{"name"?, "songs"?, "public"?}`: renames,
/// replaces the song list (adding, removing and reordering are all a new
/// list), or shares the owner's playlist.
pub(super) async fn update(
    State(st): State<AppState>,
    Path(id): Path<u64>,
    User(user, Editor): User<Editor>,
    SmallJson(f): SmallJson<PlaylistForm>,
) -> WebResult {
    check_form(&f)?;
    let not_yours = || WebError::not_found("no such playlist of yours");
    let mut p = st
        .music
        .userdata
        .playlist(id)
        .filter(|p| p.owner == user)
        .ok_or_else(not_yours)?;
    p.name = f.name.unwrap_or(p.name);
    p.songs = f.songs.unwrap_or(p.songs);
    p.public = f.public.unwrap_or(p.public);
    p.comment = f.comment.unwrap_or(p.comment);
    p.changed = st.now();
    let p2 = p.clone();
    if !write(&st, move |u| u.put_playlist(id, p2)).await? {
        return Err(not_yours());
    }
    Ok(Json(playlist_json(id, &p, &user)).into_response())
}

/// `POST /ui/api/playlist/ID/delete`: removes the owner's playlist.
pub(super) async fn delete(
    State(st): State<AppState>,
    Path(id): Path<u64>,
    User(user, _): User,
) -> WebResult {
    if st
        .music
        .userdata
        .playlist(id)
        .is_none_or(|p| p.owner != user)
    {
        return Err(WebError::not_found("no such playlist of yours"));
    }
    write(&st, move |u| u.delete_playlist(id)).await?;
    Ok(Json(json!({ "deleted": id })).into_response())
}

/// `GET /ui/api/starred`: `{"ids": [...]}`, every id the user starred
/// (songs, `al-…` albums, `ar-…` artists), and the starred songs. A
/// song is starred when its track is loved ([`crate::loves`]).
pub(super) async fn starred(State(st): State<AppState>, h: HeaderMap) -> WebResult {
    with_catalog(st, &h, |st, cat, user| {
        let mut ids: Vec<String> = st
            .music
            .userdata
            .starred(user)
            .into_keys()
            .filter(|id| cat.song(id).is_none())
            .collect();
        let mut loved = crate::loves::LovedSet::of(&st.listens, user).songs(cat);
        loved.sort_by_key(|&(s, t)| (std::cmp::Reverse(t), s.id));
        let loved: Vec<&Song> = loved
            .into_iter()
            .map(|(s, _)| s)
            .filter(|s| may_see(st, user, s))
            .collect();
        ids.extend(loved.iter().map(|s| s.id.to_string()));
        let songs: Vec<Value> = loved.into_iter().map(song_json).collect();
        Ok(Json(json!({ "ids": ids, "songs": songs })).into_response())
    })
    .await
}

#[derive(Deserialize)]
pub(super) struct StarForm {
    id: String,
    on: bool,
}

/// What a star found: a song (whose star is its track's love), another
/// id (an album or artist, starred in the user data), or nothing the
/// user may see.
enum Starred {
    Song,
    Other,
    Hidden,
}

/// `POST /ui/api/star` `{"id", "on"}`: stars or unstars a song, album or
/// artist.
pub(super) async fn star(
    State(st): State<AppState>,
    User(user, _): User,
    SmallJson(f): SmallJson<StarForm>,
) -> WebResult {
    let (id, on) = (f.id.clone(), f.on);
    let u = user.clone();
    let found = st
        .call(move |st| {
            let cat = st.music.catalog(&st.db);
            // What the user may not see is as unknown as what does not
            // exist, as in the Subsonic API.
            if !Access::of(st, &u).sees_id(&cat, &id) {
                return Ok(Starred::Hidden);
            }
            match cat.song(&id) {
                // A song's star is the love of its track.
                Some(song) => crate::loves::star_song(st, &u, song, on).map(|()| Starred::Song),
                None => Ok(Starred::Other),
            }
        })
        .await
        .map_err(|e| not_saved(format!("the writer task failed: {e}")))?
        .map_err(not_saved)?;
    match found {
        Starred::Hidden => {
            return Err(WebError::not_found("no such song, album or artist"));
        }
        Starred::Song => {}
        Starred::Other => {
            let (id, now) = (f.id.clone(), st.now());
            write(&st, move |u| u.star(&user, &[id], on, now)).await?;
        }
    }
    Ok(Json(json!({ "id": f.id, "starred": f.on })).into_response())
}

#[derive(Deserialize)]
pub(super) struct RatingForm {
    id: String,
    rating: u8,
}

/// `POST /ui/api/rating` `{"id", "rating"}`: 1 to 5 stars, 0 removes.
pub(super) async fn rate(
    State(st): State<AppState>,
    User(user, _): User,
    SmallJson(f): SmallJson<RatingForm>,
) -> WebResult {
    let rating = f.rating;
    st.call(move |st| {
        let cat = st.music.catalog(&st.db);
        if Access::of(st, &user).hides(&cat, &f.id) {
            return Err(RateError::NotFound);
        }
        rating::rate(st, &cat, &user, &f.id, i64::from(f.rating))
    })
    .await?
    .map_err(|e| {
        let status = match e {
            RateError::OutOfRange(_) => StatusCode::BAD_REQUEST,
            RateError::NotAllowed => StatusCode::FORBIDDEN,
            RateError::NotFound => StatusCode::NOT_FOUND,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        WebError::new(status, e.to_string())
    })?;
    Ok(Json(json!({ "rating": rating })).into_response())
}
