//! A bounded pool for Argon2 password checks: a few dedicated threads, a
//! short queue, and one memory buffer per thread reused for every check.
//!
//! Every Argon2id check of the stored hashes needs 19 MiB. Run on tokio's
//! blocking pool, each failed login got its own thread and allocation, so
//! a flood of wrong passwords grew the server by gigabytes that glibc's
//! per-thread arenas kept afterwards. Here at most [`HASH_WORKERS`] checks
//! run at once, at most [`HASH_QUEUE`] wait, and a check beyond that is
//! refused at once ([`Busy`]) for each API to answer in its own words. The
//! memory is the workers' buffers, allocated once and reused, whatever the
//! load.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use argon2::password_hash::PasswordHash;
use argon2::{Algorithm, Argon2, Block, Params, Version};
use tokio::sync::oneshot;

use crate::accounts::constant_eq;

/// Argon2 checks that run at once: 2. Each holds one memory block buffer
/// (19 MiB with the stored hashes' parameters), so the pool's memory is
/// 2 × 19 MiB whatever the load; two threads keep a login at ~one hash
/// time when a few users log in together without starving the rest of
/// the server of its cores.
pub const HASH_WORKERS: usize = 2;

/// Checks that may wait for a worker: 64. Beyond that a login is refused
/// at once with "busy, try later": at ~30 ms per check and two workers the
/// last one waits about a second, which a real login tolerates and a
/// flood cannot stretch.
pub const HASH_QUEUE: usize = 64;

/// The most memory a stored hash may ask for, in KiB: 64 MiB. A hash
/// asking for more (a hand-edited accounts file) fails the check instead
/// of growing a worker's buffer without bound.
pub const MAX_HASH_MEMORY_KIB: u32 = 64 * 1024;

/// The pool is full: the check was not run; try again later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

/// One password check, parsed from a stored PHC string (or a dummy one,
/// for a user name that does not exist, so both cost the same).
pub struct Verify {
    algorithm: Algorithm,
    version: Version,
    params: Params,
    salt: Vec<u8>,
    expected: Vec<u8>,
    password: Vec<u8>,
    /// A dummy check never succeeds.
    dummy: bool,
}

impl Verify {
    /// A check of `password` against a PHC string; `None` when the string
    /// is not an Argon2 hash this pool can check.
    pub fn from_phc(phc: &str, password: &[u8]) -> Option<Verify> {
        let hash = PasswordHash::new(phc).ok()?;
        let algorithm = Algorithm::try_from(hash.algorithm).ok()?;
        let version = match hash.version {
            Some(v) => Version::try_from(v).ok()?,
            None => Version::default(),
        };
        let params = Params::try_from(&hash).ok()?;
        let mut buf = [0u8; 64];
        let salt = hash.salt?.decode_b64(&mut buf).ok()?.to_vec();
        let expected = hash.hash?.as_bytes().to_vec();
        Some(Verify {
            algorithm,
            version,
            params,
            salt,
            expected,
            password: password.to_vec(),
            dummy: false,
        })
    }

    /// A check that does the same work as one against a hash made with
    /// `params` and fails.
    pub fn dummy(params: Params, salt: &[u8], password: &[u8]) -> Verify {
        let out = params.output_len().unwrap_or(Params::DEFAULT_OUTPUT_LEN);
        Verify {
            algorithm: Algorithm::default(),
            version: Version::default(),
            params,
            salt: salt.to_vec(),
            expected: vec![0; out],
            password: password.to_vec(),
            dummy: true,
        }
    }

    /// Runs the check in `memory`, growing it to the size the parameters
    /// need (never beyond [`MAX_HASH_MEMORY_KIB`]).
    fn run(&self, memory: &mut Vec<Block>) -> bool {
        if self.params.m_cost() > MAX_HASH_MEMORY_KIB {
            return false;
        }
        let blocks = self.params.block_count();
        if memory.len() < blocks {
            memory.resize(blocks, Block::default());
        }
        let mut out = vec![0u8; self.expected.len()];
        let Some(mem) = memory.get_mut(..blocks) else {
            return false;
        };
        let ok = Argon2::new(self.algorithm, self.version, self.params.clone())
            .hash_password_into_with_memory(&self.password, &self.salt, &mut out, mem)
            .is_ok();
        ok && constant_eq(&out, &self.expected) && !self.dummy
    }
}

struct Job {
    verify: Verify,
    reply: oneshot::Sender<bool>,
}

/// What the pool has done, for tests and metrics.
#[derive(Debug, Default)]
pub struct HashStats {
    running: AtomicUsize,
    peak: AtomicUsize,
    done: AtomicUsize,
}

impl HashStats {
    /// Checks running now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }
    /// The most checks that ever ran at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
    /// Checks finished (dummy ones included).
    pub fn done(&self) -> usize {
        self.done.load(Ordering::SeqCst)
    }
}

/// The workers' shared end of the queue.
type Queue = Arc<Mutex<Receiver<Job>>>;

/// The pool. Its threads stop when it is dropped.
pub struct HashPool {
    tx: SyncSender<Job>,
    stats: Arc<HashStats>,
    /// The workers' end of the queue and their count, until the first
    /// check starts them.
    idle: Mutex<Option<(Queue, usize)>>,
}

impl HashPool {
    /// A pool of `workers` threads (at least one) with `queue` places to
    /// wait. The threads start with the first check, not here.
    pub fn new(workers: usize, queue: usize) -> HashPool {
        let (tx, rx) = mpsc::sync_channel::<Job>(queue);
        HashPool {
            tx,
            stats: Arc::new(HashStats::default()),
            idle: Mutex::new(Some((Arc::new(Mutex::new(rx)), workers.max(1)))),
        }
    }

    /// Starts the workers, once.
    fn start(&self) {
        let Some((rx, workers)) = self.idle.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return;
        };
        for i in 0..workers {
            let (rx, stats) = (rx.clone(), self.stats.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("spindle-hash-{i}"))
                .spawn(move || worker(&rx, &stats));
            if let Err(e) = spawned {
                // With no worker at all the channel is closed and every
                // check answers Busy: logins fail closed.
                tracing::error!("could not start a password-hashing thread: {e}");
            }
        }
    }

    /// Runs `v` on a worker and waits for the answer; [`Busy`] at once
    /// when the queue is full.
    pub async fn verify(&self, verify: Verify) -> Result<bool, Busy> {
        self.start();
        let (reply, answer) = oneshot::channel();
        match self.tx.try_send(Job { verify, reply }) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => return Err(Busy),
        }
        answer.await.map_err(|_| Busy)
    }

    pub fn stats(&self) -> &HashStats {
        &self.stats
    }
}

fn worker(rx: &Mutex<Receiver<Job>>, stats: &HashStats) {
    // One buffer for the life of the thread: no allocation per check.
    let mut memory: Vec<Block> = Vec::new();
    loop {
        let job = {
            let rx = rx.lock().unwrap_or_else(|e| e.into_inner());
            match rx.recv() {
                Ok(job) => job,
                Err(_) => return,
            }
        };
        // The client went away while it waited: nothing to answer.
        if job.reply.is_closed() {
            continue;
        }
        let now = stats.running.fetch_add(1, Ordering::SeqCst) + 1;
        stats.peak.fetch_max(now, Ordering::SeqCst);
        let ok = job.verify.run(&mut memory);
        stats.running.fetch_sub(1, Ordering::SeqCst);
        stats.done.fetch_add(1, Ordering::SeqCst);
        let _ = job.reply.send(ok);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::password_hash::rand_core::OsRng;
    use argon2::password_hash::{PasswordHasher, SaltString};

    /// Cheap parameters, so the tests do not wait on 19 MiB hashes.
    fn cheap() -> Params {
        Params::new(64, 1, 1, None).unwrap()
    }

    fn phc(password: &str, params: Params) -> String {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
            .hash_password(password.as_bytes(), &salt)
            .unwrap()
            .to_string()
    }

    #[tokio::test]
    async fn the_right_password_passes_and_a_wrong_one_fails() {
        let pool = HashPool::new(1, 4);
        let h = phc("s3cret", cheap());
        let right = Verify::from_phc(&h, b"s3cret").unwrap();
        let wrong = Verify::from_phc(&h, b"s3creT").unwrap();
        assert_eq!(pool.verify(right).await, Ok(true));
        assert_eq!(pool.verify(wrong).await, Ok(false));
    }

    #[tokio::test]
    async fn a_hash_with_default_parameters_checks_as_the_argon2_crate_does() {
        let h = Argon2::default()
            .hash_password(b"pw", &SaltString::generate(&mut OsRng))
            .unwrap()
            .to_string();
        let pool = HashPool::new(1, 4);
        assert_eq!(
            pool.verify(Verify::from_phc(&h, b"pw").unwrap()).await,
            Ok(true)
        );
    }

    #[tokio::test]
    async fn a_dummy_check_runs_and_fails() {
        let pool = HashPool::new(1, 4);
        let v = Verify::dummy(cheap(), b"saltsalt", b"anything");
        assert_eq!(pool.verify(v).await, Ok(false));
        assert_eq!(pool.stats().done(), 1);
    }

    #[test]
    fn a_hash_asking_for_too_much_memory_fails_without_running() {
        let huge = Params::new(MAX_HASH_MEMORY_KIB + 8, 1, 1, None).unwrap();
        let v = Verify::dummy(huge, b"saltsalt", b"x");
        let mut memory = Vec::new();
        assert!(!v.run(&mut memory));
        assert!(memory.is_empty());
    }

    #[test]
    fn what_is_not_an_argon2_hash_is_refused() {
        assert!(Verify::from_phc("not a hash", b"x").is_none());
        assert!(Verify::from_phc("$pbkdf2$i=1$c2FsdHNhbHQ$aGFzaA", b"x").is_none());
    }

    #[tokio::test]
    async fn no_more_than_the_workers_run_at_once_and_the_rest_wait_or_are_refused() {
        let pool = Arc::new(HashPool::new(2, 8));
        let h = phc("pw", Params::new(2048, 2, 1, None).unwrap());
        let mut tasks = Vec::new();
        for _ in 0..30 {
            let (pool, h) = (pool.clone(), h.clone());
            tasks.push(tokio::spawn(async move {
                pool.verify(Verify::from_phc(&h, b"wrong").unwrap()).await
            }));
        }
        let mut busy = 0;
        for t in tasks {
            match t.await.unwrap() {
                Ok(ok) => assert!(!ok),
                Err(Busy) => busy += 1,
            }
        }
        assert!(pool.stats().peak() <= 2, "peak {}", pool.stats().peak());
        // 2 running + 8 waiting at most when the 30 arrive together (a
        // worker may free a place or two while they do).
        assert!(busy >= 10, "only {busy} refused");
        assert_eq!(pool.stats().done() + busy, 30);
    }
}
