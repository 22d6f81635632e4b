//! The `[cluster]` section of the server config (docs/cluster.md): this
//! node's name and address, the bucket the cluster lives in (an S3 cold
//! device of `[tiers]`), and the shipping and polling intervals.
//!
//! ```toml
//! [cluster]
//! role = "primary"                # the role taken when the bucket has no cluster yet
//! node = "spindle-a"              # unique per node
//! advertise_url = "http://10.0.0.1:4533"
//! store = "garage"                # an s3 [[tiers.cold]] device
//! prefix = "cluster/"
//! ship_interval_ms = 1000
//! ship = "async"                  # or "sync"
//! snapshot_every = "6h"
//! poll_interval_ms = 1000
//! lease_secs = 10
//! ```

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use spindle_tiers::config::{ColdKind, S3Config, TiersConfig};

/// How often the primary ships by default.
pub const SHIP_INTERVAL: Duration = Duration::from_millis(1000);
/// How often a replica looks for new manifests by default.
pub const POLL_INTERVAL: Duration = Duration::from_millis(1000);
/// A full snapshot at least this often by default (six hours).
pub const SNAPSHOT_EVERY: Duration = Duration::from_secs(6 * 3600);
/// A primary heartbeat older than this (seconds) is stale by default.
pub const LEASE_SECS: u64 = 10;
/// The shortest interval accepted for shipping and polling: shorter ones
/// would spend the store's requests on nothing.
pub const MIN_INTERVAL: Duration = Duration::from_millis(20);

/// The role a node takes when the bucket holds no cluster yet; once it
/// does, the newest generation object names the primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InitialRole {
    Primary,
    Replica,
}

/// When a write is acknowledged on the primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShipMode {
    /// Once it is on the primary's disk; at most one shipping interval of
    /// acknowledged writes is lost with the primary's machine.
    Async,
    /// Once the round holding it is in the bucket: none is lost.
    Sync,
}

/// The `[cluster]` section, checked.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    pub role: InitialRole,
    pub node: String,
    pub advertise_url: String,
    /// The store's name in `[tiers]`, and its settings, with
    /// [`ClusterConfig::prefix`] as the key prefix.
    pub store: String,
    pub s3: S3Config,
    pub prefix: String,
    pub ship_interval: Duration,
    pub ship: ShipMode,
    pub snapshot_every: Duration,
    pub poll_interval: Duration,
    pub lease: Duration,
}

/// Why the `[cluster]` section is unusable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("{}: [cluster]: {message}", path.display())]
    Invalid {
        path: std::path::PathBuf,
        message: String,
    },
}

#[derive(Deserialize)]
struct RawFile {
    cluster: Option<RawCluster>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCluster {
    role: InitialRole,
    node: String,
    advertise_url: String,
    store: String,
    prefix: Option<String>,
    ship_interval_ms: Option<u64>,
    ship: Option<ShipMode>,
    snapshot_every: Option<String>,
    poll_interval_ms: Option<u64>,
    lease_secs: Option<u64>,
}

/// A duration such as `90s`, `30m`, `6h` or `1d` (a bare number is
/// seconds).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration such as \"90s\", \"30m\" or \"6h\""))?;
    let mult = match unit.trim() {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        u => return Err(format!("{s:?}: unknown unit {u:?} (s, m, h or d)")),
    };
    Ok(Duration::from_secs(n.saturating_mul(mult)))
}

impl ClusterConfig {
    /// The `[cluster]` section of `text` (the settings file at `path`),
    /// if there is one; `tiers` is the same file's `[tiers]`, which must
    /// name the store as an S3 cold device.
    pub fn parse(
        text: &str,
        path: &Path,
        tiers: Option<&TiersConfig>,
    ) -> Result<Option<ClusterConfig>, ConfigError> {
        let bad = |message: String| ConfigError::Invalid {
            path: path.to_owned(),
            message,
        };
        let raw: RawFile =
            toml::from_str(text).map_err(|e| bad(e.to_string().trim_end().to_owned()))?;
        let Some(c) = raw.cluster else {
            return Ok(None);
        };
        if c.node.is_empty()
            || !c
                .node
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_' || ch == '.')
        {
            return Err(bad(format!(
                "node = {:?}: use letters, digits, '-', '_' or '.' (it is part of object names)",
                c.node
            )));
        }
        if !(c.advertise_url.starts_with("http://") || c.advertise_url.starts_with("https://")) {
            return Err(bad(format!(
                "advertise_url = {:?}: an http:// or https:// URL the other nodes reach this one by",
                c.advertise_url
            )));
        }
        let s3 = tiers
            .and_then(|t| t.cold.iter().find(|d| d.name == c.store))
            .ok_or_else(|| {
                bad(format!(
                    "store = {:?}: no [[tiers.cold]] device of that name",
                    c.store
                ))
            })?;
        let ColdKind::S3(s3) = &s3.kind else {
            return Err(bad(format!(
                "store = {:?}: that device is a folder; the cluster needs an s3 device",
                c.store
            )));
        };
        let mut prefix = c.prefix.unwrap_or_else(|| "cluster/".to_owned());
        if !prefix.is_empty() && !prefix.ends_with('/') {
            prefix.push('/');
        }
        let interval = |ms: Option<u64>, default: Duration, key: &str| {
            let d = ms.map_or(default, Duration::from_millis);
            if d < MIN_INTERVAL {
                return Err(bad(format!(
                    "{key} = {}: at least {} ms",
                    d.as_millis(),
                    MIN_INTERVAL.as_millis()
                )));
            }
            Ok(d)
        };
        let snapshot_every = match c.snapshot_every {
            Some(s) => parse_duration(&s).map_err(|m| bad(format!("snapshot_every: {m}")))?,
            None => SNAPSHOT_EVERY,
        };
        let lease_secs = c.lease_secs.unwrap_or(LEASE_SECS);
        if lease_secs == 0 {
            return Err(bad("lease_secs = 0: at least 1".into()));
        }
        let mut s3 = s3.clone();
        s3.prefix = format!("{}{}", s3.prefix, prefix);
        Ok(Some(ClusterConfig {
            role: c.role,
            node: c.node,
            advertise_url: c.advertise_url.trim_end_matches('/').to_owned(),
            store: c.store,
            s3,
            prefix,
            ship_interval: interval(c.ship_interval_ms, SHIP_INTERVAL, "ship_interval_ms")?,
            ship: c.ship.unwrap_or(ShipMode::Async),
            snapshot_every: snapshot_every.max(Duration::from_secs(60)),
            poll_interval: interval(c.poll_interval_ms, POLL_INTERVAL, "poll_interval_ms")?,
            lease: Duration::from_secs(lease_secs),
        }))
    }
}

impl ClusterConfig {
    /// The `[cluster]` section of the settings file at `path`, else of
    /// the default one ([`spindle_tiers::config::config_path`]), for the
    /// `spindle cluster` commands; an error says which file lacks it.
    pub fn find(path: Option<&Path>) -> Result<ClusterConfig, ConfigError> {
        let Some(file) = spindle_tiers::config::config_path(path) else {
            return Err(ConfigError::Invalid {
                path: path.map_or_else(|| "server.toml".into(), Path::to_owned),
                message: "no settings file: pass --config FILE (the server's, with [tiers] and [cluster])".into(),
            });
        };
        let bad = |message: String| ConfigError::Invalid {
            path: file.clone(),
            message,
        };
        let text =
            std::fs::read_to_string(&file).map_err(|e| bad(format!("cannot be read: {e}")))?;
        let tiers = TiersConfig::parse(&text, &file).map_err(|e| bad(e.to_string()))?;
        ClusterConfig::parse(&text, &file, tiers.as_ref())?
            .ok_or_else(|| bad("the file has no [cluster] section".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIERS: &str = r#"
[tiers]
mindevcount = 1
[[tiers.cold]]
name = "garage"
kind = "s3"
endpoints = ["http://127.0.0.1:3900"]
region = "garage"
bucket = "spindle"
access_key = "GK1"
secret_key = "s"
path_style = true
prefix = "music/"
[[tiers.cold]]
name = "music"
kind = "folder"
path = "/srv/music"
"#;

    fn parse(extra: &str) -> Result<Option<ClusterConfig>, ConfigError> {
        let text = format!("{TIERS}\n{extra}");
        let path = Path::new("server.toml");
        let tiers = TiersConfig::parse(&text, path).unwrap();
        ClusterConfig::parse(&text, path, tiers.as_ref())
    }

    #[test]
    fn a_file_without_the_section_is_no_cluster() {
        assert!(parse("").unwrap().is_none());
    }

    #[test]
    fn the_section_takes_its_store_from_the_tiers_and_adds_its_prefix() {
        let c = parse(
            "[cluster]\nrole = \"replica\"\nnode = \"b\"\nadvertise_url = \"http://10.0.0.2:4533/\"\nstore = \"garage\"\nship = \"sync\"\nsnapshot_every = \"30m\"",
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.role, InitialRole::Replica);
        assert_eq!(c.s3.prefix, "music/cluster/");
        assert_eq!(c.s3.bucket, "spindle");
        assert_eq!(c.advertise_url, "http://10.0.0.2:4533");
        assert_eq!(c.ship, ShipMode::Sync);
        assert_eq!(c.snapshot_every, Duration::from_secs(1800));
        assert_eq!(c.ship_interval, SHIP_INTERVAL);
    }

    #[test]
    fn a_folder_device_or_an_unknown_store_is_refused_with_its_name() {
        let base = "[cluster]\nrole = \"primary\"\nnode = \"a\"\nadvertise_url = \"http://h:1\"\n";
        let e = parse(&format!("{base}store = \"music\""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"music\"") && e.contains("s3"), "{e}");
        let e = parse(&format!("{base}store = \"nope\""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no [[tiers.cold]]"), "{e}");
    }

    #[test]
    fn a_bad_node_name_unknown_key_or_tiny_interval_is_refused() {
        let ok = "role = \"primary\"\nadvertise_url = \"http://h:1\"\nstore = \"garage\"\n";
        assert!(parse(&format!("[cluster]\n{ok}node = \"a/b\"")).is_err());
        assert!(parse(&format!("[cluster]\n{ok}node = \"a\"\nshipping = 1")).is_err());
        assert!(parse(&format!(
            "[cluster]\n{ok}node = \"a\"\nship_interval_ms = 1"
        ))
        .is_err());
    }

    #[test]
    fn durations_take_units_and_refuse_others() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("6h").unwrap(), Duration::from_secs(21_600));
        assert_eq!(parse_duration("120").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("6 weeks").is_err());
    }
}
