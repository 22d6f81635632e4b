//! `spindle tiers …`: the storage tiers. `simulate` runs the hot-tier
//! policy simulation (the logic lives in `spindle_tiers::sim`; this file
//! turns the command line into a run and prints it).

use std::io::{BufReader, IsTerminal};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Subcommand;
use spindle_tiers::sim::{self, chart, replay, report, targets, PolicyKind, Synthetic, Trace};

/// Subcommands of `spindle tiers`.
#[derive(Debug, Subcommand)]
pub enum TiersCommand {
    /// Simulate the hot-tier policies (LRU, ARC, S3-FIFO, W-TinyLFU,
    /// Spindle's, a static oracle set, Belady's limit) on synthetic
    /// workloads or a replayed access log; print hit ratios and draw them.
    Simulate(SimulateArgs),
    /// status, pin, upload, bench-devices: the tiers of a server.
    #[command(flatten)]
    Ops(super::tiers_ops::TiersOps),
}

/// Arguments of `spindle tiers simulate`.
#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// Tracks in the synthetic catalogue.
    #[arg(long, default_value_t = 100_000)]
    pub tracks: usize,
    /// Requests per synthetic trace.
    #[arg(long, default_value_t = 5_000_000)]
    pub requests: usize,
    /// Seed of the synthetic catalogue and traces.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Plays of listening history before each synthetic trace, drawn from
    /// the popularity of that time and replayed into the policies that
    /// count popularity, as `spindle serve` replays its listens at start
    /// [default: a fifth of --requests; 0: a cold start with no history].
    #[arg(long, value_name = "PLAYS")]
    pub history: Option<usize>,
    /// Zipf exponents of the synthetic traces.
    #[arg(long, value_delimiter = ',', default_value = "0.6,0.8,1.0,1.2")]
    pub exponents: Vec<f64>,
    /// Hot-tier sizes, in percent of the catalogue's bytes.
    #[arg(long, value_delimiter = ',', default_value = "1,5,10,20")]
    pub capacities: Vec<f64>,
    /// Synthetic workloads: stationary, shifting [default: both, or none
    /// with --replay].
    #[arg(long, value_delimiter = ',')]
    pub workloads: Option<Vec<String>>,
    /// Policies to compare [default: all].
    #[arg(long, value_delimiter = ',', value_parser = PolicyKind::parse)]
    pub policies: Option<Vec<PolicyKind>>,
    /// Replay the server's access log (`unix_ms<TAB>track_id<TAB>bytes`
    /// lines; see docs/tiers-policy.md).
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// A small run for smoke tests: 10,000 tracks, 300,000 requests.
    #[arg(long)]
    pub quick: bool,
    /// Worker threads [default: the number of cores].
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print the results as JSON (to FILE, or to stdout instead of the
    /// tables).
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Write one SVG chart per workload, named PREFIX-WORKLOAD.svg.
    #[arg(long, value_name = "PREFIX", default_value = "tiers-sim")]
    pub chart: PathBuf,
    /// Write no chart.
    #[arg(long)]
    pub no_chart: bool,
}

pub fn run(cmd: &TiersCommand, data_dir: &Path) -> anyhow::Result<()> {
    match cmd {
        TiersCommand::Simulate(args) => simulate(args),
        TiersCommand::Ops(ops) => super::tiers_ops::run(ops, data_dir),
    }
}

fn simulate(args: &SimulateArgs) -> anyhow::Result<()> {
    let (tracks, requests) = if args.quick {
        (10_000, 300_000)
    } else {
        (args.tracks, args.requests)
    };
    anyhow::ensure!(tracks >= 10, "--tracks must be at least 10");
    anyhow::ensure!(requests >= 1, "--requests must be at least 1");
    anyhow::ensure!(
        requests <= u32::MAX as usize,
        "--requests must be below 2^32"
    );
    for &c in &args.capacities {
        anyhow::ensure!(
            c > 0.0 && c <= 100.0,
            "hot-tier sizes are percentages in (0, 100], not {c}"
        );
    }
    for &s in &args.exponents {
        anyhow::ensure!(
            s > 0.0 && s < 10.0,
            "Zipf exponents must be in (0, 10), not {s}"
        );
    }
    let workloads: Vec<String> = match (&args.workloads, &args.replay) {
        (Some(w), _) => w.clone(),
        (None, Some(_)) => Vec::new(),
        (None, None) => vec!["stationary".into(), "shifting".into()],
    };
    for w in &workloads {
        anyhow::ensure!(
            w == "stationary" || w == "shifting",
            "unknown workload {w:?}; expected stationary or shifting"
        );
    }
    let policies = args
        .policies
        .clone()
        .unwrap_or_else(|| PolicyKind::ALL.to_vec());
    let capacities: Vec<f64> = args.capacities.iter().map(|c| c / 100.0).collect();
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));

    let replayed = match &args.replay {
        Some(path) => Some(read_replay(path)?),
        None => None,
    };
    let mut jobs: Vec<(String, f64)> = Vec::new();
    for w in &workloads {
        for &s in &args.exponents {
            jobs.push((w.clone(), s));
        }
    }
    let expected = jobs.len() + usize::from(replayed.is_some());
    let history = args.history.unwrap_or(requests / 5);
    // A replayed log has no history of its own.
    let synthetic = if jobs.is_empty() {
        String::new()
    } else {
        format!(" ({tracks} tracks, {requests} requests each after {history} plays of listening history, seed {})", args.seed)
    };
    eprintln!(
        "simulating {} policies × {} hot-tier sizes × {expected} traces{synthetic} on {threads} threads",
        policies.len(),
        capacities.len(),
    );
    let seed = args.seed;
    let traces = jobs
        .into_iter()
        .map(move |(w, s)| {
            let p = Synthetic {
                tracks,
                requests,
                exponent: s,
                seed,
                history,
            };
            if w == "stationary" {
                sim::workload::stationary(p)
            } else {
                sim::workload::shifting(p)
            }
        })
        .chain(replayed);

    let bar = progress_bar((expected * capacities.len() * policies.len()) as u64);
    let started = std::time::Instant::now();
    // Without a terminal, a line per finished trace instead of a bar.
    let per_trace = capacities.len() * policies.len();
    let plain = !std::io::stderr().is_terminal();
    let cells = sim::run(
        traces,
        expected,
        &capacities,
        &policies,
        threads,
        &|p| match p {
            sim::Progress::Trace { label } => bar.set_message(label),
            sim::Progress::Done { done, total, label } => {
                bar.set_position(done as u64);
                bar.set_message(label);
                if plain && done % per_trace == 0 {
                    eprintln!(
                        "trace {}/{expected} done ({done}/{total} runs, {:.0} s)",
                        done / per_trace,
                        started.elapsed().as_secs_f64()
                    );
                }
            }
        },
    );
    bar.finish_and_clear();
    let elapsed = started.elapsed().as_secs_f64();
    eprintln!("simulated in {elapsed:.1} s");
    let checks = targets::check(&cells);

    if !args.no_chart {
        for w in ["stationary", "shifting", "replay"] {
            let title = format!(
                "Hot-tier policies, {w} workload{}",
                if w == "replay" {
                    String::new()
                } else {
                    format!(" ({tracks} tracks, {requests} requests after {history} plays of history, seed {seed})")
                }
            );
            if let Some(svg) = chart::svg(&cells, w, &title) {
                let path = chart_path(&args.chart, w);
                std::fs::write(&path, svg)
                    .with_context(|| format!("writing the chart {}", path.display()))?;
                eprintln!("chart: {}", path.display());
            }
        }
    }

    let json = serde_json::json!({
        "tracks": tracks,
        "requests": requests,
        "history": history,
        "seed": seed,
        "seconds": elapsed,
        "cells": cells,
        "targets": checks,
    });
    match args.json.as_deref() {
        Some(p) if p == Path::new("-") => {
            println!("{}", serde_json::to_string_pretty(&json)?);
            return Ok(());
        }
        Some(p) => std::fs::write(p, serde_json::to_string_pretty(&json)? + "\n")
            .with_context(|| format!("writing {}", p.display()))?,
        None => {}
    }
    print!("{}", report::tables(&cells, &policies));
    println!();
    print!("{}", report::target_lines(&checks));
    Ok(())
}

fn read_replay(path: &Path) -> anyhow::Result<Trace> {
    let f = std::fs::File::open(path)
        .with_context(|| format!("opening the access log {}", path.display()))?;
    replay::read(BufReader::new(f)).with_context(|| format!("replaying {}", path.display()))
}

fn chart_path(prefix: &Path, workload: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(format!("-{workload}.svg"));
    PathBuf::from(s)
}

fn progress_bar(len: u64) -> indicatif::ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        indicatif::ProgressDrawTarget::stderr_with_hz(4)
    } else {
        indicatif::ProgressDrawTarget::hidden()
    };
    let bar = indicatif::ProgressBar::with_draw_target(Some(len), target);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:30} {pos}/{len} runs [{elapsed} / ~{eta}] {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}
