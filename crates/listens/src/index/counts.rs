//! Chart counters: plays per artist, album and track, of all time (one
//! hash table per kind and user) and of each day (sorted vectors: a day
//! holds few keys, and a table per kind per day cost more than its
//! keys). A child of the index module.

use std::hash::Hash;

use super::{ChartKind, IdMap};

pub(super) type ArtistK = u32;
pub(super) type PairK = (u32, u32);

/// Plays per key.
pub(super) trait Tally<K>: Default {
    /// One more play of `k`.
    fn bump(&mut self, k: K);
    /// One play of `k` fewer; a key at 0 is gone.
    fn drop_one(&mut self, k: K);
    fn len(&self) -> usize;
    /// Each key with its plays, in no set order.
    fn each(&self, f: impl FnMut(K, u32));
    /// Built from (key, plays) pairs of distinct keys; `None` if a key
    /// repeats or has no plays.
    fn from_pairs(pairs: Vec<(K, u32)>) -> Option<Self>;
}

impl<K: Hash + Eq + Copy> Tally<K> for IdMap<K, u32> {
    fn bump(&mut self, k: K) {
        *self.entry(k).or_default() += 1;
    }
    fn drop_one(&mut self, k: K) {
        if let Some(n) = self.get_mut(&k) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.remove(&k);
            }
        }
    }
    fn len(&self) -> usize {
        IdMap::len(self)
    }
    fn each(&self, mut f: impl FnMut(K, u32)) {
        for (&k, &n) in self {
            f(k, n);
        }
    }
    fn from_pairs(pairs: Vec<(K, u32)>) -> Option<Self> {
        let mut m = IdMap::with_capacity_and_hasher(pairs.len(), Default::default());
        for (k, n) in pairs {
            if n == 0 || m.insert(k, n).is_some() {
                return None;
            }
        }
        Some(m)
    }
}

/// (key, plays) sorted by key.
pub(super) struct Sorted<K>(Vec<(K, u32)>);

impl<K> Default for Sorted<K> {
    fn default() -> Self {
        Sorted(Vec::new())
    }
}

impl<K: Ord + Copy> Tally<K> for Sorted<K> {
    fn bump(&mut self, k: K) {
        match self.0.binary_search_by(|e| e.0.cmp(&k)) {
            Ok(i) => self.0[i].1 += 1,
            Err(i) => self.0.insert(i, (k, 1)),
        }
    }
    fn drop_one(&mut self, k: K) {
        if let Ok(i) = self.0.binary_search_by(|e| e.0.cmp(&k)) {
            self.0[i].1 = self.0[i].1.saturating_sub(1);
            if self.0[i].1 == 0 {
                self.0.remove(i);
            }
        }
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn each(&self, mut f: impl FnMut(K, u32)) {
        for &(k, n) in &self.0 {
            f(k, n);
        }
    }
    fn from_pairs(mut pairs: Vec<(K, u32)>) -> Option<Self> {
        pairs.sort_unstable_by_key(|p| p.0);
        let distinct = pairs.windows(2).all(|w| w[0].0 != w[1].0);
        (distinct && pairs.iter().all(|p| p.1 > 0)).then_some(Sorted(pairs))
    }
}

/// Plays per key of one span: a sorted vector while it holds few keys
/// (most spans of most users, where a table per span cost more than its
/// keys), a hash table once it holds more than [`SPAN_FEW`] (a heavy
/// listener's span, where each new key would shift a long vector: a
/// replay of a million listens of one user took twice as long).
pub(super) enum Span<K> {
    Few(Sorted<K>),
    Many(IdMap<K, u32>),
}

/// The most keys a span keeps in a sorted vector.
pub(super) const SPAN_FEW: usize = 256;

impl<K> Default for Span<K> {
    fn default() -> Self {
        Span::Few(Sorted::default())
    }
}

impl<K: Ord + Hash + Eq + Copy> Tally<K> for Span<K> {
    fn bump(&mut self, k: K) {
        match self {
            Span::Few(s) => {
                s.bump(k);
                if s.len() > SPAN_FEW {
                    let mut m = IdMap::with_capacity_and_hasher(s.len() * 2, Default::default());
                    m.extend(s.0.drain(..));
                    *self = Span::Many(m);
                }
            }
            Span::Many(m) => m.bump(k),
        }
    }
    fn drop_one(&mut self, k: K) {
        match self {
            Span::Few(s) => s.drop_one(k),
            Span::Many(m) => m.drop_one(k),
        }
    }
    fn len(&self) -> usize {
        match self {
            Span::Few(s) => s.len(),
            Span::Many(m) => IdMap::len(m),
        }
    }
    fn each(&self, f: impl FnMut(K, u32)) {
        match self {
            Span::Few(s) => s.each(f),
            Span::Many(m) => Tally::each(m, f),
        }
    }
    fn from_pairs(pairs: Vec<(K, u32)>) -> Option<Self> {
        if pairs.len() > SPAN_FEW {
            IdMap::from_pairs(pairs).map(Span::Many)
        } else {
            Sorted::from_pairs(pairs).map(Span::Few)
        }
    }
}

/// The counters of all time (`Counts`) or of one span (`SpanCounts`).
#[derive(Default)]
pub(super) struct Counts<A = IdMap<ArtistK, u32>, P = IdMap<PairK, u32>> {
    pub(super) listens: u32,
    /// Once per listen for each artist it is credited to.
    pub(super) artists: A,
    pub(super) albums: P,
    pub(super) tracks: P,
}

/// One span's counters.
pub(super) type SpanCounts = Counts<Span<ArtistK>, Span<PairK>>;

impl<A: Tally<ArtistK>, P: Tally<PairK>> Counts<A, P> {
    /// Counts a listen credited to `artists` (distinct), of album `al`
    /// and track `t`.
    pub(super) fn add(&mut self, artists: &[ArtistK], al: Option<PairK>, t: PairK) {
        self.listens += 1;
        for &a in artists {
            self.artists.bump(a);
        }
        if let Some(al) = al {
            self.albums.bump(al);
        }
        self.tracks.bump(t);
    }

    /// Takes back one [`Counts::add`] of the same keys; a key whose count
    /// reaches 0 is gone (the charts' totals count keys).
    pub(super) fn sub(&mut self, artists: &[ArtistK], al: Option<PairK>, t: PairK) {
        self.listens = self.listens.saturating_sub(1);
        for &a in artists {
            self.artists.drop_one(a);
        }
        if let Some(al) = al {
            self.albums.drop_one(al);
        }
        self.tracks.drop_one(t);
    }

    /// Calls `f` with every (key, count) of one kind.
    pub(super) fn each(&self, kind: ChartKind, mut f: impl FnMut(PairK, u32)) {
        match kind {
            ChartKind::Artists => self.artists.each(|a, n| f((a, a), n)),
            ChartKind::Albums => self.albums.each(f),
            ChartKind::Tracks => self.tracks.each(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A day's sorted counters count as a table does.
    #[test]
    fn sorted_counters_count_as_a_table_does() {
        let (mut day, mut all) = (SpanCounts::default(), Counts::<IdMap<u32, u32>>::default());
        let mut seed = 5u64;
        for _ in 0..3000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            let (a, t) = (((seed >> 33) % 7) as u32, ((seed >> 40) % 5) as u32);
            let al = (seed >> 50).is_multiple_of(2).then_some((a, t % 2));
            if (seed >> 45).is_multiple_of(3) {
                day.sub(&[a], al, (a, t));
                all.sub(&[a], al, (a, t));
            } else {
                day.add(&[a, 9], al, (a, t));
                all.add(&[a, 9], al, (a, t));
            }
        }
        for kind in [ChartKind::Artists, ChartKind::Albums, ChartKind::Tracks] {
            let (mut x, mut y) = (Vec::new(), Vec::new());
            day.each(kind, |k, n| x.push((k, n)));
            all.each(kind, |k, n| y.push((k, n)));
            y.sort();
            assert_eq!(x, y, "{kind:?}");
        }
        assert_eq!(day.listens, all.listens);
    }

    /// A span grows past [`SPAN_FEW`] keys into a table and counts as a
    /// plain table does: bumps, drops to zero, and a round trip through
    /// its pairs (the checkpoint's form).
    #[test]
    fn a_span_with_many_keys_counts_as_a_table_does() {
        let mut span = Span::<u32>::default();
        let mut want: IdMap<u32, u32> = IdMap::default();
        for i in 0..5_000u32 {
            let k = (i * 7919) % 1_000;
            span.bump(k);
            want.bump(k);
            if i % 3 == 0 {
                span.drop_one(k / 2);
                want.drop_one(k / 2);
            }
        }
        assert!(matches!(span, Span::Many(_)));
        fn pairs<T: Tally<u32>>(t: &T) -> Vec<(u32, u32)> {
            let mut v = Vec::new();
            t.each(|k, n| v.push((k, n)));
            v.sort_unstable();
            v
        }
        let got = pairs(&span);
        assert_eq!(got, pairs(&want));
        assert_eq!(span.len(), want.len());
        let back = Span::from_pairs(got.clone()).unwrap();
        assert_eq!(pairs(&back), got);
        let few = Span::<u32>::from_pairs(vec![(3, 1), (1, 2)]).unwrap();
        assert!(matches!(few, Span::Few(_)));
    }
}
