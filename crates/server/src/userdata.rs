//! Per-user data of the Subsonic API: stars and playlists, kept in one
//! JSON document `DATA_DIR/subsonic/userdata.json`, rewritten whole on
//! every change (written to a temporary file, fsynced, renamed over the
//! old one), so a crash leaves the old or the new state, never a mix.
//!
//! ```json
//! {"version":1,"next_playlist":3,
//!  "starred":{"ann":{"17":1700000000,"al-…":1700000100}},
//!  "playlists":{"1":{"owner":"ann","name":"Road","comment":"","public":false,
//!                    "songs":[17,4],"created":1700000000,"changed":1700000000}}}
//! ```
//!
//! Stars are by the id a client sees (song, `al-…` album, `ar-…` artist).
//! Playlists hold entry ids; a song whose entry is gone is skipped when
//! the playlist is shown.

use std::collections::BTreeMap;
use std::io::Write;
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
}

/// The store; see the module doc.
pub struct UserData {
    path: Option<PathBuf>,
    data: Mutex<Data>,
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
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let path = dir.join("userdata.json");
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
        }
    }

    fn change<T>(&self, f: impl FnOnce(&mut Data) -> T) -> Result<T, UserDataError> {
        let mut d = lock(&self.data);
        let out = f(&mut d);
        if let Some(path) = &self.path {
            let bytes = serde_json::to_vec(&*d).map_err(|source| UserDataError::Format {
                path: path.clone(),
                source,
            })?;
            let tmp = path.with_extension("json.tmp");
            let mut f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
            f.write_all(&bytes).map_err(io(&tmp))?;
            f.sync_all().map_err(io(&tmp))?;
            std::fs::rename(&tmp, path).map_err(io(path))?;
            if let Some(dir) = path.parent() {
                if let Ok(d) = std::fs::File::open(dir) {
                    let _ = d.sync_all();
                }
            }
        }
        Ok(out)
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
}
