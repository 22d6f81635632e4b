//! The static oracle: the most popular tracks, chosen in advance with
//! knowledge of the workload (the true popularity of a synthetic workload,
//! or the request counts of a replayed log, in hindsight) and never
//! changed. Greedy by popularity until the budget is full: the best fixed
//! set for the byte hit ratio up to the last partly fitting track.

use super::idmap::IdMap;
use super::{Outcome, Policy};

#[derive(Debug)]
pub struct StaticSet {
    cap: u64,
    used: u64,
    set: IdMap<()>,
}

impl StaticSet {
    /// `tracks` are (id, popularity, size); the most popular that fit go
    /// in, skipping any that no longer fit.
    pub fn from_popularity(
        capacity: u64,
        tracks: impl IntoIterator<Item = (u64, f64, u64)>,
    ) -> Self {
        let mut v: Vec<(u64, f64, u64)> = tracks.into_iter().filter(|t| t.1 > 0.0).collect();
        v.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut s = StaticSet {
            cap: capacity,
            used: 0,
            set: IdMap::default(),
        };
        for (id, _, size) in v {
            if s.used + size <= capacity {
                s.used += size;
                s.set.insert(id, ());
            }
        }
        s
    }
}

impl Policy for StaticSet {
    fn name(&self) -> &'static str {
        "static"
    }
    fn capacity(&self) -> u64 {
        self.cap
    }
    fn used(&self) -> u64 {
        self.used
    }
    fn len(&self) -> usize {
        self.set.len()
    }
    fn contains(&self, id: u64) -> bool {
        self.set.contains_key(&id)
    }
    fn access_into(&mut self, id: u64, _size: u64, _evicted: &mut Vec<u64>) -> Outcome {
        Outcome {
            hit: self.set.contains_key(&id),
            admit: false,
        }
    }
    fn remove(&mut self, _id: u64) -> bool {
        false
    }
    fn set_capacity(&mut self, _bytes: u64, _evicted: &mut Vec<u64>) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_most_requested_that_fit() {
        let s =
            StaticSet::from_popularity(10, [(1, 5.0, 6), (2, 9.0, 3), (3, 7.0, 5), (4, 1.0, 1)]);
        // 2 (3 bytes), 3 (5 bytes), 1 does not fit (6), 4 fits (1).
        assert!(s.contains(2) && s.contains(3) && s.contains(4) && !s.contains(1));
        assert_eq!(s.used(), 9);
    }
}
