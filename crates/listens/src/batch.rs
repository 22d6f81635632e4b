//! What the submit and replay paths work out for each listen before they
//! take the index lock: its names normalised (once, into one buffer per
//! batch) and its dedupe key.

use std::collections::hash_map::RandomState;
use std::collections::HashSet;
use std::hash::{BuildHasher, BuildHasherDefault};

use crate::index::IdHasher;
use crate::model::ListenRef;
use crate::normalise::normalise_into;

/// A listen's names, normalised.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Norms<'a> {
    pub artist: &'a str,
    pub title: &'a str,
    /// Empty when the listen has no album.
    pub album: &'a str,
    pub album_artist: &'a str,
}

/// The identity of a listen — (user, timestamp, normalised artist,
/// normalised title) — hashed to 128 bits by two SipHash keys drawn for
/// this process. Clients cannot aim collisions at keys they do not know,
/// and a chance one (about n²/2¹²⁹) is far below a disk's error rate. The
/// set is rebuilt from the log on open, so keys need not be stable
/// across runs.
pub(crate) struct DedupeHasher {
    a: RandomState,
    b: RandomState,
}

pub(crate) type Seen = HashSet<u128, BuildHasherDefault<IdHasher>>;

impl DedupeHasher {
    pub(crate) fn new() -> DedupeHasher {
        DedupeHasher {
            a: RandomState::new(),
            b: RandomState::new(),
        }
    }

    fn key(&self, user: &str, timestamp: i64, artist: &str, title: &str) -> u128 {
        let one = |s: &RandomState| s.hash_one((user, timestamp, artist, title));
        (u128::from(one(&self.a)) << 64) | u128::from(one(&self.b))
    }
}

/// The normalised names and dedupe keys of a batch of listens.
#[derive(Default)]
pub(crate) struct Prepared {
    buf: String,
    /// Per listen, where its artist, title, album and album artist start
    /// in `buf`, and where the album artist ends.
    spans: Vec<[u32; 5]>,
    pub keys: Vec<u128>,
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
    pub(crate) fn push(&mut self, h: &DedupeHasher, l: &ListenRef<'_>) -> u128 {
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
        let key = h.key(l.user, l.timestamp, s(0), s(1));
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

    #[test]
    fn keys_follow_the_identity_not_the_spelling() {
        let h = DedupeHasher::new();
        let mut p = Prepared::default();
        let key = |p: &mut Prepared, u: &str, ts: i64, a: &str, t: &str| {
            p.push(&h, &Listen::new(u, ts, a, t).as_ref())
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
