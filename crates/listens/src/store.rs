//! [`Listens`]: the log plus its indexes, and the submit path: names
//! normalised and dedupe keys computed outside any lock, the keys
//! reserved in the dedupe set, the records written by group commit, and
//! the listens published to the indexes — one index lock per batch —
//! only once they are on disk.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard};
use std::time::Duration;

use crate::batch::{DedupeHasher, Prepared, Seen};
use crate::checkpoint::{self, CheckpointUse};
use crate::correction::Corrected;
use crate::error::{AppendError, OpenError};
use crate::index::{
    Chart, ChartKind, ChartQuery, Index, Loved, Page, RecentQuery, TrackTally, UserSummary,
};
use crate::log::{GroupLog, HEADER_LEN};
use crate::model::{encode_listen, encode_love, EventRef, Listen};

/// The log's file name inside the directory given to [`Listens::open`].
pub const LOG_FILE: &str = "listens.log";
/// The mode of a directory [`Listens::open`] creates: its owner's only.
const DIR_MODE: u32 = 0o700;

/// How near two listens of the same track by the same user may start and
/// still be one play sent twice (by two players, say): 30 seconds, or a
/// tenth of the track's length when that is longer.
pub const DEFAULT_DEDUPE_WINDOW: Duration = Duration::from_secs(30);

/// How the history is kept. `Options::default()` is what the server
/// runs with (a 30-second dedupe window); [`Listens::open`] keeps the
/// rule from before windows existed ([`Options::EXACT`]). Construct with
/// `Options { dedupe_window, ..Options::default() }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// A listen of the same user whose MusicBrainz id, or whose
    /// normalised artist and title, match one already recorded that
    /// started within this much of it (or a tenth of its length, when
    /// longer) is a duplicate. Zero: only the same start second is.
    pub dedupe_window: Duration,
}

impl Options {
    /// Only a listen of the same track starting at the same second is a
    /// duplicate.
    pub const EXACT: Options = Options {
        dedupe_window: Duration::ZERO,
    };
}

impl Default for Options {
    fn default() -> Self {
        Options {
            dedupe_window: DEFAULT_DEDUPE_WINDOW,
        }
    }
}

/// The listening history of every user.
pub struct Listens {
    index: Mutex<Index>,
    /// Dedupe keys of every listen recorded or being recorded. Its own
    /// lock, so that reserving keys does not wait for the index.
    pub(crate) seen: Mutex<Seen>,
    pub(crate) hasher: DedupeHasher,
    pub(crate) log: GroupLog,
    /// Held shared by every change (from its dedupe reservation until its
    /// listens are in the indexes) and exclusively by a checkpoint while
    /// it copies the indexes: so that what it copies is exactly the log
    /// up to its end.
    pub(crate) gate: RwLock<()>,
    /// The records in the indexes, for the open report a checkpoint
    /// carries.
    pub(crate) tally: Tally,
    dir: PathBuf,
    /// Where the records in the indexes end ([`Listens::in_turn`]).
    turn: Mutex<u64>,
    turn_cv: Condvar,
    /// Where the last checkpoint written or loaded ends; held while one
    /// is written, so two writes never share the temporary file.
    saved: Mutex<u64>,
}

/// How many records of each kind the indexes hold.
#[derive(Default)]
pub(crate) struct Tally {
    pub listens: AtomicU64,
    pub love_events: AtomicU64,
    pub corrections: AtomicU64,
}

impl Tally {
    pub(crate) fn add(n: &AtomicU64, by: usize) {
        n.fetch_add(by as u64, Ordering::Relaxed);
    }
}

/// What opening found.
#[derive(Debug, Clone, Default)]
pub struct OpenReport {
    pub listens: usize,
    pub love_events: usize,
    /// Correction and undo records read.
    pub corrections: usize,
    /// Bytes of a torn tail cut off the log (unacknowledged writes; damage
    /// with good records after it is an error instead, see
    /// [`OpenError::Damaged`]).
    pub truncated_bytes: u64,
    /// Whether the indexes came from a checkpoint (and the log was
    /// replayed only after it), or why one was not used.
    pub checkpoint: CheckpointUse,
}

/// The fate of one submitted listen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submitted {
    /// New, and on disk.
    Accepted,
    /// The same (user, artist, title, timestamp) was already recorded.
    Duplicate,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Listens {
    /// Opens the history in `dir` (created if missing), replaying the log
    /// — only its records after the checkpoint, when there is a valid one
    /// ([`Listens::checkpoint`], [`OpenReport::checkpoint`]).
    /// The directory is created private (mode 0700) if missing, and the
    /// log file is private (0600) whatever the umask. Only a listen of
    /// the same track starting at the same second is a duplicate
    /// ([`Options::EXACT`]); [`Listens::open_with`] takes a window.
    pub fn open(dir: &Path) -> Result<(Listens, OpenReport), OpenError> {
        Listens::open_with(dir, Options::EXACT)
    }

    /// [`Listens::open`] with other [`Options`] than the defaults.
    pub fn open_with(dir: &Path, options: Options) -> Result<(Listens, OpenReport), OpenError> {
        Listens::open_as(dir, options, false)
    }

    /// Reads the history in `dir` without changing anything on disk, as
    /// a command beside a running server does (the log is append-only:
    /// what the server writes meanwhile is past the end read, and a
    /// record it is writing is left alone, not cut as a torn tail).
    /// Writes to it fail. A history not created yet is an error
    /// ([`OpenError::Io`], not found).
    pub fn open_read_only(
        dir: &Path,
        options: Options,
    ) -> Result<(Listens, OpenReport), OpenError> {
        Listens::open_as(dir, options, true)
    }

    fn open_as(
        dir: &Path,
        options: Options,
        read_only: bool,
    ) -> Result<(Listens, OpenReport), OpenError> {
        if !read_only && !dir.is_dir() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(DIR_MODE)
                .create(dir)
                .and_then(|()| {
                    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))
                })
                .map_err(|source| OpenError::Io {
                    path: dir.to_owned(),
                    source,
                })?;
        }
        let window = i64::try_from(options.dedupe_window.as_secs()).unwrap_or(i64::MAX);
        let path = dir.join(LOG_FILE);
        let mut report = OpenReport::default();
        let (start, counts, hasher, mut index, mut seen) =
            match checkpoint::load(dir, &path, window) {
                Ok(Some(c)) => {
                    report.checkpoint = CheckpointUse::Loaded { covers: c.covers };
                    (c.covers, c.counts, c.hasher, c.index, c.seen)
                }
                found => {
                    if let Err(reason) = found {
                        report.checkpoint = CheckpointUse::Ignored { reason };
                    }
                    let fresh = (DedupeHasher::new(), Index::default(), Seen::new(window));
                    (
                        HEADER_LEN,
                        checkpoint::Counts::default(),
                        fresh.0,
                        fresh.1,
                        fresh.2,
                    )
                }
            };
        let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        report.listens = count(counts.listens);
        report.love_events = count(counts.love_events);
        report.corrections = count(counts.corrections);
        // Users with an undo: rebuilt once, after the whole log is read.
        let mut undone = std::collections::BTreeSet::new();
        // One listen at a time, its strings borrowed from the file's bytes.
        let mut one = Prepared::with_capacity(1);
        let visit = |at: u64, ev: EventRef<'_>| match ev {
            EventRef::Listen(l) => {
                one.clear();
                if seen.is_new_exact(l.user, &one.push(&hasher, &l), &index, &hasher) {
                    index.add(&l, &one.norms(0));
                    report.listens += 1;
                }
            }
            EventRef::Love {
                user,
                artist,
                title,
                timestamp,
                loved,
            } => {
                index.love(user, artist, title, timestamp, loved);
                report.love_events += 1;
            }
            EventRef::Correct { user, when, what } => {
                let mut d = Corrected::default();
                index.correct(&user, at, when, what, Some(&mut d));
                for l in &d.added {
                    seen.add(&crate::corrections::key_of(&hasher, l));
                }
                report.corrections += 1;
            }
            EventRef::Undo { user, id, .. } => {
                if index.undo(&user, id, true, None) {
                    undone.insert(user);
                }
                report.corrections += 1;
            }
        };
        let (log, truncated) = if read_only {
            (GroupLog::open_read_only(&path, start, visit)?, 0)
        } else {
            GroupLog::open_at(&path, start, visit)?
        };
        for user in undone {
            index.rebuild(&user, None);
        }
        report.truncated_bytes = truncated;
        let end = log.committed_end();
        let tally = Tally::default();
        tally
            .listens
            .store(report.listens as u64, Ordering::Relaxed);
        tally
            .love_events
            .store(report.love_events as u64, Ordering::Relaxed);
        tally
            .corrections
            .store(report.corrections as u64, Ordering::Relaxed);
        Ok((
            Listens {
                index: Mutex::new(index),
                seen: Mutex::new(seen),
                hasher,
                log,
                gate: RwLock::new(()),
                tally,
                dir: dir.to_owned(),
                turn: Mutex::new(end),
                turn_cv: Condvar::new(),
                saved: Mutex::new(start),
            },
            report,
        ))
    }

    /// Runs `publish`, which puts the records at `[at, at + len)` of the
    /// log into the indexes, once every record before them is in: the
    /// indexes take records in log order, as a replay does, whatever
    /// order concurrent writers wake in after their shared fsync. (The
    /// listens' numbers in the indexes, which order listens of the same
    /// second and place corrections among listens, are then the same
    /// live, after a replay and after a checkpoint's load.)
    pub(crate) fn in_turn<R>(&self, at: u64, len: usize, publish: impl FnOnce() -> R) -> R {
        let mut next = lock(&self.turn);
        while *next < at {
            next = self.turn_cv.wait(next).unwrap_or_else(|e| e.into_inner());
        }
        let out = publish();
        *next = (*next).max(at + len as u64);
        self.turn_cv.notify_all();
        out
    }

    /// A change's share of the gate (see [`Listens::checkpoint`]).
    pub(crate) fn changing(&self) -> RwLockReadGuard<'_, ()> {
        self.gate.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes a checkpoint of the indexes as of the log's end now, so
    /// that the next open replays only the log after it; returns the
    /// offset it covers. Changes wait while the indexes are copied (they
    /// are written to disk after); queries wait for the copy too. A
    /// history opened read-only has none written.
    pub fn checkpoint(&self) -> std::io::Result<u64> {
        let mut saved = lock(&self.saved);
        if !self.log.is_writable() {
            return Err(std::io::Error::other(
                "the history is read-only or its log failed",
            ));
        }
        let (covers, body) = {
            let _all = self.gate.write().unwrap_or_else(|e| e.into_inner());
            let index = self.index();
            let seen = lock(&self.seen);
            let counts = checkpoint::Counts {
                listens: self.tally.listens.load(Ordering::Relaxed),
                love_events: self.tally.love_events.load(Ordering::Relaxed),
                corrections: self.tally.corrections.load(Ordering::Relaxed),
            };
            (
                self.log.committed_end(),
                checkpoint::body(counts, &self.hasher, &index, &seen),
            )
        };
        checkpoint::write(&self.dir, covers, |b, at| self.log.read_at(b, at), &body)?;
        *saved = covers;
        Ok(covers)
    }

    /// The log offset the last checkpoint written (or the one loaded on
    /// open) covers; the log's header length when there is none.
    pub fn checkpointed_end(&self) -> u64 {
        *lock(&self.saved)
    }

    /// The log itself, for the tail reader (`tail.rs`).
    pub(crate) fn group_log(&self) -> &GroupLog {
        &self.log
    }

    pub(crate) fn index(&self) -> MutexGuard<'_, Index> {
        lock(&self.index)
    }

    /// Records listens; returns once the new ones are on disk. Repeats of
    /// a recorded listen (or of one earlier in the same call) are reported
    /// as duplicates and not written. On error nothing of this call is
    /// acknowledged (a retry is safe: what did reach the disk dedupes).
    ///
    /// A listen with a field over its limit ([`crate::limits`]) refuses
    /// the whole call with [`AppendError::TooLarge`] before anything is
    /// written: the log never holds a record its reader would refuse.
    pub fn submit(&self, listens: &[Listen]) -> Result<Vec<Submitted>, AppendError> {
        for l in listens {
            l.check_limits()?;
        }
        let _change = self.changing();
        let mut prep = Prepared::with_capacity(listens.len());
        for l in listens {
            prep.push(&self.hasher, &l.as_ref());
        }
        let mut out = Vec::with_capacity(listens.len());
        let mut fresh = Vec::with_capacity(listens.len());
        {
            // Reserve the keys now so a concurrent twin is a duplicate.
            let ix = self.index();
            let mut seen = lock(&self.seen);
            for (i, k) in prep.keys.iter().enumerate() {
                if seen.insert(&listens[i].user, k, &ix, &self.hasher) {
                    out.push(Submitted::Accepted);
                    fresh.push(i);
                } else {
                    out.push(Submitted::Duplicate);
                }
            }
        }
        let mut records = Vec::with_capacity(fresh.len() * 128);
        for &i in &fresh {
            encode_listen(&listens[i].as_ref(), &mut records);
        }
        // A listen with credited artists needs a version 3 log: the
        // header says so before the first such record is written.
        let credited = fresh.iter().any(|&i| listens[i].as_ref().artists.is_list());
        let written = if credited {
            self.log.upgrade(crate::log::VERSION_CREDITS)
        } else {
            Ok(())
        };
        match written.and_then(|()| self.log.append_at(&records)) {
            Ok(at) => {
                if !fresh.is_empty() {
                    self.in_turn(at, records.len(), || {
                        let mut ix = self.index();
                        for &i in &fresh {
                            ix.add(&listens[i].as_ref(), &prep.norms(i));
                        }
                        // In the indexes now: they answer for them.
                        let mut seen = lock(&self.seen);
                        for &i in &fresh {
                            seen.release(&prep.keys[i]);
                        }
                        Tally::add(&self.tally.listens, fresh.len());
                    });
                }
                Ok(out)
            }
            Err(e) => {
                let mut seen = lock(&self.seen);
                for &i in &fresh {
                    seen.release(&prep.keys[i]);
                }
                Err(e)
            }
        }
    }

    /// Loves (or unloves) a track for a user, durably. Fields over their
    /// limits are refused with [`AppendError::TooLarge`], nothing written.
    pub fn love(
        &self,
        user: &str,
        artist: &str,
        title: &str,
        timestamp: i64,
        loved: bool,
    ) -> Result<(), AppendError> {
        crate::limits::check_love_limits(user, artist, title)?;
        let mut record = Vec::new();
        encode_love(user, artist, title, timestamp, loved, &mut record);
        let _change = self.changing();
        let at = self.log.append_at(&record)?;
        self.in_turn(at, record.len(), || {
            self.index().love(user, artist, title, timestamp, loved);
            Tally::add(&self.tally.love_events, 1);
        });
        Ok(())
    }

    /// A user's listens, newest first, paged.
    pub fn recent(&self, user: &str, q: &RecentQuery) -> Page {
        self.index().recent(user, q)
    }

    /// Top artists, albums or tracks of a user since a time (all time
    /// when `None`), ranked by plays, paged (`page` is 1-based).
    pub fn top(
        &self,
        user: &str,
        kind: ChartKind,
        since: Option<i64>,
        limit: usize,
        page: usize,
    ) -> Chart {
        self.index().top(user, kind, since, limit, page)
    }

    /// Top artists, albums or tracks of a user between two times (either
    /// end open), optionally of one artist only, ranked by plays, paged.
    pub fn chart(&self, user: &str, kind: ChartKind, q: &ChartQuery<'_>) -> Chart {
        self.index().chart(user, kind, q)
    }

    /// Listens per UTC day (day start, count), oldest first.
    pub fn per_day(&self, user: &str, since: Option<i64>) -> Vec<(i64, u32)> {
        self.index().per_day(user, since)
    }

    /// A user's loved tracks, most recently loved first (those of the
    /// same second by artist, then title).
    pub fn loved(&self, user: &str) -> Vec<Loved> {
        self.index().loved(user)
    }

    pub fn is_loved(&self, user: &str, artist: &str, title: &str) -> bool {
        self.index().is_loved(user, artist, title)
    }

    /// A user's listens tallied by track ([`TrackTally`]), for indexes
    /// kept beside the history (the server's per-user play counts).
    pub fn track_tallies(&self, user: &str) -> Vec<TrackTally> {
        self.index().track_tallies(user)
    }

    /// Play count and first listen of a user.
    pub fn summary(&self, user: &str) -> UserSummary {
        self.index().summary(user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::DAY;

    fn l(user: &str, ts: i64, artist: &str, title: &str, album: &str) -> Listen {
        let mut l = Listen::new(user, ts, artist, title);
        l.album = album.into();
        l
    }

    #[test]
    fn acknowledged_listens_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (s, _) = Listens::open(dir.path()).unwrap();
            s.submit(&[l("u", 10, "A", "x", ""), l("u", 20, "B", "y", "")])
                .unwrap();
            s.love("u", "A", "x", 30, true).unwrap();
        }
        let (s, rep) = Listens::open(dir.path()).unwrap();
        assert_eq!(rep.listens, 2);
        let p = s.recent(
            "u",
            &RecentQuery {
                limit: 10,
                page: 1,
                ..RecentQuery::default()
            },
        );
        assert_eq!(p.total, 2);
        assert_eq!(p.listens[0].artist, "B");
        assert!(s.is_loved("u", "a", "X"));
    }

    #[test]
    fn the_same_listen_counts_once_whatever_its_spelling() {
        let dir = tempfile::tempdir().unwrap();
        let (s, _) = Listens::open(dir.path()).unwrap();
        let r = s
            .submit(&[l("u", 5, "Abba", "SOS", ""), l("u", 5, " abba", "sos ", "")])
            .unwrap();
        assert_eq!(r, vec![Submitted::Accepted, Submitted::Duplicate]);
        let r = s.submit(&[l("u", 5, "ABBA", "SOS", "")]).unwrap();
        assert_eq!(r, vec![Submitted::Duplicate]);
        // Another user or another second is another listen.
        let r = s
            .submit(&[l("v", 5, "Abba", "SOS", ""), l("u", 6, "Abba", "SOS", "")])
            .unwrap();
        assert_eq!(r, vec![Submitted::Accepted, Submitted::Accepted]);
        assert_eq!(s.summary("u").playcount, 2);
    }

    /// Charts from the indexes equal a naive count over the listens.
    #[test]
    fn charts_by_period_match_a_naive_count() {
        let dir = tempfile::tempdir().unwrap();
        let (s, _) = Listens::open(dir.path()).unwrap();
        let now = 1_700_000_000 + DAY / 3;
        let mut all = Vec::new();
        let mut seed = 42u64;
        for i in 0..3000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            let a = (seed >> 33) % 17;
            let t = (seed >> 40) % 5;
            let ts = now - ((seed >> 20) % (400 * DAY as u64)) as i64 - i;
            all.push(l(
                "u",
                ts,
                &format!("Artist {a}"),
                &format!("T{t}"),
                &format!("Al{t}"),
            ));
        }
        s.submit(&all).unwrap();
        for days in [None, Some(7), Some(30), Some(90), Some(365)] {
            let since = days.map(|d| now - d * DAY);
            let chart = s.top("u", ChartKind::Artists, since, 100, 1);
            let mut naive: HashMap<String, u32> = HashMap::new();
            for x in &all {
                if since.is_none_or(|f| x.timestamp >= f) {
                    *naive.entry(x.artist.clone()).or_default() += 1;
                }
            }
            assert_eq!(chart.total, naive.len(), "{days:?}");
            for row in &chart.rows {
                assert_eq!(naive[&row.name], row.playcount, "{days:?} {}", row.name);
            }
            assert!(chart
                .rows
                .windows(2)
                .all(|w| w[0].playcount >= w[1].playcount));
            // Paging continues the same ranking.
            let p2 = s.top("u", ChartKind::Artists, since, 5, 2);
            assert_eq!(p2.rows[..], chart.rows[5..10.min(chart.rows.len())]);
        }
        let tracks = s.top("u", ChartKind::Tracks, None, 1000, 1);
        assert_eq!(tracks.rows.iter().map(|r| r.playcount).sum::<u32>(), 3000);
        let days = s.per_day("u", None);
        assert_eq!(days.iter().map(|d| d.1).sum::<u32>(), 3000);
    }

    /// Charts between two times, of every kind and of one artist, equal a
    /// naive count, including ranges inside one day, across day edges and
    /// with either end open.
    #[test]
    fn charts_between_two_times_match_a_naive_count() {
        let dir = tempfile::tempdir().unwrap();
        let (s, _) = Listens::open(dir.path()).unwrap();
        let base = 1_700_000_000 - 1_700_000_000 % DAY;
        let mut all = Vec::new();
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            seed >> 33
        };
        for _ in 0..2000 {
            let (a, t, ts) = (
                next() % 9,
                next() % 6,
                base + (next() % (20 * DAY as u64)) as i64,
            );
            all.push(l(
                "u",
                ts,
                &format!("Artist {a}"),
                &format!("T{t}"),
                &format!("Al{}", t % 3),
            ));
        }
        // Listens on the edges of days, where an off-by-one would show.
        for d in 0..20 {
            for off in [-1, 0, 1] {
                all.push(l("u", base + d * DAY + off, "Edge", "E", "Al0"));
            }
        }
        s.submit(&all).unwrap();
        let mut ranges = vec![
            (Some(base + 4 * DAY), Some(base + 6 * DAY - 1)),
            (Some(base + 4 * DAY - 1), Some(base + 6 * DAY)),
            (Some(base + 4 * DAY + 1), Some(base + 6 * DAY - 2)),
            (None, None),
            (Some(base + 3 * DAY), Some(base + 3 * DAY + 100)),
            (Some(base + 3 * DAY + 7), Some(base + 4 * DAY + 3)),
            (Some(base + 2 * DAY), Some(base + 9 * DAY - 1)),
            (None, Some(base + 5 * DAY + 11)),
            (Some(base + 15 * DAY + 5), None),
            (Some(base + 9 * DAY), Some(base + 8 * DAY)),
        ];
        for _ in 0..30 {
            let a = base + (next() % (21 * DAY as u64)) as i64;
            let b = a + (next() % (6 * DAY as u64)) as i64;
            ranges.push((Some(a), Some(b)));
        }
        for (from, to) in ranges {
            for artist in [None, Some("artist 3")] {
                for kind in [ChartKind::Artists, ChartKind::Albums, ChartKind::Tracks] {
                    let q = ChartQuery {
                        from,
                        to,
                        artist,
                        limit: 1000,
                        page: 1,
                    };
                    let chart = s.chart("u", kind, &q);
                    let mut naive: HashMap<(String, String), u32> = HashMap::new();
                    for x in &all {
                        let inside = from.is_none_or(|f| x.timestamp >= f)
                            && to.is_none_or(|t| x.timestamp <= t)
                            && artist.is_none_or(|a| x.artist.to_lowercase() == a);
                        if inside {
                            let key = match kind {
                                ChartKind::Artists => (x.artist.clone(), String::new()),
                                ChartKind::Albums => (x.album.clone(), x.artist.clone()),
                                ChartKind::Tracks => (x.title.clone(), x.artist.clone()),
                            };
                            *naive.entry(key).or_default() += 1;
                        }
                    }
                    let got: HashMap<(String, String), u32> = chart
                        .rows
                        .iter()
                        .map(|r| ((r.name.clone(), r.artist.clone()), r.playcount))
                        .collect();
                    assert_eq!(got, naive, "{kind:?} {from:?}..{to:?} {artist:?}");
                    assert_eq!(chart.total, naive.len());
                }
            }
        }
    }

    /// Charts over ranges of many 30-day spans, with listens on the
    /// spans' edges, equal a naive count (the spans inside a range come
    /// from their counters, its ends from the time index).
    #[test]
    fn charts_across_many_spans_match_a_naive_count() {
        use crate::index::SPAN;
        let dir = tempfile::tempdir().unwrap();
        let (s, _) = Listens::open(dir.path()).unwrap();
        let base = 1_700_000_000 - 1_700_000_000 % SPAN;
        let mut all = Vec::new();
        let mut seed = 11u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            seed >> 33
        };
        for i in 0..1500 {
            let ts = base + (next() % (8 * SPAN as u64)) as i64;
            all.push(l(
                "u",
                ts,
                &format!("A{}", next() % 7),
                &format!("T{i}"),
                "",
            ));
        }
        for d in 0..9 {
            for off in [-1, 0, 1] {
                all.push(l("u", base + d * SPAN + off, "Edge", "E", ""));
            }
        }
        s.submit(&all).unwrap();
        let mut ranges = vec![(Some(base), Some(base + 3 * SPAN - 1)), (None, None)];
        for _ in 0..40 {
            let a = base - SPAN + (next() % (10 * SPAN as u64)) as i64;
            let b = a + (next() % (5 * SPAN as u64)) as i64;
            ranges.push((Some(a - a % 7), Some(b)));
            ranges.push((Some(a - a % SPAN), Some(b - b % SPAN - 1)));
        }
        for (from, to) in ranges {
            let q = ChartQuery {
                from,
                to,
                limit: 100,
                page: 1,
                ..ChartQuery::default()
            };
            let mut naive: HashMap<String, u32> = HashMap::new();
            for x in &all {
                if from.is_none_or(|f| x.timestamp >= f) && to.is_none_or(|t| x.timestamp <= t) {
                    *naive.entry(x.artist.clone()).or_default() += 1;
                }
            }
            let got: HashMap<String, u32> = s
                .chart("u", ChartKind::Artists, &q)
                .rows
                .into_iter()
                .map(|r| (r.name, r.playcount))
                .collect();
            assert_eq!(got, naive, "{from:?}..{to:?}");
        }
    }

    #[test]
    fn a_read_only_open_sees_the_history_and_leaves_a_record_being_written_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (s, _) = Listens::open(dir.path()).unwrap();
        s.submit(&[l("u", 10, "A", "x", "")]).unwrap();
        // A record the writer is in the middle of: half of it on disk.
        let path = dir.path().join(LOG_FILE);
        let mut half = Vec::new();
        encode_listen(&l("u", 20, "B", "y", "").as_ref(), &mut half);
        half.truncate(half.len() / 2);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(&half);
        std::fs::write(&path, &bytes).unwrap();
        let (r, rep) = Listens::open_read_only(dir.path(), Options::default()).unwrap();
        assert_eq!((rep.listens, rep.truncated_bytes), (1, 0));
        assert_eq!(r.summary("u").playcount, 1);
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "nothing was cut");
        assert!(r.submit(&[l("u", 30, "C", "z", "")]).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "nothing was written");
        // A history not created yet is not created by reading it.
        let none = dir.path().join("none");
        assert!(Listens::open_read_only(&none, Options::default()).is_err());
        assert!(!none.exists());
    }

    use std::collections::HashMap;
}
