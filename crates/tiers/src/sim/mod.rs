//! The hot-tier simulation behind `spindle tiers simulate`: every policy
//! over the same request traces, at several hot-tier sizes, counting the
//! requests (object hit ratio) and the bytes (byte hit ratio) served from
//! the hot tier.
//!
//! [`workload`] makes the traces (stationary Zipf, shifting popularity),
//! [`replay`] reads the server's access log, [`run`] drives the grid on
//! several threads, [`targets`] checks the policy's design targets and
//! [`chart`] draws the results; [`plan`] ties them into one run of the
//! command.

pub mod chart;
pub mod plan;
pub mod replay;
pub mod report;
pub mod targets;
pub mod workload;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;

use crate::policy::{next_uses, Arc, Belady, Lru, Policy, S3Fifo, Spindle, StaticSet, WTinyLfu};
pub use plan::{Outcome, Plan, SimError, SimOptions};
pub use workload::{Synthetic, Trace};

/// The policies the simulation compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyKind {
    Lru,
    Arc,
    S3Fifo,
    #[serde(rename = "w-tinylfu")]
    WTinyLfu,
    Spindle,
    Static,
    Belady,
}

impl PolicyKind {
    pub const ALL: [PolicyKind; 7] = [
        PolicyKind::Lru,
        PolicyKind::Arc,
        PolicyKind::S3Fifo,
        PolicyKind::WTinyLfu,
        PolicyKind::Spindle,
        PolicyKind::Static,
        PolicyKind::Belady,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Lru => "lru",
            PolicyKind::Arc => "arc",
            PolicyKind::S3Fifo => "s3-fifo",
            PolicyKind::WTinyLfu => "w-tinylfu",
            PolicyKind::Spindle => "spindle",
            PolicyKind::Static => "static",
            PolicyKind::Belady => "belady",
        }
    }

    pub fn parse(s: &str) -> Result<Self, String> {
        PolicyKind::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = PolicyKind::ALL.iter().map(|p| p.name()).collect();
                format!("unknown policy {s:?}; expected one of {}", names.join(", "))
            })
    }

    /// Relative cost, to start the slow ones first.
    fn cost(self) -> u32 {
        match self {
            PolicyKind::Belady => 4,
            PolicyKind::Spindle => 3,
            PolicyKind::WTinyLfu | PolicyKind::Arc => 2,
            _ => 1,
        }
    }
}

/// One point of the grid.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub workload: String,
    pub exponent: Option<f64>,
    /// Hot-tier size as a share of the catalogue's bytes.
    pub capacity: f64,
    pub capacity_bytes: u64,
    pub policy: PolicyKind,
    pub requests: u64,
    pub hits: u64,
    pub bytes: u64,
    pub hit_bytes: u64,
    pub object_hit_ratio: f64,
    pub byte_hit_ratio: f64,
    /// The steady-state view: requests before this position (the first
    /// [`WARMUP_SHARE`] of the trace) are not counted in the `steady_*`
    /// ratios, so an online policy's compulsory first misses and early
    /// noisy counts are left out (the static set is full from request one).
    pub warmup_requests: u64,
    pub steady_object_hit_ratio: f64,
    pub steady_byte_hit_ratio: f64,
    pub seconds: f64,
}

/// The share of a trace left out of the steady-state view.
pub const WARMUP_SHARE: f64 = 0.2;

/// Progress of a run, for a progress bar.
#[derive(Debug, Clone)]
pub enum Progress {
    /// A trace is being generated or read.
    Trace { label: String },
    /// One policy finished one capacity of one trace.
    Done {
        done: usize,
        total: usize,
        label: String,
    },
}

/// Runs every policy at every capacity over each trace, on `threads`
/// threads (policies and capacities of one trace run in parallel; traces
/// one after another, so at most one trace is in memory). `traces` yields
/// the traces lazily; `expected_traces` sizes the progress count.
pub fn run<I>(
    traces: I,
    expected_traces: usize,
    capacities: &[f64],
    policies: &[PolicyKind],
    threads: usize,
    progress: &(dyn Fn(Progress) + Sync),
) -> Vec<Cell>
where
    I: IntoIterator<Item = Trace>,
{
    let total = expected_traces * capacities.len() * policies.len();
    let done = AtomicUsize::new(0);
    let mut cells = Vec::new();
    for trace in traces {
        cells.extend(run_trace(
            &trace, capacities, policies, threads, &done, total, progress,
        ));
    }
    cells
}

fn label(trace: &Trace) -> String {
    match trace.exponent {
        Some(s) => format!("{} s={s}", trace.workload),
        None => trace.workload.clone(),
    }
}

fn run_trace(
    trace: &Trace,
    capacities: &[f64],
    policies: &[PolicyKind],
    threads: usize,
    done: &AtomicUsize,
    total: usize,
    progress: &(dyn Fn(Progress) + Sync),
) -> Vec<Cell> {
    let next = if policies.contains(&PolicyKind::Belady) {
        next_uses(&trace.ids)
    } else {
        Vec::new()
    };
    // The static oracle ranks by the true popularity where the trace has
    // one, by the requests counted in hindsight otherwise.
    let counts: Vec<f64> = if !policies.contains(&PolicyKind::Static) {
        Vec::new()
    } else if let Some(p) = &trace.popularity {
        p.clone()
    } else {
        trace.counts().into_iter().map(|c| c as f64).collect()
    };
    let mut tasks: Vec<(f64, PolicyKind)> = capacities
        .iter()
        .flat_map(|&c| policies.iter().map(move |&p| (c, p)))
        .collect();
    tasks.sort_by_key(|&(c, p)| std::cmp::Reverse((p.cost(), (c * 1e6) as u64)));
    let next_task = AtomicUsize::new(0);
    let out = Mutex::new(Vec::with_capacity(tasks.len()));
    let catalogue = trace.catalogue_bytes();
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, tasks.len().max(1)) {
            s.spawn(|| loop {
                let t = next_task.fetch_add(1, Ordering::Relaxed);
                let Some(&(cap, kind)) = tasks.get(t) else {
                    break;
                };
                let bytes = (catalogue as f64 * cap) as u64;
                let cell = simulate_one(trace, cap, bytes, kind, &next, &counts);
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                progress(Progress::Done {
                    done: n,
                    total,
                    label: format!("{} {} {}%", label(trace), kind.name(), cap * 100.0),
                });
                if let Ok(mut v) = out.lock() {
                    v.push(cell);
                }
            });
        }
    });
    let mut cells = out.into_inner().unwrap_or_default();
    cells.sort_by(|a, b| {
        a.capacity
            .total_cmp(&b.capacity)
            .then(policy_order(a.policy).cmp(&policy_order(b.policy)))
    });
    cells
}

fn policy_order(p: PolicyKind) -> usize {
    PolicyKind::ALL.iter().position(|&q| q == p).unwrap_or(0)
}

/// Builds one policy for a trace.
pub fn make_policy<'a>(
    kind: PolicyKind,
    capacity_bytes: u64,
    trace: &Trace,
    next: &'a [u32],
    counts: &[f64],
) -> Box<dyn Policy + 'a> {
    let entries = (capacity_bytes / trace.mean_size().max(1)) as usize;
    match kind {
        PolicyKind::Lru => Box::new(Lru::new(capacity_bytes)),
        PolicyKind::Arc => Box::new(Arc::new(capacity_bytes)),
        PolicyKind::S3Fifo => Box::new(S3Fifo::new(capacity_bytes)),
        PolicyKind::WTinyLfu => Box::new(WTinyLfu::new(capacity_bytes, entries)),
        PolicyKind::Spindle => Box::new(Spindle::new(capacity_bytes)),
        PolicyKind::Static => Box::new(StaticSet::from_popularity(
            capacity_bytes,
            counts
                .iter()
                .enumerate()
                .map(|(id, &c)| (id as u64, c, trace.sizes[id])),
        )),
        PolicyKind::Belady => Box::new(Belady::new(capacity_bytes, next)),
    }
}

/// The listening history's plays, oldest first, as a server replays its
/// listens at start (`spindle serve` replays 90 days, a listen's weight
/// halving every 30): the history's span counts as 90 days, so a play's
/// weight halves every third of it. Policies without a notion of
/// popularity ignore them; W-TinyLFU counts each in its sketch.
pub fn replay_history(p: &mut dyn Policy, history: &[u32]) {
    let span = history.len() as f64;
    for (i, &id) in history.iter().enumerate() {
        let age = span - i as f64;
        p.record_listen(u64::from(id), 0.5f64.powf(3.0 * age / span));
    }
}

/// Runs one policy over a trace.
pub fn simulate_one(
    trace: &Trace,
    capacity: f64,
    capacity_bytes: u64,
    kind: PolicyKind,
    next: &[u32],
    counts: &[f64],
) -> Cell {
    let start = Instant::now();
    let mut p = make_policy(kind, capacity_bytes, trace, next, counts);
    replay_history(&mut *p, &trace.history);
    if !trace.history.is_empty() {
        // As the server does after replaying its listens: the hot tier's
        // free space takes the tracks the history made most popular.
        p.prefill(
            &mut |id| trace.sizes.get(id as usize).copied(),
            &mut Vec::new(),
        );
    }
    let mut evicted = Vec::new();
    let (mut hits, mut bytes, mut hit_bytes) = (0u64, 0u64, 0u64);
    let warmup = (trace.ids.len() as f64 * WARMUP_SHARE) as usize;
    // Totals at the end of the warm-up, subtracted for the steady state.
    let (mut warm_hits, mut warm_bytes, mut warm_hit_bytes) = (0u64, 0u64, 0u64);
    for (pos, &id) in trace.ids.iter().enumerate() {
        if pos == warmup {
            (warm_hits, warm_bytes, warm_hit_bytes) = (hits, bytes, hit_bytes);
        }
        let size = trace.sizes[id as usize];
        let sent = trace.sent.as_ref().map_or(size, |s| s[pos]);
        let o = p.access_into(u64::from(id), size, &mut evicted);
        evicted.clear();
        bytes += sent;
        if o.hit {
            hits += 1;
            hit_bytes += sent;
        }
        assert!(
            p.used() <= capacity_bytes,
            "{} holds {} bytes over a budget of {capacity_bytes}",
            kind.name(),
            p.used()
        );
    }
    let requests = trace.ids.len() as u64;
    let steady = requests - warmup as u64;
    Cell {
        workload: trace.workload.clone(),
        exponent: trace.exponent,
        capacity,
        capacity_bytes,
        policy: kind,
        requests,
        hits,
        bytes,
        hit_bytes,
        object_hit_ratio: hits as f64 / requests.max(1) as f64,
        byte_hit_ratio: hit_bytes as f64 / bytes.max(1) as f64,
        warmup_requests: warmup as u64,
        steady_object_hit_ratio: (hits - warm_hits) as f64 / steady.max(1) as f64,
        steady_byte_hit_ratio: (hit_bytes - warm_hit_bytes) as f64
            / (bytes - warm_bytes).max(1) as f64,
        seconds: start.elapsed().as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_steady_state_view_leaves_out_the_warm_up() {
        // 100 requests: 20 first requests of distinct tracks (the warm-up),
        // then tracks 0 and 1 alternating. An LRU of two tracks misses the
        // 20 first requests and the first request of each in the
        // alternation (both were pushed out during the warm-up).
        let ids: Vec<u32> = (0..20).chain((0..80).map(|i| i % 2)).collect();
        let trace = Trace {
            workload: "replay".into(),
            exponent: None,
            ids,
            sizes: vec![10; 20],
            sent: None,
            popularity: None,
            history: Vec::new(),
        };
        let c = simulate_one(&trace, 0.1, 20, PolicyKind::Lru, &[], &[]);
        assert_eq!((c.requests, c.hits, c.warmup_requests), (100, 78, 20));
        assert!((c.object_hit_ratio - 0.78).abs() < 1e-12);
        assert!((c.byte_hit_ratio - 0.78).abs() < 1e-12);
        assert!((c.steady_object_hit_ratio - 78.0 / 80.0).abs() < 1e-12);
        assert!((c.steady_byte_hit_ratio - 78.0 / 80.0).abs() < 1e-12);
    }

    #[test]
    fn a_listening_history_shortens_the_warm_up_of_the_policies_that_count() {
        let p = workload::Synthetic {
            tracks: 5_000,
            requests: 100_000,
            exponent: 0.8,
            seed: 7,
            history: 0,
        };
        let cold = workload::stationary(p);
        let warm = workload::stationary(workload::Synthetic {
            history: 50_000,
            ..p
        });
        let run = |t: &Trace, kind| {
            let bytes = t.catalogue_bytes() / 5;
            simulate_one(t, 0.2, bytes, kind, &[], &[]).byte_hit_ratio
        };
        let (c, w) = (
            run(&cold, PolicyKind::Spindle),
            run(&warm, PolicyKind::Spindle),
        );
        assert!(w > c + 0.005, "Spindle: {c:.4} cold, {w:.4} with a history");
        let (c, w) = (
            run(&cold, PolicyKind::WTinyLfu),
            run(&warm, PolicyKind::WTinyLfu),
        );
        assert!(w >= c, "W-TinyLFU: {c:.4} cold, {w:.4} with a history");
        // LRU has no notion of popularity: the history changes nothing.
        let (c, w) = (run(&cold, PolicyKind::Lru), run(&warm, PolicyKind::Lru));
        assert_eq!(c, w);
    }
}
