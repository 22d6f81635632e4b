//! The daemon seen from another process: its pid file, the SIGUSR1 that
//! asks it to flush, its status file; and what `spindle scrobble
//! auth|status|flush|love` do with or without it. Every function returns
//! data (each with a `Display` of the lines the CLI prints); nothing here
//! prints.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::signal::unix::{signal, SignalKind};

use crate::clock::SystemClock;
use crate::config::{Config, ConfigError, Endpoint, Paths};
use crate::daemon::{self, build_client, Control, DaemonError, StatusFile, USER_AGENT};
use crate::journal::{Journal, JournalError};
use crate::lastfm::LastFm;
use crate::listenbrainz::ListenBrainz;
use crate::sender::{Backoff, ServiceQueue, ServiceState};
use crate::session::Status;
use crate::SendError;

/// Why a control action failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Send(#[from] SendError),
    #[error("creating {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("writing {path}: {source}")]
    PidFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("listening for SIGUSR1: {0}")]
    Signal(#[source] std::io::Error),
    #[error("a scrobbler is already running (pid {0})")]
    AlreadyRunning(u32),
    #[error("the scrobbler stopped: {0}")]
    Stopped(#[source] DaemonError),
    #[error("service {0} needs api_key and api_secret in the configuration")]
    NoApiKey(String),
    #[error("asking {url} for a token: {source}")]
    Token { url: String, source: SendError },
    #[error("waiting for the approval: {0}")]
    Approval(#[source] SendError),
    #[error("checking the token with {url}: {source}")]
    Validate { url: String, source: SendError },
    #[error("storing the {what}: {source}")]
    Store {
        what: &'static str,
        source: std::io::Error,
    },
    #[error("the scrobbler is not running, so nothing is known to be playing")]
    NotRunning,
    #[error("nothing is playing")]
    NothingPlaying,
    #[error("no service took the love")]
    NoLove,
}

/// The pid of a running daemon, from its pid file (and `/proc/PID/comm`,
/// so a stale file naming another program is not believed).
pub fn daemon_pid(paths: &Paths) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(paths.pid_file())
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    comm.trim().starts_with("spindle").then_some(pid)
}

/// Sends SIGUSR1 (reload credentials, retry every queue) to a running
/// daemon; its pid when that worked.
pub fn signal_flush(paths: &Paths) -> Option<u32> {
    let pid = daemon_pid(paths)?;
    let ok = std::process::Command::new("kill")
        .args(["-USR1", &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(pid)
}

/// The status file of a running daemon (`None` without one).
pub fn running_status(paths: &Paths) -> Option<StatusFile> {
    daemon_pid(paths)?;
    let b = std::fs::read(paths.status_file()).ok()?;
    serde_json::from_slice(&b).ok()
}

/// Runs the daemon in this process until SIGINT or SIGTERM: refuses when
/// another one runs, writes the pid file (removed on exit) and turns
/// SIGUSR1 into [`Control::Flush`].
pub async fn run_daemon(cfg: Config, paths: Paths) -> Result<(), ControlError> {
    std::fs::create_dir_all(&paths.state_dir).map_err(|source| ControlError::CreateDir {
        path: paths.state_dir.clone(),
        source,
    })?;
    if let Some(pid) = daemon_pid(&paths).filter(|&p| p != std::process::id()) {
        return Err(ControlError::AlreadyRunning(pid));
    }
    let pid_file = paths.pid_file();
    std::fs::write(&pid_file, format!("{}\n", std::process::id())).map_err(|source| {
        ControlError::PidFile {
            path: pid_file.clone(),
            source,
        }
    })?;
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    let mut usr1 = signal(SignalKind::user_defined1()).map_err(ControlError::Signal)?;
    let relay = tokio::spawn(async move {
        while usr1.recv().await.is_some() {
            if tx.send(Control::Flush).await.is_err() {
                break;
            }
        }
    });
    let shutdown = async {
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {},
            _ = term.recv() => {},
        }
    };
    let r = daemon::run(cfg, paths, Arc::new(SystemClock::default()), rx, shutdown).await;
    relay.abort();
    let _ = std::fs::remove_file(pid_file);
    r.map_err(ControlError::Stopped)
}

/// A Last.fm-style desktop authorisation under way: open
/// [`LastFmAuth::url`], then [`LastFmAuth::finish`].
pub struct LastFmAuth {
    client: LastFm,
    token: String,
    /// The page the user opens to allow Spindle.
    pub url: String,
}

/// How a service was authorised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorised {
    pub user: String,
    /// Where the session key or token is stored (mode 0600).
    pub file: PathBuf,
}

/// What authorising a service needs from the user.
pub enum AuthStart {
    /// Approve a token in the browser.
    LastFm(LastFmAuth),
    /// Paste a token (unless one was given).
    ListenBrainz { url: String },
}

/// Starts authorising the service `name`: for Last.fm, asks for a token.
pub async fn start_auth(cfg: &Config, name: &str) -> Result<AuthStart, ControlError> {
    match cfg.service(name)?.endpoint() {
        Endpoint::LastFm {
            url,
            auth_url,
            api_key,
            api_secret,
        } => {
            if api_key.is_empty() || api_secret.is_empty() {
                return Err(ControlError::NoApiKey(name.to_owned()));
            }
            let client = LastFm::new(&url, &api_key, &api_secret, "", USER_AGENT)?;
            let token = client
                .get_token()
                .await
                .map_err(|source| ControlError::Token { url, source })?;
            Ok(AuthStart::LastFm(LastFmAuth {
                url: format!("{auth_url}?api_key={api_key}&token={token}"),
                client,
                token,
            }))
        }
        Endpoint::ListenBrainz { url } => Ok(AuthStart::ListenBrainz { url }),
    }
}

impl LastFmAuth {
    /// Waits up to `timeout` for the approval and stores the session key.
    pub async fn finish(
        &self,
        paths: &Paths,
        name: &str,
        timeout: Duration,
    ) -> Result<Authorised, ControlError> {
        let (user, key) = self
            .client
            .wait_for_session(&self.token, Duration::from_secs(2), timeout)
            .await
            .map_err(ControlError::Approval)?;
        let file = paths
            .write_credential(name, &key)
            .map_err(|source| ControlError::Store {
                what: "session key",
                source,
            })?;
        Ok(Authorised { user, file })
    }
}

/// Checks a ListenBrainz token with the service at `url` and stores it.
pub async fn store_listenbrainz_token(
    paths: &Paths,
    name: &str,
    url: &str,
    token: &str,
) -> Result<Authorised, ControlError> {
    let user = ListenBrainz::new(url, token, USER_AGENT)?
        .validate()
        .await
        .map_err(|source| ControlError::Validate {
            url: url.to_owned(),
            source,
        })?;
    let file = paths
        .write_credential(name, token)
        .map_err(|source| ControlError::Store {
            what: "token",
            source,
        })?;
    Ok(Authorised { user, file })
}

/// What `spindle scrobble status` shows: the daemon, its players and
/// every configured service's queue.
#[derive(Debug, Clone)]
pub struct StatusReport {
    /// The running daemon's pid and status file.
    pub daemon: Option<(u32, StatusFile)>,
    /// UNIX seconds, to say how old the status file is.
    pub now: f64,
    /// Where the services are configured (named when there are none).
    pub config_file: PathBuf,
    pub services: Vec<ServiceLine>,
}

/// One configured service in a [`StatusReport`].
#[derive(Debug, Clone)]
pub struct ServiceLine {
    pub name: String,
    pub queued: usize,
    pub needs_auth: bool,
    /// The running daemon's view of it.
    pub live: Option<ServiceState>,
}

/// Gathers the [`StatusReport`].
pub fn status(cfg: &Config, paths: &Paths) -> StatusReport {
    let running = daemon_pid(paths);
    let file = running.and_then(|_| running_status(paths));
    let services = cfg
        .services
        .iter()
        .map(|svc| ServiceLine {
            name: svc.name.clone(),
            queued: Journal::peek(&paths.journal_dir(&svc.name)).map_or(0, |v| v.len()),
            needs_auth: paths.needs_auth_file(&svc.name).exists()
                || build_client(svc, paths).ok().flatten().is_none(),
            live: file
                .as_ref()
                .and_then(|s| s.services.iter().find(|x| x.name == svc.name).cloned()),
        })
        .collect();
    StatusReport {
        daemon: running.zip(file),
        now: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
        config_file: paths.config_file(),
        services,
    }
}

impl fmt::Display for StatusReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((pid, s)) = &self.daemon {
            let age = (self.now - s.updated).max(0.0);
            writeln!(f, "daemon: running (pid {pid}), status from {age:.0} s ago")?;
            writeln!(f, "players:")?;
            if s.players.is_empty() {
                writeln!(f, "  (none on the bus)")?;
            }
            for p in &s.players {
                let who = format!("{} ({})", p.bus_name, p.identity);
                if !p.scrobbled {
                    writeln!(f, "  {who}: ignored by the player lists")?;
                    continue;
                }
                let Some(v) = &p.play else {
                    writeln!(f, "  {who}: nothing playing")?;
                    continue;
                };
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
                writeln!(
                    f,
                    "  {who}: {state} {artist} - {}: {progress}",
                    v.track.title
                )?;
            }
        } else {
            writeln!(f, "daemon: not running")?;
        }
        writeln!(f, "services:")?;
        if self.services.is_empty() {
            writeln!(f, "  (none configured in {})", self.config_file.display())?;
        }
        for s in &self.services {
            write!(f, "  {}: {} queued", s.name, s.queued)?;
            if let Some(l) = &s.live {
                write!(f, ", {} sent this run", l.sent)?;
                if let Some(e) = &l.last_error {
                    write!(f, ", last error: {e}")?;
                }
                if let Some(r) = l.retry_in {
                    write!(f, ", retrying in {r:.0} s")?;
                }
            }
            if s.needs_auth {
                write!(
                    f,
                    ", NOT AUTHORISED: run `spindle scrobble auth {}`",
                    s.name
                )?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

/// One service flushed by [`flush_here`].
#[derive(Debug, Clone)]
pub struct Flushed {
    pub name: String,
    /// Queued before the flush.
    pub before: usize,
    /// The queue's state after it; `None`: not authorised, nothing sent.
    pub after: Option<ServiceState>,
}

impl fmt::Display for Flushed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, before) = (&self.name, self.before);
        match &self.after {
            None => write!(
                f,
                "{name}: {before} queued; not authorised: run `spindle scrobble auth {name}`"
            ),
            Some(s) => write!(
                f,
                "{name}: sent {} of {before}, {} still queued{}",
                s.sent,
                s.pending,
                s.last_error
                    .as_ref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            ),
        }
    }
}

/// Sends every service's queue from this process (no daemon running),
/// trying each for up to `timeout`; `each` hears of every service as it
/// is done.
pub async fn flush_here(
    cfg: &Config,
    paths: &Paths,
    timeout: Duration,
    each: &mut dyn FnMut(&Flushed),
) -> Result<(), ControlError> {
    for svc in &cfg.services {
        let (journal, _) = Journal::open(&paths.journal_dir(&svc.name))?;
        let before = journal.len();
        let Some(client) = build_client(svc, paths)? else {
            each(&Flushed {
                name: svc.name.clone(),
                before,
                after: None,
            });
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
        q.run(rx, timeout).await;
        let after = state.lock().map(|s| s.clone()).unwrap_or_default();
        each(&Flushed {
            name: svc.name.clone(),
            before,
            after: Some(after),
        });
    }
    Ok(())
}

/// What one service did with a love.
#[derive(Debug, Clone)]
pub struct Loved {
    pub name: String,
    /// `Ok((artist, title))` when it took it; else why not.
    pub result: Result<(String, String), String>,
    pub love: bool,
}

impl fmt::Display for Loved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = if self.love { "loved" } else { "unloved" };
        match &self.result {
            Ok((artist, track)) => write!(f, "{}: {verb} {artist} - {track}", self.name),
            Err(e) => write!(f, "{}: {e}", self.name),
        }
    }
}

/// Loves (or unloves) the track the running daemon sees playing, on
/// every service; `each` hears of every service. Fails when no service
/// took it.
pub async fn love(
    cfg: &Config,
    paths: &Paths,
    love: bool,
    each: &mut dyn FnMut(&Loved),
) -> Result<(), ControlError> {
    let st = running_status(paths).ok_or(ControlError::NotRunning)?;
    let (player, view) = st
        .players
        .iter()
        .filter_map(|p| p.play.as_ref().map(|v| (p, v)))
        .max_by_key(|(_, v)| (v.status == Status::Playing, v.started))
        .ok_or(ControlError::NothingPlaying)?;
    let s = view
        .track
        .scrobble(view.started.unwrap_or(0), &player.identity, cfg.artists);
    let mut failed = 0;
    for svc in &cfg.services {
        let result = match build_client(svc, paths)? {
            None => Err("not authorised".to_owned()),
            Some(client) => match client.love(&s, love).await {
                Ok(()) => Ok((s.artist.clone(), s.track.clone())),
                Err(e) => Err(e.to_string()),
            },
        };
        failed += usize::from(result.is_err());
        each(&Loved {
            name: svc.name.clone(),
            result,
            love,
        });
    }
    if failed > 0 && failed == cfg.services.len() {
        return Err(ControlError::NoLove);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::PlayerStatus;
    use crate::session::PlayView;
    use crate::track::Track;

    fn paths(dir: &std::path::Path) -> Paths {
        Paths {
            config_dir: dir.join("config"),
            state_dir: dir.join("state"),
        }
    }

    #[test]
    fn a_pid_file_naming_another_program_is_not_a_daemon() {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        assert_eq!(daemon_pid(&p), None, "no pid file");
        std::fs::create_dir_all(&p.state_dir).unwrap();
        // pid 1 is init, not spindle.
        std::fs::write(p.pid_file(), "1\n").unwrap();
        assert_eq!(daemon_pid(&p), None);
        std::fs::write(p.pid_file(), "not a pid\n").unwrap();
        assert_eq!(daemon_pid(&p), None);
        assert!(running_status(&p).is_none());
        assert!(signal_flush(&p).is_none());
    }

    #[test]
    fn the_status_of_a_stopped_daemon_lists_the_queues() {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        let r = status(&Config::default(), &p);
        let text = r.to_string();
        assert!(
            text.starts_with("daemon: not running\nservices:\n"),
            "{text}"
        );
        assert!(text.ends_with("scrobble.toml)\n"), "{text}");
    }

    #[test]
    fn the_status_of_a_running_daemon_shows_its_players_and_services() {
        let view = PlayView {
            track: Track {
                title: "Song".into(),
                artists: vec!["A".into(), "B".into()],
                ..Track::default()
            },
            status: Status::Playing,
            listened: 30.0,
            threshold: Some(120.0),
            scrobbled: false,
            started: Some(1),
        };
        let file = StatusFile {
            pid: 7,
            updated: 95.0,
            players: vec![
                PlayerStatus {
                    bus_name: "org.mpris.MediaPlayer2.mpv".into(),
                    identity: "mpv".into(),
                    scrobbled: true,
                    play: Some(view),
                },
                PlayerStatus {
                    bus_name: "org.mpris.MediaPlayer2.vlc".into(),
                    identity: "VLC".into(),
                    scrobbled: false,
                    play: None,
                },
            ],
            services: Vec::new(),
        };
        let r = StatusReport {
            daemon: Some((7, file)),
            now: 100.0,
            config_file: PathBuf::from("scrobble.toml"),
            services: vec![ServiceLine {
                name: "lfm".into(),
                queued: 2,
                needs_auth: true,
                live: Some(ServiceState {
                    sent: 3,
                    last_error: Some("down".into()),
                    retry_in: Some(4.2),
                    ..ServiceState::default()
                }),
            }],
        };
        assert_eq!(
            r.to_string(),
            "daemon: running (pid 7), status from 5 s ago\n\
             players:\n  \
             org.mpris.MediaPlayer2.mpv (mpv): playing A, B - Song: 30 of 120 s listened (25% to the scrobble)\n  \
             org.mpris.MediaPlayer2.vlc (VLC): ignored by the player lists\n\
             services:\n  \
             lfm: 2 queued, 3 sent this run, last error: down, retrying in 4 s, NOT AUTHORISED: run `spindle scrobble auth lfm`\n"
        );
    }

    #[test]
    fn flush_and_love_lines() {
        let f = Flushed {
            name: "lb".into(),
            before: 3,
            after: None,
        };
        assert_eq!(
            f.to_string(),
            "lb: 3 queued; not authorised: run `spindle scrobble auth lb`"
        );
        let f = Flushed {
            after: Some(ServiceState {
                sent: 2,
                pending: 1,
                last_error: Some("x".into()),
                ..ServiceState::default()
            }),
            ..f
        };
        assert_eq!(f.to_string(), "lb: sent 2 of 3, 1 still queued (x)");
        let l = Loved {
            name: "lb".into(),
            result: Ok(("A".into(), "T".into())),
            love: false,
        };
        assert_eq!(l.to_string(), "lb: unloved A - T");
    }

    #[tokio::test]
    async fn love_needs_a_running_daemon() {
        let dir = tempfile::tempdir().unwrap();
        let r = love(&Config::default(), &paths(dir.path()), true, &mut |_| {}).await;
        assert!(matches!(r, Err(ControlError::NotRunning)));
    }
}
