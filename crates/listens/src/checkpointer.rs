//! Checkpoints written in the background: a thread the caller starts
//! with [`Listens::start_checkpoints`] (opening starts none) and stops
//! with [`Checkpointer::stop`], which writes a last checkpoint if the log
//! grew since the one before. The thread looks at the log's end once a
//! second (an atomic read) and writes when the log has grown by
//! [`CheckpointPolicy::every_bytes`] since the last checkpoint, or has
//! grown at all and [`CheckpointPolicy::every`] has passed since it.
//! So after an open that replayed a long log (no checkpoint, or one it
//! could not use), a new one is written within a second.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::store::Listens;

/// When the background thread writes a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointPolicy {
    /// Once the log has grown by this many bytes since the last
    /// checkpoint (about 110 bytes a listen). Default 64 MiB.
    pub every_bytes: u64,
    /// Once this long has passed since the last checkpoint and the log
    /// has grown at all. Default 10 minutes.
    pub every: Duration,
    /// How often the thread looks at the log's end. Default 1 second.
    pub tick: Duration,
}

impl Default for CheckpointPolicy {
    fn default() -> Self {
        CheckpointPolicy {
            every_bytes: 64 << 20,
            every: Duration::from_secs(600),
            tick: Duration::from_secs(1),
        }
    }
}

/// The background checkpoint thread; stopped (with a last checkpoint) by
/// [`Checkpointer::stop`] or when dropped.
pub struct Checkpointer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    stop: Mutex<bool>,
    cv: Condvar,
    /// The last write's failure, if it failed.
    error: Mutex<Option<String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Listens {
    /// Starts the thread that writes checkpoints by `policy`. It holds
    /// the store until stopped.
    pub fn start_checkpoints(
        self: &Arc<Self>,
        policy: CheckpointPolicy,
    ) -> std::io::Result<Checkpointer> {
        let shared = Arc::new(Shared {
            stop: Mutex::new(false),
            cv: Condvar::new(),
            error: Mutex::new(None),
        });
        let (store, sh) = (Arc::clone(self), Arc::clone(&shared));
        let thread = std::thread::Builder::new()
            .name("listens-checkpoint".into())
            .spawn(move || run(&store, &sh, policy))?;
        Ok(Checkpointer {
            shared,
            thread: Some(thread),
        })
    }
}

fn run(store: &Listens, sh: &Shared, policy: CheckpointPolicy) {
    let mut last = Instant::now();
    let write = |sh: &Shared| {
        let res = store.checkpoint();
        *lock(&sh.error) = res.err().map(|e| e.to_string());
    };
    let mut stop = lock(&sh.stop);
    loop {
        if *stop {
            drop(stop);
            if store.committed_end() > store.checkpointed_end() {
                write(sh);
            }
            return;
        }
        let (end, saved) = (store.committed_end(), store.checkpointed_end());
        let grown = end.saturating_sub(saved);
        if grown >= policy.every_bytes || (grown > 0 && last.elapsed() >= policy.every) {
            drop(stop);
            write(sh);
            last = Instant::now();
            stop = lock(&sh.stop);
            continue;
        }
        stop = sh
            .cv
            .wait_timeout(stop, policy.tick)
            .map_or_else(|e| e.into_inner().0, |r| r.0);
    }
}

impl Checkpointer {
    /// Why the last checkpoint could not be written, if it could not.
    pub fn last_error(&self) -> Option<String> {
        lock(&self.shared.error).clone()
    }

    /// Stops the thread, after a last checkpoint if the log grew since
    /// the one before; returns that write's failure, if it failed.
    pub fn stop(mut self) -> Option<String> {
        self.halt();
        self.last_error()
    }

    fn halt(&mut self) {
        *lock(&self.shared.stop) = true;
        self.shared.cv.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.halt();
    }
}
