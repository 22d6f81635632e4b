//! Entry points for the `cargo fuzz` targets in `fuzz/`. Not a stable
//! API: it exposes the log and data file decoders, which are otherwise
//! private, and helpers that give fuzzed bytes valid checksums so the
//! fuzzer gets past them to the decoders behind.

use crate::log;
use crate::snapshot;
use crate::Op;

/// The entry-table limit the data file target reads with: a crafted file
/// may name any id up to 2³², and the library keeps a slot per id.
pub const MAX_SLOTS: u64 = 1 << 16;

/// What [`read_log`] found in a log file.
#[derive(Debug)]
pub struct LogSummary {
    pub generation: u64,
    pub txns: Vec<(u64, Vec<Op>)>,
    /// Offset just past the last good record.
    pub good_len: u64,
    /// Whether a tail after `good_len` was dropped.
    pub dropped_tail: bool,
}

/// Decode a log file the way opening a database does. `Err` is a header
/// the database refuses (or, if shorter than a header, ignores), or a
/// damaged record with good records after it, which it refuses too. The
/// torn window is 0 here: a fuzzer's inputs are small, and under the real
/// 4 MiB window every bad record in them would be a torn tail.
pub fn read_log(bytes: &[u8]) -> Result<LogSummary, String> {
    match log::read_log_with_window(bytes, 0) {
        Ok(c) => Ok(LogSummary {
            generation: c.generation,
            txns: c.txns,
            good_len: c.good_len,
            dropped_tail: c.dropped_tail.is_some(),
        }),
        Err(log::ReadError::Magic) => Err("bad magic".into()),
        Err(log::ReadError::Version(v)) => Err(format!("version {v}")),
        Err(log::ReadError::Corrupt(d)) => Err(d),
        Err(log::ReadError::Damaged { offset, detail }) => {
            Err(format!("damaged at byte {offset}: {detail}"))
        }
    }
}

/// A valid log header for `generation`.
pub fn log_header(generation: u64) -> Vec<u8> {
    log::header(generation)
}

/// A valid data file header for `generation` (the chunks must follow).
pub fn data_header(generation: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(24);
    h.extend_from_slice(snapshot::DATA_MAGIC);
    h.extend_from_slice(&snapshot::DATA_VERSION.to_le_bytes());
    h.extend_from_slice(&generation.to_le_bytes());
    let crc = crc32fast::hash(&h);
    h.extend_from_slice(&crc.to_le_bytes());
    h
}

/// A complete log file: the header for `generation`, then one record per
/// transaction. `None` if a transaction is too large for a record.
pub fn encode_log(generation: u64, txns: &[(u64, Vec<Op>)]) -> Option<Vec<u8>> {
    let mut out = log::header(generation);
    for (seq, ops) in txns {
        out.extend(log::encode_record(*seq, ops).ok()?);
    }
    Some(out)
}

/// Counts read from a data file.
#[derive(Debug)]
pub struct DataSummary {
    pub generation: u64,
    pub entries: usize,
    pub properties: usize,
    pub next_id: u32,
    pub indexes: Vec<String>,
}

/// Decode a data file the way opening a database does, with at most
/// [`MAX_SLOTS`] entry slots.
pub fn read_data_file(bytes: &[u8]) -> Result<DataSummary, String> {
    match snapshot::read(bytes, MAX_SLOTS) {
        Ok((lib, generation, indexes)) => Ok(DataSummary {
            generation,
            entries: lib.len(),
            properties: lib.prop_count(),
            next_id: lib.next_id(),
            indexes,
        }),
        Err(snapshot::ReadError::Magic) => Err("bad magic".into()),
        Err(snapshot::ReadError::Version(v)) => Err(format!("version {v}")),
        Err(snapshot::ReadError::Corrupt(d)) => Err(d),
    }
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Recompute the header checksum and the checksum of every complete
/// record of a log, so its records reach the op decoder.
pub fn seal_log(bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let h = log::LOG_HEADER_LEN as usize;
    if b.len() < h {
        return b;
    }
    let crc = crc32fast::hash(&b[..h - 4]);
    b[h - 4..h].copy_from_slice(&crc.to_le_bytes());
    spindle_framed::seal(&mut b, h);
    b
}

/// Recompute the header checksum and the checksum of every complete
/// chunk of a data file, so its chunks reach the chunk decoders.
pub fn seal_data_file(bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let h = 24;
    if b.len() < h {
        return b;
    }
    let crc = crc32fast::hash(&b[..h - 4]);
    b[h - 4..h].copy_from_slice(&crc.to_le_bytes());
    let mut pos = h;
    while let Some(len) = le32(&b, pos + 1) {
        let Some(end) = (pos + 5)
            .checked_add(len as usize)
            .filter(|&e| e + 4 <= b.len())
        else {
            break;
        };
        let crc = crc32fast::hash(&b[pos..end]);
        b[end..end + 4].copy_from_slice(&crc.to_le_bytes());
        pos = end + 4;
    }
    b
}
