//! Helpers shared by the integration tests.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

/// A fresh directory under cargo's target dir (a real disk, where O_DIRECT
/// works; /tmp may be tmpfs), removed on drop. Its name is the process's
/// and a count, so tests running side by side in the test binary never
/// share one, whatever names they ask for.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let p = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("spindle-io-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create test dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A file of `len` random bytes from `seed`; returns its path and content.
pub fn random_file(dir: &TempDir, name: &str, len: usize, seed: u64) -> (PathBuf, Vec<u8>) {
    let mut data = vec![0u8; len];
    SmallRng::seed_from_u64(seed).fill_bytes(&mut data);
    let path = dir.0.join(name);
    std::fs::write(&path, &data).expect("write test file");
    (path, data)
}

/// The seed for a randomised test: `SPINDLE_TEST_SEED` or the clock.
pub fn seed() -> u64 {
    std::env::var("SPINDLE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        })
}
