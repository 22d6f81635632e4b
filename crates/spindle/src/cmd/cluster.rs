//! `spindle cluster …`: several Spindle servers on one Garage cluster.
//! `simulate` runs the capacity model (the logic lives in
//! `spindle_capacity::sim`); `status`, `promote` and `rejoin` read and
//! write the cluster's bucket (`spindle_server::cluster`). This file
//! turns the command line into those calls and prints.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::Subcommand;
use spindle_capacity::sim::{self, ClusterOptions, Params};
use spindle_server::cluster::bucket::Bucket;
use spindle_server::cluster::{generation, status, ClusterConfig};

/// Subcommands of `spindle cluster`.
#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// How many Spindle nodes, SSD bytes per node, network per node and
    /// Garage nodes and disks a catalogue and listener population need.
    Simulate(SimulateArgs),
    /// The cluster as its bucket shows it: the generation, the primary and
    /// its heartbeat, each node's role, last manifest and lag.
    Status {
        #[command(flatten)]
        config: ConfigArg,
        /// Print JSON instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Make this node (its server running) the primary: refused while the
    /// primary's heartbeat is fresh. Writes the next generation; the
    /// server applies the rest of the old one and takes over.
    Promote {
        #[command(flatten)]
        config: ConfigArg,
        /// Promote even though the primary's heartbeat is younger than
        /// `lease_secs` (it is dead but its last heartbeat is recent, or
        /// it cannot reach the bucket). Two primaries at once lose writes.
        #[arg(long)]
        force: bool,
        /// How long to wait for the server to take over, seconds.
        #[arg(long, default_value_t = 30)]
        wait: u64,
    },
    /// On a deposed primary, its server stopped: set aside what it
    /// committed after the new generation's cut (as files `spindle listens
    /// import` reads) and its files, so its next start follows the new
    /// primary as a replica.
    Rejoin {
        #[command(flatten)]
        config: ConfigArg,
    },
}

/// The settings file with the `[cluster]` section.
#[derive(Debug, clap::Args)]
pub struct ConfigArg {
    /// The server's settings file (default: $SPINDLE_SERVER_CONFIG, else
    /// the XDG one), whose `[cluster]` and `[tiers]` name the bucket.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
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

pub fn run(cmd: &ClusterCommand, data_dir: &Path) -> anyhow::Result<()> {
    let find = |c: &ConfigArg| ClusterConfig::find(c.config.as_deref());
    match cmd {
        ClusterCommand::Simulate(args) => simulate(args),
        ClusterCommand::Status { config, json } => {
            let cfg = find(config)?;
            let bucket = Bucket::new(cfg.s3.clone());
            let report = block_on(status::read(&bucket))??
                .context("the bucket holds no cluster yet (no generation object)")?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{report}");
            }
            Ok(())
        }
        ClusterCommand::Promote {
            config,
            force,
            wait,
        } => {
            let cfg = find(config)?;
            let line = block_on(generation::promote(
                &cfg,
                *force,
                Duration::from_secs(*wait),
            ))??;
            println!("{line}");
            Ok(())
        }
        ClusterCommand::Rejoin { config } => {
            let cfg = find(config)?;
            let r = block_on(generation::rejoin(&cfg, data_dir))??;
            println!(
                "rejoined: {} listens committed after the cut are in {} (import them with `spindle listens import`); the old files are in {}; the next `spindle serve` starts from the newest snapshot as a replica of generation {}",
                r.unshipped,
                r.unshipped_dir.display(),
                r.moved_to.display(),
                r.generation
            );
            Ok(())
        }
    }
}

fn block_on<F: std::future::Future>(f: F) -> anyhow::Result<F::Output> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    Ok(rt.block_on(f))
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
