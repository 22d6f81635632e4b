//! The catalog cache: the catalog served now, and how it is brought up
//! to date (`docs/catalog.md`). A refresh reads the entries changed
//! since the served catalog (the library remembers which), a batch per
//! hold of the library's lock, and makes the new catalog from the old
//! one and those songs, outside the lock; only when the library cannot
//! say what changed (too many changes, another library) does it read
//! every entry, in batches too. Requests keep the old catalog meanwhile.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use spindle_store::{ChangeStamp, Db, Library};

use crate::catalog::saved::SavedOf;
use crate::catalog::{read_in_batches, Catalog, CatalogOptions, Read};
use crate::sync::lock;

use super::CATALOG_TTL;

/// What a catalog is of: a different stamp means it is out of date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    /// Rescans reported ([`super::Music::library_changed`]).
    pub version: u64,
    /// The library's changes until then.
    pub changes: ChangeStamp,
    pub entries: usize,
    pub properties: usize,
}

/// A built catalog.
pub(super) struct Built {
    pub stamp: Stamp,
    /// When the library was last found unchanged (or it was built).
    pub checked: Instant,
    pub cat: Arc<Catalog>,
}

/// What the cache is doing.
#[derive(Default)]
pub(super) struct Slot {
    pub current: Option<Built>,
    /// The refresher thread is asked to bring the catalog up to date.
    pub wanted: bool,
    /// A refresh runs (one at a time).
    pub building: bool,
    /// Refreshes started and finished so far: a caller that needs the
    /// library as it is now waits for one started after it asked.
    pub started: u64,
    pub finished: u64,
    /// The refresher thread runs and takes requests for refreshes.
    pub refresher: bool,
    pub stopping: bool,
}

/// Called before each new catalog is made (tests hold or count them).
pub(super) type Hook = dyn Fn() + Send + Sync;

/// The catalog, shared by requests and the refresher thread.
pub(super) struct Cache {
    pub roots: Vec<PathBuf>,
    pub opts: CatalogOptions,
    pub hook: Box<Hook>,
    /// [`CATALOG_TTL`], shorter in tests.
    pub ttl: Duration,
    /// Rescans reported.
    pub version: AtomicU64,
    pub slot: Mutex<Slot>,
    /// Signals every change of `slot`.
    pub changed: Condvar,
    /// Where the catalog is saved at a stop, if it is.
    pub saved: Option<PathBuf>,
    /// What the saved file holds, once loaded or written.
    pub saved_as: Mutex<Option<SavedOf>>,
}

/// What a refresh has to do.
enum Plan {
    Unchanged,
    /// Read these entries (changed after the served catalog, as of the
    /// stamp) and update it.
    Update(Arc<Catalog>, Vec<u32>, ChangeStamp),
    /// Read every entry (these, as of the stamp).
    Full(Vec<u32>, ChangeStamp),
}

/// Full reads tried before a refresh gives up (each fails only when the
/// library changed more than it remembers while it was read).
const FULL_ATTEMPTS: usize = 3;

impl Cache {
    pub fn new(roots: Vec<PathBuf>, opts: CatalogOptions) -> Cache {
        Cache {
            roots,
            opts,
            hook: Box::new(|| {}),
            ttl: CATALOG_TTL,
            version: AtomicU64::new(0),
            slot: Mutex::new(Slot::default()),
            changed: Condvar::new(),
            saved: None,
            saved_as: Mutex::new(None),
        }
    }

    pub fn stamp(&self, lib: &Library) -> Stamp {
        Stamp {
            version: self.version.load(Ordering::SeqCst),
            changes: lib.change_stamp(),
            entries: lib.len(),
            properties: lib.prop_count(),
        }
    }

    pub fn wait<'a>(&self, s: MutexGuard<'a, Slot>) -> MutexGuard<'a, Slot> {
        self.changed.wait(s).unwrap_or_else(|e| e.into_inner())
    }

    /// Asks the refresher thread for a refresh, unless one is asked for
    /// or runs.
    pub fn ask(&self, s: &mut Slot) {
        if !s.building && !s.wanted {
            s.wanted = true;
            self.changed.notify_all();
        }
    }

    /// Waits until a refresh started after this call has finished, or
    /// until the catalog is one of the library as `need` stamps it (a
    /// refresh already running may build that one), on the refresher
    /// thread when it runs, else here (over `db`; without one, returns at
    /// once), and returns the catalog then current.
    pub fn refresh(&self, db: Option<&Db>, need: Option<Stamp>) -> Arc<Catalog> {
        let mut s = lock(&self.slot);
        let target = s.started + 1;
        while s.finished < target
            && !(need.is_some() && s.current.as_ref().map(|b| b.stamp) == need)
        {
            if s.refresher {
                s.wanted = true;
                self.changed.notify_all();
                s = self.wait(s);
            } else if s.building {
                s = self.wait(s);
            } else if let Some(db) = db {
                s.building = true;
                s.started += 1;
                drop(s);
                self.bring_up_to_date(db);
                s = lock(&self.slot);
            } else {
                break;
            }
        }
        s.current
            .as_ref()
            .map_or_else(|| Arc::new(Catalog::default()), |b| b.cat.clone())
    }

    /// The refresher thread: a refresh whenever one is asked for, until
    /// stopped.
    pub fn run(&self, db: &Db) {
        loop {
            let mut s = lock(&self.slot);
            // Until stopped, or asked while no refresh runs.
            while !s.stopping && (!s.wanted || s.building) {
                s = self.wait(s);
            }
            if s.stopping {
                return;
            }
            s.wanted = false;
            s.building = true;
            s.started += 1;
            drop(s);
            self.bring_up_to_date(db);
        }
    }

    /// Brings the catalog up to date with the library (or marks it
    /// checked when nothing changed), swaps the new one in and ends the
    /// refresh the caller started (`building` set).
    pub fn bring_up_to_date(&self, db: &Db) {
        let current = lock(&self.slot)
            .current
            .as_ref()
            .map(|b| (b.stamp, b.cat.clone()));
        let version = self.version.load(Ordering::SeqCst);
        let plan = {
            let lib = db.read();
            let now = lib.change_stamp();
            match current {
                Some((st, cat)) => match lib.changed_since(st.changes) {
                    Some(ids) if ids.is_empty() && st.version == version => Plan::Unchanged,
                    Some(ids) => Plan::Update(cat, ids, now),
                    None => Plan::Full(lib.ids().collect(), now),
                },
                None => Plan::Full(lib.ids().collect(), now),
            }
        };
        let made = match plan {
            Plan::Unchanged => None,
            Plan::Update(old, ids, since) => {
                (self.hook)();
                match self.read(db, ids, since) {
                    Some(read) => Some(self.update(&old, read, version)),
                    None => self.full(db, version),
                }
            }
            Plan::Full(ids, since) => {
                (self.hook)();
                self.read(db, ids, since)
                    .map(|read| self.whole(read, version))
                    .or_else(|| self.full(db, version))
            }
        };
        let mut s = lock(&self.slot);
        match (made, s.current.as_mut()) {
            (Some(b), _) => s.current = Some(b),
            (None, Some(b)) => b.checked = Instant::now(),
            (None, None) => {}
        }
        s.building = false;
        s.finished = s.started;
        self.changed.notify_all();
    }

    fn read(&self, db: &Db, ids: Vec<u32>, since: ChangeStamp) -> Option<Read> {
        read_in_batches(db, ids, since, &self.roots, &self.opts.ignored_articles)
    }

    /// The catalog of every entry, read again (the library forgot what
    /// changed since the last read).
    fn full(&self, db: &Db, version: u64) -> Option<Built> {
        for _ in 0..FULL_ATTEMPTS {
            let (ids, since) = {
                let lib = db.read();
                (lib.ids().collect(), lib.change_stamp())
            };
            if let Some(read) = self.read(db, ids, since) {
                return Some(self.whole(read, version));
            }
        }
        tracing::warn!(
            "the library changes faster than the catalog can read it; serving the last catalog"
        );
        None
    }

    fn whole(&self, read: Read, version: u64) -> Built {
        let started = Instant::now();
        let stamp = stamp_of(&read, version);
        let songs = read.songs.into_iter().filter_map(|(_, s)| s).collect();
        let cat = Catalog::from_songs(songs, self.opts.ignored_articles.clone());
        tracing::debug!(
            "catalog of {} songs built in {:.2} s (lock held {} times, at most {:.1} ms)",
            cat.songs.len(),
            started.elapsed().as_secs_f64(),
            read.holds,
            read.longest_hold.as_secs_f64() * 1000.0
        );
        built(stamp, cat)
    }

    fn update(&self, old: &Catalog, read: Read, version: u64) -> Built {
        let started = Instant::now();
        let stamp = stamp_of(&read, version);
        let changed = read.songs.len();
        let cat = old.updated(read.songs);
        tracing::debug!(
            "catalog updated with {changed} changed entries in {:.3} s (lock held at most {:.1} ms)",
            started.elapsed().as_secs_f64(),
            read.longest_hold.as_secs_f64() * 1000.0
        );
        built(stamp, cat)
    }
}

fn stamp_of(read: &Read, version: u64) -> Stamp {
    Stamp {
        version,
        changes: read.stamp,
        entries: read.entries,
        properties: read.properties,
    }
}

fn built(stamp: Stamp, cat: Catalog) -> Built {
    Built {
        stamp,
        checked: Instant::now(),
        cat: Arc::new(cat),
    }
}
