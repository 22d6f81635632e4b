//! `spindle tiers bench-devices`: reads chosen by `%util` (MogileFS's
//! default) against by measured latency, over a fast and a slow throttled
//! device (the harness and its options are `spindle_bench::devices`).

use spindle_bench::run_devices;

/// Arguments of `spindle tiers bench-devices`: the harness's own options.
pub use spindle_bench::DevicesOptions as BenchArgs;

pub fn run(a: &BenchArgs) -> anyhow::Result<()> {
    let report = run_devices(a)?;
    print!("{}", report.render());
    report.check()?;
    Ok(())
}
