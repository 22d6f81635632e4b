//! Popularity in: stream requests and plays from the listening history
//! feed the hot tier's policy, which answers with promotions and
//! demotions for the queue (`promote.rs`); pins hold tracks hot outside
//! the policy's budget; a prefill fills free hot bytes from the history.
//!
//! The policy, the tracks it knows by id and the pins sit under one lock
//! ([`Feed`]): every stream request takes it once.

use std::collections::{HashMap, HashSet};

use super::promote::Job;
use super::{lock, Tiers, TrackRef};
use crate::placement::{key_id, HotPolicy};

pub(super) mod variant;

/// The feed's state.
pub(super) struct Feed {
    policy: Box<dyn HotPolicy>,
    /// The tracks the policy has seen, by id (to demote by key).
    ids: HashMap<u64, TrackRef>,
    /// Pinned keys held hot, with their bytes (taken from the budget the
    /// policy sees).
    pinned: HashMap<String, u64>,
}

impl Feed {
    pub(super) fn new(policy: Box<dyn HotPolicy>) -> Feed {
        Feed {
            policy,
            ids: HashMap::new(),
            pinned: HashMap::new(),
        }
    }

    /// How many tracks are pinned, and their bytes.
    pub(super) fn pinned_totals(&self) -> (u64, u64) {
        (self.pinned.len() as u64, self.pinned.values().sum())
    }
}

impl Tiers {
    /// Hot copies found at start are known to the policy; those it does
    /// not keep are demoted when the background starts
    /// ([`Tiers::stale_hot_copies`]).
    pub(super) fn seed_policy_with_hot_copies(&self) {
        let Some(hot) = &self.hot else {
            return;
        };
        let mut f = lock(&self.feed);
        for key in hot.keys() {
            let len = hot.contains(&key).unwrap_or(0);
            let id = key_id(&key);
            f.ids.insert(
                id,
                TrackRef {
                    key: key.clone(),
                    folder: None,
                },
            );
            let _ = f.policy.access(id, len);
        }
    }

    /// The hot copies the policy does not keep (demoted when the
    /// background starts).
    pub(super) fn stale_hot_copies(&self) -> Vec<String> {
        let Some(hot) = &self.hot else {
            return Vec::new();
        };
        let f = lock(&self.feed);
        hot.keys()
            .into_iter()
            .filter(|k| !f.policy.contains(key_id(k)))
            .collect()
    }

    /// One stream request of `t` (`len` bytes): feeds the policy, which
    /// may promote it and demote others in the background.
    pub fn record_access(&self, t: &TrackRef, len: u64) {
        let id = key_id(&t.key);
        let unix_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        self.access_log.record(unix_ms, id, len);
        if self.hot.is_none() {
            return;
        }
        let mut f = lock(&self.feed);
        f.ids.insert(id, t.clone());
        // A pinned track is hot already and its bytes are the pins': the
        // policy only learns that it is popular.
        if f.pinned.contains_key(&t.key) {
            f.policy.record_listen(id, 1.0);
            return;
        }
        let (admit, evicted) = f.policy.access(id, len);
        for e in evicted {
            if let Some(tr) = f.ids.get(&e) {
                if !f.pinned.contains_key(&tr.key) {
                    self.send(Job::Demote(tr.key.clone()));
                }
            }
        }
        drop(f);
        if admit {
            self.send(Job::Promote(t.clone()));
        }
    }

    /// Plays from the listening history (`weight` plays of `t`): they
    /// raise its popularity in the policy but move nothing by themselves.
    pub fn record_listen(&self, t: &TrackRef, weight: f64) {
        if self.hot.is_none() {
            return;
        }
        let id = key_id(&t.key);
        let mut f = lock(&self.feed);
        f.ids.insert(id, t.clone());
        f.policy.record_listen(id, weight);
    }

    /// Fills the hot tier's free bytes with the tracks the policy counts
    /// most popular without a stream request: call after replaying the
    /// listening history, so a new or emptied hot folder starts with what
    /// the history says is played most instead of waiting for requests.
    /// Only free bytes (nothing hot is demoted); promotion runs in the
    /// background at the usual bounded bandwidth. Reads tracks' lengths
    /// (a stat of the music folder): call from a blocking thread. Returns
    /// how many tracks were queued for promotion.
    pub fn prefill_hot(&self) -> usize {
        if self.hot.is_none() {
            return 0;
        }
        let (ids, pinned) = {
            let f = lock(&self.feed);
            let pinned: HashSet<String> = f.pinned.keys().cloned().collect();
            (f.ids.clone(), pinned)
        };
        // Lengths first (a stat each, for tracks not in the replica
        // index), so that no file system call runs under the feed's
        // lock, which every stream request takes.
        let lens: HashMap<u64, u64> = ids
            .iter()
            .filter(|(_, t)| !pinned.contains(&t.key))
            .filter_map(|(&id, t)| Some((id, self.known_len(t)?)))
            .collect();
        let admitted = lock(&self.feed)
            .policy
            .prefill(&mut |id| lens.get(&id).copied());
        for id in &admitted {
            if let Some(t) = ids.get(id) {
                self.send(Job::Promote(t.clone()));
            }
        }
        admitted.len()
    }

    /// Replaces the pinned tracks. In the order given, as long as their
    /// bytes fit the hot budget, they are promoted and never demoted by
    /// the policy; the policy's budget becomes the hot budget less their
    /// bytes, so pins and policy together never want more than the hot
    /// folder holds (what the smaller budget pushes out is demoted before
    /// any pin is promoted). Pins that do not fit, or have no copy, stay
    /// cold. Reads each track's length (a stat of the music folder): call
    /// from a blocking thread.
    pub fn set_pinned(&self, tracks: Vec<TrackRef>) {
        let Some(hot) = &self.hot else {
            return;
        };
        let budget = hot.budget();
        let mut keep: HashMap<String, u64> = HashMap::new();
        let mut order = Vec::new();
        let (mut bytes, mut left_out) = (0u64, 0usize);
        for t in tracks {
            if keep.contains_key(&t.key) {
                continue;
            }
            match self.known_len(&t) {
                Some(len) if bytes + len <= budget => {
                    bytes += len;
                    keep.insert(t.key.clone(), len);
                    order.push(t);
                }
                _ => left_out += 1,
            }
        }
        if left_out > 0 {
            tracing::info!(
                "tiers: {left_out} pinned tracks stay cold (no copy, or beyond the hot budget of {budget} bytes)"
            );
        }
        let mut demote = Vec::new();
        {
            let mut guard = lock(&self.feed);
            let f = &mut *guard;
            let old = std::mem::replace(&mut f.pinned, keep.clone());
            for t in &order {
                let id = key_id(&t.key);
                f.ids.insert(id, t.clone());
                // Its copy, if the policy held it, stays as the pin's.
                f.policy.remove(id);
            }
            for e in f.policy.set_budget(budget - bytes) {
                if let Some(tr) = f.ids.get(&e) {
                    if !keep.contains_key(&tr.key) {
                        demote.push(tr.key.clone());
                    }
                }
            }
            // Unpinned tracks go (the policy may admit them again).
            for k in old.keys() {
                if !keep.contains_key(k) && !f.policy.contains(key_id(k)) {
                    demote.push(k.clone());
                }
            }
        }
        for k in demote {
            self.send(Job::Demote(k));
        }
        for t in order {
            if hot.contains(&t.key).is_none() {
                self.send(Job::Promote(t));
            }
        }
    }
}
