//! `spindle serve`: turns the flags into a [`ServerConfig`], opens the
//! server ([`Server::open`]: the library, the scan, the watcher, the
//! storage tiers), prints what it found, and serves until SIGINT or
//! SIGTERM ([`Server::run`], which stops every background task).
//!
//! Music folders: every `--music DIR`; without one, the XDG music folder
//! if it exists, else a demo library generated into the data dir, so a
//! fresh machine shows something real.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use spindle_server::stream::ReadEngine;
use spindle_server::{Config, Opened, Server, ServerConfig};

/// How long the process waits, once the server has stopped, for blocking
/// tasks still running (searches stop within milliseconds of shutdown):
/// 1 s, then it exits without them.
pub const RUNTIME_EXIT_WAIT: Duration = Duration::from_secs(1);

pub fn run(
    data_dir: &Path,
    music: &[PathBuf],
    listen: &str,
    io_engine: &str,
    send_queue_kib: u32,
) -> anyhow::Result<ExitCode> {
    let engine = ReadEngine::parse(io_engine).map_err(anyhow::Error::msg)?;
    if let Err(e) = spindle_io::raise_nofile_limit() {
        tracing::warn!("could not raise the open-files limit: {e}");
    }
    for d in music {
        anyhow::ensure!(d.is_dir(), "--music {}: not a folder", d.display());
    }
    let xdg = match music {
        [] => xdg_music_dir().filter(|d| d.is_dir()),
        _ => None,
    };
    let config = ServerConfig {
        music: xdg.clone().map_or_else(|| music.to_vec(), |d| vec![d]),
        engine,
        http: Config {
            send_queue: send_queue_kib.saturating_mul(1024),
            ..Config::default()
        },
        tiers: super::tiers_config(None)?,
        ..ServerConfig::new(data_dir)
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let served = rt.block_on(async move {
        let server = Server::open(config).await?;
        print_opened(server.opened(), xdg.as_deref(), server.state().read_engine());
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("listening on {listen}"))?;
        let addr = listener.local_addr()?;
        let st = server.state();
        let folders: Vec<String> = st.music.roots().iter().map(|r| r.display().to_string()).collect();
        // stdout's first line is the URL (scripts and tests read it); the
        // log goes to stderr.
        println!(
            "spindle: serving http://{addr}/ (library {} entries, {} listens; music: {}; Subsonic API at http://{addr}/rest/)",
            st.db.stats().entries,
            server.opened().listens,
            folders.join(", ")
        );
        server.run(listener, shutdown_signal()).await.context("serving HTTP")?;
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

/// The start-up lines of the log: repairs, where the music comes from,
/// the scan, the tiers, the IO engine.
fn print_opened(o: &Opened, xdg: Option<&Path>, engine: &str) {
    for w in &o.warnings {
        tracing::warn!("{w}");
    }
    if let Some(d) = xdg {
        tracing::info!("no --music given; serving {}", d.display());
    }
    if let Some(d) = &o.demo {
        tracing::info!(
            "no --music given and no music folder found; serving a demo library in {}",
            d.display()
        );
    }
    let s = &o.scanned;
    for (path, reason) in &s.failed {
        tracing::warn!(path = %path.display(), "cannot read {}: {reason}", path.display());
    }
    tracing::info!(
        "scanned {} files in {:.2}s: {} added, {} updated, {} unchanged, {} removed, {} unreadable",
        s.files,
        s.elapsed.as_secs_f64(),
        s.added,
        s.updated,
        s.unchanged,
        s.removed,
        s.failed.len()
    );
    if let Some(st) = &o.tiers {
        if let Some(h) = &st.hot {
            tracing::info!(
                "tiers: hot folder {} holds {} copies ({} of {} bytes); {} unfinished or damaged copies removed",
                h.path, h.files, h.used, h.budget, h.recovered_dropped
            );
        }
        let names: Vec<String> = st
            .devices
            .iter()
            .map(|d| format!("{} ({}, {})", d.name, d.kind, d.state))
            .collect();
        tracing::info!("tiers: devices {}", names.join(", "));
    }
    if let Some(why) = &o.engine_fell_back {
        tracing::info!("streaming reads use {engine}: {why}");
    }
}

/// `$XDG_MUSIC_DIR`, else the music folder of the user's
/// `$XDG_CONFIG_HOME/user-dirs.dirs` (read by the `directories` crate),
/// else `~/Music`.
fn xdg_music_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("XDG_MUSIC_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    let dirs = directories::UserDirs::new()?;
    Some(
        dirs.audio_dir()
            .map_or_else(|| dirs.home_dir().join("Music"), |d| d.to_path_buf()),
    )
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
