//! Who is primary (docs/cluster.md, "Failover"): the newest
//! `generations/<G>.json` names it. [`prepare`] decides this node's role
//! at start (creating generation 1 in an empty bucket, filling an empty
//! replica from the newest snapshot); [`run`] is the node's cluster task
//! (shipping or applying, and a replica's promotion when a generation
//! names it); [`promote`] and [`rejoin`] are `spindle cluster promote`
//! and `rejoin`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::bucket::{Bucket, BucketError};
use super::config::{ClusterConfig, InitialRole};
use super::objects::{self, Cut, Generation, Lease, Manifest, Positions};
use super::replica::{self, LocalState, Replica, ReplicaError};
use super::ship::Shipper;
use super::Role;
use crate::AppState;

/// Why the cluster cannot start or a command cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    #[error("the cluster's bucket: {0}")]
    Bucket(#[from] BucketError),
    #[error(transparent)]
    Replica(#[from] ReplicaError),
    #[error("{0}")]
    Refused(String),
}

/// The role this node starts in.
#[derive(Debug, Clone)]
pub enum Start {
    /// Primary of `generation`; `fresh`: the generation starts now (a
    /// snapshot first).
    Primary {
        generation: u32,
        fresh: bool,
    },
    Replica(LocalState),
    /// Was primary of an older generation.
    Deposed {
        generation: u32,
        primary: String,
    },
}

impl Start {
    /// Whether this node scans its music folders and takes writes itself.
    pub fn is_primary(&self) -> bool {
        matches!(self, Start::Primary { .. })
    }
}

fn holds_data(data_dir: &Path) -> bool {
    data_dir.join(spindle_store::DATA_FILE).exists()
        || data_dir
            .join("listens")
            .join(spindle_listens::LOG_FILE)
            .exists()
}

/// Reads the bucket and decides this node's role; an empty replica is
/// filled from the newest snapshot first (waiting for one). Call before
/// the server opens the data dir.
pub async fn prepare(
    cfg: &ClusterConfig,
    data_dir: &Path,
) -> Result<(Arc<Bucket>, Start), ClusterError> {
    let bucket = Arc::new(Bucket::new(cfg.s3.clone()));
    let local = LocalState::load(data_dir);
    let mut said = false;
    loop {
        let newest = bucket.newest_generation().await?;
        match newest {
            None if cfg.role == InitialRole::Primary => {
                let g = Generation {
                    format: objects::FORMAT,
                    generation: 1,
                    primary: cfg.node.clone(),
                    url: cfg.advertise_url.clone(),
                    created_ms: objects::now_ms(),
                    cut: None,
                    first: true,
                };
                bucket.put_json(&objects::generation_key(1), &g).await?;
                LocalState {
                    role: "primary".into(),
                    generation: 1,
                    ..LocalState::default()
                }
                .save(data_dir)?;
                tracing::info!("cluster: created generation 1 with {} as primary", cfg.node);
                return Ok((
                    bucket,
                    Start::Primary {
                        generation: 1,
                        fresh: true,
                    },
                ));
            }
            None => {}
            Some(g) if g.primary == cfg.node => {
                let pending_promotion = local
                    .as_ref()
                    .is_some_and(|l| l.role == "replica" && l.generation < g.generation);
                if let (true, Some(l)) = (pending_promotion, local) {
                    return Ok((bucket, Start::Replica(l)));
                }
                LocalState {
                    role: "primary".into(),
                    generation: g.generation,
                    ..LocalState::default()
                }
                .save(data_dir)?;
                return Ok((
                    bucket,
                    Start::Primary {
                        generation: g.generation,
                        fresh: false,
                    },
                ));
            }
            Some(g) => match local {
                Some(l) if l.role == "primary" => {
                    return Ok((
                        bucket,
                        Start::Deposed {
                            generation: g.generation,
                            primary: g.primary,
                        },
                    ));
                }
                Some(l) => return Ok((bucket, Start::Replica(l))),
                None if holds_data(data_dir) => {
                    return Err(ClusterError::Refused(format!(
                            "{} holds a library or listens that are not of this cluster; start a replica with an empty data dir",
                            data_dir.display()
                        )));
                }
                None => match replica::bootstrap(&bucket, data_dir).await {
                    Ok(l) => return Ok((bucket, Start::Replica(l))),
                    Err(ReplicaError::NoSnapshot) => {}
                    Err(e) => return Err(e.into()),
                },
            },
        }
        if !said {
            tracing::info!("cluster: waiting for the primary to create the cluster in the bucket");
            said = true;
        }
        tokio::time::sleep(cfg.poll_interval).await;
    }
}

/// The node's cluster task: ships as primary, or applies as a replica
/// until a generation promotes it. Ends at `stop`.
pub async fn run(
    state: AppState,
    bucket: Arc<Bucket>,
    start: Start,
    rescan_every: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let url = state.cluster.config().map(|c| c.advertise_url.clone());
    match start {
        Start::Primary { generation, fresh } => {
            state.cluster.set_role(Role::Primary, generation, url);
            match primary_shipper(&state, &bucket, generation, fresh).await {
                Ok(s) => s.run(stop).await,
                Err(e) => tracing::error!("cluster: cannot start shipping: {e}"),
            }
        }
        Start::Deposed {
            generation,
            primary,
        } => {
            tracing::error!(
                "cluster: generation {generation} names {primary} as primary, and this node was primary before: it takes no writes; run `spindle cluster rejoin` with the server stopped"
            );
            state.cluster.set_role(Role::Deposed, generation, None);
        }
        Start::Replica(local) => {
            let g = local.generation;
            let primary = bucket.generation(g).await.ok().flatten().map(|g| g.url);
            state.cluster.set_role(Role::Replica, g, primary);
            let mut r = Replica::new(state.clone(), bucket.clone(), local);
            let Some(next) = r.run(&mut stop).await else {
                return;
            };
            let shipper = match promote_self(&mut r, next).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!("cluster: promotion failed: {e}");
                    return;
                }
            };
            // Now this node writes its own library: it watches the music
            // folders and takes imports, as a primary does from its start.
            let st = state.clone();
            let watcher =
                spindle_app::offload::run(move || crate::server::start_watcher(&st, rescan_every))
                    .await;
            let watcher = match watcher {
                Ok(Ok(w)) => Some(w),
                Ok(Err(e)) => {
                    tracing::warn!("cluster: watching the music folders after the promotion: {e}");
                    None
                }
                Err(e) => {
                    tracing::warn!("cluster: watching the music folders after the promotion: {e}");
                    None
                }
            };
            let imports = tokio::spawn(crate::import::worker::run(
                crate::App::clone(&state),
                state.config.forward.outbound.clone(),
                stop.clone(),
            ));
            shipper.run(stop).await;
            let _ = imports.await;
            let _ = spindle_app::offload::run(move || drop(watcher)).await;
        }
    }
}

/// The shipper of a primary starting (or restarting) in `generation`.
async fn primary_shipper(
    state: &AppState,
    bucket: &Arc<Bucket>,
    generation: u32,
    fresh: bool,
) -> Result<Shipper, ClusterError> {
    if !fresh {
        // Going on: after the last manifest written, from its positions.
        let keys = bucket
            .list(&objects::manifests_prefix(generation), None)
            .await?;
        if let Some(last) = keys
            .iter()
            .rev()
            .find_map(|k| objects::parse_manifest_key(k))
        {
            if let Some(m) = bucket
                .get_json::<Manifest>(&objects::manifest_key(generation, last.1))
                .await?
            {
                state.cluster.set_seq(m.seq);
                tracing::info!(
                    "cluster: primary of generation {generation}, going on after manifest {}",
                    m.seq
                );
                return Ok(Shipper::new(
                    state.clone(),
                    bucket.clone(),
                    generation,
                    m.seq,
                    m.after,
                ));
            }
        }
        let snap_key = format!("{}manifest.json", objects::snapshot_prefix(generation, 0));
        if let Some(s) = bucket
            .get_json::<objects::SnapshotManifest>(&snap_key)
            .await?
        {
            return Ok(Shipper::new(
                state.clone(),
                bucket.clone(),
                generation,
                0,
                s.positions,
            ));
        }
    }
    let mut s = Shipper::new(
        state.clone(),
        bucket.clone(),
        generation,
        0,
        Positions::default(),
    );
    s.start_with_snapshot()
        .await
        .map_err(|e| ClusterError::Refused(format!("the first snapshot: {e}")))?;
    tracing::info!("cluster: primary of generation {generation}");
    Ok(s)
}

/// A generation names this replica: apply everything complete of the
/// old generation, write where it ends (the cut), become primary.
async fn promote_self(r: &mut Replica, mut next: Generation) -> Result<Shipper, ClusterError> {
    let old = r.local.generation;
    r.catch_up(None).await?;
    let cut = Cut {
        generation: old,
        seq: r.local.seq,
    };
    next.cut = Some(cut);
    let key = objects::generation_key(next.generation);
    r.bucket.put_json(&key, &next).await?;
    let check: Option<Generation> = r.bucket.get_json(&key).await?;
    if check.as_ref().map(|g| g.primary.as_str()) != Some(r.state.cluster.node()) {
        return Err(ClusterError::Refused(format!(
            "{key} names another node now: two promotions ran at once; this node stays a replica"
        )));
    }
    let data_dir = r.state.db.dir().to_owned();
    LocalState {
        role: "primary".into(),
        generation: next.generation,
        ..LocalState::default()
    }
    .save(&data_dir)?;
    let url = r.state.cluster.config().map(|c| c.advertise_url.clone());
    r.state
        .cluster
        .set_role(Role::Primary, next.generation, url);
    // Manifests count again from the new generation's first.
    r.state.cluster.set_seq(0);
    tracing::info!(
        "cluster: promoted to primary of generation {}; generation {old} ends at manifest {}",
        next.generation,
        cut.seq
    );
    let mut s = Shipper::new(
        r.state.clone(),
        r.bucket.clone(),
        next.generation,
        0,
        Positions::default(),
    );
    s.start_with_snapshot()
        .await
        .map_err(|e| ClusterError::Refused(format!("the first snapshot: {e}")))?;
    Ok(s)
}

/// `spindle cluster promote`: writes the next generation naming this
/// node, then waits (at most `wait`) for its running server to take
/// over; returns what to print.
pub async fn promote(
    cfg: &ClusterConfig,
    force: bool,
    wait: Duration,
) -> Result<String, ClusterError> {
    let bucket = Bucket::new(cfg.s3.clone());
    let newest = bucket
        .newest_generation()
        .await?
        .ok_or_else(|| ClusterError::Refused("the bucket holds no cluster yet".into()))?;
    if newest.primary == cfg.node && (newest.cut.is_some() || newest.first) {
        return Err(ClusterError::Refused(format!(
            "{} is already primary (generation {})",
            cfg.node, newest.generation
        )));
    }
    let lease: Option<Lease> = bucket.get_json(objects::LEASE_KEY).await?;
    if let Some(l) = lease.filter(|l| l.generation == newest.generation) {
        let age = Duration::from_millis(u64::try_from(objects::now_ms() - l.time_ms).unwrap_or(0));
        if age < cfg.lease && !force {
            return Err(ClusterError::Refused(format!(
                "the primary {}'s heartbeat is {:.1} s old, younger than lease_secs = {}: it looks alive; stop it first, or pass --force if it cannot reach the bucket but is dead",
                l.holder,
                age.as_secs_f64(),
                cfg.lease.as_secs()
            )));
        }
    }
    let g = Generation {
        format: objects::FORMAT,
        generation: newest.generation + 1,
        primary: cfg.node.clone(),
        url: cfg.advertise_url.clone(),
        created_ms: objects::now_ms(),
        cut: None,
        first: false,
    };
    let key = objects::generation_key(g.generation);
    bucket.put_json(&key, &g).await?;
    let started = Instant::now();
    loop {
        let now: Option<Generation> = bucket.get_json(&key).await?;
        let lease: Option<Lease> = bucket.get_json(objects::LEASE_KEY).await?;
        match (now, lease) {
            (Some(n), _) if n.primary != cfg.node => {
                return Err(ClusterError::Refused(format!(
                    "{key} now names {}: another promotion ran at the same time",
                    n.primary
                )))
            }
            (Some(n), Some(l)) if l.holder == cfg.node && l.generation == n.generation => {
                if let Some(cut) = n.cut {
                    return Ok(format!(
                        "promoted {}: generation {}; generation {} ends at manifest {}",
                        cfg.node, n.generation, cut.generation, cut.seq
                    ));
                }
            }
            _ => {}
        }
        if started.elapsed() > wait {
            return Err(ClusterError::Refused(format!(
                "{key} names {}, but its server did not take over within {} s: is `spindle serve` running on this node?",
                cfg.node,
                wait.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What `spindle cluster rejoin` did.
#[derive(Debug)]
pub struct Rejoined {
    pub unshipped: usize,
    pub unshipped_dir: PathBuf,
    pub moved_to: PathBuf,
    pub generation: u32,
}

/// `spindle cluster rejoin`, the server stopped: the listens this node
/// committed after the cut are written to `cluster/unshipped/` (one
/// ListenBrainz-style JSON-lines file per user, which `spindle listens
/// import` reads), its files are moved to `cluster/old-<time>/`, and its
/// next start fills it from the newest snapshot as a replica.
pub async fn rejoin(cfg: &ClusterConfig, data_dir: &Path) -> Result<Rejoined, ClusterError> {
    let bucket = Bucket::new(cfg.s3.clone());
    let local = LocalState::load(data_dir).ok_or_else(|| {
        ClusterError::Refused(format!(
            "{} was never a node of this cluster",
            data_dir.display()
        ))
    })?;
    let newest = bucket
        .newest_generation()
        .await?
        .ok_or_else(|| ClusterError::Refused("the bucket holds no cluster".into()))?;
    if newest.primary == cfg.node {
        return Err(ClusterError::Refused(format!(
            "generation {} names this node as primary: nothing to rejoin",
            newest.generation
        )));
    }
    // Where this node's generation ends, as the next generation's cut says.
    let mut cut_listens = None;
    for g in (local.generation + 1)..=newest.generation {
        if let Some(gen) = bucket.generation(g).await? {
            if let Some(cut) = gen.cut.filter(|c| c.generation == local.generation) {
                let m: Option<Manifest> = if cut.seq == 0 {
                    None
                } else {
                    bucket
                        .get_json(&objects::manifest_key(cut.generation, cut.seq))
                        .await?
                };
                cut_listens = Some(match m {
                    Some(m) => m.after.listens,
                    None => {
                        let k = format!(
                            "{}manifest.json",
                            objects::snapshot_prefix(cut.generation, 0)
                        );
                        bucket
                            .get_json::<objects::SnapshotManifest>(&k)
                            .await?
                            .map_or(spindle_listens::tail::log_start(), |s| s.positions.listens)
                    }
                });
                break;
            }
        }
    }
    let dir = data_dir.to_owned();
    let out = spindle_app::offload::run(move || set_aside(&dir, cut_listens))
        .await
        .map_err(|e| ClusterError::Refused(format!("the task failed: {e}")))??;
    Ok(Rejoined {
        unshipped: out.0,
        unshipped_dir: out.1,
        moved_to: out.2,
        generation: newest.generation,
    })
}

fn set_aside(dir: &Path, cut: Option<u64>) -> Result<(usize, PathBuf, PathBuf), ClusterError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| ClusterError::Replica(ReplicaError::Io { path, source })
    };
    let stamp = objects::now_ms();
    let unshipped_dir = dir.join("cluster").join("unshipped");
    let mut count = 0;
    let listens_dir = dir.join("listens");
    if let Some(from) = cut {
        let (l, _) = spindle_listens::Listens::open(&listens_dir)
            .map_err(|e| ClusterError::Refused(format!("opening the listens: {e}")))?;
        let end = l.committed_end();
        let mut at = from;
        let mut per_user: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        while at < end {
            let r = l
                .listens_between(at, end, |_| true)
                .map_err(|e| ClusterError::Refused(e.to_string()))?;
            if r.end <= at {
                break;
            }
            for x in r.listens {
                let line = serde_json::json!({
                    "listened_at": x.timestamp,
                    "track_metadata": {
                        "artist_name": x.artist,
                        "track_name": x.title,
                        "release_name": x.album,
                    }
                });
                per_user
                    .entry(x.user.clone())
                    .or_default()
                    .push(line.to_string());
                count += 1;
            }
            at = r.end;
        }
        for (user, lines) in per_user {
            let path = unshipped_dir.join(format!("{user}-{stamp}.jsonl"));
            replica::write_atomic(&path, format!("{}\n", lines.join("\n")).as_bytes())?;
        }
    }
    let old = dir.join("cluster").join(format!("old-{stamp}"));
    std::fs::create_dir_all(&old).map_err(io(&old))?;
    for name in [
        spindle_store::DATA_FILE,
        spindle_store::LOG_FILE,
        "listens",
        crate::userdata::USERDATA_DIR,
    ] {
        let p = dir.join(name);
        if p.exists() {
            std::fs::rename(&p, old.join(name)).map_err(io(&p))?;
        }
    }
    let accounts = super::ship::accounts_path(dir);
    if accounts.exists() {
        std::fs::rename(&accounts, old.join("accounts.json")).map_err(io(&accounts))?;
    }
    let state = replica::state_path(dir);
    if state.exists() {
        std::fs::rename(&state, old.join("state.json")).map_err(io(&state))?;
    }
    Ok((count, unshipped_dir, old))
}
