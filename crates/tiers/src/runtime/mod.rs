//! [`Tiers`]: the devices at run time. It opens a track on the copy with
//! the best measured latency and keeps a stream going across device
//! failures ([`TierStream`]), counts accesses into the hot-tier policy and
//! promotes and demotes in the background at bounded bandwidth, uploads
//! copies to reach `mindevcount`, and reports its state ([`Status`]).
//!
//! The server needs four calls: [`Tiers::open`] (a stream from a byte
//! offset, with failover), [`Tiers::record_access`] (one stream request,
//! for popularity; [`Tiers::record_listen`] for a play from the listening
//! history), [`Tiers::start_background`] (promotion, disk sampling,
//! re-replication, the status file) and, at exit,
//! [`Tiers::shutdown`] (stops that work and waits for it).
//!
//! One file per job, each owning its state:
//!
//! | file | job | state |
//! |---|---|---|
//! | `mod.rs` | the handle, its devices, construction | devices, hot folder, replica index |
//! | `read.rs` | choosing a copy, opening it, [`TierStream`] and its failover | the choice and its random source, read counters |
//! | `feed.rs` | popularity in: stream requests, listens, prefill, pins | the policy, the tracks it knows, the pins |
//! | `promote.rs` | the promotion and demotion queue | its pacer and counters |
//! | `replicate.rs` | probes, re-replication, uploads to `mindevcount` | failing devices, the last error, its pacer |
//! | `status.rs` | [`Status`] and the status file | — |
//! | `status_text.rs` | [`Status::render`] (what `spindle tiers status` prints), reading the file back | — |
//! | `tasks.rs` | starting the background tasks, [`Tiers::shutdown`] | the running tasks |
//!
//! Lock order: the feed's lock may be held while queueing a job (the
//! tasks' lock) or asking the hot folder what it holds, the picker's while
//! reading device numbers; no other runtime lock is taken under another,
//! and none is held across an `.await`.
//!
//! Re-replication (MogileFS's replicate worker): every few seconds each
//! cold device is probed ([`Backend::probe`]); one that has failed its
//! probe for `rereplicate_after_secs`, or is marked `down`, is *lost*: its
//! copies stop counting, and the tracks of the replica index left with
//! fewer than `mindevcount` live copies are copied from a live copy to
//! other writable devices, paced to `rereplicate_bandwidth`, and recorded
//! in the index. A pass runs at start, whenever the set of lost devices
//! changes, and again later while some track stays below.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::access_log::{access_log_path, AccessLog};
use crate::config::{ColdKind, DeviceState, TiersConfig};
use crate::device::{Backend, BusyClock, Folder, S3Device};
use crate::hot::{HotError, HotFolder, Recovery};
use crate::latency::DeviceStats;
use crate::placement::HotPolicy;
use crate::replica::{IndexError, ReplicaIndex};
use crate::s3::S3Client;

mod feed;
mod promote;
mod read;
mod replicate;
mod status;
mod status_text;
mod tasks;
#[cfg(test)]
mod tests;

pub use feed::variant::{is_variant, variant_key, VARIANT_PREFIX};
pub use promote::PromoteError;
pub use read::{OpenError, StreamError, TierStream};
pub use replicate::{ReplicateError, UploadError, UploadReport};
pub use status::{status_path, DeviceStatus, HotStatus, ReplicationStatus, Status};
pub use status_text::{human_bytes, read_status, read_status_text, StatusFileError};

/// Why the tiers could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TiersError {
    #[error(transparent)]
    Hot(#[from] HotError),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error("cold device {name}: cannot create its folder {} ({source}); create it, or mark the device `state = \"readonly\"` or `\"down\"`", path.display())]
    Folder {
        name: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A track as the server knows it: its key (the path below its music
/// folder) and that folder's index, if it was scanned from one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TrackRef {
    pub key: String,
    pub folder: Option<usize>,
}

/// A cold device at run time.
pub struct Device {
    pub name: String,
    pub state: DeviceState,
    pub backend: Arc<dyn Backend>,
    pub stats: DeviceStats,
    /// The music folder this device is, if it is one.
    pub music_folder: Option<usize>,
    /// Where `%util` comes from when the back end counts its own busy
    /// time (benchmarks, [`Tiers::sample_busy_from`]); else diskstats.
    busy: Option<Arc<dyn BusyClock>>,
}

impl Device {
    fn new(
        name: String,
        state: DeviceState,
        backend: Arc<dyn Backend>,
        local: Option<&Path>,
        music_folder: Option<usize>,
    ) -> Device {
        Device {
            name,
            state,
            backend,
            stats: DeviceStats::new(local),
            music_folder,
            busy: None,
        }
    }
}

/// A poisoned lock is still used: every guarded value stays consistent
/// between statements.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The devices, the hot folder, the replica index and the policy.
pub struct Tiers {
    cfg: TiersConfig,
    /// Index 0 is the hot folder when there is one; cold devices follow.
    devices: Vec<Device>,
    hot: Option<Arc<HotFolder>>,
    index: ReplicaIndex,
    /// How hot folder recovery went at start (for status).
    recovery: Recovery,
    started: Instant,
    status_path: PathBuf,
    /// One line per stream request, for `tiers simulate --replay`.
    access_log: AccessLog,
    /// The read path (`read.rs`).
    reads: read::Reads,
    /// The policy, its tracks and the pins (`feed.rs`).
    feed: Mutex<feed::Feed>,
    /// Promotion and demotion (`promote.rs`).
    promoter: promote::Promoter,
    /// Probes and re-replication (`replicate.rs`).
    repair: replicate::Repair,
    /// The background tasks (`tasks.rs`).
    tasks: tasks::Tasks,
}

impl Tiers {
    /// Sets up the devices of `cfg` and one read-only device per music
    /// folder (`music1`, `music2`, …; a `[[tiers.cold]]` folder with the
    /// same path names it and may mark it down), opens the hot folder
    /// (removing unfinished copies, checking the rest: call from a
    /// blocking thread) and the replica index under `data_dir/tiers/`.
    pub fn new(
        cfg: TiersConfig,
        music_roots: &[PathBuf],
        data_dir: &Path,
        policy: Box<dyn HotPolicy>,
    ) -> Result<Tiers, TiersError> {
        let retry = Duration::from_secs(cfg.retry_after_secs);
        let mut devices = Vec::new();
        let mut recovery = Recovery::default();
        let hot = match &cfg.hot {
            Some(h) => {
                let (hf, rec) = HotFolder::open(&h.path, h.budget)?;
                recovery = rec;
                let hf = Arc::new(hf);
                let backend: Arc<dyn Backend> = hf.clone();
                devices.push(Device::new(
                    "hot".into(),
                    DeviceState::Alive,
                    backend,
                    Some(&h.path),
                    None,
                ));
                Some(hf)
            }
            None => None,
        };
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
        let mut claimed = HashSet::new();
        for (i, root) in music_roots.iter().enumerate() {
            let root_c = canon(root);
            let over = cfg.cold.iter().find(|c| match &c.kind {
                ColdKind::Folder { path } => canon(path) == root_c,
                ColdKind::S3(_) => false,
            });
            let (name, state) = match over {
                Some(c) => {
                    claimed.insert(c.name.clone());
                    let st = if c.state == DeviceState::Down {
                        DeviceState::Down
                    } else {
                        DeviceState::Readonly
                    };
                    (c.name.clone(), st)
                }
                None => (format!("music{}", i + 1), DeviceState::Readonly),
            };
            let backend = Arc::new(Folder::new(&name, root_c.clone(), false));
            devices.push(Device::new(name, state, backend, Some(&root_c), Some(i)));
        }
        for c in &cfg.cold {
            if claimed.contains(&c.name) {
                continue;
            }
            let (backend, local): (Arc<dyn Backend>, Option<PathBuf>) = match &c.kind {
                ColdKind::Folder { path } => {
                    if c.state == DeviceState::Alive {
                        std::fs::create_dir_all(path).map_err(|source| TiersError::Folder {
                            name: c.name.clone(),
                            path: path.clone(),
                            source,
                        })?;
                    }
                    (
                        Arc::new(Folder::new(
                            &c.name,
                            path.clone(),
                            c.state == DeviceState::Alive,
                        )),
                        Some(path.clone()),
                    )
                }
                ColdKind::S3(s3) => (
                    Arc::new(S3Device::new(&c.name, S3Client::new(s3.clone(), retry))),
                    None,
                ),
            };
            devices.push(Device::new(
                c.name.clone(),
                c.state,
                backend,
                local.as_deref(),
                None,
            ));
        }
        let t = Tiers::assemble(
            cfg,
            devices,
            hot,
            recovery,
            data_dir,
            policy,
            Some(Duration::from_secs(5)),
        )?;
        t.seed_policy_with_hot_copies();
        Ok(t)
    }

    /// Builds tiers over explicit devices (benchmarks and tests): no hot
    /// folder, no config file, no re-replication.
    pub fn with_devices(
        devices: Vec<(String, Arc<dyn Backend>)>,
        data_dir: &Path,
        policy: Box<dyn HotPolicy>,
    ) -> Result<Tiers, TiersError> {
        let devices = devices
            .into_iter()
            .map(|(name, backend)| {
                let local = backend.local_path().map(Path::to_owned);
                Device::new(name, DeviceState::Alive, backend, local.as_deref(), None)
            })
            .collect();
        Tiers::assemble(
            TiersConfig::default(),
            devices,
            None,
            Recovery::default(),
            data_dir,
            policy,
            None,
        )
    }

    fn assemble(
        cfg: TiersConfig,
        devices: Vec<Device>,
        hot: Option<Arc<HotFolder>>,
        recovery: Recovery,
        data_dir: &Path,
        policy: Box<dyn HotPolicy>,
        repair_every: Option<Duration>,
    ) -> Result<Tiers, TiersError> {
        Ok(Tiers {
            index: ReplicaIndex::open(&data_dir.join("tiers").join("replicas.log"))?,
            reads: read::Reads::default(),
            feed: Mutex::new(feed::Feed::new(policy)),
            promoter: promote::Promoter::new(cfg.promote_bandwidth),
            repair: replicate::Repair::new(cfg.rereplicate_bandwidth, repair_every),
            tasks: tasks::Tasks::default(),
            cfg,
            devices,
            hot,
            recovery,
            started: Instant::now(),
            status_path: status_path(data_dir),
            access_log: AccessLog::open(access_log_path(data_dir)),
        })
    }

    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    pub fn hot(&self) -> Option<&Arc<HotFolder>> {
        self.hot.as_ref()
    }

    pub fn index(&self) -> &ReplicaIndex {
        &self.index
    }

    pub fn config(&self) -> &TiersConfig {
        &self.cfg
    }

    fn device_by_name(&self, name: &str) -> Option<usize> {
        self.devices.iter().position(|d| d.name == name)
    }

    /// The device that is music folder `folder`.
    fn music_device(&self, folder: usize) -> Option<usize> {
        self.devices
            .iter()
            .position(|d| d.music_folder == Some(folder))
    }

    fn retry_after(&self) -> Duration {
        Duration::from_secs(self.cfg.retry_after_secs)
    }

    fn stall_timeout(&self) -> Duration {
        Duration::from_millis(self.cfg.stall_timeout_ms)
    }
}
