//! Command-line structures: plain data, no behaviour.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::cmd::config::ConfigCommand;
use crate::cmd::listens::ListensCommand;
use crate::cmd::scan::ScanArgs;
use crate::cmd::scrobble::ScrobbleCommand;
use crate::cmd::serve::ServeArgs;
use crate::cmd::tiers::TiersCommand;
use crate::cmd::user::{ApikeyCommand, UserCommand};
use crate::cmd::{bench::BenchCommand, db::DbCommand, iobench::IobenchArgs, query::QueryArgs};

/// Spindle: your music library, its query language, scrobbling and streaming.
#[derive(Debug, Parser)]
#[command(name = "spindle", version, about, long_about = None)]
pub struct Cli {
    /// Where the library lives (default: $XDG_DATA_HOME/spindle, i.e.
    /// ~/.local/share/spindle).
    #[arg(long, global = true, value_name = "DIR", env = "SPINDLE_DATA_DIR")]
    pub data_dir: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the library and the scrobble APIs (Last.fm 2.0, Audioscrobbler 1.2, ListenBrainz).
    Serve {
        #[command(flatten)]
        args: ServeArgs,
    },
    /// The server's settings file: print the documented default, check one.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Add and refresh the audio files of music folders in the library.
    Scan(ScanArgs),
    /// Query the library with a collection pattern, e.g. 'artist:metallica tracknr>2'.
    Query(QueryArgs),
    /// Low-level database commands: add, set, delete, index, stats, compact, check, import, export.
    #[command(subcommand)]
    Db(DbCommand),
    /// Measure the disk: IOPS and latency against queue depth per IO engine.
    Iobench(IobenchArgs),
    /// Benchmarks that compare Spindle with its peers in one run.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Accounts: list, add, delete, new passwords, administrators,
    /// ListenBrainz tokens, public or private listening histories.
    #[command(subcommand)]
    User(UserCommand),
    /// API key and secret pairs for Last.fm clients.
    #[command(subcommand)]
    Apikey(ApikeyCommand),
    /// Copy the library, listens, accounts and user data into DIR (new or
    /// empty), also while a server runs (docs/backup.md).
    Backup {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// Bring a backup in DIR back into --data-dir, which must be new or empty.
    Restore {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// The listening history: imports, pulls from other services, corrections.
    #[command(subcommand)]
    Listens(ListensCommand),
    /// Storage tiers: status, pins, and the hot-tier policy simulation.
    #[command(subcommand)]
    Tiers(TiersCommand),
    /// Several Spindle servers on one Garage cluster: the capacity simulation.
    #[command(subcommand)]
    Cluster(crate::cmd::cluster::ClusterCommand),
    /// Forward each user's plays to Last.fm, ListenBrainz and compatible
    /// services: link, status, unlink.
    #[command(subcommand)]
    Forward(crate::cmd::forward::ForwardCommand),
    /// The scrobbler: every MPRIS2 player to Last.fm, ListenBrainz and Spindle servers.
    Scrobble {
        /// The configuration file (default: $XDG_CONFIG_HOME/spindle/scrobble.toml).
        #[arg(
            long,
            global = true,
            value_name = "FILE",
            env = "SPINDLE_SCROBBLE_CONFIG"
        )]
        config: Option<PathBuf>,
        #[command(subcommand)]
        command: ScrobbleCommand,
    },
}
