//! Forwarding: every listen the server accepts and every now playing go
//! on to the services each user has linked (Last.fm-compatible and
//! ListenBrainz-compatible), through the scrobbler's durable journal per
//! link — exactly once, oldest first, batched, with the scrobbler's retry
//! and re-authorisation rules (`spindle_scrobble::ServiceQueue`). Design
//! in `docs/scrobble-hub.md` section 1.
//!
//! - [`link`]: the links on disk (`DATA_DIR/forward/USER/NAME/`);
//! - [`feeder`]: the task per link that tails the listens log into the
//!   journal;
//! - [`registry`]: starts and stops each link's queue and feeder, and
//!   reads the folder again every [`RESCAN`] so links made by `spindle
//!   forward link` reach a running server;
//! - [`linking`]: the Last.fm desktop flow and the ListenBrainz token
//!   check, for the web UI and the CLI;
//! - [`status`]: what the settings page, `/metrics` and `spindle forward
//!   status` show.
//!
//! [`Forward`] is the part [`crate::AppState`] holds: the folder, the
//! wake-up the submit path fires after each durable write, and the
//! running links' queues (for now playing and status).

pub mod feeder;
pub mod link;
pub mod linking;
pub mod registry;
pub mod status;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use spindle_listens::Listen;
use spindle_scrobble::{Backoff, Msg, ServiceState};
use tokio::sync::{mpsc, watch};

pub use link::{ForwardError, Link, LinkKind, FORWARD_DIR, MAX_LINKS_PER_USER};
pub use status::LinkStatus;

/// How often a running server reads `DATA_DIR/forward` again.
pub const RESCAN: Duration = Duration::from_secs(2);
/// How long a link's queue may go on sending at shutdown or unlinking.
pub const DRAIN: Duration = Duration::from_secs(3);
/// The User-Agent of forwarding requests.
pub const USER_AGENT: &str = concat!("spindle-forward/", env!("CARGO_PKG_VERSION"));
/// Last.fm's API root, the default of `[forward] lastfm_url`.
pub const LASTFM_URL: &str = "https://ws.audioscrobbler.com/2.0/";
/// ListenBrainz's API root, the default of `[forward] listenbrainz_url`.
pub const LISTENBRAINZ_URL: &str = "https://api.listenbrainz.org";

/// The `[forward]` settings.
#[derive(Debug, Clone)]
pub struct ForwardConfig {
    /// The API key and secret of the Last.fm desktop flow when a link
    /// names none.
    pub lastfm_api_key: String,
    pub lastfm_api_secret: String,
    /// The API roots when a link names none.
    pub lastfm_url: String,
    pub listenbrainz_url: String,
    /// Retry timing of the queues (tests shorten it).
    pub backoff: Backoff,
    /// Where requests to URLs users give may go (`[outbound] allow`):
    /// every link's and every pull's client keeps to it.
    pub outbound: spindle_scrobble::outbound::Policy,
}

impl ForwardConfig {
    /// The `[forward]` section as `spindle serve` (without `--config`)
    /// reads it: the settings file, then the environment.
    pub fn from_settings() -> Result<ForwardConfig, crate::settings::SettingsError> {
        use crate::settings::{env_var, load, settings_path, Layer};
        let file = settings_path(None);
        Ok(load(file.as_deref(), &env_var, Layer::default())?
            .http
            .forward)
    }
}

impl Default for ForwardConfig {
    fn default() -> Self {
        ForwardConfig {
            lastfm_api_key: String::new(),
            lastfm_api_secret: String::new(),
            lastfm_url: LASTFM_URL.to_owned(),
            listenbrainz_url: LISTENBRAINZ_URL.to_owned(),
            backoff: Backoff::default(),
            outbound: spindle_scrobble::outbound::Policy::default(),
        }
    }
}

/// A running link as others see it: its queue's channel and state.
pub(crate) struct Live {
    pub link: Link,
    pub tx: mpsc::Sender<Msg>,
    pub state: Arc<Mutex<ServiceState>>,
}

/// What [`crate::AppState`] holds of forwarding.
pub struct Forward {
    /// `DATA_DIR/forward`; `None`: forwarding is off (a state without a
    /// data dir, as in tests).
    root: Option<PathBuf>,
    /// Bumped after every durable write to the listens log.
    wake: watch::Sender<u64>,
    /// (user, link name) → its running queue.
    pub(crate) live: Mutex<HashMap<(String, String), Live>>,
    /// Last.fm desktop flows started in the web UI, waiting for the
    /// approval: (user, token) → the flow, newest last.
    pending: Mutex<Vec<(String, linking::LastFmStart)>>,
    /// Held while the web UI saves a link, so that requests made at once
    /// cannot together pass [`MAX_LINKS_PER_USER`].
    saving: Mutex<()>,
}

/// Last.fm desktop flows the web UI keeps waiting at once (the oldest
/// is forgotten beyond).
pub const MAX_PENDING_FLOWS: usize = 256;
/// Last.fm desktop flows one user keeps waiting at once (their oldest is
/// forgotten beyond), so one user cannot push out everyone else's.
pub const MAX_PENDING_FLOWS_PER_USER: usize = 4;

impl Default for Forward {
    fn default() -> Self {
        Forward::off()
    }
}

impl Forward {
    /// No forwarding.
    pub fn off() -> Forward {
        Forward {
            root: None,
            wake: watch::channel(0).0,
            live: Mutex::new(HashMap::new()),
            pending: Mutex::new(Vec::new()),
            saving: Mutex::new(()),
        }
    }

    /// Forwarding of the links under `data_dir/forward` (started by
    /// [`registry::run`]).
    pub fn new(data_dir: &Path) -> Forward {
        Forward {
            root: Some(data_dir.join(FORWARD_DIR)),
            ..Forward::off()
        }
    }

    /// `DATA_DIR/forward`, when forwarding is on.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// Tells the feeders the log has grown (after a durable write).
    pub fn wake(&self) {
        self.wake.send_modify(|n| *n = n.wrapping_add(1));
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.wake.subscribe()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Live>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands a now playing to each of its user's running links (sent
    /// once, never retried; dropped when a queue is busy).
    pub fn now_playing(&self, l: &Listen) {
        if self.root.is_none() || l.client.starts_with("import") {
            return;
        }
        let live = self.lock();
        for ((user, _), q) in live.iter() {
            if *user == l.user {
                let _ = q.tx.try_send(Msg::NowPlaying(feeder::to_scrobble(l)));
            }
        }
    }

    /// Keeps a web UI's desktop flow until it is finished.
    pub fn keep_flow(&self, user: &str, flow: linking::LastFmStart) {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if p.iter().filter(|(u, _)| u == user).count() >= MAX_PENDING_FLOWS_PER_USER {
            if let Some(oldest) = p.iter().position(|(u, _)| u == user) {
                p.remove(oldest);
            }
        }
        if p.len() >= MAX_PENDING_FLOWS {
            p.remove(0);
        }
        p.push((user.to_owned(), flow));
    }

    /// Saves a link made in the web UI ([`linking::save`]), one at a
    /// time.
    pub fn save_link(
        &self,
        root: &Path,
        user: &str,
        name: &str,
        l: &Link,
        cursor: u64,
    ) -> Result<PathBuf, ForwardError> {
        let _one = self.saving.lock().unwrap_or_else(|e| e.into_inner());
        linking::save(root, user, name, l, cursor)
    }

    /// `user`'s desktop flow of `token`, if kept.
    pub fn flow(&self, user: &str, token: &str) -> Option<linking::LastFmStart> {
        let p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.iter()
            .find(|(u, f)| u == user && f.token == token)
            .map(|(_, f)| f.clone())
    }

    /// Forgets a finished flow.
    pub fn drop_flow(&self, token: &str) {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.retain(|(_, f)| f.token != token);
    }

    /// Asks the running queues of `user` (or everyone's) to retry now.
    pub fn flush(&self, user: Option<&str>) {
        for ((u, _), q) in self.lock().iter() {
            if user.is_none_or(|x| x == u) {
                let _ = q.tx.try_send(Msg::Flush(None));
            }
        }
    }
}

/// The core tells forwarding of durable writes and now playing.
impl spindle_app::Forwarding for Forward {
    fn wake(&self) {
        Forward::wake(self);
    }
    fn now_playing(&self, listen: &Listen) {
        Forward::now_playing(self, listen);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(token: &str) -> linking::LastFmStart {
        linking::LastFmStart {
            api_url: String::new(),
            api_key: String::new(),
            api_secret: String::new(),
            token: token.to_owned(),
            approve_url: String::new(),
            outbound: Default::default(),
        }
    }

    #[test]
    fn one_user_starting_many_flows_keeps_only_their_newest_and_not_others_out() {
        let f = Forward::off();
        f.keep_flow("bob", flow("bob-1"));
        for i in 0..MAX_PENDING_FLOWS + 10 {
            f.keep_flow("mallory", flow(&format!("m-{i}")));
        }
        assert!(f.flow("bob", "bob-1").is_some());
        let last = MAX_PENDING_FLOWS + 9;
        for i in last + 1 - MAX_PENDING_FLOWS_PER_USER..=last {
            assert!(f.flow("mallory", &format!("m-{i}")).is_some(), "m-{i}");
        }
        let oldest_dropped = format!("m-{}", last - MAX_PENDING_FLOWS_PER_USER);
        assert!(f.flow("mallory", &oldest_dropped).is_none());
        let p = f.pending.lock().unwrap();
        assert_eq!(p.len(), 1 + MAX_PENDING_FLOWS_PER_USER);
    }

    #[test]
    fn the_global_cap_still_holds_across_users() {
        let f = Forward::off();
        for i in 0..MAX_PENDING_FLOWS + 1 {
            f.keep_flow(&format!("u{i}"), flow(&format!("t{i}")));
        }
        assert_eq!(f.pending.lock().unwrap().len(), MAX_PENDING_FLOWS);
        assert!(f.flow("u0", "t0").is_none());
        assert!(f.flow("u1", "t1").is_some());
    }
}
