//! The `[tiers]` section of the server's TOML config (`server.toml`):
//! cold devices, the hot folder and its byte budget, `mindevcount`, the
//! promotion bandwidth. `docs/tiers.md` describes every key.
//!
//! Parsing is strict inside `[tiers]` (an unknown key is an error that
//! names it, so a typo never silently turns a feature off); other
//! sections of the file belong to other parts of the server and are
//! ignored here.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Why a config could not be used. Each message says where and what.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("reading {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
}

/// What a cold device may be used for (MogileFS's device states).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceState {
    /// Read and written.
    Alive,
    /// Read, never written (the music folders always are).
    Readonly,
    /// Neither read nor written (maintenance, a dying disk).
    Down,
}

/// One cold device.
#[derive(Debug, Clone, PartialEq)]
pub struct ColdConfig {
    /// A short unique name (status, the replica index).
    pub name: String,
    pub state: DeviceState,
    pub kind: ColdKind,
}

/// Where a cold device keeps its files.
#[derive(Debug, Clone, PartialEq)]
pub enum ColdKind {
    /// A local folder; a track's key is its path below it.
    Folder { path: PathBuf },
    /// An S3 bucket (any S3-compatible store).
    S3(S3Config),
}

/// An S3 bucket and how to reach it.
#[derive(Clone, PartialEq)]
pub struct S3Config {
    /// One or more endpoints of the same store (e.g. every gateway of a
    /// Garage cluster); requests go to the first that answers.
    pub endpoints: Vec<String>,
    pub region: String,
    pub bucket: String,
    pub access_key: String,
    pub secret_key: String,
    /// `http://host/bucket/key` rather than `http://bucket.host/key`.
    pub path_style: bool,
    /// Prepended to every key (e.g. `music/`).
    pub prefix: String,
}

impl std::fmt::Debug for S3Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Config")
            .field("endpoints", &self.endpoints)
            .field("region", &self.region)
            .field("bucket", &self.bucket)
            .field("access_key", &self.access_key)
            .field("secret_key", &"<hidden>")
            .field("path_style", &self.path_style)
            .field("prefix", &self.prefix)
            .finish()
    }
}

/// The hot folder.
#[derive(Debug, Clone, PartialEq)]
pub struct HotConfig {
    pub path: PathBuf,
    /// Bytes the hot copies may take, at most.
    pub budget: u64,
}

/// The whole `[tiers]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct TiersConfig {
    pub cold: Vec<ColdConfig>,
    pub hot: Option<HotConfig>,
    /// Copies every uploaded track keeps across cold devices.
    pub mindevcount: usize,
    /// Bytes per second promotion and demotion may copy.
    pub promote_bandwidth: u64,
    /// A read that sends nothing for this long fails over to another copy.
    pub stall_timeout_ms: u64,
    /// Seconds a device that failed is skipped before it is tried again.
    pub retry_after_secs: u64,
    /// Seconds a cold device must fail its health probe before its copies
    /// stop counting towards `mindevcount` and are copied elsewhere.
    pub rereplicate_after_secs: u64,
    /// Bytes per second re-replication may copy.
    pub rereplicate_bandwidth: u64,
}

impl Default for TiersConfig {
    fn default() -> Self {
        TiersConfig {
            cold: Vec::new(),
            hot: None,
            mindevcount: 2,
            promote_bandwidth: 32 << 20,
            stall_timeout_ms: 2000,
            retry_after_secs: 30,
            rereplicate_after_secs: 60,
            rereplicate_bandwidth: 16 << 20,
        }
    }
}

#[derive(Deserialize)]
struct RawFile {
    tiers: Option<RawTiers>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTiers {
    #[serde(default)]
    cold: Vec<RawCold>,
    hot: Option<RawHot>,
    mindevcount: Option<i64>,
    promote_bandwidth: Option<Size>,
    stall_timeout_ms: Option<u64>,
    retry_after_secs: Option<u64>,
    rereplicate_after_secs: Option<u64>,
    rereplicate_bandwidth: Option<Size>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHot {
    path: PathBuf,
    budget: Size,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCold {
    name: Option<String>,
    kind: String,
    state: Option<DeviceState>,
    path: Option<PathBuf>,
    endpoint: Option<String>,
    endpoints: Option<Vec<String>>,
    region: Option<String>,
    bucket: Option<String>,
    access_key: Option<String>,
    secret_key: Option<String>,
    path_style: Option<bool>,
    prefix: Option<String>,
}

/// A byte count: an integer, or a string such as `"20GiB"`, `"500 MB"`.
#[derive(Debug, Clone, Copy)]
struct Size(u64);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_size(d).map(Size)
    }
}

/// Reads a byte count as the settings files write one: an integer, or a
/// string [`parse_size`] reads (`"20GiB"`); a negative integer is an
/// error. The server's settings read their sizes with it too.
pub fn deserialize_size<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Int(i64),
        Text(String),
    }
    match Either::deserialize(d)? {
        Either::Int(n) => u64::try_from(n)
            .map_err(|_| serde::de::Error::custom(format!("a size cannot be negative ({n})"))),
        Either::Text(s) => parse_size(&s).map_err(serde::de::Error::custom),
    }
}

/// Parses `"123"`, `"64KiB"`, `"20 GiB"`, `"500MB"`, `"1.5G"` into bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 500MiB, 20GB, 1048576)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "kb" => 1000,
        "m" | "mib" => 1 << 20,
        "mb" => 1_000_000,
        "g" | "gib" => 1 << 30,
        "gb" => 1_000_000_000,
        "t" | "tib" => 1 << 40,
        "tb" => 1_000_000_000_000,
        u => {
            return Err(format!(
                "{s:?}: unknown size unit {u:?} (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"
            ))
        }
    };
    Ok((n * mult as f64) as u64)
}

impl TiersConfig {
    /// Reads the `[tiers]` section of a server config file. `Ok(None)`
    /// when the file has no such section.
    pub fn load(path: &Path) -> Result<Option<TiersConfig>, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses the text of a server config file; `path` is only used in
    /// messages.
    pub fn parse(text: &str, path: &Path) -> Result<Option<TiersConfig>, ConfigError> {
        let raw: RawFile = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: e.to_string().trim_end().to_owned(),
        })?;
        let Some(t) = raw.tiers else {
            return Ok(None);
        };
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_owned(),
            message,
        };
        let mut cfg = TiersConfig::default();
        if let Some(m) = t.mindevcount {
            if m < 1 {
                return Err(invalid(format!(
                    "[tiers] mindevcount = {m}: every track needs at least one copy"
                )));
            }
            cfg.mindevcount = m as usize;
        }
        if let Some(b) = t.promote_bandwidth {
            if b.0 == 0 {
                return Err(invalid(
                    "[tiers] promote_bandwidth = 0: promotion would never finish".into(),
                ));
            }
            cfg.promote_bandwidth = b.0;
        }
        if let Some(s) = t.stall_timeout_ms {
            cfg.stall_timeout_ms = s.max(1);
        }
        if let Some(s) = t.retry_after_secs {
            cfg.retry_after_secs = s;
        }
        if let Some(s) = t.rereplicate_after_secs {
            cfg.rereplicate_after_secs = s;
        }
        if let Some(b) = t.rereplicate_bandwidth {
            if b.0 == 0 {
                return Err(invalid(
                    "[tiers] rereplicate_bandwidth = 0: re-replication would never finish".into(),
                ));
            }
            cfg.rereplicate_bandwidth = b.0;
        }
        if let Some(h) = t.hot {
            if h.budget.0 == 0 {
                return Err(invalid("[tiers.hot] budget = 0: the hot folder could hold nothing; remove [tiers.hot] instead".into()));
            }
            cfg.hot = Some(HotConfig {
                path: h.path,
                budget: h.budget.0,
            });
        }
        for (i, c) in t.cold.into_iter().enumerate() {
            let n = i + 1;
            let name = c.name.clone().unwrap_or_else(|| format!("cold{n}"));
            if name.is_empty() || name.contains(|ch: char| ch.is_whitespace() || ch == '/') {
                return Err(invalid(format!(
                    "[[tiers.cold]] #{n}: name {name:?} must be non-empty, without spaces or '/'"
                )));
            }
            if cfg.cold.iter().any(|d| d.name == name) {
                return Err(invalid(format!(
                    "[[tiers.cold]] #{n}: the name {name:?} is used twice"
                )));
            }
            let here = format!("[[tiers.cold]] #{n} ({name})");
            let kind = match c.kind.as_str() {
                "folder" => {
                    let Some(path) = c.path else {
                        return Err(invalid(format!(
                            "{here}: kind = \"folder\" needs path = \"...\""
                        )));
                    };
                    for (k, v) in [
                        ("endpoint", c.endpoint.is_some() || c.endpoints.is_some()),
                        ("bucket", c.bucket.is_some()),
                        ("access_key", c.access_key.is_some()),
                        ("secret_key", c.secret_key.is_some()),
                    ] {
                        if v {
                            return Err(invalid(format!(
                                "{here}: {k} is for kind = \"s3\", not \"folder\""
                            )));
                        }
                    }
                    ColdKind::Folder { path }
                }
                "s3" => {
                    let mut endpoints = c.endpoints.unwrap_or_default();
                    if let Some(e) = c.endpoint {
                        endpoints.insert(0, e);
                    }
                    if endpoints.is_empty() {
                        return Err(invalid(format!(
                            "{here}: kind = \"s3\" needs endpoint = \"http://host:port\""
                        )));
                    }
                    for e in &endpoints {
                        if !(e.starts_with("http://") || e.starts_with("https://")) {
                            return Err(invalid(format!(
                                "{here}: endpoint {e:?} must start with http:// or https://"
                            )));
                        }
                    }
                    let need = |v: Option<String>, k: &str| {
                        v.filter(|s| !s.is_empty()).ok_or_else(|| {
                            invalid(format!("{here}: kind = \"s3\" needs {k} = \"...\""))
                        })
                    };
                    if c.path.is_some() {
                        return Err(invalid(format!(
                            "{here}: path is for kind = \"folder\"; an S3 device uses bucket and prefix"
                        )));
                    }
                    ColdKind::S3(S3Config {
                        endpoints: endpoints
                            .into_iter()
                            .map(|e| e.trim_end_matches('/').to_owned())
                            .collect(),
                        region: c.region.unwrap_or_else(|| "us-east-1".into()),
                        bucket: need(c.bucket, "bucket")?,
                        access_key: need(c.access_key, "access_key")?,
                        secret_key: need(c.secret_key, "secret_key")?,
                        path_style: c.path_style.unwrap_or(true),
                        prefix: c.prefix.unwrap_or_default(),
                    })
                }
                other => {
                    return Err(invalid(format!(
                        "{here}: kind = {other:?}; use \"folder\" or \"s3\""
                    )))
                }
            };
            cfg.cold.push(ColdConfig {
                name,
                state: c.state.unwrap_or(DeviceState::Alive),
                kind,
            });
        }
        let writable = cfg
            .cold
            .iter()
            .filter(|d| d.state == DeviceState::Alive)
            .count();
        if t.mindevcount.is_some() && cfg.mindevcount > writable + 1 {
            return Err(invalid(format!(
                "[tiers] mindevcount = {} but only {writable} cold device(s) can be written (plus the music folder)",
                cfg.mindevcount
            )));
        }
        Ok(Some(cfg))
    }
}

/// The environment variable that names the server config file.
pub const CONFIG_ENV: &str = "SPINDLE_SERVER_CONFIG";

/// The server config file to read: `path`, else `$SPINDLE_SERVER_CONFIG`
/// (when set and not empty), else [`default_config_path`] if that file
/// exists; `None` when there is none (docs/tiers.md).
pub fn config_path(path: Option<&Path>) -> Option<PathBuf> {
    path.map(Path::to_owned)
        .or_else(|| {
            std::env::var_os(CONFIG_ENV)
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
        })
        .or_else(|| default_config_path().filter(|p| p.is_file()))
}

impl TiersConfig {
    /// The `[tiers]` section of the server config [`config_path`] finds;
    /// `Ok(None)` when there is no config file or it has no such section.
    pub fn find(path: Option<&Path>) -> Result<Option<TiersConfig>, ConfigError> {
        match config_path(path) {
            Some(path) => TiersConfig::load(&path),
            None => Ok(None),
        }
    }
}

/// The default location of the server config:
/// `$XDG_CONFIG_HOME/spindle/server.toml`, else `~/.config/spindle/server.toml`
/// (the XDG lookup is the `directories` crate's); none without a home.
pub fn default_config_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "spindle").map(|d| d.config_dir().join("server.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Option<TiersConfig>, String> {
        TiersConfig::parse(text, Path::new("server.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_config_named_on_the_command_line_is_the_one_read() {
        let dir = tempfile::tempdir().unwrap();
        let with = dir.path().join("with.toml");
        std::fs::write(
            &with,
            "[tiers]\n\n[[tiers.cold]]\nkind = \"folder\"\npath = \"/a\"\n",
        )
        .unwrap();
        let without = dir.path().join("without.toml");
        std::fs::write(&without, "[listen]\n").unwrap();
        assert_eq!(config_path(Some(&with)), Some(with.clone()));
        assert!(TiersConfig::find(Some(&with)).unwrap().is_some());
        assert!(TiersConfig::find(Some(&without)).unwrap().is_none());
        let missing = dir.path().join("missing.toml");
        assert!(TiersConfig::find(Some(&missing)).is_err());
    }

    #[test]
    fn a_full_config_parses() {
        let c = parse(
            r#"
[listen]
other = "sections are ignored"

[tiers]
mindevcount = 2
promote_bandwidth = "16MiB"
rereplicate_after_secs = 5
rereplicate_bandwidth = "4MiB"

[tiers.hot]
path = "/ssd/hot"
budget = "20GiB"

[[tiers.cold]]
name = "garage"
kind = "s3"
endpoints = ["http://127.0.0.1:3900/", "http://127.0.0.1:3910"]
region = "garage"
bucket = "music"
access_key = "GK1"
secret_key = "s3cr3t"

[[tiers.cold]]
kind = "folder"
path = "/mnt/archive"
state = "readonly"
"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.mindevcount, 2);
        assert_eq!(c.promote_bandwidth, 16 << 20);
        assert_eq!(
            (c.rereplicate_after_secs, c.rereplicate_bandwidth),
            (5, 4 << 20)
        );
        assert_eq!(c.hot.as_ref().unwrap().budget, 20 << 30);
        assert_eq!(c.cold.len(), 2);
        let ColdKind::S3(s3) = &c.cold[0].kind else {
            panic!("not s3")
        };
        assert_eq!(s3.endpoints[0], "http://127.0.0.1:3900");
        assert!(s3.path_style);
        assert_eq!(c.cold[1].name, "cold2");
        assert_eq!(c.cold[1].state, DeviceState::Readonly);
        assert!(
            !format!("{s3:?}").contains("s3cr3t"),
            "secrets stay out of Debug"
        );
    }

    #[test]
    fn no_tiers_section_is_none() {
        assert_eq!(parse("[other]\nx = 1\n").unwrap(), None);
    }

    #[test]
    fn config_errors_say_where_and_what() {
        let cases: &[(&str, &str)] = &[
            ("[tiers]\nmindevcount = 0\n", "mindevcount = 0"),
            ("[tiers]\nmindevcont = 2\n", "unknown field `mindevcont`"),
            ("[tiers.hot]\npath = \"/x\"\nbudget = \"12 parsecs\"\n", "unknown size unit"),
            ("[tiers.hot]\npath = \"/x\"\n", "missing field `budget`"),
            ("[tiers.hot]\npath = \"/x\"\nbudget = 0\n", "budget = 0"),
            ("[[tiers.cold]]\nkind = \"tape\"\n", "kind = \"tape\"; use \"folder\" or \"s3\""),
            ("[[tiers.cold]]\nkind = \"folder\"\n", "needs path"),
            (
                "[[tiers.cold]]\nkind = \"s3\"\nendpoint = \"http://h\"\naccess_key = \"a\"\nsecret_key = \"b\"\n",
                "#1 (cold1): kind = \"s3\" needs bucket",
            ),
            (
                "[[tiers.cold]]\nkind = \"s3\"\nendpoint = \"h:1\"\nbucket = \"b\"\naccess_key = \"a\"\nsecret_key = \"b\"\n",
                "must start with http://",
            ),
            ("[[tiers.cold]]\nkind = \"s3\"\nbucket = \"b\"\n", "needs endpoint"),
            (
                "[[tiers.cold]]\nkind = \"folder\"\npath = \"/a\"\nbucket = \"b\"\n",
                "bucket is for kind = \"s3\"",
            ),
            (
                "[[tiers.cold]]\nname = \"a\"\nkind = \"folder\"\npath = \"/a\"\n[[tiers.cold]]\nname = \"a\"\nkind = \"folder\"\npath = \"/b\"\n",
                "used twice",
            ),
            (
                "[tiers]\nmindevcount = 3\n[[tiers.cold]]\nkind = \"folder\"\npath = \"/a\"\n",
                "only 1 cold device(s) can be written",
            ),
            ("[[tiers.cold]]\nkind = \"folder\"\npath = \"/a\"\nstate = \"zombie\"\n", "unknown variant `zombie`"),
            ("[tiers\n", "server.toml: TOML parse error at line 1"),
        ];
        for (text, want) in cases {
            let e = parse(text).expect_err(text);
            assert!(e.contains(want), "{text:?}: {e:?} does not say {want:?}");
            assert!(e.starts_with("server.toml"), "{e}");
        }
    }

    #[test]
    fn sizes_parse_with_units() {
        for (s, n) in [
            ("0", 0),
            ("512", 512),
            ("64KiB", 64 << 10),
            ("20 GiB", 20 << 30),
            ("500MB", 500_000_000),
            ("1.5G", 3 << 29),
        ] {
            assert_eq!(parse_size(s), Ok(n), "{s}");
        }
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5 furlongs").is_err());
    }
}
