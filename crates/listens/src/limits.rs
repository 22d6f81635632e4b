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
/// Credited artists of one listen ([`Listen::artists`]), at most 32: a
/// band with its guests, a work's soloists; each name within
/// [`MAX_ARTIST`].
pub const MAX_CREDITED_ARTISTS: usize = 32;
/// The credited artists' names of one listen together, at most 8 KiB, so
/// the largest listen stays a small record (32 names at the artist limit
/// would not).
pub const MAX_CREDITS_BYTES: usize = 8192;

/// The field a [`LimitError`] names when a listen has more than
/// [`MAX_CREDITED_ARTISTS`] (a count, not a length).
pub const CREDITS_COUNT: &str = "number of credited artists";

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

/// The largest record payload a listen with credited artists (kind 8)
/// within the limits encodes to: [`MAX_LISTEN_PAYLOAD`], the count, and
/// the names with their u32 lengths.
pub const MAX_CREDITED_LISTEN_PAYLOAD: usize =
    MAX_LISTEN_PAYLOAD + 4 + MAX_CREDITED_ARTISTS * 4 + MAX_CREDITS_BYTES;

// The largest listen must stay far below the reader's record limit, so
// that no listen the limits let through can ever read as damage.
const _: () = assert!(MAX_LISTEN_PAYLOAD * 64 <= crate::log::MAX_RECORD as usize);
const _: () = assert!(MAX_CREDITED_LISTEN_PAYLOAD * 64 <= crate::log::MAX_RECORD as usize);

/// What a [`LimitError`] says: a length in bytes, or for
/// [`CREDITS_COUNT`] a number of names.
pub(crate) fn describe(field: &str, len: usize, max: usize) -> String {
    if field == CREDITS_COUNT {
        format!("the {field} is {len}, more than the {max} a listen may hold")
    } else {
        format!("the {field} is {len} bytes long, more than the {max} bytes a listen may hold")
    }
}

/// A field longer than its limit; nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}; shorten it and send it again", describe(.field, *.len, *.max))]
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
        field("client name", self.client, MAX_CLIENT)?;
        if self.artists.is_list() {
            let n = self.artists.len();
            if n > MAX_CREDITED_ARTISTS {
                return Err(LimitError {
                    field: CREDITS_COUNT,
                    len: n,
                    max: MAX_CREDITED_ARTISTS,
                });
            }
            let mut total = 0;
            for a in self.artists.iter() {
                field("credited artist", a, MAX_ARTIST)?;
                total += a.len();
            }
            if total > MAX_CREDITS_BYTES {
                return Err(LimitError {
                    field: "list of credited artists",
                    len: total,
                    max: MAX_CREDITS_BYTES,
                });
            }
        }
        Ok(())
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
            artists: Vec::new(),
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

    /// [`at_max`] with the most credited artists, their names together
    /// at their limit.
    fn credited_at_max() -> Listen {
        let mut l = at_max();
        let each = MAX_CREDITS_BYTES / MAX_CREDITED_ARTISTS;
        l.artists = (0..MAX_CREDITED_ARTISTS)
            .map(|i| format!("{i:0>each$}"))
            .collect();
        l
    }

    #[test]
    fn a_credited_listen_at_every_limit_passes_and_encodes_to_the_largest_payload() {
        let l = credited_at_max();
        assert_eq!(l.check_limits(), Ok(()));
        let mut b = Vec::new();
        encode_listen(&l.as_ref(), &mut b);
        assert_eq!(b.len() - 8, MAX_CREDITED_LISTEN_PAYLOAD);
        assert_eq!(MAX_CREDITED_LISTEN_PAYLOAD, 12_849);
    }

    #[test]
    fn too_many_credited_artists_or_names_too_long_are_refused() {
        let mut l = credited_at_max();
        l.artists.push("x".into());
        let e = l.check_limits().unwrap_err();
        assert_eq!(
            (e.field, e.len, e.max),
            (
                CREDITS_COUNT,
                MAX_CREDITED_ARTISTS + 1,
                MAX_CREDITED_ARTISTS
            )
        );
        assert!(e.to_string().contains("is 33, more than the 32"), "{e}");
        let mut l = credited_at_max();
        l.artists[3].push('x');
        let e = l.check_limits().unwrap_err();
        assert_eq!(
            (e.field, e.len),
            ("list of credited artists", MAX_CREDITS_BYTES + 1)
        );
        let mut l = at_max();
        l.artists = vec!["a".into(), "b".repeat(MAX_ARTIST + 1)];
        let e = l.check_limits().unwrap_err();
        assert_eq!((e.field, e.len), ("credited artist", MAX_ARTIST + 1));
        // A single name is no list: not checked, not stored.
        l.artists = vec!["b".repeat(MAX_ARTIST + 1)];
        assert_eq!(l.check_limits(), Ok(()));
    }
}
