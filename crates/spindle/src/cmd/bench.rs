//! `spindle bench …`: comparison benchmarks.

use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;
use spindle_bench::{run_library_sizes, spawn_worker, worker_main, LibrarySizes, Side, SizesEvent};

/// Benchmarks that run Spindle and a peer in one run and print ratios.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// The library store and query engine against SQLite (XMMS2's medialib
    /// schema and a tuned layout), on a generated library.
    Library(LibraryArgs),
    /// Scanning files against `beet import -A -C` over the same files.
    Scan(super::bench_scan::ScanArgs),
    /// Scrobbles per second through track.scrobble, and charts over a
    /// large history.
    Scrobble(super::bench_scrobble::ScrobbleArgs),
    /// Streaming against nginx over the same files: whole files and 64 KiB
    /// ranges with wrk, and thousands of paced 320 kbit/s listeners.
    Stream(super::bench_stream::StreamArgs),
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
        BenchCommand::Scan(args) => super::bench_scan::run(args),
        BenchCommand::Scrobble(args) => super::bench_scrobble::run(args),
        BenchCommand::Stream(args) => super::bench_stream::run(args),
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
