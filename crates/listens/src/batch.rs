//! What the submit and replay paths work out for each listen before they
//! take the index lock: its names normalised (once, into one buffer per
//! batch) and its dedupe keys; and the dedupe set, [`Seen`].

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use crate::checkpoint::codec::{In, Out};
use crate::index::IdMap;
use crate::index::Index;
use crate::model::ListenRef;
use crate::normalise::{normalise, normalise_into};
use crate::siphash::Sip13;

/// A listen's names, normalised.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Norms<'a> {
    pub artist: &'a str,
    pub title: &'a str,
    /// Empty when the listen has no album.
    pub album: &'a str,
    pub album_artist: &'a str,
}

/// The track of a listen — (user, normalised artist, normalised title) —
/// and its (user, MusicBrainz id), hashed to 128 bits by two SipHash-1-3
/// keys drawn at random when the history is first indexed, and kept in
/// its checkpoint (the dedupe set is stored there, by these keys).
/// Clients cannot aim collisions at keys they do not know, and a chance
/// one (about n²/2¹²⁹) is far below a disk's error rate.
pub(crate) struct DedupeHasher {
    keys: [u64; 4],
}

impl DedupeHasher {
    /// A hasher with new random keys.
    pub(crate) fn new() -> DedupeHasher {
        let s = RandomState::new();
        DedupeHasher {
            keys: [0u64, 1, 2, 3].map(|i| s.hash_one(i)),
        }
    }

    /// The hasher of a checkpoint, with the keys it was written with.
    pub(crate) fn with_keys(keys: [u64; 4]) -> DedupeHasher {
        DedupeHasher { keys }
    }

    pub(crate) fn keys(&self) -> [u64; 4] {
        self.keys
    }

    fn both(&self, write: impl Fn(&mut Sip13)) -> u128 {
        let [a0, a1, b0, b1] = self.keys;
        let one = |k0, k1| {
            let mut h = Sip13::new(k0, k1);
            write(&mut h);
            h.finish()
        };
        (u128::from(one(a0, a1)) << 64) | u128::from(one(b0, b1))
    }

    fn key(&self, user: &str, artist: &str, title: &str) -> u128 {
        self.both(|h| {
            h.write(&[0]);
            h.write_str(user);
            h.write_str(artist);
            h.write_str(title);
        })
    }

    fn mbid_key(&self, user: &str, mbid: &str) -> u128 {
        self.both(|h| {
            h.write(&[1]);
            h.write_str(user);
            h.write_str(mbid);
        })
    }

    /// The track key of a listen of `user` with these names as given.
    pub(crate) fn track_key(&self, user: &str, artist: &str, title: &str) -> u128 {
        self.key(user, &normalise(artist), &normalise(title))
    }

    /// The recording key of a listen of `user` with MusicBrainz id `mbid`
    /// as given; `None` without one.
    pub(crate) fn recording_key(&self, user: &str, mbid: &str) -> Option<u128> {
        let mbid = mbid.trim();
        (!mbid.is_empty()).then(|| {
            if mbid.bytes().any(|b| b.is_ascii_uppercase()) {
                self.mbid_key(user, &mbid.to_ascii_lowercase())
            } else {
                self.mbid_key(user, mbid)
            }
        })
    }

    /// The key of a listen whose names are already normalised.
    pub(crate) fn key_of(&self, user: &str, ts: i64, artist: &str, title: &str) -> Key {
        Key {
            track: self.key(user, artist, title),
            mbid: None,
            ts,
            duration: u32::MAX,
        }
    }
}

/// What the dedupe set knows of a listen: its track, its recording (when
/// it has a MusicBrainz id), when it started and how long it is
/// (`u32::MAX`: unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key {
    pub track: u128,
    pub mbid: Option<u128>,
    pub ts: i64,
    pub duration: u32,
}

/// A tenth of a track's length widens the dedupe window only up to this
/// track length, in seconds (so 6 minutes at most): a 10-hour recording
/// does not make every play of it within an hour a duplicate.
pub const MAX_DEDUPE_TRACK_SECS: u32 = 3600;

/// What decides whether a listen is a duplicate besides the listens in
/// the indexes: a listen is one when one of the same user and track (or
/// MusicBrainz recording) started within the window of it. The indexes
/// answer for every listen recorded (counted now, or deleted: see
/// [`Index::recorded_near`]); this set holds the rest: the listens being
/// recorded (reserved, written, not in the indexes yet), and the
/// identities corrections gave listens (an edited listen sent again is a
/// duplicate too). Start times are kept sorted per key.
pub(crate) struct Seen {
    /// Seconds; 0: only the same start time is a duplicate.
    window: i64,
    /// Reserved by a submission and not yet in the indexes.
    pending: [Times; 2],
    /// The identities corrections gave listens.
    tracks: Times,
    mbids: Times,
}

/// Start times per key (a track's or a recording's hash). Most keys have
/// one listen: their time sits in `one`, 24 bytes a key in the table,
/// with no vector of its own; a key with more has all its times, sorted,
/// in `more` instead. A key is in one table or the other, never both.
#[derive(Default)]
pub(crate) struct Times {
    one: IdMap<u128, i64>,
    more: IdMap<u128, Vec<i64>>,
}

impl Times {
    /// Whether `k` has a time within `w` of `ts`.
    fn near(&self, k: u128, ts: i64, w: i64) -> bool {
        if let Some(&t) = self.one.get(&k) {
            return t >= ts.saturating_sub(w) && t <= ts.saturating_add(w);
        }
        let Some(v) = self.more.get(&k) else {
            return false;
        };
        let i = v.partition_point(|&t| t < ts.saturating_sub(w));
        v.get(i).is_some_and(|&t| t <= ts.saturating_add(w))
    }

    fn put(&mut self, k: u128, ts: i64) {
        if let Some(v) = self.more.get_mut(&k) {
            let i = v.partition_point(|&t| t <= ts);
            v.insert(i, ts);
        } else if let Some(t) = self.one.remove(&k) {
            self.more.insert(k, vec![t.min(ts), t.max(ts)]);
        } else {
            self.one.insert(k, ts);
        }
    }

    fn take(&mut self, k: u128, ts: i64) {
        if self.one.get(&k) == Some(&ts) {
            self.one.remove(&k);
            return;
        }
        let Some(v) = self.more.get_mut(&k) else {
            return;
        };
        if let Some(i) = v.iter().rposition(|&t| t == ts) {
            v.remove(i);
        }
        if let [t] = v[..] {
            self.more.remove(&k);
            self.one.insert(k, t);
        } else if v.is_empty() {
            self.more.remove(&k);
        }
    }

    /// How many keys.
    fn len(&self) -> usize {
        self.one.len() + self.more.len()
    }

    /// Each key with its times, sorted.
    fn each(&self, mut f: impl FnMut(u128, &[i64])) {
        for (&k, t) in &self.one {
            f(k, std::slice::from_ref(t));
        }
        for (&k, v) in &self.more {
            f(k, v);
        }
    }

    /// Sets the times of a key not in the tables yet (at least one,
    /// sorted); false if they are not.
    fn set(&mut self, k: u128, times: Vec<i64>) -> bool {
        if !times.is_sorted() {
            return false;
        }
        match times[..] {
            [] => false,
            [t] => !self.more.contains_key(&k) && self.one.insert(k, t).is_none(),
            _ => !self.one.contains_key(&k) && self.more.insert(k, times).is_none(),
        }
    }
}

impl Seen {
    /// A set where listens starting within `window` seconds of each other
    /// (or a tenth of the track's length, when that is longer, but less
    /// than half of it) are one.
    pub(crate) fn new(window: i64) -> Seen {
        Seen {
            window: window.max(0),
            pending: Default::default(),
            tracks: Times::default(),
            mbids: Times::default(),
        }
    }

    /// The window for a listen `duration` seconds long: the set's window,
    /// widened to a tenth of the length, but always under half of it — a
    /// track on repeat starts again a whole length later, and each of
    /// those plays counts.
    fn window_for(&self, duration: u32) -> i64 {
        if self.window == 0 || duration == u32::MAX || duration == 0 {
            return self.window;
        }
        let d = duration.min(MAX_DEDUPE_TRACK_SECS);
        self.window
            .max(i64::from(d / 10))
            .min(i64::from(d.saturating_sub(1) / 2))
    }

    /// Reserves a listen of `user` unless it is a duplicate of one
    /// recorded (`ix`), reserved, or given by a correction (submissions);
    /// returns whether it was new. [`Seen::release`] takes the
    /// reservation back once the listen is in the indexes or failed.
    pub(crate) fn insert(&mut self, user: &str, k: &Key, ix: &Index, h: &DedupeHasher) -> bool {
        let w = self.window_for(k.duration);
        let [pt, pm] = &self.pending;
        let near = |t: &Times, m: &Times| {
            t.near(k.track, k.ts, w) || k.mbid.is_some_and(|x| m.near(x, k.ts, w))
        };
        if near(&self.tracks, &self.mbids) || near(pt, pm) || ix.recorded_near(user, k, w, true, h)
        {
            return false;
        }
        self.pending[0].put(k.track, k.ts);
        if let Some(m) = k.mbid {
            self.pending[1].put(m, k.ts);
        }
        true
    }

    /// Whether a listen of `user` in the log is new: not one of the same
    /// track at the same second already recorded (replay: the log holds
    /// what the writer let through, under whatever window it had then).
    pub(crate) fn is_new_exact(&self, user: &str, k: &Key, ix: &Index, h: &DedupeHasher) -> bool {
        !self.tracks.near(k.track, k.ts, 0) && !ix.recorded_near(user, k, 0, false, h)
    }

    /// Takes back a reservation of [`Seen::insert`].
    pub(crate) fn release(&mut self, k: &Key) {
        self.pending[0].take(k.track, k.ts);
        if let Some(m) = k.mbid {
            self.pending[1].take(m, k.ts);
        }
    }

    /// Records an identity a correction gave a listen.
    pub(crate) fn add(&mut self, k: &Key) {
        self.tracks.put(k.track, k.ts);
        if let Some(m) = k.mbid {
            self.mbids.put(m, k.ts);
        }
    }

    /// Appends the corrections' identities (not the window, an option of
    /// each open, nor reservations: there are none while a checkpoint
    /// copies) to `o`.
    pub(crate) fn save(&self, o: &mut Out) {
        for times in [&self.tracks, &self.mbids] {
            o.len(times.len());
            times.each(|k, ts| {
                o.u128(k);
                o.len(ts.len());
                for &t in ts {
                    o.i64(t);
                }
            });
        }
    }

    /// Reads what [`Seen::save`] wrote into a set with `window`.
    pub(crate) fn load(i: &mut In<'_>, window: i64) -> Option<Seen> {
        let mut seen = Seen::new(window);
        for map in [&mut seen.tracks, &mut seen.mbids] {
            let n = i.len(24)?;
            // A first look sizes each table: growing them as the keys
            // come would move every key several times.
            let mut ahead = i.clone();
            let mut ones = 0;
            for _ in 0..n {
                ahead.skip(16)?;
                let m = ahead.len(8)?;
                ones += usize::from(m == 1);
                ahead.skip(m * 8)?;
            }
            map.one.reserve(ones);
            map.more.reserve(n - ones);
            for _ in 0..n {
                let k = i.u128()?;
                let m = i.len(8)?;
                let mut times = Vec::with_capacity(m);
                for _ in 0..m {
                    times.push(i.i64()?);
                }
                // Sorted, each key once and with a time at least.
                if !map.set(k, times) {
                    return None;
                }
            }
        }
        Some(seen)
    }
}

/// The normalised names and dedupe keys of a batch of listens.
#[derive(Default)]
pub(crate) struct Prepared {
    buf: String,
    /// Per listen, where its artist, title, album and album artist start
    /// in `buf`, and where the album artist ends.
    spans: Vec<[u32; 5]>,
    pub keys: Vec<Key>,
}

impl Prepared {
    pub(crate) fn with_capacity(n: usize) -> Prepared {
        Prepared {
            buf: String::with_capacity(n * 48),
            spans: Vec::with_capacity(n),
            keys: Vec::with_capacity(n),
        }
    }

    pub(crate) fn clear(&mut self) {
        self.buf.clear();
        self.spans.clear();
        self.keys.clear();
    }

    /// Normalises a listen's names and computes its key; returns the key.
    pub(crate) fn push(&mut self, h: &DedupeHasher, l: &ListenRef<'_>) -> Key {
        let mut span = [0u32; 5];
        let at = |b: &String| b.len() as u32;
        span[0] = at(&self.buf);
        normalise_into(l.artist, &mut self.buf);
        span[1] = at(&self.buf);
        normalise_into(l.title, &mut self.buf);
        span[2] = at(&self.buf);
        normalise_into(l.album, &mut self.buf);
        span[3] = at(&self.buf);
        if span[3] > span[2] {
            // The album artist only counts for a listen with an album.
            normalise_into(l.album_artist, &mut self.buf);
        }
        span[4] = at(&self.buf);
        let s = |i: usize| &self.buf[span[i] as usize..span[i + 1] as usize];
        let key = Key {
            track: h.key(l.user, s(0), s(1)),
            mbid: h.recording_key(l.user, l.mbid),
            ts: l.timestamp,
            duration: l.duration,
        };
        self.spans.push(span);
        self.keys.push(key);
        key
    }

    pub(crate) fn norms(&self, i: usize) -> Norms<'_> {
        let span = self.spans[i];
        let s = |j: usize| &self.buf[span[j] as usize..span[j + 1] as usize];
        Norms {
            artist: s(0),
            title: s(1),
            album: s(2),
            album_artist: s(3),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Listen;

    /// The two tables answer as one sorted vector per key does, through
    /// keys gaining and losing times, and a save and load.
    #[test]
    fn times_in_one_or_more_answer_as_a_vector_per_key() {
        let mut t = Times::default();
        let mut naive: std::collections::BTreeMap<u128, Vec<i64>> = Default::default();
        let mut seed = 9u64;
        for step in 0..4000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            let (k, ts) = (u128::from((seed >> 33) % 40), ((seed >> 20) % 50) as i64);
            if (seed >> 50).is_multiple_of(3) {
                t.take(k, ts);
                if let Some(v) = naive.get_mut(&k) {
                    if let Some(i) = v.iter().rposition(|&x| x == ts) {
                        v.remove(i);
                    }
                    if v.is_empty() {
                        naive.remove(&k);
                    }
                }
            } else {
                t.put(k, ts);
                let v = naive.entry(k).or_default();
                let i = v.partition_point(|&x| x <= ts);
                v.insert(i, ts);
            }
            for w in [0, 3] {
                let q = ((seed >> 10) % 50) as i64;
                let want = naive
                    .get(&k)
                    .is_some_and(|v| v.iter().any(|&x| (x - q).abs() <= w));
                assert_eq!(t.near(k, q, w), want, "step {step}");
            }
        }
        let mut got = std::collections::BTreeMap::new();
        t.each(|k, v| {
            assert!(got.insert(k, v.to_vec()).is_none());
        });
        assert_eq!(got, naive);
        assert_eq!(t.len(), naive.len());
        let mut seen = Seen::new(0);
        seen.tracks = t;
        let mut o = Out(Vec::new());
        seen.save(&mut o);
        let back = Seen::load(&mut In::new(&o.0), 0).unwrap();
        let mut again = std::collections::BTreeMap::new();
        back.tracks.each(|k, v| {
            again.insert(k, v.to_vec());
        });
        assert_eq!(again, naive);
    }

    #[test]
    fn keys_follow_the_identity_not_the_spelling() {
        let h = DedupeHasher::new();
        let mut p = Prepared::default();
        let key = |p: &mut Prepared, u: &str, ts: i64, a: &str, t: &str| {
            let k = p.push(&h, &Listen::new(u, ts, a, t).as_ref());
            (k.track, k.ts)
        };
        let k = key(&mut p, "u", 5, "The  Band", "Song");
        assert_eq!(key(&mut p, "u", 5, " the band ", "SONG"), k);
        for other in [
            key(&mut p, "v", 5, "The Band", "Song"),
            key(&mut p, "u", 6, "The Band", "Song"),
            key(&mut p, "u", 5, "The Ban", "dSong"),
            key(&mut p, "u", 5, "The Band", "Song 2"),
        ] {
            assert_ne!(other, k);
        }
        let mut l = Listen::new("u", 1, "A", "T");
        l.album_artist = "Various".into();
        p.push(&h, &l.as_ref());
        let n = p.norms(p.keys.len() - 1);
        assert_eq!(
            (n.artist, n.title, n.album, n.album_artist),
            ("a", "t", "", "")
        );
    }
}
