//! The catalog saved at a stop, so that the next start serves it at once
//! instead of reading every entry of the library (`docs/catalog.md` has
//! the format byte by byte). Only the songs are saved: the albums and
//! artists are made from them on loading, as a build makes them.
//!
//! A saved catalog names the library position it is of; it is loaded
//! only when the library opens at that position, over the same music
//! folders with the same sort-name articles, and only when its digest
//! matches. Anything else (stale, damaged, of another version) is
//! ignored, and the catalog is built from the library.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use md5::{Digest, Md5};
use spindle_store::Position;

use super::{Catalog, ReplayGain, Song};

/// The saved catalog's file name, in the server's data directory.
pub const CATALOG_FILE: &str = "catalog.cache";

const MAGIC: &[u8; 8] = b"SPNDCAT\0";
const VERSION: u32 = 1;
const DIGEST: usize = 16;

/// What a saved catalog is of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedOf {
    pub generation: u64,
    pub seq: u64,
    pub entries: u64,
    pub properties: u64,
    pub roots: Vec<PathBuf>,
    pub articles: Vec<String>,
}

impl SavedOf {
    pub fn new(at: &Position, roots: &[PathBuf], articles: &[String]) -> SavedOf {
        SavedOf {
            generation: at.generation,
            seq: at.seq,
            entries: at.entries as u64,
            properties: at.properties as u64,
            roots: roots.to_vec(),
            articles: articles.to_vec(),
        }
    }
}

/// The bytes of `cat` saved as of `of`.
pub fn encode(cat: &Catalog, of: &SavedOf) -> Vec<u8> {
    let mut w = Vec::with_capacity(64 + cat.songs.len() * 256);
    w.extend_from_slice(MAGIC);
    w.extend_from_slice(&VERSION.to_le_bytes());
    for n in [of.generation, of.seq, of.entries, of.properties] {
        w.extend_from_slice(&n.to_le_bytes());
    }
    u32w(&mut w, of.roots.len());
    for r in &of.roots {
        bytes(&mut w, r.as_os_str().as_bytes());
    }
    strs(&mut w, &of.articles);
    w.extend_from_slice(&(cat.songs.len() as u64).to_le_bytes());
    for s in &cat.songs {
        song(&mut w, s);
    }
    let digest = Md5::digest(&w);
    w.extend_from_slice(&digest);
    w
}

/// The songs of saved `bytes`, if they are a whole saved catalog of
/// `of`; `None` for anything else.
pub fn decode(bytes: &[u8], of: &SavedOf) -> Option<Vec<Song>> {
    let body = bytes.get(..bytes.len().checked_sub(DIGEST)?)?;
    if Md5::digest(body).as_slice() != &bytes[body.len()..] {
        return None;
    }
    let mut r = Reader(body);
    if r.take(8)? != MAGIC || r.u32()? != VERSION {
        return None;
    }
    let (generation, seq, entries, properties) = (r.u64()?, r.u64()?, r.u64()?, r.u64()?);
    let mut roots = Vec::new();
    for _ in 0..r.u32()? {
        roots.push(PathBuf::from(OsString::from_vec(r.take_len()?.to_vec())));
    }
    let saved = SavedOf {
        generation,
        seq,
        entries,
        properties,
        roots,
        articles: r.strs()?,
    };
    if &saved != of {
        return None;
    }
    let n = r.u64()?;
    // Each song takes well over a byte: a count larger than what is left
    // is damage.
    if n > r.0.len() as u64 {
        return None;
    }
    let mut songs = Vec::with_capacity(n as usize);
    for _ in 0..n {
        songs.push(r.song()?);
    }
    r.0.is_empty().then_some(songs)
}

/// Writes `bytes` to `path` (readable by the owner only: it names every
/// file and tag) through a temporary file and a rename, so a crash
/// leaves the old file or the new one.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(bytes)?;
    std::fs::rename(&tmp, path)
}

fn u32w(w: &mut Vec<u8>, n: usize) {
    w.extend_from_slice(&(n as u32).to_le_bytes());
}

fn bytes(w: &mut Vec<u8>, b: &[u8]) {
    u32w(w, b.len());
    w.extend_from_slice(b);
}

fn strs(w: &mut Vec<u8>, v: &[String]) {
    u32w(w, v.len());
    for s in v {
        bytes(w, s.as_bytes());
    }
}

fn opt_str(w: &mut Vec<u8>, v: &Option<String>) {
    match v {
        None => w.push(0),
        Some(s) => {
            w.push(1);
            bytes(w, s.as_bytes());
        }
    }
}

fn opt_i64(w: &mut Vec<u8>, v: Option<i64>) {
    match v {
        None => w.push(0),
        Some(n) => {
            w.push(1);
            w.extend_from_slice(&n.to_le_bytes());
        }
    }
}

fn opt_f64(w: &mut Vec<u8>, v: Option<f64>) {
    opt_i64(w, v.map(|f| f.to_bits() as i64));
}

fn song(w: &mut Vec<u8>, s: &Song) {
    w.extend_from_slice(&s.id.to_le_bytes());
    for t in [
        &s.title,
        &s.artist,
        &s.album,
        &s.album_artist,
        &s.suffix,
        &s.content_type,
        &s.path,
        &s.album_id,
        &s.artist_id,
        &s.display_artist,
        &s.display_album_artist,
        &s.sort_title,
    ] {
        bytes(w, t.as_bytes());
    }
    bytes(w, s.file.as_os_str().as_bytes());
    for n in [s.track, s.disc, s.year, s.duration, s.bitrate, s.size] {
        opt_i64(w, n);
    }
    for n in [s.added, s.play_count, s.last_played] {
        w.extend_from_slice(&n.to_le_bytes());
    }
    u32w(w, s.folder);
    for v in [
        &s.artists,
        &s.album_artists,
        &s.genres,
        &s.composers,
        &s.moods,
        &s.labels,
        &s.isrc,
        &s.release_types,
        &s.artist_mbids,
        &s.album_artist_mbids,
    ] {
        strs(w, v);
    }
    let g = &s.replay_gain;
    for f in [g.track_gain, g.album_gain, g.track_peak, g.album_peak] {
        opt_f64(w, f);
    }
    w.push(u8::from(s.compilation));
    for o in [
        &s.genre,
        &s.sort_artist,
        &s.sort_album,
        &s.sort_album_artist,
        &s.mbid,
        &s.album_mbid,
        &s.original_date,
        &s.disc_subtitle,
        &s.comment,
    ] {
        opt_str(w, o);
    }
    for n in [s.bit_depth, s.sample_rate, s.channels, s.bpm] {
        opt_i64(w, n);
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn i64(&mut self) -> Option<i64> {
        Some(self.u64()? as i64)
    }
    fn take_len(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn str(&mut self) -> Option<String> {
        String::from_utf8(self.take_len()?.to_vec()).ok()
    }
    fn strs(&mut self) -> Option<Vec<String>> {
        let n = self.u32()? as usize;
        if n > self.0.len() {
            return None;
        }
        (0..n).map(|_| self.str()).collect()
    }
    fn opt_i64(&mut self) -> Option<Option<i64>> {
        match self.u8()? {
            0 => Some(None),
            1 => Some(Some(self.i64()?)),
            _ => None,
        }
    }
    fn opt_f64(&mut self) -> Option<Option<f64>> {
        Some(self.opt_i64()?.map(|n| f64::from_bits(n as u64)))
    }
    fn opt_str(&mut self) -> Option<Option<String>> {
        match self.u8()? {
            0 => Some(None),
            1 => Some(Some(self.str()?)),
            _ => None,
        }
    }

    /// A song, its fields in the order [`song`] writes them.
    fn song(&mut self) -> Option<Song> {
        let id = self.u32()?;
        let mut t = Vec::with_capacity(12);
        for _ in 0..12 {
            t.push(self.str()?);
        }
        let file = PathBuf::from(OsString::from_vec(self.take_len()?.to_vec()));
        let mut n = [None; 6];
        for x in &mut n {
            *x = self.opt_i64()?;
        }
        let (added, play_count, last_played) = (self.i64()?, self.i64()?, self.i64()?);
        let folder = self.u32()? as usize;
        let mut v = Vec::with_capacity(10);
        for _ in 0..10 {
            v.push(self.strs()?);
        }
        let replay_gain = ReplayGain {
            track_gain: self.opt_f64()?,
            album_gain: self.opt_f64()?,
            track_peak: self.opt_f64()?,
            album_peak: self.opt_f64()?,
        };
        let compilation = match self.u8()? {
            0 => false,
            1 => true,
            _ => return None,
        };
        let mut o = Vec::with_capacity(9);
        for _ in 0..9 {
            o.push(self.opt_str()?);
        }
        let mut a = [None; 4];
        for x in &mut a {
            *x = self.opt_i64()?;
        }
        let [title, artist, album, album_artist, suffix, content_type, path, album_id, artist_id, display_artist, display_album_artist, sort_title]: [String; 12] =
            t.try_into().ok()?;
        let [artists, album_artists, genres, composers, moods, labels, isrc, release_types, artist_mbids, album_artist_mbids]: [Vec<String>; 10] =
            v.try_into().ok()?;
        let [genre, sort_artist, sort_album, sort_album_artist, mbid, album_mbid, original_date, disc_subtitle, comment]: [Option<String>; 9] =
            o.try_into().ok()?;
        let [track, disc, year, duration, bitrate, size] = n;
        let [bit_depth, sample_rate, channels, bpm] = a;
        Some(Song {
            id,
            title,
            artist,
            album,
            album_artist,
            track,
            disc,
            year,
            genre,
            duration,
            bitrate,
            size,
            suffix,
            content_type,
            path,
            file,
            added,
            play_count,
            last_played,
            album_id,
            artist_id,
            folder,
            artists,
            display_artist,
            album_artists,
            display_album_artist,
            genres,
            composers,
            moods,
            labels,
            isrc,
            release_types,
            replay_gain,
            compilation,
            sort_title,
            sort_artist,
            sort_album,
            sort_album_artist,
            mbid,
            album_mbid,
            artist_mbids,
            album_artist_mbids,
            bit_depth,
            sample_rate,
            channels,
            original_date,
            disc_subtitle,
            bpm,
            comment,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testlib;

    fn of() -> SavedOf {
        SavedOf {
            generation: 3,
            seq: 40,
            entries: 2,
            properties: 14,
            roots: vec![PathBuf::from(testlib::ROOT)],
            articles: vec!["The".into()],
        }
    }

    fn cat() -> Catalog {
        let cat = testlib::catalog(&[
            ("A/1.flac", "A", "X", "one", "Jazz", 1),
            ("B/2.flac", "B", "Y", "two", "Pop", 0),
        ]);
        let mut songs: Vec<Song> = cat.songs.iter().map(|s| (**s).clone()).collect();
        songs[0].replay_gain.track_gain = Some(-6.5);
        songs[1].moods = vec!["Calm".into(), "Dark".into()];
        songs[1].comment = Some("é".into());
        Catalog::from_songs(songs, cat.ignored_articles)
    }

    #[test]
    fn saved_songs_load_as_they_were() {
        let cat = cat();
        let bytes = encode(&cat, &of());
        let songs: Vec<Song> = cat.songs.iter().map(|s| (**s).clone()).collect();
        assert_eq!(decode(&bytes, &of()), Some(songs));
        let again =
            Catalog::from_songs(decode(&bytes, &of()).unwrap(), cat.ignored_articles.clone());
        assert!(again == cat);
    }

    #[test]
    fn a_saved_catalog_of_another_position_or_folders_or_damaged_is_refused() {
        let bytes = encode(&cat(), &of());
        let mut later = of();
        later.seq += 1;
        assert_eq!(decode(&bytes, &later), None);
        let mut moved = of();
        moved.roots = vec![PathBuf::from("/elsewhere")];
        assert_eq!(decode(&bytes, &moved), None);
        let mut articles = of();
        articles.articles.clear();
        assert_eq!(decode(&bytes, &articles), None);
        for at in [0, 9, bytes.len() / 2, bytes.len() - 1] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x20;
            assert_eq!(decode(&bad, &of()), None, "byte {at}");
        }
        assert_eq!(decode(&bytes[..bytes.len() - 1], &of()), None);
        assert_eq!(decode(&[], &of()), None);
    }

    #[test]
    fn the_saved_file_is_the_owners_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CATALOG_FILE);
        write(&path, &encode(&cat(), &of())).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(decode(&std::fs::read(&path).unwrap(), &of()).is_some());
    }
}
