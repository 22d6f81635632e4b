//! ID3v2 `SYLT` frames (synchronised lyrics) turned into LRC text.
//!
//! lofty keeps `SYLT` as a raw frame of the ID3v2 tag (its generic tag
//! has no place for timed text), so the scanner reads an MPEG file's own
//! ID3v2 tag for them. Each frame becomes one LRC text: an `[la:…]` line
//! with the frame's ISO 639-2 language, then one `[mm:ss.xxx]text` line
//! per lyric line. Frames whose timestamps count MPEG frames rather than
//! milliseconds, and frames holding something other than lyrics (chords,
//! events, URLs), are left out.

use std::fmt::Write as _;

use lofty::id3::v2::{
    Frame, Id3v2Tag, SyncTextContentType, SynchronizedTextFrame, TimestampFormat,
};

/// Every usable `SYLT` frame of `tag` as LRC text.
pub fn synced_lyrics(tag: &Id3v2Tag) -> Vec<String> {
    tag.into_iter()
        .filter_map(|frame| match frame {
            Frame::Binary(b) if b.id().as_str() == "SYLT" => {
                SynchronizedTextFrame::parse(&b.data, b.flags()).ok()
            }
            _ => None,
        })
        .filter(|f| {
            f.timestamp_format == TimestampFormat::MS
                && matches!(
                    f.content_type,
                    SyncTextContentType::Lyrics | SyncTextContentType::Other
                )
        })
        .filter_map(|f| to_lrc(&f.language, &f.content))
        .collect()
}

/// LRC text of timed `content` in language `lang`; `None` when it holds
/// no text.
///
/// ID3v2.4 marks the start of a new line with a leading newline in an
/// entry, and syllables of one line come as entries without one; a frame
/// where no entry starts with a newline has one line per entry.
pub fn to_lrc(lang: &[u8; 3], content: &[(u32, String)]) -> Option<String> {
    let marked = content.iter().any(|(_, t)| t.starts_with(['\n', '\r']));
    let mut lines: Vec<(u32, String)> = Vec::new();
    for (ms, text) in content {
        let new_line = !marked || text.starts_with(['\n', '\r']) || lines.is_empty();
        let text = text.trim_start_matches(['\n', '\r']);
        if new_line {
            lines.push((*ms, text.to_owned()));
        } else if let Some((_, line)) = lines.last_mut() {
            line.push_str(text);
        }
    }
    if lines.iter().all(|(_, t)| t.trim().is_empty()) {
        return None;
    }
    let mut out = String::new();
    if lang.iter().all(u8::is_ascii_alphabetic) {
        let lang: String = lang.iter().map(|b| char::from(*b)).collect();
        let _ = writeln!(out, "[la:{}]", lang.to_ascii_lowercase());
    }
    for (ms, text) in lines {
        let _ = writeln!(
            out,
            "[{:02}:{:02}.{:03}]{}",
            ms / 60_000,
            ms / 1000 % 60,
            ms % 1000,
            text.trim_end()
        );
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_entry_per_line_becomes_lrc_with_its_language() {
        let lrc = to_lrc(
            b"eng",
            &[
                (0, "First".into()),
                (2500, "Second".into()),
                (61_007, "Third".into()),
            ],
        )
        .unwrap();
        assert_eq!(
            lrc,
            "[la:eng]\n[00:00.000]First\n[00:02.500]Second\n[01:01.007]Third\n"
        );
    }

    #[test]
    fn syllables_join_until_a_newline_starts_the_next_line() {
        let lrc = to_lrc(
            b"XXX",
            &[
                (1000, "\nStrang".into()),
                (1200, "ers".into()),
                (2000, "\nin the night".into()),
            ],
        )
        .unwrap();
        assert_eq!(
            lrc,
            "[la:xxx]\n[00:01.000]Strangers\n[00:02.000]in the night\n"
        );
    }

    #[test]
    fn empty_frames_give_nothing() {
        assert_eq!(to_lrc(b"eng", &[(0, " ".into())]), None);
        assert_eq!(to_lrc(b"eng", &[]), None);
    }
}
