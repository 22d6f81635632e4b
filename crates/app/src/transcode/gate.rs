//! The encode slots, a [`crate::fair::FairQueue`]: at most `max`
//! encodes run at once, one user's at most half of them; up to `queue`
//! more wait, half of them at most one user's, served round-robin
//! by user so that one user asking for many transcodes at once (a
//! playlist sync) cannot starve another's single stream; beyond that a
//! request is refused at once ([`Busy`]), and a request that waited
//! `deadline` without a slot is refused then.
//!
//! A slot is a [`Permit`], released when dropped. A waiter that gives up
//! (its client left, or its deadline passed) leaves the queue; a slot
//! handed to a waiter that left at that very moment comes back with the
//! dropped permit, so no slot is ever lost.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::fair::{Admitted, FairQueue, Limits};
use crate::sync::lock;

/// The user whose slots the preparations of next tracks take
/// ([`Gate::try_acquire`]): they are one more user, within its share.
const PREPARE: &str = "\0prepare";

/// No slot for this request: every slot is taken and the queue (or the
/// user's share of it) is full, or it waited too long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the server is transcoding as much as it can ({running} running, {waiting} waiting); retry in a few seconds")]
pub struct Busy {
    pub running: usize,
    pub waiting: usize,
}

/// The slots; shared as `Arc<Gate>`.
pub struct Gate {
    deadline: Duration,
    inner: Mutex<FairQueue<oneshot::Sender<Permit>>>,
}

/// A running encode's slot.
pub struct Permit {
    gate: Arc<Gate>,
    user: String,
    armed: bool,
}

impl Permit {
    /// Whether a request waits for a slot: only then does a slow client
    /// lose the one it holds ([`super::pace`]).
    pub fn others_wait(&self) -> bool {
        self.gate.load().1 > 0
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if self.armed {
            self.gate.release(&self.user);
        }
    }
}

impl Gate {
    /// `max` slots and `queue` places, whose waiters give up after
    /// `deadline`.
    pub fn new(max: usize, queue: usize, deadline: Duration) -> Arc<Gate> {
        Arc::new(Gate {
            deadline,
            inner: Mutex::new(FairQueue::new(Limits::shared(max, queue))),
        })
    }

    /// (running, waiting).
    pub fn load(&self) -> (usize, usize) {
        lock(&self.inner).load()
    }

    fn permit(self: &Arc<Self>, user: &str) -> Permit {
        Permit {
            gate: self.clone(),
            user: user.to_owned(),
            armed: true,
        }
    }

    fn busy(&self) -> Busy {
        let (running, waiting) = self.load();
        Busy { running, waiting }
    }

    /// A slot now if one is free and nobody waits (background work that
    /// must never delay a request).
    pub fn try_acquire(self: &Arc<Self>) -> Option<Permit> {
        lock(&self.inner)
            .try_start(PREPARE)
            .then(|| self.permit(PREPARE))
    }

    /// A slot for `user`: at once when one is free, the user within its
    /// share and nobody waits, else after the waiters before it
    /// (round-robin by user); [`Busy`] when the queue or the user's share
    /// of it is full, or when no slot came within the deadline.
    pub async fn acquire(self: &Arc<Self>, user: &str) -> Result<Permit, Busy> {
        let (tx, mut rx) = oneshot::channel();
        let id = {
            let mut q = lock(&self.inner);
            // Waiters whose clients left still count until their turn:
            // drop them first.
            q.retain(|tx| !tx.is_closed());
            match q.admit(user, tx) {
                Ok(Admitted::Now(_)) => return Ok(self.permit(user)),
                Ok(Admitted::Queued(id)) => id,
                Err(full) => {
                    return Err(Busy {
                        running: full.running,
                        waiting: full.waiting,
                    })
                }
            }
        };
        match tokio::time::timeout(self.deadline, &mut rx).await {
            Ok(r) => r.map_err(|_| self.busy()),
            Err(_) => {
                let busy = self.busy();
                if lock(&self.inner).cancel(user, id).is_some() {
                    return Err(busy);
                }
                // Its turn came just now: the permit is on its way.
                rx.await.map_err(|_| busy)
            }
        }
    }

    /// Frees `user`'s slot and hands slots to the waiters in turn.
    fn release(self: &Arc<Self>, user: &str) {
        let next = lock(&self.inner).finish(user);
        for (user, tx) in next {
            // A waiter that left at this moment drops the permit, whose
            // release hands the slot on.
            let _ = tx.send(self.permit(&user));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    async fn until(what: &str, mut f: impl FnMut() -> bool) {
        let end = Instant::now() + Duration::from_secs(10);
        while !f() {
            assert!(Instant::now() < end, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    #[tokio::test]
    async fn one_user_holds_half_the_slots_and_half_the_queue_and_another_gets_in() {
        let g = Gate::new(2, 4, Duration::from_secs(30));
        let a = g.acquire("ann").await.unwrap();
        let mut waiters = Vec::new();
        for _ in 0..2 {
            let g2 = g.clone();
            waiters.push(tokio::spawn(
                async move { g2.acquire("ann").await.map(|_| ()) },
            ));
        }
        // ann's share: one of the two slots, two of the four places.
        until("ann's requests to queue", || g.load() == (1, 2)).await;
        assert_eq!(
            g.acquire("ann").await.err(),
            Some(Busy {
                running: 1,
                waiting: 2
            })
        );
        // bob is served at once, by the slot ann may not take.
        let b = tokio::time::timeout(Duration::from_secs(5), g.acquire("bob"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(g.load(), (2, 2));
        assert!(
            g.try_acquire().is_none(),
            "background work never jumps the queue"
        );
        drop(a);
        drop(b);
        for w in waiters {
            w.await.unwrap().unwrap();
        }
        assert_eq!(g.load(), (0, 0));
        assert!(g.try_acquire().is_some());
    }

    #[tokio::test]
    async fn a_request_that_waits_past_the_deadline_is_refused_and_leaves_the_queue() {
        let g = Gate::new(1, 4, Duration::from_millis(50));
        let a = g.acquire("ann").await.unwrap();
        let started = Instant::now();
        assert_eq!(
            g.acquire("bob").await.err(),
            Some(Busy {
                running: 1,
                waiting: 1
            })
        );
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert_eq!(g.load(), (1, 0));
        drop(a);
        let _b = g.acquire("bob").await.unwrap();
    }

    #[tokio::test]
    async fn waiters_are_served_round_robin_by_user() {
        let g = Gate::new(1, 10, Duration::from_secs(30));
        let first = g.acquire("ann").await.unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (n, user) in ["ann", "ann", "ann", "bob"].into_iter().enumerate() {
            let (g2, order) = (g.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let p = g2.acquire(user).await.unwrap();
                lock(&order).push(format!("{user}{n}"));
                tokio::time::sleep(Duration::from_millis(5)).await;
                drop(p);
            }));
            until("the request to queue", || g.load() == (1, n + 1)).await;
        }
        drop(first);
        for t in tasks {
            t.await.unwrap();
        }
        // bob, who asked last, does not wait behind all of ann's.
        assert_eq!(*lock(&order), ["ann0", "bob3", "ann1", "ann2"]);
        assert_eq!(g.load(), (0, 0));
    }

    #[tokio::test]
    async fn a_waiter_that_leaves_loses_no_slot() {
        let g = Gate::new(1, 10, Duration::from_secs(30));
        let p = g.acquire("ann").await.unwrap();
        let g2 = g.clone();
        let gone = tokio::spawn(async move {
            let _ = g2.acquire("bob").await;
        });
        until("bob to queue", || g.load() == (1, 1)).await;
        gone.abort();
        let _ = gone.await;
        drop(p);
        assert_eq!(g.load(), (0, 0));
        let _again = g.acquire("cid").await.unwrap();
        assert_eq!(g.load(), (1, 0));
    }
}
