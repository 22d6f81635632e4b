//! The encode slots: at most `max` encodes run at once; up to `queue`
//! more wait, served round-robin by user so that one user asking for many
//! transcodes at once (a playlist sync) cannot starve another's single
//! stream; beyond that a request is refused at once ([`Busy`]).
//!
//! A slot is a [`Permit`], released when dropped. A waiter that gives up
//! (its client left) is skipped when its turn comes; a slot handed to a
//! waiter that left at that very moment comes back with the dropped
//! permit, so no slot is ever lost.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::state::lock;

/// Every slot is taken and the queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the server is transcoding as much as it can ({running} running, {waiting} waiting); retry in a few seconds")]
pub struct Busy {
    pub running: usize,
    pub waiting: usize,
}

/// The slots; shared as `Arc<Gate>`.
pub struct Gate {
    max: usize,
    queue: usize,
    inner: Mutex<Waiting>,
}

#[derive(Default)]
struct Waiting {
    running: usize,
    /// Waiters per user, and the users with waiters in turn order.
    by_user: HashMap<String, VecDeque<oneshot::Sender<Permit>>>,
    turn: VecDeque<String>,
    count: usize,
}

/// A running encode's slot.
pub struct Permit {
    gate: Arc<Gate>,
    armed: bool,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if self.armed {
            self.gate.release();
        }
    }
}

impl Gate {
    pub fn new(max: usize, queue: usize) -> Arc<Gate> {
        Arc::new(Gate {
            max: max.max(1),
            queue,
            inner: Mutex::new(Waiting::default()),
        })
    }

    /// (running, waiting).
    pub fn load(&self) -> (usize, usize) {
        let w = lock(&self.inner);
        (w.running, w.count)
    }

    /// A slot now if one is free and nobody waits (background work that
    /// must never delay a request).
    pub fn try_acquire(self: &Arc<Self>) -> Option<Permit> {
        let mut w = lock(&self.inner);
        if w.running < self.max && w.count == 0 {
            w.running += 1;
            return Some(Permit {
                gate: self.clone(),
                armed: true,
            });
        }
        None
    }

    /// A slot for `user`: at once when one is free and nobody waits,
    /// else after the waiters before it (round-robin by user); [`Busy`]
    /// when the queue is full.
    pub async fn acquire(self: &Arc<Self>, user: &str) -> Result<Permit, Busy> {
        let rx = {
            let mut w = lock(&self.inner);
            if w.running < self.max && w.count == 0 {
                w.running += 1;
                return Ok(Permit {
                    gate: self.clone(),
                    armed: true,
                });
            }
            if w.count >= self.queue {
                // Waiters whose clients left still count until their turn:
                // drop them first.
                let mut gone = 0;
                for q in w.by_user.values_mut() {
                    let before = q.len();
                    q.retain(|tx| !tx.is_closed());
                    gone += before - q.len();
                }
                w.count -= gone;
                w.by_user.retain(|_, q| !q.is_empty());
                let users: Vec<String> = w.by_user.keys().cloned().collect();
                w.turn.retain(|u| users.contains(u));
            }
            if w.count >= self.queue {
                return Err(Busy {
                    running: w.running,
                    waiting: w.count,
                });
            }
            let (tx, rx) = oneshot::channel();
            let q = w.by_user.entry(user.to_owned()).or_default();
            if q.is_empty() {
                w.turn.push_back(user.to_owned());
            }
            // The entry is there: `or_default` above made it.
            if let Some(q) = w.by_user.get_mut(user) {
                q.push_back(tx);
            }
            w.count += 1;
            rx
        };
        // The sender is only dropped after a permit was sent through it.
        rx.await.map_err(|_| Busy {
            running: self.max,
            waiting: 0,
        })
    }

    /// Hands the slot to the next waiter in turn, or frees it.
    fn release(self: &Arc<Self>) {
        loop {
            let tx = {
                let mut w = lock(&self.inner);
                let Some(user) = w.turn.pop_front() else {
                    w.running -= 1;
                    return;
                };
                let (tx, left) = match w.by_user.get_mut(&user) {
                    Some(q) => (q.pop_front(), q.len()),
                    None => (None, 0),
                };
                if left > 0 {
                    w.turn.push_back(user);
                } else {
                    w.by_user.remove(&user);
                }
                match tx {
                    Some(tx) => {
                        w.count -= 1;
                        tx
                    }
                    None => continue,
                }
            };
            let p = Permit {
                gate: self.clone(),
                armed: true,
            };
            match tx.send(p) {
                Ok(()) => return,
                // That waiter left: the slot goes to the next one.
                Err(mut p) => p.armed = false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn slots_are_capped_and_a_full_queue_refuses() {
        let g = Gate::new(2, 1);
        let a = g.acquire("ann").await.unwrap();
        let _b = g.acquire("ann").await.unwrap();
        let g2 = g.clone();
        let waiter = tokio::spawn(async move { g2.acquire("bob").await.map(|_| ()) });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(g.load(), (2, 1));
        assert_eq!(
            g.acquire("cid").await.err(),
            Some(Busy {
                running: 2,
                waiting: 1
            })
        );
        assert!(
            g.try_acquire().is_none(),
            "background work never jumps the queue"
        );
        drop(a);
        waiter.await.unwrap().unwrap();
        assert_eq!(g.load(), (1, 0));
        assert!(g.try_acquire().is_some());
    }

    #[tokio::test]
    async fn waiters_are_served_round_robin_by_user() {
        let g = Gate::new(1, 10);
        let first = g.acquire("ann").await.unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (n, user) in ["ann", "ann", "ann", "bob"].into_iter().enumerate() {
            let (g, order) = (g.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let p = g.acquire(user).await.unwrap();
                lock(&order).push(format!("{user}{n}"));
                tokio::time::sleep(Duration::from_millis(5)).await;
                drop(p);
            }));
            tokio::time::sleep(Duration::from_millis(5)).await;
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
        let g = Gate::new(1, 10);
        let p = g.acquire("ann").await.unwrap();
        let g2 = g.clone();
        let gone = tokio::spawn(async move {
            let _ = g2.acquire("bob").await;
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        gone.abort();
        let _ = gone.await;
        drop(p);
        assert_eq!(g.load(), (0, 0));
        let _again = g.acquire("cid").await.unwrap();
        assert_eq!(g.load(), (1, 0));
    }
}
