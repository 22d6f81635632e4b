//! `spindle serve`: finds the settings file, turns the flags into a
//! settings [`Layer`] and has the server crate resolve them
//! ([`spindle_server::settings::load`]: flag > environment > file >
//! default, docs/configuration.md), opens the server ([`Server::open`]:
//! the library, the scan, the watcher, the storage tiers), prints what it
//! found, and serves until SIGINT or SIGTERM ([`Server::run`], which stops
//! every background task; SIGHUP reloads the TLS certificate).
//!
//! Music folders: every `--music DIR` (or `[server] music`); without one,
//! the XDG music folder if it exists, else a demo library generated into
//! the data dir, so a fresh machine shows something real.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use spindle_server::settings::{values, Layer, Settings};
use spindle_server::{Opened, Server};

use crate::logging::LogFormat;

/// How long the process waits, once the server has stopped, for blocking
/// tasks still running (searches stop within milliseconds of shutdown):
/// 1 s, then it exits without them.
pub const RUNTIME_EXIT_WAIT: Duration = Duration::from_secs(1);

/// `spindle serve`'s flags; each one also a key of the settings file
/// (docs/configuration.md), which it overrides.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// The settings file (default: $SPINDLE_SERVER_CONFIG, else
    /// $XDG_CONFIG_HOME/spindle/server.toml if it exists). `spindle config
    /// print-default` prints a documented one.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A music folder to serve (repeatable). (settings file: server.music)
    #[arg(long, value_name = "DIR")]
    pub music: Vec<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:4533]. (settings file: server.listen)
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// How streams read files: tokio, psync, uring or uring-sqpoll
    /// (io_uring falls back to psync where it is unavailable) [default:
    /// uring]. (settings file: server.io_engine)
    #[arg(long, value_name = "ENGINE")]
    pub io_engine: Option<String>,
    /// The most a connection keeps queued in the kernel beyond what the
    /// client's TCP window takes, in KiB (TCP_NOTSENT_LOWAT); 0 leaves the
    /// kernel's default [default: 128]. The cap keeps thousands of slow
    /// listeners from exhausting TCP memory. (settings file: server.send_queue)
    #[arg(long, value_name = "KIB")]
    pub send_queue_kib: Option<u32>,
    /// The log on stderr: text (`spindle: …` lines) or json (one object per
    /// line) [default: text]. SPINDLE_LOG (else RUST_LOG) filters it, e.g.
    /// `debug` or `info,spindle_tiers=debug`; the default is info. (settings file: log.format)
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub log_format: Option<LogFormat>,
    /// Serve every route under this URL path, e.g. /music. (settings file: server.base_path)
    #[arg(long, value_name = "PATH")]
    pub base_path: Option<String>,
    /// The URL clients reach the server by, e.g. `https://example.org/music`.
    /// (settings file: server.public_url)
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// PEM certificate chain: serve HTTPS (with --tls-key). (settings file: tls.cert)
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert. (settings file: tls.key)
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// A reverse proxy whose X-Forwarded-*/Forwarded headers are believed:
    /// an address or CIDR block (repeatable). (settings file: proxy.trusted)
    #[arg(long, value_name = "ADDR")]
    pub trusted_proxy: Vec<String>,
}

/// The settings file: `--config`, else `$SPINDLE_SERVER_CONFIG`, else the
/// default path when that file exists.
pub fn settings_path(flag: Option<&Path>) -> Option<PathBuf> {
    let from_env = || std::env::var_os("SPINDLE_SERVER_CONFIG").filter(|p| !p.is_empty());
    flag.map(Path::to_owned)
        .or_else(|| from_env().map(PathBuf::from))
        .or_else(|| spindle_tiers::config::default_config_path().filter(|p| p.is_file()))
}

/// The process environment, as the settings read it.
pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The flags as a settings layer (a bad value names its flag).
fn flags(args: &ServeArgs, data_dir: Option<&Path>) -> anyhow::Result<Layer> {
    fn parse<T: std::str::FromStr<Err = String>>(flag: &str, v: &str) -> anyhow::Result<T> {
        v.parse().map_err(|e| anyhow::anyhow!("--{flag}: {e}"))
    }
    let mut l = Layer {
        data_dir: data_dir.map(Path::to_owned),
        ..Layer::default()
    };
    let s = &mut l.server;
    s.listen.clone_from(&args.listen);
    if !args.music.is_empty() {
        s.music = Some(args.music.clone());
    }
    s.io_engine = args
        .io_engine
        .as_deref()
        .map(|v| parse("io-engine", v))
        .transpose()?;
    s.send_queue = args
        .send_queue_kib
        .map(|k| values::Size(u64::from(k) * 1024));
    s.base_path = args
        .base_path
        .as_deref()
        .map(|v| parse("base-path", v))
        .transpose()?;
    s.public_url = args
        .public_url
        .as_deref()
        .map(|v| parse("public-url", v))
        .transpose()?;
    l.log.format = args.log_format.map(|f| match f {
        LogFormat::Text => values::LogFormat::Text,
        LogFormat::Json => values::LogFormat::Json,
    });
    l.tls.cert.clone_from(&args.tls_cert);
    l.tls.key.clone_from(&args.tls_key);
    if !args.trusted_proxy.is_empty() {
        l.proxy.trusted = Some(
            args.trusted_proxy
                .iter()
                .map(|v| parse("trusted-proxy", v))
                .collect::<anyhow::Result<_>>()?,
        );
    }
    Ok(l)
}

/// Flags, environment and file resolved.
pub fn settings(args: &ServeArgs, data_dir: Option<&Path>) -> anyhow::Result<Settings> {
    let file = settings_path(args.config.as_deref());
    Ok(spindle_server::settings::load(
        file.as_deref(),
        &env_var,
        flags(args, data_dir)?,
    )?)
}

/// The log format in effect (for `main`, before the log exists); text when
/// the settings do not load (`run` then reports why).
pub fn log_format(args: &ServeArgs) -> LogFormat {
    match settings(args, None).map(|s| s.log_format) {
        Ok(values::LogFormat::Json) => LogFormat::Json,
        _ => LogFormat::Text,
    }
}

pub fn run(args: &ServeArgs, data_dir_flag: Option<&Path>) -> anyhow::Result<ExitCode> {
    let settings = settings(args, data_dir_flag)?;
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
    for d in &settings.music {
        anyhow::ensure!(d.is_dir(), "music folder {}: not a folder", d.display());
    }
    let xdg = match settings.music.as_slice() {
        [] => xdg_music_dir().filter(|d| d.is_dir()),
        _ => None,
    };
    let music = xdg
        .clone()
        .map_or_else(|| settings.music.clone(), |d| vec![d]);
    let config = settings.server_config(&data_dir, music);
    let listen = settings.listen.clone();
    let scheme = if settings.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let base = settings.http.base_path.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let served = rt.block_on(async move {
        let server = Server::open(config).await?;
        print_opened(server.opened(), xdg.as_deref(), server.state().read_engine());
        let listener = tokio::net::TcpListener::bind(&listen)
            .await
            .with_context(|| format!("listening on {listen}"))?;
        let addr = listener.local_addr()?;
        let st = server.state();
        let folders: Vec<String> = st.music.roots().iter().map(|r| r.display().to_string()).collect();
        let url = format!("{scheme}://{addr}{base}/");
        // stdout's first line is the URL (scripts and tests read it); the
        // log goes to stderr.
        println!(
            "spindle: serving {url} (library {} entries, {} listens; music: {}; Subsonic API at {url}rest/)",
            st.db.stats().entries,
            server.opened().listens,
            folders.join(", ")
        );
        // The next step: create the first user, or log in.
        match st.setup_code() {
            Some(code) => println!(
                "spindle: no users yet: open {url} to create the administrator (from another machine, give the setup code {code})"
            ),
            None => {
                let n = st.accounts.user_names().len();
                let s = if n == 1 { "" } else { "s" };
                println!("spindle: {n} user{s}; open {url} to log in");
            }
        }
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
