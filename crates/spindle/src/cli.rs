//! Command-line structures: plain data, no behaviour.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::cmd::listens::ListensCommand;
use crate::cmd::scan::ScanArgs;
use crate::cmd::scrobble::ScrobbleCommand;
use crate::cmd::tiers::TiersCommand;
use crate::cmd::user::{ApikeyCommand, UserCommand};
use crate::cmd::{bench::BenchCommand, db::DbCommand, iobench::IobenchArgs, query::QueryArgs};
use crate::logging::LogFormat;

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
        /// A music folder to serve (repeatable).
        #[arg(long, value_name = "DIR")]
        music: Vec<PathBuf>,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:4533")]
        listen: String,
        /// How streams read files: tokio, psync, uring or uring-sqpoll
        /// (io_uring falls back to psync where it is unavailable).
        #[arg(long, value_name = "ENGINE", default_value = spindle_server::stream::DEFAULT_ENGINE)]
        io_engine: String,
        /// The most a connection keeps queued in the kernel beyond what
        /// the client's TCP window takes, in KiB (TCP_NOTSENT_LOWAT); 0
        /// leaves the kernel's default. The cap keeps thousands of slow
        /// listeners from exhausting TCP memory.
        #[arg(long, value_name = "KIB", default_value_t = spindle_server::DEFAULT_SEND_QUEUE / 1024)]
        send_queue_kib: u32,
        /// The log on stderr: text (`spindle: …` lines) or json (one object
        /// per line). SPINDLE_LOG (else RUST_LOG) filters it, e.g. `debug` or
        /// `info,spindle_tiers=debug`; the default is info.
        #[arg(long, value_enum, value_name = "FORMAT", env = "SPINDLE_LOG_FORMAT", default_value_t = LogFormat::Text)]
        log_format: LogFormat,
    },
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
    /// Accounts for the scrobble APIs: add a user, print a ListenBrainz token,
    /// make a listening history public or private.
    #[command(subcommand)]
    User(UserCommand),
    /// API key and secret pairs for Last.fm clients.
    #[command(subcommand)]
    Apikey(ApikeyCommand),
    /// The listening history: import a Last.fm or ListenBrainz export.
    #[command(subcommand)]
    Listens(ListensCommand),
    /// Storage tiers: status, pins, and the hot-tier policy simulation.
    #[command(subcommand)]
    Tiers(TiersCommand),
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
