//! `spindle scrobble run|auth|status|flush|love`: the scrobbler daemon
//! and its controls. The daemon lives in `spindle-scrobble`; this file
//! turns arguments into its configs and prints.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::Subcommand;
use spindle_scrobble::control::{self, AuthStart};
use spindle_scrobble::{Config, Paths};

#[derive(Debug, Subcommand)]
pub enum ScrobbleCommand {
    /// Watch every MPRIS2 player on the session bus and scrobble to the configured services.
    Run,
    /// Authorise a service: Last.fm-style desktop approval, or a ListenBrainz token.
    Auth {
        /// The service's name in scrobble.toml.
        service: String,
        /// A ListenBrainz token (else read from stdin).
        #[arg(long)]
        token: Option<String>,
        /// How long to wait for the approval, in seconds.
        #[arg(long, default_value_t = 3600)]
        timeout: u64,
    },
    /// Show the players seen, the current plays and each service's queue.
    Status {
        /// Print the daemon's status as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Send queued scrobbles now (asks a running daemon, else sends itself).
    Flush {
        /// How long to keep trying, in seconds (without a daemon).
        #[arg(long, default_value_t = 30)]
        timeout: u64,
    },
    /// Love the track playing now on every service.
    Love {
        /// Unlove it instead.
        #[arg(long)]
        unlove: bool,
    },
}

fn load(config: Option<&Path>) -> anyhow::Result<(Config, Paths)> {
    let mut paths = Paths::from_env();
    let file = config.map_or_else(|| paths.config_file(), Path::to_path_buf);
    if let Some(dir) = config.and_then(Path::parent) {
        // Credentials live beside an explicitly named config file.
        paths.config_dir = dir.to_path_buf();
    }
    let cfg = Config::load(&file)?;
    Ok((cfg, paths))
}

pub fn run(cmd: &ScrobbleCommand, config: Option<&PathBuf>) -> anyhow::Result<()> {
    let (cfg, paths) = load(config.map(PathBuf::as_path))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    match cmd {
        ScrobbleCommand::Run => rt.block_on(control::run_daemon(cfg, paths))?,
        ScrobbleCommand::Auth {
            service,
            token,
            timeout,
        } => rt.block_on(auth(&cfg, &paths, service, token.as_deref(), *timeout))?,
        ScrobbleCommand::Status { json: true } => {
            let st = control::running_status(&paths).unwrap_or_default();
            println!("{}", serde_json::to_string_pretty(&st)?);
        }
        ScrobbleCommand::Status { json: false } => print!("{}", control::status(&cfg, &paths)),
        ScrobbleCommand::Flush { timeout } => match control::signal_flush(&paths) {
            Some(pid) => println!("asked the running scrobbler (pid {pid}) to send its queues now"),
            None => rt.block_on(control::flush_here(
                &cfg,
                &paths,
                Duration::from_secs(*timeout),
                &mut |f| println!("{f}"),
            ))?,
        },
        ScrobbleCommand::Love { unlove } => {
            rt.block_on(control::love(&cfg, &paths, !*unlove, &mut |l| {
                println!("{l}")
            }))?
        }
    }
    Ok(())
}

async fn auth(
    cfg: &Config,
    paths: &Paths,
    name: &str,
    token: Option<&str>,
    timeout: u64,
) -> anyhow::Result<()> {
    match control::start_auth(cfg, name).await? {
        AuthStart::LastFm(a) => {
            println!("Open this page, log in and allow Spindle to scrobble:");
            println!("{}", a.url);
            println!("Waiting for the approval…");
            let done = a.finish(paths, name, Duration::from_secs(timeout)).await?;
            println!(
                "Authorised as {}; the session key is in {} (mode 0600).",
                done.user,
                done.file.display()
            );
        }
        AuthStart::ListenBrainz { url } => {
            let token = match token {
                Some(t) => t.to_owned(),
                None => {
                    eprintln!("Paste the ListenBrainz token (from the service's settings page):");
                    let mut line = String::new();
                    std::io::stdin()
                        .read_line(&mut line)
                        .context("reading the token")?;
                    line.trim().to_owned()
                }
            };
            let done = control::store_listenbrainz_token(paths, name, &url, &token).await?;
            println!(
                "Token valid for {}; stored in {} (mode 0600).",
                done.user,
                done.file.display()
            );
        }
    }
    if let Some(pid) = control::signal_flush(paths) {
        println!("Told the running scrobbler (pid {pid}) to use it.");
    }
    Ok(())
}
