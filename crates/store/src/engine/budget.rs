//! What one query may cost: a time limit, a step limit and a cancellation
//! flag, checked cooperatively by the evaluation loops.
//!
//! A *step* is one unit of work: one entry id gathered into a set, one
//! value tested (a glob over a long pattern counts more), one posting read
//! from an index. Sets of ids are the engine's memory, four bytes per id,
//! so the step limit also bounds a query's memory. The loops count steps
//! and look at the clock and the flag only every [`CHECK_EVERY`] steps,
//! so an unlimited budget costs one add and one compare per step.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::QueryError;

/// How many steps run between two looks at the clock and the flag: 4096,
/// some tens of microseconds to a few milliseconds of work, so a query
/// stops within milliseconds of its deadline or its cancellation.
pub const CHECK_EVERY: u64 = 4096;

/// The limits of one query. [`Budget::default`] is unlimited (the CLI's).
///
/// ```
/// use std::sync::{atomic::AtomicBool, Arc};
/// use std::time::Duration;
/// let stop = Arc::new(AtomicBool::new(false));
/// let budget = spindle_store::Budget::default()
///     .with_time(Duration::from_secs(2))
///     .with_steps(16_000_000)
///     .with_cancel(stop.clone());
/// assert_eq!(budget.time(), Some(Duration::from_secs(2)));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Budget {
    time: Option<Duration>,
    steps: Option<u64>,
    cancel: Option<Arc<AtomicBool>>,
}

impl Budget {
    /// Stop the query once it has run this long (from the start of its
    /// evaluation).
    pub fn with_time(mut self, limit: Duration) -> Self {
        self.time = Some(limit);
        self
    }

    /// Stop the query after this many steps.
    pub fn with_steps(mut self, limit: u64) -> Self {
        self.steps = Some(limit);
        self
    }

    /// Stop the query soon after `flag` becomes true.
    pub fn with_cancel(mut self, flag: Arc<AtomicBool>) -> Self {
        self.cancel = Some(flag);
        self
    }

    pub fn time(&self) -> Option<Duration> {
        self.time
    }

    pub fn steps(&self) -> Option<u64> {
        self.steps
    }
}

/// Why a metered query stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Time,
    Steps,
    Cancelled,
}

/// A running query's count against its [`Budget`].
///
/// Loops call [`Meter::tick`] and stop (or skip the rest cheaply) when it
/// says false; every evaluation step then calls [`Meter::check`], which
/// turns a stop into the error. Once stopped the meter stays stopped, so
/// no partial result gets out.
pub(crate) struct Meter {
    used: Cell<u64>,
    /// `used` at which the slow check runs next; `u64::MAX` when there is
    /// nothing to check, 0 once stopped.
    next_check: Cell<u64>,
    stopped: Cell<Option<Stop>>,
    start: Instant,
    deadline: Option<Instant>,
    budget: Budget,
}

impl Meter {
    pub fn new(budget: Budget) -> Meter {
        let start = Instant::now();
        let deadline = budget.time.map(|t| start + t);
        let limited = budget.time.is_some() || budget.steps.is_some() || budget.cancel.is_some();
        let meter = Meter {
            used: Cell::new(0),
            next_check: Cell::new(if limited { 0 } else { u64::MAX }),
            stopped: Cell::new(None),
            start,
            deadline,
            budget,
        };
        // A query cancelled before it starts does nothing.
        meter.slow_check();
        meter
    }

    pub fn unlimited() -> Meter {
        Meter::new(Budget::default())
    }

    /// Count `n` steps. False once the query must stop.
    #[inline]
    pub fn tick(&self, n: u64) -> bool {
        let used = self.used.get().saturating_add(n);
        self.used.set(used);
        used < self.next_check.get() || self.slow_check()
    }

    /// False once the query must stop (counts nothing).
    #[inline]
    pub fn ok(&self) -> bool {
        self.tick(0)
    }

    #[cold]
    fn slow_check(&self) -> bool {
        if self.stopped.get().is_some() {
            return false;
        }
        let used = self.used.get();
        let stop = if self.budget.steps.is_some_and(|max| used > max) {
            Some(Stop::Steps)
        } else if self
            .budget
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
        {
            Some(Stop::Cancelled)
        } else if self.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Stop::Time)
        } else {
            None
        };
        if stop.is_some() {
            self.stopped.set(stop);
            self.next_check.set(0);
            return false;
        }
        let mut next = used.saturating_add(CHECK_EVERY);
        if let Some(max) = self.budget.steps {
            // Land exactly past the limit, not up to CHECK_EVERY beyond.
            next = next.min(max.saturating_add(1));
        }
        self.next_check.set(next);
        true
    }

    /// The error for a stopped query.
    pub fn check(&self) -> Result<(), QueryError> {
        if self.ok() {
            return Ok(());
        }
        Err(match self.stopped.get() {
            Some(Stop::Time) => QueryError::OverTime {
                limit: self.budget.time.unwrap_or_default(),
                ran: self.start.elapsed(),
            },
            Some(Stop::Steps) => QueryError::OverSteps {
                limit: self.budget.steps.unwrap_or_default(),
            },
            Some(Stop::Cancelled) | None => QueryError::Cancelled,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unlimited_meter_never_stops() {
        let m = Meter::unlimited();
        for _ in 0..100_000 {
            assert!(m.tick(1_000));
        }
        assert_eq!(m.check(), Ok(()));
    }

    #[test]
    fn a_step_limit_stops_exactly_past_it() {
        let m = Meter::new(Budget::default().with_steps(10_000));
        assert!(m.tick(10_000));
        assert!(!m.tick(1));
        assert!(!m.ok(), "a stopped meter stays stopped");
        assert_eq!(m.check(), Err(QueryError::OverSteps { limit: 10_000 }));
    }

    #[test]
    fn a_raised_flag_stops_within_check_every_steps() {
        let flag = Arc::new(AtomicBool::new(false));
        let m = Meter::new(Budget::default().with_cancel(flag.clone()));
        assert!(m.tick(1));
        flag.store(true, Ordering::Relaxed);
        let mut steps = 0;
        while m.tick(1) {
            steps += 1;
        }
        assert!(steps <= CHECK_EVERY, "{steps}");
        assert_eq!(m.check(), Err(QueryError::Cancelled));
    }

    #[test]
    fn a_query_cancelled_before_it_starts_does_nothing() {
        let flag = Arc::new(AtomicBool::new(true));
        let m = Meter::new(Budget::default().with_cancel(flag));
        assert!(!m.ok());
    }

    #[test]
    fn a_deadline_stops_the_query() {
        // The clock starts before the meter's, so it sees at least as much.
        let t = Instant::now();
        let m = Meter::new(Budget::default().with_time(Duration::from_millis(20)));
        while m.tick(1) {}
        assert!(t.elapsed() >= Duration::from_millis(20));
        // Generous: a loaded CI machine can stall a thread for a while.
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        assert!(matches!(m.check(), Err(QueryError::OverTime { .. })));
    }
}
