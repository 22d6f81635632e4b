//! Readers for listening-history exports: Last.fm scrobble CSV (as
//! lastfm-to-csv writes it: `artist,album,track,date`, dates like
//! `31 Jan 2021 19:02` or UNIX seconds), Last.fm JSON (pages of
//! `user.getRecentTracks` as backup scripts save them, or a flat array of
//! tracks), and ListenBrainz exports (a JSON array or JSON lines of
//! listens with `listened_at` and `track_metadata`).

use serde_json::Value;

use crate::model::Listen;

/// An export that could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    #[error("line {line}: {msg}")]
    Csv { line: usize, msg: String },
    #[error("not a Last.fm or ListenBrainz export: {0}")]
    Unknown(String),
}

/// Parses an export (format guessed from its content) into listens for `user`.
pub fn parse_export(text: &str, user: &str) -> Result<Vec<Listen>, ImportError> {
    let t = text.trim_start_matches('\u{feff}').trim_start();
    if t.starts_with('[') || t.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<Value>(t) {
            let mut out = Vec::new();
            walk(&v, user, &mut out);
            return Ok(out);
        }
        // JSON lines.
        let mut out = Vec::new();
        for (i, line) in t.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let v: Value = serde_json::from_str(line)
                .map_err(|e| ImportError::Unknown(format!("line {}: {e}", i + 1)))?;
            walk(&v, user, &mut out);
        }
        return Ok(out);
    }
    parse_csv(t, user)
}

fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) => o
            .get("#text")
            .or_else(|| o.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        _ => String::new(),
    }
}

fn walk(v: &Value, user: &str, out: &mut Vec<Listen>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| walk(x, user, out)),
        Value::Object(o) => {
            if let Some(md) = o.get("track_metadata") {
                // ListenBrainz.
                let Some(ts) = o.get("listened_at").and_then(Value::as_i64) else {
                    return;
                };
                let s = |k: &str| md.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                let mut l = Listen::new(user, ts, &s("artist_name"), &s("track_name"));
                l.album = s("release_name");
                if let Some(ai) = md.get("additional_info") {
                    l.mbid = ai
                        .get("recording_mbid")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    l.duration = ai
                        .get("duration_ms")
                        .and_then(Value::as_u64)
                        .map(|ms| (ms / 1000) as u32);
                }
                if l.mbid.is_empty() {
                    if let Some(m) = o
                        .get("mbid_mapping")
                        .and_then(|m| m.get("recording_mbid"))
                        .and_then(Value::as_str)
                    {
                        l.mbid = m.to_owned();
                    }
                }
                l.client = "import".into();
                out.push(l);
            } else if o.contains_key("artist") && o.contains_key("name") && o.contains_key("date") {
                // A Last.fm track; now-playing entries have no date.
                let ts = o
                    .get("date")
                    .and_then(|d| d.get("uts"))
                    .and_then(|u| u.as_str().and_then(|s| s.parse().ok()).or(u.as_i64()));
                let Some(ts) = ts else { return };
                let mut l =
                    Listen::new(user, ts, &text_of(o.get("artist")), &text_of(o.get("name")));
                l.album = text_of(o.get("album"));
                l.mbid = o
                    .get("mbid")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                l.client = "import".into();
                out.push(l);
            } else {
                for x in o.values() {
                    walk(x, user, out);
                }
            }
        }
        _ => {}
    }
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
fn parse_date(s: &str) -> Option<i64> {
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

fn parse_csv(text: &str, user: &str) -> Result<Vec<Listen>, ImportError> {
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
        l.client = "import".into();
        out.push(l);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_lastfm_csv_json_and_listenbrainz() {
        let csv = "Björk,Post,\"Hyper, Ballad\",31 Jan 2021 19:02\nA,,B,1600000000\n";
        let l = parse_export(csv, "u").unwrap();
        assert_eq!(l[0].title, "Hyper, Ballad");
        assert_eq!(l[0].timestamp, 1_612_119_720);
        assert_eq!(l[1].timestamp, 1_600_000_000);
        let js = r##"[{"recenttracks":{"track":[{"artist":{"#text":"A"},"name":"T","album":{"#text":"Al"},"date":{"uts":"1600000001"}},{"artist":{"#text":"N"},"name":"P","@attr":{"nowplaying":"true"}}]}}]"##;
        let l = parse_export(js, "u").unwrap();
        assert_eq!(l.len(), 1);
        assert_eq!((l[0].artist.as_str(), l[0].album.as_str()), ("A", "Al"));
        let lb = "{\"listened_at\":1600000002,\"track_metadata\":{\"artist_name\":\"X\",\"track_name\":\"Y\"}}\n{\"listened_at\":1600000003,\"track_metadata\":{\"artist_name\":\"X\",\"track_name\":\"Z\"}}\n";
        let l = parse_export(lb, "u").unwrap();
        assert_eq!(l.len(), 2);
        assert!(parse_export("a,b,c,not a date\n", "u").is_err());
    }

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
}
