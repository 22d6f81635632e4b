//! Spotify's extended streaming history (`Streaming_History_Audio_*.json`,
//! from the account privacy page): a JSON array of plays, each with `ts`
//! (when the play *ended*, ISO 8601 UTC), `ms_played`, and the track as
//! `master_metadata_track_name`, `master_metadata_album_artist_name`,
//! `master_metadata_album_album_name` and `spotify_track_uri`. Podcast
//! episodes and other rows without a track are left out, and so are plays
//! shorter than [`MIN_PLAY_MS`]; a listen starts at `ts − ms_played`.

use serde_json::{Map, Value};

use super::{str_of, Export, Format};
use crate::model::Listen;

/// The shortest play that counts as a listen: 30 s, Last.fm's rule.
pub const MIN_PLAY_MS: u64 = 30_000;

/// Whether `v` is a streaming history: an array whose first element has
/// `ts` and `ms_played`.
pub(super) fn sniff(v: &Value) -> bool {
    v.as_array()
        .and_then(|a| a.first())
        .and_then(Value::as_object)
        .is_some_and(|o| o.contains_key("ms_played") && o.contains_key("ts"))
}

pub(super) fn parse(v: &Value, user: &str) -> Export {
    let (mut short, mut no_track) = (0usize, 0usize);
    let mut listens = Vec::new();
    for o in v
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
    {
        match play(o, user) {
            Play::Listen(l) => listens.push(*l),
            Play::Short => short += 1,
            Play::NoTrack => no_track += 1,
        }
    }
    let mut notes = Vec::new();
    if short > 0 {
        notes.push(format!("{short} plays shorter than 30 s left out"));
    }
    if no_track > 0 {
        notes.push(format!(
            "{no_track} rows without a track (podcasts, or no time) left out"
        ));
    }
    Export {
        format: Format::Spotify,
        listens,
        notes,
    }
}

enum Play {
    Listen(Box<Listen>),
    Short,
    NoTrack,
}

fn play(o: &Map<String, Value>, user: &str) -> Play {
    let (title, artist) = (
        str_of(o, "master_metadata_track_name"),
        str_of(o, "master_metadata_album_artist_name"),
    );
    let end = o
        .get("ts")
        .and_then(Value::as_str)
        .and_then(|ts| ts.parse::<jiff::Timestamp>().ok());
    let (Some(end), false, false) = (end, title.is_empty(), artist.is_empty()) else {
        return Play::NoTrack;
    };
    let ms = o.get("ms_played").and_then(Value::as_u64).unwrap_or(0);
    if ms < MIN_PLAY_MS {
        return Play::Short;
    }
    let start = end.as_second() - (ms / 1000) as i64;
    let mut l = Listen::new(user, start, &artist, &title);
    l.album = str_of(o, "master_metadata_album_album_name");
    l.client = Format::Spotify.client();
    Play::Listen(Box::new(l))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows as Spotify writes them (trimmed of the fields not read): a
    /// song, a skip after 4 s, a podcast episode.
    const HISTORY: &str = r#"[
 {"ts":"2023-01-14T18:47:12Z","username":"x","platform":"Android OS 13 API 33 (Google, Pixel 6)","ms_played":245987,"conn_country":"DE","ip_addr_decrypted":"0.0.0.0","user_agent_decrypted":"unknown","master_metadata_track_name":"Teardrop","master_metadata_album_artist_name":"Massive Attack","master_metadata_album_album_name":"Mezzanine","spotify_track_uri":"spotify:track:67Hna13dNDkZvBpTXRIaOJ","episode_name":null,"episode_show_name":null,"spotify_episode_uri":null,"reason_start":"trackdone","reason_end":"trackdone","shuffle":false,"skipped":false,"offline":false,"offline_timestamp":1673721786,"incognito_mode":false},
 {"ts":"2023-01-14T18:47:16Z","ms_played":4012,"master_metadata_track_name":"Angel","master_metadata_album_artist_name":"Massive Attack","master_metadata_album_album_name":"Mezzanine","spotify_track_uri":"spotify:track:7uv632EkfwYhXoqf8rhYrg","episode_name":null,"skipped":true},
 {"ts":"2023-01-15T07:30:00Z","ms_played":1800000,"master_metadata_track_name":null,"master_metadata_album_artist_name":null,"master_metadata_album_album_name":null,"spotify_track_uri":null,"episode_name":"Episode 12","episode_show_name":"A Show","spotify_episode_uri":"spotify:episode:0"}
]"#;

    #[test]
    fn a_play_starts_its_length_before_it_ended_and_short_plays_and_podcasts_are_left_out() {
        let v: Value = serde_json::from_str(HISTORY).unwrap();
        assert!(sniff(&v));
        let e = parse(&v, "ann");
        assert_eq!(e.listens.len(), 1);
        let l = &e.listens[0];
        assert_eq!(
            (l.artist.as_str(), l.title.as_str(), l.album.as_str()),
            ("Massive Attack", "Teardrop", "Mezzanine")
        );
        // 2023-01-14T18:47:12Z is 1673722032; 245 s before it.
        assert_eq!(l.timestamp, 1_673_722_032 - 245);
        assert_eq!(l.client, "import/spotify");
        assert_eq!(e.notes.len(), 2, "{:?}", e.notes);
    }
}
