//! Reading songs from the library a batch at a time, so that no catalog
//! work holds the library's read lock (which a commit waits for) for
//! more than the time of one batch.
//!
//! Between batches the library may change. Whatever changed after the
//! reading began is read again at the end, the last of it under the same
//! lock that says nothing else changed: the songs read are then those of
//! the library as of one point, the change stamp returned.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use spindle_store::{ChangeStamp, Db};

use super::{read_songs, Song};

/// Entries read under one hold of the library's lock.
pub const BATCH: usize = 128;

/// Rounds of reading again what changed meanwhile before the rest is
/// read under one hold, however long (commits faster than the reading).
const ROUNDS: usize = 64;

/// Songs read in batches.
#[derive(Debug)]
pub struct Read {
    /// Each entry asked for or changed meanwhile, ascending, with its song
    /// (`None`: not a song, or gone).
    pub songs: Vec<(u32, Option<Song>)>,
    /// The library's state they are of.
    pub stamp: ChangeStamp,
    /// The library's entries and property values then.
    pub entries: usize,
    pub properties: usize,
    /// The longest hold of the library's lock, and all of them together.
    pub longest_hold: Duration,
    pub held: Duration,
    pub holds: usize,
}

/// The songs of `ids` (entries of the library as of `since`), and of
/// every entry changed after `since`, read `BATCH` at a time. `None`
/// when the library forgot what changed meanwhile (more changes than it
/// keeps): then read everything again.
pub fn read_in_batches(
    db: &Db,
    ids: Vec<u32>,
    since: ChangeStamp,
    roots: &[PathBuf],
    articles: &[String],
) -> Option<Read> {
    read_with(db, ids, since, roots, articles, &mut || {})
}

/// [`read_in_batches`], calling `between` after each batch, with the lock
/// released (tests change the library there).
fn read_with(
    db: &Db,
    ids: Vec<u32>,
    since: ChangeStamp,
    roots: &[PathBuf],
    articles: &[String],
    between: &mut dyn FnMut(),
) -> Option<Read> {
    let mut out: BTreeMap<u32, Option<Song>> = BTreeMap::new();
    let mut pending = ids;
    let mut mark = since;
    let mut longest_hold = Duration::ZERO;
    let mut held_all = Duration::ZERO;
    let mut holds = 0;
    let mut rounds = 0;
    loop {
        let lib = db.read();
        let held = Instant::now();
        holds += 1;
        if pending.is_empty() {
            let more = lib.changed_since(mark)?;
            rounds += 1;
            if more.len() <= BATCH || rounds >= ROUNDS {
                out.extend(read_songs(&lib, &more, roots, articles));
                let stamp = lib.change_stamp();
                let (entries, properties) = (lib.len(), lib.prop_count());
                longest_hold = longest_hold.max(held.elapsed());
                held_all += held.elapsed();
                drop(lib);
                return Some(Read {
                    songs: out.into_iter().collect(),
                    stamp,
                    entries,
                    properties,
                    longest_hold,
                    held: held_all,
                    holds,
                });
            }
            pending = more;
            mark = lib.change_stamp();
        }
        let rest = pending.split_off(pending.len().min(BATCH));
        out.extend(read_songs(&lib, &pending, roots, articles));
        pending = rest;
        longest_hold = longest_hold.max(held.elapsed());
        held_all += held.elapsed();
        drop(lib);
        between();
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use spindle_store::Op;

    use super::super::gen::{library, rewrite, ROOT};
    use super::*;

    fn songs(read: Vec<(u32, Option<Song>)>) -> Vec<Song> {
        read.into_iter().filter_map(|(_, s)| s).collect()
    }

    #[test]
    fn songs_read_in_batches_while_the_library_changes_are_those_of_the_library_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let mut rng = StdRng::seed_from_u64(3);
        library(&db, &mut rng, 2000);
        let roots = [PathBuf::from(ROOT)];
        let (ids, since) = {
            let lib = db.read();
            (lib.ids().collect(), lib.change_stamp())
        };
        let mut step = 0;
        let mut change = || {
            step += 1;
            let id = rng.gen_range(1..=2000);
            if db.read().contains(id) && step % 3 == 0 {
                db.commit(vec![Op::DeleteEntry(id)]).unwrap();
            } else {
                rewrite(&db, &mut rng, id, &format!("c/{step}.flac"));
            }
            // New entries too, past the ids being read.
            if step % 4 == 0 {
                let id = db.reserve_id();
                rewrite(&db, &mut rng, id, &format!("n/{step}.flac"));
            }
        };
        let read = read_with(&db, ids, since, &roots, &[], &mut change).unwrap();
        assert!(step >= 2000 / BATCH, "{step} batches");
        let lib = db.read();
        assert_eq!(read.stamp, lib.change_stamp());
        assert_eq!(
            (read.entries, read.properties),
            (lib.len(), lib.prop_count())
        );
        let all: Vec<u32> = lib.ids().collect();
        assert!(songs(read.songs) == songs(read_songs(&lib, &all, &roots, &[])));
    }
}
