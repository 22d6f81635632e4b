//! Copies on cold devices: uploads to `mindevcount` copies
//! ([`Tiers::replicate`]), the probes that find lost devices, and
//! re-replication ([`Tiers::rereplicate`]), which copies what a lost
//! device held from a live copy to other writable devices, paced to
//! `rereplicate_bandwidth`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;

use super::{lock, Tiers, TrackRef};
use crate::config::DeviceState;
use crate::device::{DeviceError, DeviceKind};
use crate::hot::Pacer;
use crate::replica::IndexError;

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

/// Why re-replication could not bring a track back to `mindevcount`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplicateError {
    /// Too few live writable devices took a copy (add or revive a device,
    /// or lower `mindevcount`).
    #[error(
        "{key}: {have} of {want} live copies: {}",
        or_none(errors, "no other live writable device to copy to")
    )]
    TooFewCopies {
        key: String,
        have: usize,
        want: usize,
        errors: Vec<String>,
    },
    /// No live copy could be read to copy from.
    #[error("{}", or_none(errors, "no live copy to copy from"))]
    NoSource { errors: Vec<String> },
    /// Reading the source copy failed.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The source copy ended before the length the replica index gives.
    #[error("{device}: {key}: ended at byte {got} of {want}")]
    Short {
        device: String,
        key: String,
        got: u64,
        want: u64,
    },
    /// The temporary copy under the data dir could not be written.
    #[error("{}: {source}", path.display())]
    Temp {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What [`Tiers::upload_all`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UploadReport {
    /// Tracks with `mindevcount` copies or more.
    pub ok: usize,
    /// Tracks left with fewer.
    pub failed: usize,
    /// Copies the `ok` tracks have in all.
    pub copies: usize,
    pub mindevcount: usize,
}

impl std::fmt::Display for UploadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "uploaded: {} tracks have {} copies or more ({} copies in all); {} fell short",
            self.ok, self.mindevcount, self.copies, self.failed
        )
    }
}

/// `errors` joined, or `none` when there are none.
fn or_none(errors: &[String], none: &str) -> String {
    if errors.is_empty() {
        none.to_owned()
    } else {
        errors.join("; ")
    }
}

/// Re-replication's state: the devices failing their probe (since when),
/// what the passes found and did, and how they are paced.
pub(super) struct Repair {
    /// How often devices are probed; `None`: no re-replication.
    pub(super) every: Option<Duration>,
    /// Paces re-replication (`rereplicate_bandwidth`).
    pacer: Pacer,
    state: Mutex<RepairState>,
    pub(super) below: AtomicU64,
    pub(super) running: AtomicBool,
    pub(super) copies: AtomicU64,
    pub(super) failures: AtomicU64,
}

#[derive(Default)]
struct RepairState {
    failing_since: HashMap<usize, Instant>,
    last_error: Option<String>,
}

impl Repair {
    pub(super) fn new(bandwidth: u64, every: Option<Duration>) -> Repair {
        Repair {
            every,
            pacer: Pacer::new(bandwidth),
            state: Mutex::default(),
            below: AtomicU64::new(0),
            running: AtomicBool::new(false),
            copies: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        }
    }

    pub(super) fn last_error(&self) -> Option<String> {
        lock(&self.state).last_error.clone()
    }
}

impl Tiers {
    /// How often cold devices are probed for re-replication (five seconds
    /// by default; `None` turns re-replication off, as for
    /// [`Tiers::with_devices`]). Call before [`Tiers::start_background`].
    pub fn set_repair_every(&mut self, d: Option<Duration>) {
        self.repair.every = d.map(|d| d.max(Duration::from_millis(10)));
    }

    /// Probes every cold device not marked down; a failed probe marks the
    /// device failed (reads skip it) and starts its clock towards lost.
    pub(super) async fn probe_devices(&self) {
        let stall = self.stall_timeout();
        for (i, d) in self.devices.iter().enumerate() {
            if d.state == DeviceState::Down || d.backend.kind() == DeviceKind::Hot {
                continue;
            }
            let ok = matches!(
                tokio::time::timeout(stall, d.backend.probe()).await,
                Ok(Ok(()))
            );
            if ok {
                lock(&self.repair.state).failing_since.remove(&i);
            } else {
                lock(&self.repair.state)
                    .failing_since
                    .entry(i)
                    .or_insert_with(Instant::now);
                d.stats.mark_failed(self.retry_after());
            }
        }
    }

    /// Whether device `i`'s copies count: not marked down, and not
    /// failing its probe for `rereplicate_after_secs` or longer.
    pub(super) fn is_live(&self, i: usize) -> bool {
        let grace = Duration::from_secs(self.cfg.rereplicate_after_secs);
        self.devices[i].state != DeviceState::Down
            && lock(&self.repair.state)
                .failing_since
                .get(&i)
                .is_none_or(|since| since.elapsed() < grace)
    }

    /// Whether each device is live ([`Tiers::is_live`]).
    pub(super) fn live_devices(&self) -> Vec<bool> {
        (0..self.devices.len()).map(|i| self.is_live(i)).collect()
    }

    /// One re-replication pass: every track of the replica index with
    /// fewer than `mindevcount` live copies (a copy in a live music folder
    /// counts) is copied from a live copy to live writable devices until
    /// it has them, paced to `rereplicate_bandwidth`, and each new copy is
    /// recorded in the index. Returns how many tracks stay below.
    pub async fn rereplicate(&self) -> usize {
        let want = self.cfg.mindevcount;
        let live = self.live_devices();
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
                    tracing::warn!("tiers: re-replicating {e}");
                    lock(&r.state).last_error = Some(e.to_string());
                }
            }
        }
        r.running.store(false, Ordering::Relaxed);
        left
    }

    /// Whether device `i` may take a new copy: alive, not a music folder,
    /// not the hot folder.
    fn takes_copies(&self, i: usize) -> bool {
        let d = &self.devices[i];
        d.state == DeviceState::Alive
            && d.music_folder.is_none()
            && d.backend.kind() != DeviceKind::Hot
    }

    /// Copies `key` (`len` bytes, live on `have`) to more live writable
    /// devices until it has `mindevcount` copies.
    async fn copy_to_more(
        &self,
        key: &str,
        len: u64,
        mut have: Vec<usize>,
        live: &[bool],
    ) -> Result<(), ReplicateError> {
        let want = self.cfg.mindevcount;
        let sources = have.clone();
        let mut errors = Vec::new();
        let mut fetched: Option<PathBuf> = None;
        for (i, d) in self.devices.iter().enumerate() {
            if have.len() >= want {
                break;
            }
            if have.contains(&i) || !live[i] || !self.takes_copies(i) || d.stats.is_failed() {
                continue;
            }
            // A copy already there (an unrecorded one) is recorded.
            if !matches!(d.backend.head(key).await, Ok(Some(l)) if l == len) {
                if fetched.is_none() {
                    match self.fetch_copy(key, len, &sources).await {
                        Ok(p) => fetched = Some(p),
                        Err(e) => {
                            errors.push(e.to_string());
                            break;
                        }
                    }
                }
                let Some(src) = fetched.as_deref() else {
                    break;
                };
                if let Err(e) = d.backend.put(key, src).await {
                    errors.push(e.to_string());
                    d.stats.mark_failed(self.retry_after());
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
        Err(ReplicateError::TooFewCopies {
            key: key.to_owned(),
            have: have.len(),
            want,
            errors,
        })
    }

    /// Reads `key` from one of `sources` (chosen by latency, the next on
    /// failure) into `DATA/tiers/rereplicate.tmp`, paced.
    async fn fetch_copy(
        &self,
        key: &str,
        len: u64,
        sources: &[usize],
    ) -> Result<PathBuf, ReplicateError> {
        let tmp = self.status_path.with_file_name("rereplicate.tmp");
        let mut cands = sources.to_vec();
        let mut errors = Vec::new();
        while let Some(i) = self.choose(&cands) {
            cands.retain(|&c| c != i);
            match self.download(i, key, len, &tmp).await {
                Ok(()) => return Ok(tmp),
                Err(e) => errors.push(e.to_string()),
            }
        }
        Err(ReplicateError::NoSource { errors })
    }

    async fn download(
        &self,
        i: usize,
        key: &str,
        len: u64,
        tmp: &Path,
    ) -> Result<(), ReplicateError> {
        let d = &self.devices[i];
        let stall = self.stall_timeout();
        let stalled = || DeviceError::Stalled {
            device: d.name.clone(),
            key: key.to_owned(),
        };
        let mut o = tokio::time::timeout(stall, d.backend.open(key, 0))
            .await
            .map_err(|_| stalled())??;
        if o.len != len {
            return Err(DeviceError::WrongLength {
                device: d.name.clone(),
                key: key.to_owned(),
                len: o.len,
                want: len,
            }
            .into());
        }
        let temp = |source| ReplicateError::Temp {
            path: tmp.to_owned(),
            source,
        };
        let mut f = tokio::fs::File::create(tmp).await.map_err(temp)?;
        let mut got = 0u64;
        loop {
            let chunk = tokio::time::timeout(stall, o.reader.next_chunk())
                .await
                .map_err(|_| stalled())?
                .map_err(|source| DeviceError::Io {
                    device: d.name.clone(),
                    key: key.to_owned(),
                    source,
                })?;
            let Some(c) = chunk else { break };
            self.repair.pacer.take(c.len() as u64).await;
            f.write_all(&c).await.map_err(temp)?;
            got += c.len() as u64;
        }
        f.flush().await.map_err(temp)?;
        if got != len {
            return Err(ReplicateError::Short {
                device: d.name.clone(),
                key: key.to_owned(),
                got,
                want: len,
            });
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
        if let Some(i) = t.folder.and_then(|f| self.music_device(f)) {
            have.push(i);
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
            if have.contains(&i) || !self.takes_copies(i) {
                continue;
            }
            // A copy already there (an earlier, unrecorded upload) counts.
            match d.backend.head(&t.key).await {
                Ok(Some(l)) if l == len => {}
                _ => {
                    if let Err(e) = d.backend.put(&t.key, local).await {
                        errors.push(e.to_string());
                        d.stats.mark_failed(self.retry_after());
                        continue;
                    }
                }
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

    /// [`Tiers::replicate`] for each track in turn (`(track, its file)`);
    /// `failed` hears of every track left short.
    pub async fn upload_all(
        &self,
        tracks: &[(TrackRef, PathBuf)],
        failed: &mut (dyn FnMut(&UploadError) + Send),
    ) -> UploadReport {
        let mut r = UploadReport {
            mindevcount: self.cfg.mindevcount,
            ..UploadReport::default()
        };
        for (t, path) in tracks {
            match self.replicate(t, path).await {
                Ok(n) => {
                    r.ok += 1;
                    r.copies += n;
                }
                Err(e) => {
                    r.failed += 1;
                    failed(&e);
                }
            }
        }
        r
    }
}
