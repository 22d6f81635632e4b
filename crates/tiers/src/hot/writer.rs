//! Copies written into the hot folder as they are made, whose length is
//! known only at the end: a transcode teed to the hot folder while it
//! streams to a client ([`HotFolder::writer`], [`HotWriter`]).
//!
//! The same steps and guarantees as a promotion: bytes are reserved
//! before they are written (an estimate at the start, the exact length at
//! the end), the copy is written to a `.tmp` file with its CRC, then its
//! record, both renamed into place, and only then listed as hot. Nothing
//! unfinished is ever served: a writer dropped before
//! [`HotWriter::finish`] removes its temporary file and releases its
//! reservation, and a crash leaves a `.tmp` that the next
//! [`HotFolder::open`] removes. Temporary names are unique per writer, so
//! two writers of the same key (which [`HotFolder::writer`] refuses
//! anyway) could never mix their bytes.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{encode_record, io, object_name, sync_dir, HotError, HotFolder};
use crate::device::key_is_safe;

/// Tells temporary files of concurrent writers apart.
static NEXT_TMP: AtomicU64 = AtomicU64::new(0);

/// A copy being written into the hot folder; see the module doc.
pub struct HotWriter {
    hot: Arc<HotFolder>,
    key: String,
    tmp: PathBuf,
    file: Option<std::fs::File>,
    crc: crc32fast::Hasher,
    written: u64,
    done: bool,
}

impl HotFolder {
    /// Starts a copy of `key` expected to be about `estimate` bytes long.
    /// Refused when `key` is hot already or being written (the copy
    /// another writer makes serves), or when not even the estimate fits
    /// the budget. Creates a file: call where a short blocking call is
    /// acceptable.
    pub fn writer(self: &Arc<Self>, key: &str, estimate: u64) -> Result<HotWriter, HotError> {
        if !key_is_safe(key) {
            return Err(HotError::BadKey(key.to_owned()));
        }
        self.reserve(key, estimate)?;
        let (shard, name) = object_name(key);
        let dir = self.root.join("objects").join(shard);
        let n = NEXT_TMP.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!("{name}.w{}-{n}.tmp", std::process::id()));
        let file = std::fs::create_dir_all(&dir)
            .map_err(|e| io(&dir, e))
            .and_then(|()| std::fs::File::create(&tmp).map_err(|e| io(&tmp, e)));
        let file = match file {
            Ok(f) => f,
            Err(e) => {
                self.unreserve(key);
                return Err(e);
            }
        };
        Ok(HotWriter {
            hot: self.clone(),
            key: key.to_owned(),
            tmp,
            file: Some(file),
            crc: crc32fast::Hasher::new(),
            written: 0,
            done: false,
        })
    }
}

impl HotWriter {
    /// The key being written.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Appends `buf` (a write into the page cache: short, but blocking).
    pub fn write(&mut self, buf: &[u8]) -> Result<(), HotError> {
        let Some(f) = self.file.as_mut() else {
            return Err(HotError::Io {
                path: self.tmp.clone(),
                source: std::io::Error::other("the copy is closed"),
            });
        };
        f.write_all(buf).map_err(|e| io(&self.tmp, e))?;
        self.crc.update(buf);
        self.written += buf.len() as u64;
        Ok(())
    }

    /// Makes the copy hot: the reservation becomes its exact length (or
    /// the copy is dropped when that no longer fits the budget), then the
    /// copy and its record are synced and renamed into place. Blocks on
    /// `fsync`: call from a blocking thread. Returns the copy's length.
    pub fn finish(mut self) -> Result<u64, HotError> {
        let n = self.written;
        let hot = self.hot.clone();
        {
            let mut i = hot.lock();
            let r = i.reserved.get(&self.key).copied().unwrap_or(0);
            if i.used - r + n > hot.budget {
                return Err(HotError::OverBudget {
                    key: self.key.clone(),
                    need: n,
                    used: i.used - r,
                    budget: hot.budget,
                });
            }
            i.used = i.used - r + n;
            i.reserved.insert(self.key.clone(), n);
        }
        let (data, sum, dir) = hot.paths(&self.key);
        if let Some(f) = self.file.take() {
            f.sync_all().map_err(|e| io(&self.tmp, e))?;
        }
        let sum_tmp = self.tmp.with_extension("sum.tmp");
        let rec = encode_record(&self.key, n, self.crc.clone().finalize());
        let written = std::fs::write(&sum_tmp, rec)
            .and_then(|()| std::fs::File::open(&sum_tmp)?.sync_all())
            .map_err(|e| io(&sum_tmp, e))
            .and_then(|()| std::fs::rename(&self.tmp, &data).map_err(|e| io(&data, e)))
            .and_then(|()| std::fs::rename(&sum_tmp, &sum).map_err(|e| io(&sum, e)))
            .and_then(|()| sync_dir(&dir).map_err(|e| io(&dir, e)));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&sum_tmp);
            let _ = std::fs::remove_file(&sum);
            let _ = std::fs::remove_file(&data);
            return Err(e);
        }
        let mut i = hot.lock();
        i.reserved.remove(&self.key);
        i.files.insert(self.key.clone(), n);
        self.done = true;
        Ok(n)
    }
}

impl Drop for HotWriter {
    fn drop(&mut self) {
        if !self.done {
            self.file = None;
            let _ = std::fs::remove_file(&self.tmp);
            self.hot.unreserve(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &std::path::Path, budget: u64) -> Arc<HotFolder> {
        Arc::new(HotFolder::open(dir, budget).unwrap().0)
    }

    #[test]
    fn a_finished_copy_is_hot_at_its_exact_length_and_survives_reopen() {
        let d = tempfile::tempdir().unwrap();
        let hot = open(d.path(), 100_000);
        let mut w = hot.writer("t/a.flac~opus-96", 50_000).unwrap();
        assert_eq!(hot.used(), 50_000, "the estimate is reserved");
        w.write(&[1u8; 30_000]).unwrap();
        w.write(&[2u8; 12_345]).unwrap();
        assert_eq!(
            hot.contains("t/a.flac~opus-96"),
            None,
            "not hot while written"
        );
        assert_eq!(w.finish().unwrap(), 42_345);
        assert_eq!(hot.contains("t/a.flac~opus-96"), Some(42_345));
        assert_eq!(hot.used(), 42_345);
        drop(hot);
        let (hot, rec) = HotFolder::open(d.path(), 100_000).unwrap();
        assert_eq!((rec.kept, rec.dropped, rec.temp_removed), (1, 0, 0));
        assert_eq!(hot.contains("t/a.flac~opus-96"), Some(42_345));
    }

    #[test]
    fn an_abandoned_copy_leaves_no_file_and_no_reservation() {
        let d = tempfile::tempdir().unwrap();
        let hot = open(d.path(), 100_000);
        let mut w = hot.writer("k", 10_000).unwrap();
        w.write(&[7u8; 5000]).unwrap();
        assert!(matches!(hot.writer("k", 1), Err(HotError::Busy { .. })));
        drop(w);
        assert_eq!(hot.used(), 0);
        assert_eq!(hot.contains("k"), None);
        let (shard, _) = object_name("k");
        let left: Vec<_> = std::fs::read_dir(d.path().join("objects").join(shard))
            .unwrap()
            .collect();
        assert!(left.is_empty(), "{left:?}");
        // The key is free again.
        hot.writer("k", 1).unwrap();
    }

    #[test]
    fn a_copy_that_outgrows_the_budget_is_dropped() {
        let d = tempfile::tempdir().unwrap();
        let hot = open(d.path(), 10_000);
        assert!(matches!(
            hot.writer("big", 20_000),
            Err(HotError::OverBudget { .. })
        ));
        let mut w = hot.writer("k", 5_000).unwrap();
        w.write(&[0u8; 12_000]).unwrap();
        assert!(matches!(w.finish(), Err(HotError::OverBudget { .. })));
        assert_eq!((hot.used(), hot.contains("k")), (0, None));
    }
}
