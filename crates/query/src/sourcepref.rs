//! Source preferences: an ordered list of case-sensitive globs.

use crate::glob::glob_match;

/// XMMS2's default preference.
pub const DEFAULT_SOURCEPREF: &str =
    "server:client/*:plugin/playlist:plugin/segment:plugin/nibbler:plugin/id3v2:plugin/*:*";

/// An ordered list of source globs. A source's priority is the index of
/// the first pattern it matches (lower is better); a source that matches
/// none is ignored.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SourcePref {
    patterns: Vec<String>,
}

impl SourcePref {
    /// From a colon-separated list (`client/*:plugin/*:*`). Empty parts are
    /// dropped.
    pub fn parse(spec: &str) -> SourcePref {
        SourcePref {
            patterns: spec
                .split(':')
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect(),
        }
    }

    pub fn from_patterns<I, S>(patterns: I) -> SourcePref
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        SourcePref {
            patterns: patterns.into_iter().map(Into::into).collect(),
        }
    }

    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// The priority of `source` (0 is best), or `None` if it is ignored.
    pub fn priority(&self, source: &str) -> Option<usize> {
        self.patterns.iter().position(|p| glob_match(p, source))
    }
}

impl Default for SourcePref {
    fn default() -> Self {
        SourcePref::parse(DEFAULT_SOURCEPREF)
    }
}

impl std::fmt::Display for SourcePref {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.patterns.join(":"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities() {
        let p = SourcePref::parse("client/*:plugin/*");
        assert_eq!(p.priority("client/playa"), Some(0));
        assert_eq!(p.priority("plugin/id3v2"), Some(1));
        assert_eq!(p.priority("server"), None);
        let d = SourcePref::default();
        assert_eq!(d.priority("server"), Some(0));
        assert_eq!(d.priority("plugin/id3v2"), Some(5));
        assert_eq!(d.priority("plugin/vorbis"), Some(6));
        assert_eq!(d.priority("import/beets"), Some(7));
    }
}
