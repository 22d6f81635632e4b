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
    /// The listening history: plays of the time before the trace, oldest
    /// first, drawn from the same popularity as it stood then (synthetic
    /// traces with [`Synthetic::history`] only). Policies hear of them as a
    /// server replays its listens at start; they are not requests and are
    /// not counted in any ratio.
    pub history: Vec<u32>,
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
    /// Plays of listening history before the trace (0: none, a cold start).
    pub history: usize,
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
    // Drawn apart, so a trace is the same with or without a history.
    let mut hrng = SmallRng::seed_from_u64(derive_seed(p.seed, "stationary-history", p.exponent));
    let history = (0..p.history)
        .map(|_| order[draw_rank(&cdf, p.tracks, &mut hrng)])
        .collect();
    Trace {
        workload: "stationary".into(),
        exponent: Some(p.exponent),
        ids,
        sizes,
        sent: None,
        popularity: Some(popularity),
        history,
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
    let history = shifting_history(&p, &live, &cdf);
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
        history,
    }
}

/// The plays before a shifting trace: the back catalogue as it stood at
/// the start, walked backwards epoch by epoch (the same random walk, whose
/// steps are as likely backwards as forwards), `p.history` plays in
/// epochs as long as the trace's, oldest first. New releases have none.
fn shifting_history(p: &Synthetic, start: &[(u32, f64, f64)], cdf: &[f64]) -> Vec<u32> {
    if p.history == 0 || start.is_empty() {
        return Vec::new();
    }
    let mut rng = SmallRng::seed_from_u64(derive_seed(p.seed, "shifting-history", p.exponent));
    let per_epoch = (p.requests / EPOCHS.min(p.requests.max(1))).max(1);
    let mut live: Vec<(u32, f64)> = start.iter().map(|&(t, s, _)| (t, s)).collect();
    let n = live.len();
    // Newest epoch first; reversed at the end.
    let mut epochs: Vec<Vec<u32>> = Vec::new();
    let mut left = p.history;
    while left > 0 {
        for (_, score) in &mut live {
            *score += DRIFT * normal(&mut rng);
        }
        live.sort_unstable_by(|a, b| b.1.total_cmp(&a.1));
        let k = per_epoch.min(left);
        epochs.push(
            (0..k)
                .map(|_| live[draw_rank(cdf, n, &mut rng)].0)
                .collect(),
        );
        left -= k;
    }
    epochs.into_iter().rev().flatten().collect()
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
            history: 0,
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
    fn a_history_comes_from_the_same_popularity_and_leaves_the_trace_alone() {
        let p = Synthetic {
            tracks: 1000,
            requests: 100_000,
            exponent: 1.0,
            seed: 3,
            history: 0,
        };
        let plain = stationary(p);
        let with = stationary(Synthetic {
            history: 50_000,
            ..p
        });
        assert!(plain.history.is_empty());
        assert_eq!(with.ids, plain.ids, "the history changed the trace");
        assert_eq!(with.history.len(), 50_000);
        // The history's most played track is the trace's, with its share.
        let mut h = vec![0u32; 1000];
        for &id in &with.history {
            h[id as usize] += 1;
        }
        let c = plain.counts();
        let top_trace = (0..1000).max_by_key(|&i| c[i]).unwrap_or(0);
        let top_history = (0..1000).max_by_key(|&i| h[i]).unwrap_or(0);
        assert_eq!(top_trace, top_history);
        let share = f64::from(h[top_history]) / 50_000.0;
        assert!((share - 0.1336).abs() < 0.006, "{share}");

        // Shifting: the back catalogue only (releases come out during the
        // run), and what was popular just before the run is still played
        // at its start far more than the releases not yet out.
        let p = Synthetic {
            tracks: 10_000,
            requests: 400_000,
            exponent: 1.0,
            seed: 5,
            history: 80_000,
        };
        let t = shifting(p);
        assert_eq!(t.ids, shifting(Synthetic { history: 0, ..p }).ids);
        assert_eq!(t.history.len(), 80_000);
        let mut first = vec![usize::MAX; 10_000];
        for (i, &id) in t.ids.iter().enumerate() {
            if first[id as usize] == usize::MAX {
                first[id as usize] = i;
            }
        }
        let mut played = vec![false; 10_000];
        for &id in &t.history {
            played[id as usize] = true;
        }
        // Tracks first requested in the trace's second half and then
        // requested often are releases (the back catalogue's tail is
        // first requested late too, but rarely): hardly any has a history
        // play.
        let c = t.counts();
        let late: Vec<usize> = (0..10_000)
            .filter(|&i| first[i] != usize::MAX && first[i] > 200_000 && c[i] >= 20)
            .collect();
        assert!(late.len() > 50, "{} late hits", late.len());
        let late_played = late.iter().filter(|&&i| played[i]).count();
        assert!(
            late_played * 10 < late.len(),
            "{late_played} of {}",
            late.len()
        );
        // The history's 100 most played tracks take a large share of the
        // trace's first epoch.
        let mut h = vec![0u32; 10_000];
        for &id in &t.history {
            h[id as usize] += 1;
        }
        let mut by = (0..10_000).collect::<Vec<usize>>();
        by.sort_by_key(|&i| std::cmp::Reverse(h[i]));
        let top: std::collections::HashSet<usize> = by[..100].iter().copied().collect();
        let early = t.ids[..4_000]
            .iter()
            .filter(|&&id| top.contains(&(id as usize)))
            .count();
        assert!(early > 1_500, "{early} of 4,000");
    }

    #[test]
    fn shifting_releases_new_tracks_that_climb_then_fade() {
        let p = Synthetic {
            tracks: 10_000,
            requests: 400_000,
            exponent: 1.0,
            seed: 5,
            history: 0,
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
