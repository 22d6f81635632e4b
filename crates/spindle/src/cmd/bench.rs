//! `spindle bench …`: comparison benchmarks. The harnesses and their
//! options (each a `clap::Args`) live in `spindle-bench`; this file
//! dispatches and prints the reports.

use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;
use spindle_bench::{run_covers, run_history, run_rates, run_scan_bench, run_stream};
use spindle_bench::{run_library_sizes, spawn_worker, worker_main, LibrarySizes, SizesEvent};
use spindle_bench::{run_subsonic, run_transcode, CoversOptions, ScanBenchOptions};
use spindle_bench::{ScrobbleOptions, StreamOptions, SubsonicOptions, TranscodeOptions};

/// Benchmarks that run Spindle and a peer in one run and print ratios.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// The library store and query engine against SQLite (XMMS2's medialib
    /// schema and a tuned layout), on a generated library.
    Library(LibrarySizes),
    /// Scanning files against `beet import -A -C` over the same files.
    Scan(ScanBenchOptions),
    /// Scrobbles per second through track.scrobble, and charts over a
    /// large history.
    Scrobble(ScrobbleOptions),
    /// Streaming against nginx over the same files: whole files and 64 KiB
    /// ranges with wrk, and thousands of paced 320 kbit/s listeners.
    Stream(StreamOptions),
    /// A 3000×3000 JPEG cover to 300 px through the cover pipeline, cold
    /// and cached, beside a whole-image decode.
    Covers(WithJson<CoversOptions>),
    /// p50/p99 of the Subsonic browsing and search methods over a
    /// generated library of 100,000 tracks, on loopback.
    Subsonic(WithJson<SubsonicOptions>),
    /// Transcodes through `stream` against the same ffmpeg command run
    /// directly: throughput, CPU, time to first byte cold and cached.
    Transcode(WithJson<TranscodeOptions>),
    /// Forwarding to a local Spindle through the journal: throughput, and
    /// the drain after a one-hour outage of 1,000 users × 10 tracks.
    Forward(WithJson<spindle_bench::forward::ForwardOptions>),
    /// One contestant of `bench library`, in a process of its own (internal).
    #[command(hide = true)]
    LibraryWorker {
        /// The request, as JSON.
        request: String,
    },
}

/// A benchmark's options, and how to print its report.
#[derive(Debug, clap::Args)]
pub struct WithJson<T: clap::Args> {
    #[command(flatten)]
    pub opts: T,
    /// Print the report as JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cmd: &BenchCommand, _data_dir: &std::path::Path) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Library(o) => library(o),
        BenchCommand::Scan(o) => {
            let report = run_scan_bench(o, &mut |line| println!("{line}"))?;
            print!("{}", report.render());
            Ok(())
        }
        BenchCommand::Scrobble(o) => scrobble(o),
        BenchCommand::Stream(o) => {
            let o = StreamOptions {
                spindle: exe()?,
                ..o.clone()
            };
            run_stream(&o, &mut |line| eprintln!("{line}"), &mut |section| {
                print!("{}", section.render())
            })?;
            Ok(())
        }
        BenchCommand::Covers(a) => {
            let report = run_covers(&a.opts)?;
            print(a.json, serde_json::to_string_pretty(&report), || {
                report.render()
            })
        }
        BenchCommand::Subsonic(a) => {
            let report = run_subsonic(&a.opts, &mut |line| eprintln!("   {line}"))?;
            print(a.json, serde_json::to_string_pretty(&report), || {
                report.render()
            })
        }
        BenchCommand::Transcode(a) => {
            let o = TranscodeOptions {
                spindle: exe()?,
                ..a.opts.clone()
            };
            let report = run_transcode(&o, &mut |line| eprintln!("== {line}"))?;
            print(a.json, serde_json::to_string_pretty(&report), || {
                report.render()
            })
        }
        BenchCommand::Forward(a) => {
            let report = spindle_bench::forward::run_forward(&a.opts)?;
            print(a.json, serde_json::to_string_pretty(&report), || {
                report.render()
            })
        }
        BenchCommand::LibraryWorker { request } => {
            println!("{}", worker_main(request)?);
            Ok(())
        }
    }
}

/// This binary, which the harnesses start as the server.
fn exe() -> anyhow::Result<PathBuf> {
    std::env::current_exe().context("finding the spindle binary")
}

/// Prints the report as `json` if asked, else as the Markdown `markdown`
/// makes of it.
fn print(
    as_json: bool,
    json: serde_json::Result<String>,
    markdown: impl FnOnce() -> String,
) -> anyhow::Result<()> {
    if as_json {
        println!("{}", json?);
    } else {
        print!("{}", markdown());
    }
    Ok(())
}

fn library(o: &LibrarySizes) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("finding the spindle executable for the workers")?;
    let reports = run_library_sizes(
        o,
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
            SizesEvent::Report(r) if !o.json => println!("{}", r.render()),
            SizesEvent::Report(_) => {}
        },
    )?;
    if o.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    }
    Ok(())
}

fn scrobble(o: &ScrobbleOptions) -> anyhow::Result<()> {
    let o = ScrobbleOptions {
        spindle: exe()?,
        ..o.clone()
    };
    let rates = run_rates(&o, &mut |line| eprintln!("{line}"))?;
    print!("{}", rates.render());
    rates.check()?;
    if o.chart_listens > 0 {
        print!("{}", run_history(o.chart_listens)?.render());
    }
    Ok(())
}
