//! Which entries changed lately: a bounded, memory-only record that lets
//! whoever keeps something derived from the library (the server's
//! catalog) re-read only the entries changed since it last looked.
//!
//! Every operation applied to an entry (create, delete, a property added
//! or removed) numbers itself with the next change number and records the
//! entry id. Only the last [`CHANGES_KEPT`] records are kept; asking for
//! the changes since a point older than that gets `None` (re-read
//! everything). A library has its own epoch, fresh for every `Library`
//! made (opened, cloned, installed from a cluster base), so a stamp of
//! another library never passes for one of this one.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

/// How many (change, entry) records a library keeps: 16 bytes each.
pub const CHANGES_KEPT: usize = 65_536;

/// A point in a library's history of changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChangeStamp {
    /// Which library (in this process) it is of.
    pub epoch: u64,
    /// Changes applied to it until then.
    pub seq: u64,
}

/// Where a library stands, durably and in memory: something derived
/// from it and saved (the server's catalog) names the library it is of
/// by this, and is current again after a restart when the library opens
/// at the same place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// The data file's generation.
    pub generation: u64,
    /// The number of the last transaction in the log.
    pub seq: u64,
    pub entries: usize,
    pub properties: usize,
    /// The same point in this process's history of changes.
    pub changes: ChangeStamp,
}

static EPOCHS: AtomicU64 = AtomicU64::new(1);

fn next_epoch() -> u64 {
    EPOCHS.fetch_add(1, Ordering::Relaxed)
}

#[derive(Debug)]
pub(crate) struct Changes {
    epoch: u64,
    seq: u64,
    /// Every change numbered up to this one has left `ring`.
    floor: u64,
    /// (change number, entry), ascending by number; an entry changed by
    /// several operations in a row has one record, of the last.
    ring: VecDeque<(u64, u32)>,
    kept: usize,
}

impl Default for Changes {
    fn default() -> Self {
        Changes::with_capacity(CHANGES_KEPT)
    }
}

impl Clone for Changes {
    /// A clone is another library: a fresh epoch, nothing recorded.
    fn clone(&self) -> Self {
        Changes::with_capacity(self.kept)
    }
}

impl Changes {
    pub(crate) fn with_capacity(kept: usize) -> Changes {
        Changes {
            epoch: next_epoch(),
            seq: 0,
            floor: 0,
            ring: VecDeque::new(),
            kept: kept.max(1),
        }
    }

    pub(crate) fn stamp(&self) -> ChangeStamp {
        ChangeStamp {
            epoch: self.epoch,
            seq: self.seq,
        }
    }

    /// Records a change of `entry`.
    pub(crate) fn record(&mut self, entry: u32) {
        self.seq += 1;
        if let Some(last) = self.ring.back_mut().filter(|(_, e)| *e == entry) {
            last.0 = self.seq;
            return;
        }
        if self.ring.len() >= self.kept {
            if let Some((n, _)) = self.ring.pop_front() {
                self.floor = n;
            }
        }
        self.ring.push_back((self.seq, entry));
    }

    /// The entries changed after `since`, ascending and each once; `None`
    /// when `since` is of another library or older than what is kept.
    pub(crate) fn since(&self, since: ChangeStamp) -> Option<Vec<u32>> {
        if since.epoch != self.epoch || since.seq > self.seq || since.seq < self.floor {
            return None;
        }
        let from = self.ring.partition_point(|(n, _)| *n <= since.seq);
        let mut ids: Vec<u32> = self.ring.range(from..).map(|(_, e)| *e).collect();
        ids.sort_unstable();
        ids.dedup();
        Some(ids)
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.ring.capacity() * 16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entries_changed_since_a_stamp_come_back_once_each() {
        let mut c = Changes::with_capacity(8);
        c.record(5);
        let s = c.stamp();
        for e in [3, 3, 9, 3] {
            c.record(e);
        }
        assert_eq!(c.since(s), Some(vec![3, 9]));
        assert_eq!(c.since(c.stamp()), Some(vec![]));
    }

    #[test]
    fn a_stamp_older_than_the_record_or_of_another_library_gets_none() {
        let mut c = Changes::with_capacity(3);
        let s = c.stamp();
        for e in 1..=3 {
            c.record(e);
        }
        assert_eq!(c.since(s), Some(vec![1, 2, 3]));
        c.record(4);
        assert_eq!(c.since(s), None);
        let other = Changes::with_capacity(3);
        assert_eq!(other.since(s), None);
        assert_eq!(c.clone().since(c.stamp()), None);
    }

    #[test]
    fn a_library_reopens_at_the_position_it_was_left_at_and_counts_changes_from_there() {
        use crate::{Db, Op};
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        db.commit(vec![Op::CreateEntry(1)]).unwrap();
        let at = db.position().unwrap();
        drop(db);
        let db = Db::open(dir.path()).unwrap();
        let o = db.opened_at();
        let key = |p: Position| (p.generation, p.seq, p.entries, p.properties);
        assert_eq!(key(o), key(at));
        assert_eq!(db.read().changed_since(o.changes), Some(vec![]));
        db.commit(vec![Op::CreateEntry(2)]).unwrap();
        assert_eq!(db.read().changed_since(o.changes), Some(vec![2]));
        assert_ne!(key(db.position().unwrap()), key(o));
    }
}
