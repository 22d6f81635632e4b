//! What every handler shares, in one [`AppState`]: the application core
//! ([`App`]: the library, accounts, listens, the clock, the music side,
//! plays, the linker, the tiers' feed, similar artists, now playing),
//! which an `AppState` derefs to, and what only the adapters and the HTTP
//! side use: the server's [`Config`] (holding the core's [`CoreConfig`]),
//! the stream [`Reader`], web sessions, metrics, Subsonic's chat, scans
//! and view cache, the Last.fm side's tokens and sessions, forwarding,
//! the cluster, and the rate-limit windows. Background
//! threads it starts stop in [`AppState::stop_background`].

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use spindle_listens::Listens;
use spindle_store::Db;

use crate::accounts::Accounts;
use crate::metrics::Metrics;
use crate::music::Music;
use crate::stream::Reader;
pub use spindle_app::clock::{Clock, ManualClock, SystemClock};
pub use spindle_app::{App, CoreConfig, NowPlaying};

/// Server settings (the binary builds this from its flags): the core's
/// ([`CoreConfig`], which a `Config` derefs to) and the adapters' and the
/// HTTP side's.
#[derive(Debug, Clone)]
pub struct Config {
    /// What the core's services read: the scrobble time window, the
    /// dedupe window, now playing's lifetime, ignored articles.
    pub core: CoreConfig,
    /// Largest ListenBrainz submit body, in bytes (4 MiB by default: an
    /// import of a few thousand listens). It is read only after the token
    /// in the `Authorization` header was checked. The other APIs' limits
    /// are constants in [`crate::body`].
    pub max_body: usize,
    /// Requests allowed per client IP per window.
    pub rate_limit: u32,
    /// Length of a rate-limit window, seconds.
    pub rate_window: i64,
    /// The URL clients reach this server by, for the 1.2 handshake's
    /// submission URLs; `None` uses the request's Host header.
    pub public_url: Option<String>,
    /// The most bytes a connection keeps queued in the kernel beyond what
    /// the client's TCP window takes (`TCP_NOTSENT_LOWAT`); 0 leaves the
    /// kernel's default. Without a cap a slow listener's socket holds up
    /// to the whole send buffer (4 MiB here) of its track, and thousands
    /// of them push the kernel into TCP memory pressure, where it drops
    /// packets and streams stall for seconds (docs/bench-stream.md).
    pub send_queue: u32,
    /// How long one query from the network (web search, Subsonic
    /// `search3`) may run before it is stopped
    /// ([`crate::query_budget::DEFAULT_QUERY_TIME`], 2 s).
    pub query_time: std::time::Duration,
    /// The longest a request body may take to arrive, whole
    /// ([`crate::body::BODY_TIMEOUT`], 30 s).
    pub body_timeout: std::time::Duration,
    /// The longest a request body may pause with no bytes
    /// ([`crate::body::BODY_IDLE_TIMEOUT`], 10 s).
    pub body_idle_timeout: std::time::Duration,
    /// The most bytes of request bodies buffered at once across all
    /// connections ([`crate::body::BODY_BUDGET`], 64 MiB).
    pub body_budget: usize,
    /// The longest a client may take to send a request's head, and the
    /// longest an idle keep-alive connection stays open
    /// ([`crate::http::HEADER_TIMEOUT`], 30 s).
    pub header_timeout: std::time::Duration,
    /// The longest a response may wait on a client that reads nothing
    /// before the connection is closed ([`crate::http::WRITE_TIMEOUT`],
    /// 60 s).
    pub write_timeout: std::time::Duration,
    /// Password hashing pool and failed-login throttling
    /// ([`crate::auth_guard::AuthLimits`]).
    pub auth: crate::auth_guard::AuthLimits,
    /// The URL path every route is served under (`/music`); empty: the
    /// root ([`crate::front`]).
    pub base_path: String,
    /// The origins whose scripts may call the token-authenticated APIs
    /// ([`crate::cors`]); any by default.
    pub cors_origins: crate::cors::CorsOrigins,
    /// Trusted reverse proxies and the trusted-header login
    /// ([`crate::proxy`]).
    pub proxy: crate::proxy::ProxyConfig,
    /// Transcoding: ffmpeg, the encode slots, the cache and the rules
    /// ([`crate::transcode::TranscodeConfig`]).
    pub transcode: crate::transcode::TranscodeConfig,
    /// Forwarding to linked services: the `[forward]` settings
    /// ([`crate::forward::ForwardConfig`]).
    pub forward: crate::forward::ForwardConfig,
}

/// [`Config::send_queue`]'s default: 128 KiB, 3 s of a 320 kbit/s stream.
pub const DEFAULT_SEND_QUEUE: u32 = 128 * 1024;

impl Default for Config {
    fn default() -> Self {
        Config {
            core: CoreConfig::default(),
            max_body: 4 << 20,
            rate_limit: 20_000,
            rate_window: 10,
            public_url: None,
            send_queue: DEFAULT_SEND_QUEUE,
            query_time: crate::query_budget::DEFAULT_QUERY_TIME,
            body_timeout: crate::body::BODY_TIMEOUT,
            body_idle_timeout: crate::body::BODY_IDLE_TIMEOUT,
            body_budget: crate::body::BODY_BUDGET,
            header_timeout: crate::http::HEADER_TIMEOUT,
            write_timeout: crate::http::WRITE_TIMEOUT,
            auth: crate::auth_guard::AuthLimits::default(),
            base_path: String::new(),
            cors_origins: crate::cors::CorsOrigins::Any,
            proxy: crate::proxy::ProxyConfig::default(),
            transcode: crate::transcode::TranscodeConfig::default(),
            forward: crate::forward::ForwardConfig::default(),
        }
    }
}

impl std::ops::Deref for Config {
    type Target = CoreConfig;
    fn deref(&self) -> &CoreConfig {
        &self.core
    }
}

impl std::ops::DerefMut for Config {
    fn deref_mut(&mut self) -> &mut CoreConfig {
        &mut self.core
    }
}

/// The handlers' shared state: the application core ([`App`], which an
/// `AppState` derefs to: `state.accounts`, `state.listens`, …) and what
/// only the protocol adapters and the HTTP side use ([`StateParts`], its
/// fields: `state.config`, `state.metrics`, …).
///
/// One `Arc`, so a clone is one reference count: axum clones the state
/// with every middleware layer and handler a request passes (about ten
/// times per request), which with a field per `Arc` cost a `stream`
/// request some 350 atomic operations. A change of a field
/// (`state.config = …`, before the state is shared) is copy-on-write
/// ([`Arc::make_mut`]): other clones keep what they had, as before.
#[derive(Clone)]
pub struct AppState(Arc<StateParts>);

/// What an [`AppState`] holds (see there).
#[derive(Clone)]
pub struct StateParts {
    /// The core: library, accounts, listens, clock, music, plays, the
    /// linker, the tiers' feed, similar artists, now playing.
    pub app: Arc<App>,
    /// Every setting; its core part ([`CoreConfig`]) is the core's too.
    pub config: Arc<Config>,
    /// How streams read files, with the files open for them
    /// ([`AppState::with_reader`]; tokio's reads by default).
    pub(crate) reader: Arc<Reader>,
    /// The web UI's own: its sessions and the first-run setup code.
    pub(crate) web: Arc<crate::web::WebState>,
    /// The counters of `/metrics`.
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) live: Arc<Live>,
    /// The Last.fm side's in-memory state: desktop-auth tokens and
    /// Audioscrobbler 1.2 sessions ([`crate::lastfm::LastfmState`]).
    pub(crate) lastfm: Arc<crate::lastfm::LastfmState>,
    /// The pool and budget of queries from the network; cancelled at
    /// shutdown.
    pub(crate) queries: Arc<crate::query_budget::QueryPool>,
    /// The budget and deadlines every request body is read under.
    pub(crate) bodies: crate::body::Bodies,
    /// Every credential check: throttling and the Argon2 pool.
    pub(crate) guard: Arc<crate::auth_guard::AuthGuard>,
    /// Cover art: the disk cache of resized covers and the resize gate
    /// ([`AppState::with_cover_cache`]; no disk cache by default).
    pub(crate) covers: Arc<crate::cover::Covers>,
    /// The Subsonic adapter's own state: its views, rescans and chat
    /// (the rescan is stopped and joined in [`AppState::stop_background`]).
    pub(crate) subsonic: Arc<crate::subsonic::SubsonicState>,
    /// ffmpeg's encode slots and the transcode cache ([`crate::transcode`]).
    pub(crate) transcoder: Arc<crate::transcode::Transcoder>,
    /// Forwarding to each user's linked services ([`crate::forward`];
    /// off until [`AppState::with_forwarding`]).
    pub forward: Arc<crate::forward::Forward>,
    /// This node's part in a cluster ([`crate::cluster`]; off until
    /// [`AppState::with_cluster`]).
    pub cluster: Arc<crate::cluster::Cluster>,
}

impl std::ops::Deref for AppState {
    type Target = StateParts;
    fn deref(&self) -> &StateParts {
        &self.0
    }
}

/// Copy-on-write: a state not shared yet changes in place; a shared one
/// becomes a copy of its own (a clone of each field's `Arc`).
impl std::ops::DerefMut for AppState {
    fn deref_mut(&mut self) -> &mut StateParts {
        Arc::make_mut(&mut self.0)
    }
}

impl std::ops::Deref for StateParts {
    type Target = App;
    fn deref(&self) -> &App {
        &self.app
    }
}

/// What the adapters keep in memory, short-lived.
#[derive(Default)]
pub(crate) struct Live {
    pub windows: Mutex<HashMap<IpAddr, (i64, u32)>>,
}

pub(crate) use spindle_app::sync::lock;

/// What a rate-limit check says.
pub(crate) struct RateInfo {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    pub reset_in: i64,
    pub reset_at: i64,
}

impl AppState {
    /// State over an open library, accounts and listens, with no music
    /// folders (user data in memory) and tokio's file reads.
    pub fn new(
        db: Arc<Db>,
        accounts: Arc<Accounts>,
        listens: Arc<Listens>,
        config: Config,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let queries = Arc::new(crate::query_budget::QueryPool::new(config.query_time));
        let bodies = crate::body::Bodies::new(&config);
        let guard = Arc::new(crate::auth_guard::AuthGuard::new(
            &config.auth,
            clock.clone(),
        ));
        let web = Arc::new(crate::web::WebState::new(&accounts));
        let transcoder = Arc::new(crate::transcode::Transcoder::new(config.transcode.clone()));
        let forward = Arc::new(crate::forward::Forward::off());
        let mut app = App::new(db, accounts, listens, config.core.clone(), clock);
        app.set_forwarding(forward.clone());
        AppState(Arc::new(StateParts {
            app: Arc::new(app),
            config: Arc::new(config),
            reader: Arc::new(Reader::default()),
            web,
            metrics: Arc::default(),
            live: Arc::new(Live::default()),
            lastfm: Arc::default(),
            queries,
            bodies,
            guard,
            covers: Arc::new(crate::cover::Covers::without_cache()),
            subsonic: Arc::default(),
            transcoder,
            forward,
            cluster: Arc::new(crate::cluster::Cluster::off()),
        }))
    }

    /// Forwards the links under `data_dir/forward` (the server's
    /// [`crate::forward::registry::run`] task runs them). Call before
    /// the state is shared.
    pub fn with_forwarding(mut self, data_dir: &std::path::Path) -> Self {
        self.forward = Arc::new(crate::forward::Forward::new(data_dir));
        let forward = self.forward.clone();
        Arc::make_mut(&mut self.app).set_forwarding(forward);
        self
    }

    /// A node of the cluster `config` describes ([`crate::cluster`]).
    /// Call before the state is shared.
    pub fn with_cluster(mut self, config: crate::cluster::ClusterConfig) -> Self {
        self.cluster = Arc::new(crate::cluster::Cluster::new(config));
        self.cluster
            .set_signing_key(&self.accounts.cluster_secret());
        self
    }

    /// Serves `music`: its folders, user data and, when it has storage
    /// tiers, streams through them and feeds every accepted listen to
    /// their popularity (`TierFeed`). Call before the state is shared.
    pub fn with_music(mut self, music: Music) -> Self {
        Arc::make_mut(&mut self.app).set_music(music);
        self
    }

    /// Keeps resized covers in `dir` (`DATA_DIR/covers`), within
    /// [`crate::cover::COVER_CACHE_BUDGET`] bytes. Call before the state
    /// is shared; a folder that cannot be used is logged and covers are
    /// then resized on every request.
    pub fn with_cover_cache(mut self, dir: &std::path::Path) -> Self {
        self.covers = Arc::new(crate::cover::Covers::open(
            dir,
            crate::cover::COVER_CACHE_BUDGET,
        ));
        self
    }

    /// [`App::start`]: the core's background threads (the library
    /// linker, the tiers' feed, the catalog's refresher), for a builder.
    /// [`crate::Server`] starts them itself; tests and tools that build a
    /// state by hand call this once it is set up.
    pub fn started(self) -> Self {
        self.app.start();
        self
    }

    /// Streams read files with `reader` (an IO engine's thread).
    pub fn with_reader(mut self, reader: Reader) -> Self {
        self.reader = Arc::new(reader);
        self
    }

    /// The stream reader's engine: `tokio`, `psync`, `uring`, ….
    pub fn read_engine(&self) -> &'static str {
        self.reader.name()
    }

    /// Stops the background threads this state started (the library
    /// linker, the tiers' listen feed) once they have handled every
    /// listen sent so far, and joins them. Listens accepted afterwards
    /// are stored but no longer linked. Blocks: call from a blocking
    /// thread, once the server no longer takes requests.
    pub fn stop_background(&self) {
        // A rescan runs to its end and then no other starts.
        self.subsonic.scans.stop();
        // After the scans: a scan's end waits for the catalog thread.
        self.app.stop_background();
    }

    /// The async facade of every synchronous store behind this state
    /// ([`spindle_app::offload`]): runs `work` over the state on the
    /// blocking pool. Handlers reach a write that fsyncs or a read that
    /// walks an index through this, never directly on the executor and
    /// never by spawning a blocking task themselves.
    pub(crate) async fn call<R, F>(&self, work: F) -> Result<R, spindle_app::offload::Interrupted>
    where
        R: Send + 'static,
        F: FnOnce(&AppState) -> R + Send + 'static,
    {
        let st = self.clone();
        spindle_app::offload::run(move || work(&st)).await
    }

    pub(crate) fn rate(&self, ip: Option<IpAddr>) -> RateInfo {
        let now = self.now();
        let cfg = &self.config;
        let Some(ip) = ip else {
            return RateInfo {
                allowed: true,
                limit: cfg.rate_limit,
                remaining: cfg.rate_limit,
                reset_in: cfg.rate_window,
                reset_at: now + cfg.rate_window,
            };
        };
        let mut w = lock(&self.live.windows);
        let e = w.entry(ip).or_insert((now, 0));
        if now >= e.0 + cfg.rate_window {
            *e = (now, 0);
        }
        e.1 = e.1.saturating_add(1);
        let reset_at = e.0 + cfg.rate_window;
        RateInfo {
            allowed: e.1 <= cfg.rate_limit,
            limit: cfg.rate_limit,
            remaining: cfg.rate_limit.saturating_sub(e.1),
            reset_in: (reset_at - now).max(0),
            reset_at,
        }
    }
}

#[cfg(test)]
impl AppState {
    /// A state for unit tests over an empty library, accounts and
    /// listens in `data` (`lib`, `accounts`, `l`), its clock at `now`.
    pub(crate) fn in_dir(data: &std::path::Path, now: i64) -> AppState {
        let (listens, _) = Listens::open(&data.join("l")).unwrap();
        AppState::new(
            Arc::new(Db::open(data.join("lib")).unwrap()),
            Arc::new(Accounts::open(&data.join("accounts")).unwrap()),
            Arc::new(listens),
            Config::default(),
            Arc::new(crate::ManualClock::new(now)),
        )
        .started()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clone is one reference count on the same parts (what axum does
    /// about ten times per request), and a field changed on a clone is
    /// that clone's only: the others keep what they had.
    #[test]
    fn clones_share_their_parts_and_a_changed_field_is_the_changers_only() {
        let dir = tempfile::tempdir().unwrap();
        let st = AppState::in_dir(dir.path(), 0);
        let clone = st.clone();
        assert!(Arc::ptr_eq(&st.0, &clone.0));
        assert_eq!(Arc::strong_count(&st.0), 2);

        let mut changed = clone.clone();
        let mut cfg = (*changed.config).clone();
        cfg.base_path = "/music".into();
        changed.config = Arc::new(cfg);
        assert_eq!(changed.config.base_path, "/music");
        assert_eq!(st.config.base_path, "");
        assert_eq!(clone.config.base_path, "");
        assert!(!Arc::ptr_eq(&st.0, &changed.0));
        // The rest is still shared.
        assert!(Arc::ptr_eq(&st.metrics, &changed.metrics));
        assert!(Arc::ptr_eq(&st.app, &changed.app));
    }
}
