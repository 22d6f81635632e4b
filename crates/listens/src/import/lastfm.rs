//! Last.fm exports: the scrobble CSV (as lastfm-to-csv writes it:
//! `artist,album,track,date`, dates like `31 Jan 2021 19:02` or UNIX
//! seconds, or a header naming the columns) and the tracks of
//! `user.getRecentTracks` JSON pages (a backup script's files, or a live
//! pull's pages).

use serde_json::{Map, Value};

use super::{str_of, text_of, Format, ImportError};
use crate::model::Listen;

/// A Last.fm track object; `None` for a now-playing row (no date).
pub(super) fn track(o: &Map<String, Value>, user: &str) -> Option<Listen> {
    let ts = o
        .get("date")
        .and_then(|d| d.get("uts"))
        .and_then(|u| u.as_str().and_then(|s| s.parse().ok()).or(u.as_i64()))?;
    let mut l = Listen::new(user, ts, &text_of(o.get("artist")), &text_of(o.get("name")));
    l.album = text_of(o.get("album"));
    l.mbid = str_of(o, "mbid");
    l.client = Format::LastfmJson.client();
    Some(l)
}

fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// `31 Jan 2021 19:02` or `31 Jan 2021, 19:02` (UTC), or UNIX seconds.
pub(super) fn parse_date(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Ok(n) = s.parse::<i64>() {
        return Some(if n > 100_000_000_000 { n / 1000 } else { n });
    }
    let cleaned = s.replace(',', " ");
    let parts: Vec<&str> = cleaned.split_whitespace().collect();
    let [d, m, y, hm] = parts[..] else {
        return None;
    };
    let d: i8 = d.parse().ok()?;
    let m = MONTHS
        .iter()
        .position(|x| m.to_ascii_lowercase().starts_with(x))? as i8
        + 1;
    let y: i16 = y.parse().ok()?;
    let (h, mi) = hm.split_once(':')?;
    let (h, mi): (i8, i8) = (h.parse().ok()?, mi.get(..2).unwrap_or(mi).parse().ok()?);
    // A date or time that does not exist (31 Feb, 24:00) is refused.
    let at = jiff::civil::DateTime::new(y, m, d, h, mi, 0, 0).ok()?;
    Some(jiff::tz::Offset::UTC.to_timestamp(at).ok()?.as_second())
}

/// The rows of a Last.fm scrobble CSV.
pub(super) fn parse_csv(text: &str, user: &str) -> Result<Vec<Listen>, ImportError> {
    let mut out = Vec::new();
    let mut cols: Option<(usize, usize, usize, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let f = csv_fields(line);
        if i == 0 {
            let lower: Vec<String> = f.iter().map(|x| x.trim().to_ascii_lowercase()).collect();
            let pos = |names: &[&str]| lower.iter().position(|c| names.contains(&c.as_str()));
            if let (Some(a), Some(t), Some(d)) = (
                pos(&["artist", "artist_name"]),
                pos(&["track", "title", "name", "track_name"]),
                pos(&["date", "uts", "timestamp", "listened_at", "time"]),
            ) {
                cols = Some((
                    a,
                    pos(&["album", "release_name"]).unwrap_or(usize::MAX),
                    t,
                    d,
                ));
                continue;
            }
        }
        let (a, al, t, d) = cols.unwrap_or((0, 1, 2, 3));
        let get = |k: usize| f.get(k).map(|s| s.trim().to_owned()).unwrap_or_default();
        let ts = parse_date(&get(d)).ok_or_else(|| ImportError::Csv {
            line: i + 1,
            msg: format!("cannot read the date '{}'", get(d)),
        })?;
        let mut l = Listen::new(user, ts, &get(a), &get(t));
        l.album = get(al);
        l.client = Format::LastfmCsv.client();
        out.push(l);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_dates_are_utc_and_must_exist() {
        assert_eq!(parse_date("31 Jan 2021 19:02"), Some(1_612_119_720));
        assert_eq!(parse_date("31 January 2021, 19:02:59"), Some(1_612_119_720));
        assert_eq!(parse_date("29 Feb 2020, 23:59"), Some(1_583_020_740));
        assert_eq!(parse_date("31 Dec 1969 23:00"), Some(-3600));
        assert_eq!(parse_date("1600000000000"), Some(1_600_000_000));
        for bad in [
            "29 Feb 2021 10:00",
            "31 Apr 2021 10:00",
            "1 Jan 2021 24:00",
            "1 Foo 2021 10:00",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_csv_header_names_the_columns_in_any_order() {
        let csv = "uts,artist,track,album\n1600000000,Portishead,Roads,Dummy\n";
        let l = parse_csv(csv, "u").unwrap();
        assert_eq!(l.len(), 1);
        assert_eq!(
            (
                l[0].artist.as_str(),
                l[0].title.as_str(),
                l[0].album.as_str()
            ),
            ("Portishead", "Roads", "Dummy")
        );
        assert_eq!(l[0].client, "import/lastfm-csv");
    }

    #[test]
    fn a_now_playing_row_is_not_a_listen() {
        let v: Value = serde_json::from_str(
            r##"{"artist":{"#text":"A"},"name":"T","@attr":{"nowplaying":"true"}}"##,
        )
        .unwrap();
        assert_eq!(track(v.as_object().unwrap(), "u"), None);
    }
}
