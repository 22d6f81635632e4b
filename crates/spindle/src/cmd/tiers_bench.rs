//! `spindle tiers bench-devices`: reads chosen by `%util` (MogileFS's
//! default) against by measured latency, over a fast and a slow throttled
//! device (the harness is `spindle_bench::devices`).

use spindle_bench::{run_devices, DevicesOptions};

/// Arguments of `spindle tiers bench-devices`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
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

pub fn run(a: &BenchArgs) -> anyhow::Result<()> {
    let report = run_devices(&DevicesOptions {
        requests: a.requests,
        rate: a.rate,
        tracks: a.tracks,
        track_bytes: a.track_bytes,
        fast_ms: a.fast_ms,
        slow_ms: a.slow_ms,
        seed: a.seed,
    })?;
    print!("{}", report.render());
    report.check()?;
    Ok(())
}
