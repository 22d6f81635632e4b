//! Admission and eviction policies for the hot tier, with a byte budget.
//!
//! Every policy answers one question per stream request: is this track hot
//! (a hit), and if not, should it become hot (admit), and which hot tracks
//! must leave to make room (evicted)? The runtime turns an admission into a
//! promotion (copy to the hot folder) and each eviction into a demotion
//! (delete the hot copy; the cold copies stay). Sizes are bytes; a policy
//! never holds more bytes than its capacity.
//!
//! Policies: [`Lru`], [`Arc`], [`S3Fifo`], [`WTinyLfu`] (the baselines),
//! [`Spindle`] (ours: exact decayed frequencies at several time scales,
//! size-aware admission, an adaptive window), [`StaticSet`] (an oracle
//! that knows the popularity in advance) and [`Belady`] (knows the future:
//! the limit). [`Pinned`] wraps any policy with pins.

mod arc;
mod belady;
mod idmap;
mod list;
mod lru;
mod pinned;
mod s3fifo;
mod sketch;
mod spindle;
mod static_set;
mod wtinylfu;

pub use arc::Arc;
pub use belady::{next_uses, Belady};
pub use idmap::IdMap;
pub use lru::Lru;
pub use pinned::Pinned;
pub use s3fifo::S3Fifo;
pub use sketch::FrequencySketch;
pub use spindle::{FreshState, Spindle, SpindleConfig, SpindleState};
pub use static_set::StaticSet;
pub use wtinylfu::WTinyLfu;

/// What a policy decided about one request, without the evictions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Outcome {
    /// The track was hot: serve it from the hot tier.
    pub hit: bool,
    /// The track was not hot and is now: copy it to the hot tier.
    pub admit: bool,
}

/// What a policy decided about one request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Decision {
    /// The track was hot: serve it from the hot tier.
    pub hit: bool,
    /// The track was not hot and is now: copy it to the hot tier.
    pub admit: bool,
    /// Tracks that are no longer hot: delete their hot copies.
    pub evicted: Vec<u64>,
}

/// A hot-tier policy over tracks identified by `u64` ids, with a byte
/// budget.
///
/// A track's size must stay the same while the policy knows it; when a
/// file changes, [`Policy::remove`] it first.
pub trait Policy {
    /// A short name for tables ("lru", "w-tinylfu", …).
    fn name(&self) -> &'static str;
    /// The byte budget.
    fn capacity(&self) -> u64;
    /// Bytes of the tracks that are hot now (never above the capacity).
    fn used(&self) -> u64;
    /// How many tracks are hot now.
    fn len(&self) -> usize;
    /// Whether no track is hot.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Whether `id` is hot.
    fn contains(&self, id: u64) -> bool;

    /// Records a stream request of track `id` (`size` bytes); pushes the
    /// ids that stop being hot onto `evicted`.
    fn access_into(&mut self, id: u64, size: u64, evicted: &mut Vec<u64>) -> Outcome;

    /// [`Policy::access_into`] with the evictions in the returned value.
    fn access(&mut self, id: u64, size: u64) -> Decision {
        let mut evicted = Vec::new();
        let o = self.access_into(id, size, &mut evicted);
        Decision {
            hit: o.hit,
            admit: o.admit,
            evicted,
        }
    }

    /// Records a listen from the history (a scrobble, an imported play)
    /// with a weight, without a stream request: it raises the track's
    /// popularity but moves nothing. Policies without a notion of
    /// popularity ignore it.
    fn record_listen(&mut self, _id: u64, _weight: f64) {}

    /// Fills the budget's free bytes, without a request, with the tracks
    /// the policy counts most popular (after the listening history has
    /// been replayed into an empty hot tier: space left empty serves
    /// nothing). Only free bytes: nothing hot is displaced. `size_of`
    /// gives a track's size (`None`: leave it out). Pushes the ids made
    /// hot onto `admitted`. Policies without counts of their own do
    /// nothing.
    fn prefill(&mut self, _size_of: &mut dyn FnMut(u64) -> Option<u64>, _admitted: &mut Vec<u64>) {}

    /// Forgets `id` (the file changed or left the library). Returns whether
    /// it was hot, i.e. whether its hot copy must go.
    fn remove(&mut self, id: u64) -> bool;

    /// Changes the byte budget, evicting as needed.
    fn set_capacity(&mut self, bytes: u64, evicted: &mut Vec<u64>);
}

impl<P: Policy + ?Sized> Policy for Box<P> {
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn capacity(&self) -> u64 {
        (**self).capacity()
    }
    fn used(&self) -> u64 {
        (**self).used()
    }
    fn len(&self) -> usize {
        (**self).len()
    }
    fn contains(&self, id: u64) -> bool {
        (**self).contains(id)
    }
    fn access_into(&mut self, id: u64, size: u64, evicted: &mut Vec<u64>) -> Outcome {
        (**self).access_into(id, size, evicted)
    }
    fn record_listen(&mut self, id: u64, weight: f64) {
        (**self).record_listen(id, weight)
    }
    fn prefill(&mut self, size_of: &mut dyn FnMut(u64) -> Option<u64>, admitted: &mut Vec<u64>) {
        (**self).prefill(size_of, admitted)
    }
    fn remove(&mut self, id: u64) -> bool {
        (**self).remove(id)
    }
    fn set_capacity(&mut self, bytes: u64, evicted: &mut Vec<u64>) {
        (**self).set_capacity(bytes, evicted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reproducible random trace: (id, size) with skewed ids.
    fn trace(seed: u64, len: usize, ids: u64, sized: bool) -> Vec<(u64, u64)> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        (0..len)
            .map(|_| {
                // Two draws, keep the smaller: skewed towards low ids.
                let id = (next() % ids).min(next() % ids);
                let size = if sized { 1 + (id * 7919) % 9 } else { 1 };
                (id, size)
            })
            .collect()
    }

    fn online(cap: u64) -> Vec<Box<dyn Policy>> {
        vec![
            Box::new(Lru::new(cap)),
            Box::new(Arc::new(cap)),
            Box::new(S3Fifo::new(cap)),
            Box::new(WTinyLfu::new(cap, cap as usize)),
            Box::new(Spindle::new(cap)),
            Box::new(Spindle::with_config(
                cap,
                SpindleConfig {
                    window: 0.05,
                    adapt_window: true,
                    ..SpindleConfig::default()
                },
            )),
            Box::new(Pinned::new(Spindle::new(cap))),
        ]
    }

    /// Runs a policy, checking the budget and that `contains` agrees with
    /// the decisions; returns (hits, hit bytes).
    fn run(p: &mut dyn Policy, t: &[(u64, u64)], seed: u64) -> (u64, u64) {
        let cap = p.capacity();
        let (mut hits, mut bytes) = (0, 0);
        for &(id, size) in t {
            let d = p.access(id, size);
            if d.hit {
                hits += 1;
                bytes += size;
            }
            assert!(p.used() <= cap, "{} over budget (seed {seed})", p.name());
            // Belady drops a track on its last request.
            let hot = (d.hit || d.admit) && !d.evicted.contains(&id);
            assert_eq!(p.contains(id), hot, "{} id {id} (seed {seed})", p.name());
            for e in &d.evicted {
                assert!(
                    *e == id || !p.contains(*e),
                    "{} evicted {e} but holds it",
                    p.name()
                );
            }
        }
        (hits, bytes)
    }

    #[test]
    fn no_policy_ever_exceeds_its_byte_budget() {
        for seed in 1..=6 {
            let t = trace(seed, 20_000, 400, true);
            for cap in [9, 40, 150] {
                for mut p in online(cap) {
                    run(&mut *p, &t, seed);
                }
            }
        }
    }

    #[test]
    fn belady_beats_every_online_policy_on_random_traces() {
        for seed in 1..=8 {
            let t = trace(seed, 10_000, 300, false);
            let ids: Vec<u32> = t.iter().map(|&(id, _)| id as u32).collect();
            let next = next_uses(&ids);
            for cap in [5, 20, 80] {
                let (best, _) = run(&mut Belady::new(cap, &next), &t, seed);
                for mut p in online(cap) {
                    let (hits, _) = run(&mut *p, &t, seed);
                    assert!(
                        best >= hits,
                        "seed {seed} cap {cap}: belady {best} < {} {hits}",
                        p.name()
                    );
                }
            }
        }
    }

    #[test]
    fn spindle_is_ahead_of_lru_on_a_skewed_trace() {
        let t = trace(3, 50_000, 2000, true);
        let (lru, _) = run(&mut Lru::new(200), &t, 3);
        let (sp, _) = run(&mut Spindle::new(200), &t, 3);
        assert!(sp > lru, "spindle {sp} vs lru {lru}");
    }
}
