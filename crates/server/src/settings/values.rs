//! The value types of the settings file that check themselves while they
//! are read, so a bad value is an error of the TOML reader, which names
//! the key and the line: sizes, the base path, a header name, the log
//! format, the IO engine, proxy addresses, the public URL.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::proxy::Cidr;

/// A byte count: an integer, or a string such as `"128KiB"`, `"4 MiB"`,
/// `"20GB"` (the units of `docs/tiers.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u64);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        spindle_tiers::config::deserialize_size(d).map(Size)
    }
}

impl Serialize for Size {
    /// `"4MiB"` when the count is a whole number of KiB, MiB or GiB, else
    /// the integer.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = self.0;
        for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
            if n > 0 && n.is_multiple_of(1u64 << shift) {
                return s.serialize_str(&format!("{}{unit}", n >> shift));
            }
        }
        s.serialize_i64(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

/// A value read from a string by `FromStr`, written back by `Display`.
macro_rules! string_value {
    ($t:ty) => {
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_string())
            }
        }
    };
}

string_value!(Cidr);
string_value!(BasePath);
string_value!(HeaderName);
string_value!(Engine);
string_value!(PublicUrl);

/// The URL path every route is served under: empty (the root), or
/// `/music`-like (a leading `/`, no trailing `/`, no `?`, `#`, `%` or
/// space).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BasePath(pub String);

impl std::str::FromStr for BasePath {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim().trim_end_matches('/');
        if t.is_empty() {
            return Ok(BasePath(String::new()));
        }
        if !t.starts_with('/') {
            return Err(format!("{s:?} must start with '/' (e.g. \"/music\")"));
        }
        if t.contains(['?', '#', '%', ' ', '\\']) || t.contains("//") || t.contains("/../") {
            return Err(format!(
                "{s:?}: a base path is plain path segments, e.g. \"/music\" or \"/apps/spindle\""
            ));
        }
        Ok(BasePath(t.to_owned()))
    }
}

impl fmt::Display for BasePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An HTTP header name (the trusted-header login's `Remote-User`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderName(pub axum::http::HeaderName);

impl std::str::FromStr for HeaderName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        axum::http::HeaderName::from_bytes(s.trim().as_bytes())
            .map(HeaderName)
            .map_err(|_| format!("{s:?} is not an HTTP header name (e.g. \"Remote-User\")"))
    }
}

impl fmt::Display for HeaderName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.as_str())
    }
}

/// How streams read files ([`crate::stream::ReadEngine`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Engine(pub crate::stream::ReadEngine);

impl std::str::FromStr for Engine {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        crate::stream::ReadEngine::parse(s.trim()).map(Engine)
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name())
    }
}

/// The URL clients reach the server by: `http://` or `https://`, a host,
/// an optional path (the base path behind a proxy); no trailing `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl(pub String);

impl std::str::FromStr for PublicUrl {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim().trim_end_matches('/');
        let rest = t
            .strip_prefix("http://")
            .or_else(|| t.strip_prefix("https://"))
            .ok_or_else(|| format!("{s:?} must start with http:// or https://"))?;
        if rest.is_empty() || rest.starts_with('/') {
            return Err(format!("{s:?} has no host"));
        }
        Ok(PublicUrl(t.to_owned()))
    }
}

impl fmt::Display for PublicUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How log lines are written: `text` (`spindle: …` lines) or `json` (one
/// object per line). The settings key `log.format` and the flag
/// `--log-format` (whose help lists the variants' docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// `spindle: …` lines
    #[default]
    Text,
    /// one JSON object per line
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_paths_are_normalised_and_bad_ones_refused() {
        let ok = |s: &str| s.parse::<BasePath>().map(|b| b.0);
        assert_eq!(ok("/music/").as_deref(), Ok("/music"));
        assert_eq!(ok("").as_deref(), Ok(""));
        assert_eq!(ok("/").as_deref(), Ok(""));
        assert_eq!(ok("/a/b").as_deref(), Ok("/a/b"));
        for bad in ["music", "/a?b", "/a//b", "/a b", "/x/../y"] {
            assert!(ok(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_read_units_and_write_the_largest_whole_unit() {
        let v: toml::Table = toml::from_str("a = \"128KiB\"\nb = 4194304\nc = 1000").unwrap();
        let get = |k: &str| Size::deserialize(v[k].clone()).unwrap();
        assert_eq!(get("a"), Size(128 << 10));
        assert_eq!(get("b"), Size(4 << 20));
        assert_eq!(
            toml::Value::try_from(get("b")).unwrap().as_str(),
            Some("4MiB")
        );
        assert_eq!(
            toml::Value::try_from(get("c")).unwrap().as_integer(),
            Some(1000)
        );
        assert!(Size::deserialize(toml::Value::Integer(-1)).is_err());
    }

    #[test]
    fn public_urls_need_a_scheme_and_a_host() {
        assert_eq!(
            "https://x.example/music/".parse::<PublicUrl>().map(|u| u.0),
            Ok("https://x.example/music".to_owned())
        );
        assert!("x.example".parse::<PublicUrl>().is_err());
        assert!("https:///music".parse::<PublicUrl>().is_err());
    }
}
