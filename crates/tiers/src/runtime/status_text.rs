//! [`Status`] as `spindle tiers status` prints it, and the status file
//! read back ([`read_status`]).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::status::{status_path, ReplicationStatus, Status};

/// Why the status file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StatusFileError {
    #[error("reading {} (it is written by `spindle serve` with a [tiers] section in its config): {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a tiers status: {source}", path.display())]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// The status file of `data_dir`, parsed ([`read_status_text`] gives
/// the text as written).
pub fn read_status(data_dir: &Path) -> Result<Status, StatusFileError> {
    let text = read_status_text(data_dir)?;
    serde_json::from_str(&text).map_err(|source| StatusFileError::Parse {
        path: status_path(data_dir),
        source,
    })
}

/// The status file of `data_dir`, as the server wrote it.
pub fn read_status_text(data_dir: &Path) -> Result<String, StatusFileError> {
    let path = status_path(data_dir);
    std::fs::read_to_string(&path).map_err(|source| StatusFileError::Read { path, source })
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.2}"))
}

/// `n` bytes in binary units with one decimal (`512 B`, `1.5 MiB`).
pub fn human_bytes(n: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = n as f64;
    let mut i = 0;
    while x >= 1024.0 && i < U.len() - 1 {
        x /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{n} B")
    } else {
        format!("{x:.1} {}", U[i])
    }
}

impl Status {
    /// Seconds since the server wrote it.
    pub fn age_secs(&self) -> u64 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        now.saturating_sub(self.written)
    }

    /// The status table, written `age_secs` ago (more than 10 s: the
    /// server is not running or is stuck).
    pub fn render(&self, age_secs: u64) -> String {
        let s = self;
        let bytes = human_bytes;
        let mut out = String::new();
        let fresh = if age_secs <= 10 {
            format!("written {age_secs}s ago by the running server")
        } else {
            format!("written {age_secs}s ago: the server is not running or is stuck")
        };
        let _ = writeln!(
            out,
            "tiers: {fresh}; up {}s; reads choose by {}; mindevcount {}; {} mid-stream failovers\n",
            s.uptime_secs, s.choice, s.mindevcount, s.failovers
        );
        let _ = writeln!(
            out,
            "{:<12} {:<6} {:<9} {:>6} {:>10} {:>9} {:>6} {:>8} {:>8} {:>10} {:>7} {:>7} {:>10}",
            "device",
            "kind",
            "state",
            "health",
            "ttfb ms",
            "await ms",
            "util",
            "in-fl",
            "reads",
            "read",
            "errors",
            "copies",
            "stored"
        );
        for d in &s.devices {
            let health = if d.lost {
                "LOST"
            } else if d.failed {
                "FAILED"
            } else {
                "ok"
            };
            let _ = writeln!(
                out,
                "{:<12} {:<6} {:<9} {:>6} {:>10} {:>9} {:>6} {:>8} {:>8} {:>10} {:>7} {:>7} {:>10}",
                d.name,
                d.kind,
                d.state,
                health,
                ms(d.ewma_ttfb_ms),
                ms(d.await_ms),
                d.util
                    .map_or_else(|| "-".into(), |u| format!("{:.0}%", u * 100.0)),
                d.in_flight,
                d.reads,
                bytes(d.bytes_read),
                d.errors,
                d.copies,
                bytes(d.bytes_stored),
            );
        }
        if let Some(h) = &s.hot {
            let share = if h.bytes_sent == 0 {
                0.0
            } else {
                h.bytes_from_hot as f64 / h.bytes_sent as f64
            };
            let _ = writeln!(
                out,
                "\nhot tier {}: {} of {} used ({:.0}%), {} copies, {} pinned ({})",
                h.path,
                bytes(h.used),
                bytes(h.budget),
                100.0 * h.used as f64 / h.budget.max(1) as f64,
                h.files,
                h.pinned,
                bytes(h.pinned_bytes)
            );
            let _ = writeln!(
                out,
                "hit ratio {:.1}% ({} of {} stream opens found a hot copy); {:.1}% of streamed bytes came from it",
                100.0 * h.hit_ratio,
                h.hits,
                h.opens,
                100.0 * share
            );
            let _ = writeln!(
                out,
                "promotions {} (failed {}), demotions {}; at start kept {}, removed {} unfinished or damaged",
                h.promotions, h.promote_failures, h.demotions, h.recovered_kept, h.recovered_dropped
            );
        }
        out.push_str(&s.replication.render(s.mindevcount));
        out
    }
}

impl ReplicationStatus {
    /// The re-replication line(s) of the status, `want` being `mindevcount`.
    pub fn render(&self, want: usize) -> String {
        let r = self;
        let mut out = String::from("\nreplication: ");
        if r.below_mindevcount == 0 {
            let _ = write!(out, "every indexed track has {want} live copies or more");
        } else {
            let doing = if r.rereplicating {
                "re-replicating"
            } else {
                "waiting to retry"
            };
            let _ = write!(
                out,
                "{} tracks below mindevcount, {doing}",
                r.below_mindevcount
            );
        }
        let _ = write!(
            out,
            "; {} copies made since start, {} tracks failed",
            r.copies_made, r.failures
        );
        if !r.lost_devices.is_empty() {
            let _ = write!(out, "; lost: {}", r.lost_devices.join(", "));
        }
        out.push('\n');
        if let Some(e) = r.last_error.as_ref().filter(|_| r.below_mindevcount > 0) {
            let _ = writeln!(out, "last error: {e}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{DeviceStatus, HotStatus};

    fn status() -> Status {
        Status {
            written: 0,
            uptime_secs: 42,
            choice: "latency".into(),
            mindevcount: 2,
            failovers: 1,
            devices: vec![DeviceStatus {
                name: "music0".into(),
                kind: "music".into(),
                state: "alive".into(),
                failed: false,
                ewma_ttfb_ms: Some(1.234),
                await_ms: None,
                util: Some(0.5),
                block_device: None,
                in_flight: 0,
                reads: 3,
                bytes_read: 3 * 1024 * 1024,
                errors: 0,
                copies: 10,
                bytes_stored: 100,
                lost: true,
            }],
            hot: Some(HotStatus {
                path: "/hot".into(),
                budget: 2048,
                used: 1024,
                files: 1,
                pinned: 0,
                pinned_bytes: 0,
                opens: 4,
                hits: 1,
                hit_ratio: 0.25,
                bytes_sent: 0,
                bytes_from_hot: 0,
                promotions: 1,
                promote_failures: 0,
                demotions: 0,
                recovered_kept: 0,
                recovered_dropped: 0,
            }),
            replication: ReplicationStatus {
                below_mindevcount: 3,
                rereplicating: false,
                copies_made: 5,
                failures: 1,
                last_error: Some("disk full".into()),
                lost_devices: vec!["music0".into()],
            },
        }
    }

    #[test]
    fn the_table_says_how_fresh_it_is_and_shows_every_part() {
        let text = status().render(3);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "tiers: written 3s ago by the running server; up 42s; reads choose by latency; \
             mindevcount 2; 1 mid-stream failovers"
        );
        assert_eq!(lines[1], "");
        assert!(lines[2].starts_with("device       kind   state     health"));
        assert_eq!(
            lines[3],
            "music0       music  alive       LOST       1.23         -    50%        0        3    3.0 MiB       0      10      100 B"
        );
        assert_eq!(
            lines[5],
            "hot tier /hot: 1.0 KiB of 2.0 KiB used (50%), 1 copies, 0 pinned (0 B)"
        );
        assert!(lines[6].starts_with("hit ratio 25.0% (1 of 4 stream opens"));
        assert_eq!(
            &lines[9..],
            [
                "replication: 3 tracks below mindevcount, waiting to retry; 5 copies made since start, 1 tracks failed; lost: music0",
                "last error: disk full"
            ]
        );
        assert!(status()
            .render(11)
            .contains("written 11s ago: the server is not running or is stuck"));
    }

    #[test]
    fn a_missing_status_file_names_the_server_that_writes_it() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_status(dir.path()).unwrap_err().to_string();
        assert!(e.contains("it is written by `spindle serve`"), "{e}");
        std::fs::create_dir_all(dir.path().join("tiers")).unwrap();
        std::fs::write(status_path(dir.path()), "{}").unwrap();
        let e = read_status(dir.path()).unwrap_err().to_string();
        assert!(e.contains("is not a tiers status"), "{e}");
    }

    #[test]
    fn bytes_in_binary_units() {
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(5 << 40), "5.0 TiB");
    }
}
