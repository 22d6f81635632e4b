//! The background tasks and their one stop signal.
//!
//! [`Tiers::start_background`] spawns, on the current tokio runtime:
//!
//! - the promotion queue (`promote.rs`), one job at a time;
//! - load sampling (diskstats, or a [`BusyClock`]) every
//!   `sample_every`, and the status file every two seconds;
//! - when re-replication is on, the device probes and the
//!   re-replication passes (`replicate.rs`).
//!
//! [`Tiers::shutdown`] signals all of them and waits until each has
//! returned. A task cut short mid-copy leaves nothing half-done that
//! counts: a promotion releases its reservation and removes its temporary
//! files; a re-replication copy is recorded in the replica index only once
//! whole (its temporary file is overwritten by the next pass). Each task
//! holds the tiers only weakly between steps, so dropping the last
//! [`Arc<Tiers>`] stops them too (the stop signal's sender goes with it).

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tracing::Instrument;

use super::promote::Job;
use super::{lock, Tiers};
use crate::device::BusyClock;

/// The running background tasks.
pub(super) struct Tasks {
    /// How often load is sampled.
    sample_every: Duration,
    running: Mutex<Option<Running>>,
}

struct Running {
    /// The promotion queue.
    jobs: mpsc::UnboundedSender<Job>,
    /// Dropped to stop every task: their receivers' `changed()` returns.
    stop: watch::Sender<()>,
    handles: Vec<JoinHandle<()>>,
}

impl Default for Tasks {
    fn default() -> Tasks {
        Tasks {
            sample_every: Duration::from_secs(1),
            running: Mutex::new(None),
        }
    }
}

/// Resolves when the stop signal is given (the sender dropped).
async fn stopped(stop: &mut watch::Receiver<()>) {
    while stop.changed().await.is_ok() {}
}

impl Tiers {
    /// How often load is sampled (diskstats, `%util`); one second unless
    /// a benchmark wants a finer view. Call before [`Tiers::start_background`].
    pub fn set_sample_every(&mut self, d: Duration) {
        self.tasks.sample_every = d.max(Duration::from_millis(10));
    }

    /// Takes device `name`'s `%util` from `clock` (a simulated device that
    /// counts its own busy time, as the device-choice benchmark's do)
    /// instead of `/proc/diskstats`. Returns whether there is such a
    /// device. Call before [`Tiers::start_background`].
    pub fn sample_busy_from(&mut self, name: &str, clock: Arc<dyn BusyClock>) -> bool {
        match self.devices.iter_mut().find(|d| d.name == name) {
            Some(d) => {
                d.busy = Some(clock);
                true
            }
            None => false,
        }
    }

    /// Queues a promotion or demotion; dropped when the background is not
    /// running.
    pub(super) fn send(&self, job: Job) {
        if let Some(r) = lock(&self.tasks.running).as_ref() {
            let _ = r.jobs.send(job);
        }
    }

    /// Starts the background work on the current tokio runtime: the
    /// promotion queue (first demoting hot copies found at start that the
    /// policy does not keep), load sampling every second with the status
    /// file every two, and re-replication when it is on. Stop it with
    /// [`Tiers::shutdown`]. Called again, it replaces the running tasks
    /// (the old ones stop).
    pub fn start_background(self: &Arc<Self>) {
        let (jobs, rx) = mpsc::unbounded_channel::<Job>();
        for k in self.stale_hot_copies() {
            let _ = jobs.send(Job::Demote(k));
        }
        let (stop, stopping) = watch::channel(());
        let mut handles = Vec::new();
        if let Some(every) = self.repair.every {
            let me = Arc::downgrade(self);
            handles.push(tokio::spawn(
                repair_loop(me, every, stopping.clone())
                    .instrument(tracing::info_span!("replicate")),
            ));
        }
        let me = Arc::downgrade(self);
        handles.push(tokio::spawn(
            job_loop(me, rx, stopping.clone()).instrument(tracing::info_span!("promote")),
        ));
        let me = Arc::downgrade(self);
        let every = self.tasks.sample_every;
        handles.push(tokio::spawn(sample_loop(me, every, stopping)));
        let old = lock(&self.tasks.running).replace(Running {
            jobs,
            stop,
            handles,
        });
        drop(old);
    }

    /// Stops the background work started by [`Tiers::start_background`]:
    /// signals every task (a promotion or re-replication copy in flight
    /// is cut short, see the module doc) and waits until each has
    /// returned. Queued promotions and demotions are dropped; waiters in
    /// [`Tiers::idle`] return. Reads keep working; the policy keeps
    /// learning but moves nothing. Returns at once when nothing runs;
    /// calling it twice is harmless.
    pub async fn shutdown(&self) {
        let Some(Running {
            jobs,
            stop,
            handles,
        }) = lock(&self.tasks.running).take()
        else {
            return;
        };
        drop(jobs);
        drop(stop);
        for h in handles {
            if let Err(e) = h.await {
                tracing::error!("tiers: a background task failed: {e}");
            }
        }
    }
}

/// Works through the promotion queue, one job at a time.
async fn job_loop(
    me: Weak<Tiers>,
    mut rx: mpsc::UnboundedReceiver<Job>,
    mut stop: watch::Receiver<()>,
) {
    loop {
        let job = tokio::select! {
            biased;
            () = stopped(&mut stop) => break,
            job = rx.recv() => match job {
                Some(job) => job,
                None => break,
            },
        };
        let Some(t) = me.upgrade() else { break };
        tokio::select! {
            biased;
            () = stopped(&mut stop) => break,
            () = t.run_job(job) => {}
        }
    }
}

/// Samples each device's load every `period` (its [`BusyClock`], else
/// `/proc/diskstats`) and writes the status file every two seconds.
async fn sample_loop(me: Weak<Tiers>, period: Duration, mut stop: watch::Receiver<()>) {
    let mut tick = tokio::time::interval(period);
    let status_every = (2000 / period.as_millis().max(1) as u64).max(1);
    let mut n = 0u64;
    loop {
        tokio::select! {
            biased;
            () = stopped(&mut stop) => break,
            _ = tick.tick() => {}
        }
        let Some(t) = me.upgrade() else { break };
        let text = tokio::fs::read_to_string("/proc/diskstats")
            .await
            .unwrap_or_default();
        let now = Instant::now();
        for d in &t.devices {
            match &d.busy {
                Some(clock) => d.stats.sample_busy(clock.busy(), now),
                None => d.stats.sample_disk(&text, now),
            }
        }
        n += 1;
        if n.is_multiple_of(status_every) {
            let _ = t.write_status().await;
        }
    }
}

/// Probes the devices every `every` and runs a re-replication pass at
/// start, when the set of live devices changes, and every
/// `2 × retry_after_secs` (at least 10 s) while tracks stay below.
async fn repair_loop(me: Weak<Tiers>, every: Duration, mut stop: watch::Receiver<()>) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut seen: Option<Vec<bool>> = None;
    let mut again: Option<Instant> = None;
    loop {
        tokio::select! {
            biased;
            () = stopped(&mut stop) => break,
            _ = tick.tick() => {}
        }
        let Some(t) = me.upgrade() else { break };
        let step = async {
            t.probe_devices().await;
            let live = t.live_devices();
            let due = seen.as_ref() != Some(&live) || again.is_some_and(|a| Instant::now() >= a);
            if !due {
                return None;
            }
            Some((live, t.rereplicate().await))
        };
        let done = tokio::select! {
            biased;
            () = stopped(&mut stop) => None,
            done = step => Some(done),
        };
        let Some(step) = done else {
            // Cut short mid-pass.
            t.repair
                .running
                .store(false, std::sync::atomic::Ordering::Relaxed);
            break;
        };
        if let Some((live, left)) = step {
            seen = Some(live);
            let wait = Duration::from_secs((2 * t.cfg.retry_after_secs).max(10));
            again = (left > 0).then(|| Instant::now() + wait);
        }
    }
}
