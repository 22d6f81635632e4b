//! The largest value each field of a listen or a love event may hold, and
//! the check that every write path runs before anything reaches the log.
//!
//! The log's reader takes a record over 1 MiB for damage (see
//! `docs/listens-format.md`), so the writer must never produce one. These
//! limits keep the largest possible record at a few KiB, far below that.
//! Lengths are in bytes of UTF-8, as the log stores them.

use crate::model::{Listen, ListenRef};

/// Artist names, at most 1024 bytes: Last.fm's own artist, track and
/// album names are well under 1 KiB, and 1024 bytes hold at least 256
/// characters of any script.
pub const MAX_ARTIST: usize = 1024;
/// Track titles, at most 1024 bytes (as [`MAX_ARTIST`]).
pub const MAX_TITLE: usize = 1024;
/// Album names, at most 1024 bytes (as [`MAX_ARTIST`]).
pub const MAX_ALBUM: usize = 1024;
/// Album artist names, at most 1024 bytes (as [`MAX_ARTIST`]).
pub const MAX_ALBUM_ARTIST: usize = 1024;
/// MusicBrainz ids, at most 64 bytes: an MBID is a 36-character UUID;
/// the rest leaves room for the braces or spaces some clients send.
pub const MAX_MBID: usize = 64;
/// Client names, at most 256 bytes: a player's name and version (the
/// ListenBrainz path stores `listenbrainz/<client>`), never a document.
pub const MAX_CLIENT: usize = 256;
/// User names, at most 64 bytes: the longest name an account may have.
pub const MAX_USER: usize = 64;

/// The largest record payload a listen within the limits encodes to: the
/// kind byte, timestamp, duration and track number, and seven strings
/// with their u32 lengths.
pub const MAX_LISTEN_PAYLOAD: usize = 1
    + 8
    + 4
    + 4
    + 7 * 4
    + MAX_USER
    + MAX_ARTIST
    + MAX_TITLE
    + MAX_ALBUM
    + MAX_ALBUM_ARTIST
    + MAX_MBID
    + MAX_CLIENT;

// The largest listen must stay far below the reader's record limit, so
// that no listen the limits let through can ever read as damage.
const _: () = assert!(MAX_LISTEN_PAYLOAD * 64 <= crate::log::MAX_RECORD as usize);

/// A field longer than its limit; nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the {field} is {len} bytes long, more than the {max} bytes a listen may hold; shorten it and send it again")]
pub struct LimitError {
    /// The field's name as the log format names it (`artist`, `title`, …).
    pub field: &'static str,
    pub len: usize,
    pub max: usize,
}

/// `Err` naming `field` when `value` is longer than `max` bytes.
pub(crate) fn field(field: &'static str, value: &str, max: usize) -> Result<(), LimitError> {
    if value.len() > max {
        return Err(LimitError {
            field,
            len: value.len(),
            max,
        });
    }
    Ok(())
}

impl Listen {
    /// Whether every field is within its limit (the first one over it
    /// otherwise). Every path that writes a listen checks this first.
    pub fn check_limits(&self) -> Result<(), LimitError> {
        self.as_ref().check_limits()
    }
}

impl ListenRef<'_> {
    pub(crate) fn check_limits(&self) -> Result<(), LimitError> {
        field("user name", self.user, MAX_USER)?;
        field("artist", self.artist, MAX_ARTIST)?;
        field("title", self.title, MAX_TITLE)?;
        field("album", self.album, MAX_ALBUM)?;
        field("album artist", self.album_artist, MAX_ALBUM_ARTIST)?;
        field("MusicBrainz id", self.mbid, MAX_MBID)?;
        field("client name", self.client, MAX_CLIENT)
    }
}

/// Whether a love or unlove event's fields are within their limits.
pub fn check_love_limits(user: &str, artist: &str, title: &str) -> Result<(), LimitError> {
    field("user name", user, MAX_USER)?;
    field("artist", artist, MAX_ARTIST)?;
    field("title", title, MAX_TITLE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::encode_listen;

    fn at_max() -> Listen {
        Listen {
            user: "u".repeat(MAX_USER),
            timestamp: i64::MIN,
            artist: "é".repeat(MAX_ARTIST / 2),
            title: "t".repeat(MAX_TITLE),
            album: "a".repeat(MAX_ALBUM),
            album_artist: "b".repeat(MAX_ALBUM_ARTIST),
            mbid: "m".repeat(MAX_MBID),
            duration: Some(u32::MAX - 1),
            track_number: Some(7),
            client: "c".repeat(MAX_CLIENT),
        }
    }

    #[test]
    fn a_listen_at_every_limit_passes_and_encodes_to_the_largest_payload() {
        let l = at_max();
        assert_eq!(l.check_limits(), Ok(()));
        let mut b = Vec::new();
        encode_listen(&l.as_ref(), &mut b);
        assert_eq!(b.len() - 8, MAX_LISTEN_PAYLOAD);
    }

    #[test]
    fn one_byte_over_any_limit_names_the_field() {
        type Grow = fn(&mut Listen);
        let cases: [(&str, Grow); 7] = [
            ("user name", |l| l.user.push('x')),
            ("artist", |l| l.artist.push('x')),
            ("title", |l| l.title.push('x')),
            ("album", |l| l.album.push('x')),
            ("album artist", |l| l.album_artist.push('x')),
            ("MusicBrainz id", |l| l.mbid.push('x')),
            ("client name", |l| l.client.push('x')),
        ];
        for (name, grow) in cases {
            let mut l = at_max();
            grow(&mut l);
            let e = l.check_limits().unwrap_err();
            assert_eq!(e.field, name);
            assert_eq!(e.len, e.max + 1);
            assert!(e.to_string().contains(name), "{e}");
        }
        assert!(check_love_limits("u", &"a".repeat(MAX_ARTIST), "t").is_ok());
        let e = check_love_limits("u", "a", &"t".repeat(MAX_TITLE + 1)).unwrap_err();
        assert_eq!((e.field, e.len), ("title", MAX_TITLE + 1));
    }
}
