//! A thread of its own that handles batches sent to it, in order: what
//! the library linker ([`crate::link`]) and the tiers' listen feed
//! ([`crate::hot`]) run on, so that a scrobble is acknowledged without
//! waiting for either. Batches that arrive while one is handled are
//! handled together; [`BatchWorker::flush`] waits for every batch sent so
//! far; [`BatchWorker::stop`] closes the queue, lets the thread handle
//! what was sent and joins it.
//!
//! Making a worker starts nothing ([`BatchWorker::new`]): batches sent
//! before [`BatchWorker::start`] wait in the queue, and the thread handles
//! them first. Whoever owns the application's lifecycle starts it
//! ([`crate::App::start`]) and stops it ([`crate::App::stop_background`]).

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::sync::lock;

type Handler<T> = Box<dyn FnMut(Vec<T>) + Send>;

/// Where a worker is in its life.
enum Phase<T> {
    /// Made, not started: the queue's receiving end and the handler wait.
    Ready(Receiver<Vec<T>>, Handler<T>),
    /// Its thread runs (or could not start: `None`).
    Running(Option<JoinHandle<()>>),
    /// Stopped and joined.
    Done,
}

/// A worker thread over batches of `T`.
pub struct BatchWorker<T> {
    name: String,
    /// Logged when the thread cannot start (batches are then dropped).
    lost: &'static str,
    tx: Mutex<Option<Sender<Vec<T>>>>,
    /// (batches sent, batches done)
    progress: Arc<(Mutex<(u64, u64)>, Condvar)>,
    phase: Mutex<Phase<T>>,
}

impl<T: Send + 'static> BatchWorker<T> {
    /// A worker named `name` that will call `handle` with each batch (or
    /// several joined) once [`BatchWorker::start`]ed. `lost` is logged,
    /// with the reason, when the thread cannot start.
    pub fn new(
        name: &str,
        lost: &'static str,
        handle: impl FnMut(Vec<T>) + Send + 'static,
    ) -> BatchWorker<T> {
        let (tx, rx) = channel::<Vec<T>>();
        BatchWorker {
            name: name.to_owned(),
            lost,
            tx: Mutex::new(Some(tx)),
            progress: Arc::new((Mutex::new((0u64, 0u64)), Condvar::new())),
            phase: Mutex::new(Phase::Ready(rx, Box::new(handle))),
        }
    }

    /// Starts the thread, which first handles what was queued before.
    /// Starting twice, or after [`BatchWorker::stop`], does nothing.
    pub fn start(&self) {
        let mut phase = lock(&self.phase);
        let Phase::Ready(..) = &*phase else {
            return;
        };
        let Phase::Ready(rx, mut handle) = std::mem::replace(&mut *phase, Phase::Running(None))
        else {
            return;
        };
        let p2 = self.progress.clone();
        let spawned = std::thread::Builder::new()
            .name(self.name.clone())
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
        match spawned {
            Ok(t) => *phase = Phase::Running(Some(t)),
            Err(e) => {
                tracing::error!("{}: {e}", self.lost);
                // Nothing will handle a batch: drop them from now on.
                drop(lock(&self.tx).take());
                let (m, cv) = &*self.progress;
                let mut g = lock(m);
                g.1 = g.0;
                cv.notify_all();
            }
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

    /// Waits until every batch sent so far has been handled. Before
    /// [`BatchWorker::start`] nothing handles them: this returns at once.
    pub fn flush(&self) {
        if matches!(*lock(&self.phase), Phase::Ready(..)) {
            return;
        }
        let (m, cv) = &*self.progress;
        let mut g = lock(m);
        while g.1 < g.0 {
            g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Closes the queue: the thread handles what was sent and ends; waits
    /// for it. Later [`BatchWorker::send`]s are dropped; so are batches
    /// of a worker that was never started.
    pub fn stop(&self) {
        drop(lock(&self.tx).take());
        let phase = std::mem::replace(&mut *lock(&self.phase), Phase::Done);
        if let Phase::Running(Some(t)) = phase {
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
        let w = BatchWorker::new("spindle-test-worker", "lost", move |b: Vec<u32>| {
            lock(&s2).extend(b);
        });
        w.start();
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

    #[test]
    fn a_worker_handles_nothing_before_it_starts_and_then_what_was_queued_first() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let w = BatchWorker::new("spindle-test-worker", "lost", move |b: Vec<u32>| {
            lock(&s2).extend(b);
        });
        w.send(vec![1, 2]);
        w.flush();
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(lock(&seen).is_empty(), "no thread before start");
        w.start();
        w.send(vec![3]);
        w.flush();
        assert_eq!(*lock(&seen), vec![1, 2, 3]);
        w.stop();
    }
}
