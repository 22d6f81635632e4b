//! Several Spindle servers on one S3 bucket (docs/cluster.md): the
//! primary ships its library log, listens log, accounts and user data
//! ([`ship`]); replicas start from a snapshot and apply what is shipped
//! ([`replica`]); writes that reach a replica go to the primary
//! ([`route`]); the newest generation object names the primary, and
//! `spindle cluster promote` writes the next one ([`generation`]).
//!
//! [`Cluster`] is the node's handle, one per [`crate::AppState`]: its role,
//! the primary's address, and the counters that tie a write to the
//! shipping round that holds it.

pub mod bucket;
pub mod config;
pub mod generation;
pub mod objects;
pub mod replica;
pub mod route;
pub mod ship;
pub mod sign;
pub mod status;

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use config::{ClusterConfig, ShipMode};

/// What this node does in the cluster now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Not in a cluster: today's single server.
    Off,
    /// Takes writes and ships them.
    Primary,
    /// Applies what the primary ships; forwards writes.
    Replica,
    /// Was primary; a newer generation names another node. Refuses
    /// writes until `spindle cluster rejoin`.
    Deposed,
}

impl Role {
    fn code(self) -> u8 {
        match self {
            Role::Off => 0,
            Role::Primary => 1,
            Role::Replica => 2,
            Role::Deposed => 3,
        }
    }
    fn from_code(c: u8) -> Role {
        match c {
            1 => Role::Primary,
            2 => Role::Replica,
            3 => Role::Deposed,
            _ => Role::Off,
        }
    }
    /// The name in status output and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Role::Off => "off",
            Role::Primary => "primary",
            Role::Replica => "replica",
            Role::Deposed => "deposed",
        }
    }
}

/// The node's cluster handle (shared through [`crate::AppState`]).
pub struct Cluster {
    config: Option<ClusterConfig>,
    role: AtomicU8,
    generation: AtomicU32,
    primary_url: Mutex<Option<String>>,
    /// Primary: shipping rounds started and finished (idle rounds too);
    /// a write committed before round N started is in the bucket once
    /// `rounds_done` ≥ N.
    rounds_started: AtomicU64,
    rounds_done: tokio::sync::watch::Sender<u64>,
    /// Wakes the shipper early (a `sync` write waits).
    pub(crate) ship_now: tokio::sync::Notify,
    /// Primary: the last manifest written; replica: the last applied.
    seq: tokio::sync::watch::Sender<u64>,
    /// Replica: the primary's last round whose writes it has applied
    /// (from manifests and from the heartbeat of idle rounds).
    applied_round: tokio::sync::watch::Sender<u64>,
    /// Replica: how far behind the primary, milliseconds (-1: unknown).
    lag_ms: AtomicU64,
    /// Primary: seconds since the heartbeat was written, as last seen.
    pub(crate) heartbeat_age_ms: AtomicU64,
    pub(crate) shipped_bytes: AtomicU64,
    pub(crate) ship_errors: AtomicU64,
    pub(crate) apply_errors: AtomicU64,
    /// For forwarding writes to the primary.
    http: reqwest::Client,
    /// Signs what a replica forwards and checks it on the primary
    /// ([`sign`]); derived from the accounts' `secret.key`.
    signing_key: std::sync::OnceLock<[u8; 32]>,
}

/// The longest a forwarded write or a `sync` write waits for its round.
pub const MAX_WRITE_WAIT: Duration = Duration::from_secs(10);

impl Cluster {
    /// Not in a cluster.
    pub fn off() -> Cluster {
        Cluster::build(None)
    }

    /// A node of the cluster `config` describes; its role is set once the
    /// bucket was read (by `generation::run`).
    pub fn new(config: ClusterConfig) -> Cluster {
        Cluster::build(Some(config))
    }

    fn build(config: Option<ClusterConfig>) -> Cluster {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(2))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        Cluster {
            config,
            role: AtomicU8::new(Role::Off.code()),
            generation: AtomicU32::new(0),
            primary_url: Mutex::new(None),
            rounds_started: AtomicU64::new(0),
            rounds_done: tokio::sync::watch::channel(0).0,
            ship_now: tokio::sync::Notify::new(),
            seq: tokio::sync::watch::channel(0).0,
            applied_round: tokio::sync::watch::channel(0).0,
            lag_ms: AtomicU64::new(u64::MAX),
            heartbeat_age_ms: AtomicU64::new(0),
            shipped_bytes: AtomicU64::new(0),
            ship_errors: AtomicU64::new(0),
            apply_errors: AtomicU64::new(0),
            http,
            signing_key: std::sync::OnceLock::new(),
        }
    }

    /// The settings, when in a cluster.
    pub fn config(&self) -> Option<&ClusterConfig> {
        self.config.as_ref()
    }

    /// Whether this node is part of a cluster.
    /// Sets the key of [`sign`] (from the accounts' `secret.key`, the
    /// same on every node); the first one set stays.
    pub fn set_signing_key(&self, secret_key: &[u8]) {
        let _ = self.signing_key.set(sign::derive_key(secret_key));
    }

    /// The key of [`sign`], once set.
    pub fn signing_key(&self) -> Option<&[u8; 32]> {
        self.signing_key.get()
    }

    pub fn is_on(&self) -> bool {
        self.config.is_some()
    }

    /// This node's name ("" when not in a cluster).
    pub fn node(&self) -> &str {
        self.config.as_ref().map_or("", |c| c.node.as_str())
    }

    pub fn role(&self) -> Role {
        Role::from_code(self.role.load(Ordering::SeqCst))
    }

    pub(crate) fn set_role(&self, role: Role, generation: u32, primary_url: Option<String>) {
        self.generation.store(generation, Ordering::SeqCst);
        *crate::state::lock(&self.primary_url) = primary_url;
        self.role.store(role.code(), Ordering::SeqCst);
    }

    pub fn generation(&self) -> u32 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Where the primary takes writes (a replica forwards to it).
    pub fn primary_url(&self) -> Option<String> {
        crate::state::lock(&self.primary_url).clone()
    }

    /// The client writes are forwarded with.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    pub fn ship_interval(&self) -> Duration {
        self.config
            .as_ref()
            .map_or(config::SHIP_INTERVAL, |c| c.ship_interval)
    }

    /// Whether writes wait for their round to be in the bucket.
    pub fn is_sync(&self) -> bool {
        self.config
            .as_ref()
            .is_some_and(|c| c.ship == ShipMode::Sync)
    }

    /// Primary: the last manifest written; replica: the last applied.
    pub fn seq(&self) -> u64 {
        *self.seq.borrow()
    }

    pub(crate) fn set_seq(&self, seq: u64) {
        self.seq.send_replace(seq);
    }

    /// Primary: the round a write committed now will be shipped in at
    /// the latest (the first round that reads the files after now). Sent
    /// to a replica in `X-Spindle-Round`; manifests and the heartbeat
    /// carry their round.
    pub fn next_round(&self) -> u64 {
        self.rounds_started.load(Ordering::SeqCst) + 1
    }

    /// Primary, `sync`: waits until a round that started after this call
    /// is finished (so everything committed before is in the bucket), at
    /// most [`MAX_WRITE_WAIT`]; `false` if it did not happen (the write
    /// must then not be acknowledged as shipped). Returns at once in
    /// `async` mode or outside a cluster.
    pub async fn wait_shipped(&self) -> bool {
        if !self.is_sync() || self.role() != Role::Primary {
            return true;
        }
        let needed = self.rounds_started.load(Ordering::SeqCst) + 1;
        self.ship_now.notify_one();
        let mut rx = self.rounds_done.subscribe();
        let done = tokio::time::timeout(MAX_WRITE_WAIT, rx.wait_for(|done| *done >= needed))
            .await
            .is_ok_and(|r| r.is_ok());
        done
    }

    pub(crate) fn round_started(&self) -> u64 {
        self.rounds_started.fetch_add(1, Ordering::SeqCst) + 1
    }

    pub(crate) fn round_done(&self, n: u64) {
        self.rounds_done.send_modify(|d| *d = (*d).max(n));
    }

    /// Replica: waits until the writes of the primary's `round` are
    /// applied, at most `max`; whether they were.
    pub async fn wait_applied(&self, round: u64, max: Duration) -> bool {
        let mut rx = self.applied_round.subscribe();
        let done = tokio::time::timeout(max, rx.wait_for(|r| *r >= round))
            .await
            .is_ok_and(|r| r.is_ok());
        done
    }

    pub(crate) fn set_applied_round(&self, round: u64) {
        self.applied_round.send_modify(|r| *r = (*r).max(round));
    }

    /// Replica: how far behind the primary, seconds (`None`: unknown yet).
    pub fn lag_secs(&self) -> Option<f64> {
        match self.lag_ms.load(Ordering::SeqCst) {
            u64::MAX => None,
            ms => Some(ms as f64 / 1000.0),
        }
    }

    pub(crate) fn set_lag_ms(&self, ms: Option<u64>) {
        self.lag_ms.store(ms.unwrap_or(u64::MAX), Ordering::SeqCst);
    }

    /// The `/metrics` lines of the cluster.
    pub fn metrics(&self, out: &mut String) {
        use std::fmt::Write as _;
        if !self.is_on() {
            return;
        }
        let role = self.role();
        let _ = writeln!(out, "# TYPE spindle_cluster_role gauge");
        for r in [Role::Primary, Role::Replica, Role::Deposed] {
            let v = u8::from(r == role);
            let _ = writeln!(out, "spindle_cluster_role{{role=\"{}\"}} {v}", r.name());
        }
        let _ = writeln!(out, "# TYPE spindle_cluster_generation gauge");
        let _ = writeln!(out, "spindle_cluster_generation {}", self.generation());
        let _ = writeln!(out, "# TYPE spindle_cluster_applied_seq gauge");
        let _ = writeln!(out, "spindle_cluster_applied_seq {}", self.seq());
        let _ = writeln!(out, "# TYPE spindle_cluster_lag_seconds gauge");
        let lag = if role == Role::Primary {
            Some(0.0)
        } else {
            self.lag_secs()
        };
        let _ = writeln!(
            out,
            "spindle_cluster_lag_seconds {}",
            lag.map_or("NaN".to_owned(), |l| format!("{l:.3}"))
        );
        let _ = writeln!(
            out,
            "# TYPE spindle_cluster_primary_heartbeat_age_seconds gauge"
        );
        let age = self.heartbeat_age_ms.load(Ordering::SeqCst) as f64 / 1000.0;
        let _ = writeln!(
            out,
            "spindle_cluster_primary_heartbeat_age_seconds {age:.3}"
        );
        let _ = writeln!(out, "# TYPE spindle_cluster_shipped_bytes_total counter");
        let _ = writeln!(
            out,
            "spindle_cluster_shipped_bytes_total {}",
            self.shipped_bytes.load(Ordering::Relaxed)
        );
        let _ = writeln!(out, "# TYPE spindle_cluster_ship_errors_total counter");
        let _ = writeln!(
            out,
            "spindle_cluster_ship_errors_total {}",
            self.ship_errors.load(Ordering::Relaxed)
        );
        let _ = writeln!(out, "# TYPE spindle_cluster_apply_errors_total counter");
        let _ = writeln!(
            out,
            "spindle_cluster_apply_errors_total {}",
            self.apply_errors.load(Ordering::Relaxed)
        );
    }
}

/// A shared handle.
pub type Handle = Arc<Cluster>;
