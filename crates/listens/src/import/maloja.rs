//! Maloja's export (`maloja_export_*.json`, from `maloja export` or the
//! web UI): `{"scrobbles": [...]}`, each scrobble
//! `{time, track: {artists: [..], title, album: {albumtitle, artists} |
//! null, length}, duration, origin}`. Maloja keeps several artists per
//! track: the listen is credited to each of them (the artist chart counts
//! it for every one), and shows them joined with `, `, as Maloja does.
//! An album's artists are joined the same way. The track's `length` is the listen's duration
//! (`duration` is how long it was played).

use serde_json::{Map, Value};

use super::{str_of, Export, Format, ImportError};
use crate::model::Listen;

/// Whether `v` is a Maloja export: an object with a `scrobbles` array.
pub(super) fn sniff(v: &Value) -> bool {
    v.get("scrobbles").is_some_and(Value::is_array)
}

pub(super) fn parse(v: &Value, user: &str) -> Result<Export, ImportError> {
    let mut listens = Vec::new();
    let scrobbles = v.get("scrobbles").and_then(Value::as_array);
    for (i, s) in scrobbles.into_iter().flatten().enumerate() {
        let row = || format!("scrobble {} ", i + 1);
        let time = s
            .get("time")
            .and_then(Value::as_i64)
            .ok_or_else(|| ImportError::Maloja(format!("{}has no time", row())))?;
        let track = s
            .get("track")
            .and_then(Value::as_object)
            .ok_or_else(|| ImportError::Maloja(format!("{}has no track", row())))?;
        let mut l = Listen::new(user, time, &artists(track), &str_of(track, "title"));
        l.credit(names(track));
        if let Some(album) = track.get("album").and_then(Value::as_object) {
            l.album = album
                .get("albumtitle")
                .or_else(|| album.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            l.album_artist = artists(album);
        }
        l.duration = track
            .get("length")
            .and_then(Value::as_u64)
            .map(|s| s as u32);
        l.client = Format::Maloja.client();
        listens.push(l);
    }
    Ok(Export {
        format: Format::Maloja,
        listens,
        notes: Vec::new(),
    })
}

/// The `artists` list joined with `, `.
fn artists(o: &Map<String, Value>) -> String {
    names(o).collect::<Vec<_>>().join(", ")
}

/// The names of the `artists` list.
fn names(o: &Map<String, Value>) -> impl Iterator<Item = &str> {
    o.get("artists")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An export as Maloja 3 writes it (`json.dump(..., indent=3)`).
    const EXPORT: &str = r#"{
   "scrobbles": [
      {
         "time": 1672531200,
         "track": {
            "artists": ["Daft Punk", "Pharrell Williams"],
            "title": "Get Lucky",
            "album": {"artists": ["Daft Punk"], "albumtitle": "Random Access Memories"},
            "length": 369
         },
         "duration": 248,
         "origin": "client:phone"
      },
      {
         "time": 1672531800,
         "track": {"artists": ["Boards of Canada"], "title": "Roygbiv", "album": null, "length": null},
         "duration": null,
         "origin": "import:lastfm"
      }
   ]
}"#;

    #[test]
    fn several_artists_are_credited_and_joined_and_the_album_and_length_are_kept() {
        let v: Value = serde_json::from_str(EXPORT).unwrap();
        assert!(sniff(&v));
        let e = parse(&v, "ann").unwrap();
        assert_eq!(e.listens.len(), 2);
        let l = &e.listens[0];
        assert_eq!(l.artist, "Daft Punk, Pharrell Williams");
        assert_eq!(l.artists, ["Daft Punk", "Pharrell Williams"]);
        assert!(e.listens[1].artists.is_empty(), "one artist: no list");
        assert_eq!(
            (l.album.as_str(), l.album_artist.as_str()),
            ("Random Access Memories", "Daft Punk")
        );
        assert_eq!((l.timestamp, l.duration), (1_672_531_200, Some(369)));
        assert_eq!(l.client, "import/maloja");
        assert_eq!(
            (e.listens[1].album.as_str(), e.listens[1].duration),
            ("", None)
        );
    }

    #[test]
    fn a_scrobble_without_a_time_is_refused_with_its_number() {
        let v: Value =
            serde_json::from_str(r#"{"scrobbles":[{"track":{"artists":["A"],"title":"T"}}]}"#)
                .unwrap();
        assert_eq!(
            parse(&v, "u").unwrap_err().to_string(),
            "a Maloja export, but scrobble 1 has no time"
        );
    }
}
