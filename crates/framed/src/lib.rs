//! Framed log records: the one implementation of the record frame that
//! the library's log (`spindle-store`, `docs/store-format.md`) and the
//! listening history (`spindle-listens`, `docs/listens-format.md`) share,
//! and of the rules for reading such a log back after a crash.
//!
//! A frame is `len u32 | crc32 u32 | payload` (little-endian; `len` is
//! the payload's length, `crc32` the CRC-32 (IEEE, `crc32fast`) of the
//! payload). This crate owns:
//!
//! - reading one frame ([`Framing::frame_at`]) and telling whether a
//!   valid one starts at a byte ([`Framing::is_valid_at`]);
//! - the torn-window rule ([`Framing::is_torn_tail`]): whether a bad
//!   record is a torn tail a crash left, to be cut off, or damage in the
//!   middle, to be refused;
//! - the writer's half of that rule ([`pieces`]): a flush written and
//!   fsynced in pieces of at most [`TORN_WINDOW`] bytes;
//! - [`seal`], which gives every complete frame a matching checksum (for
//!   the fuzz targets, so fuzzed payloads reach the decoders).
//!
//! It is *not* a log: each crate keeps its file header, its payload
//! encoding, its file handling and its group commit, and decides what a
//! bad record means to its users.
//!
//! ```
//! use spindle_framed::{pieces, Framing};
//!
//! let payload = b"hello";
//! let mut log = Vec::new();
//! log.extend_from_slice(&(payload.len() as u32).to_le_bytes());
//! log.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
//! log.extend_from_slice(payload);
//! let framing = Framing::new(1 << 20);
//! assert_eq!(framing.frame_at(&log, 0), Ok((&payload[..], log.len())));
//! // Half a frame at the end is a torn tail: nothing valid follows it.
//! let torn = &log[..log.len() - 2];
//! assert!(framing.is_torn_tail(torn, 0, |_| true));
//! assert_eq!(pieces(&log, 0).count(), 1);
//! ```
#![forbid(unsafe_code)]

/// Bytes before a frame's payload: its length and its checksum.
pub const FRAME_HEADER_LEN: usize = 8;

/// The most bytes a log writer has written and not yet fsynced, unless
/// one record is larger: a flush is written and fsynced in [`pieces`] of
/// at most this size, cut at record boundaries (a larger record is a
/// piece of its own). So after a power loss, whatever order the disk kept
/// the pages of the last write in, damage can only lie within the last
/// `TORN_WINDOW` bytes of the file or within its last record; a reader
/// cuts a bad record there as a torn tail, and refuses one further back
/// that has good records after it. 4 MiB: four listens records at their
/// 1 MiB limit, hundreds of thousands of ordinary listens or commits.
pub const TORN_WINDOW: usize = 4 << 20;

/// Why the bytes at an offset are not a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// Fewer than [`FRAME_HEADER_LEN`] bytes left.
    ShortHeader,
    /// A length over the format's limit ([`Framing::max_len`]).
    TooLong(u32),
    /// Fewer payload bytes left than the length says.
    ShortPayload,
    /// The payload's CRC-32 is not the one in the header.
    Checksum,
}

/// How one log format reads its frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Framing {
    /// The longest payload the format's writer ever frames; a longer
    /// length is damage, not data.
    pub max_len: u32,
    /// See [`TORN_WINDOW`]; tests of damage in small logs use 0.
    pub torn_window: usize,
}

/// The frame length at `at`, if four bytes are there.
fn len_at(bytes: &[u8], at: usize) -> Option<u32> {
    let h = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([h[0], h[1], h[2], h[3]]))
}

impl Framing {
    /// Frames of at most `max_len` payload bytes, with the real
    /// [`TORN_WINDOW`].
    pub const fn new(max_len: u32) -> Framing {
        Framing {
            max_len,
            torn_window: TORN_WINDOW,
        }
    }

    /// The same framing with another torn window.
    pub const fn with_torn_window(self, torn_window: usize) -> Framing {
        Framing {
            torn_window,
            ..self
        }
    }

    /// The payload of the frame starting at `at`, its checksum checked,
    /// and the offset just past the frame. No allocation depends on the
    /// length: the payload is a slice of `bytes`.
    pub fn frame_at<'a>(
        &self,
        bytes: &'a [u8],
        at: usize,
    ) -> Result<(&'a [u8], usize), FrameError> {
        let head = at
            .checked_add(FRAME_HEADER_LEN)
            .and_then(|end| bytes.get(at..end))
            .ok_or(FrameError::ShortHeader)?;
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        if len > self.max_len {
            return Err(FrameError::TooLong(len));
        }
        let start = at + FRAME_HEADER_LEN;
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| start.checked_add(l))
            .filter(|&end| end <= bytes.len())
            .ok_or(FrameError::ShortPayload)?;
        let payload = &bytes[start..end];
        if crc32fast::hash(payload) != crc {
            return Err(FrameError::Checksum);
        }
        Ok((payload, end))
    }

    /// Whether a complete frame whose payload `decodes` and whose
    /// checksum matches starts at `at`. Decodes before it hashes: on
    /// garbage a decoder gives up within a few bytes, while the hash
    /// would read the whole length the garbage claims.
    pub fn is_valid_at(
        &self,
        bytes: &[u8],
        at: usize,
        decodes: impl FnOnce(&[u8]) -> bool,
    ) -> bool {
        let Some(head) = at
            .checked_add(FRAME_HEADER_LEN)
            .and_then(|end| bytes.get(at..end))
        else {
            return false;
        };
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        if len > self.max_len {
            return false;
        }
        let start = at + FRAME_HEADER_LEN;
        let Some(payload) = usize::try_from(len)
            .ok()
            .and_then(|l| bytes.get(start..start.checked_add(l)?))
        else {
            return false;
        };
        decodes(payload) && crc32fast::hash(payload) == crc
    }

    /// The torn-window rule, for a bad record at `at` (`at` below
    /// `bytes.len()`): `true` if it is a torn tail, to be cut off, `false`
    /// if it is damage in the middle, to be refused.
    ///
    /// A torn tail starts within the torn window (the last
    /// [`Framing::torn_window`] bytes, or the last record itself when its
    /// intact length, within [`Framing::max_len`], says it is longer), or
    /// has no valid frame (complete, checksum matching, payload passing
    /// `decodes`) starting at any byte after it.
    pub fn is_torn_tail(
        &self,
        bytes: &[u8],
        at: usize,
        mut decodes: impl FnMut(&[u8]) -> bool,
    ) -> bool {
        let remaining = bytes.len().saturating_sub(at);
        // A torn write lies within the last window, or is the last record
        // itself when that one is larger (its length, if the header
        // survived, says how far it reaches).
        let claimed = len_at(bytes, at)
            .filter(|&len| len <= self.max_len)
            .map_or(0, |len| len as usize)
            .saturating_add(FRAME_HEADER_LEN);
        let reach = if claimed <= remaining {
            self.torn_window.max(claimed)
        } else {
            self.torn_window
        };
        remaining <= reach
            || !(at + 1..bytes.len()).any(|next| self.is_valid_at(bytes, next, &mut decodes))
    }
}

/// `frames` (whole frames) in pieces of at most `window` bytes, each
/// ending at a frame boundary; a frame longer than `window` is a piece of
/// its own. A writer that writes and fsyncs a flush piece by piece never
/// has more than [`TORN_WINDOW`] bytes (or one record) unsynced.
pub fn pieces(frames: &[u8], window: usize) -> impl Iterator<Item = &[u8]> {
    let mut rest = frames;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = 0usize;
        while let Some(len) = len_at(rest, end) {
            let next = end
                .saturating_add(FRAME_HEADER_LEN)
                .saturating_add(len as usize);
            if end > 0 && next > window {
                break;
            }
            end = next.min(rest.len());
        }
        let end = end.max(1).min(rest.len());
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

/// Recomputes the checksum of every complete frame from `from` on,
/// following the length fields, so fuzzed payloads get past the checksum
/// to the decoder behind it. Stops at the first incomplete frame.
pub fn seal(bytes: &mut [u8], from: usize) {
    let mut pos = from;
    while let Some(len) = len_at(bytes, pos) {
        let start = pos.saturating_add(FRAME_HEADER_LEN);
        let Some(end) = start
            .checked_add(len as usize)
            .filter(|&e| e <= bytes.len())
        else {
            break;
        };
        let crc = crc32fast::hash(&bytes[start..end]);
        bytes[pos + 4..start].copy_from_slice(&crc.to_le_bytes());
        pos = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(payload: &[u8]) -> Vec<u8> {
        let mut f = (payload.len() as u32).to_le_bytes().to_vec();
        f.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
        f.extend_from_slice(payload);
        f
    }

    /// Three frames and where each starts; payloads are runs of one letter.
    fn three() -> (Vec<u8>, Vec<usize>) {
        let mut b = Vec::new();
        let mut starts = Vec::new();
        for (i, n) in [5usize, 9, 3].into_iter().enumerate() {
            starts.push(b.len());
            b.extend(frame(&vec![b'a' + i as u8; n]));
        }
        (b, starts)
    }

    /// A payload decodes if it is one letter repeated.
    fn letters(p: &[u8]) -> bool {
        p.first()
            .is_some_and(|c| c.is_ascii_lowercase() && p.iter().all(|x| x == c))
    }

    const SMALL: Framing = Framing::new(64).with_torn_window(0);

    #[test]
    fn frames_read_back_in_order_and_end_where_the_next_starts() {
        let (b, starts) = three();
        let mut at = 0;
        for (i, &s) in starts.iter().enumerate() {
            assert_eq!(at, s);
            let (payload, end) = SMALL.frame_at(&b, at).unwrap();
            assert!(letters(payload) && payload[0] == b'a' + i as u8);
            at = end;
        }
        assert_eq!(at, b.len());
    }

    #[test]
    fn each_kind_of_bad_frame_is_told_apart() {
        let (b, starts) = three();
        assert_eq!(SMALL.frame_at(&b[..7], 0), Err(FrameError::ShortHeader));
        assert_eq!(SMALL.frame_at(&b, b.len()), Err(FrameError::ShortHeader));
        assert_eq!(
            SMALL.frame_at(&b[..starts[1] - 1], 0),
            Err(FrameError::ShortPayload)
        );
        let mut flipped = b.clone();
        flipped[starts[1] + 8] ^= 1;
        assert_eq!(
            SMALL.frame_at(&flipped, starts[1]),
            Err(FrameError::Checksum)
        );
        assert!(!SMALL.is_valid_at(&flipped, starts[1], letters));
        let long = frame(&[b'z'; 65]);
        assert_eq!(SMALL.frame_at(&long, 0), Err(FrameError::TooLong(65)));
        assert!(!SMALL.is_valid_at(&long, 0, letters));
        assert!(Framing::new(65).is_valid_at(&long, 0, letters));
        // A frame whose payload does not decode is not valid.
        assert!(!SMALL.is_valid_at(&frame(b"ab"), 0, letters));
        assert!(SMALL.is_valid_at(&b, starts[2], letters));
    }

    #[test]
    fn a_bad_record_with_a_valid_one_after_it_is_damage_unless_in_the_window() {
        let (b, starts) = three();
        let mut c = b.clone();
        c[starts[0] + 9] ^= 1;
        // Frames 2 and 3 follow: damage.
        assert!(!SMALL.is_torn_tail(&c, starts[0], letters));
        // Within a window that reaches back to it: a torn write.
        let window = c.len() - starts[0];
        assert!(SMALL
            .with_torn_window(window)
            .is_torn_tail(&c, starts[0], letters));
        assert!(!SMALL
            .with_torn_window(window - 1)
            .is_torn_tail(&c, starts[0], letters));
        // Nothing valid after it: a tail, whatever the window.
        let mut d = b.clone();
        d[starts[2] + 9] ^= 1;
        d.extend_from_slice(&[0xa5; 40]);
        assert!(SMALL.is_torn_tail(&d, starts[2], letters));
    }

    #[test]
    fn the_last_record_is_in_the_window_when_its_intact_length_reaches_the_end() {
        // The window is smaller than the last record, and a valid-looking
        // frame hides inside its payload: the record's own length says it
        // is the last write, so it is a torn tail all the same.
        let inner = frame(b"qqq");
        let mut payload = vec![b'x'; 4];
        payload.extend_from_slice(&inner);
        let mut b = frame(&payload);
        b[FRAME_HEADER_LEN] ^= 1;
        assert!(SMALL.is_torn_tail(&b, 0, letters));
        // The same length beyond the format's limit is not believed.
        let limited = Framing::new(payload.len() as u32 - 1).with_torn_window(0);
        assert!(!limited.is_torn_tail(&b, 0, letters));
    }

    #[test]
    fn flushes_are_cut_into_pieces_of_at_most_the_window_at_frame_boundaries() {
        let (b, mut starts) = three();
        starts.push(b.len());
        let longest = starts.windows(2).map(|w| w[1] - w[0]).max().unwrap();
        for window in [0, 1, longest, longest + 1, b.len(), usize::MAX] {
            let got: Vec<&[u8]> = pieces(&b, window).collect();
            assert_eq!(got.concat(), b, "window {window}");
            let mut at = 0;
            for p in got {
                at += p.len();
                assert!(
                    starts.contains(&at),
                    "window {window}: a piece ends mid-frame"
                );
                assert!(p.len() <= window.max(longest), "window {window}");
            }
        }
        // Garbage lengths still end: the rest is one piece.
        assert_eq!(pieces(&[0xff; 5], 4).count(), 1);
    }

    #[test]
    fn sealing_makes_every_complete_frame_read() {
        let (mut b, starts) = three();
        for &s in &starts {
            b[s + 4] ^= 0xff;
        }
        b.extend_from_slice(&[3, 0, 0, 0, 0]);
        seal(&mut b, 0);
        let mut at = 0;
        for _ in &starts {
            at = SMALL.frame_at(&b, at).unwrap().1;
        }
        // The incomplete frame at the end is left as it was.
        assert_eq!(&b[at..], &[3, 0, 0, 0, 0]);
    }
}
