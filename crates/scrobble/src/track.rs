//! What a player says is playing ([`Track`]) and what is sent to a
//! service ([`Scrobble`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A track as the player described it (after clean-up rules).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Track {
    /// `mpris:trackid`, when the player gave one (not `NoTrack`).
    pub trackid: Option<String>,
    pub title: String,
    pub artists: Vec<String>,
    pub album: String,
    pub album_artists: Vec<String>,
    /// `mpris:length`; `None` when the player gave none or zero.
    pub length: Option<Duration>,
    pub track_number: Option<u32>,
    /// MusicBrainz recording id (`xesam:musicBrainzTrackID`).
    pub mb_track_id: String,
    pub mb_artist_ids: Vec<String>,
    pub mb_album_id: String,
    /// `xesam:url`.
    pub url: String,
}

impl Track {
    /// Has a title and at least one non-empty artist: enough to scrobble.
    pub fn is_complete(&self) -> bool {
        !self.title.trim().is_empty() && self.artists.iter().any(|a| !a.trim().is_empty())
    }

    /// Whether `other` is the same track: the track id when both have
    /// one, else artists, title, album and length.
    pub fn same_as(&self, other: &Track) -> bool {
        match (&self.trackid, &other.trackid) {
            (Some(a), Some(b)) => a == b,
            _ => {
                self.artists == other.artists
                    && self.title == other.title
                    && self.album == other.album
                    && self.length == other.length
            }
        }
    }

    /// The artist string sent to services.
    pub fn artist(&self, style: ArtistStyle) -> String {
        let names: Vec<&str> = self
            .artists
            .iter()
            .map(|a| a.trim())
            .filter(|a| !a.is_empty())
            .collect();
        match style {
            ArtistStyle::First => names.first().copied().unwrap_or("").to_owned(),
            ArtistStyle::Join => names.join(", "),
        }
    }

    /// The scrobble of a play of this track that started at `timestamp`.
    pub fn scrobble(&self, timestamp: i64, player: &str, style: ArtistStyle) -> Scrobble {
        let album_artist = {
            let names: Vec<&str> = self
                .album_artists
                .iter()
                .map(|a| a.trim())
                .filter(|a| !a.is_empty())
                .collect();
            match style {
                ArtistStyle::First => names.first().copied().unwrap_or("").to_owned(),
                ArtistStyle::Join => names.join(", "),
            }
        };
        let credited: Vec<String> = self
            .artists
            .iter()
            .map(|a| a.trim())
            .filter(|a| !a.is_empty())
            .map(str::to_owned)
            .collect();
        Scrobble {
            artist: self.artist(style),
            // Several: each is credited (ListenBrainz's `artist_names`).
            artists: if credited.len() >= 2 {
                credited
            } else {
                Vec::new()
            },
            track: self.title.trim().to_owned(),
            album: self.album.trim().to_owned(),
            album_artist,
            timestamp,
            duration: self.length.map(|d| d.as_secs() as u32).filter(|d| *d > 0),
            track_number: self.track_number,
            mbid: self.mb_track_id.clone(),
            artist_mbids: self.mb_artist_ids.clone(),
            release_mbid: self.mb_album_id.clone(),
            player: player.to_owned(),
            love: None,
        }
    }
}

/// How several artists become the one artist string services take.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArtistStyle {
    /// "A, B" (default).
    #[default]
    Join,
    /// Only the first artist.
    First,
}

/// One play as sent to a service, and as kept in its journal.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scrobble {
    /// The artist as shown (the one artist field Last.fm takes).
    pub artist: String,
    /// The credited artists when there are several (ListenBrainz's
    /// `artist_names`); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artists: Vec<String>,
    pub track: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub album: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub album_artist: String,
    /// When the play started, UNIX seconds UTC.
    pub timestamp: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub track_number: Option<u32>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mbid: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artist_mbids: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub release_mbid: String,
    /// The player's Identity (ListenBrainz `media_player`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub player: String,
    /// Not a play but a love (`Some(true)`) or an unlove (`Some(false)`)
    /// of the track, made at `timestamp`: a journal entry of the server's
    /// forwarding, sent as Last.fm `track.love`/`track.unlove` or as
    /// ListenBrainz feedback ([`crate::Client::love`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub love: Option<bool>,
}
