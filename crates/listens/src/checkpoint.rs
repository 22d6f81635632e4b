//! The checkpoint: the indexes and the dedupe set as of an offset of the
//! log, in a file beside it (`listens.checkpoint`), so that opening reads
//! it and replays only the log after that offset. Written whole to a
//! temporary file, fsynced, renamed over the old one and the directory
//! fsynced: a crash leaves the old checkpoint or the new one, never half
//! of one. Byte layout in `docs/listens-format.md`.
//!
//! A checkpoint is only a cache of the log: whenever it is missing,
//! damaged, of another format, or does not match the log beside it (the
//! log is shorter than the offset it covers, or its bytes there are not
//! the ones it was taken of), opening ignores it, says why in the
//! [`OpenReport`](crate::OpenReport), and replays the whole log.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

pub(crate) mod codec;

use crate::batch::{DedupeHasher, Seen};
use crate::index::Index;
use crate::log::{FILE_MODE, HEADER_LEN as LOG_HEADER_LEN};
use codec::{In, Out};

/// The checkpoint's file name inside the history's directory.
pub const CHECKPOINT_FILE: &str = "listens.checkpoint";
/// Where a checkpoint is written before it is renamed into place; one
/// left behind by a crash is never read, and the next write replaces it.
pub const CHECKPOINT_TEMP: &str = "listens.checkpoint.tmp";

const MAGIC: &[u8; 8] = b"SPNDLCKP";
/// The format this build writes and reads; any other is ignored.
pub(crate) const FORMAT: u32 = 3;
pub(crate) const HEADER_LEN: usize = 48;
/// How many bytes of the log at each end of the part a checkpoint
/// covers it fingerprints (after the log's header, which changes when
/// the log's version is raised).
pub(crate) const PRINT_SPAN: u64 = 64 * 1024;

/// Whether [`Listens::open`](crate::Listens::open) used a checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CheckpointUse {
    /// There was none: the whole log was replayed.
    #[default]
    Absent,
    /// The indexes came from a checkpoint covering the log up to byte
    /// `covers`; only the records after it were replayed.
    Loaded { covers: u64 },
    /// There was one, but it could not be used, for `reason`: the whole
    /// log was replayed.
    Ignored { reason: String },
}

/// What a checkpoint holds besides the indexes: the open report's
/// counts of the part it covers.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counts {
    pub listens: u64,
    pub love_events: u64,
    pub corrections: u64,
}

/// A checkpoint read back.
pub(crate) struct Loaded {
    pub covers: u64,
    pub counts: Counts,
    pub hasher: DedupeHasher,
    pub index: Index,
    pub seen: Seen,
}

/// The body of a checkpoint of `index` and `seen`.
pub(crate) fn body(counts: Counts, hasher: &DedupeHasher, index: &Index, seen: &Seen) -> Vec<u8> {
    let mut o = Out(Vec::new());
    o.u64(counts.listens);
    o.u64(counts.love_events);
    o.u64(counts.corrections);
    for k in hasher.keys() {
        o.u64(k);
    }
    index.save(&mut o);
    seen.save(&mut o);
    o.0
}

/// CRC-32s of the log's bytes `[16, min(16 + span, end))` and
/// `[max(16, end − span), end)`: what identifies the log a checkpoint
/// covering it up to `end` was taken of.
pub(crate) fn prints(
    read_at: impl Fn(&mut [u8], u64) -> std::io::Result<()>,
    end: u64,
) -> std::io::Result<(u32, u32)> {
    let start = LOG_HEADER_LEN;
    let one = |from: u64, to: u64| -> std::io::Result<u32> {
        let n = usize::try_from(to.saturating_sub(from)).map_err(std::io::Error::other)?;
        let mut buf = vec![0; n];
        if n > 0 {
            read_at(&mut buf, from)?;
        }
        Ok(crc32fast::hash(&buf))
    };
    Ok((
        one(start, end.min(start + PRINT_SPAN))?,
        one(end.saturating_sub(PRINT_SPAN).max(start), end)?,
    ))
}

/// Writes a checkpoint with `body` covering the log up to `covers`,
/// whose bytes `read_at` reads: to the temporary file, fsynced, then
/// renamed into place and the directory fsynced.
pub(crate) fn write(
    dir: &Path,
    covers: u64,
    read_at: impl Fn(&mut [u8], u64) -> std::io::Result<()>,
    body: &[u8],
) -> std::io::Result<()> {
    let (head_print, tail_print) = prints(read_at, covers)?;
    let mut h = Vec::with_capacity(HEADER_LEN);
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&FORMAT.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes());
    h.extend_from_slice(&covers.to_le_bytes());
    h.extend_from_slice(&head_print.to_le_bytes());
    h.extend_from_slice(&tail_print.to_le_bytes());
    h.extend_from_slice(&(body.len() as u64).to_le_bytes());
    h.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
    let crc = crc32fast::hash(&h);
    h.extend_from_slice(&crc.to_le_bytes());
    let temp = dir.join(CHECKPOINT_TEMP);
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(&temp)?;
    f.write_all(&h)?;
    f.write_all(body)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&temp, dir.join(CHECKPOINT_FILE))?;
    File::open(dir)?.sync_all()
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le64(b: &[u8], at: usize) -> u64 {
    let mut a = [0; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Reads the checkpoint in `dir` if there is one and it belongs to the
/// log at `log_path`: `Ok(None)` when there is none, `Err(reason)` when
/// there is one that cannot be used. `window` is the dedupe window of
/// this open.
pub(crate) fn load(dir: &Path, log_path: &Path, window: i64) -> Result<Option<Loaded>, String> {
    let bytes = match std::fs::read(dir.join(CHECKPOINT_FILE)) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("it could not be read: {e}")),
    };
    let Some(h) = bytes.get(..HEADER_LEN) else {
        return Err("it is shorter than its header".into());
    };
    if &h[..8] != MAGIC {
        return Err("it does not start with a checkpoint's magic".into());
    }
    if le32(h, 44) != crc32fast::hash(&h[..44]) {
        return Err("its header's checksum does not match".into());
    }
    let format = le32(h, 8);
    if format != FORMAT {
        return Err(format!(
            "it is of format {format}, and this build reads {FORMAT}"
        ));
    }
    let covers = le64(h, 16);
    let body = &bytes[HEADER_LEN..];
    if le64(h, 32) != body.len() as u64 || le32(h, 40) != crc32fast::hash(body) {
        return Err("it is cut short or damaged (its body's length or checksum)".into());
    }
    let log = File::open(log_path).map_err(|e| format!("the log could not be read: {e}"))?;
    let len = log
        .metadata()
        .map_err(|e| format!("the log could not be read: {e}"))?
        .len();
    if covers < LOG_HEADER_LEN || covers > len {
        return Err(format!(
            "it covers the log up to byte {covers}, and the log is {len} bytes long"
        ));
    }
    let found = prints(|buf, at| log.read_exact_at(buf, at), covers)
        .map_err(|e| format!("the log could not be read: {e}"))?;
    if found != (le32(h, 24), le32(h, 28)) {
        return Err("it was taken of another log (the log's bytes differ)".into());
    }
    decode(body, covers, window)
        .map(Some)
        .ok_or_else(|| "its body does not decode".into())
}

fn decode(body: &[u8], covers: u64, window: i64) -> Option<Loaded> {
    let mut i = In::new(body);
    let counts = Counts {
        listens: i.u64()?,
        love_events: i.u64()?,
        corrections: i.u64()?,
    };
    let hasher = DedupeHasher::with_keys([i.u64()?, i.u64()?, i.u64()?, i.u64()?]);
    let index = Index::load(&mut i)?;
    let seen = Seen::load(&mut i, window)?;
    i.is_empty().then_some(Loaded {
        covers,
        counts,
        hasher,
        index,
        seen,
    })
}
