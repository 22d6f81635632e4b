//! The `[transcode]` section of the server config (docs/transcoding.md):
//! where ffmpeg is, how many encodes run at once and how many wait, the
//! cache's budget when there is no hot tier, and the rules that give
//! users and clients their default format and bitrate.
//!
//! ```toml
//! [transcode]
//! ffmpeg = "/usr/bin/ffmpeg"   # default: "ffmpeg" on PATH
//! max_concurrent = 4           # default: the number of cores
//! queue = 64                   # encodes waiting for a slot; more get 503
//! queue_timeout = 30           # seconds a request waits for a slot; then 503
//! stall_timeout = 20           # seconds a client may fall behind; then cut off
//! default_format = "mp3"       # when only maxBitRate asks for less
//! cache_budget = "2GiB"        # the own cache, without a hot tier
//!
//! [[transcode.rule]]
//! client = "Symfonium"         # caseless glob on the `c` parameter
//! query = "suffix:flac"        # a Spindle query the track must match
//! format = "opus"
//! bitrate = 160
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;
use spindle_query::{Coll, Filter, FilterOp, Value};

use super::format::Format;
use spindle_tiers::config::ConfigError as FileError;

/// The cache's byte budget when there is no hot tier (2 GiB: about 900
/// tracks of four minutes at 160 kbit/s).
pub const CACHE_BUDGET: u64 = 2 << 30;
/// Encodes that may wait for a slot before requests are refused with 503.
pub const QUEUE: usize = 64;
/// How long a request waits for an encode slot before it is answered
/// 503 with `Retry-After`: 30 seconds.
pub const QUEUE_TIMEOUT_SECS: u64 = 30;
/// The window over which a live transcode's client must take a quarter of
/// its bitrate, else the encode is stopped and its slot freed: 20
/// seconds ([`super::pace::Pace`]).
pub const STALL_TIMEOUT_SECS: u64 = 20;
/// The folder of the own cache, under the data dir.
pub const CACHE_DIR: &str = "transcode-cache";

/// Transcoding settings; [`TranscodeConfig::default`] runs `ffmpeg` from
/// `PATH` with no rules.
#[derive(Debug, Clone)]
pub struct TranscodeConfig {
    /// The ffmpeg binary.
    pub ffmpeg: PathBuf,
    /// Encodes running at once (default: the number of cores).
    pub max_concurrent: usize,
    /// Encodes waiting for a slot at most ([`QUEUE`]).
    pub queue: usize,
    /// How long a request waits for a slot ([`QUEUE_TIMEOUT_SECS`]).
    pub queue_timeout: std::time::Duration,
    /// The window of a client's minimum pace ([`STALL_TIMEOUT_SECS`]).
    pub stall_timeout: std::time::Duration,
    /// The format when a request (or rule) limits the bitrate without
    /// naming one.
    pub default_format: Format,
    /// Where transcodes are cached when there is no hot tier (`None`: not
    /// cached then). The binary sets `DATA/`[`CACHE_DIR`].
    pub cache_dir: Option<PathBuf>,
    /// That cache's byte budget ([`CACHE_BUDGET`]).
    pub cache_budget: u64,
    /// The rules, first match wins.
    pub rules: Vec<Rule>,
}

impl Default for TranscodeConfig {
    fn default() -> Self {
        TranscodeConfig {
            ffmpeg: PathBuf::from("ffmpeg"),
            max_concurrent: std::thread::available_parallelism().map_or(2, |n| n.get()),
            queue: QUEUE,
            queue_timeout: std::time::Duration::from_secs(QUEUE_TIMEOUT_SECS),
            stall_timeout: std::time::Duration::from_secs(STALL_TIMEOUT_SECS),
            default_format: Format::Mp3,
            cache_dir: None,
            cache_budget: CACHE_BUDGET,
            rules: Vec::new(),
        }
    }
}

/// One rule: when the user, the client and the track match, the format
/// (`None`: raw) and bitrate a request gets unless it asks otherwise.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Exact user name; `None`: any.
    pub user: Option<String>,
    /// Caseless glob on the client name (`c=`; the web player is
    /// `Spindle web`); `None`: any.
    pub client: Option<String>,
    /// The pattern as written, and parsed (`suffix:X` stands for the file
    /// name's extension: `url~*.X`); `None`: any track.
    pub query: Option<(String, Coll)>,
    pub format: Option<Format>,
    /// kbit/s; `None`: the format's default.
    pub bitrate: Option<u32>,
}

impl Rule {
    /// Whether `user` with client `client` falls under this rule (the
    /// track is matched separately, against the library).
    pub fn covers(&self, user: &str, client: &str) -> bool {
        self.user.as_deref().is_none_or(|u| u == user)
            && self.client.as_deref().is_none_or(|c| {
                spindle_query::glob_match(&c.to_lowercase(), &client.to_lowercase())
            })
    }
}

/// Why the `[transcode]` section was refused: the server config file's
/// errors, as the `[tiers]` section reports them (the file could not be
/// read, is not TOML, or the section is invalid: `[transcode] …`).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct ConfigError(#[from] pub FileError);

#[derive(Deserialize)]
struct RawFile {
    transcode: Option<RawTranscode>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTranscode {
    ffmpeg: Option<PathBuf>,
    max_concurrent: Option<usize>,
    queue: Option<usize>,
    queue_timeout: Option<u64>,
    stall_timeout: Option<u64>,
    default_format: Option<String>,
    cache_dir: Option<PathBuf>,
    cache_budget: Option<toml::Value>,
    #[serde(default)]
    rule: Vec<RawRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    user: Option<String>,
    client: Option<String>,
    query: Option<String>,
    format: String,
    bitrate: Option<u32>,
}

impl TranscodeConfig {
    /// The `[transcode]` section of the server config at `path`; the
    /// defaults when the file has none.
    pub fn load(path: &Path) -> Result<TranscodeConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| FileError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses the text of a server config file; `path` is for messages.
    pub fn parse(text: &str, path: &Path) -> Result<TranscodeConfig, ConfigError> {
        let raw: RawFile = toml::from_str(text).map_err(|e| FileError::Parse {
            path: path.to_owned(),
            message: e.to_string().trim_end().to_owned(),
        })?;
        let mut cfg = TranscodeConfig::default();
        let Some(t) = raw.transcode else {
            return Ok(cfg);
        };
        let invalid = |message: String| {
            ConfigError(FileError::Invalid {
                path: path.to_owned(),
                message: format!("[transcode] {message}"),
            })
        };
        if let Some(f) = t.ffmpeg {
            cfg.ffmpeg = f;
        }
        if let Some(n) = t.max_concurrent {
            if n == 0 {
                return Err(invalid(
                    "max_concurrent = 0: nothing could ever be transcoded; use 1 or more".into(),
                ));
            }
            cfg.max_concurrent = n;
        }
        if let Some(q) = t.queue {
            cfg.queue = q;
        }
        for (name, value, field) in [
            ("queue_timeout", t.queue_timeout, &mut cfg.queue_timeout),
            ("stall_timeout", t.stall_timeout, &mut cfg.stall_timeout),
        ] {
            match value {
                Some(0) => {
                    return Err(invalid(format!(
                        "{name} = 0: give the number of seconds, 1 or more"
                    )))
                }
                Some(n) => *field = std::time::Duration::from_secs(n),
                None => {}
            }
        }
        if let Some(f) = t.default_format {
            cfg.default_format = Format::parse(&f)
                .map_err(|e| invalid(format!("default_format: {e}")))?
                .ok_or_else(|| {
                    invalid("default_format = \"raw\": name a format to transcode to".into())
                })?;
        }
        cfg.cache_dir = t.cache_dir;
        if let Some(b) = t.cache_budget {
            cfg.cache_budget = match b {
                toml::Value::Integer(n) if n >= 0 => n as u64,
                toml::Value::String(s) => spindle_tiers::config::parse_size(&s)
                    .map_err(|e| invalid(format!("cache_budget: {e}")))?,
                other => {
                    return Err(invalid(format!(
                        "cache_budget = {other}: use a size such as \"2GiB\""
                    )))
                }
            };
        }
        for (n, r) in t.rule.into_iter().enumerate() {
            let at = |m: String| invalid(format!("rule {}: {m}", n + 1));
            let format = Format::parse(&r.format).map_err(|e| at(e.to_string()))?;
            let query = match r.query {
                None => None,
                Some(q) => {
                    let parsed = spindle_query::parse(&q)
                        .map_err(|e| at(format!("query {q:?} does not parse: {e}")))?;
                    Some((q, with_suffix(parsed.coll)))
                }
            };
            cfg.rules.push(Rule {
                user: r.user,
                client: r.client,
                query,
                format,
                bitrate: r.bitrate.filter(|&b| b > 0),
            });
        }
        Ok(cfg)
    }
}

/// `suffix:X` (the library has no such property; clients know the
/// file's extension as "suffix") becomes `url~*.X`.
fn with_suffix(c: Coll) -> Coll {
    let each = |v: Vec<Coll>| v.into_iter().map(with_suffix).collect();
    match c {
        Coll::Filter { filter, operand } => {
            let filter = match (&filter.field, &filter.op) {
                (spindle_query::Field::Key(k), FilterOp::Equals(Value::Str(x)))
                    if k == "suffix" =>
                {
                    Filter::key("url", FilterOp::Match(format!("*.{x}")))
                }
                _ => filter,
            };
            Coll::Filter {
                filter,
                operand: Box::new(with_suffix(*operand)),
            }
        }
        Coll::Union(v) => Coll::Union(each(v)),
        Coll::Intersection(v) => Coll::Intersection(each(v)),
        Coll::Complement(o) => Coll::Complement(Box::new(with_suffix(*o))),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<TranscodeConfig, String> {
        TranscodeConfig::parse(text, Path::new("server.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_full_section_parses_with_its_rules_in_order() {
        let c = parse(
            r#"
[tiers]
other = "sections are ignored"

[transcode]
ffmpeg = "/opt/ffmpeg"
max_concurrent = 2
queue = 5
queue_timeout = 7
stall_timeout = 9
default_format = "opus"
cache_budget = "100MiB"

[[transcode.rule]]
client = "Symfonium"
query = "suffix:flac"
format = "opus"
bitrate = 160

[[transcode.rule]]
user = "ann"
format = "raw"
"#,
        )
        .unwrap();
        assert_eq!(c.ffmpeg, PathBuf::from("/opt/ffmpeg"));
        assert_eq!((c.max_concurrent, c.queue), (2, 5));
        assert_eq!(c.queue_timeout, std::time::Duration::from_secs(7));
        assert_eq!(c.stall_timeout, std::time::Duration::from_secs(9));
        assert_eq!(c.default_format, Format::Opus);
        assert_eq!(c.cache_budget, 100 << 20);
        assert_eq!(c.rules.len(), 2);
        let r = &c.rules[0];
        assert_eq!((r.format, r.bitrate), (Some(Format::Opus), Some(160)));
        assert!(r.covers("bob", "symfonium") && !r.covers("bob", "DSub"));
        assert!(c.rules[1].covers("ann", "any") && !c.rules[1].covers("bob", "any"));
        assert_eq!(c.rules[1].format, None);
        let q = &r.query.as_ref().unwrap().1;
        assert_eq!(
            *q,
            Coll::filter(Filter::key("url", FilterOp::Match("*.flac".into())))
        );
    }

    #[test]
    fn mistakes_are_named_with_their_rule() {
        for (text, want) in [
            ("[transcode]\nmax_concurrent = 0\n", "max_concurrent = 0"),
            ("[transcode]\nstall_timeout = 0\n", "stall_timeout = 0"),
            (
                "[transcode]\n[[transcode.rule]]\nformat = \"wma\"\n",
                "rule 1: unknown format",
            ),
            (
                "[transcode]\n[[transcode.rule]]\nformat = \"mp3\"\nquery = \"artist:(\"\n",
                "rule 1: query",
            ),
            ("[transcode]\nffmpg = \"x\"\n", "unknown field"),
            (
                "[transcode]\ncache_budget = \"3 parsecs\"\n",
                "cache_budget",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
        assert!(parse("").unwrap().rules.is_empty());
    }
}
