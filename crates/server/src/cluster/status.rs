//! `spindle cluster status` and each node's `nodes/<node>.json`: the
//! generation, the primary's heartbeat, and every node's role, last
//! manifest and lag.

use std::fmt;

use serde::Serialize;

use super::bucket::{Bucket, BucketError};
use super::objects::{self, Lease, NodeStatus};
use super::{Cluster, Role};

/// A node status older than this is shown as stale (the node is down or
/// cannot reach the bucket).
pub const STALE_SECS: f64 = 10.0;

/// Writes this node's `nodes/<node>.json` (failures are logged at debug:
/// status is best effort).
pub async fn write_node(bucket: &Bucket, c: &Cluster, role: Role, error: Option<String>) {
    let status = NodeStatus {
        format: objects::FORMAT,
        node: c.node().to_owned(),
        url: c
            .config()
            .map_or(String::new(), |c| c.advertise_url.clone()),
        role: role.name().to_owned(),
        generation: c.generation(),
        seq: c.seq(),
        lag_secs: if role == Role::Primary {
            Some(0.0)
        } else {
            c.lag_secs()
        },
        time_ms: objects::now_ms(),
        error,
    };
    if let Err(e) = bucket.put_json(&objects::node_key(c.node()), &status).await {
        tracing::debug!("cluster: writing this node's status: {e}");
    }
}

/// The primary as the bucket shows it.
#[derive(Debug, Clone, Serialize)]
pub struct PrimaryView {
    pub node: String,
    pub url: String,
    /// Seconds since its last heartbeat (`None`: none yet).
    pub heartbeat_age_secs: Option<f64>,
}

/// One node's line.
#[derive(Debug, Clone, Serialize)]
pub struct NodeView {
    pub node: String,
    pub role: String,
    pub generation: u32,
    pub applied_seq: u64,
    pub lag_secs: Option<f64>,
    /// Seconds since the node wrote its status.
    pub updated_age_secs: f64,
    pub error: Option<String>,
}

/// What `spindle cluster status` prints.
#[derive(Debug, Clone, Serialize)]
pub struct StatusReport {
    pub generation: u32,
    pub primary: PrimaryView,
    /// The last manifest the primary shipped.
    pub shipped_seq: u64,
    pub nodes: Vec<NodeView>,
}

/// Reads the cluster's state from the bucket.
pub async fn read(bucket: &Bucket) -> Result<Option<StatusReport>, BucketError> {
    let Some(g) = bucket.newest_generation().await? else {
        return Ok(None);
    };
    let now = objects::now_ms();
    let lease: Option<Lease> = bucket.get_json(objects::LEASE_KEY).await?;
    let lease = lease.filter(|l| l.generation == g.generation && l.holder == g.primary);
    let mut nodes = Vec::new();
    for key in bucket.list("nodes/", None).await? {
        if let Some(n) = bucket.get_json::<NodeStatus>(&key).await? {
            nodes.push(NodeView {
                node: n.node,
                role: n.role,
                generation: n.generation,
                applied_seq: n.seq,
                lag_secs: n.lag_secs,
                updated_age_secs: (now - n.time_ms).max(0) as f64 / 1000.0,
                error: n.error,
            });
        }
    }
    Ok(Some(StatusReport {
        generation: g.generation,
        primary: PrimaryView {
            node: g.primary,
            url: g.url,
            heartbeat_age_secs: lease
                .as_ref()
                .map(|l| (now - l.time_ms).max(0) as f64 / 1000.0),
        },
        shipped_seq: lease.map_or(0, |l| l.seq),
        nodes,
    }))
}

impl fmt::Display for StatusReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hb = self
            .primary
            .heartbeat_age_secs
            .map_or("no heartbeat yet".to_owned(), |a| {
                format!("heartbeat {a:.1} s ago")
            });
        writeln!(
            f,
            "cluster generation {}, primary {} ({}), {hb}, shipped up to manifest {}",
            self.generation, self.primary.node, self.primary.url, self.shipped_seq
        )?;
        writeln!(
            f,
            "{:<16} {:<8} {:>4} {:>10} {:>9} {:>10}  note",
            "node", "role", "gen", "seq", "lag", "updated"
        )?;
        for n in &self.nodes {
            let lag = n.lag_secs.map_or("-".to_owned(), |l| format!("{l:.1} s"));
            let mut note = String::new();
            if n.updated_age_secs > STALE_SECS {
                note.push_str("stale (down or cut off from the bucket)");
            }
            if n.generation < self.generation {
                if !note.is_empty() {
                    note.push_str("; ");
                }
                note.push_str("of an older generation (deposed or not caught up)");
            }
            if let Some(e) = &n.error {
                if !note.is_empty() {
                    note.push_str("; ");
                }
                note.push_str(e);
            }
            writeln!(
                f,
                "{:<16} {:<8} {:>4} {:>10} {:>9} {:>8.1} s  {note}",
                n.node, n.role, n.generation, n.applied_seq, lag, n.updated_age_secs
            )?;
        }
        Ok(())
    }
}
