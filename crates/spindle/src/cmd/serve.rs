//! `spindle serve`: the HTTP server over the library, the accounts and
//! the listening history, until SIGINT or SIGTERM.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use spindle_server::{Accounts, AppState, Config, SystemClock};

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

pub fn run(
    data_dir: &Path,
    music: &[std::path::PathBuf],
    listen: &str,
) -> anyhow::Result<ExitCode> {
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
    if !music.is_empty() {
        eprintln!(
            "spindle: scanning --music folders from serve is not built yet; run `spindle scan`."
        );
    }
    let state = AppState::new(
        Arc::new(db),
        Arc::new(accounts),
        Arc::new(listens),
        Config::default(),
        Arc::new(SystemClock),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("listening on {listen}"))?;
        let addr = listener.local_addr()?;
        println!(
            "spindle: serving http://{addr}/ (library {} entries, {} listens)",
            state.db.stats().entries,
            report.listens
        );
        spindle_server::serve(listener, state, shutdown_signal())
            .await
            .context("serving HTTP")?;
        println!("spindle: stopped");
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
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
