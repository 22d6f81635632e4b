//! Links accepted listens to library entries and bumps their play counts.
//!
//! A listen matches the entry with its MusicBrainz recording id
//! (`musicbrainz_trackid`), else the entry whose artist and title (and
//! album, when the listen has one) are equal, caselessly. The entry's
//! `timesplayed` and `laststarted` (source `server`) are updated in one
//! library commit per batch. This runs on a thread of its own so that a
//! scrobble is acknowledged once it is in the listens log, without
//! waiting for the library; [`Linker::stop`] ends it after the last
//! batch sent and joins it.

use std::collections::HashMap;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use spindle_listens::Listen;
use spindle_query::{Coll, Filter, FilterOp, SourcePref, Value};
use spindle_store::{Db, Op};

use crate::state::lock;

pub(crate) const SOURCE: &str = "server";

pub(crate) struct Linker {
    tx: Mutex<Option<Sender<Vec<Listen>>>>,
    /// (batches sent, batches done)
    progress: Arc<(Mutex<(u64, u64)>, Condvar)>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Linker {
    pub(crate) fn start(db: Arc<Db>) -> Linker {
        let (tx, rx) = channel::<Vec<Listen>>();
        let progress = Arc::new((Mutex::new((0u64, 0u64)), Condvar::new()));
        let p2 = progress.clone();
        let spawned = std::thread::Builder::new()
            .name("spindle-link".into())
            .spawn(move || {
                while let Ok(mut batch) = rx.recv() {
                    let mut n = 1;
                    while let Ok(more) = rx.try_recv() {
                        batch.extend(more);
                        n += 1;
                    }
                    if let Err(e) = link(&db, &batch) {
                        eprintln!("spindle: updating play counts in the library failed: {e}");
                    }
                    let (m, cv) = &*p2;
                    lock(m).1 += n;
                    cv.notify_all();
                }
            });
        let thread = match spawned {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("spindle: listens will not update play counts: {e}");
                None
            }
        };
        Linker {
            tx: Mutex::new(Some(tx)),
            progress,
            thread: Mutex::new(thread),
        }
    }

    /// Closes the queue: the thread links what was sent and ends; waits
    /// for it. Later [`Linker::send`]s are dropped.
    pub(crate) fn stop(&self) {
        drop(lock(&self.tx).take());
        if let Some(t) = lock(&self.thread).take() {
            let _ = t.join();
        }
    }

    pub(crate) fn send(&self, listens: Vec<Listen>) {
        if listens.is_empty() {
            return;
        }
        let tx = lock(&self.tx);
        if let Some(tx) = tx.as_ref() {
            if tx.send(listens).is_ok() {
                lock(&self.progress.0).0 += 1;
            }
        }
    }

    pub(crate) fn flush(&self) {
        let (m, cv) = &*self.progress;
        let mut g = lock(m);
        while g.1 < g.0 {
            g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}

fn eq(key: &str, v: &str) -> Coll {
    Coll::filter(Filter::key(key, FilterOp::Equals(Value::Str(v.to_owned()))))
}

/// The library entry a listen is of, if any.
pub(crate) fn find_entry(lib: &spindle_store::Library, l: &Listen) -> Option<u32> {
    let pref = SourcePref::default();
    let first = |c: Coll| lib.query_ids(&c, &pref).ok()?.ids.first().copied();
    if !l.mbid.is_empty() {
        if let Some(id) = first(eq("musicbrainz_trackid", &l.mbid)) {
            return Some(id);
        }
    }
    let base = vec![eq("artist", l.artist.trim()), eq("title", l.title.trim())];
    if !l.album.trim().is_empty() {
        let mut with_album = base.clone();
        with_album.push(eq("album", l.album.trim()));
        if let Some(id) = first(Coll::Intersection(with_album)) {
            return Some(id);
        }
    }
    first(Coll::Intersection(base))
}

fn link(db: &Db, batch: &[Listen]) -> Result<(), spindle_store::CommitError> {
    // entry → (plays to add, latest start)
    let mut bumps: HashMap<u32, (i64, i64)> = HashMap::new();
    let mut ops = Vec::new();
    {
        let lib = db.read();
        if lib.is_empty() {
            return Ok(());
        }
        // One library lookup per distinct track of the batch: a batch
        // gathers every listen sent while the last one was linked, and
        // imports and repeat plays name the same tracks many times.
        let mut found: HashMap<(&str, &str, &str, &str), Option<u32>> = HashMap::new();
        for l in batch {
            let key = (
                l.mbid.as_str(),
                l.artist.as_str(),
                l.title.as_str(),
                l.album.as_str(),
            );
            let id = *found.entry(key).or_insert_with(|| find_entry(&lib, l));
            if let Some(id) = id {
                let e = bumps.entry(id).or_insert((0, i64::MIN));
                e.0 += 1;
                e.1 = e.1.max(l.timestamp);
            }
        }
        let server_only = SourcePref::parse(SOURCE);
        for (&id, &(n, last)) in &bumps {
            let get = |k: &str| {
                lib.get(id, k, &server_only)
                    .into_iter()
                    .filter_map(|v| v.to_value().as_int())
                    .max()
            };
            let played = get("timesplayed").unwrap_or(0);
            let last = get("laststarted").map_or(last, |old| old.max(last));
            for (key, value) in [("timesplayed", played + n), ("laststarted", last)] {
                ops.push(Op::DelKey {
                    entry: id,
                    key: key.into(),
                    source: Some(SOURCE.into()),
                });
                ops.push(Op::AddProp {
                    entry: id,
                    key: key.into(),
                    source: SOURCE.into(),
                    value: Value::Int(value),
                });
            }
        }
    }
    if ops.is_empty() {
        return Ok(());
    }
    db.commit(ops)
}
