//! Readers for listening-history exports, the format sniffed from the
//! content ([`read_export`]):
//!
//! | format | file | module |
//! |---|---|---|
//! | Last.fm CSV | `artist,album,track,date` (lastfm-to-csv) | [`lastfm`] |
//! | Last.fm JSON | pages of `user.getRecentTracks`, or a flat array of tracks | [`lastfm`] |
//! | ListenBrainz | a JSON array or JSON lines of `{listened_at, track_metadata}` | [`listenbrainz`] |
//! | Rockbox | `.scrobbler.log` (`#AUDIOSCROBBLER/1.1`, tab-separated) | [`rockbox`] |
//! | Spotify | extended streaming history (`Streaming_History_Audio_*.json`) | [`spotify`] |
//! | Maloja | `maloja_export_*.json` (`{"scrobbles": [...]}`) | [`maloja`] |
//!
//! Every listen read carries the client `import/FORMAT` ([`Format::name`]).

pub mod lastfm;
pub mod listenbrainz;
pub mod maloja;
pub mod rockbox;
pub mod spotify;

use serde_json::Value;

use crate::model::Listen;

/// An export that could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    #[error("line {line}: {msg}")]
    Csv { line: usize, msg: String },
    #[error("not a Last.fm, ListenBrainz, Rockbox, Spotify or Maloja export: {0}")]
    Unknown(String),
    #[error("a Maloja export, but {0}")]
    Maloja(String),
    #[error("a Rockbox .scrobbler.log, but {0}")]
    Rockbox(String),
}

/// The kinds of export [`read_export`] knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    LastfmCsv,
    LastfmJson,
    ListenBrainz,
    Rockbox,
    Spotify,
    Maloja,
}

impl Format {
    /// The short name, as in the client `import/NAME` its listens carry.
    pub fn name(self) -> &'static str {
        match self {
            Format::LastfmCsv => "lastfm-csv",
            Format::LastfmJson => "lastfm",
            Format::ListenBrainz => "listenbrainz",
            Format::Rockbox => "rockbox",
            Format::Spotify => "spotify",
            Format::Maloja => "maloja",
        }
    }

    /// The client name of the listens read from this format.
    pub fn client(self) -> String {
        format!("import/{}", self.name())
    }
}

/// What an export held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    pub format: Format,
    pub listens: Vec<Listen>,
    /// What the reader assumed or left out, one sentence each (a Rockbox
    /// log in local time read as UTC, Spotify plays under 30 s skipped).
    pub notes: Vec<String>,
}

/// Parses an export (format guessed from its content) into listens for `user`.
pub fn parse_export(text: &str, user: &str) -> Result<Vec<Listen>, ImportError> {
    read_export(text, user).map(|e| e.listens)
}

/// Parses an export into listens for `user`, with its format and notes.
pub fn read_export(text: &str, user: &str) -> Result<Export, ImportError> {
    let t = text.trim_start_matches('\u{feff}').trim_start();
    if rockbox::sniff(t) {
        return rockbox::parse(t, user);
    }
    if t.starts_with('[') || t.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<Value>(t) {
            if maloja::sniff(&v) {
                return maloja::parse(&v, user);
            }
            if spotify::sniff(&v) {
                return Ok(spotify::parse(&v, user));
            }
            return Ok(read_json(&v, user));
        }
        // JSON lines (ListenBrainz).
        let mut out = Vec::new();
        for (i, line) in t.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let v: Value = serde_json::from_str(line)
                .map_err(|e| ImportError::Unknown(format!("line {}: {e}", i + 1)))?;
            walk(&v, user, &mut out);
        }
        return Ok(export_of(out));
    }
    Ok(Export {
        format: Format::LastfmCsv,
        listens: lastfm::parse_csv(t, user)?,
        notes: Vec::new(),
    })
}

/// The listens anywhere in a Last.fm or ListenBrainz JSON document: an
/// export, or one page of `user.getRecentTracks` or `/1/user/NAME/listens`
/// (a Last.fm now-playing row, which has no date, is left out).
pub fn read_json(v: &Value, user: &str) -> Export {
    let mut out = Vec::new();
    walk(v, user, &mut out);
    export_of(out)
}

/// The format of listens [`walk`] found: Last.fm JSON when the first is
/// a Last.fm track, else ListenBrainz.
fn export_of(listens: Vec<Listen>) -> Export {
    let format = match listens.first() {
        Some(l) if l.client == Format::LastfmJson.client() => Format::LastfmJson,
        _ => Format::ListenBrainz,
    };
    Export {
        format,
        listens,
        notes: Vec::new(),
    }
}

/// Collects Last.fm tracks and ListenBrainz listens at any depth.
fn walk(v: &Value, user: &str, out: &mut Vec<Listen>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| walk(x, user, out)),
        Value::Object(o) => {
            if o.contains_key("track_metadata") {
                out.extend(listenbrainz::listen(o, user));
            } else if o.contains_key("artist") && o.contains_key("name") {
                out.extend(lastfm::track(o, user));
            } else {
                for x in o.values() {
                    walk(x, user, out);
                }
            }
        }
        _ => {}
    }
}

/// A string field, or the `#text`/`name` of an object (Last.fm JSON).
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

/// A string field of a JSON object; empty when missing or not a string.
fn str_of(o: &serde_json::Map<String, Value>, key: &str) -> String {
    o.get(key).and_then(Value::as_str).unwrap_or("").to_owned()
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
    fn each_format_is_sniffed_and_named_in_the_client() {
        let cases: [(&str, Format); 6] = [
            ("A,Al,T,1600000000\n", Format::LastfmCsv),
            (
                r#"{"track":[{"artist":"A","name":"T","date":{"uts":1600000000}}]}"#,
                Format::LastfmJson,
            ),
            (
                r#"[{"listened_at":1600000000,"track_metadata":{"artist_name":"A","track_name":"T"}}]"#,
                Format::ListenBrainz,
            ),
            (
                "#AUDIOSCROBBLER/1.1\n#TZ/UTC\n#CLIENT/Rockbox\nA\tAl\tT\t1\t200\tL\t1600000000\t\n",
                Format::Rockbox,
            ),
            (
                r#"[{"ts":"2020-09-13T12:30:00Z","ms_played":200000,"master_metadata_track_name":"T","master_metadata_album_artist_name":"A","master_metadata_album_album_name":"Al","spotify_track_uri":"spotify:track:x"}]"#,
                Format::Spotify,
            ),
            (
                r#"{"scrobbles":[{"time":1600000000,"track":{"artists":["A"],"title":"T","album":null,"length":null},"duration":null,"origin":"client:x"}]}"#,
                Format::Maloja,
            ),
        ];
        for (text, format) in cases {
            let e = read_export(text, "u").unwrap();
            assert_eq!(e.format, format, "{text}");
            assert_eq!(e.listens.len(), 1, "{text}");
            assert_eq!(e.listens[0].client, format!("import/{}", format.name()));
            assert_eq!(e.listens[0].user, "u");
        }
    }

    #[test]
    fn a_page_of_either_api_reads_as_its_listens() {
        let lfm = r##"{"recenttracks":{"track":{"artist":{"#text":"A","mbid":""},"name":"T","date":{"uts":"1600000000","#text":"13 Sep 2020, 12:26"}},"@attr":{"user":"bob","page":"1","total":"1"}}}"##;
        let v: Value = serde_json::from_str(lfm).unwrap();
        assert_eq!(read_json(&v, "u").listens[0].timestamp, 1_600_000_000);
        let lb = r#"{"payload":{"count":1,"user_id":"bob","listens":[{"listened_at":1600000001,"track_metadata":{"artist_name":"A","track_name":"T","additional_info":{"duration_ms":181000}}}]}}"#;
        let v: Value = serde_json::from_str(lb).unwrap();
        let e = read_json(&v, "u");
        assert_eq!(e.format, Format::ListenBrainz);
        assert_eq!(e.listens[0].duration, Some(181));
    }

    /// Maloja's export of four plays, one of them of two artists.
    const MALOJA: &str = r#"{"scrobbles":[
        {"time":1672531200,"track":{"artists":["Daft Punk"],"title":"One More Time","album":null,"length":320}},
        {"time":1672531600,"track":{"artists":["Daft Punk"],"title":"Aerodynamic","album":null,"length":212}},
        {"time":1672532000,"track":{"artists":["Daft Punk"],"title":"Digital Love","album":null,"length":301}},
        {"time":1672532400,"track":{"artists":["Daft Punk","Pharrell Williams"],"title":"Get Lucky","album":null,"length":369}}
    ]}"#;

    #[test]
    fn an_imported_listen_of_two_artists_counts_whole_for_each_in_the_artist_chart() {
        let listens = parse_export(MALOJA, "ann").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (st, _) = crate::Listens::open(dir.path()).unwrap();
        st.submit(&listens).unwrap();
        let chart = st.top("ann", crate::ChartKind::Artists, None, 10, 1);
        let rows: Vec<(&str, u32)> = chart
            .rows
            .iter()
            .map(|r| (r.name.as_str(), r.playcount))
            .collect();
        assert_eq!(rows, vec![("Daft Punk", 4), ("Pharrell Williams", 1)]);
        let tracks = st.top("ann", crate::ChartKind::Tracks, None, 10, 1);
        assert!(tracks
            .rows
            .iter()
            .any(|r| r.name == "Get Lucky" && r.artist == "Daft Punk, Pharrell Williams"));
    }
}
