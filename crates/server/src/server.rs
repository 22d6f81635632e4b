//! The running server: [`Server::open`] does all of the wiring of a data
//! dir (the library, the listening history, the accounts, the music
//! folders and their first scan, the folder watcher, the stream reader,
//! the storage tiers with the history replay and the pins), and
//! [`Server::run`] serves until its shutdown signal, then stops every
//! background task and joins it before it returns.
//!
//! Every task is a member of one [`Tasks`] set (`spindle_app::tasks`),
//! the core's ([`crate::App::spawn_tasks`]) and the adapters' alike, and
//! the core's threads start in one place ([`crate::App::start`], here) and
//! stop in one ([`AppState::stop_background`]); no constructor starts
//! either. The tasks, and how each one stops:
//!
//! | task | runs on | stops |
//! |---|---|---|
//! | folder watcher | a thread of `spindle-media` | dropped: told to stop, joined |
//! | library linker | a thread ([`crate::link`]) | queue closed after the last batch, joined |
//! | tiers' listen feed | a thread ([`crate::hot::TierFeed`]) | queue closed after the last batch, joined |
//! | history checkpoints | a thread (`spindle_listens::Checkpointer`) | a last checkpoint when the log grew, joined |
//! | history replay | a blocking task | runs to its end (once, at start), awaited |
//! | pin loop | a tokio task ([`crate::hot::pin_loop`]) | the stop signal, awaited |
//! | forwarding | a tokio task ([`crate::forward::registry::run`]) with a queue and a feeder per link | the stop signal; joins its links' tasks, awaited |
//! | import spool | a tokio task ([`crate::import::worker::run`]) with a task per job | the stop signal; each job stops after its step, awaited |
//! | the tiers' own work | tokio tasks of `spindle-tiers` | `Tiers::shutdown`, which awaits them |

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use spindle_app::tasks::{CoreTasks, Tasks};
use spindle_listens::Listens;
use spindle_media::{ScanOptions, ScanReport, WatchOptions, Watcher};
use spindle_store::Db;
use spindle_tiers::{Tiers, TiersConfig};

use crate::accounts::{AccountError, Accounts};
use crate::music::{Music, MusicError};
use crate::state::{AppState, Config, SystemClock};
use crate::stream::{ReadEngine, Reader};

/// How often the whole library is rescanned even without events.
pub const RESCAN_EVERY: Duration = Duration::from_secs(600);

/// What a server serves and how (the binary builds this from its flags).
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Where the library, the history, the accounts and the tiers' state
    /// live.
    pub data_dir: PathBuf,
    /// The music folders to serve; none: a demo library generated into
    /// `data_dir/demo-music`.
    pub music: Vec<PathBuf>,
    /// How streams read files.
    pub engine: ReadEngine,
    /// HTTP settings and limits.
    pub http: Config,
    /// The `[tiers]` section of the server config, if any
    /// (docs/tiers.md): streams then go through the hot folder and the
    /// cold replicas.
    pub tiers: Option<TiersConfig>,
    /// The `[cluster]` section (docs/cluster.md): this node is a primary
    /// or a replica of a cluster ([`crate::cluster`]).
    pub cluster: Option<crate::cluster::ClusterConfig>,
    /// The watcher's full rescan, even without events (`RESCAN_EVERY`).
    pub rescan_every: Duration,
    /// How often the pins are looked at ([`crate::hot::PIN_POLL`]).
    pub pin_poll: Duration,
    /// Serve HTTPS with this certificate and key ([`crate::tls`];
    /// SIGHUP reloads them).
    pub tls: Option<crate::tls::TlsFiles>,
}

impl ServerConfig {
    /// A demo library over `data_dir`, tokio's reads, default settings,
    /// no tiers.
    pub fn new(data_dir: impl Into<PathBuf>) -> ServerConfig {
        ServerConfig {
            data_dir: data_dir.into(),
            music: Vec::new(),
            engine: ReadEngine::Tokio,
            http: Config::default(),
            tiers: None,
            cluster: None,
            rescan_every: RESCAN_EVERY,
            pin_poll: crate::hot::PIN_POLL,
            tls: None,
        }
    }
}

/// Why a server could not open.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    #[error("opening the library in {}", path.display())]
    Library {
        path: PathBuf,
        #[source]
        source: spindle_store::OpenError,
    },
    #[error("opening the accounts in {}", path.display())]
    Accounts {
        path: PathBuf,
        #[source]
        source: AccountError,
    },
    #[error("opening the listening history in {}", path.display())]
    Listens {
        path: PathBuf,
        #[source]
        source: spindle_listens::OpenError,
    },
    #[error("music folder {}: not a folder", path.display())]
    NotAFolder { path: PathBuf },
    #[error("writing the demo library to {}", path.display())]
    Demo {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("scanning the music folders")]
    Scan(#[source] spindle_media::ScanError),
    #[error("setting up the music folders")]
    Music(#[source] MusicError),
    #[error("joining the cluster")]
    Cluster(#[source] crate::cluster::generation::ClusterError),
    #[error("setting up the storage tiers")]
    Tiers(#[source] spindle_tiers::runtime::TiersError),
    #[error("watching the music folders")]
    Watch(#[source] spindle_media::WatchError),
    #[error("starting the {engine} IO engine")]
    Engine {
        engine: &'static str,
        #[source]
        source: spindle_io::SetupError,
    },
    #[error("loading the TLS certificate")]
    Tls(#[source] crate::tls::TlsError),
    #[error("opening the server failed inside: {0}")]
    Task(#[source] spindle_app::offload::Interrupted),
}

/// What [`Server::open`] found and did, for the binary to report.
#[derive(Debug)]
#[non_exhaustive]
pub struct Opened {
    /// The library's and the history's warnings (damage repaired at
    /// open), one line each.
    pub warnings: Vec<String>,
    /// The folder of the generated demo library, when no music folder
    /// was given.
    pub demo: Option<PathBuf>,
    /// The first scan.
    pub scanned: ScanReport,
    /// Listens in the history.
    pub listens: usize,
    /// Whether the history opened from its checkpoint
    /// (`docs/listens-checkpoint.md`) or replayed its whole log.
    pub history_checkpoint: spindle_listens::CheckpointUse,
    /// The storage tiers as set up (hot folder checked), if configured.
    pub tiers: Option<spindle_tiers::Status>,
    /// Why the IO engine asked for is not the one running, if it is not.
    pub engine_fell_back: Option<String>,
}

/// A server over one data dir; see the module doc.
pub struct Server {
    state: AppState,
    opened: Opened,
    watcher: Option<Watcher>,
    /// Every background task, the core's and the adapters', under one
    /// stop.
    tasks: Tasks,
    tls: Option<Arc<crate::tls::Tls>>,
}

impl Server {
    /// Opens everything `config` names, scans the music folders, starts
    /// the watcher and, with tiers, their background work, the history
    /// replay into the hot tier and the pin loop. Call inside a tokio
    /// runtime; the blocking work runs on its blocking pool.
    pub async fn open(config: ServerConfig) -> Result<Server, OpenError> {
        let pin_poll = config.pin_poll;
        let data_dir = config.data_dir.clone();
        // Before the library: a bad certificate path fails at once.
        let tls = match config.tls.clone() {
            Some(files) => Some(Arc::new(
                crate::tls::Tls::load(files).map_err(OpenError::Tls)?,
            )),
            None => None,
        };
        // A cluster node reads the bucket first: its role decides whether
        // it scans (a replica's library comes from the primary), and an
        // empty replica is filled from the newest snapshot.
        let cluster = match config.cluster.clone() {
            Some(cfg) => Some(
                crate::cluster::generation::prepare(&cfg, &data_dir)
                    .await
                    .map_err(OpenError::Cluster)?,
            ),
            None => None,
        };
        let primary = cluster.as_ref().is_none_or(|(_, s)| s.is_primary());
        let rescan_every = config.rescan_every;
        let (state, opened, watcher) =
            spindle_app::offload::run(move || open_blocking(config, primary))
                .await
                .map_err(OpenError::Task)??;
        if cluster.is_some() && state.accounts.key_opens_sealed() == Some(false) {
            return Err(OpenError::Cluster(
                crate::cluster::generation::ClusterError::Refused(format!(
                    "{} does not open the shipped accounts: copy the primary's DATA_DIR/accounts/{} here (it is never shipped)",
                    data_dir.join("accounts").join(crate::accounts::KEY_FILE).display(),
                    crate::accounts::KEY_FILE
                )),
            ));
        }
        let mut tasks = Tasks::new();
        if let Some((bucket, start)) = cluster {
            let stopping = tasks.stopping();
            tasks.spawn(crate::cluster::generation::run(
                state.clone(),
                bucket,
                start,
                rescan_every,
                stopping,
            ));
        }
        // The core's: the tiers' work, replay and pins; the import spool
        // (a replica takes no imports: they reach it through the log).
        state.app.spawn_tasks(
            &mut tasks,
            CoreTasks {
                data_dir: data_dir.clone(),
                pin_poll,
                imports: primary,
                outbound: state.config.forward.outbound.clone(),
            },
        );
        let stopping = tasks.stopping();
        tasks.spawn(crate::forward::registry::run(state.clone(), stopping));
        if primary {
            let stopping = tasks.stopping();
            tasks.spawn(crate::correction_spool::run(
                state.clone(),
                crate::correction_spool::CorrectionSpool::new(&data_dir),
                stopping,
            ));
        }
        if let Some(t) = &tls {
            let stopping = tasks.stopping();
            tasks.spawn(crate::tls::reload_on_sighup(t.clone(), stopping));
        }
        Ok(Server {
            state,
            opened,
            watcher,
            tasks,
            tls,
        })
    }

    /// The state every handler shares.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// What opening found and did.
    pub fn opened(&self) -> &Opened {
        &self.opened
    }

    /// The server's TLS, if it serves HTTPS: [`crate::tls::Tls::reload`]
    /// reads the certificate again (SIGHUP does too).
    pub fn tls(&self) -> Option<&Arc<crate::tls::Tls>> {
        self.tls.as_ref()
    }

    /// Serves HTTP (HTTPS with a certificate) on `listener` until `shutdown` resolves, finishes the
    /// requests in flight ([`crate::SHUTDOWN_GRACE`] at most), then stops
    /// every background task and waits for each before it returns.
    pub async fn run(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let acceptor = self.tls.as_ref().map(|t| t.acceptor());
        let served = crate::serve_with(listener, self.state.clone(), acceptor, shutdown).await;
        self.stop().await;
        served
    }

    /// Stops every background task and joins it.
    async fn stop(self) {
        let Server {
            state,
            watcher,
            tasks,
            ..
        } = self;
        tasks.stop().await;
        // Transcodes prepared ahead (crate::transcode::prepare).
        state.transcoder.shutdown().await;
        // The tiers' own work: promotion queue, sampling, re-replication.
        if let Some(tiers) = state.tiers() {
            tiers.shutdown().await;
        }
        // Both join threads (the watcher may be finishing a scan).
        let _ = spindle_app::offload::run(move || {
            drop(watcher);
            state.stop_background();
        })
        .await;
    }
}

/// The blocking part of [`Server::open`].
/// `primary`: this node writes its own library (scans it and watches
/// the folders); a cluster replica does not.
fn open_blocking(
    config: ServerConfig,
    primary: bool,
) -> Result<(AppState, Opened, Option<Watcher>), OpenError> {
    let ServerConfig {
        data_dir,
        music,
        engine,
        http,
        tiers,
        cluster,
        rescan_every,
        pin_poll: _,
        tls: _,
    } = config;
    let db = Db::open(&data_dir).map_err(|source| OpenError::Library {
        path: data_dir.clone(),
        source,
    })?;
    let mut warnings = db.open_report().warnings.clone();
    let dir = data_dir.join("accounts");
    let accounts =
        Accounts::open(&dir).map_err(|source| OpenError::Accounts { path: dir, source })?;
    let dir = data_dir.join("listens");
    let (listens, report) = Listens::open_with(&dir, http.listens_options())
        .map_err(|source| OpenError::Listens { path: dir, source })?;
    if let spindle_listens::CheckpointUse::Ignored { reason } = &report.checkpoint {
        warnings.push(format!(
            "the history's checkpoint was not used ({reason}); the whole log was replayed"
        ));
    }
    if report.truncated_bytes > 0 {
        warnings.push(format!(
            "cut {} bytes of an unfinished write off the listens log",
            report.truncated_bytes
        ));
    }
    let (roots, demo) = music_folders(music, &data_dir)?;
    let db = Arc::new(db);
    let scanned = if primary {
        spindle_media::scan(
            &db,
            &roots,
            &ScanOptions::default(),
            &mut spindle_media::scan::Quiet,
        )
        .map_err(OpenError::Scan)?
    } else {
        ScanReport::default()
    };
    let mut music = Music::new(&roots, &data_dir)
        .map_err(OpenError::Music)?
        .with_catalog_options(crate::catalog::CatalogOptions {
            ignored_articles: http.ignored_articles.clone(),
        });
    let mut tiers_status = None;
    if let Some(cfg) = tiers {
        let policy = crate::hot::policy(&cfg);
        let t = Tiers::new(cfg, music.roots(), &data_dir, policy).map_err(OpenError::Tiers)?;
        tiers_status = Some(t.status());
        music = music.with_tiers(Arc::new(t));
    }
    let (reader, engine_fell_back) = Reader::start(engine).map_err(|source| OpenError::Engine {
        engine: engine.name(),
        source,
    })?;
    let state = AppState::new(
        db.clone(),
        Arc::new(accounts),
        Arc::new(listens),
        crate::transcode::with_cache_under(http, &data_dir),
        Arc::new(SystemClock),
    )
    .with_music(music)
    .with_reader(reader)
    .with_cover_cache(&data_dir.join(crate::cover::COVER_CACHE_DIR))
    .with_forwarding(&data_dir)
    .with_import_spool(&data_dir);
    let state = match cluster {
        Some(c) => state.with_cluster(c),
        None => state,
    };
    // The core's threads: the linker, the tiers' feed, the catalog's
    // refresher (stopped in `Server::stop`, through stop_background).
    state.app.start();
    if primary {
        // Song stars of an older Spindle become loves (crate::loves).
        warnings.extend(crate::loves::move_song_stars(&state));
    }
    let watcher = if primary {
        Some(start_watcher(&state, rescan_every)?)
    } else {
        None
    };
    let opened = Opened {
        warnings,
        demo,
        scanned,
        listens: report.listens,
        history_checkpoint: report.checkpoint.clone(),
        tiers: tiers_status,
        engine_fell_back,
    };
    Ok((state, opened, watcher))
}

/// The folders to serve: the given ones, else a demo library generated
/// into the data dir (returned second).
fn music_folders(
    given: Vec<PathBuf>,
    data_dir: &Path,
) -> Result<(Vec<PathBuf>, Option<PathBuf>), OpenError> {
    if !given.is_empty() {
        if let Some(d) = given.iter().find(|d| !d.is_dir()) {
            return Err(OpenError::NotAFolder { path: d.clone() });
        }
        return Ok((given, None));
    }
    let demo = data_dir.join("demo-music");
    spindle_media::demo::generate_demo(&demo).map_err(|source| OpenError::Demo {
        path: demo.clone(),
        source,
    })?;
    Ok((vec![demo.clone()], Some(demo)))
}

/// Watches the music folders: a change rescans them and tells the
/// catalog cache.
pub(crate) fn start_watcher(
    state: &AppState,
    rescan_every: Duration,
) -> Result<Watcher, OpenError> {
    let music = state.music.clone();
    Watcher::start(
        state.db.clone(),
        music.roots().to_vec(),
        WatchOptions {
            rescan_every,
            ..WatchOptions::default()
        },
        Box::new(move |r| {
            music.library_changed();
            match r {
                Ok(r) if r.added + r.updated + r.moved + r.removed + r.marked_missing > 0 => {
                    tracing::info!(
                        "library updated: {} added, {} updated, {} moved, {} removed, {} marked missing",
                        r.added, r.updated, r.moved, r.removed, r.marked_missing
                    );
                }
                Ok(_) => {}
                Err(e) => tracing::warn!("rescan failed: {e}"),
            }
        }),
    )
    .map_err(OpenError::Watch)
}
