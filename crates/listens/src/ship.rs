//! Shipping the log to another node (`docs/cluster.md`): a primary reads
//! byte ranges of its durable log ([`Listens::read_log_range`]); a
//! replica appends them unchanged ([`Listens::apply_shipped`]), so its
//! file stays byte-identical to the primary's (a correction's id is its
//! record's offset, which must mean the same record on every node), and
//! feeds the records to its indexes as opening the log would.

use std::io;

use crate::batch::Prepared;
use crate::correction::Corrected;
use crate::corrections::key_of;
use crate::error::AppendError;
use crate::log::{frame_at, HEADER_LEN, VERSION, VERSION_1};
use crate::model::{EventRef, Listen};
use crate::store::{Listens, Tally};

/// Why shipped bytes could not be applied. Unless it says otherwise,
/// nothing was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApplyError {
    /// The bytes do not continue this log where it ends.
    #[error(
        "the shipped listens start at byte {at} of the primary's log, but this log ends at byte \
         {expected}; apply the segments in order, from the one starting at byte {expected} (a \
         replica that cannot find it starts again from a snapshot); nothing was written"
    )]
    NotAtEnd { expected: u64, at: u64 },
    /// A record of the shipped bytes is incomplete or fails its checksum.
    #[error(
        "the shipped listens are damaged at byte {offset} of the primary's log ({reason}); \
         nothing was written; fetch the segment again"
    )]
    Damaged { offset: u64, reason: &'static str },
    /// The primary's log has a format version this build does not know.
    #[error(
        "the primary's listens log is format version {0}, which this Spindle does not read \
         (it reads 1 to 3); run the same Spindle version on every node"
    )]
    Version(u32),
    /// Writing to this node's log failed; the bytes may be partly on
    /// disk, and the log refuses writes until restart.
    #[error(transparent)]
    Io(#[from] AppendError),
}

/// What applying shipped records changed.
#[derive(Debug, Default)]
pub struct Applied {
    /// The new listens indexed, in log order (for the tiers' popularity
    /// feed). A listen the log holds twice counts once, as on open.
    pub listens: Vec<Listen>,
    /// Per correction or undo record applied, what it changed.
    pub corrected: Vec<Corrected>,
    /// Where this log ends now (the offset to apply from next).
    pub end: u64,
}

impl Listens {
    /// The log header's version (1; 2 once a correction was written; 3
    /// once a listen with credited artists was).
    pub fn log_version(&self) -> u32 {
        self.log.version()
    }

    /// Bytes `[from, to)` of the durable log: `from` is 0 (the header
    /// included, for a whole copy) or a record boundary at or after
    /// [`crate::tail::log_start`], `to` a record boundary at most
    /// [`Listens::committed_end`]. Reads with `pread`; appends go on.
    /// A range that is not whole records is refused
    /// ([`io::ErrorKind::InvalidInput`]), so nothing torn is shipped.
    pub fn read_log_range(&self, from: u64, to: u64) -> io::Result<Vec<u8>> {
        let end = self.committed_end();
        let inside_header = |x: u64| x != 0 && x < HEADER_LEN;
        if from > to || to > end || inside_header(from) || inside_header(to) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "bytes {from}..{to} are not a range of the listens log's durable part \
                     (0 or {HEADER_LEN}..{end})"
                ),
            ));
        }
        let len = usize::try_from(to - from).map_err(io::Error::other)?;
        let mut buf = vec![0u8; len];
        self.group_log().read_at(&mut buf, from)?;
        let records = if from == 0 {
            buf.get(HEADER_LEN as usize..).unwrap_or_default()
        } else {
            &buf[..]
        };
        let first = from.max(HEADER_LEN);
        check_records(records, first).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bytes {from}..{to} of the listens log are not whole records: {e}"),
            )
        })?;
        Ok(buf)
    }

    /// Applies records a primary shipped: `bytes` are exactly the
    /// primary's log bytes `[at, at + bytes.len())`, whole records, and
    /// `version` its header's version. Refused unless `at` is where this
    /// log ends; every record is checked (frame, checksum, decoding)
    /// before anything is written. The bytes are then appended unchanged
    /// (the header first made the newer of `version` and the version the
    /// records need, if this log's is older), and the records applied to the indexes and the
    /// dedupe set as [`Listens::open_with`] replays them.
    pub fn apply_shipped(
        &self,
        at: u64,
        bytes: &[u8],
        version: u32,
    ) -> Result<Applied, ApplyError> {
        if !(VERSION_1..=VERSION).contains(&version) {
            return Err(ApplyError::Version(version));
        }
        let expected = self.committed_end();
        if at != expected {
            return Err(ApplyError::NotAtEnd { expected, at });
        }
        let needs = check_records(bytes, at)?;
        let _change = self.changing();
        self.log.upgrade(needs.max(version))?;
        let start = match self.log.append_if_at(at, bytes)? {
            Ok(start) => start,
            Err(expected) => return Err(ApplyError::NotAtEnd { expected, at }),
        };
        let mut out = Applied {
            end: start + bytes.len() as u64,
            ..Applied::default()
        };
        self.in_turn(start, bytes.len(), || {
            self.index_shipped(bytes, start, &mut out)
        });
        Ok(out)
    }

    /// Feeds appended records (starting at log offset `start`) to the
    /// indexes, as `open_with` does, noting what changed in `out`.
    fn index_shipped(&self, bytes: &[u8], start: u64, out: &mut Applied) {
        let mut index = self.index();
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let mut one = Prepared::with_capacity(1);
        let mut pos = 0;
        while let Ok((ev, end)) = frame_at(bytes, pos) {
            let offset = start + pos as u64;
            pos = end;
            match ev {
                EventRef::Listen(l) => {
                    one.clear();
                    if seen.is_new_exact(l.user, &one.push(&self.hasher, &l), &index, &self.hasher)
                    {
                        index.add(&l, &one.norms(0));
                        out.listens.push(l.to_owned());
                        Tally::add(&self.tally.listens, 1);
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
                    Tally::add(&self.tally.love_events, 1);
                }
                EventRef::Correct { user, when, what } => {
                    let mut d = Corrected {
                        id: offset,
                        ..Corrected::default()
                    };
                    index.correct(&user, offset, when, what, Some(&mut d));
                    Tally::add(&self.tally.corrections, 1);
                    for l in &d.added {
                        seen.add(&key_of(&self.hasher, l));
                    }
                    out.corrected.push(d);
                }
                EventRef::Undo { user, id, .. } => {
                    let mut d = Corrected {
                        id,
                        ..Corrected::default()
                    };
                    index.undo(&user, id, false, Some(&mut d));
                    Tally::add(&self.tally.corrections, 1);
                    for l in &d.added {
                        seen.add(&key_of(&self.hasher, l));
                    }
                    out.corrected.push(d);
                }
            }
        }
    }
}

/// Checks that `bytes` (starting at log offset `at`) are whole, intact,
/// decodable records; returns the log version they need (the newest any
/// of them needs, [`crate::model::EventRef::version`]).
fn check_records(bytes: &[u8], at: u64) -> Result<u32, ApplyError> {
    let mut pos = 0;
    let mut needs = VERSION_1;
    while pos < bytes.len() {
        let (ev, end) = frame_at(bytes, pos).map_err(|reason| ApplyError::Damaged {
            offset: at + pos as u64,
            reason,
        })?;
        needs = needs.max(ev.version());
        pos = end;
    }
    Ok(needs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::correction::{Changes, Target};
    use crate::index::{ChartKind, ChartQuery, RecentQuery};
    use crate::store::LOG_FILE;
    use std::path::Path;

    fn l(user: &str, ts: i64, artist: &str, title: &str) -> Listen {
        let mut l = Listen::new(user, ts, artist, title);
        l.album = format!("{artist} album");
        l
    }

    fn open(dir: &Path) -> Listens {
        Listens::open(dir).unwrap().0
    }

    /// Everything a user would see of `users`' histories.
    fn view(s: &Listens, users: &[&str]) -> String {
        let mut out = String::new();
        for u in users {
            let q = RecentQuery {
                limit: 1000,
                page: 1,
                ..RecentQuery::default()
            };
            out += &format!("{u} recent {:?}\n", s.recent(u, &q));
            for kind in [ChartKind::Artists, ChartKind::Albums, ChartKind::Tracks] {
                out += &format!("{u} top {:?}\n", s.top(u, kind, None, 100, 1));
                let q = ChartQuery {
                    from: Some(1_500),
                    to: Some(9_000),
                    artist: None,
                    limit: 100,
                    page: 1,
                };
                out += &format!("{u} chart {:?}\n", s.chart(u, kind, &q));
            }
            out += &format!("{u} summary {:?}\n", s.summary(u));
            out += &format!("{u} loved {:?}\n", s.loved(u));
            out += &format!("{u} per day {:?}\n", s.per_day(u, None));
            out += &format!("{u} corrections {:?}\n", s.corrections(u));
        }
        out
    }

    /// Ships A's new durable bytes to B, in one piece.
    fn ship(a: &Listens, b: &Listens) -> Applied {
        let at = b.committed_end();
        let bytes = a.read_log_range(at, a.committed_end()).unwrap();
        b.apply_shipped(at, &bytes, a.log_version()).unwrap()
    }

    #[test]
    fn a_replica_fed_the_primarys_bytes_has_the_same_file_and_the_same_history() {
        let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (a, b) = (open(da.path()), open(db.path()));
        let users = ["ann", "bob"];
        a.submit(&[
            l("ann", 1_000, "Abba", "SOS"),
            l("ann", 2_000, "Beatles", "Help"),
            l("bob", 2_500, "Abba", "SOS"),
        ])
        .unwrap();
        let got = ship(&a, &b);
        assert_eq!(got.listens.len(), 3);
        assert_eq!(got.listens[1], l("ann", 2_000, "Beatles", "Help"));
        assert_eq!(got.end, a.committed_end());
        assert_eq!(b.log_version(), 1, "no correction yet: still version 1");

        a.love("ann", "Abba", "SOS", 3_000, true).unwrap();
        a.submit(&[l("ann", 4_000, "Beatles", "Yesterday")])
            .unwrap();
        // Several appends shipped in two pieces, cut at a record boundary.
        let mid = a.committed_end();
        a.submit(&[
            l("bob", 5_000, "Beatles", "Help"),
            l("ann", 6_000, "Cher", "Believe"),
        ])
        .unwrap();
        let at = b.committed_end();
        let first = a.read_log_range(at, mid).unwrap();
        assert_eq!(b.apply_shipped(at, &first, 1).unwrap().listens.len(), 1);
        let second = a.read_log_range(mid, a.committed_end()).unwrap();
        assert_eq!(b.apply_shipped(mid, &second, 1).unwrap().listens.len(), 2);

        let edit = a
            .edit(
                "ann",
                Target::Track {
                    artist: "beatles".into(),
                    title: "help".into(),
                },
                Changes {
                    artist: Some("The Beatles".into()),
                    ..Changes::default()
                },
                7_000,
            )
            .unwrap();
        let deleted = a.delete("bob", 2_500, "Abba", "SOS", 7_100).unwrap();
        let got = ship(&a, &b);
        assert_eq!(got.corrected, vec![edit.clone(), deleted]);
        assert_eq!(b.log_version(), 2, "a correction upgrades the header");
        // A listen of the edited track recorded later is edited too.
        a.submit(&[l("ann", 8_000, "Beatles", "Help")]).unwrap();
        let undone = a.undo("ann", edit.id, 8_100).unwrap();
        let got = ship(&a, &b);
        assert_eq!(got.listens.len(), 1);
        assert_eq!(got.corrected, vec![undone]);

        let fa = std::fs::read(da.path().join(LOG_FILE)).unwrap();
        assert_eq!(fa, std::fs::read(db.path().join(LOG_FILE)).unwrap());
        assert_eq!(view(&a, &users), view(&b, &users));
        assert!(
            view(&b, &users).contains("Believe"),
            "the view is not empty"
        );
        // The same listen sent to the replica afterwards is a duplicate.
        assert_eq!(
            b.submit(&[l("ann", 6_000, "Cher", "Believe")]).unwrap(),
            vec![crate::Submitted::Duplicate]
        );
        drop(b);
        let b = open(db.path());
        assert_eq!(view(&a, &users), view(&b, &users));
    }

    #[test]
    fn bytes_for_another_offset_are_refused_and_change_nothing() {
        let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (a, b) = (open(da.path()), open(db.path()));
        a.submit(&[l("ann", 1, "A", "x")]).unwrap();
        let mid = a.committed_end();
        a.submit(&[l("ann", 2, "A", "y")]).unwrap();
        let later = a.read_log_range(mid, a.committed_end()).unwrap();
        let before = std::fs::read(db.path().join(LOG_FILE)).unwrap();
        let e = b.apply_shipped(mid, &later, 1).unwrap_err();
        assert!(
            matches!(e, ApplyError::NotAtEnd { expected, at } if expected == HEADER_LEN && at == mid),
            "{e}"
        );
        assert!(e.to_string().contains(&format!("byte {HEADER_LEN}")), "{e}");
        // The right bytes claimed at the wrong offset: refused too.
        let e = b.apply_shipped(HEADER_LEN + 1, &later, 1).unwrap_err();
        assert!(matches!(e, ApplyError::NotAtEnd { .. }), "{e}");
        assert_eq!(std::fs::read(db.path().join(LOG_FILE)).unwrap(), before);
        assert_eq!(b.committed_end(), HEADER_LEN);
        assert_eq!(b.summary("ann").playcount, 0);
    }

    #[test]
    fn a_flipped_bit_is_refused_before_anything_is_written() {
        let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (a, b) = (open(da.path()), open(db.path()));
        a.submit(&[l("ann", 1, "A", "x"), l("ann", 2, "A", "y")])
            .unwrap();
        a.merge_artist("ann", "A", "B", 3).unwrap();
        let good = a.read_log_range(HEADER_LEN, a.committed_end()).unwrap();
        let before = std::fs::read(db.path().join(LOG_FILE)).unwrap();
        for i in (0..good.len()).step_by(3) {
            let mut bad = good.clone();
            bad[i] ^= 0x10;
            let e = b.apply_shipped(HEADER_LEN, &bad, 2).unwrap_err();
            let ApplyError::Damaged { offset, .. } = e else {
                panic!("byte {i}: {e}");
            };
            assert!(
                offset <= HEADER_LEN + i as u64,
                "byte {i} blamed on {offset}"
            );
            assert_eq!(
                std::fs::read(db.path().join(LOG_FILE)).unwrap(),
                before,
                "byte {i}"
            );
        }
        // A piece cut inside a record is damage too.
        let e = b
            .apply_shipped(HEADER_LEN, &good[..good.len() - 1], 2)
            .unwrap_err();
        assert!(matches!(e, ApplyError::Damaged { .. }), "{e}");
        assert_eq!(b.committed_end(), HEADER_LEN);
        assert_eq!(b.log_version(), 1, "the header was not upgraded either");
        // The intact bytes still apply.
        b.apply_shipped(HEADER_LEN, &good, 2).unwrap();
        assert_eq!(
            b.top("ann", ChartKind::Artists, None, 10, 1).rows[0].name,
            "B"
        );
    }

    #[test]
    fn a_range_that_is_not_whole_durable_records_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let a = open(dir.path());
        a.submit(&[l("ann", 1, "A", "x"), l("ann", 2, "A", "y")])
            .unwrap();
        let end = a.committed_end();
        for (from, to) in [
            (HEADER_LEN + 1, end),
            (HEADER_LEN, end - 1),
            (HEADER_LEN, end + 1),
            (5, end),
            (end, HEADER_LEN),
        ] {
            let e = a.read_log_range(from, to).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{from}..{to}: {e}");
        }
        // From 0: the whole file, header included.
        let whole = a.read_log_range(0, end).unwrap();
        assert_eq!(whole, std::fs::read(dir.path().join(LOG_FILE)).unwrap());
        assert!(a.read_log_range(end, end).unwrap().is_empty());
    }

    #[test]
    fn an_unknown_version_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let b = open(dir.path());
        let e = b.apply_shipped(HEADER_LEN, &[], 4).unwrap_err();
        assert!(matches!(e, ApplyError::Version(4)), "{e}");
    }
}
