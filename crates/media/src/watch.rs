//! Keeping the library current while a server runs.
//!
//! A [`Watcher`] watches music folders with the platform's file
//! notifications (inotify on Linux, through the `notify` crate) and, a
//! short quiet period after the last change, runs the incremental
//! [`scan`](crate::scan()) over every folder. A periodic rescan is the
//! backstop for what notifications miss (network file systems, an
//! overflowed inotify queue, folders created faster than watches are
//! added). A rescan of unchanged files costs one `stat` per file.
//!
//! The watcher owns one thread; dropping the [`Watcher`] stops it.

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::{RecursiveMode, Watcher as _};
use spindle_store::Db;

use crate::scan::{scan, Quiet, ScanError, ScanOptions, ScanReport};

/// How a [`Watcher`] behaves.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// How long the folders must stay quiet after a change before the
    /// rescan (so copying an album causes one scan, not one per file).
    pub debounce: Duration,
    /// The backstop: a full rescan this often even without events.
    pub rescan_every: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            debounce: Duration::from_millis(500),
            rescan_every: Duration::from_secs(600),
        }
    }
}

/// Why a watcher could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WatchError {
    #[error("cannot watch {}: {source}", path.display())]
    Watch {
        path: PathBuf,
        #[source]
        source: notify::Error,
    },
    #[error("cannot start the file watcher: {0}")]
    Init(#[source] notify::Error),
    #[error("cannot start the watcher thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// What the watcher reports after each scan.
pub type OnScan = Box<dyn FnMut(Result<&ScanReport, &ScanError>) + Send>;

enum Msg {
    Changed,
    Stop,
}

/// Watches music folders and rescans them on change; see the module doc.
pub struct Watcher {
    tx: mpsc::Sender<Msg>,
    thread: Option<JoinHandle<()>>,
    _inner: notify::RecommendedWatcher,
}

impl Watcher {
    /// Starts watching `roots` (recursively). Does not scan first: call
    /// [`scan`](crate::scan()) before, so the library is complete when
    /// this returns.
    pub fn start(
        db: Arc<Db>,
        roots: Vec<PathBuf>,
        opts: WatchOptions,
        mut on_scan: OnScan,
    ) -> Result<Watcher, WatchError> {
        let (tx, rx) = mpsc::channel::<Msg>();
        let events = tx.clone();
        let mut inner = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
            // Access events (opening a file to stream it) change nothing.
            let relevant = match &ev {
                Ok(e) => !matches!(e.kind, notify::EventKind::Access(_)),
                Err(_) => true,
            };
            if relevant {
                let _ = events.send(Msg::Changed);
            }
        })
        .map_err(WatchError::Init)?;
        for r in &roots {
            inner
                .watch(r, RecursiveMode::Recursive)
                .map_err(|source| WatchError::Watch {
                    path: r.clone(),
                    source,
                })?;
        }
        let thread = std::thread::Builder::new()
            .name("spindle-watch".into())
            .spawn(move || {
                let mut next_full = Instant::now() + opts.rescan_every;
                let mut pending: Option<Instant> = None;
                loop {
                    let deadline = pending.map_or(next_full, |p| p.min(next_full));
                    let wait = deadline.saturating_duration_since(Instant::now());
                    match rx.recv_timeout(wait) {
                        Ok(Msg::Changed) => {
                            pending = Some(Instant::now() + opts.debounce);
                            continue;
                        }
                        Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                        Err(RecvTimeoutError::Timeout) => {}
                    }
                    let now = Instant::now();
                    if pending.is_some_and(|p| p <= now) || next_full <= now {
                        pending = None;
                        next_full = now + opts.rescan_every;
                        let res = scan(&db, &roots, &ScanOptions::default(), &mut Quiet);
                        on_scan(res.as_ref());
                    }
                }
            })
            .map_err(WatchError::Thread)?;
        Ok(Watcher {
            tx,
            thread: Some(thread),
            _inner: inner,
        })
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn a_file_added_to_a_watched_folder_appears_in_the_library_within_seconds() {
        let music = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open(data.path()).unwrap());
        let root = std::fs::canonicalize(music.path()).unwrap();
        scan(
            &db,
            std::slice::from_ref(&root),
            &ScanOptions::default(),
            &mut Quiet,
        )
        .unwrap();
        assert!(db.read().is_empty());
        let scans = Arc::new(Mutex::new(0u32));
        let seen = scans.clone();
        let opts = WatchOptions {
            debounce: Duration::from_millis(200),
            rescan_every: Duration::from_secs(3600),
        };
        let _w = Watcher::start(
            db.clone(),
            vec![root.clone()],
            opts,
            Box::new(move |_| *seen.lock().unwrap() += 1),
        )
        .unwrap();
        // A new folder with a file in it: the recursive watch must follow.
        let sub = root.join("New Artist");
        std::fs::create_dir(&sub).unwrap();
        crate::demo::write_wav(&sub.join("song.wav"), 440.0, 0.2).unwrap();
        let start = Instant::now();
        // The entry is committed inside the scan, before the callback
        // runs: wait for both.
        while db.read().is_empty() || *scans.lock().unwrap() == 0 {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "the new file did not show up within 5 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // And its removal is noticed too.
        std::fs::remove_file(sub.join("song.wav")).unwrap();
        let start = Instant::now();
        while !db.read().is_empty() {
            assert!(start.elapsed() < Duration::from_secs(5), "removal missed");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    #[test]
    fn the_periodic_rescan_finds_changes_without_events() {
        let music = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open(data.path()).unwrap());
        let root = std::fs::canonicalize(music.path()).unwrap();
        // The file exists before the watch but was never scanned; only the
        // backstop can find it.
        crate::demo::write_wav(&root.join("old.wav"), 220.0, 0.2).unwrap();
        let opts = WatchOptions {
            debounce: Duration::from_millis(50),
            rescan_every: Duration::from_millis(300),
        };
        let _w = Watcher::start(db.clone(), vec![root], opts, Box::new(|_| {})).unwrap();
        let start = Instant::now();
        while db.read().is_empty() {
            assert!(start.elapsed() < Duration::from_secs(5), "backstop missed");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
