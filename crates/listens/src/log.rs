//! The append-only log file: header, framed records, recovery of a torn
//! tail, and group commit (one fsync for every append waiting at the
//! time). Byte layout in `docs/listens-format.md`.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::{Condvar, Mutex, MutexGuard};

// The frames, the torn-window rule and the writer's pieces are
// `spindle-framed`'s, shared with the library's log.
use spindle_framed::{pieces, FrameError, Framing};

use crate::error::{AppendError, OpenError};
use crate::model::EventRef;

pub(crate) const MAGIC: &[u8; 8] = b"SPNDLSTN";
/// The newest format version this build reads and writes: 3. A new log
/// is written as version 1 (listens and loves); its header is rewritten
/// in place to the version the first record needing a newer one needs
/// ([`EventRef::version`]), just before that record is appended: 2 for a
/// correction (kinds 4 to 7), 3 for a listen with credited artists (kind
/// 8). So a log holds the lowest version that reads it, an older
/// Spindle opens every log it can read, and refuses the others by their
/// version instead of taking the new records for damage.
pub(crate) const VERSION: u32 = 3;
/// The first version: listens and love events only.
pub(crate) const VERSION_1: u32 = 1;
/// The version that added corrections (kinds 4 to 7).
pub(crate) const VERSION_CORRECTIONS: u32 = 2;
/// The version that added listens with credited artists (kind 8).
pub(crate) const VERSION_CREDITS: u32 = 3;
pub(crate) const HEADER_LEN: u64 = 16;
/// A record larger than this is taken as damage, not data; the writer
/// never appends one (see [`crate::limits`] and [`GroupLog::append`]).
pub(crate) const MAX_RECORD: u32 = 1 << 20;
/// The log file's mode: readable and writable by its owner only.
pub(crate) const FILE_MODE: u32 = 0o600;
/// How the log's frames are read: at most [`MAX_RECORD`] bytes each, and
/// `spindle-framed`'s torn window (a flush is written and fsynced in
/// pieces of at most 4 MiB cut at record boundaries, so a crash leaves
/// damage only in the last 4 MiB: four records at their 1 MiB limit, and
/// hundreds of thousands of ordinary listens).
const FRAMING: Framing = Framing::new(MAX_RECORD);

/// Appends framed records; durable when `append` returns.
pub(crate) struct GroupLog {
    file: Mutex<File>,
    /// The version in the file's header (see [`VERSION`]).
    version: Mutex<u32>,
    state: Mutex<State>,
    cv: Condvar,
    /// The file's length up to the last fsynced flush: every byte before
    /// it is durable and ends at a record boundary (`tail.rs` reads up to it).
    committed: std::sync::atomic::AtomicU64,
}

#[derive(Default)]
struct State {
    pending: Vec<u8>,
    /// The buffer of the last flush, cleared, reused as the next `pending`.
    spare: Vec<u8>,
    /// Sequence number of the last append queued.
    queued: u64,
    /// Every append up to this one is on disk.
    durable: u64,
    /// The offset the next byte queued will have in the file.
    tail: u64,
    flushing: bool,
    failed: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a log's bytes could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadError {
    /// Another magic, or a version this build does not know.
    BadHeader { version: u32 },
    /// A bad record at `offset` with a good record somewhere after it.
    Damaged { offset: u64, reason: &'static str },
}

impl GroupLog {
    /// Opens (creating, mode 0600) the log, hands every valid record to
    /// `visit` in order, and truncates a torn tail so new records follow
    /// the last good one. Returns the log and how many bytes were cut off.
    /// Damage before good records is an error and changes nothing.
    #[cfg(test)]
    pub(crate) fn open(
        path: &Path,
        mut visit: impl FnMut(EventRef<'_>),
    ) -> Result<(GroupLog, u64), OpenError> {
        GroupLog::open_from(path, HEADER_LEN, FRAMING.torn_window, |_, ev| visit(ev))
    }

    /// [`GroupLog::open`], handing `visit` each record's offset too, and
    /// only the records from offset `start` on (a record boundary: the
    /// end a checkpoint covers; [`HEADER_LEN`] for all of them).
    pub(crate) fn open_at(
        path: &Path,
        start: u64,
        visit: impl FnMut(u64, EventRef<'_>),
    ) -> Result<(GroupLog, u64), OpenError> {
        GroupLog::open_from(path, start, FRAMING.torn_window, visit)
    }

    /// [`GroupLog::open`] with another torn window than the real one
    /// (tests of damage in small logs use 0).
    #[cfg(test)]
    fn open_with_window(
        path: &Path,
        torn_window: usize,
        visit: impl FnMut(u64, EventRef<'_>),
    ) -> Result<(GroupLog, u64), OpenError> {
        GroupLog::open_from(path, HEADER_LEN, torn_window, visit)
    }

    /// Opens the log, reading the header and the records from `start` on.
    fn open_from(
        path: &Path,
        start: u64,
        torn_window: usize,
        visit: impl FnMut(u64, EventRef<'_>),
    ) -> Result<(GroupLog, u64), OpenError> {
        let io = |source| OpenError::Io {
            path: path.to_owned(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(FILE_MODE)
            .open(path)
            .map_err(io)?;
        // A log made before files were private keeps its old mode: fix it.
        let perms = file.metadata().map_err(io)?.permissions();
        if perms.mode() & 0o777 != FILE_MODE {
            file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))
                .map_err(io)?;
        }
        let len = file.metadata().map_err(io)?.len();
        if len < HEADER_LEN {
            // New (or a header torn while creating it): write a fresh one,
            // version 1 until a correction needs 2 (older builds read it).
            let mut h = Vec::with_capacity(HEADER_LEN as usize);
            h.extend_from_slice(MAGIC);
            h.extend_from_slice(&VERSION_1.to_le_bytes());
            h.extend_from_slice(&0u32.to_le_bytes());
            file.set_len(0).map_err(io)?;
            file.seek(SeekFrom::Start(0)).map_err(io)?;
            file.write_all(&h).map_err(io)?;
            file.sync_all().map_err(io)?;
            if let Some(dir) = path.parent() {
                if let Ok(d) = File::open(dir) {
                    let _ = d.sync_all();
                }
            }
            let log = GroupLog::new(file);
            *lock(&log.version) = VERSION_1;
            return Ok((log, len));
        }
        let (head, tail) = read_from(&file, start, len).map_err(io)?;
        let version = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
        let good_end = read_log_from(&head, &tail, start, torn_window, visit)
            .map_err(|e| open_error(path, e))?;
        let truncated_bytes = len - good_end;
        if truncated_bytes > 0 {
            file.set_len(good_end).map_err(io)?;
            file.sync_all().map_err(io)?;
        }
        file.seek(SeekFrom::Start(good_end)).map_err(io)?;
        let log = GroupLog::new(file);
        *lock(&log.version) = version;
        Ok((log, truncated_bytes))
    }

    /// Opens the log for reading only, as a command beside a running
    /// server does: hands every record up to the last good one to
    /// `visit` and changes nothing on disk (a torn tail, perhaps a write
    /// in progress, is left alone, not cut). Appends to it fail.
    pub(crate) fn open_read_only(
        path: &Path,
        start: u64,
        visit: impl FnMut(u64, EventRef<'_>),
    ) -> Result<GroupLog, OpenError> {
        let io = |source| OpenError::Io {
            path: path.to_owned(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let mut version = VERSION_1;
        if len >= HEADER_LEN {
            let (head, tail) = read_from(&file, start, len).map_err(io)?;
            version = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
            read_log_from(&head, &tail, start, FRAMING.torn_window, visit)
                .map_err(|e| open_error(path, e))?;
        }
        let log = GroupLog::new(file);
        *lock(&log.version) = version;
        lock(&log.state).failed = Some(format!("{} was opened read-only", path.display()));
        Ok(log)
    }

    /// Makes the header say at least version `to` (an older log's is
    /// rewritten in place and fsynced) before a record only version `to`
    /// knows is appended. A log at `to` or newer is left alone.
    pub(crate) fn upgrade(&self, to: u32) -> Result<(), AppendError> {
        let mut v = lock(&self.version);
        if *v >= to {
            return Ok(());
        }
        let f = lock(&self.file);
        f.write_all_at(&to.to_le_bytes(), 8)
            .and_then(|()| f.sync_data())
            .map_err(|e| AppendError::Io(format!("upgrading the log's header: {e}")))?;
        *v = to;
        Ok(())
    }

    fn new(file: File) -> GroupLog {
        let committed = file.metadata().map_or(HEADER_LEN, |m| m.len());
        GroupLog {
            committed: std::sync::atomic::AtomicU64::new(committed),
            file: Mutex::new(file),
            version: Mutex::new(VERSION),
            state: Mutex::new(State {
                tail: committed,
                ..State::default()
            }),
            cv: Condvar::new(),
        }
    }

    /// Writes framed records (see `model::encode_listen`) and returns
    /// once they are fsynced. Concurrent callers share the write and the
    /// fsync of whoever flushes first (group commit); the caller's bytes
    /// are copied once, into the shared queue.
    #[cfg(test)]
    pub(crate) fn append(&self, records: &[u8]) -> Result<(), AppendError> {
        self.append_at(records).map(|_| ())
    }

    /// [`GroupLog::append`], returning the offset in the file where the
    /// first of `records` starts.
    pub(crate) fn append_at(&self, records: &[u8]) -> Result<u64, AppendError> {
        Ok(self
            .append_placed(records, None)?
            .unwrap_or_else(|tail| tail))
    }

    /// [`GroupLog::append`], but only if `records` would start at offset
    /// `at` (shipped records, `ship.rs`): `Ok(Err(end))` when the log
    /// ends elsewhere, at `end` (queued appends included), and nothing
    /// was written.
    pub(crate) fn append_if_at(
        &self,
        at: u64,
        records: &[u8],
    ) -> Result<Result<u64, u64>, AppendError> {
        self.append_placed(records, Some(at))
    }

    /// The one append path: with `expect`, refuses (returning the end
    /// the log has) unless the records would start there.
    fn append_placed(
        &self,
        records: &[u8],
        expect: Option<u64>,
    ) -> Result<Result<u64, u64>, AppendError> {
        if records.is_empty() {
            let tail = lock(&self.state).tail;
            return Ok(match expect {
                Some(at) if at != tail => Err(tail),
                _ => Ok(tail),
            });
        }
        check_frames(records)?;
        let mut st = lock(&self.state);
        if let Some(e) = &st.failed {
            return Err(AppendError::Poisoned(e.clone()));
        }
        if expect.is_some_and(|at| at != st.tail) {
            return Ok(Err(st.tail));
        }
        st.pending.extend_from_slice(records);
        st.queued += 1;
        let at = st.tail;
        st.tail += records.len() as u64;
        let mine = st.queued;
        loop {
            if st.durable >= mine {
                return Ok(Ok(at));
            }
            if let Some(e) = &st.failed {
                return Err(AppendError::Io(e.clone()));
            }
            if st.flushing {
                st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            // Lead: flush everything queued so far, ours included.
            st.flushing = true;
            let spare = std::mem::take(&mut st.spare);
            let mut batch = std::mem::replace(&mut st.pending, spare);
            let upto = st.queued;
            drop(st);
            let res = {
                let mut f = lock(&self.file);
                pieces(&batch, FRAMING.torn_window)
                    .try_for_each(|piece| f.write_all(piece).and_then(|()| f.sync_data()))
            };
            let flushed = batch.len() as u64;
            batch.clear();
            st = lock(&self.state);
            st.flushing = false;
            st.spare = batch;
            match res {
                Ok(()) => {
                    st.durable = upto;
                    self.committed
                        .fetch_add(flushed, std::sync::atomic::Ordering::SeqCst);
                }
                Err(e) => st.failed = Some(e.to_string()),
            }
            self.cv.notify_all();
        }
    }
}

impl GroupLog {
    /// The version in the file's header (`ship.rs`).
    pub(crate) fn version(&self) -> u32 {
        *lock(&self.version)
    }

    /// Whether appends can succeed: the log was not opened read-only and
    /// no write of it failed.
    pub(crate) fn is_writable(&self) -> bool {
        lock(&self.state).failed.is_none()
    }

    /// Where the durable part of the log ends (`tail.rs`).
    pub(crate) fn committed_end(&self) -> u64 {
        self.committed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Reads `buf.len()` bytes at `offset` (bytes before
    /// [`GroupLog::committed_end`] never change).
    pub(crate) fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(&*lock(&self.file), buf, offset)
    }
}

/// The last line of defence of the reader's limit: every frame in
/// `records` must be one the reader accepts as to its length. The
/// callers check each field first ([`crate::limits`]); this catches a
/// record that grew past them anyway, before any byte is written.
fn check_frames(records: &[u8]) -> Result<(), AppendError> {
    let mut at = 0;
    while at < records.len() {
        let len = records
            .get(at..at + 4)
            .map(|h| u32::from_le_bytes([h[0], h[1], h[2], h[3]]))
            .ok_or_else(|| AppendError::Io("an incomplete frame reached the log writer".into()))?;
        if len > MAX_RECORD {
            return Err(AppendError::TooLarge {
                field: "record",
                len: len as usize,
                max: MAX_RECORD as usize,
            });
        }
        at += 8 + len as usize;
    }
    if at != records.len() {
        return Err(AppendError::Io(
            "an incomplete frame reached the log writer".into(),
        ));
    }
    Ok(())
}

/// The record starting at `at`, and where it ends; or why it is bad.
pub(crate) fn frame_at(bytes: &[u8], at: usize) -> Result<(EventRef<'_>, usize), &'static str> {
    let (payload, end) = FRAMING.frame_at(bytes, at).map_err(|e| match e {
        FrameError::ShortHeader => "a record header cut short",
        FrameError::TooLong(_) => "a record length over 1 MiB",
        FrameError::ShortPayload => "a record cut short",
        FrameError::Checksum => "a record checksum mismatch",
    })?;
    let ev = EventRef::decode(payload).ok_or("a record that does not decode")?;
    Ok((ev, end))
}

/// Reads a log's bytes (at least a header): checks the header, hands the
/// records after it to `visit` in order, and returns where the last good
/// one ends. A bad record is a torn tail, to be cut off, if no valid
/// record starts anywhere after it, or if it lies in the last
/// `torn_window` bytes (`spindle_framed::TORN_WINDOW` for a real log: the
/// most a crash can leave unsynced, in any order); otherwise the log is
/// damaged in the middle, and cutting it would delete acknowledged
/// listens.
pub(crate) fn read_log(
    bytes: &[u8],
    torn_window: usize,
    mut visit: impl FnMut(EventRef<'_>),
) -> Result<u64, ReadError> {
    read_log_at(bytes, torn_window, |_, ev| visit(ev))
}

/// [`read_log`], handing `visit` each record's offset too (a
/// correction's id is its offset).
pub(crate) fn read_log_at(
    bytes: &[u8],
    torn_window: usize,
    visit: impl FnMut(u64, EventRef<'_>),
) -> Result<u64, ReadError> {
    let Some(head) = bytes.get(..HEADER_LEN as usize) else {
        return Err(ReadError::BadHeader { version: 0 });
    };
    read_log_from(
        head,
        &bytes[HEADER_LEN as usize..],
        HEADER_LEN,
        torn_window,
        visit,
    )
}

/// The header (its first [`HEADER_LEN`] bytes) and the bytes from
/// `start` to `len` of a log file at least a header long; an error if
/// the file is shorter than `start` (a log cut after a checkpoint was
/// taken of it while it was being opened).
fn read_from(file: &File, start: u64, len: u64) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let start = start.max(HEADER_LEN);
    let n = len.checked_sub(start).ok_or_else(|| {
        std::io::Error::other(format!(
            "the log ends at byte {len}, before byte {start} where reading was to start"
        ))
    })?;
    let mut head = vec![0; HEADER_LEN as usize];
    file.read_exact_at(&mut head, 0)?;
    let mut tail = vec![0; usize::try_from(n).map_err(std::io::Error::other)?];
    file.read_exact_at(&mut tail, start)?;
    Ok((head, tail))
}

/// [`read_log_at`] over a header and the bytes of the log from offset
/// `base` (a record boundary) on: the offsets handed to `visit` and the
/// end returned are the file's.
pub(crate) fn read_log_from(
    head: &[u8],
    bytes: &[u8],
    base: u64,
    torn_window: usize,
    mut visit: impl FnMut(u64, EventRef<'_>),
) -> Result<u64, ReadError> {
    let version = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
    if &head[..8] != MAGIC || !(VERSION_1..=VERSION).contains(&version) {
        return Err(ReadError::BadHeader { version });
    }
    let mut at = 0;
    while at < bytes.len() {
        match frame_at(bytes, at) {
            Ok((ev, end)) => {
                visit(base + at as u64, ev);
                at = end;
            }
            Err(reason) => {
                let framing = FRAMING.with_torn_window(torn_window);
                if !framing.is_torn_tail(bytes, at, |p| EventRef::decode(p).is_some()) {
                    return Err(ReadError::Damaged {
                        offset: base + at as u64,
                        reason,
                    });
                }
                break;
            }
        }
    }
    Ok(base + at as u64)
}

/// What a damaged log is to the opener of the file at `path`.
fn open_error(path: &Path, e: ReadError) -> OpenError {
    match e {
        ReadError::BadHeader { version } => OpenError::BadHeader {
            path: path.to_owned(),
            version,
        },
        ReadError::Damaged { offset, reason } => OpenError::Damaged {
            path: path.to_owned(),
            offset,
            reason,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Event, Listen};

    fn ev(ts: i64) -> Event {
        Event::Listen(Listen::new("u", ts, "a", "t"))
    }

    fn bytes(evs: &[Event]) -> Vec<u8> {
        let mut b = Vec::new();
        for e in evs {
            e.encode(&mut b);
        }
        b
    }

    fn open(p: &Path) -> (GroupLog, Vec<Event>) {
        let mut evs = Vec::new();
        let (log, _) = GroupLog::open(p, |e| evs.push(e.into_owned())).unwrap();
        (log, evs)
    }

    fn count(b: &[u8]) -> Result<(usize, u64), ReadError> {
        let mut n = 0;
        let end = read_log(b, 0, |_| n += 1)?;
        Ok((n, end))
    }

    #[test]
    fn torn_and_corrupt_tails_are_cut_and_appends_continue() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l");
        {
            let (log, evs) = open(&p);
            assert!(evs.is_empty());
            log.append(&bytes(&[ev(1), ev(2)])).unwrap();
            log.append(&bytes(&[ev(3)])).unwrap();
        }
        let full = std::fs::read(&p).unwrap();
        assert_eq!(count(&full), Ok((3, full.len() as u64)));
        // Every cut inside the last record loses only that record.
        let third_start = full.len() - bytes(&[ev(3)]).len();
        for cut in third_start + 1..full.len() {
            std::fs::write(&p, &full[..cut]).unwrap();
            let (log, evs) = open(&p);
            assert_eq!(evs, vec![ev(1), ev(2)], "cut at {cut}");
            log.append(&bytes(&[ev(4)])).unwrap();
            drop(log);
            let (_, evs) = open(&p);
            assert_eq!(evs, vec![ev(1), ev(2), ev(4)]);
        }
        // A flipped bit in the last record is damage, not data.
        let mut bad = full.clone();
        let n = bad.len();
        bad[n - 1] ^= 1;
        std::fs::write(&p, &bad).unwrap();
        let (_, evs) = open(&p);
        assert_eq!(evs.len(), 2);
    }

    #[test]
    fn a_flip_in_any_byte_before_the_last_record_is_refused_and_leaves_the_file_alone() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l");
        let (log, _) = open(&p);
        log.append(&bytes(&[ev(1), ev(2), ev(3)])).unwrap();
        drop(log);
        let full = std::fs::read(&p).unwrap();
        let last_start = full.len() - bytes(&[ev(3)]).len();
        for i in HEADER_LEN as usize..last_start {
            let mut bad = full.clone();
            bad[i] ^= 0x40;
            std::fs::write(&p, &bad).unwrap();
            let err = GroupLog::open_with_window(&p, 0, |_, _| {})
                .err()
                .expect("damage is an error");
            let OpenError::Damaged { offset, .. } = &err else {
                panic!("byte {i}: {err}");
            };
            let record = if (i as u64) < HEADER_LEN + (last_start as u64 - HEADER_LEN) / 2 {
                HEADER_LEN
            } else {
                HEADER_LEN + (last_start as u64 - HEADER_LEN) / 2
            };
            assert_eq!(*offset, record, "byte {i}");
            let msg = err.to_string();
            assert!(
                msg.contains(&format!("byte {record}")) && msg.contains("truncate"),
                "{msg}"
            );
            assert_eq!(
                std::fs::read(&p).unwrap(),
                bad,
                "byte {i}: the file changed"
            );
        }
    }

    #[test]
    fn flushes_are_fsynced_in_pieces_of_at_most_the_window_cut_at_records() {
        let frames = bytes(&[ev(1), ev(2), ev(3), ev(4), ev(5)]);
        let one = (1..=5).map(|i| bytes(&[ev(i)]).len()).max().unwrap();
        for window in [
            0,
            1,
            one,
            one + 1,
            2 * one,
            3 * one - 1,
            frames.len(),
            usize::MAX,
        ] {
            let pieces: Vec<&[u8]> = pieces(&frames, window).collect();
            assert_eq!(pieces.concat(), frames, "window {window}");
            for p in &pieces {
                // Whole records only; more than one only if they fit.
                assert_eq!(
                    count(&[&full_header()[..], p].concat()).unwrap().1 as usize,
                    16 + p.len()
                );
                assert!(p.len() <= window.max(one), "window {window}: {}", p.len());
            }
        }
    }

    #[test]
    fn damage_in_the_last_window_is_a_torn_tail_even_with_good_records_after_it() {
        // A power loss can keep a later page of the last, unsynced write
        // and lose an earlier one: that is a torn write, not damage.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l");
        let (log, _) = open(&p);
        log.append(&bytes(&[ev(1), ev(2), ev(3)])).unwrap();
        drop(log);
        let mut bad = std::fs::read(&p).unwrap();
        let second = HEADER_LEN as usize + bytes(&[ev(1)]).len();
        bad[second + 9] ^= 0x40;
        std::fs::write(&p, &bad).unwrap();
        let (_, evs) = open(&p);
        assert_eq!(evs.len(), 1);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), second as u64);
    }

    fn full_header() -> Vec<u8> {
        let mut h = MAGIC.to_vec();
        h.extend_from_slice(&VERSION.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h
    }

    #[test]
    fn the_writer_refuses_a_frame_the_reader_would_refuse() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l");
        let (log, _) = open(&p);
        let before = std::fs::read(&p).unwrap();
        let mut big = bytes(&[ev(1)]);
        let len = MAX_RECORD + 1;
        let mut frame = len.to_le_bytes().to_vec();
        frame.extend_from_slice(&[0; 4]);
        frame.resize(8 + len as usize, 0);
        big.extend(frame);
        let e = log.append(&big).unwrap_err();
        assert!(
            matches!(e, AppendError::TooLarge { len: l, .. } if l == len as usize),
            "{e}"
        );
        drop(log);
        assert_eq!(
            std::fs::read(&p).unwrap(),
            before,
            "nothing of the batch was written"
        );
    }

    #[test]
    fn the_log_file_is_private_whatever_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l");
        // An existing log readable by everyone is made private on open.
        std::fs::write(&p, b"").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        drop(open(&p));
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // A new one is created private: its mode is set, not left to the
        // umask.
        let q = dir.path().join("new");
        drop(open(&q));
        let mode = std::fs::metadata(&q).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn concurrent_appends_all_land() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l");
        let (log, _) = open(&p);
        std::thread::scope(|s| {
            for t in 0..8 {
                let log = &log;
                s.spawn(move || {
                    for i in 0..50 {
                        log.append(&bytes(&[ev(t * 1000 + i)])).unwrap();
                    }
                });
            }
        });
        drop(log);
        let (_, evs) = open(&p);
        assert_eq!(evs.len(), 400);
    }
}
