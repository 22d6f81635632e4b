//! Reading one audio file's tags and audio properties with lofty, turned
//! into Spindle properties.
//!
//! Every tag value carries the source of the tag format it came from
//! ([`source_for`]: `plugin/id3v2`, `plugin/vorbis`, `plugin/mp4`, …); the
//! facts about the file and its audio stream (url, size, lmod, mime,
//! duration, bitrate, samplerate, channels) carry [`SCAN_SOURCE`]. When a
//! file holds several tags (ID3v2 and ID3v1, say), each key is taken from
//! the best tag that has it: ID3v2, the file's native tag, then APE, then
//! ID3v1.

use std::fs::File;
use std::path::Path;

use lofty::config::ParseOptions;
use lofty::file::{AudioFile, FileType, TaggedFile, TaggedFileExt};
use lofty::prelude::ItemKey;
use lofty::probe::Probe;
use lofty::tag::{Tag, TagType};
use spindle_query::Value;

/// The source of the properties the scanner derives from the file itself
/// rather than from a tag.
pub const SCAN_SOURCE: &str = "plugin/scan";

/// One property read from a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prop {
    pub key: &'static str,
    pub value: Value,
    pub source: &'static str,
}

/// What a file holds: its tag and audio properties (not the file facts
/// url/size/lmod, which the scanner adds).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileTags {
    pub props: Vec<Prop>,
}

impl FileTags {
    /// Every value of `key`, in order.
    pub fn values(&self, key: &str) -> Vec<&Value> {
        self.props
            .iter()
            .filter(|p| p.key == key)
            .map(|p| &p.value)
            .collect()
    }

    /// The first value of `key` as a string, if it is one.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.values(key).into_iter().find_map(|v| match v {
            Value::Str(s) => Some(s.as_str()),
            Value::Int(_) => None,
        })
    }

    /// The first value of `key` as an integer, if it is one.
    pub fn int(&self, key: &str) -> Option<i64> {
        self.values(key).into_iter().find_map(|v| match v {
            Value::Int(i) => Some(*i),
            Value::Str(_) => None,
        })
    }
}

/// Why a file's tags could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TagError {
    #[error("cannot open: {0}")]
    Io(#[from] std::io::Error),
    #[error("empty file (0 bytes)")]
    Empty,
    #[error("not a recognised audio format")]
    UnknownFormat,
    #[error("corrupt or unsupported audio: {0}")]
    Parse(String),
    #[error("embedded cover of {len} bytes is over the limit of {cap} bytes")]
    CoverTooLarge { len: u64, cap: u64 },
}

/// The Spindle source for a lofty tag type.
pub fn source_for(tag: TagType) -> &'static str {
    match tag {
        TagType::Id3v2 => "plugin/id3v2",
        TagType::Id3v1 => "plugin/id3v1",
        TagType::VorbisComments => "plugin/vorbis",
        TagType::Mp4Ilst => "plugin/mp4",
        TagType::RiffInfo => "plugin/riff",
        TagType::AiffText => "plugin/aiff",
        TagType::Ape => "plugin/ape",
        _ => "plugin/tag",
    }
}

/// The MIME type Spindle records for a file type.
pub fn mime_for(ft: &FileType) -> &'static str {
    match ft {
        FileType::Mpeg => "audio/mpeg",
        FileType::Flac => "audio/flac",
        FileType::Vorbis | FileType::Speex => "audio/ogg",
        FileType::Opus => "audio/opus",
        FileType::Mp4 => "audio/mp4",
        FileType::Aac => "audio/aac",
        FileType::Wav => "audio/wav",
        FileType::Aiff => "audio/aiff",
        FileType::Ape => "audio/ape",
        FileType::WavPack => "audio/wavpack",
        FileType::Mpc => "audio/musepack",
        _ => "application/octet-stream",
    }
}

/// File name extensions the scanner looks at (lower case). Other files
/// (cover.jpg, *.cue, *.nfo) are skipped without being opened.
pub const AUDIO_EXTENSIONS: &[&str] = &[
    "mp3", "mp2", "flac", "ogg", "oga", "opus", "spx", "m4a", "m4b", "mp4", "aac", "wav", "aif",
    "aiff", "aifc", "ape", "wv", "mpc",
];

/// Whether the scanner should open `path`, judged by its extension.
pub fn has_audio_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| AUDIO_EXTENSIONS.iter().any(|a| a.eq_ignore_ascii_case(e)))
}

/// Text keys: (Spindle key, lofty key, several values allowed).
const TEXT_KEYS: &[(&str, ItemKey, bool)] = &[
    ("album", ItemKey::AlbumTitle, false),
    ("album_artist", ItemKey::AlbumArtist, false),
    ("title", ItemKey::TrackTitle, false),
    ("date", ItemKey::RecordingDate, false),
    ("originaldate", ItemKey::OriginalReleaseDate, false),
    ("genre", ItemKey::Genre, true),
    ("composer", ItemKey::Composer, true),
    ("comment", ItemKey::Comment, false),
    (
        "musicbrainz_trackid",
        ItemKey::MusicBrainzRecordingId,
        false,
    ),
    ("musicbrainz_albumid", ItemKey::MusicBrainzReleaseId, false),
    ("musicbrainz_artistid", ItemKey::MusicBrainzArtistId, true),
    (
        "musicbrainz_album_artistid",
        ItemKey::MusicBrainzReleaseArtistId,
        true,
    ),
];

/// Number keys: (Spindle key, lofty key).
const NUMBER_KEYS: &[(&str, ItemKey)] = &[
    ("tracknr", ItemKey::TrackNumber),
    ("totaltracks", ItemKey::TrackTotal),
    ("partofset", ItemKey::DiscNumber),
];

/// Reads the tags and audio properties of the file at `path`. The format
/// is found from the content, not the extension, so a FLAC file named
/// `.mp3` still reads.
pub fn read_file(path: &Path) -> Result<(FileType, FileTags), TagError> {
    read_opened(&File::open(path)?, path)
}

/// [`read_file`] of a file already opened (through
/// [`crate::MusicRoot::open`]); `path` gives the extension to fall back on.
pub fn read_opened(file: &File, path: &Path) -> Result<(FileType, FileTags), TagError> {
    let tagged = probe(file, path, ParseOptions::new().read_cover_art(false))?;
    Ok((tagged.file_type(), convert(&tagged)))
}

/// A picture embedded in a song.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cover {
    pub data: Vec<u8>,
    /// Its MIME type, `image/jpeg` when the tag does not say.
    pub mime: String,
}

/// The front cover embedded in the opened song `file` (else its first
/// picture), if it has one of at most [`crate::COVER_CAP`] bytes. lofty
/// refuses any single picture above its allocation limit, which is the
/// same 16 MiB, before allocating it.
pub fn embedded_cover(file: &File, path: &Path) -> Result<Option<Cover>, TagError> {
    use lofty::picture::PictureType;
    let opts = ParseOptions::new().read_properties(false);
    let tagged = probe(file, path, opts)?;
    let pics: Vec<_> = tagged
        .tags()
        .iter()
        .flat_map(|t| t.pictures().iter())
        .collect();
    let Some(pic) = pics
        .iter()
        .find(|p| p.pic_type() == PictureType::CoverFront)
        .or(pics.first())
    else {
        return Ok(None);
    };
    let len = pic.data().len() as u64;
    if len > crate::COVER_CAP {
        return Err(TagError::CoverTooLarge {
            len,
            cap: crate::COVER_CAP,
        });
    }
    let mime = pic
        .mime_type()
        .map_or("image/jpeg".to_owned(), |m| m.as_str().to_owned());
    Ok(Some(Cover {
        data: pic.data().to_vec(),
        mime,
    }))
}

/// lofty's reading of `file`, its format found from the content, else
/// from the extension of `path`.
fn probe(file: &File, path: &Path, opts: ParseOptions) -> Result<TaggedFile, TagError> {
    use std::io::Seek;
    if file.metadata()?.len() == 0 {
        return Err(TagError::Empty);
    }
    let mut reader = std::io::BufReader::new(file);
    reader.rewind()?;
    let probe = Probe::new(reader).options(opts).guess_file_type()?;
    let probe = match probe.file_type() {
        Some(_) => probe,
        None => {
            // The content says nothing; fall back to the extension.
            let Some(ft) = path
                .extension()
                .and_then(|e| e.to_str())
                .and_then(FileType::from_ext)
            else {
                return Err(TagError::UnknownFormat);
            };
            probe.set_file_type(ft)
        }
    };
    probe.read().map_err(|e| TagError::Parse(e.to_string()))
}

/// The tags of `tagged` in order of preference.
fn ordered_tags(tagged: &TaggedFile) -> Vec<&Tag> {
    let native = tagged.primary_tag_type();
    let rank = |t: TagType| match t {
        TagType::Id3v2 => 0,
        t if t == native => 1,
        TagType::Id3v1 => 3,
        _ => 2,
    };
    let mut tags: Vec<&Tag> = tagged.tags().iter().collect();
    tags.sort_by_key(|t| rank(t.tag_type()));
    tags
}

/// Every value of `key` in `tag`, split at NUL (ID3v2.4's multi-value
/// separator), trimmed, empty ones dropped.
fn strings(tag: &Tag, key: ItemKey) -> Vec<String> {
    tag.get_strings(key)
        .flat_map(|s| s.split('\0'))
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The leading number of "4", "4/12", " 04 ".
fn leading_number(s: &str) -> Option<i64> {
    let s = s.trim();
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    s[..end].parse().ok()
}

fn convert(tagged: &TaggedFile) -> FileTags {
    let mut props = Vec::new();
    let tags = ordered_tags(tagged);
    let push_str = |props: &mut Vec<Prop>, key, values: Vec<String>, source| {
        props.extend(values.into_iter().map(|v| Prop {
            key,
            value: Value::Str(v),
            source,
        }));
    };

    // artist: the multi-valued ARTISTS field where a tagger wrote one,
    // else every value of the artist field.
    let artists = tags.iter().find_map(|t| {
        let v = strings(t, ItemKey::TrackArtists);
        (!v.is_empty()).then(|| (v, source_for(t.tag_type())))
    });
    let artists = artists.or_else(|| {
        tags.iter().find_map(|t| {
            let v = strings(t, ItemKey::TrackArtist);
            (!v.is_empty()).then(|| (v, source_for(t.tag_type())))
        })
    });
    if let Some((values, source)) = artists {
        push_str(&mut props, "artist", values, source);
    }

    for &(key, item, multi) in TEXT_KEYS {
        if let Some((mut values, source)) = tags.iter().find_map(|t| {
            let v = strings(t, item);
            (!v.is_empty()).then(|| (v, source_for(t.tag_type())))
        }) {
            if !multi {
                values.truncate(1);
            }
            if key == "date" {
                if let Some(year) = values.first().and_then(|d| leading_number(d)) {
                    if d_is_year(year) {
                        props.push(Prop {
                            key: "year",
                            value: Value::Int(year),
                            source,
                        });
                    }
                }
            }
            push_str(&mut props, key, values, source);
        }
    }
    // Some formats (ID3v1, RIFF) only know a year.
    if !props.iter().any(|p| p.key == "date") {
        if let Some((year, source)) = tags.iter().find_map(|t| {
            t.get_string(ItemKey::Year)
                .and_then(leading_number)
                .filter(|y| d_is_year(*y))
                .map(|y| (y, source_for(t.tag_type())))
        }) {
            props.push(Prop {
                key: "date",
                value: Value::Str(year.to_string()),
                source,
            });
            props.push(Prop {
                key: "year",
                value: Value::Int(year),
                source,
            });
        }
    }

    for &(key, item) in NUMBER_KEYS {
        if let Some((n, source)) = tags.iter().find_map(|t| {
            t.get_string(item)
                .and_then(leading_number)
                .filter(|n| *n > 0)
                .map(|n| (n, source_for(t.tag_type())))
        }) {
            props.push(Prop {
                key,
                value: Value::Int(n),
                source,
            });
        }
    }

    let p = tagged.properties();
    let ms = i64::try_from(p.duration().as_millis()).unwrap_or(i64::MAX);
    if ms > 0 {
        props.push(scan_int("duration", ms));
    }
    if let Some(kbps) = p.audio_bitrate().or(p.overall_bitrate()).filter(|b| *b > 0) {
        props.push(scan_int("bitrate", i64::from(kbps) * 1000));
    }
    if let Some(sr) = p.sample_rate().filter(|s| *s > 0) {
        props.push(scan_int("samplerate", i64::from(sr)));
    }
    if let Some(ch) = p.channels().filter(|c| *c > 0) {
        props.push(scan_int("channels", i64::from(ch)));
    }
    props.push(Prop {
        key: "mime",
        value: Value::Str(mime_for(&tagged.file_type()).to_owned()),
        source: SCAN_SOURCE,
    });
    FileTags { props }
}

fn d_is_year(y: i64) -> bool {
    (1000..=9999).contains(&y)
}

fn scan_int(key: &'static str, v: i64) -> Prop {
    Prop {
        key,
        value: Value::Int(v),
        source: SCAN_SOURCE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_numbers_of_track_fields() {
        for (s, n) in [
            ("4", Some(4)),
            ("04/12", Some(4)),
            (" 7 ", Some(7)),
            ("x", None),
            ("", None),
        ] {
            assert_eq!(leading_number(s), n, "{s:?}");
        }
    }

    #[test]
    fn extensions_are_caseless_and_cover_art_is_skipped() {
        assert!(has_audio_extension(Path::new("a/B.FLAC")));
        assert!(has_audio_extension(Path::new("x.Opus")));
        assert!(!has_audio_extension(Path::new("cover.jpg")));
        assert!(!has_audio_extension(Path::new("noext")));
    }

    #[test]
    fn empty_and_garbage_files_are_errors_not_panics() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.mp3");
        std::fs::write(&empty, b"").unwrap();
        assert!(matches!(read_file(&empty), Err(TagError::Empty)));
        let junk = dir.path().join("junk.flac");
        std::fs::write(&junk, b"this is not audio at all, just text").unwrap();
        assert!(read_file(&junk).is_err());
    }
}
