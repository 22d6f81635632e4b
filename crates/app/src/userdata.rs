//! Per-user data: the Subsonic API's stars, playlists, album and artist
//! ratings, play queues, bookmarks and share links, one JSON file per user
//! (`DATA_DIR/subsonic/user-HEX.json`); and in
//! `DATA_DIR/subsonic/userdata.json` each user's settings (whether their
//! listening history is public) and the server's internet radio stations.
//! A file is rewritten whole on a change of its data (written to a
//! temporary file, fsynced, renamed over the old one), so a crash leaves
//! the old or the new state, never a mix; one user's change writes their
//! file only, and waits for no other user's write (`slot`). A change
//! another process made to a file (`spindle user privacy` beside a running
//! server) is read back before the next change of it and before a setting
//! is read. An older single `userdata.json` holding every user's data is
//! split into the per-user files when opened. The format, field by field:
//! `docs/userdata-format.md`.
//!
//! Stars and ratings are by the id a client sees (song, `al-…` album,
//! `ar-…` artist); song ratings live in the library instead
//! (the Subsonic API's `setRating`). Playlists, play queues, bookmarks
//! and shares hold entry ids; a song whose entry is gone is skipped when
//! they are shown. Everything a user can store has a limit per user (the
//! `MAX_` constants, listed in `docs/security.md`), so a file stays small
//! enough to rewrite on each change. Every method that writes blocks on
//! an fsync: call it from a blocking thread.

mod slot;

use std::collections::BTreeMap;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};

use slot::{io, make_private, read_json, Slot};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UserDataError {
    /// A list would grow past its limit.
    #[error("at most {max} {what} are kept: delete some first")]
    TooMany { what: &'static str, max: usize },
    /// A text is longer than its limit.
    #[error("the {what} is over {max} bytes: shorten it")]
    TooLong { what: &'static str, max: usize },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not a Spindle user data file: {source}", path.display())]
    Format {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Playlist {
    pub owner: String,
    pub name: String,
    #[serde(default)]
    pub comment: String,
    #[serde(default)]
    pub public: bool,
    pub songs: Vec<u32>,
    pub created: i64,
    pub changed: i64,
}

/// Playlists of one user.
pub const MAX_PLAYLISTS: usize = 500;
/// Songs in one playlist.
pub const MAX_PLAYLIST_SONGS: usize = 5_000;
/// Bytes of a playlist's name.
pub const MAX_PLAYLIST_NAME: usize = 1_024;
/// Bytes of a playlist's comment.
pub const MAX_PLAYLIST_COMMENT: usize = 4_096;
/// Songs in one play queue.
pub const MAX_QUEUE_SONGS: usize = 10_000;
/// Bookmarks of one user.
pub const MAX_BOOKMARKS: usize = 2_000;
/// Internet radio stations of the server.
pub const MAX_STATIONS: usize = 1_000;
/// Shares of one user.
pub const MAX_SHARES: usize = 1_000;
/// Songs in one share.
pub const MAX_SHARE_SONGS: usize = 5_000;
/// How often a share's visits are written to the file at most: visits in
/// between are counted in memory and written with the next change (a
/// public page must not make every visitor cost a file rewrite).
pub const VISIT_WRITE_EVERY: i64 = 60;

/// A user's saved play queue (Subsonic `savePlayQueue`, OpenSubsonic
/// `savePlayQueueByIndex`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PlayQueue {
    /// Entry ids, in order; a song may appear more than once.
    pub songs: Vec<u32>,
    /// Index into `songs` of the song playing, if any.
    #[serde(default)]
    pub current: Option<usize>,
    /// Milliseconds into the current song.
    #[serde(default)]
    pub position: i64,
    pub changed: i64,
    /// The client (`c`) that saved it.
    #[serde(default)]
    pub changed_by: String,
}

/// A position in a song a user bookmarked.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Bookmark {
    /// Milliseconds.
    pub position: i64,
    #[serde(default)]
    pub comment: String,
    pub created: i64,
    pub changed: i64,
}

/// An internet radio station.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Station {
    pub name: String,
    pub stream_url: String,
    #[serde(default)]
    pub home_page_url: String,
}

/// A public link to songs, by its token.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Share {
    pub owner: String,
    #[serde(default)]
    pub description: String,
    /// Entry ids, in order: only these play through the link.
    pub songs: Vec<u32>,
    pub created: i64,
    /// When the link stops working; `None`: never.
    #[serde(default)]
    pub expires: Option<i64>,
    #[serde(default)]
    pub last_visited: Option<i64>,
    #[serde(default)]
    pub visits: u64,
}

impl Share {
    /// Whether the link works at `now`.
    pub fn live(&self, now: i64) -> bool {
        self.expires.is_none_or(|e| now < e)
    }
}

/// `userdata.json`: the server's parts (settings, stations). In version 1
/// it held every user's parts too; those are split into the users' files
/// when it is opened ([`UserData::open`]), and [`snapshot_document`]
/// writes this form of the whole store.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Data {
    version: u32,
    next_playlist: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    starred: BTreeMap<String, BTreeMap<String, i64>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    playlists: BTreeMap<u64, Playlist>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    settings: BTreeMap<String, Settings>,
    /// user → album or artist id → 1..=5.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    ratings: BTreeMap<String, BTreeMap<String, u8>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    play_queues: BTreeMap<String, PlayQueue>,
    /// user → entry id → bookmark.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    bookmarks: BTreeMap<String, BTreeMap<u32, Bookmark>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    stations: BTreeMap<u64, Station>,
    #[serde(default, skip_serializing_if = "is_zero")]
    next_station: u64,
    /// token → share.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    shares: BTreeMap<String, Share>,
}

/// The version of `userdata.json` with the users' parts in their own files.
const SPLIT_VERSION: u32 = 2;

impl Data {
    /// Takes every user's parts out, as the users' files.
    fn split(&mut self) -> BTreeMap<String, Mine> {
        let mut users: BTreeMap<String, Mine> = BTreeMap::new();
        let next = self.next_playlist;
        fn of<'a>(users: &'a mut BTreeMap<String, Mine>, u: &str, next: u64) -> &'a mut Mine {
            users.entry(u.to_owned()).or_insert_with(|| Mine {
                next_playlist: next,
                ..Mine::of(u)
            })
        }
        for (u, s) in std::mem::take(&mut self.starred) {
            of(&mut users, &u, next).starred = s;
        }
        for (id, p) in std::mem::take(&mut self.playlists) {
            of(&mut users, &p.owner.clone(), next)
                .playlists
                .insert(id, p);
        }
        for (u, r) in std::mem::take(&mut self.ratings) {
            of(&mut users, &u, next).ratings = r;
        }
        for (u, q) in std::mem::take(&mut self.play_queues) {
            of(&mut users, &u, next).play_queue = Some(q);
        }
        for (u, b) in std::mem::take(&mut self.bookmarks) {
            of(&mut users, &u, next).bookmarks = b;
        }
        for (t, s) in std::mem::take(&mut self.shares) {
            of(&mut users, &s.owner.clone(), next).shares.insert(t, s);
        }
        users
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One user's file, `user-HEX.json`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Mine {
    version: u32,
    user: String,
    /// At least one more than every playlist id this user was given (so
    /// an id is never given twice, even after its playlist is deleted).
    #[serde(default)]
    next_playlist: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    starred: BTreeMap<String, i64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    playlists: BTreeMap<u64, Playlist>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    ratings: BTreeMap<String, u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    play_queue: Option<PlayQueue>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    bookmarks: BTreeMap<u32, Bookmark>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    shares: BTreeMap<String, Share>,
}

impl Mine {
    fn of(user: &str) -> Mine {
        Mine {
            version: SPLIT_VERSION,
            user: user.to_owned(),
            ..Mine::default()
        }
    }

    fn next_playlist(&self) -> u64 {
        let after_last = self.playlists.keys().max().map_or(1, |id| id + 1);
        self.next_playlist.max(after_last)
    }
}

/// One user's settings; a user without an entry has the defaults.
#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Settings {
    /// Whether anyone may read the user's listening history through the
    /// ListenBrainz and Last.fm read calls; by default only the user
    /// (with their token or session key) may.
    #[serde(default)]
    pub listens_public: bool,
}

/// The folder under the data dir that holds the user data files.
pub const USERDATA_DIR: &str = "subsonic";
/// The server's file in [`USERDATA_DIR`].
pub const SERVER_FILE: &str = "userdata.json";
/// What a user's file name starts with; the rest is the user name in
/// lower-case hex, then `.json`.
pub const USER_FILE_PREFIX: &str = "user-";

/// The mode of a folder [`UserData::open`] creates.
const DIR_MODE: u32 = 0o700;

/// The file name of a user's data.
fn user_file(user: &str) -> String {
    let hex: String = user.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{USER_FILE_PREFIX}{hex}.json")
}

/// Creates a missing folder (and parents) with mode 0700.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))
}

/// The users' files in `dir`, read.
fn read_user_files(dir: &Path) -> Result<Vec<(PathBuf, Mine)>, UserDataError> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io(dir))? {
        let e = e.map_err(io(dir))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with(USER_FILE_PREFIX) && name.ends_with(".json")) {
            continue;
        }
        let path = e.path();
        make_private(&path).map_err(io(&path))?;
        if let Some(mine) = read_json::<Mine>(&path)? {
            out.push((path, mine));
        }
    }
    Ok(out)
}

/// The whole store in `dir` (the folder [`UserData::open`] takes) as one
/// document in the single-file form (version 1), read from its files: what
/// a cluster ships to its replicas, which split it again when they open
/// it. `None` when there is no user data yet.
pub fn snapshot_document(dir: &Path) -> Result<Option<Vec<u8>>, UserDataError> {
    let server = dir.join(SERVER_FILE);
    let mut d = read_json::<Data>(&server)?;
    let users = if dir.is_dir() {
        read_user_files(dir)?
    } else {
        Vec::new()
    };
    if d.is_none() && users.is_empty() {
        return Ok(None);
    }
    let mut d = d.take().unwrap_or_default();
    d.version = 1;
    for (_, m) in users {
        d.next_playlist = d.next_playlist.max(m.next_playlist());
        let u = m.user;
        if !m.starred.is_empty() {
            d.starred.insert(u.clone(), m.starred);
        }
        d.playlists.extend(m.playlists);
        if !m.ratings.is_empty() {
            d.ratings.insert(u.clone(), m.ratings);
        }
        if let Some(q) = m.play_queue {
            d.play_queues.insert(u.clone(), q);
        }
        if !m.bookmarks.is_empty() {
            d.bookmarks.insert(u.clone(), m.bookmarks);
        }
        d.shares.extend(m.shares);
    }
    d.next_playlist = d.next_playlist.max(1);
    serde_json::to_vec(&d)
        .map(Some)
        .map_err(|source| UserDataError::Format {
            path: server,
            source,
        })
}

/// The store; see the module doc.
pub struct UserData {
    dir: Option<PathBuf>,
    server: Slot<Data>,
    users: RwLock<BTreeMap<String, Arc<Slot<Mine>>>>,
    next_playlist: AtomicU64,
    /// When share visits were last written ([`VISIT_WRITE_EVERY`]).
    visits_written: AtomicI64,
}

fn rd<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

fn wr<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

/// Refuses a playlist over a limit (its songs, name or comment).
fn check_playlist(p: &Playlist) -> Result<(), UserDataError> {
    if p.songs.len() > MAX_PLAYLIST_SONGS {
        return Err(UserDataError::TooMany {
            what: "songs in a playlist",
            max: MAX_PLAYLIST_SONGS,
        });
    }
    if p.name.len() > MAX_PLAYLIST_NAME {
        return Err(UserDataError::TooLong {
            what: "playlist name",
            max: MAX_PLAYLIST_NAME,
        });
    }
    if p.comment.len() > MAX_PLAYLIST_COMMENT {
        return Err(UserDataError::TooLong {
            what: "playlist comment",
            max: MAX_PLAYLIST_COMMENT,
        });
    }
    Ok(())
}

impl UserData {
    /// Opens (or starts) the store in `dir`; `None` keeps it in memory. A
    /// `userdata.json` in the single-file form (version 1, written by an
    /// older Spindle or shipped by a cluster's primary) holds the whole
    /// store: it is split into the users' files, replacing any there.
    pub fn open(dir: Option<&Path>) -> Result<UserData, UserDataError> {
        let Some(dir) = dir else {
            return Ok(UserData::in_memory());
        };
        create_private_dir(dir).map_err(io(dir))?;
        let path = dir.join(SERVER_FILE);
        make_private(&path).map_err(io(&path))?;
        let mut data = read_json::<Data>(&path)?;
        let mut files = read_user_files(dir)?;
        if let Some(d) = data.as_mut().filter(|d| d.version < SPLIT_VERSION) {
            let split = d.split();
            for (p, _) in &files {
                slot::remove_file(p)?;
            }
            files = split
                .into_values()
                .map(|m| (dir.join(user_file(&m.user)), m))
                .collect();
            for (p, m) in &files {
                let bytes = serde_json::to_vec(m).map_err(|source| UserDataError::Format {
                    path: p.clone(),
                    source,
                })?;
                slot::write_file(p, &bytes)?;
            }
            d.version = SPLIT_VERSION;
            let bytes = serde_json::to_vec(&*d).map_err(|source| UserDataError::Format {
                path: path.clone(),
                source,
            })?;
            slot::write_file(&path, &bytes)?;
        }
        let data = data.unwrap_or(Data {
            version: SPLIT_VERSION,
            next_playlist: 1,
            ..Data::default()
        });
        let mut next = data.next_playlist.max(1);
        let mut users = BTreeMap::new();
        for (p, m) in files {
            next = next.max(m.next_playlist());
            users.insert(m.user.clone(), Arc::new(Slot::new(Some(p), m)));
        }
        Ok(UserData {
            dir: Some(dir.to_owned()),
            server: Slot::new(Some(path), data),
            users: RwLock::new(users),
            next_playlist: AtomicU64::new(next),
            visits_written: AtomicI64::default(),
        })
    }

    pub fn in_memory() -> UserData {
        UserData {
            dir: None,
            server: Slot::new(
                None,
                Data {
                    version: SPLIT_VERSION,
                    next_playlist: 1,
                    ..Data::default()
                },
            ),
            users: RwLock::default(),
            next_playlist: AtomicU64::new(1),
            visits_written: AtomicI64::default(),
        }
    }

    /// The user's file, if they stored anything.
    fn existing(&self, user: &str) -> Option<Arc<Slot<Mine>>> {
        rd(&self.users).get(user).cloned()
    }

    /// The user's file, started when they store the first thing.
    fn user(&self, user: &str) -> Arc<Slot<Mine>> {
        if let Some(s) = self.existing(user) {
            return s;
        }
        let path = self.dir.as_ref().map(|d| d.join(user_file(user)));
        wr(&self.users)
            .entry(user.to_owned())
            .or_insert_with(|| Arc::new(Slot::new(path, Mine::of(user))))
            .clone()
    }

    fn read_user<R: Default>(&self, user: &str, f: impl FnOnce(&Mine) -> R) -> R {
        match self.existing(user) {
            Some(s) => s.read(false, f),
            None => R::default(),
        }
    }

    /// Every user's file.
    fn all(&self) -> Vec<Arc<Slot<Mine>>> {
        rd(&self.users).values().cloned().collect()
    }

    /// The file holding what `has` finds, and what it found.
    fn find<R>(&self, has: impl Fn(&Mine) -> Option<R>) -> Option<(Arc<Slot<Mine>>, R)> {
        self.all()
            .into_iter()
            .find_map(|s| s.read(false, &has).map(|r| (s, r)))
    }

    /// Whether the user's listening history is public (see
    /// [`Settings::listens_public`]); false for a user never set.
    pub fn listens_public(&self, user: &str) -> bool {
        self.server.read(true, |d| {
            d.settings.get(user).is_some_and(|s| s.listens_public)
        })
    }

    /// Makes the user's listening history public or private.
    pub fn set_listens_public(&self, user: &str, public: bool) -> Result<(), UserDataError> {
        self.server.change(|d| {
            let s = d.settings.entry(user.to_owned()).or_default();
            s.listens_public = public;
            if *s == Settings::default() {
                d.settings.remove(user);
            }
            Ok(())
        })
    }

    /// Stars (or with `on` false unstars) ids for a user.
    pub fn star(
        &self,
        user: &str,
        ids: &[String],
        on: bool,
        now: i64,
    ) -> Result<(), UserDataError> {
        self.user(user).change(|d| {
            for id in ids {
                if on {
                    d.starred.entry(id.clone()).or_insert(now);
                } else {
                    d.starred.remove(id);
                }
            }
            Ok(())
        })
    }

    /// The ids a user starred, with when.
    pub fn starred(&self, user: &str) -> BTreeMap<String, i64> {
        self.read_user(user, |d| d.starred.clone())
    }

    /// Playlists the user may see: their own and public ones, by id.
    pub fn playlists(&self, user: &str) -> Vec<(u64, Playlist)> {
        let mut out: Vec<(u64, Playlist)> = Vec::new();
        for s in self.all() {
            s.read(false, |d| {
                out.extend(
                    d.playlists
                        .iter()
                        .filter(|(_, p)| p.owner == user || p.public)
                        .map(|(id, p)| (*id, p.clone())),
                );
            });
        }
        out.sort_by_key(|(id, _)| *id);
        out
    }

    pub fn playlist(&self, id: u64) -> Option<Playlist> {
        self.find(|d| d.playlists.get(&id).cloned()).map(|(_, p)| p)
    }

    /// Stores a new playlist of its owner; refused over a limit
    /// ([`MAX_PLAYLISTS`], [`MAX_PLAYLIST_SONGS`], [`MAX_PLAYLIST_NAME`],
    /// [`MAX_PLAYLIST_COMMENT`]).
    pub fn create_playlist(&self, p: Playlist) -> Result<u64, UserDataError> {
        check_playlist(&p)?;
        self.user(&p.owner.clone()).change(|d| {
            if d.playlists.len() >= MAX_PLAYLISTS {
                return Err(UserDataError::TooMany {
                    what: "playlists per user",
                    max: MAX_PLAYLISTS,
                });
            }
            let id = self
                .next_playlist
                .fetch_add(1, Ordering::Relaxed)
                .max(d.next_playlist());
            self.next_playlist.fetch_max(id + 1, Ordering::Relaxed);
            d.next_playlist = id + 1;
            d.playlists.insert(id, p);
            Ok(id)
        })
    }

    /// Replaces a playlist (within the limits of
    /// [`UserData::create_playlist`]); false when there is none with that
    /// id.
    pub fn put_playlist(&self, id: u64, p: Playlist) -> Result<bool, UserDataError> {
        check_playlist(&p)?;
        let Some((s, ())) = self.find(|d| d.playlists.contains_key(&id).then_some(())) else {
            return Ok(false);
        };
        s.change(|d| match d.playlists.get_mut(&id) {
            Some(old) => {
                *old = p;
                Ok(true)
            }
            None => Ok(false),
        })
    }

    pub fn delete_playlist(&self, id: u64) -> Result<bool, UserDataError> {
        let Some((s, ())) = self.find(|d| d.playlists.contains_key(&id).then_some(())) else {
            return Ok(false);
        };
        s.change(|d| Ok(d.playlists.remove(&id).is_some()))
    }

    /// The user's rating (1..=5) of an album or artist id.
    pub fn rating(&self, user: &str, id: &str) -> Option<u8> {
        self.read_user(user, |d| d.ratings.get(id).copied())
    }

    /// Rates an album or artist id 1..=5; 0 removes the rating.
    pub fn set_rating(&self, user: &str, id: &str, rating: u8) -> Result<(), UserDataError> {
        self.user(user).change(|d| {
            if rating == 0 {
                d.ratings.remove(id);
            } else {
                d.ratings.insert(id.to_owned(), rating.min(5));
            }
            Ok(())
        })
    }

    pub fn play_queue(&self, user: &str) -> Option<PlayQueue> {
        self.read_user(user, |d| d.play_queue.clone())
    }

    /// Saves (or with `None` clears) the user's play queue.
    pub fn set_play_queue(&self, user: &str, q: Option<PlayQueue>) -> Result<(), UserDataError> {
        if let Some(q) = &q {
            if q.songs.len() > MAX_QUEUE_SONGS {
                return Err(UserDataError::TooMany {
                    what: "songs in a play queue",
                    max: MAX_QUEUE_SONGS,
                });
            }
        }
        self.user(user).change(|d| {
            d.play_queue = q;
            Ok(())
        })
    }

    /// The user's bookmarks by entry id.
    pub fn bookmarks(&self, user: &str) -> BTreeMap<u32, Bookmark> {
        self.read_user(user, |d| d.bookmarks.clone())
    }

    /// Makes or moves the user's bookmark in a song.
    pub fn set_bookmark(
        &self,
        user: &str,
        song: u32,
        position: i64,
        comment: &str,
        now: i64,
    ) -> Result<(), UserDataError> {
        self.user(user).change(|d| {
            let b = &mut d.bookmarks;
            if !b.contains_key(&song) && b.len() >= MAX_BOOKMARKS {
                return Err(UserDataError::TooMany {
                    what: "bookmarks per user",
                    max: MAX_BOOKMARKS,
                });
            }
            let created = b.get(&song).map_or(now, |old| old.created);
            b.insert(
                song,
                Bookmark {
                    position,
                    comment: comment.to_owned(),
                    created,
                    changed: now,
                },
            );
            Ok(())
        })
    }

    /// Removes the user's bookmark in a song; false when there was none.
    pub fn delete_bookmark(&self, user: &str, song: u32) -> Result<bool, UserDataError> {
        if !self.read_user(user, |d| d.bookmarks.contains_key(&song)) {
            return Ok(false);
        }
        self.user(user)
            .change(|d| Ok(d.bookmarks.remove(&song).is_some()))
    }

    /// The internet radio stations by id.
    pub fn stations(&self) -> Vec<(u64, Station)> {
        self.server.read(false, |d| {
            d.stations.iter().map(|(id, s)| (*id, s.clone())).collect()
        })
    }

    pub fn add_station(&self, s: Station) -> Result<u64, UserDataError> {
        self.server.change(|d| {
            if d.stations.len() >= MAX_STATIONS {
                return Err(UserDataError::TooMany {
                    what: "internet radio stations",
                    max: MAX_STATIONS,
                });
            }
            let id = d.next_station.max(1);
            d.next_station = id + 1;
            d.stations.insert(id, s);
            Ok(id)
        })
    }

    /// Replaces a station; false when there is none with that id.
    pub fn put_station(&self, id: u64, s: Station) -> Result<bool, UserDataError> {
        self.server.change(|d| match d.stations.get_mut(&id) {
            Some(old) => {
                *old = s;
                Ok(true)
            }
            None => Ok(false),
        })
    }

    pub fn delete_station(&self, id: u64) -> Result<bool, UserDataError> {
        self.server.change(|d| Ok(d.stations.remove(&id).is_some()))
    }

    /// A share by its token (live or not).
    pub fn share(&self, token: &str) -> Option<Share> {
        self.find(|d| d.shares.get(token).cloned()).map(|(_, s)| s)
    }

    /// The user's shares by token.
    pub fn shares_of(&self, user: &str) -> Vec<(String, Share)> {
        self.read_user(user, |d| {
            d.shares
                .iter()
                .map(|(t, s)| (t.clone(), s.clone()))
                .collect()
        })
    }

    /// Every share by token (for an administrator).
    pub fn all_shares(&self) -> Vec<(String, Share)> {
        let mut out = Vec::new();
        for s in self.all() {
            s.read(false, |d| {
                out.extend(d.shares.iter().map(|(t, s)| (t.clone(), s.clone())));
            });
        }
        out
    }

    /// Stores a new share of its owner under `token`.
    pub fn create_share(&self, token: &str, s: Share) -> Result<(), UserDataError> {
        if s.songs.len() > MAX_SHARE_SONGS {
            return Err(UserDataError::TooMany {
                what: "songs in a share",
                max: MAX_SHARE_SONGS,
            });
        }
        self.user(&s.owner.clone()).change(|d| {
            if d.shares.len() >= MAX_SHARES {
                return Err(UserDataError::TooMany {
                    what: "shares per user",
                    max: MAX_SHARES,
                });
            }
            d.shares.insert(token.to_owned(), s);
            Ok(())
        })
    }

    /// Replaces a share; false when there is none with that token.
    pub fn put_share(&self, token: &str, s: Share) -> Result<bool, UserDataError> {
        let Some((slot, ())) = self.find(|d| d.shares.contains_key(token).then_some(())) else {
            return Ok(false);
        };
        slot.change(|d| match d.shares.get_mut(token) {
            Some(old) => {
                *old = s;
                Ok(true)
            }
            None => Ok(false),
        })
    }

    pub fn delete_share(&self, token: &str) -> Result<bool, UserDataError> {
        let Some((slot, ())) = self.find(|d| d.shares.contains_key(token).then_some(())) else {
            return Ok(false);
        };
        slot.change(|d| Ok(d.shares.remove(token).is_some()))
    }

    /// Counts a visit of a live share's page and returns the share;
    /// `None` for no share or an expired one. Written to its owner's file
    /// at most every [`VISIT_WRITE_EVERY`] seconds.
    pub fn visit_share(&self, token: &str, now: i64) -> Option<Share> {
        let (slot, ()) = self.find(|d| d.shares.contains_key(token).then_some(()))?;
        let out = slot.mutate(|d| {
            let s = d.shares.get_mut(token).filter(|s| s.live(now))?;
            s.visits += 1;
            s.last_visited = Some(now);
            Some(s.clone())
        })?;
        let last = self.visits_written.load(Ordering::Relaxed);
        if now - last >= VISIT_WRITE_EVERY {
            self.visits_written.store(now, Ordering::Relaxed);
            if let Err(e) = slot.flush() {
                tracing::warn!("could not record a share visit: {e}");
            }
        }
        Some(out)
    }

    /// Forgets everything of a deleted user: their file (stars, ratings,
    /// play queue, bookmarks, playlists, shares) and their settings.
    pub fn forget_user(&self, user: &str) -> Result<(), UserDataError> {
        wr(&self.users).remove(user);
        if let Some(dir) = &self.dir {
            slot::remove_file(&dir.join(user_file(user)))?;
        }
        if self.server.read(true, |d| d.settings.contains_key(user)) {
            self.server.change(|d| {
                d.settings.remove(user);
                Ok(())
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_and_playlists_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let u = UserData::open(Some(dir.path())).unwrap();
        u.star("ann", &["5".into(), "al-x".into()], true, 100)
            .unwrap();
        u.star("ann", &["al-x".into()], false, 101).unwrap();
        let p = Playlist {
            owner: "ann".into(),
            name: "Road".into(),
            comment: String::new(),
            public: false,
            songs: vec![5, 6],
            created: 1,
            changed: 1,
        };
        let id = u.create_playlist(p.clone()).unwrap();
        drop(u);
        let u = UserData::open(Some(dir.path())).unwrap();
        assert_eq!(u.starred("ann").keys().collect::<Vec<_>>(), ["5"]);
        assert_eq!(u.playlist(id), Some(p));
        assert!(
            u.playlists("bob").is_empty(),
            "private playlists stay private"
        );
        assert_eq!(u.create_playlist(u.playlist(id).unwrap()).unwrap(), id + 1);
    }

    #[test]
    fn a_setting_changed_by_another_process_is_seen_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let server = UserData::open(Some(dir.path())).unwrap();
        assert!(!server.listens_public("ann"), "private by default");
        // The CLI opens the same file while the server runs.
        let cli = UserData::open(Some(dir.path())).unwrap();
        cli.set_listens_public("ann", true).unwrap();
        assert!(server.listens_public("ann"));
        // The server's next change keeps the CLI's setting.
        server.star("bob", &["5".into()], true, 1).unwrap();
        drop((server, cli));
        let again = UserData::open(Some(dir.path())).unwrap();
        assert!(again.listens_public("ann") && !again.listens_public("bob"));
        assert_eq!(again.starred("bob").len(), 1);
        again.set_listens_public("ann", false).unwrap();
        assert!(!again.listens_public("ann"));
    }

    #[test]
    fn the_file_and_its_new_folder_are_private_whatever_the_umask() {
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data").join("subsonic");
        let u = UserData::open(Some(&dir)).unwrap();
        u.star("ann", &["1".into()], true, 5).unwrap();
        u.set_listens_public("ann", true).unwrap();
        let files = [dir.join("userdata.json"), dir.join(user_file("ann"))];
        assert_eq!(mode(&dir), DIR_MODE);
        for file in &files {
            assert_eq!(mode(file), slot::FILE_MODE);
            // A file an older Spindle left readable by all is narrowed on open.
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        drop(u);
        UserData::open(Some(&dir)).unwrap();
        for file in &files {
            assert_eq!(mode(file), slot::FILE_MODE);
        }
    }

    fn share(owner: &str, expires: Option<i64>) -> Share {
        Share {
            owner: owner.into(),
            description: "for you".into(),
            songs: vec![3, 4],
            created: 10,
            expires,
            last_visited: None,
            visits: 0,
        }
    }

    #[test]
    fn queues_bookmarks_ratings_stations_and_shares_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let u = UserData::open(Some(dir.path())).unwrap();
        let q = PlayQueue {
            songs: vec![5, 6, 5],
            current: Some(2),
            position: 1234,
            changed: 50,
            changed_by: "DSub".into(),
        };
        u.set_play_queue("ann", Some(q.clone())).unwrap();
        u.set_bookmark("ann", 5, 100, "here", 60).unwrap();
        u.set_bookmark("ann", 5, 200, "later", 70).unwrap();
        u.set_rating("ann", "al-x", 4).unwrap();
        u.set_rating("ann", "ar-y", 2).unwrap();
        u.set_rating("ann", "ar-y", 0).unwrap();
        let st = Station {
            name: "Radio".into(),
            stream_url: "http://radio.example/stream".into(),
            home_page_url: String::new(),
        };
        let sid = u.add_station(st.clone()).unwrap();
        u.create_share("tok", share("ann", None)).unwrap();
        drop(u);
        let u = UserData::open(Some(dir.path())).unwrap();
        assert_eq!(u.play_queue("ann"), Some(q));
        assert_eq!(u.play_queue("bob"), None);
        let b = &u.bookmarks("ann")[&5];
        assert_eq!((b.position, b.comment.as_str()), (200, "later"));
        assert_eq!(
            (b.created, b.changed),
            (60, 70),
            "moving keeps the creation time"
        );
        assert_eq!(u.rating("ann", "al-x"), Some(4));
        assert_eq!(u.rating("ann", "ar-y"), None, "0 removes a rating");
        assert_eq!(u.rating("bob", "al-x"), None, "ratings are per user");
        assert_eq!(u.stations(), vec![(sid, st)]);
        assert_eq!(u.shares_of("ann").len(), 1);
        assert!(u.shares_of("bob").is_empty());
        assert!(u.delete_bookmark("ann", 5).unwrap());
        assert!(!u.delete_bookmark("ann", 5).unwrap());
        u.set_play_queue("ann", None).unwrap();
        assert_eq!(u.play_queue("ann"), None);
    }

    #[test]
    fn a_file_from_before_queues_and_shares_loads_and_keeps_its_data() {
        let dir = tempfile::tempdir().unwrap();
        let old = r#"{"version":1,"next_playlist":2,"starred":{"ann":{"17":5}},
            "playlists":{"1":{"owner":"ann","name":"Road","songs":[17],"created":1,"changed":1}}}"#;
        std::fs::write(dir.path().join("userdata.json"), old).unwrap();
        let u = UserData::open(Some(dir.path())).unwrap();
        assert_eq!(u.starred("ann").len(), 1);
        assert!(u.play_queue("ann").is_none() && u.stations().is_empty());
        u.set_rating("ann", "al-x", 5).unwrap();
        let text = std::fs::read_to_string(dir.path().join(user_file("ann"))).unwrap();
        assert!(text.contains("\"playlists\"") && text.contains("\"ratings\""));
        assert!(!text.contains("\"shares\""), "empty new parts are left out");
        assert_eq!(u.create_playlist(u.playlist(1).unwrap()).unwrap(), 2);
    }

    #[test]
    fn an_expired_share_has_no_visits_and_lists_have_limits() {
        let u = UserData::in_memory();
        u.create_share("old", share("ann", Some(100))).unwrap();
        u.create_share("new", share("ann", Some(300))).unwrap();
        assert!(u.visit_share("old", 100).is_none(), "expired at its time");
        assert!(u.visit_share("gone", 100).is_none());
        assert_eq!(u.visit_share("new", 100).map(|s| s.visits), Some(1));
        assert_eq!(u.visit_share("new", 101).map(|s| s.visits), Some(2));
        assert_eq!(u.share("new").and_then(|s| s.last_visited), Some(101));
        let long = PlayQueue {
            songs: vec![1; MAX_QUEUE_SONGS + 1],
            current: None,
            position: 0,
            changed: 0,
            changed_by: String::new(),
        };
        assert!(matches!(
            u.set_play_queue("ann", Some(long)),
            Err(UserDataError::TooMany { .. })
        ));
        for n in 0..MAX_BOOKMARKS as u32 {
            u.set_bookmark("ann", n, 0, "", 0).unwrap();
        }
        assert!(
            u.set_bookmark("ann", 0, 5, "", 1).is_ok(),
            "moving one is fine"
        );
        assert!(matches!(
            u.set_bookmark("ann", u32::MAX, 0, "", 0),
            Err(UserDataError::TooMany { .. })
        ));
        u.forget_user("ann").unwrap();
        assert!(u.bookmarks("ann").is_empty() && u.shares_of("ann").is_empty());
    }

    fn playlist(owner: &str, songs: usize) -> Playlist {
        Playlist {
            owner: owner.into(),
            name: "list".into(),
            comment: String::new(),
            public: false,
            songs: vec![7; songs],
            created: 1,
            changed: 1,
        }
    }

    #[test]
    fn a_single_file_of_every_user_is_split_into_one_file_per_user_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let old = r#"{"version":1,"next_playlist":5,
            "starred":{"ann":{"17":5},"bob":{"18":6}},
            "playlists":{"4":{"owner":"bob","name":"Mine","public":true,"songs":[17],"created":1,"changed":1}},
            "settings":{"ann":{"listens_public":true}},
            "play_queues":{"ann":{"songs":[1,2],"changed":3}},
            "stations":{"1":{"name":"R","stream_url":"http://r.example/"}},"next_station":2,
            "shares":{"tok":{"owner":"ann","songs":[3],"created":10}}}"#;
        std::fs::write(dir.path().join("userdata.json"), old).unwrap();
        for _ in 0..2 {
            // The second open reads the split files.
            let u = UserData::open(Some(dir.path())).unwrap();
            assert_eq!(u.starred("ann").len(), 1);
            assert_eq!(u.starred("bob").len(), 1);
            assert_eq!(u.playlists("ann").len(), 1, "bob's public playlist");
            assert_eq!(u.playlist(4).map(|p| p.owner), Some("bob".into()));
            assert!(u.listens_public("ann") && !u.listens_public("bob"));
            assert_eq!(u.play_queue("ann").map(|q| q.songs), Some(vec![1, 2]));
            assert_eq!(u.stations().len(), 1);
            assert_eq!(u.share("tok").map(|s| s.owner), Some("ann".into()));
        }
        let server = std::fs::read_to_string(dir.path().join("userdata.json")).unwrap();
        assert!(
            !server.contains("starred") && !server.contains("\"shares\""),
            "{server}"
        );
        assert!(server.contains("\"version\":2"), "{server}");
        assert!(dir.path().join(user_file("bob")).exists());
        let u = UserData::open(Some(dir.path())).unwrap();
        assert_eq!(
            u.create_playlist(playlist("ann", 1)).unwrap(),
            5,
            "ids go on"
        );
    }

    #[test]
    fn one_users_change_rewrites_their_file_only() {
        let dir = tempfile::tempdir().unwrap();
        let u = UserData::open(Some(dir.path())).unwrap();
        u.set_listens_public("cy", true).unwrap();
        u.create_playlist(playlist("ann", MAX_PLAYLIST_SONGS))
            .unwrap();
        u.star("bob", &["1".into()], true, 1).unwrap();
        let ino = |name: &str| {
            use std::os::unix::fs::MetadataExt;
            let m = std::fs::metadata(dir.path().join(name)).unwrap();
            (m.ino(), m.mtime_nsec(), m.len())
        };
        let (ann, server) = (user_file("ann"), "userdata.json");
        let before = (ino(&ann), ino(server));
        let bob = ino(&user_file("bob"));
        for n in 0..5 {
            u.star("bob", &[n.to_string()], true, 2).unwrap();
        }
        assert_ne!(ino(&user_file("bob")), bob, "bob's file is rewritten");
        assert_eq!((ino(&ann), ino(server)), before, "nobody else's");
    }

    #[test]
    fn what_a_user_stores_is_refused_past_its_limits() {
        let u = UserData::in_memory();
        let too_many = UserDataError::TooMany { what: "", max: 0 };
        let is = |e: &UserDataError, like: &UserDataError| {
            std::mem::discriminant(e) == std::mem::discriminant(like)
        };
        let e = u
            .create_playlist(playlist("ann", MAX_PLAYLIST_SONGS + 1))
            .unwrap_err();
        assert!(is(&e, &too_many), "{e}");
        let mut named = playlist("ann", 1);
        named.name = "n".repeat(MAX_PLAYLIST_NAME + 1);
        let e = u.create_playlist(named.clone()).unwrap_err();
        assert!(e.to_string().contains("playlist name"), "{e}");
        named.name = "n".repeat(MAX_PLAYLIST_NAME);
        named.comment = "c".repeat(MAX_PLAYLIST_COMMENT + 1);
        assert!(u.create_playlist(named).is_err());
        let mut last = 0;
        for _ in 0..MAX_PLAYLISTS {
            last = u.create_playlist(playlist("ann", 1)).unwrap();
        }
        let e = u.create_playlist(playlist("ann", 1)).unwrap_err();
        assert!(e.to_string().contains("500 playlists"), "{e}");
        assert!(u.create_playlist(playlist("bob", 1)).is_ok(), "per user");
        let e = u
            .put_playlist(last, playlist("ann", MAX_PLAYLIST_SONGS + 1))
            .unwrap_err();
        assert!(is(&e, &too_many), "{e}");
        assert_eq!(u.playlist(last).map(|p| p.songs.len()), Some(1));
    }

    #[test]
    fn a_snapshot_of_the_files_opens_as_the_same_store() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        assert!(snapshot_document(a.path()).unwrap().is_none());
        let u = UserData::open(Some(a.path())).unwrap();
        let id = u.create_playlist(playlist("ann", 2)).unwrap();
        u.star("bob", &["9".into()], true, 4).unwrap();
        u.set_listens_public("bob", true).unwrap();
        let doc = snapshot_document(a.path()).unwrap().unwrap();
        std::fs::write(
            b.path().join(user_file("old")),
            r#"{"version":2,"user":"old","starred":{"1":1}}"#,
        )
        .unwrap();
        std::fs::write(b.path().join("userdata.json"), doc).unwrap();
        let v = UserData::open(Some(b.path())).unwrap();
        assert_eq!(v.playlist(id), u.playlist(id));
        assert_eq!(v.starred("bob"), u.starred("bob"));
        assert!(v.listens_public("bob"));
        assert!(
            v.starred("old").is_empty(),
            "the snapshot is the whole store"
        );
    }
}
