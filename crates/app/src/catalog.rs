//! The library as browsing clients see it: songs (library entries with a
//! file under a music folder), albums and artists.
//!
//! The library has only entries; albums and artists are derived. An album
//! is the cluster of songs with the same (album artist, album) compared
//! caselessly — the album artist falling back to the first artist — and
//! an artist is the cluster of albums with the same album artist. Their ids
//! are stable hashes of those names (`al-…`, `ar-…`), so they survive
//! restarts and rescans as long as the tags do. A song's id is its entry
//! id in decimal.
//!
//! Keys holding several values (`artist`, `album_artist`, `genre`, `mood`,
//! `label`, …; see `docs/tags.md`) stay several values here: a song has
//! every artist and genre, and the first is what the single-valued
//! Subsonic fields (`artist`, `genre`) show. A song whose album artists
//! include several names belongs to the album of the first one, and the
//! album is listed under each of them. A compilation (the `compilation`
//! flag, or the album artist "Various Artists") without an album artist
//! gets "Various Artists", so its songs by many artists stay one album.
//! Artists who only appear on songs (not as an album artist) can still be
//! looked up by id ([`Catalog::artist`]) and hold the albums they appear
//! on. Sort names come from the sort tags, else from the name without a
//! leading article ([`CatalogOptions::ignored_articles`]).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use spindle_query::SourcePref;
use spindle_store::{Library, ValueRef};

use crate::accounts::md5_hex;

mod batches;
mod build;
#[cfg(test)]
mod gen;
#[cfg(test)]
mod measure;
pub mod saved;
mod update;

pub use batches::{read_in_batches, Read, BATCH};
pub(crate) use build::{album_of, read_songs};

/// The album artist of compilations that name none, and the name that
/// marks an album as a compilation.
pub const VARIOUS_ARTISTS: &str = "Various Artists";

/// The leading words a sort name leaves out by default ("The Beatles"
/// sorts as "Beatles"); the server's `ignored_articles` setting sets
/// others.
pub const DEFAULT_IGNORED_ARTICLES: &[&str] = &[
    "The", "A", "An", "El", "La", "Las", "Le", "Les", "Los", "Die", "Das", "Der",
];

/// How the catalog is built.
#[derive(Debug, Clone)]
pub struct CatalogOptions {
    /// Leading words left out of sort names (compared caselessly,
    /// followed by a space).
    pub ignored_articles: Vec<String>,
}

impl Default for CatalogOptions {
    fn default() -> Self {
        CatalogOptions {
            ignored_articles: DEFAULT_IGNORED_ARTICLES
                .iter()
                .map(|a| (*a).to_owned())
                .collect(),
        }
    }
}

/// ReplayGain of a song: gains in dB, peaks linear (1.0 is full scale).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReplayGain {
    pub track_gain: Option<f64>,
    pub album_gain: Option<f64>,
    pub track_peak: Option<f64>,
    pub album_peak: Option<f64>,
}

/// One playable track.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Song {
    pub id: u32,
    pub title: String,
    /// The first artist.
    pub artist: String,
    pub album: String,
    /// The first album artist (else the first artist, or
    /// [`VARIOUS_ARTISTS`] for a compilation); names the album.
    pub album_artist: String,
    pub track: Option<i64>,
    pub disc: Option<i64>,
    pub year: Option<i64>,
    /// The first genre.
    pub genre: Option<String>,
    /// Seconds.
    pub duration: Option<i64>,
    /// kbit/s.
    pub bitrate: Option<i64>,
    pub size: Option<i64>,
    pub suffix: String,
    pub content_type: String,
    /// Path relative to its music folder.
    pub path: String,
    /// The file, absolute.
    pub file: PathBuf,
    /// When it was added, UNIX seconds.
    pub added: i64,
    pub play_count: i64,
    /// When it last started playing, UNIX seconds (0: never).
    pub last_played: i64,
    pub album_id: String,
    pub artist_id: String,
    /// Index into the music folders.
    pub folder: usize,
    /// Every artist, in tag order (at least [`Song::artist`]).
    pub artists: Vec<String>,
    /// The artist credit as shown: the tag's own text, else the artists
    /// joined.
    pub display_artist: String,
    /// Every album artist (at least [`Song::album_artist`]).
    pub album_artists: Vec<String>,
    pub display_album_artist: String,
    /// Every genre, in tag order.
    pub genres: Vec<String>,
    pub composers: Vec<String>,
    pub moods: Vec<String>,
    /// Record labels.
    pub labels: Vec<String>,
    pub isrc: Vec<String>,
    /// MusicBrainz release types (`album`, `compilation`, …).
    pub release_types: Vec<String>,
    pub replay_gain: ReplayGain,
    /// Whether the song is part of a compilation.
    pub compilation: bool,
    /// The title to sort by.
    pub sort_title: String,
    /// The artist to sort by, from the tags.
    pub sort_artist: Option<String>,
    /// The album to sort by, from the tags.
    pub sort_album: Option<String>,
    /// The album artist to sort by, from the tags.
    pub sort_album_artist: Option<String>,
    /// MusicBrainz recording id.
    pub mbid: Option<String>,
    /// MusicBrainz release id.
    pub album_mbid: Option<String>,
    /// MusicBrainz artist ids, in the order of [`Song::artists`].
    pub artist_mbids: Vec<String>,
    /// MusicBrainz album artist ids, in the order of
    /// [`Song::album_artists`].
    pub album_artist_mbids: Vec<String>,
    pub bit_depth: Option<i64>,
    /// Hz.
    pub sample_rate: Option<i64>,
    pub channels: Option<i64>,
    /// `YYYY`, `YYYY-MM` or `YYYY-MM-DD` as tagged.
    pub original_date: Option<String>,
    /// The title of the song's disc.
    pub disc_subtitle: Option<String>,
    pub bpm: Option<i64>,
    pub comment: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Album {
    pub id: String,
    pub name: String,
    /// The album artist as shown.
    pub artist: String,
    pub artist_id: String,
    /// Indexes into [`Catalog::songs`], by disc and track.
    pub songs: Vec<usize>,
    pub year: Option<i64>,
    pub genre: Option<String>,
    pub created: i64,
    pub duration: i64,
    pub play_count: i64,
    pub last_played: i64,
    /// Every album artist.
    pub artists: Vec<String>,
    /// Every genre of its songs, in order of appearance.
    pub genres: Vec<String>,
    pub moods: Vec<String>,
    pub labels: Vec<String>,
    pub release_types: Vec<String>,
    pub compilation: bool,
    pub sort_name: String,
    /// MusicBrainz release id.
    pub mbid: Option<String>,
    pub original_date: Option<String>,
    /// (disc number, disc title), by disc.
    pub disc_titles: Vec<(i64, String)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Artist {
    pub id: String,
    pub name: String,
    /// Indexes into [`Catalog::albums`].
    pub albums: Vec<usize>,
    pub sort_name: String,
    /// MusicBrainz artist id.
    pub mbid: Option<String>,
}

/// Songs, albums and artists of one library snapshot.
#[derive(Debug, Default, PartialEq)]
pub struct Catalog {
    /// Shared between a catalog and the next one made from it.
    pub songs: Vec<Arc<Song>>,
    pub albums: Vec<Album>,
    /// Album artists, by sort name caselessly.
    pub artists: Vec<Artist>,
    /// Artists found only on songs, not as an album artist; their albums
    /// are the albums they appear on.
    pub song_artists: Vec<Artist>,
    /// The leading words left out of sort names.
    pub ignored_articles: Vec<String>,
    album_by_id: HashMap<String, usize>,
    artist_by_id: HashMap<String, usize>,
    song_artist_by_id: HashMap<String, usize>,
}

fn fold(s: &str) -> String {
    s.to_lowercase()
}

/// The stable id of an artist name.
pub fn artist_id(name: &str) -> String {
    format!("ar-{}", &md5_hex(fold(name).as_bytes())[..16])
}

/// The stable id of an album.
pub fn album_id(artist: &str, album: &str) -> String {
    format!(
        "al-{}",
        &md5_hex(format!("{}\0{}", fold(artist), fold(album)).as_bytes())[..16]
    )
}

/// `name` without a leading article of `articles` (caselessly, followed by
/// a space); `name` itself when it has none or is nothing but one.
pub fn sort_name<'a>(name: &'a str, articles: &[String]) -> &'a str {
    for a in articles {
        let Some(head) = name.get(..a.len()) else {
            continue;
        };
        if head.eq_ignore_ascii_case(a) || head.to_lowercase() == a.to_lowercase() {
            let rest = &name[a.len()..];
            if rest.starts_with(' ') && !rest.trim().is_empty() {
                return rest.trim_start();
            }
        }
    }
    name
}

/// (year, month, day) of a tagged date `YYYY`, `YYYY-MM`, `YYYY-MM-DD`
/// (also with `/` or `.`, or a time after the day); `None` without a
/// plausible year.
pub fn date_parts(s: &str) -> Option<(i64, Option<i64>, Option<i64>)> {
    let mut parts = s.trim().split(['-', '/', '.', 'T', ' ']);
    let year: i64 = parts.next()?.parse().ok()?;
    if !(1..=9999).contains(&year) {
        return None;
    }
    let month = parts
        .next()
        .and_then(|m| m.parse().ok())
        .filter(|m| (1..=12).contains(m));
    let day = month.and_then(|_| {
        parts
            .next()
            .and_then(|d| d.parse().ok())
            .filter(|d| (1..=31).contains(d))
    });
    Some((year, month, day))
}

/// The fields read for every song: `F::X` is the column of key "x".
macro_rules! fields {
    ($($name:ident = $key:literal),* $(,)?) => {
        const FIELDS: &[&str] = &[$($key),*];
        #[derive(Debug, Clone, Copy)]
        enum F { $($name),* }
    };
}

fields! {
    Url = "url",
    Title = "title",
    Artist = "artist",
    Album = "album",
    AlbumArtist = "album_artist",
    Tracknr = "tracknr",
    Partofset = "partofset",
    Year = "year",
    Genre = "genre",
    Duration = "duration",
    Bitrate = "bitrate",
    Size = "size",
    Mime = "mime",
    Added = "added",
    Timesplayed = "timesplayed",
    Status = "status",
    Laststarted = "laststarted",
    Displayartist = "displayartist",
    Displayalbumartist = "displayalbumartist",
    ReplaygainTrackGain = "replaygain_track_gain",
    ReplaygainAlbumGain = "replaygain_album_gain",
    ReplaygainTrackPeak = "replaygain_track_peak",
    ReplaygainAlbumPeak = "replaygain_album_peak",
    Compilation = "compilation",
    Titlesort = "titlesort",
    Artistsort = "artistsort",
    Albumsort = "albumsort",
    Albumartistsort = "albumartistsort",
    MusicbrainzTrackid = "musicbrainz_trackid",
    MusicbrainzAlbumid = "musicbrainz_albumid",
    Bitdepth = "bitdepth",
    Samplerate = "samplerate",
    Channels = "channels",
    Originaldate = "originaldate",
    Discsubtitle = "discsubtitle",
    Bpm = "bpm",
    Comment = "comment",
    Composer = "composer",
    Mood = "mood",
    Label = "label",
    Isrc = "isrc",
    Releasetype = "releasetype",
    MusicbrainzArtistid = "musicbrainz_artistid",
    MusicbrainzAlbumArtistid = "musicbrainz_album_artistid",
}

/// A row of a song's fields, with every value of a multi-valued key read
/// when its first is there.
struct Row<'l, 'r> {
    lib: &'l Library,
    pref: &'r SourcePref,
    id: u32,
    cells: &'r [Option<ValueRef<'l>>],
}

impl Row<'_, '_> {
    fn cell(&self, f: F) -> Option<&ValueRef<'_>> {
        self.cells.get(f as usize).and_then(Option::as_ref)
    }
    fn s(&self, f: F) -> Option<String> {
        self.cell(f)
            .map(|v| v.to_string())
            .filter(|v| !v.trim().is_empty())
    }
    fn i(&self, f: F) -> Option<i64> {
        match self.cell(f)? {
            ValueRef::Int(i) => Some(*i),
            ValueRef::Str(s) => s.split('/').next().and_then(|x| x.trim().parse().ok()),
        }
    }
    fn f(&self, f: F) -> Option<f64> {
        match self.cell(f)? {
            ValueRef::Int(i) => Some(*i as f64),
            ValueRef::Str(s) => s.trim().parse().ok().filter(|f: &f64| f.is_finite()),
        }
    }
    /// Every value of a multi-valued key (none when the first is absent,
    /// without reading the entry again).
    fn all(&self, f: F) -> Vec<String> {
        if self.cell(f).is_none() {
            return Vec::new();
        }
        let mut out: Vec<String> = Vec::new();
        for v in self.lib.get(self.id, FIELDS[f as usize], self.pref) {
            let v = v.to_string();
            if !v.trim().is_empty() && !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }
}

/// Adds the values of `from` missing in `to`, in order.
fn union(to: &mut Vec<String>, from: &[String]) {
    for v in from {
        if !to.iter().any(|x| x.eq_ignore_ascii_case(v)) {
            to.push(v.clone());
        }
    }
}

impl Catalog {
    /// Builds the catalog of every entry whose file lies under one of
    /// `roots` (canonical paths) and is not marked missing, with the
    /// default options.
    pub fn build(lib: &Library, roots: &[PathBuf]) -> Catalog {
        Catalog::build_with(lib, roots, &CatalogOptions::default())
    }

    /// [`Catalog::build`] with `opts`.
    pub fn build_with(lib: &Library, roots: &[PathBuf], opts: &CatalogOptions) -> Catalog {
        let ids: Vec<u32> = lib.ids().collect();
        let songs = read_songs(lib, &ids, roots, &opts.ignored_articles)
            .into_iter()
            .filter_map(|(_, s)| s)
            .collect();
        Catalog::from_songs(songs, opts.ignored_articles.clone())
    }

    /// The catalog of `songs` (ascending by id): their albums and
    /// artists.
    pub(crate) fn from_songs(songs: Vec<Song>, ignored_articles: Vec<String>) -> Catalog {
        let mut cat = Catalog {
            songs: songs.into_iter().map(Arc::new).collect(),
            ignored_articles,
            ..Catalog::default()
        };
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut group_of: HashMap<&str, usize> = HashMap::new();
        for (n, song) in cat.songs.iter().enumerate() {
            let g = *group_of.entry(song.album_id.as_str()).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[g].push(n);
        }
        let albums = groups
            .iter()
            .filter_map(|members| album_of(&cat.songs, members, &cat.ignored_articles))
            .collect();
        cat.albums = albums;
        cat.finish();
        cat
    }

    /// The lookups and the artists, once the songs and albums (in the
    /// order of their first song) are there.
    pub(crate) fn finish(&mut self) {
        self.album_by_id = self
            .albums
            .iter()
            .enumerate()
            .map(|(n, a)| (a.id.clone(), n))
            .collect();
        self.cluster_artists();
    }

    /// Album artists from the albums (an album with several is listed
    /// under each), then the artists found only on songs.
    fn cluster_artists(&mut self) {
        let articles = &self.ignored_articles;
        let mut artists: Vec<Artist> = Vec::new();
        let mut artist_idx: HashMap<String, usize> = HashMap::new();
        for (n, al) in self.albums.iter().enumerate() {
            let first = &self.songs[al.songs[0]];
            let names: Vec<&String> = if al.artists.is_empty() {
                vec![&first.album_artist]
            } else {
                al.artists.iter().collect()
            };
            for (k, name) in names.into_iter().enumerate() {
                let id = if k == 0 {
                    al.artist_id.clone()
                } else {
                    artist_id(name)
                };
                let idx = *artist_idx.entry(id.clone()).or_insert_with(|| {
                    let sort = match (&first.sort_album_artist, k) {
                        (Some(s), 0) => s.clone(),
                        _ => sort_name(name, articles).to_owned(),
                    };
                    artists.push(Artist {
                        id,
                        name: name.clone(),
                        albums: Vec::new(),
                        sort_name: sort,
                        mbid: None,
                    });
                    artists.len() - 1
                });
                let a = &mut artists[idx];
                if !a.albums.contains(&n) {
                    a.albums.push(n);
                }
                if a.mbid.is_none() && first.album_artist_mbids.len() == al.artists.len() {
                    a.mbid = first.album_artist_mbids.get(k).cloned();
                }
            }
        }
        artists.sort_by_key(|a| fold(&a.sort_name));
        let albums = &self.albums;
        for a in &mut artists {
            a.albums
                .sort_by_key(|&n| (albums[n].year.unwrap_or(0), fold(&albums[n].name)));
        }
        self.artist_by_id = artists
            .iter()
            .enumerate()
            .map(|(n, a)| (a.id.clone(), n))
            .collect();
        self.artists = artists;

        // Artists only on songs.
        let mut others: Vec<Artist> = Vec::new();
        let mut other_idx: HashMap<String, usize> = HashMap::new();
        let mut seen: HashSet<(usize, usize)> = HashSet::new();
        // An artist's id is a hash: one per name, not per song.
        let mut ids: HashMap<&str, Option<String>> = HashMap::new();
        for (n, al) in self.albums.iter().enumerate() {
            for &s in &al.songs {
                let song = &self.songs[s];
                for (k, name) in song.artists.iter().enumerate() {
                    let Some(id) = ids
                        .entry(name.as_str())
                        .or_insert_with(|| {
                            Some(artist_id(name)).filter(|id| !self.artist_by_id.contains_key(id))
                        })
                        .clone()
                    else {
                        continue;
                    };
                    let idx = *other_idx.entry(id.clone()).or_insert_with(|| {
                        let sort = match (&song.sort_artist, k) {
                            (Some(s), 0) if song.artists.len() == 1 => s.clone(),
                            _ => sort_name(name, articles).to_owned(),
                        };
                        others.push(Artist {
                            id,
                            name: name.clone(),
                            albums: Vec::new(),
                            sort_name: sort,
                            mbid: None,
                        });
                        others.len() - 1
                    });
                    if seen.insert((idx, n)) {
                        others[idx].albums.push(n);
                    }
                    if others[idx].mbid.is_none() && song.artist_mbids.len() == song.artists.len() {
                        others[idx].mbid = song.artist_mbids.get(k).cloned();
                    }
                }
            }
        }
        self.song_artist_by_id = others
            .iter()
            .enumerate()
            .map(|(n, a)| (a.id.clone(), n))
            .collect();
        self.song_artists = others;
    }

    /// A song by its id as a client sends it (decimal entry id); anything
    /// else is no song.
    pub fn song(&self, id: &str) -> Option<&Song> {
        if id.is_empty() || id.len() > 10 || !id.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let n: u32 = id.parse().ok()?;
        self.song_by_entry(n)
    }

    /// Index into [`Catalog::songs`] of an entry id.
    pub fn song_index(&self, id: u32) -> Option<usize> {
        // Songs are in entry id order.
        self.songs.binary_search_by_key(&id, |s| s.id).ok()
    }

    pub fn album_index(&self, id: &str) -> Option<usize> {
        self.album_by_id.get(id).copied()
    }

    pub fn artist_index(&self, id: &str) -> Option<usize> {
        self.artist_by_id.get(id).copied()
    }

    pub fn song_by_entry(&self, id: u32) -> Option<&Song> {
        self.song_index(id).map(|i| &*self.songs[i])
    }

    pub fn album(&self, id: &str) -> Option<&Album> {
        self.album_by_id.get(id).map(|&i| &self.albums[i])
    }

    /// An album artist by id, else an artist found only on songs.
    pub fn artist(&self, id: &str) -> Option<&Artist> {
        self.artist_by_id
            .get(id)
            .map(|&i| &self.artists[i])
            .or_else(|| {
                self.song_artist_by_id
                    .get(id)
                    .map(|&i| &self.song_artists[i])
            })
    }
}

/// A song from its row; `None` when it is missing or not under a root.
fn read_song(r: &Row<'_, '_>, roots: &[PathBuf], articles: &[String]) -> Option<Song> {
    if r.i(F::Status) == Some(3) {
        return None;
    }
    let file = spindle_media::scan::url_path(&r.s(F::Url)?)?;
    let (folder, rel) = roots
        .iter()
        .enumerate()
        .find_map(|(n, root)| file.strip_prefix(root).ok().map(|rel| (n, rel)))?;
    let path = rel.to_string_lossy().into_owned();
    let suffix = file
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let title = r.s(F::Title).unwrap_or_else(|| file_stem(&file));
    let mut artists = r.all(F::Artist);
    if artists.is_empty() {
        artists.push("[Unknown Artist]".to_owned());
    }
    let artist = artists[0].clone();
    let album = r
        .s(F::Album)
        .unwrap_or_else(|| "[Unknown Album]".to_owned());
    let flagged = r.i(F::Compilation) == Some(1);
    let mut album_artists = r.all(F::AlbumArtist);
    let compilation = flagged
        || album_artists
            .iter()
            .any(|a| a.eq_ignore_ascii_case(VARIOUS_ARTISTS));
    let display_album_artist = r.s(F::Displayalbumartist);
    if album_artists.is_empty() {
        album_artists.push(if compilation {
            VARIOUS_ARTISTS.to_owned()
        } else {
            artist.clone()
        });
    }
    let album_artist = album_artists[0].clone();
    let content_type = r
        .s(F::Mime)
        .unwrap_or_else(|| "application/octet-stream".to_owned());
    let genres = r.all(F::Genre);
    let sort_title = r
        .s(F::Titlesort)
        .unwrap_or_else(|| sort_name(&title, articles).to_owned());
    Some(Song {
        id: r.id,
        album_id: album_id(&album_artist, &album),
        artist_id: artist_id(&album_artist),
        display_artist: r.s(F::Displayartist).unwrap_or_else(|| artists.join(", ")),
        display_album_artist: display_album_artist.unwrap_or_else(|| album_artists.join(", ")),
        title,
        artist,
        album,
        album_artist,
        track: r.i(F::Tracknr),
        disc: r.i(F::Partofset),
        year: r.i(F::Year),
        genre: genres.first().cloned(),
        duration: r.i(F::Duration).map(|ms| (ms + 500) / 1000),
        bitrate: r.i(F::Bitrate).map(|b| b / 1000),
        size: r.i(F::Size),
        suffix,
        content_type,
        path,
        file,
        added: r.i(F::Added).unwrap_or(0),
        play_count: r.i(F::Timesplayed).unwrap_or(0),
        last_played: r.i(F::Laststarted).unwrap_or(0),
        folder,
        artists,
        album_artists,
        genres,
        composers: r.all(F::Composer),
        moods: r.all(F::Mood),
        labels: r.all(F::Label),
        isrc: r.all(F::Isrc),
        release_types: r.all(F::Releasetype),
        replay_gain: ReplayGain {
            track_gain: r.f(F::ReplaygainTrackGain),
            album_gain: r.f(F::ReplaygainAlbumGain),
            track_peak: r.f(F::ReplaygainTrackPeak),
            album_peak: r.f(F::ReplaygainAlbumPeak),
        },
        compilation,
        sort_title,
        sort_artist: r.s(F::Artistsort),
        sort_album: r.s(F::Albumsort),
        sort_album_artist: r.s(F::Albumartistsort),
        mbid: r.s(F::MusicbrainzTrackid),
        album_mbid: r.s(F::MusicbrainzAlbumid),
        artist_mbids: r.all(F::MusicbrainzArtistid),
        album_artist_mbids: r.all(F::MusicbrainzAlbumArtistid),
        bit_depth: r.i(F::Bitdepth),
        sample_rate: r.i(F::Samplerate),
        channels: r.i(F::Channels),
        original_date: r.s(F::Originaldate),
        disc_subtitle: r.s(F::Discsubtitle),
        bpm: r.i(F::Bpm),
        comment: r.s(F::Comment),
    })
}

fn file_stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testlib::library_of;
    use spindle_query::Value;

    /// A catalog of entries given as (path below /music, [(key, value)]),
    /// every tag from `plugin/vorbis`.
    fn catalog(entries: &[(&str, &[(&str, &str)])]) -> Catalog {
        let (_dir, db) = library_of(entries.iter().map(|(path, props)| {
            let url = Value::Str(format!("file:///music/{path}"));
            let tags = props.iter().map(|&(k, v)| {
                let value = match v.parse::<i64>() {
                    Ok(i) if !k.starts_with("replaygain") => Value::Int(i),
                    _ => Value::Str(v.into()),
                };
                (k, "plugin/vorbis", value)
            });
            std::iter::once(("url", "plugin/scan", url))
                .chain(tags)
                .collect()
        }));
        let lib = db.read();
        Catalog::build(&lib, &[PathBuf::from("/music")])
    }

    #[test]
    fn several_artists_and_genres_stay_several_values() {
        let cat = catalog(&[(
            "a.flac",
            &[
                ("title", "Duet"),
                ("artist", "Ann"),
                ("artist", "Bob"),
                ("genre", "Rock"),
                ("genre", "Jazz"),
                ("album", "Both"),
                ("mood", "Calm"),
                ("label", "Label One"),
            ],
        )]);
        let s = &cat.songs[0];
        assert_eq!(s.artists, ["Ann", "Bob"]);
        assert_eq!(s.artist, "Ann");
        assert_eq!(s.display_artist, "Ann, Bob");
        assert_eq!(s.genres, ["Rock", "Jazz"]);
        assert_eq!(s.genre.as_deref(), Some("Rock"));
        let a = &cat.albums[0];
        assert_eq!(
            (a.genres.clone(), a.moods.clone()),
            (
                vec!["Rock".to_owned(), "Jazz".into()],
                vec!["Calm".to_owned()]
            )
        );
        assert_eq!(a.labels, ["Label One"]);
        // Bob is on no album as album artist, yet can be looked up.
        let bob = cat.artist(&artist_id("Bob")).unwrap();
        assert_eq!((bob.name.as_str(), bob.albums.len()), ("Bob", 1));
        assert!(cat.artists.iter().all(|a| a.name != "Bob"));
    }

    #[test]
    fn a_flagged_compilation_without_album_artist_stays_one_album() {
        let cat = catalog(&[
            (
                "c/1.flac",
                &[
                    ("title", "One"),
                    ("artist", "Ann"),
                    ("album", "Hits"),
                    ("compilation", "1"),
                ],
            ),
            (
                "c/2.flac",
                &[
                    ("title", "Two"),
                    ("artist", "Bob"),
                    ("album", "Hits"),
                    ("compilation", "1"),
                ],
            ),
            (
                "d/1.flac",
                &[("title", "Solo"), ("artist", "Cy"), ("album", "Alone")],
            ),
        ]);
        let hits: Vec<&Album> = cat.albums.iter().filter(|a| a.name == "Hits").collect();
        assert_eq!(hits.len(), 1);
        assert!(hits[0].compilation);
        assert_eq!(hits[0].artist, VARIOUS_ARTISTS);
        assert_eq!(hits[0].songs.len(), 2);
        let alone = cat.albums.iter().find(|a| a.name == "Alone").unwrap();
        assert!(!alone.compilation);
    }

    #[test]
    fn various_artists_as_album_artist_marks_a_compilation() {
        let cat = catalog(&[(
            "v.flac",
            &[
                ("title", "X"),
                ("artist", "Ann"),
                ("album", "Mix"),
                ("album_artist", "various artists"),
            ],
        )]);
        assert!(cat.songs[0].compilation);
        assert!(cat.albums[0].compilation);
    }

    #[test]
    fn sort_names_skip_articles_unless_a_sort_tag_says_otherwise() {
        let cat = catalog(&[
            (
                "1.flac",
                &[
                    ("title", "The End"),
                    ("artist", "The Beatles"),
                    ("album", "Abbey Road"),
                ],
            ),
            (
                "2.flac",
                &[("title", "A"), ("artist", "Abba"), ("album", "Gold")],
            ),
            (
                "3.flac",
                &[
                    ("title", "Song"),
                    ("artist", "The The"),
                    ("album", "Soul Mining"),
                    ("albumartistsort", "The, The"),
                ],
            ),
        ]);
        let names: Vec<(&str, &str)> = cat
            .artists
            .iter()
            .map(|a| (a.name.as_str(), a.sort_name.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("Abba", "Abba"),
                ("The Beatles", "Beatles"),
                ("The The", "The, The")
            ]
        );
        assert_eq!(cat.songs[0].sort_title, "End");
        // A title that is only an article keeps it.
        assert_eq!(cat.songs[1].sort_title, "A");
        let opts = CatalogOptions {
            ignored_articles: vec!["Die".into()],
        };
        assert_eq!(sort_name("Die Ärzte", &opts.ignored_articles), "Ärzte");
        assert_eq!(sort_name("The Cure", &opts.ignored_articles), "The Cure");
    }

    #[test]
    fn replay_gain_and_audio_facts_are_numbers() {
        let cat = catalog(&[(
            "r.flac",
            &[
                ("title", "Loud"),
                ("replaygain_track_gain", "-6.48"),
                ("replaygain_album_peak", "0.988556"),
                ("bitdepth", "24"),
                ("samplerate", "96000"),
                ("channels", "2"),
                ("originaldate", "1999-05-04"),
                ("partofset", "2"),
                ("discsubtitle", "Live"),
            ],
        )]);
        let s = &cat.songs[0];
        assert_eq!(s.replay_gain.track_gain, Some(-6.48));
        assert_eq!(s.replay_gain.album_peak, Some(0.988556));
        assert_eq!(s.replay_gain.album_gain, None);
        assert_eq!(
            (s.bit_depth, s.sample_rate, s.channels),
            (Some(24), Some(96000), Some(2))
        );
        assert_eq!(cat.albums[0].disc_titles, [(2, "Live".to_owned())]);
        assert_eq!(cat.albums[0].original_date.as_deref(), Some("1999-05-04"));
    }

    #[test]
    fn dates_split_into_year_month_and_day() {
        for (s, parts) in [
            ("1999-05-04", Some((1999, Some(5), Some(4)))),
            ("1999-05", Some((1999, Some(5), None))),
            ("1999", Some((1999, None, None))),
            ("2001-13-01", Some((2001, None, None))),
            ("2001-02-03T10:00:00", Some((2001, Some(2), Some(3)))),
            ("someday", None),
        ] {
            assert_eq!(date_parts(s), parts, "{s:?}");
        }
    }
}
