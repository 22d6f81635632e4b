//! Variants: copies of a track the server derives from it (a transcode
//! at some format and bitrate), kept in the hot folder beside promoted
//! originals, under the same popularity policy and byte budget.
//!
//! A variant has a key of its own ([`variant_key`]) and is never promoted
//! from a cold copy (there is none): the server writes it itself with
//! [`crate::hot::HotFolder::writer`] when the policy wants it hot
//! ([`Tiers::variant_access`]). The policy demotes it like any track, and
//! a hot copy found at start is known to the policy like any other.

use super::super::promote::Job;
use super::super::{lock, Tiers, TrackRef};
use crate::placement::key_id;

/// The first path component of every variant key. A music file can
/// never be named so: the hot folder's keys of originals are paths below
/// a music folder, and this one starts with a character that the
/// variants' own keys use and scanners' paths do not (`\u{1}`).
pub const VARIANT_PREFIX: &str = "\u{1}variant";

/// The key of `track`'s variant `name` (for example `opus-160`), made
/// from a file `version` (its length and modification time, so a file
/// replaced on disk gets new variants): `VARIANT_PREFIX/name/version/track`.
pub fn variant_key(track: &str, name: &str, version: &str) -> String {
    format!("{VARIANT_PREFIX}/{name}/{version}/{track}")
}

/// Whether `key` names a variant, not an original.
pub fn is_variant(key: &str) -> bool {
    key.starts_with(VARIANT_PREFIX)
}

impl Tiers {
    /// One request of variant `key` (about `len` bytes): counts it like a
    /// stream request of a track ([`Tiers::record_access`]: the access
    /// log, the policy, demotions of what it pushes out), but promotes
    /// nothing. Returns whether the policy holds the variant hot, that is
    /// whether the caller should write it into the hot folder when it has
    /// no copy there ([`Tiers::hot`]). Without a hot folder, false.
    pub fn variant_access(&self, key: &str, len: u64) -> bool {
        let id = key_id(key);
        let unix_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        self.access_log.record(unix_ms, id, len);
        if self.hot.is_none() {
            return false;
        }
        let mut f = lock(&self.feed);
        f.ids.insert(
            id,
            TrackRef {
                key: key.to_owned(),
                folder: None,
            },
        );
        let (admit, evicted) = f.policy.access(id, len);
        for e in evicted {
            if let Some(tr) = f.ids.get(&e) {
                if !f.pinned.contains_key(&tr.key) {
                    self.send(Job::Demote(tr.key.clone()));
                }
            }
        }
        admit || f.policy.contains(id)
    }

    /// Whether the policy still holds variant `key` hot (checked before a
    /// finished copy is kept: one demoted while it was written is
    /// dropped instead).
    pub fn variant_wanted(&self, key: &str) -> bool {
        self.hot.is_some() && lock(&self.feed).policy.contains(key_id(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HotConfig;
    use crate::placement::DecayedLfu;
    use crate::TiersConfig;

    #[tokio::test]
    async fn variants_share_the_policy_and_budget_with_originals() {
        let d = tempfile::tempdir().unwrap();
        let cfg = TiersConfig {
            hot: Some(HotConfig {
                path: d.path().join("hot"),
                budget: 1000,
            }),
            ..Default::default()
        };
        let t = std::sync::Arc::new(
            Tiers::new(cfg, &[], d.path(), Box::new(DecayedLfu::new(1000))).unwrap(),
        );
        t.start_background();
        let a = variant_key("x/a.flac", "opus-96", "1-2");
        let b = variant_key("x/b.flac", "opus-96", "1-2");
        assert!(is_variant(&a) && !is_variant("x/a.flac"));
        assert!(t.variant_access(&a, 600));
        let hot = t.hot().unwrap().clone();
        let mut w = hot.writer(&a, 600).unwrap();
        w.write(&[1u8; 600]).unwrap();
        assert!(t.variant_wanted(&a));
        w.finish().unwrap();
        assert_eq!(hot.contains(&a), Some(600));
        // b, asked for more often, pushes a out of the 1000-byte budget.
        assert!(!t.variant_access(&b, 600));
        assert!(t.variant_access(&b, 600));
        assert!(!t.variant_wanted(&a));
        t.idle().await;
        assert_eq!(hot.contains(&a), None, "a was demoted");
        t.shutdown().await;
    }
}
