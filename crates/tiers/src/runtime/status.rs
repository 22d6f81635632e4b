//! [`Status`]: what `spindle tiers status` shows, gathered from every
//! job's counters and written to `DATA/tiers/status.json` by the
//! sampling task (`tasks.rs`).

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use super::{lock, Tiers};
use crate::config::DeviceState;
use crate::device::DeviceKind;

/// One device in [`Status`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceStatus {
    pub name: String,
    /// `music` for a music folder, else the [`DeviceKind`]: `folder`,
    /// `s3`, `hot`.
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
    /// The current state.
    pub fn status(&self) -> Status {
        let per = self.index.per_device();
        let live = self.live_devices();
        let lost = |i: usize| !live[i] && self.devices[i].state != DeviceState::Down;
        let devices = self
            .devices
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let kind = d.backend.kind();
                let (copies, bytes_stored) = match (&self.hot, kind) {
                    (Some(h), DeviceKind::Hot) => (h.len() as u64, h.used()),
                    _ => per.get(&d.name).copied().unwrap_or_default(),
                };
                DeviceStatus {
                    name: d.name.clone(),
                    kind: if d.music_folder.is_some() {
                        "music".into()
                    } else {
                        kind.to_string()
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
                    lost: lost(i),
                }
            })
            .collect();
        let (r, p) = (&self.reads, &self.promoter);
        let (pinned, pinned_bytes) = lock(&self.feed).pinned_totals();
        let hot = self.hot.as_ref().map(|h| {
            let opens = r.opens.load(Ordering::Relaxed);
            let hits = r.hot_hits.load(Ordering::Relaxed);
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
                bytes_sent: r.bytes_sent.load(Ordering::Relaxed),
                bytes_from_hot: r.bytes_from_hot.load(Ordering::Relaxed),
                promotions: p.promotions.load(Ordering::Relaxed),
                promote_failures: p.failures.load(Ordering::Relaxed),
                demotions: p.demotions.load(Ordering::Relaxed),
                recovered_kept: self.recovery.kept as u64,
                recovered_dropped: (self.recovery.dropped + self.recovery.temp_removed) as u64,
            }
        });
        let rep = &self.repair;
        Status {
            written: unix_now(),
            uptime_secs: self.started.elapsed().as_secs(),
            choice: format!("{:?}", self.reads.choice()).to_lowercase(),
            mindevcount: self.cfg.mindevcount,
            failovers: r.failovers.load(Ordering::Relaxed),
            devices,
            hot,
            replication: ReplicationStatus {
                below_mindevcount: rep.below.load(Ordering::Relaxed),
                rereplicating: rep.running.load(Ordering::Relaxed),
                copies_made: rep.copies.load(Ordering::Relaxed),
                failures: rep.failures.load(Ordering::Relaxed),
                last_error: rep.last_error(),
                lost_devices: (0..self.devices.len())
                    .filter(|&i| lost(i))
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
