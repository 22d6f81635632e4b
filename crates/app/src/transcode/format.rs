//! The formats a stream can be transcoded to, what ffmpeg is told for
//! each, and what a source file already is.

/// An output format. `raw` (no transcoding) is not one: it is the
/// absence of a format ([`Format::parse`] gives `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// MP3 (LAME), constant bitrate.
    Mp3,
    /// Opus in Ogg (constrained VBR).
    Opus,
    /// AAC in ADTS (a plain stream of frames).
    Aac,
    /// AAC in fragmented MP4 (streamable: the index comes first and each
    /// fragment carries its own).
    M4a,
    /// Vorbis in Ogg (managed bitrate, held to the asked rate).
    Vorbis,
    /// FLAC: lossless, no bitrate.
    Flac,
}

/// Every format, for messages and tests.
pub const FORMATS: [Format; 6] = [
    Format::Mp3,
    Format::Opus,
    Format::Aac,
    Format::M4a,
    Format::Vorbis,
    Format::Flac,
];

/// Why a format name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format {0:?}; use mp3, opus, aac, m4a, ogg (Vorbis), flac or raw")]
pub struct UnknownFormat(pub String);

impl Format {
    /// `mp3`, `opus`, `aac`, `m4a` (or `mp4`), `ogg` (or `vorbis`, `oga`),
    /// `flac`; `raw` is `Ok(None)`. Caseless.
    pub fn parse(s: &str) -> Result<Option<Format>, UnknownFormat> {
        Ok(Some(match s.trim().to_ascii_lowercase().as_str() {
            "raw" => return Ok(None),
            "mp3" => Format::Mp3,
            "opus" => Format::Opus,
            "aac" | "adts" => Format::Aac,
            "m4a" | "mp4" => Format::M4a,
            "ogg" | "oga" | "vorbis" => Format::Vorbis,
            "flac" => Format::Flac,
            _ => return Err(UnknownFormat(s.to_owned())),
        }))
    }

    /// The name in cache keys and logs (also a file suffix).
    pub fn name(self) -> &'static str {
        match self {
            Format::Mp3 => "mp3",
            Format::Opus => "opus",
            Format::Aac => "aac",
            Format::M4a => "m4a",
            Format::Vorbis => "ogg",
            Format::Flac => "flac",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Mp3 => "audio/mpeg",
            Format::Opus | Format::Vorbis => "audio/ogg",
            Format::Aac => "audio/aac",
            Format::M4a => "audio/mp4",
            Format::Flac => "audio/flac",
        }
    }

    pub fn lossless(self) -> bool {
        self == Format::Flac
    }

    /// The bitrate (kbit/s) used when none is asked for; 0 for FLAC.
    pub fn default_bitrate(self) -> u32 {
        match self {
            Format::Mp3 | Format::Aac | Format::M4a | Format::Vorbis => 192,
            Format::Opus => 128,
            Format::Flac => 0,
        }
    }

    /// `kbps` brought into what the encoder supports; 0 for FLAC.
    pub fn clamp(self, kbps: u32) -> u32 {
        let (lo, hi) = match self {
            Format::Mp3 => (32, 320),
            Format::Opus => (16, 510),
            Format::Aac | Format::M4a => (32, 320),
            Format::Vorbis => (48, 500),
            Format::Flac => return 0,
        };
        kbps.clamp(lo, hi)
    }

    /// ffmpeg's output options for this format at `kbps`, ending with the
    /// container (`-f …`); the output itself is added by the caller.
    pub fn ffmpeg_args(self, kbps: u32) -> Vec<String> {
        let br = format!("{}k", self.clamp(kbps));
        let v: Vec<&str> = match self {
            Format::Mp3 => vec!["-c:a", "libmp3lame", "-b:a", &br, "-f", "mp3"],
            // Constrained VBR: the asked bitrate is met on any music
            // (unconstrained VBR spends far less on some).
            Format::Opus => vec![
                "-c:a",
                "libopus",
                "-b:a",
                &br,
                "-vbr",
                "constrained",
                "-f",
                "ogg",
            ],
            Format::Aac => vec!["-c:a", "aac", "-b:a", &br, "-f", "adts"],
            Format::M4a => vec![
                "-c:a",
                "aac",
                "-b:a",
                &br,
                "-movflags",
                "+empty_moov+default_base_moof",
                "-frag_duration",
                "1000000",
                "-f",
                "mp4",
            ],
            // Managed bitrate with both bounds: libvorbis's plain ABR
            // falls a third short of the asked rate on some music.
            Format::Vorbis => vec![
                "-c:a",
                "libvorbis",
                "-b:a",
                &br,
                "-minrate",
                &br,
                "-maxrate",
                &br,
                "-f",
                "ogg",
            ],
            Format::Flac => vec!["-c:a", "flac", "-f", "flac"],
        };
        v.into_iter().map(str::to_owned).collect()
    }

    /// What a source file with this suffix (lower case) already is, when
    /// it is one of the output formats. `m4a` may hold AAC or ALAC: the
    /// bitrate tells them apart where it matters ([`super::plan`]).
    pub fn of_suffix(suffix: &str) -> Option<Format> {
        Some(match suffix {
            "mp3" => Format::Mp3,
            "opus" => Format::Opus,
            "aac" => Format::Aac,
            "m4a" | "mp4" | "m4b" => Format::M4a,
            "ogg" | "oga" => Format::Vorbis,
            "flac" => Format::Flac,
            _ => return None,
        })
    }
}

/// Whether a source with this suffix and bitrate is lossless (seeking in
/// it transcodes to FLAC). An `m4a` over 500 kbit/s is taken for ALAC.
pub fn lossless_source(suffix: &str, kbps: Option<u32>) -> bool {
    match suffix {
        "flac" | "wav" | "aif" | "aiff" | "aifc" | "ape" | "wv" => true,
        "m4a" | "mp4" => kbps.is_some_and(|k| k > 500),
        _ => false,
    }
}

/// What a web browser's `<audio>` cannot play, by suffix and bitrate:
/// APE, WavPack, AIFF, Musepack, MP2, Speex, and ALAC (an `m4a` over 500
/// kbit/s). MP3, FLAC, Ogg (Vorbis, Opus), WAV and AAC play as they are.
pub fn browser_cannot_play(suffix: &str, kbps: Option<u32>) -> bool {
    match suffix {
        "mp3" | "flac" | "ogg" | "oga" | "opus" | "wav" | "aac" | "webm" => false,
        "m4a" | "mp4" | "m4b" => kbps.is_some_and(|k| k > 500),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_to_their_format_and_raw_is_no_format() {
        for f in FORMATS {
            assert_eq!(Format::parse(f.name()), Ok(Some(f)));
        }
        assert_eq!(Format::parse("RAW"), Ok(None));
        assert_eq!(Format::parse("vorbis"), Ok(Some(Format::Vorbis)));
        assert!(Format::parse("wma")
            .unwrap_err()
            .to_string()
            .contains("opus"));
    }

    #[test]
    fn bitrates_stay_within_what_each_encoder_takes() {
        assert_eq!(Format::Mp3.clamp(1000), 320);
        assert_eq!(Format::Opus.clamp(8), 16);
        assert_eq!(Format::Flac.clamp(320), 0);
        assert!(Format::Opus.ffmpeg_args(96).contains(&"96k".to_owned()));
        assert!(!Format::Flac.ffmpeg_args(96).iter().any(|a| a == "-b:a"));
    }

    #[test]
    fn browsers_get_a_transcode_only_for_what_they_cannot_decode() {
        for s in ["ape", "wv", "aiff", "aif", "mpc", "spx"] {
            assert!(browser_cannot_play(s, Some(900)), "{s}");
        }
        for s in ["mp3", "flac", "opus", "ogg", "wav"] {
            assert!(!browser_cannot_play(s, Some(900)), "{s}");
        }
        assert!(browser_cannot_play("m4a", Some(900)), "ALAC");
        assert!(!browser_cannot_play("m4a", Some(256)), "AAC");
    }
}
