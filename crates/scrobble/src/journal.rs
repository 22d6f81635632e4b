//! The per-service journal: every scrobble is written here (and synced)
//! before it is sent, and stays until the service has acknowledged it.
//!
//! Two files in the service's directory (byte layout in
//! `crates/scrobble/docs/journal.md`):
//! - `journal`: a header (`SPSJ`, version u32, generation u64, all
//!   little-endian) then records appended in play order: payload length
//!   u32, CRC-32 of the payload u32, payload (the [`Scrobble`] as JSON).
//! - `acked`: `SPSA`, generation u64, offset u64, CRC-32 of the 16
//!   bytes before it: everything in `journal` of that generation before
//!   `offset` was acknowledged. It is replaced atomically (write a
//!   temporary file, sync, rename, sync the directory).
//!
//! On open a torn or corrupt tail (a crash mid-append) is cut off: such
//! a record was never synced, so never sent. When every record is
//! acknowledged the journal starts over with the next generation; an
//! `acked` of an older generation then means "nothing of this journal".

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::track::Scrobble;

const MAGIC: &[u8; 4] = b"SPSJ";
const ACK_MAGIC: &[u8; 4] = b"SPSA";
const VERSION: u32 = 1;
const HEADER: u64 = 16;
/// Records larger than this are corrupt (a scrobble is a few hundred bytes).
const MAX_RECORD: u32 = 1 << 20;

/// Why the journal could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    #[error("journal {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error(
        "journal {path} is not a scrobble journal (bad magic) or of a newer version {version}"
    )]
    Format { path: PathBuf, version: u32 },
    #[error("cannot acknowledge {asked} scrobbles, only {pending} are queued")]
    AckTooMany { asked: usize, pending: usize },
}

/// What opening found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// Scrobbles waiting to be sent.
    pub pending: usize,
    /// Bytes of an unfinished write cut off the end.
    pub truncated_bytes: u64,
}

/// One service's queue of scrobbles, on disk.
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    file: File,
    generation: u64,
    /// Byte offset of the end of the journal.
    end: u64,
    /// Unacknowledged records, oldest first, with the offset just past each.
    pending: VecDeque<(u64, Scrobble)>,
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> JournalError + '_ {
    move |source| JournalError::Io {
        path: path.to_owned(),
        source,
    }
}

fn header(generation: u64) -> [u8; 16] {
    let mut h = [0u8; 16];
    h[..4].copy_from_slice(MAGIC);
    h[4..8].copy_from_slice(&VERSION.to_le_bytes());
    h[8..].copy_from_slice(&generation.to_le_bytes());
    h
}

fn sync_dir(dir: &Path) -> Result<(), JournalError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir))
}

/// Reads the acknowledgement marker: (generation, offset).
fn read_ack(dir: &Path) -> Option<(u64, u64)> {
    let b = fs::read(dir.join("acked")).ok()?;
    if b.len() != 24 || &b[..4] != ACK_MAGIC {
        return None;
    }
    let crc = u32::from_le_bytes(b[20..24].try_into().ok()?);
    if crc32fast::hash(&b[4..20]) != crc {
        return None;
    }
    let g = u64::from_le_bytes(b[4..12].try_into().ok()?);
    let o = u64::from_le_bytes(b[12..20].try_into().ok()?);
    Some((g, o))
}

fn write_ack(dir: &Path, generation: u64, offset: u64) -> Result<(), JournalError> {
    let mut b = Vec::with_capacity(24);
    b.extend_from_slice(ACK_MAGIC);
    b.extend_from_slice(&generation.to_le_bytes());
    b.extend_from_slice(&offset.to_le_bytes());
    let crc = crc32fast::hash(&b[4..20]);
    b.extend_from_slice(&crc.to_le_bytes());
    let tmp = dir.join("acked.tmp");
    let mut f = File::create(&tmp).map_err(io_err(&tmp))?;
    f.write_all(&b).map_err(io_err(&tmp))?;
    f.sync_all().map_err(io_err(&tmp))?;
    let dst = dir.join("acked");
    fs::rename(&tmp, &dst).map_err(io_err(&dst))?;
    sync_dir(dir)
}

/// Parses the records after the header; returns them with the offset of
/// the end of the last good one.
fn parse(bytes: &[u8]) -> (Vec<(u64, Scrobble)>, u64) {
    let mut out = Vec::new();
    let mut pos = HEADER as usize;
    while pos + 8 <= bytes.len() {
        let len = u32::from_le_bytes([bytes[pos], bytes[pos + 1], bytes[pos + 2], bytes[pos + 3]]);
        let crc = u32::from_le_bytes([
            bytes[pos + 4],
            bytes[pos + 5],
            bytes[pos + 6],
            bytes[pos + 7],
        ]);
        if len > MAX_RECORD || pos + 8 + len as usize > bytes.len() {
            break;
        }
        let payload = &bytes[pos + 8..pos + 8 + len as usize];
        if crc32fast::hash(payload) != crc {
            break;
        }
        let Ok(s) = serde_json::from_slice::<Scrobble>(payload) else {
            break;
        };
        pos += 8 + len as usize;
        out.push((pos as u64, s));
    }
    (out, pos as u64)
}

impl Journal {
    /// Opens (creating) the journal in `dir`, cutting off a torn tail.
    pub fn open(dir: &Path) -> Result<(Journal, OpenReport), JournalError> {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        let path = dir.join("journal");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io_err(&path))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io_err(&path))?;
        let mut report = OpenReport::default();
        if bytes.len() < HEADER as usize {
            // New, or a crash while writing the header: start afresh.
            let generation = read_ack(dir).map_or(1, |(g, _)| g + 1);
            file.set_len(0).map_err(io_err(&path))?;
            file.seek(SeekFrom::Start(0)).map_err(io_err(&path))?;
            file.write_all(&header(generation)).map_err(io_err(&path))?;
            file.sync_all().map_err(io_err(&path))?;
            sync_dir(dir)?;
            let j = Journal {
                dir: dir.to_owned(),
                file,
                generation,
                end: HEADER,
                pending: VecDeque::new(),
            };
            return Ok((j, report));
        }
        let version = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        if &bytes[..4] != MAGIC || version != VERSION {
            return Err(JournalError::Format { path, version });
        }
        let generation = u64::from_le_bytes(bytes[8..16].try_into().unwrap_or([0; 8]));
        let (records, end) = parse(&bytes);
        if end < bytes.len() as u64 {
            report.truncated_bytes = bytes.len() as u64 - end;
            file.set_len(end).map_err(io_err(&path))?;
            file.sync_all().map_err(io_err(&path))?;
        }
        let acked = match read_ack(dir) {
            Some((g, o)) if g == generation => o,
            _ => HEADER,
        };
        let pending: VecDeque<(u64, Scrobble)> =
            records.into_iter().filter(|(o, _)| *o > acked).collect();
        report.pending = pending.len();
        file.seek(SeekFrom::Start(end)).map_err(io_err(&path))?;
        let j = Journal {
            dir: dir.to_owned(),
            file,
            generation,
            end,
            pending,
        };
        Ok((j, report))
    }

    /// Counts the pending scrobbles of the journal in `dir` without
    /// changing anything (for `status` while the daemon runs).
    pub fn peek(dir: &Path) -> Result<Vec<Scrobble>, JournalError> {
        let path = dir.join("journal");
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err(&path)(e)),
        };
        if bytes.len() < HEADER as usize || &bytes[..4] != MAGIC {
            return Ok(Vec::new());
        }
        let generation = u64::from_le_bytes(bytes[8..16].try_into().unwrap_or([0; 8]));
        let acked = match read_ack(dir) {
            Some((g, o)) if g == generation => o,
            _ => HEADER,
        };
        let (records, _) = parse(&bytes);
        Ok(records
            .into_iter()
            .filter(|(o, _)| *o > acked)
            .map(|(_, s)| s)
            .collect())
    }

    /// Appends a scrobble and syncs it to disk.
    pub fn append(&mut self, s: &Scrobble) -> Result<(), JournalError> {
        let path = self.dir.join("journal");
        let payload = serde_json::to_vec(s).unwrap_or_default();
        let mut rec = Vec::with_capacity(payload.len() + 8);
        rec.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        rec.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        rec.extend_from_slice(&payload);
        self.file.write_all(&rec).map_err(io_err(&path))?;
        self.file.sync_data().map_err(io_err(&path))?;
        self.end += rec.len() as u64;
        self.pending.push_back((self.end, s.clone()));
        Ok(())
    }

    /// Appends scrobbles in order with one sync for all of them (a
    /// follower of another log adding a batch).
    pub fn append_all(&mut self, batch: &[Scrobble]) -> Result<(), JournalError> {
        if batch.is_empty() {
            return Ok(());
        }
        let path = self.dir.join("journal");
        let mut rec = Vec::new();
        let mut ends = Vec::with_capacity(batch.len());
        for s in batch {
            let payload = serde_json::to_vec(s).unwrap_or_default();
            rec.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            rec.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
            rec.extend_from_slice(&payload);
            ends.push(self.end + rec.len() as u64);
        }
        self.file.write_all(&rec).map_err(io_err(&path))?;
        self.file.sync_data().map_err(io_err(&path))?;
        self.end += rec.len() as u64;
        for (end, s) in ends.into_iter().zip(batch) {
            self.pending.push_back((end, s.clone()));
        }
        Ok(())
    }

    /// The oldest `n` pending scrobbles.
    pub fn batch(&self, n: usize) -> Vec<Scrobble> {
        self.pending
            .iter()
            .take(n)
            .map(|(_, s)| s.clone())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Marks the oldest `n` pending scrobbles as acknowledged, durably.
    pub fn ack(&mut self, n: usize) -> Result<(), JournalError> {
        if n > self.pending.len() {
            return Err(JournalError::AckTooMany {
                asked: n,
                pending: self.pending.len(),
            });
        }
        if n == 0 {
            return Ok(());
        }
        let offset = self.pending[n - 1].0;
        write_ack(&self.dir, self.generation, offset)?;
        self.pending.drain(..n);
        if self.pending.is_empty() {
            self.restart()?;
        }
        Ok(())
    }

    /// Everything is acknowledged: start the next generation, empty.
    fn restart(&mut self) -> Result<(), JournalError> {
        let generation = self.generation + 1;
        let tmp = self.dir.join("journal.tmp");
        let mut f = File::create(&tmp).map_err(io_err(&tmp))?;
        f.write_all(&header(generation)).map_err(io_err(&tmp))?;
        f.sync_all().map_err(io_err(&tmp))?;
        let path = self.dir.join("journal");
        fs::rename(&tmp, &path).map_err(io_err(&path))?;
        sync_dir(&self.dir)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io_err(&path))?;
        file.seek(SeekFrom::End(0)).map_err(io_err(&path))?;
        self.file = file;
        self.generation = generation;
        self.end = HEADER;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(i: i64) -> Scrobble {
        Scrobble {
            artist: "A".into(),
            track: format!("T{i}"),
            timestamp: 1_700_000_000 + i,
            ..Scrobble::default()
        }
    }

    fn titles(v: &[Scrobble]) -> Vec<String> {
        v.iter().map(|s| s.track.clone()).collect()
    }

    #[test]
    fn a_batch_appended_at_once_reads_back_in_order_and_acks_one_by_one() {
        let d = tempfile::tempdir().expect("tempdir");
        let (mut j, _) = Journal::open(d.path()).expect("open");
        j.append(&s(0)).expect("append");
        j.append_all(&[s(1), s(2), s(3)]).expect("append_all");
        j.ack(2).expect("ack");
        drop(j);
        let (j, rep) = Journal::open(d.path()).expect("reopen");
        assert_eq!(rep.pending, 2);
        assert_eq!(titles(&j.batch(50)), ["T2", "T3"]);
    }

    #[test]
    fn scrobble_survives_restart_before_it_is_sent() {
        let d = tempfile::tempdir().expect("tempdir");
        let (mut j, _) = Journal::open(d.path()).expect("open");
        for i in 0..3 {
            j.append(&s(i)).expect("append");
        }
        drop(j);
        let (j, rep) = Journal::open(d.path()).expect("reopen");
        assert_eq!(rep.pending, 3);
        assert_eq!(titles(&j.batch(50)), ["T0", "T1", "T2"]);
    }

    #[test]
    fn acknowledged_scrobbles_are_not_sent_again_after_restart() {
        let d = tempfile::tempdir().expect("tempdir");
        let (mut j, _) = Journal::open(d.path()).expect("open");
        for i in 0..5 {
            j.append(&s(i)).expect("append");
        }
        j.ack(2).expect("ack");
        drop(j);
        let (mut j, _) = Journal::open(d.path()).expect("reopen");
        assert_eq!(titles(&j.batch(50)), ["T2", "T3", "T4"]);
        j.ack(3).expect("ack all");
        j.append(&s(9)).expect("append after restart");
        drop(j);
        let (j, _) = Journal::open(d.path()).expect("reopen");
        assert_eq!(titles(&j.batch(50)), ["T9"]);
        assert_eq!(titles(&Journal::peek(d.path()).expect("peek")), ["T9"]);
    }

    #[test]
    fn batches_are_the_oldest_fifty() {
        let d = tempfile::tempdir().expect("tempdir");
        let (mut j, _) = Journal::open(d.path()).expect("open");
        for i in 0..120 {
            j.append(&s(i)).expect("append");
        }
        let mut sent = Vec::new();
        while !j.is_empty() {
            let b = j.batch(50);
            sent.push(b.len());
            assert_eq!(
                b[0].timestamp,
                1_700_000_000 + sent.iter().sum::<usize>() as i64 - b.len() as i64
            );
            j.ack(b.len()).expect("ack");
        }
        assert_eq!(sent, [50, 50, 20]);
    }

    #[test]
    fn a_torn_tail_is_cut_and_earlier_records_kept() {
        let d = tempfile::tempdir().expect("tempdir");
        let (mut j, _) = Journal::open(d.path()).expect("open");
        j.append(&s(0)).expect("append");
        j.append(&s(1)).expect("append");
        drop(j);
        let path = d.path().join("journal");
        let full = fs::read(&path).expect("read");
        // Every cut inside the second record, and a flipped byte in it.
        let (recs, _) = parse(&full);
        let first_end = recs[0].0 as usize;
        for cut in first_end + 1..full.len() {
            fs::write(&path, &full[..cut]).expect("write");
            let (j, rep) = Journal::open(d.path()).expect("reopen");
            assert_eq!(titles(&j.batch(50)), ["T0"], "cut at {cut}");
            assert_eq!(rep.truncated_bytes, (cut - first_end) as u64);
        }
        let mut bad = full.clone();
        let last = bad.len() - 2;
        bad[last] ^= 0x55;
        fs::write(&path, &bad).expect("write");
        let (mut j, _) = Journal::open(d.path()).expect("reopen");
        assert_eq!(titles(&j.batch(50)), ["T0"]);
        // Appending after the cut works and survives.
        j.append(&s(2)).expect("append");
        drop(j);
        let (j, _) = Journal::open(d.path()).expect("reopen");
        assert_eq!(titles(&j.batch(50)), ["T0", "T2"]);
    }

    #[test]
    fn a_crash_between_restart_and_ack_loses_nothing_and_repeats_nothing() {
        let d = tempfile::tempdir().expect("tempdir");
        let (mut j, _) = Journal::open(d.path()).expect("open");
        j.append(&s(0)).expect("append");
        j.ack(1).expect("ack");
        j.append(&s(1)).expect("append");
        drop(j);
        // An `acked` of the old generation, pointing past the new file's
        // first record, must not hide it.
        write_ack(d.path(), 1, 10_000).expect("old ack");
        let (j, _) = Journal::open(d.path()).expect("reopen");
        assert_eq!(titles(&j.batch(50)), ["T1"]);
    }

    #[test]
    fn a_damaged_ack_marker_resends_rather_than_loses() {
        let d = tempfile::tempdir().expect("tempdir");
        let (mut j, _) = Journal::open(d.path()).expect("open");
        j.append(&s(0)).expect("append");
        j.append(&s(1)).expect("append");
        j.ack(1).expect("ack");
        drop(j);
        fs::write(d.path().join("acked"), b"garbage").expect("write");
        let (j, _) = Journal::open(d.path()).expect("reopen");
        assert_eq!(titles(&j.batch(50)), ["T0", "T1"]);
    }

    #[test]
    fn acking_more_than_pending_is_an_error() {
        let d = tempfile::tempdir().expect("tempdir");
        let (mut j, _) = Journal::open(d.path()).expect("open");
        assert!(matches!(j.ack(1), Err(JournalError::AckTooMany { .. })));
    }
}
