//! Links accepted listens to library entries and bumps their play counts.
//!
//! A listen matches the entry with its MusicBrainz recording id
//! (`musicbrainz_trackid`), else the entry whose artist and title (and
//! album, when the listen has one) are equal, caselessly. The entry's
//! `timesplayed` and `laststarted` (source `server`) are updated in one
//! library commit per batch. This runs on a thread of its own so that a
//! scrobble is acknowledged once it is in the listens log, without
//! waiting for the library ([`crate::worker`]); its `stop` ends it after
//! the last batch sent and joins it. A correction of the history
//! ([`Linker::send_corrected`]) moves the counts too: each listen it took
//! away is one play less of its entry, each it added one more.

use std::collections::HashMap;
use std::sync::Arc;

use spindle_listens::Listen;
use spindle_query::{Coll, Filter, FilterOp, SourcePref, Value};
use spindle_store::{Db, Op};

use crate::worker::BatchWorker;

pub const SOURCE: &str = "server";

/// A listen that starts counting (`plays` 1) or stops (−1), and the
/// library entry it is of when the client named it (Subsonic's `id`, the
/// web player's song): that entry counts it even when its tags do not
/// match (a file without tags is shown under names from its path).
pub struct Play {
    listen: Listen,
    plays: i64,
    entry: Option<u32>,
    /// Whether the linker counts it in its user's plays
    /// ([`crate::plays`]) once matched: a listen the scrobble path counted
    /// already (a named entry) or a correction's (the user's plays are
    /// built again) is not.
    count: bool,
}

/// The library linker: a thread over batches of accepted listens (and of
/// listens a correction changed).
pub struct Linker(BatchWorker<Play>);

impl Linker {
    /// Queues accepted listens: one play each, counted in their users'
    /// plays once matched.
    pub fn send(&self, fresh: Vec<Listen>) {
        self.send_songs(fresh.into_iter().map(|l| (l, None)).collect());
    }

    /// Queues accepted listens, some of library entries the client named.
    /// Those were counted in their users' plays before the answer
    /// ([`crate::scrobble::store_songs`]); the others are counted here,
    /// once matched, so the request path does no library lookup.
    pub fn send_songs(&self, fresh: Vec<(Listen, Option<u32>)>) {
        self.0.send(
            fresh
                .into_iter()
                .map(|(listen, entry)| Play {
                    listen,
                    plays: 1,
                    count: entry.is_none(),
                    entry,
                })
                .collect(),
        );
    }

    /// Queues what a correction changed: a play less for each listen it
    /// took away, one more for each it added.
    pub fn send_corrected(&self, c: &spindle_listens::Corrected) {
        let less = c.removed.iter().map(|l| Play {
            listen: l.clone(),
            plays: -1,
            entry: None,
            count: false,
        });
        let more = c.added.iter().map(|l| Play {
            listen: l.clone(),
            plays: 1,
            entry: None,
            count: false,
        });
        self.0.send(less.chain(more).collect());
    }

    /// Waits until every batch sent so far is in the library.
    pub fn flush(&self) {
        self.0.flush();
    }

    /// Starts the thread, which first links what was sent before.
    pub fn start(&self) {
        self.0.start();
    }

    /// Links what was sent, then ends the thread and joins it.
    pub fn stop(&self) {
        self.0.stop();
    }
}

/// The linker of `db`, counting users' plays in `users`; its thread
/// starts with [`Linker::start`].
pub fn linker(db: Arc<Db>, users: Arc<crate::plays::Plays>) -> Linker {
    Linker(BatchWorker::new(
        "spindle-link",
        "listens will not update play counts",
        move |batch: Vec<Play>| {
            if let Err(e) = link(&db, &users, &batch) {
                tracing::error!("updating play counts in the library failed: {e}");
            }
        },
    ))
}

fn eq(key: &str, v: &str) -> Coll {
    Coll::filter(Filter::key(key, FilterOp::Equals(Value::Str(v.to_owned()))))
}

/// The library entry a listen is of, if any.
pub fn find_entry(lib: &spindle_store::Library, l: &Listen) -> Option<u32> {
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

fn link(
    db: &Db,
    users: &crate::plays::Plays,
    batch: &[Play],
) -> Result<(), spindle_store::CommitError> {
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
        let mut counted = Vec::new();
        for Play {
            listen: l,
            plays,
            entry,
            count,
        } in batch
        {
            let key = (
                l.mbid.as_str(),
                l.artist.as_str(),
                l.title.as_str(),
                l.album.as_str(),
            );
            let id = match entry.filter(|&e| lib.contains(e)) {
                Some(e) => Some(e),
                None => *found.entry(key).or_insert_with(|| find_entry(&lib, l)),
            };
            if let Some(id) = id {
                if *count {
                    counted.push((l.clone(), Some(id)));
                }
                let e = bumps.entry(id).or_insert((0, i64::MIN));
                e.0 += plays;
                if *plays > 0 {
                    e.1 = e.1.max(l.timestamp);
                }
            }
        }
        // Matched above: the users' plays take the entries as they are.
        users.record(&lib, &counted);
        let server_only = SourcePref::parse(SOURCE);
        for (&id, &(n, last)) in &bumps {
            if n == 0 {
                // A correction that took a play away and gave it back.
                continue;
            }
            let get = |k: &str| {
                lib.get(id, k, &server_only)
                    .into_iter()
                    .filter_map(|v| v.to_value().as_int())
                    .max()
            };
            let played = get("timesplayed").unwrap_or(0);
            let last = get("laststarted").map_or(last, |old| old.max(last));
            let mut set = vec![("timesplayed", (played + n).max(0))];
            if last != i64::MIN {
                set.push(("laststarted", last));
            }
            for (key, value) in set {
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
