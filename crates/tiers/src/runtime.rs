//! [`Tiers`]: the devices at run time. It opens a track on the copy with
//! the best measured latency and keeps a stream going across device
//! failures ([`TierStream`]), counts accesses into the hot-tier policy and
//! promotes and demotes in the background at bounded bandwidth, uploads
//! copies to reach `mindevcount`, and reports its state ([`Status`]).
//!
//! The server needs three calls: [`Tiers::open`] (a stream from a byte
//! offset, with failover), [`Tiers::record_access`] (one stream request,
//! for popularity; [`Tiers::record_listen`] for a play from the listening
//! history) and [`Tiers::start_background`] (promotion, disk sampling,
//! re-replication, the status file).
//!
//! Re-replication (MogileFS's replicate worker): every few seconds each
//! cold device is probed ([`Backend::probe`]); one that has failed its
//! probe for `rereplicate_after_secs`, or is marked `down`, is *lost*: its
//! copies stop counting, and the tracks of the replica index left with
//! fewer than `mindevcount` live copies are copied from a live copy to
//! other writable devices, paced to `rereplicate_bandwidth`, and recorded
//! in the index. A pass runs at start, whenever the set of lost devices
//! changes, and again later while some track stays below.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

use crate::access_log::{access_log_path, AccessLog};
use crate::config::{ColdKind, DeviceState, TiersConfig};
use crate::device::{Backend, DeviceError, Folder, Opened, Reader, S3Device};
use crate::hot::{HotError, HotFolder, Pacer, Recovery};
use crate::latency::{pick_lowest, pick_weighted, Choice, DeviceStats, EXPLORE};
use crate::placement::{key_id, HotPolicy};
use crate::replica::{IndexError, ReplicaIndex};
use crate::s3::S3Client;

/// Why the tiers could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TiersError {
    #[error(transparent)]
    Hot(#[from] HotError),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error("cold device {name}: folder {}: {source}", path.display())]
    Folder {
        name: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Why a track could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    #[error("{key}: no device holds a copy")]
    NoCopy { key: String },
    #[error("{key}: every copy failed: {}", errors.join("; "))]
    AllFailed { key: String, errors: Vec<String> },
}

/// Why an upload did not reach `mindevcount` copies.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UploadError {
    #[error("{key}: {have} of {want} copies; {}", errors.join("; "))]
    TooFewCopies {
        key: String,
        have: usize,
        want: usize,
        errors: Vec<String>,
    },
    #[error(transparent)]
    Index(#[from] IndexError),
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
}

impl Device {
    fn prior_ms(&self) -> f64 {
        match self.backend.kind() {
            "hot" => 1.0,
            "s3" => 20.0,
            _ => 5.0,
        }
    }
}

#[derive(Debug, Default)]
struct Counters {
    opens: AtomicU64,
    hot_hits: AtomicU64,
    bytes_sent: AtomicU64,
    bytes_from_hot: AtomicU64,
    failovers: AtomicU64,
    promotions: AtomicU64,
    promote_failures: AtomicU64,
    demotions: AtomicU64,
}

enum Job {
    Promote(TrackRef),
    Demote(String),
    /// Answers once every job before it is done ([`Tiers::idle`]).
    Barrier(oneshot::Sender<()>),
}

/// Re-replication's state: the devices failing their probe (since when)
/// and what the passes found and did.
#[derive(Default)]
struct Repair {
    failing_since: Mutex<HashMap<usize, Instant>>,
    below: AtomicU64,
    running: AtomicBool,
    copies: AtomicU64,
    failures: AtomicU64,
    last_error: Mutex<Option<String>>,
}

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
    choice: Mutex<Choice>,
    rng: Mutex<SmallRng>,
    policy: Mutex<Box<dyn HotPolicy>>,
    ids: Mutex<HashMap<u64, TrackRef>>,
    /// Pinned keys held hot, with their bytes (taken from the budget the
    /// policy sees).
    pinned: Mutex<HashMap<String, u64>>,
    jobs: Mutex<Option<mpsc::UnboundedSender<Job>>>,
    pacer: Pacer,
    /// Paces re-replication (`rereplicate_bandwidth`).
    repair_pacer: Pacer,
    repair: Repair,
    /// How often devices are probed; `None`: no re-replication.
    repair_every: Option<Duration>,
    counters: Counters,
    status_path: PathBuf,
    /// One line per stream request, for `tiers simulate --replay`.
    access_log: AccessLog,
    started: Instant,
    recovery: Recovery,
    sample_every: Duration,
}

/// One device in [`Status`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceStatus {
    pub name: String,
    pub kind: String,
    pub state: String,
    /// Skipped after a failure.
    pub failed: bool,
    pub ewma_ttfb_ms: Option<f64>,
    pub await_ms: Option<f64>,
    pub util: Option<f64>,
    pub block_device: Option<String>,
    pub in_flight: u64,
    pub reads: u64,
    pub bytes_read: u64,
    pub errors: u64,
    /// Copies recorded in the replica index (cold) or held (hot).
    pub copies: u64,
    pub bytes_stored: u64,
    /// Failed its probe for `rereplicate_after_secs`: its copies no
    /// longer count.
    #[serde(default)]
    pub lost: bool,
}

/// The hot tier in [`Status`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HotStatus {
    pub path: String,
    pub budget: u64,
    pub used: u64,
    pub files: u64,
    /// Pinned tracks held (they fit the budget).
    pub pinned: u64,
    /// Their bytes: the policy's budget is the hot budget less these.
    #[serde(default)]
    pub pinned_bytes: u64,
    /// Stream opens, and how many found a hot copy.
    pub opens: u64,
    pub hits: u64,
    pub hit_ratio: f64,
    pub bytes_sent: u64,
    pub bytes_from_hot: u64,
    pub promotions: u64,
    pub promote_failures: u64,
    pub demotions: u64,
    pub recovered_kept: u64,
    pub recovered_dropped: u64,
}

/// What `spindle tiers status` shows; the server writes it to
/// `DATA/tiers/status.json` every two seconds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Status {
    /// UNIX seconds when written.
    pub written: u64,
    pub uptime_secs: u64,
    pub choice: String,
    pub mindevcount: usize,
    pub failovers: u64,
    pub devices: Vec<DeviceStatus>,
    pub hot: Option<HotStatus>,
    #[serde(default)]
    pub replication: ReplicationStatus,
}

/// Re-replication in [`Status`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ReplicationStatus {
    /// Tracks of the replica index with fewer than `mindevcount` live
    /// copies, as the last pass found them, less those it repaired.
    pub below_mindevcount: u64,
    /// A pass is copying now.
    pub rereplicating: bool,
    /// Copies made since start.
    pub copies_made: u64,
    /// Tracks a pass could not bring back to `mindevcount`.
    pub failures: u64,
    pub last_error: Option<String>,
    /// Devices whose copies no longer count (failed their probe too long).
    pub lost_devices: Vec<String>,
}

/// The status file of a data dir.
pub fn status_path(data_dir: &Path) -> PathBuf {
    data_dir.join("tiers").join("status.json")
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
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
                devices.push(Device {
                    name: "hot".into(),
                    state: DeviceState::Alive,
                    stats: DeviceStats::new(Some(&h.path)),
                    backend: hf.clone(),
                    music_folder: None,
                });
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
            devices.push(Device {
                stats: DeviceStats::new(Some(&root_c)),
                backend: Arc::new(Folder::new(&name, root_c, false)),
                name,
                state,
                music_folder: Some(i),
            });
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
            devices.push(Device {
                name: c.name.clone(),
                state: c.state,
                stats: DeviceStats::new(local.as_deref()),
                backend,
                music_folder: None,
            });
        }
        let index = ReplicaIndex::open(&data_dir.join("tiers").join("replicas.log"))?;
        let pacer = Pacer::new(cfg.promote_bandwidth);
        let repair_pacer = Pacer::new(cfg.rereplicate_bandwidth);
        let t = Tiers {
            cfg,
            devices,
            hot,
            index,
            choice: Mutex::new(Choice::Latency),
            rng: Mutex::new(SmallRng::from_entropy()),
            policy: Mutex::new(policy),
            ids: Mutex::new(HashMap::new()),
            pinned: Mutex::new(HashMap::new()),
            jobs: Mutex::new(None),
            pacer,
            repair_pacer,
            repair: Repair::default(),
            repair_every: Some(Duration::from_secs(5)),
            counters: Counters::default(),
            status_path: status_path(data_dir),
            access_log: AccessLog::open(access_log_path(data_dir)),
            started: Instant::now(),
            recovery,
            sample_every: Duration::from_secs(1),
        };
        t.seed_policy_with_hot_copies();
        Ok(t)
    }

    /// Builds tiers over explicit devices (benchmarks and tests): no hot
    /// folder, no config file.
    pub fn with_devices(
        devices: Vec<(String, Arc<dyn Backend>)>,
        data_dir: &Path,
        policy: Box<dyn HotPolicy>,
    ) -> Result<Tiers, TiersError> {
        let cfg = TiersConfig::default();
        let devices = devices
            .into_iter()
            .map(|(name, backend)| Device {
                stats: DeviceStats::new(backend.local_path()),
                name,
                state: DeviceState::Alive,
                backend,
                music_folder: None,
            })
            .collect();
        Ok(Tiers {
            pacer: Pacer::new(cfg.promote_bandwidth),
            repair_pacer: Pacer::new(cfg.rereplicate_bandwidth),
            repair: Repair::default(),
            repair_every: None,
            cfg,
            devices,
            hot: None,
            index: ReplicaIndex::open(&data_dir.join("tiers").join("replicas.log"))?,
            choice: Mutex::new(Choice::Latency),
            rng: Mutex::new(SmallRng::from_entropy()),
            policy: Mutex::new(policy),
            ids: Mutex::new(HashMap::new()),
            pinned: Mutex::new(HashMap::new()),
            jobs: Mutex::new(None),
            counters: Counters::default(),
            status_path: status_path(data_dir),
            access_log: AccessLog::open(access_log_path(data_dir)),
            started: Instant::now(),
            recovery: Recovery::default(),
            sample_every: Duration::from_secs(1),
        })
    }

    /// Hot copies found at start are known to the policy; those it does
    /// not keep are demoted when the background starts.
    fn seed_policy_with_hot_copies(&self) {
        let Some(hot) = &self.hot else {
            return;
        };
        let mut p = self.policy.lock().unwrap_or_else(|e| e.into_inner());
        let mut ids = self.ids.lock().unwrap_or_else(|e| e.into_inner());
        for key in hot.keys() {
            let len = hot.contains(&key).unwrap_or(0);
            let id = key_id(&key);
            ids.insert(
                id,
                TrackRef {
                    key: key.clone(),
                    folder: None,
                },
            );
            let _ = p.access(id, len);
        }
    }

    /// How often load is sampled (diskstats, `%util`); one second unless
    /// a benchmark wants a finer view. Call before [`Tiers::start_background`].
    pub fn set_sample_every(&mut self, d: Duration) {
        self.sample_every = d.max(Duration::from_millis(10));
    }

    /// How often cold devices are probed for re-replication (five seconds
    /// by default; `None` turns re-replication off, as for
    /// [`Tiers::with_devices`]). Call before [`Tiers::start_background`].
    pub fn set_repair_every(&mut self, d: Option<Duration>) {
        self.repair_every = d.map(|d| d.max(Duration::from_millis(10)));
    }

    /// How reads choose (the benchmark switches it).
    pub fn set_choice(&self, c: Choice) {
        *self.choice.lock().unwrap_or_else(|e| e.into_inner()) = c;
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

    /// The devices that may hold `t`, usable ones only (all of them if
    /// every one is marked failed: a stale mark is better than no read).
    fn candidates(&self, t: &TrackRef) -> Vec<usize> {
        let mut c = Vec::new();
        if self
            .hot
            .as_ref()
            .is_some_and(|h| h.contains(&t.key).is_some())
        {
            c.push(0);
        }
        if let Some(f) = t.folder {
            if let Some(i) = self.devices.iter().position(|d| d.music_folder == Some(f)) {
                c.push(i);
            }
        }
        for (name, _) in self.index.devices_of(&t.key) {
            if let Some(i) = self.device_by_name(&name) {
                if !c.contains(&i) {
                    c.push(i);
                }
            }
        }
        c.retain(|&i| self.devices[i].state != DeviceState::Down);
        let usable: Vec<usize> = c
            .iter()
            .copied()
            .filter(|&i| !self.devices[i].stats.is_failed() && self.devices[i].backend.reachable())
            .collect();
        if usable.is_empty() {
            c
        } else {
            usable
        }
    }

    fn choose(&self, cands: &[usize]) -> Option<usize> {
        let choice = *self.choice.lock().unwrap_or_else(|e| e.into_inner());
        let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
        let i = match choice {
            Choice::Latency if cands.len() > 1 && rng.gen_bool(EXPLORE) => {
                rng.gen_range(0..cands.len())
            }
            // A copy on a device never timed is read once to measure it.
            Choice::Latency if cands.len() > 1 => match cands
                .iter()
                .position(|&i| self.devices[i].stats.unmeasured())
            {
                Some(k) => k,
                None => {
                    let scores: Vec<f64> = cands
                        .iter()
                        .map(|&i| {
                            self.devices[i]
                                .stats
                                .estimate_ms(self.devices[i].prior_ms())
                        })
                        .collect();
                    pick_weighted(&scores, &mut *rng)?
                }
            },
            Choice::Latency => {
                let scores: Vec<f64> = cands
                    .iter()
                    .map(|&i| {
                        self.devices[i]
                            .stats
                            .estimate_ms(self.devices[i].prior_ms())
                    })
                    .collect();
                pick_weighted(&scores, &mut *rng)?
            }
            Choice::Util => {
                let utils: Vec<f64> = cands.iter().map(|&i| self.util_of(i)).collect();
                pick_lowest(&utils, &mut *rng)?
            }
        };
        Some(cands[i])
    }

    /// `%util` as MogileFS reads it: from diskstats for a local device,
    /// else from the throttled back end's busy time (benchmark).
    fn util_of(&self, i: usize) -> f64 {
        self.devices[i].stats.util().unwrap_or(0.0)
    }

    /// The length of `t` if a copy's length is known without opening it
    /// (the hot folder, the replica index, a stat of the music folder).
    pub fn known_len(&self, t: &TrackRef) -> Option<u64> {
        if let Some(n) = self.hot.as_ref().and_then(|h| h.contains(&t.key)) {
            return Some(n);
        }
        if let Some((_, n)) = self.index.devices_of(&t.key).first() {
            return Some(*n);
        }
        let d = self
            .devices
            .iter()
            .find(|d| t.folder.is_some() && d.music_folder == t.folder)?;
        let path = d.backend.local_path()?.join(&t.key);
        std::fs::metadata(path)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.len())
    }

    /// Opens `t` at byte `offset` on the best copy; failing copies are
    /// skipped. The stream fails over mid-way (see [`TierStream`]).
    pub async fn open(
        self: &Arc<Self>,
        t: &TrackRef,
        offset: u64,
    ) -> Result<TierStream, OpenError> {
        let mut cands = self.candidates(t);
        if cands.is_empty() {
            return Err(OpenError::NoCopy { key: t.key.clone() });
        }
        self.counters.opens.fetch_add(1, Ordering::Relaxed);
        if cands.first() == Some(&0) && self.hot.is_some() {
            self.counters.hot_hits.fetch_add(1, Ordering::Relaxed);
        }
        let mut errors = Vec::new();
        let mut tries: HashMap<usize, u32> = HashMap::new();
        while let Some(i) = self.choose(&cands) {
            match self.open_on(i, &t.key, offset, None).await {
                Ok((opened, first)) => {
                    let len = opened.len;
                    return Ok(TierStream {
                        tiers: self.clone(),
                        track: t.clone(),
                        device: i,
                        reader: Some(opened.reader),
                        pending: first,
                        pos: offset,
                        end: len,
                        len,
                        cands,
                        tries,
                        failovers: 0,
                    });
                }
                Err(e) => {
                    errors.push(e.to_string());
                    let n = tries.entry(i).or_default();
                    *n += 1;
                    if !self.may_retry(i, *n) {
                        cands.retain(|&c| c != i);
                    }
                }
            }
        }
        Err(OpenError::AllFailed {
            key: t.key.clone(),
            errors,
        })
    }

    /// An S3 device with other endpoints up is tried again (up to three
    /// times per stream); anything else once.
    fn may_retry(&self, i: usize, tries: u32) -> bool {
        let d = &self.devices[i];
        d.backend.kind() == "s3" && d.backend.reachable() && tries < 3
    }

    /// Opens on device `i` and waits for the first chunk (time to first
    /// byte), within the stall timeout. `want_len`: the length the copy
    /// must have (on failover).
    async fn open_on(
        &self,
        i: usize,
        key: &str,
        offset: u64,
        want_len: Option<u64>,
    ) -> Result<(Opened, Option<Bytes>), DeviceError> {
        let d = &self.devices[i];
        let stall = Duration::from_millis(self.cfg.stall_timeout_ms);
        d.stats.in_flight.fetch_add(1, Ordering::Relaxed);
        let t0 = Instant::now();
        let r = async {
            let mut o = match tokio::time::timeout(stall, d.backend.open(key, offset)).await {
                Ok(r) => r?,
                Err(_) => return Err(stalled(&d.name, key)),
            };
            if let Some(w) = want_len {
                if o.len != w {
                    return Err(DeviceError::Io {
                        device: d.name.clone(),
                        key: key.to_owned(),
                        source: std::io::Error::other(format!(
                            "this copy has {} bytes, the stream {w}",
                            o.len
                        )),
                    });
                }
            }
            let first = if offset < o.len {
                match tokio::time::timeout(stall, o.reader.next_chunk()).await {
                    Ok(Ok(c)) => c,
                    Ok(Err(e)) => {
                        return Err(DeviceError::Io {
                            device: d.name.clone(),
                            key: key.to_owned(),
                            source: e,
                        })
                    }
                    Err(_) => return Err(stalled(&d.name, key)),
                }
            } else {
                None
            };
            Ok((o, first))
        }
        .await;
        d.stats.in_flight.fetch_sub(1, Ordering::Relaxed);
        match &r {
            Ok(_) => {
                d.stats.record_ttfb(t0.elapsed());
                d.stats.reads.fetch_add(1, Ordering::Relaxed);
                d.stats.mark_ok();
            }
            Err(e) if e.is_not_found() => {}
            Err(_) => {
                // Slowness counts too: a device that times out is slow.
                d.stats.record_ttfb(t0.elapsed());
                d.stats
                    .mark_failed(Duration::from_secs(self.cfg.retry_after_secs));
            }
        }
        r
    }

    /// One stream request of `t` (`len` bytes): feeds the policy, which
    /// may promote it and demote others in the background.
    pub fn record_access(&self, t: &TrackRef, len: u64) {
        let id = key_id(&t.key);
        let unix_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        self.access_log.record(unix_ms, id, len);
        if self.hot.is_none() {
            return;
        }
        lock(&self.ids).insert(id, t.clone());
        // A pinned track is hot already and its bytes are the pins': the
        // policy only learns that it is popular.
        if lock(&self.pinned).contains_key(&t.key) {
            lock(&self.policy).record_listen(id, 1.0);
            return;
        }
        let (admit, evicted) = lock(&self.policy).access(id, len);
        if !evicted.is_empty() {
            let pinned = lock(&self.pinned);
            let ids = lock(&self.ids);
            for e in evicted {
                if let Some(tr) = ids.get(&e) {
                    if !pinned.contains_key(&tr.key) {
                        self.send(Job::Demote(tr.key.clone()));
                    }
                }
            }
        }
        if admit {
            self.send(Job::Promote(t.clone()));
        }
    }

    /// Plays from the listening history (`weight` plays of `t`): they
    /// raise its popularity in the policy but move nothing by themselves.
    pub fn record_listen(&self, t: &TrackRef, weight: f64) {
        if self.hot.is_none() {
            return;
        }
        let id = key_id(&t.key);
        self.ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, t.clone());
        self.policy
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .record_listen(id, weight);
    }

    /// Fills the hot tier's free bytes with the tracks the policy counts
    /// most popular without a stream request: call after replaying the
    /// listening history, so a new or emptied hot folder starts with what
    /// the history says is played most instead of waiting for requests.
    /// Only free bytes (nothing hot is demoted); promotion runs in the
    /// background at the usual bounded bandwidth. Reads tracks' lengths
    /// (a stat of the music folder): call from a blocking thread. Returns
    /// how many tracks were queued for promotion.
    pub fn prefill_hot(&self) -> usize {
        if self.hot.is_none() {
            return 0;
        }
        let ids = lock(&self.ids).clone();
        let pinned: HashSet<String> = lock(&self.pinned).keys().cloned().collect();
        // Lengths first (a stat each, for tracks not in the replica
        // index), so that no file system call runs under the policy's
        // lock, which every stream request takes.
        let lens: HashMap<u64, u64> = ids
            .iter()
            .filter(|(_, t)| !pinned.contains(&t.key))
            .filter_map(|(&id, t)| Some((id, self.known_len(t)?)))
            .collect();
        let admitted = lock(&self.policy).prefill(&mut |id| lens.get(&id).copied());
        for id in &admitted {
            if let Some(t) = ids.get(id) {
                self.send(Job::Promote(t.clone()));
            }
        }
        admitted.len()
    }

    /// Replaces the pinned tracks. In the order given, as long as their
    /// bytes fit the hot budget, they are promoted and never demoted by
    /// the policy; the policy's budget becomes the hot budget less their
    /// bytes, so pins and policy together never want more than the hot
    /// folder holds (what the smaller budget pushes out is demoted before
    /// any pin is promoted). Pins that do not fit, or have no copy, stay
    /// cold. Reads each track's length (a stat of the music folder): call
    /// from a blocking thread.
    pub fn set_pinned(&self, tracks: Vec<TrackRef>) {
        let Some(hot) = &self.hot else {
            return;
        };
        let budget = hot.budget();
        let mut keep: HashMap<String, u64> = HashMap::new();
        let mut order = Vec::new();
        let (mut bytes, mut left_out) = (0u64, 0usize);
        for t in tracks {
            if keep.contains_key(&t.key) {
                continue;
            }
            match self.known_len(&t) {
                Some(len) if bytes + len <= budget => {
                    bytes += len;
                    keep.insert(t.key.clone(), len);
                    order.push(t);
                }
                _ => left_out += 1,
            }
        }
        if left_out > 0 {
            eprintln!(
                "spindle: tiers: {left_out} pinned tracks stay cold (no copy, or beyond the hot budget of {budget} bytes)"
            );
        }
        let old = std::mem::replace(&mut *lock(&self.pinned), keep.clone());
        let mut demote = Vec::new();
        {
            let mut p = lock(&self.policy);
            let mut ids = lock(&self.ids);
            for t in &order {
                let id = key_id(&t.key);
                ids.insert(id, t.clone());
                // Its copy, if the policy held it, stays as the pin's.
                p.remove(id);
            }
            for e in p.set_budget(budget - bytes) {
                if let Some(tr) = ids.get(&e) {
                    if !keep.contains_key(&tr.key) {
                        demote.push(tr.key.clone());
                    }
                }
            }
            // Unpinned tracks go (the policy may admit them again).
            for k in old.keys() {
                if !keep.contains_key(k) && !p.contains(key_id(k)) {
                    demote.push(k.clone());
                }
            }
        }
        for k in demote {
            self.send(Job::Demote(k));
        }
        for t in order {
            if hot.contains(&t.key).is_none() {
                self.send(Job::Promote(t));
            }
        }
    }

    /// Waits until the background queue has done every promotion and
    /// demotion sent before this call (tests, benchmarks). Returns at once
    /// when the background is not running.
    pub async fn idle(&self) {
        let (tx, rx) = oneshot::channel();
        self.send(Job::Barrier(tx));
        let _ = rx.await;
    }

    fn send(&self, job: Job) {
        if let Some(tx) = self.jobs.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            let _ = tx.send(job);
        }
    }

    /// Starts the background work on the current tokio runtime: the
    /// promotion queue, diskstats sampling every second, the status file
    /// every two seconds.
    pub fn start_background(self: &Arc<Self>) {
        let (tx, mut rx) = mpsc::unbounded_channel::<Job>();
        *self.jobs.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
        // Hot copies found at start that the policy did not keep.
        if let Some(hot) = &self.hot {
            let p = self.policy.lock().unwrap_or_else(|e| e.into_inner());
            for k in hot.keys() {
                if !p.contains(key_id(&k)) {
                    self.send(Job::Demote(k));
                }
            }
        }
        if let Some(every) = self.repair_every {
            let me = Arc::downgrade(self);
            tokio::spawn(async move { repair_loop(me, every).await });
        }
        let me = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some(job) = rx.recv().await {
                let Some(t) = me.upgrade() else { break };
                t.run_job(job).await;
            }
        });
        let me = Arc::downgrade(self);
        tokio::spawn(async move {
            let period = me
                .upgrade()
                .map_or(Duration::from_secs(1), |t| t.sample_every);
            let mut tick = tokio::time::interval(period);
            let mut n = 0u64;
            loop {
                tick.tick().await;
                let Some(t) = me.upgrade() else { break };
                let text = tokio::fs::read_to_string("/proc/diskstats")
                    .await
                    .unwrap_or_default();
                let now = Instant::now();
                for d in &t.devices {
                    match d.backend.busy() {
                        Some(b) => d.stats.sample_busy(b, now),
                        None => d.stats.sample_disk(&text, now),
                    }
                }
                n += 1;
                if n.is_multiple_of((2000 / period.as_millis().max(1) as u64).max(1)) {
                    let _ = t.write_status().await;
                }
            }
        });
    }

    async fn run_job(&self, job: Job) {
        match job {
            Job::Barrier(tx) => {
                let _ = tx.send(());
            }
            Job::Demote(key) => {
                if let Some(h) = &self.hot {
                    if h.evict(&key) {
                        self.counters.demotions.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            Job::Promote(t) => {
                let Some(hot) = &self.hot else { return };
                if hot.contains(&t.key).is_some() {
                    return;
                }
                if let Err(e) = self.promote(hot, &t).await {
                    self.counters
                        .promote_failures
                        .fetch_add(1, Ordering::Relaxed);
                    eprintln!("spindle: tiers: promoting {}: {e}", t.key);
                }
            }
        }
    }

    async fn promote(&self, hot: &HotFolder, t: &TrackRef) -> Result<(), String> {
        let mut cands: Vec<usize> = self
            .candidates(t)
            .into_iter()
            .filter(|&i| i != 0 || self.hot.is_none())
            .collect();
        let mut errors = Vec::new();
        while let Some(i) = self.choose(&cands) {
            cands.retain(|&c| c != i);
            let d = &self.devices[i];
            let o = match d.backend.open(&t.key, 0).await {
                Ok(o) => o,
                Err(e) => {
                    errors.push(e.to_string());
                    continue;
                }
            };
            hot.reserve(&t.key, o.len).map_err(|e| e.to_string())?;
            match hot.promote(&t.key, o, &self.pacer).await {
                Ok(()) => {
                    self.counters.promotions.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        Err(if errors.is_empty() {
            "no cold copy".into()
        } else {
            errors.join("; ")
        })
    }

    /// Probes every cold device not marked down; a failed probe marks the
    /// device failed (reads skip it) and starts its clock towards lost.
    async fn probe_devices(&self) {
        let stall = Duration::from_millis(self.cfg.stall_timeout_ms);
        for (i, d) in self.devices.iter().enumerate() {
            if d.state == DeviceState::Down || d.backend.kind() == "hot" {
                continue;
            }
            let ok = matches!(
                tokio::time::timeout(stall, d.backend.probe()).await,
                Ok(Ok(()))
            );
            let mut f = lock(&self.repair.failing_since);
            if ok {
                f.remove(&i);
            } else {
                f.entry(i).or_insert_with(Instant::now);
                d.stats
                    .mark_failed(Duration::from_secs(self.cfg.retry_after_secs));
            }
        }
    }

    /// Whether device `i`'s copies count: not marked down, and not
    /// failing its probe for `rereplicate_after_secs` or longer.
    fn is_live(&self, i: usize) -> bool {
        let grace = Duration::from_secs(self.cfg.rereplicate_after_secs);
        self.devices[i].state != DeviceState::Down
            && lock(&self.repair.failing_since)
                .get(&i)
                .is_none_or(|since| since.elapsed() < grace)
    }

    /// One re-replication pass: every track of the replica index with
    /// fewer than `mindevcount` live copies (a copy in a live music folder
    /// counts) is copied from a live copy to live writable devices until
    /// it has them, paced to `rereplicate_bandwidth`, and each new copy is
    /// recorded in the index. Returns how many tracks stay below.
    pub async fn rereplicate(&self) -> usize {
        let want = self.cfg.mindevcount;
        let live: Vec<bool> = (0..self.devices.len()).map(|i| self.is_live(i)).collect();
        let music: Vec<usize> = (0..self.devices.len())
            .filter(|&i| live[i] && self.devices[i].music_folder.is_some())
            .collect();
        let mut below = Vec::new();
        for (key, copies) in self.index.snapshot() {
            let on = |d: &str| self.device_by_name(d).filter(|&i| live[i]);
            let Some(len) = copies
                .iter()
                .find(|(d, _)| on(d).is_some())
                .or(copies.first())
                .map(|c| c.1)
            else {
                continue;
            };
            let mut have: Vec<usize> = copies
                .iter()
                .filter(|(_, l)| *l == len)
                .filter_map(|(d, _)| on(d))
                .collect();
            if have.len() >= want {
                continue;
            }
            for &m in &music {
                if matches!(self.devices[m].backend.head(&key).await, Ok(Some(l)) if l == len) {
                    have.push(m);
                }
            }
            if have.len() < want {
                below.push((key, len, have));
            }
        }
        let r = &self.repair;
        r.below.store(below.len() as u64, Ordering::Relaxed);
        r.running.store(!below.is_empty(), Ordering::Relaxed);
        let mut left = 0;
        for (key, len, have) in below {
            match self.copy_to_more(&key, len, have, &live).await {
                Ok(()) => {
                    r.below.fetch_sub(1, Ordering::Relaxed);
                }
                Err(e) => {
                    left += 1;
                    r.failures.fetch_add(1, Ordering::Relaxed);
                    eprintln!("spindle: tiers: re-replicating {e}");
                    *lock(&r.last_error) = Some(e);
                }
            }
        }
        r.running.store(false, Ordering::Relaxed);
        left
    }

    /// Copies `key` (`len` bytes, live on `have`) to more live writable
    /// devices until it has `mindevcount` copies.
    async fn copy_to_more(
        &self,
        key: &str,
        len: u64,
        mut have: Vec<usize>,
        live: &[bool],
    ) -> Result<(), String> {
        let want = self.cfg.mindevcount;
        let sources = have.clone();
        let mut errors = Vec::new();
        let mut fetched: Option<PathBuf> = None;
        for (i, d) in self.devices.iter().enumerate() {
            if have.len() >= want {
                break;
            }
            if have.contains(&i)
                || !live[i]
                || d.state != DeviceState::Alive
                || d.music_folder.is_some()
                || d.backend.kind() == "hot"
                || d.stats.is_failed()
            {
                continue;
            }
            // A copy already there (an unrecorded one) is recorded.
            if !matches!(d.backend.head(key).await, Ok(Some(l)) if l == len) {
                if fetched.is_none() {
                    match self.fetch_copy(key, len, &sources).await {
                        Ok(p) => fetched = Some(p),
                        Err(e) => {
                            errors.push(e);
                            break;
                        }
                    }
                }
                let Some(src) = fetched.as_deref() else {
                    break;
                };
                if let Err(e) = d.backend.put(key, src).await {
                    errors.push(e.to_string());
                    d.stats
                        .mark_failed(Duration::from_secs(self.cfg.retry_after_secs));
                    continue;
                }
                self.repair.copies.fetch_add(1, Ordering::Relaxed);
            }
            match self.index.add(key, &d.name, len) {
                Ok(()) => have.push(i),
                Err(e) => errors.push(e.to_string()),
            }
        }
        if let Some(p) = fetched {
            let _ = tokio::fs::remove_file(p).await;
        }
        if have.len() >= want {
            return Ok(());
        }
        Err(format!(
            "{key}: {} of {want} live copies: {}",
            have.len(),
            if errors.is_empty() {
                "no other live writable device to copy to".to_owned()
            } else {
                errors.join("; ")
            }
        ))
    }

    /// Reads `key` from one of `sources` (chosen by latency, the next on
    /// failure) into `DATA/tiers/rereplicate.tmp`, paced.
    async fn fetch_copy(&self, key: &str, len: u64, sources: &[usize]) -> Result<PathBuf, String> {
        let tmp = self.status_path.with_file_name("rereplicate.tmp");
        let mut cands = sources.to_vec();
        let mut errors = Vec::new();
        while let Some(i) = self.choose(&cands) {
            cands.retain(|&c| c != i);
            match self.download(i, key, len, &tmp).await {
                Ok(()) => return Ok(tmp),
                Err(e) => errors.push(e),
            }
        }
        Err(if errors.is_empty() {
            "no live copy to copy from".to_owned()
        } else {
            errors.join("; ")
        })
    }

    async fn download(&self, i: usize, key: &str, len: u64, tmp: &Path) -> Result<(), String> {
        let d = &self.devices[i];
        let stall = Duration::from_millis(self.cfg.stall_timeout_ms);
        let mut o = match tokio::time::timeout(stall, d.backend.open(key, 0)).await {
            Ok(r) => r.map_err(|e| e.to_string())?,
            Err(_) => return Err(stalled(&d.name, key).to_string()),
        };
        if o.len != len {
            return Err(format!(
                "{}: {key}: {} bytes, the replica index says {len}",
                d.name, o.len
            ));
        }
        let io = |e: std::io::Error| format!("{}: {e}", tmp.display());
        let mut f = tokio::fs::File::create(tmp).await.map_err(io)?;
        let mut got = 0u64;
        loop {
            match tokio::time::timeout(stall, o.reader.next_chunk()).await {
                Ok(Ok(Some(c))) => {
                    self.repair_pacer.take(c.len() as u64).await;
                    f.write_all(&c).await.map_err(io)?;
                    got += c.len() as u64;
                }
                Ok(Ok(None)) => break,
                Ok(Err(e)) => return Err(format!("{}: {key}: {e}", d.name)),
                Err(_) => return Err(stalled(&d.name, key).to_string()),
            }
        }
        f.flush().await.map_err(io)?;
        if got != len {
            return Err(format!("{}: {key}: ended at byte {got} of {len}", d.name));
        }
        Ok(())
    }

    /// Copies the file at `local` (track `t`, already on its music folder
    /// if `t.folder` is set) to writable cold devices until it has
    /// `mindevcount` copies; records each in the replica index. Returns
    /// how many copies it has.
    pub async fn replicate(&self, t: &TrackRef, local: &Path) -> Result<usize, UploadError> {
        let len = tokio::fs::metadata(local)
            .await
            .map(|m| m.len())
            .unwrap_or(0);
        let mut have: Vec<usize> = Vec::new();
        if let Some(f) = t.folder {
            if let Some(i) = self.devices.iter().position(|d| d.music_folder == Some(f)) {
                have.push(i);
            }
        }
        for (name, l) in self.index.devices_of(&t.key) {
            if let Some(i) = self.device_by_name(&name) {
                // A copy on a device marked down does not count: upload
                // again makes up for it elsewhere.
                if l == len && !have.contains(&i) && self.devices[i].state != DeviceState::Down {
                    have.push(i);
                }
            }
        }
        let mut errors = Vec::new();
        let want = self.cfg.mindevcount;
        for (i, d) in self.devices.iter().enumerate() {
            if have.len() >= want {
                break;
            }
            if have.contains(&i)
                || d.state != DeviceState::Alive
                || d.music_folder.is_some()
                || d.backend.kind() == "hot"
            {
                continue;
            }
            // A copy already there (an earlier, unrecorded upload) counts.
            match d.backend.head(&t.key).await {
                Ok(Some(l)) if l == len => {}
                _ => match d.backend.put(&t.key, local).await {
                    Ok(_) => {}
                    Err(e) => {
                        errors.push(e.to_string());
                        d.stats
                            .mark_failed(Duration::from_secs(self.cfg.retry_after_secs));
                        continue;
                    }
                },
            }
            self.index.add(&t.key, &d.name, len)?;
            have.push(i);
        }
        if have.len() < want {
            return Err(UploadError::TooFewCopies {
                key: t.key.clone(),
                have: have.len(),
                want,
                errors,
            });
        }
        Ok(have.len())
    }

    /// The current state.
    pub fn status(&self) -> Status {
        let per = self.index.per_device();
        let devices = self
            .devices
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let (copies, bytes_stored) = match (&self.hot, d.backend.kind()) {
                    (Some(h), "hot") => (h.len() as u64, h.used()),
                    _ => per.get(&d.name).copied().unwrap_or_default(),
                };
                DeviceStatus {
                    name: d.name.clone(),
                    kind: if d.music_folder.is_some() {
                        "music".into()
                    } else {
                        d.backend.kind().into()
                    },
                    state: format!("{:?}", d.state).to_lowercase(),
                    failed: d.stats.is_failed() || !d.backend.reachable(),
                    ewma_ttfb_ms: d.stats.ewma_ms(),
                    await_ms: d.stats.await_ms(),
                    util: d.stats.util(),
                    block_device: d.stats.block_device().map(|(a, b)| format!("{a}:{b}")),
                    in_flight: d.stats.in_flight.load(Ordering::Relaxed) as u64,
                    reads: d.stats.reads.load(Ordering::Relaxed),
                    bytes_read: d.stats.bytes_read.load(Ordering::Relaxed),
                    errors: d.stats.errors.load(Ordering::Relaxed),
                    copies,
                    bytes_stored,
                    lost: !self.is_live(i) && d.state != DeviceState::Down,
                }
            })
            .collect();
        let c = &self.counters;
        let (pinned, pinned_bytes) = {
            let p = lock(&self.pinned);
            (p.len() as u64, p.values().sum())
        };
        let hot = self.hot.as_ref().map(|h| {
            let opens = c.opens.load(Ordering::Relaxed);
            let hits = c.hot_hits.load(Ordering::Relaxed);
            HotStatus {
                path: h.root().display().to_string(),
                budget: h.budget(),
                used: h.used(),
                files: h.len() as u64,
                pinned,
                pinned_bytes,
                opens,
                hits,
                hit_ratio: if opens == 0 {
                    0.0
                } else {
                    hits as f64 / opens as f64
                },
                bytes_sent: c.bytes_sent.load(Ordering::Relaxed),
                bytes_from_hot: c.bytes_from_hot.load(Ordering::Relaxed),
                promotions: c.promotions.load(Ordering::Relaxed),
                promote_failures: c.promote_failures.load(Ordering::Relaxed),
                demotions: c.demotions.load(Ordering::Relaxed),
                recovered_kept: self.recovery.kept as u64,
                recovered_dropped: (self.recovery.dropped + self.recovery.temp_removed) as u64,
            }
        });
        Status {
            written: unix_now(),
            uptime_secs: self.started.elapsed().as_secs(),
            choice: format!(
                "{:?}",
                *self.choice.lock().unwrap_or_else(|e| e.into_inner())
            )
            .to_lowercase(),
            mindevcount: self.cfg.mindevcount,
            failovers: c.failovers.load(Ordering::Relaxed),
            devices,
            hot,
            replication: ReplicationStatus {
                below_mindevcount: self.repair.below.load(Ordering::Relaxed),
                rereplicating: self.repair.running.load(Ordering::Relaxed),
                copies_made: self.repair.copies.load(Ordering::Relaxed),
                failures: self.repair.failures.load(Ordering::Relaxed),
                last_error: lock(&self.repair.last_error).clone(),
                lost_devices: (0..self.devices.len())
                    .filter(|&i| !self.is_live(i) && self.devices[i].state != DeviceState::Down)
                    .map(|i| self.devices[i].name.clone())
                    .collect(),
            },
        }
    }

    /// Writes [`Tiers::status`] to the status file (temp + rename).
    pub async fn write_status(&self) -> std::io::Result<()> {
        let s = serde_json::to_vec_pretty(&self.status()).map_err(std::io::Error::other)?;
        if let Some(p) = self.status_path.parent() {
            tokio::fs::create_dir_all(p).await?;
        }
        let tmp = self.status_path.with_extension("json.tmp");
        tokio::fs::write(&tmp, s).await?;
        tokio::fs::rename(&tmp, &self.status_path).await
    }
}

/// Probes the devices every `every` and runs a re-replication pass at
/// start, when the set of live devices changes, and every
/// `2 × retry_after_secs` (at least 10 s) while tracks stay below.
async fn repair_loop(me: std::sync::Weak<Tiers>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut seen: Option<Vec<bool>> = None;
    let mut again: Option<Instant> = None;
    loop {
        tick.tick().await;
        let Some(t) = me.upgrade() else { break };
        t.probe_devices().await;
        let live: Vec<bool> = (0..t.devices.len()).map(|i| t.is_live(i)).collect();
        let due = seen.as_ref() != Some(&live) || again.is_some_and(|a| Instant::now() >= a);
        if !due {
            continue;
        }
        seen = Some(live);
        let left = t.rereplicate().await;
        let wait = Duration::from_secs((2 * t.cfg.retry_after_secs).max(10));
        again = (left > 0).then(|| Instant::now() + wait);
    }
}

fn stalled(device: &str, key: &str) -> DeviceError {
    DeviceError::Io {
        device: device.to_owned(),
        key: key.to_owned(),
        source: std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "no data within the stall timeout",
        ),
    }
}

/// A stream of one track from a byte offset. When the device it reads
/// from errors, ends early or stalls, it opens another copy at the byte
/// it reached and goes on; the reader sees one unbroken byte sequence.
pub struct TierStream {
    tiers: Arc<Tiers>,
    track: TrackRef,
    device: usize,
    reader: Option<Reader>,
    pending: Option<Bytes>,
    pos: u64,
    end: u64,
    len: u64,
    cands: Vec<usize>,
    tries: HashMap<usize, u32>,
    failovers: u32,
}

impl TierStream {
    /// The track's total length.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device serving now.
    pub fn device(&self) -> &str {
        &self.tiers.devices[self.device].name
    }

    /// How many times this stream moved to another copy.
    pub fn failovers(&self) -> u32 {
        self.failovers
    }

    /// Stops after byte `end` (exclusive), for a `Range` request.
    pub fn limit(mut self, end: u64) -> TierStream {
        self.end = end.min(self.len);
        self
    }

    fn account(&self, n: usize) {
        let t = &self.tiers;
        t.devices[self.device]
            .stats
            .bytes_read
            .fetch_add(n as u64, Ordering::Relaxed);
        t.counters.bytes_sent.fetch_add(n as u64, Ordering::Relaxed);
        if t.hot.is_some() && self.device == 0 {
            t.counters
                .bytes_from_hot
                .fetch_add(n as u64, Ordering::Relaxed);
        }
    }

    fn cut(&mut self, mut c: Bytes) -> Bytes {
        let left = self.end.saturating_sub(self.pos);
        if c.len() as u64 > left {
            c.truncate(left as usize);
        }
        self.pos += c.len() as u64;
        self.account(c.len());
        c
    }

    /// The next chunk; `None` at the end; an error only when no copy is
    /// left to fail over to.
    pub async fn next_chunk(&mut self) -> Option<std::io::Result<Bytes>> {
        let stall = Duration::from_millis(self.tiers.cfg.stall_timeout_ms);
        loop {
            if self.pos >= self.end {
                return None;
            }
            if let Some(c) = self.pending.take() {
                return Some(Ok(self.cut(c)));
            }
            let why = match self.reader.as_mut() {
                Some(r) => match tokio::time::timeout(stall, r.next_chunk()).await {
                    Ok(Ok(Some(c))) if !c.is_empty() => return Some(Ok(self.cut(c))),
                    Ok(Ok(_)) => "the copy ended early".to_owned(),
                    Ok(Err(e)) => e.to_string(),
                    Err(_) => "no data within the stall timeout".to_owned(),
                },
                None => "no reader".to_owned(),
            };
            if let Err(e) = self.fail_over(&why).await {
                return Some(Err(e));
            }
        }
    }

    async fn fail_over(&mut self, why: &str) -> std::io::Result<()> {
        self.reader = None;
        let t = self.tiers.clone();
        let d = &t.devices[self.device];
        let n = self.tries.entry(self.device).or_default();
        *n += 1;
        if !t.may_retry(self.device, *n) {
            d.stats
                .mark_failed(Duration::from_secs(t.cfg.retry_after_secs));
            let gone = self.device;
            self.cands.retain(|&c| c != gone);
        } else {
            d.stats.errors.fetch_add(1, Ordering::Relaxed);
        }
        let mut errors = vec![format!("{}: {why}", d.name)];
        while let Some(i) = t.choose(&self.cands) {
            match t
                .open_on(i, &self.track.key, self.pos, Some(self.len))
                .await
            {
                Ok((o, first)) => {
                    self.device = i;
                    self.reader = Some(o.reader);
                    self.pending = first;
                    self.failovers += 1;
                    t.counters.failovers.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                Err(e) => {
                    errors.push(e.to_string());
                    let n = self.tries.entry(i).or_default();
                    *n += 1;
                    if !t.may_retry(i, *n) {
                        self.cands.retain(|&c| c != i);
                    }
                }
            }
        }
        Err(std::io::Error::other(format!(
            "{}: every copy failed at byte {}: {}",
            self.track.key,
            self.pos,
            errors.join("; ")
        )))
    }

    /// The rest of the stream as a `futures` stream (for an HTTP body).
    pub fn into_stream(self) -> impl futures_util::Stream<Item = std::io::Result<Bytes>> + Send {
        futures_util::stream::unfold(self, |mut s| async move {
            let c = s.next_chunk().await?;
            Some((c, s))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{Throttle, Throttled};
    use crate::placement::DecayedLfu;

    fn throttled(root: &Path, fail_after: Option<u64>, per_chunk: Duration) -> Arc<dyn Backend> {
        Arc::new(Throttled::new(
            Arc::new(Folder::new("f", root.to_owned(), false)),
            Throttle {
                parallel: 4,
                service: Duration::ZERO,
                fail_after,
                per_chunk,
            },
        ))
    }

    async fn read_all(s: &mut TierStream) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(c) = s.next_chunk().await {
            out.extend_from_slice(&c?);
        }
        Ok(out)
    }

    #[tokio::test]
    async fn a_stream_fails_over_mid_way_and_resumes_at_the_byte_it_reached() {
        let d = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..400_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for dev in ["a", "b", "c"] {
            std::fs::create_dir_all(d.path().join(dev).join("x")).unwrap();
            std::fs::write(d.path().join(dev).join("x/t.flac"), &data).unwrap();
        }
        let mut failovers = 0;
        for round in 0..12 {
            let tiers = Arc::new(
                Tiers::with_devices(
                    vec![
                        // Breaks after 100 000 bytes.
                        (
                            "a".into(),
                            throttled(&d.path().join("a"), Some(100_000), Duration::ZERO),
                        ),
                        // Stalls: each chunk takes longer than the stall timeout.
                        (
                            "b".into(),
                            throttled(&d.path().join("b"), None, Duration::from_millis(400)),
                        ),
                        (
                            "c".into(),
                            throttled(&d.path().join("c"), None, Duration::ZERO),
                        ),
                    ],
                    &d.path().join(format!("data{round}")),
                    Box::new(DecayedLfu::new(0)),
                )
                .unwrap(),
            );
            let mut cfg = tiers.cfg.clone();
            cfg.stall_timeout_ms = 150;
            let tiers = Arc::new(Tiers {
                cfg,
                ..Arc::try_unwrap(tiers).ok().unwrap()
            });
            for name in ["a", "b", "c"] {
                tiers
                    .index
                    .add("x/t.flac", name, data.len() as u64)
                    .unwrap();
            }
            let t = TrackRef {
                key: "x/t.flac".into(),
                folder: None,
            };
            let mut s = tiers.open(&t, 0).await.unwrap();
            assert_eq!(s.len(), 400_000);
            let got = read_all(&mut s).await.unwrap();
            assert!(
                got == data,
                "round {round}: bytes differ after {} failovers",
                s.failovers()
            );
            failovers += s.failovers();
            // A ranged read from the middle, ending early.
            let mut s = tiers.open(&t, 150_000).await.unwrap().limit(250_000);
            assert_eq!(read_all(&mut s).await.unwrap(), &data[150_000..250_000]);
        }
        assert!(failovers > 0, "no round ever failed over");
    }

    #[tokio::test]
    async fn upload_fills_mindevcount_copies_and_skips_devices_marked_down() {
        use crate::config::{ColdConfig, HotConfig};
        let d = tempfile::tempdir().unwrap();
        let music = d.path().join("music");
        std::fs::create_dir_all(music.join("A")).unwrap();
        let src = music.join("A/t.flac");
        std::fs::write(&src, vec![5u8; 70_000]).unwrap();
        let folder = |name: &str, state| ColdConfig {
            name: name.into(),
            state,
            kind: ColdKind::Folder {
                path: d.path().join(name),
            },
        };
        let cfg = |b_state| TiersConfig {
            cold: vec![
                folder("a", DeviceState::Alive),
                folder("b", b_state),
                folder("c", DeviceState::Alive),
            ],
            hot: Some(HotConfig {
                path: d.path().join("hot"),
                budget: 1 << 20,
            }),
            mindevcount: 3,
            ..TiersConfig::default()
        };
        let data = d.path().join("data");
        let t = TrackRef {
            key: "A/t.flac".into(),
            folder: Some(0),
        };
        let tiers = Tiers::new(
            cfg(DeviceState::Alive),
            std::slice::from_ref(&music),
            &data,
            Box::new(DecayedLfu::new(1 << 20)),
        )
        .unwrap();
        assert_eq!(tiers.replicate(&t, &src).await.unwrap(), 3);
        let mut on: Vec<String> = tiers
            .index()
            .devices_of("A/t.flac")
            .into_iter()
            .map(|x| x.0)
            .collect();
        on.sort();
        assert_eq!(on, ["a", "b"]);
        assert_eq!(
            std::fs::read(d.path().join("b/A/t.flac")).unwrap().len(),
            70_000
        );
        drop(tiers);
        // b goes down: its copy no longer counts and c gets one.
        let tiers = Tiers::new(
            cfg(DeviceState::Down),
            std::slice::from_ref(&music),
            &data,
            Box::new(DecayedLfu::new(1 << 20)),
        )
        .unwrap();
        assert_eq!(tiers.replicate(&t, &src).await.unwrap(), 3);
        assert!(d.path().join("c/A/t.flac").exists());
        // Reads skip the down device and the music folder (named music1).
        let tiers = Arc::new(tiers);
        let s = tiers.open(&t, 0).await.unwrap();
        assert_ne!(s.device(), "b");
        let st = tiers.status();
        assert_eq!(
            st.devices
                .iter()
                .map(|x| x.name.as_str())
                .collect::<Vec<_>>(),
            ["hot", "music1", "a", "b", "c"]
        );
        assert_eq!(st.devices[3].state, "down");
    }

    /// A started `Tiers` with Spindle's policy and a hot folder of
    /// `budget` bytes, over `n` tracks `T/00.flac`… of 100,000 bytes
    /// (track i filled with byte i) in a music folder under `d`.
    fn spindle_hot_tier(d: &Path, n: u8, budget: u64) -> Arc<Tiers> {
        use crate::config::HotConfig;
        use crate::placement::FromPolicy;
        let music = d.join("music");
        std::fs::create_dir_all(music.join("T")).unwrap();
        for i in 0..n {
            std::fs::write(music.join(format!("T/{i:02}.flac")), vec![i; 100_000]).unwrap();
        }
        let cfg = TiersConfig {
            hot: Some(HotConfig {
                path: d.join("hot"),
                budget,
            }),
            ..TiersConfig::default()
        };
        let tiers = Arc::new(
            Tiers::new(
                cfg,
                std::slice::from_ref(&music),
                &d.join("data"),
                Box::new(FromPolicy(crate::policy::Spindle::new(budget))),
            )
            .unwrap(),
        );
        tiers.start_background();
        tiers
    }

    /// Track i of [`spindle_hot_tier`].
    fn t(i: usize) -> TrackRef {
        TrackRef {
            key: format!("T/{i:02}.flac"),
            folder: Some(0),
        }
    }

    #[tokio::test]
    async fn pins_and_the_policy_together_never_want_more_than_the_hot_budget() {
        let d = tempfile::tempdir().unwrap();
        let budget = 1_000_000;
        let tiers = spindle_hot_tier(d.path(), 20, budget);
        let hot = tiers.hot().unwrap().clone();
        let check = |when: &str| {
            let st = tiers.status();
            let h = st.hot.as_ref().unwrap();
            assert!(h.used <= budget, "{when}: {} of {budget} bytes", h.used);
            for i in 10..15 {
                assert!(
                    hot.contains(&t(i).key).is_some(),
                    "{when}: pinned track {i} is not hot"
                );
            }
            assert_eq!(h.promote_failures, 0, "{when}: promotions failed");
            assert_eq!((h.pinned, h.pinned_bytes), (5, 500_000), "{when}");
        };
        // The policy fills the hot folder first.
        for _ in 0..3 {
            for i in 0..10 {
                tiers.record_access(&t(i), 100_000);
            }
        }
        tiers.idle().await;
        assert!(hot.used() > budget / 2, "the policy filled {}", hot.used());
        // Five pins arrive: their bytes come out of the policy's budget,
        // so what it held beyond the rest is demoted first.
        tiers.set_pinned((10..15).map(t).collect());
        tiers.idle().await;
        check("after pinning");
        // Traffic over every track, pinned ones too: the pins stay, the
        // policy admits within what is left, nothing is refused.
        for round in 0..6 {
            for i in 0..20 {
                tiers.record_access(&t((i * 7 + round) % 20), 100_000);
            }
            tiers.idle().await;
            check(&format!("round {round}"));
        }
        // Unpinned, the bytes are the policy's again.
        tiers.set_pinned(Vec::new());
        tiers.idle().await;
        let st = tiers.status();
        assert_eq!(st.hot.as_ref().unwrap().pinned_bytes, 0);
        assert!(hot.used() <= budget);
    }

    #[tokio::test]
    async fn the_listening_history_fills_an_empty_hot_tier_before_any_request() {
        let d = tempfile::tempdir().unwrap();
        // Room for three tracks and a half.
        let tiers = spindle_hot_tier(d.path(), 10, 350_000);
        // Track i was played i times; 9 is pinned, so it is hot already
        // and its bytes are the pins'.
        tiers.set_pinned(vec![t(9)]);
        for i in 1..10 {
            tiers.record_listen(&t(i), i as f64);
        }
        let queued = tokio::task::spawn_blocking({
            let tiers = tiers.clone();
            move || tiers.prefill_hot()
        })
        .await
        .unwrap();
        assert_eq!(queued, 2, "the pin leaves room for two");
        tiers.idle().await;
        let hot = tiers.hot().unwrap().clone();
        let hot_now: Vec<usize> = (0..10)
            .filter(|&i| hot.contains(&t(i).key).is_some())
            .collect();
        assert_eq!(hot_now, [7, 8, 9]);
        let (shard, name) = crate::hot::object_name(&t(8).key);
        assert_eq!(
            std::fs::read(hot.root().join("objects").join(shard).join(name)).unwrap(),
            vec![8u8; 100_000]
        );
        // Full now: a second call promotes nothing and demotes nothing.
        let again = tokio::task::spawn_blocking({
            let tiers = tiers.clone();
            move || tiers.prefill_hot()
        })
        .await
        .unwrap();
        assert_eq!(again, 0);
        let st = tiers.status();
        assert_eq!(st.hot.as_ref().unwrap().promote_failures, 0);
    }

    #[tokio::test]
    async fn a_lost_device_s_copies_are_made_again_elsewhere_at_bounded_bandwidth() {
        use crate::config::ColdConfig;
        let d = tempfile::tempdir().unwrap();
        let music = d.path().join("music");
        std::fs::create_dir_all(music.join("A")).unwrap();
        let keys: Vec<String> = (0..3).map(|i| format!("A/{i}.flac")).collect();
        for (i, k) in keys.iter().enumerate() {
            let data: Vec<u8> = (0..70_000u32)
                .map(|x| (x * (i as u32 + 3) % 251) as u8)
                .collect();
            std::fs::write(music.join(k), data).unwrap();
        }
        let folder = |name: &str| ColdConfig {
            name: name.into(),
            state: DeviceState::Alive,
            kind: ColdKind::Folder {
                path: d.path().join(name),
            },
        };
        let cfg = TiersConfig {
            cold: vec![folder("a"), folder("b")],
            mindevcount: 2,
            rereplicate_after_secs: 0,
            rereplicate_bandwidth: 150_000,
            ..TiersConfig::default()
        };
        let mut tiers = Tiers::new(
            cfg,
            std::slice::from_ref(&music),
            &d.path().join("data"),
            Box::new(DecayedLfu::new(0)),
        )
        .unwrap();
        let track = |k: &str| TrackRef {
            key: k.to_owned(),
            folder: Some(0),
        };
        for k in &keys {
            // The music folder and a.
            assert_eq!(tiers.replicate(&track(k), &music.join(k)).await.unwrap(), 2);
        }
        tiers.set_repair_every(Some(Duration::from_millis(50)));
        let tiers = Arc::new(tiers);
        tiers.start_background();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let st = tiers.status().replication;
        assert_eq!((st.below_mindevcount, st.copies_made), (0, 0), "{st:?}");
        assert!(st.lost_devices.is_empty());
        // Device a disappears.
        std::fs::remove_dir_all(d.path().join("a")).unwrap();
        let t0 = Instant::now();
        let mut seen_below = false;
        loop {
            let st = tiers.status().replication;
            seen_below |= st.below_mindevcount > 0 && st.rereplicating;
            if st.copies_made == 3 && st.below_mindevcount == 0 && !st.rereplicating {
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(30), "{st:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let took = t0.elapsed();
        // 210 000 bytes at 150 000 bytes/s.
        assert!(took >= Duration::from_millis(1300), "took {took:?}");
        assert!(seen_below, "the status never showed the tracks below");
        for k in &keys {
            assert_eq!(
                std::fs::read(d.path().join("b").join(k)).unwrap(),
                std::fs::read(music.join(k)).unwrap()
            );
            let on: Vec<String> = tiers
                .index()
                .devices_of(k)
                .into_iter()
                .map(|x| x.0)
                .collect();
            assert!(on.contains(&"b".to_owned()), "{k}: {on:?}");
        }
        let st = tiers.status();
        assert_eq!(st.replication.lost_devices, ["a"]);
        assert!(st.devices.iter().any(|x| x.name == "a" && x.lost));
        assert_eq!(st.replication.failures, 0);
    }

    #[tokio::test]
    async fn a_track_with_no_working_copy_is_an_error_not_a_hang() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("a/x")).unwrap();
        std::fs::write(d.path().join("a/x/t.flac"), vec![1u8; 200_000]).unwrap();
        let tiers = Arc::new(
            Tiers::with_devices(
                vec![(
                    "a".into(),
                    throttled(&d.path().join("a"), Some(70_000), Duration::ZERO),
                )],
                &d.path().join("data"),
                Box::new(DecayedLfu::new(0)),
            )
            .unwrap(),
        );
        tiers.index.add("x/t.flac", "a", 200_000).unwrap();
        let t = TrackRef {
            key: "x/t.flac".into(),
            folder: None,
        };
        let mut s = tiers.open(&t, 0).await.unwrap();
        let e = read_all(&mut s).await.unwrap_err();
        assert!(
            e.to_string().contains("every copy failed at byte 70000"),
            "{e}"
        );
        let missing = TrackRef {
            key: "nope".into(),
            folder: None,
        };
        assert!(matches!(
            tiers.open(&missing, 0).await,
            Err(OpenError::NoCopy { .. })
        ));
        let st = tiers.status();
        assert_eq!(st.devices[0].name, "a");
        assert!(st.devices[0].errors >= 1);
    }
}
