//! Rockbox's (and other portable players') `.scrobbler.log`, format 1.1
//! (<http://www.audioscrobbler.net/wiki/Portable_Player_Logging>):
//! header lines starting with `#` (`#AUDIOSCROBBLER/1.1`, `#TZ/UTC` or
//! `#TZ/UNKNOWN`, `#CLIENT/…`), then one tab-separated line per track:
//! artist, album, title, track number, length in seconds, rating (`L`
//! listened at least half, `S` skipped), start time in UNIX seconds, and
//! the MusicBrainz track id. Only `L` lines are listens. With
//! `#TZ/UNKNOWN` the times are the player's local clock, which nothing in
//! the file names: they are read as UTC and the import says so. Rockbox
//! writes a damaged entry as a `#` line, which is skipped like a header.

use super::{Export, Format, ImportError};
use crate::model::Listen;

/// Whether `text` (leading whitespace trimmed) is a scrobbler log.
pub(super) fn sniff(text: &str) -> bool {
    text.starts_with("#AUDIOSCROBBLER/")
}

/// Reads a log; a line that is not a track is refused with its number.
pub(super) fn parse(text: &str, user: &str) -> Result<Export, ImportError> {
    let mut listens = Vec::new();
    let mut notes = Vec::new();
    let mut local_time = false;
    let mut skipped = 0usize;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if let Some(header) = line.strip_prefix('#') {
            if let Some(tz) = header.strip_prefix("TZ/") {
                local_time = tz.trim() != "UTC";
            }
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 7 {
            return Err(ImportError::Rockbox(format!(
                "line {} has {} fields, not the 8 of artist, album, title, track number, length, rating, time, MusicBrainz id",
                i + 1,
                f.len()
            )));
        }
        let rating = f[5].trim();
        if rating != "L" {
            skipped += usize::from(rating == "S");
            continue;
        }
        let ts: i64 = f[6].trim().parse().map_err(|_| {
            ImportError::Rockbox(format!("line {}: cannot read the time '{}'", i + 1, f[6]))
        })?;
        let mut l = Listen::new(user, ts, f[0].trim(), f[2].trim());
        l.album = f[1].trim().to_owned();
        l.track_number = f[3].trim().parse().ok().filter(|n| *n > 0);
        l.duration = f[4].trim().parse().ok().filter(|n| *n > 0);
        l.mbid = f.get(7).map_or("", |m| m.trim()).to_owned();
        l.client = Format::Rockbox.client();
        listens.push(l);
    }
    if local_time {
        notes.push(
            "the log's times are the player's local clock (#TZ/UNKNOWN) and were read as UTC"
                .to_owned(),
        );
    }
    if skipped > 0 {
        notes.push(format!("{skipped} skipped tracks (S) left out"));
    }
    Ok(Export {
        format: Format::Rockbox,
        listens,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log as Rockbox writes it: local time, a skip, a damaged entry.
    const LOG: &str = "#AUDIOSCROBBLER/1.1\n#TZ/UNKNOWN\n#CLIENT/Rockbox ipodvideo $Revision$\n\
Metallica\tMetallica\tEnter Sandman\t1\t365\tL\t1143374412\t62c2e20a-559e-422f-a44c-9afa7882f0c4\n\
Portishead\tDummy\tCowboys\t2\t279\tS\t1143374777\t\n\
# FAILED: Portishead\tDummy\tRoads\n\
Portishead\t\tThe Rip\t\t269\tL\t1143375056\t\n";

    #[test]
    fn only_listened_rows_count_and_local_time_is_said() {
        let e = parse(LOG, "ann").unwrap();
        assert_eq!(e.format, Format::Rockbox);
        assert_eq!(e.listens.len(), 2);
        let l = &e.listens[0];
        assert_eq!(
            (l.artist.as_str(), l.title.as_str()),
            ("Metallica", "Enter Sandman")
        );
        assert_eq!(
            (l.timestamp, l.duration, l.track_number),
            (1_143_374_412, Some(365), Some(1))
        );
        assert_eq!(l.mbid, "62c2e20a-559e-422f-a44c-9afa7882f0c4");
        assert_eq!(l.client, "import/rockbox");
        let rip = &e.listens[1];
        assert_eq!((rip.album.as_str(), rip.track_number), ("", None));
        assert!(
            e.notes.iter().any(|n| n.contains("#TZ/UNKNOWN")),
            "{:?}",
            e.notes
        );
        assert!(
            e.notes.iter().any(|n| n.starts_with("1 skipped")),
            "{:?}",
            e.notes
        );
    }

    #[test]
    fn a_utc_log_needs_no_note() {
        let log = LOG.replace("#TZ/UNKNOWN", "#TZ/UTC");
        assert!(!parse(&log, "ann")
            .unwrap()
            .notes
            .iter()
            .any(|n| n.contains("UTC")));
    }

    #[test]
    fn a_short_line_is_refused_with_its_number() {
        let log = "#AUDIOSCROBBLER/1.1\n#TZ/UTC\nA\tB\tC\n";
        let err = parse(log, "ann").unwrap_err().to_string();
        assert!(err.contains("line 3 has 3 fields"), "{err}");
    }
}
