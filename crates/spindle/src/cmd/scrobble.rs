//! `spindle scrobble run|auth|status|flush|love`: the scrobbler daemon
//! and its controls. The daemon lives in `spindle-scrobble`; this file
//! turns arguments into its configs and prints.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Subcommand;
use spindle_scrobble::daemon::{self, Control, StatusFile, USER_AGENT};
use spindle_scrobble::lastfm::LastFm;
use spindle_scrobble::listenbrainz::ListenBrainz;
use spindle_scrobble::{
    Backoff, Config, Endpoint, Journal, Paths, ServiceQueue, Status, SystemClock,
};

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

/// The pid of a running daemon, from its pid file.
fn daemon_pid(paths: &Paths) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(paths.pid_file())
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    comm.trim().starts_with("spindle").then_some(pid)
}

fn signal_flush(paths: &Paths) -> Option<u32> {
    let pid = daemon_pid(paths)?;
    let ok = std::process::Command::new("kill")
        .args(["-USR1", &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(pid)
}

pub fn run(cmd: &ScrobbleCommand, config: Option<&PathBuf>) -> anyhow::Result<()> {
    let (cfg, paths) = load(config.map(PathBuf::as_path))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    match cmd {
        ScrobbleCommand::Run => rt.block_on(run_daemon(cfg, paths)),
        ScrobbleCommand::Auth {
            service,
            token,
            timeout,
        } => rt.block_on(auth(&cfg, &paths, service, token.as_deref(), *timeout)),
        ScrobbleCommand::Status { json } => status(&cfg, &paths, *json),
        ScrobbleCommand::Flush { timeout } => rt.block_on(flush(&cfg, &paths, *timeout)),
        ScrobbleCommand::Love { unlove } => rt.block_on(love(&cfg, &paths, !*unlove)),
    }
}

async fn run_daemon(cfg: Config, paths: Paths) -> anyhow::Result<()> {
    std::fs::create_dir_all(&paths.state_dir)
        .with_context(|| format!("creating {}", paths.state_dir.display()))?;
    if let Some(pid) = daemon_pid(&paths) {
        if pid != std::process::id() {
            bail!("a scrobbler is already running (pid {pid})");
        }
    }
    std::fs::write(paths.pid_file(), format!("{}\n", std::process::id()))
        .with_context(|| format!("writing {}", paths.pid_file().display()))?;
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    let mut usr1 = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1())
        .context("listening for SIGUSR1")?;
    tokio::spawn(async move {
        while usr1.recv().await.is_some() {
            let _ = tx.send(Control::Flush).await;
        }
    });
    let shutdown = async {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => return std::future::pending().await,
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {},
            _ = term.recv() => {},
        }
    };
    let pid_file = paths.pid_file();
    let r = daemon::run(cfg, paths, Arc::new(SystemClock::default()), rx, shutdown).await;
    let _ = std::fs::remove_file(pid_file);
    r.context("the scrobbler stopped")
}

async fn auth(
    cfg: &Config,
    paths: &Paths,
    name: &str,
    token: Option<&str>,
    timeout: u64,
) -> anyhow::Result<()> {
    let svc = cfg.service(name)?;
    match svc.endpoint() {
        Endpoint::LastFm {
            url,
            auth_url,
            api_key,
            api_secret,
        } => {
            if api_key.is_empty() || api_secret.is_empty() {
                bail!("service {name} needs api_key and api_secret in the configuration");
            }
            let c = LastFm::new(&url, &api_key, &api_secret, "", USER_AGENT)?;
            let t = c
                .get_token()
                .await
                .with_context(|| format!("asking {url} for a token"))?;
            println!("Open this page, log in and allow Spindle to scrobble:");
            println!("{auth_url}?api_key={api_key}&token={t}");
            println!("Waiting for the approval…");
            let (user, key) = c
                .wait_for_session(&t, Duration::from_secs(2), Duration::from_secs(timeout))
                .await
                .context("waiting for the approval")?;
            let file = paths
                .write_credential(name, &key)
                .context("storing the session key")?;
            println!(
                "Authorised as {user}; the session key is in {} (mode 0600).",
                file.display()
            );
        }
        Endpoint::ListenBrainz { url } => {
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
            let user = ListenBrainz::new(&url, &token, USER_AGENT)?
                .validate()
                .await
                .with_context(|| format!("checking the token with {url}"))?;
            let file = paths
                .write_credential(name, &token)
                .context("storing the token")?;
            println!(
                "Token valid for {user}; stored in {} (mode 0600).",
                file.display()
            );
        }
    }
    if let Some(pid) = signal_flush(paths) {
        println!("Told the running scrobbler (pid {pid}) to use it.");
    }
    Ok(())
}

fn read_status(paths: &Paths) -> Option<StatusFile> {
    let b = std::fs::read(paths.status_file()).ok()?;
    serde_json::from_slice(&b).ok()
}

fn status(cfg: &Config, paths: &Paths, json: bool) -> anyhow::Result<()> {
    let running = daemon_pid(paths);
    let st = read_status(paths).filter(|_| running.is_some());
    if json {
        println!("{}", serde_json::to_string_pretty(&st.unwrap_or_default())?);
        return Ok(());
    }
    match (running, &st) {
        (Some(pid), Some(s)) => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64());
            println!(
                "daemon: running (pid {pid}), status from {:.0} s ago",
                (now - s.updated).max(0.0)
            );
            println!("players:");
            if s.players.is_empty() {
                println!("  (none on the bus)");
            }
            for p in &s.players {
                let who = format!("{} ({})", p.bus_name, p.identity);
                if !p.scrobbled {
                    println!("  {who}: ignored by the player lists");
                    continue;
                }
                match &p.play {
                    None => println!("  {who}: nothing playing"),
                    Some(v) => {
                        let state = match v.status {
                            Status::Playing => "playing",
                            Status::Paused => "paused",
                            Status::Stopped => "stopped",
                        };
                        let artist = v.track.artists.join(", ");
                        let progress = match (v.scrobbled, v.threshold) {
                            (true, _) => "scrobbled".to_owned(),
                            (false, Some(th)) => format!(
                                "{:.0} of {:.0} s listened ({:.0}% to the scrobble)",
                                v.listened,
                                th,
                                (v.listened / th * 100.0).min(100.0)
                            ),
                            (false, None) => format!(
                                "{:.0} s listened; too short (or no length) to scrobble",
                                v.listened
                            ),
                        };
                        println!("  {who}: {state} {artist} - {}: {progress}", v.track.title);
                    }
                }
            }
        }
        _ => println!("daemon: not running"),
    }
    println!("services:");
    if cfg.services.is_empty() {
        println!("  (none configured in {})", paths.config_file().display());
    }
    for svc in &cfg.services {
        let queued = Journal::peek(&paths.journal_dir(&svc.name))
            .map(|v| v.len())
            .unwrap_or(0);
        let needs_auth = paths.needs_auth_file(&svc.name).exists()
            || daemon::build_client(svc, paths).ok().flatten().is_none();
        let live = st
            .as_ref()
            .and_then(|s| s.services.iter().find(|x| x.name == svc.name));
        let mut line = format!("  {}: {queued} queued", svc.name);
        if let Some(l) = live {
            line.push_str(&format!(", {} sent this run", l.sent));
            if let Some(e) = &l.last_error {
                line.push_str(&format!(", last error: {e}"));
            }
            if let Some(r) = l.retry_in {
                line.push_str(&format!(", retrying in {r:.0} s"));
            }
        }
        if needs_auth {
            line.push_str(&format!(
                ", NOT AUTHORISED: run `spindle scrobble auth {}`",
                svc.name
            ));
        }
        println!("{line}");
    }
    Ok(())
}

async fn flush(cfg: &Config, paths: &Paths, timeout: u64) -> anyhow::Result<()> {
    if let Some(pid) = signal_flush(paths) {
        println!("asked the running scrobbler (pid {pid}) to send its queues now");
        return Ok(());
    }
    for svc in &cfg.services {
        let dir = paths.journal_dir(&svc.name);
        let (journal, _) = Journal::open(&dir)?;
        let before = journal.len();
        let Some(client) = daemon::build_client(svc, paths)? else {
            println!(
                "{}: {before} queued; not authorised: run `spindle scrobble auth {}`",
                svc.name, svc.name
            );
            continue;
        };
        let q = ServiceQueue::new(
            &svc.name,
            Some(client),
            journal,
            Backoff::default(),
            Box::new(|_| {}),
        );
        let state = q.state.clone();
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        drop(tx);
        q.run(rx, Duration::from_secs(timeout)).await;
        let s = state.lock().map(|s| s.clone()).unwrap_or_default();
        println!(
            "{}: sent {} of {before}, {} still queued{}",
            svc.name,
            s.sent,
            s.pending,
            s.last_error.map(|e| format!(" ({e})")).unwrap_or_default()
        );
    }
    Ok(())
}

async fn love(cfg: &Config, paths: &Paths, love: bool) -> anyhow::Result<()> {
    let Some(st) = read_status(paths).filter(|_| daemon_pid(paths).is_some()) else {
        bail!("the scrobbler is not running, so nothing is known to be playing");
    };
    let play = st
        .players
        .iter()
        .filter_map(|p| p.play.as_ref().map(|v| (p, v)))
        .max_by_key(|(_, v)| (v.status == Status::Playing, v.started))
        .context("nothing is playing")?;
    let (player, view) = play;
    let s = view
        .track
        .scrobble(view.started.unwrap_or(0), &player.identity, cfg.artists);
    let verb = if love { "loved" } else { "unloved" };
    let mut failed = 0;
    for svc in &cfg.services {
        let Some(client) = daemon::build_client(svc, paths)? else {
            println!("{}: not authorised", svc.name);
            failed += 1;
            continue;
        };
        match client.love(&s, love).await {
            Ok(()) => println!("{}: {verb} {} - {}", svc.name, s.artist, s.track),
            Err(e) => {
                println!("{}: {e}", svc.name);
                failed += 1;
            }
        }
    }
    if failed > 0 && failed == cfg.services.len() {
        bail!("no service took the love");
    }
    Ok(())
}
