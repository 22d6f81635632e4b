//! Queries from the network: the web UI's search and Subsonic `search3`.
//!
//! A pattern from the network is parsed within
//! [`ParseLimits::NETWORK`](spindle_query::ParseLimits::NETWORK) (length,
//! filters, nesting), then runs on a small pool — at most
//! [`MAX_RUNNING_QUERIES`] at once, [`MAX_QUEUED_QUERIES`] more waiting up
//! to [`MAX_QUEUE_WAIT`], any beyond that refused as busy — within a
//! budget of time ([`Config::query_time`](crate::Config::query_time)) and
//! steps ([`QUERY_STEPS`]). Shutdown raises one flag that every running
//! query checks, so none holds the server past its signal.
//!
//! Callers are on a blocking thread already (the store is synchronous),
//! so the pool is a counter under a mutex, not an async semaphore.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use spindle_query::{parse_limited, ParseError, ParseLimits, SourcePref};
use spindle_store::{Budget, Db, Ids, QueryError};

/// Network queries evaluated at once: 2, so heavy searches take at most
/// two cores while streams, scrobbles and logins keep the rest.
pub const MAX_RUNNING_QUERIES: usize = 2;

/// Network queries waiting for a turn: 8; a search beyond them is
/// answered "busy" at once rather than held on a blocking thread.
pub const MAX_QUEUED_QUERIES: usize = 8;

/// How long a queued query waits for a turn before it is answered
/// "busy": 2 s, about one query's budget.
pub const MAX_QUEUE_WAIT: Duration = Duration::from_secs(2);

/// [`Config::query_time`](crate::Config::query_time)'s default: 2 s of
/// evaluation per query, ten times what a search of 64 filters over a
/// 20,000-track library takes.
pub const DEFAULT_QUERY_TIME: Duration = Duration::from_secs(2);

/// Steps (ids gathered, values tested) one network query may take:
/// 16 million, which bounds the ids it holds to 64 MiB; a search of 64
/// filters over 20,000 tracks needs about 1.5 million.
pub const QUERY_STEPS: u64 = 16_000_000;

/// Why a search from the network has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The pattern does not parse, or is over a parse limit.
    #[error("{0}")]
    Pattern(ParseError),
    /// Every turn is taken and the queue is full (or did not move).
    #[error("the server is busy with other searches; try again in a moment")]
    Busy,
    /// The server is shutting down.
    #[error("the server is shutting down; the search was stopped")]
    ShuttingDown,
    /// The query ran out of budget, or names a bad saved collection.
    #[error("{0}")]
    Query(QueryError),
}

impl SearchError {
    /// True when the client may simply retry later (busy, shutting down),
    /// false when the query itself must change.
    pub fn is_retryable(&self) -> bool {
        matches!(self, SearchError::Busy | SearchError::ShuttingDown)
    }
}

/// The pool and budget of network queries; one per server, in
/// [`AppState`](crate::AppState).
#[derive(Debug)]
pub struct QueryPool {
    slots: Mutex<Slots>,
    freed: Condvar,
    /// Raised at shutdown; every running query's budget watches it.
    shutdown: Arc<AtomicBool>,
    time: Duration,
    steps: u64,
}

#[derive(Debug, Default)]
struct Slots {
    running: usize,
    queued: usize,
}

/// A turn on the pool, given back on drop.
struct Turn<'a>(&'a QueryPool);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.0.slots().running -= 1;
        self.0.freed.notify_one();
    }
}

impl QueryPool {
    /// A pool whose queries may each run `time` and [`QUERY_STEPS`].
    pub fn new(time: Duration) -> QueryPool {
        QueryPool::with_steps(time, QUERY_STEPS)
    }

    pub fn with_steps(time: Duration, steps: u64) -> QueryPool {
        QueryPool {
            slots: Mutex::default(),
            freed: Condvar::new(),
            shutdown: Arc::new(AtomicBool::new(false)),
            time,
            steps,
        }
    }

    fn slots(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stop every running query within milliseconds and refuse new ones
    /// (at shutdown).
    pub fn cancel_all(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
        let _slots = self.slots();
        self.freed.notify_all();
    }

    fn cancelled(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }

    /// The ids `pattern` selects in `db`, within the network's parse
    /// limits, a turn on the pool and the query budget. Call on a
    /// blocking thread: it may wait for a turn and then evaluate.
    pub fn search(&self, db: &Db, pattern: &str) -> Result<Ids, SearchError> {
        self.search_with(db, pattern, &SourcePref::default())
    }

    /// [`QueryPool::search`] under the source preference `pref` (which
    /// source's value of a key a filter sees: for a Subsonic user, their
    /// own rating before another user's; see
    /// [`crate::subsonic::rating::query_pref`]).
    pub fn search_with(
        &self,
        db: &Db,
        pattern: &str,
        pref: &SourcePref,
    ) -> Result<Ids, SearchError> {
        let parsed = parse_limited(pattern, &ParseLimits::NETWORK).map_err(SearchError::Pattern)?;
        let _turn = self.turn()?;
        let budget = Budget::default()
            .with_time(self.time)
            .with_steps(self.steps)
            .with_cancel(self.shutdown.clone());
        let lib = db.read();
        lib.query_ids_with_budget(&parsed.coll, pref, budget)
            .map_err(|e| match e {
                QueryError::Cancelled => SearchError::ShuttingDown,
                e => SearchError::Query(e),
            })
    }

    /// Wait for a turn: at once if one is free, else in the queue for up
    /// to [`MAX_QUEUE_WAIT`]; busy if the queue is full or does not move.
    fn turn(&self) -> Result<Turn<'_>, SearchError> {
        let mut slots = self.slots();
        if self.cancelled() {
            return Err(SearchError::ShuttingDown);
        }
        if slots.running < MAX_RUNNING_QUERIES {
            slots.running += 1;
            return Ok(Turn(self));
        }
        if slots.queued >= MAX_QUEUED_QUERIES {
            return Err(SearchError::Busy);
        }
        slots.queued += 1;
        let until = Instant::now() + MAX_QUEUE_WAIT;
        loop {
            let outcome = if self.cancelled() {
                Some(Err(SearchError::ShuttingDown))
            } else if slots.running < MAX_RUNNING_QUERIES {
                slots.running += 1;
                Some(Ok(()))
            } else if Instant::now() >= until {
                Some(Err(SearchError::Busy))
            } else {
                None
            };
            if let Some(outcome) = outcome {
                slots.queued -= 1;
                return outcome.map(|()| Turn(self));
            }
            let left = until.saturating_duration_since(Instant::now());
            slots = self
                .freed
                .wait_timeout(slots, left)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    #[test]
    fn turns_beyond_the_running_and_queued_ones_are_refused_as_busy() {
        let pool = QueryPool::new(DEFAULT_QUERY_TIME);
        let running: Vec<_> = (0..MAX_RUNNING_QUERIES)
            .map(|_| pool.turn().unwrap())
            .collect();
        pool.slots().queued = MAX_QUEUED_QUERIES;
        let t = Instant::now();
        assert!(matches!(pool.turn(), Err(SearchError::Busy)));
        assert!(t.elapsed() < Duration::from_millis(100));
        pool.slots().queued = 0;
        drop(running);
        assert_eq!(pool.slots().running, 0);
    }

    #[test]
    fn a_queued_query_runs_when_a_turn_is_given_back() {
        let pool = Arc::new(QueryPool::new(DEFAULT_QUERY_TIME));
        let mut running: Vec<_> = (0..MAX_RUNNING_QUERIES)
            .map(|_| pool.turn().unwrap())
            .collect();
        let ready = Arc::new(Barrier::new(2));
        let waiter = {
            let (pool, ready) = (pool.clone(), ready.clone());
            std::thread::spawn(move || {
                ready.wait();
                pool.turn().map(|_| ())
            })
        };
        ready.wait();
        while pool.slots().queued == 0 {
            std::thread::yield_now();
        }
        running.pop();
        assert_eq!(waiter.join().unwrap(), Ok(()));
    }

    #[test]
    fn cancelling_wakes_the_queue_and_refuses_new_queries() {
        let pool = Arc::new(QueryPool::new(DEFAULT_QUERY_TIME));
        let _running: Vec<_> = (0..MAX_RUNNING_QUERIES)
            .map(|_| pool.turn().unwrap())
            .collect();
        let waiter = {
            let pool = pool.clone();
            std::thread::spawn(move || {
                let t = Instant::now();
                (pool.turn().map(|_| ()), t.elapsed())
            })
        };
        while pool.slots().queued == 0 {
            std::thread::yield_now();
        }
        pool.cancel_all();
        let (r, waited) = waiter.join().unwrap();
        assert_eq!(r, Err(SearchError::ShuttingDown));
        assert!(waited < MAX_QUEUE_WAIT / 2, "{waited:?}");
        assert!(matches!(pool.turn(), Err(SearchError::ShuttingDown)));
    }

    #[test]
    fn a_pattern_over_the_network_limits_is_refused_before_it_runs() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let pool = QueryPool::new(DEFAULT_QUERY_TIME);
        let many = vec!["title~a*"; 65].join(" ");
        match pool.search(&db, &many) {
            Err(SearchError::Pattern(e)) => assert!(e.message.contains("at most 64"), "{e}"),
            other => panic!("{other:?}"),
        }
        assert!(pool.search(&db, "title~a*").is_ok());
    }

    #[test]
    fn a_query_over_its_budget_gets_the_budget_error() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let pool = QueryPool::new(Duration::ZERO);
        match pool.search(&db, "title~a*") {
            Err(SearchError::Query(QueryError::OverTime { .. })) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(pool.slots().running, 0, "the turn was given back");
    }
}
