//! One module per subcommand; `dispatch` turns parsed arguments into
//! library calls.

pub mod backup;
pub mod bench;
pub mod cluster;
pub mod config;
pub mod corrections;
pub mod db;
pub mod forward;
pub mod iobench;
pub mod listens;
pub mod query;
pub mod scan;
pub mod scrobble;
pub mod serve;
pub mod tiers;
pub mod tiers_bench;
pub mod tiers_ops;
pub mod user;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use spindle_server::Accounts;
use spindle_tiers::TiersConfig;

use crate::cli::{Cli, Command};

/// A query pattern that does not parse: exits with status 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

pub fn exit_code_for(err: &anyhow::Error) -> u8 {
    if err.downcast_ref::<UsageError>().is_some() {
        2
    } else {
        1
    }
}

/// `$XDG_DATA_HOME/spindle`, else `~/.local/share/spindle` (the XDG lookup
/// is the `directories` crate's), else `.spindle` without a home.
pub fn default_data_dir() -> PathBuf {
    directories::ProjectDirs::from("", "", "spindle")
        .map_or_else(|| PathBuf::from(".spindle"), |d| d.data_dir().to_path_buf())
}

/// Opens the accounts store of a data dir.
pub fn open_accounts(data_dir: &Path) -> anyhow::Result<Accounts> {
    let dir = data_dir.join("accounts");
    Accounts::open(&dir).with_context(|| format!("opening the accounts in {}", dir.display()))
}

/// Seconds since the UNIX epoch.
pub fn now() -> i64 {
    spindle_server::SystemClock.now_secs()
}

/// The `[tiers]` section of the server config (`TiersConfig::find`).
pub fn tiers_config(path: Option<&Path>) -> anyhow::Result<Option<TiersConfig>> {
    Ok(TiersConfig::find(path)?)
}

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    let data_dir = cli.data_dir.clone().unwrap_or_else(default_data_dir);
    match &cli.command {
        Command::Serve { args } => serve::run(args, cli.data_dir.as_deref()),
        Command::Config(cmd) => config::run(cmd),
        Command::Query(args) => query::run(args, &data_dir),
        Command::Scan(args) => scan::run(args, &data_dir),
        Command::Db(cmd) => db::run(cmd, &data_dir),
        Command::Iobench(args) => iobench::run(args).map(|()| ExitCode::SUCCESS),
        Command::Bench(cmd) => bench::run(cmd, &data_dir).map(|()| ExitCode::SUCCESS),
        Command::User(cmd) => user::run_user(cmd, &data_dir).map(|()| ExitCode::SUCCESS),
        Command::Apikey(cmd) => user::run_apikey(cmd, &data_dir).map(|()| ExitCode::SUCCESS),
        Command::Backup { dir } => backup::run_backup(&data_dir, dir).map(|()| ExitCode::SUCCESS),
        Command::Restore { dir } => backup::run_restore(&data_dir, dir).map(|()| ExitCode::SUCCESS),
        Command::Listens(cmd) => listens::run(cmd, &data_dir).map(|()| ExitCode::SUCCESS),
        Command::Tiers(cmd) => tiers::run(cmd, &data_dir).map(|()| ExitCode::SUCCESS),
        Command::Cluster(cmd) => cluster::run(cmd, &data_dir).map(|()| ExitCode::SUCCESS),
        Command::Forward(cmd) => forward::run(cmd, &data_dir).map(|()| ExitCode::SUCCESS),
        Command::Scrobble { config, command } => {
            scrobble::run(command, config.as_ref()).map(|()| ExitCode::SUCCESS)
        }
    }
}
