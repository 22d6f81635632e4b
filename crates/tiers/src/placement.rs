//! The seam between the runtime and the hot-tier policy: [`HotPolicy`]
//! answers, per stream request, whether to promote the track and which
//! hot tracks to demote. Any [`crate::policy::Policy`] (Spindle's own,
//! W-TinyLFU, …) is one through [`FromPolicy`]; the server runs
//! [`crate::policy::Spindle`]. [`DecayedLfu`] is a small stand-in for
//! tests.
//!
//! Tracks are named by [`key_id`], the first eight bytes of the SHA-256
//! of their key, so policies keep `u64`s, not strings.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

/// A track key's policy id.
pub fn key_id(key: &str) -> u64 {
    let d = Sha256::digest(key.as_bytes());
    u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

/// What the runtime needs of a policy.
pub trait HotPolicy: Send {
    /// One stream request of track `id` (`size` bytes): (promote it?,
    /// ids to demote).
    fn access(&mut self, id: u64, size: u64) -> (bool, Vec<u64>);
    /// Whether `id` is hot in the policy's view.
    fn contains(&self, id: u64) -> bool;
    /// A play from the listening history (weight: how many), raising the
    /// track's popularity without a stream request.
    fn record_listen(&mut self, _id: u64, _weight: f64) {}
    /// Fills free hot bytes with the most popular tracks known without a
    /// request (see [`crate::policy::Policy::prefill`]); returns the ids
    /// to promote.
    fn prefill(&mut self, _size_of: &mut dyn FnMut(u64) -> Option<u64>) -> Vec<u64> {
        Vec::new()
    }
    /// Sets the bytes the policy may keep hot: the hot budget less what
    /// the pins hold. Returns the ids that no longer fit (to demote).
    fn set_budget(&mut self, bytes: u64) -> Vec<u64>;
    /// Forgets `id` as hot (it was pinned, so its bytes count as a pin's,
    /// not the policy's); its popularity may stay. Returns whether it was
    /// hot.
    fn remove(&mut self, id: u64) -> bool;
}

/// Any [`crate::policy::Policy`] (Spindle's, W-TinyLFU, …) as the
/// runtime's policy.
pub struct FromPolicy<P>(pub P);

impl<P: crate::policy::Policy + Send> HotPolicy for FromPolicy<P> {
    fn access(&mut self, id: u64, size: u64) -> (bool, Vec<u64>) {
        let d = self.0.access(id, size);
        (d.admit, d.evicted)
    }

    fn contains(&self, id: u64) -> bool {
        self.0.contains(id)
    }

    fn record_listen(&mut self, id: u64, weight: f64) {
        self.0.record_listen(id, weight);
    }

    fn prefill(&mut self, size_of: &mut dyn FnMut(u64) -> Option<u64>) -> Vec<u64> {
        let mut admitted = Vec::new();
        self.0.prefill(size_of, &mut admitted);
        admitted
    }

    fn set_budget(&mut self, bytes: u64) -> Vec<u64> {
        let mut evicted = Vec::new();
        self.0.set_capacity(bytes, &mut evicted);
        evicted
    }

    fn remove(&mut self, id: u64) -> bool {
        self.0.remove(id)
    }
}

/// A decayed-frequency LFU with a byte budget: a track is admitted when
/// it fits, or when its count beats that of every track it would push
/// out. Counts halve every `4 × residents` requests.
#[derive(Debug)]
pub struct DecayedLfu {
    budget: u64,
    used: u64,
    counts: HashMap<u64, u32>,
    hot: HashMap<u64, u64>,
    since_decay: u64,
}

impl DecayedLfu {
    pub fn new(budget: u64) -> DecayedLfu {
        DecayedLfu {
            budget,
            used: 0,
            counts: HashMap::new(),
            hot: HashMap::new(),
            since_decay: 0,
        }
    }
}

impl HotPolicy for DecayedLfu {
    fn access(&mut self, id: u64, size: u64) -> (bool, Vec<u64>) {
        self.since_decay += 1;
        if self.since_decay > 64.max(4 * self.hot.len() as u64) {
            self.since_decay = 0;
            self.counts.retain(|_, c| {
                *c /= 2;
                *c > 0
            });
        }
        let c = {
            let e = self.counts.entry(id).or_insert(0);
            *e = e.saturating_add(1);
            *e
        };
        if self.hot.contains_key(&id) || size > self.budget {
            return (false, Vec::new());
        }
        let mut victims: Vec<(u32, u64, u64)> = self
            .hot
            .iter()
            .map(|(&v, &s)| (self.counts.get(&v).copied().unwrap_or(0), v, s))
            .collect();
        victims.sort_unstable();
        let mut free = self.budget - self.used;
        let mut out = Vec::new();
        for (vc, v, s) in victims {
            if free >= size {
                break;
            }
            if vc >= c {
                return (false, Vec::new());
            }
            free += s;
            out.push(v);
        }
        if free < size {
            return (false, Vec::new());
        }
        for v in &out {
            if let Some(s) = self.hot.remove(v) {
                self.used -= s;
            }
        }
        self.hot.insert(id, size);
        self.used += size;
        (true, out)
    }

    fn contains(&self, id: u64) -> bool {
        self.hot.contains_key(&id)
    }

    fn set_budget(&mut self, bytes: u64) -> Vec<u64> {
        self.budget = bytes;
        let mut by_count: Vec<(u32, u64)> = self
            .hot
            .keys()
            .map(|&v| (self.counts.get(&v).copied().unwrap_or(0), v))
            .collect();
        by_count.sort_unstable();
        let mut out = Vec::new();
        for (_, v) in by_count {
            if self.used <= self.budget {
                break;
            }
            if let Some(s) = self.hot.remove(&v) {
                self.used -= s;
                out.push(v);
            }
        }
        out
    }

    fn remove(&mut self, id: u64) -> bool {
        match self.hot.remove(&id) {
            Some(s) => {
                self.used -= s;
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lfu_keeps_the_frequent_and_its_budget() {
        let mut p = DecayedLfu::new(100);
        assert_eq!(p.access(1, 60), (true, vec![]));
        assert_eq!(p.access(1, 60), (false, vec![]));
        // 2 does not beat 1's count of 2 yet.
        assert_eq!(p.access(2, 60), (false, vec![]));
        assert_eq!(p.access(2, 60), (false, vec![]));
        assert_eq!(p.access(2, 60), (true, vec![1]));
        assert!(p.contains(2) && !p.contains(1));
        assert_eq!(p.access(3, 500), (false, vec![]));
        assert!(p.used <= p.budget);
        assert_ne!(key_id("a"), key_id("b"));
        // A smaller budget (pins took bytes) pushes out the least counted.
        p.access(4, 30);
        assert!(p.contains(4));
        assert_eq!(p.set_budget(60), vec![4]);
        assert!(p.used == 60 && p.contains(2));
        assert!(p.remove(2) && !p.remove(2) && p.used == 0);
    }

    #[test]
    fn spindles_policy_drives_the_runtime_within_its_budget() {
        let mut p = FromPolicy(crate::policy::Spindle::new(100));
        let (admit, evicted) = p.access(1, 60);
        assert!(admit && evicted.is_empty());
        assert!(p.contains(1));
        for _ in 0..5 {
            p.access(2, 60);
        }
        p.record_listen(2, 10.0);
        // Never both: 120 bytes do not fit 100.
        assert!(!(p.contains(1) && p.contains(2)));
    }
}
