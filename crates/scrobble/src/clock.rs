//! The injected clock: every time-dependent rule takes a [`Now`], so the
//! 30-second and 4-minute rules are tested without waiting.

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// One reading of the clock: monotonic time (for measuring play time)
/// and wall time (for scrobble timestamps).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Now {
    /// Monotonic time since some fixed origin.
    pub mono: Duration,
    /// Wall time: seconds since the UNIX epoch, UTC (fractional).
    pub unix: f64,
}

impl Now {
    /// `self` moved on by `secs` seconds of both clocks.
    pub fn plus(self, secs: f64) -> Now {
        Now {
            mono: self.mono + Duration::from_secs_f64(secs.max(0.0)),
            unix: self.unix + secs.max(0.0),
        }
    }
}

/// A source of [`Now`].
pub trait Clock: Send + Sync {
    fn now(&self) -> Now;
}

/// The system clocks.
#[derive(Debug)]
pub struct SystemClock {
    origin: Instant,
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock {
            origin: Instant::now(),
        }
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Now {
        Now {
            mono: self.origin.elapsed(),
            unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
        }
    }
}

/// A clock tests move by hand.
#[derive(Debug)]
pub struct ManualClock(Mutex<Now>);

impl ManualClock {
    pub fn new(unix: f64) -> Self {
        ManualClock(Mutex::new(Now {
            mono: Duration::ZERO,
            unix,
        }))
    }
    pub fn advance(&self, secs: f64) {
        let mut n = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.plus(secs);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Now {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
