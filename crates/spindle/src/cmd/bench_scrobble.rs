//! `spindle bench scrobble`: scrobbles per second through `track.scrobble`
//! against a fresh `spindle serve` and Maloja, then charts over a large
//! history (the harness is `spindle_bench::scrobble`).

use std::path::PathBuf;

use anyhow::Context;
use spindle_bench::{run_history, run_rates, ScrobbleOptions};

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

pub fn run(args: &ScrobbleArgs) -> anyhow::Result<()> {
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
