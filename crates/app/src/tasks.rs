//! The one set of background tasks a running Spindle has, and its one
//! stop.
//!
//! Whoever owns the lifecycle (the server's `Server`) makes one
//! [`Tasks`], hands each long-running task a [`Tasks::stopping`] receiver
//! as it spawns it, and at the end calls [`Tasks::stop`]: the signal goes
//! out once and every task is awaited. The core's own tasks
//! ([`App::spawn_tasks`]: the tiers' history replay and pin loop, the
//! import spool) and the adapters' tasks (forwarding, the cluster, …) are
//! members of the same set. The core's threads
//! ([`App::start`]/[`App::stop_background`]) are stopped after it.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::App;

/// A set of tasks that stop together (see the module doc).
pub struct Tasks {
    stop: watch::Sender<bool>,
    running: Vec<JoinHandle<()>>,
}

impl Default for Tasks {
    fn default() -> Self {
        Tasks::new()
    }
}

impl Tasks {
    pub fn new() -> Tasks {
        Tasks {
            stop: watch::channel(false).0,
            running: Vec::new(),
        }
    }

    /// What a task watches to know it should end (true: stop).
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    /// Runs `task` on the runtime as a member of the set.
    pub fn spawn(&mut self, task: impl Future<Output = ()> + Send + 'static) {
        self.running.push(tokio::spawn(task));
    }

    /// Runs `work` on the blocking pool as a member of the set (it runs
    /// to its end: [`Tasks::stop`] waits for it).
    pub fn spawn_blocking(&mut self, work: impl FnOnce() + Send + 'static) {
        self.running.push(tokio::task::spawn_blocking(work));
    }

    /// How many tasks the set holds (ended ones included).
    pub fn len(&self) -> usize {
        self.running.len()
    }

    pub fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// Tells every task to stop and waits for each.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        for t in self.running {
            if let Err(e) = t.await {
                if e.is_panic() {
                    tracing::error!("a background task panicked: {e}");
                }
            }
        }
    }
}

/// What the core's tasks need from the server's settings.
#[derive(Debug, Clone)]
pub struct CoreTasks {
    /// `DATA_DIR`, where the tiers' pins file lies.
    pub data_dir: PathBuf,
    /// How often the pin loop looks at the pins file.
    pub pin_poll: Duration,
    /// Whether this node takes imports (a cluster replica does not: they
    /// reach it through the shipped log).
    pub imports: bool,
    /// What the import jobs' pulls may reach (`[outbound]`).
    pub outbound: spindle_scrobble::outbound::Policy,
}

impl App {
    /// Spawns the core's tasks into `tasks`: with storage tiers, their
    /// background work, the history's replay into the hot tier and the
    /// pin loop; with an import spool (and `cfg.imports`), the import
    /// worker.
    pub fn spawn_tasks(&self, tasks: &mut Tasks, cfg: CoreTasks) {
        if let Some(tiers) = self.tiers().cloned() {
            tiers.start_background();
            let (app, t) = (self.clone(), tiers.clone());
            tasks.spawn_blocking(move || crate::hot::replay_and_prefill(&app, &t));
            tasks.spawn(crate::hot::pin_loop(
                self.db.clone(),
                self.music.clone(),
                tiers,
                spindle_tiers::pins::pins_path(&cfg.data_dir),
                cfg.pin_poll,
                tasks.stopping(),
            ));
        }
        if cfg.imports {
            tasks.spawn(crate::import::worker::run(
                self.clone(),
                cfg.outbound,
                tasks.stopping(),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    #[tokio::test]
    async fn stop_signals_every_task_once_and_waits_for_each() {
        let mut tasks = Tasks::new();
        let ended = Arc::new(AtomicBool::new(false));
        let (e2, mut stop) = (ended.clone(), tasks.stopping());
        tasks.spawn(async move {
            let _ = stop.wait_for(|s| *s).await;
            tokio::time::sleep(Duration::from_millis(20)).await;
            e2.store(true, Ordering::SeqCst);
        });
        let blocking_ran = Arc::new(AtomicBool::new(false));
        let b2 = blocking_ran.clone();
        tasks.spawn_blocking(move || b2.store(true, Ordering::SeqCst));
        assert_eq!(tasks.len(), 2);
        tasks.stop().await;
        assert!(ended.load(Ordering::SeqCst), "stop waited for the task");
        assert!(blocking_ran.load(Ordering::SeqCst));
    }
}
