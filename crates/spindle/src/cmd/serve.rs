//! `spindle serve`: scans the music folders, keeps them current with a
//! watcher (inotify plus a periodic rescan), and serves the library, the
//! accounts and the listening history over HTTP until SIGINT or SIGTERM.
//!
//! Music folders: every `--music DIR`; without one, the XDG music folder
//! if it exists, else a demo library generated into the data dir, so a
//! fresh machine shows something real.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use spindle_media::{ScanOptions, WatchOptions, Watcher};
use spindle_server::{Accounts, AppState, Config, Music, SystemClock};

/// How often the whole library is rescanned even without events.
const RESCAN_EVERY: Duration = Duration::from_secs(600);

/// How long the process waits, once the server has stopped, for blocking
/// tasks still running (searches stop within milliseconds of shutdown):
/// 1 s, then it exits without them.
pub const RUNTIME_EXIT_WAIT: Duration = Duration::from_secs(1);

/// Opens the accounts store of a data dir.
pub fn open_accounts(data_dir: &Path) -> anyhow::Result<Accounts> {
    let dir = data_dir.join("accounts");
    Accounts::open(&dir).with_context(|| format!("opening the accounts in {}", dir.display()))
}

pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Raises the soft limit on open files to the hard limit: every stream
/// holds a socket and a file.
pub fn raise_nofile_limit() -> std::io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if lim.rlim_cur < lim.rlim_max {
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: setrlimit only reads the struct we pass.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(lim.rlim_cur)
}

pub fn run(
    data_dir: &Path,
    music: &[std::path::PathBuf],
    listen: &str,
    io_engine: &str,
    send_queue_kib: u32,
) -> anyhow::Result<ExitCode> {
    let engine =
        spindle_server::stream::ReadEngine::parse(io_engine).map_err(anyhow::Error::msg)?;
    if let Err(e) = raise_nofile_limit() {
        eprintln!("spindle: warning: could not raise the open-files limit: {e}");
    }
    let db = spindle_store::Db::open(data_dir)
        .with_context(|| format!("opening the library in {}", data_dir.display()))?;
    for w in &db.open_report().warnings {
        eprintln!("spindle: warning: {w}");
    }
    let accounts = open_accounts(data_dir)?;
    let ldir = data_dir.join("listens");
    let (listens, report) = spindle_listens::Listens::open(&ldir)
        .with_context(|| format!("opening the listening history in {}", ldir.display()))?;
    if report.truncated_bytes > 0 {
        eprintln!(
            "spindle: warning: cut {} bytes of an unfinished write off the listens log",
            report.truncated_bytes
        );
    }
    let roots = music_folders(music, data_dir)?;
    let db = Arc::new(db);
    let mut obs = super::scan::Reporter::new(false, true);
    let scanned = spindle_media::scan(&db, &roots, &ScanOptions::default(), &mut obs)
        .context("scanning the music folders")?;
    // stdout's first line is the URL (scripts and tests read it); the
    // rest goes to stderr.
    eprintln!(
        "spindle: scanned {} files in {:.2}s: {} added, {} updated, {} unchanged, {} removed, {} unreadable",
        scanned.files,
        scanned.elapsed.as_secs_f64(),
        scanned.added,
        scanned.updated,
        scanned.unchanged,
        scanned.removed,
        scanned.failed.len()
    );
    let mut music = Music::new(&roots, data_dir).context("setting up the music folders")?;
    // With a [tiers] section in the server config, streams go through the
    // hot folder and the cold replicas (see docs/tiers.md).
    let tiers = super::tiers_serve::load(data_dir, music.roots())?;
    if let Some(t) = &tiers {
        music = music.with_tiers(t.clone());
    }
    let music = Arc::new(music);
    let changed = music.clone();
    let _watcher = Watcher::start(
        db.clone(),
        music.roots().to_vec(),
        WatchOptions {
            rescan_every: RESCAN_EVERY,
            ..WatchOptions::default()
        },
        Box::new(move |r| {
            changed.library_changed();
            match r {
                Ok(r) if r.added + r.updated + r.moved + r.removed + r.marked_missing > 0 => {
                    eprintln!(
                        "spindle: library updated: {} added, {} updated, {} moved, {} removed, {} marked missing",
                        r.added, r.updated, r.moved, r.removed, r.marked_missing
                    );
                }
                Ok(_) => {}
                Err(e) => eprintln!("spindle: rescan failed: {e}"),
            }
        }),
    )
    .context("watching the music folders")?;
    let state = AppState::new(
        db,
        Arc::new(accounts),
        Arc::new(listens),
        Config {
            send_queue: send_queue_kib.saturating_mul(1024),
            ..Config::default()
        },
        Arc::new(SystemClock),
    );
    let (engine_name, fell_back) = spindle_server::stream::configure(engine)
        .with_context(|| format!("starting the {} IO engine", engine.name()))?;
    if let Some(why) = fell_back {
        eprintln!("spindle: streaming reads use {engine_name}: {why}");
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let data = data_dir.to_owned();
    let served = rt.block_on(async move {
        if let Some(t) = &tiers {
            super::tiers_serve::start(t, &state, music.roots().to_vec(), &data);
        }
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("listening on {listen}"))?;
        let addr = listener.local_addr()?;
        let folders: Vec<String> = music.roots().iter().map(|r| r.display().to_string()).collect();
        println!(
            "spindle: serving http://{addr}/ (library {} entries, {} listens; music: {}; Subsonic API at http://{addr}/rest/)",
            state.db.stats().entries,
            report.listens,
            folders.join(", ")
        );
        spindle_server::serve_with(listener, state, music, shutdown_signal())
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

/// The folders to serve: the given ones, else the XDG music folder, else
/// a generated demo library in the data dir.
fn music_folders(given: &[PathBuf], data_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if !given.is_empty() {
        for d in given {
            anyhow::ensure!(d.is_dir(), "--music {}: not a folder", d.display());
        }
        return Ok(given.to_vec());
    }
    if let Some(d) = xdg_music_dir().filter(|d| d.is_dir()) {
        eprintln!("spindle: no --music given; serving {}", d.display());
        return Ok(vec![d]);
    }
    let demo = data_dir.join("demo-music");
    spindle_media::demo::generate_demo(&demo)
        .with_context(|| format!("writing the demo library to {}", demo.display()))?;
    eprintln!(
        "spindle: no --music given and no music folder found; serving a demo library in {}",
        demo.display()
    );
    Ok(vec![demo])
}

/// `$XDG_MUSIC_DIR`, else the `XDG_MUSIC_DIR` line of
/// `$XDG_CONFIG_HOME/user-dirs.dirs`, else `~/Music`.
fn xdg_music_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("XDG_MUSIC_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from)?;
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map_or_else(|| home.join(".config"), PathBuf::from);
    if let Ok(text) = std::fs::read_to_string(config.join("user-dirs.dirs")) {
        for line in text.lines() {
            if let Some(v) = line.trim().strip_prefix("XDG_MUSIC_DIR=") {
                let v = v.trim().trim_matches('"');
                let path = match v.strip_prefix("$HOME") {
                    Some(rest) => home.join(rest.trim_start_matches('/')),
                    None => PathBuf::from(v),
                };
                // user-dirs maps an unset folder to $HOME itself.
                if path != home {
                    return Some(path);
                }
            }
        }
    }
    Some(home.join("Music"))
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
