//! A replica (docs/cluster.md, "Replicas"): before the server opens its
//! files, an empty data dir is filled from the newest snapshot
//! ([`bootstrap`]); then [`Replica::run`] polls the bucket, applies each
//! complete manifest in order — log segments appended to the local logs
//! and fed to the same in-memory indexes a primary's commits update, the
//! documents replaced whole — and records how far it got in
//! `DATA_DIR/cluster/state.json`. A newer generation is followed once
//! its cut is known; a generation naming this node promotes it.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use spindle_listens::Listens;
use spindle_store::Base;

use super::bucket::{Bucket, BucketError};
use super::objects::{self, Generation, Kind, Lease, Manifest, ObjectRef, SnapshotManifest};
use super::{Cluster, Role};
use crate::AppState;

/// How often a node writes its `nodes/<node>.json`.
pub const STATUS_EVERY: Duration = Duration::from_secs(2);

/// Why a replica cannot go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplicaError {
    #[error("the bucket: {0}")]
    Bucket(#[from] BucketError),
    #[error("the bucket holds no snapshot yet (is the primary running?)")]
    NoSnapshot,
    #[error("{0}")]
    Gap(String),
    #[error("applying {key}: {message}")]
    Apply { key: String, message: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the applying task failed: {0}")]
    Task(String),
}

/// What a node records of the cluster in `DATA_DIR/cluster/state.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LocalState {
    /// "primary" or "replica": what this node last was.
    pub role: String,
    pub generation: u32,
    /// The last manifest applied (replica) or written (primary).
    pub seq: u64,
    pub round: u64,
    /// Replica: the primary's library log generation and offset applied
    /// (the library is re-committed, not copied byte for byte, so its
    /// offsets are the primary's, kept here).
    pub library_gen: u64,
    pub library: u64,
}

/// `DATA_DIR/cluster/state.json`.
pub fn state_path(data_dir: &Path) -> PathBuf {
    data_dir.join("cluster").join("state.json")
}

impl LocalState {
    pub fn load(data_dir: &Path) -> Option<LocalState> {
        let bytes = std::fs::read(state_path(data_dir)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    pub fn save(&self, data_dir: &Path) -> Result<(), ReplicaError> {
        let path = state_path(data_dir);
        let bytes = serde_json::to_vec_pretty(self).unwrap_or_default();
        write_atomic(&path, &bytes)
    }
}

/// Writes `bytes` to `path` as a new file (temporary, fsync, rename), mode
/// 0600, creating its folder (0700).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ReplicaError> {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    let io = |source| ReplicaError::Io {
        path: path.to_owned(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io)?;
    let tmp = path.with_extension("cluster-tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io)?;
    f.write_all(bytes).and_then(|()| f.sync_all()).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// The newest complete snapshot of generation `g` or older (`None`: any).
pub async fn newest_snapshot(
    bucket: &Bucket,
    upto: Option<u32>,
) -> Result<Option<SnapshotManifest>, BucketError> {
    let keys = bucket.list(objects::SNAPSHOTS_PREFIX, None).await?;
    let best = keys
        .iter()
        .filter_map(|k| objects::parse_snapshot_manifest_key(k))
        .filter(|(g, _)| upto.is_none_or(|u| *g <= u))
        .max();
    match best {
        Some((g, s)) => {
            bucket
                .get_json(&format!("{}manifest.json", objects::snapshot_prefix(g, s)))
                .await
        }
        None => Ok(None),
    }
}

async fn fetch_all(bucket: &Bucket, refs: &[ObjectRef]) -> Result<Vec<Vec<u8>>, BucketError> {
    let mut out = Vec::with_capacity(refs.len());
    for r in refs {
        out.push(bucket.get_checked(r).await?);
    }
    Ok(out)
}

/// Fills an empty data dir from the newest snapshot: the library's files,
/// the listens log, the documents and `cluster/state.json`. Call before
/// the server opens the data dir.
pub async fn bootstrap(bucket: &Bucket, data_dir: &Path) -> Result<LocalState, ReplicaError> {
    let snap = newest_snapshot(bucket, None)
        .await?
        .ok_or(ReplicaError::NoSnapshot)?;
    let bytes = fetch_all(bucket, &snap.objects).await?;
    let dir = data_dir.to_owned();
    let s = snap.clone();
    spindle_app::offload::run(move || install_snapshot_files(&dir, &s, bytes))
        .await
        .map_err(|e| ReplicaError::Task(e.to_string()))??;
    let state = LocalState {
        role: "replica".into(),
        generation: snap.generation,
        seq: snap.seq,
        round: 0,
        library_gen: snap.positions.library_gen,
        library: snap.positions.library,
    };
    state.save(data_dir)?;
    tracing::info!(
        "cluster: started from the snapshot of generation {} at manifest {} (the listens log to byte {})",
        snap.generation,
        snap.seq,
        snap.positions.listens
    );
    Ok(state)
}

fn install_snapshot_files(
    dir: &Path,
    snap: &SnapshotManifest,
    bytes: Vec<Vec<u8>>,
) -> Result<(), ReplicaError> {
    let mut data = None;
    let mut log = None;
    for (r, b) in snap.objects.iter().zip(bytes) {
        match r.kind {
            Kind::LibraryData => data = Some(b),
            Kind::LibraryLog => log = Some(b),
            Kind::Listens => {
                let (l, _) =
                    Listens::open(&dir.join("listens")).map_err(|e| ReplicaError::Apply {
                        key: r.key.clone(),
                        message: e.to_string(),
                    })?;
                l.apply_shipped(r.from, &b, snap.positions.listens_version)
                    .map_err(|e| ReplicaError::Apply {
                        key: r.key.clone(),
                        message: e.to_string(),
                    })?;
            }
            Kind::Accounts => write_atomic(&super::ship::accounts_path(dir), &b)?,
            Kind::Userdata => write_atomic(&super::ship::userdata_path(dir), &b)?,
            Kind::Library => {}
        }
    }
    if let (Some(data), Some(log)) = (data, log) {
        let base = Base {
            generation: snap.positions.library_gen,
            data,
            log,
        };
        spindle_store::write_base(dir, &base).map_err(|source| ReplicaError::Io {
            path: dir.to_owned(),
            source,
        })?;
    }
    Ok(())
}

/// A running replica.
pub struct Replica {
    pub(crate) state: AppState,
    pub(crate) bucket: Arc<Bucket>,
    pub(crate) local: LocalState,
    last_status: Option<Instant>,
    error: Option<String>,
}

/// What one poll found.
pub(crate) enum Polled {
    /// Nothing more to do now.
    Idle,
    /// The newest generation names this node: promote.
    Promote(Generation),
}

impl Replica {
    pub fn new(state: AppState, bucket: Arc<Bucket>, local: LocalState) -> Replica {
        state.cluster.set_seq(local.seq);
        Replica {
            state,
            bucket,
            local,
            last_status: None,
            error: None,
        }
    }

    fn cluster(&self) -> &Cluster {
        &self.state.cluster
    }

    fn data_dir(&self) -> PathBuf {
        self.state.db.dir().to_owned()
    }

    /// Applies one manifest's objects, then records it.
    async fn apply(&mut self, m: &Manifest) -> Result<(), ReplicaError> {
        let mut i = 0;
        while i < m.objects.len() {
            let r = &m.objects[i];
            match r.kind {
                Kind::Listens => self.apply_listens(r, m.after.listens_version).await?,
                Kind::Library => self.apply_library(r).await?,
                Kind::LibraryData => {
                    let log = m
                        .objects
                        .get(i + 1)
                        .filter(|l| l.kind == Kind::LibraryLog)
                        .ok_or_else(|| ReplicaError::Apply {
                            key: r.key.clone(),
                            message: "a library data file without its log".into(),
                        })?;
                    self.apply_base(r, log).await?;
                    i += 1;
                }
                Kind::LibraryLog => {}
                Kind::Accounts | Kind::Userdata => self.apply_document(r).await?,
            }
            i += 1;
        }
        self.local.seq = m.seq;
        self.local.round = m.round;
        self.local.save(&self.data_dir())?;
        self.cluster().set_seq(m.seq);
        self.cluster().set_applied_round(m.round);
        let lag = (objects::now_ms() - m.read_ms).max(0);
        self.cluster().set_lag_ms(Some(lag as u64));
        Ok(())
    }

    /// Replaces the accounts or user data document with the shipped one
    /// (the running server reads it as it reads a change made by the CLI).
    async fn apply_document(&self, r: &ObjectRef) -> Result<(), ReplicaError> {
        let bytes = self.bucket.get_checked(r).await?;
        let dir = self.data_dir();
        let path = if r.kind == Kind::Accounts {
            super::ship::accounts_path(&dir)
        } else {
            super::ship::userdata_path(&dir)
        };
        write_atomic(&path, &bytes)
    }

    async fn apply_listens(&mut self, r: &ObjectRef, version: u32) -> Result<(), ReplicaError> {
        let pos = self.state.listens.committed_end();
        if r.to <= pos {
            return Ok(());
        }
        if r.from > pos {
            return Err(ReplicaError::Gap(format!(
                "{} starts at byte {} of the listens log; this node has {pos}",
                r.key, r.from
            )));
        }
        let bytes = self.bucket.get_checked(r).await?;
        let skip = usize::try_from(pos - r.from).unwrap_or(usize::MAX);
        let st = self.state.clone();
        let key = r.key.clone();
        let applied = spindle_app::offload::run(move || {
            let a = st
                .listens
                .apply_shipped(pos, bytes.get(skip..).unwrap_or_default(), version);
            if let Ok(a) = &a {
                st.count_shipped_plays(a);
            }
            a
        })
        .await
        .map_err(|e| ReplicaError::Task(e.to_string()))?
        .map_err(|e| ReplicaError::Apply {
            key,
            message: e.to_string(),
        })?;
        // The whole cluster's plays raise popularity on every node.
        if let Some(feed) = &self.state.feed {
            let now = self.state.now();
            for c in &applied.corrected {
                feed.send_corrected(c, now);
            }
            feed.send(applied.listens);
        }
        Ok(())
    }

    async fn apply_library(&mut self, r: &ObjectRef) -> Result<(), ReplicaError> {
        // Within one of the primary's log generations the local log is
        // the same bytes (the same records, in the same order), so its
        // end is the position: a crash between applying and recording
        // never applies a transaction twice.
        let pos = if r.log_gen == self.local.library_gen {
            self.state.db.log_position().end
        } else {
            self.local.library
        };
        if r.log_gen < self.local.library_gen
            || (r.log_gen == self.local.library_gen && r.to <= pos)
        {
            return Ok(());
        }
        if r.log_gen > self.local.library_gen || r.from > pos {
            return Err(ReplicaError::Gap(format!(
                "{} continues the primary's library log {} at byte {}; this node has log {} to byte {pos}",
                r.key, r.log_gen, r.from, self.local.library_gen
            )));
        }
        let bytes = self.bucket.get_checked(r).await?;
        let skip = usize::try_from(pos - r.from).unwrap_or(usize::MAX);
        let st = self.state.clone();
        let key = r.key.clone();
        spindle_app::offload::run(move || {
            st.db
                .apply_shipped_at(pos, bytes.get(skip..).unwrap_or_default())
        })
        .await
        .map_err(|e| ReplicaError::Task(e.to_string()))?
        .map_err(|e| ReplicaError::Apply {
            key,
            message: e.to_string(),
        })?;
        self.local.library = r.to;
        self.state.music.library_changed();
        Ok(())
    }

    async fn apply_base(&mut self, data: &ObjectRef, log: &ObjectRef) -> Result<(), ReplicaError> {
        if data.log_gen == self.local.library_gen && log.to <= self.local.library {
            return Ok(());
        }
        let d = self.bucket.get_checked(data).await?;
        let l = self.bucket.get_checked(log).await?;
        let base = Base {
            generation: data.log_gen,
            data: d,
            log: l,
        };
        let st = self.state.clone();
        let key = data.key.clone();
        spindle_app::offload::run(move || st.db.install_base(&base))
            .await
            .map_err(|e| ReplicaError::Task(e.to_string()))?
            .map_err(|e| ReplicaError::Apply {
                key,
                message: e.to_string(),
            })?;
        self.local.library_gen = data.log_gen;
        self.local.library = log.to;
        self.state.music.library_changed();
        Ok(())
    }

    /// Applies the complete manifests of the current generation after
    /// the last one applied, up to `upto` (a cut) if given.
    pub(crate) async fn catch_up(&mut self, upto: Option<u64>) -> Result<usize, ReplicaError> {
        let g = self.local.generation;
        let after = objects::manifest_key(g, self.local.seq);
        let keys = self
            .bucket
            .list(&objects::manifests_prefix(g), Some(&after))
            .await?;
        let mut n = 0;
        for key in keys {
            let Some((_, seq)) = objects::parse_manifest_key(&key) else {
                continue;
            };
            if upto.is_some_and(|u| seq > u) {
                break;
            }
            if seq != self.local.seq + 1 {
                return Err(ReplicaError::Gap(format!(
                    "manifest {seq} of generation {g} follows {} (older manifests were pruned: start this node again with an empty data dir)",
                    self.local.seq
                )));
            }
            let Some(m) = self.bucket.get_json::<Manifest>(&key).await? else {
                break;
            };
            self.apply(&m).await?;
            n += 1;
        }
        Ok(n)
    }

    /// Moves to generation `next` (whose cut ends the current one): its
    /// first snapshot gives the new primary's library; the listens log
    /// goes on as it is (it is the same bytes on every node).
    async fn follow(&mut self, next: &Generation) -> Result<(), ReplicaError> {
        let snap_key = format!(
            "{}manifest.json",
            objects::snapshot_prefix(next.generation, 0)
        );
        let Some(snap) = self.bucket.get_json::<SnapshotManifest>(&snap_key).await? else {
            return Ok(()); // not written yet: the next poll looks again
        };
        for r in &snap.objects {
            if r.kind == Kind::Listens {
                self.apply_listens(r, snap.positions.listens_version)
                    .await?;
            }
        }
        let data = snap.objects.iter().find(|r| r.kind == Kind::LibraryData);
        let log = snap.objects.iter().find(|r| r.kind == Kind::LibraryLog);
        if let (Some(d), Some(l)) = (data, log) {
            // The new primary's log offsets are not the old one's.
            self.local.library_gen = 0;
            self.local.library = 0;
            self.apply_base(d, l).await?;
        }
        for r in &snap.objects {
            if matches!(r.kind, Kind::Accounts | Kind::Userdata) {
                self.apply_document(r).await?;
            }
        }
        self.local.generation = next.generation;
        self.local.seq = snap.seq;
        self.local.save(&self.data_dir())?;
        self.cluster()
            .set_role(Role::Replica, next.generation, Some(next.url.clone()));
        self.cluster().set_seq(snap.seq);
        tracing::info!(
            "cluster: following generation {} (primary {})",
            next.generation,
            next.primary
        );
        Ok(())
    }

    /// One poll of the bucket.
    pub(crate) async fn poll(&mut self) -> Result<Polled, ReplicaError> {
        if let Some(newest) = self.bucket.newest_generation().await? {
            if newest.generation > self.local.generation {
                if newest.primary == self.cluster().node() {
                    return Ok(Polled::Promote(newest));
                }
                match newest.cut {
                    // The promoting node has not said where the old
                    // generation ends: apply nothing more of it.
                    None => return Ok(Polled::Idle),
                    Some(cut) if cut.generation == self.local.generation => {
                        self.catch_up(Some(cut.seq)).await?;
                        if self.local.seq < cut.seq {
                            return Err(ReplicaError::Gap(format!(
                                "generation {} ends at manifest {}, but this node found only up to {}",
                                cut.generation, cut.seq, self.local.seq
                            )));
                        }
                        self.follow(&newest).await?;
                    }
                    Some(cut) => {
                        return Err(ReplicaError::Gap(format!(
                            "generation {} follows generation {}, not this node's {}: start this node again with an empty data dir",
                            newest.generation, cut.generation, self.local.generation
                        )));
                    }
                }
            } else if self.cluster().primary_url().as_deref() != Some(newest.url.as_str()) {
                self.cluster()
                    .set_role(Role::Replica, newest.generation, Some(newest.url.clone()));
            }
        }
        let lease: Option<Lease> = self.bucket.get_json(objects::LEASE_KEY).await?;
        self.catch_up(None).await?;
        if let Some(l) = lease.filter(|l| l.generation == self.local.generation) {
            let now = objects::now_ms();
            self.cluster()
                .heartbeat_age_ms
                .store((now - l.time_ms).max(0) as u64, Ordering::SeqCst);
            if l.seq <= self.local.seq {
                // Everything the primary had shipped by then is here.
                self.cluster().set_applied_round(l.round);
                self.cluster()
                    .set_lag_ms(Some((now - l.read_ms).max(0) as u64));
            }
        }
        Ok(Polled::Idle)
    }

    /// Writes `nodes/<node>.json` every [`STATUS_EVERY`].
    pub(crate) async fn report(&mut self, role: Role) {
        if self.last_status.is_some_and(|t| t.elapsed() < STATUS_EVERY) {
            return;
        }
        self.last_status = Some(Instant::now());
        super::status::write_node(&self.bucket, self.cluster(), role, self.error.clone()).await;
    }

    /// Polls until `stop`; returns the generation that promotes this
    /// node, if one does.
    pub async fn run(
        &mut self,
        stop: &mut tokio::sync::watch::Receiver<bool>,
    ) -> Option<Generation> {
        let poll = self
            .cluster()
            .config()
            .map_or(super::config::POLL_INTERVAL, |c| c.poll_interval);
        loop {
            match self.poll().await {
                Ok(Polled::Promote(g)) => return Some(g),
                Ok(Polled::Idle) => self.error = None,
                Err(e) => {
                    self.cluster().apply_errors.fetch_add(1, Ordering::Relaxed);
                    let msg = e.to_string();
                    if self.error.as_deref() != Some(msg.as_str()) {
                        tracing::error!("cluster: replica stopped applying: {msg}");
                    }
                    self.error = Some(msg);
                }
            }
            self.report(Role::Replica).await;
            tokio::select! {
                () = tokio::time::sleep(poll) => {}
                _ = stop.changed() => return None,
            }
        }
    }
}
