//! MPRIS2 values into [`Track`]s and [`Event`]s, absorbing what players
//! get wrong: `xesam:artist` as a plain string, lengths of any
//! integer type, `NoTrack`, empty dicts.

use std::time::Duration;

use zbus::zvariant::Value;

use crate::session::{Event, LoopStatus, Status};
use crate::track::Track;

pub const PREFIX: &str = "org.mpris.MediaPlayer2.";
pub const PATH: &str = "/org/mpris/MediaPlayer2";
pub const PLAYER_IFACE: &str = "org.mpris.MediaPlayer2.Player";
pub const ROOT_IFACE: &str = "org.mpris.MediaPlayer2";
const NO_TRACK: &str = "/org/mpris/MediaPlayer2/TrackList/NoTrack";

fn unwrap<'a, 'b>(v: &'a Value<'b>) -> &'a Value<'b> {
    match v {
        Value::Value(inner) => unwrap(inner),
        other => other,
    }
}

/// A string, or an object path, or the first of an array of strings.
pub fn as_string(v: &Value<'_>) -> Option<String> {
    match unwrap(v) {
        Value::Str(s) => Some(s.to_string()),
        Value::ObjectPath(p) => Some(p.to_string()),
        Value::Array(a) => a.inner().iter().find_map(as_string),
        _ => None,
    }
}

/// An array of strings, or one string as an array of one.
pub fn as_strings(v: &Value<'_>) -> Vec<String> {
    match unwrap(v) {
        Value::Array(a) => a.inner().iter().filter_map(as_string).collect(),
        Value::Str(s) => vec![s.to_string()],
        _ => Vec::new(),
    }
}

/// Any integer (or float, or numeric string) as i64.
pub fn as_i64(v: &Value<'_>) -> Option<i64> {
    match unwrap(v) {
        Value::U8(n) => Some(i64::from(*n)),
        Value::I16(n) => Some(i64::from(*n)),
        Value::U16(n) => Some(i64::from(*n)),
        Value::I32(n) => Some(i64::from(*n)),
        Value::U32(n) => Some(i64::from(*n)),
        Value::I64(n) => Some(*n),
        Value::U64(n) => i64::try_from(*n).ok(),
        Value::F64(f) if f.is_finite() => Some(*f as i64),
        Value::Str(s) => s.trim().parse().ok(),
        _ => None,
    }
}

pub fn as_f64(v: &Value<'_>) -> Option<f64> {
    match unwrap(v) {
        Value::F64(f) => Some(*f),
        other => as_i64(other).map(|n| n as f64),
    }
}

/// `Metadata` (`a{sv}`) as a track; `None` for no track.
pub fn parse_metadata(v: &Value<'_>) -> Option<Track> {
    let Value::Dict(d) = unwrap(v) else {
        return None;
    };
    let mut t = Track::default();
    let mut any = false;
    for (k, val) in d.iter() {
        let Some(key) = as_string(k) else { continue };
        any = true;
        match key.as_str() {
            "mpris:trackid" => t.trackid = as_string(val).filter(|s| !s.is_empty()),
            "mpris:length" => {
                t.length = as_i64(val)
                    .filter(|n| *n > 0)
                    .map(|n| Duration::from_micros(n as u64))
            }
            "xesam:title" => t.title = as_string(val).unwrap_or_default(),
            "xesam:artist" => t.artists = as_strings(val),
            "xesam:album" => t.album = as_string(val).unwrap_or_default(),
            "xesam:albumArtist" => t.album_artists = as_strings(val),
            "xesam:trackNumber" => {
                t.track_number = as_i64(val)
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|n| *n > 0)
            }
            "xesam:url" => t.url = as_string(val).unwrap_or_default(),
            "xesam:musicBrainzTrackID" => t.mb_track_id = as_string(val).unwrap_or_default(),
            "xesam:musicBrainzArtistID" => t.mb_artist_ids = as_strings(val),
            "xesam:musicBrainzAlbumID" => t.mb_album_id = as_string(val).unwrap_or_default(),
            _ => {}
        }
    }
    if !any || (t.trackid.as_deref() == Some(NO_TRACK) && t.title.is_empty()) {
        return None;
    }
    Some(t)
}

pub fn parse_status(v: &Value<'_>) -> Option<Status> {
    match as_string(v)?.as_str() {
        "Playing" => Some(Status::Playing),
        "Paused" => Some(Status::Paused),
        "Stopped" => Some(Status::Stopped),
        _ => None,
    }
}

pub fn parse_loop(v: &Value<'_>) -> Option<LoopStatus> {
    match as_string(v)?.as_str() {
        "Track" => Some(LoopStatus::Track),
        "Playlist" => Some(LoopStatus::Playlist),
        "None" => Some(LoopStatus::None),
        _ => None,
    }
}

/// The events of one `PropertiesChanged` (or `GetAll`) of the Player
/// interface, in the order the session wants them: Rate and LoopStatus,
/// then Metadata, then PlaybackStatus, then Position.
pub fn events<'a>(props: impl IntoIterator<Item = (&'a str, &'a Value<'a>)>) -> Vec<Event> {
    let mut rate = None;
    let mut looping = None;
    let mut meta = None;
    let mut status = None;
    let mut position = None;
    for (k, v) in props {
        match k {
            "Rate" => rate = as_f64(v).map(Event::Rate),
            "LoopStatus" => looping = parse_loop(v).map(Event::Loop),
            "Metadata" => meta = Some(Event::Metadata(parse_metadata(v))),
            "PlaybackStatus" => status = parse_status(v).map(Event::Status),
            "Position" => {
                position =
                    as_i64(v).map(|us| Event::Position(Duration::from_micros(us.max(0) as u64)))
            }
            _ => {}
        }
    }
    [rate, looping, meta, status, position]
        .into_iter()
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use zbus::zvariant::{ObjectPath, Value};

    fn dict(entries: Vec<(&'static str, Value<'static>)>) -> Value<'static> {
        let m: HashMap<&str, Value> = entries.into_iter().collect();
        Value::from(m)
    }

    #[test]
    fn spec_metadata_becomes_a_track() {
        let v = dict(vec![
            (
                "mpris:trackid",
                Value::from(ObjectPath::try_from("/org/mpv/Track/3").expect("path")),
            ),
            ("mpris:length", Value::from(40_000_000i64)),
            ("xesam:title", Value::from("Tone")),
            ("xesam:artist", Value::from(vec!["A", "B"])),
            ("xesam:album", Value::from("Alb")),
            ("xesam:trackNumber", Value::from(3i32)),
        ]);
        let t = parse_metadata(&v).expect("a track");
        assert_eq!(t.trackid.as_deref(), Some("/org/mpv/Track/3"));
        assert_eq!(t.length, Some(Duration::from_secs(40)));
        assert_eq!(t.artists, ["A", "B"]);
        assert_eq!(t.track_number, Some(3));
        assert!(t.is_complete());
    }

    #[test]
    fn player_quirks_are_absorbed() {
        // Artist as a plain string, length as u64, wrapped in a variant.
        let v = dict(vec![
            ("xesam:artist", Value::from("Solo")),
            ("xesam:title", Value::from("T")),
            (
                "mpris:length",
                Value::Value(Box::new(Value::from(5_000_000u64))),
            ),
        ]);
        let t = parse_metadata(&v).expect("a track");
        assert_eq!(t.artists, ["Solo"]);
        assert_eq!(t.length, Some(Duration::from_secs(5)));
        // Zero length is no length.
        let v = dict(vec![
            ("xesam:title", Value::from("T")),
            ("mpris:length", Value::from(0i64)),
        ]);
        assert_eq!(parse_metadata(&v).expect("a track").length, None);
        // NoTrack and empty dicts are no track.
        let v = dict(vec![(
            "mpris:trackid",
            Value::from(ObjectPath::try_from(NO_TRACK).expect("path")),
        )]);
        assert_eq!(parse_metadata(&v), None);
        assert_eq!(parse_metadata(&dict(vec![])), None);
    }

    #[test]
    fn events_come_in_the_order_the_session_wants() {
        let status = Value::from("Playing");
        let meta = dict(vec![("xesam:title", Value::from("T"))]);
        let rate = Value::from(2.0f64);
        let evs = events([
            ("PlaybackStatus", &status),
            ("Metadata", &meta),
            ("Rate", &rate),
        ]);
        assert!(matches!(evs[0], Event::Rate(r) if r == 2.0));
        assert!(matches!(evs[1], Event::Metadata(Some(_))));
        assert_eq!(evs[2], Event::Status(Status::Playing));
    }
}
