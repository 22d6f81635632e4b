//! `spindle cluster …`: several Spindle servers on one Garage cluster.
//! `simulate` runs the capacity model (the logic lives in
//! `spindle_cluster::sim`; this file turns the command line into a run
//! and prints it).

use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;
use spindle_cluster::sim::{self, ClusterOptions, Params};

/// Subcommands of `spindle cluster`.
#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// How many Spindle nodes, SSD bytes per node, network per node and
    /// Garage nodes and disks a catalogue and listener population need.
    Simulate(SimulateArgs),
}

/// Arguments of `spindle cluster simulate`.
#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub sim: ClusterOptions,
    /// Print the results as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also draw the nodes and SSD per node against the listeners as an
    /// SVG chart in FILE.
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
}

pub fn run(cmd: &ClusterCommand) -> anyhow::Result<()> {
    match cmd {
        ClusterCommand::Simulate(args) => simulate(args),
    }
}

fn simulate(args: &SimulateArgs) -> anyhow::Result<()> {
    let out = Params::from_options(&args.sim)?.simulate();
    if let Some(path) = &args.chart {
        let svg = sim::chart::svg(&out, "Spindle cluster capacity");
        std::fs::write(path, svg)
            .with_context(|| format!("writing the chart {}", path.display()))?;
        eprintln!("chart: {}", path.display());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print!("{}", sim::report::table(&out));
    }
    Ok(())
}
