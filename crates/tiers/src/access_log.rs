//! The server's access log: one line per stream request, the input of
//! `spindle tiers simulate --replay` (format: docs/tiers-policy.md).
//!
//! `DATA/tiers/access.log`, appended to with one `write` per line (no
//! buffer to lose in a crash); at 64 MiB it is renamed to
//! `access.log.1` (replacing an older one) and a new one is started, so
//! the two files hold the most recent 64–128 MiB (about two million
//! requests).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Past this size the log is rotated.
const ROTATE_AT: u64 = 64 << 20;

pub struct AccessLog {
    path: PathBuf,
    file: Mutex<Option<(File, u64)>>,
}

/// Where a data dir's access log lives.
pub fn access_log_path(data_dir: &Path) -> PathBuf {
    data_dir.join("tiers").join("access.log")
}

impl AccessLog {
    /// Opens (or creates) the log. A log that cannot be opened is not an
    /// error for the server: it streams on and logs nothing (said once).
    pub fn open(path: PathBuf) -> AccessLog {
        let file = open_append(&path)
            .map_err(|e| tracing::warn!(path = %path.display(), "no access log at {}: {e}", path.display()))
            .ok();
        AccessLog {
            path,
            file: Mutex::new(file),
        }
    }

    /// One stream request of `track_id`, a file of `file_bytes`.
    pub fn record(&self, unix_ms: u64, track_id: u64, file_bytes: u64) {
        let line = format!("{unix_ms}\t{track_id}\t{file_bytes}\n");
        let mut guard = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let Some((file, size)) = guard.as_mut() else {
            return;
        };
        if file.write_all(line.as_bytes()).is_err() {
            return;
        }
        *size += line.len() as u64;
        if *size >= ROTATE_AT {
            let old = self.path.with_extension("log.1");
            if std::fs::rename(&self.path, &old).is_ok() {
                *guard = open_append(&self.path).ok();
            }
        }
    }
}

fn open_append(path: &Path) -> std::io::Result<(File, u64)> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    let size = file.metadata()?.len();
    Ok((file, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_appended_and_read_back_by_the_replay_parser() {
        let dir = tempfile::tempdir().unwrap();
        let path = access_log_path(dir.path());
        let log = AccessLog::open(path.clone());
        log.record(1_700_000_000_000, 42, 5_000_000);
        log.record(1_700_000_000_500, 7, 3_000_000);
        drop(log);
        // A second server run appends.
        AccessLog::open(path.clone()).record(1_700_000_001_000, 42, 5_000_000);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "1700000000000\t42\t5000000\n1700000000500\t7\t3000000\n1700000001000\t42\t5000000\n"
        );
        let trace = crate::sim::replay::read(text.as_bytes()).unwrap();
        assert_eq!(trace.ids.len(), 3);
        assert_eq!(trace.sizes.len(), 2);
    }

    #[test]
    fn a_full_log_is_rotated() {
        let dir = tempfile::tempdir().unwrap();
        let path = access_log_path(dir.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, vec![b'#'; ROTATE_AT as usize - 5]).unwrap();
        let log = AccessLog::open(path.clone());
        log.record(1, 2, 3);
        log.record(4, 5, 6);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "4\t5\t6\n");
        assert!(path.with_extension("log.1").exists());
    }
}
