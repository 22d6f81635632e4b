//! The primary's shipping (docs/cluster.md, "What is shipped"): every
//! `ship_interval`, or at once when a `sync` write waits, one round reads
//! what was committed since the last round — the listens log's new bytes,
//! the library log's new records (its whole data file and log after a
//! compaction), the accounts and user data documents when they changed —
//! uploads each as an object, then the manifest naming them, then the
//! heartbeat. A round that finds nothing writes only the heartbeat.
//! Snapshots are taken when a generation starts and every
//! `snapshot_every`; older ones, with the manifests and segments they
//! cover, are deleted once two newer snapshots exist.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use spindle_store::LogRead;

use super::bucket::{Bucket, BucketError};
use super::objects::{self, Kind, Lease, Manifest, ObjectRef, Positions, SnapshotManifest};
use super::{Cluster, Role};
use crate::AppState;

/// Where the accounts document is, under the data dir.
pub fn accounts_path(data_dir: &Path) -> PathBuf {
    data_dir
        .join("accounts")
        .join(crate::accounts::ACCOUNTS_FILE)
}

/// The most bytes of the listens log one round ships (64 MiB): after the
/// bucket was unreachable for a while the backlog goes out in rounds of
/// this size, one after the other, instead of being read whole into
/// memory.
pub const MAX_ROUND_LISTENS: u64 = 64 << 20;
/// Where the user data document is, under the data dir.
pub fn userdata_path(data_dir: &Path) -> PathBuf {
    data_dir
        .join(crate::userdata::USERDATA_DIR)
        .join("userdata.json")
}

/// Why a round or a snapshot failed (it is retried next round).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShipError {
    #[error("the bucket: {0}")]
    Bucket(#[from] BucketError),
    #[error("reading {what}: {source}")]
    Read {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("the reading task failed: {0}")]
    Task(String),
}

/// An object to upload and its entry in the manifest.
struct Piece {
    r: ObjectRef,
    bytes: Vec<u8>,
}

/// What a round read.
struct Read {
    pieces: Vec<Piece>,
    after: Positions,
    accounts_sha: Option<String>,
    userdata_sha: Option<String>,
    /// More of the listens log was waiting than one round ships.
    behind: bool,
}

/// The primary's shipper state.
pub struct Shipper {
    state: AppState,
    bucket: Arc<Bucket>,
    generation: u32,
    seq: u64,
    pos: Positions,
    accounts_sha: String,
    userdata_sha: String,
    last_snapshot: Instant,
    last_status: Instant,
    /// The last round left listens for the next: ship again at once.
    behind: bool,
}

fn read_doc(path: &Path) -> Result<Option<Vec<u8>>, ShipError> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ShipError::Read {
            what: "a document",
            source,
        }),
    }
}

/// A document to ship: the user data as one document of every user's
/// file ([`crate::userdata::snapshot_document`]), else the file itself.
fn doc(kind: Kind, path: &Path) -> Result<Option<Vec<u8>>, ShipError> {
    if kind != Kind::Userdata {
        return read_doc(path);
    }
    let dir = path.parent().unwrap_or(path);
    crate::userdata::snapshot_document(dir).map_err(|e| ShipError::Read {
        what: "the user data",
        source: std::io::Error::other(e.to_string()),
    })
}

fn piece(kind: Kind, key: String, bytes: Vec<u8>, from: u64, to: u64, log_gen: u64) -> Piece {
    let mut r = ObjectRef::of(kind, key, &bytes);
    r.from = from;
    r.to = to;
    r.log_gen = log_gen;
    Piece { r, bytes }
}

/// Where this round's listens segment from `from` ends: the log's
/// durable end, or a record boundary about `max` bytes (at least one
/// [`spindle_listens::tail::TAIL_CHUNK`]) past `from` when more is
/// waiting ([`MAX_ROUND_LISTENS`]).
fn round_end(
    listens: &spindle_listens::Listens,
    from: u64,
    committed: u64,
    max: u64,
) -> Result<u64, ShipError> {
    if committed.saturating_sub(from) <= max {
        return Ok(committed);
    }
    let mut at = from;
    loop {
        let r = listens
            .listens_between(at, committed, |_| false)
            .map_err(|e| ShipError::Read {
                what: "the listens log",
                source: std::io::Error::other(e.to_string()),
            })?;
        if r.end <= at {
            break;
        }
        at = r.end;
        if at - from + spindle_listens::tail::TAIL_CHUNK > max {
            break;
        }
    }
    Ok(at)
}

/// Reads what changed since `pos` (blocking).
fn read_changes(
    state: &AppState,
    g: u32,
    seq: u64,
    pos: Positions,
    accounts_sha: &str,
    userdata_sha: &str,
) -> Result<Read, ShipError> {
    let mut pieces = Vec::new();
    let mut after = pos;
    let listens = &state.listens;
    let committed = listens.committed_end();
    let end = round_end(listens, pos.listens, committed, MAX_ROUND_LISTENS)?;
    if end > pos.listens {
        let bytes = listens
            .read_log_range(pos.listens, end)
            .map_err(|source| ShipError::Read {
                what: "the listens log",
                source,
            })?;
        pieces.push(piece(
            Kind::Listens,
            objects::listens_segment_key(g, pos.listens, end),
            bytes,
            pos.listens,
            end,
            0,
        ));
        after.listens = end;
    }
    after.listens_version = listens.log_version();
    let db = &state.db;
    let lp = db.log_position();
    let base = if lp.generation == pos.library_gen {
        if lp.end > pos.library {
            match db
                .read_log_from(pos.library_gen, pos.library)
                .map_err(|source| ShipError::Read {
                    what: "the library log",
                    source,
                })? {
                LogRead::Records { bytes, end } => {
                    if end > pos.library {
                        pieces.push(piece(
                            Kind::Library,
                            objects::library_segment_key(g, pos.library_gen, pos.library, end),
                            bytes,
                            pos.library,
                            end,
                            pos.library_gen,
                        ));
                        after.library = end;
                    }
                    false
                }
                LogRead::Compacted { .. } => true,
            }
        } else {
            false
        }
    } else {
        true
    };
    if base {
        let b = db.base().map_err(|source| ShipError::Read {
            what: "the library",
            source,
        })?;
        let len = b.log.len() as u64;
        pieces.push(piece(
            Kind::LibraryData,
            objects::library_base_key(g, b.generation, &format!("{seq:016x}-data")),
            b.data,
            0,
            0,
            b.generation,
        ));
        pieces.push(piece(
            Kind::LibraryLog,
            objects::library_base_key(g, b.generation, &format!("{seq:016x}-log")),
            b.log,
            0,
            len,
            b.generation,
        ));
        after.library_gen = b.generation;
        after.library = len;
    }
    let mut new_accounts = None;
    let mut new_userdata = None;
    let dir = db.dir();
    for (kind, path, last, out) in [
        (
            Kind::Accounts,
            accounts_path(dir),
            accounts_sha,
            &mut new_accounts,
        ),
        (
            Kind::Userdata,
            userdata_path(dir),
            userdata_sha,
            &mut new_userdata,
        ),
    ] {
        if let Some(bytes) = doc(kind, &path)? {
            let sha = objects::sha256_hex(&bytes);
            if sha != last {
                let name = if kind == Kind::Accounts {
                    "accounts"
                } else {
                    "userdata"
                };
                pieces.push(piece(
                    kind,
                    objects::document_key(g, name, seq),
                    bytes,
                    0,
                    0,
                    0,
                ));
                *out = Some(sha);
            }
        }
    }
    Ok(Read {
        pieces,
        after,
        accounts_sha: new_accounts,
        userdata_sha: new_userdata,
        behind: end < committed,
    })
}

impl Shipper {
    /// A shipper of generation `generation` going on after manifest `seq`
    /// whose files ended at `pos` (documents are shipped again in the
    /// first round).
    pub fn new(
        state: AppState,
        bucket: Arc<Bucket>,
        generation: u32,
        seq: u64,
        pos: Positions,
    ) -> Shipper {
        Shipper {
            state,
            bucket,
            generation,
            seq,
            pos,
            accounts_sha: String::new(),
            userdata_sha: String::new(),
            last_snapshot: Instant::now(),
            last_status: Instant::now() - super::replica::STATUS_EVERY,
            behind: false,
        }
    }

    fn cluster(&self) -> &Cluster {
        &self.state.cluster
    }

    async fn upload(&self, pieces: Vec<Piece>) -> Result<(Vec<ObjectRef>, u64), ShipError> {
        let mut set = tokio::task::JoinSet::new();
        let mut refs = Vec::with_capacity(pieces.len());
        let mut bytes = 0;
        for p in pieces {
            bytes += p.r.size;
            refs.push(p.r.clone());
            let b = self.bucket.clone();
            set.spawn(async move { b.put(&p.r.key, p.bytes).await });
        }
        while let Some(r) = set.join_next().await {
            r.map_err(|e| ShipError::Task(e.to_string()))??;
        }
        Ok((refs, bytes))
    }

    /// One round; returns whether a newer generation deposed this node.
    pub async fn round(&mut self) -> Result<bool, ShipError> {
        let round = self.cluster().round_started();
        let read_ms = objects::now_ms();
        let st = self.state.clone();
        let (g, seq, pos) = (self.generation, self.seq + 1, self.pos);
        let (a, u) = (self.accounts_sha.clone(), self.userdata_sha.clone());
        let read = spindle_app::offload::run(move || read_changes(&st, g, seq, pos, &a, &u))
            .await
            .map_err(|e| ShipError::Task(e.to_string()))??;
        if !read.pieces.is_empty() {
            let (objects, bytes) = self.upload(read.pieces).await?;
            let m = Manifest {
                format: objects::FORMAT,
                generation: g,
                seq,
                node: self.cluster().node().to_owned(),
                round,
                read_ms,
                before: self.pos,
                after: read.after,
                objects,
            };
            self.bucket
                .put_json(&objects::manifest_key(g, seq), &m)
                .await?;
            self.seq = seq;
            self.pos = read.after;
            self.behind = read.behind;
            if let Some(s) = read.accounts_sha {
                self.accounts_sha = s;
            }
            if let Some(s) = read.userdata_sha {
                self.userdata_sha = s;
            }
            self.cluster()
                .shipped_bytes
                .fetch_add(bytes, Ordering::Relaxed);
            self.cluster().set_seq(seq);
        }
        // Fencing: a newer generation means this node is primary no more.
        if let Some(newest) = self.bucket.newest_generation().await? {
            if newest.generation > g {
                return Ok(true);
            }
        }
        self.cluster().round_done(round);
        self.heartbeat(round, read_ms).await?;
        Ok(false)
    }

    async fn heartbeat(&self, round: u64, read_ms: i64) -> Result<(), ShipError> {
        let lease = Lease {
            format: objects::FORMAT,
            holder: self.cluster().node().to_owned(),
            url: self
                .cluster()
                .config()
                .map_or(String::new(), |c| c.advertise_url.clone()),
            generation: self.generation,
            seq: self.seq,
            round,
            read_ms,
            time_ms: objects::now_ms(),
        };
        self.bucket.put_json(objects::LEASE_KEY, &lease).await?;
        Ok(())
    }

    /// A full snapshot consistent with every manifest up to the last one
    /// written; then older snapshots and what they cover are pruned.
    pub async fn snapshot(&mut self) -> Result<(Positions, Vec<(Kind, String)>), ShipError> {
        let st = self.state.clone();
        let read_ms = objects::now_ms();
        let (g, seq) = (self.generation, self.seq);
        let (pieces, positions) = spindle_app::offload::run(move || snapshot_pieces(&st, g, seq))
            .await
            .map_err(|e| ShipError::Task(e.to_string()))??;
        let docs: Vec<(Kind, String)> = pieces
            .iter()
            .filter(|p| matches!(p.r.kind, Kind::Accounts | Kind::Userdata))
            .map(|p| (p.r.kind, p.r.sha256.clone()))
            .collect();
        let (objects, bytes) = self.upload(pieces).await?;
        let m = SnapshotManifest {
            format: objects::FORMAT,
            generation: g,
            seq,
            node: self.cluster().node().to_owned(),
            read_ms,
            positions,
            objects,
        };
        let key = format!("{}manifest.json", objects::snapshot_prefix(g, seq));
        self.bucket.put_json(&key, &m).await?;
        self.cluster()
            .shipped_bytes
            .fetch_add(bytes, Ordering::Relaxed);
        self.last_snapshot = Instant::now();
        tracing::info!("cluster: snapshot of generation {g} at manifest {seq} ({bytes} bytes)");
        let bucket = self.bucket.clone();
        tokio::spawn(async move {
            if let Err(e) = prune(&bucket).await {
                tracing::warn!("cluster: pruning old snapshots: {e}");
            }
        });
        Ok((positions, docs))
    }

    /// The first snapshot of a generation; shipping goes on from it.
    pub async fn start_with_snapshot(&mut self) -> Result<(), ShipError> {
        let (positions, docs) = self.snapshot().await?;
        self.pos = positions;
        for (kind, sha) in docs {
            if kind == Kind::Accounts {
                self.accounts_sha = sha;
            } else {
                self.userdata_sha = sha;
            }
        }
        // Replicas take the snapshot's round as applied.
        let round = self.cluster().round_started();
        self.cluster().round_done(round);
        self.heartbeat(round, objects::now_ms()).await?;
        Ok(())
    }

    /// Runs rounds until `stop`, or until a newer generation deposes this
    /// node (then the node refuses writes).
    pub async fn run(mut self, mut stop: tokio::sync::watch::Receiver<bool>) {
        let Some(cfg) = self.cluster().config().cloned() else {
            return;
        };
        loop {
            let wait = if self.behind {
                std::time::Duration::ZERO
            } else {
                cfg.ship_interval
            };
            let stopping = tokio::select! {
                () = tokio::time::sleep(wait) => false,
                () = self.cluster().ship_now.notified() => false,
                _ = stop.changed() => true,
            };
            match self.round().await {
                Ok(true) => {
                    tracing::error!(
                        "cluster: a newer generation than {} names another primary; this node takes no more writes (run `spindle cluster rejoin`)",
                        self.generation
                    );
                    self.cluster()
                        .set_role(Role::Deposed, self.generation, None);
                    return;
                }
                Ok(false) => {}
                Err(e) => {
                    self.cluster().ship_errors.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!("cluster: shipping round failed (retried): {e}");
                }
            }
            if stopping {
                return;
            }
            if self.last_status.elapsed() >= super::replica::STATUS_EVERY {
                self.last_status = Instant::now();
                super::status::write_node(&self.bucket, self.cluster(), Role::Primary, None).await;
            }
            if self.last_snapshot.elapsed() >= cfg.snapshot_every {
                if let Err(e) = self.snapshot().await {
                    self.cluster().ship_errors.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!("cluster: snapshot failed (retried): {e}");
                }
            }
        }
    }
}

/// A snapshot's objects (blocking).
fn snapshot_pieces(
    state: &AppState,
    g: u32,
    seq: u64,
) -> Result<(Vec<Piece>, Positions), ShipError> {
    let prefix = objects::snapshot_prefix(g, seq);
    let start = spindle_listens::tail::log_start();
    let end = state.listens.committed_end();
    let listens = state
        .listens
        .read_log_range(start, end)
        .map_err(|source| ShipError::Read {
            what: "the listens log",
            source,
        })?;
    let base = state.db.base().map_err(|source| ShipError::Read {
        what: "the library",
        source,
    })?;
    let positions = Positions {
        listens: end,
        listens_version: state.listens.log_version(),
        library_gen: base.generation,
        library: base.log.len() as u64,
    };
    let mut pieces = vec![
        piece(
            Kind::Listens,
            format!("{prefix}listens"),
            listens,
            start,
            end,
            0,
        ),
        piece(
            Kind::LibraryData,
            format!("{prefix}library-data"),
            base.data,
            0,
            0,
            base.generation,
        ),
        piece(
            Kind::LibraryLog,
            format!("{prefix}library-log"),
            base.log,
            0,
            positions.library,
            base.generation,
        ),
    ];
    let dir = state.db.dir();
    if let Some(b) = read_doc(&accounts_path(dir))? {
        pieces.push(piece(
            Kind::Accounts,
            format!("{prefix}accounts.json"),
            b,
            0,
            0,
            0,
        ));
    }
    if let Some(b) = doc(Kind::Userdata, &userdata_path(dir))? {
        pieces.push(piece(
            Kind::Userdata,
            format!("{prefix}userdata.json"),
            b,
            0,
            0,
            0,
        ));
    }
    Ok((pieces, positions))
}

/// Keeps the two newest snapshots and the manifests after the older of
/// them; deletes older snapshots, manifests and the segments they name.
pub async fn prune(bucket: &Bucket) -> Result<(), BucketError> {
    let keys = bucket.list(objects::SNAPSHOTS_PREFIX, None).await?;
    let mut snaps: Vec<(u32, u64)> = keys
        .iter()
        .filter_map(|k| objects::parse_snapshot_manifest_key(k))
        .collect();
    snaps.sort_unstable();
    if snaps.len() <= 2 {
        return Ok(());
    }
    let keep_from = snaps[snaps.len() - 2];
    for k in &keys {
        let old = k
            .strip_prefix(objects::SNAPSHOTS_PREFIX)
            .and_then(|rest| {
                let mut it = rest.split('/');
                let g = u32::from_str_radix(it.next()?, 16).ok()?;
                let s = u64::from_str_radix(it.next()?, 16).ok()?;
                Some((g, s) < keep_from)
            })
            .unwrap_or(false);
        if old {
            bucket.delete(k).await?;
        }
    }
    for g in 1..=keep_from.0 {
        for key in bucket.list(&objects::manifests_prefix(g), None).await? {
            let Some((mg, ms)) = objects::parse_manifest_key(&key) else {
                continue;
            };
            if (mg, ms) > keep_from {
                break;
            }
            if let Some(m) = bucket.get_json::<Manifest>(&key).await? {
                for o in &m.objects {
                    bucket.delete(&o.key).await?;
                }
            }
            bucket.delete(&key).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_listens::{Listen, Listens};

    #[test]
    fn a_backlog_ships_in_rounds_that_end_on_record_boundaries() {
        let d = tempfile::tempdir().unwrap();
        let (l, _) = Listens::open(d.path()).unwrap();
        for batch in 0..8 {
            let v: Vec<Listen> = (0..10_000)
                .map(|i| {
                    let n = batch * 10_000 + i;
                    Listen::new(
                        "ann",
                        1_700_000_000 + n * 100,
                        "Artist",
                        &format!("Track {n}"),
                    )
                })
                .collect();
            l.submit(&v).unwrap();
        }
        let start = spindle_listens::tail::log_start();
        let end = l.committed_end();
        assert!(end - start > spindle_listens::tail::TAIL_CHUNK, "{end}");
        assert_eq!(round_end(&l, start, end, u64::MAX).unwrap(), end);
        // A small cap still moves on, one chunk at a time, and every cut
        // is where a record starts (the range reads).
        let mut at = start;
        let mut rounds = 0;
        while at < end {
            let to = round_end(&l, at, end, 1).unwrap();
            assert!(to > at && to <= end);
            l.read_log_range(at, to).unwrap();
            at = to;
            rounds += 1;
        }
        assert!(rounds >= 2, "{rounds}");
    }
}
