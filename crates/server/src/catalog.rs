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

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use spindle_query::SourcePref;
use spindle_store::{Library, ValueRef};

use crate::accounts::md5_hex;

/// One playable track.
#[derive(Debug, Clone)]
pub struct Song {
    pub id: u32,
    pub title: String,
    pub artist: String,
    pub album: String,
    pub album_artist: String,
    pub track: Option<i64>,
    pub disc: Option<i64>,
    pub year: Option<i64>,
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
}

#[derive(Debug, Clone)]
pub struct Album {
    pub id: String,
    pub name: String,
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
}

#[derive(Debug, Clone)]
pub struct Artist {
    pub id: String,
    pub name: String,
    /// Indexes into [`Catalog::albums`].
    pub albums: Vec<usize>,
}

/// Songs, albums and artists of one library snapshot.
#[derive(Debug, Default)]
pub struct Catalog {
    pub songs: Vec<Song>,
    pub albums: Vec<Album>,
    /// Sorted by name, caselessly.
    pub artists: Vec<Artist>,
    song_by_id: HashMap<u32, usize>,
    album_by_id: HashMap<String, usize>,
    artist_by_id: HashMap<String, usize>,
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

impl Catalog {
    /// Builds the catalog of every entry whose file lies under one of
    /// `roots` (canonical paths) and is not marked missing.
    pub fn build(lib: &Library, roots: &[PathBuf]) -> Catalog {
        let pref = SourcePref::default();
        let fields = [
            "url",
            "title",
            "artist",
            "album",
            "album_artist",
            "tracknr",
            "partofset",
            "year",
            "genre",
            "duration",
            "bitrate",
            "size",
            "mime",
            "added",
            "timesplayed",
            "status",
            "laststarted",
        ];
        let ids: Vec<u32> = lib.ids().collect();
        let rows = lib.fetch_rows(&ids, &fields, &pref);
        let s = |v: &Option<ValueRef<'_>>| v.map(|v| v.to_string()).unwrap_or_default();
        let i = |v: &Option<ValueRef<'_>>| match v {
            Some(ValueRef::Int(i)) => Some(*i),
            Some(ValueRef::Str(s)) => s.split('/').next().and_then(|x| x.trim().parse().ok()),
            None => None,
        };
        let mut cat = Catalog::default();
        for (id, r) in ids.iter().zip(&rows) {
            if i(&r[15]) == Some(3) {
                continue;
            }
            let Some(file) = spindle_media::scan::url_path(&s(&r[0])) else {
                continue;
            };
            let Some((folder, rel)) = roots
                .iter()
                .enumerate()
                .find_map(|(n, root)| file.strip_prefix(root).ok().map(|rel| (n, rel)))
            else {
                continue;
            };
            let path = rel.to_string_lossy().into_owned();
            let suffix = file
                .extension()
                .map(|e| e.to_string_lossy().to_lowercase())
                .unwrap_or_default();
            let title = match s(&r[1]) {
                t if t.is_empty() => file_stem(&file),
                t => t,
            };
            let artist = match s(&r[2]) {
                a if a.is_empty() => "[Unknown Artist]".to_owned(),
                a => a,
            };
            let album = match s(&r[3]) {
                a if a.is_empty() => "[Unknown Album]".to_owned(),
                a => a,
            };
            let album_artist = match s(&r[4]) {
                a if a.is_empty() => artist.clone(),
                a => a,
            };
            let content_type = match s(&r[12]) {
                m if m.is_empty() => "application/octet-stream".to_owned(),
                m => m,
            };
            cat.songs.push(Song {
                id: *id,
                title,
                album_id: album_id(&album_artist, &album),
                artist_id: artist_id(&album_artist),
                artist,
                album,
                album_artist,
                track: i(&r[5]),
                disc: i(&r[6]),
                year: i(&r[7]),
                genre: Some(s(&r[8])).filter(|g| !g.is_empty()),
                duration: i(&r[9]).map(|ms| (ms + 500) / 1000),
                bitrate: i(&r[10]).map(|b| b / 1000),
                size: i(&r[11]),
                suffix,
                content_type,
                path,
                file,
                added: i(&r[13]).unwrap_or(0),
                play_count: i(&r[14]).unwrap_or(0),
                last_played: i(&r[16]).unwrap_or(0),
                folder,
            });
        }
        // Albums.
        for (n, song) in cat.songs.iter().enumerate() {
            let idx = *cat
                .album_by_id
                .entry(song.album_id.clone())
                .or_insert_with(|| {
                    cat.albums.push(Album {
                        id: song.album_id.clone(),
                        name: song.album.clone(),
                        artist: song.album_artist.clone(),
                        artist_id: song.artist_id.clone(),
                        songs: Vec::new(),
                        year: None,
                        genre: None,
                        created: i64::MAX,
                        duration: 0,
                        play_count: 0,
                        last_played: 0,
                    });
                    cat.albums.len() - 1
                });
            let a = &mut cat.albums[idx];
            a.songs.push(n);
            a.year = a.year.or(song.year);
            a.genre = a.genre.take().or_else(|| song.genre.clone());
            a.created = a.created.min(song.added);
            a.duration += song.duration.unwrap_or(0);
            a.play_count += song.play_count;
            a.last_played = a.last_played.max(song.last_played);
        }
        let songs = &cat.songs;
        for a in &mut cat.albums {
            a.songs.sort_by_key(|&n| {
                let s = &songs[n];
                (
                    s.disc.unwrap_or(1),
                    s.track.unwrap_or(i64::MAX),
                    s.title.clone(),
                )
            });
        }
        // Artists.
        let mut artist_idx: HashMap<String, usize> = HashMap::new();
        let mut artists: Vec<Artist> = Vec::new();
        for (n, al) in cat.albums.iter().enumerate() {
            let idx = *artist_idx.entry(al.artist_id.clone()).or_insert_with(|| {
                artists.push(Artist {
                    id: al.artist_id.clone(),
                    name: al.artist.clone(),
                    albums: Vec::new(),
                });
                artists.len() - 1
            });
            artists[idx].albums.push(n);
        }
        artists.sort_by_key(|a| fold(&a.name));
        for a in &mut artists {
            let albums = &cat.albums;
            a.albums
                .sort_by_key(|&n| (albums[n].year.unwrap_or(0), fold(&albums[n].name)));
        }
        cat.artists = artists;
        cat.song_by_id = cat
            .songs
            .iter()
            .enumerate()
            .map(|(n, s)| (s.id, n))
            .collect();
        cat.artist_by_id = cat
            .artists
            .iter()
            .enumerate()
            .map(|(n, a)| (a.id.clone(), n))
            .collect();
        cat
    }

    /// A song by its id as a client sends it (decimal entry id); anything
    /// else is no song.
    pub fn song(&self, id: &str) -> Option<&Song> {
        if id.is_empty() || id.len() > 10 || !id.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let n: u32 = id.parse().ok()?;
        self.song_by_id.get(&n).map(|&i| &self.songs[i])
    }

    /// Index into [`Catalog::songs`] of an entry id.
    pub fn song_index(&self, id: u32) -> Option<usize> {
        self.song_by_id.get(&id).copied()
    }

    pub fn album_index(&self, id: &str) -> Option<usize> {
        self.album_by_id.get(id).copied()
    }

    pub fn artist_index(&self, id: &str) -> Option<usize> {
        self.artist_by_id.get(id).copied()
    }

    pub fn song_by_entry(&self, id: u32) -> Option<&Song> {
        self.song_by_id.get(&id).map(|&i| &self.songs[i])
    }

    pub fn album(&self, id: &str) -> Option<&Album> {
        self.album_by_id.get(id).map(|&i| &self.albums[i])
    }

    pub fn artist(&self, id: &str) -> Option<&Artist> {
        self.artist_by_id.get(id).map(|&i| &self.artists[i])
    }
}

fn file_stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}
