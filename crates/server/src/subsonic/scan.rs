//! `startScan` and `getScanStatus`: a rescan of the music folders on
//! request, in the background, with a live count.
//!
//! The rescan is the incremental scan `spindle serve` runs at start and
//! its watcher runs on change ([`spindle_media::scan()`]): unchanged files
//! cost a `stat`, new and changed ones are read. One runs at a time; a
//! `startScan` while one runs reports it. [`Scans`] is the state
//! ([`super::SubsonicState`] holds it); its thread is joined by
//! [`Scans::stop`] at shutdown, after which no scan starts. A scan that
//! has begun runs to its end (the scanner has no way to stop midway; it
//! commits in batches, so what it did is kept either way).
//!
//! `count` is, while scanning, the files read so far (new or changed:
//! unchanged files are not read), and afterwards the audio files the last
//! scan found; before any `startScan`, the songs in the library.
//! [`Scans::progress`] adds the stage and how many files the reading
//! stage has in all, for the admin page's progress line.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use spindle_media::scan::{scan, Phase, ScanObserver, ScanOptions};
use spindle_store::Db;

use super::admin::require_admin;
use super::response::Node;
use super::{Ctx, SubsonicError, SyncResult};
use crate::music::Music;
use crate::state::lock;
use crate::time::iso8601;

/// The rescan state; see the module doc.
#[derive(Default)]
pub(crate) struct Scans {
    running: Arc<AtomicBool>,
    /// Files read by the running scan, or found by the last one.
    count: Arc<AtomicU64>,
    /// When the last scan ended (0: none yet).
    finished: Arc<AtomicI64>,
    /// The running scan's [`Stage`], as a number.
    stage: Arc<AtomicU8>,
    /// The files the running scan's reading stage has in all.
    total: Arc<AtomicU64>,
    stopping: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// What a running scan is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Not scanning.
    Idle,
    /// Walking the folders, comparing each file with the library.
    Walking,
    /// Reading the tags of new and changed files.
    Reading,
    /// Marking the entries of files that are gone.
    Finishing,
}

impl Stage {
    fn from_u8(n: u8) -> Stage {
        match n {
            1 => Stage::Walking,
            2 => Stage::Reading,
            3 => Stage::Finishing,
            _ => Stage::Idle,
        }
    }

    /// The stage's name in the admin API.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Idle => "idle",
            Stage::Walking => "walking",
            Stage::Reading => "reading",
            Stage::Finishing => "finishing",
        }
    }
}

/// A rescan's progress: its stage, the files read so far and the files
/// to read (0 until the reading stage starts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Progress {
    pub stage: Stage,
    pub done: u64,
    pub total: u64,
}

/// Counts files as the scanner reads them, and notes its stage.
struct Counter {
    count: Arc<AtomicU64>,
    stage: Arc<AtomicU8>,
    total: Arc<AtomicU64>,
}

impl ScanObserver for Counter {
    fn phase(&mut self, phase: Phase) {
        let stage = match phase {
            Phase::Walking => 1,
            Phase::Reading { total } => {
                self.total.store(total, Ordering::SeqCst);
                2
            }
            _ => 3,
        };
        self.stage.store(stage, Ordering::SeqCst);
    }

    fn advance(&mut self, n: u64) {
        self.count.fetch_add(n, Ordering::Relaxed);
    }
}

/// Why a rescan did not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum StartError {
    #[error("the server is shutting down")]
    ShuttingDown,
    #[error("the rescan thread could not start: {0}")]
    Thread(String),
}

impl Scans {
    pub fn running(&self) -> bool {
        self.running.load(Ordering::SeqCst)
    }

    /// While a scan runs, the files it has read so far (live: the scanner
    /// adds each batch as it commits); afterwards, the audio files the
    /// last scan found; 0 before any scan.
    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }

    /// When the last scan ended (UNIX seconds), if one did.
    pub(crate) fn finished(&self) -> Option<i64> {
        Some(self.finished.load(Ordering::SeqCst)).filter(|&t| t > 0)
    }

    /// The running scan's stage and counts ([`Stage::Idle`] when none
    /// runs).
    pub(crate) fn progress(&self) -> Progress {
        let stage = if self.running() {
            Stage::from_u8(self.stage.load(Ordering::SeqCst))
        } else {
            Stage::Idle
        };
        Progress {
            stage,
            done: self.count(),
            total: self.total.load(Ordering::SeqCst),
        }
    }

    /// Starts a rescan of `music`'s folders into `db` unless one runs;
    /// `now` is when it ends, read from the server's clock.
    pub fn start(
        &self,
        db: Arc<Db>,
        music: Arc<Music>,
        clock: Arc<dyn crate::Clock>,
    ) -> Result<(), StartError> {
        let mut slot = lock(&self.thread);
        if self.stopping.load(Ordering::SeqCst) {
            return Err(StartError::ShuttingDown);
        }
        if self.running.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        if let Some(done) = slot.take() {
            let _ = done.join();
        }
        self.count.store(0, Ordering::SeqCst);
        self.total.store(0, Ordering::SeqCst);
        self.stage.store(1, Ordering::SeqCst);
        let (running, count, finished) = (
            self.running.clone(),
            self.count.clone(),
            self.finished.clone(),
        );
        let mut counter = Counter {
            count: count.clone(),
            stage: self.stage.clone(),
            total: self.total.clone(),
        };
        let roots: Vec<PathBuf> = music.roots().to_vec();
        let spawned = std::thread::Builder::new()
            .name("spindle-rescan".into())
            .spawn(move || {
                match scan(&db, &roots, &ScanOptions::default(), &mut counter) {
                    Ok(r) => {
                        tracing::info!(
                            "rescan: {} files, {} added, {} updated, {} moved, {} removed, {} marked missing",
                            r.files, r.added, r.updated, r.moved, r.removed, r.marked_missing
                        );
                        count.store(r.files, Ordering::SeqCst);
                    }
                    Err(e) => tracing::warn!("rescan failed: {e}"),
                }
                music.library_changed();
                finished.store(clock.now(), Ordering::SeqCst);
                running.store(false, Ordering::SeqCst);
            });
        match spawned {
            Ok(t) => {
                *slot = Some(t);
                Ok(())
            }
            Err(e) => {
                self.running.store(false, Ordering::SeqCst);
                Err(StartError::Thread(e.to_string()))
            }
        }
    }

    /// No scan starts any more; waits for the running one to end.
    /// Blocks: call from a blocking thread.
    pub fn stop(&self) {
        let t = {
            let mut slot = lock(&self.thread);
            self.stopping.store(true, Ordering::SeqCst);
            slot.take()
        };
        if let Some(t) = t {
            let _ = t.join();
        }
    }
}

fn status(c: &mut Ctx) -> Node {
    let scans = &c.state.subsonic.scans;
    let running = scans.running();
    let finished = scans.finished().unwrap_or(0);
    let access = c.access();
    let count = if !access.is_everything() {
        // A user granted some folders only learns of their songs.
        let cat = c.cat();
        cat.songs.iter().filter(|s| access.sees_song(s)).count() as i64
    } else if running || finished > 0 {
        scans.count() as i64
    } else {
        c.cat().songs.len() as i64
    };
    let n = Node::new("scanStatus")
        .b("scanning", running)
        .i("count", count);
    if finished > 0 {
        n.s("lastScan", iso8601(finished))
    } else {
        n
    }
}

/// `getScanStatus`: any user.
pub(crate) fn get_scan_status(c: &mut Ctx) -> SyncResult {
    Ok(Some(status(c)))
}

/// `startScan`: administrators; answers the status, scanning.
pub(crate) fn start_scan(c: &mut Ctx) -> SyncResult {
    require_admin(c, "start a scan")?;
    let st = &c.state;
    st.subsonic
        .scans
        .start(st.db.clone(), st.music.clone(), st.clock.clone())
        .map_err(|e| SubsonicError::Refused(format!("The scan did not start: {e}")))?;
    Ok(Some(status(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rescan_finds_new_files_counts_them_and_refuses_after_stop() {
        let data = tempfile::tempdir().unwrap();
        let music_dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open(data.path().join("lib")).unwrap());
        let music = Arc::new(Music::new(&[music_dir.path().to_owned()], data.path()).unwrap());
        let clock: Arc<dyn crate::Clock> = Arc::new(crate::ManualClock::new(1_700_000_000));
        let files = spindle_media::demo::generate_demo(music_dir.path()).unwrap();
        let scans = Scans::default();
        scans
            .start(db.clone(), music.clone(), clock.clone())
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while scans.running() {
            assert!(std::time::Instant::now() < deadline, "the scan never ended");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(scans.count.load(Ordering::SeqCst), files.len() as u64);
        assert_eq!(scans.finished.load(Ordering::SeqCst), 1_700_000_000);
        assert_eq!(music.catalog(&db).songs.len(), files.len());
        scans.stop();
        assert_eq!(scans.start(db, music, clock), Err(StartError::ShuttingDown));
    }

    #[test]
    fn the_count_is_live_while_a_scan_reads_and_the_stage_follows_the_scanner() {
        let scans = Scans::default();
        let mut counter = Counter {
            count: scans.count.clone(),
            stage: scans.stage.clone(),
            total: scans.total.clone(),
        };
        assert_eq!(scans.progress().stage, Stage::Idle);
        scans.running.store(true, Ordering::SeqCst);
        counter.phase(Phase::Walking);
        assert_eq!(scans.progress().stage, Stage::Walking);
        counter.phase(Phase::Reading { total: 10 });
        counter.advance(3);
        assert_eq!(scans.count(), 3, "the count moves before the scan ends");
        counter.advance(4);
        assert_eq!(
            scans.progress(),
            Progress {
                stage: Stage::Reading,
                done: 7,
                total: 10
            }
        );
        counter.phase(Phase::Finishing);
        assert_eq!(scans.progress().stage.name(), "finishing");
        scans.running.store(false, Ordering::SeqCst);
        assert_eq!(scans.progress().stage, Stage::Idle);
    }

    #[tokio::test]
    async fn start_scan_is_for_administrators_and_ends_with_the_count() {
        let k = crate::subsonic::testkit::Kit::new();
        assert_eq!(k.code("bob", "startScan", &[]).await, 50);
        let idle = k.ok("bob", "getScanStatus", &[]).await;
        assert_eq!(idle["scanStatus"]["scanning"], false);
        assert_eq!(
            idle["scanStatus"]["count"],
            k.songs.len(),
            "the library's songs"
        );
        k.ok("ann", "startScan", &[]).await;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let s = k.ok("bob", "getScanStatus", &[]).await;
            if s["scanStatus"]["scanning"] == false {
                assert_eq!(s["scanStatus"]["count"], k.songs.len());
                assert!(s["scanStatus"]["lastScan"].is_string());
                break;
            }
            assert!(std::time::Instant::now() < deadline, "the scan never ended");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        k.state.stop_background();
    }
}
