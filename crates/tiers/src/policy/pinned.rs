//! Pins: tracks that are hot whatever their popularity (`spindle tiers pin
//! 'rating>=4'`), in front of any policy. Pinned bytes come out of the
//! policy's budget; a pin that does not fit in the whole budget is refused.

use super::idmap::IdMap;
use super::{Outcome, Policy};

/// A policy with pins.
#[derive(Debug)]
pub struct Pinned<P> {
    inner: P,
    cap: u64,
    pins: IdMap<u64>,
    pinned_bytes: u64,
}

impl<P: Policy> Pinned<P> {
    /// Wraps `inner`; its capacity is the whole budget.
    pub fn new(inner: P) -> Self {
        Pinned {
            cap: inner.capacity(),
            inner,
            pins: IdMap::default(),
            pinned_bytes: 0,
        }
    }

    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// Bytes held by pins.
    pub fn pinned_bytes(&self) -> u64 {
        self.pinned_bytes
    }

    pub fn is_pinned(&self, id: u64) -> bool {
        self.pins.contains_key(&id)
    }

    /// Pins `id`. Returns false (and changes nothing) if the pins would no
    /// longer fit in the budget. Tracks the policy held are pushed onto
    /// `evicted` when the smaller remaining budget pushes them out; `id`
    /// itself must be copied to the hot tier unless it was hot already.
    pub fn pin(&mut self, id: u64, size: u64, evicted: &mut Vec<u64>) -> bool {
        if self.pins.contains_key(&id) {
            return true;
        }
        if self.pinned_bytes + size > self.cap {
            return false;
        }
        self.inner.remove(id);
        self.pins.insert(id, size);
        self.pinned_bytes += size;
        self.inner
            .set_capacity(self.cap - self.pinned_bytes, evicted);
        true
    }

    /// Unpins `id`: it is no longer hot (returns whether it was pinned); the
    /// policy may admit it again on its next request.
    pub fn unpin(&mut self, id: u64, evicted: &mut Vec<u64>) -> bool {
        let Some(size) = self.pins.remove(&id) else {
            return false;
        };
        self.pinned_bytes -= size;
        self.inner
            .set_capacity(self.cap - self.pinned_bytes, evicted);
        evicted.push(id);
        true
    }
}

impl<P: Policy> Policy for Pinned<P> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn capacity(&self) -> u64 {
        self.cap
    }
    fn used(&self) -> u64 {
        self.pinned_bytes + self.inner.used()
    }
    fn len(&self) -> usize {
        self.pins.len() + self.inner.len()
    }
    fn contains(&self, id: u64) -> bool {
        self.pins.contains_key(&id) || self.inner.contains(id)
    }

    fn access_into(&mut self, id: u64, size: u64, evicted: &mut Vec<u64>) -> Outcome {
        if self.pins.contains_key(&id) {
            // Still counts towards its popularity, for after an unpin.
            self.inner.record_listen(id, 1.0);
            return Outcome {
                hit: true,
                admit: false,
            };
        }
        self.inner.access_into(id, size, evicted)
    }

    fn record_listen(&mut self, id: u64, weight: f64) {
        self.inner.record_listen(id, weight)
    }

    /// Pinned tracks are hot already: the inner policy leaves them out.
    fn prefill(&mut self, size_of: &mut dyn FnMut(u64) -> Option<u64>, admitted: &mut Vec<u64>) {
        let pins = &self.pins;
        self.inner.prefill(
            &mut |id| {
                if pins.contains_key(&id) {
                    None
                } else {
                    size_of(id)
                }
            },
            admitted,
        )
    }

    fn remove(&mut self, id: u64) -> bool {
        if let Some(size) = self.pins.remove(&id) {
            self.pinned_bytes -= size;
            let mut ignored = Vec::new();
            self.inner
                .set_capacity(self.cap - self.pinned_bytes, &mut ignored);
            return true;
        }
        self.inner.remove(id)
    }

    fn set_capacity(&mut self, bytes: u64, evicted: &mut Vec<u64>) {
        self.cap = bytes;
        // Pins beyond the new budget are dropped, newest id first.
        if self.pinned_bytes > bytes {
            let mut ids: Vec<u64> = self.pins.keys().copied().collect();
            ids.sort_unstable();
            while self.pinned_bytes > bytes {
                let Some(id) = ids.pop() else { break };
                self.pinned_bytes -= self.pins.remove(&id).unwrap_or(0);
                evicted.push(id);
            }
        }
        self.inner.set_capacity(bytes - self.pinned_bytes, evicted);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Lru, Spindle};
    use super::*;

    #[test]
    fn pinned_tracks_stay_hot_and_their_bytes_come_out_of_the_budget() {
        let mut p = Pinned::new(Lru::new(10));
        let mut ev = Vec::new();
        assert!(p.pin(100, 4, &mut ev));
        assert!(!p.pin(101, 7, &mut ev), "4 + 7 > 10: refused");
        assert!(p.access(100, 4).hit);
        for id in 0..20 {
            let d = p.access(id, 2);
            assert!(!d.evicted.contains(&100));
            assert!(p.used() <= 10);
        }
        assert!(p.contains(100));
        assert_eq!(p.inner().used(), 6, "three 2-byte tracks beside the pin");
        assert!(p.unpin(100, &mut ev));
        assert!(ev.contains(&100) && !p.contains(100));
    }

    #[test]
    fn pinning_a_hot_track_shrinks_the_rest() {
        let mut p = Pinned::new(Spindle::new(10));
        for id in 0..5 {
            p.access(id, 2);
        }
        let mut ev = Vec::new();
        assert!(p.pin(0, 2, &mut ev));
        assert!(p.pin(50, 4, &mut ev));
        assert!(p.used() <= 10);
        assert!(p.contains(0) && p.contains(50));
        assert_eq!(ev.len(), 2, "{ev:?}");
    }
}
