//! Adaptive Replacement Cache (Megiddo and Modha, FAST 2003), with bytes in
//! place of pages: T1 holds tracks seen once recently, T2 tracks seen at
//! least twice; the ghost lists B1 and B2 remember what left each, and a
//! hit in a ghost list moves the target size of T1 (`p`, in bytes) toward
//! the list that would have kept it.

use super::list::Arena;
use super::{Outcome, Policy};

const T1: u8 = 0;
const T2: u8 = 1;
const B1: u8 = 2;
const B2: u8 = 3;

/// ARC with a byte budget.
#[derive(Debug)]
pub struct Arc {
    cap: u64,
    /// Target bytes of T1.
    p: u64,
    a: Arena,
}

impl Arc {
    pub fn new(capacity: u64) -> Self {
        Arc {
            cap: capacity,
            p: 0,
            a: Arena::default(),
        }
    }

    /// The current target size of T1 in bytes.
    pub fn target_recent(&self) -> u64 {
        self.p
    }

    /// Hot ids seen once recently (T1) and more often (T2), MRU first.
    pub fn lists(&self) -> (Vec<u64>, Vec<u64>) {
        (self.a.ids(T1), self.a.ids(T2))
    }

    fn resident(&self) -> u64 {
        self.a.bytes(T1) + self.a.bytes(T2)
    }

    /// Moves tracks from T1/T2 to their ghost lists until `need` more bytes
    /// fit.
    fn replace(&mut self, need: u64, hit_in_b2: bool, evicted: &mut Vec<u64>) {
        while self.resident() + need > self.cap {
            let t1 = self.a.bytes(T1);
            let from_t1 = self.a.len(T1) > 0
                && (t1 > self.p || (hit_in_b2 && t1 == self.p) || self.a.len(T2) == 0);
            let (from, to) = if from_t1 { (T1, B1) } else { (T2, B2) };
            let Some(t) = self.a.back(from) else { break };
            evicted.push(self.a.node(t).id);
            self.a.move_front(t, to);
        }
    }

    fn drop_back(&mut self, list: u8) -> bool {
        match self.a.back(list) {
            Some(t) => {
                self.a.remove(t);
                true
            }
            None => false,
        }
    }
}

impl Policy for Arc {
    fn name(&self) -> &'static str {
        "arc"
    }
    fn capacity(&self) -> u64 {
        self.cap
    }
    fn used(&self) -> u64 {
        self.resident()
    }
    fn len(&self) -> usize {
        self.a.len(T1) + self.a.len(T2)
    }
    fn contains(&self, id: u64) -> bool {
        self.a
            .find(id)
            .is_some_and(|i| matches!(self.a.node(i).list, T1 | T2))
    }

    fn access_into(&mut self, id: u64, size: u64, evicted: &mut Vec<u64>) -> Outcome {
        let found = self.a.find(id);
        if let Some(i) = found {
            let list = self.a.node(i).list;
            if list == T1 || list == T2 {
                self.a.move_front(i, T2);
                return Outcome {
                    hit: true,
                    admit: false,
                };
            }
        }
        if size > self.cap {
            return Outcome::default();
        }
        let admitted = Outcome {
            hit: false,
            admit: true,
        };
        match found {
            Some(i) if self.a.node(i).list == B1 => {
                let (b1, b2) = (self.a.bytes(B1).max(1), self.a.bytes(B2));
                let delta = size.max(size.saturating_mul(b2) / b1);
                self.p = (self.p + delta).min(self.cap);
                self.a.move_front(i, T2); // out of the ghost list first
                self.a.move_front(i, B1);
                self.replace(size, false, evicted);
                self.a.move_front(i, T2);
                admitted
            }
            Some(i) => {
                // In B2.
                let (b1, b2) = (self.a.bytes(B1), self.a.bytes(B2).max(1));
                let delta = size.max(size.saturating_mul(b1) / b2);
                self.p = self.p.saturating_sub(delta);
                self.replace(size, true, evicted);
                self.a.move_front(i, T2);
                admitted
            }
            None => {
                // L1 = T1 + B1 stays within the capacity, everything within
                // twice the capacity.
                while self.a.bytes(T1) + self.a.bytes(B1) + size > self.cap {
                    if !self.drop_back(B1) {
                        let Some(t) = self.a.back(T1) else { break };
                        evicted.push(self.a.remove(t).0);
                    }
                }
                while self.resident() + self.a.bytes(B1) + self.a.bytes(B2) + size > 2 * self.cap
                    && self.drop_back(B2)
                {}
                self.replace(size, false, evicted);
                self.a.insert_front(id, size, T1);
                admitted
            }
        }
    }

    fn remove(&mut self, id: u64) -> bool {
        match self.a.find(id) {
            Some(i) => {
                let hot = matches!(self.a.node(i).list, T1 | T2);
                self.a.remove(i);
                hot
            }
            None => false,
        }
    }

    fn set_capacity(&mut self, bytes: u64, evicted: &mut Vec<u64>) {
        self.cap = bytes;
        self.p = self.p.min(bytes);
        self.replace(0, false, evicted);
        while self.a.bytes(T1) + self.a.bytes(B1) > bytes && self.drop_back(B1) {}
        while self.resident() + self.a.bytes(B1) + self.a.bytes(B2) > 2 * bytes
            && self.drop_back(B2)
        {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_request_promotes_to_t2_and_a_scan_does_not_flush_it() {
        // Capacity of four unit tracks.
        let mut p = Arc::new(4);
        p.access(1, 1);
        p.access(2, 1);
        assert!(p.access(1, 1).hit);
        assert!(p.access(2, 1).hit);
        assert_eq!(p.lists(), (vec![], vec![2, 1]));
        // A scan of once-seen tracks cycles through T1 only.
        for id in 10..20 {
            p.access(id, 1);
        }
        assert!(p.contains(1) && p.contains(2), "{:?}", p.lists());
        assert_eq!(p.used(), 4);
    }

    #[test]
    fn a_ghost_hit_in_b1_grows_the_recency_target() {
        let mut p = Arc::new(2);
        p.access(1, 1);
        p.access(1, 1); // T2 = [1]
        p.access(2, 1); // T1 = [2]
        let d = p.access(3, 1); // T1 is over target p = 0: 2 goes to B1
        assert_eq!(d.evicted, vec![2]);
        assert_eq!(p.target_recent(), 0);
        let d = p.access(2, 1); // ghost hit in B1
        assert!(d.admit && !d.hit);
        assert_eq!(p.target_recent(), 1);
        assert!(p.contains(2));
        assert_eq!(p.used(), 2);
    }
}
