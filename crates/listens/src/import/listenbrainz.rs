//! ListenBrainz exports and pages of `/1/user/NAME/listens`: listens with
//! `listened_at` and `track_metadata` (`artist_name`, `track_name`,
//! `release_name`, `additional_info` with `recording_mbid`,
//! `duration_ms`, `tracknumber`, `artist_names`), and the MusicBrainz
//! mapping a ListenBrainz export adds (`mbid_mapping.recording_mbid`, and
//! the credited artists `mbid_mapping.artists[].artist_credit_name`).
//! A listen with several artist names is credited to each (`artist_name`
//! stays the name shown); `artist_names` wins over the mapping's.

use serde_json::{Map, Value};

use super::{str_of, Format};
use crate::model::Listen;

/// A listen object; `None` without a `listened_at` (a playing-now entry).
pub(super) fn listen(o: &Map<String, Value>, user: &str) -> Option<Listen> {
    let md = o.get("track_metadata")?.as_object()?;
    let ts = o.get("listened_at").and_then(Value::as_i64)?;
    let mut l = Listen::new(
        user,
        ts,
        &str_of(md, "artist_name"),
        &str_of(md, "track_name"),
    );
    l.album = str_of(md, "release_name");
    if let Some(ai) = md.get("additional_info").and_then(Value::as_object) {
        additional_info(ai, &mut l);
    }
    let mapping = o.get("mbid_mapping");
    if l.mbid.is_empty() {
        if let Some(m) = mapping
            .and_then(|m| m.get("recording_mbid"))
            .and_then(Value::as_str)
        {
            l.mbid = m.to_owned();
        }
    }
    if l.artists.is_empty() {
        if let Some(credits) = mapping
            .and_then(|m| m.get("artists"))
            .and_then(Value::as_array)
        {
            l.credit(
                credits
                    .iter()
                    .filter_map(|a| a.get("artist_credit_name")?.as_str()),
            );
        }
    }
    l.client = Format::ListenBrainz.client();
    Some(l)
}

/// The details of a listen's `track_metadata.additional_info`, as an
/// export and a client's submission (the server's `/1/submit-listens`)
/// carry them: `recording_mbid`, the length (`duration_ms`, else
/// `duration` in seconds), `tracknumber` (a number or a string) and the
/// credited artists `artist_names` (a list of strings; see
/// [`Listen::credit`]).
pub fn additional_info(ai: &Map<String, Value>, l: &mut Listen) {
    if let Some(names) = ai.get("artist_names").and_then(Value::as_array) {
        l.credit(names.iter().filter_map(Value::as_str));
    }
    l.mbid = str_of(ai, "recording_mbid");
    l.duration = ai
        .get("duration_ms")
        .and_then(Value::as_u64)
        .map(|ms| (ms / 1000) as u32)
        .or_else(|| ai.get("duration").and_then(Value::as_u64).map(|s| s as u32));
    l.track_number = ai
        .get("tracknumber")
        .and_then(|n| n.as_u64().or_else(|| n.as_str()?.parse().ok()))
        .map(|n| n as u32);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(json: &str) -> Option<Listen> {
        let v: Value = serde_json::from_str(json).unwrap();
        listen(v.as_object().unwrap(), "ann")
    }

    #[test]
    fn an_export_row_keeps_its_mapping_and_details() {
        let l = one(
            r#"{"listened_at":1600000000,"recording_msid":"x","track_metadata":{"artist_name":"Björk","track_name":"Jóga","release_name":"Homogenic","additional_info":{"duration_ms":305000,"tracknumber":"2"}},"mbid_mapping":{"recording_mbid":"0c5d5c82-0000-4000-8000-000000000000"}}"#,
        )
        .unwrap();
        assert_eq!((l.artist.as_str(), l.title.as_str()), ("Björk", "Jóga"));
        assert_eq!(l.album, "Homogenic");
        assert_eq!(l.duration, Some(305));
        assert_eq!(l.track_number, Some(2));
        assert_eq!(l.mbid, "0c5d5c82-0000-4000-8000-000000000000");
    }

    #[test]
    fn a_playing_now_entry_is_not_a_listen() {
        assert_eq!(
            one(r#"{"playing_now":true,"track_metadata":{"artist_name":"A","track_name":"T"}}"#),
            None
        );
    }

    #[test]
    fn additional_info_reads_a_length_in_seconds_and_a_numeric_track_number() {
        let v: Value =
            serde_json::from_str(r#"{"duration":245,"tracknumber":7,"recording_mbid":"m"}"#)
                .unwrap();
        let mut l = Listen::new("ann", 1, "A", "T");
        additional_info(v.as_object().unwrap(), &mut l);
        assert_eq!(
            (l.duration, l.track_number, l.mbid.as_str()),
            (Some(245), Some(7), "m")
        );
    }

    #[test]
    fn artist_names_and_the_mappings_credits_make_the_credited_artists() {
        let l = one(
            r#"{"listened_at":1600000000,"track_metadata":{"artist_name":"Daft Punk feat. Pharrell Williams","track_name":"Get Lucky","additional_info":{"artist_names":["Daft Punk","Pharrell Williams"]}}}"#,
        )
        .unwrap();
        assert_eq!(l.artist, "Daft Punk feat. Pharrell Williams");
        assert_eq!(l.artists, ["Daft Punk", "Pharrell Williams"]);
        let mapped = r#"{"listened_at":1600000000,"track_metadata":{"artist_name":"Daft Punk feat. Pharrell Williams","track_name":"Get Lucky"},"mbid_mapping":{"recording_mbid":"m","artists":[{"artist_credit_name":"Daft Punk","join_phrase":" feat. ","artist_mbid":"a"},{"artist_credit_name":"Pharrell Williams","join_phrase":"","artist_mbid":"b"}]}}"#;
        let l = one(mapped).unwrap();
        assert_eq!(l.artists, ["Daft Punk", "Pharrell Williams"]);
        // One credited artist is no list.
        let l = one(
            r#"{"listened_at":1,"track_metadata":{"artist_name":"A","track_name":"T","additional_info":{"artist_names":["A"]}}}"#,
        )
        .unwrap();
        assert!(l.artists.is_empty());
    }
}
