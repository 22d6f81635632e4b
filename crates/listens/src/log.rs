//! The append-only log file: header, framed records, recovery of a torn
//! tail, and group commit (one fsync for every append waiting at the
//! time). Byte layout in `docs/listens-format.md`.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::error::{AppendError, OpenError};
use crate::model::EventRef;

pub(crate) const MAGIC: &[u8; 8] = b"SPNDLSTN";
pub(crate) const VERSION: u32 = 1;
pub(crate) const HEADER_LEN: u64 = 16;
/// A record larger than this is taken as damage, not data.
const MAX_RECORD: u32 = 1 << 20;

/// Appends framed records; durable when `append` returns.
pub(crate) struct GroupLog {
    file: Mutex<File>,
    state: Mutex<State>,
    cv: Condvar,
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
    flushing: bool,
    failed: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl GroupLog {
    /// Opens (creating) the log, hands every valid record to `visit` in
    /// order, and truncates a damaged tail so new records follow the last
    /// good one. Returns the log and how many bytes were cut off.
    pub(crate) fn open(
        path: &Path,
        visit: impl FnMut(EventRef<'_>),
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
            .open(path)
            .map_err(io)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        if (bytes.len() as u64) < HEADER_LEN {
            // New (or a header torn while creating it): write a fresh one.
            let mut h = Vec::with_capacity(HEADER_LEN as usize);
            h.extend_from_slice(MAGIC);
            h.extend_from_slice(&VERSION.to_le_bytes());
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
            return Ok((GroupLog::new(file), bytes.len() as u64));
        }
        let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
        if &bytes[..8] != MAGIC || version != VERSION {
            return Err(OpenError::BadHeader {
                path: path.to_owned(),
                version,
            });
        }
        let good_end = read_records(&bytes, visit);
        let truncated_bytes = bytes.len() as u64 - good_end;
        if truncated_bytes > 0 {
            file.set_len(good_end).map_err(io)?;
            file.sync_all().map_err(io)?;
        }
        file.seek(SeekFrom::Start(good_end)).map_err(io)?;
        Ok((GroupLog::new(file), truncated_bytes))
    }

    fn new(file: File) -> GroupLog {
        GroupLog {
            file: Mutex::new(file),
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
        }
    }

    /// Writes framed records (see `model::encode_listen`) and returns
    /// once they are fsynced. Concurrent callers share the write and the
    /// fsync of whoever flushes first (group commit); the caller's bytes
    /// are copied once, into the shared queue.
    pub(crate) fn append(&self, records: &[u8]) -> Result<(), AppendError> {
        if records.is_empty() {
            return Ok(());
        }
        let mut st = lock(&self.state);
        if let Some(e) = &st.failed {
            return Err(AppendError::Poisoned(e.clone()));
        }
        st.pending.extend_from_slice(records);
        st.queued += 1;
        let mine = st.queued;
        loop {
            if st.durable >= mine {
                return Ok(());
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
                f.write_all(&batch).and_then(|()| f.sync_data())
            };
            batch.clear();
            st = lock(&self.state);
            st.flushing = false;
            st.spare = batch;
            match res {
                Ok(()) => st.durable = upto,
                Err(e) => st.failed = Some(e.to_string()),
            }
            self.cv.notify_all();
        }
    }
}

/// Hands the records after the header to `visit`, in order; returns
/// where the last good one ends.
fn read_records(bytes: &[u8], mut visit: impl FnMut(EventRef<'_>)) -> u64 {
    let mut at = HEADER_LEN as usize;
    while let Some(head) = bytes.get(at..at + 8) {
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        if len > MAX_RECORD {
            break;
        }
        let Some(payload) = bytes.get(at + 8..at + 8 + len as usize) else {
            break;
        };
        if crc32fast::hash(payload) != crc {
            break;
        }
        let Some(ev) = EventRef::decode(payload) else {
            break;
        };
        visit(ev);
        at += 8 + len as usize;
    }
    at as u64
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
        let (log, _) = GroupLog::open(p, |e| evs.push(e.to_owned())).unwrap();
        (log, evs)
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
        // Every cut inside the last record loses only that record.
        let third_start = {
            let mut n = 0;
            let end = read_records(&full, |_| n += 1);
            assert_eq!(n, 3);
            assert_eq!(end, full.len() as u64);
            full.len() - bytes(&[ev(3)]).len()
        };
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
