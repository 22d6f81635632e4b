//! The async facade over the core's synchronous stores.
//!
//! The library, accounts, listens and user data are synchronous: a write
//! fsyncs, a large read walks an index. An adapter's handler runs on the
//! async executor, where either would stall every other request on that
//! worker thread. Handlers therefore never call a store that may block
//! directly and never spawn a blocking task themselves: they ask the
//! service's facade, [`Service::call`], which runs the closure on the
//! runtime's blocking pool and answers when it is done.
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use std::sync::Arc;
//! use spindle_app::offload::Service;
//! let counter = Service::new(Arc::new(std::sync::atomic::AtomicU32::new(1)));
//! let n = counter.call(|c| c.fetch_add(1, std::sync::atomic::Ordering::SeqCst)).await;
//! assert_eq!(n.unwrap(), 1);
//! # });
//! ```

use std::sync::Arc;

/// The blocking work did not finish: it panicked, or the runtime is
/// shutting down. The caller answers "internal error"; nothing was
/// acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request failed inside the server")
    }
}

impl std::error::Error for Interrupted {}

/// Runs `work` on the blocking pool and waits for its answer.
pub async fn run<R, F>(work: F) -> Result<R, Interrupted>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|_| Interrupted)
}

/// One synchronous service, reachable from async code: a shared handle
/// whose [`Service::call`] runs a closure over the service off the
/// executor.
pub struct Service<S: ?Sized>(Arc<S>);

impl<S: ?Sized> Clone for Service<S> {
    fn clone(&self) -> Self {
        Service(self.0.clone())
    }
}

impl<S: ?Sized + Send + Sync + 'static> Service<S> {
    pub fn new(inner: Arc<S>) -> Self {
        Service(inner)
    }

    /// Runs `work` over the service on the blocking pool.
    pub async fn call<R, F>(&self, work: F) -> Result<R, Interrupted>
    where
        R: Send + 'static,
        F: FnOnce(&S) -> R + Send + 'static,
    {
        let inner = self.0.clone();
        run(move || work(&inner)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_call_answers_what_the_closure_returned() {
        let s = Service::new(Arc::new(vec![1, 2, 3]));
        assert_eq!(s.call(|v| v.iter().sum::<i32>()).await, Ok(6));
    }

    #[tokio::test]
    async fn a_panicking_call_is_interrupted_not_a_panic_of_the_caller() {
        let s = Service::new(Arc::new(()));
        #[allow(clippy::panic, reason = "the panic under test")]
        let out = s.call(|()| -> u8 { panic!("boom") }).await;
        assert_eq!(out, Err(Interrupted));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn blocking_work_leaves_the_executor_free() {
        let s = Service::new(Arc::new(()));
        let slow = s.call(|()| std::thread::sleep(std::time::Duration::from_millis(300)));
        let quick = async { 7 };
        // With the one worker thread blocked, `quick` could not run
        // before `slow` ends; offloaded, it answers first.
        tokio::select! {
            biased;
            _ = slow => unreachable!("the quick future runs first"),
            n = quick => assert_eq!(n, 7),
        }
    }
}
