//! Whether a stream is transcoded, and to what: the request's `format`
//! and `maxBitRate` over the first matching rule's defaults, the source
//! file's own format and bitrate, and `timeOffset`. Pure: no I/O.
//!
//! - `format=raw` sends the file as it is (a seek is then ignored).
//! - A track already in the asked format and within the bitrate limit is
//!   never re-encoded; FLAC asked of a FLAC file neither (lossless has no
//!   bitrate to meet).
//! - A bitrate limit without a format transcodes to the default format
//!   only when the file is over the limit (or its bitrate is unknown and
//!   it is lossless).
//! - A seek (`timeOffset` > 0) in a file that would be sent as it is
//!   transcodes it to its own format (lossless files to FLAC), since only
//!   a transcode can start in the middle.

use super::config::Rule;
use super::format::{lossless_source, Format, UnknownFormat};

/// What a stream request asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ask {
    /// The `format` parameter (`None`: not given).
    pub format: Option<String>,
    /// `maxBitRate`, kbit/s (0 or absent: no limit).
    pub max_bitrate: Option<u32>,
    /// `timeOffset`, seconds.
    pub offset: f64,
}

/// The source file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Source {
    /// Its extension, lower case.
    pub suffix: String,
    /// kbit/s, if known.
    pub bitrate: Option<u32>,
}

/// A transcode to make.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target {
    pub format: Format,
    /// kbit/s (0 for FLAC).
    pub bitrate: u32,
    /// Where to start, seconds.
    pub offset: f64,
}

impl Target {
    /// The variant's name in cache keys: `opus-160`, `flac-0`.
    pub fn variant(&self) -> String {
        format!("{}-{}", self.format.name(), self.bitrate)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Plan {
    /// The file as it is.
    Original,
    Transcode(Target),
}

/// The format wanted: none named, `raw`, or one.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Want {
    Unnamed,
    Raw,
    Named(Format),
}

/// Decides; `rule` is the first rule that matched the user, client and
/// track, `default` the configured default format.
pub fn decide(
    ask: &Ask,
    rule: Option<&Rule>,
    src: &Source,
    default: Format,
) -> Result<Plan, UnknownFormat> {
    let asked = match ask
        .format
        .as_deref()
        .map(str::trim)
        .filter(|f| !f.is_empty())
    {
        Some(f) => Some(Format::parse(f)?.map_or(Want::Raw, Want::Named)),
        None => None,
    };
    let ask_max = ask.max_bitrate.filter(|&m| m > 0);
    let want = match (asked, rule) {
        (Some(w), _) => w,
        // A rule's `raw` gives way to a limit the request sets itself.
        (None, Some(r)) => match r.format {
            None if ask_max.is_some() => Want::Unnamed,
            None => Want::Raw,
            Some(f) => Want::Named(f),
        },
        (None, None) => Want::Unnamed,
    };
    let max = ask_max.or_else(|| rule.and_then(|r| r.bitrate));
    let offset = if ask.offset.is_finite() && ask.offset > 0.0 {
        ask.offset
    } else {
        0.0
    };
    let own = Format::of_suffix(&src.suffix);
    let lossless = lossless_source(&src.suffix, src.bitrate);
    let within = |m: Option<u32>| match (m, src.bitrate) {
        (None, _) => true,
        (Some(m), Some(b)) => b <= m,
        (Some(_), None) => !lossless,
    };
    let target = |format: Format, kbps: Option<u32>| {
        let bitrate = if format.lossless() {
            0
        } else {
            format.clamp(kbps.unwrap_or(format.default_bitrate()))
        };
        Plan::Transcode(Target {
            format,
            bitrate,
            offset,
        })
    };
    // What the file is as a format of ours, if it is one (an `m4a` of
    // ALAC is not AAC).
    let own = own.filter(|f| !(*f == Format::M4a && lossless));
    Ok(match want {
        Want::Raw => Plan::Original,
        Want::Named(f) => {
            let same = own == Some(f) && (f.lossless() || within(max));
            if same && offset == 0.0 {
                Plan::Original
            } else {
                target(f, max)
            }
        }
        Want::Unnamed => {
            if !within(max) {
                target(default, max)
            } else if offset > 0.0 {
                match (lossless, own) {
                    (true, _) => target(Format::Flac, None),
                    (false, Some(f)) => target(f, src.bitrate),
                    (false, None) => target(default, src.bitrate),
                }
            } else {
                Plan::Original
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(format: Option<&str>, max: Option<u32>, offset: f64) -> Ask {
        Ask {
            format: format.map(str::to_owned),
            max_bitrate: max,
            offset,
        }
    }

    fn src(suffix: &str, kbps: u32) -> Source {
        Source {
            suffix: suffix.into(),
            bitrate: Some(kbps),
        }
    }

    fn rule(format: Option<Format>, bitrate: Option<u32>) -> Rule {
        Rule {
            user: None,
            client: None,
            query: None,
            format,
            bitrate,
        }
    }

    fn t(format: Format, bitrate: u32, offset: f64) -> Plan {
        Plan::Transcode(Target {
            format,
            bitrate,
            offset,
        })
    }

    #[test]
    fn requests_rules_and_sources_decide_the_stream() {
        use Format::*;
        let symfonium = rule(Some(Opus), Some(160));
        let raw_rule = rule(None, None);
        let flac = src("flac", 900);
        let mp3_128 = src("mp3", 128);
        let mp3_320 = src("mp3", 320);
        let (ape, alac, aac) = (src("ape", 700), src("m4a", 900), src("m4a", 256));
        let cases: Vec<(Ask, Option<&Rule>, &Source, Plan)> = vec![
            // Nothing asked: the file.
            (ask(None, None, 0.0), None, &flac, Plan::Original),
            (ask(Some("raw"), Some(96), 0.0), None, &flac, Plan::Original),
            (
                ask(Some("mp3"), Some(128), 0.0),
                None,
                &flac,
                t(Mp3, 128, 0.0),
            ),
            (
                ask(Some("opus"), Some(96), 0.0),
                None,
                &flac,
                t(Opus, 96, 0.0),
            ),
            (ask(Some("opus"), None, 0.0), None, &flac, t(Opus, 128, 0.0)),
            // Already in the format and within the limit: never re-encoded.
            (
                ask(Some("mp3"), Some(192), 0.0),
                None,
                &mp3_128,
                Plan::Original,
            ),
            (
                ask(Some("mp3"), Some(128), 0.0),
                None,
                &mp3_320,
                t(Mp3, 128, 0.0),
            ),
            (
                ask(Some("flac"), Some(320), 0.0),
                None,
                &flac,
                Plan::Original,
            ),
            (ask(None, Some(320), 0.0), None, &mp3_128, Plan::Original),
            // A limit alone: the default format, only when over it.
            (ask(None, Some(96), 0.0), None, &mp3_320, t(Mp3, 96, 0.0)),
            // Rules give defaults; the request overrides them.
            (
                ask(None, None, 0.0),
                Some(&symfonium),
                &flac,
                t(Opus, 160, 0.0),
            ),
            (
                ask(None, Some(96), 0.0),
                Some(&symfonium),
                &flac,
                t(Opus, 96, 0.0),
            ),
            (
                ask(Some("mp3"), None, 0.0),
                Some(&symfonium),
                &flac,
                t(Mp3, 160, 0.0),
            ),
            (
                ask(Some("raw"), None, 0.0),
                Some(&symfonium),
                &flac,
                Plan::Original,
            ),
            (ask(None, None, 0.0), Some(&raw_rule), &flac, Plan::Original),
            (
                ask(None, Some(128), 0.0),
                Some(&raw_rule),
                &flac,
                t(Mp3, 128, 0.0),
            ),
            // Seeks transcode, to the file's own format.
            (ask(None, None, 30.0), None, &flac, t(Flac, 0, 30.0)),
            (ask(None, None, 30.0), None, &mp3_320, t(Mp3, 320, 30.0)),
            (ask(None, None, 30.0), None, &ape, t(Flac, 0, 30.0)),
            (
                ask(Some("mp3"), Some(192), 12.5),
                None,
                &mp3_128,
                t(Mp3, 192, 12.5),
            ),
            (ask(Some("raw"), None, 30.0), None, &flac, Plan::Original),
            // ALAC in m4a is not AAC.
            (
                ask(Some("m4a"), Some(320), 0.0),
                None,
                &alac,
                t(M4a, 320, 0.0),
            ),
            (ask(Some("m4a"), Some(320), 0.0), None, &aac, Plan::Original),
        ];
        for (n, (a, r, s, want)) in cases.into_iter().enumerate() {
            let got = decide(&a, r, s, Mp3).unwrap();
            assert_eq!(got, want, "case {n}: {a:?} {s:?}");
        }
        assert!(decide(&ask(Some("wma"), None, 0.0), None, &flac, Mp3).is_err());
    }
}
