//! Entry points for the `cargo fuzz` target `read_listens_log` in
//! `fuzz/`. Not a stable API: it exposes the log reader, which is
//! otherwise private, on a byte buffer instead of a file, and a helper
//! that gives fuzzed records valid checksums so the fuzzer gets past them
//! to the decoder behind.

use crate::log::{
    self, ReadError, HEADER_LEN, MAGIC, VERSION_1, VERSION_CORRECTIONS, VERSION_CREDITS,
};
use crate::model::Event;

/// What [`read_log`] found in a log file.
#[derive(Debug)]
pub struct LogSummary {
    pub events: Vec<Event>,
    /// Offset just past the last good record; opening cuts the file here.
    pub good_end: u64,
}

/// Why [`read_log`] refused a log.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Shorter than a header (opening writes a fresh one).
    Short,
    /// Another magic or version.
    BadHeader,
    /// A bad record at this offset with a good record after it.
    Damaged(u64),
}

/// Reads a log file's bytes the way opening the history does, but with a
/// torn window of 0: a fuzzer's inputs are small, so under the real 4 MiB
/// window every bad record would be a torn tail and the damage scan would
/// never run.
pub fn read_log(bytes: &[u8]) -> Result<LogSummary, Refused> {
    if (bytes.len() as u64) < HEADER_LEN {
        return Err(Refused::Short);
    }
    let mut events = Vec::new();
    match log::read_log(bytes, 0, |e| events.push(e.into_owned())) {
        Ok(good_end) => Ok(LogSummary { events, good_end }),
        Err(ReadError::BadHeader { .. }) => Err(Refused::BadHeader),
        Err(ReadError::Damaged { offset, .. }) => Err(Refused::Damaged(offset)),
    }
}

/// A valid log header, as a new log has it (version 1 until a record
/// needs a newer one; versions 2 and 3 read the same).
pub fn log_header() -> Vec<u8> {
    header(VERSION_1)
}

fn header(version: u32) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER_LEN as usize);
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&version.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes());
    h
}

/// A complete log as the store writes it: the header, with the oldest
/// version that holds every event, then each event as one record.
pub fn encode_log(events: &[Event]) -> Vec<u8> {
    let version = events
        .iter()
        .map(|e| match e {
            Event::Listen(l) if l.artists.len() >= 2 => VERSION_CREDITS,
            Event::Listen(_) | Event::Love { .. } => VERSION_1,
            Event::Correct { .. } | Event::Undo { .. } => VERSION_CORRECTIONS,
        })
        .max()
        .unwrap_or(VERSION_1);
    let mut out = header(version);
    for e in events {
        e.encode(&mut out);
    }
    out
}

/// Recomputes the checksum of every complete record after the header,
/// following the length fields, so the records reach the decoder.
pub fn seal_log(bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    spindle_framed::seal(&mut b, HEADER_LEN as usize);
    b
}
