//! `tiers bench-devices`: which device should a read go to?
//!
//! Two folders hold the same tracks. Each sits behind a throttled back
//! end: the fast one serves 32 requests at once in 0.3 ms each (an SSD),
//! the slow one one request at a time in 6 ms (a busy spinning disk, so
//! its wait grows with its queue). Requests stream tracks through
//! [`spindle_tiers::Tiers`] twice, once choosing the device with the
//! lowest `%util` (MogileFS's default, sampled every 100 ms as iostat
//! would) and once by measured latency (Spindle's). Requests arrive in an
//! open loop at a fixed mean rate, so a slow choice makes queues grow
//! instead of slowing the clients down. Printed: p50/p99 time
//! to first byte and each device's share of the reads.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use spindle_tiers::device::{Backend, Folder, Throttle, Throttled};
use spindle_tiers::latency::Choice;
use spindle_tiers::{Tiers, TrackRef};

use crate::error::{BenchError, Context};

/// What to run: the options of `spindle tiers bench-devices`.
#[derive(Debug, Clone, clap::Args)]
pub struct DevicesOptions {
    /// Stream requests per run.
    #[arg(long, default_value_t = 4000)]
    pub requests: usize,
    /// Mean arrival rate of stream requests per second (open loop).
    #[arg(long, default_value_t = 1000.0)]
    pub rate: f64,
    /// Tracks on each device.
    #[arg(long, default_value_t = 64)]
    pub tracks: usize,
    /// Bytes per track.
    #[arg(long, default_value_t = 128 * 1024)]
    pub track_bytes: usize,
    /// Service time of the fast device, ms (32 at once).
    #[arg(long, default_value_t = 0.3)]
    pub fast_ms: f64,
    /// Service time of the slow device, ms (one at a time).
    #[arg(long, default_value_t = 6.0)]
    pub slow_ms: f64,
    /// Seed of the request sequence.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// One run's result.
#[derive(Debug, Clone)]
pub struct RunResult {
    pub choice: Choice,
    pub reads: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub fast_share: f64,
    pub slow_share: f64,
    pub fast_util: f64,
    pub slow_util: f64,
    pub elapsed: Duration,
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn one_run(a: &DevicesOptions, dir: &Path, choice: Choice) -> Result<RunResult, BenchError> {
    let fast = Arc::new(Throttled::new(
        Arc::new(Folder::new("fast", dir.join("fast"), false)),
        Throttle {
            parallel: 32,
            service: Duration::from_secs_f64(a.fast_ms / 1000.0),
            fail_after: None,
            per_chunk: Duration::ZERO,
        },
    ));
    let slow = Arc::new(Throttled::new(
        Arc::new(Folder::new("slow", dir.join("slow"), false)),
        Throttle {
            parallel: 1,
            service: Duration::from_secs_f64(a.slow_ms / 1000.0),
            fail_after: None,
            per_chunk: Duration::ZERO,
        },
    ));
    let data = dir.join(format!("data-{choice:?}"));
    let mut tiers = Tiers::with_devices(
        vec![
            ("fast".into(), fast.clone() as Arc<dyn Backend>),
            ("slow".into(), slow.clone() as Arc<dyn Backend>),
        ],
        &data,
        Box::new(spindle_tiers::placement::DecayedLfu::new(0)),
    )
    .at("setting up the tiers")?;
    tiers.set_sample_every(Duration::from_millis(100));
    // The simulated devices count their own busy time: `%util` from them,
    // not from /proc/diskstats.
    tiers.sample_busy_from("fast", fast.clone());
    tiers.sample_busy_from("slow", slow.clone());
    tiers.set_choice(choice);
    for i in 0..a.tracks {
        for d in ["fast", "slow"] {
            tiers
                .index()
                .add(&format!("t{i:04}.flac"), d, a.track_bytes as u64)
                .at("indexing the tracks")?;
        }
    }
    let tiers = Arc::new(tiers);
    tiers.start_background();
    // Open loop: requests arrive at a fixed mean rate (exponential gaps,
    // like listeners pressing play), whatever the devices' speed; time to
    // first byte counts from the arrival.
    let mut rng = rand::rngs::SmallRng::seed_from_u64(a.seed);
    let t0 = Instant::now();
    let mut at = Duration::ZERO;
    let mut handles = Vec::with_capacity(a.requests);
    for _ in 0..a.requests {
        let gap: f64 = -(1.0 - rng.gen::<f64>()).ln() / a.rate;
        at += Duration::from_secs_f64(gap);
        let t = TrackRef {
            key: format!("t{:04}.flac", rng.gen_range(0..a.tracks)),
            folder: None,
        };
        tokio::time::sleep_until((t0 + at).into()).await;
        let tiers = tiers.clone();
        let arrived = Instant::now();
        handles.push(tokio::spawn(async move {
            let what = || format!("streaming {}", t.key);
            let mut s = tiers.open(&t, 0).await.at_with(what)?;
            let dev = s.device().to_owned();
            let first = s.next_chunk().await.transpose().at_with(what)?;
            let ttfb = arrived.elapsed().as_secs_f64() * 1000.0;
            if first.is_none() {
                return Err(BenchError::Peer(format!("{}: empty stream", t.key)));
            }
            while let Some(c) = s.next_chunk().await {
                c.at_with(what)?;
            }
            Ok((ttfb, dev))
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        all.push(h.await.at("a stream request")??);
    }
    let elapsed = t0.elapsed();
    let fast_util = fast.busy().as_secs_f64() / elapsed.as_secs_f64();
    let slow_util = slow.busy().as_secs_f64() / elapsed.as_secs_f64();
    let mut ttfb: Vec<f64> = all.iter().map(|x| x.0).collect();
    ttfb.sort_by(f64::total_cmp);
    let n = all.len().max(1) as f64;
    let fast_n = all.iter().filter(|x| x.1 == "fast").count() as f64;
    Ok(RunResult {
        choice,
        reads: all.len(),
        p50_ms: pct(&ttfb, 0.5),
        p99_ms: pct(&ttfb, 0.99),
        fast_share: fast_n / n,
        slow_share: 1.0 - fast_n / n,
        fast_util: fast_util.min(1.0),
        slow_util: slow_util.min(1.0),
        elapsed,
    })
}

/// Both runs: reads chosen by %util, and by latency.
#[derive(Debug, Clone)]
pub struct DevicesReport {
    pub options: DevicesOptions,
    pub by_util: RunResult,
    pub by_latency: RunResult,
}

/// Runs both choices over two throttled folders in a temporary folder.
pub fn run_devices(a: &DevicesOptions) -> Result<DevicesReport, BenchError> {
    let dir = tempfile_dir()?;
    let data: Vec<u8> = (0..a.track_bytes).map(|i| (i % 251) as u8).collect();
    for d in ["fast", "slow"] {
        std::fs::create_dir_all(dir.path.join(d))?;
        for i in 0..a.tracks {
            std::fs::write(dir.path.join(d).join(format!("t{i:04}.flac")), &data)?;
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let by_util = rt.block_on(one_run(a, &dir.path, Choice::Util))?;
    let by_latency = rt.block_on(one_run(a, &dir.path, Choice::Latency))?;
    Ok(DevicesReport {
        options: a.clone(),
        by_util,
        by_latency,
    })
}

impl DevicesReport {
    /// The result table.
    pub fn render(&self) -> String {
        render(&self.options, &self.by_util, &self.by_latency)
    }

    /// Fails when choosing by latency gave a worse p99 than by %util.
    pub fn check(&self) -> Result<(), BenchError> {
        let (util, lat) = (&self.by_util, &self.by_latency);
        let no_worse = matches!(
            lat.p99_ms.partial_cmp(&util.p99_ms),
            Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal)
        );
        if !no_worse {
            return Err(BenchError::Check(format!(
                "choice by latency had a worse p99 ({:.2} ms) than choice by %util ({:.2} ms)",
                lat.p99_ms, util.p99_ms
            )));
        }
        Ok(())
    }
}

fn render(a: &DevicesOptions, util: &RunResult, lat: &RunResult) -> String {
    let mut s = format!(
        "device choice: fast device {} ms × 32 at once, slow device {} ms × 1 at once; {} requests/s arriving, {} reads per run of {} KiB tracks\n\n",
        a.fast_ms,
        a.slow_ms,
        a.rate,
        util.reads,
        a.track_bytes / 1024
    );
    s.push_str(&format!(
        "{:<22} {:>9} {:>9} {:>11} {:>11} {:>10} {:>10} {:>8}\n",
        "choice", "p50 ms", "p99 ms", "fast share", "slow share", "fast util", "slow util", "secs"
    ));
    for r in [util, lat] {
        let name = match r.choice {
            Choice::Util => "by %util (MogileFS)",
            Choice::Latency => "by latency (Spindle)",
        };
        s.push_str(&format!(
            "{:<22} {:>9.2} {:>9.2} {:>10.1}% {:>10.1}% {:>9.0}% {:>9.0}% {:>8.2}\n",
            name,
            r.p50_ms,
            r.p99_ms,
            100.0 * r.fast_share,
            100.0 * r.slow_share,
            100.0 * r.fast_util,
            100.0 * r.slow_util,
            r.elapsed.as_secs_f64()
        ));
    }
    s.push_str(&format!(
        "\nlatency vs %util: p99 {:.1}× lower; the fast device takes {:.1}× the slow one's reads (by %util: {:.1}×)\n",
        util.p99_ms / lat.p99_ms.max(1e-9),
        lat.fast_share / lat.slow_share.max(1e-9),
        util.fast_share / util.slow_share.max(1e-9),
    ));
    s
}

/// A temporary folder removed on drop.
struct TempDir {
    path: std::path::PathBuf,
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn tempfile_dir() -> Result<TempDir, BenchError> {
    let path = std::env::temp_dir().join(format!("spindle-bench-devices-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&path)?;
    Ok(TempDir { path })
}
