//! Synthetic catalogues and request traces.
//!
//! - Track sizes are lognormal (median 6.5 MB, σ = 0.35 in log space, so
//!   95 % fall between 3.2 and 13 MB), clamped to 1–40 MB, independent of
//!   popularity.
//! - **Stationary**: every request draws a popularity rank from Zipf(s)
//!   over the catalogue; ranks map to tracks through a fixed random
//!   permutation.
//! - **Shifting**: 95 % of the catalogue is out at the start, the other 5 %
//!   are new releases that come out evenly over the run. The run is cut
//!   into epochs (100 by default); in each, the released tracks are ranked
//!   by a score and requests draw ranks from Zipf(s) over that order. A new
//!   release enters with a score placing it log-uniformly among the top
//!   2,000, loses ln 2 every 4 epochs (its rank doubles) until it reaches a
//!   long-term level drawn like a back-catalogue track's (a uniform rank), and then joins
//!   the back catalogue, whose scores take a random walk (σ = 0.08 a
//!   epoch): old favourites fade as others rise.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// One simulated (or replayed) request stream.
#[derive(Debug, Clone)]
pub struct Trace {
    /// "stationary", "shifting" or "replay".
    pub workload: String,
    /// The Zipf exponent of a synthetic trace.
    pub exponent: Option<f64>,
    /// Requests, as dense track numbers (indexes into `sizes`).
    pub ids: Vec<u32>,
    /// Size of each track in bytes.
    pub sizes: Vec<u64>,
    /// Bytes sent per request, where it differs from the track's size
    /// (replayed logs); `None`: every request streams the whole track.
    pub sent: Option<Vec<u64>>,
    /// The true expected number of requests of each track over the whole
    /// trace (synthetic traces only): what the static oracle ranks by.
    pub popularity: Option<Vec<f64>>,
}

impl Trace {
    /// Bytes of the catalogue: every track of a synthetic catalogue, every
    /// track requested at least once in a replay.
    pub fn catalogue_bytes(&self) -> u64 {
        self.sizes.iter().sum()
    }

    /// Mean track size.
    pub fn mean_size(&self) -> u64 {
        self.catalogue_bytes() / self.sizes.len().max(1) as u64
    }

    /// Requests per track.
    pub fn counts(&self) -> Vec<u64> {
        let mut c = vec![0u64; self.sizes.len()];
        for &id in &self.ids {
            c[id as usize] += 1;
        }
        c
    }
}

/// Parameters of a synthetic trace.
#[derive(Debug, Clone, Copy)]
pub struct Synthetic {
    pub tracks: usize,
    pub requests: usize,
    pub exponent: f64,
    pub seed: u64,
}

/// A seed derived from the run's seed and what is being generated, so
/// each trace is reproducible on its own.
pub(crate) fn derive_seed(seed: u64, what: &str, exponent: f64) -> u64 {
    let mut h = seed ^ 0x9E37_79B9_7F4A_7C15;
    for b in what.bytes().chain(exponent.to_bits().to_le_bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3);
    }
    h
}

/// Lognormal track sizes (see the module documentation).
pub fn track_sizes(tracks: usize, seed: u64) -> Vec<u64> {
    let mut rng = SmallRng::seed_from_u64(derive_seed(seed, "sizes", 0.0));
    let median = 6.5e6f64;
    (0..tracks)
        .map(|_| {
            let x = median * (0.35 * normal(&mut rng)).exp();
            x.clamp(1e6, 40e6) as u64
        })
        .collect()
}

fn normal(rng: &mut SmallRng) -> f64 {
    // Box–Muller.
    let u1: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Cumulative Zipf weights: `cdf[r] = Σ_{i ≤ r} 1/(i+1)^s`.
fn zipf_cdf(n: usize, s: f64) -> Vec<f64> {
    let mut acc = 0.0;
    (0..n)
        .map(|r| {
            acc += ((r + 1) as f64).powf(-s);
            acc
        })
        .collect()
}

/// A rank in `0..n` drawn from Zipf over the first `n` ranks.
fn draw_rank(cdf: &[f64], n: usize, rng: &mut SmallRng) -> usize {
    let u = rng.gen::<f64>() * cdf[n - 1];
    cdf[..n].partition_point(|&c| c < u).min(n - 1)
}

fn shuffled(n: usize, rng: &mut SmallRng) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        let j = rng.gen_range(0..=i);
        v.swap(i, j);
    }
    v
}

/// Stationary Zipf requests.
pub fn stationary(p: Synthetic) -> Trace {
    let sizes = track_sizes(p.tracks, p.seed);
    let mut rng = SmallRng::seed_from_u64(derive_seed(p.seed, "stationary", p.exponent));
    let order = shuffled(p.tracks, &mut rng);
    let cdf = zipf_cdf(p.tracks, p.exponent);
    let ids = (0..p.requests)
        .map(|_| order[draw_rank(&cdf, p.tracks, &mut rng)])
        .collect();
    let mut popularity = vec![0.0; p.tracks];
    let total = cdf[p.tracks - 1];
    let mut prev = 0.0;
    for (r, &c) in cdf.iter().enumerate() {
        popularity[order[r] as usize] = (c - prev) / total * p.requests as f64;
        prev = c;
    }
    Trace {
        workload: "stationary".into(),
        exponent: Some(p.exponent),
        ids,
        sizes,
        sent: None,
        popularity: Some(popularity),
    }
}

/// Share of the catalogue released during the run.
const NEW_SHARE: f64 = 0.05;
/// Epochs of the shifting workload.
const EPOCHS: usize = 100;
/// New releases enter log-uniformly among this many top ranks.
const ENTRY_TOP: f64 = 2000.0;
/// A new release's rank doubles every this many epochs.
const RELEASE_HALVING_EPOCHS: f64 = 4.0;
/// The back catalogue's random walk per epoch.
const DRIFT: f64 = 0.08;

/// Requests whose popularity shifts: new releases rising and fading, the
/// back catalogue drifting.
pub fn shifting(p: Synthetic) -> Trace {
    let sizes = track_sizes(p.tracks, p.seed);
    let mut rng = SmallRng::seed_from_u64(derive_seed(p.seed, "shifting", p.exponent));
    let order = shuffled(p.tracks, &mut rng);
    let n_new = ((p.tracks as f64 * NEW_SHARE) as usize).min(p.tracks.saturating_sub(1));
    let n_old = p.tracks - n_new;
    let cdf = zipf_cdf(p.tracks, p.exponent);
    // (track, score, floor): floor is NaN once a release is back catalogue.
    let mut live: Vec<(u32, f64, f64)> = order[..n_old]
        .iter()
        .enumerate()
        .map(|(r, &t)| (t, -((r + 1) as f64).ln(), f64::NAN))
        .collect();
    let mut upcoming = order[n_old..].iter().copied();
    let epochs = EPOCHS.min(p.requests.max(1));
    let fade = std::f64::consts::LN_2 / RELEASE_HALVING_EPOCHS;
    let mut ids = Vec::with_capacity(p.requests);
    let mut released = 0usize;
    let mut popularity = vec![0.0; p.tracks];
    for e in 0..epochs {
        // Releases due by the end of this epoch.
        let due = n_new * (e + 1) / epochs;
        for t in upcoming.by_ref().take(due - released) {
            // Scores are minus the log of a rank.
            let entry = -rng.gen::<f64>() * ENTRY_TOP.ln();
            let floor = -rng.gen_range(1.0..p.tracks as f64).ln();
            live.push((t, entry, floor.min(entry)));
        }
        released = due;
        if e > 0 {
            for (_, score, floor) in &mut live {
                if floor.is_nan() {
                    *score += DRIFT * normal(&mut rng);
                } else {
                    *score -= fade;
                    if *score <= *floor {
                        *score = *floor;
                        *floor = f64::NAN;
                    }
                }
            }
        }
        live.sort_unstable_by(|a, b| b.1.total_cmp(&a.1));
        let n = live.len();
        let requests = p.requests * (e + 1) / epochs - p.requests * e / epochs;
        let total = cdf[n - 1];
        let mut prev = 0.0;
        for (r, &c) in cdf[..n].iter().enumerate() {
            popularity[live[r].0 as usize] += (c - prev) / total * requests as f64;
            prev = c;
        }
        for _ in 0..requests {
            ids.push(live[draw_rank(&cdf, n, &mut rng)].0);
        }
    }
    Trace {
        workload: "shifting".into(),
        exponent: Some(p.exponent),
        ids,
        sizes,
        sent: None,
        popularity: Some(popularity),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_mostly_between_three_and_thirteen_megabytes() {
        let s = track_sizes(10_000, 1);
        let inside = s
            .iter()
            .filter(|&&b| (3_000_000..13_000_000).contains(&b))
            .count();
        assert!(inside > 9_300, "{inside}");
        let mean = s.iter().sum::<u64>() / 10_000;
        assert!((6_500_000..7_500_000).contains(&mean), "{mean}");
    }

    #[test]
    fn stationary_zipf_gives_the_top_rank_its_share() {
        let p = Synthetic {
            tracks: 1000,
            requests: 200_000,
            exponent: 1.0,
            seed: 3,
        };
        let t = stationary(p);
        let mut c = t.counts();
        c.sort_unstable_by(|a, b| b.cmp(a));
        // H(1000) ≈ 7.485: rank 1 gets 13.4 %, rank 10 1.34 %.
        let top = c[0] as f64 / 200_000.0;
        assert!((top - 0.1336).abs() < 0.005, "{top}");
        let tenth = c[9] as f64 / 200_000.0;
        assert!((tenth - 0.01336).abs() < 0.002, "{tenth}");
    }

    #[test]
    fn shifting_releases_new_tracks_that_climb_then_fade() {
        let p = Synthetic {
            tracks: 10_000,
            requests: 400_000,
            exponent: 1.0,
            seed: 5,
        };
        let t = shifting(p);
        assert_eq!(t.ids.len(), 400_000);
        // Requests per quarter of the run of the tracks first requested in
        // the second quarter: new releases among them peak in the second
        // quarter and fade later.
        let q = 100_000;
        let mut first = vec![usize::MAX; 10_000];
        for (i, &id) in t.ids.iter().enumerate() {
            if first[id as usize] == usize::MAX {
                first[id as usize] = i;
            }
        }
        let mut per_quarter = [0u64; 4];
        for (i, &id) in t.ids.iter().enumerate() {
            let f = first[id as usize];
            if (q..2 * q).contains(&f) {
                per_quarter[i / q] += 1;
            }
        }
        assert!(per_quarter[1] > 2 * per_quarter[3], "{per_quarter:?}");
        // Not stationary: the top tracks of the first and last quarter
        // differ.
        let top = |range: std::ops::Range<usize>| {
            let mut c = vec![0u32; 10_000];
            for &id in &t.ids[range] {
                c[id as usize] += 1;
            }
            let mut v: Vec<u32> = (0..10_000).collect();
            v.sort_by_key(|&i| std::cmp::Reverse(c[i as usize]));
            v.truncate(50);
            v.sort_unstable();
            v
        };
        let (a, b) = (top(0..q), top(3 * q..4 * q));
        let common = a.iter().filter(|x| b.binary_search(x).is_ok()).count();
        assert!(common < 35, "{common} of the top 50 unchanged");
    }
}
