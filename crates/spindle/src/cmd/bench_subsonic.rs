//! `spindle bench subsonic`: p50/p99 latency of the Subsonic browsing and
//! search methods over a generated library, served in this process on
//! loopback (the harness is `spindle_bench::subsonic`; figures in
//! docs/benchmarks.md).

use std::path::PathBuf;

use spindle_bench::{run_subsonic, SubsonicOptions};

#[derive(Debug, clap::Args)]
pub struct SubsonicArgs {
    /// Tracks in the generated library.
    #[arg(long, default_value_t = 100_000)]
    pub tracks: u32,
    /// Timed requests per method.
    #[arg(long, default_value_t = 500)]
    pub requests: usize,
    /// Seed of the generated library.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Keep the library and its music folder in DIR and reuse them next
    /// time (default: a temporary folder, removed afterwards).
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Print the report as JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &SubsonicArgs) -> anyhow::Result<()> {
    let opts = SubsonicOptions {
        tracks: args.tracks,
        seed: args.seed,
        requests: args.requests,
        dir: args.keep.clone(),
    };
    let report = run_subsonic(&opts, &mut |line| eprintln!("   {line}"))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.render());
    }
    Ok(())
}
