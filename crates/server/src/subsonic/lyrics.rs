//! Lyrics: Subsonic's `getLyrics` (by artist and title, plain text) and
//! OpenSubsonic's `getLyricsBySongId` (the `songLyrics` extension:
//! structured lyrics, synced lines with their start in milliseconds).
//!
//! Lyrics come from two places. The scanner stores a file's embedded
//! lyrics as values of the key `lyrics` (ID3 `USLT` and `SYLT`, Vorbis
//! `LYRICS`/`UNSYNCEDLYRICS`, MP4 `©lyr`; `SYLT` turned into LRC text; see
//! `docs/tags.md`). A value that is LRC text (timed lines such as
//! `[00:12.50]words`) is synced lyrics, any other value is unsynced. And a
//! sidecar file next to the song with the same name and the extension
//! `.lrc` is read when asked for (so a new or edited `.lrc` shows without
//! a rescan), through the music folder's checked open, up to
//! [`MAX_LRC_BYTES`].
//!
//! LRC, as read here: `[mm:ss]`, `[mm:ss.xx]` or `[mm:ss.xxx]` before a
//! line's text (several such stamps repeat the line), the header tags
//! `[ar:…]`, `[ti:…]`, `[la:…]` and `[offset:±ms]` (positive: lyrics come
//! sooner, as OpenSubsonic's `offset`), and enhanced LRC's word stamps
//! `<mm:ss.xx>`, which are dropped.

use std::io::Read;
use std::path::PathBuf;

use spindle_query::SourcePref;
use spindle_store::ValueRef;

use super::response::Node;
use super::{Ctx, SyncResult};
use crate::catalog::Song;

/// The largest `.lrc` sidecar file read, in bytes (a long song's LRC is a
/// few KiB; anything near this is not lyrics).
pub const MAX_LRC_BYTES: u64 = 256 * 1024;

/// The most songs matching `getLyrics`'s artist and title that are
/// looked at for lyrics (each may cost a sidecar file open).
pub const MAX_LYRICS_CANDIDATES: usize = 16;

/// The language of lyrics nobody tagged with one (what taggers write;
/// OpenSubsonic accepts it as "unknown").
pub const UNKNOWN_LANG: &str = "xxx";

/// Lyrics of one source, parsed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Lyrics {
    /// Whether the lines carry start times.
    pub synced: bool,
    /// (start in ms when synced, text), by start when synced.
    pub lines: Vec<(Option<u64>, String)>,
    /// From LRC `[la:…]`.
    pub lang: Option<String>,
    /// From LRC `[offset:…]`, ms.
    pub offset: i64,
    /// From LRC `[ar:…]`.
    pub artist: Option<String>,
    /// From LRC `[ti:…]`.
    pub title: Option<String>,
}

impl Lyrics {
    /// The lines as plain text.
    pub fn text(&self) -> String {
        self.lines
            .iter()
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `[mm:ss]`, `[mm:ss.x]`, `[mm:ss.xx]`, `[mm:ss.xxx]` (also `:` before
/// the fraction) as milliseconds.
fn timestamp(tag: &str) -> Option<u64> {
    let (min, rest) = tag.split_once(':')?;
    let min: u64 = min.trim().parse().ok()?;
    let (sec, frac) = match rest.split_once(['.', ':']) {
        Some((s, f)) => (s, f),
        None => (rest, ""),
    };
    let sec: u64 = sec.trim().parse().ok()?;
    if sec >= 60 || frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let ms = match frac.len() {
        0 => 0,
        n => frac.parse::<u64>().ok()? * 10u64.pow(3 - n as u32),
    };
    Some(min * 60_000 + sec * 1000 + ms)
}

/// A line without enhanced LRC's word stamps (`<00:01.20>`).
fn without_word_stamps(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('<') {
        match rest[i..].find('>') {
            Some(j) if timestamp(&rest[i + 1..i + j]).is_some() => {
                out.push_str(&rest[..i]);
                rest = &rest[i + j + 1..];
            }
            _ => {
                out.push_str(&rest[..=i]);
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` read as LRC; `None` when it is not (no timed lines, or fewer
/// timed lines than plain ones: unsynced lyrics with a stray bracket).
pub fn parse_lrc(text: &str) -> Option<Lyrics> {
    let mut l = Lyrics {
        synced: true,
        ..Lyrics::default()
    };
    let mut plain = 0usize;
    for raw in text.lines() {
        let mut line = raw.trim();
        let mut stamps = Vec::new();
        let mut header = false;
        while let Some(rest) = line.strip_prefix('[') {
            let Some(end) = rest.find(']') else { break };
            let tag = &rest[..end];
            if let Some(ms) = timestamp(tag) {
                stamps.push(ms);
            } else if let Some((k, v)) = tag.split_once(':') {
                let v = v.trim().to_owned();
                match k.trim().to_ascii_lowercase().as_str() {
                    "ar" => l.artist = Some(v).filter(|v| !v.is_empty()),
                    "ti" => l.title = Some(v).filter(|v| !v.is_empty()),
                    "la" | "lang" => l.lang = Some(v).filter(|v| !v.is_empty()),
                    "offset" => l.offset = v.trim_start_matches('+').parse().unwrap_or(0),
                    k if k.bytes().all(|b| b.is_ascii_alphabetic()) => {}
                    _ => break,
                }
                header = true;
            } else {
                break;
            }
            line = rest[end + 1..].trim_start();
        }
        if stamps.is_empty() {
            if !header && !line.is_empty() {
                plain += 1;
            }
            continue;
        }
        let words = without_word_stamps(line);
        l.lines
            .extend(stamps.into_iter().map(|ms| (Some(ms), words.clone())));
    }
    if l.lines.is_empty() || plain > l.lines.len() {
        return None;
    }
    l.lines.sort_by_key(|(ms, _)| *ms);
    Some(l)
}

/// Lyrics of a text: LRC when it is LRC, else unsynced lines.
pub fn parse(text: &str) -> Lyrics {
    let text = text.trim_start_matches('\u{feff}');
    parse_lrc(text).unwrap_or_else(|| Lyrics {
        synced: false,
        lines: text
            .trim()
            .lines()
            .map(|l| (None, l.trim_end().to_owned()))
            .collect(),
        ..Lyrics::default()
    })
}

/// The `.lrc` sidecars a song's lyrics may be in.
fn sidecar_paths(song: &Song) -> [PathBuf; 2] {
    [
        song.file.with_extension("lrc"),
        song.file.with_extension("LRC"),
    ]
}

/// The song's `.lrc` sidecar, if there is a readable one of at most
/// [`MAX_LRC_BYTES`].
fn sidecar(c: &Ctx, song: &Song) -> Option<String> {
    let root = c.state.music.folder_of(song).ok()?;
    for path in sidecar_paths(song) {
        let (file, meta) = match root.open(&path) {
            Ok(f) => f,
            Err(e) if e.is_missing() => continue,
            Err(e) => {
                tracing::debug!("lyrics sidecar {} not read: {e}", path.display());
                continue;
            }
        };
        if meta.len() > MAX_LRC_BYTES {
            tracing::warn!(
                "lyrics sidecar {} skipped: {} bytes, over the limit of {MAX_LRC_BYTES}",
                path.display(),
                meta.len()
            );
            return None;
        }
        let mut bytes = Vec::new();
        if let Err(e) = file.take(MAX_LRC_BYTES).read_to_end(&mut bytes) {
            tracing::debug!("lyrics sidecar {} not read: {e}", path.display());
            return None;
        }
        return Some(String::from_utf8_lossy(&bytes).into_owned());
    }
    None
}

/// Every lyrics of a song: embedded ones first, then the sidecar; and the
/// song's tagged language.
fn song_lyrics(c: &Ctx, song: &Song) -> (Vec<Lyrics>, Option<String>) {
    let (texts, lang) = {
        let lib = c.state.db.read();
        let pref = SourcePref::default();
        let texts: Vec<String> = lib
            .get(song.id, "lyrics", &pref)
            .into_iter()
            .map(|v| v.to_string())
            .collect();
        let lang = lib
            .get(song.id, "language", &pref)
            .into_iter()
            .find_map(|v| match v {
                ValueRef::Str(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
                _ => None,
            });
        (texts, lang)
    };
    let mut all: Vec<Lyrics> = texts.iter().map(|t| parse(t)).collect();
    all.extend(sidecar(c, song).map(|t| parse(&t)));
    all.retain(|l| l.lines.iter().any(|(_, t)| !t.trim().is_empty()));
    (all, lang)
}

/// `getLyrics`: the plain lyrics of the first song with lyrics whose
/// title and artist (any of its artists) match caselessly; an empty
/// `lyrics` when none does.
pub(crate) fn get_lyrics(c: &mut Ctx) -> SyncResult {
    let artist = c.p.nonempty("artist").map(str::to_lowercase);
    let title = c.p.nonempty("title").map(str::to_lowercase);
    let empty = Node::new("lyrics")
        .opt_s("artist", c.p.nonempty("artist").map(str::to_owned))
        .opt_s("title", c.p.nonempty("title").map(str::to_owned))
        .text("");
    if artist.is_none() && title.is_none() {
        return Ok(Some(empty));
    }
    let cat = c.cat();
    let access = c.access();
    let candidates = cat
        .songs
        .iter()
        .filter(|s| access.sees_song(s))
        .filter(|s| title.as_ref().is_none_or(|t| s.title.to_lowercase() == *t))
        .filter(|s| {
            artist.as_ref().is_none_or(|a| {
                s.display_artist.to_lowercase() == *a
                    || s.artists.iter().any(|x| x.to_lowercase() == *a)
            })
        })
        .take(MAX_LYRICS_CANDIDATES);
    for s in candidates {
        let (all, _) = song_lyrics(c, s);
        let best = all.iter().find(|l| !l.synced).or_else(|| all.first());
        if let Some(l) = best {
            return Ok(Some(
                Node::new("lyrics")
                    .s("artist", s.display_artist.clone())
                    .s("title", s.title.clone())
                    .text(l.text()),
            ));
        }
    }
    Ok(Some(empty))
}

/// `getLyricsBySongId`: every lyrics of the song as `structuredLyrics`,
/// synced ones first.
pub(crate) fn get_lyrics_by_song_id(c: &mut Ctx) -> SyncResult {
    let id = c.req("id")?.to_owned();
    let cat = c.cat();
    let song = c.access().song(&cat, &id)?;
    let (mut all, lang) = song_lyrics(c, song);
    all.sort_by_key(|l| !l.synced);
    let nodes = all
        .into_iter()
        .map(|l| structured(song, l, lang.as_deref()))
        .collect();
    Ok(Some(
        Node::new("lyricsList").list("structuredLyrics", nodes),
    ))
}

/// One OpenSubsonic `structuredLyrics`.
fn structured(song: &Song, l: Lyrics, lang: Option<&str>) -> Node {
    let lang = l
        .lang
        .clone()
        .or_else(|| lang.map(str::to_owned))
        .unwrap_or_else(|| UNKNOWN_LANG.to_owned());
    let n = Node::new("structuredLyrics")
        .s(
            "displayArtist",
            l.artist
                .clone()
                .unwrap_or_else(|| song.display_artist.clone()),
        )
        .s(
            "displayTitle",
            l.title.clone().unwrap_or_else(|| song.title.clone()),
        )
        .s("lang", lang);
    let n = if l.offset != 0 {
        n.i("offset", l.offset)
    } else {
        n
    };
    let lines = l
        .lines
        .into_iter()
        .map(|(start, text)| {
            let line = Node::new("line");
            let line = match start {
                Some(ms) => line.i("start", i64::try_from(ms).unwrap_or(i64::MAX)),
                None => line,
            };
            line.text(text)
        })
        .collect();
    n.b("synced", l.synced).list("line", lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lrc_timestamps_of_every_precision_read_as_milliseconds() {
        for (tag, ms) in [
            ("00:00", Some(0)),
            ("00:12.5", Some(12_500)),
            ("01:02.34", Some(62_340)),
            ("10:00.007", Some(600_007)),
            ("02:03:45", Some(123_450)),
            ("00:61.00", None),
            ("ar:Someone", None),
            ("00:01.2345", None),
        ] {
            assert_eq!(timestamp(tag), ms, "{tag:?}");
        }
    }

    #[test]
    fn lrc_lines_are_synced_sorted_and_repeated_per_stamp() {
        let l = parse(
            "\u{feff}[ar:Ann]\n[ti:Song]\n[la:eng]\n[offset:+250]\n\
             [00:05.00]Second\n[00:01.00][00:09.00]Chorus\n\n[00:03.5]<00:03.50>Word <00:04.00>by word\n",
        );
        assert!(l.synced);
        assert_eq!(
            l.lines,
            vec![
                (Some(1000), "Chorus".to_owned()),
                (Some(3500), "Word by word".to_owned()),
                (Some(5000), "Second".to_owned()),
                (Some(9000), "Chorus".to_owned()),
            ]
        );
        assert_eq!(
            (
                l.artist.as_deref(),
                l.title.as_deref(),
                l.lang.as_deref(),
                l.offset
            ),
            (Some("Ann"), Some("Song"), Some("eng"), 250)
        );
    }

    #[test]
    fn plain_lyrics_with_a_stray_bracket_stay_unsynced() {
        let l = parse("[Chorus]\nOne line\nTwo lines\n[00:01.00]odd one\n");
        assert!(!l.synced);
        assert_eq!(l.lines.len(), 4);
        assert_eq!(l.text(), "[Chorus]\nOne line\nTwo lines\n[00:01.00]odd one");
    }

    #[test]
    fn unsynced_lyrics_keep_their_lines_and_blank_lines() {
        let l = parse("First\r\n\r\nThird\n");
        assert!(!l.synced);
        assert_eq!(
            l.lines,
            vec![
                (None, "First".to_owned()),
                (None, String::new()),
                (None, "Third".to_owned())
            ]
        );
    }
}
