//! Reading one audio file's tags and audio properties with lofty, turned
//! into Spindle properties.
//!
//! Every tag value carries the source of the tag format it came from
//! ([`source_for`]: `plugin/id3v2`, `plugin/vorbis`, `plugin/mp4`, …); the
//! facts about the file and its audio stream (url, size, lmod, mime,
//! duration, bitrate, samplerate, channels, bitdepth) carry
//! [`SCAN_SOURCE`]. When a file holds several tags (ID3v2 and ID3v1, say),
//! each key is taken from the best tag that has it: ID3v2, the file's
//! native tag, then APE, then ID3v1. A tag field holding several values
//! (repeated Vorbis fields, ID3v2.4's NUL-separated lists, an `ARTISTS`
//! field) gives several values of one key. Every key, the tag fields it
//! comes from and the form of its values are listed in `docs/tags.md`.

pub mod gain;
pub mod sylt;

use std::fs::File;
use std::path::Path;

use lofty::config::ParseOptions;
use lofty::file::{AudioFile, FileType, TaggedFile, TaggedFileExt};
use lofty::mpeg::MpegFile;
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

/// Text keys: (Spindle key, lofty keys in order of preference, several
/// values allowed).
const TEXT_KEYS: &[(&str, &[ItemKey], bool)] = &[
    ("album", &[ItemKey::AlbumTitle], false),
    ("title", &[ItemKey::TrackTitle], false),
    ("date", &[ItemKey::RecordingDate], false),
    ("originaldate", &[ItemKey::OriginalReleaseDate], false),
    ("genre", &[ItemKey::Genre], true),
    ("composer", &[ItemKey::Composer], true),
    ("comment", &[ItemKey::Comment], false),
    ("mood", &[ItemKey::Mood], true),
    ("label", &[ItemKey::Label, ItemKey::Publisher], true),
    ("discsubtitle", &[ItemKey::SetSubtitle], false),
    ("language", &[ItemKey::Language], false),
    ("isrc", &[ItemKey::Isrc], true),
    ("artistsort", &[ItemKey::TrackArtistSortOrder], false),
    ("albumartistsort", &[ItemKey::AlbumArtistSortOrder], false),
    ("albumsort", &[ItemKey::AlbumTitleSortOrder], false),
    ("titlesort", &[ItemKey::TrackTitleSortOrder], false),
    ("releasetype", &[ItemKey::MusicBrainzReleaseType], true),
    (
        "musicbrainz_trackid",
        &[ItemKey::MusicBrainzRecordingId],
        false,
    ),
    (
        "musicbrainz_albumid",
        &[ItemKey::MusicBrainzReleaseId],
        false,
    ),
    (
        "musicbrainz_releasegroupid",
        &[ItemKey::MusicBrainzReleaseGroupId],
        false,
    ),
    (
        "musicbrainz_artistid",
        &[ItemKey::MusicBrainzArtistId],
        true,
    ),
    (
        "musicbrainz_album_artistid",
        &[ItemKey::MusicBrainzReleaseArtistId],
        true,
    ),
];

/// Artist keys: (Spindle key, the list field, the single field, the key
/// of the single field's text when the list is what the key holds).
const ARTIST_KEYS: &[(&str, ItemKey, ItemKey, &str)] = &[
    (
        "artist",
        ItemKey::TrackArtists,
        ItemKey::TrackArtist,
        "displayartist",
    ),
    (
        "album_artist",
        ItemKey::AlbumArtists,
        ItemKey::AlbumArtist,
        "displayalbumartist",
    ),
];

/// ReplayGain keys: (Spindle key, ReplayGain field, R128 field if any,
/// whether it is a gain (else a peak)).
const GAIN_KEYS: &[(&str, ItemKey, Option<ItemKey>, bool)] = &[
    (
        "replaygain_track_gain",
        ItemKey::ReplayGainTrackGain,
        Some(ItemKey::R128TrackGain),
        true,
    ),
    (
        "replaygain_album_gain",
        ItemKey::ReplayGainAlbumGain,
        Some(ItemKey::R128AlbumGain),
        true,
    ),
    (
        "replaygain_track_peak",
        ItemKey::ReplayGainTrackPeak,
        None,
        false,
    ),
    (
        "replaygain_album_peak",
        ItemKey::ReplayGainAlbumPeak,
        None,
        false,
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
    let opts = ParseOptions::new().read_cover_art(false);
    let probe = prober(file, path, opts)?;
    let (tagged, synced) = if probe.file_type() == Some(FileType::Mpeg) {
        // Read as MPEG to reach the ID3v2 tag's SYLT frames, which the
        // generic tag leaves out; the same single parse gives the rest.
        use std::io::Seek;
        let mut reader = probe.into_inner();
        reader.rewind()?;
        let mpeg =
            MpegFile::read_from(&mut reader, opts).map_err(|e| TagError::Parse(e.to_string()))?;
        let synced = mpeg.id3v2().map(sylt::synced_lyrics).unwrap_or_default();
        (TaggedFile::from(mpeg), synced)
    } else {
        let tagged = probe.read().map_err(|e| TagError::Parse(e.to_string()))?;
        (tagged, Vec::new())
    };
    let mut tags = convert(&tagged);
    tags.props.extend(synced.into_iter().map(|lrc| Prop {
        key: "lyrics",
        value: Value::Str(lrc),
        source: source_for(TagType::Id3v2),
    }));
    Ok((tagged.file_type(), tags))
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
    prober(file, path, opts)?
        .read()
        .map_err(|e| TagError::Parse(e.to_string()))
}

type FileProbe<'a> = Probe<std::io::BufReader<&'a File>>;

/// A lofty probe of `file` that knows its format: from the content, else
/// from the extension of `path`.
fn prober<'a>(file: &'a File, path: &Path, opts: ParseOptions) -> Result<FileProbe<'a>, TagError> {
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
    Ok(probe)
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

/// The values of the first of `items` that the best tag having any holds,
/// with that tag's source.
fn first_of(tags: &[&Tag], items: &[ItemKey]) -> Option<(Vec<String>, &'static str)> {
    tags.iter().find_map(|t| {
        items.iter().find_map(|&item| {
            let v = strings(t, item);
            (!v.is_empty()).then(|| (v, source_for(t.tag_type())))
        })
    })
}

/// Whether a flag field's text says yes (`1`, `true`, `yes`).
fn truthy(s: &str) -> bool {
    let s = s.trim();
    s == "1" || s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("yes")
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

    // artist and album_artist: the multi-valued list field (ARTISTS,
    // ALBUMARTISTS) where a tagger wrote one, else every value of the
    // single field. When the list wins, the single field's text (a credit
    // such as "A feat. B") is kept as the display form.
    for &(key, list, single, display) in ARTIST_KEYS {
        let listed = first_of(&tags, &[list]);
        let credit = first_of(&tags, &[single]);
        match (listed, credit) {
            (Some((values, source)), credit) => {
                if let Some((c, csrc)) = credit {
                    if c.len() == 1 && !values.iter().any(|v| *v == c[0]) {
                        push_str(&mut props, display, c, csrc);
                    }
                }
                push_str(&mut props, key, values, source);
            }
            (None, Some((values, source))) => push_str(&mut props, key, values, source),
            (None, None) => {}
        }
    }

    for &(key, items, multi) in TEXT_KEYS {
        if let Some((mut values, source)) = first_of(&tags, items) {
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

    for &(key, item, r128, is_gain) in GAIN_KEYS {
        let rg = tags.iter().find_map(|t| {
            let v = t.get_string(item)?;
            let v = if is_gain {
                gain::parse_gain(v)
            } else {
                gain::parse_peak(v)
            };
            v.map(|v| (v, source_for(t.tag_type())))
        });
        let rg = rg.or_else(|| {
            let r128 = r128?;
            tags.iter().find_map(|t| {
                t.get_string(r128)
                    .and_then(gain::r128_to_replaygain)
                    .map(|v| (v, source_for(t.tag_type())))
            })
        });
        if let Some((v, source)) = rg {
            let text = if is_gain {
                gain::format_gain(v)
            } else {
                gain::format_peak(v)
            };
            props.push(Prop {
                key,
                value: Value::Str(text),
                source,
            });
        }
    }

    if let Some((flag, source)) = tags.iter().find_map(|t| {
        t.get_string(ItemKey::FlagCompilation)
            .map(|v| (truthy(v), source_for(t.tag_type())))
    }) {
        props.push(Prop {
            key: "compilation",
            value: Value::Int(i64::from(flag)),
            source,
        });
    }

    if let Some((bpm, source)) = tags.iter().find_map(|t| {
        [ItemKey::IntegerBpm, ItemKey::Bpm].iter().find_map(|&k| {
            let v: f64 = t.get_string(k)?.trim().parse().ok()?;
            (v > 0.0 && v < 1000.0).then(|| (v.round() as i64, source_for(t.tag_type())))
        })
    }) {
        props.push(Prop {
            key: "bpm",
            value: Value::Int(bpm),
            source,
        });
    }

    // Lyrics, unsynchronised or LRC text, kept whole (not split at NUL).
    if let Some((texts, source)) = tags.iter().find_map(|t| {
        let mut v: Vec<String> = Vec::new();
        for item in [ItemKey::Lyrics, ItemKey::UnsyncLyrics] {
            for s in t.get_strings(item) {
                let s = s.trim_matches(['\0', '\n', '\r', ' ']);
                if !s.is_empty() && !v.iter().any(|x| x == s) {
                    v.push(s.to_owned());
                }
            }
        }
        (!v.is_empty()).then(|| (v, source_for(t.tag_type())))
    }) {
        push_str(&mut props, "lyrics", texts, source);
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
    if let Some(bits) = p.bit_depth().filter(|b| *b > 0) {
        props.push(scan_int("bitdepth", i64::from(bits)));
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
    /// A real MP3 (silent frames) with an ID3v2.4 tag holding `frames`.
    fn mp3_with(dir: &Path, frames: Vec<lofty::id3::v2::Frame<'static>>) -> std::path::PathBuf {
        use lofty::config::WriteOptions;
        use lofty::id3::v2::Id3v2Tag;
        use lofty::prelude::TagExt;
        let path = dir.join("t.mp3");
        let mut frame = vec![0u8; 417];
        frame[..4].copy_from_slice(&[0xFF, 0xFB, 0x90, 0x44]);
        std::fs::write(&path, frame.repeat(20)).unwrap();
        let mut tag = Id3v2Tag::new();
        for f in frames {
            tag.insert(f);
        }
        tag.save_to_path(&path, WriteOptions::default()).unwrap();
        path
    }

    #[test]
    fn id3v2_metadata_for_subsonic_apps_is_read_into_keys() {
        use lofty::id3::v2::{
            BinaryFrame, ExtendedTextFrame, Frame, FrameId, SyncTextContentType,
            SynchronizedTextFrame, TextInformationFrame, TimestampFormat, UnsynchronizedTextFrame,
        };
        use lofty::TextEncoding::UTF8;
        let text = |id: &'static str, v: &str| {
            Frame::Text(TextInformationFrame::new(
                FrameId::new(id).unwrap(),
                UTF8,
                v.to_owned(),
            ))
        };
        let txxx = |d: &str, v: &str| {
            Frame::UserText(ExtendedTextFrame::new(UTF8, d.to_owned(), v.to_owned()))
        };
        let sylt = SynchronizedTextFrame::new(
            UTF8,
            *b"eng",
            TimestampFormat::MS,
            SyncTextContentType::Lyrics,
            None,
            vec![(0, "Hello".into()), (1500, "World".into())],
        );
        let dir = tempfile::tempdir().unwrap();
        let path = mp3_with(
            dir.path(),
            vec![
                text("TIT2", "Song"),
                // ID3v2.4 lists: NUL-separated values.
                text("TPE1", "Ann\0Bob"),
                text("TCON", "Rock\0Jazz"),
                text("TPE2", "Various Artists"),
                text("TCMP", "1"),
                text("TSOP", "Ann, The"),
                text("TSOT", "Song, A"),
                text("TPUB", "Label One"),
                text("TMOO", "Calm"),
                text("TSST", "The First Disc"),
                text("TDOR", "1999-05-04"),
                text("TBPM", "128"),
                txxx("REPLAYGAIN_TRACK_GAIN", "-6.48 dB"),
                txxx("REPLAYGAIN_ALBUM_GAIN", "-7.00 dB"),
                txxx("REPLAYGAIN_TRACK_PEAK", "0.988556"),
                Frame::UnsynchronizedText(UnsynchronizedTextFrame::new(
                    UTF8,
                    *b"eng",
                    String::new(),
                    "Plain words\nSecond line".to_owned(),
                )),
                Frame::Binary(BinaryFrame::new(
                    FrameId::new("SYLT").unwrap(),
                    sylt.as_bytes(lofty::config::WriteOptions::default())
                        .unwrap(),
                )),
            ],
        );
        let (_, tags) = read_file(&path).unwrap();
        let strs =
            |k: &str| -> Vec<String> { tags.values(k).iter().map(|v| v.to_string()).collect() };
        assert_eq!(strs("artist"), ["Ann", "Bob"]);
        assert_eq!(strs("genre"), ["Rock", "Jazz"]);
        assert_eq!(strs("album_artist"), ["Various Artists"]);
        assert_eq!(tags.int("compilation"), Some(1));
        assert_eq!(tags.str("artistsort"), Some("Ann, The"));
        assert_eq!(tags.str("titlesort"), Some("Song, A"));
        assert_eq!(tags.str("label"), Some("Label One"));
        assert_eq!(tags.str("mood"), Some("Calm"));
        assert_eq!(tags.str("discsubtitle"), Some("The First Disc"));
        assert_eq!(tags.str("originaldate"), Some("1999-05-04"));
        assert_eq!(tags.int("bpm"), Some(128));
        assert_eq!(tags.str("replaygain_track_gain"), Some("-6.48"));
        assert_eq!(tags.str("replaygain_album_gain"), Some("-7.00"));
        assert_eq!(tags.str("replaygain_track_peak"), Some("0.988556"));
        assert_eq!(tags.str("replaygain_album_peak"), None);
        assert_eq!(
            strs("lyrics"),
            [
                "Plain words\nSecond line",
                "[la:eng]\n[00:00.000]Hello\n[00:01.500]World\n"
            ]
        );
        assert!(tags
            .props
            .iter()
            .all(|p| p.key == "mime" || p.source == SCAN_SOURCE || p.source == "plugin/id3v2"));
    }

    #[test]
    fn an_artists_list_keeps_the_single_artist_text_for_display() {
        use lofty::id3::v2::{ExtendedTextFrame, Frame, FrameId, TextInformationFrame};
        use lofty::TextEncoding::UTF8;
        let dir = tempfile::tempdir().unwrap();
        let path = mp3_with(
            dir.path(),
            vec![
                Frame::Text(TextInformationFrame::new(
                    FrameId::new("TPE1").unwrap(),
                    UTF8,
                    "Ann feat. Bob".to_owned(),
                )),
                Frame::UserText(ExtendedTextFrame::new(
                    UTF8,
                    "ARTISTS".to_owned(),
                    "Ann\0Bob".to_owned(),
                )),
            ],
        );
        let (_, tags) = read_file(&path).unwrap();
        let artists: Vec<String> = tags
            .values("artist")
            .iter()
            .map(|v| v.to_string())
            .collect();
        assert_eq!(artists, ["Ann", "Bob"]);
        assert_eq!(tags.str("displayartist"), Some("Ann feat. Bob"));
    }
}
