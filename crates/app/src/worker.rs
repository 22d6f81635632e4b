//! A thread of its own that handles batches sent to it, in order: what
//! the library linker ([`crate::link`]) and the tiers' listen feed
//! ([`crate::hot`]) run on, so that a scrobble is acknowledged without
//! waiting for either. Batches that arrive while one is handled are
//! handled together; [`BatchWorker::flush`] waits for every batch sent so
//! far; [`BatchWorker::stop`] closes the queue, lets the thread handle
//! what was sent and joins it.

use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::sync::lock;

/// A worker thread over batches of `T`.
pub struct BatchWorker<T> {
    tx: Mutex<Option<Sender<Vec<T>>>>,
    /// (batches sent, batches done)
    progress: Arc<(Mutex<(u64, u64)>, Condvar)>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl<T: Send + 'static> BatchWorker<T> {
    /// Starts the thread `name`, which calls `handle` with each batch (or
    /// several joined). When the thread cannot start, logs `lost` with the
    /// reason; batches sent to it are then dropped.
    pub fn start(
        name: &str,
        lost: &'static str,
        mut handle: impl FnMut(Vec<T>) + Send + 'static,
    ) -> BatchWorker<T> {
        let (tx, rx) = channel::<Vec<T>>();
        let progress = Arc::new((Mutex::new((0u64, 0u64)), Condvar::new()));
        let p2 = progress.clone();
        let spawned = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                while let Ok(mut batch) = rx.recv() {
                    let mut n = 1;
                    while let Ok(more) = rx.try_recv() {
                        batch.extend(more);
                        n += 1;
                    }
                    handle(batch);
                    let (m, cv) = &*p2;
                    lock(m).1 += n;
                    cv.notify_all();
                }
            });
        let thread = match spawned {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::error!("{lost}: {e}");
                None
            }
        };
        BatchWorker {
            tx: Mutex::new(Some(tx)),
            progress,
            thread: Mutex::new(thread),
        }
    }

    /// Queues `batch` (nothing when it is empty or the worker stopped).
    pub fn send(&self, batch: Vec<T>) {
        if batch.is_empty() {
            return;
        }
        let tx = lock(&self.tx);
        if tx.as_ref().is_some_and(|tx| tx.send(batch).is_ok()) {
            lock(&self.progress.0).0 += 1;
        }
    }

    /// Waits until every batch sent so far has been handled.
    pub fn flush(&self) {
        let (m, cv) = &*self.progress;
        let mut g = lock(m);
        while g.1 < g.0 {
            g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Closes the queue: the thread handles what was sent and ends; waits
    /// for it. Later [`BatchWorker::send`]s are dropped.
    pub fn stop(&self) {
        drop(lock(&self.tx).take());
        if let Some(t) = lock(&self.thread).take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_handled_in_order_flushed_and_stopped() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let w = BatchWorker::start("spindle-test-worker", "lost", move |b: Vec<u32>| {
            lock(&s2).extend(b);
        });
        for i in 0..100 {
            w.send(vec![i, i + 1000]);
        }
        w.send(Vec::new());
        w.flush();
        let want: Vec<u32> = (0..100).flat_map(|i| [i, i + 1000]).collect();
        assert_eq!(*lock(&seen), want);
        w.stop();
        // Stopped: later batches are dropped and flush does not wait.
        w.send(vec![7]);
        w.flush();
        assert_eq!(lock(&seen).len(), 200);
    }
}
