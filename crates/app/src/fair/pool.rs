//! A bounded pool of worker threads of its own, fed fairly by user
//! ([`super::FairQueue`]): what cover resizes run on, so that a flood of
//! them never takes tokio's shared blocking threads that nearly every
//! request needs (a library read, a file open, a stat).
//!
//! [`Pool::run`] queues a closure for a user and awaits its result. It is
//! refused at once when the queue or the user's share of it is full, and
//! given up after the pool's deadline when it is still waiting then
//! ([`Refused`]): the job is taken out of the queue and never runs. A
//! caller that goes away (its client left) takes its waiting job out the
//! same way. A job that started is awaited to its end.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use super::{Admitted, FairQueue, Limits};
use crate::sync::lock;

/// Why a job did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refused {
    #[error("the queue is full ({running} running, {waiting} waiting)")]
    Full { running: usize, waiting: usize },
    #[error("this user already has its share of the queue ({waiting} waiting)")]
    UserFull { waiting: usize },
    #[error("it waited {0:?} for a worker")]
    Waited(Duration),
    #[error("the job failed or the pool stopped")]
    Lost,
}

type Job = Box<dyn FnOnce() + Send>;

struct State {
    fair: FairQueue<Job>,
    /// Jobs holding a slot, not yet picked up by a worker.
    ready: Vec<(String, Job)>,
    stopping: bool,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

/// The pool; dropping it stops its threads once the jobs they run end
/// (waiting jobs are dropped, their callers answered [`Refused::Lost`]).
pub struct Pool {
    shared: Arc<Shared>,
    deadline: Duration,
    /// The threads' name and count, until the first job starts them.
    idle: Mutex<Option<(String, usize)>>,
}

impl Pool {
    /// `limits.slots` threads named `name`, whose waiters give up after
    /// `deadline`. The threads start with the first job, not here. A
    /// thread that cannot start is logged; the pool then runs on the
    /// others (with none, every job is refused as lost).
    pub fn new(name: &str, limits: Limits, deadline: Duration) -> Pool {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                fair: FairQueue::new(limits),
                ready: Vec::new(),
                stopping: false,
            }),
            wake: Condvar::new(),
        });
        Pool {
            shared,
            deadline,
            idle: Mutex::new(Some((name.to_owned(), limits.slots))),
        }
    }

    /// Starts the threads, once.
    fn start(&self) {
        let Some((name, slots)) = lock(&self.idle).take() else {
            return;
        };
        for n in 0..slots {
            let s = self.shared.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("{name}-{n}"))
                .spawn(move || work(&s));
            if let Err(e) = spawned {
                tracing::error!("cannot start the {name} worker {n}: {e}");
            }
        }
    }

    /// (running, waiting).
    pub fn load(&self) -> (usize, usize) {
        lock(&self.shared.state).fair.load()
    }

    /// Runs `f` on a worker in `user`'s turn and returns its result.
    pub async fn run<R: Send + 'static>(
        &self,
        user: &str,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> Result<R, Refused> {
        self.start();
        let (tx, mut rx) = oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = tx.send(f());
        });
        let id = {
            let mut st = lock(&self.shared.state);
            match st.fair.admit(user, job) {
                Ok(Admitted::Now(job)) => {
                    st.ready.push((user.to_owned(), job));
                    self.shared.wake.notify_one();
                    None
                }
                Ok(Admitted::Queued(id)) => Some(id),
                Err(full) if full.user => {
                    return Err(Refused::UserFull {
                        waiting: full.waiting,
                    })
                }
                Err(full) => {
                    return Err(Refused::Full {
                        running: full.running,
                        waiting: full.waiting,
                    })
                }
            }
        };
        let Some(id) = id else {
            return rx.await.map_err(|_| Refused::Lost);
        };
        let mut waiting = Waiting {
            shared: &self.shared,
            user,
            id: Some(id),
        };
        match tokio::time::timeout(self.deadline, &mut rx).await {
            Ok(r) => {
                waiting.id = None;
                r.map_err(|_| Refused::Lost)
            }
            Err(_) => {
                if waiting.cancel() {
                    return Err(Refused::Waited(self.deadline));
                }
                // It started just now: it is as good as done.
                rx.await.map_err(|_| Refused::Lost)
            }
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let mut st = lock(&self.shared.state);
        st.stopping = true;
        st.fair.retain(|_| false);
        self.shared.wake.notify_all();
    }
}

/// A caller's place in the queue: taken out when the caller gives up or
/// goes away before its job started.
struct Waiting<'a> {
    shared: &'a Shared,
    user: &'a str,
    id: Option<u64>,
}

impl Waiting<'_> {
    /// True when the job was still waiting (it will never run).
    fn cancel(&mut self) -> bool {
        let Some(id) = self.id.take() else {
            return false;
        };
        let job = lock(&self.shared.state).fair.cancel(self.user, id);
        job.is_some()
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.cancel();
    }
}

fn work(s: &Shared) {
    loop {
        let (user, job) = {
            let mut st = lock(&s.state);
            loop {
                if let Some(j) = st.ready.pop() {
                    break j;
                }
                if st.stopping {
                    return;
                }
                st = s.wake.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        };
        // A job that panics loses its own answer (its caller sees Lost),
        // never the worker.
        if std::panic::catch_unwind(AssertUnwindSafe(job)).is_err() {
            tracing::error!("a pool job panicked");
        }
        let mut st = lock(&s.state);
        let next = st.fair.finish(&user);
        let n = next.len();
        st.ready.extend(next);
        for _ in 0..n {
            s.wake.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    /// A latch a job blocks on until the test opens it.
    #[derive(Clone, Default)]
    struct Latch(Arc<(Mutex<bool>, Condvar)>);

    impl Latch {
        fn wait(&self) {
            let (m, cv) = &*self.0;
            let mut open = lock(m);
            while !*open {
                open = cv.wait(open).unwrap();
            }
        }
        fn open(&self) {
            *lock(&self.0 .0) = true;
            self.0 .1.notify_all();
        }
    }

    async fn until(what: &str, mut f: impl FnMut() -> bool) {
        let end = Instant::now() + Duration::from_secs(10);
        while !f() {
            assert!(Instant::now() < end, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    #[tokio::test]
    async fn jobs_run_on_the_pools_own_threads() {
        let pool = Pool::new("test-pool", Limits::shared(2, 4), Duration::from_secs(5));
        let name = pool
            .run("ann", || std::thread::current().name().map(str::to_owned))
            .await
            .unwrap();
        assert!(name.unwrap().starts_with("test-pool-"));
    }

    #[tokio::test]
    async fn a_flooding_user_is_refused_beyond_its_share_while_another_runs_at_once() {
        let pool = Arc::new(Pool::new(
            "test-pool",
            Limits::shared(2, 4),
            Duration::from_secs(30),
        ));
        let latch = Latch::default();
        let mut ann = Vec::new();
        for _ in 0..3 {
            let (p, l) = (pool.clone(), latch.clone());
            ann.push(tokio::spawn(
                async move { p.run("ann", move || l.wait()).await },
            ));
        }
        // ann: one running (her share of 2 slots), two waiting (her share of 4).
        until("ann's jobs to queue", || pool.load() == (1, 2)).await;
        let l = latch.clone();
        let refused = pool.run("ann", move || l.wait()).await;
        assert_eq!(refused, Err(Refused::UserFull { waiting: 2 }));
        // bob gets the other slot at once although ann has jobs waiting.
        let got = tokio::time::timeout(Duration::from_secs(10), pool.run("bob", || 7))
            .await
            .unwrap();
        assert_eq!(got, Ok(7));
        latch.open();
        for a in ann {
            a.await.unwrap().unwrap();
        }
        until("the pool to drain", || pool.load() == (0, 0)).await;
    }

    #[tokio::test]
    async fn a_job_that_waits_past_the_deadline_is_refused_and_never_runs() {
        let pool = Arc::new(Pool::new(
            "test-pool",
            Limits::shared(1, 4),
            Duration::from_millis(50),
        ));
        let latch = Latch::default();
        let (p, l) = (pool.clone(), latch.clone());
        let first = tokio::spawn(async move { p.run("ann", move || l.wait()).await });
        until("ann's job to run", || pool.load() == (1, 0)).await;
        let ran = Arc::new(AtomicUsize::new(0));
        let r2 = ran.clone();
        let late = pool
            .run("bob", move || r2.fetch_add(1, Ordering::SeqCst))
            .await;
        assert_eq!(late, Err(Refused::Waited(Duration::from_millis(50))));
        assert_eq!(pool.load(), (1, 0), "bob's job left the queue");
        latch.open();
        first.await.unwrap().unwrap();
        assert_eq!(pool.run("bob", || 1).await, Ok(1));
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_caller_that_leaves_takes_its_job_out_of_the_queue() {
        let pool = Arc::new(Pool::new(
            "test-pool",
            Limits::shared(1, 4),
            Duration::from_secs(30),
        ));
        let latch = Latch::default();
        let (p, l) = (pool.clone(), latch.clone());
        let first = tokio::spawn(async move { p.run("ann", move || l.wait()).await });
        until("ann's job to run", || pool.load() == (1, 0)).await;
        let p = pool.clone();
        let gone = tokio::spawn(async move { p.run("bob", || ()).await });
        until("bob's job to queue", || pool.load() == (1, 1)).await;
        gone.abort();
        let _ = gone.await;
        assert_eq!(pool.load(), (1, 0));
        latch.open();
        first.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_panicking_job_loses_its_answer_not_the_worker() {
        let pool = Pool::new("test-pool", Limits::shared(1, 4), Duration::from_secs(5));
        let r: Result<(), _> = pool.run("ann", || panic!("boom")).await;
        assert_eq!(r, Err(Refused::Lost));
        assert_eq!(pool.run("ann", || 2).await, Ok(2));
    }
}
