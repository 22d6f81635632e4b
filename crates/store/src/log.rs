//! The append-only log of committed transactions, with group commit.
//!
//! Layout (little-endian; see `docs/store-format.md`):
//!
//! ```text
//! header  : magic "SPNDLLOG" | version u32 | generation u64 | crc32 u32
//! record* : payload_len u32 | crc32(payload) u32 | payload
//! payload : seq u64 | op_count varint | op*
//! ```
//!
//! A commit returns once its record is written and `fdatasync`ed.
//! Committers that arrive while a sync is in flight are batched into the
//! next write (group commit).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::{Condvar, Mutex};

// The frames, the torn-window rule and the writer's pieces are
// `spindle-framed`'s, shared with the listening history.
use spindle_framed::{pieces, FrameError, Framing, TORN_WINDOW};

use crate::codec::{Reader, Writer};
use crate::error::FormatError;
use crate::op::Op;

pub(crate) const LOG_MAGIC: &[u8; 8] = b"SPNDLLOG";
pub(crate) const LOG_VERSION: u32 = 1;
pub(crate) const LOG_HEADER_LEN: u64 = 24;

pub(crate) fn header(generation: u64) -> Vec<u8> {
    let mut w = Writer::with_capacity(LOG_HEADER_LEN as usize);
    w.raw(LOG_MAGIC);
    w.u32(LOG_VERSION);
    w.u64(generation);
    let crc = crc32fast::hash(w.as_slice());
    w.u32(crc);
    w.into_inner()
}

/// Encode one transaction as a complete log record. Fails with the
/// payload's size if it does not fit the record's u32 length field.
pub(crate) fn encode_record(seq: u64, ops: &[Op]) -> Result<Vec<u8>, u64> {
    let mut p = Writer::with_capacity(64 * ops.len() + 16);
    p.u64(seq);
    p.varint(ops.len() as u64);
    for op in ops {
        op.encode(&mut p);
    }
    let payload = p.into_inner();
    let len = u32::try_from(payload.len()).map_err(|_| payload.len() as u64)?;
    let mut out = Vec::with_capacity(payload.len() + 8);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// What reading a log found.
#[derive(Debug, Default)]
pub(crate) struct LogContents {
    pub generation: u64,
    pub txns: Vec<(u64, Vec<Op>)>,
    /// Offset just past the last good record.
    pub good_len: u64,
    /// Why the tail after `good_len` was dropped, if it was.
    pub dropped_tail: Option<String>,
    pub file_len: u64,
}

/// Why a log could not be read.
pub(crate) enum ReadError {
    Magic,
    Version(u32),
    /// The header is damaged.
    Corrupt(String),
    /// A bad record at `offset` with a good record somewhere after it:
    /// not a torn tail, so not to be cut off.
    Damaged {
        offset: u64,
        detail: String,
    },
}

/// Read a whole log file: header, then every good record up to the first
/// incomplete or corrupt one. That one and what follows it are a torn
/// tail, to be dropped, only if no good record starts anywhere after it;
/// otherwise the log is damaged in the middle ([`ReadError::Damaged`]),
/// and dropping the rest would lose acknowledged commits.
pub(crate) fn read_log(bytes: &[u8]) -> Result<LogContents, ReadError> {
    read_log_with_window(bytes, TORN_WINDOW)
}

/// Frames of any length a record's u32 field can hold.
const FRAMING: Framing = Framing::new(u32::MAX);

/// [`read_log`] with another torn window (tests of damage in small logs
/// use 0).
pub(crate) fn read_log_with_window(
    bytes: &[u8],
    torn_window: usize,
) -> Result<LogContents, ReadError> {
    if bytes.len() < LOG_HEADER_LEN as usize {
        return Err(ReadError::Corrupt("log header is truncated".into()));
    }
    if &bytes[..8] != LOG_MAGIC {
        return Err(ReadError::Magic);
    }
    let mut r = Reader::new(&bytes[8..LOG_HEADER_LEN as usize]);
    let version = r.fixed_u32().map_err(|e| ReadError::Corrupt(e.0))?;
    if version != LOG_VERSION {
        return Err(ReadError::Version(version));
    }
    let generation = r.fixed_u64().map_err(|e| ReadError::Corrupt(e.0))?;
    let crc = r.fixed_u32().map_err(|e| ReadError::Corrupt(e.0))?;
    if crc != crc32fast::hash(&bytes[..20]) {
        return Err(ReadError::Corrupt("log header checksum mismatch".into()));
    }
    let mut out = LogContents {
        generation,
        file_len: bytes.len() as u64,
        ..Default::default()
    };
    let mut pos = LOG_HEADER_LEN as usize;
    let mut last_seq: Option<u64> = None;
    loop {
        out.good_len = pos as u64;
        if pos == bytes.len() {
            break;
        }
        let bad = match read_record(bytes, pos) {
            Ok((seq, ops, end)) => match last_seq.filter(|&last| seq <= last) {
                Some(last) => format!("record at offset {pos} has sequence {seq} after {last}"),
                None => {
                    last_seq = Some(seq);
                    out.txns.push((seq, ops));
                    pos = end;
                    continue;
                }
            },
            Err(e) => format!("{} at offset {pos}", e.0),
        };
        let framing = FRAMING.with_torn_window(torn_window);
        if !framing.is_torn_tail(bytes, pos, |p| decode_payload(p).is_ok()) {
            return Err(ReadError::Damaged {
                offset: pos as u64,
                detail: bad,
            });
        }
        out.dropped_tail = Some(bad);
        break;
    }
    Ok(out)
}

/// The record at `at`: its sequence number, its ops and where it ends.
fn read_record(bytes: &[u8], at: usize) -> Result<(u64, Vec<Op>, usize), FormatError> {
    let (payload, end) = FRAMING.frame_at(bytes, at).map_err(|e| {
        FormatError::new(match e {
            FrameError::ShortHeader => "incomplete record header",
            FrameError::ShortPayload | FrameError::TooLong(_) => "incomplete record",
            FrameError::Checksum => "record checksum mismatch",
        })
    })?;
    let (seq, ops) = decode_payload(payload)?;
    Ok((seq, ops, end))
}

fn decode_payload(payload: &[u8]) -> Result<(u64, Vec<Op>), FormatError> {
    let mut r = Reader::new(payload);
    let seq = r.fixed_u64()?;
    let n = r.varint()?;
    // Every op takes at least two bytes, so a count cannot reserve more
    // than the record could hold.
    let mut ops = Vec::with_capacity(n.min(r.remaining() as u64 / 2) as usize);
    for _ in 0..n {
        ops.push(Op::decode(&mut r)?);
    }
    if !r.is_empty() {
        return Err(FormatError::new("trailing bytes in record"));
    }
    Ok((seq, ops))
}

/// One transaction of a log: its sequence number and its ops.
pub(crate) type Txn = (u64, Vec<Op>);

/// The records of `bytes`, which must be whole, intact records with
/// ascending sequence numbers and nothing else (shipped log bytes,
/// `ship.rs`); or the offset into `bytes` of the first that is not, and
/// why.
pub(crate) fn read_records(bytes: &[u8]) -> Result<Vec<Txn>, (usize, String)> {
    let mut out: Vec<Txn> = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let (seq, ops, end) = read_record(bytes, pos).map_err(|e| (pos, e.0))?;
        if let Some(&(last, _)) = out.last().filter(|(last, _)| seq <= *last) {
            return Err((pos, format!("sequence {seq} after {last}")));
        }
        out.push((seq, ops));
        pos = end;
    }
    Ok(out)
}

pub(crate) fn read_file(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    match File::open(path) {
        Ok(mut f) => {
            let mut v = Vec::new();
            f.read_to_end(&mut v)?;
            Ok(Some(v))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

struct Inner {
    file: File,
    pending: Vec<u8>,
    /// Ticket of the last record in `pending`.
    pending_last: u64,
    next_ticket: u64,
    durable: u64,
    flushing: bool,
    failed: Option<String>,
    bytes: u64,
}

/// The writing end of the log: records are queued in commit order and
/// made durable in batches.
pub(crate) struct LogWriter {
    inner: Mutex<Inner>,
    cv: Condvar,
}

impl LogWriter {
    /// Open an existing log for appending at `good_len` (truncating a
    /// dropped tail).
    pub fn open(path: &Path, good_len: u64) -> std::io::Result<LogWriter> {
        let mut file = OpenOptions::new().read(true).write(true).open(path)?;
        crate::perms::make_private(&file)?;
        if file.metadata()?.len() != good_len {
            file.set_len(good_len)?;
            file.sync_all()?;
        }
        file.seek(SeekFrom::Start(good_len))?;
        Ok(Self::from_file(file, good_len))
    }

    pub fn from_file(file: File, len: u64) -> LogWriter {
        LogWriter {
            inner: Mutex::new(Inner {
                file,
                pending: Vec::new(),
                pending_last: 0,
                next_ticket: 1,
                durable: 0,
                flushing: false,
                failed: None,
                bytes: len,
            }),
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queue a record; returns its ticket for [`LogWriter::wait`]. Call
    /// in commit order (under the library's write lock).
    pub fn enqueue(&self, record: &[u8]) -> Result<u64, String> {
        let mut g = self.lock();
        if let Some(f) = &g.failed {
            return Err(f.clone());
        }
        g.pending.extend_from_slice(record);
        let t = g.next_ticket;
        g.next_ticket += 1;
        g.pending_last = t;
        Ok(t)
    }

    /// Wait until the record with `ticket` is on disk.
    pub fn wait(&self, ticket: u64) -> std::io::Result<()> {
        let mut g = self.lock();
        loop {
            if g.durable >= ticket {
                return Ok(());
            }
            if let Some(f) = &g.failed {
                return Err(std::io::Error::other(f.clone()));
            }
            if !g.flushing {
                // Clone the handle before taking the batch: an early
                // return here must not leave `flushing` set or drop
                // queued records, or every other committer would hang.
                let mut file = match g.file.try_clone() {
                    Ok(f) => f,
                    Err(e) => {
                        g.failed = Some(e.to_string());
                        self.cv.notify_all();
                        return Err(e);
                    }
                };
                g.flushing = true;
                let batch = std::mem::take(&mut g.pending);
                let last = g.pending_last;
                drop(g);
                let res = pieces(&batch, TORN_WINDOW)
                    .try_for_each(|piece| file.write_all(piece).and_then(|()| file.sync_data()));
                g = self.lock();
                g.flushing = false;
                match res {
                    Ok(()) => {
                        g.durable = g.durable.max(last);
                        g.bytes += batch.len() as u64;
                    }
                    Err(e) => g.failed = Some(e.to_string()),
                }
                self.cv.notify_all();
            } else {
                g = self.cv.wait(g).unwrap_or_else(|p| p.into_inner());
            }
        }
    }

    /// Calls `f` with the log file and how many of its bytes are durable
    /// (whole records, which never change), both of one moment: no
    /// [`LogWriter::replace`] comes between (`ship.rs` reads them with
    /// `pread`).
    pub fn durable<T>(&self, f: impl FnOnce(&File, u64) -> T) -> T {
        let g = self.lock();
        f(&g.file, g.bytes)
    }

    /// Make everything queued durable.
    pub fn flush(&self) -> std::io::Result<()> {
        let t = self.lock().next_ticket - 1;
        self.wait(t)
    }

    /// Swap in a new log file (after compaction). Callers hold the
    /// library lock so nothing is queued meanwhile, and flushed first.
    /// `then` runs before anyone sees the new file (the `Db` notes the
    /// new generation), so [`LogWriter::durable`] sees both or neither.
    pub fn replace(&self, file: File, len: u64, then: impl FnOnce()) {
        let mut g = self.lock();
        g.file = file;
        g.bytes = len;
        then();
    }

    pub fn into_inner_file(self) -> File {
        self.inner
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .file
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut b = header(3);
        for seq in 1..=3u64 {
            b.extend(
                encode_record(
                    seq,
                    &[
                        Op::CreateEntry(seq as u32),
                        Op::CreateIndex("artist".into()),
                    ],
                )
                .unwrap(),
            );
        }
        b
    }

    #[test]
    fn reads_all_records() {
        let b = sample();
        let c = read_log_with_window(&b, 0).ok().unwrap();
        assert_eq!(c.generation, 3);
        assert_eq!(c.txns.len(), 3);
        assert!(c.dropped_tail.is_none());
        assert_eq!(c.good_len, b.len() as u64);
    }

    #[test]
    fn every_truncation_recovers_a_prefix() {
        let b = sample();
        let full = read_log_with_window(&b, 0).ok().unwrap();
        for cut in LOG_HEADER_LEN as usize..b.len() {
            let c = read_log(&b[..cut]).ok().unwrap();
            assert!(c.txns.len() < 3 || cut == b.len());
            assert_eq!(&full.txns[..c.txns.len()], &c.txns[..]);
            assert!(c.good_len <= cut as u64);
        }
    }

    #[test]
    fn sequence_numbers_must_ascend_from_the_first_record() {
        let mut b = header(1);
        for seq in [0, 0] {
            b.extend(encode_record(seq, &[Op::CreateEntry(1)]).unwrap());
        }
        let second = header(1).len() + encode_record(0, &[Op::CreateEntry(1)]).unwrap().len();
        let c = read_log_with_window(&b, 0).ok().unwrap();
        assert_eq!(c.txns.len(), 1, "a repeated sequence 0 ends the log");
        assert!(c.dropped_tail.unwrap().contains("sequence 0 after 0"));
        // With a good record after it, it is damage, not a tail to cut.
        b.extend(encode_record(1, &[Op::CreateEntry(1)]).unwrap());
        match read_log_with_window(&b, 0) {
            Err(ReadError::Damaged { offset, detail }) => {
                assert_eq!(offset, second as u64);
                assert!(detail.contains("sequence 0 after 0"), "{detail}");
            }
            _ => panic!("not refused as damage"),
        }
    }

    #[test]
    fn every_bit_flip_in_records_is_caught() {
        let b = sample();
        let full = read_log_with_window(&b, 0).ok().unwrap();
        let starts: Vec<usize> = (0..3).map(encode_log_len).collect();
        for i in LOG_HEADER_LEN as usize..b.len() {
            let record = starts.iter().rposition(|&s| s <= i).unwrap();
            for bit in 0..8 {
                let mut c = b.clone();
                c[i] ^= 1 << bit;
                match read_log_with_window(&c, 0) {
                    // In the last record: a torn tail, cut off.
                    Ok(got) => {
                        assert_eq!(record, 2, "flip at {i}:{bit} in record {record} was cut");
                        assert_eq!(&full.txns[..2], &got.txns[..]);
                        assert_eq!(got.good_len, starts[2] as u64);
                    }
                    // Before it: damage at the record's start, not a tail.
                    Err(ReadError::Damaged { offset, .. }) => {
                        assert!(record < 2, "flip at {i}:{bit}");
                        assert_eq!(offset, starts[record] as u64, "flip at {i}:{bit}");
                    }
                    Err(_) => panic!("flip at {i}:{bit}: a header error"),
                }
            }
        }
    }

    /// Where record `n` (from 0) of [`sample`] starts.
    fn encode_log_len(n: u64) -> usize {
        let mut b = header(3);
        for seq in 1..=n {
            b.extend(
                encode_record(
                    seq,
                    &[
                        Op::CreateEntry(seq as u32),
                        Op::CreateIndex("artist".into()),
                    ],
                )
                .unwrap(),
            );
        }
        b.len()
    }

    #[test]
    fn damage_in_the_last_window_is_a_torn_tail_even_with_good_records_after_it() {
        // A power loss can keep a later page of the last, unsynced write
        // and lose an earlier one: a torn write, not damage.
        let b = sample();
        let second = encode_log_len(1);
        let mut c = b.clone();
        c[second + 9] ^= 0x40;
        let got = read_log(&c).ok().unwrap();
        assert_eq!(got.txns.len(), 1);
        assert_eq!(got.good_len, second as u64);
        assert!(got.dropped_tail.is_some());
    }

    #[test]
    fn a_bad_record_with_a_good_one_after_it_is_damage_not_a_tail() {
        let b = sample();
        let second = encode_log_len(1);
        // Garbage where the second record's length was: the third record
        // still follows, so nothing may be cut.
        let mut c = b.clone();
        c[second..second + 4].copy_from_slice(&[0xff; 4]);
        match read_log_with_window(&c, 0) {
            Err(ReadError::Damaged { offset, detail }) => {
                assert_eq!(offset, second as u64);
                assert!(detail.contains("incomplete record"), "{detail}");
            }
            _ => panic!("not refused as damage"),
        }
        // Garbage (or zeros, as a crash can leave) after the last record
        // is a tail.
        for tail in [vec![0u8; 40], vec![0xa5; 40]] {
            let mut c = b.clone();
            c.extend(&tail);
            let got = read_log_with_window(&c, 0).ok().unwrap();
            assert_eq!(got.txns.len(), 3);
            assert_eq!(got.good_len, b.len() as u64);
        }
    }
}
