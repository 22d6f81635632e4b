//! Spindle's hot-tier policy.
//!
//! W-TinyLFU's idea (admit a track only if it is requested more often than
//! the tracks it would displace), changed where a music server's hot tier
//! differs from a general-purpose cache:
//!
//! 1. **Exact decayed counts instead of a sketch.** A library has a bounded
//!    catalogue (100,000 tracks cost about 9 MB here), so every track
//!    requested in the recent past gets its own counters, exact and not
//!    capped at 15. A request adds 1 (a listen from the history adds its
//!    weight) to counters that halve every H requests, stored as
//!    `Σ w·2^(t/H)` against a moving reference so an update is one
//!    multiply-add and comparing two tracks needs no decay step.
//! 2. **Several memories, chosen by shadow hits.** Each track is counted at
//!    six half-lives, 8,192 to 8,388,608 requests. The rankings on offer
//!    are each half-life alone and four blends (the 131,072- or
//!    524,288-request count plus a quarter of the 2- or 8-million-request
//!    one). For each ranking the policy keeps the count a track needs to
//!    rank among the tracks that fill the budget, and scores every fourth
//!    request: would a hot tier ranked that way have held it? The ranking
//!    with the most such shadow hit bytes lately (a decayed sum) ranks the
//!    tracks; a challenger takes over only when its lead is three standard
//!    deviations of what the requests on which the two disagree would give
//!    by chance, so a real lead of a few hundredths of a point wins and
//!    noise does not. Stationary popularity picks a long memory (close to
//!    the true frequencies); new releases rising and old tracks fading pick
//!    a short one; and the choice depends on the budget, because a large
//!    hot tier's marginal tracks are requested rarely and need a longer
//!    memory to be told apart (the blends: a short memory for the head,
//!    the long one to separate the tail).
//! 3. **Size-aware admission.** The main region is ordered by count; a
//!    candidate displaces the lowest-ranked tracks only if its count beats
//!    their byte-weighted mean count: the hot tier is judged by the bytes
//!    it serves, and a track's bytes served per byte held is its request
//!    rate.
//! 4. **A window for first-seen tracks, on while it pays.** A track
//!    requested for the first time (a new release, in a real library) has
//!    no count to be admitted on, and a release's first requests are
//!    those a static hot set would serve. A small window (2 % of the
//!    bytes) holds such tracks until they are counted enough for main.
//!    It is on only while it earns its space: a ghost of the last first-
//!    seen tracks (a window's worth of their bytes) counts the requests
//!    that find their track in it and not counted enough for main, and
//!    the window is on while those bytes exceed what its share of main
//!    would serve at the rate of a track at the edge of the budget. New
//!    releases that are requested again soon turn it on; a stationary
//!    catalogue, whose first-seen tracks are the rarely played tail,
//!    leaves it off. A general recency window whose share follows
//!    Caffeine's hill climber is built in too, but off by default (in
//!    the simulation it cost up to 0.8 points: the climber wanders on
//!    noise); [`SpindleConfig::window`] and [`SpindleConfig::adapt_window`]
//!    turn it on.
//! 5. **Pins** come from wrapping it in [`super::Pinned`].
//!
//! Time is counted in requests, not wall-clock time: a quiet server does
//! not forget its favourites over a holiday.

#![allow(
    clippy::needless_range_loop,
    reason = "per-scale arrays (units, counters, totals) are walked together by scale \
              index; an index loop reads better than zipped iterators here"
)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use super::idmap::IdMap;
use super::list::Arena;
use super::{Outcome, Policy};

/// How many time scales each track is counted at.
const SCALES: usize = 6;
/// The most rankings (the scales and the blends) the policy chooses from.
const MAX_RANKERS: usize = 10;
/// Renormalise the counters when the fastest scale's unit passes this.
const RENORMALISE_AT: f64 = 1e120;

const NOT_HOT: u8 = 0;
const IN_WINDOW: u8 = 1;
const IN_MAIN: u8 = 2;

/// Tuning knobs of [`Spindle`]; the defaults are what the simulation runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpindleConfig {
    /// Half-lives of the frequency counters, in requests, shortest first.
    pub half_lives: [f64; SCALES],
    /// Blended rankings offered besides the pure scales: `(short, long,
    /// weight)` ranks by the count at scale `short` plus `weight` times
    /// the count at the longer scale `long` (indexes into `half_lives`).
    /// The shadow hits choose among the scales and these blends alike.
    #[serde(default = "default_blends")]
    pub blends: Vec<(usize, usize, f64)>,
    /// Half-life of the shadow hit counts, in scored requests.
    pub score_half_life: f64,
    /// Score one request in this many (the others only count).
    pub score_every: u64,
    /// Reconsider the time scale every this many requests.
    pub select_every: u64,
    /// Recompute each scale's admission threshold every this many
    /// requests.
    pub threshold_every: u64,
    /// A ranking must beat the current one by this share of the scored
    /// bytes to take over…
    pub switch_margin: f64,
    /// …and by this many standard deviations of the difference, were the
    /// two equally good: the requests on which the two disagree decide,
    /// and each is a coin flip under that null.
    #[serde(default = "default_switch_sigmas")]
    pub switch_sigmas: f64,
    /// The window's initial share of the bytes.
    pub window: f64,
    /// The largest share the hill climber may give the window.
    pub window_max: f64,
    /// Whether the hill climber runs.
    pub adapt_window: bool,
    /// Share of the bytes of a window for tracks requested for the first
    /// time (a new release, or a track nobody played for months), on
    /// only while it earns its space: while the requests that find such a
    /// track in it (counted in a ghost whether it is on or not) are worth
    /// more bytes than the lowest-ranked main tracks it displaces would
    /// serve. 0 turns it off.
    #[serde(default = "default_fresh_window")]
    pub fresh_window: f64,
}

impl Default for SpindleConfig {
    fn default() -> Self {
        SpindleConfig {
            half_lives: [
                8_192.0,
                32_768.0,
                131_072.0,
                524_288.0,
                2_097_152.0,
                8_388_608.0,
            ],
            blends: default_blends(),
            score_half_life: 32_768.0,
            score_every: 4,
            select_every: 4096,
            threshold_every: 32_768,
            switch_margin: 0.0,
            switch_sigmas: default_switch_sigmas(),
            window: 0.0,
            window_max: 0.5,
            adapt_window: false,
            fresh_window: default_fresh_window(),
        }
    }
}

fn default_fresh_window() -> f64 {
    0.02
}

fn default_switch_sigmas() -> f64 {
    3.0
}

/// The 131,072- or 524,288-request count plus a quarter of the 2- or
/// 8-million-request one: at a large budget the marginal tracks count one
/// or two requests at the short half-life, and the longer memory tells
/// them apart while the shorter one still follows releases and fading
/// hits.
fn default_blends() -> Vec<(usize, usize, f64)> {
    vec![(3, 4, 0.25), (3, 5, 0.25), (2, 4, 0.25), (2, 5, 0.25)]
}

/// One way to rank the tracks: the count at scale `short` plus `weight`
/// times the count at scale `long` (the same scale and no weight for a
/// pure scale).
#[derive(Debug, Clone, Copy)]
struct Ranker {
    short: usize,
    long: usize,
    weight: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    id: u64,
    size: u64,
    acc: [f64; SCALES],
    state: u8,
    /// [`Spindle::fresh_bytes`] when the track was last seen for the first
    /// time: it is in the fresh ghost while fewer than the fresh window's
    /// bytes of first-seen tracks came after it (`u64::MAX`: never, e.g.
    /// known from listens only).
    mark: u64,
}

/// The policy's whole state, for the server to persist across restarts
/// (serde; the counters are stored relative to the current time).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpindleState {
    pub config: SpindleConfig,
    pub capacity: u64,
    pub window_share: f64,
    /// The ranking in use: a scale (`0..6`) or a blend (`6..`, in the
    /// order of [`SpindleConfig::blends`]).
    pub active_scale: usize,
    pub prediction: Vec<f64>,
    /// Known tracks: (id, size, counters, 0 = cold / 1 = window / 2 = main).
    pub tracks: Vec<(u64, u64, [f64; SCALES], u8)>,
    /// Window members, most recent first.
    pub window: Vec<u64>,
    /// The fresh window's bookkeeping (absent in older states).
    #[serde(default)]
    pub fresh: Option<FreshState>,
}

/// The fresh window's state: whether it is on, its ghost's and the
/// displaced main tracks' decayed values, and each track's mark (in the
/// order of [`SpindleState::tracks`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FreshState {
    /// Whether the fresh window is on.
    pub on: bool,
    /// Bytes of first-seen requests so far.
    pub bytes: u64,
    /// Decayed bytes the ghost served…
    pub ghost_value: f64,
    /// …and the decayed bytes its share of main would have served.
    pub displaced_value: f64,
    /// Each track's `bytes` when it was last seen for the first time
    /// (`u64::MAX`: never).
    pub marks: Vec<u64>,
}

/// Spindle's hot-tier policy; see the module documentation.
#[derive(Debug)]
pub struct Spindle {
    cfg: SpindleConfig,
    cap: u64,
    entries: Vec<Entry>,
    index: IdMap<u32>,
    /// Current value of one request at each scale: 2^(t/H) since the
    /// reference time.
    unit: [f64; SCALES],
    growth: [f64; SCALES],
    total: [f64; SCALES],
    /// The rankings to choose from: each scale, then the blends.
    rankers: Vec<Ranker>,
    /// Decayed bytes of the scored requests each ranking would have
    /// served hot (its shadow hits), and of all scored requests.
    prediction: [f64; MAX_RANKERS],
    scored: f64,
    /// Per pair of rankings, the decayed (at the squared rate) sum of the
    /// squared sizes of the scored requests on which they disagree: the
    /// variance of the difference of their shadow hits if they were
    /// equally good.
    disagree: [[f64; MAX_RANKERS]; MAX_RANKERS],
    /// Per ranking, the count a track needs to rank among the tracks that
    /// fill the budget (recomputed every `threshold_every`).
    threshold: [f64; MAX_RANKERS],
    score_decay: f64,
    /// The ranking in use (an index into `rankers`).
    active: usize,
    /// The active ranking's scales and, for a blend, the weight of the
    /// long scale's raw counter: the heap key is `acc[short] + gamma ·
    /// acc[long]`. Both counters only grow, so a stale key is lower than
    /// the current one, as the lazy heap needs; `gamma` is reset at each
    /// rebuild (every `threshold_every` requests for a blend) so the
    /// long count keeps its weight as the two units drift apart.
    short: usize,
    long: usize,
    gamma: f64,
    /// Main members by their key under the active ranking (lazy: a key
    /// may be older, i.e. lower, than the current one; fixed when popped).
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    window: Arena,
    main_bytes: u64,
    main_len: usize,
    window_share: f64,
    tick: u64,
    climb: Climber,
    victims: Vec<u32>,
    /// Bytes of first-seen requests so far (the fresh ghost's clock).
    fresh_bytes: u64,
    /// Whether the fresh window is on.
    fresh_on: bool,
    /// Decayed bytes of the scored requests that found their track in
    /// the fresh ghost and not in main: what the fresh window serves…
    ghost_value: f64,
    /// …and the decayed bytes the fresh window's share of main would
    /// serve at the rate of the tracks at the edge of the budget.
    displaced_value: f64,
}

#[derive(Debug, Clone)]
struct Climber {
    period: u64,
    seen: u64,
    bytes: u64,
    hit_bytes: u64,
    previous: Option<f64>,
    step: f64,
    /// Mean track size seen, to size the sample.
    size_sum: u64,
    size_n: u64,
}

impl Spindle {
    /// A hot tier of `capacity` bytes with the default configuration.
    pub fn new(capacity: u64) -> Self {
        Self::with_config(capacity, SpindleConfig::default())
    }

    pub fn with_config(capacity: u64, cfg: SpindleConfig) -> Self {
        let growth = cfg.half_lives.map(|h| 2f64.powf(1.0 / h));
        let mut rankers: Vec<Ranker> = (0..SCALES)
            .map(|k| Ranker {
                short: k,
                long: k,
                weight: 0.0,
            })
            .collect();
        for &(short, long, weight) in &cfg.blends {
            if rankers.len() < MAX_RANKERS && short < SCALES && long < SCALES {
                rankers.push(Ranker {
                    short,
                    long,
                    weight,
                });
            }
        }
        Spindle {
            rankers,
            short: SCALES / 2,
            long: SCALES / 2,
            gamma: 0.0,
            score_decay: 0.5f64.powf(1.0 / cfg.score_half_life),
            window_share: cfg.window,
            cap: capacity,
            entries: Vec::new(),
            index: IdMap::default(),
            unit: [1.0; SCALES],
            growth,
            total: [0.0; SCALES],
            prediction: [0.0; MAX_RANKERS],
            scored: 0.0,
            disagree: [[0.0; MAX_RANKERS]; MAX_RANKERS],
            threshold: [0.0; MAX_RANKERS],
            active: SCALES / 2,
            heap: BinaryHeap::new(),
            window: Arena::default(),
            main_bytes: 0,
            main_len: 0,
            tick: 0,
            climb: Climber {
                period: 0,
                seen: 0,
                bytes: 0,
                hit_bytes: 0,
                previous: None,
                step: 0.0625,
                size_sum: 0,
                size_n: 0,
            },
            victims: Vec::new(),
            fresh_bytes: 0,
            fresh_on: false,
            ghost_value: 0.0,
            displaced_value: 0.0,
            cfg,
        }
    }

    /// Which half-life (in requests) ranks the tracks now (for a blend,
    /// its shorter one).
    pub fn active_half_life(&self) -> f64 {
        self.cfg.half_lives[self.short]
    }

    /// Whether the tracks are ranked by a blend of two half-lives now.
    pub fn blended(&self) -> bool {
        self.gamma > 0.0
    }

    /// Bytes in the window now.
    pub fn window_bytes(&self) -> u64 {
        self.window.bytes(0)
    }

    /// The window's current share of the bytes.
    pub fn window_share(&self) -> f64 {
        self.window_share
    }

    /// A track's estimated request rate: requests per request served,
    /// at the active (shorter) time scale (0 for an unknown track).
    pub fn rate(&self, id: u64) -> f64 {
        match self.index.get(&id) {
            Some(&i) => {
                let h = self.cfg.half_lives[self.short];
                self.entries[i as usize].acc[self.short] / self.unit[self.short]
                    * std::f64::consts::LN_2
                    / h
            }
            None => 0.0,
        }
    }

    fn window_cap(&self) -> u64 {
        let share = if self.fresh_on {
            self.window_share.max(self.cfg.fresh_window)
        } else {
            self.window_share
        };
        (self.cap as f64 * share) as u64
    }

    /// The fresh window's size in bytes when on.
    fn fresh_cap(&self) -> u64 {
        (self.cap as f64 * self.cfg.fresh_window) as u64
    }

    /// Whether a track first seen at `mark` is still in the fresh ghost.
    fn in_ghost(&self, mark: u64) -> bool {
        self.fresh_bytes
            .checked_sub(mark)
            .is_some_and(|d| d < self.fresh_cap())
    }

    fn main_cap(&self) -> u64 {
        self.cap - self.window_cap().min(self.cap)
    }

    /// The active ranking's key of track `i`, in raw (unscaled) units.
    fn raw(&self, i: u32) -> f64 {
        let e = &self.entries[i as usize];
        e.acc[self.short] + self.gamma * e.acc[self.long]
    }

    fn key(&self, i: u32) -> u64 {
        self.raw(i).to_bits()
    }

    /// A track's count under ranking `r`, now.
    fn ranked(&self, e: &Entry, r: usize) -> f64 {
        let k = self.rankers[r];
        let c = e.acc[k.short] / self.unit[k.short];
        if k.weight > 0.0 {
            c + k.weight * e.acc[k.long] / self.unit[k.long]
        } else {
            c
        }
    }

    fn entry_for(&mut self, id: u64, size: u64) -> u32 {
        if let Some(&i) = self.index.get(&id) {
            let e = &mut self.entries[i as usize];
            // A hot track keeps the size it was admitted with (the byte
            // accounting depends on it); a changed file is `remove`d first.
            if size != 0 && e.state == NOT_HOT {
                e.size = size;
            }
            return i;
        }
        let i = self.entries.len() as u32;
        self.entries.push(Entry {
            id,
            size,
            acc: [0.0; SCALES],
            state: NOT_HOT,
            mark: u64::MAX,
        });
        self.index.insert(id, i);
        i
    }

    fn count(&mut self, i: u32, weight: f64) {
        let e = &mut self.entries[i as usize];
        for k in 0..SCALES {
            let add = weight * self.unit[k];
            e.acc[k] += add;
            self.total[k] += add;
        }
    }

    fn advance_clock(&mut self) {
        self.tick += 1;
        for k in 0..SCALES {
            self.unit[k] *= self.growth[k];
        }
        if self.unit[0] > RENORMALISE_AT {
            self.renormalise();
        }
    }

    /// Scores each scale on this request (before counting it): a shadow
    /// hit if the track's count at that scale clears the scale's
    /// threshold, i.e. a hot tier ranked by that scale would hold it.
    fn score(&mut self, i: u32) {
        let e = &self.entries[i as usize];
        let size = e.size.max(1) as f64;
        self.scored = self.scored * self.score_decay + size;
        let n = self.rankers.len();
        let mut hits = [false; MAX_RANKERS];
        for r in 0..n {
            let hit = self.threshold[r] > 0.0 && self.ranked(e, r) >= self.threshold[r];
            hits[r] = hit;
            self.prediction[r] =
                self.prediction[r] * self.score_decay + if hit { size } else { 0.0 };
        }
        let d2 = self.score_decay * self.score_decay;
        for r in 0..n {
            for q in r + 1..n {
                let v =
                    self.disagree[r][q] * d2 + if hits[r] != hits[q] { size * size } else { 0.0 };
                self.disagree[r][q] = v;
                self.disagree[q][r] = v;
            }
        }
    }

    /// Scores the fresh window on a scored request of track `i` (before
    /// it is counted): the ghost earns the request's bytes if the track is
    /// in it, not in main, and not counted enough for main to hold it
    /// (a hit only the window gives); the main tracks it would displace
    /// earn what the fresh window's bytes serve at the request rate of a
    /// track at the active ranking's threshold (the threshold over what
    /// every request together counts: the count of a rate of one).
    fn score_fresh(&mut self, i: u32, fresh: bool) {
        let r = self.active;
        let e = &self.entries[i as usize];
        let ghost = !fresh
            && e.state != IN_MAIN
            && self.in_ghost(e.mark)
            && self.ranked(e, r) < self.threshold[r];
        let size = e.size.max(1) as f64;
        // What a track requested once per request would count now.
        let k = self.rankers[r];
        let mut exposure = self.total[k.short] / self.unit[k.short];
        if k.weight > 0.0 {
            exposure += k.weight * self.total[k.long] / self.unit[k.long];
        }
        let rate = if exposure > 0.0 {
            self.threshold[r] / exposure
        } else {
            0.0
        };
        self.ghost_value = self.ghost_value * self.score_decay + if ghost { size } else { 0.0 };
        self.displaced_value =
            self.displaced_value * self.score_decay + rate * self.fresh_cap() as f64;
    }

    /// Turns the fresh window on while its ghost serves more than the
    /// main tracks it displaces would, and off otherwise.
    fn maybe_switch_fresh(&mut self, evicted: &mut Vec<u64>) {
        let on = self.cfg.fresh_window > 0.0 && self.ghost_value > self.displaced_value;
        if on != self.fresh_on {
            self.fresh_on = on;
            self.rebalance(evicted);
        }
    }

    /// Recomputes each ranking's threshold: the count of the m-th most
    /// counted track, m the number of tracks of mean size the budget
    /// holds.
    fn recompute_thresholds(&mut self) {
        let n = self.entries.len();
        if n == 0 {
            return;
        }
        let mean = self.entries.iter().map(|e| e.size).sum::<u64>() / n as u64;
        let m = (self.cap / mean.max(1)) as usize;
        if m == 0 || m >= n {
            self.threshold = [0.0; MAX_RANKERS];
            return;
        }
        let mut v = vec![0f64; n];
        for r in 0..self.rankers.len() {
            for (x, e) in v.iter_mut().zip(&self.entries) {
                *x = self.ranked(e, r);
            }
            let (_, t, _) = v.select_nth_unstable_by(m - 1, |a, b| b.total_cmp(a));
            self.threshold[r] = *t;
        }
    }

    fn maybe_switch_scale(&mut self) {
        let mut best = self.active;
        for r in 0..self.rankers.len() {
            if self.prediction[r] > self.prediction[best] {
                best = r;
            }
        }
        let lead = self.prediction[best] - self.prediction[self.active];
        if best != self.active
            && lead > self.cfg.switch_margin * self.scored
            && lead > self.cfg.switch_sigmas * self.disagree[best][self.active].sqrt()
        {
            self.active = best;
            self.rebuild_heap();
        }
    }

    /// Rebuilds the heap under the active ranking, with a fresh `gamma`.
    fn rebuild_heap(&mut self) {
        let k = self.rankers[self.active];
        self.short = k.short;
        self.long = k.long;
        self.gamma = if k.weight > 0.0 && k.long != k.short {
            k.weight * self.unit[k.short] / self.unit[k.long]
        } else {
            0.0
        };
        let mut v = Vec::with_capacity(self.heap.len());
        for (i, e) in self.entries.iter().enumerate() {
            if e.state == IN_MAIN {
                v.push(Reverse((self.raw(i as u32).to_bits(), i as u32)));
            }
        }
        self.heap = BinaryHeap::from(v);
    }

    /// Divides every counter by the current unit, drops cold tracks whose
    /// counters have decayed to nothing, and rebuilds the index and heap.
    fn renormalise(&mut self) {
        let unit = self.unit;
        for k in 0..SCALES {
            self.total[k] /= unit[k];
            self.unit[k] = 1.0;
        }
        for e in &mut self.entries {
            for k in 0..SCALES {
                e.acc[k] /= unit[k];
            }
        }
        self.entries
            .retain(|e| e.state != NOT_HOT || e.acc[SCALES - 1] > 1e-6);
        self.index.clear();
        for (i, e) in self.entries.iter().enumerate() {
            self.index.insert(e.id, i as u32);
        }
        self.rebuild_heap();
    }

    /// Pops the lowest-ranked main member, fixing stale keys; `None` when
    /// main is empty.
    fn pop_lowest(&mut self) -> Option<u32> {
        while let Some(Reverse((key, i))) = self.heap.pop() {
            if self.entries[i as usize].state != IN_MAIN {
                continue; // removed meanwhile
            }
            let now = self.key(i);
            if now != key {
                self.heap.push(Reverse((now, i)));
                continue;
            }
            return Some(i);
        }
        None
    }

    fn lowest_key(&mut self) -> Option<f64> {
        let i = self.pop_lowest()?;
        self.heap.push(Reverse((self.key(i), i)));
        Some(self.raw(i))
    }

    fn evict_main(&mut self, i: u32, evicted: &mut Vec<u64>) {
        let e = &mut self.entries[i as usize];
        e.state = NOT_HOT;
        self.main_bytes -= e.size;
        self.main_len -= 1;
        evicted.push(e.id);
    }

    /// Offers `c` (not hot) to the main region; returns whether it got in.
    fn offer_main(&mut self, c: u32, evicted: &mut Vec<u64>) -> bool {
        let size = self.entries[c as usize].size;
        let cap = self.main_cap();
        if size > cap {
            return false;
        }
        if self.main_bytes + size > cap {
            let score = self.raw(c);
            // Fast path: no better than the lowest member, so no better
            // than any set of victims.
            match self.lowest_key() {
                Some(low) if score <= low => return false,
                _ => {}
            }
            self.victims.clear();
            let (mut freed, mut weighted) = (0u64, 0f64);
            while self.main_bytes - freed + size > cap {
                let Some(v) = self.pop_lowest() else { break };
                self.victims.push(v);
                let size = self.entries[v as usize].size;
                freed += size;
                weighted += self.raw(v) * size as f64;
            }
            let fits = self.main_bytes - freed + size <= cap;
            if !fits || score * freed as f64 <= weighted {
                for j in 0..self.victims.len() {
                    let v = self.victims[j];
                    self.heap.push(Reverse((self.key(v), v)));
                }
                return false;
            }
            for j in 0..self.victims.len() {
                let v = self.victims[j];
                self.evict_main(v, evicted);
            }
        }
        self.entries[c as usize].state = IN_MAIN;
        self.main_bytes += size;
        self.main_len += 1;
        self.heap.push(Reverse((self.key(c), c)));
        true
    }

    /// Moves window overflow into main (through admission) and trims main
    /// to its share.
    fn rebalance(&mut self, evicted: &mut Vec<u64>) {
        let wcap = self.window_cap();
        while self.window.bytes(0) > wcap {
            let Some(t) = self.window.back(0) else { break };
            let (id, _) = self.window.remove(t);
            let c = self.index[&id];
            self.entries[c as usize].state = NOT_HOT;
            if !self.offer_main(c, evicted) {
                evicted.push(id);
            }
        }
        let mcap = self.main_cap();
        while self.main_bytes > mcap {
            let Some(v) = self.pop_lowest() else { break };
            self.evict_main(v, evicted);
        }
    }

    fn climb(&mut self, size: u64, hit: bool, evicted: &mut Vec<u64>) {
        let c = &mut self.climb;
        c.size_sum += size;
        c.size_n += 1;
        c.seen += 1;
        c.bytes += size;
        if hit {
            c.hit_bytes += size;
        }
        if c.period == 0 {
            let mean = (c.size_sum / c.size_n).max(1);
            c.period = (10 * (self.cap / mean)).max(4096);
        }
        if c.seen < c.period {
            return;
        }
        let rate = c.hit_bytes as f64 / c.bytes.max(1) as f64;
        let mean = (c.size_sum / c.size_n).max(1);
        c.period = (10 * (self.cap / mean)).max(4096);
        c.seen = 0;
        c.bytes = 0;
        c.hit_bytes = 0;
        if let Some(prev) = c.previous {
            let change = rate - prev;
            if change < 0.0 {
                c.step = -c.step;
            }
            if change.abs() >= 0.05 {
                // A new workload: restart with a full step.
                c.step = 0.0625f64.copysign(c.step);
            } else {
                c.step *= 0.98;
            }
            let share = (self.window_share + c.step).clamp(0.0, self.cfg.window_max);
            self.window_share = share;
        }
        c.previous = Some(rate);
        self.rebalance(evicted);
    }

    /// The state to persist.
    pub fn state(&self) -> SpindleState {
        SpindleState {
            config: self.cfg.clone(),
            capacity: self.cap,
            window_share: self.window_share,
            active_scale: self.active,
            prediction: self.prediction[..self.rankers.len()].to_vec(),
            tracks: self
                .entries
                .iter()
                .map(|e| {
                    let mut acc = e.acc;
                    for k in 0..SCALES {
                        acc[k] /= self.unit[k];
                    }
                    (e.id, e.size, acc, e.state)
                })
                .collect(),
            window: self.window.ids(0),
            fresh: Some(FreshState {
                on: self.fresh_on,
                bytes: self.fresh_bytes,
                ghost_value: self.ghost_value,
                displaced_value: self.displaced_value,
                marks: self.entries.iter().map(|e| e.mark).collect(),
            }),
        }
    }

    /// A policy restored from [`Spindle::state`].
    pub fn from_state(s: SpindleState) -> Self {
        let mut p = Spindle::with_config(s.capacity, s.config);
        p.window_share = s.window_share;
        p.active = s.active_scale.min(p.rankers.len() - 1);
        for (r, &x) in s.prediction.iter().take(p.rankers.len()).enumerate() {
            p.prediction[r] = x;
        }
        let fresh = s.fresh.unwrap_or(FreshState {
            on: false,
            bytes: 0,
            ghost_value: 0.0,
            displaced_value: 0.0,
            marks: Vec::new(),
        });
        p.fresh_on = fresh.on;
        p.fresh_bytes = fresh.bytes;
        p.ghost_value = fresh.ghost_value;
        p.displaced_value = fresh.displaced_value;
        for (j, (id, size, acc, state)) in s.tracks.into_iter().enumerate() {
            let i = p.entry_for(id, size);
            let e = &mut p.entries[i as usize];
            e.acc = acc;
            e.mark = fresh.marks.get(j).copied().unwrap_or(u64::MAX);
            e.state = if state == IN_MAIN { IN_MAIN } else { NOT_HOT };
            if e.state == IN_MAIN {
                p.main_bytes += size;
                p.main_len += 1;
            }
            for k in 0..SCALES {
                p.total[k] += acc[k];
            }
        }
        for id in s.window.into_iter().rev() {
            if let Some(&i) = p.index.get(&id) {
                let e = &mut p.entries[i as usize];
                e.state = IN_WINDOW;
                p.window.insert_front(id, e.size, 0);
            }
        }
        p.rebuild_heap();
        let mut ignored = Vec::new();
        p.rebalance(&mut ignored);
        p
    }
}

impl Policy for Spindle {
    fn name(&self) -> &'static str {
        "spindle"
    }
    fn capacity(&self) -> u64 {
        self.cap
    }
    fn used(&self) -> u64 {
        self.main_bytes + self.window.bytes(0)
    }
    fn len(&self) -> usize {
        self.main_len + self.window.len(0)
    }
    fn contains(&self, id: u64) -> bool {
        self.index
            .get(&id)
            .is_some_and(|&i| self.entries[i as usize].state != NOT_HOT)
    }

    fn access_into(&mut self, id: u64, size: u64, evicted: &mut Vec<u64>) -> Outcome {
        self.advance_clock();
        let i = self.entry_for(id, size);
        // Seen for the first time, or so long ago that every count has
        // decayed to nothing.
        let fresh = self.entries[i as usize].acc[SCALES - 1] < 0.01 * self.unit[SCALES - 1];
        if fresh {
            self.entries[i as usize].mark = self.fresh_bytes;
            self.fresh_bytes += size.max(1);
        }
        if self.tick.is_multiple_of(self.cfg.score_every) {
            self.score(i);
            self.score_fresh(i, fresh);
        }
        self.count(i, 1.0);
        if self.tick.is_multiple_of(self.cfg.threshold_every) {
            self.recompute_thresholds();
            if self.gamma > 0.0 {
                // The long count's weight drifts down as its unit grows
                // slower than the short one's: reset it.
                self.rebuild_heap();
            }
        }
        if self.tick.is_multiple_of(self.cfg.select_every) {
            self.maybe_switch_scale();
            self.maybe_switch_fresh(evicted);
        }
        let state = self.entries[i as usize].state;
        let out = if state != NOT_HOT {
            if state == IN_WINDOW {
                if let Some(w) = self.window.find(id) {
                    self.window.move_front(w, 0);
                }
            }
            Outcome {
                hit: true,
                admit: false,
            }
        } else if size > self.cap {
            Outcome::default()
        } else {
            // The general window takes every missed track; the fresh one
            // only tracks seen for the first time.
            let window = self.window_share > 0.0 || fresh;
            let admitted = if window && self.window_cap() >= size {
                self.entries[i as usize].state = IN_WINDOW;
                self.window.insert_front(id, size, 0);
                self.rebalance(evicted);
                self.entries[i as usize].state != NOT_HOT
            } else {
                self.offer_main(i, evicted)
            };
            Outcome {
                hit: false,
                admit: admitted,
            }
        };
        if self.cfg.adapt_window {
            self.climb(size, out.hit, evicted);
        }
        out
    }

    fn record_listen(&mut self, id: u64, weight: f64) {
        let i = self.entry_for(id, 0);
        self.count(i, weight);
    }

    /// Main's free bytes go to the tracks ranked highest by the active
    /// ranking that fit, best first; a track that does not fit what is
    /// left is passed over for smaller ones below it.
    fn prefill(&mut self, size_of: &mut dyn FnMut(u64) -> Option<u64>, admitted: &mut Vec<u64>) {
        let cap = self.main_cap();
        let mut cands: Vec<(f64, u32)> = (0..self.entries.len() as u32)
            .filter(|&i| self.entries[i as usize].state == NOT_HOT)
            .map(|i| (self.raw(i), i))
            .filter(|&(r, _)| r > 0.0)
            .collect();
        cands.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
        for (_, i) in cands {
            if self.main_bytes >= cap {
                break;
            }
            let id = self.entries[i as usize].id;
            let Some(size) = size_of(id).filter(|&s| s > 0) else {
                continue;
            };
            if self.main_bytes + size > cap {
                continue;
            }
            let e = &mut self.entries[i as usize];
            e.size = size;
            e.state = IN_MAIN;
            self.main_bytes += size;
            self.main_len += 1;
            self.heap.push(Reverse((self.key(i), i)));
            admitted.push(id);
        }
    }

    fn remove(&mut self, id: u64) -> bool {
        let Some(&i) = self.index.get(&id) else {
            return false;
        };
        let e = &mut self.entries[i as usize];
        match e.state {
            IN_MAIN => {
                self.main_bytes -= e.size;
                self.main_len -= 1;
                e.state = NOT_HOT;
                true
            }
            IN_WINDOW => {
                e.state = NOT_HOT;
                if let Some(w) = self.window.find(id) {
                    self.window.remove(w);
                }
                true
            }
            _ => false,
        }
    }

    fn set_capacity(&mut self, bytes: u64, evicted: &mut Vec<u64>) {
        self.cap = bytes;
        self.climb.period = 0;
        self.rebalance(evicted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::workload::{shifting, stationary, Synthetic};

    #[test]
    fn a_candidate_must_beat_the_byte_weighted_mean_of_its_victims() {
        let mut p = Spindle::new(10);
        for _ in 0..4 {
            p.access(1, 5);
        }
        p.access(2, 5);
        assert_eq!(p.used(), 10);
        // 10-byte track 3 needs both: mean count (4·5 + 1·5)/10 = 2.5.
        let d = p.access(3, 10);
        assert!(!d.admit && d.evicted.is_empty(), "{d:?}");
        assert!(!p.access(3, 10).admit, "2 < 2.5");
        let d = p.access(3, 10);
        assert!(d.admit, "3 > 2.5");
        assert_eq!(d.evicted, vec![2, 1], "lowest first");
        assert_eq!((p.used(), p.len()), (10, 1));
        assert!(p.remove(3) && p.is_empty());
    }

    #[test]
    fn a_frequent_track_survives_a_scan_and_listens_count() {
        let mut p = Spindle::new(100);
        for _ in 0..3 {
            for id in 0..100 {
                p.access(id, 1);
            }
        }
        for id in 1000..3000 {
            assert!(!p.access(id, 1).admit);
        }
        assert_eq!((0..100).filter(|&id| p.contains(id)).count(), 100);
        // Listens from the history make a new track popular before its
        // first stream request.
        p.record_listen(5000, 10.0);
        let d = p.access(5000, 1);
        assert!(d.admit && d.evicted.len() == 1, "{d:?}");
    }

    #[test]
    fn state_round_trips_and_decides_the_same() {
        let mut a = Spindle::new(50);
        let mut rng = 7u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for _ in 0..5000 {
            let id = next() % 200;
            let id = id % (1 + next() % 200);
            a.access(id, 1 + id % 3);
        }
        let mut b = Spindle::from_state(a.state());
        assert_eq!((a.used(), a.len()), (b.used(), b.len()));
        for _ in 0..5000 {
            let id = next() % 150;
            let size = 1 + id % 3;
            assert_eq!(a.access(id, size), b.access(id, size));
        }
    }

    #[test]
    fn a_small_steady_lead_takes_over_and_a_noisy_one_does_not() {
        let mut p = Spindle::new(100);
        let (old, new) = (3, 5);
        p.active = old;
        p.scored = 1e6;
        p.prediction[old] = 5e5;
        // Ahead by 0.05 % of the scored bytes, on few disagreements
        // (standard deviation 10 bytes): a real lead.
        p.prediction[new] = 5e5 + 500.0;
        p.disagree[old][new] = 100.0;
        p.disagree[new][old] = 100.0;
        p.maybe_switch_scale();
        assert_eq!(p.active, new, "a lead of 50 sd must take over");
        // Ahead by 0.5 %, but the two disagree so often that this is
        // within three standard deviations of chance.
        p.active = old;
        p.prediction[new] = 5e5 + 5000.0;
        p.disagree[old][new] = 1e8;
        p.disagree[new][old] = 1e8;
        p.maybe_switch_scale();
        assert_eq!(p.active, old, "a lead of 0.5 sd must not");
    }

    #[test]
    fn a_blend_remembers_what_its_short_scale_forgot() {
        // Scale 3 forgets within tens of requests; scale 5 remembers. The
        // blend's weight is refreshed every 4 requests (the two units
        // drift apart fast at such short half-lives).
        let cfg = SpindleConfig {
            half_lives: [2.0, 4.0, 8.0, 16.0, 1e6, 1e7],
            blends: vec![(3, 5, 1.0)],
            threshold_every: 4,
            ..SpindleConfig::default()
        };
        let run = |ranking: usize| {
            let mut p = Spindle::with_config(2, cfg.clone());
            p.active = ranking;
            p.rebuild_heap();
            // Track 1 was popular long ago; track 3 is popular now.
            for _ in 0..10 {
                p.access(1, 1);
            }
            for _ in 0..200 {
                p.access(3, 1);
            }
            assert!(p.contains(1) && p.contains(3));
            assert_eq!(p.active, ranking, "no switch in so few requests");
            // Track 2, requested once now, against track 1.
            p.access(2, 1).admit
        };
        assert!(run(3), "at the short scale alone track 1 is forgotten");
        assert!(!run(SCALES), "the blend still counts track 1's 10 requests");
    }

    #[test]
    fn prefill_takes_the_most_played_tracks_that_fit_into_free_space_only() {
        let mut s = Spindle::new(1000);
        // Track i played i times; track 6 has no known size.
        for i in 1..=9u64 {
            s.record_listen(i, i as f64);
        }
        let size = |id: u64| match id {
            6 => None,
            9 => Some(600),
            _ => Some(300),
        };
        let mut got = Vec::new();
        s.prefill(&mut |id| size(id), &mut got);
        // 9 (600 bytes) fits; 8 (300) fits; 7 does not (1,200 > main);
        // 6 has no size; nothing smaller is left that fits.
        let main = s.main_cap();
        assert!(s.used() <= main, "{} of {main}", s.used());
        assert_eq!(got, [9, 8]);
        assert!(s.contains(9) && s.contains(8) && !s.contains(7));
        // A second call finds no room, and a request still hits.
        let mut again = Vec::new();
        s.prefill(&mut |id| size(id), &mut again);
        assert!(again.is_empty());
        let mut ev = Vec::new();
        assert!(s.access_into(9, 600, &mut ev).hit);
        assert!(ev.is_empty());
    }

    #[test]
    fn the_fresh_window_opens_for_new_releases_and_stays_shut_on_stationary_zipf() {
        let p = Synthetic {
            tracks: 20_000,
            requests: 400_000,
            exponent: 1.0,
            seed: 11,
            history: 0,
        };
        let run = |t: &crate::sim::Trace| {
            let cap = t.catalogue_bytes() / 5;
            let mut s = Spindle::new(cap);
            let mut ev = Vec::new();
            let mut open = 0;
            for (n, &id) in t.ids.iter().enumerate() {
                s.access_into(u64::from(id), t.sizes[id as usize], &mut ev);
                ev.clear();
                assert!(s.used() <= cap);
                if n >= 200_000 && s.fresh_on {
                    open += 1;
                }
            }
            open
        };
        let (still, moving) = (run(&stationary(p)), run(&shifting(p)));
        assert_eq!(still, 0, "open for {still} stationary requests");
        assert!(
            moving > 150_000,
            "open for {moving} of 200,000 shifting requests"
        );
    }

    #[test]
    fn memory_is_long_for_stationary_popularity_and_short_when_it_shifts() {
        let p = Synthetic {
            tracks: 20_000,
            requests: 400_000,
            exponent: 1.2,
            seed: 11,
            history: 0,
        };
        let run = |t: &crate::sim::Trace| {
            let cap = t.catalogue_bytes() / 100;
            let mut s = Spindle::new(cap);
            let mut ev = Vec::new();
            for &id in &t.ids {
                s.access_into(u64::from(id), t.sizes[id as usize], &mut ev);
                ev.clear();
                assert!(s.used() <= cap);
            }
            s.active_half_life()
        };
        let (still, moving) = (run(&stationary(p)), run(&shifting(p)));
        assert!(still >= 131_072.0, "stationary chose {still}");
        assert!(
            moving < still,
            "shifting chose {moving}, stationary {still}"
        );
    }
}
