//! Least recently used: admit everything, evict the track requested
//! longest ago.

use super::list::Arena;
use super::{Outcome, Policy};

/// Least recently used, with a byte budget.
#[derive(Debug)]
pub struct Lru {
    cap: u64,
    a: Arena,
}

impl Lru {
    pub fn new(capacity: u64) -> Self {
        Lru {
            cap: capacity,
            a: Arena::default(),
        }
    }

    /// Hot ids, most recently used first.
    pub fn ids(&self) -> Vec<u64> {
        self.a.ids(0)
    }

    fn shrink_to(&mut self, bytes: u64, evicted: &mut Vec<u64>) {
        while self.a.bytes(0) > bytes {
            let Some(t) = self.a.back(0) else { break };
            evicted.push(self.a.remove(t).0);
        }
    }
}

impl Policy for Lru {
    fn name(&self) -> &'static str {
        "lru"
    }
    fn capacity(&self) -> u64 {
        self.cap
    }
    fn used(&self) -> u64 {
        self.a.bytes(0)
    }
    fn len(&self) -> usize {
        self.a.len(0)
    }
    fn contains(&self, id: u64) -> bool {
        self.a.find(id).is_some()
    }

    fn access_into(&mut self, id: u64, size: u64, evicted: &mut Vec<u64>) -> Outcome {
        if let Some(i) = self.a.find(id) {
            self.a.move_front(i, 0);
            return Outcome {
                hit: true,
                admit: false,
            };
        }
        if size > self.cap {
            return Outcome::default();
        }
        self.shrink_to(self.cap - size, evicted);
        self.a.insert_front(id, size, 0);
        Outcome {
            hit: false,
            admit: true,
        }
    }

    fn remove(&mut self, id: u64) -> bool {
        match self.a.find(id) {
            Some(i) => {
                self.a.remove(i);
                true
            }
            None => false,
        }
    }

    fn set_capacity(&mut self, bytes: u64, evicted: &mut Vec<u64>) {
        self.cap = bytes;
        self.shrink_to(bytes, evicted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_the_least_recently_used_until_the_new_track_fits() {
        let mut p = Lru::new(10);
        for id in 1..=3 {
            assert!(p.access(id, 3).admit);
        }
        assert!(p.access(1, 3).hit); // order now 1, 3, 2
        let d = p.access(4, 3);
        assert_eq!(d.evicted, vec![2]);
        assert_eq!(p.ids(), vec![4, 1, 3]);
        // A 7-byte track needs two evictions: 3 then 1.
        let d = p.access(5, 7);
        assert_eq!(d.evicted, vec![3, 1]);
        assert_eq!(p.used(), 10);
        // Larger than the whole budget: not admitted, nothing evicted.
        let d = p.access(6, 11);
        assert!(!d.admit && d.evicted.is_empty());
    }
}
