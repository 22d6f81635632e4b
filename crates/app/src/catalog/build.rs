//! The parts of a build shared with an update: reading songs from the
//! library, and making an album from its songs.

use std::path::PathBuf;
use std::sync::Arc;

use spindle_query::SourcePref;
use spindle_store::Library;

use super::{read_song, sort_name, union, Album, Row, Song, FIELDS};

/// The album of `members` (indexes into `songs`, ascending, every one
/// with the same album id): named after the first, its aggregates in
/// song order, its songs by disc and track; `None` without members.
pub(crate) fn album_of(
    songs: &[Arc<Song>],
    members: &[usize],
    articles: &[String],
) -> Option<Album> {
    let first = &songs[*members.first()?];
    let sort = first
        .sort_album
        .clone()
        .unwrap_or_else(|| sort_name(&first.album, articles).to_owned());
    let mut a = Album {
        id: first.album_id.clone(),
        name: first.album.clone(),
        artist: first.display_album_artist.clone(),
        artist_id: first.artist_id.clone(),
        songs: Vec::with_capacity(members.len()),
        year: None,
        genre: None,
        created: i64::MAX,
        duration: 0,
        play_count: 0,
        last_played: 0,
        artists: first.album_artists.clone(),
        genres: Vec::new(),
        moods: Vec::new(),
        labels: Vec::new(),
        release_types: Vec::new(),
        compilation: false,
        sort_name: sort,
        mbid: None,
        original_date: None,
        disc_titles: Vec::new(),
    };
    for &n in members {
        let song = &songs[n];
        a.songs.push(n);
        a.year = a.year.or(song.year);
        if a.genre.is_none() {
            a.genre.clone_from(&song.genre);
        }
        a.created = a.created.min(song.added);
        a.duration += song.duration.unwrap_or(0);
        a.play_count += song.play_count;
        a.last_played = a.last_played.max(song.last_played);
        union(&mut a.genres, &song.genres);
        union(&mut a.moods, &song.moods);
        union(&mut a.labels, &song.labels);
        union(&mut a.release_types, &song.release_types);
        a.compilation |= song.compilation;
        if a.mbid.is_none() {
            a.mbid.clone_from(&song.album_mbid);
        }
        if a.original_date.is_none() {
            a.original_date.clone_from(&song.original_date);
        }
        if let (Some(disc), Some(title)) = (song.disc, &song.disc_subtitle) {
            if !a.disc_titles.iter().any(|(d, _)| *d == disc) {
                a.disc_titles.push((disc, title.clone()));
            }
        }
    }
    a.songs.sort_by(|&x, &y| {
        let (s, t) = (&songs[x], &songs[y]);
        (s.disc.unwrap_or(1), s.track.unwrap_or(i64::MAX), &s.title).cmp(&(
            t.disc.unwrap_or(1),
            t.track.unwrap_or(i64::MAX),
            &t.title,
        ))
    });
    a.disc_titles.sort();
    Some(a)
}

/// The songs of `ids` (entries of `lib`): each id with its song, `None`
/// for an entry that is no song (or is gone).
pub(crate) fn read_songs(
    lib: &Library,
    ids: &[u32],
    roots: &[PathBuf],
    articles: &[String],
) -> Vec<(u32, Option<Song>)> {
    let pref = SourcePref::default();
    let present: Vec<u32> = ids.iter().copied().filter(|&id| lib.contains(id)).collect();
    let rows = lib.fetch_rows(&present, FIELDS, &pref);
    let mut read = present.iter().zip(&rows).map(|(id, cells)| {
        let row = Row {
            lib,
            pref: &pref,
            id: *id,
            cells,
        };
        (*id, read_song(&row, roots, articles))
    });
    let mut next = read.next();
    let mut out = Vec::with_capacity(ids.len());
    for &id in ids {
        match next.take() {
            Some((n, song)) if n == id => {
                out.push((id, song));
                next = read.next();
            }
            other => {
                next = other;
                out.push((id, None));
            }
        }
    }
    out
}
