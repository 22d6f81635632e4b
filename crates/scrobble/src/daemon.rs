//! The daemon: watches the session bus for MPRIS2 players (signals, not
//! polling), runs one play session per player, and hands now-playing
//! and scrobbles to one send queue per service.
//!
//! - Players are found with `ListNames` at start and followed with
//!   `NameOwnerChanged`; `PropertiesChanged` and `Seeked` arrive from
//!   unique names (`:1.42`), mapped back to the well-known names.
//! - A scrobble is appended (and synced) to every service's journal in
//!   this loop, before any task sends it.
//! - Between bus messages the loop sleeps until the earliest deadline of
//!   a playing session (threshold, now-playing refresh); with nothing
//!   playing it does not wake at all.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use zbus::zvariant::OwnedValue;
use zbus::{MatchRule, MessageStream};

use crate::client::{Client, SendError};
use crate::clock::Clock;
use crate::config::{Config, Endpoint, Paths, Service};
use crate::journal::{Journal, JournalError};
use crate::lastfm::LastFm;
use crate::listenbrainz::ListenBrainz;
use crate::mpris::{self, PATH, PLAYER_IFACE, PREFIX, ROOT_IFACE};
use crate::players::Players;
use crate::sender::{Backoff, Msg, ServiceQueue, ServiceState};
use crate::session::{Action, Event, PlayView};

/// Why the daemon stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DaemonError {
    #[error("D-Bus: {0}")]
    Bus(#[from] zbus::Error),
    #[error("D-Bus: {0}")]
    Fdo(#[from] zbus::fdo::Error),
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// Requests to a running daemon (from signals).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Reload credentials and retry every queue now (SIGUSR1).
    Flush,
}

pub const USER_AGENT: &str = concat!("spindle-scrobble/", env!("CARGO_PKG_VERSION"));

/// The client of a service, from the configuration and the stored
/// credentials; `Ok(None)` when it still needs `spindle scrobble auth`.
pub fn build_client(svc: &Service, paths: &Paths) -> Result<Option<Client>, SendError> {
    match svc.endpoint() {
        Endpoint::LastFm {
            url,
            api_key,
            api_secret,
            ..
        } => {
            let Some(sk) = paths.read_credential(&svc.name) else {
                return Ok(None);
            };
            if paths.needs_auth_file(&svc.name).exists() {
                return Ok(None);
            }
            Ok(Some(Client::LastFm(LastFm::new(
                &url,
                &api_key,
                &api_secret,
                &sk,
                USER_AGENT,
            )?)))
        }
        Endpoint::ListenBrainz { url } => {
            let token = svc
                .token
                .clone()
                .or_else(|| paths.read_credential(&svc.name));
            let Some(token) = token else {
                return Ok(None);
            };
            if paths.needs_auth_file(&svc.name).exists() {
                return Ok(None);
            }
            Ok(Some(Client::ListenBrainz(ListenBrainz::new(
                &url, &token, USER_AGENT,
            )?)))
        }
    }
}

/// What `status.json` holds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StatusFile {
    pub pid: u32,
    /// UNIX seconds of the last update.
    pub updated: f64,
    pub players: Vec<PlayerStatus>,
    pub services: Vec<ServiceState>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlayerStatus {
    pub bus_name: String,
    pub identity: String,
    /// `false` when the allow/ignore lists exclude it.
    pub scrobbled: bool,
    pub play: Option<PlayView>,
}

struct PlayerInfo {
    unique: String,
    identity: String,
    allowed: bool,
}

struct ServiceHandle {
    name: String,
    tx: mpsc::Sender<Msg>,
    journal: Arc<Mutex<Journal>>,
    state: Arc<Mutex<ServiceState>>,
}

struct State {
    cfg: Config,
    paths: Paths,
    clock: Arc<dyn Clock>,
    players: Players,
    info: BTreeMap<String, PlayerInfo>,
    services: Vec<ServiceHandle>,
}

impl State {
    fn names_of(&self, unique: &str) -> Vec<String> {
        self.info
            .iter()
            .filter(|(_, i)| i.unique == unique && i.allowed)
            .map(|(n, _)| n.clone())
            .collect()
    }

    fn feed(&mut self, player: &str, events: Vec<Event>) {
        let now = self.clock.now();
        for mut ev in events {
            if let Event::Metadata(Some(t)) = &mut ev {
                self.cfg.clean(t);
            }
            let acts = self.players.handle(player, ev, now);
            self.dispatch(player, acts);
        }
    }

    fn poll(&mut self) {
        let now = self.clock.now();
        for (p, a) in self.players.poll(now) {
            self.dispatch(&p, vec![a]);
        }
    }

    fn dispatch(&mut self, player: &str, acts: Vec<Action>) {
        let identity = self
            .info
            .get(player)
            .map(|i| i.identity.clone())
            .filter(|i| !i.is_empty())
            .unwrap_or_else(|| crate::config::player_short_name(player).to_owned());
        for a in acts {
            match a {
                Action::NowPlaying(t) => {
                    let s = t.scrobble(self.clock.now().unix as i64, &identity, self.cfg.artists);
                    tracing::info!("now playing on {identity}: {} - {}", s.artist, s.track);
                    for svc in &self.services {
                        let _ = svc.tx.try_send(Msg::NowPlaying(s.clone()));
                    }
                }
                Action::Scrobble { track, started } => {
                    let s = track.scrobble(started, &identity, self.cfg.artists);
                    tracing::info!(
                        "scrobble from {identity}: {} - {} (started {started})",
                        s.artist,
                        s.track
                    );
                    for svc in &self.services {
                        if let Err(e) = ServiceQueue::append_shared(&svc.journal, &s) {
                            tracing::error!(
                                service = %svc.name,
                                "cannot write the journal, scrobble LOST: {e}"
                            );
                        }
                        let _ = svc.tx.try_send(Msg::Wake);
                    }
                }
            }
        }
    }

    fn status(&self) -> StatusFile {
        let now = self.clock.now();
        let views: HashMap<String, Option<PlayView>> = self.players.view(now).into_iter().collect();
        StatusFile {
            pid: std::process::id(),
            updated: now.unix,
            players: self
                .info
                .iter()
                .map(|(n, i)| PlayerStatus {
                    bus_name: n.clone(),
                    identity: i.identity.clone(),
                    scrobbled: i.allowed,
                    play: views.get(n).cloned().flatten(),
                })
                .collect(),
            services: self
                .services
                .iter()
                .map(|s| s.state.lock().unwrap_or_else(|e| e.into_inner()).clone())
                .collect(),
        }
    }

    fn write_status(&self) {
        let path = self.paths.status_file();
        let tmp = path.with_extension("tmp");
        let body = serde_json::to_vec_pretty(&self.status()).unwrap_or_default();
        if std::fs::write(&tmp, body)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .is_err()
        {
            // Status is a convenience; the journal is what matters.
        }
    }
}

async fn get_all(
    conn: &zbus::Connection,
    dest: &str,
    iface: &'static str,
) -> Result<HashMap<String, OwnedValue>, DaemonError> {
    let p = zbus::fdo::PropertiesProxy::builder(conn)
        .destination(dest.to_owned())?
        .path(PATH)?
        .build()
        .await?;
    Ok(
        p.get_all(zbus::names::InterfaceName::from_static_str_unchecked(iface))
            .await?,
    )
}

async fn add_player(
    st: &mut State,
    conn: &zbus::Connection,
    dbus: &zbus::fdo::DBusProxy<'_>,
    name: &str,
) {
    let Ok(bus_name) = zbus::names::BusName::try_from(name.to_owned()) else {
        return;
    };
    let Ok(owner) = dbus.get_name_owner(bus_name).await else {
        return;
    };
    let identity = get_all(conn, name, ROOT_IFACE)
        .await
        .ok()
        .and_then(|m| m.get("Identity").and_then(|v| mpris::as_string(v)))
        .unwrap_or_default();
    let allowed = st.cfg.filter.allows(name, &identity);
    tracing::info!(
        "player {name} ({identity}) appeared{}",
        if allowed {
            ""
        } else {
            "; ignored by the player lists"
        }
    );
    st.info.insert(
        name.to_owned(),
        PlayerInfo {
            unique: owner.to_string(),
            identity,
            allowed,
        },
    );
    if !allowed {
        return;
    }
    if let Ok(props) = get_all(conn, name, PLAYER_IFACE).await {
        let evs = mpris::events(props.iter().map(|(k, v)| (k.as_str(), &**v)));
        st.feed(name, evs);
    }
}

fn remove_player(st: &mut State, name: &str) {
    if let Some(i) = st.info.remove(name) {
        tracing::info!("player {name} ({}) vanished", i.identity);
        if i.allowed {
            st.feed(name, vec![Event::Vanished]);
        }
    }
}

/// Runs until `shutdown` resolves; queued scrobbles get a few seconds
/// to go out, the rest stay in the journals for next time.
pub async fn run(
    cfg: Config,
    paths: Paths,
    clock: Arc<dyn Clock>,
    mut control: mpsc::Receiver<Control>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), DaemonError> {
    std::fs::create_dir_all(&paths.state_dir).map_err(|source| JournalError::Io {
        path: paths.state_dir.clone(),
        source,
    })?;
    let mut tasks = Vec::new();
    let mut services = Vec::new();
    let changed = Arc::new(tokio::sync::Notify::new());
    for svc in &cfg.services {
        let dir = paths.journal_dir(&svc.name);
        let (journal, report) = Journal::open(&dir)?;
        if report.truncated_bytes > 0 {
            tracing::warn!(
                service = %svc.name,
                "cut {} bytes of an unfinished write off the journal",
                report.truncated_bytes
            );
        }
        let client = match build_client(svc, &paths) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(service = %svc.name, "{e}");
                None
            }
        };
        if client.is_none() {
            tracing::warn!(
                service = %svc.name,
                "not authorised: run `spindle scrobble auth {}`; scrobbles are kept until then",
                svc.name
            );
        }
        if report.pending > 0 {
            tracing::info!(
                service = %svc.name,
                "{} scrobbles queued from before",
                report.pending
            );
        }
        let flag = paths.needs_auth_file(&svc.name);
        let q = ServiceQueue::new(
            &svc.name,
            client,
            journal,
            Backoff::default(),
            Box::new(move |needs| {
                if needs {
                    let _ =
                        std::fs::write(&flag, b"run `spindle scrobble auth` for this service\n");
                } else {
                    let _ = std::fs::remove_file(&flag);
                }
            }),
        );
        let mut q = q;
        q.changed = changed.clone();
        let (tx, rx) = mpsc::channel(1024);
        services.push(ServiceHandle {
            name: svc.name.clone(),
            tx,
            journal: q.journal.clone(),
            state: q.state.clone(),
        });
        tasks.push(tokio::spawn(q.run(rx, Duration::from_secs(3))));
    }
    if services.is_empty() {
        tracing::warn!(
            "no services in {}; plays are followed but sent nowhere",
            paths.config_file().display()
        );
    }

    let conn = zbus::Connection::session().await?;
    let dbus = zbus::fdo::DBusProxy::new(&conn).await?;
    let mut owners = dbus.receive_name_owner_changed().await?;
    let props_rule = MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .interface("org.freedesktop.DBus.Properties")?
        .member("PropertiesChanged")?
        .path(PATH)?
        .build();
    let mut props = MessageStream::for_match_rule(props_rule, &conn, Some(1024)).await?;
    let seek_rule = MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .interface(PLAYER_IFACE)?
        .member("Seeked")?
        .path(PATH)?
        .build();
    let mut seeks = MessageStream::for_match_rule(seek_rule, &conn, Some(1024)).await?;

    let mut st = State {
        players: Players::new(cfg.rules),
        cfg,
        paths,
        clock: clock.clone(),
        info: BTreeMap::new(),
        services,
    };
    for name in dbus.list_names().await? {
        if name.as_str().starts_with(PREFIX) {
            add_player(&mut st, &conn, &dbus, name.as_str()).await;
        }
    }
    st.write_status();
    tracing::info!("watching the session bus");

    // Monotonic clock readings to tokio instants.
    let base = (tokio::time::Instant::now(), clock.now().mono);
    tokio::pin!(shutdown);
    loop {
        let deadline = st
            .players
            .next_deadline()
            .map(|d| base.0 + d.saturating_sub(base.1));
        tokio::select! {
            () = &mut shutdown => break,
            () = changed.notified() => {}
            Some(sig) = owners.next() => {
                let Ok(args) = sig.args() else { continue };
                let name = args.name().to_string();
                if !name.starts_with(PREFIX) {
                    continue;
                }
                if args.old_owner().is_some() {
                    remove_player(&mut st, &name);
                }
                if args.new_owner().is_some() {
                    add_player(&mut st, &conn, &dbus, &name).await;
                }
            }
            Some(msg) = props.next() => {
                let Ok(msg) = msg else { continue };
                let hdr = msg.header();
                let Some(sender) = hdr.sender().map(|s| s.to_string()) else { continue };
                let Ok((iface, changed, _inval)) =
                    msg.body().deserialize::<(String, HashMap<String, OwnedValue>, Vec<String>)>()
                else {
                    continue;
                };
                if iface != PLAYER_IFACE {
                    continue;
                }
                let evs = mpris::events(changed.iter().map(|(k, v)| (k.as_str(), &**v)));
                for name in st.names_of(&sender) {
                    st.feed(&name, evs.clone());
                }
            }
            Some(msg) = seeks.next() => {
                let Ok(msg) = msg else { continue };
                let hdr = msg.header();
                let Some(sender) = hdr.sender().map(|s| s.to_string()) else { continue };
                let Ok(pos) = msg.body().deserialize::<i64>() else { continue };
                let ev = Event::Seeked(Duration::from_micros(pos.max(0) as u64));
                for name in st.names_of(&sender) {
                    st.feed(&name, vec![ev.clone()]);
                }
            }
            () = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            } => st.poll(),
            Some(c) = control.recv() => match c {
                Control::Flush => {
                    tracing::info!("flushing every queue");
                    for svc in &st.services {
                        let client = st
                            .cfg
                            .service(&svc.name)
                            .ok()
                            .and_then(|s| build_client(s, &st.paths).ok().flatten());
                        let _ = svc.tx.send(Msg::Flush(client)).await;
                    }
                }
            },
        }
        st.write_status();
    }
    tracing::info!("stopping");
    let services = std::mem::take(&mut st.services);
    drop(services);
    for t in tasks {
        let _ = t.await;
    }
    st.write_status();
    Ok(())
}
