//! Reading the log from an offset while it grows: what a follower of the
//! history (the server's forwarding to other services,
//! `crates/server/src/forward/`) needs. Offsets are byte offsets into
//! the log file; a follower keeps the offset it has read up to and asks
//! for the listens between it and [`Listens::committed_end`], the end of
//! the durable part (always a record boundary).

use std::io::{self, Read};
use std::path::Path;

use crate::log::{frame_at, HEADER_LEN};
use crate::model::{EventRef, Listen};
use crate::store::Listens;

/// The most bytes of the log one [`Listens::listens_between`] call reads
/// (a follower far behind catches up in steps of this size).
pub const TAIL_CHUNK: u64 = 4 << 20;

/// Why the log could not be read from an offset.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TailError {
    #[error("reading the listens log at byte {offset}: {source}")]
    Io {
        offset: u64,
        #[source]
        source: io::Error,
    },
    /// The offset is not where a record starts (a cursor from another
    /// log, say a restored backup).
    #[error("byte {offset} of the listens log is not the start of a record ({reason})")]
    NotARecord { offset: u64, reason: &'static str },
}

/// The listens read by one [`Listens::listens_between`] call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TailRead {
    /// The listens kept, in log order.
    pub listens: Vec<Listen>,
    /// Every love and unlove read (of every user), in log order.
    pub loves: Vec<TailLove>,
    /// Where reading stopped: the offset to read from next.
    pub end: u64,
}

/// A love or unlove read from the log ([`TailRead::loves`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailLove {
    /// How many of [`TailRead::listens`] came before it in the log.
    pub after: usize,
    pub user: String,
    pub artist: String,
    pub title: String,
    pub timestamp: i64,
    /// `false`: an unlove.
    pub loved: bool,
}

impl Listens {
    /// Where the durable part of the log ends: every record before this
    /// offset is on disk, and it is the start of the next record.
    pub fn committed_end(&self) -> u64 {
        self.group_log().committed_end()
    }

    /// The listens recorded between `from` (a record boundary: the log's
    /// first record is at [`log_start`]) and `to` (at most
    /// [`Listens::committed_end`]) that `keep` accepts, reading at most
    /// [`TAIL_CHUNK`] bytes; the result's `end` says where to go on from.
    /// Love events are in [`TailRead::loves`], whoever's they are.
    pub fn listens_between(
        &self,
        from: u64,
        to: u64,
        keep: impl FnMut(&Listen) -> bool,
    ) -> Result<TailRead, TailError> {
        let to = to.min(self.committed_end());
        if from >= to {
            return Ok(TailRead {
                end: from,
                ..TailRead::default()
            });
        }
        let len = (to - from).min(TAIL_CHUNK) as usize;
        let mut buf = vec![0u8; len];
        self.group_log()
            .read_at(&mut buf, from)
            .map_err(|source| TailError::Io {
                offset: from,
                source,
            })?;
        parse_chunk(&buf, from, keep)
    }
}

/// The offset of the first record of every log.
pub fn log_start() -> u64 {
    HEADER_LEN
}

/// Parses the whole records at the start of `buf` (which starts at log
/// offset `from`); a record cut by the end of `buf` is left for the next
/// read.
fn parse_chunk(
    buf: &[u8],
    from: u64,
    mut keep: impl FnMut(&Listen) -> bool,
) -> Result<TailRead, TailError> {
    let mut at = 0;
    let mut listens = Vec::new();
    let mut loves = Vec::new();
    while at < buf.len() {
        match frame_at(buf, at) {
            Ok((ev, end)) => {
                match ev {
                    EventRef::Listen(l) => {
                        let l = l.to_owned();
                        if keep(&l) {
                            listens.push(l);
                        }
                    }
                    EventRef::Love {
                        user,
                        artist,
                        title,
                        timestamp,
                        loved,
                    } => loves.push(TailLove {
                        after: listens.len(),
                        user: user.to_owned(),
                        artist: artist.to_owned(),
                        title: title.to_owned(),
                        timestamp,
                        loved,
                    }),
                    _ => {}
                }
                at = end;
            }
            // A record longer than what is left of the chunk: next time.
            Err(_) if at > 0 => break,
            Err(reason) => {
                // The chunk may end inside a record that started here.
                let whole = buf.len() as u64 >= TAIL_CHUNK;
                if whole && reason.contains("cut short") {
                    break;
                }
                return Err(TailError::NotARecord {
                    offset: from,
                    reason,
                });
            }
        }
    }
    Ok(TailRead {
        listens,
        loves,
        end: from + at as u64,
    })
}

/// The end of the last whole record of the log file at `path`, for a
/// process other than the server's (a link made while the server is
/// stopped starts there). A missing file: the first record's offset.
pub fn log_end_of_file(path: &Path) -> Result<u64, TailError> {
    let mut bytes = Vec::new();
    match std::fs::File::open(path) {
        Ok(mut f) => {
            f.read_to_end(&mut bytes)
                .map_err(|source| TailError::Io { offset: 0, source })?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(HEADER_LEN),
        Err(source) => return Err(TailError::Io { offset: 0, source }),
    }
    let mut at = HEADER_LEN as usize;
    while at < bytes.len() {
        match frame_at(&bytes, at) {
            Ok((_, end)) => at = end,
            Err(_) => break,
        }
    }
    Ok((at as u64).max(HEADER_LEN))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(user: &str, ts: i64) -> Listen {
        Listen::new(user, ts, "A", &format!("T{ts}"))
    }

    #[test]
    fn a_follower_reads_each_listen_once_in_order_across_submits() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = Listens::open(dir.path()).unwrap();
        let mut cursor = log_start();
        assert_eq!(store.committed_end(), cursor);
        store.submit(&[l("ann", 1), l("bob", 2)]).unwrap();
        let r = store
            .listens_between(cursor, store.committed_end(), |x| x.user == "ann")
            .unwrap();
        assert_eq!(r.listens, vec![l("ann", 1)]);
        assert_eq!(r.end, store.committed_end());
        cursor = r.end;
        store.love("ann", "A", "T1", 5, true).unwrap();
        store.submit(&[l("ann", 3), l("ann", 1)]).unwrap();
        let r = store
            .listens_between(cursor, store.committed_end(), |_| true)
            .unwrap();
        assert_eq!(r.listens, vec![l("ann", 3)], "no love, no duplicate");
        let love = TailLove {
            after: 0,
            user: "ann".into(),
            artist: "A".into(),
            title: "T1".into(),
            timestamp: 5,
            loved: true,
        };
        assert_eq!(r.loves, vec![love], "the love, before the listen");
        // Reopened, the durable end is the file's end.
        let end = r.end;
        drop(store);
        let (store, _) = Listens::open(dir.path()).unwrap();
        assert_eq!(store.committed_end(), end);
        assert_eq!(
            log_end_of_file(&dir.path().join(crate::LOG_FILE)).unwrap(),
            end
        );
    }

    #[test]
    fn a_cursor_inside_a_record_is_an_error_naming_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = Listens::open(dir.path()).unwrap();
        store.submit(&[l("ann", 1), l("ann", 2)]).unwrap();
        let e = store
            .listens_between(log_start() + 3, store.committed_end(), |_| true)
            .unwrap_err();
        assert!(
            matches!(e, TailError::NotARecord { offset, .. } if offset == log_start() + 3),
            "{e}"
        );
    }

    #[test]
    fn a_chunk_ending_inside_a_record_stops_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = Listens::open(dir.path()).unwrap();
        store.submit(&[l("ann", 1), l("ann", 2)]).unwrap();
        let end = store.committed_end();
        let r = store
            .listens_between(log_start(), end - 1, |_| true)
            .unwrap();
        assert_eq!(r.listens, vec![l("ann", 1)]);
        let r2 = store.listens_between(r.end, end, |_| true).unwrap();
        assert_eq!(r2.listens, vec![l("ann", 2)]);
        assert_eq!(r2.end, end);
    }
}
