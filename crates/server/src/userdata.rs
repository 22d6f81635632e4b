//! Per-user data: the Subsonic API's stars, playlists, album and artist
//! ratings, play queues and bookmarks, each user's settings (whether
//! their listening history is public), and the server's internet radio
//! stations and share links, kept in one JSON document
//! `DATA_DIR/subsonic/userdata.json`, rewritten whole on every change
//! (written to a temporary file, fsynced, renamed over the old one), so a
//! crash leaves the old or the new state, never a mix. A change another
//! process made to the file (`spindle user privacy` beside a running
//! server) is read back before the next change and before a setting is
//! read. The format, field by field: `docs/userdata-format.md`.
//!
//! Stars and ratings are by the id a client sees (song, `al-…` album,
//! `ar-…` artist); song ratings live in the library instead
//! ([`crate::subsonic`]'s `setRating`). Playlists, play queues, bookmarks
//! and shares hold entry ids; a song whose entry is gone is skipped when
//! they are shown. Every list a client can grow has a limit (the `MAX_`
//! constants), so the file stays small enough to rewrite on each change.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::state::lock;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UserDataError {
    /// A list would grow past its limit.
    #[error("at most {max} {what} are kept: delete some first")]
    TooMany { what: &'static str, max: usize },
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

#[derive(Debug, Default, Serialize, Deserialize)]
struct Data {
    version: u32,
    next_playlist: u64,
    #[serde(default)]
    starred: BTreeMap<String, BTreeMap<String, i64>>,
    #[serde(default)]
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

fn is_zero(n: &u64) -> bool {
    *n == 0
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

/// The folder under the data dir that holds `userdata.json`.
pub const USERDATA_DIR: &str = "subsonic";

/// The store; see the module doc.
pub struct UserData {
    path: Option<PathBuf>,
    data: Mutex<Data>,
    /// (mtime, length) of the file as last read or written.
    seen: Mutex<Stamp>,
    /// When share visits were last written ([`VISIT_WRITE_EVERY`]).
    visits_written: std::sync::atomic::AtomicI64,
}

type Stamp = Option<(std::time::SystemTime, u64)>;

fn stamp(path: &Path) -> Stamp {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// `userdata.json`'s mode: its owner's only, whatever the umask.
const FILE_MODE: u32 = 0o600;
/// The mode of a folder [`UserData::open`] creates for it.
const DIR_MODE: u32 = 0o700;

/// Creates (truncating) a file only its owner may read, mode set explicitly.
fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(path)?;
    f.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
    Ok(f)
}

/// Narrows a file an older Spindle left readable by others to 0600.
fn make_private(path: &Path) -> std::io::Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.permissions().mode() & 0o777 != FILE_MODE => {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(FILE_MODE))
        }
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
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

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> UserDataError + '_ {
    move |source| UserDataError::Io {
        path: path.to_owned(),
        source,
    }
}

impl UserData {
    /// Opens (or starts) the store in `dir`; `None` keeps it in memory.
    pub fn open(dir: Option<&Path>) -> Result<UserData, UserDataError> {
        let Some(dir) = dir else {
            return Ok(UserData::in_memory());
        };
        create_private_dir(dir).map_err(io(dir))?;
        let path = dir.join("userdata.json");
        make_private(&path).map_err(io(&path))?;
        let data = match std::fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).map_err(|source| UserDataError::Format {
                    path: path.clone(),
                    source,
                })?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Data {
                version: 1,
                next_playlist: 1,
                ..Data::default()
            },
            Err(e) => return Err(io(&path)(e)),
        };
        Ok(UserData {
            seen: Mutex::new(stamp(&path)),
            path: Some(path),
            data: Mutex::new(data),
            visits_written: Default::default(),
        })
    }

    pub fn in_memory() -> UserData {
        UserData {
            path: None,
            data: Mutex::new(Data {
                version: 1,
                next_playlist: 1,
                ..Data::default()
            }),
            seen: Mutex::new(None),
            visits_written: Default::default(),
        }
    }

    /// Re-reads the file if another process changed it since it was last
    /// read or written; a file that cannot be read or parsed leaves the
    /// data as it is (the next write replaces it).
    fn refresh(&self, d: &mut Data) {
        let Some(path) = &self.path else {
            return;
        };
        let now = stamp(path);
        let mut seen = lock(&self.seen);
        if now == *seen {
            return;
        }
        if let Some(fresh) = std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Data>(&b).ok())
        {
            *d = fresh;
            *seen = now;
        }
    }

    fn change<T>(&self, f: impl FnOnce(&mut Data) -> T) -> Result<T, UserDataError> {
        self.try_change(|d| Ok(f(d)))
    }

    /// [`UserData::change`] of a change that may be refused: `f` checks
    /// before it changes anything, and a refusal writes nothing.
    fn try_change<T>(
        &self,
        f: impl FnOnce(&mut Data) -> Result<T, UserDataError>,
    ) -> Result<T, UserDataError> {
        let mut d = lock(&self.data);
        self.refresh(&mut d);
        let out = f(&mut d)?;
        self.write(&d)?;
        Ok(out)
    }

    /// Writes `d` to the file (nothing for a store in memory).
    fn write(&self, d: &Data) -> Result<(), UserDataError> {
        if let Some(path) = &self.path {
            let bytes = serde_json::to_vec(d).map_err(|source| UserDataError::Format {
                path: path.clone(),
                source,
            })?;
            let tmp = path.with_extension("json.tmp");
            let mut f = create_private(&tmp).map_err(io(&tmp))?;
            f.write_all(&bytes).map_err(io(&tmp))?;
            f.sync_all().map_err(io(&tmp))?;
            std::fs::rename(&tmp, path).map_err(io(path))?;
            *lock(&self.seen) = stamp(path);
            if let Some(dir) = path.parent() {
                if let Ok(d) = std::fs::File::open(dir) {
                    let _ = d.sync_all();
                }
            }
        }
        Ok(())
    }

    /// Whether the user's listening history is public (see
    /// [`Settings::listens_public`]); false for a user never set.
    pub fn listens_public(&self, user: &str) -> bool {
        let mut d = lock(&self.data);
        self.refresh(&mut d);
        d.settings.get(user).is_some_and(|s| s.listens_public)
    }

    /// Makes the user's listening history public or private.
    pub fn set_listens_public(&self, user: &str, public: bool) -> Result<(), UserDataError> {
        self.change(|d| {
            let s = d.settings.entry(user.to_owned()).or_default();
            s.listens_public = public;
            if *s == Settings::default() {
                d.settings.remove(user);
            }
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
        self.change(|d| {
            let s = d.starred.entry(user.to_owned()).or_default();
            for id in ids {
                if on {
                    s.entry(id.clone()).or_insert(now);
                } else {
                    s.remove(id);
                }
            }
        })
    }

    /// The ids a user starred, with when.
    pub fn starred(&self, user: &str) -> BTreeMap<String, i64> {
        lock(&self.data)
            .starred
            .get(user)
            .cloned()
            .unwrap_or_default()
    }

    /// Playlists the user may see: their own and public ones, by id.
    pub fn playlists(&self, user: &str) -> Vec<(u64, Playlist)> {
        lock(&self.data)
            .playlists
            .iter()
            .filter(|(_, p)| p.owner == user || p.public)
            .map(|(id, p)| (*id, p.clone()))
            .collect()
    }

    pub fn playlist(&self, id: u64) -> Option<Playlist> {
        lock(&self.data).playlists.get(&id).cloned()
    }

    pub fn create_playlist(&self, p: Playlist) -> Result<u64, UserDataError> {
        self.change(|d| {
            let id = d.next_playlist.max(1);
            d.next_playlist = id + 1;
            d.playlists.insert(id, p);
            id
        })
    }

    /// Replaces a playlist; false when there is none with that id.
    pub fn put_playlist(&self, id: u64, p: Playlist) -> Result<bool, UserDataError> {
        self.change(|d| match d.playlists.get_mut(&id) {
            Some(old) => {
                *old = p;
                true
            }
            None => false,
        })
    }

    pub fn delete_playlist(&self, id: u64) -> Result<bool, UserDataError> {
        self.change(|d| d.playlists.remove(&id).is_some())
    }

    /// The user's rating (1..=5) of an album or artist id.
    pub fn rating(&self, user: &str, id: &str) -> Option<u8> {
        lock(&self.data).ratings.get(user)?.get(id).copied()
    }

    /// Rates an album or artist id 1..=5; 0 removes the rating.
    pub fn set_rating(&self, user: &str, id: &str, rating: u8) -> Result<(), UserDataError> {
        self.change(|d| {
            let r = d.ratings.entry(user.to_owned()).or_default();
            if rating == 0 {
                r.remove(id);
            } else {
                r.insert(id.to_owned(), rating.min(5));
            }
            if r.is_empty() {
                d.ratings.remove(user);
            }
        })
    }

    pub fn play_queue(&self, user: &str) -> Option<PlayQueue> {
        lock(&self.data).play_queues.get(user).cloned()
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
        self.change(|d| match q {
            Some(q) => {
                d.play_queues.insert(user.to_owned(), q);
            }
            None => {
                d.play_queues.remove(user);
            }
        })
    }

    /// The user's bookmarks by entry id.
    pub fn bookmarks(&self, user: &str) -> BTreeMap<u32, Bookmark> {
        lock(&self.data)
            .bookmarks
            .get(user)
            .cloned()
            .unwrap_or_default()
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
        self.try_change(|d| {
            let b = d.bookmarks.entry(user.to_owned()).or_default();
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
        self.change(|d| {
            let Some(b) = d.bookmarks.get_mut(user) else {
                return false;
            };
            let gone = b.remove(&song).is_some();
            if b.is_empty() {
                d.bookmarks.remove(user);
            }
            gone
        })
    }

    /// The internet radio stations by id.
    pub fn stations(&self) -> Vec<(u64, Station)> {
        lock(&self.data)
            .stations
            .iter()
            .map(|(id, s)| (*id, s.clone()))
            .collect()
    }

    pub fn add_station(&self, s: Station) -> Result<u64, UserDataError> {
        self.try_change(|d| {
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
        self.change(|d| match d.stations.get_mut(&id) {
            Some(old) => {
                *old = s;
                true
            }
            None => false,
        })
    }

    pub fn delete_station(&self, id: u64) -> Result<bool, UserDataError> {
        self.change(|d| d.stations.remove(&id).is_some())
    }

    /// A share by its token (live or not).
    pub fn share(&self, token: &str) -> Option<Share> {
        lock(&self.data).shares.get(token).cloned()
    }

    /// The user's shares by token.
    pub fn shares_of(&self, user: &str) -> Vec<(String, Share)> {
        lock(&self.data)
            .shares
            .iter()
            .filter(|(_, s)| s.owner == user)
            .map(|(t, s)| (t.clone(), s.clone()))
            .collect()
    }

    /// Every share by token (for an administrator).
    pub fn all_shares(&self) -> Vec<(String, Share)> {
        lock(&self.data)
            .shares
            .iter()
            .map(|(t, s)| (t.clone(), s.clone()))
            .collect()
    }

    /// Stores a new share under `token`.
    pub fn create_share(&self, token: &str, s: Share) -> Result<(), UserDataError> {
        if s.songs.len() > MAX_SHARE_SONGS {
            return Err(UserDataError::TooMany {
                what: "songs in a share",
                max: MAX_SHARE_SONGS,
            });
        }
        self.try_change(|d| {
            if d.shares.values().filter(|x| x.owner == s.owner).count() >= MAX_SHARES {
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
        self.change(|d| match d.shares.get_mut(token) {
            Some(old) => {
                *old = s;
                true
            }
            None => false,
        })
    }

    pub fn delete_share(&self, token: &str) -> Result<bool, UserDataError> {
        self.change(|d| d.shares.remove(token).is_some())
    }

    /// Counts a visit of a live share's page and returns the share;
    /// `None` for no share or an expired one. Written to the file at most
    /// every [`VISIT_WRITE_EVERY`] seconds.
    pub fn visit_share(&self, token: &str, now: i64) -> Option<Share> {
        let mut d = lock(&self.data);
        let s = d.shares.get_mut(token).filter(|s| s.live(now))?;
        s.visits += 1;
        s.last_visited = Some(now);
        let out = s.clone();
        let last = self
            .visits_written
            .load(std::sync::atomic::Ordering::Relaxed);
        if now - last >= VISIT_WRITE_EVERY {
            self.visits_written
                .store(now, std::sync::atomic::Ordering::Relaxed);
            if let Err(e) = self.write(&d) {
                tracing::warn!("could not record a share visit: {e}");
            }
        }
        Some(out)
    }

    /// Forgets everything of a deleted user: stars, ratings, settings,
    /// play queue, bookmarks, their playlists and their shares.
    pub fn forget_user(&self, user: &str) -> Result<(), UserDataError> {
        self.change(|d| {
            d.starred.remove(user);
            d.ratings.remove(user);
            d.settings.remove(user);
            d.play_queues.remove(user);
            d.bookmarks.remove(user);
            d.playlists.retain(|_, p| p.owner != user);
            d.shares.retain(|_, s| s.owner != user);
        })
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
        let file = dir.join("userdata.json");
        assert_eq!(mode(&dir), DIR_MODE);
        assert_eq!(mode(&file), FILE_MODE);
        // A file an older Spindle left readable by all is narrowed on open.
        drop(u);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        UserData::open(Some(&dir)).unwrap();
        assert_eq!(mode(&file), FILE_MODE);
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
        let text = std::fs::read_to_string(dir.path().join("userdata.json")).unwrap();
        assert!(text.contains("\"playlists\"") && text.contains("\"ratings\""));
        assert!(!text.contains("\"shares\""), "empty new parts are left out");
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
}
