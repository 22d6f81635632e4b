//! The Zipf popularity of a catalogue: the share of requests the `k` most
//! popular of `n` tracks receive, and the smallest such top `k` (the hot
//! set) whose share reaches a target hit ratio.
//!
//! Under Zipf's law with exponent `s` the track of rank `r` gets requests
//! in proportion to `r^-s`, so the top `k` get `H(k, s) / H(n, s)` of
//! them, `H` being the generalised harmonic number. [`harmonic`] sums the
//! first [`EXACT_TERMS`] terms and adds the Euler–Maclaurin estimate of
//! the rest, so a catalogue of a billion tracks costs as little as one of
//! a thousand.

use serde::Serialize;

/// Terms of the harmonic number summed one by one before the
/// Euler–Maclaurin tail takes over; beyond it the tail's error is below
/// 1e-12 of the sum for exponents up to 3.
pub const EXACT_TERMS: u64 = 1_000;

/// `H(n, s) = Σ_{r=1..n} r^-s`.
pub fn harmonic(n: u64, s: f64) -> f64 {
    let exact = n.min(EXACT_TERMS);
    let head: f64 = (1..=exact).map(|r| (r as f64).powf(-s)).sum();
    if n <= EXACT_TERMS {
        return head;
    }
    // Σ_{r=m+1..n} f(r) ≈ ∫_m^n f + (f(n) - f(m))/2 + (f'(n) - f'(m))/12,
    // with f(x) = x^-s and f'(x) = -s x^(-s-1).
    let (m, n) = (exact as f64, n as f64);
    let integral = if (s - 1.0).abs() < 1e-12 {
        (n / m).ln()
    } else {
        (n.powf(1.0 - s) - m.powf(1.0 - s)) / (1.0 - s)
    };
    let f = |x: f64| x.powf(-s);
    let df = |x: f64| -s * x.powf(-s - 1.0);
    head + integral + (f(n) - f(m)) / 2.0 + (df(n) - df(m)) / 12.0
}

/// The share of requests that the `k` most popular of `n` tracks receive.
pub fn top_share(k: u64, n: u64, s: f64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    (harmonic(k.min(n), s) / harmonic(n, s)).min(1.0)
}

/// The smallest set of most popular tracks that serves a target share of
/// the requests.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HotSet {
    /// How many tracks: the top `tracks` by popularity.
    pub tracks: u64,
    /// The share of requests they receive (at least the target).
    pub hit_ratio: f64,
}

/// The smallest `k` whose top-`k` share reaches `target` (in `[0, 1]`),
/// found by bisection: the share grows with `k`.
pub fn hot_set(n: u64, s: f64, target: f64) -> HotSet {
    let total = harmonic(n, s);
    let reaches = |k: u64| harmonic(k, s) >= target * total;
    let (mut lo, mut hi) = (0u64, n);
    // Invariant: `hi` reaches the target; `lo` does not (or is 0).
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if reaches(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let k = if lo == 0 && reaches(0) { 0 } else { hi };
    HotSet {
        tracks: k,
        hit_ratio: top_share(k, n, s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(n: u64, s: f64) -> f64 {
        (1..=n).map(|r| (r as f64).powf(-s)).sum()
    }

    #[test]
    fn harmonic_tail_estimate_matches_the_exact_sum() {
        for s in [0.0, 0.5, 0.8, 1.0, 1.2, 2.0] {
            for n in [1, 999, 1_000, 1_001, 54_321, 300_000] {
                let (a, b) = (harmonic(n, s), exact(n, s));
                assert!((a - b).abs() / b < 1e-12, "s={s} n={n}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn hot_set_is_the_smallest_top_k_reaching_the_target() {
        for (n, s, t) in [
            (10_000, 0.8, 0.95),
            (1_000_000, 1.0, 0.9),
            (5_000, 1.2, 0.5),
        ] {
            let h = hot_set(n, s, t);
            assert!(h.hit_ratio >= t, "{h:?}");
            assert!(
                top_share(h.tracks - 1, n, s) < t,
                "{h:?} is not the smallest"
            );
        }
    }

    #[test]
    fn uniform_popularity_needs_the_target_share_of_the_catalogue() {
        assert_eq!(hot_set(1_000, 0.0, 0.95).tracks, 950);
        assert_eq!(hot_set(1_000, 0.0, 1.0).tracks, 1_000);
        assert_eq!(hot_set(1_000, 0.8, 0.0).tracks, 0);
    }

    #[test]
    fn more_skew_needs_a_smaller_hot_set() {
        let n = 2_000_000;
        let sizes: Vec<u64> = [0.6, 0.8, 1.0, 1.2]
            .iter()
            .map(|&s| hot_set(n, s, 0.95).tracks)
            .collect();
        assert!(sizes.windows(2).all(|w| w[1] < w[0]), "{sizes:?}");
    }
}
