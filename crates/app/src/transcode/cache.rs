//! Finished transcodes, kept so that a popular track is not encoded
//! twice: in the storage tiers' hot folder when there is one (the same
//! popularity policy and byte budget as promoted originals; see
//! `spindle_tiers::runtime::variant_key`), else in a hot folder of their
//! own under the data dir ([`super::config::CACHE_DIR`], budget
//! [`super::config::CACHE_BUDGET`]) run by the same policy
//! (`spindle_tiers::policy::Spindle`). Either way the files are the hot
//! folder's: written by [`HotWriter`] (temp file, CRC record, rename),
//! checked at start, never served unfinished.
//!
//! Keys: `\u{1}variant/FORMAT-KBPS/VERSION/TRACK`, where TRACK is the
//! track's path below its music folder and VERSION its file's length and
//! modification time in hex (a file replaced on disk gets new keys; the
//! old copies age out).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use spindle_tiers::hot::{object_name, HotFolder, HotWriter};
use spindle_tiers::placement::{key_id, FromPolicy, HotPolicy};
use spindle_tiers::Tiers;

use crate::sync::lock;

/// Where transcodes are kept.
pub enum Cache {
    /// The storage tiers' hot folder and policy.
    Tiers(Arc<Tiers>, Arc<HotFolder>),
    /// A hot folder of its own, with its own policy.
    Own(Arc<HotFolder>, Mutex<OwnPolicy>),
}

/// The own cache's policy and the keys it knows by id.
pub struct OwnPolicy {
    policy: Box<dyn HotPolicy>,
    keys: HashMap<u64, String>,
}

/// What the cache says of one request.
pub struct Access {
    /// The length of the hot copy, if there is one.
    pub hit: Option<u64>,
    /// Whether a transcode made now should be kept.
    pub keep: bool,
}

impl Cache {
    /// The tiers' hot folder if they have one.
    pub(crate) fn of_tiers(tiers: &Arc<Tiers>) -> Option<Cache> {
        let hot = tiers.hot()?.clone();
        Some(Cache::Tiers(tiers.clone(), hot))
    }

    /// Opens (creating) the own cache in `dir` with `budget` bytes:
    /// unfinished and damaged copies are removed, the rest made known to
    /// the policy. Reads every copy: call from a blocking thread.
    pub(crate) fn open_own(dir: &Path, budget: u64) -> Result<Cache, spindle_tiers::hot::HotError> {
        let (hot, rec) = HotFolder::open(dir, budget)?;
        if rec.dropped + rec.temp_removed > 0 {
            tracing::info!(
                "transcode cache {}: removed {} unfinished and {} damaged copies",
                dir.display(),
                rec.temp_removed,
                rec.dropped
            );
        }
        let mut own = OwnPolicy {
            policy: Box::new(FromPolicy(spindle_tiers::policy::Spindle::new(budget))),
            keys: HashMap::new(),
        };
        for key in hot.keys() {
            let id = key_id(&key);
            let _ = own.policy.access(id, hot.contains(&key).unwrap_or(0));
            own.keys.insert(id, key);
        }
        let hot = Arc::new(hot);
        let stale: Vec<String> = own
            .keys
            .iter()
            .filter(|(id, _)| !own.policy.contains(**id))
            .map(|(_, k)| k.clone())
            .collect();
        for k in stale {
            hot.evict(&k);
        }
        Ok(Cache::Own(hot, Mutex::new(own)))
    }

    pub(crate) fn hot(&self) -> &Arc<HotFolder> {
        match self {
            Cache::Tiers(_, h) | Cache::Own(h, _) => h,
        }
    }

    /// One request of variant `key`, about `estimate` bytes long: counted
    /// by the policy (which may demote others).
    pub fn access(&self, key: &str, estimate: u64) -> Access {
        let hit = self.hot().contains(key);
        let len = hit.unwrap_or(estimate).max(1);
        let keep = match self {
            Cache::Tiers(t, _) => t.variant_access(key, len),
            Cache::Own(hot, p) => {
                let id = key_id(key);
                let (keep, evict) = {
                    let mut p = lock(p);
                    p.keys.insert(id, key.to_owned());
                    let (admit, evicted) = p.policy.access(id, len);
                    let evict: Vec<String> =
                        evicted.iter().filter_map(|e| p.keys.remove(e)).collect();
                    (admit || p.policy.contains(id), evict)
                };
                for k in evict {
                    hot.evict(&k);
                }
                keep
            }
        };
        Access { hit, keep }
    }

    /// Whether the policy still wants `key` (a copy finished after its
    /// demotion is dropped).
    pub(crate) fn wanted(&self, key: &str) -> bool {
        match self {
            Cache::Tiers(t, _) => t.variant_wanted(key),
            Cache::Own(_, p) => lock(p).policy.contains(key_id(key)),
        }
    }

    /// Starts writing `key`; `None` when it is written already by another
    /// request, or does not fit.
    pub(crate) fn writer(&self, key: &str, estimate: u64) -> Option<HotWriter> {
        match self.hot().writer(key, estimate) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::debug!("transcode cache: not keeping {key:?}: {e}");
                None
            }
        }
    }

    /// The hot copy of `key` as (its folder, its name there).
    pub fn object(&self, key: &str) -> (PathBuf, PathBuf) {
        let (shard, name) = object_name(key);
        (
            self.hot().root().join("objects").join(shard),
            PathBuf::from(name),
        )
    }
}

/// Keeps `w` when the copy is complete and still wanted. Call from a
/// blocking thread (it syncs the file).
pub(crate) fn finish(cache: &Cache, w: HotWriter) {
    let key = w.key().to_owned();
    if !cache.wanted(&key) {
        return;
    }
    match w.finish() {
        Ok(n) => tracing::debug!("transcode cache: kept {key:?} ({n} bytes)"),
        Err(e) => tracing::info!("transcode cache: not keeping {key:?}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_own_cache_keeps_what_its_policy_admits_within_its_budget() {
        let d = tempfile::tempdir().unwrap();
        let c = Cache::open_own(d.path(), 10_000).unwrap();
        let a = c.access("k/a", 6000);
        assert_eq!((a.hit, a.keep), (None, true));
        let mut w = c.writer("k/a", 6000).unwrap();
        assert!(c.writer("k/a", 6000).is_none(), "one writer per key");
        w.write(&[1u8; 5000]).unwrap();
        finish(&c, w);
        assert_eq!(c.access("k/a", 6000).hit, Some(5000));
        let (dir, name) = c.object("k/a");
        assert_eq!(std::fs::metadata(dir.join(name)).unwrap().len(), 5000);
        assert!(c.hot().used() <= 10_000);
        // Reopened, the copy is still there and known to the policy.
        drop(c);
        let c = Cache::open_own(d.path(), 10_000).unwrap();
        assert_eq!(c.access("k/a", 6000).hit, Some(5000));
    }
}
