//! The disk cache of resized covers: one JPEG file per (source, size),
//! named by its key, under `DATA_DIR/covers/`, kept within a byte budget
//! by evicting the least recently used.
//!
//! Layout: `covers/<key>.jpg`, where the key is 32 lowercase hex digits
//! (the hash of the cover's source identity and size, see
//! [`super::Lookup`]). A file is written as `<key>.<random>.tmp` and
//! renamed into place, so a reader never sees half a cover; a crash can
//! leave a `.tmp` behind, which the next [`DiskCache::open`] deletes, as
//! it deletes empty files and names it did not make. A changed source has
//! a new key, so a cached file is never stale — it only stops being used
//! and ages out.
//!
//! Recency lives in memory (an index of key → length and last use, built
//! from the folder at open); a hit also sets the file's modification time
//! when it is older than [`TOUCH_EVERY`], so the order survives a restart
//! without a write on every hit (and without relying on `atime`, which
//! `noatime` and `relatime` mounts do not keep). A write that takes the
//! total over the budget deletes the least recently used files until it
//! is under.

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::sync::lock;

/// How many bytes of resized covers the cache keeps: 256 MiB, about
/// 10,000 covers of 300 pixels (20–30 KiB each) — a large library's
/// album grid at one size — or 1,500 of 1200 pixels.
pub const COVER_CACHE_BUDGET: u64 = 256 << 20;

/// The cache's folder under the data dir.
pub const COVER_CACHE_DIR: &str = "covers";

/// A hit sets the file's modification time (its recency across restarts)
/// at most this often: 1 hour.
pub const TOUCH_EVERY: Duration = Duration::from_secs(3600);

/// Resized covers on disk; see the module doc.
pub struct DiskCache {
    dir: PathBuf,
    budget: u64,
    index: Mutex<Index>,
}

#[derive(Default)]
struct Index {
    entries: HashMap<String, Entry>,
    /// Last use → key, oldest first.
    order: BTreeMap<u64, String>,
    tick: u64,
    bytes: u64,
}

struct Entry {
    len: u64,
    tick: u64,
    /// The file's modification time as last set or read.
    touched: SystemTime,
}

impl Index {
    fn insert(&mut self, key: String, len: u64, touched: SystemTime) {
        self.remove(&key);
        self.tick += 1;
        self.order.insert(self.tick, key.clone());
        self.bytes += len;
        self.entries.insert(
            key,
            Entry {
                len,
                tick: self.tick,
                touched,
            },
        );
    }

    fn remove(&mut self, key: &str) {
        if let Some(e) = self.entries.remove(key) {
            self.order.remove(&e.tick);
            self.bytes -= e.len;
        }
    }

    /// Marks `key` used now; whether its file's time should be set.
    fn bump(&mut self, key: &str, now: SystemTime) -> Option<bool> {
        let e = self.entries.get_mut(key)?;
        self.order.remove(&e.tick);
        self.tick += 1;
        e.tick = self.tick;
        self.order.insert(self.tick, key.to_owned());
        let stale = now
            .duration_since(e.touched)
            .is_ok_and(|d| d >= TOUCH_EVERY);
        if stale {
            e.touched = now;
        }
        Some(stale)
    }

    /// Removes least recently used entries until at most `budget` bytes
    /// remain; their keys, for the caller to delete.
    fn evict_to(&mut self, budget: u64) -> Vec<String> {
        let mut out = Vec::new();
        while self.bytes > budget {
            let Some((_, key)) = self.order.pop_first() else {
                break;
            };
            if let Some(e) = self.entries.remove(&key) {
                self.bytes -= e.len;
            }
            out.push(key);
        }
        out
    }
}

/// Whether `key` is a cache key (32 lowercase hex digits), so a file
/// name made from it stays inside the folder.
pub fn is_key(key: &str) -> bool {
    key.len() == 32
        && key
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl DiskCache {
    /// Opens (or creates) the cache in `dir` with `budget` bytes: indexes
    /// the covers there, oldest modification time first, deletes what is
    /// not a cover (leftover `.tmp` files, empty files), and evicts down
    /// to the budget.
    pub fn open(dir: &Path, budget: u64) -> std::io::Result<DiskCache> {
        std::fs::create_dir_all(dir)?;
        let mut found = Vec::new();
        for ent in std::fs::read_dir(dir)? {
            let ent = ent?;
            let name = ent.file_name();
            let name = name.to_string_lossy();
            let meta = match ent.metadata() {
                Ok(m) if m.is_file() => m,
                _ => continue,
            };
            match name.strip_suffix(".jpg") {
                Some(key) if is_key(key) && meta.len() > 0 => {
                    let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                    found.push((mtime, key.to_owned(), meta.len()));
                }
                _ => {
                    if let Err(e) = std::fs::remove_file(ent.path()) {
                        tracing::warn!("cover cache: cannot delete {name}: {e}");
                    }
                }
            }
        }
        found.sort();
        let mut index = Index::default();
        for (mtime, key, len) in found {
            index.insert(key, len, mtime);
        }
        let cache = DiskCache {
            dir: dir.to_owned(),
            budget,
            index: Mutex::new(index),
        };
        let evicted = lock(&cache.index).evict_to(budget);
        cache.delete(&evicted);
        Ok(cache)
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.jpg"))
    }

    /// The cached cover of `key`, if there is one.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        let now = SystemTime::now();
        let touch = lock(&self.index).bump(key, now)?;
        let read = || -> std::io::Result<Vec<u8>> {
            let mut f = std::fs::File::open(self.path(key))?;
            let mut buf = Vec::new();
            f.read_to_end(&mut buf)?;
            if touch {
                // Recency for the next open; a failure only costs order.
                let _ = f.set_modified(now);
            }
            Ok(buf)
        };
        match read() {
            Ok(buf) if !buf.is_empty() => Some(buf),
            Ok(_) | Err(_) => {
                // Deleted or emptied behind our back: forget it.
                lock(&self.index).remove(key);
                None
            }
        }
    }

    /// Stores the cover of `key`, then evicts the least recently used
    /// covers while the total is over the budget. A cover larger than
    /// the whole budget is not stored.
    pub fn put(&self, key: &str, data: &[u8]) -> std::io::Result<()> {
        let len = data.len() as u64;
        if !is_key(key) || len == 0 || len > self.budget {
            return Ok(());
        }
        let tmp = self
            .dir
            .join(format!("{key}.{:016x}.tmp", rand::random::<u64>()));
        let written = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(data)?;
            std::fs::rename(&tmp, self.path(key))
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        let evicted = {
            let mut ix = lock(&self.index);
            ix.insert(key.to_owned(), len, SystemTime::now());
            ix.evict_to(self.budget)
        };
        self.delete(&evicted);
        Ok(())
    }

    fn delete(&self, keys: &[String]) {
        for k in keys {
            if let Err(e) = std::fs::remove_file(self.path(k)) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!("cover cache: cannot delete {k}.jpg: {e}");
                }
            }
        }
    }

    /// Bytes of covers the cache holds now.
    pub fn bytes(&self) -> u64 {
        lock(&self.index).bytes
    }

    /// Covers the cache holds now.
    pub fn len(&self) -> usize {
        lock(&self.index).entries.len()
    }

    /// Whether the cache holds no cover.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u32) -> String {
        format!("{n:032x}")
    }

    fn on_disk(dir: &Path) -> (usize, u64) {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .fold((0, 0), |(n, b), l| (n + 1, b + l))
    }

    #[test]
    fn the_cache_stays_within_its_budget_and_keeps_the_recently_used() {
        let dir = tempfile::tempdir().unwrap();
        let c = DiskCache::open(dir.path(), 10_000).unwrap();
        for n in 0..5 {
            c.put(&key(n), &vec![n as u8 + 1; 3000]).unwrap();
            // Cover 0 is used after every write: it must survive.
            assert!(c.get(&key(0)).is_some(), "cover 0 after writing {n}");
        }
        let (files, bytes) = on_disk(dir.path());
        assert!(bytes <= 10_000 && c.bytes() <= 10_000, "{bytes} bytes");
        assert_eq!((files, c.len()), (3, 3));
        assert!(c.get(&key(0)).is_some());
        assert!(c.get(&key(4)).is_some());
        assert!(c.get(&key(3)).is_some());
        assert!(c.get(&key(1)).is_none() && c.get(&key(2)).is_none());
    }

    #[test]
    fn a_reopened_cache_keeps_its_covers_and_cleans_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        {
            let c = DiskCache::open(dir.path(), 1 << 20).unwrap();
            c.put(&key(1), b"one").unwrap();
            c.put(&key(2), b"two").unwrap();
        }
        std::fs::write(dir.path().join(format!("{}.0123.tmp", key(3))), b"half").unwrap();
        std::fs::write(dir.path().join(format!("{}.jpg", key(4))), b"").unwrap();
        std::fs::write(dir.path().join("stray.txt"), b"?").unwrap();
        let c = DiskCache::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(c.get(&key(1)).as_deref(), Some(&b"one"[..]));
        assert_eq!(c.get(&key(2)).as_deref(), Some(&b"two"[..]));
        assert_eq!(on_disk(dir.path()).0, 2);
        // A smaller budget at open evicts the oldest.
        drop(c);
        let old = SystemTime::now() - Duration::from_secs(7200);
        let f = std::fs::File::options()
            .write(true)
            .open(dir.path().join(format!("{}.jpg", key(2))))
            .unwrap();
        f.set_modified(old).unwrap();
        let c = DiskCache::open(dir.path(), 3).unwrap();
        assert!(c.get(&key(2)).is_none());
        assert!(c.get(&key(1)).is_some());
    }

    #[test]
    fn a_cover_deleted_behind_the_cache_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let c = DiskCache::open(dir.path(), 1 << 20).unwrap();
        c.put(&key(7), b"seven").unwrap();
        std::fs::remove_file(dir.path().join(format!("{}.jpg", key(7)))).unwrap();
        assert!(c.get(&key(7)).is_none());
        assert_eq!((c.len(), c.bytes()), (0, 0));
    }

    #[test]
    fn keys_that_are_not_hashes_are_never_stored() {
        let dir = tempfile::tempdir().unwrap();
        let c = DiskCache::open(dir.path(), 1 << 20).unwrap();
        for bad in ["../../etc/passwd", "ABCDEF0123456789ABCDEF0123456789", ""] {
            c.put(bad, b"x").unwrap();
        }
        assert!(c.is_empty());
        assert_eq!(on_disk(dir.path()).0, 0);
    }
}
