//! Belady's MIN, the offline limit: it knows when each track is requested
//! next. On a miss the track is admitted only if there is room once the
//! hot tracks requested later than it (or never) are evicted, furthest
//! first; a hot track requested never again leaves at once.
//!
//! With equal sizes this is optimal for the hit ratio (MIN with bypass).
//! With a byte budget the exact optimum is NP-hard; evicting by furthest
//! next request is the usual approximation. Per byte held, a track serves
//! its size once per request, so "furthest next request" is the natural
//! rule for the byte hit ratio; it is a very good bound, not a proven one.

use std::collections::BTreeSet;

use super::idmap::IdMap;
use super::{Outcome, Policy};

const NEVER: u32 = u32::MAX;

/// For each position of a trace, the position of the next request of the
/// same track (`u32::MAX`: never).
pub fn next_uses(trace: &[u32]) -> Vec<u32> {
    let mut next = vec![NEVER; trace.len()];
    let max = trace.iter().copied().max().map_or(0, |m| m as usize + 1);
    let mut last = vec![NEVER; max];
    for (pos, &id) in trace.iter().enumerate().rev() {
        next[pos] = last[id as usize];
        last[id as usize] = pos as u32;
    }
    next
}

/// Belady's MIN over a known trace.
#[derive(Debug)]
pub struct Belady<'a> {
    cap: u64,
    used: u64,
    next: &'a [u32],
    pos: usize,
    /// Hot tracks: next request, size.
    hot: IdMap<(u32, u64)>,
    by_next: BTreeSet<(u32, u64)>,
    victims: Vec<(u32, u64)>,
}

impl<'a> Belady<'a> {
    /// `next` is [`next_uses`] of the trace the requests will follow.
    pub fn new(capacity: u64, next: &'a [u32]) -> Self {
        Belady {
            cap: capacity,
            used: 0,
            next,
            pos: 0,
            hot: IdMap::default(),
            by_next: BTreeSet::new(),
            victims: Vec::new(),
        }
    }
}

impl Policy for Belady<'_> {
    fn name(&self) -> &'static str {
        "belady"
    }
    fn capacity(&self) -> u64 {
        self.cap
    }
    fn used(&self) -> u64 {
        self.used
    }
    fn len(&self) -> usize {
        self.hot.len()
    }
    fn contains(&self, id: u64) -> bool {
        self.hot.contains_key(&id)
    }

    /// Requests must follow the trace given to [`Belady::new`].
    fn access_into(&mut self, id: u64, size: u64, evicted: &mut Vec<u64>) -> Outcome {
        let next = self.next.get(self.pos).copied().unwrap_or(NEVER);
        self.pos += 1;
        if let Some(&(old, sz)) = self.hot.get(&id) {
            self.by_next.remove(&(old, id));
            if next == NEVER {
                self.hot.remove(&id);
                self.used -= sz;
                evicted.push(id);
            } else {
                self.hot.insert(id, (next, sz));
                self.by_next.insert((next, id));
            }
            return Outcome {
                hit: true,
                admit: false,
            };
        }
        if next == NEVER || size > self.cap {
            return Outcome::default();
        }
        self.victims.clear();
        let mut free = self.cap - self.used;
        for &(n, v) in self.by_next.iter().rev() {
            if free >= size || n <= next {
                break;
            }
            free += self.hot[&v].1;
            self.victims.push((n, v));
        }
        if free < size {
            return Outcome::default();
        }
        for &(n, v) in &self.victims {
            self.by_next.remove(&(n, v));
            if let Some((_, sz)) = self.hot.remove(&v) {
                self.used -= sz;
            }
            evicted.push(v);
        }
        self.hot.insert(id, (next, size));
        self.by_next.insert((next, id));
        self.used += size;
        Outcome {
            hit: false,
            admit: true,
        }
    }

    fn remove(&mut self, id: u64) -> bool {
        match self.hot.remove(&id) {
            Some((n, sz)) => {
                self.by_next.remove(&(n, id));
                self.used -= sz;
                true
            }
            None => false,
        }
    }

    fn set_capacity(&mut self, bytes: u64, evicted: &mut Vec<u64>) {
        self.cap = bytes;
        while self.used > bytes {
            let Some((n, v)) = self.by_next.iter().next_back().copied() else {
                break;
            };
            self.by_next.remove(&(n, v));
            if let Some((_, sz)) = self.hot.remove(&v) {
                self.used -= sz;
            }
            evicted.push(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_the_track_requested_furthest_in_the_future() {
        let trace = [1u32, 2, 3, 1, 2, 4, 1, 2, 3];
        let next = next_uses(&trace);
        assert_eq!(next[0], 3);
        assert_eq!(next[8], NEVER);
        let mut p = Belady::new(2, &next);
        let hits: Vec<bool> = trace.iter().map(|&id| p.access(id as u64, 1).hit).collect();
        // 3 is bypassed (needed after 1 and 2), 4 too; 1 and 2 always hit.
        assert_eq!(
            hits,
            [false, false, false, true, true, false, true, true, false]
        );
    }
}
