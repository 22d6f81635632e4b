//! `spindle tiers …`: the storage tiers. `simulate` runs the hot-tier
//! policy simulation (the logic lives in `spindle_tiers::sim`; this file
//! turns the command line into a run and prints it).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Subcommand;
use spindle_tiers::sim::{self, Plan, SimOptions};

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
    #[command(flatten)]
    pub sim: SimOptions,
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
    let mut plan = Plan::prepare(&args.sim)?;
    eprintln!("{plan}");
    let (expected, per_trace) = (plan.traces(), plan.runs_per_trace());
    let bar = progress_bar((expected * per_trace) as u64);
    let started = std::time::Instant::now();
    // Without a terminal, a line per finished trace instead of a bar.
    let plain = !std::io::stderr().is_terminal();
    let out = plan.run(&|p| match p {
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
    });
    bar.finish_and_clear();
    eprintln!("simulated in {:.1} s", out.seconds);
    if !args.no_chart {
        out.write_charts(&args.chart, &mut |p| eprintln!("chart: {}", p.display()))?;
    }
    match args.json.as_deref() {
        Some(p) if p == Path::new("-") => println!("{}", out.json()),
        Some(p) => {
            out.write_json(p)?;
            print!("{out}");
        }
        None => print!("{out}"),
    }
    Ok(())
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
