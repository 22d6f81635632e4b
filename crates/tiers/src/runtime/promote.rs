//! Promotion and demotion: the queue the feed fills (`feed.rs`), worked
//! through one job at a time by a background task (`tasks.rs`), each
//! promotion a copy from the best cold copy into the hot folder paced to
//! `promote_bandwidth`.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::oneshot;

use super::{Tiers, TrackRef};
use crate::hot::{HotError, HotFolder, Pacer};

/// Why a track was not promoted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PromoteError {
    #[error(
        "{key}: no usable cold copy to promote from (every device holding one is down or failing)"
    )]
    NoColdCopy { key: String },
    #[error(transparent)]
    Hot(#[from] HotError),
    #[error("{key}: every cold copy failed: {}", errors.join("; "))]
    AllFailed { key: String, errors: Vec<String> },
}

/// One job of the queue.
pub(super) enum Job {
    Promote(TrackRef),
    Demote(String),
    /// Answers once every job before it is done ([`Tiers::idle`]).
    Barrier(oneshot::Sender<()>),
}

/// Promotion's state: its pacer and counts.
pub(super) struct Promoter {
    pacer: Pacer,
    pub(super) promotions: AtomicU64,
    pub(super) failures: AtomicU64,
    pub(super) demotions: AtomicU64,
}

impl Promoter {
    pub(super) fn new(bandwidth: u64) -> Promoter {
        Promoter {
            pacer: Pacer::new(bandwidth),
            promotions: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            demotions: AtomicU64::new(0),
        }
    }
}

impl Tiers {
    /// Waits until the background queue has done every promotion and
    /// demotion sent before this call (tests, benchmarks). Returns at once
    /// when the background is not running.
    pub async fn idle(&self) {
        let (tx, rx) = oneshot::channel();
        self.send(Job::Barrier(tx));
        let _ = rx.await;
    }

    pub(super) async fn run_job(&self, job: Job) {
        match job {
            Job::Barrier(tx) => {
                let _ = tx.send(());
            }
            Job::Demote(key) => {
                if let Some(h) = &self.hot {
                    if h.evict(&key) {
                        self.promoter.demotions.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            Job::Promote(t) => {
                let Some(hot) = &self.hot else { return };
                if hot.contains(&t.key).is_some() {
                    return;
                }
                if let Err(e) = self.promote(hot, &t).await {
                    self.promoter.failures.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!("tiers: promoting {e}");
                }
            }
        }
    }

    /// Copies `t` from the best cold copy (the next on failure) into the
    /// hot folder.
    async fn promote(&self, hot: &HotFolder, t: &TrackRef) -> Result<(), PromoteError> {
        let mut cands: Vec<usize> = self
            .candidates(t)
            .into_iter()
            .filter(|&i| i != 0 || self.hot.is_none())
            .collect();
        let mut errors = Vec::new();
        while let Some(i) = self.choose(&cands) {
            cands.retain(|&c| c != i);
            let d = &self.devices[i];
            let o = match d.backend.open(&t.key, 0).await {
                Ok(o) => o,
                Err(e) => {
                    errors.push(e.to_string());
                    continue;
                }
            };
            hot.reserve(&t.key, o.len)?;
            match hot.promote(&t.key, o, &self.promoter.pacer).await {
                Ok(()) => {
                    self.promoter.promotions.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        let key = t.key.clone();
        Err(if errors.is_empty() {
            PromoteError::NoColdCopy { key }
        } else {
            PromoteError::AllFailed { key, errors }
        })
    }
}
