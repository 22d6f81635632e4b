//! The music side of the server state: the music folders it serves and
//! how their files are reached (directly, or through the storage tiers),
//! the [`Catalog`] of the library over them (cached until the library
//! changes), and per-user data (Subsonic stars and playlists, whether a
//! user's listening history is public). A field of
//! [`crate::AppState`]; it holds no request state of its own.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use spindle_media::{MusicRoot, OpenRefused};
use spindle_store::Db;

use crate::accounts::Accounts;
use crate::catalog::{Catalog, Song};
use crate::state::lock;
use crate::userdata::{UserData, UserDataError, USERDATA_DIR};

/// Why the music side could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MusicError {
    #[error("music folder {}: {source}", path.display())]
    Folder {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    UserData(#[from] UserDataError),
}

/// Music folders, the catalog cache and user data.
pub struct Music {
    roots: Vec<PathBuf>,
    /// The same folders, for opening files under them.
    folders: Vec<MusicRoot>,
    version: AtomicU64,
    cache: Mutex<Option<(CacheKey, std::time::Instant, Arc<Catalog>)>>,
    pub(crate) userdata: UserData,
    /// The storage tiers, when `[tiers]` is configured: streams go
    /// through them instead of straight to the music folder.
    tiers: Option<Arc<spindle_tiers::Tiers>>,
}

type CacheKey = (u64, usize, usize);

/// The catalog is rebuilt at least this often, so play counts the linker
/// writes after scrobbles show up in "frequent" and "recent" lists.
const CATALOG_TTL: std::time::Duration = std::time::Duration::from_secs(10);

impl Music {
    /// Serves `roots` (each made canonical); user data lives under
    /// `data_dir/subsonic/`.
    pub fn new(roots: &[PathBuf], data_dir: &Path) -> Result<Music, MusicError> {
        let mut canon = Vec::new();
        for r in roots {
            let c = std::fs::canonicalize(r).map_err(|source| MusicError::Folder {
                path: r.clone(),
                source,
            })?;
            canon.push(c);
        }
        let folders = canon
            .iter()
            .map(|c| {
                MusicRoot::new(c).map_err(|e| MusicError::Folder {
                    path: c.clone(),
                    source: std::io::Error::other(e),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Music {
            folders,
            roots: canon,
            version: AtomicU64::new(0),
            cache: Mutex::new(None),
            userdata: UserData::open(Some(&data_dir.join(USERDATA_DIR)))?,
            tiers: None,
        })
    }

    /// No music folders and nothing stored (the scrobble-only server of
    /// tests and benchmarks).
    pub fn none() -> Music {
        Music {
            folders: Vec::new(),
            roots: Vec::new(),
            version: AtomicU64::new(0),
            cache: Mutex::new(None),
            userdata: UserData::in_memory(),
            tiers: None,
        }
    }

    /// Streams through `tiers` (hot folder, cold replicas, failover).
    pub fn with_tiers(mut self, tiers: Arc<spindle_tiers::Tiers>) -> Music {
        self.tiers = Some(tiers);
        self
    }

    /// The storage tiers, if configured.
    pub fn tiers(&self) -> Option<&Arc<spindle_tiers::Tiers>> {
        self.tiers.as_ref()
    }

    /// A song as the tiers name it: its path below its music folder.
    pub fn track_of(song: &Song) -> spindle_tiers::TrackRef {
        spindle_tiers::TrackRef {
            key: song.path.clone(),
            folder: Some(song.folder),
        }
    }

    /// Whether the user's listening history is public.
    pub fn listens_public(&self, user: &str) -> bool {
        self.userdata.listens_public(user)
    }

    /// Makes the user's listening history public or private (stored).
    pub fn set_listens_public(&self, user: &str, public: bool) -> Result<(), UserDataError> {
        self.userdata.set_listens_public(user, public)
    }

    /// The music folders, canonical.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Says the library changed (after a scan), so the next request
    /// rebuilds the catalog.
    pub fn library_changed(&self) {
        self.version.fetch_add(1, Ordering::SeqCst);
    }

    /// The catalog of the library as it is now. Builds it when the
    /// library changed since the last call; call from a blocking thread.
    pub fn catalog(&self, db: &Db) -> Arc<Catalog> {
        let lib = db.read();
        let key = (
            self.version.load(Ordering::SeqCst),
            lib.len(),
            lib.prop_count(),
        );
        let mut c = lock(&self.cache);
        if let Some((k, built, cat)) = c.as_ref() {
            if *k == key && built.elapsed() < CATALOG_TTL {
                return cat.clone();
            }
        }
        let cat = Arc::new(Catalog::build(&lib, &self.roots));
        *c = Some((key, std::time::Instant::now(), cat.clone()));
        cat
    }

    /// The catalog as last built, if it is younger than the cache's
    /// lifetime and no rescan was reported since; `None` otherwise. Takes
    /// no library lock and builds nothing, so an async thread may call it
    /// (a stream's lookup); a song missing from it may just be new.
    pub fn recent_catalog(&self) -> Option<Arc<Catalog>> {
        let c = lock(&self.cache);
        let (k, built, cat) = c.as_ref()?;
        (k.0 == self.version.load(Ordering::SeqCst) && built.elapsed() < CATALOG_TTL)
            .then(|| cat.clone())
    }

    /// The music folder of a song, through which its files (and the
    /// files beside it, such as cover images) are opened.
    pub fn folder_of(&self, song: &Song) -> Result<&MusicRoot, OpenRefused> {
        self.folders
            .get(song.folder)
            .ok_or_else(|| OpenRefused::Io {
                path: song.file.clone(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such music folder"),
            })
    }

    /// The file of a song, opened through its music folder's checked open
    /// (a regular file, inside the folder once symlinks are resolved): the
    /// only way from a request to a song's file. A fresh descriptor of
    /// the caller's own (for reads that move its position, like lofty's).
    /// Refusals other than a missing file are logged.
    pub fn file_of(&self, song: &Song) -> Result<(std::fs::File, std::fs::Metadata), OpenRefused> {
        self.folder_of(song)?
            .open(&song.file)
            .inspect_err(log_refused)
    }

    /// The file of a song opened for streaming, as [`Music::file_of`]
    /// checks it, from the open-file cache of `reader` (the state's
    /// [`crate::stream::Reader`], which then reads it).
    pub fn stream_of(
        &self,
        reader: &crate::stream::Reader,
        song: &Song,
    ) -> Result<crate::stream::OpenFile, OpenRefused> {
        reader
            .open(self.folder_of(song)?, &song.file)
            .inspect_err(log_refused)
    }
}

/// Whether `viewer` (the caller's authenticated user, if any) may read
/// `owner`'s listening history: the owner always, anyone else only when
/// the owner made it public; nobody when there is no such user. The
/// ListenBrainz and Last.fm read calls answer a refusal the same way
/// whether the user is private or does not exist, so user names cannot
/// be told apart. Without `music` (a router without the music side) only
/// the owner may.
pub(crate) fn history_readable(
    accounts: &Accounts,
    music: Option<&Music>,
    owner: &str,
    viewer: Option<&str>,
) -> bool {
    if !accounts.user_exists(owner) {
        return false;
    }
    viewer == Some(owner) || music.is_some_and(|m| m.listens_public(owner))
}

/// Logs a refused open of a file under a music folder (a missing file is
/// not news), so an administrator sees links that lead out of a folder.
fn log_refused(e: &OpenRefused) {
    if !e.is_missing() {
        tracing::warn!("refused to open a file: {e}");
    }
}
