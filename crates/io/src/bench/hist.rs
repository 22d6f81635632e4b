//! A log-linear latency histogram: exact below 128 ns, then 64 buckets per
//! power of two (under 1.6% error), fixed size, merged by adding counts.

const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS; // 64 buckets per octave
const LINEAR: u64 = SUB * 2; // values below 128 get their own bucket
const BUCKETS: usize = (LINEAR + (63 - SUB_BITS as u64) * SUB) as usize;

/// Counts of latencies in nanoseconds.
#[derive(Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum_ns: u128,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BUCKETS],
            total: 0,
            sum_ns: 0,
        }
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("total", &self.total)
            .field("mean_ns", &self.mean_ns())
            .finish()
    }
}

fn index(v: u64) -> usize {
    if v < LINEAR {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros() as u64; // >= SUB_BITS + 1
    let shift = msb - SUB_BITS as u64;
    let m = v >> shift; // in [SUB, 2*SUB)
    (LINEAR + (shift - 1) * SUB + (m - SUB)) as usize
}

/// The middle of bucket `i`'s range.
fn value(i: usize) -> u64 {
    let i = i as u64;
    if i < LINEAR {
        return i;
    }
    let k = i - LINEAR;
    let shift = k / SUB + 1;
    let m = k % SUB + SUB;
    (m << shift) + (1u64 << shift) / 2
}

impl Histogram {
    /// Adds one latency.
    pub fn record(&mut self, ns: u64) {
        self.counts[index(ns)] += 1;
        self.total += 1;
        self.sum_ns += ns as u128;
    }

    /// Adds all of `other`'s counts.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
        self.sum_ns += other.sum_ns;
    }

    /// Number of latencies recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// Mean in nanoseconds (0 when empty).
    pub fn mean_ns(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.total as f64
        }
    }

    /// The latency below which fraction `q` (0..=1) of the samples lie, in
    /// nanoseconds (0 when empty).
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return value(i);
            }
        }
        value(BUCKETS - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_close() {
        let mut last = 0;
        for v in (0..20_000_000u64)
            .step_by(997)
            .chain([u64::MAX / 2, u64::MAX])
        {
            let i = index(v);
            assert!(i >= last, "index goes backwards at {v}");
            assert!(i < BUCKETS);
            last = i;
            let mid = value(i) as f64;
            let err = (mid - v as f64).abs() / (v as f64).max(1.0);
            assert!(err <= 1.0 / SUB as f64, "value {v} maps to {mid}");
        }
    }

    #[test]
    fn quantiles_of_a_uniform_spread() {
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        let p50 = h.quantile_ns(0.5) as f64;
        let p99 = h.quantile_ns(0.99) as f64;
        assert!((p50 / 50_000_000.0 - 1.0).abs() < 0.02, "p50 {p50}");
        assert!((p99 / 99_000_000.0 - 1.0).abs() < 0.02, "p99 {p99}");
        assert!((h.mean_ns() / 50_000_500.0 - 1.0).abs() < 1e-9);
        let mut twice = h.clone();
        twice.merge(&h);
        assert_eq!(twice.count(), 200_000);
        assert_eq!(twice.quantile_ns(0.5), h.quantile_ns(0.5));
    }

    #[test]
    fn empty_histogram_reports_zero() {
        let h = Histogram::default();
        assert_eq!(h.quantile_ns(0.99), 0);
        assert_eq!(h.mean_ns(), 0.0);
    }
}
