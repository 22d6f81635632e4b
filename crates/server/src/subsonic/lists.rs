//! Lists and search: getAlbumList and getAlbumList2 (every type, from the
//! orders [`super::views`] keeps per catalog), getRandomSongs,
//! getSongsByGenre, getStarred, search2 and search3 (an empty query pages
//! through everything; a query that looks like Spindle's query language is
//! evaluated as one; words are looked up in the per-catalog text).

use std::sync::Arc;

use rand::seq::SliceRandom;

use super::access::Access;
use super::browse::{album_node, artist_node, song_node, UserMarks};
use super::folders::{album_child, artist_v1};
use super::response::Node;
use super::{Ctx, SubsonicError, SyncResult};
use crate::catalog::{Album, Artist, Catalog};

/// How an answer shows artists and albums: as ID3 tags
/// (`getAlbumList2`, `getStarred2`, `search3`) or as directories
/// (`getAlbumList`, `getStarred`, `search2`). Songs are the same in both.
#[derive(Clone, Copy)]
pub(crate) enum Shape {
    /// `ArtistID3` and `AlbumID3`, of what the user may see of them.
    Id3,
    /// The v1 `Artist` and the album `Child` directory.
    Dirs,
}

impl Shape {
    fn artist(self, cat: &Catalog, scope: &Access, a: &Artist, marks: &UserMarks) -> Node {
        match self {
            Shape::Id3 => artist_node(cat, &scope.artist_view(cat, a), marks),
            Shape::Dirs => artist_v1(a, marks),
        }
    }

    fn album(self, cat: &Catalog, scope: &Access, a: &Album, marks: &UserMarks) -> Node {
        let a = scope.album_view(cat, a);
        match self {
            Shape::Id3 => album_node(&a, marks),
            Shape::Dirs => album_child(&a, marks),
        }
    }
}

fn size(c: &Ctx, name: &str, default: i64) -> Result<usize, SubsonicError> {
    Ok(c.int(name)?.unwrap_or(default).clamp(0, 500) as usize)
}

fn offset(c: &Ctx, name: &str) -> Result<usize, SubsonicError> {
    Ok(c.int(name)?.unwrap_or(0).max(0) as usize)
}

/// The page of albums an album list asks for (`type`, `size` at most
/// 500, `offset`, `musicFolderId` and the type's own parameters), as
/// indexes into the catalog, in order; of the albums the user may see.
fn album_page(c: &mut Ctx) -> Result<(Arc<Catalog>, Access, Vec<usize>, UserMarks), SubsonicError> {
    let kind = c.req("type")?.to_owned();
    let (size, offset) = (size(c, "size", 10)?, offset(c, "offset")?);
    let scope = c.scope()?;
    let years = match kind.as_str() {
        "byYear" => Some((
            c.int("fromYear")?
                .ok_or(SubsonicError::Missing("fromYear"))?,
            c.int("toYear")?.ok_or(SubsonicError::Missing("toYear"))?,
        )),
        _ => None,
    };
    let genre = match kind.as_str() {
        "byGenre" => Some(c.req("genre")?.to_lowercase()),
        _ => None,
    };
    let cat = c.cat();
    let views = c.state.subsonic.views.of(&cat);
    let o = views.orders();
    let starred = super::browse::marks(c);
    let keep = |n: &usize| scope.sees_album(&cat, &cat.albums[*n]);
    let page = |it: &mut dyn Iterator<Item = usize>| -> Vec<usize> {
        it.filter(keep).skip(offset).take(size).collect()
    };
    let v = match kind.as_str() {
        "random" => {
            let mut all: Vec<usize> = o.by_name.iter().copied().filter(keep).collect();
            let (amount, _) = all.partial_shuffle(&mut rand::thread_rng(), size);
            amount.to_vec()
        }
        "newest" => page(&mut o.newest.iter().copied()),
        // The user's rated albums, best first; then the most played.
        "highest" => {
            let ud = &c.state.music.userdata;
            let mut rated: Vec<(u8, usize)> = o
                .by_name
                .iter()
                .filter_map(|&n| ud.rating(&c.user, &cat.albums[n].id).map(|r| (r, n)))
                .collect();
            rated.sort_by_key(|&(r, _)| std::cmp::Reverse(r));
            let (frequent, _) = starred.album_orders(&cat);
            let rest = frequent
                .into_iter()
                .filter(|&n| ud.rating(&c.user, &cat.albums[n].id).is_none());
            page(&mut rated.iter().map(|&(_, n)| n).chain(rest))
        }
        // The asking user's own plays (`crate::plays`), never others'.
        "frequent" => page(&mut starred.album_orders(&cat).0.into_iter()),
        "recent" => page(&mut starred.album_orders(&cat).1.into_iter()),
        "alphabeticalByName" => page(&mut o.by_name.iter().copied()),
        "alphabeticalByArtist" => page(&mut o.by_artist.iter().copied()),
        "starred" => page(
            &mut o
                .by_name
                .iter()
                .copied()
                .filter(|&n| starred.contains_key(&cat.albums[n].id)),
        ),
        "byYear" => {
            let (from, to) = years.unwrap_or_default();
            let (lo, hi) = (from.min(to), from.max(to));
            let start = o
                .by_year
                .partition_point(|&n| cat.albums[n].year.unwrap_or(0) < lo);
            let end = o
                .by_year
                .partition_point(|&n| cat.albums[n].year.unwrap_or(0) <= hi);
            let range = o.by_year.get(start..end).unwrap_or_default();
            if from > to {
                page(&mut range.iter().rev().copied())
            } else {
                page(&mut range.iter().copied())
            }
        }
        "byGenre" => {
            let g = genre.unwrap_or_default();
            page(&mut o.album_genres.get(&g).into_iter().flatten().copied())
        }
        other => {
            return Err(SubsonicError::BadValue(format!(
                "Unknown album list type: {other}"
            )))
        }
    };
    Ok((cat, scope, v, starred))
}

/// `getAlbumList`: albums as directories (`Child` with `isDir`), which
/// `getMusicDirectory` opens.
pub(crate) fn album_list(c: &mut Ctx) -> SyncResult {
    album_list_as(c, "albumList", Shape::Dirs)
}

pub(crate) fn album_list2(c: &mut Ctx) -> SyncResult {
    album_list_as(c, "albumList2", Shape::Id3)
}

fn album_list_as(c: &mut Ctx, name: &'static str, shape: Shape) -> SyncResult {
    let (cat, scope, v, starred) = album_page(c)?;
    let albums = v
        .into_iter()
        .map(|n| shape.album(&cat, &scope, &cat.albums[n], &starred))
        .collect();
    Ok(Some(Node::new(name).list("album", albums)))
}

/// `getSongsByGenre`: `genre` (caselessly), `count` (10 by default, at
/// most 500), `offset`, `musicFolderId`; by album, disc and track.
pub(crate) fn songs_by_genre(c: &mut Ctx) -> SyncResult {
    let genre = c.req("genre")?.to_lowercase();
    let (count, offset) = (size(c, "count", 10)?, offset(c, "offset")?);
    let scope = c.scope()?;
    let cat = c.cat();
    let views = c.state.subsonic.views.of(&cat);
    let starred = super::browse::marks(c);
    let songs = views
        .orders()
        .song_genres
        .get(&genre)
        .into_iter()
        .flatten()
        .filter(|&&n| scope.sees_song(&cat.songs[n]))
        .skip(offset)
        .take(count)
        .map(|&n| song_node(&cat.songs[n], &starred))
        .collect();
    Ok(Some(Node::new("songsByGenre").list("song", songs)))
}

/// `getStarred`: what the user starred, albums as directories.
pub(crate) fn starred(c: &mut Ctx) -> SyncResult {
    starred_as(c, "starred", Shape::Dirs)
}

/// What the user starred, of what they may see (`musicFolderId` narrows
/// it): the answer `name` of `getStarred` and `getStarred2`.
pub(crate) fn starred_as(c: &mut Ctx, name: &'static str, shape: Shape) -> SyncResult {
    let cat = c.cat();
    let scope = c.scope()?;
    let starred = super::browse::marks(c);
    let (mut artists, mut albums, mut songs) = (Vec::new(), Vec::new(), Vec::new());
    for id in starred.keys() {
        if let Some(a) = cat.artist(id) {
            if scope.sees_artist(&cat, a) {
                artists.push(shape.artist(&cat, &scope, a, &starred));
            }
        } else if let Some(a) = cat.album(id) {
            if scope.sees_album(&cat, a) {
                albums.push(shape.album(&cat, &scope, a, &starred));
            }
        }
    }
    // Songs are starred by loving their tracks (`crate::loves`), most
    // recently starred first.
    let mut loved = starred.starred_songs(&cat);
    loved.sort_by_key(|&(s, t)| (std::cmp::Reverse(t), s.id));
    for (s, _) in loved {
        if scope.sees_song(s) {
            songs.push(song_node(s, &starred));
        }
    }
    Ok(Some(
        Node::new(name)
            .list("artist", artists)
            .list("album", albums)
            .list("song", songs),
    ))
}

pub(crate) fn random_songs(c: &mut Ctx) -> SyncResult {
    let size = size(c, "size", 10)?;
    let scope = c.scope()?;
    let genre = c.p.nonempty("genre").map(str::to_lowercase);
    let (from, to) = (c.int("fromYear")?, c.int("toYear")?);
    let cat = c.cat();
    let starred = super::browse::marks(c);
    let mut v: Vec<usize> = (0..cat.songs.len())
        .filter(|&n| {
            let s = &cat.songs[n];
            scope.sees_song(s)
                && genre
                    .as_ref()
                    .is_none_or(|g| s.genre.as_deref().is_some_and(|x| x.to_lowercase() == *g))
                && from.is_none_or(|f| s.year.is_some_and(|y| y >= f))
                && to.is_none_or(|t| s.year.is_some_and(|y| y <= t))
        })
        .collect();
    v.shuffle(&mut rand::thread_rng());
    let songs = v
        .into_iter()
        .take(size)
        .map(|n| song_node(&cat.songs[n], &starred))
        .collect();
    Ok(Some(Node::new("randomSongs").list("song", songs)))
}

/// Whether a search text is meant as Spindle's query language rather than
/// words to look for.
fn looks_like_query(q: &str) -> bool {
    q.contains([':', '~', '<', '>', '#', '+', '(', '='])
        || q.split_whitespace()
            .any(|w| matches!(w, "AND" | "OR" | "NOT"))
}

/// What a search found, as indexes into the catalog.
struct Found {
    artists: Vec<usize>,
    albums: Vec<usize>,
    songs: Vec<usize>,
}

fn search_words(c: &Ctx, cat: &Arc<Catalog>, q: &str) -> Result<Found, SubsonicError> {
    let words: Vec<String> = q.split_whitespace().map(str::to_lowercase).collect();
    // Each word is a pass over every song, like a filter of the query
    // language: the same limit.
    let max = spindle_query::limits::NETWORK_MAX_TERMS;
    if words.len() > max {
        return Err(SubsonicError::BadValue(format!(
            "The search has {} words; at most {max} are allowed: use fewer words",
            words.len()
        )));
    }
    let hits = c.state.subsonic.views.of(cat).text().search(&words);
    Ok(Found {
        artists: hits.artists,
        albums: hits.albums,
        songs: hits.songs,
    })
}

/// The query within the network's limits, on the server's query pool
/// (see [`crate::query_budget`]); refused, over budget or busy is error 0
/// with the reason.
fn search_query(c: &Ctx, cat: &Catalog, q: &str) -> Result<Found, SubsonicError> {
    // The user's own ratings win (`rating>=4` is theirs).
    let pref = super::rating::query_pref(&c.user);
    let ids = c
        .state
        .queries
        .search_with(&c.state.db, q, &pref)
        .map_err(|e| SubsonicError::Refused(format!("Query: {e}")))?;
    let songs: Vec<usize> = ids
        .ids
        .iter()
        .filter_map(|id| cat.song_index(*id))
        .collect();
    let mut albums: Vec<usize> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for &s in &songs {
        if let Some(n) = cat.album_index(&cat.songs[s].album_id) {
            if seen.insert(n) {
                albums.push(n);
            }
        }
    }
    let mut artists: Vec<usize> = Vec::new();
    for &al in &albums {
        if let Some(n) = cat.artist_index(&cat.albums[al].artist_id) {
            if !artists.contains(&n) {
                artists.push(n);
            }
        }
    }
    Ok(Found {
        artists,
        albums,
        songs,
    })
}

/// What `search2` and `search3` found, paged: artists, albums, songs (of
/// what the user may see).
type Paged = (
    Arc<Catalog>,
    Access,
    UserMarks,
    Vec<usize>,
    Vec<usize>,
    Vec<usize>,
);

fn search(c: &mut Ctx) -> Result<Paged, SubsonicError> {
    let q = c.p.get("query").unwrap_or("").trim();
    let max = spindle_query::limits::NETWORK_MAX_PATTERN_BYTES;
    if q.len() > max {
        return Err(SubsonicError::BadValue(format!(
            "The search is {} bytes long; at most {max} are allowed: shorten it",
            q.len()
        )));
    }
    let q = q.trim_matches('"').trim_end_matches('*').trim().to_owned();
    let scope = c.scope()?;
    let cat = c.cat();
    let found = if q.is_empty() {
        Found {
            artists: (0..cat.artists.len()).collect(),
            albums: (0..cat.albums.len()).collect(),
            songs: (0..cat.songs.len()).collect(),
        }
    } else if looks_like_query(&q) {
        search_query(c, &cat, &q)?
    } else {
        search_words(c, &cat, &q)?
    };
    let starred = super::browse::marks(c);
    let artists = found
        .artists
        .into_iter()
        .filter(|&n| scope.sees_artist(&cat, &cat.artists[n]))
        .skip(offset(c, "artistOffset")?)
        .take(size(c, "artistCount", 20)?)
        .collect();
    let albums = found
        .albums
        .into_iter()
        .filter(|&n| scope.sees_album(&cat, &cat.albums[n]))
        .skip(offset(c, "albumOffset")?)
        .take(size(c, "albumCount", 20)?)
        .collect();
    let songs = found
        .songs
        .into_iter()
        .filter(|&n| scope.sees_song(&cat.songs[n]))
        .skip(offset(c, "songOffset")?)
        .take(size(c, "songCount", 20)?)
        .collect();
    Ok((cat, scope, starred, artists, albums, songs))
}

pub(crate) fn search3(c: &mut Ctx) -> SyncResult {
    search_as(c, "searchResult3", Shape::Id3)
}

/// `search2`: as `search3`, with artists and albums as directories.
pub(crate) fn search2(c: &mut Ctx) -> SyncResult {
    search_as(c, "searchResult2", Shape::Dirs)
}

fn search_as(c: &mut Ctx, name: &'static str, shape: Shape) -> SyncResult {
    let (cat, scope, starred, artists, albums, songs) = search(c)?;
    let artists = artists
        .into_iter()
        .map(|n| shape.artist(&cat, &scope, &cat.artists[n], &starred))
        .collect();
    let albums = albums
        .into_iter()
        .map(|n| shape.album(&cat, &scope, &cat.albums[n], &starred))
        .collect();
    let songs = songs
        .into_iter()
        .map(|n| song_node(&cat.songs[n], &starred))
        .collect();
    Ok(Some(
        Node::new(name)
            .list("artist", artists)
            .list("album", albums)
            .list("song", songs),
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn query_language_is_told_from_plain_words() {
        for q in ["artist:foo", "tracknr>2", "a~x", "#3", "+comment", "x OR y"] {
            assert!(super::looks_like_query(q), "{q}");
        }
        for q in ["björk", "the sine waves", "or and"] {
            assert!(!super::looks_like_query(q), "{q}");
        }
    }
}
