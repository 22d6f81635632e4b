//! `spindle bench stream`: Spindle's streaming against nginx over the same
//! folder in one run: wrk for throughput, then thousands of paced
//! 320 kbit/s listeners (the harness is `spindle_bench::stream`; see
//! docs/bench-stream.md).

use std::path::PathBuf;

use anyhow::Context;
use spindle_bench::{run_stream, StreamOptions};

#[derive(Debug, clap::Args)]
pub struct StreamArgs {
    /// Files in the corpus.
    #[arg(long, default_value_t = 100)]
    pub files: usize,
    /// Smallest file, in MB.
    #[arg(long, default_value_t = 3)]
    pub min_mb: u64,
    /// Largest file, in MB.
    #[arg(long, default_value_t = 10)]
    pub max_mb: u64,
    /// Keep the corpus in DIR and reuse it next time (default: a temporary
    /// folder, removed afterwards).
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
    /// Seconds per wrk run.
    #[arg(long, default_value_t = 10)]
    pub duration: u64,
    /// Concurrent connections, one wrk run per count.
    #[arg(long, value_delimiter = ',', default_value = "64,1024")]
    pub connections: Vec<usize>,
    /// Workloads: whole (entire files) and range (random 64 KiB ranges).
    #[arg(long, value_delimiter = ',', default_value = "whole,range")]
    pub workloads: Vec<String>,
    /// Rounds; the servers take turns within each round, the order
    /// rotating from round to round. Medians are reported.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Spindle's IO engines to measure, one `spindle serve --io-engine E`
    /// each: tokio, psync, uring, uring-sqpoll.
    #[arg(long, value_delimiter = ',', default_value = spindle_server::stream::DEFAULT_ENGINE)]
    pub io_engines: Vec<String>,
    /// Paced 320 kbit/s listeners held against each server (0 skips the
    /// listeners test).
    #[arg(long, default_value_t = 5000)]
    pub listeners: usize,
    /// How long each listener listens, in seconds.
    #[arg(long, default_value_t = 60)]
    pub listen_seconds: u64,
    /// Skip the wrk runs (only the listeners test).
    #[arg(long)]
    pub no_throughput: bool,
    /// Skip nginx (Spindle alone, no ratios).
    #[arg(long)]
    pub no_nginx: bool,
    /// Let servers and load generator run on any CPU.
    #[arg(long)]
    pub no_pin: bool,
    /// The nginx executable (default: nginx on PATH or /usr/sbin/nginx).
    #[arg(long)]
    pub nginx: Option<PathBuf>,
    /// The wrk executable (default: wrk on PATH).
    #[arg(long)]
    pub wrk: Option<PathBuf>,
    /// Seed of the corpus sizes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

pub fn run(args: &StreamArgs) -> anyhow::Result<()> {
    let opts = StreamOptions {
        spindle: std::env::current_exe().context("finding the spindle binary")?,
        files: args.files,
        min_mb: args.min_mb,
        max_mb: args.max_mb,
        corpus: args.corpus.clone(),
        duration_secs: args.duration,
        connections: args.connections.clone(),
        workloads: args.workloads.clone(),
        rounds: args.rounds,
        io_engines: args.io_engines.clone(),
        listeners: args.listeners,
        listen_secs: args.listen_seconds,
        no_throughput: args.no_throughput,
        no_nginx: args.no_nginx,
        wrk: args.wrk.clone(),
        nginx: args.nginx.clone(),
        no_pin: args.no_pin,
        seed: args.seed,
    };
    run_stream(&opts, &mut |line| eprintln!("{line}"), &mut |section| {
        print!("{}", section.render())
    })?;
    Ok(())
}
