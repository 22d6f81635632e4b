//! S3-FIFO (Yang et al., SOSP 2023): a small FIFO queue (10 % of the
//! bytes) filters tracks requested once; those requested again while in it
//! move to the main FIFO queue, whose tail gets a second chance per
//! request (a 2-bit counter); a ghost queue remembers tracks dropped from
//! the small queue, and a ghost hit goes straight to the main queue.

use super::list::Arena;
use super::{Outcome, Policy};

const SMALL: u8 = 0;
const MAIN: u8 = 1;
const GHOST: u8 = 2;

/// S3-FIFO with a byte budget.
#[derive(Debug)]
pub struct S3Fifo {
    cap: u64,
    a: Arena,
}

impl S3Fifo {
    pub fn new(capacity: u64) -> Self {
        S3Fifo {
            cap: capacity,
            a: Arena::default(),
        }
    }

    fn small_target(&self) -> u64 {
        self.cap / 10
    }

    fn resident(&self) -> u64 {
        self.a.bytes(SMALL) + self.a.bytes(MAIN)
    }

    /// Hot ids of the small and the main queue, newest first.
    pub fn queues(&self) -> (Vec<u64>, Vec<u64>) {
        (self.a.ids(SMALL), self.a.ids(MAIN))
    }

    fn evict(&mut self, evicted: &mut Vec<u64>) {
        if self.a.bytes(SMALL) >= self.small_target() || self.a.len(MAIN) == 0 {
            self.evict_small(evicted);
        } else {
            self.evict_main(evicted);
        }
    }

    fn evict_small(&mut self, evicted: &mut Vec<u64>) {
        while let Some(t) = self.a.back(SMALL) {
            if self.a.node(t).freq >= 1 {
                self.a.node_mut(t).freq = 0;
                self.a.move_front(t, MAIN);
                if self.a.bytes(MAIN) > self.cap - self.small_target().min(self.cap) {
                    self.evict_main(evicted);
                }
            } else {
                evicted.push(self.a.node(t).id);
                self.a.move_front(t, GHOST);
                let ghost_cap = self.cap - self.small_target();
                while self.a.bytes(GHOST) > ghost_cap {
                    let Some(g) = self.a.back(GHOST) else { break };
                    self.a.remove(g);
                }
                return;
            }
        }
        self.evict_main(evicted);
    }

    fn evict_main(&mut self, evicted: &mut Vec<u64>) {
        while let Some(t) = self.a.back(MAIN) {
            let n = self.a.node_mut(t);
            if n.freq > 0 {
                n.freq -= 1;
                self.a.move_front(t, MAIN);
            } else {
                evicted.push(self.a.remove(t).0);
                return;
            }
        }
    }
}

impl Policy for S3Fifo {
    fn name(&self) -> &'static str {
        "s3-fifo"
    }
    fn capacity(&self) -> u64 {
        self.cap
    }
    fn used(&self) -> u64 {
        self.resident()
    }
    fn len(&self) -> usize {
        self.a.len(SMALL) + self.a.len(MAIN)
    }
    fn contains(&self, id: u64) -> bool {
        self.a
            .find(id)
            .is_some_and(|i| self.a.node(i).list != GHOST)
    }

    fn access_into(&mut self, id: u64, size: u64, evicted: &mut Vec<u64>) -> Outcome {
        let found = self.a.find(id);
        if let Some(i) = found {
            let n = self.a.node_mut(i);
            if n.list != GHOST {
                n.freq = (n.freq + 1).min(3);
                return Outcome {
                    hit: true,
                    admit: false,
                };
            }
        }
        if size > self.cap {
            return Outcome::default();
        }
        let ghost = if let Some(i) = found {
            self.a.remove(i);
            true
        } else {
            false
        };
        while self.resident() + size > self.cap && self.len() > 0 {
            self.evict(evicted);
        }
        self.a
            .insert_front(id, size, if ghost { MAIN } else { SMALL });
        Outcome {
            hit: false,
            admit: true,
        }
    }

    fn remove(&mut self, id: u64) -> bool {
        match self.a.find(id) {
            Some(i) => {
                let hot = self.a.node(i).list != GHOST;
                self.a.remove(i);
                hot
            }
            None => false,
        }
    }

    fn set_capacity(&mut self, bytes: u64, evicted: &mut Vec<u64>) {
        self.cap = bytes;
        while self.resident() > bytes && self.len() > 0 {
            self.evict(evicted);
        }
        while self.a.bytes(GHOST) > bytes - self.small_target() {
            let Some(g) = self.a.back(GHOST) else { break };
            self.a.remove(g);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_hit_wonders_leave_through_the_small_queue_and_ghost_hits_go_to_main() {
        // Ten unit tracks; the small queue holds one.
        let mut p = S3Fifo::new(10);
        for id in 1..=10 {
            p.access(id, 1);
        }
        assert!(p.access(1, 1).hit); // 1 is requested again while in S
        let d = p.access(11, 1);
        // Cache full: S (all ten) is over its 1-byte target; its tail is 1,
        // requested again, so it moves to M; then 2 leaves for the ghost.
        assert_eq!(d.evicted, vec![2]);
        assert_eq!(p.queues().1, vec![1]);
        // 2 comes back: a ghost hit, admitted straight into M.
        let d = p.access(2, 1);
        assert!(d.admit);
        assert_eq!(p.queues().1, vec![2, 1]);
        assert_eq!(d.evicted, vec![3]);
        assert!(p.used() <= 10);
    }

    #[test]
    fn main_queue_gives_requested_tracks_another_round() {
        let mut p = S3Fifo::new(10);
        // 1..10 fill S; 11..20 push them to the ghost queue (which keeps
        // 2..10); 2..10 come back through the ghost into M.
        for id in (1..=20).chain(2..=10) {
            p.access(id, 1);
        }
        assert_eq!(p.queues(), (vec![20], (2..=10).rev().collect()));
        assert!(p.access(3, 1).hit); // 3 gets a second chance in M
        assert_eq!(p.access(12, 1).evicted, vec![20]); // S is at its target
        assert_eq!(p.access(13, 1).evicted, vec![2]);
        // 3 is at the tail but was requested: it goes round again.
        assert_eq!(p.access(14, 1).evicted, vec![4]);
        assert!(p.contains(3));
    }
}
