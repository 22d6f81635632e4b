//! The registry: one task that reads `DATA_DIR/forward` at start and
//! every [`RESCAN`], starts each new link's queue
//! (`spindle_scrobble::ServiceQueue`) and feeder, hands a re-linked
//! credential to the running queue, stops removed links, saves each
//! link's counters for `spindle forward status`, and at shutdown stops
//! and joins them all and saves their counters a last time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use spindle_scrobble::{Journal, Msg, ServiceQueue, ServiceState};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::link::{self, ForwardError, Link, SavedStatus};
use super::{feeder, linking, Live, DRAIN, RESCAN};
use crate::state::AppState;

/// Messages a queue holds before now playing is dropped.
pub const QUEUE_DEPTH: usize = 64;

/// A running link's tasks.
struct Running {
    link: Link,
    stop: watch::Sender<bool>,
    feeder: JoinHandle<()>,
    queue: JoinHandle<()>,
    /// The link's folder and its queue's counters.
    dir: PathBuf,
    state: Arc<Mutex<ServiceState>>,
    saved: SavedStatus,
}

type Key = (String, String);

/// Runs until `stop` turns true (or its sender is gone), then stops every
/// link's tasks and joins them.
pub async fn run(state: AppState, mut stop: watch::Receiver<bool>) {
    let Some(root) = state.forward.root().map(Path::to_owned) else {
        return;
    };
    let mut running: HashMap<Key, Running> = HashMap::new();
    loop {
        if *stop.borrow() {
            break;
        }
        rescan(&state, &root, &mut running).await;
        tokio::select! {
            r = stop.changed() => if r.is_err() { break },
            () = tokio::time::sleep(RESCAN) => {}
        }
    }
    let keys: Vec<Key> = running.keys().cloned().collect();
    let stopping: Vec<(Key, Running)> = keys
        .into_iter()
        .filter_map(|k| running.remove(&k).map(|r| (k, r)))
        .collect();
    for (k, r) in &stopping {
        let _ = r.stop.send(true);
        state.forward.lock().remove(k);
    }
    let mut stopped = HashMap::new();
    for (k, mut r) in stopping {
        let _ = (&mut r.feeder).await;
        let _ = (&mut r.queue).await;
        stopped.insert(k, r);
    }
    // What the queues sent while draining is saved too.
    save_statuses(&mut stopped).await;
}

/// One pass over the folder.
async fn rescan(state: &AppState, root: &Path, running: &mut HashMap<Key, Running>) {
    let r = root.to_owned();
    let found = spindle_app::offload::run(move || {
        link::list(&r)
            .into_iter()
            .map(|(u, n, dir)| {
                let l = link::load(&dir);
                ((u, n), dir, l)
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    for (key, dir, l) in found {
        seen.insert(key.clone());
        let l = match l {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(user = %key.0, link = %key.1, "{e}");
                continue;
            }
        };
        match running.get_mut(&key) {
            Some(r) if r.link == l => {}
            Some(r) => {
                // Linked again: new credentials for the running queue.
                match linking::client(&l, &state.config.forward.outbound) {
                    Ok(c) => {
                        tracing::info!(user = %key.0, link = %key.1, "linked again; sending with the new credential");
                        if let Some(q) = state.forward.lock().get_mut(&key) {
                            q.link = l.clone();
                            let _ = q.tx.try_send(Msg::Flush(Some(c)));
                        }
                        r.link = l;
                    }
                    Err(e) => tracing::warn!(user = %key.0, link = %key.1, "{e}"),
                }
            }
            None => match start(state, &key, dir, l).await {
                Ok(r) => {
                    tracing::info!(user = %key.0, link = %key.1, "forwarding started");
                    running.insert(key, r);
                }
                Err(e) => {
                    tracing::error!(user = %key.0, link = %key.1, "cannot start forwarding: {e}")
                }
            },
        }
    }
    // Unlinked: stop their tasks.
    let gone: Vec<Key> = running
        .keys()
        .filter(|k| !seen.contains(*k))
        .cloned()
        .collect();
    for k in gone {
        if let Some(r) = running.remove(&k) {
            let _ = r.stop.send(true);
            state.forward.lock().remove(&k);
            let _ = r.feeder.await;
            let _ = r.queue.await;
            tracing::info!(user = %k.0, link = %k.1, "unlinked; forwarding stopped");
        }
    }
    save_statuses(running).await;
}

/// Opens the link's journal and starts its queue and feeder.
async fn start(
    state: &AppState,
    key: &Key,
    dir: PathBuf,
    l: Link,
) -> Result<Running, ForwardError> {
    let (st, d) = (state.clone(), dir.clone());
    let opened = spindle_app::offload::run(move || -> Result<_, ForwardError> {
        let (journal, report) = Journal::open(&d)?;
        if report.truncated_bytes > 0 {
            tracing::warn!(dir = %d.display(), "cut {} bytes of an unfinished write off the forwarding journal", report.truncated_bytes);
        }
        feeder::check_cursor(&st.listens, &d)?;
        Ok((journal, link::needs_auth(&d)))
    })
    .await
    .map_err(|e| ForwardError::Io {
        path: dir.clone(),
        source: std::io::Error::other(e.to_string()),
    })??;
    let (journal, refused) = opened;
    let client = if refused {
        None
    } else {
        Some(linking::client(&l, &state.config.forward.outbound)?)
    };
    let d = dir.clone();
    let on_auth = Box::new(move |v: bool| {
        if let Err(e) = link::set_needs_auth(&d, v) {
            tracing::warn!("{e}");
        }
    });
    let label = format!("{}/{}", key.0, key.1);
    let queue = ServiceQueue::new(
        &label,
        client,
        journal,
        state.config.forward.backoff,
        on_auth,
    );
    // The counters go on from what was saved, whether the last run
    // stopped cleanly or not.
    let saved = link::read_status(&dir);
    {
        let mut s = queue.state.lock().unwrap_or_else(|e| e.into_inner());
        s.sent = saved.sent;
        s.now_playing_sent = saved.now_playing_sent;
        s.loves_sent = saved.loves_sent;
        s.loves_skipped = saved.loves_skipped;
    }
    let (journal, qstate) = (queue.journal.clone(), queue.state.clone());
    let (tx, rx) = mpsc::channel(QUEUE_DEPTH);
    let queue_task = tokio::spawn(queue.run(rx, DRAIN));
    let (stop, stopped) = watch::channel(false);
    let (st, user) = (state.clone(), key.0.clone());
    let mbid_of: Arc<feeder::MbidOf> =
        Arc::new(move |a: &str, t: &str| crate::loves::mbid_of(&st, &user, a, t));
    let source = feeder::Source {
        listens: state.listens.clone(),
        mbid_of,
    };
    let feeder_task = tokio::spawn(feeder::run(
        source,
        dir.clone(),
        key.0.clone(),
        journal,
        tx.clone(),
        state.forward.subscribe(),
        stopped,
    ));
    let qstate_kept = qstate.clone();
    state.forward.lock().insert(
        key.clone(),
        Live {
            link: l.clone(),
            tx,
            state: qstate,
        },
    );
    Ok(Running {
        link: l,
        stop,
        feeder: feeder_task,
        queue: queue_task,
        dir,
        state: qstate_kept,
        saved,
    })
}

/// Writes each running link's counters to its `status.json` when they
/// changed (the sent counts go on from what was saved).
async fn save_statuses(running: &mut HashMap<Key, Running>) {
    let mut writes = Vec::new();
    for r in running.values_mut() {
        let st = r.state.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let now = SavedStatus {
            sent: st.sent,
            now_playing_sent: st.now_playing_sent,
            loves_sent: st.loves_sent,
            loves_skipped: st.loves_skipped,
            last_error: st.last_error,
        };
        if now != r.saved {
            r.saved = now.clone();
            writes.push((r.dir.clone(), now));
        }
    }
    if writes.is_empty() {
        return;
    }
    let _ = spindle_app::offload::run(move || {
        for (dir, s) in writes {
            if let Err(e) = link::write_status(&dir, &s) {
                tracing::warn!("{e}");
            }
        }
    })
    .await;
}
