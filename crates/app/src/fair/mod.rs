//! Fair shares of an expensive resource between users: a [`FairQueue`]
//! decides who runs next on a fixed number of slots, and [`pool::Pool`]
//! is a set of worker threads of its own fed by one (cover resizes).
//! The transcoder's encode slots ([`crate::transcode::gate`]) use the
//! same queue.
//!
//! The rules, the same for every pool:
//!
//! - at most `slots` jobs run at once, and one user holds at most
//!   [`Limits::user_slots`] of them ([`USER_SLOTS_PERCENT`] of the slots,
//!   at least one), so another user always finds a slot soon;
//! - up to `queue` more wait, at most [`Limits::user_queue`] of them one
//!   user's ([`USER_QUEUE_PERCENT`] of the queue, at least one); beyond
//!   either a request is refused at once ([`Full`]);
//! - waiting jobs are started round-robin by user: one job of each user
//!   with waiters in turn, so a user who queued a hundred jobs does not
//!   delay another's single one by more than a turn;
//! - a waiter gives up after the pool's deadline (its caller does so,
//!   and takes its job back with [`FairQueue::cancel`]), so a request
//!   never waits forever.
//!
//! docs/security.md lists the pools and their figures.

pub mod pool;

use std::collections::{HashMap, VecDeque};

/// The share of a pool's slots one user may hold: 50 %, at least one.
pub const USER_SLOTS_PERCENT: usize = 50;
/// The share of a pool's queue one user's jobs may take: 50 %, at least
/// one: a user syncing a playlist can queue many, and the rest of the
/// queue stays open to the others, whose jobs come in turn.
pub const USER_QUEUE_PERCENT: usize = 50;

/// The sizes of a fair pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Jobs running at once.
    pub slots: usize,
    /// Jobs waiting, all users together.
    pub queue: usize,
    /// Jobs one user may run at once.
    pub user_slots: usize,
    /// Jobs of one user that may wait.
    pub user_queue: usize,
}

impl Limits {
    /// `slots` and `queue` with the per-user shares of
    /// [`USER_SLOTS_PERCENT`] and [`USER_QUEUE_PERCENT`].
    pub fn shared(slots: usize, queue: usize) -> Limits {
        let slots = slots.max(1);
        Limits {
            slots,
            queue,
            user_slots: (slots * USER_SLOTS_PERCENT / 100).max(1),
            user_queue: (queue * USER_QUEUE_PERCENT / 100).max(1).min(queue),
        }
    }
}

/// A job was refused: the queue, or the user's share of it, is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full {
    pub running: usize,
    pub waiting: usize,
    /// The user's own share was full (others may still get in).
    pub user: bool,
}

/// What [`FairQueue::admit`] did with a job.
#[derive(Debug)]
pub enum Admitted<T> {
    /// It holds a slot now (the caller starts it).
    Now(T),
    /// It waits; the number names it for [`FairQueue::cancel`].
    Queued(u64),
}

/// Per-user queues over a fixed number of slots (no locking of its own:
/// its owner keeps it under a mutex).
#[derive(Debug)]
pub struct FairQueue<T> {
    limits: Limits,
    running: usize,
    running_by: HashMap<String, usize>,
    waiting: HashMap<String, VecDeque<(u64, T)>>,
    /// The users with waiting jobs, in turn order.
    turn: VecDeque<String>,
    count: usize,
    next_id: u64,
}

impl<T> FairQueue<T> {
    pub fn new(limits: Limits) -> FairQueue<T> {
        FairQueue {
            limits,
            running: 0,
            running_by: HashMap::new(),
            waiting: HashMap::new(),
            turn: VecDeque::new(),
            count: 0,
            next_id: 0,
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// (running, waiting).
    pub fn load(&self) -> (usize, usize) {
        (self.running, self.count)
    }

    /// Jobs `user` runs now.
    pub fn running_of(&self, user: &str) -> usize {
        self.running_by.get(user).copied().unwrap_or(0)
    }

    fn may_run(&self, user: &str) -> bool {
        self.running < self.limits.slots && self.running_of(user) < self.limits.user_slots
    }

    fn start(&mut self, user: &str) {
        self.running += 1;
        *self.running_by.entry(user.to_owned()).or_default() += 1;
    }

    /// A slot for `user` now if one is free, the user is within its share
    /// and nobody waits (background work that must never delay a
    /// request); the caller later calls [`FairQueue::finish`].
    pub fn try_start(&mut self, user: &str) -> bool {
        if self.count == 0 && self.may_run(user) {
            self.start(user);
            return true;
        }
        false
    }

    /// Takes `job` of `user`: a slot at once when one is free and the
    /// user within its share (every waiter that could run already does),
    /// else a place in the user's queue, else [`Full`].
    pub fn admit(&mut self, user: &str, job: T) -> Result<Admitted<T>, Full> {
        if self.may_run(user) && !self.waiting.contains_key(user) {
            self.start(user);
            return Ok(Admitted::Now(job));
        }
        let mine = self.waiting.get(user).map_or(0, VecDeque::len);
        if self.count >= self.limits.queue || mine >= self.limits.user_queue {
            return Err(Full {
                running: self.running,
                waiting: self.count,
                user: self.count < self.limits.queue,
            });
        }
        let id = self.next_id;
        self.next_id += 1;
        let q = self.waiting.entry(user.to_owned()).or_default();
        if q.is_empty() {
            self.turn.push_back(user.to_owned());
        }
        q.push_back((id, job));
        self.count += 1;
        Ok(Admitted::Queued(id))
    }

    /// The jobs that may start now, each with its user, in turn order;
    /// each holds a slot until [`FairQueue::finish`].
    pub fn dispatch(&mut self) -> Vec<(String, T)> {
        let mut out = Vec::new();
        while self.running < self.limits.slots {
            // The first user in turn who is within its share.
            let Some(at) = self
                .turn
                .iter()
                .position(|u| self.running_of(u) < self.limits.user_slots)
            else {
                break;
            };
            let Some(user) = self.turn.remove(at) else {
                break;
            };
            let Some(q) = self.waiting.get_mut(&user) else {
                continue;
            };
            let job = q.pop_front();
            if q.is_empty() {
                self.waiting.remove(&user);
            } else {
                self.turn.push_back(user.clone());
            }
            if let Some((_, job)) = job {
                self.count -= 1;
                self.start(&user);
                out.push((user, job));
            }
        }
        out
    }

    /// `user`'s job ended: its slot is free. Returns the jobs that start
    /// in its place ([`FairQueue::dispatch`]).
    pub fn finish(&mut self, user: &str) -> Vec<(String, T)> {
        self.running = self.running.saturating_sub(1);
        if let Some(n) = self.running_by.get_mut(user) {
            *n -= 1;
            if *n == 0 {
                self.running_by.remove(user);
            }
        }
        self.dispatch()
    }

    /// Takes back the waiting job `id` of `user` (its caller gave up);
    /// `None` when it already started (or never was).
    pub fn cancel(&mut self, user: &str, id: u64) -> Option<T> {
        let q = self.waiting.get_mut(user)?;
        let at = q.iter().position(|(i, _)| *i == id)?;
        let (_, job) = q.remove(at)?;
        self.count -= 1;
        if q.is_empty() {
            self.waiting.remove(user);
            self.turn.retain(|u| u != user);
        }
        Some(job)
    }

    /// Drops the waiting jobs `keep` says no to (waiters that left).
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        for q in self.waiting.values_mut() {
            let before = q.len();
            q.retain(|(_, j)| keep(j));
            self.count -= before - q.len();
        }
        self.waiting.retain(|_, q| !q.is_empty());
        let waiting = &self.waiting;
        self.turn.retain(|u| waiting.contains_key(u));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(v: Vec<(String, u32)>) -> Vec<String> {
        v.into_iter().map(|(u, j)| format!("{u}{j}")).collect()
    }

    #[test]
    fn shares_are_a_fraction_of_the_pool_and_never_zero() {
        assert_eq!(
            Limits::shared(2, 64),
            Limits {
                slots: 2,
                queue: 64,
                user_slots: 1,
                user_queue: 32
            }
        );
        assert_eq!(Limits::shared(1, 2).user_slots, 1);
        assert_eq!(Limits::shared(1, 1).user_queue, 1);
        assert_eq!(Limits::shared(8, 0).user_queue, 0);
        assert_eq!(Limits::shared(0, 4).slots, 1);
    }

    #[test]
    fn one_user_holds_at_most_its_share_of_slots_and_queue() {
        let mut q = FairQueue::new(Limits::shared(2, 4));
        assert!(matches!(q.admit("ann", 0), Ok(Admitted::Now(0))));
        // ann's share is one slot: the free one waits for another user.
        assert!(matches!(q.admit("ann", 1), Ok(Admitted::Queued(_))));
        assert!(matches!(q.admit("ann", 2), Ok(Admitted::Queued(_))));
        let full = q.admit("ann", 3).unwrap_err();
        assert_eq!(
            full,
            Full {
                running: 1,
                waiting: 2,
                user: true
            }
        );
        assert!(matches!(q.admit("bob", 9), Ok(Admitted::Now(9))));
        assert_eq!(q.load(), (2, 2));
        // ann's slot ends: her next job takes it.
        assert_eq!(started(q.finish("ann")), ["ann1"]);
    }

    #[test]
    fn waiting_jobs_start_round_robin_by_user() {
        let mut q = FairQueue::new(Limits {
            slots: 1,
            queue: 10,
            user_slots: 1,
            user_queue: 10,
        });
        assert!(matches!(q.admit("ann", 0), Ok(Admitted::Now(_))));
        for (u, j) in [("ann", 1), ("ann", 2), ("ann", 3), ("bob", 4), ("cid", 5)] {
            assert!(matches!(q.admit(u, j), Ok(Admitted::Queued(_))));
        }
        let mut order = Vec::new();
        let mut user = "ann".to_owned();
        for _ in 0..5 {
            let next = q.finish(&user);
            assert_eq!(next.len(), 1);
            user = next[0].0.clone();
            order.extend(started(next));
        }
        assert_eq!(order, ["ann1", "bob4", "cid5", "ann2", "ann3"]);
        assert_eq!(q.finish(&user).len(), 0);
        assert_eq!(q.load(), (0, 0));
    }

    #[test]
    fn a_cancelled_job_leaves_the_queue_and_a_started_one_cannot_be() {
        let mut q = FairQueue::new(Limits::shared(1, 4));
        assert!(matches!(q.admit("ann", 0), Ok(Admitted::Now(_))));
        let Ok(Admitted::Queued(id)) = q.admit("bob", 1) else {
            panic!("bob waits")
        };
        assert_eq!(q.cancel("bob", id), Some(1));
        assert_eq!(q.load(), (1, 0));
        let Ok(Admitted::Queued(id)) = q.admit("bob", 2) else {
            panic!("bob waits")
        };
        assert_eq!(started(q.finish("ann")), ["bob2"]);
        assert_eq!(q.cancel("bob", id), None);
    }

    #[test]
    fn background_work_never_jumps_the_queue() {
        let mut q = FairQueue::new(Limits::shared(2, 4));
        assert!(q.try_start("prep"));
        assert!(!q.try_start("prep"), "within its own share");
        assert!(matches!(q.admit("ann", 0), Ok(Admitted::Now(_))));
        assert!(matches!(q.admit("ann", 1), Ok(Admitted::Queued(_))));
        q.finish("prep");
        assert!(
            !q.try_start("prep"),
            "ann's job waits and ann is at her share"
        );
        q.retain(|_| false);
        assert_eq!(q.load(), (1, 0));
        assert!(q.try_start("prep"));
    }
}
