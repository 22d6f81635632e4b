//! The block device behind a path, and its queue settings from sysfs.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::Serialize;

/// A block device's queue settings, as sysfs shows them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeviceInfo {
    /// Kernel name of the whole device, e.g. `nvme0n1`, `sda`, `vda`.
    pub name: String,
    /// The partition the path lives on, if any.
    pub partition: Option<String>,
    /// Devices under a device-mapper or md device.
    pub slaves: Vec<String>,
    pub rotational: Option<bool>,
    /// The active IO scheduler.
    pub scheduler: Option<String>,
    /// All schedulers the kernel offers for it.
    pub schedulers: Vec<String>,
    pub nr_requests: Option<u64>,
    pub read_ahead_kb: Option<u64>,
    /// `device/queue_depth` (SCSI/SATA: the NCQ depth).
    pub queue_depth: Option<u64>,
    /// Hardware queues and tags per queue (`mq/*/nr_tags`), which is where
    /// NVMe and virtio disks show their depth.
    pub hw_queues: usize,
    pub hw_tags: Option<u64>,
    pub logical_block_size: Option<u64>,
    pub model: Option<String>,
}

impl DeviceInfo {
    /// The device backing `path` (a file, directory or block device), or
    /// `None` when it has none (tmpfs, overlay of a network filesystem, …).
    pub fn for_path(path: &Path) -> Option<DeviceInfo> {
        Self::for_path_in(Path::new("/sys"), path)
    }

    /// As [`Self::for_path`], with sysfs at `sys` (for tests).
    pub fn for_path_in(sys: &Path, path: &Path) -> Option<DeviceInfo> {
        let meta = fs::metadata(path).ok()?;
        let dev = if meta.file_type().is_block_device() {
            meta.rdev()
        } else {
            meta.dev()
        };
        let (major, minor) = split_dev(dev);
        let link = sys.join(format!("dev/block/{major}:{minor}"));
        let dir = fs::canonicalize(&link).ok()?;
        Some(Self::from_sysfs_dir(&dir))
    }

    /// Reads the settings of the device whose sysfs directory is `dir`
    /// (a partition's directory leads to its disk).
    pub fn from_sysfs_dir(dir: &Path) -> DeviceInfo {
        let (disk, partition) = if dir.join("partition").exists() {
            let parent = dir
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| dir.to_path_buf());
            (parent, Some(file_name(dir)))
        } else {
            (dir.to_path_buf(), None)
        };
        let q = disk.join("queue");
        let (scheduler, schedulers) = match read(&q.join("scheduler")) {
            Some(s) => parse_scheduler(&s),
            None => (None, Vec::new()),
        };
        let mut hw_queues = 0;
        let mut hw_tags = None;
        if let Ok(rd) = fs::read_dir(disk.join("mq")) {
            for e in rd.flatten() {
                hw_queues += 1;
                if let Some(t) = read_num(&e.path().join("nr_tags")) {
                    hw_tags = Some(hw_tags.map_or(t, |h: u64| h.max(t)));
                }
            }
        }
        let slaves = fs::read_dir(disk.join("slaves"))
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        DeviceInfo {
            name: file_name(&disk),
            partition,
            slaves,
            rotational: read_num(&q.join("rotational")).map(|v| v != 0),
            scheduler,
            schedulers,
            nr_requests: read_num(&q.join("nr_requests")),
            read_ahead_kb: read_num(&q.join("read_ahead_kb")),
            queue_depth: read_num(&disk.join("device/queue_depth")),
            hw_queues,
            hw_tags,
            logical_block_size: read_num(&q.join("logical_block_size")),
            model: read(&disk.join("device/model")).filter(|m| !m.is_empty()),
        }
    }

    /// The device's sysfs queue directory, for advice text.
    pub fn queue_dir(&self) -> PathBuf {
        PathBuf::from(format!("/sys/block/{}/queue", self.name))
    }
}

/// Pressure stall totals (`/proc/pressure/{cpu,io}`, the `some` line's
/// `total=` in microseconds): how long at least one task waited for a CPU or
/// for IO. Read before and after a run, they say how busy the machine was.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PressureTotals {
    pub cpu_us: Option<u64>,
    pub io_us: Option<u64>,
}

impl PressureTotals {
    /// Reads the totals now (`None` where the kernel has no PSI).
    pub fn now() -> PressureTotals {
        let some_total = |p: &str| {
            let text = fs::read_to_string(p).ok()?;
            parse_psi_some_total(&text)
        };
        PressureTotals {
            cpu_us: some_total("/proc/pressure/cpu"),
            io_us: some_total("/proc/pressure/io"),
        }
    }

    /// Percent of `elapsed_us` that tasks stalled on CPU and on IO since
    /// `earlier`.
    pub fn since(&self, earlier: &PressureTotals, elapsed_us: u64) -> (Option<f64>, Option<f64>) {
        let pct = |a: Option<u64>, b: Option<u64>| {
            let (a, b) = (a?, b?);
            (elapsed_us > 0).then(|| a.saturating_sub(b) as f64 * 100.0 / elapsed_us as f64)
        };
        (
            pct(self.cpu_us, earlier.cpu_us),
            pct(self.io_us, earlier.io_us),
        )
    }
}

/// The `total=` of the `some` line of a PSI file.
fn parse_psi_some_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// Linux's `major()`/`minor()` of a `dev_t`.
fn split_dev(dev: u64) -> (u64, u64) {
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0xff);
    (major, minor)
}

/// `none [mq-deadline] kyber` → active `mq-deadline`, all three.
fn parse_scheduler(s: &str) -> (Option<String>, Vec<String>) {
    let mut active = None;
    let mut all = Vec::new();
    for w in s.split_whitespace() {
        if let Some(name) = w.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
            active = Some(name.to_string());
            all.push(name.to_string());
        } else {
            all.push(w.to_string());
        }
    }
    if active.is_none() && all.len() == 1 {
        active = all.first().cloned();
    }
    (active, all)
}

fn read(p: &Path) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

fn read_num(p: &Path) -> Option<u64> {
    read(p)?.parse().ok()
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_line_names_the_active_one() {
        let (a, all) = parse_scheduler("none [mq-deadline] kyber bfq");
        assert_eq!(a.as_deref(), Some("mq-deadline"));
        assert_eq!(all, ["none", "mq-deadline", "kyber", "bfq"]);
        assert_eq!(parse_scheduler("[none]").0.as_deref(), Some("none"));
    }

    #[test]
    fn psi_totals_parse_and_turn_into_percentages() {
        let text = "some avg10=78.32 avg60=88.14 avg300=66.70 total=1201283789\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(parse_psi_some_total(text), Some(1201283789));
        let a = PressureTotals {
            cpu_us: Some(1_000),
            io_us: None,
        };
        let b = PressureTotals {
            cpu_us: Some(501_000),
            io_us: Some(7),
        };
        assert_eq!(b.since(&a, 1_000_000), (Some(50.0), None));
    }

    #[test]
    fn dev_numbers_split_like_glibc() {
        // makedev(259, 3) and makedev(8, 17)
        assert_eq!(split_dev((259 << 8) | 3), (259, 3));
        assert_eq!(split_dev((8 << 8) | 17), (8, 17));
        let makedev = |ma: u64, mi: u64| {
            ((ma & 0xffff_f000) << 32)
                | ((ma & 0xfff) << 8)
                | ((mi & 0xffff_ff00) << 12)
                | (mi & 0xff)
        };
        assert_eq!(split_dev(makedev(0x1234, 0x45678)), (0x1234, 0x45678));
    }

    #[test]
    fn fake_sysfs_partition_leads_to_its_disk() {
        let root = std::env::temp_dir().join(format!("spindle-sysfs-{}", std::process::id()));
        let disk = root.join("block/sdz");
        let part = disk.join("sdz1");
        fs::create_dir_all(part.clone()).unwrap();
        fs::write(part.join("partition"), "1\n").unwrap();
        fs::create_dir_all(disk.join("queue")).unwrap();
        fs::create_dir_all(disk.join("device")).unwrap();
        fs::create_dir_all(disk.join("mq/0")).unwrap();
        for (f, v) in [
            ("queue/rotational", "0"),
            ("queue/scheduler", "[none] mq-deadline"),
            ("queue/nr_requests", "64"),
            ("queue/read_ahead_kb", "128"),
            ("device/queue_depth", "31"),
            ("mq/0/nr_tags", "32"),
        ] {
            fs::write(disk.join(f), format!("{v}\n")).unwrap();
        }
        let info = DeviceInfo::from_sysfs_dir(&part);
        fs::remove_dir_all(&root).unwrap();
        assert_eq!(info.name, "sdz");
        assert_eq!(info.partition.as_deref(), Some("sdz1"));
        assert_eq!(info.rotational, Some(false));
        assert_eq!(info.scheduler.as_deref(), Some("none"));
        assert_eq!(info.nr_requests, Some(64));
        assert_eq!(info.read_ahead_kb, Some(128));
        assert_eq!(info.queue_depth, Some(31));
        assert_eq!((info.hw_queues, info.hw_tags), (1, Some(32)));
    }
}
