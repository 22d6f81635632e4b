//! Lists and search: getAlbumList2 (every type), getRandomSongs, search3
//! (an empty query pages through everything; a query that looks like
//! Spindle's query language is evaluated as one).

use rand::seq::SliceRandom;

use super::browse::{album_node, artist_node, in_folder, song_node};
use super::response::Node;
use super::{missing, Ctx, Fail, SyncResult};
use crate::catalog::Catalog;

fn size(c: &Ctx, name: &str, default: i64) -> Result<usize, Fail> {
    Ok(c.int(name)?.unwrap_or(default).clamp(0, 500) as usize)
}

fn offset(c: &Ctx, name: &str) -> Result<usize, Fail> {
    Ok(c.int(name)?.unwrap_or(0).max(0) as usize)
}

fn folder(c: &Ctx) -> Result<Option<usize>, Fail> {
    match c.int("musicFolderId")? {
        None => Ok(None),
        Some(n) if n >= 1 && (n as usize) <= c.state.music.roots().len() => {
            Ok(Some(n as usize - 1))
        }
        Some(_) => Err(super::not_found("Music folder")),
    }
}

pub(crate) fn album_list2(c: &mut Ctx) -> SyncResult {
    let kind = c.req("type")?.to_owned();
    let (size, offset) = (size(c, "size", 10)?, offset(c, "offset")?);
    let folder = folder(c)?;
    let cat = c.cat();
    let starred = c.state.music.userdata.starred(&c.user);
    let mut v: Vec<usize> = (0..cat.albums.len())
        .filter(|&n| in_folder(&cat, &cat.albums[n], folder))
        .collect();
    let a = |n: &usize| &cat.albums[*n];
    let fold = |s: &str| s.to_lowercase();
    match kind.as_str() {
        "random" => v.shuffle(&mut rand::thread_rng()),
        "newest" => v.sort_by_key(|n| std::cmp::Reverse(a(n).created)),
        // No ratings yet: the most played stand in for the highest rated.
        "highest" | "frequent" => {
            v.retain(|n| a(n).play_count > 0);
            v.sort_by_key(|n| std::cmp::Reverse(a(n).play_count));
        }
        "recent" => {
            v.retain(|n| a(n).last_played > 0);
            v.sort_by_key(|n| std::cmp::Reverse(a(n).last_played));
        }
        "alphabeticalByName" => v.sort_by_key(|n| fold(&a(n).name)),
        "alphabeticalByArtist" => v.sort_by_key(|n| (fold(&a(n).artist), fold(&a(n).name))),
        "starred" => {
            v.retain(|n| starred.contains_key(&a(n).id));
            v.sort_by_key(|n| fold(&a(n).name));
        }
        "byYear" => {
            let from = c.int("fromYear")?.ok_or_else(|| missing("fromYear"))?;
            let to = c.int("toYear")?.ok_or_else(|| missing("toYear"))?;
            let (lo, hi) = (from.min(to), from.max(to));
            v.retain(|n| a(n).year.is_some_and(|y| (lo..=hi).contains(&y)));
            v.sort_by_key(|n| a(n).year.unwrap_or(0));
            if from > to {
                v.reverse();
            }
        }
        "byGenre" => {
            let g = c.req("genre")?.to_lowercase();
            v.retain(|n| {
                a(n).songs.iter().any(|&s| {
                    cat.songs[s]
                        .genre
                        .as_deref()
                        .is_some_and(|x| x.to_lowercase() == g)
                })
            });
            v.sort_by_key(|n| fold(&a(n).name));
        }
        other => return Err(Fail(0, format!("Unknown album list type: {other}"))),
    }
    let albums = v
        .into_iter()
        .skip(offset)
        .take(size)
        .map(|n| album_node(&cat.albums[n], &starred))
        .collect();
    Ok(Some(Node::new("albumList2").list("album", albums)))
}

pub(crate) fn random_songs(c: &mut Ctx) -> SyncResult {
    let size = size(c, "size", 10)?;
    let folder = folder(c)?;
    let genre = c.p.nonempty("genre").map(str::to_lowercase);
    let (from, to) = (c.int("fromYear")?, c.int("toYear")?);
    let cat = c.cat();
    let starred = c.state.music.userdata.starred(&c.user);
    let mut v: Vec<usize> = (0..cat.songs.len())
        .filter(|&n| {
            let s = &cat.songs[n];
            folder.is_none_or(|f| s.folder == f)
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

fn search_words(cat: &Catalog, q: &str) -> Result<Found, Fail> {
    let words: Vec<String> = q.split_whitespace().map(str::to_lowercase).collect();
    // Each word is a pass over every song, like a filter of the query
    // language: the same limit.
    let max = spindle_query::limits::NETWORK_MAX_TERMS;
    if words.len() > max {
        return Err(Fail(
            0,
            format!(
                "The search has {} words; at most {max} are allowed: use fewer words",
                words.len()
            ),
        ));
    }
    let hit = |hay: &str| {
        let hay = hay.to_lowercase();
        words.iter().all(|w| hay.contains(w.as_str()))
    };
    Ok(Found {
        artists: (0..cat.artists.len())
            .filter(|&n| hit(&cat.artists[n].name))
            .collect(),
        albums: (0..cat.albums.len())
            .filter(|&n| {
                let a = &cat.albums[n];
                hit(&format!("{} {}", a.name, a.artist))
            })
            .collect(),
        songs: (0..cat.songs.len())
            .filter(|&n| {
                let s = &cat.songs[n];
                hit(&format!("{} {} {}", s.title, s.artist, s.album))
            })
            .collect(),
    })
}

/// The query within the network's limits, on the server's query pool
/// (see [`crate::query_budget`]); refused, over budget or busy is error 0
/// with the reason.
fn search_query(c: &Ctx, cat: &Catalog, q: &str) -> Result<Found, Fail> {
    let ids = c
        .state
        .queries
        .search(&c.state.db, q)
        .map_err(|e| Fail(0, format!("Query: {e}")))?;
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

pub(crate) fn search3(c: &mut Ctx) -> SyncResult {
    let q = c.p.get("query").unwrap_or("").trim();
    let max = spindle_query::limits::NETWORK_MAX_PATTERN_BYTES;
    if q.len() > max {
        return Err(Fail(
            0,
            format!(
                "The search is {} bytes long; at most {max} are allowed: shorten it",
                q.len()
            ),
        ));
    }
    let q = q.trim_matches('"').trim_end_matches('*').trim().to_owned();
    let folder = folder(c)?;
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
        search_words(&cat, &q)?
    };
    let starred = c.state.music.userdata.starred(&c.user);
    let artists = found
        .artists
        .into_iter()
        .filter(|&n| {
            cat.artists[n]
                .albums
                .iter()
                .any(|&al| in_folder(&cat, &cat.albums[al], folder))
        })
        .skip(offset(c, "artistOffset")?)
        .take(size(c, "artistCount", 20)?)
        .map(|n| artist_node(&cat, &cat.artists[n], &starred))
        .collect();
    let albums = found
        .albums
        .into_iter()
        .filter(|&n| in_folder(&cat, &cat.albums[n], folder))
        .skip(offset(c, "albumOffset")?)
        .take(size(c, "albumCount", 20)?)
        .map(|n| album_node(&cat.albums[n], &starred))
        .collect();
    let songs = found
        .songs
        .into_iter()
        .filter(|&n| folder.is_none_or(|f| cat.songs[n].folder == f))
        .skip(offset(c, "songOffset")?)
        .take(size(c, "songCount", 20)?)
        .map(|n| song_node(&cat.songs[n], &starred))
        .collect();
    Ok(Some(
        Node::new("searchResult3")
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
