//! The library as the web UI browses it: search (Spindle's query
//! language), albums, artists and an artist's page with its albums and
//! the user's most played tracks of it.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use spindle_listens::{normalise, ChartKind, ChartQuery};
use std::collections::{HashMap, HashSet};

use super::{with_catalog, WebError, WebResult};
use crate::catalog::{Album, Catalog, Song};
use crate::query_budget::SearchError;
use crate::state::AppState;

/// Whether `user` may see a song: its music folder is one of theirs
/// (every folder when the account names none).
pub(crate) fn may_see(st: &AppState, user: &str, s: &Song) -> bool {
    match st.accounts.folders_of(user) {
        None => true,
        Some(ids) => ids.iter().any(|&id| id as usize == s.folder + 1),
    }
}

pub(crate) fn song_json(s: &Song) -> Value {
    json!({
        "id": s.id, "title": s.title, "artist": s.artist, "album": s.album,
        "album_id": s.album_id, "artist_id": s.artist_id, "track": s.track,
        "duration": s.duration,
    })
}

fn album_json(a: &Album) -> Value {
    json!({
        "id": a.id, "name": a.name, "artist": a.artist, "artist_id": a.artist_id,
        "year": a.year, "songs": a.songs.len(),
    })
}

#[derive(Deserialize)]
pub(super) struct SearchQ {
    #[serde(default)]
    q: String,
}

/// A search the query pool refused: a pattern or a query over its
/// limits is the user's to change (400; a pattern's with the column), a
/// busy or stopping server is not (503).
fn search_err(e: SearchError) -> WebError {
    match e {
        SearchError::Pattern(e) => WebError::answer(
            (
                StatusCode::BAD_REQUEST,
                Json(json!({ "error": e.message, "column": e.column })),
            )
                .into_response(),
        ),
        e if e.is_retryable() => WebError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        e => WebError::bad_request(e.to_string()),
    }
}

pub(super) async fn search(
    State(st): State<AppState>,
    h: HeaderMap,
    Query(q): Query<SearchQ>,
) -> WebResult {
    with_catalog(st, &h, move |st, cat, user| {
        let text = q.q.trim();
        let songs: Vec<usize> = if text.is_empty() {
            (0..cat.songs.len()).collect()
        } else {
            // Within the network's limits, on the query pool (see
            // crate::query_budget).
            st.queries
                .search(&st.db, text)
                .map_err(search_err)?
                .ids
                .iter()
                .filter_map(|id| cat.song_index(*id))
                .collect()
        };
        let songs: Vec<usize> = songs
            .into_iter()
            .filter(|&s| may_see(st, user, &cat.songs[s]))
            .collect();
        let mut albums = Vec::new();
        let mut seen = HashSet::new();
        for &s in &songs {
            if let Some(a) = cat.album_index(&cat.songs[s].album_id) {
                if seen.insert(a) {
                    albums.push(album_json(&cat.albums[a]));
                }
            }
        }
        let total = songs.len();
        let songs: Vec<Value> = songs
            .iter()
            .take(200)
            .map(|&s| song_json(&cat.songs[s]))
            .collect();
        Ok(Json(json!({ "albums": albums, "songs": songs, "total": total })).into_response())
    })
    .await
}

pub(super) async fn album(
    State(st): State<AppState>,
    h: HeaderMap,
    Path(id): Path<String>,
) -> WebResult {
    with_catalog(st, &h, move |st, cat, user| {
        let Some(a) = cat.album(&id) else {
            return Err(WebError::not_found("no such album"));
        };
        let visible: Vec<&Song> = a
            .songs
            .iter()
            .map(|&s| &*cat.songs[s])
            .filter(|s| may_see(st, user, s))
            .collect();
        if visible.is_empty() {
            return Err(WebError::not_found("no such album"));
        }
        let starred = st.music.userdata.starred(user);
        let loved = crate::loves::LovedSet::of(&st.listens, user);
        let lib = st.db.read();
        let songs: Vec<Value> = visible
            .iter()
            .map(|s| {
                let mut v = song_json(s);
                v["starred"] = loved.song(s).is_some().into();
                v["rating"] = super::mine::song_rating(&lib, user, s.id).into();
                v
            })
            .collect();
        drop(lib);
        let mut v = album_json(a);
        v["tracks"] = Value::from(songs);
        v["starred"] = starred.contains_key(&a.id).into();
        v["rating"] = st.music.userdata.rating(user, &a.id).into();
        Ok(Json(v).into_response())
    })
    .await
}

/// Every artist of the library with its albums, songs and the user's
/// listens of it (all time).
pub(super) async fn artists(State(st): State<AppState>, h: HeaderMap) -> WebResult {
    with_catalog(st, &h, |st, cat, user| {
        let top = st.listens.chart(
            user,
            ChartKind::Artists,
            &ChartQuery {
                limit: usize::MAX,
                page: 1,
                ..ChartQuery::default()
            },
        );
        let plays: HashMap<String, u32> = top
            .rows
            .into_iter()
            .map(|r| (normalise(&r.name), r.playcount))
            .collect();
        let list: Vec<Value> = cat
            .artists
            .iter()
            .filter(|a| album_visible(st, cat, user, &a.albums))
            .map(|a| {
                let songs: usize = a.albums.iter().map(|&i| cat.albums[i].songs.len()).sum();
                json!({
                    "id": a.id, "name": a.name, "albums": a.albums.len(), "songs": songs,
                    "listens": plays.get(&normalise(&a.name)).copied().unwrap_or(0),
                })
            })
            .collect();
        Ok(Json(json!({ "artists": list })).into_response())
    })
    .await
}

/// Whether any song of these albums (catalog indexes) is in a folder the
/// user may see.
fn album_visible(st: &AppState, cat: &Catalog, user: &str, albums: &[usize]) -> bool {
    albums
        .iter()
        .flat_map(|&a| cat.albums[a].songs.iter())
        .any(|&s| may_see(st, user, &cat.songs[s]))
}

/// The library's song of a listened (artist, title), if there is one.
fn song_for<'a>(cat: &'a Catalog, albums: &[usize], title: &str) -> Option<&'a Song> {
    let want = normalise(title);
    albums
        .iter()
        .flat_map(|&a| cat.albums[a].songs.iter())
        .map(|&s| &*cat.songs[s])
        .find(|s| normalise(&s.title) == want)
}

/// An artist: its albums, the user's listens of it, and its ten most
/// played tracks (from the history; those in the library can be played).
pub(super) async fn artist(
    State(st): State<AppState>,
    h: HeaderMap,
    Path(id): Path<String>,
) -> WebResult {
    with_catalog(st, &h, move |st, cat, user| {
        let Some(a) = cat
            .artist(&id)
            .filter(|a| album_visible(st, cat, user, &a.albums))
        else {
            return Err(WebError::not_found("no such artist"));
        };
        let q = |limit| ChartQuery {
            artist: Some(&a.name),
            limit,
            page: 1,
            ..ChartQuery::default()
        };
        let listens = st
            .listens
            .chart(user, ChartKind::Artists, &q(1))
            .rows
            .first()
            .map_or(0, |r| r.playcount);
        let top = st.listens.chart(user, ChartKind::Tracks, &q(10));
        let counts: Vec<u32> = top.rows.iter().map(|r| r.playcount).collect();
        let ranks = crate::chart_svg::shared_ranks(&counts, 1);
        let tracks: Vec<Value> = top
            .rows
            .iter()
            .zip(ranks)
            .map(|(r, rank)| {
                json!({
                    "rank": rank, "title": r.name, "listens": r.playcount,
                    "song": song_for(cat, &a.albums, &r.name).map(song_json),
                })
            })
            .collect();
        let albums: Vec<Value> = a
            .albums
            .iter()
            .filter(|&&i| album_visible(st, cat, user, &[i]))
            .map(|&i| {
                let al = &cat.albums[i];
                let mut v = album_json(al);
                v["tracks"] = al.songs.iter().map(|&s| song_json(&cat.songs[s])).collect();
                v
            })
            .collect();
        Ok(Json(json!({
            "id": a.id, "name": a.name, "listens": listens,
            "albums": albums, "top_tracks": tracks,
        }))
        .into_response())
    })
    .await
}
