//! The time the core reads: seconds since the UNIX epoch behind the
//! [`Clock`] trait, so that tests of time rules (expiry, the scrobble
//! window, now playing) run without waiting.

use std::sync::atomic::{AtomicI64, Ordering};

/// Seconds since the UNIX epoch, injectable so tests of time rules run
/// without waiting.
pub trait Clock: Send + Sync {
    fn now(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64)
    }
}

impl SystemClock {
    /// The current time, for callers without the trait in scope.
    pub fn now_secs(&self) -> i64 {
        Clock::now(self)
    }
}

/// A clock tests set by hand.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(now: i64) -> Self {
        ManualClock(AtomicI64::new(now))
    }
    pub fn set(&self, now: i64) {
        self.0.store(now, Ordering::SeqCst);
    }
    pub fn advance(&self, secs: i64) {
        self.0.fetch_add(secs, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}
