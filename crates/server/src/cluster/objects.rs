//! What the cluster keeps in its bucket (docs/cluster.md, "Objects in the
//! bucket"): object names, which sort in the order to apply them
//! (fixed-width lower-case hex), and the JSON documents — generations,
//! the primary's heartbeat, each node's status, manifests and snapshot
//! manifests. A manifest is written after every object it names, so a
//! reader that finds it knows they are complete.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The version of these documents; a reader refuses a newer one.
pub const FORMAT: u32 = 1;

/// `generations/<G>.json`: who is primary in generation G.
pub fn generation_key(g: u32) -> String {
    format!("generations/{g:08x}.json")
}
/// The generation a [`generation_key`] names.
pub fn parse_generation_key(key: &str) -> Option<u32> {
    let hex = key.strip_prefix("generations/")?.strip_suffix(".json")?;
    u32::from_str_radix(hex, 16).ok().filter(|_| hex.len() == 8)
}
/// The primary's heartbeat.
pub const LEASE_KEY: &str = "lease.json";
/// `nodes/<node>.json`: one node's status.
pub fn node_key(node: &str) -> String {
    format!("nodes/{node}.json")
}
/// Where generation G's manifests are.
pub fn manifests_prefix(g: u32) -> String {
    format!("manifests/{g:08x}/")
}
/// `manifests/<G>/<seq>.json`.
pub fn manifest_key(g: u32, seq: u64) -> String {
    format!("manifests/{g:08x}/{seq:016x}.json")
}
/// The seq a [`manifest_key`] names.
pub fn parse_manifest_key(key: &str) -> Option<(u32, u64)> {
    let rest = key.strip_prefix("manifests/")?;
    let (g, s) = rest.split_once('/')?;
    let s = s.strip_suffix(".json")?;
    Some((
        u32::from_str_radix(g, 16).ok()?,
        u64::from_str_radix(s, 16).ok()?,
    ))
}
/// Where snapshots are.
pub const SNAPSHOTS_PREFIX: &str = "snapshots/";
/// A snapshot's folder: `snapshots/<G>/<seq>/`.
pub fn snapshot_prefix(g: u32, seq: u64) -> String {
    format!("snapshots/{g:08x}/{seq:016x}/")
}
/// The (generation, seq) of a snapshot manifest's key.
pub fn parse_snapshot_manifest_key(key: &str) -> Option<(u32, u64)> {
    let rest = key
        .strip_prefix(SNAPSHOTS_PREFIX)?
        .strip_suffix("/manifest.json")?;
    let (g, s) = rest.split_once('/')?;
    Some((
        u32::from_str_radix(g, 16).ok()?,
        u64::from_str_radix(s, 16).ok()?,
    ))
}
/// A listens log segment: its bytes `[from, to)`.
pub fn listens_segment_key(g: u32, from: u64, to: u64) -> String {
    format!("segments/{g:08x}/listens/{from:016x}-{to:016x}")
}
/// A library log segment of the primary's log generation `log_gen`.
pub fn library_segment_key(g: u32, log_gen: u64, from: u64, to: u64) -> String {
    format!("segments/{g:08x}/library/{log_gen:016x}/{from:016x}-{to:016x}")
}
/// A whole library (data file or log) after the primary compacted.
pub fn library_base_key(g: u32, log_gen: u64, part: &str) -> String {
    format!("segments/{g:08x}/library-base/{log_gen:016x}/{part}")
}
/// A JSON document (`accounts`, `userdata`) as of manifest `seq`.
pub fn document_key(g: u32, kind: &str, seq: u64) -> String {
    format!("segments/{g:08x}/{kind}/{seq:016x}.json")
}

/// `generations/<G>.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Generation {
    pub format: u32,
    pub generation: u32,
    /// The primary's node name and URL.
    pub primary: String,
    pub url: String,
    /// When it was written, UNIX milliseconds.
    pub created_ms: i64,
    /// Where the previous generation ends; `None` in generation 1, and
    /// while the promoting node is still applying the old one (readers
    /// wait for it).
    pub cut: Option<Cut>,
    /// Generation 1 has no predecessor.
    pub first: bool,
}

/// The end of a generation: its last manifest a promoted node applied.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct Cut {
    pub generation: u32,
    /// The last manifest of that generation in force (0: none).
    pub seq: u64,
}

/// How far each shipped file goes, in the primary's offsets.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Positions {
    /// The listens log's end (a record boundary).
    pub listens: u64,
    /// The listens log's header version (2 once it holds corrections).
    pub listens_version: u32,
    /// The primary's library log generation and end within it.
    pub library_gen: u64,
    pub library: u64,
}

/// What one object is, for the applier.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Listens,
    Library,
    LibraryData,
    LibraryLog,
    Accounts,
    Userdata,
}

/// One object a manifest names, with its checksums and, for log
/// segments, the range of the file it is.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ObjectRef {
    pub kind: Kind,
    pub key: String,
    pub size: u64,
    pub crc32: u32,
    pub sha256: String,
    #[serde(default)]
    pub from: u64,
    #[serde(default)]
    pub to: u64,
    /// The primary's library log generation (library kinds).
    #[serde(default)]
    pub log_gen: u64,
}

impl ObjectRef {
    /// An object of `bytes`, its checksums computed.
    pub fn of(kind: Kind, key: String, bytes: &[u8]) -> ObjectRef {
        ObjectRef {
            kind,
            key,
            size: bytes.len() as u64,
            crc32: crc32fast::hash(bytes),
            sha256: sha256_hex(bytes),
            from: 0,
            to: 0,
            log_gen: 0,
        }
    }

    /// Whether `bytes` are this object's, by size, CRC-32 and SHA-256.
    pub fn check(&self, bytes: &[u8]) -> Result<(), String> {
        if bytes.len() as u64 != self.size {
            return Err(format!(
                "{}: {} bytes, the manifest says {}",
                self.key,
                bytes.len(),
                self.size
            ));
        }
        if crc32fast::hash(bytes) != self.crc32 || sha256_hex(bytes) != self.sha256 {
            return Err(format!("{}: checksum mismatch", self.key));
        }
        Ok(())
    }
}

/// `manifests/<G>/<seq>.json`: one shipping round.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub format: u32,
    pub generation: u32,
    pub seq: u64,
    pub node: String,
    /// The primary's shipping round (idle rounds write no manifest).
    pub round: u64,
    /// When the primary read its files for this round, UNIX ms: every
    /// commit this round holds happened before.
    pub read_ms: i64,
    pub before: Positions,
    pub after: Positions,
    pub objects: Vec<ObjectRef>,
}

/// `snapshots/<G>/<seq>/manifest.json`: a full copy, consistent with
/// every manifest up to `seq` (later manifests may overlap it; a reader
/// skips what it has).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SnapshotManifest {
    pub format: u32,
    pub generation: u32,
    pub seq: u64,
    pub node: String,
    pub read_ms: i64,
    pub positions: Positions,
    pub objects: Vec<ObjectRef>,
}

/// `lease.json`: the primary's heartbeat (not a lock: Garage does not
/// refuse conflicting writes, docs/cluster.md "Failover").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Lease {
    pub format: u32,
    pub holder: String,
    pub url: String,
    pub generation: u32,
    /// The last manifest shipped.
    pub seq: u64,
    /// The last round finished: every write the primary committed before
    /// that round read its files is in manifests up to `seq`.
    pub round: u64,
    /// When that round read the primary's files, UNIX ms.
    pub read_ms: i64,
    /// When written, UNIX ms.
    pub time_ms: i64,
}

/// `nodes/<node>.json`: for `spindle cluster status`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NodeStatus {
    pub format: u32,
    pub node: String,
    pub url: String,
    pub role: String,
    pub generation: u32,
    /// Primary: the last manifest shipped; replica: the last applied.
    pub seq: u64,
    pub lag_secs: Option<f64>,
    pub time_ms: i64,
    /// Why the node cannot go on, if it cannot.
    #[serde(default)]
    pub error: Option<String>,
}

/// Lower-case hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in d {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Milliseconds since the UNIX epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_in_the_order_to_apply_them() {
        let mut keys = vec![
            manifest_key(2, 16),
            manifest_key(2, 2),
            manifest_key(1, 300),
        ];
        keys.sort();
        assert_eq!(
            keys,
            vec![
                manifest_key(1, 300),
                manifest_key(2, 2),
                manifest_key(2, 16)
            ]
        );
        assert!(listens_segment_key(1, 16, 32) < listens_segment_key(1, 255, 300));
    }

    #[test]
    fn names_parse_back() {
        assert_eq!(
            parse_manifest_key(&manifest_key(3, 0x1f3a)),
            Some((3, 0x1f3a))
        );
        assert_eq!(parse_generation_key(&generation_key(7)), Some(7));
        assert_eq!(parse_generation_key("generations/7.json"), None);
        let snap = format!("{}manifest.json", snapshot_prefix(2, 9));
        assert_eq!(parse_snapshot_manifest_key(&snap), Some((2, 9)));
    }

    #[test]
    fn a_changed_byte_fails_the_check() {
        let r = ObjectRef::of(Kind::Listens, "k".into(), b"hello");
        assert!(r.check(b"hello").is_ok());
        assert!(r.check(b"hellp").is_err());
        assert!(r.check(b"hell").is_err());
    }
}
