//! `spindle bench …`: comparison benchmarks. The harnesses live in
//! `spindle-bench`; this file turns each command line into its options
//! and prints the reports.

use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;
use spindle_bench::{run_history, run_rates, run_scan_bench, run_stream};
use spindle_bench::{run_library_sizes, spawn_worker, worker_main, LibrarySizes, Side, SizesEvent};
use spindle_bench::{ScanBenchOptions, ScrobbleOptions, StreamOptions};

/// Benchmarks that run Spindle and a peer in one run and print ratios.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// The library store and query engine against SQLite (XMMS2's medialib
    /// schema and a tuned layout), on a generated library.
    Library(LibraryArgs),
    /// Scanning files against `beet import -A -C` over the same files.
    Scan(ScanArgs),
    /// Scrobbles per second through track.scrobble, and charts over a
    /// large history.
    Scrobble(ScrobbleArgs),
    /// Streaming against nginx over the same files: whole files and 64 KiB
    /// ranges with wrk, and thousands of paced 320 kbit/s listeners.
    Stream(StreamArgs),
    /// A 3000×3000 JPEG cover to 300 px through the cover pipeline, cold
    /// and cached, beside a whole-image decode.
    Covers(super::bench_covers::CoversArgs),
    /// p50/p99 of the Subsonic browsing and search methods over a
    /// generated library of 100,000 tracks, on loopback.
    Subsonic(super::bench_subsonic::SubsonicArgs),
    /// Transcodes through `stream` against the same ffmpeg command run
    /// directly: throughput, CPU, time to first byte cold and cached.
    Transcode(super::bench_transcode::TranscodeArgs),
    /// One contestant of `bench library`, in a process of its own (internal).
    #[command(hide = true)]
    LibraryWorker {
        /// The request, as JSON.
        request: String,
    },
}

#[derive(Debug, clap::Args)]
pub struct LibraryArgs {
    /// Number of entries to generate.
    #[arg(long, default_value_t = 10_000)]
    pub entries: u32,
    /// Several sizes in one run, e.g. 10000,100000 (overrides --entries).
    #[arg(long, value_delimiter = ',', value_name = "N,N,...")]
    pub sizes: Vec<u32>,
    /// Timed rounds of the seven queries (after one warm-up round).
    #[arg(long, default_value_t = 10)]
    pub rounds: usize,
    /// Seed of the generated library.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Contestants: spindle, tuned, xmms2.
    #[arg(long, value_delimiter = ',', default_value = "spindle,tuned,xmms2")]
    pub sides: Vec<String>,
    /// Keep the loaded libraries in DIR (one subdirectory per size with
    /// --sizes) and reuse them on the next run with the same size and seed.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Print the reports as JSON instead of Markdown tables.
    #[arg(long)]
    pub json: bool,
    /// Also print the SQL each SQLite layout runs for the seven queries,
    /// with SQLite's query plans.
    #[arg(long)]
    pub show_sql: bool,
}

pub fn run(cmd: &BenchCommand, _data_dir: &std::path::Path) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Library(args) => library(args),
        BenchCommand::Scan(args) => scan(args),
        BenchCommand::Scrobble(args) => scrobble(args),
        BenchCommand::Stream(args) => stream(args),
        BenchCommand::Covers(args) => super::bench_covers::run(args),
        BenchCommand::Subsonic(args) => super::bench_subsonic::run(args),
        BenchCommand::Transcode(args) => super::bench_transcode::run(args),
        BenchCommand::LibraryWorker { request } => {
            println!("{}", worker_main(request)?);
            Ok(())
        }
    }
}

fn library(args: &LibraryArgs) -> anyhow::Result<()> {
    let sides = args
        .sides
        .iter()
        .map(|s| {
            Side::parse(s.trim())
                .with_context(|| format!("unknown contestant '{s}' (spindle, tuned, xmms2)"))
        })
        .collect::<anyhow::Result<Vec<Side>>>()?;
    let sizes = if args.sizes.is_empty() {
        vec![args.entries]
    } else {
        args.sizes.clone()
    };
    let exe = std::env::current_exe().context("finding the spindle executable for the workers")?;
    let opts = LibrarySizes {
        sizes,
        rounds: args.rounds,
        seed: args.seed,
        sides,
        keep: args.keep.clone(),
        show_sql: args.show_sql,
    };
    let reports = run_library_sizes(
        &opts,
        &mut |req| spawn_worker(&exe, &["bench", "library-worker"], req),
        &mut |ev| match ev {
            SizesEvent::Size(n) => eprintln!("== bench library: {n} entries"),
            SizesEvent::Log(line) => eprintln!("   {line}"),
            SizesEvent::Sql { side, statements } => {
                println!("-- {}", side.label());
                for (q, (sql, plan)) in statements {
                    println!("-- {q}\n{sql};");
                    for line in plan.lines() {
                        println!("--   {line}");
                    }
                    println!();
                }
            }
            SizesEvent::Report(r) if !args.json => println!("{}", r.render()),
            SizesEvent::Report(_) => {}
        },
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    }
    Ok(())
}

// `bench scan`: the first scan and a no-change rescan against
// `beet import -A -C` (the harness is `spindle_bench::scan`).
#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    /// Number of files to generate.
    #[arg(long, default_value_t = 10_000)]
    pub files: usize,
    /// The beet executable (default: .venv/bin/beet, else beet on PATH).
    #[arg(long, env = "SPINDLE_BEET")]
    pub beet: Option<PathBuf>,
}

fn scan(args: &ScanArgs) -> anyhow::Result<()> {
    let opts = ScanBenchOptions {
        files: args.files,
        beet: args.beet.clone(),
    };
    let report = run_scan_bench(&opts, &mut |line| println!("{line}"))?;
    print!("{}", report.render());
    Ok(())
}

// `bench scrobble`: against a fresh `spindle serve` and Maloja, then charts
// over a large history (the harness is `spindle_bench::scrobble`).
#[derive(Debug, clap::Args)]
pub struct ScrobbleArgs {
    /// Scrobbles to send Spindle in all.
    #[arg(long, default_value_t = 100_000)]
    pub scrobbles: usize,
    /// Concurrent clients.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Listens in the history the chart query runs over (0 skips it).
    #[arg(long, default_value_t = 1_000_000)]
    pub chart_listens: usize,
    /// Scrobbles to send Maloja through each of its APIs (it is far
    /// slower; rates are per second, so they compare across counts).
    #[arg(long, default_value_t = 2_000)]
    pub maloja_scrobbles: usize,
    /// Skip Maloja (e.g. in CI).
    #[arg(long)]
    pub no_maloja: bool,
    /// The maloja executable (default: .venv/bin/maloja here or above,
    /// else maloja on PATH).
    #[arg(long, env = "SPINDLE_MALOJA")]
    pub maloja: Option<PathBuf>,
}

fn scrobble(args: &ScrobbleArgs) -> anyhow::Result<()> {
    let maloja = if args.no_maloja {
        None
    } else {
        Some(spindle_bench::scrobble::find_maloja(
            args.maloja.as_deref(),
        )?)
    };
    let opts = ScrobbleOptions {
        spindle: std::env::current_exe().context("finding the spindle binary")?,
        scrobbles: args.scrobbles,
        clients: args.clients,
        maloja_scrobbles: args.maloja_scrobbles,
        maloja,
    };
    let rates = run_rates(&opts, &mut |line| eprintln!("{line}"))?;
    print!("{}", rates.render());
    rates.check()?;
    if args.chart_listens > 0 {
        print!("{}", run_history(args.chart_listens)?.render());
    }
    Ok(())
}

// `bench stream`: the harness is `spindle_bench::stream` (docs/bench-stream.md).
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

fn stream(args: &StreamArgs) -> anyhow::Result<()> {
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
