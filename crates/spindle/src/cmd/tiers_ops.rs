//! `spindle tiers status|pin|upload|bench-devices`: the storage tiers of
//! a server, from the command line.
//!
//! `status` reads the state a running `spindle serve` writes every two
//! seconds to `DATA/tiers/status.json` (no admin endpoint: the file works
//! with the server stopped too, and says how old it is). `pin` edits the
//! saved pins the server re-reads. `upload` copies the library's tracks
//! to the cold devices until each has `mindevcount` copies.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Subcommand;

use super::UsageError;

/// The runtime subcommands of `spindle tiers` (flattened into it).
#[derive(Debug, Subcommand)]
pub enum TiersOps {
    /// Each device with its measured latency (EWMA of time to first byte,
    /// await), load and bytes, and the hot tier's hit ratio, as the
    /// running server last wrote them.
    Status {
        /// Print the JSON the server wrote.
        #[arg(long)]
        json: bool,
    },
    /// Pin the tracks a query selects to the hot tier ('rating>=4'); the
    /// server re-reads pins within seconds.
    Pin {
        /// The query pattern to pin.
        pattern: Option<String>,
        /// List the saved pins, numbered.
        #[arg(long, conflicts_with_all = ["pattern", "remove"])]
        list: bool,
        /// Remove a pin, by its text or its number in --list.
        #[arg(long, value_name = "PIN", conflicts_with = "pattern")]
        remove: Option<String>,
    },
    /// Copy the library's tracks to the cold devices (folders, S3 buckets)
    /// until each has mindevcount copies.
    Upload {
        /// The music folders the library was scanned from (as given to
        /// `spindle serve --music`).
        #[arg(long, value_name = "DIR", required = true)]
        music: Vec<PathBuf>,
        /// The server config (default: $SPINDLE_SERVER_CONFIG, else
        /// $XDG_CONFIG_HOME/spindle/server.toml).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Benchmark device choice: a fast and a slow device (a throttled
    /// back end), reads chosen by %util (MogileFS's default) vs by
    /// measured latency; prints p50/p99 time to first byte and each
    /// device's share of the reads.
    BenchDevices(super::tiers_bench::BenchArgs),
}

pub fn run(cmd: &TiersOps, data_dir: &Path) -> anyhow::Result<()> {
    match cmd {
        TiersOps::Status { json } => status(data_dir, *json),
        TiersOps::Pin {
            pattern,
            list,
            remove,
        } => pin(data_dir, pattern.as_deref(), *list, remove.as_deref()),
        TiersOps::Upload { music, config } => upload(data_dir, music, config.as_deref()),
        TiersOps::BenchDevices(a) => super::tiers_bench::run(a),
    }
}

fn status(data_dir: &Path, json: bool) -> anyhow::Result<()> {
    if json {
        let text = spindle_tiers::runtime::read_status_text(data_dir)?;
        println!("{}", text.trim_end());
    } else {
        let s = spindle_tiers::runtime::read_status(data_dir)?;
        print!("{}", s.render(s.age_secs()));
    }
    Ok(())
}

fn pin(
    data_dir: &Path,
    pattern: Option<&str>,
    list: bool,
    remove: Option<&str>,
) -> anyhow::Result<()> {
    use spindle_server::pins::{self, PinError, Pinned};
    // A pin that does not parse or is not there is a usage error (exit 2).
    let usage = |e: PinError| match e {
        PinError::Syntax { .. } | PinError::NoSuchPin { .. } => UsageError(e.to_string()).into(),
        e => anyhow::Error::from(e),
    };
    match (remove, pattern.filter(|_| !list)) {
        (Some(r), _) => println!("unpinned {}", pins::unpin(data_dir, r).map_err(usage)?),
        (None, None) => {
            let pins = pins::list(data_dir)?;
            if pins.is_empty() {
                println!("no pins");
            }
            for (i, pin) in pins.iter().enumerate() {
                println!("{:>3}  {pin}", i + 1);
            }
        }
        (None, Some(pattern)) => match pins::pin(data_dir, pattern).map_err(usage)? {
            Pinned { added: false, .. } => println!("{pattern} was already pinned"),
            Pinned {
                tracks_now: Some(n),
                ..
            } => println!("pinned {pattern} ({n} tracks now)"),
            Pinned {
                tracks_now: None, ..
            } => println!("pinned {pattern}"),
        },
    }
    Ok(())
}

fn upload(data_dir: &Path, music: &[PathBuf], config: Option<&Path>) -> anyhow::Result<()> {
    let cfg = super::tiers_config(config)?
        .context("no [tiers] section in the server config: nothing to upload to")?;
    let report = spindle_server::upload::upload_library(cfg, music, data_dir, &mut |e| {
        eprintln!("spindle: upload: {e}");
    })?;
    println!("{report}");
    let failed = report.failed;
    anyhow::ensure!(
        failed == 0,
        "{failed} tracks have fewer than mindevcount copies"
    );
    Ok(())
}
