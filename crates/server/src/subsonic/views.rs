//! What the list, search and folder methods would otherwise recompute on
//! every request, computed once per catalog: the album orders of
//! `getAlbumList`/`getAlbumList2`, albums and songs by genre, the
//! lower-cased text `search2`/`search3` look words up in, and the folder
//! tree of `getIndexes`/`getMusicDirectory` ([`super::folders::Tree`]),
//! and the playlist files of the music folders ([`crate::m3u`]).
//!
//! A [`ViewCache`] (a field of [`super::SubsonicState`]) holds the views of the
//! catalog last asked about; a new catalog (the music side rebuilds it
//! when the library changes) gets new views. Each part is built on first
//! use, so a server that never browses by folder never builds the tree.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use memchr::memmem;

use super::access::Access;
use super::folders::Tree;
use crate::catalog::Catalog;
use crate::state::lock;

/// The album orders of the album lists, as indexes into
/// [`Catalog::albums`].
#[derive(Debug, Default)]
pub(crate) struct Orders {
    /// By name, caselessly.
    pub by_name: Vec<usize>,
    /// By artist, then name, caselessly.
    pub by_artist: Vec<usize>,
    /// Newest first (when added).
    pub newest: Vec<usize>,
    /// Albums with a year, oldest first (by name within a year).
    pub by_year: Vec<usize>,
    /// Lower-cased genre → albums with a song of that genre, by name.
    pub album_genres: HashMap<String, Vec<usize>>,
    /// Lower-cased genre → its songs (indexes into [`Catalog::songs`]),
    /// by album name, disc and track.
    pub song_genres: HashMap<String, Vec<usize>>,
}

/// Lower-cased text of every artist, album and song, one line each, for
/// word search with a fast substring finder.
#[derive(Debug, Default)]
pub(crate) struct Text {
    artists: Lines,
    albums: Lines,
    songs: SongText,
}

/// The text of the songs, without repeating what songs share: a line per
/// title, and a line per distinct (artist, album) of songs that the
/// songs of that pair point to. A song matches a word when its title or
/// its pair's line does, as if its line were "title artist album" (a
/// word has no whitespace, so it never spans two of the parts), but the
/// finder reads about a third of the bytes.
#[derive(Debug, Default)]
struct SongText {
    titles: Lines,
    /// "artist album" of each distinct pair.
    pairs: Lines,
    /// The songs of each pair, in song order.
    songs_of_pair: Vec<Vec<u32>>,
    songs: usize,
}

impl SongText {
    fn new(cat: &Catalog) -> SongText {
        let mut pair_of: HashMap<(&str, &str), usize> = HashMap::new();
        let mut pairs: Vec<String> = Vec::new();
        let mut songs_of_pair: Vec<Vec<u32>> = Vec::new();
        for (n, song) in cat.songs.iter().enumerate() {
            let p = *pair_of
                .entry((song.artist.as_str(), song.album.as_str()))
                .or_insert_with(|| {
                    pairs.push(format!("{} {}", song.artist, song.album));
                    songs_of_pair.push(Vec::new());
                    pairs.len() - 1
                });
            songs_of_pair[p].push(n as u32);
        }
        SongText {
            titles: Lines::new(cat.songs.iter().map(|s| s.title.clone())),
            pairs: Lines::new(pairs.into_iter()),
            songs_of_pair,
            songs: cat.songs.len(),
        }
    }

    /// Songs whose title, artist and album hold every word (lower-cased)
    /// between them, in song order.
    fn find(&self, words: &[String]) -> Vec<usize> {
        let mut all: Option<Bits> = None;
        for w in words {
            let mut hits = Bits::new(self.songs);
            self.titles.each(w, |n| hits.set(n));
            self.pairs.each(w, |p| {
                for &n in &self.songs_of_pair[p] {
                    hits.set(n as usize);
                }
            });
            let now = match all {
                None => hits,
                Some(prev) => prev.and(&hits),
            };
            let empty = now.is_empty();
            all = Some(now);
            if empty {
                break;
            }
        }
        all.map(|b| b.ones()).unwrap_or_default()
    }
}

/// A set of song indexes.
struct Bits(Vec<u64>);

impl Bits {
    fn new(len: usize) -> Bits {
        Bits(vec![0; len.div_ceil(64)])
    }
    fn set(&mut self, n: usize) {
        if let Some(w) = self.0.get_mut(n / 64) {
            *w |= 1 << (n % 64);
        }
    }
    fn and(mut self, other: &Bits) -> Bits {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a &= b;
        }
        self
    }
    fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
    /// The members, ascending.
    fn ones(&self) -> Vec<usize> {
        let mut out = Vec::new();
        for (i, &w) in self.0.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                out.push(i * 64 + w.trailing_zeros() as usize);
                w &= w - 1;
            }
        }
        out
    }
}

/// Lines of lower-cased text; line `n` is item `n`.
#[derive(Debug, Default)]
struct Lines {
    text: String,
    /// Where each line starts in `text`.
    starts: Vec<usize>,
}

impl Lines {
    fn new(items: impl Iterator<Item = String>) -> Lines {
        let mut l = Lines::default();
        for s in items {
            l.starts.push(l.text.len());
            // A line break never occurs in a word (words are split on
            // whitespace), so no match spans two items.
            l.text.push_str(&s.to_lowercase().replace('\n', " "));
            l.text.push('\n');
        }
        l
    }

    /// Calls `f` with every item whose line holds `word` (lower-cased),
    /// once each, in item order.
    fn each(&self, word: &str, mut f: impl FnMut(usize)) {
        if word.is_empty() {
            // Every line holds the empty word.
            (0..self.starts.len()).for_each(f);
            return;
        }
        let text = self.text.as_bytes();
        let finder = memmem::Finder::new(word.as_bytes());
        let mut from = 0;
        // The item of the last hit: hits only move forward, so each is
        // looked for from there on, and the search goes on from the end
        // of its line.
        let mut item = 0;
        while let Some(at) = text.get(from..).and_then(|rest| finder.find(rest)) {
            let pos = from + at;
            item = line_at(&self.starts, item, pos);
            f(item);
            from = self.starts.get(item + 1).copied().unwrap_or(text.len());
        }
    }

    /// Items whose line holds every word (lower-cased), in item order.
    fn find(&self, words: &[String]) -> Vec<usize> {
        let mut out: Option<Vec<usize>> = None;
        for w in words {
            let mut hits: Vec<usize> = Vec::new();
            self.each(w, |n| hits.push(n));
            out = Some(match out {
                None => hits,
                Some(prev) => {
                    let keep: std::collections::HashSet<usize> = hits.into_iter().collect();
                    prev.into_iter().filter(|n| keep.contains(n)).collect()
                }
            });
            if out.as_ref().is_some_and(Vec::is_empty) {
                break;
            }
        }
        out.unwrap_or_default()
    }
}

/// The line of `starts` (where each line starts) that holds byte `pos`,
/// at `from` or after it (`starts[from] <= pos`): a galloping search from
/// `from`, since the hits of a search come in order and mostly close
/// together, and a binary search over all lines would touch memory far
/// from them for every hit.
fn line_at(starts: &[usize], from: usize, pos: usize) -> usize {
    let mut lo = from;
    let mut step = 1;
    let mut hi = from + 1;
    while hi < starts.len() && starts[hi] <= pos {
        lo = hi;
        step *= 2;
        hi = from + step;
    }
    let hi = hi.min(starts.len());
    lo + starts[lo..hi].partition_point(|&s| s <= pos) - 1
}

/// Matches of a word search: indexes into the catalog's lists.
#[derive(Debug, Default)]
pub(crate) struct Hits {
    pub artists: Vec<usize>,
    pub albums: Vec<usize>,
    pub songs: Vec<usize>,
}

impl Text {
    fn new(cat: &Catalog) -> Text {
        Text {
            artists: Lines::new(cat.artists.iter().map(|a| a.name.clone())),
            albums: Lines::new(
                cat.albums
                    .iter()
                    .map(|a| format!("{} {}", a.name, a.artist)),
            ),
            songs: SongText::new(cat),
        }
    }

    /// Artists, albums and songs whose text holds every one of `words`
    /// (lower-cased).
    pub fn search(&self, words: &[String]) -> Hits {
        Hits {
            artists: self.artists.find(words),
            albums: self.albums.find(words),
            songs: self.songs.find(words),
        }
    }
}

/// Artists (indexes into [`Catalog::artists`]) under their index letter,
/// in catalog order: what `getArtists` shows.
pub(crate) type ArtistGroups = Vec<(String, Vec<usize>)>;

/// How many folder accesses one catalog keeps artist groups for (users
/// granted different folders see different artists); past it, the
/// oldest is dropped.
pub const MAX_ARTIST_GROUPINGS: usize = 16;

/// How many users' [`Views::has_song_ratings`] one catalog remembers;
/// past it, it forgets them all and asks again.
pub const MAX_RATERS_KNOWN: usize = 4096;

/// The views of one catalog, each built on first use.
#[derive(Debug)]
pub(crate) struct Views {
    cat: Arc<Catalog>,
    /// [`fingerprint`] of `cat`.
    print: u64,
    orders: Arc<OnceLock<Orders>>,
    text: Arc<OnceLock<Text>>,
    tree: Arc<OnceLock<Tree>>,
    playlists: Arc<OnceLock<Vec<crate::m3u::Found>>>,
    /// Artist groups by folder access, of this catalog only (they
    /// depend on sort names, which [`fingerprint`] does not see).
    artist_groups: Mutex<Vec<(Access, Arc<ArtistGroups>)>>,
    /// By user: whether the library held any song rating of theirs when
    /// first asked for this catalog. Adding a user's first rating adds a
    /// property, so the library's stamp changes and the next request gets
    /// a new catalog with new views (`crate::music`); so a `false` here
    /// is never stale. Of this catalog only.
    raters: Mutex<HashMap<String, bool>>,
}

impl Views {
    /// Whether `user` has song ratings; `check` reads the library the
    /// first time for this catalog.
    pub fn has_song_ratings(&self, user: &str, check: impl FnOnce() -> bool) -> bool {
        if let Some(&known) = lock(&self.raters).get(user) {
            return known;
        }
        let known = check();
        let mut all = lock(&self.raters);
        if all.len() >= MAX_RATERS_KNOWN {
            all.clear();
        }
        all.insert(user.to_owned(), known);
        known
    }

    /// The artist groups `access` sees, built by `build` on first use.
    pub fn artist_groups(
        &self,
        access: &Access,
        build: impl FnOnce(&Catalog) -> ArtistGroups,
    ) -> Arc<ArtistGroups> {
        if let Some((_, g)) = lock(&self.artist_groups).iter().find(|(a, _)| a == access) {
            return g.clone();
        }
        // Built outside the lock: a second request for the same access
        // builds the same groups at worst.
        let g = Arc::new(build(&self.cat));
        let mut all = lock(&self.artist_groups);
        if !all.iter().any(|(a, _)| a == access) {
            if all.len() >= MAX_ARTIST_GROUPINGS {
                all.remove(0);
            }
            all.push((access.clone(), g.clone()));
        }
        g
    }

    pub fn orders(&self) -> &Orders {
        self.orders.get_or_init(|| orders(&self.cat))
    }

    pub fn text(&self) -> &Text {
        self.text.get_or_init(|| Text::new(&self.cat))
    }

    /// The folder tree over `roots` (the music folders, canonical).
    pub fn tree(&self, roots: &[std::path::PathBuf]) -> &Tree {
        self.tree.get_or_init(|| Tree::build(&self.cat, roots))
    }

    /// The `.m3u`/`.m3u8` files in `roots` (looked for once per catalog).
    pub fn playlists(&self, roots: &[std::path::PathBuf]) -> &[crate::m3u::Found] {
        self.playlists.get_or_init(|| crate::m3u::find(roots))
    }
}

/// The views of the catalog last asked about.
#[derive(Debug, Default)]
pub struct ViewCache {
    last: Mutex<Option<Arc<Views>>>,
}

impl ViewCache {
    /// The views of `cat`: those of the last call's catalog when `cat` is
    /// that catalog or one built again from an unchanged library (the
    /// music side rebuilds it every few seconds for play counts; see
    /// [`fingerprint`]), else new, empty ones.
    pub(crate) fn of(&self, cat: &Arc<Catalog>) -> Arc<Views> {
        let mut last = lock(&self.last);
        if let Some(v) = last.as_ref() {
            if Arc::ptr_eq(&v.cat, cat) {
                return v.clone();
            }
        }
        let print = fingerprint(cat);
        let v = match last.as_ref() {
            Some(v) if v.print == print => Arc::new(Views {
                cat: cat.clone(),
                print,
                orders: v.orders.clone(),
                text: v.text.clone(),
                tree: v.tree.clone(),
                // New playlist files show up at the next rebuild.
                playlists: Arc::default(),
                artist_groups: Mutex::default(),
                raters: Mutex::default(),
            }),
            _ => Arc::new(Views {
                cat: cat.clone(),
                print,
                orders: Arc::default(),
                text: Arc::default(),
                tree: Arc::default(),
                playlists: Arc::default(),
                artist_groups: Mutex::default(),
                raters: Mutex::default(),
            }),
        };
        *last = Some(v.clone());
        v
    }
}

/// What the views depend on, summed up: every song's id, plays, last
/// play, date added, music folder and the lengths of its names and path,
/// in catalog order, and the number of albums and artists. Two catalogs
/// with the same fingerprint list the same songs in the same order with
/// the same play counts (a tag edit that keeps every length escapes it
/// until the next change; the orders and text then lag one rebuild).
fn fingerprint(cat: &Catalog) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |x: u64| h = (h ^ x).wrapping_mul(0x0100_0000_01b3).rotate_left(17);
    mix(cat.songs.len() as u64);
    mix(cat.albums.len() as u64);
    mix(cat.artists.len() as u64);
    for s in &cat.songs {
        mix(u64::from(s.id));
        mix(s.play_count as u64);
        mix(s.last_played as u64);
        mix(s.added as u64);
        mix(s.folder as u64);
        mix((s.title.len() + (s.artist.len() << 16) + (s.album.len() << 32)) as u64);
        mix((s.path.len() + (s.album_artist.len() << 16)) as u64);
        mix(s.genre.as_ref().map_or(0, |g| g.len() as u64 + 1));
    }
    h
}

fn fold(s: &str) -> String {
    s.to_lowercase()
}

fn orders(cat: &Catalog) -> Orders {
    let all: Vec<usize> = (0..cat.albums.len()).collect();
    let names: Vec<String> = cat.albums.iter().map(|a| fold(&a.name)).collect();
    let artists: Vec<String> = cat.albums.iter().map(|a| fold(&a.artist)).collect();
    let mut by_name = all.clone();
    by_name.sort_by(|&a, &b| names[a].cmp(&names[b]));
    let mut by_artist = all.clone();
    by_artist.sort_by(|&a, &b| (&artists[a], &names[a]).cmp(&(&artists[b], &names[b])));
    let mut newest = all.clone();
    newest.sort_by_key(|&n| std::cmp::Reverse(cat.albums[n].created));
    let mut by_year: Vec<usize> = by_name
        .iter()
        .copied()
        .filter(|&n| cat.albums[n].year.is_some())
        .collect();
    by_year.sort_by_key(|&n| cat.albums[n].year);
    let mut album_genres: HashMap<String, Vec<usize>> = HashMap::new();
    for &n in &by_name {
        let mut seen: Vec<String> = Vec::new();
        for &s in &cat.albums[n].songs {
            if let Some(g) = &cat.songs[s].genre {
                let g = fold(g);
                if !seen.contains(&g) {
                    album_genres.entry(g.clone()).or_default().push(n);
                    seen.push(g);
                }
            }
        }
    }
    let mut song_genres: HashMap<String, Vec<usize>> = HashMap::new();
    for &n in &by_name {
        for &s in &cat.albums[n].songs {
            if let Some(g) = &cat.songs[s].genre {
                song_genres.entry(fold(g)).or_default().push(s);
            }
        }
    }
    Orders {
        by_name,
        by_artist,
        newest,
        by_year,
        album_genres,
        song_genres,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_app::testlib;

    #[test]
    fn every_word_must_occur_in_the_same_item() {
        let l = Lines::new(
            ["Jóga Homogenic", "Army of Me", "Joga remix", "me and jóga"]
                .into_iter()
                .map(String::from),
        );
        assert_eq!(l.find(&["jóga".into()]), vec![0, 3]);
        assert_eq!(l.find(&["jóga".into(), "me".into()]), vec![3]);
        assert_eq!(l.find(&["joga".into()]), vec![2]);
        assert!(l.find(&["nothing".into()]).is_empty());
    }

    #[test]
    fn a_rebuilt_catalog_of_the_same_library_keeps_its_views_and_a_changed_one_does_not() {
        let rows: Vec<testlib::Row<'_>> = vec![
            ("A/1.flac", "A", "X", "one", "Jazz", 1),
            ("B/2.flac", "B", "Y", "two", "Pop", 0),
        ];
        let cache = ViewCache::default();
        let first = cache.of(&Arc::new(testlib::catalog(&rows)));
        let o1: *const Orders = first.orders();
        let again = cache.of(&Arc::new(testlib::catalog(&rows)));
        assert!(std::ptr::eq(o1, again.orders()));
        let mut played = rows.clone();
        played[1].5 = 3;
        let changed = cache.of(&Arc::new(testlib::catalog(&played)));
        assert!(!std::ptr::eq(o1, changed.orders()));
    }

    #[test]
    fn a_song_matches_words_of_its_title_artist_and_album_as_one_line_would() {
        let rows: Vec<testlib::Row<'_>> = vec![
            ("A/1.flac", "Army", "Post", "Someone", "", 0),
            ("A/2.flac", "Army", "Post", "Hyper-ballad", "", 0),
            ("B/3.flac", "Bee One", "Debut", "Human", "", 0),
            ("B/4.flac", "Bee One", "Debut", "one more", "", 0),
            ("C/5.flac", "Cee", "Onerous", "Venus", "", 0),
            ("C/6.flac", "Cee", "Onerous", "Army of Me", "", 0),
        ];
        let cat = testlib::catalog(&rows);
        let text = Text::new(&cat);
        // The reference: each song's whole line, searched naively.
        let naive = |words: &[&str]| -> Vec<usize> {
            (0..cat.songs.len())
                .filter(|&n| {
                    let s = &cat.songs[n];
                    let line = format!("{} {} {}", s.title, s.artist, s.album).to_lowercase();
                    words.iter().all(|w| line.contains(w))
                })
                .collect()
        };
        for words in [
            vec!["one"],
            vec!["army"],
            vec!["one", "debut"],
            vec!["army", "me"],
            vec!["hyper-ballad", "post"],
            vec!["venus", "army"],
            vec!["ne"],
            vec!["nothing"],
        ] {
            let owned: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
            let got = text.search(&owned).songs;
            assert_eq!(got, naive(&words), "{words:?}");
        }
        assert_eq!(text.search(&["one".into()]).songs.len(), 5);
    }

    #[test]
    fn the_line_of_a_byte_is_found_from_any_earlier_line() {
        let starts = [0, 3, 4, 10, 11, 12, 30];
        for pos in 0..40 {
            let want = starts.partition_point(|&s| s <= pos) - 1;
            for from in 0..=want {
                assert_eq!(line_at(&starts, from, pos), want, "pos {pos} from {from}");
            }
        }
    }

    #[test]
    fn a_match_never_spans_two_items() {
        let l = Lines::new(["abc", "def"].into_iter().map(String::from));
        assert!(l.find(&["cd".into()]).is_empty());
        assert_eq!(l.find(&["ef".into()]), vec![1]);
    }
}
