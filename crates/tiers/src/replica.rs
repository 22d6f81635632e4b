//! The replica index: which cold devices hold a copy of which track,
//! beyond the music folder the track was scanned from. An append-only
//! text log, `DATA/tiers/replicas.log`, one record per line:
//!
//! ```text
//! +<TAB>DEVICE<TAB>LENGTH<TAB>KEY<TAB>CRC32   a copy was stored
//! -<TAB>DEVICE<TAB>0<TAB>KEY<TAB>CRC32        a copy was removed
//! ```
//!
//! CRC32 is the CRC-32 (IEEE) of everything before the last tab, as
//! eight lower-case hex digits. A line with a bad CRC or cut short (a
//! crash mid-append) ends the log: it and anything after it are dropped
//! on open and the file is truncated there. Keys never hold tabs or
//! newlines (such tracks are not replicated).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Why the index could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    #[error("replica index {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("key {0:?} holds a tab or newline and cannot be indexed")]
    BadKey(String),
}

/// key → device → length.
type Map = BTreeMap<String, BTreeMap<String, u64>>;

/// The index, in memory and on disk.
pub struct ReplicaIndex {
    path: PathBuf,
    map: Mutex<Map>,
}

fn line(op: char, device: &str, len: u64, key: &str) -> String {
    let body = format!("{op}\t{device}\t{len}\t{key}");
    format!("{body}\t{:08x}\n", crc32fast::hash(body.as_bytes()))
}

fn parse(l: &str) -> Option<(char, &str, u64, &str)> {
    let (body, crc) = l.rsplit_once('\t')?;
    if u32::from_str_radix(crc, 16).ok()? != crc32fast::hash(body.as_bytes()) || crc.len() != 8 {
        return None;
    }
    let mut f = body.splitn(4, '\t');
    let op = f.next()?.chars().next()?;
    let dev = f.next()?;
    let len = f.next()?.parse().ok()?;
    let key = f.next()?;
    matches!(op, '+' | '-').then_some((op, dev, len, key))
}

impl ReplicaIndex {
    /// Opens (creating) the index at `path`, cutting a torn tail.
    pub fn open(path: &Path) -> Result<ReplicaIndex, IndexError> {
        let err = |source| IndexError::Io {
            path: path.to_owned(),
            source,
        };
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p).map_err(err)?;
        }
        let text = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(err(e)),
        };
        let mut map = Map::new();
        let mut good = 0usize;
        for raw in text.split_inclusive(|&b| b == b'\n') {
            let Some(l) = raw
                .strip_suffix(b"\n")
                .and_then(|l| std::str::from_utf8(l).ok())
            else {
                break;
            };
            let Some((op, dev, len, key)) = parse(l) else {
                break;
            };
            if op == '+' {
                map.entry(key.to_owned())
                    .or_default()
                    .insert(dev.to_owned(), len);
            } else if let Some(m) = map.get_mut(key) {
                m.remove(dev);
                if m.is_empty() {
                    map.remove(key);
                }
            }
            good += raw.len();
        }
        if good < text.len() {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(err)?;
            f.set_len(good as u64).map_err(err)?;
            f.sync_all().map_err(err)?;
        }
        Ok(ReplicaIndex {
            path: path.to_owned(),
            map: Mutex::new(map),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Map> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn append(&self, text: &str) -> Result<(), IndexError> {
        let err = |source| IndexError::Io {
            path: self.path.clone(),
            source,
        };
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(err)?;
        f.write_all(text.as_bytes()).map_err(err)?;
        f.sync_data().map_err(err)
    }

    fn check(key: &str) -> Result<(), IndexError> {
        if key.contains(['\t', '\n', '\r']) {
            return Err(IndexError::BadKey(key.to_owned()));
        }
        Ok(())
    }

    /// Records that `device` holds `key` (`len` bytes).
    pub fn add(&self, key: &str, device: &str, len: u64) -> Result<(), IndexError> {
        Self::check(key)?;
        let mut m = self.lock();
        self.append(&line('+', device, len, key))?;
        m.entry(key.to_owned())
            .or_default()
            .insert(device.to_owned(), len);
        Ok(())
    }

    /// Records that `device` no longer holds `key`.
    pub fn remove(&self, key: &str, device: &str) -> Result<(), IndexError> {
        Self::check(key)?;
        let mut m = self.lock();
        self.append(&line('-', device, 0, key))?;
        if let Some(d) = m.get_mut(key) {
            d.remove(device);
            if d.is_empty() {
                m.remove(key);
            }
        }
        Ok(())
    }

    /// The devices holding `key`, with the length each holds.
    pub fn devices_of(&self, key: &str) -> Vec<(String, u64)> {
        self.lock()
            .get(key)
            .map(|m| m.iter().map(|(d, l)| (d.clone(), *l)).collect())
            .unwrap_or_default()
    }

    /// Every key with the devices holding it (a copy of the index, for a
    /// scan that must not hold its lock).
    pub fn snapshot(&self) -> Vec<(String, Vec<(String, u64)>)> {
        self.lock()
            .iter()
            .map(|(k, m)| (k.clone(), m.iter().map(|(d, l)| (d.clone(), *l)).collect()))
            .collect()
    }

    /// Bytes and copies per device.
    pub fn per_device(&self) -> BTreeMap<String, (u64, u64)> {
        let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for m in self.lock().values() {
            for (d, l) in m {
                let e = out.entry(d.clone()).or_default();
                e.0 += 1;
                e.1 += l;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_survives_reopen_and_a_torn_tail() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("tiers/replicas.log");
        let ix = ReplicaIndex::open(&p).unwrap();
        ix.add("a/1.flac", "garage", 100).unwrap();
        ix.add("a/1.flac", "archive", 100).unwrap();
        ix.add("b/2.flac", "garage", 7).unwrap();
        ix.remove("a/1.flac", "archive").unwrap();
        assert!(ix.add("bad\tkey", "garage", 1).is_err());
        drop(ix);
        // A crash mid-append: half a line.
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"+\tgarage\t5\tc/3.fl").unwrap();
        drop(f);
        let ix = ReplicaIndex::open(&p).unwrap();
        assert_eq!(ix.devices_of("a/1.flac"), vec![("garage".into(), 100)]);
        assert_eq!(ix.devices_of("c/3.flac"), vec![]);
        assert_eq!(ix.per_device()["garage"], (2, 107));
        assert_eq!(
            ix.snapshot(),
            vec![
                ("a/1.flac".to_owned(), vec![("garage".to_owned(), 100)]),
                ("b/2.flac".to_owned(), vec![("garage".to_owned(), 7)]),
            ]
        );
        // The torn tail is gone, so the next append starts a clean line.
        ix.add("c/3.flac", "garage", 5).unwrap();
        drop(ix);
        let ix = ReplicaIndex::open(&p).unwrap();
        assert_eq!(ix.devices_of("c/3.flac"), vec![("garage".into(), 5)]);
        // A flipped byte ends the log at that line.
        let mut text = std::fs::read(&p).unwrap();
        text[2] = b'X';
        std::fs::write(&p, text).unwrap();
        let ix = ReplicaIndex::open(&p).unwrap();
        assert!(ix.devices_of("a/1.flac").is_empty());
    }
}
