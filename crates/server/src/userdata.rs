//! Per-user data: the Subsonic API's stars and playlists, and each
//! user's settings (whether their listening history is public), kept in
//! one JSON document `DATA_DIR/subsonic/userdata.json`, rewritten whole
//! on every change (written to a temporary file, fsynced, renamed over
//! the old one), so a crash leaves the old or the new state, never a mix.
//! A change another process made to the file (`spindle user privacy`
//! beside a running server) is read back before the next change and
//! before a setting is read.
//!
//! ```json
//! {"version":1,"next_playlist":3,
//!  "starred":{"ann":{"17":1700000000,"al-…":1700000100}},
//!  "playlists":{"1":{"owner":"ann","name":"Road","comment":"","public":false,
//!                    "songs":[17,4],"created":1700000000,"changed":1700000000}},
//!  "settings":{"ann":{"listens_public":true}}}
//! ```
//!
//! Stars are by the id a client sees (song, `al-…` album, `ar-…` artist).
//! Playlists hold entry ids; a song whose entry is gone is skipped when
//! the playlist is shown.

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
        let mut d = lock(&self.data);
        self.refresh(&mut d);
        let out = f(&mut d);
        if let Some(path) = &self.path {
            let bytes = serde_json::to_vec(&*d).map_err(|source| UserDataError::Format {
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
        Ok(out)
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
}
