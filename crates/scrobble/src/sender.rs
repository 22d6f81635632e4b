//! One task per service: appends each scrobble to the service's journal
//! before anything is sent, sends the journal oldest first in batches of
//! 50, and retries with exponential backoff while the service is down.
//!
//! - Network errors, Last.fm 8/11/16/29, HTTP 429 and 5xx: retry the same
//!   batch after 2 s, 4 s, … up to 15 min (a flush retries at once);
//!   [`crate::client::classify`] is the one table.
//! - Last.fm 4/9/10/26 or HTTP 401/403: the service needs `spindle scrobble auth`;
//!   the queue is kept and nothing is sent until a flush after new
//!   credentials.
//! - Error 6 on a batch: halve the batch (Last.fm has refused large
//!   batches by byte size); a single refused scrobble is logged and dropped.
//! - Per-scrobble ignored codes are logged; code 5 (daily limit) stops
//!   the queue at that scrobble for an hour.
//! - Now playing is sent once and never retried (Last.fm's advice).
//! - A love or unlove in the journal (the server's forwarding puts them
//!   there, [`Scrobble::love`]) goes alone, in its place in the order,
//!   with the same retries; one the service refuses is dropped, and one
//!   it cannot take (ListenBrainz without a recording MBID) is skipped
//!   and counted, not an error.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::client::{Client, Outcome, SendError};
use crate::journal::{Journal, JournalError};
use crate::track::Scrobble;

/// Largest batch (Last.fm's limit).
pub const BATCH: usize = 50;

/// A message to a service's task.
#[derive(Debug)]
pub enum Msg {
    NowPlaying(Scrobble),
    Scrobble(Scrobble),
    /// Something was appended to the shared journal: send it.
    Wake,
    /// Retry now; with a client, use it from now on (new credentials).
    Flush(Option<Client>),
    Love(Scrobble, bool, oneshot::Sender<Result<(), SendError>>),
}

/// What `spindle scrobble status` shows of a service.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServiceState {
    pub name: String,
    pub pending: usize,
    pub needs_auth: bool,
    pub last_error: Option<String>,
    /// Seconds until the next retry, when waiting (as of the last change:
    /// [`ServiceState::retry_in_now`] counts down).
    pub retry_in: Option<f64>,
    /// When the next retry is due, when waiting.
    #[serde(skip)]
    pub retry_at: Option<Instant>,
    pub sent: u64,
    pub now_playing_sent: u64,
    /// Loves and unloves the service acknowledged.
    #[serde(default)]
    pub loves_sent: u64,
    /// Loves and unloves the service cannot take (ListenBrainz: the track
    /// has no recording MBID), passed over.
    #[serde(default)]
    pub loves_skipped: u64,
}

impl ServiceState {
    /// Seconds from now until the next retry, when waiting.
    pub fn retry_in_now(&self) -> Option<f64> {
        self.retry_at
            .map(|t| t.saturating_duration_since(Instant::now()).as_secs_f64())
            .or(self.retry_in)
    }
}

/// Timing knobs (tests shorten them).
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    pub first: Duration,
    pub max: Duration,
    /// The wait after ignored code 5 (daily limit).
    pub daily_limit: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            first: Duration::from_secs(2),
            max: Duration::from_secs(15 * 60),
            daily_limit: Duration::from_secs(3600),
        }
    }
}

/// One service's queue and its sending state.
pub struct ServiceQueue {
    pub name: String,
    /// `None` until the service has credentials.
    pub client: Option<Client>,
    pub journal: Arc<Mutex<Journal>>,
    pub backoff: Backoff,
    pub state: Arc<Mutex<ServiceState>>,
    /// Called with `true`/`false` when the service starts/stops needing auth.
    pub on_auth_change: Box<dyn Fn(bool) + Send>,
    /// Notified whenever [`ServiceQueue::state`] changes (the daemon
    /// then rewrites its status file).
    pub changed: Arc<tokio::sync::Notify>,
    batch: usize,
    delay: Duration,
    retry_at: Option<Instant>,
}

impl ServiceQueue {
    pub fn new(
        name: &str,
        client: Option<Client>,
        journal: Journal,
        backoff: Backoff,
        on_auth_change: Box<dyn Fn(bool) + Send>,
    ) -> ServiceQueue {
        let needs_auth = client.is_none();
        let state = ServiceState {
            name: name.to_owned(),
            pending: journal.len(),
            needs_auth,
            ..ServiceState::default()
        };
        ServiceQueue {
            name: name.to_owned(),
            client,
            journal: Arc::new(Mutex::new(journal)),
            backoff,
            state: Arc::new(Mutex::new(state)),
            on_auth_change,
            changed: Arc::new(tokio::sync::Notify::new()),
            batch: BATCH,
            delay: backoff.first,
            retry_at: None,
        }
    }

    fn st(&self) -> std::sync::MutexGuard<'_, ServiceState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn j(&self) -> std::sync::MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends to the journal from another task (synced before this
    /// returns); follow with [`Msg::Wake`].
    pub fn append_shared(journal: &Mutex<Journal>, s: &Scrobble) -> Result<(), JournalError> {
        journal.lock().unwrap_or_else(|e| e.into_inner()).append(s)
    }

    fn needs_auth(&self) -> bool {
        self.st().needs_auth
    }

    fn set_needs_auth(&mut self, v: bool) {
        let changed = {
            let mut s = self.st();
            let c = s.needs_auth != v;
            s.needs_auth = v;
            c
        };
        if changed {
            (self.on_auth_change)(v);
        }
    }

    fn record(&mut self, s: &Scrobble) -> Result<(), JournalError> {
        let n = {
            let mut j = self.j();
            j.append(s)?;
            j.len()
        };
        self.st().pending = n;
        Ok(())
    }

    /// Sends one batch; returns whether more may be sent right away.
    async fn send_batch(&mut self) -> bool {
        let Some(client) = self.client.clone() else {
            self.set_needs_auth(true);
            return false;
        };
        let batch = self.j().batch(self.batch);
        let Some(first) = batch.first() else {
            return false;
        };
        if let Some(love) = first.love {
            let s = first.clone();
            return self.send_love(&client, &s, love).await;
        }
        // Plays up to the next love: that goes on its own.
        let batch: Vec<Scrobble> = batch.into_iter().take_while(|s| s.love.is_none()).collect();
        let result = client.scrobble(&batch).await;
        let mut acked = 0;
        let mut more = true;
        match result {
            Ok(outcomes) => {
                acked = batch.len();
                for (i, (s, o)) in batch.iter().zip(&outcomes).enumerate() {
                    if let Outcome::Ignored { code, message } = o {
                        if *code == 5 {
                            tracing::warn!(service = %self.name, "daily scrobble limit reached (ignored code 5); retrying in an hour");
                            acked = i;
                            self.retry_at = Some(Instant::now() + self.backoff.daily_limit);
                            more = false;
                            break;
                        }
                        tracing::warn!(
                            service = %self.name,
                            "ignored by the service (code {code}: {message}): {} - {} @{}",
                            s.artist,
                            s.track,
                            s.timestamp
                        );
                    }
                }
                self.delay = self.backoff.first;
                self.batch = BATCH;
                let mut st = self.st();
                st.last_error = None;
                st.sent += acked as u64;
            }
            Err(e) if e.is_temporary() || matches!(e, SendError::Auth { .. }) => {
                self.failed(&e);
                more = false;
            }
            Err(e) => {
                if batch.len() > 1 {
                    self.batch = (batch.len() / 2).max(1);
                    tracing::warn!(service = %self.name, "{e}; trying batches of {}", self.batch);
                } else {
                    let s = &batch[0];
                    tracing::error!(
                        service = %self.name,
                        "{e}; dropping {} - {} @{}",
                        s.artist,
                        s.track,
                        s.timestamp
                    );
                    acked = 1;
                }
                self.st().last_error = Some(e.to_string());
            }
        }
        self.acked(acked, more)
    }

    /// A failure worth a retry (after the backoff) or needing new
    /// credentials: the queue is kept.
    fn failed(&mut self, e: &SendError) {
        if e.is_temporary() {
            tracing::warn!(service = %self.name, "{e}; retrying in {:?}", self.delay);
            self.retry_at = Some(Instant::now() + self.delay);
            self.delay = (self.delay * 2).min(self.backoff.max);
        } else {
            tracing::error!(
                service = %self.name,
                "{e}; keeping {} scrobbles queued",
                self.j().len()
            );
            self.set_needs_auth(true);
        }
        self.st().last_error = Some(e.to_string());
    }

    /// Marks the oldest `n` journal entries as done; returns `more`,
    /// unless that failed.
    fn acked(&mut self, n: usize, mut more: bool) -> bool {
        if n > 0 {
            let r = self.j().ack(n);
            if let Err(e) = r {
                tracing::warn!(service = %self.name, "cannot mark scrobbles as sent: {e}");
                self.retry_at = Some(Instant::now() + self.delay);
                more = false;
            }
        }
        let n = self.j().len();
        self.st().pending = n;
        self.changed.notify_one();
        more
    }

    /// Sends the love (or unlove) at the head of the journal; returns
    /// whether more may be sent right away.
    async fn send_love(&mut self, client: &Client, s: &Scrobble, love: bool) -> bool {
        if !client.takes_love(s) {
            tracing::info!(
                service = %self.name,
                "not sent: the service loves recordings by MusicBrainz id, and {} - {} has none",
                s.artist,
                s.track
            );
            self.st().loves_skipped += 1;
            return self.acked(1, true);
        }
        match client.love(s, love).await {
            Ok(()) => {
                self.delay = self.backoff.first;
                let mut st = self.st();
                st.last_error = None;
                st.loves_sent += 1;
                drop(st);
                self.acked(1, true)
            }
            Err(e) if e.is_temporary() || matches!(e, SendError::Auth { .. }) => {
                self.failed(&e);
                self.acked(0, false)
            }
            Err(e) => {
                tracing::error!(
                    service = %self.name,
                    "{e}; dropping the love of {} - {}",
                    s.artist,
                    s.track
                );
                self.st().last_error = Some(e.to_string());
                self.acked(1, true)
            }
        }
    }

    /// Runs until the channel closes, then gives queued scrobbles
    /// `drain` to go out.
    pub async fn run(mut self, mut rx: mpsc::Receiver<Msg>, drain: Duration) {
        loop {
            let can_send = !self.needs_auth()
                && !self.j().is_empty()
                && self.retry_at.is_none_or(|t| t <= Instant::now());
            if can_send {
                self.retry_at = None;
                let more = self.send_batch().await;
                if more {
                    // Take messages that arrived meanwhile, then go on.
                    while let Ok(m) = rx.try_recv() {
                        self.handle(m).await;
                    }
                    continue;
                }
            }
            {
                let retry_at = self.retry_at;
                let mut st = self.st();
                st.retry_at = retry_at;
                st.retry_in =
                    retry_at.map(|t| t.saturating_duration_since(Instant::now()).as_secs_f64());
            }
            let wait = match self.retry_at {
                Some(t) if !self.needs_auth() && !self.j().is_empty() => Some(t),
                _ => None,
            };
            let msg = match wait {
                Some(t) => tokio::select! {
                    m = rx.recv() => m,
                    () = tokio::time::sleep_until(t) => continue,
                },
                None => rx.recv().await,
            };
            match msg {
                Some(m) => self.handle(m).await,
                None => break,
            }
        }
        // Shutting down: one last try within `drain`.
        let end = Instant::now() + drain;
        while !self.needs_auth()
            && !self.j().is_empty()
            && self.retry_at.is_none_or(|t| t <= end)
            && Instant::now() < end
        {
            if let Some(t) = self.retry_at {
                tokio::time::sleep_until(t).await;
            }
            self.retry_at = None;
            if tokio::time::timeout_at(end, self.send_batch())
                .await
                .is_err()
            {
                break;
            }
        }
    }

    async fn handle(&mut self, m: Msg) {
        self.handle_msg(m).await;
        self.changed.notify_one();
    }

    async fn handle_msg(&mut self, m: Msg) {
        match m {
            Msg::Scrobble(s) => {
                if let Err(e) = self.record(&s) {
                    tracing::error!(
                        service = %self.name,
                        "cannot write the journal, scrobble LOST: {e}"
                    );
                }
            }
            Msg::Wake => {
                let n = self.j().len();
                self.st().pending = n;
            }
            Msg::NowPlaying(s) => {
                if self.needs_auth() {
                    return;
                }
                if let Some(c) = &self.client {
                    match c.now_playing(&s).await {
                        Ok(()) => self.st().now_playing_sent += 1,
                        Err(e @ SendError::Auth { .. }) => {
                            tracing::warn!(service = %self.name, "now playing: {e}");
                            self.set_needs_auth(true);
                        }
                        Err(e) => tracing::warn!(service = %self.name, "now playing not sent: {e}"),
                    }
                }
            }
            Msg::Flush(client) => {
                if let Some(c) = client {
                    self.client = Some(c);
                    self.set_needs_auth(false);
                }
                self.retry_at = None;
                self.delay = self.backoff.first;
            }
            Msg::Love(s, love, reply) => {
                let r = match &self.client {
                    Some(c) => c.love(&s, love).await,
                    None => Err(SendError::Auth {
                        code: 0,
                        message: "not authorised yet".into(),
                    }),
                };
                let _ = reply.send(r);
            }
        }
    }
}
