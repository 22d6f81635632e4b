//! The music side of the server state: the music folders it serves and
//! how their files are reached (directly, or through the storage tiers),
//! the [`Catalog`] of the library over them, and per-user data (Subsonic
//! stars and playlists, whether a user's listening history is public). A
//! field of the server's state; it holds no request state of its own.
//!
//! The catalog is kept current without making requests wait for it
//! (`docs/catalog.md`): the refresher thread ([`Music::start_refresher`])
//! reads the entries changed since the served catalog, in small batches
//! of the library's lock, and swaps the updated catalog in; requests get
//! the current catalog meanwhile. A request waits only for the first
//! catalog, and for the update that brings in a few added or removed
//! entries or properties (an upload, a tag edit; see
//! [`Music::catalog`]). Changed values alone (play counts) are brought
//! in at most every [`CATALOG_TTL`]. A reported rescan ([`Music::library_changed`])
//! waits for its update on the scan's own thread, so requests after a
//! scan find it made.
//!
//! One refresh runs at a time. Without a refresher thread (a `Music` used
//! on its own, or after [`Music::stop_refresher`]) the request that finds
//! the catalog out of date updates it itself.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use spindle_media::{MusicRoot, OpenRefused};
use spindle_store::Db;

use crate::accounts::Accounts;
use crate::catalog::{Catalog, CatalogOptions, Song};
use crate::sync::lock;
use crate::userdata::{UserData, UserDataError, USERDATA_DIR};

mod cache;
mod saved;

use cache::Cache;

/// Changed entries a request waits for when entries or properties were
/// added or removed (an upload, a tag edit: its caller expects to see
/// it); more are brought in behind it while it gets the current catalog.
pub const WAIT_FOR_CHANGES: usize = 1_000;

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
    /// The catalog and how up to date it is, shared with the refresher.
    cache: Arc<Cache>,
    /// The refresher thread and its library, while it runs.
    refresher: Mutex<Option<(JoinHandle<()>, Arc<Db>)>>,
    pub userdata: UserData,
    /// The storage tiers, when `[tiers]` is configured: streams go
    /// through them instead of straight to the music folder.
    tiers: Option<Arc<spindle_tiers::Tiers>>,
}

/// How long a catalog is served before the library is looked at again
/// for changed values (the play counts the linker writes after
/// scrobbles, which "frequent" and "recent" lists show): they appear
/// this long after the scrobble, plus an update's time.
pub const CATALOG_TTL: Duration = Duration::from_secs(10);

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
        let mut cache = Cache::new(canon.clone(), CatalogOptions::default());
        cache.saved = Some(data_dir.join(crate::catalog::saved::CATALOG_FILE));
        Ok(Music {
            folders,
            cache: Arc::new(cache),
            roots: canon,
            refresher: Mutex::new(None),
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
            cache: Arc::new(Cache::new(Vec::new(), CatalogOptions::default())),
            refresher: Mutex::new(None),
            userdata: UserData::in_memory(),
            tiers: None,
        }
    }

    /// Streams through `tiers` (hot folder, cold replicas, failover).
    /// Builds catalogs with `opts` (the sort-name articles of the server
    /// config) instead of the defaults. Call before the first catalog.
    pub fn with_catalog_options(mut self, opts: crate::catalog::CatalogOptions) -> Music {
        let mut cache = Cache::new(self.cache.roots.clone(), opts);
        cache.saved.clone_from(&self.cache.saved);
        self.cache = Arc::new(cache);
        self
    }

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

    /// Says the library changed (after a scan). The next request gets
    /// the catalog of the changed library; while the refresher thread
    /// runs, this waits until it has built it (call from a background
    /// thread, as a scan's is), so requests then need not.
    pub fn library_changed(&self) {
        self.cache.version.fetch_add(1, Ordering::SeqCst);
        self.cache.refresh(None, None);
    }

    /// The catalog of the library. The current one when the library did
    /// not change since it was made, or changed only in values (play
    /// counts) for less than [`CATALOG_TTL`]; when it did, the current
    /// one too while the refresher thread brings it up to date, unless entries or
    /// properties were added or removed (an upload, a tag edit) by at
    /// most [`WAIT_FOR_CHANGES`] changed entries: then this waits for
    /// that update (a read of those entries, not of the library). Before
    /// the first catalog, this waits for it. Without a refresher thread
    /// (a `Music` used on its own, or after [`Music::stop_refresher`])
    /// the request that finds the catalog out of date updates it itself.
    /// Call from a blocking thread.
    pub fn catalog(&self, db: &Db) -> Arc<Catalog> {
        let lib = db.read();
        let stamp = self.cache.stamp(&lib);
        let mut s = lock(&self.cache.slot);
        let Some(b) = s.current.as_ref() else {
            drop((s, lib));
            return self.cache.refresh(Some(db), Some(stamp));
        };
        if b.stamp == stamp {
            return b.cat.clone();
        }
        let counts = (stamp.entries, stamp.properties) != (b.stamp.entries, b.stamp.properties);
        let wait = counts
            && b.stamp.version == stamp.version
            && lib
                .changed_since(b.stamp.changes)
                .is_some_and(|ids| ids.len() <= WAIT_FOR_CHANGES);
        drop(lib);
        if wait {
            drop(s);
            return self.cache.refresh(Some(db), Some(stamp));
        }
        // Changed values alone (the play counts the linker writes after
        // scrobbles) are brought in at most every `ttl`: each new
        // catalog costs its views again.
        if !counts && b.stamp.version == stamp.version && b.checked.elapsed() < self.cache.ttl {
            return b.cat.clone();
        }
        if s.refresher {
            let cat = b.cat.clone();
            self.cache.ask(&mut s);
            return cat;
        }
        drop(s);
        self.cache.refresh(Some(db), None)
    }

    /// The catalog as last built, if no rescan was reported since and it
    /// is kept up to date (by the refresher thread, or it is younger than
    /// [`CATALOG_TTL`]); `None` otherwise. Takes no library lock and
    /// builds nothing, so an async thread may call it (a stream's
    /// lookup); a song missing from it may just be new.
    pub fn recent_catalog(&self) -> Option<Arc<Catalog>> {
        let s = lock(&self.cache.slot);
        let b = s.current.as_ref()?;
        (b.stamp.version == self.cache.version.load(Ordering::SeqCst)
            && (s.refresher || b.checked.elapsed() < self.cache.ttl))
            .then(|| b.cat.clone())
    }

    /// Starts the refresher thread over `db`, which builds the first
    /// catalog at once and then every one asked for, one at a time, off
    /// the requests' threads. Before it starts, the catalog saved at the
    /// last stop is loaded when it is of the library as it opened (the
    /// thread then brings in only what changed since). Stopped and
    /// joined by [`Music::stop_refresher`] (and when the `Music` is
    /// dropped), which saves the catalog. A thread that cannot be started
    /// is logged; requests then rebuild the catalog themselves.
    pub fn start_refresher(&self, db: Arc<Db>) {
        let mut slot = lock(&self.refresher);
        if slot.is_some() {
            return;
        }
        let loaded = lock(&self.cache.slot).current.is_none() && self.cache.load_saved(&db);
        {
            let mut s = lock(&self.cache.slot);
            s.stopping = false;
            s.refresher = true;
            s.wanted = s.current.is_none() || loaded;
        }
        let (cache, on) = (self.cache.clone(), db.clone());
        match std::thread::Builder::new()
            .name("spindle-catalog".into())
            .spawn(move || cache.run(&on))
        {
            Ok(t) => *slot = Some((t, db)),
            Err(e) => {
                lock(&self.cache.slot).refresher = false;
                tracing::warn!(
                    "could not start the catalog thread ({e}); requests will rebuild the catalog"
                );
            }
        }
    }

    /// Stops the refresher thread after the build it is running, and
    /// joins it; requests then rebuild the catalog themselves. Then saves
    /// the catalog, brought up to date, for the next start (when the
    /// music side has a data directory). Blocks: call from a blocking
    /// thread.
    pub fn stop_refresher(&self) {
        let t = lock(&self.refresher).take();
        {
            let mut s = lock(&self.cache.slot);
            s.stopping = true;
            s.refresher = false;
            self.cache.changed.notify_all();
        }
        if let Some((t, db)) = t {
            if t.join().is_err() {
                tracing::error!("the catalog thread panicked");
            }
            self.cache.save(&db);
        }
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
    /// checks it, by `opener` (the server's open-file cache, which then
    /// reads it).
    pub fn stream_of<O: Opener + ?Sized>(
        &self,
        opener: &O,
        song: &Song,
    ) -> Result<O::File, OpenRefused> {
        opener
            .open(self.folder_of(song)?, &song.file)
            .inspect_err(log_refused)
    }
}

/// What opens a song's file below its music folder for streaming (the
/// server's open-file cache).
pub trait Opener {
    type File;
    fn open(&self, root: &MusicRoot, path: &std::path::Path) -> Result<Self::File, OpenRefused>;
}

impl<T: Opener + ?Sized> Opener for Arc<T> {
    type File = T::File;

    fn open(&self, root: &MusicRoot, path: &std::path::Path) -> Result<T::File, OpenRefused> {
        (**self).open(root, path)
    }
}

impl Drop for Music {
    fn drop(&mut self) {
        self.stop_refresher();
    }
}

/// Whether `viewer` (the caller's authenticated user, if any) may read
/// `owner`'s listening history: the owner always, anyone else only when
/// the owner made it public; nobody when there is no such user. The
/// ListenBrainz and Last.fm read calls answer a refusal the same way
/// whether the user is private or does not exist, so user names cannot
/// be told apart. Without `music` (a router without the music side) only
/// the owner may.
pub fn history_readable(
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
/// Logs a refusal other than a missing file.
pub fn log_refused(e: &OpenRefused) {
    if !e.is_missing() {
        tracing::warn!("refused to open a file: {e}");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc;
    use std::time::Instant;

    use spindle_query::Value;
    use spindle_store::Op;

    use super::*;
    use crate::testlib::{self, Row, ROOT};

    const ROWS: &[Row<'static>] = &[
        ("A/1.flac", "A", "X", "one", "Jazz", 1),
        ("B/2.flac", "B", "Y", "two", "Pop", 0),
    ];

    /// How long a test waits for something that should happen at once.
    const PATIENCE: Duration = Duration::from_secs(20);

    /// A builder that counts its builds and, while `hold` is set, tells
    /// `entered` it started and waits for `release` before building.
    struct Probe {
        builds: AtomicUsize,
        hold: Mutex<Option<(mpsc::Sender<()>, mpsc::Receiver<()>)>>,
    }

    /// A catalog cache over [`ROOT`] (nothing read from it) whose new
    /// catalogs go through `probe`, checked every `ttl`.
    fn cache(probe: &Arc<Probe>, ttl: Duration) -> Cache {
        let p = probe.clone();
        let mut cache = Cache::new(vec![PathBuf::from(ROOT)], CatalogOptions::default());
        cache.hook = Box::new(move || {
            if let Some((entered, release)) = lock(&p.hold).take() {
                entered.send(()).unwrap();
                release.recv().unwrap();
            }
            p.builds.fetch_add(1, Ordering::SeqCst);
        });
        cache.ttl = ttl;
        cache
    }

    /// A `Music` over [`cache`].
    fn music(probe: &Arc<Probe>, ttl: Duration) -> Music {
        let cache = cache(probe, ttl);
        let mut m = Music::none();
        m.cache = Arc::new(cache);
        m
    }

    fn probe() -> Arc<Probe> {
        Arc::new(Probe {
            builds: AtomicUsize::new(0),
            hold: Mutex::new(None),
        })
    }

    /// The library of [`ROWS`] (kept while the guard lives) and a
    /// [`music`] over it through `probe`, its refresher started.
    fn started(probe: &Arc<Probe>, ttl: Duration) -> (tempfile::TempDir, Arc<Db>, Arc<Music>) {
        let (dir, db) = testlib::library(ROWS);
        let db = Arc::new(db);
        let m = Arc::new(music(probe, ttl));
        m.start_refresher(db.clone());
        (dir, db, m)
    }

    /// Sets entry 2's play count (the linker's delete-and-add: the
    /// library's counts stay the same).
    fn play(db: &Db, plays: i64) {
        db.commit(vec![
            Op::DelKey {
                entry: 2,
                key: "timesplayed".into(),
                source: Some("server".into()),
            },
            Op::AddProp {
                entry: 2,
                key: "timesplayed".into(),
                source: "server".into(),
                value: Value::Int(plays),
            },
        ])
        .unwrap();
    }

    fn plays(cat: &Catalog) -> i64 {
        cat.songs.iter().find(|s| s.id == 2).unwrap().play_count
    }

    /// Polls `f` until it holds.
    fn eventually(what: &str, f: impl Fn() -> bool) {
        let deadline = Instant::now() + PATIENCE;
        while !f() {
            assert!(Instant::now() < deadline, "{what} never happened");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_request_during_a_rebuild_gets_the_old_catalog_at_once_and_the_change_after_the_swap() {
        let probe = probe();
        let (_dir, db, m) = started(&probe, Duration::ZERO);
        assert_eq!(plays(&m.catalog(&db)), 0);
        play(&db, 7);
        let (entered_tx, entered) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        *lock(&probe.hold) = Some((entered_tx, release_rx));
        // This request asks for the check and is answered at once.
        assert_eq!(plays(&m.catalog(&db)), 0);
        entered.recv_timeout(PATIENCE).unwrap();
        // The rebuild is held; another request must not wait for it.
        let (tx, rx) = mpsc::channel();
        let (m2, db2) = (m.clone(), db.clone());
        std::thread::spawn(move || tx.send(plays(&m2.catalog(&db2))).unwrap());
        assert_eq!(rx.recv_timeout(PATIENCE), Ok(0));
        release.send(()).unwrap();
        eventually("the rebuilt catalog's swap", || plays(&m.catalog(&db)) == 7);
        m.stop_refresher();
    }

    #[test]
    fn the_first_request_waits_for_the_first_build_and_builds_no_second() {
        let probe = probe();
        let (entered_tx, entered) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        *lock(&probe.hold) = Some((entered_tx, release_rx));
        let (_dir, db, m) = started(&probe, CATALOG_TTL);
        entered.recv_timeout(PATIENCE).unwrap();
        let (tx, rx) = mpsc::channel();
        let (m2, db2) = (m.clone(), db.clone());
        std::thread::spawn(move || tx.send(m2.catalog(&db2).songs.len()).unwrap());
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
        release.send(()).unwrap();
        assert_eq!(rx.recv_timeout(PATIENCE), Ok(2));
        assert_eq!(probe.builds.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn an_unchanged_library_is_never_rebuilt() {
        let probe = probe();
        let (_dir, db, m) = started(&probe, Duration::ZERO);
        m.catalog(&db);
        for _ in 0..50 {
            m.catalog(&db);
            std::thread::sleep(Duration::from_millis(1));
        }
        // A change then is rebuilt: the checks did run.
        play(&db, 3);
        eventually("the rebuild of a changed library", || {
            plays(&m.catalog(&db)) == 3
        });
        assert_eq!(probe.builds.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn new_entries_and_rescans_are_in_the_next_catalog() {
        let probe = probe();
        let (_dir, db, m) = started(&probe, CATALOG_TTL);
        assert_eq!(m.catalog(&db).songs.len(), 2);
        db.commit(vec![
            Op::CreateEntry(3),
            Op::AddProp {
                entry: 3,
                key: "url".into(),
                source: "server".into(),
                value: Value::Str(format!("file://{ROOT}/C/3.flac")),
            },
        ])
        .unwrap();
        assert_eq!(m.catalog(&db).songs.len(), 3);
        // A reported rescan waits for its catalog, so the next request
        // finds it built.
        play(&db, 5);
        m.library_changed();
        let s = lock(&m.cache.slot);
        let b = s.current.as_ref().unwrap();
        assert_eq!(plays(&b.cat), 5);
        assert_eq!(b.stamp.version, 1);
    }

    #[test]
    fn without_the_refresher_a_request_rebuilds_a_changed_library_itself() {
        let probe = probe();
        let (_dir, db, m) = started(&probe, Duration::ZERO);
        m.catalog(&db);
        m.stop_refresher();
        play(&db, 4);
        assert_eq!(plays(&m.catalog(&db)), 4);
        m.library_changed();
        assert_eq!(m.catalog(&db).songs.len(), 2);
        assert_eq!(probe.builds.load(Ordering::SeqCst), 3);
    }

    /// A [`music`] through `probe` whose catalog is saved in `dir`.
    fn saving(probe: &Arc<Probe>, dir: &Path) -> Music {
        let mut cache = cache(probe, CATALOG_TTL);
        cache.saved = Some(dir.join(crate::catalog::saved::CATALOG_FILE));
        let mut m = Music::none();
        m.cache = Arc::new(cache);
        m
    }

    #[test]
    fn a_start_serves_the_catalog_saved_at_the_last_stop_without_building_one() {
        let (dir, db) = testlib::library(ROWS);
        let first = probe();
        let m = saving(&first, dir.path());
        let db = Arc::new(db);
        m.start_refresher(db.clone());
        assert_eq!(plays(&m.catalog(&db)), 0);
        play(&db, 6);
        m.stop_refresher();
        assert_eq!(plays(&m.catalog(&db)), 6);
        drop((m, db));

        let db = Arc::new(Db::open(dir.path()).unwrap());
        let probe = probe();
        // A build would wait for the release that never comes.
        let (entered_tx, entered) = mpsc::channel();
        let (release, release_rx) = mpsc::channel::<()>();
        *lock(&probe.hold) = Some((entered_tx, release_rx));
        let m = Arc::new(saving(&probe, dir.path()));
        m.start_refresher(db.clone());
        let (tx, rx) = mpsc::channel();
        let (m2, db2) = (m.clone(), db.clone());
        std::thread::spawn(move || {
            let cat = m2.catalog(&db2);
            tx.send((cat.songs.len(), plays(&cat))).unwrap();
        });
        assert_eq!(rx.recv_timeout(PATIENCE), Ok((2, 6)));
        assert!(entered.recv_timeout(Duration::from_millis(200)).is_err());
        assert_eq!(probe.builds.load(Ordering::SeqCst), 0);
        *lock(&probe.hold) = None;
        drop(release);
        m.stop_refresher();
    }

    #[test]
    fn a_saved_catalog_of_a_library_changed_since_is_not_served() {
        let (dir, db) = testlib::library(ROWS);
        let m = saving(&probe(), dir.path());
        let db = Arc::new(db);
        m.start_refresher(db.clone());
        m.catalog(&db);
        m.stop_refresher();
        drop(m);
        // Changed while no server ran (a `spindle db` edit).
        play(&db, 9);
        drop(db);

        let db = Arc::new(Db::open(dir.path()).unwrap());
        let probe = probe();
        let m = saving(&probe, dir.path());
        m.start_refresher(db.clone());
        assert_eq!(plays(&m.catalog(&db)), 9);
        assert_eq!(probe.builds.load(Ordering::SeqCst), 1);
        m.stop_refresher();
    }

    #[test]
    fn a_request_after_a_large_rescan_gets_the_current_catalog_at_once_and_the_new_one_after_the_swap(
    ) {
        let probe = probe();
        let (_dir, db, m) = started(&probe, CATALOG_TTL);
        assert_eq!(m.catalog(&db).songs.len(), 2);
        let many = WAIT_FOR_CHANGES as u32 + 1;
        let mut ops = Vec::new();
        for id in 3..3 + many {
            ops.push(Op::CreateEntry(id));
            ops.push(Op::AddProp {
                entry: id,
                key: "url".into(),
                source: "server".into(),
                value: Value::Str(format!("file://{ROOT}/C/{id}.flac")),
            });
        }
        db.commit(ops).unwrap();
        let (entered_tx, entered) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        *lock(&probe.hold) = Some((entered_tx, release_rx));
        let (tx, rx) = mpsc::channel();
        let (m2, db2) = (m.clone(), db.clone());
        std::thread::spawn(move || tx.send(m2.catalog(&db2).songs.len()).unwrap());
        assert_eq!(rx.recv_timeout(PATIENCE), Ok(2));
        entered.recv_timeout(PATIENCE).unwrap();
        release.send(()).unwrap();
        let all = 2 + many as usize;
        eventually("the update's swap", || m.catalog(&db).songs.len() == all);
        m.stop_refresher();
    }
}
