//! `spindle serve`: resolves its flags over the environment and the
//! settings file ([`Flags::settings`]: flag > environment > file >
//! default, docs/configuration.md), opens the server ([`Server::open`]:
//! the library, the scan, the watcher, the storage tiers), prints what it
//! found, and serves until SIGINT or SIGTERM ([`Server::run`], which stops
//! every background task; SIGHUP reloads the TLS certificate).
//!
//! Music folders: every `--music DIR` (or `[server] music`); without one,
//! the XDG music folder if it exists, else a demo library generated into
//! the data dir, so a fresh machine shows something real.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
/// `spindle serve`'s flags: the server's settings own them.
pub use spindle_server::settings::Flags as ServeArgs;
pub use spindle_server::settings::{env_var, settings_path, Flags};
use spindle_server::{shutdown_signal, Server};

/// How long the process waits, once the server has stopped, for blocking
/// tasks still running (searches stop within milliseconds of shutdown):
/// 1 s, then it exits without them.
pub const RUNTIME_EXIT_WAIT: Duration = Duration::from_secs(1);

pub fn run(flags: &Flags, data_dir_flag: Option<&Path>) -> anyhow::Result<ExitCode> {
    let settings = flags.settings(data_dir_flag)?;
    let data_dir = settings
        .data_dir
        .clone()
        .unwrap_or_else(super::default_data_dir);
    if let Some(f) = &settings.file {
        tracing::info!("settings from {}", f.display());
    }
    if let Err(e) = spindle_io::raise_nofile_limit() {
        tracing::warn!("could not raise the open-files limit: {e}");
    }
    let (music, xdg) = settings.music_folders()?;
    let config = settings.server_config(&data_dir, music);
    let listen = settings.listen.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let served = rt.block_on(async move {
        let server = Server::open(config).await?;
        server
            .opened()
            .log(xdg.as_deref(), server.state().read_engine());
        let listener = tokio::net::TcpListener::bind(&listen)
            .await
            .with_context(|| format!("listening on {listen}"))?;
        // stdout's first line is the URL (scripts and tests read it); the
        // log goes to stderr.
        for line in server.banner(listener.local_addr()?) {
            println!("{line}");
        }
        server
            .run(listener, shutdown_signal())
            .await
            .context("serving HTTP")?;
        println!("spindle: stopped");
        anyhow::Ok(())
    });
    // Dropping the runtime would wait for every blocking task; one still
    // busy (a file read on a hung disk, a query between two looks at its
    // cancellation flag) must not keep the process alive after a signal.
    rt.shutdown_timeout(RUNTIME_EXIT_WAIT);
    served?;
    Ok(ExitCode::SUCCESS)
}
